//! What a peer is, as data: its kind and the configured peer with its secret resolved. In
//! a file of its own, below the peer table and the reloadable snapshot that holds it
//! ([`crate::reload::live`]), so neither imports the other's module. Everything a peer
//! does is in [`super`]; its secret stays within `peers`.

use std::collections::BTreeSet;
use std::time::Duration;

use serde::Deserialize;

/// What a peer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PeerKind {
    A2a,
    Mcp,
    Http,
}

impl PeerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PeerKind::A2a => "a2a",
            PeerKind::Mcp => "mcp",
            PeerKind::Http => "http",
        }
    }
}

/// A configured peer, its secret resolved.
pub struct Peer {
    pub id: String,
    pub kind: PeerKind,
    pub url: String,
    pub(super) secret: Option<String>,
    pub(super) tenants: Option<BTreeSet<String>>,
    pub timeout: Duration,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret is never printed, not even in a debug log.
        f.debug_struct("Peer")
            .field("id", &self.id)
            .field("kind", &self.kind)
            .field("url", &self.url)
            .field("has_credential", &self.secret.is_some())
            .finish()
    }
}
