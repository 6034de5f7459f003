//! JSON-RPC 2.0 over HTTP POST, as both A2A's JSON-RPC binding and MCP's streamable HTTP
//! carry it: one request per POST, the answer as `application/json` or as a
//! `text/event-stream` whose events end with the response.

use reqwest::header::HeaderMap;
use serde::Serialize;
use serde_json::Value;

use super::{CallError, Caller, Peer, Peers};

/// One JSON-RPC answer: the result, and the headers it came with.
pub struct Answer {
    pub result: Value,
    pub headers: HeaderMap,
}

/// Sends `method` with `params` (its protocol's typed params) to `url` and reads the
/// response with the same id; the result is read into its model by the caller.
pub async fn call<P: Serialize>(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    url: &str,
    headers: HeaderMap,
    method: &str,
    params: &P,
) -> Result<Answer, CallError> {
    let id = crate::ids::mint_opaque();
    let request = crate::edge::jsonrpc::Outgoing::request(&id, method, params);
    // The transport takes the body as JSON (it re-stamps the trace in it). The params are
    // strings, numbers, maps and JSON values, so this cannot fail; if it ever did, the
    // call fails rather than send half a request.
    let body = serde_json::to_value(&request)
        .map_err(|e| CallError::Protocol(format!("`{method}` cannot be written: {e}")))?;
    let response = peers
        .send(
            peer,
            caller,
            reqwest::Method::POST,
            url,
            headers,
            Some(&body),
        )
        .await?;
    let media = response.media_type();
    let message = if media == "text/event-stream" {
        sse_response(&response.body, &id)
    } else {
        serde_json::from_slice::<Value>(&response.body).ok()
    };
    let Some(message) = message else {
        return Err(if response.is_success() {
            CallError::Protocol(format!("no JSON-RPC response to `{method}`"))
        } else {
            CallError::Status {
                status: response.status,
                detail: String::new(),
            }
        });
    };
    if let Some(error) = message.get("error") {
        return Err(rpc_error(error));
    }
    match message.get("result") {
        Some(result) => Ok(Answer {
            result: result.clone(),
            headers: response.headers,
        }),
        None if !response.is_success() => Err(CallError::Status {
            status: response.status,
            detail: String::new(),
        }),
        None => Err(CallError::Protocol(format!(
            "the answer to `{method}` has neither result nor error"
        ))),
    }
}

/// The JSON-RPC response with `id` among an event stream's `data:` lines (notifications
/// before it, progress for instance, are passed over).
fn sse_response(body: &[u8], id: &str) -> Option<Value> {
    let text = String::from_utf8_lossy(body);
    let mut data = String::new();
    let mut found = None;
    let mut flush = |data: &mut String| {
        if !data.is_empty() {
            if let Ok(v) = serde_json::from_str::<Value>(data)
                && v.get("id").and_then(Value::as_str) == Some(id)
            {
                found = Some(v);
            }
            data.clear();
        }
    };
    for line in text.lines() {
        if line.is_empty() {
            flush(&mut data);
        } else if let Some(rest) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
        }
    }
    flush(&mut data);
    found
}

/// A JSON-RPC error as the A2A client rules read it: by code, or by the `reason` of a
/// `google.rpc.ErrorInfo` in `data`, which may be an array of details or (through A2A 2.x)
/// one object carrying `reason`.
pub fn rpc_error(error: &Value) -> CallError {
    let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("no message")
        .chars()
        .take(300)
        .collect();
    let data = error.get("data").cloned();
    let reason = match &data {
        Some(Value::Array(details)) => details
            .iter()
            .find_map(|d| d.get("reason").and_then(Value::as_str)),
        Some(Value::Object(o)) => o.get("reason").and_then(Value::as_str),
        _ => None,
    }
    .map(str::to_owned);
    CallError::Rpc {
        code,
        message,
        reason,
        data,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_error_is_identified_by_code_or_by_errorinfo_reason_in_either_data_shape() {
        let array = json!({"code": -32001, "message": "no task", "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org"}]});
        let CallError::Rpc { code, reason, .. } = rpc_error(&array) else {
            panic!("not an rpc error");
        };
        assert_eq!((code, reason.as_deref()), (-32001, Some("TASK_NOT_FOUND")));
        let object =
            json!({"code": -32009, "message": "v", "data": {"reason": "VERSION_NOT_SUPPORTED"}});
        let CallError::Rpc { reason, .. } = rpc_error(&object) else {
            panic!("not an rpc error");
        };
        assert_eq!(reason.as_deref(), Some("VERSION_NOT_SUPPORTED"));
        let bare = json!({"code": -32602, "message": "bad"});
        assert!(matches!(
            rpc_error(&bare),
            CallError::Rpc { reason: None, .. }
        ));
    }

    #[test]
    fn an_event_stream_answer_is_the_event_with_the_request_id() {
        let body = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"result\":{\"ok\":true}}\n\n";
        let v = sse_response(body, "abc").unwrap();
        assert_eq!(v["result"]["ok"], true);
        assert!(sse_response(body, "other").is_none());
    }
}
