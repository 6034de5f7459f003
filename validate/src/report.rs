//! Rendering findings: one line each for people, a stable JSON array for scripts.

use std::cmp::Ordering;

use openwop_generated::validators::Finding;
use serde::Serialize;

/// One finding, tied to the document it is about. The JSON output is an array of these.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub path: String,
    pub pointer: String,
    pub rule: String,
    pub message: String,
}

/// Every finding of one run, in the order given to [`Report::add`], sorted within each
/// document.
#[derive(Debug, Default)]
pub struct Report {
    entries: Vec<Entry>,
    documents: usize,
    invalid: usize,
    unreadable: usize,
}

/// The output formats of `openwop validate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// `PATH:POINTER: RULE: sentence` lines and a summary.
    Human,
    /// An array of `{path, pointer, rule, message}`.
    Json,
}

impl Report {
    /// Records one validated document and its findings. Within a document a specific rule
    /// comes before the generic `schema` finding it may restate, so a reader meets the
    /// sentence that says what to change first; then pointers in document order.
    pub fn add(&mut self, path: &str, findings: Vec<Finding>) {
        self.documents += 1;
        if findings.is_empty() {
            return;
        }
        self.invalid += 1;
        let mut findings = without_cascades(findings);
        findings.sort_by(|a, b| {
            (a.rule == "schema")
                .cmp(&(b.rule == "schema"))
                .then_with(|| compare_pointers(&a.pointer, &b.pointer))
                .then_with(|| a.rule.cmp(&b.rule))
                .then_with(|| a.message.cmp(&b.message))
        });
        findings.dedup();
        self.entries.extend(findings.into_iter().map(|f| Entry {
            path: path.to_owned(),
            pointer: f.pointer,
            rule: f.rule,
            message: f.message,
        }));
    }

    /// Records a document that could not be read.
    pub fn add_unreadable(&mut self) {
        self.unreadable += 1;
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn has_findings(&self) -> bool {
        self.invalid > 0
    }

    /// The whole output in the given format, ending with a newline.
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Human => self.human(),
            Format::Json => {
                // Serialising plain strings cannot fail; fall back to an empty array anyway.
                let mut text =
                    serde_json::to_string_pretty(&self.entries).unwrap_or_else(|_| "[]".into());
                text.push('\n');
                text
            }
        }
    }

    fn human(&self) -> String {
        let mut text = String::new();
        for e in &self.entries {
            text.push_str(&format!(
                "{}:{}: {}: {}\n",
                e.path, e.pointer, e.rule, e.message
            ));
        }
        text.push_str(&format!(
            "{}, {} invalid, {}",
            plural(self.documents, "document"),
            self.invalid,
            plural(self.entries.len(), "finding")
        ));
        if self.unreadable > 0 {
            text.push_str(&format!(", {} unreadable", self.unreadable));
        }
        text.push('\n');
        text
    }
}

/// What the JSON Schema crate says when an object has properties no subschema evaluated.
const UNEVALUATED: &str = "Unevaluated properties are not allowed";

/// Drops the `unevaluatedProperties` findings that only echo another failure.
///
/// A family record is `allOf: [record header, facet file]` closed by
/// `unevaluatedProperties: false`. When any branch fails, JSON Schema discards that
/// branch's annotations, so every property of the record then reads as unexpected: one
/// wrong `profiles` entry also yields "'versions', 'preferredVersion', … were unexpected",
/// which sends a reader after the wrong fix. Such a finding is kept only when nothing else
/// was found at or under its pointer, i.e. when a property really is unknown. The cost: an
/// unknown property beside another error in the same record shows up on the next run.
fn without_cascades(findings: Vec<Finding>) -> Vec<Finding> {
    let is_cascade = |f: &Finding| f.rule == "schema" && f.message.starts_with(UNEVALUATED);
    let explained = |f: &Finding| {
        findings
            .iter()
            .any(|other| !is_cascade(other) && within(&other.pointer, &f.pointer))
    };
    let keep: Vec<bool> = findings
        .iter()
        .map(|f| !(is_cascade(f) && explained(f)))
        .collect();
    findings
        .into_iter()
        .zip(keep)
        .filter_map(|(f, k)| k.then_some(f))
        .collect()
}

/// Whether `pointer` is `parent` or names something inside it.
fn within(pointer: &str, parent: &str) -> bool {
    pointer == parent || (pointer.starts_with(parent) && pointer[parent.len()..].starts_with('/'))
}

fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Orders pointers token by token, array indexes numerically (`/2` before `/10`).
fn compare_pointers(a: &str, b: &str) -> Ordering {
    let mut xs = a.split('/');
    let mut ys = b.split('/');
    loop {
        match (xs.next(), ys.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => {
                let order = match (x.parse::<u64>(), y.parse::<u64>()) {
                    (Ok(i), Ok(j)) => i.cmp(&j),
                    _ => x.cmp(y),
                };
                if order != Ordering::Equal {
                    return order;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(pointer: &str, rule: &str) -> Finding {
        Finding {
            pointer: pointer.into(),
            rule: rule.into(),
            message: "m".into(),
        }
    }

    #[test]
    fn specific_rules_come_before_schema_and_indexes_sort_numerically() {
        let mut report = Report::default();
        report.add(
            "d.json",
            vec![
                finding("", "schema"),
                finding("/a2a/profiles/10", "discovery.no-legacy-profile"),
                finding("/a2a/profiles/2", "discovery.no-legacy-profile"),
            ],
        );
        let order: Vec<(&str, &str)> = report
            .entries()
            .iter()
            .map(|e| (e.pointer.as_str(), e.rule.as_str()))
            .collect();
        assert_eq!(
            order,
            [
                ("/a2a/profiles/2", "discovery.no-legacy-profile"),
                ("/a2a/profiles/10", "discovery.no-legacy-profile"),
                ("", "schema"),
            ]
        );
    }

    #[test]
    fn an_unevaluated_properties_echo_is_dropped_but_a_real_unknown_property_is_kept() {
        let echo = |pointer: &str| Finding {
            pointer: pointer.into(),
            rule: "schema".into(),
            message: format!("{UNEVALUATED} ('versions', 'profiles' were unexpected)"),
        };
        let mut report = Report::default();
        report.add(
            "a.json",
            vec![
                echo("/a2a"),
                finding("/a2a/profiles/1", "schema"),
                finding("/a2a/profiles/1", "discovery.no-legacy-profile"),
            ],
        );
        report.add(
            "b.json",
            vec![echo("/a2a"), finding("/mcp/features/0", "schema")],
        );
        report.add("c.json", vec![echo("/a2a"), finding("/a2aX", "schema")]);
        let kept: Vec<(&str, &str)> = report
            .entries()
            .iter()
            .map(|e| (e.path.as_str(), e.pointer.as_str()))
            .collect();
        assert_eq!(
            kept,
            [
                ("a.json", "/a2a/profiles/1"),
                ("a.json", "/a2a/profiles/1"),
                ("b.json", "/a2a"),
                ("b.json", "/mcp/features/0"),
                ("c.json", "/a2a"),
                ("c.json", "/a2aX"),
            ]
        );
    }

    #[test]
    fn summary_counts_documents_invalid_and_findings() {
        let mut report = Report::default();
        report.add("a.json", vec![]);
        report.add("b.json", vec![finding("/x", "r")]);
        report.add_unreadable();
        assert_eq!(
            report.render(Format::Human),
            "b.json:/x: r: m\n2 documents, 1 invalid, 1 finding, 1 unreadable\n"
        );
    }
}
