//! What every edge reaches: the operations, the callers' keys, the discovery document,
//! and the shutdown signal. It sits below the edges, so none imports another to get it.

use crate::discovery::Live;
use crate::identity::KeyRing;
use crate::ops::Ops;
use std::sync::Arc;
use tokio::sync::watch;

/// What every handler can reach, behind one reference count: axum clones the state for
/// every request (the `State` extractor, each route's service), so a clone is one atomic
/// increment, not one per field.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl AppState {
    pub fn new(shared: Shared) -> Self {
        Self(Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// The fields of [`AppState`]. `Clone` so a state can be made from another with a field
/// changed (a test's host with another discovery document).
#[derive(Clone)]
pub struct Shared {
    pub ops: Arc<Ops>,
    pub keys: Arc<KeyRing>,
    /// The discovery document as served now (the refresh SLA replaces it).
    pub discovery: Arc<Live>,
    /// Per-principal rate limits, checked by each edge once the caller is known.
    pub rate: Arc<crate::identity::rate::RateLimiter>,
    /// Requests without a valid credential, by the caller's address (see `unauthenticated`).
    pub unauthenticated: Arc<crate::identity::rate::RateLimiter>,
    /// How long a request may take to its answer's head (`edge::deadline`).
    pub request_deadline: std::time::Duration,
    /// How long a request's body may take to arrive (`edge::body`).
    pub body_timeout: std::time::Duration,
    /// Flips to true on shutdown so SSE streams and long-polls end.
    pub shutdown: watch::Receiver<bool>,
}

impl AppState {
    /// A request whose credential was refused: `Ok` while its address may still be
    /// answered `401`, the wait once it has spent its share (answered `429` with
    /// `Retry-After` in the edge's shape). One address flooding bad keys is slowed down
    /// without touching any other, or any request with a valid key.
    pub fn unauthenticated(
        &self,
        parts: &axum::http::request::Parts,
    ) -> Result<(), crate::identity::rate::Limited> {
        let Some(axum::extract::ConnectInfo(peer)) = parts
            .extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        else {
            // Served without the host's server loop (a test's router): no address.
            return Ok(());
        };
        self.unauthenticated.admit_key(&peer.ip().to_string())
    }
}
