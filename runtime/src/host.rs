//! Assembles a host from its configuration: store, engine, operations, discovery and the
//! three edges (REST, A2A, MCP) on one router, and serves it until told to stop.

use crate::agents::{AgentRegistry, Agents, RoutingKey};
use crate::app::AppState;
use crate::discovery;
use crate::edge::rest;
use crate::edge::{a2a, mcp};
use crate::egress;
use crate::engine::{Engine, Registry};
use crate::identity::KeyRing;
use crate::negotiation::{Offer, Protocol};
use crate::ops::{self, MAX_PAGE_SIZE, Ops};
use crate::store::{StoreError, Stores};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Everything a host needs to start.
pub struct HostConfig {
    pub data_dir: PathBuf,
    /// A `postgres://` URL to share runs with other replicas; `None` keeps them in SQLite
    /// under `data_dir`.
    pub database: Option<String>,
    /// How long a run's lease lasts unrenewed (how soon a dead replica's runs move on).
    pub lease_ttl: Duration,
    pub keys: KeyRing,
    pub workflows_dir: Option<PathBuf>,
    /// Extra agent definitions (added to, or replacing, the bundled agents by id).
    pub agents_dir: Option<PathBuf>,
    /// Narrows the workflows (and so the agents) each caller sees; `None`: every tenant
    /// may run every workflow. Not a command-line setting: a seam for embedders and tests.
    pub workflow_filter: Option<crate::ops::WorkflowFilter>,
    /// The MCP mount's settings (also what the `mcp` family advertises).
    pub mcp: mcp::McpConfig,
    /// How long a blocking A2A `SendMessage` waits before answering with the task as it is.
    pub a2a_blocking_timeout: Duration,
    /// Opens the egress guard for loopback receivers (plain http to loopback included).
    /// An operator relaxation for tests: logged at start and advertised in discovery.
    pub egress_allow_loopback: bool,
    /// How outbound names are resolved; the system resolver unless a test injects one.
    pub resolver: Arc<dyn egress::Resolve>,
    /// How failed A2A pushes are retried before they are dead-lettered.
    pub push_retry: crate::ops::push::RetryPolicy,
    /// How long a resume token lives (30 minutes unless a test shortens it).
    pub interrupt_token_ttl: Duration,
    /// Connection cap, header-read timeout, shutdown grace.
    pub server: crate::server::Limits,
    /// The origin peers reach the host at (`--public-url`, config `publicUrl`): the A2A
    /// card's interface URLs and discovery's `a2a.agentCardUrl` / `mcp.serverUrls` are
    /// built from it (`openwop serve` sets the listen address when none is configured).
    /// Unset: the card uses the address the host serves on and discovery names no URL;
    /// never a request's `Host` header.
    pub public_url: Option<String>,
    /// The skill a plain A2A message starts through the host card (`a2a.defaultSkill`);
    /// `None`: a message must name one, unless the caller may run exactly one.
    pub a2a_default_skill: Option<String>,
    /// Which workflows and agents each tenant may see and run (config `tenants`).
    pub visibility: crate::settings::Visibility,
    /// Requests per second (and burst) each principal may make.
    pub rate: crate::identity::rate::RateConfig,
    /// How long any request may take to its answer's head (streams run on after it).
    pub request_deadline: Duration,
    /// How long durable host events are kept (age, count per tenant).
    pub host_events: crate::ops::HostEventRetention,
    /// Serve HTTPS with this (`server::tls::acceptor`); plain HTTP when `None`.
    pub tls: Option<tokio_rustls::TlsAcceptor>,
    /// The remote A2A agents, MCP servers and HTTP services workflow nodes may call
    /// (config `peers`).
    pub peers: Vec<crate::peers::PeerFileConfig>,
    /// The refresh SLA: the operator's upstream version registry (a file or URL) and how
    /// often it is re-read; the built-in registry only by default.
    pub upstream: crate::upstream::SlaConfig,
    /// The clock the refresh SLA reads: the system's, unless a test moves it.
    pub clock: crate::clock::Clock,
    /// The key the A2A cards are signed with: the operator's, else one the host mints
    /// at first start and keeps in its store.
    pub card_signing: crate::card_sign::SigningConfig,
    /// How long an open stream (REST SSE, A2A streams, MCP listen and request streams)
    /// rides out a failing store before it ends with an error its client resumes from.
    /// Not a command-line setting: a seam for embedders and tests.
    pub stream_retry: Duration,
    /// Conformance mode (`crate::conformance`): fixture workflows, the seams, the
    /// approval fixture as the host card's only skill, loopback egress. For certification
    /// only; every part of it is advertised as a relaxation.
    pub conformance: bool,
}

