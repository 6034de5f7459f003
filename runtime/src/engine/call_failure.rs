//! The registered code a calling node fails with, and which peer failures are worth
//! trying again.

use crate::generated::errors::ErrorCode;
use crate::peers::{CallError, PeerKind};

/// The registered code a node fails with when its call does: upstream's own where it has
/// one for the case (`egress_denied`, `upstream_unavailable` for a peer that could not be
/// reached or only failed transiently, `mcp_error` for an MCP server's JSON-RPC error), and
/// `peer_call_failed` (ours: upstream has none) for a peer that answered, but not usably.
pub(super) fn failure_code(e: &CallError, kind: PeerKind) -> ErrorCode {
    match e {
        CallError::Refused(_) => ErrorCode::EgressDenied,
        e if transient(e) => ErrorCode::UpstreamUnavailable,
        CallError::Rpc { .. } if kind == PeerKind::Mcp => ErrorCode::McpError,
        _ => ErrorCode::PeerCallFailed,
    }
}

pub(super) fn transient(e: &CallError) -> bool {
    match e {
        CallError::Transport(_) => true,
        CallError::Status { status, .. } => *status == 429 || *status >= 500,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Registry alignment: a failed call is reported with upstream's registered code where
    /// it has one for the case, and with `peer_call_failed` (ours) only where it has none.
    #[test]
    fn failed_calls_use_upstreams_registered_codes_where_one_exists() {
        let rpc = || CallError::Rpc {
            code: -32603,
            message: "m".into(),
            reason: None,
            data: None,
        };
        let status = |status| CallError::Status {
            status,
            detail: String::new(),
        };
        for (e, kind, code) in [
            (
                CallError::Refused("private".into()),
                PeerKind::A2a,
                ErrorCode::EgressDenied,
            ),
            (
                CallError::Transport("refused".into()),
                PeerKind::Http,
                ErrorCode::UpstreamUnavailable,
            ),
            (status(503), PeerKind::Http, ErrorCode::UpstreamUnavailable),
            (status(429), PeerKind::A2a, ErrorCode::UpstreamUnavailable),
            (rpc(), PeerKind::Mcp, ErrorCode::McpError),
            (rpc(), PeerKind::A2a, ErrorCode::PeerCallFailed),
            (status(404), PeerKind::Http, ErrorCode::PeerCallFailed),
            (
                CallError::Protocol("x".into()),
                PeerKind::Mcp,
                ErrorCode::PeerCallFailed,
            ),
        ] {
            assert_eq!(failure_code(&e, kind), code, "{e}");
        }
    }
}
