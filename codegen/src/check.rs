//! Cross-checks between corpus files, run before anything is written. Each failure names
//! the referrer (file and JSON pointer) and what was looked for where.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::error::{Error, Result};
use crate::load::{Corpus, ERRORS, FACETS_DIR, INTEROP_MAP, OPENAPI};
use crate::map::InteropMap;
use crate::openapi::Operation;
use crate::registry::ErrorRow;

pub(crate) const RUN_SNAPSHOT: &str = "schemas/v2/run-snapshot.schema.json";
const ERROR_ENVELOPE: &str = "schemas/v2/error-envelope.schema.json";

fn cross(pointer: &str, message: String) -> Error {
    Error::CrossCheck {
        file: INTEROP_MAP.to_owned(),
        pointer: pointer.to_owned(),
        message,
    }
}

/// The run statuses in the order the map's plain task-state rows give them (after checking
/// that every status of the run snapshot schema has exactly one plain row), and warnings.
pub(crate) fn run(
    corpus: &Corpus,
    errors: &[ErrorRow],
    map: &InteropMap,
    ops: &[Operation],
) -> Result<(Vec<String>, Vec<String>)> {
    operations(map, ops)?;
    error_codes(errors, map)?;
    refusals(map)?;
    let warnings = envelope_codes(corpus, errors)?;
    requires(corpus, map)?;
    let statuses = task_states(corpus, map)?;
    mcp_task_statuses(map, &statuses)?;
    for file in corpus
        .schema_files
        .iter()
        .map(String::as_str)
        .chain([OPENAPI])
    {
        field_names_once(file, corpus.value(file), String::new())?;
    }
    Ok((statuses, warnings))
}

