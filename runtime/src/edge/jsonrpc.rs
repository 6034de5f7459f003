//! JSON-RPC 2.0 framing, shared by the A2A and MCP edges: one message per body, read
//! strictly into [`Request`] (or a response the client POSTed back), and every answer
//! written through [`success`] / [`failure`]. What a malformed body is ([`Malformed`]) is
//! decided here once; each edge renders it in its own error shape through its own
//! `From<Malformed>`, and adds the rules only its protocol has (MCP ids are never null).
//!
//! Strict at the raw-body boundary, because `serde_json::Value` is lenient where a
//! JSON-RPC peer must not be:
//! - a member repeated in any object is refused (`-32600`): a `Value` keeps the last one,
//!   so `"method":"GetTask","method":"CancelTask"` would silently cancel;
//! - the request id is kept as the raw JSON text it arrived as ([`Id`]) and echoed byte for
//!   byte: a `Value` turns `123456789012345678901234567890` into `1.2345678901234568e29`
//!   and rewrites string escapes.

use std::collections::HashSet;
use std::fmt;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};

/// A request id as received: its raw JSON text, echoed exactly in the answer.
#[derive(Clone)]
pub struct Id(Box<RawValue>);

impl Id {
    /// The `null` id, for an answer to a request whose id could not be read.
    pub fn null() -> Id {
        Id::from_value(&Value::Null)
    }

    /// An id the host mints itself (tests, server-to-client requests).
    pub fn from_value(value: &Value) -> Id {
        Id(RawValue::from_string(value.to_string())
            .unwrap_or_else(|_| RawValue::from_string("null".to_owned()).expect("null is JSON")))
    }

    /// The id parsed as a value, for what only needs to compare or show it (a number
    /// beyond 64 bits reads as its nearest double here; the answer still echoes the text).
    pub fn value(&self) -> Value {
        serde_json::from_str(self.0.get()).unwrap_or(Value::Null)
    }

    /// An id from its raw JSON text (as a bridge read it off a line), if it is JSON.
    pub fn from_raw(text: &str) -> Option<Id> {
        RawValue::from_string(text.to_owned()).ok().map(Id)
    }

    /// The id's raw JSON text.
    pub fn raw(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for Id {
    fn eq(&self, other: &Id) -> bool {
        self.raw() == other.raw()
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.raw())
    }
}

impl Serialize for Id {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// One JSON-RPC request or notification as received.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// `None` for a notification (no `id` member); `Some` of the `null` id for an explicit
    /// null id, which JSON-RPC allows and discourages.
    pub id: Option<Id>,
    pub method: String,
    /// The `params` object; an absent or null one reads as `{}`.
    pub params: Value,
}

impl Request {
    pub fn is_notification(&self) -> bool {
        self.id.is_none()
    }

    /// The id to echo in an answer (`null` for a notification).
    pub fn echo_id(&self) -> Id {
        self.id.clone().unwrap_or_else(Id::null)
    }

    /// `params._meta`, or an empty object.
    pub fn meta(&self) -> &Map<String, Value> {
        static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
        self.params
            .get("_meta")
            .and_then(Value::as_object)
            .unwrap_or(&EMPTY)
    }
}

/// Why a body is not a JSON-RPC request. `id` is the request's id when it could be read,
/// so the error can echo it.
#[derive(Debug, Clone, PartialEq)]
pub enum Malformed {
    /// Not JSON at all (`-32700`).
    Parse(String),
    /// JSON, but not one JSON-RPC 2.0 request object (`-32600`): a batch, a response, no
    /// `method`, a wrong `jsonrpc`, an id that is neither a string, a number nor null, a
    /// member repeated in an object.
    InvalidRequest { message: String, id: Option<Id> },
    /// A request whose `params` is not an object (`-32602`); by-position params are not
    /// used by either protocol.
    ParamsNotObject { id: Option<Id> },
}

impl Malformed {
    pub fn id(&self) -> Option<&Id> {
        match self {
            Malformed::Parse(_) => None,
            Malformed::InvalidRequest { id, .. } | Malformed::ParamsNotObject { id } => id.as_ref(),
        }
    }

