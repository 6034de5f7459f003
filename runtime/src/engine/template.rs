//! The transform expression form: JSON templates, no evaluation.
//!
//! - A string that is exactly `${path}` becomes the value at `path` (any JSON type).
//! - `${path}` inside a longer string is replaced by the value's text.
//! - An object `{"$merge": [t1, t2, ...]}` merges the objects its templates produce.
//! - Everything else is copied, with templates inside arrays and objects expanded.
//!
//! Paths are dotted names rooted at the context: `inputs`, `nodes`, `run`.

use serde_json::{Map, Value};

/// True when `s` is exactly one `${path}` reference.
pub fn is_reference(s: &str) -> bool {
    whole_reference(s).is_some()
}

fn whole_reference(s: &str) -> Option<&str> {
    let inner = s.strip_prefix("${")?.strip_suffix('}')?;
    (!inner.contains('}') && !inner.contains("${")).then_some(inner.trim())
}

/// Looks up a dotted path; a missing step yields `null`.
pub fn lookup<'a>(ctx: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = ctx;
    for step in path.split('.').filter(|s| !s.is_empty()) {
        cur = match cur {
            Value::Object(m) => m.get(step)?,
            Value::Array(a) => a.get(step.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// Expands `template` against `ctx`.
pub fn render(template: &Value, ctx: &Value) -> Value {
    match template {
        Value::String(s) => render_str(s, ctx),
        Value::Array(items) => Value::Array(items.iter().map(|t| render(t, ctx)).collect()),
        Value::Object(m) => {
            if let (1, Some(Value::Array(parts))) = (m.len(), m.get("$merge")) {
                let mut out = Map::new();
                for part in parts {
                    if let Value::Object(obj) = render(part, ctx) {
                        out.extend(obj);
                    }
                }
                return Value::Object(out);
            }
            Value::Object(m.iter().map(|(k, v)| (k.clone(), render(v, ctx))).collect())
        }
        other => other.clone(),
    }
}

fn render_str(s: &str, ctx: &Value) -> Value {
    if let Some(path) = whole_reference(s) {
        return lookup(ctx, path).cloned().unwrap_or(Value::Null);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) => {
                match lookup(ctx, after[..end].trim()) {
                    Some(Value::String(v)) => out.push_str(v),
                    Some(Value::Null) | None => {}
                    Some(v) => out.push_str(&v.to_string()),
                }
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    Value::String(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whole_references_keep_their_type() {
        let ctx = json!({"inputs": {"ms": 5, "o": {"a": 1}}});
        assert_eq!(render(&json!("${inputs.ms}"), &ctx), json!(5));
        assert_eq!(
            render(&json!({"x": "${inputs.o}"}), &ctx),
            json!({"x": {"a": 1}})
        );
        assert_eq!(render(&json!("${inputs.missing}"), &ctx), Value::Null);
    }

    #[test]
    fn embedded_references_interpolate_text() {
        let ctx = json!({"inputs": {"name": "Ada", "n": 3}});
        assert_eq!(
            render(&json!("hi ${inputs.name}, ${inputs.n}!"), &ctx),
            json!("hi Ada, 3!")
        );
        assert_eq!(
            render(&json!("open ${ brace"), &ctx),
            json!("open ${ brace")
        );
    }

    #[test]
    fn merge_combines_objects() {
        let ctx = json!({"inputs": {"a": 1}, "nodes": {"n": {"b": 2}}});
        let t = json!({"$merge": ["${inputs}", "${nodes.n}", {"c": 3}]});
        assert_eq!(render(&t, &ctx), json!({"a": 1, "b": 2, "c": 3}));
    }
}
