//! What a request must carry before it is dispatched: the 2026-07-28 `_meta` keys and the
//! SEP-2243 headers that mirror the body. Pure functions over headers and the message, so
//! every rule is testable without a host.

use axum::http::HeaderMap;
use base64::Engine as _;
use serde_json::Value;

use super::rpc::{HEADER_MISMATCH, INVALID_PARAMS, Message, RpcError};

pub const VERSION_HEADER: &str = "mcp-protocol-version";
pub const METHOD_HEADER: &str = "mcp-method";
pub const NAME_HEADER: &str = "mcp-name";
pub const SESSION_HEADER: &str = "mcp-session-id";

pub const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// A header's value as text, `=?base64?…?=` decoded (SEP-2243: non-header-safe values
/// travel that way and are compared decoded). `Err` when present but unreadable.
pub fn header_text(headers: &HeaderMap, name: &str) -> Result<Option<String>, RpcError> {
    let Some(raw) = headers.get(name) else {
        return Ok(None);
    };
    let unreadable = || {
        RpcError::new(
            HEADER_MISMATCH,
            format!("the `{name}` header is not readable"),
        )
    };
    let text = raw.to_str().map_err(|_| unreadable())?;
    if let Some(inner) = text
        .strip_prefix("=?base64?")
        .and_then(|t| t.strip_suffix("?="))
    {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(inner)
            .map_err(|_| unreadable())?;
        return String::from_utf8(bytes).map(Some).map_err(|_| unreadable());
    }
    Ok(Some(text.to_owned()))
}

/// The body value `Mcp-Name` must equal for `method`, if the method has one.
pub(crate) fn name_of<'a>(method: &str, params: &'a Value) -> Option<&'a Value> {
    match method {
        "tools/call" | "prompts/get" => params.get("name"),
        "resources/read" => params.get("uri"),
        m if m.starts_with("tasks/") => params.get("taskId"),
        _ => None,
    }
}

/// SEP-2243: on a 2026-07-28 request, `Mcp-Method` equals the body's method and `Mcp-Name`
/// its name (uri, taskId); a missing or different value fails closed.
pub fn check_mirrors(headers: &HeaderMap, message: &Message) -> Result<(), RpcError> {
    let method = header_text(headers, METHOD_HEADER)?;
    if method.as_deref() != Some(message.method.as_str()) {
        return Err(RpcError::new(
            HEADER_MISMATCH,
            format!(
                "the Mcp-Method header must equal the body's method `{}`",
                message.method
            ),
        )
        .naming_header("Mcp-Method"));
    }
    if let Some(expected) = name_of(&message.method, &message.params) {
        let sent = header_text(headers, NAME_HEADER)?;
        let matches = match (expected, sent.as_deref()) {
            (Value::String(s), Some(h)) => s == h,
            // Integers compare numerically, whatever their spelling in the header.
            (Value::Number(n), Some(h)) => h.trim().parse::<f64>().ok() == n.as_f64(),
            _ => false,
        };
        if !matches {
            return Err(RpcError::new(
                HEADER_MISMATCH,
                "the Mcp-Name header must equal the body's name (uri, taskId)",
            )
            .naming_header("Mcp-Name"));
        }
    }
    Ok(())
}

/// SEP-2243 custom headers: a tool whose `inputSchema` marks a top-level primitive
/// property with `x-mcp-header: "Region"` has the client mirror that argument in
/// `Mcp-Param-Region`; the server decodes the header (`=?base64?…?=`, strict Base64, or the
/// literal value) and compares it with the body: a header that is missing, undecodable or
/// different, or present for an argument the body lacks, fails closed with -32020 on 400,
/// like `Mcp-Name`. Numbers compare numerically, booleans as `true`/`false`.
pub fn check_param_headers(
    headers: &HeaderMap,
    input_schema: &serde_json::Map<String, Value>,
    arguments: &Value,
) -> Result<(), RpcError> {
    let Some(properties) = input_schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (property, schema) in properties {
        let Some(name) = schema.get("x-mcp-header").and_then(Value::as_str) else {
            continue;
        };
        let header = format!("Mcp-Param-{name}");
        let mismatch = |why: &str| {
            RpcError::new(
                HEADER_MISMATCH,
                format!("the {header} header {why} (argument `{property}`)"),
            )
            .naming_header(&header)
        };
        let sent = header_text(headers, &header)?;
        let matches = match (arguments.get(property), sent.as_deref()) {
            (None | Some(Value::Null), None) => true,
            (None | Some(Value::Null), Some(_)) => {
                return Err(mismatch("is sent for an argument the body does not carry"));
            }
            (Some(_), None) => return Err(mismatch("is missing")),
            (Some(Value::String(s)), Some(h)) => s == h,
            (Some(Value::Number(n)), Some(h)) => h.trim().parse::<f64>().ok() == n.as_f64(),
            (Some(Value::Bool(b)), Some(h)) => h.trim() == b.to_string(),
            // Only primitives may be mirrored; anything else cannot match a header.
            (Some(_), Some(_)) => false,
        };
        if !matches {
            return Err(mismatch("must equal the body's value"));
        }
    }
    Ok(())
}

