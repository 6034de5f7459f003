//! The HTTP+JSON binding. Routes are the `http` column of the map's rows (generated
//! table), matched here rather than registered one by one, because A2A's paths put a
//! `:verb` right after a parameter (`/tasks/{id}:cancel`) and a task id is a
//! `tenant/opaque` pair that clients may send with its `/` unescaped.

use std::collections::BTreeMap;

use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use openwop_generated::dispatch::A2A_OPERATIONS;
use serde_json::{Map, Value};

use super::Answer;
use super::card::REST_PATH;
use super::errors::{Fault, Transport};
use super::extract::{A2A_JSON, Caller, HttpJson, Refusal, read_body};
use super::service::A2aState;
use crate::ids::BoundId;

/// A route of the table: `(HTTP method, path template, JSON-RPC method)`.
fn routes() -> Vec<(&'static str, &'static str, &'static str)> {
    let mut out: Vec<(&str, &str, &str)> = Vec::new();
    for op in A2A_OPERATIONS {
        if !out
            .iter()
            .any(|(m, p, _)| *m == op.http_method && *p == op.http_path)
        {
            out.push((op.http_method, op.http_path, op.method));
        }
        // The A2A proto names GET for the subscribe path while the spec text names POST
        // (the map says to accept both).
        if op.method == "SubscribeToTask"
            && !out
                .iter()
                .any(|(m, p, _)| *m == "GET" && *p == op.http_path)
        {
            out.push(("GET", op.http_path, op.method));
        }
    }
    out
}

