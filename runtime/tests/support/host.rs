//! An in-process host on a loopback port: every mount the host has (REST, A2A, MCP),
//! served as `openwop serve` serves it, stopped when the [`TestHost`] drops.
//!
//! ```ignore
//! let h = support::host().start().await; // both tenants, a fresh data dir, port 0
//! let h = support::host().public_url().with(|c| c.conformance = true).start().await;
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use openwop::host::{Host, HostConfig};
use reqwest::Client;
use tokio::net::TcpListener;

use super::keys;

type Adjust<'a> = Box<dyn FnOnce(&mut HostConfig) + 'a>;

/// How to start a test host; [`host`] makes one with the defaults.
pub struct HostBuilder<'a> {
    data_dir: Option<PathBuf>,
    port: u16,
    public_url: bool,
    adjust: Vec<Adjust<'a>>,
}

/// A host with both tenants of [`keys`], a fresh data dir and an ephemeral port.
pub fn host<'a>() -> HostBuilder<'a> {
    HostBuilder {
        data_dir: None,
        port: 0,
        public_url: false,
        adjust: Vec::new(),
    }
}

impl<'a> HostBuilder<'a> {
    /// Keeps data in `path` (a restarted host sees what an earlier one stored); the test
    /// owns the directory.
    pub fn data_dir(mut self, path: impl AsRef<Path>) -> Self {
        self.data_dir = Some(path.as_ref().to_path_buf());
        self
    }

    /// Listens on this port instead of an ephemeral one.
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Names where it listens as its public URL (cards, discovery), as `openwop serve
    /// --public-url` would; an adjustment may still name another origin.
    pub fn public_url(mut self) -> Self {
        self.public_url = true;
        self
    }

    /// Changes the configuration before the host builds (applied in order, after the
    /// public URL is set).
    pub fn with(mut self, adjust: impl FnOnce(&mut HostConfig) + 'a) -> Self {
        self.adjust.push(Box::new(adjust));
        self
    }

    /// Builds and serves the host; panics if it does not build.
    pub async fn start(self) -> TestHost {
        self.try_start().await.expect("host builds")
    }

    /// Builds and serves the host, or says why it did not build.
    pub async fn try_start(self) -> Result<TestHost, String> {
        let (dir, data_path) = match self.data_dir {
            Some(path) => (None, path),
            None => {
                let dir = tempfile::tempdir().expect("temp dir");
                let path = dir.path().to_path_buf();
                (Some(dir), path)
            }
        };
        let listener = TcpListener::bind(("127.0.0.1", self.port))
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("addr");
        let base = format!("http://{addr}");
        let mut config = keys::config(&data_path);
        if self.public_url {
            config.public_url = Some(base.clone());
        }
        for adjust in self.adjust {
            adjust(&mut config);
        }
        let host = Host::build(config).await.map_err(|e| e.to_string())?;
        let state = host.state.clone();
        let engine = host.engine.clone();
        let sla = host.sla.clone();
        let stopper = host.stopper();
        let done = tokio::spawn(host.serve(listener, std::future::pending()));
        Ok(TestHost {
            base,
            addr,
            http: Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .expect("client"),
            ops: state.ops.clone(),
            state,
            engine,
            sla,
            stopper,
            data_path,
            done: Some(done),
            _dir: dir,
        })
    }
}

pub struct TestHost {
    /// `http://127.0.0.1:PORT`, no trailing `/`.
    pub base: String,
    pub addr: SocketAddr,
    /// A client for the tests (60 s timeout, so a hung host fails the test).
    pub http: Client,
    pub state: openwop::app::AppState,
    pub ops: Arc<openwop::ops::Ops>,
    pub engine: Arc<openwop::engine::Engine>,
    pub sla: Arc<openwop::upstream::Sla>,
    /// Stops the host (workers, streams, then the server) as a shutdown would.
    pub stopper: tokio::sync::watch::Sender<bool>,
    /// Where the host keeps its data (`openwop.sqlite3`: runs and interop state).
    pub data_path: PathBuf,
    done: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    _dir: Option<tempfile::TempDir>,
}

impl Drop for TestHost {
    fn drop(&mut self) {
        let _ = self.stopper.send(true);
    }
}

impl TestHost {
    /// The host's data dir.
    pub fn data_dir(&self) -> &Path {
        &self.data_path
    }

    /// Stops the host and waits until its server has ended.
    pub async fn shutdown(mut self) {
        let _ = self.stopper.send(true);
        if let Some(done) = self.done.take() {
            let _ = done.await;
        }
    }

    /// The server task, to watch it end after [`TestHost::stopper`] fired.
    pub fn take_done(&mut self) -> tokio::task::JoinHandle<std::io::Result<()>> {
        self.done.take().expect("server task not taken yet")
    }

    /// The subject a tenant's key authenticates as.
    pub fn subject(&self, tenant: &str) -> openwop::identity::Subject {
        let key = if tenant == keys::TENANT_A {
            keys::KEY_A
        } else {
            keys::KEY_B
        };
        self.state
            .keys
            .authenticate(Some(&format!("Bearer {key}")))
            .expect("subject")
    }
}