/// What a 2026-07-28 request declares about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Declared {
    pub version: String,
    pub capabilities: Value,
}

impl Declared {
    /// Whether this request's client capabilities list `extension`.
    pub fn has_extension(&self, extension: &str) -> bool {
        self.capabilities
            .get("extensions")
            .and_then(Value::as_object)
            .is_some_and(|e| e.contains_key(extension))
    }
}

/// The `_meta` a modern request must carry; a missing key is -32602 on HTTP 400.
pub fn declared(message: &Message) -> Result<Declared, RpcError> {
    let meta = message.meta();
    let missing = |key: &str| {
        RpcError::new(INVALID_PARAMS, format!("params._meta must carry `{key}`"))
            .with_http(axum::http::StatusCode::BAD_REQUEST)
    };
    let version = meta
        .get(META_VERSION)
        .and_then(Value::as_str)
        .ok_or_else(|| missing(META_VERSION))?;
    let capabilities = meta
        .get(META_CAPABILITIES)
        .filter(|c| c.is_object())
        .ok_or_else(|| missing(META_CAPABILITIES))?;
    Ok(Declared {
        version: version.to_owned(),
        capabilities: capabilities.clone(),
    })
}

/// The `MCP-Protocol-Version` header must equal the `_meta` version; checked before the
/// version is selected, so a disagreement is a mismatch, not a negotiation.
pub fn check_version_header(headers: &HeaderMap, declared: &Declared) -> Result<(), RpcError> {
    match header_text(headers, VERSION_HEADER)? {
        Some(h) if h == declared.version => Ok(()),
        Some(_) => Err(RpcError::new(
            HEADER_MISMATCH,
            "the MCP-Protocol-Version header must equal params._meta's protocolVersion",
        )
        .naming_header("MCP-Protocol-Version")),
        None => Err(RpcError::new(
            HEADER_MISMATCH,
            "a request of this revision must send the MCP-Protocol-Version header",
        )
        .naming_header("MCP-Protocol-Version")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use serde_json::json;

    fn call(name: &str) -> Message {
        Message {
            id: Some(crate::edge::jsonrpc::Id::from_value(&json!(1))),
            method: "tools/call".into(),
            params: json!({"name": name, "_meta": {META_VERSION: "2026-07-28", META_CAPABILITIES: {}}}),
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).expect("value"));
        }
        h
    }

    #[test]
    fn method_and_name_headers_must_mirror_the_body() {
        let m = call("echo");
        assert!(
            check_mirrors(
                &headers(&[("mcp-method", "tools/call"), ("mcp-name", "echo")]),
                &m
            )
            .is_ok()
        );
        for bad in [
            headers(&[("mcp-name", "echo")]),
            headers(&[("mcp-method", "tools/list"), ("mcp-name", "echo")]),
            headers(&[("mcp-method", "tools/call"), ("mcp-name", "Echo")]),
            headers(&[("mcp-method", "tools/call")]),
        ] {
            assert_eq!(
                check_mirrors(&bad, &m).map_err(|e| e.code),
                Err(HEADER_MISMATCH)
            );
        }
    }

    #[test]
    fn base64_header_values_are_decoded_before_comparing() {
        let m = call("é");
        let h = headers(&[
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?w6k=?="),
        ]);
        assert!(check_mirrors(&h, &m).is_ok());
    }

    #[test]
    fn the_version_header_must_equal_meta() {
        let d = declared(&call("x")).expect("declared");
        assert!(
            check_version_header(&headers(&[("mcp-protocol-version", "2026-07-28")]), &d).is_ok()
        );
        for bad in [
            headers(&[]),
            headers(&[("mcp-protocol-version", "2025-11-25")]),
        ] {
            assert_eq!(
                check_version_header(&bad, &d).map_err(|e| e.code),
                Err(HEADER_MISMATCH)
            );
        }
    }

    #[test]
    fn missing_meta_keys_are_invalid_params_on_400() {
        let m = Message {
            id: Some(crate::edge::jsonrpc::Id::from_value(&json!(1))),
            method: "tools/list".into(),
            params: json!({"_meta": {META_VERSION: "2026-07-28"}}),
        };
        let e = declared(&m).unwrap_err();
        assert_eq!((e.code, e.http.as_u16()), (INVALID_PARAMS, 400));
    }
}
