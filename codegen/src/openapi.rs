//! The REST operations of `api/v2/openapi.yaml`: the table the dispatch module and the
//! client are emitted from.

use serde_json::Value;

use crate::error::Result;
use crate::load::{At, Corpus, OPENAPI};

const VERBS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

#[derive(Debug, Clone)]
pub(crate) struct Parameter {
    pub name: String,
    /// `path`, `query` or `header`.
    pub location: String,
    pub required: bool,
    /// The parameter's schema (an empty object when it states none).
    pub schema: Value,
    pub description: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct Operation {
    pub operation_id: String,
    pub method: String,
    pub path: String,
    pub summary: Option<String>,
    pub parameters: Vec<Parameter>,
    /// The request body's JSON schema, when it takes one.
    pub body: Option<Value>,
    /// The first 2xx response's JSON schema, when it has one.
    pub response: Option<Value>,
    /// The first 2xx response is `text/event-stream`.
    pub streams: bool,
    /// That event stream's media type object (`schema`, `itemSchema`).
    pub stream_media: Option<Value>,
    /// The operation declares a `304` answer (a conditional read).
    pub not_modified: bool,
    /// `security: []`: the operation takes no credential.
    pub anonymous: bool,
    /// The body is required (`requestBody.required`).
    pub body_required: bool,
    /// Every documented answer with a JSON body: its status (`200`, `4XX`, `default`) and
    /// the JSON pointer of its schema in the OpenAPI document.
    pub json_responses: Vec<(String, String)>,
}

/// A response header the document declares somewhere: its name and JSON type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResponseHeader {
    pub name: String,
    /// `string`, `integer` or `boolean`.
    pub kind: String,
    pub description: Option<String>,
    /// Declared on a 2xx or 3xx answer (else only on errors).
    pub on_success: bool,
    /// Declared on a 4xx or 5xx answer.
    pub on_error: bool,
}

/// Every response header the document declares, sorted by name.
pub(crate) fn response_headers(corpus: &Corpus) -> Vec<ResponseHeader> {
    let doc = corpus.value(OPENAPI);
    let mut out: Vec<ResponseHeader> = Vec::new();
    let Some(paths) = doc.get("paths").and_then(Value::as_object) else {
        return out;
    };
    for item in paths.values() {
        for verb in VERBS {
            let Some(responses) = item
                .get(*verb)
                .and_then(|op| op.get("responses"))
                .and_then(Value::as_object)
            else {
                continue;
            };
            for (code, response) in responses {
                let response = resolve_local(doc, response);
                let success = code.starts_with('2') || code.starts_with('3');
                let Some(headers) = response.get("headers").and_then(Value::as_object) else {
                    continue;
                };
                for (name, header) in headers {
                    let header = resolve_local(doc, header);
                    let schema = resolve_local(doc, header.get("schema").unwrap_or(&Value::Null));
                    let kind = match schema.get("type").and_then(Value::as_str) {
                        Some(t @ ("integer" | "boolean")) => t.to_owned(),
                        _ => "string".to_owned(),
                    };
                    let description = header
                        .get("description")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    match out.iter_mut().find(|h| h.name.eq_ignore_ascii_case(name)) {
                        Some(h) => {
                            h.on_success |= success;
                            h.on_error |= !success;
                            if h.description.is_none() {
                                h.description = description;
                            }
                        }
                        None => out.push(ResponseHeader {
                            name: name.clone(),
                            kind,
                            description,
                            on_success: success,
                            on_error: !success,
                        }),
                    }
                }
            }
        }
    }
    out.sort_by_key(|h| h.name.to_ascii_lowercase());
    out
}