/// Two properties of one schema object that give one Rust field (`runId` and `run_id` are
/// both `run_id`) are an error naming both, as two definitions of one model name are: the
/// generated struct would name a field twice and not compile. Walks every `properties`
/// object of `value` (at `file#pointer`), skipping instance data (`enum`, `const`,
/// `default`, `example(s)`).
fn field_names_once(file: &str, value: &Value, pointer: String) -> Result<()> {
    use heck::ToSnakeCase;
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                if matches!(
                    key.as_str(),
                    "enum" | "const" | "default" | "example" | "examples"
                ) {
                    continue;
                }
                let here = format!("{pointer}/{}", crate::uris::pointer_token(key));
                if key == "properties"
                    && let Some(props) = child.as_object()
                {
                    let mut seen: BTreeMap<String, &str> = BTreeMap::new();
                    for name in props.keys() {
                        let field = crate::format::ident(&name.to_snake_case()).to_string();
                        if let Some(first) = seen.insert(field.clone(), name) {
                            return Err(Error::Shape {
                                file: file.to_owned(),
                                pointer: format!("{here}/{}", crate::uris::pointer_token(name)),
                                message: format!(
                                    "properties `{first}` ({file}#{here}/{}) and `{name}` (here) of one object are both the Rust field `{field}`",
                                    crate::uris::pointer_token(first)
                                ),
                            });
                        }
                    }
                }
                field_names_once(file, child, here)?;
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                field_names_once(file, child, format!("{pointer}/{i}"))?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn operations(map: &InteropMap, ops: &[Operation]) -> Result<()> {
    let ids: BTreeSet<&str> = ops.iter().map(|o| o.operation_id.as_str()).collect();
    let named = map
        .a2a_operations
        .iter()
        .map(|r| (r.v2_operation.as_deref(), &r.pointer))
        .chain(
            map.mcp_methods
                .iter()
                .map(|r| (r.v2_operation.as_deref(), &r.pointer)),
        );
    for (op, pointer) in named {
        if let Some(op) = op
            && !ids.contains(op)
        {
            return Err(cross(
                &format!("{pointer}/v2Operation"),
                format!("v2Operation `{op}` is not an operationId of {OPENAPI}"),
            ));
        }
    }
    Ok(())
}

fn error_codes(errors: &[ErrorRow], map: &InteropMap) -> Result<()> {
    let codes: BTreeSet<&str> = errors.iter().map(|e| e.code.as_str()).collect();
    for r in &map.error_refs {
        if !codes.contains(r.code.as_str()) {
            return Err(cross(
                &r.pointer,
                format!(
                    "error code `{}` is not a code of {ERRORS} (/rows/*/code)",
                    r.code
                ),
            ));
        }
    }
    Ok(())
}

fn refusals(map: &InteropMap) -> Result<()> {
    for op in map.a2a_operations.iter().filter(|op| op.states_refusal) {
        if op.refusal.is_some() == op.requires.is_empty() {
            return Err(cross(
                &format!("{}/refusal", op.pointer),
                format!(
                    "`{}` row: refusal must be null exactly when requires is empty (requires {:?}, refusal {:?})",
                    op.method, op.requires, op.refusal
                ),
            ));
        }
    }
    for op in &map.a2a_operations {
        if let Some(refusal) = &op.refusal
            && !map
                .a2a_errors
                .iter()
                .any(|e| &e.name == refusal || &e.variant == refusal)
        {
            return Err(cross(
                &format!("{}/refusal", op.pointer),
                format!(
                    "refusal `{refusal}` is not the name of an a2a.errors row of {INTEROP_MAP}"
                ),
            ));
        }
    }
    Ok(())
}

fn requires(corpus: &Corpus, map: &InteropMap) -> Result<()> {
    let entries = map
        .a2a_operations
        .iter()
        .map(|r| (&r.requires, &r.pointer))
        .chain(map.mcp_methods.iter().map(|r| (&r.requires, &r.pointer)));
    for (reqs, pointer) in entries {
        for (i, req) in reqs.iter().enumerate() {
            let at = format!("{pointer}/requires/{i}");
            let Some((family, field)) = req.split_once('.') else {
                return Err(cross(&at, format!("`{req}` is not `<family>.<facet>`")));
            };
            let file = format!("{FACETS_DIR}/{family}.schema.json");
            if !corpus.has(&file) {
                return Err(cross(
                    &at,
                    format!("`{req}` names family `{family}`, but {file} does not exist"),
                ));
            }
            if !facet_has_field(corpus.value(&file), field) {
                return Err(cross(
                    &at,
                    format!("`{req}` names no facet field: {file} has no `properties.{field}`"),
                ));
            }
        }
    }
    Ok(())
}

/// A facet field is a top-level property, possibly contributed by an `allOf` branch.
fn facet_has_field(schema: &Value, field: &str) -> bool {
    schema
        .get("properties")
        .and_then(|p| p.get(field))
        .is_some()
        || schema
            .get("allOf")
            .and_then(Value::as_array)
            .is_some_and(|branches| branches.iter().any(|b| facet_has_field(b, field)))
}

/// Where the run-status enum lives, in our layout and in upstream's.
fn snapshot_statuses(corpus: &Corpus) -> Option<Vec<String>> {
    let doc = corpus.files.get(RUN_SNAPSHOT)?.value.clone();
    for pointer in [
        "/$defs/runStatus",
        "/$defs/runSnapshot/properties/status",
        "/properties/status",
    ] {
        let Some(mut schema) = doc.pointer(pointer) else {
            continue;
        };
        if let Some(target) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
        {
            schema = doc.pointer(target)?;
        }
        if let Some(values) = schema.get("enum").and_then(Value::as_array) {
            return Some(
                values
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
            );
        }
    }
    None
}

fn task_states(corpus: &Corpus, map: &InteropMap) -> Result<Vec<String>> {
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    let mut ordered = Vec::new();
    for row in map
        .task_states
        .iter()
        .filter(|r| r.interrupt_kind.is_none())
    {
        if let Some(first) = seen.insert(&row.run_status, &row.pointer) {
            return Err(cross(
                &format!("{}/runStatus", row.pointer),
                format!(
                    "run status `{}` is repeated in a2a.taskState (first at {first}); only rows with interruptKind may repeat one",
                    row.run_status
                ),
            ));
        }
        ordered.push(row.run_status.clone());
    }
    if let Some(statuses) = snapshot_statuses(corpus) {
        for status in &statuses {
            if !seen.contains_key(status.as_str()) {
                return Err(cross(
                    "/a2a/taskState",
                    format!("run status `{status}` of {RUN_SNAPSHOT} has no row in a2a.taskState"),
                ));
            }
        }
        for row in &map.task_states {
            if !statuses.contains(&row.run_status) {
                return Err(cross(
                    &format!("{}/runStatus", row.pointer),
                    format!("`{}` is not a run status of {RUN_SNAPSHOT}", row.run_status),
                ));
            }
        }
    }
    for row in map
        .task_states
        .iter()
        .filter(|r| r.interrupt_kind.is_some())
    {
        if !seen.contains_key(row.run_status.as_str()) {
            return Err(cross(
                &format!("{}/runStatus", row.pointer),
                format!(
                    "override row for `{}` has no plain row to override in a2a.taskState",
                    row.run_status
                ),
            ));
        }
    }
    let mut wires = BTreeMap::new();
    for row in &map.task_state_reverse {
        if !seen.contains_key(row.run_status.as_str()) {
            return Err(cross(
                &format!("{}/runStatus", row.pointer),
                format!(
                    "`{}` in a2a.taskStateReverse is not a run status a2a.taskState maps",
                    row.run_status
                ),
            ));
        }
        if let Some(first) = wires.insert(row.wire.as_str(), row.pointer.as_str()) {
            return Err(cross(
                &format!("{}/wire", row.pointer),
                format!(
                    "`{}` is repeated in a2a.taskStateReverse (first at {first})",
                    row.wire
                ),
            ));
        }
    }
    Ok(ordered)
}

fn mcp_task_statuses(map: &InteropMap, statuses: &[String]) -> Result<()> {
    if map.mcp_task_statuses.is_empty() {
        return Ok(());
    }
    let mut seen = BTreeSet::new();
    for row in &map.mcp_task_statuses {
        if !statuses.contains(&row.run_status) {
            return Err(cross(
                &format!("{}/runStatus", row.pointer),
                format!("`{}` is not a run status of a2a.taskState", row.run_status),
            ));
        }
        if !seen.insert(row.run_status.as_str()) {
            return Err(cross(
                &format!("{}/runStatus", row.pointer),
                format!(
                    "run status `{}` is repeated in mcp.tasks.status",
                    row.run_status
                ),
            ));
        }
    }
    if let Some(missing) = statuses.iter().find(|s| !seen.contains(s.as_str())) {
        return Err(cross(
            "/mcp/tasks/status",
            format!("run status `{missing}` has no row in mcp.tasks.status"),
        ));
    }
    Ok(())
}

/// The error envelope's list of codes, where the schema states one (`$defs/errorCode` in
/// ours, `properties/error` in upstream's), must hold every registry code: a code the host
/// can answer must pass envelope validation. A listed code the registry lacks is only a
/// warning (upstream's envelope lists a few), as no `ErrorCode` can carry it.
fn envelope_codes(corpus: &Corpus, errors: &[ErrorRow]) -> Result<Vec<String>> {
    let Some(file) = corpus.files.get(ERROR_ENVELOPE) else {
        return Ok(Vec::new());
    };
    let doc = &file.value;
    let Some((pointer, listed)) = ["/$defs/errorCode", "/properties/error"]
        .iter()
        .find_map(|p| doc.pointer(p).and_then(enum_strings).map(|l| (*p, l)))
    else {
        return Ok(Vec::new());
    };
    let registry: BTreeSet<&str> = errors.iter().map(|e| e.code.as_str()).collect();
    let listed: BTreeSet<&str> = listed.iter().map(String::as_str).collect();
    if let Some(missing) = registry.difference(&listed).next() {
        return Err(Error::CrossCheck {
            file: ERROR_ENVELOPE.to_owned(),
            pointer: pointer.to_owned(),
            message: format!("{ERRORS} code `{missing}` is missing from the envelope's code list"),
        });
    }
    Ok(listed
        .difference(&registry)
        .map(|extra| {
            format!("{ERROR_ENVELOPE}#{pointer}: envelope code `{extra}` is not a code of {ERRORS}")
        })
        .collect())
}

/// The string `enum` of a schema, or of the first `anyOf`/`oneOf` branch that has one.
fn enum_strings(schema: &Value) -> Option<Vec<String>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return Some(
            values
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        );
    }
    ["anyOf", "oneOf"]
        .iter()
        .filter_map(|k| schema.get(*k).and_then(Value::as_array))
        .flatten()
        .find_map(enum_strings)
}
