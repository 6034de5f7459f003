//! `generated/CONFIG.md`: the reference page of the files the host reads from its operator,
//! generated from their schemas (`schemas/v2/config.schema.json`,
//! `schemas/v2/agent-definition.schema.json`): every key with its type, default, flag and
//! environment variable (the schema's `x-openwop-flag` / `x-openwop-env`), description and
//! example. A corpus without those schemas (upstream's) gets no page.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::load::Corpus;

pub(crate) const CONFIG_DOC_FILE: &str = "CONFIG.md";
pub(crate) const CONFIG_SCHEMA: &str = "schemas/v2/config.schema.json";
pub(crate) const AGENT_DEFINITION_SCHEMA: &str = "schemas/v2/agent-definition.schema.json";

/// The page, or `None` when the corpus has no config schema.
pub(crate) fn page(corpus: &Corpus, header: &str) -> Option<String> {
    if !corpus.has(CONFIG_SCHEMA) {
        return None;
    }
    let mut out = String::from(header);
    out.push_str("# Configuration reference\n\n");
    out.push_str(
        "Generated from the corpus schemas by `cargo xtask codegen` (held fresh by `--check`): \
         edit the schema, never this page. `openwop config check FILE` checks a file against \
         the same schema and the host's start-up checks.\n\n",
    );
    for (rel, title) in [
        (
            CONFIG_SCHEMA,
            "The config file (`openwop serve --config FILE`)",
        ),
        (
            AGENT_DEFINITION_SCHEMA,
            "Agent definition files (`openwop serve --agents DIR`)",
        ),
    ] {
        if !corpus.has(rel) {
            continue;
        }
        let doc = corpus.value(rel);
        let _ = writeln!(out, "## {title}\n");
        let _ = writeln!(out, "Schema: `{rel}`.\n");
        if let Some(d) = doc.get("description").and_then(Value::as_str) {
            let _ = writeln!(out, "{d}\n");
        }
        let Some(root) = resolve(corpus, rel, doc) else {
            continue;
        };
        out.push_str(
            "| key | type | default | flag / environment variable | meaning | example |\n",
        );
        out.push_str("| --- | --- | --- | --- | --- | --- |\n");
        rows(corpus, rel, root, "", &mut out);
        out.push('\n');
        if let Some(example) = doc
            .get("examples")
            .and_then(Value::as_array)
            .and_then(|e| e.first())
        {
            let _ = writeln!(
                out,
                "An example (JSON; YAML with the same keys is read alike):\n\n```json\n{}\n```\n",
                serde_json::to_string_pretty(example).unwrap_or_default()
            );
        }
    }
    Some(out)
}

/// Follows `$ref`s (in `file` or another corpus file by name) to the schema they name.
fn resolve<'a>(corpus: &'a Corpus, file: &str, schema: &'a Value) -> Option<&'a Value> {
    let mut schema = schema;
    let mut file = file.to_owned();
    for _ in 0..8 {
        let Some(r) = schema.get("$ref").and_then(Value::as_str) else {
            return Some(schema);
        };
        let (target, pointer) = r.split_once('#').unwrap_or((r, ""));
        if !target.is_empty() {
            file = corpus
                .schema_files
                .iter()
                .find(|f| f.rsplit('/').next() == Some(target))?
                .clone();
        }
        schema = corpus.value(&file).pointer(pointer)?;
    }
    None
}

/// The file a `$ref`'d schema lives in, for resolving the refs inside it.
fn file_of(corpus: &Corpus, file: &str, schema: &Value) -> String {
    match schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.split_once('#'))
    {
        Some((target, _)) if !target.is_empty() => corpus
            .schema_files
            .iter()
            .find(|f| f.rsplit('/').next() == Some(target))
            .cloned()
            .unwrap_or_else(|| file.to_owned()),
        _ => file.to_owned(),
    }
}