pub(crate) fn load(corpus: &Corpus) -> Result<Vec<Operation>> {
    let at = At { file: OPENAPI };
    let doc = corpus.value(OPENAPI);
    let Some(paths) = doc.get("paths").and_then(Value::as_object) else {
        return Err(at.shape("/paths", "expected the OpenAPI paths object"));
    };
    // Every reference inside the document must land: `resolve_local` falls back to the
    // reference object itself, so a typo (`IdempotencyKy`) would silently drop a
    // parameter or type an answer as `serde_json::Value`.
    if let Some((pointer, reference)) = dangling_local_ref(doc, doc, String::new()) {
        return Err(at.shape(
            &pointer,
            format!("`$ref` {reference} names nothing in this document"),
        ));
    }
    let mut out = Vec::new();
    for (path, item) in paths {
        let shared = item
            .get("parameters")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for verb in VERBS {
            let Some(op) = item.get(*verb) else { continue };
            let pointer = format!("/paths/{}/{verb}", crate::uris::pointer_token(path));
            let Some(operation_id) = op.get("operationId").and_then(Value::as_str) else {
                return Err(at.shape(&pointer, "operation without an operationId"));
            };
            let mut parameters = Vec::new();
            let own = op
                .get("parameters")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for param in shared.iter().chain(own.iter()) {
                let param = resolve_local(doc, param);
                let (Some(name), Some(location)) = (
                    param.get("name").and_then(Value::as_str),
                    param.get("in").and_then(Value::as_str),
                ) else {
                    return Err(at.shape(
                        &pointer,
                        "a parameter without `name` and `in` (it would be dropped from the client)",
                    ));
                };
                // An operation-level parameter overrides a path-level one of the same name.
                parameters.retain(|p: &Parameter| !(p.name == name && p.location == location));
                parameters.push(Parameter {
                    name: name.to_owned(),
                    location: location.to_owned(),
                    required: location == "path"
                        || param.get("required").and_then(Value::as_bool) == Some(true),
                    schema: param
                        .get("schema")
                        .cloned()
                        .unwrap_or_else(|| Value::Object(Default::default())),
                    description: param
                        .get("description")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                });
            }
            // Upstream declares some path parameters only in the template; they are still required.
            for name in template_params(path) {
                if !parameters
                    .iter()
                    .any(|p| p.location == "path" && p.name == name)
                {
                    parameters.push(Parameter {
                        name,
                        location: "path".to_owned(),
                        required: true,
                        schema: Value::Object(Default::default()),
                        description: None,
                    });
                }
            }
            // Two parameters that give one Rust name (`runId` in the path, `run_id` in the
            // query) would be told apart only by a trailing `_` the user cannot guess.
            let mut seen: std::collections::BTreeMap<String, &Parameter> = Default::default();
            for p in &parameters {
                use heck::ToSnakeCase;
                // As the builder's setters are named (`Names::take_header`, `Names::take`).
                let rust = match p.location.as_str() {
                    "header" => crate::emit::client_ops::accessor_name(&p.name).to_snake_case(),
                    _ => p.name.to_snake_case(),
                };
                if let Some(first) = seen.insert(rust.clone(), p) {
                    return Err(at.shape(
                        &pointer,
                        format!(
                            "parameters `{}` (in: {}) and `{}` (in: {}) of `{operation_id}` are both `{rust}` in Rust",
                            first.name, first.location, p.name, p.location
                        ),
                    ));
                }
            }
            let body = op.get("requestBody").map(|b| resolve_local(doc, b));
            let body_schema = body
                .and_then(|b| b.pointer("/content/application~1json/schema"))
                .cloned();
            let ok = op
                .get("responses")
                .and_then(Value::as_object)
                .and_then(|r| {
                    r.iter()
                        .find(|(code, _)| code.starts_with('2'))
                        .map(|(_, v)| resolve_local(doc, v))
                });
            let stream_content = ok.and_then(|r| r.pointer("/content/text~1event-stream"));
            let streams = stream_content.is_some();
            let stream_media = stream_content.cloned();
            let not_modified = op
                .get("responses")
                .and_then(Value::as_object)
                .is_some_and(|r| r.contains_key("304"));
            let anonymous = op
                .get("security")
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty);
            let body_required = body
                .and_then(|b| b.get("required"))
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let response = ok
                .and_then(|r| r.pointer("/content/application~1json/schema"))
                .cloned();
            let mut json_responses = Vec::new();
            for (code, answer) in op
                .get("responses")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                let base = match answer
                    .get("$ref")
                    .and_then(Value::as_str)
                    .and_then(|r| r.strip_prefix('#'))
                {
                    Some(target) => target.to_owned(),
                    None => format!("{pointer}/responses/{}", crate::uris::pointer_token(code)),
                };
                let schema = format!("{base}/content/application~1json/schema");
                if doc.pointer(&schema).is_some() {
                    json_responses.push((code.clone(), schema));
                }
            }
            out.push(Operation {
                operation_id: operation_id.to_owned(),
                method: verb.to_uppercase(),
                path: path.clone(),
                summary: op.get("summary").and_then(Value::as_str).map(str::to_owned),
                parameters,
                body: body_schema,
                response,
                streams,
                stream_media,
                not_modified,
                anonymous,
                body_required,
                json_responses,
            });
        }
    }
    methods_once(&out)?;
    Ok(out)
}

/// The client's method and builder for an operation: `getRun` → (`get_run`, `GetRun`),
/// before `format::ident` makes each an identifier (`2pause` → `_2pause`); `emit::client_ops`
/// names them so, and [`methods_once`] refuses two operations that give one.
pub(crate) fn client_names(operation_id: &str) -> (String, String) {
    use heck::{ToSnakeCase, ToUpperCamelCase};
    (
        operation_id.to_snake_case(),
        operation_id.to_upper_camel_case(),
    )
}

