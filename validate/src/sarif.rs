//! SARIF 2.1.0 for code scanning, built with serde-sarif's typed model: every rule in
//! `tool.driver.rules` (summary, help, a help URI at its page, its default level), every
//! finding a result with its line and column, the pointer as a logical location, and a
//! partial fingerprint from rule, path and pointer so an alert keeps its identity while the
//! lines around it move.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde_sarif::sarif::{
    ArtifactLocation, Invocation, Location, LogicalLocation, Message, MultiformatMessageString,
    Notification, PhysicalLocation, Region, ReportingConfiguration, ReportingDescriptor,
    Result as SarifResult, ResultLevel, Run, Sarif, Tool, ToolComponent, Version,
};

use crate::load::{is_url, path_key};
use crate::report::{Entry, Report};
use crate::rules::{self, Docs, Severity};

/// The partial fingerprint's name; its value is `rule|path|pointer`, with `|n` for the n-th
/// finding of the same key (a rule can fire more than once on one value).
const FINGERPRINT: &str = "openwopValidate/v1";

pub fn render(report: &Report, docs: &Docs) -> String {
    let catalogue: Vec<&rules::RuleInfo> = rules::all().collect();
    let index: HashMap<&str, usize> = catalogue
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id, i))
        .collect();
    let descriptors: Vec<ReportingDescriptor> = catalogue
        .iter()
        .map(|r| {
            let help = format!(
                "{}\n\nSection: {}. More: {}",
                r.help,
                r.section,
                docs.rule(r.id)
            );
            ReportingDescriptor::builder()
                .id(r.id)
                .short_description(&r.summary.to_owned())
                .full_description(&format!("{} {}", r.summary, r.help))
                .help(
                    MultiformatMessageString::builder()
                        .text(help)
                        .markdown(format!(
                            "{}\n\nSection: {}. [The rule's page]({})",
                            r.help,
                            r.section,
                            docs.rule(r.id)
                        ))
                        .build(),
                )
                .help_uri(docs.rule(r.id))
                .default_configuration(
                    ReportingConfiguration::builder()
                        .level(serde_json::json!(level(r.severity).to_string()))
                        .build(),
                )
                .build()
        })
        .collect();

    // Read once: every result's path is written relative to it.
    let cwd = std::env::current_dir().ok();
    let mut seen: HashMap<(&str, &str, &str), usize> = HashMap::new();
    let results: Vec<SarifResult> = report
        .entries()
        .map(|e| {
            let n = seen
                .entry((&e.rule, &e.path, &e.pointer))
                .and_modify(|n| *n += 1)
                .or_insert(1);
            let artifact = uri_in(&e.path, cwd.as_deref());
            result(e, &artifact, *n, index.get(e.rule.as_str()).copied())
        })
        .collect();

    let driver = ToolComponent::builder()
        .name("openwop-validate")
        .version(env!("CARGO_PKG_VERSION"))
        .information_uri(docs.page())
        .rules(descriptors)
        .build();
    let run = Run::builder()
        .tool(Tool::from(driver))
        .results(results)
        .invocations(vec![invocation(report)])
        .column_kind(serde_json::json!("unicodeCodePoints"))
        .build();
    let sarif = Sarif::builder()
        .schema("https://json.schemastore.org/sarif-2.1.0.json")
        .version(serde_json::json!(Version::V2_1_0.to_string()))
        .runs(vec![run])
        .build();
    let mut text = serde_json::to_string_pretty(&sarif).unwrap_or_default();
    text.push('\n');
    text
}

