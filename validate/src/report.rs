//! The findings of one run, per document, with positions and severities: what every output
//! format renders.

use std::cmp::Ordering;
use std::collections::HashMap;

use openwop_generated::validators::Finding;
use serde::Serialize;

use crate::config::FailOn;
use crate::position::{Locator, Position, escape};
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
#[derive(Debug, Clone, Default)]
pub struct Document {
    /// How findings name it: the argument, `<stdin>`, or the URL fetched.
    pub path: String,
    pub entries: Vec<Entry>,
    /// `schema` findings not reported because a rule's finding in `entries` says the same
    /// defect ([`RESTATE_SCHEMA`]). No format shows them; a baseline entry recorded for one
    /// (by a release that reported both) is neither reported nor stale, as its defect is
    /// still there.
    pub restated: Vec<Entry>,
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
    /// Documents with an error (or that could not be checked).
    pub invalid: usize,
    /// Documents with warnings and no error.
    pub with_warnings: usize,
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
    /// entries under `--strict-baseline`. The human, GitHub, markdown, SARIF and JUnit
    /// formats say these; JSON is the array of findings alone (as ESLint's is, so its
    /// shape stays stable), and a run that fails with none carries why in its exit status
    /// and on standard error, which the command writes whenever the human log is not on
    /// standard output.
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
        let mut c = Counts::default();
        for d in &self.documents {
            c.unreadable += usize::from(d.unreadable());
            c.documents += 1;
            if d.entries.iter().any(|e| e.severity == Severity::Error) {
                c.invalid += 1;
            } else if !d.entries.is_empty() {
                c.with_warnings += 1;
            }
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
        if c.with_warnings > 0 {
            // After "N invalid": a document with only warnings is not invalid.
            let at = text
                .find(" invalid")
                .map_or(text.len(), |i| i + " invalid".len());
            text.insert_str(at, &format!(", {} with warnings only", c.with_warnings));
        }
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

/// The rules whose finding restates a `schema` failure at the same value: a required
/// member missing or mistyped (`*.required-field`, `discovery.mrtr-max-rounds`), a member
/// or item the schema forbids and the rule says to remove (`discovery.no-grpc`,
/// `discovery.no-supported-transports`, `discovery.no-legacy-profile`), a value out of its
/// range or format (`discovery.mrtr-max-rounds`, `discovery.refresh-window-range`,
/// `discovery.invalid-date`). Where one of them reports, the schema finding it restates is
/// left out ([`document`]): one defect, one finding, the one whose sentence says what to
/// change and whose id has its own page.
pub const RESTATE_SCHEMA: &[&str] = &[
    "agent-card.required-field",
    "discovery.invalid-date",
    "discovery.mrtr-max-rounds",
    "discovery.no-grpc",
    "discovery.no-legacy-profile",
    "discovery.no-supported-transports",
    "discovery.refresh-window-range",
    "discovery.required-field",
];

/// Every finding of one document placed, in document order: [`document`]'s entries and
/// the schema findings it holds back as restated, together. Nothing a validator finds is
/// lost on the way to a report (`runtime/tests/validate_differential.rs` holds this to the
/// generated validator); what a run shows is [`document`]'s `entries`.
pub fn entries(
    path: &str,
    text: &str,
    findings: Vec<Finding>,
    severity: impl Fn(&str) -> Option<Severity>,
    docs: &rules::Docs,
) -> Vec<Entry> {
    place(path, text, findings, severity, docs, true).1
}

/// Turns a validator's findings, and the members the text names twice
/// (`input.duplicate-member`), into the document's entries with positions, in document
/// order: by line and column, and at one place a specific rule before a generic `schema`
/// finding. A message is cut at [`MAX_MESSAGE_CHARS`] (a schema sentence quotes the
/// offending value, and a string may be long). `severity` gives each rule's level, `None`
/// for a rule turned off, whose findings are left out.
///
/// One defect is one finding: a `schema` finding that a [`RESTATE_SCHEMA`] rule's finding
/// restates is moved to [`Document::restated`]. It is restated when the rule reports at
/// the same value (its pointer), or, for a `required` failure (`"name" is a required
/// property`, reported on the object that lacks the member), at the member it names; and
/// only when the rule is on at a level at least the schema finding's, so that turning the
/// rule off (or down to a warning) never hides or weakens the defect: the schema finding is
/// then reported as before. Exact duplicates are merged; no other finding is dropped.
pub fn document(
    path: &str,
    text: &str,
    findings: Vec<Finding>,
    severity: impl Fn(&str) -> Option<Severity>,
    docs: &rules::Docs,
) -> Document {
    split(path, place(path, text, findings, severity, docs, true))
}

/// [`document`], for a document read only to place findings a run made about it (the
/// `--discovery` document of a card run), not checked itself: members it names twice are
/// not reported.
pub fn companion(
    path: &str,
    text: &str,
    findings: Vec<Finding>,
    severity: impl Fn(&str) -> Option<Severity>,
    docs: &rules::Docs,
) -> Document {
    split(path, place(path, text, findings, severity, docs, false))
}

/// The document of placed entries, each marked whether it is restated.
fn split(path: &str, (restated, all): (Vec<bool>, Vec<Entry>)) -> Document {
    let mut doc = Document {
        path: path.to_owned(),
        ..Document::default()
    };
    for (restated, e) in restated.into_iter().zip(all) {
        if restated {
            doc.restated.push(e);
        } else {
            doc.entries.push(e);
        }
    }
    doc
}

/// Every finding placed, in document order, and for each whether a rule's finding
/// restates it.
fn place(
    path: &str,
    text: &str,
    mut findings: Vec<Finding>,
    severity: impl Fn(&str) -> Option<Severity>,
    docs: &rules::Docs,
    duplicates: bool,
) -> (Vec<bool>, Vec<Entry>) {
    let locator = Locator::new(text);
    // The finding is at the last of them (where the pointer locates). The message names no
    // line: it is part of the finding's identity in a baseline and a SARIF fingerprint, and
    // a line added above would have made a known finding new.
    for (pointer, name, at) in locator
        .duplicate_members()
        .into_iter()
        .filter(|_| duplicates)
    {
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
        return (Vec::new(), Vec::new());
    }
    findings.sort_by(|(a, _), (b, _)| {
        compare_pointers(&a.pointer, &b.pointer)
            .then_with(|| a.rule.cmp(&b.rule))
            .then_with(|| a.message.cmp(&b.message))
    });
    findings.dedup();
    // The highest level a restating rule reports at each pointer.
    let mut restating: HashMap<String, Severity> = HashMap::new();
    for (f, level) in &findings {
        if RESTATE_SCHEMA.contains(&f.rule.as_str()) {
            let at = restating.entry(f.pointer.clone()).or_insert(*level);
            *at = (*at).max(*level);
        }
    }
    let restated = |f: &Finding, level: Severity| {
        let by = |pointer: &str| restating.get(pointer).is_some_and(|l| *l >= level);
        f.rule == "schema"
            && (by(&f.pointer)
                || required_member(&f.message)
                    .is_some_and(|name| by(&format!("{}/{}", f.pointer, escape(&name)))))
    };
    let entry = |f: Finding, severity: Severity| {
        let at = locator.locate(&f.pointer);
        Entry {
            path: path.to_owned(),
            line: at.line,
            column: at.column,
            severity,
            docs: docs.rule(&f.rule),
            message: entry_message(&f.rule, &f.pointer, f.message),
            rule: f.rule,
            pointer: f.pointer,
        }
    };
    let mut placed: Vec<(bool, Entry)> = findings
        .into_iter()
        .map(|(f, level)| (restated(&f, level), entry(f, level)))
        .collect();
    // Stable: at one position, pointers in order as sorted above.
    placed.sort_by(|(_, a), (_, b)| {
        (a.line, a.column)
            .cmp(&(b.line, b.column))
            .then_with(|| (a.rule == "schema").cmp(&(b.rule == "schema")))
    });
    placed.into_iter().unzip()
}

/// The message an entry carries for a finding: its sentence (a schema one reworded where
/// the validator's says nothing a reader can act on), cut at [`MAX_MESSAGE_CHARS`].
pub fn entry_message(rule: &str, pointer: &str, message: String) -> String {
    cap_message(schema_sentence(rule, pointer, message))
}

/// A schema sentence reworded where the validator's says nothing a reader can act on:
/// `not: {}` (a member the schema forbids, such as `grpc`) reads "`{} is not allowed for
/// the object`", which becomes "member `grpc` is not allowed here". Others are as written.
fn schema_sentence(rule: &str, pointer: &str, message: String) -> String {
    let forbidden = rule == "schema" && message.starts_with("{} is not allowed for ");
    match pointer.rsplit_once('/') {
        Some((_, token)) if forbidden => {
            let name = crate::position::unescape(token);
            format!("member `{name}` is not allowed here")
        }
        _ => message,
    }
}

/// The member a schema sentence says is missing (`"name" is a required property`), as the
/// validator words a `required` failure; `None` for any other sentence.
fn required_member(message: &str) -> Option<String> {
    let mut values = serde_json::Deserializer::from_str(message).into_iter::<String>();
    let name = values.next()?.ok()?;
    (&message[values.byte_offset()..] == " is a required property").then_some(name)
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
                finding("/a2a/profiles/10", "discovery.profile-version-offered"),
                finding("/a2a/profiles/10", "schema"),
                finding("/a2a/profiles/2", "discovery.profile-version-offered"),
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
                ("/a2a/profiles/2", "discovery.profile-version-offered", 29),
                ("/a2a/profiles/10", "discovery.profile-version-offered", 53),
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
                finding("/a2a/profiles/1", "discovery.profile-version-offered"),
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
                ("/a2a/profiles/1", "discovery.profile-version-offered"),
                ("/a2a", "schema"),
                ("/a2a/profiles/1", "schema"),
            ]
        );
        assert!(found.iter().all(|e| e.severity == Severity::Warning));
    }

    /// One defect, one finding: the schema's `required` failure on the object and its
    /// type failure at the member are left out where the rule says the same, but kept when
    /// the rule is off or weaker, and when the rule is about another member or value.
    #[test]
    fn a_schema_finding_a_rule_restates_is_left_out_while_the_rule_reports() {
        let text = r#"{"version": 2, "skills": [{"id": "a"}], "a~b": {}}"#;
        let said = |pointer: &str, rule: &str, message: &str| Finding {
            pointer: pointer.into(),
            rule: rule.into(),
            message: message.into(),
        };
        let findings = || {
            vec![
                said("", "schema", "\"name\" is a required property"),
                said("/name", "agent-card.required-field", "add `name`"),
                said("/version", "schema", "2 is not of type \"string\""),
                said(
                    "/version",
                    "agent-card.required-field",
                    "make `version` a string",
                ),
                // The rule names `tags`; the schema's `name` failure on the skill stays.
                said("/skills/0", "schema", "\"name\" is a required property"),
                said("/skills/0", "schema", "\"tags\" is a required property"),
                said("/skills/0/tags", "agent-card.required-field", "add `tags`"),
                // A member name that needs escaping in the pointer.
                said("", "schema", "\"a/b\" is a required property"),
                said("/a~1b", "agent-card.required-field", "add `a/b`"),
                // Not a restating rule: both stay.
                said("/skills/0/id", "schema", "\"a\" is not of type \"integer\""),
                said(
                    "/skills/0/id",
                    "agent-card.well-formed",
                    "give this skill an id",
                ),
            ]
        };
        let kept = |doc: &Document| -> Vec<(String, String)> {
            doc.entries
                .iter()
                .map(|e| (e.pointer.clone(), e.rule.clone()))
                .collect()
        };
        let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
            list.iter()
                .map(|(p, r)| ((*p).to_owned(), (*r).to_owned()))
                .collect()
        };
        let doc = document("c.json", text, findings(), all_errors, &docs());
        assert_eq!(
            kept(&doc),
            pairs(&[
                // A missing member is placed on the object that lacks it.
                ("/a~1b", "agent-card.required-field"),
                ("/name", "agent-card.required-field"),
                ("/version", "agent-card.required-field"),
                ("/skills/0/tags", "agent-card.required-field"),
                ("/skills/0", "schema"),
                ("/skills/0/id", "agent-card.well-formed"),
                ("/skills/0/id", "schema"),
            ])
        );
        let restated: Vec<(&str, &str)> = doc
            .restated
            .iter()
            .map(|e| (e.pointer.as_str(), e.message.as_str()))
            .collect();
        assert_eq!(
            restated,
            [
                ("", "\"a/b\" is a required property"),
                ("", "\"name\" is a required property"),
                ("/version", "2 is not of type \"string\""),
                ("/skills/0", "\"tags\" is a required property"),
            ]
        );
        // Every finding is still placed: `entries` holds both.
        assert_eq!(
            entries("c.json", text, findings(), all_errors, &docs()).len(),
            doc.entries.len() + doc.restated.len()
        );

        // The rule off: every schema finding is reported, none restated.
        let off = |rule: &str| (rule != "agent-card.required-field").then_some(Severity::Error);
        let doc = document("c.json", text, findings(), off, &docs());
        assert!(doc.restated.is_empty());
        assert_eq!(
            doc.entries.iter().filter(|e| e.rule == "schema").count(),
            6,
            "{:?}",
            kept(&doc)
        );
        // The rule down to a warning: it would weaken the error, so both are reported.
        let weaker = |rule: &str| {
            Some(if rule == "agent-card.required-field" {
                Severity::Warning
            } else {
                Severity::Error
            })
        };
        let doc = document("c.json", text, findings(), weaker, &docs());
        assert!(doc.restated.is_empty());
        // The schema down to a warning: the rule's error says it.
        let quiet_schema = |rule: &str| {
            Some(if rule == "schema" {
                Severity::Warning
            } else {
                Severity::Error
            })
        };
        let doc = document("c.json", text, findings(), quiet_schema, &docs());
        assert_eq!(doc.restated.len(), 4);
    }

    #[test]
    fn summary_counts_documents_invalid_findings_and_severities() {
        let d = docs();
        let mut report = Report::default();
        report.documents.push(Document {
            path: "a.json".into(),
            ..Document::default()
        });
        let mut b = entries("b.json", "{}", vec![finding("/x", "r")], all_errors, &d);
        b[0].severity = Severity::Warning;
        report.documents.push(Document {
            path: "b.json".into(),
            entries: b,
            ..Document::default()
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
            ..Document::default()
        });
        // b.json has a warning alone: not invalid.
        assert_eq!(
            report.summary(),
            "3 documents, 1 invalid, 1 with warnings only, 2 findings (1 error, 1 warning), 1 unreadable"
        );
        assert_eq!(plural(2, "baseline entry"), "2 baseline entries");
    }
}
