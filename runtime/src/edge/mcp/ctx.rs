//! Who asks and in which era ([`Ctx`]), the channel back to the client ([`Outbound`]),
//! the reasons a run is cancelled with, and the error answers several methods share.
//! A leaf of the mount: the dispatcher (`service`), the session's elicitation
//! (`session_elicit`) and the run guard (`cancel`) all read it, and it reads none of them.

use serde_json::Value;

use super::elicit::Modes;
use super::gate::Declared;
use super::request_state::Refusal;
use super::rpc::{Message, RpcError};
use crate::identity::Subject;
use crate::ops::OpError;

/// The reason a run owned by an abandoned request is cancelled with.
pub const REQUEST_CANCELLED: &str = "mcp-request-cancelled";

/// The reason a run is cancelled with when the call that owns it is refused because the
/// client cannot be asked for the input the run needs.
pub const MISSING_CAPABILITY_REASON: &str = "mcp-missing-capability";
/// The reason a run is cancelled with when its call needs more input rounds than
/// `mcp.mrtr.maxRounds`.
pub const ROUNDS_EXCEEDED_REASON: &str = "mcp-mrtr-rounds-exceeded";

/// How long a requestState stays usable.
pub(crate) const STATE_TTL_MS: i64 = 10 * 60 * 1000;

/// The era a request is served in.
#[derive(Debug, Clone, PartialEq)]
pub enum Era {
    /// 2026-07-28 and later: self-describing requests.
    Modern(Declared),
    /// An initialize-era session of this revision.
    Legacy(String),
}

/// Who asks, and in which era.
pub struct Ctx {
    pub subject: Subject,
    pub era: Era,
    /// The elicitation modes a 2025-11-25 session's `initialize` declared.
    pub session_modes: Modes,
    /// Where messages to the client go while this request is open (its SSE stream, or
    /// stdout on stdio); `None` when the transport cannot carry any (a JSON answer).
    pub outbound: Option<Outbound>,
    /// The W3C `traceparent` the request continues (`_meta` first, then the HTTP
    /// header): a run it creates keeps it, so its calls to peers continue that trace.
    pub trace: Option<String>,
}

impl Ctx {
    /// A request with no channel back to the client but its answer.
    pub fn new(subject: Subject, era: Era) -> Ctx {
        Ctx {
            subject,
            era,
            session_modes: Modes::default(),
            outbound: None,
            trace: None,
        }
    }
}

/// The channel a request's notifications travel on before its answer.
#[derive(Clone)]
pub struct Outbound {
    /// Serialized JSON-RPC messages, in order.
    tx: tokio::sync::mpsc::UnboundedSender<String>,
    /// `params._meta.progressToken` of the request: progress is reported only when set.
    pub(crate) progress_token: Option<Value>,
    /// The last `progress` sent for the request: every notification's is larger, across
    /// every wait of the call (input rounds included).
    pub(crate) progress: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Outbound {
    /// A channel for the request `message`; each string sent is one JSON-RPC message.
    pub fn new(tx: tokio::sync::mpsc::UnboundedSender<String>, message: &Message) -> Outbound {
        let progress_token = message
            .meta()
            .get("progressToken")
            .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
            .cloned();
        Outbound {
            tx,
            progress_token,
            progress: Default::default(),
        }
    }

    /// Sends one message, as written (`wire::Outgoing::text`).
    pub(crate) fn send(&self, message: String) -> bool {
        self.tx.send(message).is_ok()
    }
}

impl Ctx {
    pub(crate) fn declared(&self) -> Option<&Declared> {
        match &self.era {
            Era::Modern(d) => Some(d),
            Era::Legacy(_) => None,
        }
    }

    pub(crate) fn principal(&self) -> String {
        format!("{}#{}", self.subject.issuer, self.subject.subject_id)
    }

    /// The elicitation modes this request (2026) declared.
    pub(crate) fn modes(&self) -> Modes {
        match &self.era {
            Era::Modern(d) => Modes::of(&d.capabilities),
            Era::Legacy(_) => self.session_modes,
        }
    }
}

pub(crate) fn internal(e: impl std::fmt::Display) -> RpcError {
    tracing::error!(error = %e, "mcp request failed");
    RpcError::internal()
}

/// A run's open interrupt that could not be read: 503 for a transient store fault.
pub(crate) fn open_fault(e: OpError) -> RpcError {
    RpcError::host_fault("the run's open interrupt could not be read", e)
}

/// The run a requestState names, unreadable: a store that cannot answer now is its 503
/// (the state stays good for a retry), anything else a state from another request.
pub(crate) fn state_run_fault(e: OpError) -> RpcError {
    match e {
        OpError::Unavailable { .. } => RpcError::from(e),
        _ => refused_state(Refusal::OtherRequest),
    }
}

/// The one answer for a task the caller cannot read, whether or not it exists.
pub(crate) fn unknown_task(task_id: &str) -> RpcError {
    RpcError::invalid_params(format!("no task `{task_id}`"))
}

pub(crate) fn refused_state(why: Refusal) -> RpcError {
    tracing::info!(?why, "requestState refused");
    RpcError::invalid_params("requestState is not valid for this request")
}
