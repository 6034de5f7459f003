//! The transform expression form: JSON templates, no evaluation.
//!
//! - A string that is exactly `${path}` becomes the value at `path` (any JSON type).
//! - `${path}` inside a longer string is replaced by the value's text.
//! - An object `{"$merge": [t1, t2, ...]}` merges the objects its templates produce.
//! - `{"$eq": [a, b]}`, `{"$ne": [a, b]}`, `{"$not": t}`, `{"$and": [...]}` and
//!   `{"$or": [...]}` render to a boolean (for `when` and `until`).
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

/// Whether a rendered value counts as true for `when` and `until`: anything but null,
/// false, 0, "", `[]` and `{}`.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Expands `template` against `ctx`.
pub fn render(template: &Value, ctx: &Value) -> Value {
    match template {
        Value::String(s) => render_str(s, ctx),
        Value::Array(items) => Value::Array(items.iter().map(|t| render(t, ctx)).collect()),
        Value::Object(m) => {
            if m.len() == 1
                && let Some((op, arg)) = m.iter().next()
                && let Some(v) = logic(op, arg, ctx)
            {
                return v;
            }
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

/// The comparison operators `when` and `until` need, as one-member objects: `$eq` and
/// `$ne` (two templates, compared as JSON values), `$not` (one), `$and` and `$or` (a
/// list, read with [`truthy`]). `None` for any other member name.
fn logic(op: &str, arg: &Value, ctx: &Value) -> Option<Value> {
    let list = |arg: &Value| -> Vec<Value> {
        match arg {
            Value::Array(items) => items.iter().map(|t| render(t, ctx)).collect(),
            other => vec![render(other, ctx)],
        }
    };
    Some(Value::Bool(match op {
        "$eq" | "$ne" => {
            let items = list(arg);
            let equal = items.len() == 2 && items[0] == items[1];
            (op == "$eq") == equal
        }
        "$not" => !truthy(&render(arg, ctx)),
        "$and" => list(arg).iter().all(truthy),
        "$or" => list(arg).iter().any(truthy),
        _ => return None,
    }))
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
    fn comparison_operators_render_booleans_and_truthiness_is_json_emptiness() {
        let ctx = json!({"inputs": {"a": 1, "b": "1", "s": "x"}});
        assert_eq!(
            render(&json!({"$eq": ["${inputs.a}", 1]}), &ctx),
            json!(true)
        );
        // Compared as JSON values: the number 1 is not the string "1".
        assert_eq!(
            render(&json!({"$eq": ["${inputs.a}", "${inputs.b}"]}), &ctx),
            json!(false)
        );
        assert_eq!(
            render(&json!({"$ne": ["${inputs.s}", "y"]}), &ctx),
            json!(true)
        );
        assert_eq!(
            render(&json!({"$not": "${inputs.missing}"}), &ctx),
            json!(true)
        );
        assert_eq!(
            render(&json!({"$and": [true, "${inputs.s}"]}), &ctx),
            json!(true)
        );
        assert_eq!(render(&json!({"$or": [0, "", [], {}]}), &ctx), json!(false));
        // Any other member name is data, rendered as before.
        assert_eq!(render(&json!({"$other": 1}), &ctx), json!({"$other": 1}));
        for falsy in [
            json!(null),
            json!(false),
            json!(0),
            json!(""),
            json!([]),
            json!({}),
        ] {
            assert!(!truthy(&falsy), "{falsy}");
        }
        for t in [
            json!(true),
            json!(-1),
            json!("0"),
            json!([0]),
            json!({"a": null}),
        ] {
            assert!(truthy(&t), "{t}");
        }
    }

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
