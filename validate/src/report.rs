//! The findings of one run, per document, with positions and severities: what every output
//! format renders.

use std::cmp::Ordering;

use openwop_generated::validators::Finding;
use serde::Serialize;

use crate::config::FailOn;
use crate::position::{Locator, Position};
use crate::rules::{self, Severity};

/// A baseline entry (or part of one) that this run did not find.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stale {
    pub path: String,
    pub rule: String,
    pub pointer: String,
    /// The finding's sentence (`None` for an entry of a version 1 baseline).
    pub message: Option<String>,
    /// How many of the entry's findings are gone.
    pub count: usize,
}

impl Stale {
    pub fn sentence(&self) -> String {
        let times = if self.count == 1 {
            String::new()
        } else {
            format!(" ({} times)", self.count)
        };
        let said = self
            .message
            .as_ref()
            .map(|m| format!(" ({m})"))
            .unwrap_or_default();
        format!(
            "{}: baseline entry {} at \"{}\"{said}{times} no longer occurs; remove it (rewrite the file with --write-baseline)",
            self.path, self.rule, self.pointer
        )
    }
}

/// One finding, tied to the document it is about. `--format json` prints an array of these,
/// keys in this order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub path: String,
    /// 1-based line of the pointer's value in the text read.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    #[serde(serialize_with = "severity_str")]
    pub severity: Severity,
    pub rule: String,
    pub pointer: String,
    pub message: String,
    /// The rule's page in the rule reference.
    pub docs: String,
}

fn severity_str<S: serde::Serializer>(s: &Severity, out: S) -> Result<S::Ok, S::Error> {
    out.serialize_str(s.as_str())
}

/// One PATH argument and what was found in it.
#[derive(Debug, Clone)]
pub struct Document {
    /// How findings name it: the argument, `<stdin>`, or the URL fetched.
    pub path: String,
    pub entries: Vec<Entry>,
}

impl Document {
    /// Whether the document could not be checked at all.
    pub fn unreadable(&self) -> bool {
        self.entries.iter().any(|e| rules::is_input(&e.rule))
    }
}

/// Every document of a run, in argument order, each one's findings sorted.
#[derive(Debug, Default)]
pub struct Report {
    pub documents: Vec<Document>,
    /// Findings left out because the baseline lists them.
    pub known: usize,
    /// Baseline entries that no longer occur.
    pub stale: Vec<Stale>,
    /// The run's threshold: which findings fail it.
    pub fail_on: FailOn,
    /// `--max-warnings`.
    pub max_warnings: Option<usize>,
    /// `--strict-baseline`: stale entries fail the run.
    pub strict_baseline: bool,
}

/// Counts for summaries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub documents: usize,
    pub invalid: usize,
    pub unreadable: usize,
    pub errors: usize,
    pub warnings: usize,
}

impl Counts {
    pub fn findings(&self) -> usize {
        self.errors + self.warnings
    }
}

impl Report {
    /// Whether `e` fails the run by itself: an input that could not be checked, or a
    /// finding at or above the threshold.
    pub fn fails(&self, e: &Entry) -> bool {
        rules::is_input(&e.rule)
            || match self.fail_on {
                FailOn::Error => e.severity == Severity::Error,
                FailOn::Warning => true,
                FailOn::Never => false,
            }
    }

    /// Why the run fails beyond its failing findings: too many warnings, stale baseline
    /// entries under `--strict-baseline`. Every format says these, not only the log.
    pub fn run_failures(&self) -> Vec<String> {
        let mut why = Vec::new();
        let warnings = self.counts().warnings;
        if let Some(max) = self.max_warnings.filter(|max| warnings > *max) {
            why.push(format!(
                "{}, more than --max-warnings {max} allows",
                plural(warnings, "warning")
            ));
        }
        if self.strict_baseline && !self.stale.is_empty() {
            why.push(format!(
                "{} no longer found, and --strict-baseline fails on them",
                plural(self.stale.len(), "baseline entry")
            ));
        }
        why
    }

    /// Whether the run fails (exit 1, or 2 when an input could not be checked).
    pub fn failed(&self) -> bool {
        self.entries().any(|e| self.fails(e)) || !self.run_failures().is_empty()
    }

