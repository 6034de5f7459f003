//! Output formats: `--format FMT[=FILE]`, repeatable, so one run prints the log and writes
//! the files a CI system reads.

use std::path::PathBuf;
use std::str::FromStr;

use crate::report::{Entry, Report};
use crate::rules::{Docs, Severity};

/// What `--format` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `PATH:LINE:COL: SEVERITY: RULE: sentence` lines (the shape compilers print, which
    /// editors and CI problem matchers read) and a summary.
    Human,
    /// An array of `{path, line, column, severity, rule, pointer, message, docs}`.
    Json,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
    /// GitHub Actions workflow commands (`::error file=…`), and a table in the job summary.
    Github,
    /// JUnit XML: a testcase per document, a failure per finding.
    Junit,
    /// A markdown table.
    Markdown,
}

impl Kind {
    pub const ALL: [(&'static str, Kind); 6] = [
        ("human", Kind::Human),
        ("json", Kind::Json),
        ("sarif", Kind::Sarif),
        ("github", Kind::Github),
        ("junit", Kind::Junit),
        ("markdown", Kind::Markdown),
    ];
}

/// One `--format` argument: a format and where it goes (standard output without a file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub kind: Kind,
    pub file: Option<PathBuf>,
}

impl FromStr for Spec {
    type Err = String;
    fn from_str(raw: &str) -> Result<Spec, String> {
        let (name, file) = match raw.split_once('=') {
            Some((name, file)) if !file.is_empty() => (name, Some(PathBuf::from(file))),
            Some(_) => return Err(format!("\"{raw}\": name the file after `=`")),
            None => (raw, None),
        };
        let kind = Kind::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, k)| *k)
            .ok_or_else(|| {
                let names: Vec<&str> = Kind::ALL.iter().map(|(n, _)| *n).collect();
                format!("\"{name}\" is not a format: {}", names.join(", "))
            })?;
        Ok(Spec { kind, file })
    }
}

/// The whole output of `kind`, ending with a newline.
pub fn render(kind: Kind, report: &Report, docs: &Docs) -> String {
    match kind {
        Kind::Human => human(report),
        Kind::Json => {
            let entries: Vec<&Entry> = report.entries().collect();
            let mut text = serde_json::to_string_pretty(&entries).unwrap_or_else(|_| "[]".into());
            text.push('\n');
            text
        }
        Kind::Sarif => crate::sarif::render(report, docs),
        Kind::Github => github(report),
        Kind::Junit => crate::junit::render(report),
        Kind::Markdown => markdown(report),
    }
}

fn human(report: &Report) -> String {
    let mut text = String::new();
    for e in report.entries() {
        text.push_str(&format!(
            "{}:{}:{}: {}: {}: {}\n",
            e.path,
            e.line,
            e.column,
            e.severity.as_str(),
            e.rule,
            e.message
        ));
    }
    for s in &report.stale {
        text.push_str(&s.sentence());
        text.push('\n');
    }
    for why in report.run_failures() {
        text.push_str(&format!("failing: {why}\n"));
    }
    text.push_str(&report.summary());
    text.push('\n');
    text
}

/// GitHub's workflow commands: each finding becomes an annotation on its file and line.
fn github(report: &Report) -> String {
    let mut text = String::new();
    for e in report.entries() {
        let command = match e.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        text.push_str(&format!(
            "::{command} file={},line={},col={},title={}::{}\n",
            property(&e.path),
            e.line,
            e.column,
            property(&e.rule),
            data(&format!("{} ({})", e.message, e.docs)),
        ));
    }
    let stale_command = if report.strict_baseline {
        "error"
    } else {
        "notice"
    };
    for s in &report.stale {
        text.push_str(&format!(
            "::{stale_command} file={},title=baseline::{}\n",
            property(&s.path),
            data(&s.sentence())
        ));
    }
    for why in report.run_failures() {
        text.push_str(&format!("::error title=openwop-validate::{}\n", data(&why)));
    }
    text.push_str(&report.summary());
    text.push('\n');
    text
}

/// A workflow command's message: `%`, CR and LF escaped as the runner expects.
fn data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value: also `:` and `,`, which end a property.
fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}

/// A markdown report: the summary and a table of findings (what `github` appends to the job
/// summary).
pub fn markdown(report: &Report) -> String {
    let mut text = format!("### openwop-validate\n\n{}\n", report.summary());
    if report.entries().next().is_some() {
        text.push_str(
            "\n| File | Line | Column | Severity | Rule | Message |\n| --- | ---: | ---: | --- | --- | --- |\n",
        );
        for e in report.entries() {
            text.push_str(&format!(
                "| {} | {} | {} | {} | [{}]({}) | {} |\n",
                cell(&e.path),
                e.line,
                e.column,
                e.severity.as_str(),
                cell(&e.rule),
                e.docs.replace(' ', "%20").replace(')', "%29"),
                cell(&e.message)
            ));
        }
    }
    for why in report.run_failures() {
        text.push_str(&format!("\n**Failing:** {}\n", cell(&why)));
    }
    if !report.stale.is_empty() {
        text.push_str("\nBaseline entries that no longer occur:\n\n");
        for s in &report.stale {
            text.push_str(&format!("- {}\n", cell(&s.sentence())));
        }
    }
    text
}

/// Text inside a table cell: a `|` would end it and a newline would end the row; `<` is
/// escaped so a message never reads as HTML.
fn cell(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('<', "&lt;")
        .replace(['\r', '\n'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_specs_parse() {
        assert_eq!(
            "sarif=out/r.sarif".parse(),
            Ok(Spec {
                kind: Kind::Sarif,
                file: Some("out/r.sarif".into())
            })
        );
        assert_eq!(
            "human".parse(),
            Ok(Spec {
                kind: Kind::Human,
                file: None
            })
        );
        assert!("sarif=".parse::<Spec>().is_err());
        assert!("xml".parse::<Spec>().unwrap_err().contains("junit"));
    }

    #[test]
    fn workflow_command_values_are_escaped() {
        assert_eq!(data("50%\nnext"), "50%25%0Anext");
        assert_eq!(property("a:b,c"), "a%3Ab%2Cc");
        assert_eq!(cell("a|b\nc<d>"), "a\\|b c&lt;d>");
    }
}
