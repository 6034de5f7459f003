//! Reload without a restart: what `openwop serve` re-reads on SIGHUP (api keys, tenant
//! visibility, peers and their credentials) and how it is swapped in.
//!
//! A reload is all or nothing: the new keys, visibility and peers are each judged as a
//! start judges them (key grammar, names the host has, peer ids, secrets and URLs through
//! the egress guard, every peer a workflow names) before anything is installed, so a bad
//! file changes nothing. Open connections and streams never notice: they hold the
//! operations, not the configuration, and each request reads the configuration in force
//! when it arrives.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::engine::Engine;
use crate::identity::KeyRing;
use crate::ops::Ops;
use crate::peers::PeerFileConfig;
use crate::settings::Visibility;

/// What a reload installs.
pub struct Reloadable {
    pub keys: KeyRing,
    pub visibility: Visibility,
    pub peers: Vec<PeerFileConfig>,
}

/// What the host hands out to reload it: the three things a reload swaps.
#[derive(Clone)]
pub struct Reloader {
    pub(crate) keys: Arc<KeyRing>,
    pub(crate) ops: Arc<Ops>,
    pub(crate) engine: Arc<Engine>,
}

/// What an applied reload changed, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub keys: usize,
    pub tenants_narrowed: usize,
    pub peers: usize,
}

impl Reloader {
    /// Judges `new` whole, then installs it. On `Err` nothing changed.
    pub async fn apply(&self, new: Reloadable) -> Result<Applied, String> {
        if new.keys.is_empty() {
            return Err("no api key would be left: a reload cannot take every key away".into());
        }
        let current = self.engine.peers();
        let peers = current.reconfigured(&new.peers)?;
        peers.check_urls().await?;
        let unknown = self.engine.registry().unknown_peers(&peers);
        if !unknown.is_empty() {
            return Err(unknown.join("; "));
        }
        if peers.any(crate::peers::PeerKind::Mcp) != current.any(crate::peers::PeerKind::Mcp) {
            // Discovery's `mcp.client` says whether the host calls MCP servers; it is
            // built once at start, so the peers change but the advertisement waits.
            tracing::warn!(
                "peers: whether any MCP server is configured changed; discovery's mcp.client follows at the next restart"
            );
        }
        let unknown = self.ops.unknown_visibility_names(&new.visibility);
        if !unknown.is_empty() {
            return Err(unknown.join("; "));
        }
        let applied = Applied {
            keys: new.keys.len(),
            tenants_narrowed: new.visibility.len(),
            peers: new.peers.len(),
        };
        // Narrowing first: peers (with their tenant lists), then visibility, then keys,
        // so a key added for a newly restricted tenant is accepted only once its
        // restrictions are in force.
        current.install(&peers);
        self.ops.replace_visibility(new.visibility);
        self.keys.replace(new.keys);
        Ok(applied)
    }
}

/// Reloads applied and refused since the process started (`/metrics`).
static APPLIED: AtomicU64 = AtomicU64::new(0);
static REFUSED: AtomicU64 = AtomicU64::new(0);

/// Counts one reload's outcome.
pub fn count(applied: bool) {
    if applied { &APPLIED } else { &REFUSED }.fetch_add(1, Ordering::Relaxed);
}

/// The reload counter in the Prometheus text format, appended to `/metrics`.
pub fn metrics_text() -> String {
    format!(
        "# HELP openwop_config_reloads_total Configuration reloads (SIGHUP), by outcome: applied, or refused with the previous configuration kept.\n\
         # TYPE openwop_config_reloads_total counter\n\
         openwop_config_reloads_total{{outcome=\"applied\"}} {}\n\
         openwop_config_reloads_total{{outcome=\"refused\"}} {}\n",
        APPLIED.load(Ordering::Relaxed),
        REFUSED.load(Ordering::Relaxed)
    )
}