    /// The run's exit status: 2 when an input could not be checked (whatever the
    /// threshold), 1 when something fails it, else 0. What the command exits with and what
    /// SARIF's invocation records.
    pub fn exit_code(&self) -> u8 {
        if self.counts().unreadable > 0 {
            2
        } else {
            u8::from(self.failed())
        }
    }

    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.documents.iter().flat_map(|d| d.entries.iter())
    }

    pub fn counts(&self) -> Counts {
        let mut c = Counts {
            documents: self.documents.len(),
            ..Counts::default()
        };
        for d in &self.documents {
            c.invalid += usize::from(!d.entries.is_empty());
            c.unreadable += usize::from(d.unreadable());
        }
        for e in self.entries() {
            match e.severity {
                Severity::Error => c.errors += 1,
                Severity::Warning => c.warnings += 1,
            }
        }
        c
    }

    /// The one-line summary every human-facing format ends with.
    pub fn summary(&self) -> String {
        let c = self.counts();
        let mut text = format!(
            "{}, {} invalid, {}",
            plural(c.documents, "document"),
            c.invalid,
            plural(c.findings(), "finding")
        );
        if c.findings() > 0 {
            text.push_str(&format!(
                " ({}, {})",
                plural(c.errors, "error"),
                plural(c.warnings, "warning")
            ));
        }
        if c.unreadable > 0 {
            text.push_str(&format!(", {} unreadable", c.unreadable));
        }
        if self.known > 0 {
            text.push_str(&format!(", {} known in the baseline", self.known));
        }
        if !self.stale.is_empty() {
            text.push_str(&format!(
                ", {} no longer found",
                plural(self.stale.len(), "baseline entry")
            ));
        }
        text
    }
}

/// Turns a validator's findings, and the members the text names twice
/// (`input.duplicate-member`), into entries with positions, in document order: by line and
/// column, and at one place a specific rule before the generic `schema` finding it may
/// restate, so a reader meets the sentence that says what to change first. Only exact
/// duplicates are merged: no finding is dropped because another is present. A message is
/// cut at [`MAX_MESSAGE_CHARS`] (a schema sentence quotes the offending value, and a string
/// may be long).
pub fn entries(
    path: &str,
    text: &str,
    mut findings: Vec<Finding>,
    severity: impl Fn(&str) -> Option<Severity>,
    docs: &rules::Docs,
) -> Vec<Entry> {
    let locator = Locator::new(text);
    // The finding is at the last of them (where the pointer locates). The message names no
    // line: it is part of the finding's identity in a baseline and a SARIF fingerprint, and
    // a line added above would have made a known finding new.
    for (pointer, name, at) in locator.duplicate_members() {
        findings.push(Finding {
            pointer,
            rule: rules::DUPLICATE_MEMBER.to_owned(),
            message: format!(
                "`{name}` is named {} times in one object; keep one: this check read the last, here, but another reader may keep the first",
                at.len(),
            ),
        });
    }
    let mut findings: Vec<(Finding, Severity)> = findings
        .into_iter()
        .filter_map(|f| severity(&f.rule).map(|s| (f, s)))
        .collect();
    if findings.is_empty() {
        return Vec::new();
    }
    findings.sort_by(|(a, _), (b, _)| {
        compare_pointers(&a.pointer, &b.pointer)
            .then_with(|| a.rule.cmp(&b.rule))
            .then_with(|| a.message.cmp(&b.message))
    });
    findings.dedup();
    let mut entries: Vec<Entry> = findings
        .into_iter()
        .map(|(f, severity)| {
            let at = locator.locate(&f.pointer);
            Entry {
                path: path.to_owned(),
                line: at.line,
                column: at.column,
                severity,
                docs: docs.rule(&f.rule),
                rule: f.rule,
                pointer: f.pointer,
                message: cap_message(f.message),
            }
        })
        .collect();
    // Stable: at one position, pointers in order as sorted above.
    entries.sort_by(|a, b| {
        (a.line, a.column)
            .cmp(&(b.line, b.column))
            .then_with(|| (a.rule == "schema").cmp(&(b.rule == "schema")))
    });
    entries
}

/// The longest message an entry carries, in characters. Schema sentences quote the value
/// they reject; a megabyte string would otherwise become a megabyte line in the log, in
/// every annotation and in the job summary (which GitHub caps at 1 MiB).
pub const MAX_MESSAGE_CHARS: usize = 400;

/// `message` cut at [`MAX_MESSAGE_CHARS`], saying how much was left out.
pub fn cap_message(message: String) -> String {
    match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        None => message,
        Some((cut, _)) => {
            let rest = message[cut..].chars().count();
            format!("{}… ({rest} more characters)", &message[..cut])
        }
    }
}

/// The finding for an input that could not be checked.
pub fn input_entry(
    path: &str,
    rule: &str,
    at: Position,
    message: String,
    docs: &rules::Docs,
) -> Entry {
    Entry {
        path: path.to_owned(),
        line: at.line,
        column: at.column,
        severity: Severity::Error,
        rule: rule.to_owned(),
        pointer: String::new(),
        message,
        docs: docs.rule(rule),
    }
}

