//! The MCP server mount: streamable HTTP at `/mcp` (and, through the same dispatcher,
//! `openwop mcp-stdio`). A projection of the run operations, never a second
//! implementation: a tool is a workflow, a call is a run, a task is that run.
//!
//! Both eras on one endpoint: a request carrying 2026-07-28 `_meta` is served
//! statelessly; `initialize` opens a 2025-11-25 session. Every request is authenticated
//! before anything else, and every refusal is a JSON-RPC error.
//!
//! Mount with `Router::merge(edge::mcp::router(app_state, McpConfig::default()))`.

mod cancel;
mod ctx;
pub mod elicit;
pub mod gate;
mod http;
pub(crate) mod listen;
pub mod origin;
pub mod request_state;
pub mod rpc;
pub mod service;
mod session_elicit;
mod tasks;
pub mod wire;

use std::sync::Arc;

use axum::Router;
use axum::routing::post;
use serde_json::Value;

use crate::app::AppState;
use crate::identity::Subject;
use crate::negotiation::{self, Decision, Offer, Protocol};
pub use ctx::{Ctx, Era, Outbound};
pub use http::is_stateless;
use request_state::Codec;
use rpc::{RpcError, UNSUPPORTED_VERSION};

/// Where the mount answers.
pub const PATH: &str = crate::settings::MCP_PATH;

/// The largest request body read.
pub const BODY_LIMIT: usize = 1024 * 1024;

pub use crate::settings::McpConfig;

/// What the mount's handlers reach.
#[derive(Clone)]
pub struct McpState {
    pub app: AppState,
    pub config: Arc<McpConfig>,
    codec: Arc<Codec>,
    /// Calls of this process waiting on an `elicitation/create` they sent, by the state's
    /// nonce: told when the client dismissed it (an answer shows in the run itself).
    waiters:
        Arc<std::sync::Mutex<std::collections::HashMap<String, tokio::sync::oneshot::Sender<()>>>>,
    /// The offer read from [`McpState::facet`], once: the document never changes while the
    /// process runs, and every stateless call negotiates.
    offer: Arc<std::sync::OnceLock<Result<Offer, crate::negotiation::OfferError>>>,
}

impl McpState {
    /// A mount with a key of its own: its requestStates open only in this process.
    pub fn new(app: AppState, config: McpConfig) -> McpState {
        Self::with_key(app, config, &fresh_key())
    }

    /// A mount sealing requestStates with `key`: the host passes the key kept in the run
    /// store, so a state opens on every replica and after a restart.
    pub fn with_key(app: AppState, config: McpConfig, key: &[u8]) -> McpState {
        McpState {
            app,
            config: Arc::new(config),
            codec: Arc::new(Codec::new(key)),
            waiters: Arc::default(),
            offer: Arc::default(),
        }
    }

    /// The `mcp` family this mount serves: the discovery document's, else ours.
    pub fn facet(&self) -> Value {
        facet_of(&self.app.discovery.get().document, &self.config)
    }

    fn offer(&self) -> Result<&Offer, RpcError> {
        self.offer
            .get_or_init(|| Offer::from_facet(Protocol::Mcp, &self.facet()))
            .as_ref()
            .map_err(|e| {
                tracing::error!(error = %e, "the mcp facet cannot be negotiated from");
                RpcError::internal()
            })
    }

    /// Negotiates the revision a request asks for and records the outcome as a
    /// `negotiation.decided` host event of the caller's tenant, refusals included. The
    /// caller is always authenticated here: the mount refuses anonymous requests first.
    /// `via` is the path that asks: a request naming its revision in `_meta` is served only
    /// a stateless one (an initialize-era revision goes through the session initialize
    /// opens), and is refused, and recorded as refused, otherwise.
    pub async fn negotiate(
        &self,
        subject: &Subject,
        requested: &str,
        via: Via,
    ) -> Result<String, RpcError> {
        let offer = self.offer()?;
        // The peer is who it authenticated as, never a header it chose (such as Origin).
        let peer = self
            .app
            .ops
            .peer_key()
            .subject(&subject.issuer, &subject.subject_id);
        let mut decision: Decision =
            negotiation::decide(Protocol::Mcp, Some(requested), true, offer).with_peer(peer);
        if via == Via::Request
            && decision
                .version
                .as_deref()
                .is_some_and(|v| decision.is_accepted() && !is_stateless(v))
        {
            decision = decision.refuse(negotiation::Reason::Unsupported);
        }
        let payload = decision.payload(&crate::clock::rfc3339(crate::clock::now_ms()));
        self.app
            .ops
            .emit_host_event(&subject.tenant, "negotiation.decided", "durable", payload)
            .await
            .map_err(|e| RpcError::host_fault("negotiation.decided could not be recorded", e))?;
        match decision.version {
            Some(v) if decision.is_accepted() => Ok(v),
            _ => Err(
                RpcError::new(UNSUPPORTED_VERSION, "Unsupported protocol version").with_data(
                    wire::data(&wire::Unsupported {
                        supported: &self.facet()["revisions"],
                        requested,
                    }),
                ),
            ),
        }
    }
}

