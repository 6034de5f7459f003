//! What every edge reaches: the operations, the callers' keys, the discovery document,
//! and the shutdown signal. It sits below the edges, so none imports another to get it.

use crate::discovery::Live;
use crate::identity::KeyRing;
use crate::ops::Ops;
use std::sync::Arc;
use tokio::sync::watch;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub ops: Arc<Ops>,
    pub keys: Arc<KeyRing>,
    /// The discovery document as served now (the refresh SLA replaces it).
    pub discovery: Arc<Live>,
    /// Per-principal rate limits, checked by each edge once the caller is known.
    pub rate: Arc<crate::identity::rate::RateLimiter>,
    /// How long a request may take to its answer's head (`edge::deadline`).
    pub request_deadline: std::time::Duration,
    /// Flips to true on shutdown so SSE streams and long-polls end.
    pub shutdown: watch::Receiver<bool>,
}