impl HostConfig {
    /// Defaults for everything but where data lives and who may call.
    pub fn new(data_dir: PathBuf, keys: KeyRing) -> Self {
        Self {
            data_dir,
            database: None,
            lease_ttl: crate::engine::DEFAULT_LEASE_TTL,
            keys,
            workflows_dir: None,
            agents_dir: None,
            workflow_filter: None,
            mcp: mcp::McpConfig::default(),
            a2a_blocking_timeout: Duration::from_secs(30),
            egress_allow_loopback: false,
            resolver: Arc::new(egress::SystemResolver),
            push_retry: crate::ops::push::RetryPolicy::default(),
            interrupt_token_ttl: crate::ops::tokens::DEFAULT_TTL,
            server: crate::server::Limits::default(),
            public_url: None,
            a2a_default_skill: Some(crate::settings::DEFAULT_SKILL.to_owned()),
            visibility: crate::settings::Visibility::default(),
            rate: crate::identity::rate::RateConfig::default(),
            request_deadline: crate::edge::deadline::DEFAULT,
            host_events: crate::ops::HostEventRetention::default(),
            tls: None,
            peers: Vec::new(),
            upstream: crate::upstream::SlaConfig::default(),
            clock: crate::clock::Clock::system(),
            card_signing: crate::card_sign::SigningConfig::default(),
            stream_retry: crate::ops::RETRY_WITHIN,
            conformance: false,
        }
    }
}

