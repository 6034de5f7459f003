//! JUnit XML, shaped as ESLint's junit formatter shapes it: one `<testsuite>` per document
//! (named by its path), one `<testcase>` per finding (named by its rule, its class name the
//! document's path) with at most one `<failure>`, and one passing testcase for a document
//! without findings. Azure DevOps and Jenkins show only the first failure of a testcase,
//! and readers such as xunitparser check that `tests`, `failures` and `errors` equal the
//! elements: the counts are taken from the cases written, on every suite and on
//! `<testsuites>`.
//!
//! A finding that fails the run is a `<failure>` (an input that could not be checked, an
//! `<error>`), its `type` the finding's severity. A finding below the run's threshold
//! (a warning under the default `--fail-on error`) is a passing testcase with the finding
//! in its `<system-out>`: a report that shows red while the job is green would teach people
//! to ignore it. A run that fails for another reason (more warnings than `--max-warnings`,
//! stale entries under `--strict-baseline`) has one more suite, `openwop-validate run`, with
//! a failing testcase per reason.
//!
//! Written with quick-xml's writer (escaping, well-formedness) rather than quick-junit, whose
//! model fixes attributes this layout sets otherwise (a case's class name per document).

use std::io;

use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesText, Event};

use crate::report::{Document, Entry, Report};
use crate::rules;

/// The `<testsuites>` name, and the class name of the run's own testcases.
const SUITE: &str = "openwop-validate";

pub fn render(report: &Report) -> String {
    let suites = suites(report);
    let mut writer = Writer::new_with_indent(Vec::new(), b' ', 2);
    // Writing into a Vec cannot fail; an empty string would still be caught by any reader.
    let _ = write(&mut writer, &suites);
    let text = String::from_utf8(writer.into_inner()).unwrap_or_default();
    let mut text = xml_chars(&text);
    text.push('\n');
    text
}

/// `text` with the characters XML 1.0 does not allow anywhere, escaped or not, written as
/// a visible `\u0001`. quick-xml escapes only the markup characters, and messages quote
/// member names and values from the document as they are: one such character would make
/// the whole report unreadable to every JUnit reader. The writer itself adds none of them,
/// so replacing them in its output replaces them in every text and attribute.
fn xml_chars(text: &str) -> String {
    if text.chars().all(xml_char) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if xml_char(c) {
            out.push(c);
        } else {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        }
    }
    out
}

/// Whether XML 1.0 allows `c` (its `Char` production): not the C0 controls but tab, line
/// feed and carriage return, nor U+FFFE and U+FFFF. (Surrogates cannot be in a `str`.)
fn xml_char(c: char) -> bool {
    !matches!(
        c,
        '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}'
    )
}

/// The suite, and each testcase, of what fails the run beyond its documents' findings.
const RUN_CASE: &str = "openwop-validate run";

/// One `<testsuite>`: a document, or the run.
struct Suite {
    name: String,
    cases: Vec<Case>,
}

/// One `<testcase>`.
struct Case {
    name: String,
    classname: String,
    outcome: Outcome,
    /// `<system-out>`: a finding below the threshold, or the stale baseline entries.
    out: Option<String>,
}

/// A testcase's result; `Failure` and `Error` are written as that element.
enum Outcome {
    Pass,
    Failure(Detail),
    Error(Detail),
}

/// A `<failure>` or `<error>`: its `message` and `type` attributes and its text.
struct Detail {
    message: String,
    kind: String,
    text: String,
}

impl Suite {
    /// `tests`, `failures` and `errors`, counted from the cases themselves.
    fn counts(&self) -> [usize; 3] {
        let count = |f: fn(&Outcome) -> bool| self.cases.iter().filter(|c| f(&c.outcome)).count();
        [
            self.cases.len(),
            count(|o| matches!(o, Outcome::Failure(_))),
            count(|o| matches!(o, Outcome::Error(_))),
        ]
    }
}

/// The report as suites: each document's, then the run's when it has anything to say.
fn suites(report: &Report) -> Vec<Suite> {
    // Files relative to the repository root, as CI servers read a report against the
    // checkout whatever directory the job ran in.
    let root = crate::load::Root::find();
    let mut suites: Vec<Suite> = report
        .documents
        .iter()
        .map(|doc| document_suite(report, doc, &root.repo_path(&doc.path)))
        .collect();
    suites.extend(run_suite(report));
    suites
}