    pub fn message(&self) -> String {
        match self {
            Malformed::Parse(detail) => format!("the body is not JSON: {detail}"),
            Malformed::InvalidRequest { message, .. } => message.clone(),
            Malformed::ParamsNotObject { .. } => "`params` must be an object".to_owned(),
        }
    }
}

/// A JSON value read with every object checked for repeated members.
struct Strict(Value);

/// Reads a JSON body as [`Strict`] does: a member repeated in any object is a data error
/// (`is_data()`), as it is for a JSON-RPC envelope, so every A2A binding refuses what the
/// JSON-RPC one refuses (a `Value` would keep the last of the two, and something in front
/// of the host that reads the first would see another request than the host serves).
pub fn strict_value(body: &[u8]) -> Result<Value, serde_json::Error> {
    serde_json::from_slice::<Strict>(body).map(|s| s.0)
}

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Strict, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Strict::deserialize(d).map(|s| s.0)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!(
                    "the member `{key}` appears twice in one object"
                )));
            }
            let Strict(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// The top level of a body: its members, with `id` kept raw.
struct Envelope {
    members: Map<String, Value>,
    id: Option<Box<RawValue>>,
}

impl<'de> Deserialize<'de> for Envelope {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Envelope, D::Error> {
        struct EnvelopeVisitor;
        impl<'de> Visitor<'de> for EnvelopeVisitor {
            type Value = Envelope;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("one JSON-RPC object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
                let mut members = Map::new();
                let mut id = None;
                let mut seen = HashSet::new();
                while let Some(key) = map.next_key::<String>()? {
                    if !seen.insert(key.clone()) {
                        return Err(de::Error::custom(format!(
                            "the member `{key}` appears twice in one object"
                        )));
                    }
                    if key == "id" {
                        // Kept as received; one that is not a scalar is refused later.
                        id = Some(map.next_value::<Box<RawValue>>()?);
                    } else {
                        let Strict(v) = map.next_value()?;
                        members.insert(key, v);
                    }
                }
                Ok(Envelope { members, id })
            }
        }
        d.deserialize_map(EnvelopeVisitor)
    }
}

fn valid_id(id: &Value) -> bool {
    matches!(id, Value::String(_) | Value::Number(_) | Value::Null)
}

/// What one body carries: a request (or notification), or a response to a request the
/// server sent (an MCP `elicitation/create` answered on a 2025-11-25 session).
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    Request(Request),
    Response(Value),
}

/// Reads the members of a body strictly: JSON, one object, no member repeated anywhere.
fn read(body: &[u8]) -> Result<Envelope, Malformed> {
    // Only an object is an envelope; anything else is JSON-checked and then refused.
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        return match serde_json::from_slice::<Strict>(body) {
            Err(e) if !e.is_data() => Err(Malformed::Parse(e.to_string())),
            Err(e) => Err(Malformed::InvalidRequest {
                message: e.to_string(),
                id: None,
            }),
            Ok(_) => Err(Malformed::InvalidRequest {
                message: "the body must be one JSON-RPC request object".to_owned(),
                id: None,
            }),
        };
    }
    serde_json::from_slice::<Envelope>(body).map_err(|e| {
        if e.is_data() {
            // A repeated member (our own error): valid JSON, not a valid request.
            Malformed::InvalidRequest {
                message: format!("not one JSON-RPC request: {e}"),
                id: None,
            }
        } else {
            Malformed::Parse(e.to_string())
        }
    })
}

/// Reads one body: a request or notification, or (when `responses` is set) a response.
pub fn parse_incoming(body: &[u8], responses: bool) -> Result<Incoming, Malformed> {
    let Envelope { mut members, id } = read(body)?;
    let id = match id {
        None => None,
        Some(raw) => {
            let value: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
            if !valid_id(&value) {
                return Err(Malformed::InvalidRequest {
                    message: "`id` must be a string, a number or null".to_owned(),
                    id: None,
                });
            }
            Some(Id(raw))
        }
    };
    if responses
        && !members.contains_key("method")
        && id.is_some()
        && (members.contains_key("result") || members.contains_key("error"))
    {
        let mut value = Value::Object(members);
        value["id"] = id.as_ref().map(Id::value).unwrap_or(Value::Null);
        return Ok(Incoming::Response(value));
    }
    let invalid = |message: &str| Malformed::InvalidRequest {
        message: message.to_owned(),
        id: id.clone(),
    };
    if members.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(
            "not a JSON-RPC 2.0 request: `jsonrpc` must be \"2.0\"",
        ));
    }
    let method = match members.remove("method") {
        Some(Value::String(m)) => m,
        _ => return Err(invalid("`method` must be a string")),
    };
    let params = match members.remove("params") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(p @ Value::Object(_)) => p,
        Some(_) => return Err(Malformed::ParamsNotObject { id }),
    };
    Ok(Incoming::Request(Request { id, method, params }))
}

