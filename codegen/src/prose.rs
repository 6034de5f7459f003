//! Corpus descriptions made into doc-comment prose. A description is text for people, and
//! rustdoc reads doc comments as Markdown with Rust doctests: written as it is, a fenced
//! block became a doctest that failed, an indented line a code block (a doctest too), and
//! `<org>`, `[runId]` or `[a-z0-9]` broke `cargo doc -D warnings` (an unclosed HTML tag, a
//! link to nothing). Every place a description becomes a doc comment goes through here: the
//! schemas handed to typify (`schema`; titles stay, typify names types after them), and the client's operation docs (`lines`, `inline`).

use serde_json::Value;

/// A whole description as doc text: fenced blocks kept as blocks marked `text` (never a
/// doctest), indentation outside them dropped (never an indented code block), and each line
/// outside code escaped by [`inline`]. Lines are joined with `\n`.
pub(crate) fn text(description: &str) -> String {
    lines(description).join("\n")
}

/// [`text`], one doc line per line (without the leading space a `///` line has).
pub(crate) fn lines(description: &str) -> Vec<String> {
    let mut out = Vec::new();
    // The open fence: its character and length.
    let mut fence: Option<(char, usize)> = None;
    for line in description.lines() {
        let trimmed = line.trim_start();
        let run = |c: char| trimmed.chars().take_while(|&x| x == c).count();
        match fence {
            Some((c, n)) => {
                if run(c) >= n && trimmed[run(c) * c.len_utf8()..].trim().is_empty() {
                    out.push(c.to_string().repeat(n));
                    fence = None;
                } else {
                    out.push(line.trim_end().to_owned());
                }
            }
            None => {
                let opens = ['`', '~']
                    .into_iter()
                    .find(|&c| run(c) >= 3)
                    .map(|c| (c, run(c)));
                if let Some((c, n)) = opens {
                    out.push(format!("{}text", c.to_string().repeat(n)));
                    fence = Some((c, n));
                } else {
                    out.push(inline(trimmed.trim_end()));
                }
            }
        }
    }
    if let Some((c, n)) = fence {
        out.push(c.to_string().repeat(n));
    }
    out
}

/// One line of prose made safe for rustdoc: outside code spans, `[` and `]` that are not a
/// Markdown link `[text](target)` are escaped, as are `<` and `>` that are not an autolink
/// `<https://…>`; a bare URL is put in `<…>`. Text already escaped (`\[`) stays as it is.
pub(crate) fn inline(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len() + 8);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' if i + 1 < chars.len() => {
                out.push(c);
                out.push(chars[i + 1]);
                i += 2;
                continue;
            }
            '`' => {
                // A code span: as many backticks close it as opened it.
                let n = chars[i..].iter().take_while(|&&x| x == '`').count();
                let close = (i + n..chars.len()).find(|&j| {
                    chars[j..].iter().take_while(|&&x| x == '`').count() == n
                        && (j == 0 || chars[j - 1] != '`')
                });
                match close {
                    Some(j) => {
                        out.extend(&chars[i..j + n]);
                        i = j + n;
                    }
                    None => {
                        out.extend(&chars[i..i + n]);
                        i += n;
                    }
                }
                continue;
            }
            '[' => {
                if let Some(end) = link_end(&chars, i) {
                    out.extend(&chars[i..end]);
                    i = end;
                    continue;
                }
                out.push_str("\\[");
            }
            ']' => out.push_str("\\]"),
            '<' => {
                let rest: String = chars[i + 1..].iter().collect();
                let auto = (rest.starts_with("http://") || rest.starts_with("https://"))
                    && rest.find('>').is_some_and(|e| !rest[..e].contains(' '));
                if auto {
                    let e = rest.find('>').unwrap_or_default();
                    out.push('<');
                    out.push_str(&rest[..=e]);
                    i += 1 + rest[..=e].chars().count();
                    continue;
                }
                out.push_str("\\<");
            }
            '>' => out.push_str("\\>"),
            'h' if (i == 0 || chars[i - 1].is_whitespace() || chars[i - 1] == '(') => {
                let rest: String = chars[i..].iter().collect();
                if rest.starts_with("http://") || rest.starts_with("https://") {
                    let word: String = rest.split(char::is_whitespace).next().unwrap_or("").into();
                    let url = word.trim_end_matches(['.', ',', ';', ')', ':']);
                    out.push('<');
                    out.push_str(url);
                    out.push('>');
                    i += url.chars().count();
                    continue;
                }
                out.push(c);
            }
            _ => out.push(c),
        }
        i += 1;
    }
    out
}

