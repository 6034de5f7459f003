//! JUnit XML: one testcase per document, one `<failure>` per finding (an input that could
//! not be checked is an `<error>`), for CI systems that show test reports.
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
    let mut text = String::from_utf8(writer.into_inner()).unwrap_or_default();
    text.push('\n');
    text
}

fn write(w: &mut Writer<Vec<u8>>, report: &Report) -> io::Result<()> {
    let tests = report.documents.len().to_string();
    let errors = report.documents.iter().filter(|d| d.unreadable()).count();
    let failures = report
        .documents
        .iter()
        .filter(|d| !d.unreadable() && !d.entries.is_empty())
        .count();
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
                        testcase(w, doc)?;
                    }
                    Ok(())
                })?;
            Ok(())
        })?;
    Ok(())
}

fn testcase(w: &mut Writer<Vec<u8>>, doc: &Document) -> io::Result<()> {
    let case = w
        .create_element("testcase")
        .with_attribute(("name", doc.path.as_str()))
        .with_attribute(("classname", SUITE));
    if doc.entries.is_empty() {
        case.write_empty()?;
        return Ok(());
    }
    case.write_inner_content(|w| {
        for e in &doc.entries {
            let element = if rules::is_input(&e.rule) {
                "error"
            } else {
                "failure"
            };
            let message = format!("{}: {}", e.rule, e.message);
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
            w.create_element(element)
                .with_attribute(("message", message.as_str()))
                .with_attribute(("type", e.rule.as_str()))
                .write_text_content(BytesText::new(&body))?;
        }
        Ok(())
    })?;
    Ok(())
}
