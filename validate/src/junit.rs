//! JUnit XML: one testcase per document, one `<failure>` per finding that fails the run (an
//! input that could not be checked is an `<error>`), for CI systems that show test reports.
//! Findings below the run's threshold (warnings under the default `--fail-on error`) go to
//! the testcase's `<system-out>`: a report that shows red while the job is green would
//! teach people to ignore it. A run that fails for another reason (more warnings than
//! `--max-warnings`, stale entries under `--strict-baseline`) has one more testcase,
//! `openwop-validate run`, failing with that reason.
//!
//! Written with quick-xml's writer (escaping, well-formedness) rather than quick-junit:
//! quick-junit models one outcome per testcase, and a document with three findings should
//! show three failures, not one.

use std::io;

use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesText, Event};

use crate::report::{Document, Report};
use crate::rules;

/// The suite and the testcases' class name.
const SUITE: &str = "openwop-validate";

pub fn render(report: &Report) -> String {
    let mut writer = Writer::new_with_indent(Vec::new(), b' ', 2);
    // Writing into a Vec cannot fail; an empty string would still be caught by any reader.
    let _ = write(&mut writer, report);
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

/// The extra testcase for what fails the run beyond its documents' findings.
const RUN_CASE: &str = "openwop-validate run";

fn write(w: &mut Writer<Vec<u8>>, report: &Report) -> io::Result<()> {
    let run_failures = report.run_failures();
    let stale: Vec<String> = report.stale.iter().map(|s| s.sentence()).collect();
    let run_case = !run_failures.is_empty() || !stale.is_empty();
    let tests = (report.documents.len() + usize::from(run_case)).to_string();
    let errors = report.documents.iter().filter(|d| d.unreadable()).count();
    let failures = report
        .documents
        .iter()
        .filter(|d| !d.unreadable() && d.entries.iter().any(|e| report.fails(e)))
        .count()
        + usize::from(!run_failures.is_empty());
    let (errors, failures) = (errors.to_string(), failures.to_string());
    let counts = [
        ("tests", tests.as_str()),
        ("failures", failures.as_str()),
        ("errors", errors.as_str()),
    ];
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    w.create_element("testsuites")
        .with_attribute(("name", SUITE))
        .with_attributes(counts)
        .write_inner_content(|w| {
            w.create_element("testsuite")
                .with_attribute(("name", SUITE))
                .with_attributes(counts)
                .with_attribute(("skipped", "0"))
                .write_inner_content(|w| {
                    for doc in &report.documents {
                        testcase(w, report, doc)?;
                    }
                    if run_case {
                        run_testcase(w, &run_failures, &stale)?;
                    }
                    Ok(())
                })?;
            Ok(())
        })?;
    Ok(())
}

fn testcase(w: &mut Writer<Vec<u8>>, report: &Report, doc: &Document) -> io::Result<()> {
    let case = w
        .create_element("testcase")
        .with_attribute(("name", doc.path.as_str()))
        .with_attribute(("classname", SUITE));
    if doc.entries.is_empty() {
        case.write_empty()?;
        return Ok(());
    }
    case.write_inner_content(|w| {
        let mut below = String::new();
        for e in &doc.entries {
            let body = format!(
                "{}:{}:{}: {} ({}) at \"{}\"\n{}",
                e.path,
                e.line,
                e.column,
                e.rule,
                e.severity.as_str(),
                e.pointer,
                e.docs
            );
            if !report.fails(e) {
                below.push_str(&format!("{body}\n{}\n", e.message));
                continue;
            }
            let element = if rules::is_input(&e.rule) {
                "error"
            } else {
                "failure"
            };
            let message = format!("{}: {}", e.rule, e.message);
            w.create_element(element)
                .with_attribute(("message", message.as_str()))
                .with_attribute(("type", e.rule.as_str()))
                .write_text_content(BytesText::new(&body))?;
        }
        if !below.is_empty() {
            w.create_element("system-out")
                .write_text_content(BytesText::new(&below))?;
        }
        Ok(())
    })?;
    Ok(())
}

fn run_testcase(w: &mut Writer<Vec<u8>>, failures: &[String], stale: &[String]) -> io::Result<()> {
    w.create_element("testcase")
        .with_attribute(("name", RUN_CASE))
        .with_attribute(("classname", SUITE))
        .write_inner_content(|w| {
            for why in failures {
                w.create_element("failure")
                    .with_attribute(("message", why.as_str()))
                    .with_attribute(("type", "openwop-validate.run"))
                    .write_text_content(BytesText::new(why))?;
            }
            if !stale.is_empty() {
                w.create_element("system-out")
                    .write_text_content(BytesText::new(&(stale.join("\n") + "\n")))?;
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
        assert!(seen.iter().any(|v| v == "d\\uffff.json"), "{seen:?}");
        // Tab, line feed and carriage return are allowed and kept.
        assert_eq!(xml_chars("a\tb\nc\rd"), "a\tb\nc\rd");
    }
}