/// Reads one JSON-RPC request from a body.
pub fn parse(body: &[u8]) -> Result<Request, Malformed> {
    match parse_incoming(body, false)? {
        Incoming::Request(r) => Ok(r),
        Incoming::Response(_) => unreachable!("responses are only read when asked for"),
    }
}

/// One JSON-RPC response, written with the request's id as received. The result and the
/// error are whatever the edge typed them as (A2A's models, MCP's `Value`s).
#[derive(Serialize)]
struct Answer<'a, R: ?Sized, E: ?Sized> {
    jsonrpc: &'static str,
    id: &'a Id,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a R>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a E>,
}

fn write<R: Serialize + ?Sized, E: Serialize + ?Sized>(message: &Answer<'_, R, E>) -> String {
    // Serializing plain data and a raw id into a string cannot fail.
    serde_json::to_string(message).unwrap_or_default()
}

/// A request or notification this host sends: as a server to its client
/// (`elicitation/create`, `notifications/progress`) and as a client to a peer (an A2A or
/// MCP call, `notifications/initialized`). One envelope for every message the host writes
/// first, as [`success`] and [`failure`] are for its answers; ours, not a protocol SDK's
/// (rmcp's `NumberOrString` id is lossy: runtime/README.md, "MCP wire types"), with ids
/// the host mints as text.
#[derive(Debug, Serialize)]
pub struct Outgoing<'a, P> {
    jsonrpc: &'static str,
    /// A request has an id; a notification has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    method: &'a str,
    /// Absent for a notification without params (`notifications/initialized`).
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<P>,
}

impl<'a, P: Serialize> Outgoing<'a, P> {
    /// A request: its answer comes back with `id`.
    pub fn request(id: &'a str, method: &'a str, params: P) -> Self {
        Outgoing {
            jsonrpc: "2.0",
            id: Some(id),
            method,
            params: Some(params),
        }
    }

    /// A notification: no id, no answer.
    pub fn notification(method: &'a str, params: P) -> Self {
        Outgoing {
            jsonrpc: "2.0",
            id: None,
            method,
            params: Some(params),
        }
    }

    /// The message as the line, SSE event or body it is sent as. Plain data, so writing it
    /// cannot fail (an empty text would be, and would be dropped by the reader).
    pub fn text(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl<'a> Outgoing<'a, ()> {
    /// A notification without params.
    pub fn bare_notification(method: &'a str) -> Self {
        Outgoing {
            jsonrpc: "2.0",
            id: None,
            method,
            params: None,
        }
    }
}

/// The success response to request `id`.
pub fn success<R: Serialize + ?Sized>(id: &Id, result: &R) -> String {
    write::<R, Value>(&Answer {
        jsonrpc: "2.0",
        id,
        result: Some(result),
        error: None,
    })
}

/// The error response to request `id`; `error` is the whole `error` member.
pub fn failure<E: Serialize + ?Sized>(id: &Id, error: &E) -> String {
    write::<Value, E>(&Answer {
        jsonrpc: "2.0",
        id,
        result: None,
        error: Some(error),
    })
}

/// A serialized JSON-RPC message as an HTTP response.
pub fn http_response(status: StatusCode, body: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

/// Whether a request's `Content-Type` is JSON: `application/json`, or one of `also`
/// (A2A's `application/a2a+json`), parameters such as `charset` ignored. An absent one is
/// not: a JSON-RPC body is always sent as JSON.
pub fn is_json_content_type(headers: &HeaderMap, also: &[&str]) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| is_json_media_type(v, also))
}

/// Whether a media type is `application/json` or one of `also`.
pub fn is_json_media_type(value: &str, also: &[&str]) -> bool {
    let essence = value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json" || also.contains(&essence.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every message the host writes first has one shape: an id only on a request, params
    /// only where there are some, `jsonrpc` first.
    #[test]
    fn outgoing_requests_and_notifications_share_one_envelope() {
        assert_eq!(
            Outgoing::request("r-1", "tasks/get", json!({"taskId": "t"})).text(),
            r#"{"jsonrpc":"2.0","id":"r-1","method":"tasks/get","params":{"taskId":"t"}}"#
        );
        assert_eq!(
            Outgoing::notification("notifications/progress", json!({"progress": 1})).text(),
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#
        );
        assert_eq!(
            Outgoing::bare_notification("notifications/initialized").text(),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
        );
        let raw = Id::from_raw("123456789012345678901234567890").expect("JSON");
        assert_eq!(
            failure(&raw, &json!({"code": -32700})),
            r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"error":{"code":-32700}}"#
        );
        assert!(Id::from_raw("not json").is_none());
    }
    use serde_json::json;

