//! W3C Trace Context: which `traceparent`/`tracestate` a request to the interop edges
//! carries (the edges select it; a run keeps it; its calls to peers continue it).
//!
//! Two carriers exist: one inside the request (A2A `Message.metadata.openwop`, MCP
//! `params._meta`) and the HTTP headers. The in-request value wins because it travels with
//! the message into history and streams (and is the only one on stdio). A malformed value
//! is dropped, never an error: a peer's broken tracing must not fail its request. Nothing
//! here is ever an authorization input.

use serde_json::Value;

/// A validated trace context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    pub traceparent: String,
    /// Kept only when it is well formed and came with the chosen `traceparent`.
    pub tracestate: Option<String>,
    pub source: TraceSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceSource {
    Message,
    Header,
}

impl TraceContext {
    /// The 32-hex trace id.
    pub fn trace_id(&self) -> &str {
        &self.traceparent[3..35]
    }

    /// The 16-hex parent span id.
    pub fn parent_id(&self) -> &str {
        &self.traceparent[36..52]
    }
}

/// Picks the trace context of a request: `in_request` (the object holding `traceparent`
/// and `tracestate` inside the request) first, then the headers; each carrier's
/// `tracestate` only goes with its own `traceparent`.
pub fn select(
    in_request: Option<&Value>,
    header_traceparent: Option<&str>,
    header_tracestate: Option<&str>,
) -> Option<TraceContext> {
    let openwop = in_request;
    let in_message = openwop
        .and_then(|o| o.get("traceparent"))
        .and_then(Value::as_str);
    if let Some(traceparent) = in_message.filter(|tp| is_traceparent(tp)) {
        let tracestate = openwop
            .and_then(|o| o.get("tracestate"))
            .and_then(Value::as_str);
        return Some(TraceContext {
            traceparent: traceparent.to_owned(),
            tracestate: tracestate.filter(|ts| is_tracestate(ts)).map(str::to_owned),
            source: TraceSource::Message,
        });
    }
    let traceparent = header_traceparent
        .map(str::trim)
        .filter(|tp| is_traceparent(tp))?;
    Some(TraceContext {
        traceparent: traceparent.to_owned(),
        tracestate: header_tracestate
            .map(str::trim)
            .filter(|ts| is_tracestate(ts))
            .map(str::to_owned),
        source: TraceSource::Header,
    })
}

fn lower_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `version-traceid-parentid-flags`, lower-case hex. Version `ff` is forbidden; version
/// `00` has exactly four fields; a later version may append fields, which we accept and
/// read as `00`, as the W3C text asks.
pub fn is_traceparent(value: &str) -> bool {
    let fields: Vec<&str> = value.split('-').collect();
    if fields.len() < 4 {
        return false;
    }
    let (version, trace_id, parent_id, flags) = (fields[0], fields[1], fields[2], fields[3]);
    if !lower_hex(version, 2) || version == "ff" {
        return false;
    }
    if version == "00" && fields.len() != 4 {
        return false;
    }
    lower_hex(trace_id, 32)
        && trace_id.bytes().any(|b| b != b'0')
        && lower_hex(parent_id, 16)
        && parent_id.bytes().any(|b| b != b'0')
        && lower_hex(flags, 2)
}

const TRACESTATE_MAX_MEMBERS: usize = 32;

fn is_key(key: &str) -> bool {
    let simple = |k: &str, max: usize| {
        let mut bytes = k.bytes();
        matches!(bytes.next(), Some(b'a'..=b'z' | b'0'..=b'9'))
            && k.len() <= max
            && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'*' | b'/'))
    };
    match key.split_once('@') {
        // Multi-tenant vendor key `tenant@system`.
        Some((tenant, system)) => simple(tenant, 241) && simple(system, 14),
        None => simple(key, 256),
    }
}

fn is_value(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 256
        && value
            .bytes()
            .all(|b| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=')
        && !value.ends_with(' ')
}

/// A comma-separated list of at most 32 `key=value` members; empty members are allowed.
pub fn is_tracestate(value: &str) -> bool {
    let mut members = 0;
    for member in value.split(',') {
        let member = member.trim_matches(|c| c == ' ' || c == '\t');
        if member.is_empty() {
            continue;
        }
        let Some((key, val)) = member.split_once('=') else {
            return false;
        };
        if !is_key(key) || !is_value(val) {
            return false;
        }
        members += 1;
    }
    members <= TRACESTATE_MAX_MEMBERS
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TP_A: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const TP_B: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

    #[test]
    fn message_metadata_is_preferred_over_the_header() {
        let md = json!({"openwop": {"traceparent": TP_A, "tracestate": "vendor=abc"}});
        let tc = select(md.get("openwop"), Some(TP_B), Some("other=1")).expect("trace");
        assert_eq!(tc.source, TraceSource::Message);
        assert_eq!(tc.traceparent, TP_A);
        assert_eq!(tc.tracestate.as_deref(), Some("vendor=abc"));
        assert_eq!(tc.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(tc.parent_id(), "00f067aa0ba902b7");
    }

    #[test]
    fn malformed_message_value_is_ignored_and_the_header_used() {
        let md = json!({"openwop": {"traceparent": "00-XYZ-1-01", "tracestate": "vendor=abc"}});
        let tc = select(md.get("openwop"), Some(TP_B), Some("other=1")).expect("trace");
        assert_eq!(tc.source, TraceSource::Header);
        assert_eq!(tc.traceparent, TP_B);
        // The message's tracestate does not travel with the header's traceparent.
        assert_eq!(tc.tracestate.as_deref(), Some("other=1"));
    }

    #[test]
    fn malformed_everywhere_means_no_trace_context_and_no_error() {
        let md = json!({"openwop": {"traceparent": 42}});
        assert_eq!(select(md.get("openwop"), Some("garbage"), None), None);
        assert_eq!(select(None, None, Some("a=b")), None);
    }

    #[test]
    fn traceparent_grammar() {
        assert!(is_traceparent(TP_A));
        for bad in [
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "",
        ] {
            assert!(!is_traceparent(bad), "{bad}");
        }
        // A later version may append fields.
        assert!(is_traceparent(
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what"
        ));
    }

    #[test]
    fn malformed_tracestate_is_dropped_but_keeps_the_traceparent() {
        let md = json!({"openwop": {"traceparent": TP_A, "tracestate": "Bad Key=1"}});
        let tc = select(md.get("openwop"), None, None).expect("trace");
        assert_eq!(tc.tracestate, None);
        assert!(is_tracestate("rojo=00f067aa0ba902b7, congo=t61rcWkgMzE"));
        assert!(is_tracestate("t@sys=1,,"));
        assert!(!is_tracestate("novalue"));
        assert!(!is_tracestate("k=a,b"));
        let many = (0..33)
            .map(|i| format!("k{i}=v"))
            .collect::<Vec<_>>()
            .join(",");
        assert!(!is_tracestate(&many));
    }
}
