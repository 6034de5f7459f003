//! SARIF 2.1.0 for code scanning, built with serde-sarif's typed model: every rule in
//! `tool.driver.rules` (summary, help, a help URI at its page, its default level), every
//! finding a result with its line and column, the pointer as a logical location, and a
//! partial fingerprint from rule, path, pointer and message so an alert keeps its identity
//! while the lines around it move.

use std::collections::{BTreeMap, HashMap};

use serde_sarif::sarif::{
    ArtifactLocation, Invocation, Location, LogicalLocation, Message, MultiformatMessageString,
    Notification, PhysicalLocation, Region, ReportingConfiguration, ReportingDescriptor,
    Result as SarifResult, ResultLevel, Run, Sarif, Tool, ToolComponent, Version,
};

use crate::load::{Root, is_url, normalize, percent_encode};
use crate::report::{Entry, Report};
use crate::rules::{self, Docs, Severity};

/// The partial fingerprint's name; its value is `rule|path|pointer|message`, with `|n` for
/// the n-th finding of the same key. The message is part of it, as it is of a baseline's
/// key: a place can hold several findings of one rule (the features a profile lacks), and
/// keyed by place and order alone, fixing the first would hand its identity to the next,
/// so code scanning would close the wrong alert and keep the fixed one open. (Version 1
/// had no message; alerts fingerprinted by it are matched anew once.)
const FINGERPRINT: &str = "openwopValidate/v2";

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

    // Found once: every result's file is named relative to it.
    let root = Root::find();
    let mut seen: HashMap<(&str, &str, &str, &str), usize> = HashMap::new();
    let results: Vec<SarifResult> = report
        .entries()
        .map(|e| {
            let n = seen
                .entry((&e.rule, &e.path, &e.pointer, &e.message))
                .and_modify(|n| *n += 1)
                .or_insert(1);
            let artifact = uri_in(&e.path, &root);
            result(e, &artifact, *n, index.get(e.rule.as_str()).copied())
        })
        .collect();

    let driver = ToolComponent::builder()
        .name("openwop-validate")
        .version(env!("CARGO_PKG_VERSION"))
        .information_uri(docs.page())
        .rules(descriptors)
        .build();
    let base_ids = root.uri().map(|uri| {
        BTreeMap::from([(
            SRCROOT.to_owned(),
            ArtifactLocation::builder().uri(uri).build(),
        )])
    });
    let run = Run::builder()
        .tool(Tool::from(driver))
        .results(results)
        .invocations(vec![invocation(report)])
        .column_kind(serde_json::json!("unicodeCodePoints"))
        // Lines are counted as an editor counts them: a lone CR ends one too, which
        // SARIF's default (CRLF and LF) leaves out.
        .newline_sequences(vec!["\r\n".to_owned(), "\r".to_owned(), "\n".to_owned()]);
    let run = match base_ids {
        Some(ids) => run.original_uri_base_ids(ids).build(),
        None => run.build(),
    };
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

/// The `uriBaseId` of a path relative to the repository root ([`Root`]), which the run's
/// `originalUriBaseIds` gives as a `file://` URI.
pub const SRCROOT: &str = "%SRCROOT%";