/// `doc`'s suite; `path` is its path as the report names it.
fn document_suite(report: &Report, doc: &Document, path: &str) -> Suite {
    let mut cases: Vec<Case> = doc
        .entries
        .iter()
        .map(|e| finding_case(report, e, path))
        .collect();
    if cases.is_empty() {
        // A suite without testcases reads as "nothing ran" (Azure DevOps leaves it out).
        cases.push(Case {
            name: path.to_owned(),
            classname: path.to_owned(),
            outcome: Outcome::Pass,
            out: None,
        });
    }
    Suite {
        name: path.to_owned(),
        cases,
    }
}

fn finding_case(report: &Report, e: &Entry, path: &str) -> Case {
    let text = format!(
        "{}:{}:{}: {} ({}) at \"{}\"\n{}\n{}",
        path,
        e.line,
        e.column,
        e.rule,
        e.severity.as_str(),
        e.pointer,
        e.message,
        e.docs
    );
    let mut case = Case {
        name: e.rule.clone(),
        classname: path.to_owned(),
        outcome: Outcome::Pass,
        out: None,
    };
    if !report.fails(e) {
        case.out = Some(text + "\n");
        return case;
    }
    let detail = Detail {
        message: e.message.clone(),
        kind: e.severity.as_str().to_owned(),
        text,
    };
    case.outcome = if rules::is_input(&e.rule) {
        Outcome::Error(detail)
    } else {
        Outcome::Failure(detail)
    };
    case
}

/// The run's suite: a failing testcase per reason the run fails beyond its findings, the
/// stale baseline entries listed in the last one's `<system-out>` (the `--strict-baseline`
/// reason, when there is one, is last), or in a passing testcase's when nothing fails.
fn run_suite(report: &Report) -> Option<Suite> {
    let stale: Vec<String> = report.stale.iter().map(|s| s.sentence()).collect();
    let mut cases: Vec<Case> = report
        .run_failures()
        .into_iter()
        .map(|why| Case {
            name: RUN_CASE.to_owned(),
            classname: SUITE.to_owned(),
            outcome: Outcome::Failure(Detail {
                message: why.clone(),
                kind: "error".to_owned(),
                text: why,
            }),
            out: None,
        })
        .collect();
    if !stale.is_empty() {
        if cases.is_empty() {
            cases.push(Case {
                name: RUN_CASE.to_owned(),
                classname: SUITE.to_owned(),
                outcome: Outcome::Pass,
                out: None,
            });
        }
        if let Some(last) = cases.last_mut() {
            last.out = Some(stale.join("\n") + "\n");
        }
    }
    (!cases.is_empty()).then(|| Suite {
        name: RUN_CASE.to_owned(),
        cases,
    })
}

