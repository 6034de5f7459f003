//! Reload without a restart: what `openwop serve` re-reads on SIGHUP (api keys, tenant
//! visibility, peers and their credentials) and how it is swapped in.
//!
//! A reload is all or nothing: the new keys, visibility and peers are each judged as a
//! start judges them (key grammar, names the host has, peer ids, secrets and URLs through
//! the egress guard, every peer a workflow names) before anything is installed, so a bad
//! file changes nothing. Open connections and streams never notice: they hold the
//! operations, not the configuration.
//!
//! What a reload installs is one [`Snapshot`] (keys, visibility and peers together) in
//! one [`Live`] cell that the key ring, the operations and the peers all read, swapped by
//! one pointer write: there is no moment with the new keys and the old visibility. Each
//! HTTP request is pinned to the snapshot in force when it arrives ([`Live::pinned`],
//! a layer of the host's router), so everything it reads (who the key names, what the
//! tenant may see, which peers there are) is all old or all new even when a reload lands
//! while it runs. Work a request leaves running (a run's later steps, a stream's later
//! events) reads the snapshot in force when it reads.

pub mod live;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::engine::Engine;
use crate::identity::KeyRing;
use crate::ops::Ops;
use crate::peers::PeerFileConfig;
use crate::settings::Visibility;
// The cell is in `live`, below the key ring, the operations and the peers that read it;
// its old path stays.
pub use live::{Live, Snapshot};

/// What a reload installs.
pub struct Reloadable {
    /// `None`: the keys in force stay (`mcp-stdio`).
    pub keys: Option<KeyRing>,
    pub visibility: Visibility,
    pub peers: Vec<PeerFileConfig>,
}

/// What the host hands out to reload it: the cell a reload swaps, and what judges it.
#[derive(Clone)]
pub struct Reloader {
    pub(crate) live: Live,
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
        if new.keys.as_ref().is_some_and(KeyRing::is_empty) {
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
            keys: new
                .keys
                .as_ref()
                .map_or_else(|| self.live.current().keys.len(), KeyRing::len),
            tenants_narrowed: new.visibility.len(),
            peers: new.peers.len(),
        };
        // One swap: keys, visibility and peers (with their tenant lists) together.
        install(&self.live, new.keys, new.visibility, &peers);
        current.forget_kept();
        Ok(applied)
    }
}

/// Installs keys, visibility and peers as one snapshot of `live`.
fn install(
    live: &Live,
    keys: Option<KeyRing>,
    visibility: Visibility,
    peers: &crate::peers::Peers,
) {
    let (keys, peers) = (keys.map(|k| k.configured()), peers.table());
    let visibility = Arc::new(visibility);
    live.swap(move |s| {
        if let Some(keys) = keys {
            s.keys = keys;
        }
        s.visibility = visibility;
        s.peers = peers;
    });
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::{PeerKind, Peers};

    fn keys(spec: &str) -> KeyRing {
        let mut ring = KeyRing::default();
        ring.add_spec(spec).expect("key");
        ring
    }

    fn table_of(id: &str) -> Peers {
        let entry: PeerFileConfig = serde_json::from_value(serde_json::json!(
            {"id": id, "kind": "http", "url": "https://peer.example/"}
        ))
        .expect("peer entry");
        Peers::from_config(&[entry], Default::default()).expect("peers")
    }

    fn narrowed(workflow: &str) -> Visibility {
        serde_json::from_value(serde_json::json!({"acme": {"workflows": [workflow]}}))
            .expect("visibility")
    }

    fn has(peers: &Peers, id: &str) -> bool {
        peers.get(id, PeerKind::Http, "acme").is_some()
    }

    fn bearer(key: &str) -> String {
        format!("Bearer {key}")
    }

    const OLD: &str = "old-key-0123456789abcdef";
    const NEW: &str = "new-key-0123456789abcdef";

    /// A request pinned before a reload reads the old keys, visibility and peers to its
    /// end, however its reads interleave with the swap; one after it reads only the new;
    /// and the reload is one swap of the cell.
    #[tokio::test]
    async fn a_request_sees_all_old_or_all_new() {
        let ring = keys(&format!("acme:{OLD}"));
        let live = ring.live();
        let peers = table_of("old-peer").in_live(&live);
        live.swap(|s| s.visibility = Arc::new(narrowed("old-flow")));
        fn visibility(live: &Live) -> Vec<String> {
            live.current().visibility["acme"]
                .workflows
                .clone()
                .unwrap_or_default()
        }
        let before = live.current().generation;

        live.pinned(async {
            // Each component read once before the reload...
            assert!(ring.authenticate(Some(&bearer(OLD))).is_ok());
            install(
                &live,
                Some(keys(&format!("acme:{NEW}"))),
                narrowed("new-flow"),
                &table_of("new-peer"),
            );
            // ...and again after it, still inside the same request: all old.
            tokio::task::yield_now().await;
            assert!(ring.authenticate(Some(&bearer(OLD))).is_ok());
            assert!(ring.authenticate(Some(&bearer(NEW))).is_err());
            assert_eq!(visibility(&live), ["old-flow"]);
            assert!(has(&peers, "old-peer") && !has(&peers, "new-peer"));
            // A task the request spawns with its pin carries it.
            let carried = live.carried({
                let (live, peers) = (live.clone(), peers.clone());
                async move { (visibility(&live), has(&peers, "old-peer")) }
            });
            let (seen, old_peer) = tokio::spawn(carried).await.expect("task");
            assert_eq!(seen, ["old-flow"]);
            assert!(old_peer);
        })
        .await;

        // The next request: all new.
        live.pinned(async {
            assert!(ring.authenticate(Some(&bearer(NEW))).is_ok());
            assert!(ring.authenticate(Some(&bearer(OLD))).is_err());
            assert_eq!(visibility(&live), ["new-flow"]);
            assert!(has(&peers, "new-peer") && !has(&peers, "old-peer"));
        })
        .await;
        assert_eq!(live.current().generation, before + 1, "one swap");
        assert!(peers.any(PeerKind::Http));
    }
}