fn percent_decode(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = raw.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Matches path segments against a template, binding `{name}` parameters. A parameter
/// takes one segment, or two joined by `/` (an unescaped `tenant/opaque` id).
fn match_template(
    template: &[&str],
    segments: &[String],
    bound: &mut Vec<(String, String)>,
) -> bool {
    let Some((first, rest)) = template.split_first() else {
        return segments.is_empty();
    };
    if let Some(inner) = first.strip_prefix('{') {
        let Some((name, suffix)) = inner.split_once('}') else {
            return false;
        };
        for take in 1..=2.min(segments.len()) {
            let joined = segments[..take].join("/");
            let Some(value) = joined.strip_suffix(suffix) else {
                continue;
            };
            // No id of ours contains `:`; one that seems to is a `:verb` path.
            if value.is_empty() || value.contains(':') {
                continue;
            }
            bound.push((name.to_owned(), value.to_owned()));
            if match_template(rest, &segments[take..], bound) {
                return true;
            }
            bound.pop();
        }
        false
    } else {
        segments.first().is_some_and(|s| s == first) && match_template(rest, &segments[1..], bound)
    }
}

/// Path parameters bound by a template, in template order.
type Bound = Vec<(String, String)>;

/// Finds the route for a path (with or without a leading `/{tenant}` routing segment).
/// When several templates match, the one with more template segments wins, so
/// `/tasks/{id}/pushNotificationConfigs` is never read as a task id with a slash.
/// `Err(methods)` when no route takes this HTTP method: the methods the path does take
/// (empty when the path does not exist at all).
fn find(
    http_method: &str,
    segments: &[String],
) -> Result<(&'static str, Bound), Vec<&'static str>> {
    let mut allowed: Vec<&'static str> = Vec::new();
    for skip in 0..=1.min(segments.len()) {
        let mut best: Option<(usize, &'static str, Bound)> = None;
        for (m, template, method) in routes() {
            let parts: Vec<&str> = template.trim_start_matches('/').split('/').collect();
            let mut bound = Vec::new();
            if match_template(&parts, &segments[skip..], &mut bound) {
                if !allowed.contains(&m) {
                    allowed.push(m);
                }
                if m == http_method && best.as_ref().is_none_or(|(rank, _, _)| parts.len() > *rank)
                {
                    best = Some((parts.len(), method, bound));
                }
            }
        }
        if let Some((_, method, mut bound)) = best {
            // The `/{tenant}` prefix is the request's `tenant` field on this binding.
            if skip == 1 {
                bound.push(("tenant".to_owned(), segments[0].clone()));
            }
            return Ok((method, bound));
        }
        if !allowed.is_empty() {
            break;
        }
    }
    Err(allowed)
}

/// Whether a `Content-Type` names A2A's JSON (parameters such as `charset` ignored).
fn is_json_media_type(value: &str) -> bool {
    crate::edge::jsonrpc::is_json_media_type(value, &[A2A_JSON])
}

/// A task id from a path: the projected form (`~2F`) is undone once; anything that is
/// not a run id is kept as sent and later answered as an unknown task.
fn task_id(raw: &str) -> String {
    BoundId::parse_path(raw)
        .map(|id| id.as_bound())
        .unwrap_or_else(|_| raw.to_owned())
}

fn query_params(query: Option<&str>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if let (Some(k), Some(v)) = (
            percent_decode(&k.replace('+', " ")),
            percent_decode(&v.replace('+', " ")),
        ) {
            out.insert(k, v);
        }
    }
    out
}

/// One call on the HTTP+JSON binding: the method its route names and its parameters,
/// gathered from the path, the query and the body into one object as JSON-RPC has it.
pub struct RestCall {
    pub method: &'static str,
    pub params: Value,
    /// The raw query, which may carry `A2A-Version`.
    pub query: Option<String>,
}

impl FromRequest<A2aState> for RestCall {
    type Rejection = Refusal<HttpJson>;

    async fn from_request(request: Request, _: &A2aState) -> Result<Self, Refusal<HttpJson>> {
        Ok(read_call(request).await?)
    }
}

/// Reads an HTTP+JSON call: its route (from the generated table), and one parameter
/// object made of the body, the query and the path parameters.
pub(super) async fn read_call(request: Request) -> Result<RestCall, Fault> {
    let http_method = request.method().clone();
    let path = request.uri().path().to_owned();
    let query = request.uri().query().map(str::to_owned);
    let rel = path.strip_prefix(REST_PATH).unwrap_or(&path);
    let segments = rel
        .trim_start_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .map(percent_decode)
        .collect::<Option<Vec<String>>>()
        .ok_or_else(|| Fault::invalid_params("path", "has a malformed percent escape"))?;
    let (method, bound) = find(http_method.as_str(), &segments).map_err(|allowed| {
        if allowed.is_empty() {
            Fault::transport(Transport::MethodNotFound, "no such A2A route")
        } else {
            Fault::method_not_allowed(
                format!("this A2A route does not accept {http_method}"),
                &allowed,
            )
        }
    })?;
    let json_body = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(is_json_media_type);
    let body = read_body(request).await?;
    // A body is A2A's JSON (`application/a2a+json`, or `application/json` as both SDK
    // clients send it); anything else is refused before it is read as JSON.
    let has_body = !body.iter().all(u8::is_ascii_whitespace);
    if has_body && http_method == Method::POST && !json_body {
        return Err(Fault::transport(
            Transport::UnsupportedMediaType,
            "the request body must be application/a2a+json or application/json",
        ));
    }
    let mut params = Map::new();
    if http_method == Method::POST && !body.iter().all(u8::is_ascii_whitespace) {
        match crate::edge::jsonrpc::strict_value(&body) {
            Ok(Value::Object(o)) => params = o,
            Ok(_) => return Err(Fault::invalid_params("body", "must be a JSON object")),
            // Valid JSON with a member repeated (the JSON-RPC binding's refusal too).
            Err(e) if e.is_data() => return Err(Fault::invalid_params("body", e.to_string())),
            Err(_) => return Err(Fault::transport(Transport::Parse, "the body is not JSON")),
        }
    }
    for (k, v) in query_params(query.as_deref()) {
        if k != "A2A-Version" {
            params.entry(k).or_insert(Value::String(v));
        }
    }
    // The push-config paths name the task `{id}` and the config `{configId}`; their
    // request messages call those `taskId` and `id` (and a create body's own `id` is the
    // config's).
    let push_config = method.contains("PushNotificationConfig");
    for (name, value) in bound {
        let (name, value) = match name.as_str() {
            "id" if push_config => ("taskId".to_owned(), task_id(&value)),
            "configId" => ("id".to_owned(), value),
            "id" | "taskId" => (name, task_id(&value)),
            _ => (name, value),
        };
        params.insert(name, Value::String(value));
    }
    Ok(RestCall {
        method,
        params: Value::Object(params),
        query,
    })
}

pub async fn handle(
    State(state): State<A2aState>,
    Caller(subject, ..): Caller<HttpJson>,
    headers: HeaderMap,
    call: RestCall,
) -> Result<Response, Refusal<HttpJson>> {
    let RestCall {
        method,
        params,
        query,
    } = call;
    let answer = super::serve(
        &state,
        &subject,
        &headers,
        query.as_deref(),
        method,
        &params,
    )
    .await?;
    Ok(match answer {
        Answer::Value(result) => (StatusCode::OK, axum::Json(result)).into_response(),
        Answer::Stream(events) => {
            // A stream the host cannot go on with ends with the binding's error body.
            let frames = events.map(|item| {
                let body = match item {
                    Ok(response) => serde_json::to_string(&response).unwrap_or_default(),
                    Err(fault) => fault.rest_body_text(),
                };
                Ok::<_, std::convert::Infallible>(Event::default().data(body))
            });
            Sse::new(frames)
                .keep_alive(KeepAlive::default())
                .into_response()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segs(path: &str) -> Vec<String> {
        path.trim_start_matches('/')
            .split('/')
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn every_table_route_is_reachable() {
        for op in A2A_OPERATIONS {
            let concrete = op
                .http_path
                .replace("{id}", "acme~2Fr-0123456789abcdef")
                .replace("{configId}", "c1");
            let (method, _) = find(op.http_method, &segs(&concrete))
                .unwrap_or_else(|_| panic!("{} {}", op.http_method, op.http_path));
            assert_eq!(method, op.method);
        }
    }

    #[test]
    fn verbs_after_ids_and_unescaped_bound_ids_match() {
        let (method, bound) =
            find("POST", &segs("/tasks/acme/r-0123456789abcdef:cancel")).expect("cancel");
        assert_eq!(method, "CancelTask");
        assert_eq!(
            bound,
            vec![("id".to_owned(), "acme/r-0123456789abcdef".to_owned())]
        );
        let (method, bound) = find("GET", &segs("/tasks/acme/r-0123456789abcdef")).expect("get");
        assert_eq!(method, "GetTask");
        assert_eq!(task_id(&bound[0].1), "acme/r-0123456789abcdef");
        assert_eq!(
            task_id("acme~2Fr-0123456789abcdef"),
            "acme/r-0123456789abcdef"
        );
        assert_eq!(
            find("GET", &segs("/tasks/x:subscribe"))
                .expect("get subscribe")
                .0,
            "SubscribeToTask"
        );
        assert_eq!(
            find("POST", &segs("/tasks/x:subscribe"))
                .expect("post subscribe")
                .0,
            "SubscribeToTask"
        );
    }

    #[test]
    fn tenant_prefixed_twins_and_wrong_methods() {
        assert_eq!(
            find("POST", &segs("/some-tenant/message:send"))
                .expect("twin")
                .0,
            "SendMessage"
        );
        assert_eq!(find("DELETE", &segs("/message:send")), Err(vec!["POST"]));
        assert_eq!(find("GET", &segs("/nothing/here/at/all")), Err(vec![]));
    }

    #[test]
    fn a_tenant_prefix_is_bound_as_the_tenant_field() {
        let (method, bound) =
            find("GET", &segs("/ag-R0123/extendedAgentCard")).expect("extended card");
        assert_eq!(method, "GetExtendedAgentCard");
        assert_eq!(bound, vec![("tenant".to_owned(), "ag-R0123".to_owned())]);
        let (_, bound) = find("GET", &segs("/extendedAgentCard")).expect("no prefix");
        assert!(bound.is_empty());
    }

    #[test]
    fn json_media_types_with_parameters_are_a2a_bodies() {
        assert!(is_json_media_type("application/json"));
        assert!(is_json_media_type("Application/A2A+JSON; charset=utf-8"));
        assert!(!is_json_media_type("text/plain"));
        assert!(!is_json_media_type("application/x-www-form-urlencoded"));
    }

    #[test]
    fn query_values_are_decoded() {
        let q = query_params(Some("contextId=a%2Fb&pageSize=5&x"));
        assert_eq!(q.get("contextId").map(String::as_str), Some("a/b"));
        assert_eq!(q.get("pageSize").map(String::as_str), Some("5"));
    }
}