    fn id(v: Value) -> Option<Id> {
        Some(Id::from_value(&v))
    }

    #[test]
    fn a_request_a_notification_and_a_null_id_are_told_apart() {
        let r = parse(br#"{"jsonrpc":"2.0","id":7,"method":"m","params":{"a":1}}"#).unwrap();
        assert_eq!(
            (r.id, r.method, r.params),
            (id(json!(7)), "m".into(), json!({"a":1}))
        );
        let n = parse(br#"{"jsonrpc":"2.0","method":"m"}"#).unwrap();
        assert!(n.is_notification());
        assert_eq!(n.params, json!({}));
        let null = parse(br#"{"jsonrpc":"2.0","id":null,"method":"m"}"#).unwrap();
        assert_eq!(null.id, Some(Id::null()));
        assert!(!null.is_notification());
    }

    #[test]
    fn malformed_bodies_say_why_and_keep_a_readable_id() {
        assert!(matches!(parse(b"{"), Err(Malformed::Parse(_))));
        assert!(matches!(parse(b"[1,"), Err(Malformed::Parse(_))));
        assert!(matches!(
            parse(b"[]"),
            Err(Malformed::InvalidRequest { id: None, .. })
        ));
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":{},"method":"m"}"#),
            Err(Malformed::InvalidRequest { id: None, .. })
        ));
        let e = parse(br#"{"jsonrpc":"1.0","id":"x","method":"m"}"#).unwrap_err();
        assert_eq!(e.id(), id(json!("x")).as_ref());
        let e = parse(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#).unwrap_err();
        assert_eq!(e.id(), id(json!(1)).as_ref());
        let e = parse(br#"{"jsonrpc":"2.0","id":2,"method":"m","params":[1]}"#).unwrap_err();
        assert_eq!(e, Malformed::ParamsNotObject { id: id(json!(2)) });
    }

    /// Strict JSON-RPC: a member repeated in any object of the body is an invalid request
    /// (-32600), never "the last one wins".
    #[test]
    fn duplicate_members_are_invalid_requests_at_every_depth() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","method":"CancelTask"}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"a":2}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":[{"k":1,"k":1}]}}"#,
        ] {
            match parse(body.as_bytes()) {
                Err(Malformed::InvalidRequest { message, .. }) => {
                    assert!(message.contains("twice"), "{body}: {message}")
                }
                other => panic!("{body}: {other:?}"),
            }
        }
        // The same member in two different objects is fine.
        assert!(
            parse(br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":{"id":1},"b":{"id":1}}}"#)
                .is_ok()
        );
    }

    /// Strict JSON-RPC: the id is echoed byte for byte, whatever a double could hold.
    #[test]
    fn ids_are_echoed_byte_for_byte() {
        for raw in [
            "123456789012345678901234567890",
            "-0.10",
            r#""\u0041b""#,
            "7",
        ] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{raw},"method":"m"}}"#);
            let r = parse(body.as_bytes()).expect(raw);
            let answer = success(&r.echo_id(), &json!({}));
            assert_eq!(
                answer,
                format!(r#"{{"jsonrpc":"2.0","id":{raw},"result":{{}}}}"#)
            );
            let refused = failure(&r.echo_id(), &json!({"code": -1, "message": "m"}));
            assert!(refused.contains(&format!(r#""id":{raw},"#)), "{refused}");
        }
    }

    #[test]
    fn responses_are_read_only_when_asked_for() {
        let body = br#"{"jsonrpc":"2.0","id":"e-1","result":{"action":"accept"}}"#;
        assert_eq!(
            parse_incoming(body, true).unwrap(),
            Incoming::Response(json!({"jsonrpc":"2.0","result":{"action":"accept"},"id":"e-1"}))
        );
        assert!(parse(body).is_err());
    }

    #[test]
    fn json_media_types_with_parameters() {
        assert!(is_json_media_type("application/json", &[]));
        assert!(is_json_media_type(
            "Application/A2A+JSON; charset=utf-8",
            &["application/a2a+json"]
        ));
        assert!(!is_json_media_type("application/a2a+json", &[]));
        assert!(!is_json_media_type("text/plain", &[]));
        assert!(!is_json_content_type(&HeaderMap::new(), &[]));
    }
}
