//! Assembles a host from its configuration: store, engine, operations, discovery and the
//! REST router, and serves it until told to stop.

use crate::discovery::{self, Discovery};
use crate::edge::rest::{self, AppState};
use crate::engine::{Engine, Registry};
use crate::identity::KeyRing;
use crate::ops::{MAX_PAGE_SIZE, Ops};
use crate::store::{LocalWakeups, SqliteStore, Store};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Everything a host needs to start.
pub struct HostConfig {
    pub data_dir: PathBuf,
    pub keys: KeyRing,
    pub workflows_dir: Option<PathBuf>,
}

/// Why a host could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("the host's own discovery document is invalid:\n{0}")]
    InvalidDiscovery(String),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error(transparent)]
    Workflows(#[from] crate::engine::registry::RegistryError),
    #[error(transparent)]
    Engine(#[from] crate::engine::EngineError),
    #[error("cannot listen: {0}")]
    Io(#[from] std::io::Error),
}

/// A built host, not yet serving.
pub struct Host {
    pub state: AppState,
    pub engine: Arc<Engine>,
    shutdown_tx: watch::Sender<bool>,
}

impl Host {
    /// Opens the store, loads workflows, checks discovery, and resumes unfinished runs.
    pub async fn build(config: HostConfig) -> Result<Self, StartError> {
        let document = discovery::document(MAX_PAGE_SIZE);
        let findings = discovery::self_check(&document);
        if !findings.is_empty() {
            return Err(StartError::InvalidDiscovery(findings.join("\n")));
        }
        let mut registry = Registry::bundled()?;
        if let Some(dir) = &config.workflows_dir {
            registry.load_dir(dir)?;
        }
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&config.data_dir, Arc::new(LocalWakeups::default()))?);
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let engine = Engine::new(store.clone(), registry, shutdown_rx.clone());
        let resumed = engine.resume_unfinished().await?;
        if resumed > 0 {
            tracing::info!(resumed, "resumed unfinished runs");
        }
        let ops = Arc::new(Ops::new(store, engine.clone()));
        let state = AppState {
            ops,
            keys: Arc::new(config.keys),
            discovery: Arc::new(Discovery::new(document)),
            shutdown: shutdown_rx,
        };
        Ok(Self { state, engine, shutdown_tx })
    }

    /// A handle that stops the host (streams end, the server drains).
    pub fn stopper(&self) -> watch::Sender<bool> {
        self.shutdown_tx.clone()
    }

    /// Serves until `stop` resolves.
    pub async fn serve(self, listener: TcpListener, stop: impl Future<Output = ()> + Send + 'static) -> std::io::Result<()> {
        let app = rest::router(self.state.clone());
        let tx = self.shutdown_tx.clone();
        let mut rx = self.state.shutdown.clone();
        let signal = async move {
            tokio::select! {
                _ = stop => {}
                _ = rx.wait_for(|v| *v) => {}
            }
            let _ = tx.send(true);
        };
        axum::serve(listener, app).with_graceful_shutdown(signal).await
    }
}
