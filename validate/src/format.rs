//! Output formats: `--format FMT[=FILE]`, repeatable, so one run prints the log and writes
//! the files a CI system reads.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::str::FromStr;

use crate::report::{Entry, Report, plural};
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
    /// JUnit XML: a testsuite per document, a testcase per finding (ESLint's layout).
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

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        Kind::ALL
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("human", |(n, _)| n)
    }
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
        let line = format!(
            "{}:{}:{}: {}: {}: {}",
            e.path,
            e.line,
            e.column,
            e.severity.as_str(),
            e.rule,
            e.message
        );
        text.push_str(&one_line(&line));
        text.push('\n');
    }
    for s in &report.stale {
        text.push_str(&one_line(&s.sentence()));
        text.push('\n');
    }
    for why in report.run_failures() {
        text.push_str(&one_line(&format!("failing: {why}")));
        text.push('\n');
    }
    text.push_str(&report.summary());
    text.push('\n');
    text
}

/// GitHub's workflow commands: each finding becomes an annotation on its file and line.
///
/// Files are named relative to the repository root ([`crate::load::Root`]), as the runner
/// reads `file=`, not relative to the directory the command ran in.
fn github(report: &Report) -> String {
    let root = crate::load::Root::find();
    let mut text = String::new();
    for e in report.entries() {
        let command = match e.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        text.push_str(&format!(
            "::{command} file={},line={},col={},title={}::{}\n",
            property(&root.repo_path(&e.path)),
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
            property(&root.repo_path(&s.path)),
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
    // One line first, as the human format writes it: ESC, U+2028 and the other control
    // characters escaped (a runner's log is a terminal's, and GitHub's annotation view
    // breaks lines at U+2028), then the runner's own escapes.
    one_line(text)
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value: also `:` and `,`, which end a property.
fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}

/// `text` on one line: line breaks and the other control characters (ESC among them, which
/// a terminal acts on) written as `\n`, `\r`, `\t` or `\u001b`, and so are U+2028 and
/// U+2029, which some editors break lines at. Messages quote document text (member names,
/// values) as it is, and a finding must stay one line: a line break would split it, and on
/// GitHub Actions a line of its own starting with `::` is a workflow command. A backslash
/// is left as it is, so the usual messages read unchanged.
pub fn one_line(text: &str) -> Cow<'_, str> {
    let escaped = |c: char| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}');
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if escaped(c) => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A markdown report: the summary and a table of findings.
pub fn markdown(report: &Report) -> String {
    markdown_within(report, usize::MAX, usize::MAX)
}

/// The most findings the job summary lists. GitHub drops a step summary over 1 MiB whole
/// (table and all), and a run with thousands of findings would pass that.
pub const SUMMARY_MAX_ROWS: usize = 1_000;
/// The most bytes the job summary's table and lists take, half of GitHub's limit: rows
/// can be long (a message is up to 400 characters, a path has no limit), and another
/// step's run may write to the same summary.
pub const SUMMARY_MAX_BYTES: usize = 512 * 1024;

/// What `github` appends to the job summary: the markdown report, cut at
/// [`SUMMARY_MAX_ROWS`] rows or [`SUMMARY_MAX_BYTES`], saying how many were left out.
pub fn step_summary(report: &Report) -> String {
    markdown_within(report, SUMMARY_MAX_ROWS, SUMMARY_MAX_BYTES)
}

/// The markdown report with at most `max_rows` findings and stale entries, stopping before
/// a row would take the text past `max_bytes`; a line says how many were left out.
fn markdown_within(report: &Report, max_rows: usize, max_bytes: usize) -> String {
    let mut text = format!("### openwop-validate\n\n{}\n", report.summary());
    // Files relative to the repository root, as the annotations beside it name them.
    let root = crate::load::Root::find();
    let mut rows = 0;
    // Whether one more row fits; counts it when it does.
    let mut fits = |text: &str, row: &str| {
        let fits = rows < max_rows && text.len().saturating_add(row.len()) <= max_bytes;
        rows += usize::from(fits);
        fits
    };
    let total = report.entries().count();
    if total > 0 {
        text.push_str(
            "\n| File | Line | Column | Severity | Rule | Message |\n| --- | ---: | ---: | --- | --- | --- |\n",
        );
        let mut shown = 0;
        for e in report.entries() {
            let row = format!(
                "| {} | {} | {} | {} | [{}]({}) | {} |\n",
                cell(&root.repo_path(&e.path)),
                e.line,
                e.column,
                e.severity.as_str(),
                cell(&e.rule),
                e.docs.replace(' ', "%20").replace(')', "%29"),
                cell(&e.message)
            );
            if !fits(&text, &row) {
                break;
            }
            text.push_str(&row);
            shown += 1;
        }
        if shown < total {
            text.push_str(&format!(
                "\n… {} not shown; see the SARIF/JSON output\n",
                plural(total - shown, "more finding")
            ));
        }
    }
    for why in report.run_failures() {
        text.push_str(&format!("\n**Failing:** {}\n", cell(&why)));
    }
    if !report.stale.is_empty() {
        text.push_str("\nBaseline entries that no longer occur:\n\n");
        let mut shown = 0;
        for s in &report.stale {
            let row = format!("- {}\n", cell(&s.sentence()));
            if !fits(&text, &row) {
                break;
            }
            text.push_str(&row);
            shown += 1;
        }
        if shown < report.stale.len() {
            text.push_str(&format!(
                "- … {} not shown; see the SARIF/JSON output\n",
                plural(report.stale.len() - shown, "more baseline entry")
            ));
        }
    }
    text
}

/// Text inside a table cell: a `|` would end it and a line break would end the row (both
/// escaped, the line break as `\n` like other control characters, see [`one_line`]); `<` is
/// escaped so a message never reads as HTML.
fn cell(text: &str) -> String {
    one_line(&text.replace('\\', "\\\\"))
        .replace('|', "\\|")
        .replace('<', "&lt;")
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
        // One line as the human format writes it, then the runner's escapes.
        assert_eq!(data("50%\nnext"), "50%25\\nnext");
        assert_eq!(data("a\u{1b}[31m\u{2028}b\r"), "a\\u001b[31m\\u2028b\\r");
        assert_eq!(property("a:b,c"), "a%3Ab%2Cc");
        assert_eq!(cell("a|b\nc<d>"), "a\\|b\\nc&lt;d>");
    }

    /// A member name or value with a line break cannot split a finding's line, nor start
    /// one with `::` (a workflow command on GitHub Actions).
    #[test]
    fn document_text_stays_on_one_line() {
        assert_eq!(one_line("plain `x` \\d"), "plain `x` \\d");
        assert_eq!(
            one_line("a\n::stop-commands::abc\r\n\u{1b}[31m\u{7f}\u{85}\u{2028}\t"),
            "a\\n::stop-commands::abc\\r\\n\\u001b[31m\\u007f\\u0085\\u2028\\t"
        );
        assert_eq!(cell("a\u{1}|b"), "a\\u0001\\|b");
    }

    /// The job summary stops before the byte limit too (long paths), and counts the stale
    /// entries it lists against the same limits.
    #[test]
    fn the_step_summary_stops_at_its_byte_limit() {
        use crate::report::{Document, Stale};
        let long = format!("{}.json", "d/".repeat(1_000));
        let entry = Entry {
            path: long.clone(),
            line: 1,
            column: 1,
            severity: Severity::Error,
            rule: "schema".into(),
            pointer: String::new(),
            message: "m".into(),
            docs: "https://example.test/r#schema".into(),
        };
        let report = Report {
            documents: vec![Document {
                path: long.clone(),
                entries: vec![entry; 600],
                ..Document::default()
            }],
            stale: vec![
                Stale {
                    path: long,
                    rule: "schema".into(),
                    pointer: String::new(),
                    message: None,
                    count: 1,
                };
                3
            ],
            ..Report::default()
        };
        let text = step_summary(&report);
        // Each row names its file from the repository root the test runs in.
        let rows_of = |text: &str| {
            text.lines()
                .filter(|l| l.starts_with("| ") && l.contains("d/"))
                .count()
        };
        let rows = rows_of(&text);
        assert!(text.len() <= SUMMARY_MAX_BYTES + 1_024, "{}", text.len());
        assert!(rows > 200 && rows < 600, "{rows}");
        assert!(
            text.contains(&format!(
                "… {} more findings not shown; see the SARIF/JSON output",
                600 - rows
            )),
            "{text}"
        );
        assert!(
            text.ends_with("- … 3 more baseline entries not shown; see the SARIF/JSON output\n")
        );
        // The markdown format itself has no limit.
        assert_eq!(rows_of(&markdown(&report)), 600);
    }
}