pub fn plural(n: usize, noun: &str) -> String {
    match (n, noun.strip_suffix('y')) {
        (1, _) => format!("1 {noun}"),
        (_, Some(stem)) => format!("{n} {stem}ies"),
        _ => format!("{n} {noun}s"),
    }
}

/// Orders pointers token by token, array indexes numerically (`/2` before `/10`).
pub fn compare_pointers(a: &str, b: &str) -> Ordering {
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

    fn docs() -> rules::Docs {
        rules::Docs::new(Some("https://example.test/"))
    }

    fn all_errors(_: &str) -> Option<Severity> {
        Some(Severity::Error)
    }

    #[test]
    fn findings_come_in_document_order_a_specific_rule_first_at_one_place() {
        let text = r#"{"a2a": {"profiles": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}, "z": 1}"#;
        let found = entries(
            "d.json",
            text,
            vec![
                finding("/z", "schema"),
                finding("", "schema"),
                finding("/a2a/profiles/10", "discovery.no-legacy-profile"),
                finding("/a2a/profiles/10", "schema"),
                finding("/a2a/profiles/2", "discovery.no-legacy-profile"),
            ],
            all_errors,
            &docs(),
        );
        let order: Vec<(&str, &str, usize)> = found
            .iter()
            .map(|e| (e.pointer.as_str(), e.rule.as_str(), e.column))
            .collect();
        assert_eq!(
            order,
            [
                ("", "schema", 1),
                ("/a2a/profiles/2", "discovery.no-legacy-profile", 29),
                ("/a2a/profiles/10", "discovery.no-legacy-profile", 53),
                ("/a2a/profiles/10", "schema", 53),
                ("/z", "schema", 64),
            ]
        );
    }

    #[test]
    fn a_duplicate_member_is_a_finding_and_long_messages_are_cut() {
        let text = "{\n  \"v\": 1,\n  \"v\": 2\n}";
        let long = Finding {
            pointer: "/v".into(),
            rule: "schema".into(),
            message: "x".repeat(MAX_MESSAGE_CHARS + 5),
        };
        let found = entries("d.json", text, vec![long], all_errors, &docs());
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].rule, rules::DUPLICATE_MEMBER);
        assert_eq!(
            (found[0].line, found[0].column, found[0].pointer.as_str()),
            (3, 8, "/v")
        );
        assert!(
            found[0]
                .message
                .starts_with("`v` is named 2 times in one object; keep one")
        );
        assert!(
            found[1].message.ends_with("… (5 more characters)"),
            "{}",
            found[1].message
        );
        assert_eq!(
            found[1].message.chars().count(),
            MAX_MESSAGE_CHARS + "… (5 more characters)".chars().count()
        );
    }

    #[test]
    fn nothing_but_exact_duplicates_is_merged_and_off_rules_are_left_out() {
        let echo = Finding {
            pointer: "/a2a".into(),
            rule: "schema".into(),
            message: "Unevaluated properties are not allowed ('versions' was unexpected)".into(),
        };
        let found = entries(
            "a.json",
            "{}",
            vec![
                echo.clone(),
                echo,
                finding("/a2a/profiles/1", "schema"),
                finding("/a2a/profiles/1", "discovery.no-legacy-profile"),
                finding("/x", "discovery.no-grpc"),
            ],
            |rule| (rule != "discovery.no-grpc").then_some(Severity::Warning),
            &docs(),
        );
        let kept: Vec<(&str, &str)> = found
            .iter()
            .map(|e| (e.pointer.as_str(), e.rule.as_str()))
            .collect();
        assert_eq!(
            kept,
            [
                ("/a2a/profiles/1", "discovery.no-legacy-profile"),
                ("/a2a", "schema"),
                ("/a2a/profiles/1", "schema"),
            ]
        );
        assert!(found.iter().all(|e| e.severity == Severity::Warning));
    }

    #[test]
    fn summary_counts_documents_invalid_findings_and_severities() {
        let d = docs();
        let mut report = Report::default();
        report.documents.push(Document {
            path: "a.json".into(),
            entries: vec![],
        });
        let mut b = entries("b.json", "{}", vec![finding("/x", "r")], all_errors, &d);
        b[0].severity = Severity::Warning;
        report.documents.push(Document {
            path: "b.json".into(),
            entries: b,
        });
        let unreadable = input_entry(
            "c.json",
            rules::INPUT_UNREADABLE,
            Position::START,
            "gone".into(),
            &d,
        );
        report.documents.push(Document {
            path: "c.json".into(),
            entries: vec![unreadable],
        });
        assert_eq!(
            report.summary(),
            "3 documents, 2 invalid, 2 findings (1 error, 1 warning), 1 unreadable"
        );
        assert_eq!(plural(2, "baseline entry"), "2 baseline entries");
    }
}
