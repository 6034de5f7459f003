//! The interop map (`spec/v2/interop-map.json`), read into the rows the dispatch and error
//! tables are emitted from.
//!
//! Both layouts are accepted. Ours names one JSON-RPC `method` per operation row and adds
//! `refusal`, `reason` and the `interruptKind` override row. Upstream's names the method in
//! `upstream`, sometimes several at once (`"A | B | C"` with `"GET | GET | DELETE /path[/{x}]"`);
//! such a row is split into one row per method, and the bracketed optional path tail goes to
//! every method except a `List…` one (a list addresses the collection, not one member).

use serde_json::Value;

use crate::error::Result;
use crate::load::{At, Corpus, INTEROP_MAP};

#[derive(Debug, Clone)]
pub(crate) struct A2aOperation {
    pub method: String,
    pub http_method: String,
    pub http_path: String,
    pub when: Option<String>,
    pub v2_operation: Option<String>,
    pub requires: Vec<String>,
    pub refusal: Option<String>,
    /// The row states `refusal` (ours always does, upstream's never).
    pub states_refusal: bool,
    pub pointer: String,
}

#[derive(Debug, Clone)]
pub(crate) struct TaskStateRow {
    pub run_status: String,
    pub interrupt_kind: Option<String>,
    pub stored: String,
    pub wire: String,
    pub pointer: String,
}