/// The run as a tool invocation: whether every input could be checked, the exit code, and
/// as notifications what fails the run beyond its results (too many warnings, stale
/// baseline entries under `--strict-baseline`) and the stale entries themselves, so a
/// SARIF consumer learns why a run with no results failed.
fn invocation(report: &Report) -> Invocation {
    let notify = |level: &str, text: String| {
        Notification::builder()
            .level(serde_json::json!(level))
            .message(Message::from(text.as_str()))
            .build()
    };
    let mut notifications: Vec<Notification> = report
        .run_failures()
        .into_iter()
        .map(|why| notify("error", format!("failing: {why}")))
        .collect();
    let stale_level = if report.strict_baseline {
        "error"
    } else {
        "note"
    };
    notifications.extend(
        report
            .stale
            .iter()
            .map(|s| notify(stale_level, s.sentence())),
    );
    let builder = Invocation::builder()
        .execution_successful(report.counts().unreadable == 0)
        .exit_code(i64::from(report.exit_code()));
    if notifications.is_empty() {
        builder.build()
    } else {
        builder.tool_execution_notifications(notifications).build()
    }
}

fn level(severity: Severity) -> ResultLevel {
    match severity {
        Severity::Error => ResultLevel::Error,
        Severity::Warning => ResultLevel::Warning,
    }
}

/// `e` as a result; `artifact` is its path as a SARIF URI ([`uri_in`]).
fn result(e: &Entry, artifact: &str, n: usize, rule_index: Option<usize>) -> SarifResult {
    let mut fingerprint = format!("{}|{artifact}|{}", e.rule, e.pointer);
    if n > 1 {
        fingerprint.push_str(&format!("|{n}"));
    }
    let location = Location::builder()
        .physical_location(
            PhysicalLocation::builder()
                .artifact_location(ArtifactLocation::builder().uri(artifact).build())
                .region(
                    Region::builder()
                        .start_line(e.line as i64)
                        .start_column(e.column as i64)
                        .build(),
                )
                .build(),
        )
        .logical_locations(vec![
            LogicalLocation::builder()
                .fully_qualified_name(if e.pointer.is_empty() {
                    "/".to_owned()
                } else {
                    e.pointer.clone()
                })
                .kind("object")
                .build(),
        ])
        .build();
    let builder = SarifResult::builder()
        .rule_id(e.rule.clone())
        .level(level(e.severity))
        .message(Message::from(e.message.as_str()))
        .locations(vec![location])
        .partial_fingerprints(BTreeMap::from([(FINGERPRINT.to_owned(), fingerprint)]));
    match rule_index {
        Some(i) => builder.rule_index(i as i64).build(),
        None => builder.build(),
    }
}

/// A PATH as a SARIF artifact URI: a URL stays as it is, an absolute file path becomes a
/// `file://` URI, a relative one stays relative (code scanning resolves it against the
/// repository), with the characters a URI cannot hold percent-encoded.
///
/// An absolute path under `cwd` (the working directory: the checkout, in CI) is written
/// relative to it, as a relative argument would be: code scanning resolves it against the
/// repository, and the fingerprint does not change with where the checkout is.
pub fn uri_in(path: &str, cwd: Option<&Path>) -> String {
    if is_url(path) {
        return path.to_owned();
    }
    let path = cwd
        .and_then(|cwd| Path::new(path).strip_prefix(cwd).ok())
        .and_then(|rel| rel.to_str())
        .filter(|rel| !rel.is_empty())
        .unwrap_or(path);
    let path = path_key(path);
    let mut out = String::new();
    if path.starts_with('/') {
        out.push_str("file://");
    }
    for b in path.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::uri_in;

    /// A path as `render` writes it, from this process's working directory.
    fn uri(path: &str) -> String {
        uri_in(path, std::env::current_dir().ok().as_deref())
    }

    #[test]
    fn artifact_uris() {
        assert_eq!(uri("docs/a b.json"), "docs/a%20b.json");
        assert_eq!(uri("/abs/x.json"), "file:///abs/x.json");
        assert_eq!(uri("<stdin>"), "%3Cstdin%3E");
        assert_eq!(uri("https://h.example/x?y=1"), "https://h.example/x?y=1");
        assert_eq!(uri("é.json"), "%C3%A9.json");
        assert_eq!(uri("./docs/x.json"), "docs/x.json");
        let cwd = std::env::current_dir().expect("cwd");
        let inside = cwd.join("docs/x.json");
        assert_eq!(uri(inside.to_str().expect("UTF-8")), "docs/x.json");
    }
}
