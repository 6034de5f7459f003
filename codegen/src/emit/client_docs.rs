//! The documentation of each client operation, from the OpenAPI document: summary,
//! description, the method and path, every documented answer (status, description, error
//! codes), and an example that compiles as a doctest.

use serde_json::Value;

use crate::emit::cargo_toml::LIB_NAME;
use crate::load::{Corpus, OPENAPI};
use crate::openapi::{Operation, Parameter};

/// One line of text from the corpus made safe for rustdoc ([`crate::prose::inline`]):
/// outside code spans, `[`, `]`, `<` and `>` would be read as links or HTML, so they are
/// escaped; bare URLs are put in `<…>`.
pub(crate) fn escape(text: &str) -> String {
    crate::prose::inline(text)
}

/// Doc lines (each with its leading space) for a block of text: prose, fenced blocks
/// marked `text`, no indented code blocks ([`crate::prose::lines`]).
fn lines(text: &str) -> impl Iterator<Item = String> + '_ {
    crate::prose::lines(text)
        .into_iter()
        .map(|l| format!(" {l}"))
}

/// A parameter's setter doc: its description, or what it sets.
pub(crate) fn param_doc(p: &Parameter) -> String {
    match &p.description {
        Some(d) => format!(" {}", crate::prose::lines(d).join("\n ")),
        None => format!(" Sets the `{}` {} parameter.", p.name, p.location),
    }
}

/// The method's doc lines.
pub(crate) fn method_docs(
    corpus: &Corpus,
    op: &Operation,
    fn_name: &str,
    path_args: &[String],
    example: bool,
    paged: bool,
) -> Vec<String> {
    let doc = corpus.value(OPENAPI);
    let raw = doc
        .get("paths")
        .and_then(|p| p.get(&op.path))
        .and_then(|item| item.get(op.method.to_ascii_lowercase()));
    let mut out = Vec::new();
    if let Some(summary) = &op.summary {
        out.push(format!(" {}.", escape(summary.trim_end_matches('.'))));
        out.push(String::new());
    }
    if let Some(description) = raw
        .and_then(|o| o.get("description"))
        .and_then(Value::as_str)
    {
        out.extend(lines(description));
        out.push(String::new());
    }
    out.push(format!(
        " `{} {}` (`{}`){}.",
        op.method.to_uppercase(),
        op.path,
        op.operation_id,
        if op.anonymous {
            ", sent without the credential"
        } else {
            ""
        }
    ));
    if let Some(responses) = raw
        .and_then(|o| o.get("responses"))
        .and_then(Value::as_object)
    {
        out.push(String::new());
        out.push(" # Answers".to_owned());
        out.push(String::new());
        for (status, response) in responses {
            let response = crate::openapi::resolve_local(doc, response);
            let text = response
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let kind = if status.starts_with('2') || status.starts_with('3') {
                ""
            } else {
                " (an `Error::Api`)"
            };
            out.push(format!(" - `{status}`{kind}: {}", escape(&text)));
        }
    }
    if example {
        out.push(String::new());
        out.push(" # Example".to_owned());
        out.push(String::new());
        out.extend(example_lines(op, fn_name, path_args, paged));
    }
    out
}

fn example_lines(op: &Operation, fn_name: &str, path_args: &[String], paged: bool) -> Vec<String> {
    let args = path_args
        .iter()
        .map(|a| format!("\"{a}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let mut out = vec![
        " ```no_run".to_owned(),
        format!(
            " # async fn example(client: {LIB_NAME}::client::Client) -> Result<(), {LIB_NAME}::client::Error> {{"
        ),
    ];
    if op.streams {
        out.push(format!(
            " let mut events = client.{fn_name}({args}).send().await?;"
        ));
        out.push(" while let Some(event) = events.next().await {".to_owned());
        out.push("     let event = event?;".to_owned());
        out.push(" #   let _ = event;".to_owned());
        out.push(" }".to_owned());
    } else if paged {
        out.push(" // Every item, page after page:".to_owned());
        out.push(format!(
            " let mut items = client.{fn_name}({args}).stream();"
        ));
        out.push(" while let Some(item) = items.next().await {".to_owned());
        out.push("     let item = item?;".to_owned());
        out.push(" #   let _ = item;".to_owned());
        out.push(" }".to_owned());
    } else {
        out.push(format!(
            " let answer = client.{fn_name}({args}).send().await?;"
        ));
        out.push(" println!(\"HTTP {}\", answer.status());".to_owned());
    }
    out.push(" # Ok(())".to_owned());
    out.push(" # }".to_owned());
    out.push(" ```".to_owned());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_keeps_code_and_guards_links_and_tags() {
        assert_eq!(
            escape("bytes outside [A-Za-z] of `<tenant>/[x]` see https://x.org/a."),
            "bytes outside \\[A-Za-z\\] of `<tenant>/[x]` see <https://x.org/a>."
        );
        assert_eq!(escape("a <b> c"), "a \\<b\\> c");
    }
}