#[derive(Debug, Clone)]
pub(crate) struct A2aErrorRow {
    /// The upstream A2A name, e.g. `TaskNotFoundError`.
    pub name: String,
    /// The Rust variant, e.g. `TaskNotFound`.
    pub variant: String,
    pub jsonrpc_code: i64,
    pub http_status: u16,
    pub grpc_status: String,
    pub reason: Option<String>,
    pub client_projection: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct McpMethod {
    pub method: String,
    pub v2_operation: Option<String>,
    pub requires: Vec<String>,
    pub extension: Option<String>,
    pub pointer: String,
}

#[derive(Debug, Clone)]
pub(crate) struct McpFeature {
    pub id: String,
    pub required_for: Vec<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct McpTaskStatus {
    pub run_status: String,
    pub task_status: String,
    pub pointer: String,
}

/// One `a2a.taskStateReverse` row.
#[derive(Debug, Clone)]
pub(crate) struct ReverseRow {
    pub wire: String,
    pub run_status: String,
    pub pointer: String,
}

/// A reference from the map to an error code, wherever it sits.
#[derive(Debug, Clone)]
pub(crate) struct ErrorRef {
    pub pointer: String,
    pub code: String,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct InteropMap {
    pub a2a_operations: Vec<A2aOperation>,
    pub task_states: Vec<TaskStateRow>,
    /// `a2a.taskStateReverse`: how a remote agent's task state reads as a run status
    /// (the client direction). Optional in a corpus.
    pub task_state_reverse: Vec<ReverseRow>,
    pub a2a_errors: Vec<A2aErrorRow>,
    pub mcp_methods: Vec<McpMethod>,
    pub mcp_features: Vec<McpFeature>,
    pub mcp_task_statuses: Vec<McpTaskStatus>,
    pub error_refs: Vec<ErrorRef>,
}

pub(crate) fn load(corpus: &Corpus) -> Result<InteropMap> {
    let at = At { file: INTEROP_MAP };
    let doc = corpus.value(INTEROP_MAP);
    let mut map = InteropMap::default();

    for (i, row) in at.array(doc, "/a2a/operations")?.iter().enumerate() {
        let p = format!("/a2a/operations/{i}");
        map.a2a_operations.extend(a2a_operation_rows(&at, row, &p)?);
    }

    for (i, row) in at.array(doc, "/a2a/taskState")?.iter().enumerate() {
        let p = format!("/a2a/taskState/{i}");
        map.task_states.push(TaskStateRow {
            run_status: field_str(&at, row, &p, "runStatus")?,
            interrupt_kind: opt_field(&at, row, &p, "interruptKind")?,
            stored: field_str(&at, row, &p, "stored")?,
            wire: field_str(&at, row, &p, "wire")?,
            pointer: p,
        });
    }

    if doc.pointer("/a2a/taskStateReverse").is_some() {
        for (i, row) in at.array(doc, "/a2a/taskStateReverse")?.iter().enumerate() {
            let p = format!("/a2a/taskStateReverse/{i}");
            map.task_state_reverse.push(ReverseRow {
                wire: field_str(&at, row, &p, "wire")?,
                run_status: field_str(&at, row, &p, "runStatus")?,
                pointer: p,
            });
        }
    }

    for (i, row) in at.array(doc, "/a2a/errors")?.iter().enumerate() {
        let p = format!("/a2a/errors/{i}");
        let name = match opt_field(&at, row, &p, "name")? {
            Some(name) => name,
            None => field_str(&at, row, &p, "upstream")?,
        };
        let jsonrpc_code = at
            .i64(row, "/jsonrpc")
            .map_err(|_| at.shape(&format!("{p}/jsonrpc"), "expected an integer JSON-RPC code"))?;
        let http = at
            .i64(row, "/http")
            .map_err(|_| at.shape(&format!("{p}/http"), "expected an integer HTTP status"))?;
        map.a2a_errors.push(A2aErrorRow {
            variant: a2a_variant(&name, jsonrpc_code),
            name,
            jsonrpc_code,
            http_status: u16::try_from(http).map_err(|_| {
                at.shape(
                    &format!("{p}/http"),
                    format!("{http} is not an HTTP status"),
                )
            })?,
            grpc_status: field_str(&at, row, &p, "grpc")?,
            reason: opt_field(&at, row, &p, "reason")?,
            client_projection: opt_field(&at, row, &p, "clientProjection")?,
        });
    }

    let tasks_extension = at
        .opt_str(doc, "/pins/mcpTasks/extension")?
        .map(str::to_owned);
    for (list, extension) in [
        ("/mcp/methods", None),
        ("/mcp/tasks/methods", tasks_extension),
    ] {
        for (i, row) in at.opt_array(doc, list)?.iter().enumerate() {
            let p = format!("{list}/{i}");
            let names = match opt_field(&at, row, &p, "method")? {
                Some(m) => m,
                None => field_str(&at, row, &p, "upstream")?,
            };
            let row_extension = opt_field(&at, row, &p, "extension")?.or_else(|| extension.clone());
            for method in split_alternatives(&names) {
                map.mcp_methods.push(McpMethod {
                    method,
                    v2_operation: opt_field(&at, row, &p, "v2Operation")?,
                    requires: at.strings(row, "/requires").map_err(|_| {
                        at.shape(&format!("{p}/requires"), "expected an array of strings")
                    })?,
                    extension: row_extension.clone(),
                    pointer: p.clone(),
                });
            }
        }
    }

    for (i, row) in at.opt_array(doc, "/mcp/features")?.iter().enumerate() {
        let p = format!("/mcp/features/{i}");
        map.mcp_features.push(McpFeature {
            id: field_str(&at, row, &p, "id")?,
            required_for: at.strings(row, "/requiredFor").map_err(|_| {
                at.shape(&format!("{p}/requiredFor"), "expected an array of strings")
            })?,
        });
    }

    for (i, row) in at.opt_array(doc, "/mcp/tasks/status")?.iter().enumerate() {
        let p = format!("/mcp/tasks/status/{i}");
        map.mcp_task_statuses.push(McpTaskStatus {
            run_status: field_str(&at, row, &p, "runStatus")?,
            task_status: field_str(&at, row, &p, "taskStatus")?,
            pointer: p,
        });
    }

    collect_error_refs(doc, String::new(), &mut map.error_refs);
    Ok(map)
}

fn field_str(at: &At<'_>, row: &Value, p: &str, key: &str) -> Result<String> {
    at.str(row, &format!("/{key}"))
        .map(str::to_owned)
        .map_err(|_| at.shape(&format!("{p}/{key}"), "expected a string here"))
}

fn opt_field(at: &At<'_>, row: &Value, p: &str, key: &str) -> Result<Option<String>> {
    at.opt_str(row, &format!("/{key}"))
        .map(|s| s.map(str::to_owned))
        .map_err(|_| at.shape(&format!("{p}/{key}"), "expected a string or null here"))
}

fn split_alternatives(s: &str) -> Vec<String> {
    s.split('|')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn a2a_operation_rows(at: &At<'_>, row: &Value, p: &str) -> Result<Vec<A2aOperation>> {
    let names = match opt_field(at, row, p, "method")? {
        Some(m) => m,
        None => field_str(at, row, p, "upstream")?,
    };
    let methods = split_alternatives(&names);
    let http = field_str(at, row, p, "http")?;
    let (verbs, path) = http.rsplit_once(char::is_whitespace).ok_or_else(|| {
        at.shape(
            &format!("{p}/http"),
            format!("`{http}` is not `VERB /path`"),
        )
    })?;
    let verbs = split_alternatives(verbs);
    if verbs.len() != 1 && verbs.len() != methods.len() {
        return Err(at.shape(
            &format!("{p}/http"),
            format!(
                "{} HTTP verbs for {} methods in `{names}`",
                verbs.len(),
                methods.len()
            ),
        ));
    }
    let requires = at
        .strings(row, "/requires")
        .map_err(|_| at.shape(&format!("{p}/requires"), "expected an array of strings"))?;
    let mut out = Vec::with_capacity(methods.len());
    for (k, method) in methods.iter().enumerate() {
        let verb = verbs
            .get(k)
            .or_else(|| verbs.first())
            .cloned()
            .unwrap_or_default();
        out.push(A2aOperation {
            http_path: resolve_optional_tail(path, method),
            http_method: verb,
            method: method.clone(),
            when: opt_field(at, row, p, "when")?,
            v2_operation: opt_field(at, row, p, "v2Operation")?,
            requires: requires.clone(),
            refusal: opt_field(at, row, p, "refusal")?,
            states_refusal: row.get("refusal").is_some(),
            pointer: p.to_owned(),
        });
    }
    Ok(out)
}

/// `/a[/{b}]` is `/a/{b}` for a method on one member and `/a` for a `List…` method.
fn resolve_optional_tail(path: &str, method: &str) -> String {
    match (path.find('['), path.rfind(']')) {
        (Some(open), Some(close)) if open < close => {
            let head = &path[..open];
            let tail = &path[open + 1..close];
            let rest = &path[close + 1..];
            if method.starts_with("List") {
                format!("{head}{rest}")
            } else {
                format!("{head}{tail}{rest}")
            }
        }
        _ => path.to_owned(),
    }
}

/// `TaskNotFoundError` → `TaskNotFound`. A parenthesised description such as
/// `(invalid parameters)` is one of JSON-RPC's own errors, named by its standard code.
fn a2a_variant(name: &str, jsonrpc_code: i64) -> String {
    use heck::ToUpperCamelCase;
    if name.starts_with('(') {
        let standard = match jsonrpc_code {
            -32700 => Some("ParseError"),
            -32600 => Some("InvalidRequest"),
            -32601 => Some("MethodNotFound"),
            -32602 => Some("InvalidParams"),
            -32603 => Some("InternalError"),
            _ => None,
        };
        if let Some(s) = standard {
            return s.to_owned();
        }
    }
    let trimmed = name.trim_matches(|c: char| !c.is_alphanumeric());
    let base = trimmed.strip_suffix("Error").unwrap_or(trimmed);
    base.to_upper_camel_case()
}

fn collect_error_refs(v: &Value, pointer: String, out: &mut Vec<ErrorRef>) {
    match v {
        Value::Object(obj) => {
            for (k, child) in obj {
                let p = format!("{pointer}/{}", crate::uris::pointer_token(k));
                if matches!(k.as_str(), "clientProjection" | "v2Error")
                    && let Some(code) = child.as_str()
                {
                    out.push(ErrorRef {
                        pointer: p.clone(),
                        code: code.to_owned(),
                    });
                }
                collect_error_refs(child, p, out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                collect_error_refs(child, format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_tail_goes_to_member_methods_only() {
        let path = "/tasks/{id}/pushNotificationConfigs[/{configId}]";
        assert_eq!(
            resolve_optional_tail(path, "GetTaskPushNotificationConfig"),
            "/tasks/{id}/pushNotificationConfigs/{configId}"
        );
        assert_eq!(
            resolve_optional_tail(path, "ListTaskPushNotificationConfigs"),
            "/tasks/{id}/pushNotificationConfigs"
        );
    }

    #[test]
    fn variant_names() {
        assert_eq!(a2a_variant("TaskNotFoundError", -32001), "TaskNotFound");
        assert_eq!(a2a_variant("(invalid parameters)", -32602), "InvalidParams");
    }
}