/// `tests`, `failures` and `errors` as attribute values.
fn count_attributes(counts: [usize; 3]) -> [(&'static str, String); 3] {
    let [tests, failures, errors] = counts.map(|n| n.to_string());
    [("tests", tests), ("failures", failures), ("errors", errors)]
}

fn write(w: &mut Writer<Vec<u8>>, suites: &[Suite]) -> io::Result<()> {
    let total = suites.iter().map(Suite::counts).fold([0; 3], |mut sum, c| {
        for (s, n) in sum.iter_mut().zip(c) {
            *s += n;
        }
        sum
    });
    let attributes = count_attributes(total);
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    w.create_element("testsuites")
        .with_attribute(("name", SUITE))
        .with_attributes(attributes.iter().map(|(k, v)| (*k, v.as_str())))
        .write_inner_content(|w| {
            for suite in suites {
                write_suite(w, suite)?;
            }
            Ok(())
        })?;
    Ok(())
}

fn write_suite(w: &mut Writer<Vec<u8>>, suite: &Suite) -> io::Result<()> {
    let attributes = count_attributes(suite.counts());
    w.create_element("testsuite")
        .with_attribute(("name", suite.name.as_str()))
        .with_attributes(attributes.iter().map(|(k, v)| (*k, v.as_str())))
        .with_attribute(("skipped", "0"))
        .write_inner_content(|w| {
            for case in &suite.cases {
                write_case(w, case)?;
            }
            Ok(())
        })?;
    Ok(())
}

fn write_case(w: &mut Writer<Vec<u8>>, case: &Case) -> io::Result<()> {
    let element = w
        .create_element("testcase")
        .with_attribute(("name", case.name.as_str()))
        .with_attribute(("classname", case.classname.as_str()));
    let detail = match &case.outcome {
        Outcome::Pass => None,
        Outcome::Failure(d) => Some(("failure", d)),
        Outcome::Error(d) => Some(("error", d)),
    };
    if detail.is_none() && case.out.is_none() {
        element.write_empty()?;
        return Ok(());
    }
    element.write_inner_content(|w| {
        if let Some((name, d)) = detail {
            w.create_element(name)
                .with_attribute(("message", d.message.as_str()))
                .with_attribute(("type", d.kind.as_str()))
                .write_text_content(BytesText::new(&d.text))?;
        }
        if let Some(out) = &case.out {
            w.create_element("system-out")
                .write_text_content(BytesText::new(out))?;
        }
        Ok(())
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use quick_xml::Reader;
    use quick_xml::events::Event;

    use super::*;
    use crate::report::{Entry, Report};
    use crate::rules::Severity;

    /// Reads `xml` to the end with quick-xml's reader, as a reader of the report would;
    /// returns the attribute values, unescaped and normalized. (quick-xml does not check characters, so
    /// the test also looks for the forbidden ones itself.)
    fn attributes(xml: &str) -> Result<Vec<String>, String> {
        let mut reader = Reader::from_str(xml);
        let mut seen = Vec::new();
        loop {
            match reader.read_event().map_err(|e| e.to_string())? {
                Event::Eof => return Ok(seen),
                Event::Start(e) | Event::Empty(e) => {
                    for a in e.attributes() {
                        let a = a.map_err(|e| e.to_string())?;
                        let value = a
                            .normalized_value(quick_xml::XmlVersion::Explicit1_0)
                            .map_err(|e| e.to_string())?;
                        seen.push(value.into_owned());
                    }
                }
                _ => {}
            }
        }
    }

    /// Stale baseline entries are listed in the run's suite: a passing testcase when they
    /// fail nothing, the `--strict-baseline` failure's when they do; counts as held.
    #[test]
    fn stale_entries_go_with_the_run_suite() {
        let stale = crate::report::Stale {
            path: "a.json".into(),
            rule: "schema".into(),
            pointer: "/x".into(),
            message: None,
            count: 1,
        };
        let mut report = Report {
            stale: vec![stale],
            ..Report::default()
        };
        let xml = render(&report);
        assert!(
            xml.contains(
                "<testsuites name=\"openwop-validate\" tests=\"1\" failures=\"0\" errors=\"0\">"
            ),
            "{xml}"
        );
        assert!(
            xml.contains("<system-out>a.json: baseline entry schema"),
            "{xml}"
        );
        report.strict_baseline = true;
        let xml = render(&report);
        assert!(
            xml.contains("<testsuite name=\"openwop-validate run\" tests=\"1\" failures=\"1\" errors=\"0\" skipped=\"0\">"),
            "{xml}"
        );
        assert_eq!(xml.matches("<failure ").count(), 1, "{xml}");
        assert!(
            xml.contains("</failure>\n      <system-out>a.json: "),
            "{xml}"
        );
    }

    /// A document's member name with a control character (the audit's `"a\u0001b"`) or a
    /// noncharacter XML forbids: the report stays well-formed XML and still says which.
    #[test]
    fn characters_xml_forbids_are_escaped_in_texts_and_attributes() {
        let message =
            "Additional properties are not allowed ('a\u{1}b\u{1b}\u{fffe}' was unexpected)";
        let report = Report {
            documents: vec![Document {
                path: "d\u{ffff}.json".into(),
                entries: vec![Entry {
                    path: "d\u{ffff}.json".into(),
                    line: 1,
                    column: 2,
                    severity: Severity::Error,
                    rule: "schema".into(),
                    pointer: "/a\u{1}b".into(),
                    message: message.into(),
                    docs: "https://example.test/r#schema".into(),
                }],
                ..Document::default()
            }],
            ..Report::default()
        };
        let xml = render(&report);
        let seen = attributes(&xml).unwrap_or_else(|e| panic!("{e}: {xml}"));
        for c in ['\u{1}', '\u{1b}', '\u{fffe}', '\u{ffff}'] {
            assert!(!xml.contains(c), "{c:?} in {xml}");
        }
        assert!(
            seen.iter()
                .any(|v| v.contains("('a\\u0001b\\u001b\\ufffe' was unexpected)")),
            "{seen:?}"
        );
        // Named from the repository root the test runs in.
        assert!(
            seen.iter().any(|v| v.ends_with("d\\uffff.json")),
            "{seen:?}"
        );
        // Tab, line feed and carriage return are allowed and kept.
        assert_eq!(xml_chars("a\tb\nc\rd"), "a\tb\nc\rd");
    }
}