fn properties(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

/// One row per key of `schema`'s properties, recursing into nested sections.
fn rows(corpus: &Corpus, file: &str, schema: &Value, prefix: &str, out: &mut String) {
    let Some(props) = properties(schema) else {
        return;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, prop) in props {
        let key = format!("{prefix}{name}");
        let target = resolve(corpus, file, prop).unwrap_or(prop);
        let target_file = file_of(corpus, file, prop);
        let text = |k: &str| {
            prop.get(k)
                .or_else(|| target.get(k))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let default = prop
            .get("default")
            .or_else(|| target.get("default"))
            .map(|d| cell(&format!("`{}`", compact(d))))
            .unwrap_or_else(|| {
                if required.contains(&name.as_str()) {
                    "(required)".to_owned()
                } else {
                    String::new()
                }
            });
        let mut outside = Vec::new();
        if let Some(f) = prop.get("x-openwop-flag").and_then(Value::as_str) {
            outside.push(format!("`{f}`"));
        }
        if let Some(e) = prop.get("x-openwop-env").and_then(Value::as_str) {
            outside.push(format!("`{e}`"));
        }
        let example = prop
            .get("examples")
            .or_else(|| target.get("examples"))
            .and_then(Value::as_array)
            .and_then(|e| e.first())
            .map(|e| cell(&format!("`{}`", compact(e))))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "| `{key}` | {} | {default} | {} | {} | {example} |",
            type_of(corpus, &target_file, target),
            outside.join(", "),
            cell(&text("description")),
        );
        // Nested sections: an object, a map of objects, an array of objects.
        if properties(target).is_some() {
            rows(corpus, &target_file, target, &format!("{key}."), out);
        } else if let Some(values) = target.get("additionalProperties").filter(|v| v.is_object())
            && let Some(inner) = resolve(corpus, &target_file, values)
            && properties(inner).is_some()
        {
            let inner_file = file_of(corpus, &target_file, values);
            rows(corpus, &inner_file, inner, &format!("{key}.<KEY>."), out);
        } else if let Some(items) = target.get("items")
            && let Some(inner) = resolve(corpus, &target_file, items)
            && properties(inner).is_some()
        {
            let inner_file = file_of(corpus, &target_file, items);
            rows(corpus, &inner_file, inner, &format!("{key}[]."), out);
        }
    }
}

/// A short type description: `integer ≥ 1`, `array of string`, `one of a, b`.
fn type_of(corpus: &Corpus, file: &str, schema: &Value) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let values: Vec<String> = values.iter().map(|v| format!("`{}`", compact(v))).collect();
        return format!("one of {}", values.join(", "));
    }
    let ty = schema.get("type").and_then(Value::as_str).unwrap_or("any");
    let mut text = match ty {
        "array" => {
            let inner = schema
                .get("items")
                .map(|i| {
                    let f = file_of(corpus, file, i);
                    let t = resolve(corpus, file, i).unwrap_or(i);
                    type_of(corpus, &f, t)
                })
                .unwrap_or_else(|| "any".to_owned());
            format!("array of {inner}")
        }
        "object" if properties(schema).is_some() => "object".to_owned(),
        "object" => match schema.get("additionalProperties") {
            Some(v) if v.is_object() => {
                let f = file_of(corpus, file, v);
                let t = resolve(corpus, file, v).unwrap_or(v);
                format!("map of string to {}", type_of(corpus, &f, t))
            }
            _ => "object".to_owned(),
        },
        other => other.to_owned(),
    };
    let bound = |k: &str| schema.get(k).and_then(Value::as_f64);
    match (bound("minimum"), bound("maximum")) {
        (Some(lo), Some(hi)) => {
            let _ = write!(text, " {lo}..={hi}");
        }
        (Some(lo), None) => {
            let _ = write!(text, " ≥ {lo}");
        }
        (None, Some(hi)) => {
            let _ = write!(text, " ≤ {hi}");
        }
        (None, None) => {}
    }
    if let Some(p) = schema.get("pattern").and_then(Value::as_str) {
        let _ = write!(text, " matching `{p}`");
    }
    if let Some(n) = schema.get("minItems").and_then(Value::as_u64) {
        let _ = write!(text, " (at least {n})");
    }
    cell(&text)
}

fn compact(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Text fit for a table cell: no line breaks, `|` escaped.
fn cell(s: &str) -> String {
    s.replace('\n', " ").replace('|', "\\|")
}