/// The end (exclusive) of a Markdown inline link `[text](target)` starting at `start`.
fn link_end(chars: &[char], start: usize) -> Option<usize> {
    let close = (start + 1..chars.len()).find(|&j| chars[j] == ']')?;
    if chars.get(close + 1) != Some(&'(') || close == start + 1 {
        return None;
    }
    let end = (close + 2..chars.len()).find(|&j| chars[j] == ')')?;
    let target: String = chars[close + 2..end].iter().collect();
    (!target.is_empty() && !target.contains(char::is_whitespace)).then_some(end + 1)
}

/// A schema with every `description` it holds (its own and its subschemas') made prose.
/// Values that are data, not schemas (`enum`, `const`, `default`, `examples`), are left as
/// they are.
pub(crate) fn schema(mut value: Value) -> Value {
    walk(&mut value);
    value
}

fn walk(value: &mut Value) {
    match value {
        Value::Object(obj) => {
            for (k, child) in obj.iter_mut() {
                match k.as_str() {
                    "description" if child.is_string() => {
                        if let Value::String(s) = child {
                            *s = text(s);
                        }
                    }
                    "enum" | "const" | "default" | "examples" | "example" => {}
                    // Maps whose members are schemas whatever their names.
                    "properties" | "patternProperties" | "$defs" | "definitions"
                    | "dependentSchemas" => {
                        if let Value::Object(members) = child {
                            members.values_mut().for_each(walk);
                        }
                    }
                    _ => walk(child),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(walk),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn fences_are_text_and_indentation_is_not_code() {
        let d = "Intro.\n\n```\nlet x = 1;\n    kept\n```\n\n    indented line\n~~~json\n{}\n~~~";
        assert_eq!(
            lines(d),
            [
                "Intro.",
                "",
                "```text",
                "let x = 1;",
                "    kept",
                "```",
                "",
                "indented line",
                "~~~text",
                "{}",
                "~~~"
            ]
        );
        assert_eq!(lines("```rust\nopen"), ["```text", "open", "```"]);
    }

    #[test]
    fn brackets_and_tags_are_escaped_outside_code_and_links() {
        assert_eq!(
            inline("ids match [a-z0-9] like <org>/<name> and [runId]"),
            "ids match \\[a-z0-9\\] like \\<org\\>/\\<name\\> and \\[runId\\]"
        );
        assert_eq!(
            inline("`<code>[x]` and <code>"),
            "`<code>[x]` and \\<code\\>"
        );
        assert_eq!(
            inline("see [the spec](https://x.org/s) or https://x.org/a. <https://x.org/b>"),
            "see [the spec](https://x.org/s) or <https://x.org/a>. <https://x.org/b>"
        );
        // Already escaped text is not escaped twice.
        assert_eq!(inline("\\[x\\] \\<y>"), "\\[x\\] \\<y\\>");
        assert_eq!(inline("a ``b ` c`` d"), "a ``b ` c`` d");
    }

    #[test]
    fn schemas_change_descriptions_not_data() {
        let v = json!({
            "description": "[x]",
            "properties": {"description": {"type": "string", "description": "<y>"}, "enum": {"description": "<e>"}},
            "enum": [{"description": "[z]"}],
            "default": {"description": "[z]"}
        });
        assert_eq!(
            schema(v),
            json!({
                "description": "\\[x\\]",
                "properties": {"description": {"type": "string", "description": "\\<y\\>"}, "enum": {"description": "\\<e\\>"}},
                "enum": [{"description": "[z]"}],
                "default": {"description": "[z]"}
            })
        );
    }
}
