//! `--list-rules` and `--explain RULE`: the rule catalogue, readable without the source.

use std::path::Path;

use serde::Serialize;

use crate::rules::{self, Docs, RuleInfo};

#[derive(Serialize)]
struct Listed<'a> {
    id: &'a str,
    severity: &'a str,
    summary: &'a str,
    help: &'a str,
    section: &'a str,
    example: &'a str,
    docs: String,
}

impl<'a> Listed<'a> {
    fn of(r: &'a RuleInfo, docs: &Docs) -> Listed<'a> {
        Listed {
            id: r.id,
            severity: r.severity.as_str(),
            summary: r.summary,
            help: r.help,
            section: r.section,
            example: r.example,
            docs: docs.rule(r.id),
        }
    }
}

/// `value` as pretty JSON, ending with a newline.
fn json_text(value: &impl Serialize) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".into());
    text.push('\n');
    text
}

/// Every rule: a table for people, or a JSON array of `{id, severity, summary, help,
/// section, example, docs}`.
pub fn list(json: bool, docs: &Docs) -> String {
    if json {
        let all: Vec<Listed> = rules::all().map(|r| Listed::of(r, docs)).collect();
        return json_text(&all);
    }
    let width = rules::all().map(|r| r.id.len()).max().unwrap_or(0);
    let mut text = String::new();
    for r in rules::all() {
        text.push_str(&format!(
            "{:width$}  {:7}  {}\n",
            r.id,
            r.severity.as_str(),
            r.summary
        ));
    }
    text.push_str(&format!(
        "\n{} rules; `--explain RULE` for one, the reference: {}\n",
        rules::all().count(),
        docs.page()
    ));
    text
}

/// How much of an example document `--explain` prints.
const EXAMPLE_LINES: usize = 40;

/// One rule, in full: text for people, or the JSON object `--list-rules --format json`
/// lists for it.
pub fn explain(rule: &RuleInfo, json: bool, docs: &Docs) -> String {
    if json {
        return json_text(&Listed::of(rule, docs));
    }
    let mut text = format!(
        "{} ({})\n\n{}\n",
        rule.id,
        rule.severity.as_str(),
        rule.summary
    );
    if !rule.help.is_empty() {
        text.push_str(&format!("\n{}\n", rule.help));
    }
    if !rule.section.is_empty() {
        text.push_str(&format!("\nSection: {}\n", rule.section));
    }
    if !rule.example.is_empty() {
        text.push_str("\nA document that breaks it");
        let shown = if rule.example.starts_with('{') {
            Some(rule.example.to_owned())
        } else {
            // A vector of the repository: shown when the source tree this binary was built
            // from is still there (an installed binary may have outlived it).
            text.push_str(&format!(" ({})", rule.example));
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
            std::fs::read_to_string(root.join(rule.example)).ok()
        };
        text.push_str(":\n");
        if let Some(example) = shown {
            let lines: Vec<&str> = example.lines().collect();
            for line in lines.iter().take(EXAMPLE_LINES) {
                text.push_str(&format!("    {line}\n"));
            }
            if lines.len() > EXAMPLE_LINES {
                text.push_str(&format!(
                    "    … ({} more lines)\n",
                    lines.len() - EXAMPLE_LINES
                ));
            }
        }
    }
    text.push_str(&format!("\nMore: {}\n", docs.rule(rule.id)));
    text
}