/// `e` as a result; `artifact` is its location ([`uri_in`]).
fn result(e: &Entry, artifact: &Artifact, n: usize, rule_index: Option<usize>) -> SarifResult {
    let mut fingerprint = format!("{}|{}|{}|{}", e.rule, artifact.uri, e.pointer, e.message);
    if n > 1 {
        fingerprint.push_str(&format!("|{n}"));
    }
    let location = Location::builder()
        .physical_location(
            PhysicalLocation::builder()
                .artifact_location(match artifact.base {
                    Some(base) => ArtifactLocation::builder()
                        .uri(artifact.uri.clone())
                        .uri_base_id(base)
                        .build(),
                    None => ArtifactLocation::builder()
                        .uri(artifact.uri.clone())
                        .build(),
                })
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

/// Where a result is: its URI, and the base it is relative to.
#[derive(Debug, PartialEq, Eq)]
pub struct Artifact {
    pub uri: String,
    /// [`SRCROOT`] for a file under the repository root; `None` for a URL, an absolute
    /// `file://` URI, or standard input.
    pub base: Option<&'static str>,
}

/// A PATH as a SARIF artifact location: a file under the repository root ([`Root`]:
/// `GITHUB_WORKSPACE`, else the git top level, else the working directory) relative to it,
/// with `uriBaseId` [`SRCROOT`], so code scanning finds it whichever directory the command
/// ran in, and the fingerprint (which holds the URI) does not change with that directory
/// or where the checkout is; a file outside the root an absolute `file://` URI; a URL as
/// it is; standard input's label relative, with no base. Characters a URI cannot hold
/// are percent-encoded.
pub fn uri_in(path: &str, root: &Root) -> Artifact {
    if is_url(path) {
        return Artifact {
            uri: path.to_owned(),
            base: None,
        };
    }
    if let Some(relative) = root.relative(path) {
        return Artifact {
            uri: percent_encode(&relative),
            base: Some(SRCROOT),
        };
    }
    // Outside the root: absolute, as a relative path would be read against the root.
    let path = match root.absolute(path) {
        Some(absolute) if path != crate::load::STDIN_LABEL => absolute,
        _ => normalize(path, None),
    };
    let uri = percent_encode(&path);
    Artifact {
        uri: if path.starts_with('/') {
            format!("file://{uri}")
        } else {
            uri
        },
        base: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Document;

    /// A path as `render` writes it, run in `/w/repo/site` of the repository `/w/repo`.
    fn uri(path: &str) -> String {
        let root = Root::at(
            Some("/w/repo".into()),
            Some(std::path::PathBuf::from("/w/repo/site")),
        );
        let artifact = uri_in(path, &root);
        match artifact.base {
            Some(base) => format!("{base}:{}", artifact.uri),
            None => artifact.uri,
        }
    }

    #[test]
    fn artifact_uris() {
        assert_eq!(uri("docs/a b.json"), "%SRCROOT%:site/docs/a%20b.json");
        assert_eq!(uri("/abs/x.json"), "file:///abs/x.json");
        assert_eq!(uri("<stdin>"), "%3Cstdin%3E");
        assert_eq!(uri("https://h.example/x?y=1"), "https://h.example/x?y=1");
        assert_eq!(uri("é.json"), "%SRCROOT%:site/%C3%A9.json");
        assert_eq!(uri("./docs/x.json"), "%SRCROOT%:site/docs/x.json");
        assert_eq!(
            uri("/w/repo/site/docs/x.json"),
            "%SRCROOT%:site/docs/x.json"
        );
        assert_eq!(uri("../top.json"), "%SRCROOT%:top.json");
        assert_eq!(uri("../../out.json"), "file:///w/out.json");
        assert_eq!(uri("/w/repository/x.json"), "file:///w/repository/x.json");
    }

    /// Without `GITHUB_WORKSPACE`, the root is the nearest directory above with `.git`,
    /// else the working directory.
    #[test]
    fn the_root_is_the_git_top_level() {
        let dir = tempfile::tempdir().expect("dir");
        let repo = std::fs::canonicalize(dir.path()).expect("real path");
        std::fs::create_dir_all(repo.join(".git")).expect("mkdir");
        std::fs::create_dir_all(repo.join("site/public")).expect("mkdir");
        let root = Root::at(None, Some(repo.join("site")));
        assert_eq!(
            root.relative("public/x.json").as_deref(),
            Some("site/public/x.json")
        );
        let top = format!("file://{}/", repo.display());
        assert_eq!(root.uri().as_deref(), Some(top.as_str()));
        std::fs::remove_dir(repo.join(".git")).expect("rmdir");
        let root = Root::at(None, Some(repo.join("site")));
        assert_eq!(
            root.relative("public/x.json").as_deref(),
            Some("public/x.json")
        );
    }

    /// The audit's case: two findings of one rule at one place. Fixing the first must not
    /// hand its fingerprint to the second (code scanning would close the second's alert and
    /// keep the fixed one's open).
    #[test]
    fn fixing_one_finding_leaves_the_others_fingerprint_alone() {
        let finding = |feature: &str| Entry {
            path: "d.json".into(),
            line: 3,
            column: 10,
            severity: Severity::Error,
            rule: "discovery.profile-missing-feature".into(),
            pointer: "/mcp".into(),
            message: format!("the profile requires the feature \"{feature}\""),
            docs: String::new(),
        };
        let fingerprints = |entries: Vec<Entry>| -> Vec<(String, String)> {
            let report = Report {
                documents: vec![Document {
                    path: "d.json".into(),
                    entries,
                    ..Document::default()
                }],
                ..Report::default()
            };
            let log: serde_json::Value =
                serde_json::from_str(&render(&report, &Docs::new(Some("https://example.test/"))))
                    .expect("SARIF is JSON");
            log["runs"][0]["results"]
                .as_array()
                .expect("results")
                .iter()
                .map(|r| {
                    (
                        r["message"]["text"].as_str().unwrap_or_default().to_owned(),
                        r["partialFingerprints"][FINGERPRINT]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                    )
                })
                .collect()
        };
        let before = fingerprints(vec![finding("mrtr"), finding("server-discover")]);
        let after = fingerprints(vec![finding("server-discover")]);
        assert_eq!(before.len(), 2);
        assert_ne!(before[0].1, before[1].1, "{before:?}");
        assert_eq!(
            after,
            before[1..],
            "the second finding kept its fingerprint"
        );
    }

    #[test]
    fn artifact_uris_are_the_paths_findings_name() {
        assert_eq!(
            uri("/w/repo/site//docs/./x.json"),
            "%SRCROOT%:site/docs/x.json"
        );
        assert_eq!(uri("docs//./x.json"), "%SRCROOT%:site/docs/x.json");
    }
}
