//! JSON-RPC 2.0 framing, shared by the A2A and MCP edges: one request object per body,
//! read into [`Request`]. What a malformed body is ([`Malformed`]) is decided here once;
//! each edge renders it in its own error shape through its own `From<Malformed>`, and
//! adds the rules only its protocol has (MCP ids are never null).

use serde_json::{Map, Value};

/// One JSON-RPC request or notification as received.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// `None` for a notification (no `id` member); `Some(Value::Null)` for an explicit
    /// null id, which JSON-RPC allows and discourages.
    pub id: Option<Value>,
    pub method: String,
    /// The `params` object; an absent or null one reads as `{}`.
    pub params: Value,
}

impl Request {
    pub fn is_notification(&self) -> bool {
        self.id.is_none()
    }

    /// The id to echo in an answer (`null` for a notification).
    pub fn echo_id(&self) -> Value {
        self.id.clone().unwrap_or(Value::Null)
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Malformed {
    /// Not JSON at all (`-32700`).
    Parse(String),
    /// JSON, but not one JSON-RPC 2.0 request object (`-32600`): a batch, a response, no
    /// `method`, a wrong `jsonrpc`, an id that is neither a string, a number nor null.
    InvalidRequest { message: String, id: Option<Value> },
    /// A request whose `params` is not an object (`-32602`); by-position params are not
    /// used by either protocol.
    ParamsNotObject { id: Option<Value> },
}

impl Malformed {
    pub fn id(&self) -> Option<&Value> {
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

fn valid_id(id: &Value) -> bool {
    matches!(id, Value::String(_) | Value::Number(_) | Value::Null)
}

/// Reads one JSON-RPC request from a body.
pub fn parse(body: &[u8]) -> Result<Request, Malformed> {
    let value: Value = serde_json::from_slice(body).map_err(|e| Malformed::Parse(e.to_string()))?;
    let Value::Object(mut obj) = value else {
        return Err(Malformed::InvalidRequest {
            message: "the body must be one JSON-RPC request object".to_owned(),
            id: None,
        });
    };
    let id = obj.remove("id");
    if id.as_ref().is_some_and(|id| !valid_id(id)) {
        return Err(Malformed::InvalidRequest {
            message: "`id` must be a string, a number or null".to_owned(),
            id: None,
        });
    }
    let invalid = |message: &str| Malformed::InvalidRequest {
        message: message.to_owned(),
        id: id.clone(),
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(
            "not a JSON-RPC 2.0 request: `jsonrpc` must be \"2.0\"",
        ));
    }
    let method = match obj.remove("method") {
        Some(Value::String(m)) => m,
        _ => return Err(invalid("`method` must be a string")),
    };
    let params = match obj.remove("params") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(p @ Value::Object(_)) => p,
        Some(_) => return Err(Malformed::ParamsNotObject { id }),
    };
    Ok(Request { id, method, params })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_request_a_notification_and_a_null_id_are_told_apart() {
        let r = parse(br#"{"jsonrpc":"2.0","id":7,"method":"m","params":{"a":1}}"#).unwrap();
        assert_eq!(
            (r.id, r.method, r.params),
            (Some(json!(7)), "m".into(), json!({"a":1}))
        );
        let n = parse(br#"{"jsonrpc":"2.0","method":"m"}"#).unwrap();
        assert!(n.is_notification());
        assert_eq!(n.params, json!({}));
        let null = parse(br#"{"jsonrpc":"2.0","id":null,"method":"m"}"#).unwrap();
        assert_eq!(null.id, Some(Value::Null));
        assert!(!null.is_notification());
    }

    #[test]
    fn malformed_bodies_say_why_and_keep_a_readable_id() {
        assert!(matches!(parse(b"{"), Err(Malformed::Parse(_))));
        assert!(matches!(
            parse(b"[]"),
            Err(Malformed::InvalidRequest { id: None, .. })
        ));
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":{},"method":"m"}"#),
            Err(Malformed::InvalidRequest { id: None, .. })
        ));
        let e = parse(br#"{"jsonrpc":"1.0","id":"x","method":"m"}"#).unwrap_err();
        assert_eq!(e.id(), Some(&json!("x")));
        let e = parse(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#).unwrap_err();
        assert_eq!(e.id(), Some(&json!(1)));
        let e = parse(br#"{"jsonrpc":"2.0","id":2,"method":"m","params":[1]}"#).unwrap_err();
        assert_eq!(e, Malformed::ParamsNotObject { id: Some(json!(2)) });
    }
}