/// The path a revision is negotiated on ([`McpState::negotiate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// `initialize`, opening an initialize-era session.
    Initialize,
    /// A request naming its revision in `_meta` (the stateless era).
    Request,
}

/// The first revision without `initialize`.
pub const STATELESS_SINCE: &str = "2026-07-28";

/// The `mcp` family of a discovery document, or the one [`McpConfig`] gives while it has none.
pub fn facet_of(discovery: &Value, config: &McpConfig) -> Value {
    discovery
        .get("mcp")
        .cloned()
        .unwrap_or_else(|| crate::discovery::mcp_fields(config))
}

/// The run store's name for the requestState key.
pub const REQUEST_STATE_KEY: &str = "mcp.requestState.key";

/// A random requestState key.
pub fn fresh_key() -> [u8; 32] {
    let mut key = [0u8; 32];
    if getrandom::fill(&mut key).is_err() {
        tracing::error!("no randomness for the requestState key");
    }
    key
}

/// The `/mcp` routes, with a key of their own.
pub fn router(app: AppState, config: McpConfig) -> Router {
    router_for(McpState::new(app, config))
}

/// The `/mcp` routes of `state`.
pub fn router_for(state: McpState) -> Router {
    let panic =
        tower_http::catch_panic::CatchPanicLayer::custom(|_: Box<dyn std::any::Any + Send>| {
            rpc::error_response(&RpcError::internal(), None)
        });
    Router::new()
        .route(
            PATH,
            post(http::handle)
                .delete(http::end_session)
                .fallback(http::wrong_method),
        )
        .layer(panic)
        .with_state(state)
}

/// The W3C trace a request continues, when it sent a well-formed one: `_meta` first, then
/// the HTTP header (stdio passes no headers). Correlation only: nothing reads it to decide
/// who the caller is.
fn trace_context(
    message: &rpc::Message,
    headers: &axum::http::HeaderMap,
) -> Option<crate::trace::TraceContext> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let meta = Value::Object(message.meta().clone());
    crate::trace::select(Some(&meta), header("traceparent"), header("tracestate"))
}

/// The `traceparent` a request continues ([`trace_context`]), which a run it creates
/// keeps.
pub(crate) fn request_trace(
    message: &rpc::Message,
    headers: &axum::http::HeaderMap,
) -> Option<String> {
    trace_context(message, headers).map(|tc| tc.traceparent)
}

/// The exported MCP server span of a message (none without a collector).
pub(crate) fn exported_span(
    message: &rpc::Message,
    headers: &axum::http::HeaderMap,
) -> tracing::Span {
    use crate::observe::otel;
    if !otel::on() {
        return tracing::Span::none();
    }
    otel::mcp_server_span(otel::McpServer {
        method: &message.method,
        tool: message.params.get("name").and_then(Value::as_str),
        request_id: message.id.as_ref().map(|id| id.value()),
        session_id: headers
            .get(gate::SESSION_HEADER)
            .and_then(|v| v.to_str().ok()),
        trace: trace_context(message, headers),
    })
}

/// The span a request runs in, continuing the caller's trace ([`trace_context`]).
pub(crate) fn trace_span(message: &rpc::Message, headers: &axum::http::HeaderMap) -> tracing::Span {
    let method = message.method.as_str();
    match trace_context(message, headers) {
        Some(tc) => tracing::info_span!(
            "mcp",
            method,
            trace_id = tc.trace_id(),
            parent_id = tc.parent_id(),
            trace_source = ?tc.source
        ),
        None => tracing::info_span!("mcp", method),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_facet_advertises_extensions_only_when_tasks_are_served() {
        let on = crate::discovery::mcp_fields(&McpConfig::default());
        assert!(
            on["features"]
                .as_array()
                .is_some_and(|f| f.contains(&json!("extensions")))
        );
        let off = crate::discovery::mcp_fields(&McpConfig {
            tasks: false,
            ..Default::default()
        });
        assert!(
            !off["features"]
                .as_array()
                .is_some_and(|f| f.contains(&json!("extensions")))
        );
        assert_eq!(on["revisions"], json!(crate::discovery::MCP_REVISIONS));
        assert!(Offer::from_facet(Protocol::Mcp, &on).is_ok());
    }
}