/// Checks a public base URL: absolute http(s), no query, fragment or userinfo; returned
/// without a trailing `/`.
pub fn public_url(raw: &str) -> Result<String, String> {
    let url = reqwest::Url::parse(raw).map_err(|e| format!("public URL `{raw}`: {e}"))?;
    if !matches!(url.scheme(), "http" | "https")
        || url.host_str().is_none()
        || url.query().is_some()
        || url.fragment().is_some()
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return Err(format!(
            "public URL `{raw}` must be an absolute http(s) URL without userinfo, query or fragment"
        ));
    }
    Ok(raw.trim_end_matches('/').to_owned())
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
    Agents(#[from] crate::agents::AgentError),
    #[error("cannot set up agent routing values: {0}")]
    RoutingKey(#[from] crate::agents::routing::RoutingKeyError),
    #[error(transparent)]
    Engine(#[from] crate::engine::EngineError),
    #[error("cannot listen: {0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Config(String),
}

/// The MCP edge's answer to a request past its deadline: a JSON-RPC error on HTTP 503.
fn mcp_deadline(within: Duration) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    mcp::rpc::RpcError::new(
        mcp::rpc::INTERNAL_ERROR,
        crate::edge::deadline::message(within),
    )
    .with_http(axum::http::StatusCode::SERVICE_UNAVAILABLE)
    .into_response()
}

/// The MCP edge's refusal of a body (too large, stalled, broken): a JSON-RPC invalid
/// request on the HTTP status that says which.
fn mcp_body(why: crate::edge::body::Refused) -> axum::response::Response {
    use crate::edge::body::Refused;
    let status = match why {
        Refused::TooLarge { .. } => axum::http::StatusCode::PAYLOAD_TOO_LARGE,
        Refused::Stalled { .. } => axum::http::StatusCode::REQUEST_TIMEOUT,
        Refused::Broken => axum::http::StatusCode::BAD_REQUEST,
    };
    use axum::response::IntoResponse as _;
    mcp::rpc::RpcError::new(mcp::rpc::INVALID_REQUEST, why.message())
        .with_http(status)
        .into_response()
}

/// A built host, not yet serving.
pub struct Host {
    pub state: AppState,
    pub engine: Arc<Engine>,
    /// The refresh SLA (a test moves its clock and calls [`crate::upstream::Sla::tick`]).
    pub sla: Arc<crate::upstream::Sla>,
    app: axum::Router,
    /// The key MCP requestStates are sealed with, shared through the store.
    mcp_key: Vec<u8>,
    limits: crate::server::Limits,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown_tx: watch::Sender<bool>,
    /// Where the A2A card points when no public URL is configured: set once the
    /// listener is known.
    listen_base: Arc<std::sync::OnceLock<String>>,
}

impl Host {
    /// Opens the store, loads workflows, checks discovery, and resumes unfinished runs.
    pub async fn build(config: HostConfig) -> Result<Self, StartError> {
        let mut document = discovery::document(MAX_PAGE_SIZE, &config.mcp);
        let public_url = config
            .public_url
            .as_deref()
            .map(public_url)
            .transpose()
            .map_err(StartError::Config)?;
        if let Some(base) = &public_url {
            discovery::set_public_urls(&mut document, base);
        }
        // The fixtures this host seeds: the credential one needs an https public URL.
        let conformance_files = if config.conformance {
            crate::conformance::fixture_files(
                public_url.as_deref(),
                config
                    .peers
                    .iter()
                    .any(|p| p.kind == crate::peers::PeerKind::Mcp),
            )
        } else {
            Vec::new()
        };
        if config.conformance {
            tracing::warn!(
                obligation = crate::conformance::RELAXED_OBLIGATION,
                "conformance mode: fixture workflows and test-only seams are served and loopback egress is open; for certification only, never in production"
            );
            crate::conformance::advertise(
                &mut document,
                &crate::conformance::ids_of(&conformance_files),
            );
            if !config.egress_allow_loopback {
                discovery::add_relaxation(&mut document, crate::conformance::loopback_relaxation());
            }
        }
        if config.egress_allow_loopback {
            tracing::warn!(
                obligation = egress::RELAXED_OBLIGATION,
                "the egress guard is open for loopback receivers (--egress-allow-loopback); for tests only, never in production"
            );
            discovery::add_relaxation(&mut document, discovery::egress_loopback_relaxation());
        }
        if config
            .peers
            .iter()
            .any(|p| p.kind == crate::peers::PeerKind::Mcp)
        {
            discovery::set_mcp_client(&mut document);
        }
        let findings = discovery::self_check(&document);
        if !findings.is_empty() {
            return Err(StartError::InvalidDiscovery(findings.join("\n")));
        }
        let mut registry = Registry::bundled()?;
        if let Some(dir) = &config.workflows_dir {
            registry.load_dir(dir)?;
        }
        // Seeded last, so a directory cannot change what a certification suite runs; the
        // registry lives in memory, so every start seeds the same definitions again.
        if config.conformance {
            let files: Vec<(&str, &str)> = conformance_files
                .iter()
                .map(|(n, t)| (n.as_str(), t.as_str()))
                .collect();
            registry.seed(&files)?;
            registry.seed(&[crate::conformance::SEAM_CARRIER])?;
        }
        let mut agents = AgentRegistry::bundled()?;
        if let Some(dir) = &config.agents_dir {
            agents.load_dir(dir)?;
        }
        agents.check_routes(|w| registry.get(w).is_some())?;
        // Peers are judged now (ids, secrets, and every URL by the egress guard), and every
        // workflow's peers must exist: a missing one is a start-up error, not a failed run.
        let egress = egress::Egress::new(
            config.resolver.clone(),
            config.egress_allow_loopback || config.conformance,
        );
        // The refresh SLA evaluates the advertisement against the upstream registry before
        // anything reads the document (offers, card, edges), and re-evaluates it on a
        // schedule once the host serves.
        let sla = crate::upstream::Sla::start(
            document,
            config.upstream.clone(),
            egress.clone(),
            config.clock.clone(),
        )
        .await
        .map_err(StartError::Config)?;
        let document = sla.live().get().document.clone();
        let peers = crate::peers::Peers::from_config(&config.peers, egress.clone())
            .map_err(StartError::Config)?
            .with_offers(
                Offer::from_facet(Protocol::A2a, &a2a::facet_of(&document)).ok(),
                Offer::from_facet(Protocol::Mcp, &mcp::facet_of(&document, &config.mcp)).ok(),
            )
            .with_max_rounds(config.mcp.max_rounds);
        peers.check_urls().await.map_err(StartError::Config)?;
        let unknown = registry.unknown_peers(&peers);
        if !unknown.is_empty() {
            return Err(StartError::Config(unknown.join("; ")));
        }
        let unknown = ops::visibility::unknown_names(
            &config.visibility,
            |w| registry.get(w).is_some(),
            |a| agents.get(a).is_some(),
        );
        if !unknown.is_empty() {
            return Err(StartError::Config(unknown.join("; ")));
        }
        let default_skill = config.a2a_default_skill.clone().filter(|s| !s.is_empty());
        if let Some(skill) = &default_skill
            && registry.get(skill).is_none()
        {
            return Err(StartError::Config(format!(
                "a2a.defaultSkill: no workflow `{skill}`"
            )));
        }
        // SQLite in the data dir unless a database URL is configured; runs and the interop
        // state (A2A task side and push, MCP sessions) share the one database.
        let stores = Stores::open(&config.data_dir, config.database.as_deref()).await?;
        // R must be the same on every replica of one database: the data dir's secret is
        // offered to the store, and the first one it holds is everybody's.
        let local = RoutingKey::load_or_create(&config.data_dir)?;
        let routing = RoutingKey::from_shared(
            &stores
                .runs
                .shared_secret(RoutingKey::SHARED_NAME, local.candidate())
                .await?,
            env!("CARGO_PKG_VERSION"),
        )
        .ok_or_else(|| StoreError::Database("the shared agent routing secret is damaged".into()))?;
        if config.database.is_some() {
            tracing::info!(
                "runs, A2A push configurations and MCP sessions are stored in PostgreSQL, shared with any other replica on it"
            );
        }
        let store = stores.runs.clone();
        // The card-signing key: the operator's file, else the one the store keeps (minted
        // by whichever replica started first), so every replica signs alike.
        let signer = match &config.card_signing.key_file {
            Some(path) => crate::card_sign::CardSigner::from_pem_file(path),
            None => crate::card_sign::CardSigner::from_pkcs8(
                &store
                    .shared_secret(
                        crate::card_sign::KEY_NAME,
                        crate::card_sign::CardSigner::mint(),
                    )
                    .await?,
            ),
        }
        .and_then(|s| s.with_also_published(config.card_signing.also_published()?))
        .map_err(|e| StartError::Config(format!("card signing: {e}")))?;
        tracing::info!(kid = signer.kid(), "A2A cards are signed (EdDSA)");
        // One negotiation peer key for every replica of this store, so a peer digests
        // alike whichever replica it reached.
        let peer_key = crate::negotiation::PeerKey::new(
            store
                .shared_secret(
                    crate::negotiation::PEER_KEY,
                    crate::negotiation::PeerKey::fresh(),
                )
                .await?,
        );
        // Keys, visibility and peers live in one reloadable snapshot (`crate::reload`):
        // the key ring's, which the peers join here and the operations below.
        let live = config.keys.live();
        let peers = peers.with_peer_key(peer_key.clone()).in_live(&live);
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let engine = Engine::with_lease_ttl(
            store.clone(),
            registry,
            shutdown_rx.clone(),
            config.lease_ttl,
        );
        engine.set_peers(peers);
        // One token key for every replica (and every restart) of this store, so a token
        // minted by one resolves on any.
        let token_key = store
            .shared_secret(ops::tokens::TOKEN_KEY, ops::tokens::fresh_key())
            .await?;
        let tokens = ops::TokenKey::new(token_key, config.interrupt_token_ttl);
        // One MCP requestState key for every replica (and every restart) of this store, so
        // a state opens on any of them, over HTTP or stdio.
        let mcp_key = store
            .shared_secret(mcp::REQUEST_STATE_KEY, mcp::fresh_key().to_vec())
            .await?;
        // Before any run is resumed, so a run that suspends on resumption still notifies.
        engine.set_on_suspend(ops::callback::notifier(tokens.clone(), egress.clone()));
        let resumed = engine.resume_unfinished().await?;
        if resumed > 0 {
            tracing::info!(resumed, "resumed unfinished runs");
        }
        engine.spawn_sweeper();
        let mut ops = Ops::new(stores, engine.clone())
            .with_agents(Agents {
                registry: agents,
                routing,
            })
            .with_tokens(tokens)
            .with_peer_key(peer_key)
            .with_egress(egress.clone())
            .with_shutdown(shutdown_rx.clone())
            .with_stream_retry(config.stream_retry)
            .in_live(&live)
            .with_visibility(config.visibility.clone());
        if let Some(filter) = config.workflow_filter.clone() {
            ops = ops.with_workflow_filter(filter);
        }
        let ops = Arc::new(ops);
        ops.spawn_host_event_retention(config.host_events);
        let state = AppState::new(crate::app::Shared {
            ops,
            keys: Arc::new(config.keys),
            discovery: sla.live(),
            rate: Arc::new(crate::identity::rate::RateLimiter::new(config.rate)),
            unauthenticated: Arc::new(crate::identity::rate::RateLimiter::new(
                config.server.unauthenticated,
            )),
            request_deadline: config.request_deadline,
            body_timeout: config.server.body_timeout,
            shutdown: shutdown_rx,
        });
        let mut skills = a2a::skills_of_host(&state.ops);
        let mut default_skill = default_skill;
        if config.conformance {
            // The suite expects exactly the approval fixture on the host card, started by a
            // plain message; other workflows stay reachable by naming them.
            skills.retain(|s| s.workflow_id == crate::conformance::APPROVAL_SKILL);
            default_skill = Some(crate::conformance::APPROVAL_SKILL.to_owned());
        }
        let mut a2a_config = a2a::A2aConfig::new(skills);
        a2a_config.blocking_timeout = config.a2a_blocking_timeout;
        a2a_config.egress = egress;
        a2a_config.push_retry = config.push_retry;
        let a2a_public_url = public_url.clone();
        a2a_config.public_base_url = public_url;
        a2a_config.default_skill = default_skill;
        a2a_config.signer = Some(Arc::new(signer));
        let listen_base = a2a_config.listen_base.clone();
        let a2a = a2a::router(state.clone(), a2a_config);
        let within = config.request_deadline;
        let body_within = config.server.body_timeout;
        let mcp = mcp::router_for(mcp::McpState::with_key(state.clone(), config.mcp, &mcp_key))
            .layer(axum::middleware::from_fn(move |req, next| {
                crate::edge::body::guard(mcp::BODY_LIMIT, body_within, mcp_body, req, next)
            }))
            .layer(axum::middleware::from_fn(move |req, next| {
                crate::edge::deadline::run(within, mcp_deadline, req, next)
            }));
        let metrics = Arc::new(crate::observe::Metrics::default());
        let seams = config.conformance.then(|| crate::conformance::Seams {
            public_url: a2a_public_url.clone(),
        });
        let app = rest::router(state.clone(), seams)
            .merge(a2a)
            .merge(mcp)
            .route("/healthz", axum::routing::get(crate::observe::healthz))
            .route(
                "/readyz",
                axum::routing::get(crate::upstream::http::readyz)
                    .with_state((state.ops.clone(), sla.clone())),
            )
            .route(
                "/metrics",
                axum::routing::get(crate::upstream::http::metrics).with_state((
                    metrics.clone(),
                    state.ops.clone(),
                    sla.clone(),
                )),
            )
            .layer(axum::middleware::from_fn_with_state(
                metrics,
                crate::observe::access_log,
            ))
            // Each request reads one snapshot of keys, visibility and peers, whatever a
            // reload swaps while it runs (`crate::reload`).
            .layer(axum::middleware::from_fn(
                move |req: axum::extract::Request, next: axum::middleware::Next| {
                    let live = live.clone();
                    async move { live.pinned(next.run(req)).await }
                },
            ));
        sla.spawn(state.shutdown.clone());
        Ok(Self {
            sla,
            state,
            engine,
            app,
            mcp_key,
            limits: config.server,
            tls: config.tls,
            shutdown_tx,
            listen_base,
        })
    }

    /// An MCP mount of this host with `config` (the stdio transport serves one), sealing
    /// requestStates with the key every replica shares.
    pub fn mcp_state(&self, config: mcp::McpConfig) -> mcp::McpState {
        mcp::McpState::with_key(self.state.clone(), config, &self.mcp_key)
    }

    /// The handle that reloads api keys, tenant visibility and peers while the host
    /// serves (`openwop serve` calls it on SIGHUP).
    pub fn reloader(&self) -> crate::reload::Reloader {
        crate::reload::Reloader {
            live: self.state.keys.live(),
            ops: self.state.ops.clone(),
            engine: self.engine.clone(),
        }
    }

    /// Every route the host serves: REST and SSE, A2A (card, JSON-RPC, HTTP+JSON), MCP.
    pub fn router(&self) -> axum::Router {
        self.app.clone()
    }

    /// A handle that stops the host (streams end, the server drains).
    pub fn stopper(&self) -> watch::Sender<bool> {
        self.shutdown_tx.clone()
    }

    /// Serves until `stop` resolves.
    pub async fn serve(
        self,
        listener: TcpListener,
        stop: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        if let Ok(addr) = listener.local_addr() {
            let _ = self.listen_base.set(format!("http://{addr}"));
        }
        let app = self.app;
        let tx = self.shutdown_tx.clone();
        let mut rx = self.state.shutdown.clone();
        let signal = async move {
            tokio::select! {
                _ = stop => {}
                _ = rx.wait_for(|v| *v) => {}
            }
            let _ = tx.send(true);
        };
        crate::server::serve(listener, app, self.limits, self.tls, signal).await
    }
}