/// Two operations whose operationIds are one (`getRun` twice) or give one client method or
/// builder (`getRun`, `GetRun`, `get_run`) are an error naming both, with their pointers:
/// the crate would not compile.
fn methods_once(ops: &[Operation]) -> Result<()> {
    let pointer = |op: &Operation| {
        format!(
            "/paths/{}/{}",
            crate::uris::pointer_token(&op.path),
            op.method.to_ascii_lowercase()
        )
    };
    let mut seen: std::collections::BTreeMap<String, &Operation> = Default::default();
    for op in ops {
        // Compared as identifiers: `self` and `self_` are both `self_`.
        let (method, builder) = client_names(&op.operation_id);
        let (method, builder) = (
            crate::format::ident(&method).to_string(),
            crate::format::ident(&builder).to_string(),
        );
        for name in [format!("Client::{method}"), format!("builder::{builder}")] {
            if let Some(first) = seen.insert(name.clone(), op) {
                let what = if first.operation_id == op.operation_id {
                    format!("operationId `{}` is used twice", op.operation_id)
                } else {
                    format!(
                        "operationIds `{}` and `{}` give one name",
                        first.operation_id, op.operation_id
                    )
                };
                return Err(crate::error::Error::Shape {
                    file: OPENAPI.to_owned(),
                    pointer: pointer(op),
                    message: format!(
                        "{what}, `{name}` ({} {} at {OPENAPI}#{} and {} {} here); operationIds must differ also in snake case",
                        first.method,
                        first.path,
                        pointer(first),
                        op.method,
                        op.path
                    ),
                });
            }
        }
    }
    Ok(())
}

/// The first `$ref` inside `doc` (walked from `value`, at `pointer`) whose `#…` target does
/// not exist: where it is and what it says.
fn dangling_local_ref(doc: &Value, value: &Value, pointer: String) -> Option<(String, String)> {
    match value {
        Value::Object(map) => {
            if let Some(reference) = map.get("$ref").and_then(Value::as_str)
                && let Some(target) = reference.strip_prefix('#')
                && doc.pointer(target).is_none()
            {
                return Some((pointer, reference.to_owned()));
            }
            map.iter().find_map(|(key, v)| {
                dangling_local_ref(
                    doc,
                    v,
                    format!("{pointer}/{}", crate::uris::pointer_token(key)),
                )
            })
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| dangling_local_ref(doc, v, format!("{pointer}/{i}"))),
        _ => None,
    }
}

/// A reference from the OpenAPI document to a file the corpus lacks: where it is
/// (`api/v2/openapi.yaml#pointer`), the reference as written and the file it names.
#[derive(Debug, Clone)]
pub(crate) struct MissingFile {
    pub referrer: String,
    pub reference: String,
    pub file: String,
}

/// Every `$ref` of the OpenAPI document into another file must land: one into a corpus
/// file at a pointer that file lacks is a typo and an error naming both ends (the answer
/// or parameter would silently be `serde_json::Value` or a string); one into a file the
/// corpus lacks is returned, to be a warning (a smaller corpus's gap, as upstream's).
/// `by_uri` maps an absolute URI (`https://…/x.schema.json`) to its corpus file.
pub(crate) fn file_refs(
    corpus: &Corpus,
    by_uri: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<MissingFile>> {
    let doc = corpus.value(OPENAPI);
    let mut refs = Vec::new();
    collect_refs(doc, String::new(), &mut refs);
    let dir = OPENAPI.rsplit_once('/').map_or("", |(d, _)| d);
    let mut missing = Vec::new();
    for (pointer, reference) in refs {
        if reference.starts_with('#') {
            continue;
        }
        let (path, fragment) = reference
            .split_once('#')
            .unwrap_or((reference.as_str(), ""));
        // The file named: an absolute URI as written, else a corpus-relative path.
        let absolute = path.contains("://");
        let file = if absolute {
            path.to_owned()
        } else {
            crate::uris::join_rel(dir, path)
        };
        let target = if absolute {
            by_uri(path)
        } else {
            corpus.has(&file).then(|| file.clone())
        };
        let Some(target) = target else {
            missing.push(MissingFile {
                referrer: format!("{OPENAPI}#{pointer}"),
                reference: reference.clone(),
                file,
            });
            continue;
        };
        if corpus.value(&target).pointer(fragment).is_none() {
            return Err(crate::error::Error::Shape {
                file: OPENAPI.to_owned(),
                pointer,
                message: format!(
                    "`$ref` {reference} points at nothing in {target}#{fragment} (the file is there; the pointer is not)"
                ),
            });
        }
    }
    Ok(missing)
}

/// Every `$ref` under `value` (at `pointer`): where it is and what it says, in document order.
fn collect_refs(value: &Value, pointer: String, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
                out.push((pointer.clone(), reference.to_owned()));
            }
            for (key, v) in map {
                collect_refs(
                    v,
                    format!("{pointer}/{}", crate::uris::pointer_token(key)),
                    out,
                );
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                collect_refs(v, format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Follows one `#/components/...` reference inside the OpenAPI document (checked to land
/// by [`load`]); anything else is returned unchanged.
pub(crate) fn resolve_local<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
    match v
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
    {
        Some(pointer) => doc.pointer(pointer).unwrap_or(v),
        None => v,
    }
}

fn template_params(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        out.push(rest[open + 1..open + close].to_owned());
        rest = &rest[open + close + 1..];
    }
    out
}
