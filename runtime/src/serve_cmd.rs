//! `openwop serve`.

use crate::host::{Host, HostConfig};
use crate::identity::KeyRing;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `openwop serve`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  openwop serve
      Serve on 127.0.0.1:8080 with data in ./openwop-data and a dev key for tenant \"dev\"
      (printed at start and kept in the data dir across restarts).

  openwop serve --listen 0.0.0.0:9000 --api-key acme:acme-secret-key-123 --api-key globex:globex-secret-key-456
      Two tenants side by side; each key only ever sees its own tenant's runs.

  openwop serve --database postgres://postgres@127.0.0.1:5432/test
      Keep runs in PostgreSQL: start several replicas on one database behind a load
      balancer; each run is driven by one replica at a time and moves on if it dies.

  openwop serve --workflows ./my-workflows
      Add (or override) workflow definitions from *.json / *.yaml files.

  openwop serve --egress-allow-loopback
      Test set-up: A2A push receivers on loopback (http://127.0.0.1:PORT/...) are allowed.
      Without it every push URL must be https to a public address, checked at registration
      and again at each delivery.

  openwop serve --conformance --config conformance.yaml
      Certification only: seeds the conformance fixture workflows (discovery fixtures[]),
      serves the test-only seams under /conformance/seams/ and opens loopback egress, each
      advertised in discovery as a relaxation. The suite's MCP servers `conformance` and
      `conformance-down` are ordinary `peers:` entries of the config file.

  openwop serve --workflows ./my-workflows --agents ./my-agents
      Add (or override) agents: *.json / *.yaml files with agentId, persona, label,
      description (optional), packVersion and workflows (ids the agent routes; each must
      exist, or the host refuses to start). GET /agents lists them; each is also an A2A
      card reached with its a2aTenant.

  openwop serve --listen 0.0.0.0:8080 --public-url https://wop.example.com
      Behind a proxy: the A2A card and discovery name https://wop.example.com, never the
      Host a request came with.

  curl -H 'Authorization: Bearer <key>' -H 'Content-Type: application/json' \\
       -d '{\"workflowId\":\"echo\",\"inputs\":{\"hello\":\"world\"}}' http://127.0.0.1:8080/runs

  openwop serve --log-format json 2>> openwop.log
      One JSON object per log line; every request is logged once (method, route template,
      status, latency, tenant; never a credential, a body or a query string).

Health and metrics: GET /healthz answers while the process is up; GET /readyz answers 200
when the store is reachable and has every migration applied (503 with the reason
otherwise); GET /metrics serves, in the Prometheus text format (aggregate, no tenant
labels), request counts and latencies, runs by status, the A2A push queue depth and dead
letters, and store call latency.

One process per SQLite data dir: a second `serve` (or `mcp-stdio`) on a dir another
process holds stops at start, touching nothing. Replicas share PostgreSQL instead.

Reload without a restart: `kill -HUP <pid>` re-reads the config file, the api key file and
the peers' credential files, and swaps in api keys, tenant visibility (`tenants`) and peers
(with their credentials) while connections and streams stay open. A bad file is refused
(logged at error level, counted in /metrics as
openwop_config_reloads_total{outcome=\"refused\"}) and the previous configuration stays.
Any other key (listen, dataDir, database, tls, mcp, limits, ...) needs a restart: a
changed one is logged as such and keeps its value.

Logs go to stderr; set RUST_LOG (e.g. RUST_LOG=openwop=debug) to change the level.")]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, value_name = "ADDR", env = "OPENWOP_LISTEN")]
    listen: Option<String>,
    /// Directory for the SQLite database and the dev key.
    #[arg(long, value_name = "DIR", env = "OPENWOP_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// PostgreSQL URL (postgres://user@host:port/db) to keep runs in, shared by every
    /// replica on it. Without it runs are kept in SQLite in the data dir.
    #[arg(long, value_name = "URL", env = "OPENWOP_DATABASE_URL")]
    database: Option<String>,
    /// Milliseconds a replica's lease on a run lasts unrenewed: how soon another replica
    /// takes over the runs of one that died (PostgreSQL only).
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 10_000,
        env = "OPENWOP_LEASE_TTL_MS"
    )]
    lease_ttl_ms: u64,
    /// A JSON or YAML config file: the settings below under their camelCase names (listen,
    /// dataDir, apiKeys, ...; not --lease-ttl-ms or --log-format), plus the sections that exist only there: a2a, tenants (what
    /// each tenant may see and run), mcp, peers (remote agents, MCP servers and HTTP
    /// services workflow nodes call), upstreamRegistry. Every key, its type, default and
    /// an example: generated/CONFIG.md (from schemas/v2/config.schema.json). Unknown keys
    /// are refused; `openwop config check FILE` checks a file without starting the host.
    /// Command-line flags and their OPENWOP_* variables win over the file.
    #[arg(long, value_name = "FILE", env = "OPENWOP_CONFIG")]
    config: Option<PathBuf>,
    /// Accept KEY as a Bearer api key for TENANT (repeatable). Without any (here, in
    /// --api-key-file, OPENWOP_API_KEYS or the config file), a dev key for tenant "dev" is
    /// minted. Keys on the command line are visible to other users in `ps`: prefer the
    /// file or the environment.
    #[arg(long = "api-key", value_name = "TENANT:KEY")]
    api_keys: Vec<String>,
    /// A file of TENANT:KEY entries (one per line, or separated by commas or spaces; `#`
    /// comments). OPENWOP_API_KEYS holds the same list in the environment; all are added.
    #[arg(long, value_name = "FILE", env = "OPENWOP_API_KEY_FILE")]
    api_key_file: Option<PathBuf>,
    /// A file holding the PostgreSQL URL (with its password), instead of --database.
    #[arg(
        long,
        value_name = "FILE",
        env = "OPENWOP_DATABASE_URL_FILE",
        conflicts_with = "database"
    )]
    database_url_file: Option<PathBuf>,
    /// Directory of extra workflow definitions (*.json, *.yaml).
    #[arg(long, value_name = "DIR", env = "OPENWOP_WORKFLOWS")]
    workflows: Option<PathBuf>,
    /// FOR TESTS ONLY: open the egress guard for loopback receivers, so A2A pushes may go
    /// to http://127.0.0.1:PORT or http://localhost:PORT. Private, link-local and metadata
    /// addresses stay refused. Logged at start and advertised in discovery as the
    /// relaxation `webhooks.egress-guard`; a relaxed host cannot certify.
    #[arg(long, env = "OPENWOP_EGRESS_ALLOW_LOOPBACK", value_parser = clap::builder::BoolishValueParser::new())]
    egress_allow_loopback: bool,
    /// FOR CERTIFICATION ONLY: conformance mode. Seeds the conformance fixture workflows
    /// (listed in discovery's `fixtures`), serves the test-only seams under
    /// /conformance/seams/ (`conformance.seamsProfile`), lists only `conformance-approval`
    /// on the host card and opens the egress guard for loopback peers. Advertised in
    /// discovery as relaxations; a stock host offers none of it.
    #[arg(long, env = "OPENWOP_CONFORMANCE")]
    conformance: bool,
    /// Directory of extra agent definitions (*.json, *.yaml): agentId, persona, label,
    /// description, packVersion, workflows. A bundled agent with the same id is replaced.
    #[arg(long, value_name = "DIR", env = "OPENWOP_AGENTS")]
    agents: Option<PathBuf>,
    /// The origin peers reach this host at (e.g. https://wop.example.com): the A2A card's
    /// interface URLs and discovery's agentCardUrl and MCP serverUrls are built from it.
    /// Without it the card names the address the host listens on. Set it behind a proxy or
    /// when listening on 0.0.0.0; a request's Host header is never used.
    #[arg(long, value_name = "URL", env = "OPENWOP_PUBLIC_URL")]
    public_url: Option<String>,
    /// How log lines are written to stderr: text (colours only on a terminal) or json (one
    /// object per line, with the request's method, route, tenant, status and latency).
    #[arg(long, value_enum, default_value_t, env = "OPENWOP_LOG_FORMAT")]
    log_format: crate::observe::LogFormat,
    /// Requests per second each api key may sustain on REST, A2A and MCP (0: no limit).
    /// Past it a request is refused with 429 and Retry-After, in the edge's own shape.
    #[arg(long, value_name = "N", env = "OPENWOP_RATE_LIMIT")]
    rate_limit: Option<f64>,
    /// Requests an api key may make at once after being idle.
    #[arg(long, value_name = "N", env = "OPENWOP_RATE_BURST")]
    rate_burst: Option<f64>,
    /// Seconds any request may take to its answer's head (503 in the edge's shape past
    /// it); streams run on once started. Default 90, above the longest wait a route
    /// offers (a 60 s long-poll).
    #[arg(long, value_name = "SECS", env = "OPENWOP_REQUEST_DEADLINE_SECS")]
    request_deadline_secs: Option<u64>,
    /// Seconds durable host events (GET /host/events) are kept; default 7 days. An event a
    /// connected stream has not read yet is kept regardless.
    #[arg(long, value_name = "SECS", env = "OPENWOP_HOST_EVENTS_MAX_AGE_SECS")]
    host_events_max_age_secs: Option<u64>,
    /// Durable host events kept per tenant (the newest); default 10000.
    #[arg(long, value_name = "N", env = "OPENWOP_HOST_EVENTS_MAX_COUNT")]
    host_events_max_count: Option<u64>,
    /// Serve HTTPS: the certificate chain (PEM, leaf first). Needs --tls-key.
    #[arg(
        long,
        value_name = "FILE",
        env = "OPENWOP_TLS_CERT",
        requires = "tls_key"
    )]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(
        long,
        value_name = "FILE",
        env = "OPENWOP_TLS_KEY",
        requires = "tls_cert"
    )]
    tls_key: Option<PathBuf>,
    /// Open connections at most (default 10000); one more is answered 503 and closed.
    #[arg(long, value_name = "N", env = "OPENWOP_MAX_CONNECTIONS")]
    max_connections: Option<usize>,
    /// Open connections from one address at most (IPv4, or an IPv6 /64; default 256).
    #[arg(long, value_name = "N", env = "OPENWOP_MAX_CONNECTIONS_PER_ADDRESS")]
    max_connections_per_address: Option<usize>,
    /// Milliseconds a new connection may stay silent before its first byte (default 10000).
    #[arg(long, value_name = "MS", env = "OPENWOP_FIRST_REQUEST_TIMEOUT_MS")]
    first_request_timeout_ms: Option<u64>,
    /// Milliseconds a client has to send a request's headers, and a keep-alive connection
    /// may stay idle between requests (default 30000).
    #[arg(long, value_name = "MS", env = "OPENWOP_HEADER_READ_TIMEOUT_MS")]
    header_read_timeout_ms: Option<u64>,
    /// Milliseconds a request's body may take to arrive once its head is read; 408 past
    /// it (default 10000).
    #[arg(long, value_name = "MS", env = "OPENWOP_BODY_TIMEOUT_MS")]
    body_timeout_ms: Option<u64>,
    /// Requests per second each address may make without a valid credential (default
    /// 10, 0: no limit); past it 429 with Retry-After instead of 401.
    #[arg(long, value_name = "N", env = "OPENWOP_UNAUTHENTICATED_RATE_LIMIT")]
    unauthenticated_rate_limit: Option<f64>,
    /// Requests without a valid credential an address may make at once (default 50).
    #[arg(long, value_name = "N", env = "OPENWOP_UNAUTHENTICATED_RATE_BURST")]
    unauthenticated_rate_burst: Option<f64>,
}

/// The config file as the host reads it: the generated type of
/// `schemas/v2/config.schema.json` (`crate::config_file`).
pub(crate) use crate::config_file::ConfigFile as FileConfig;

/// Every `TENANT:KEY` given: the file's `apiKeys`, the `--api-key` flags, then the key
/// file (the flag's, else the config's) and `OPENWOP_API_KEYS`. `serve` and `mcp-stdio`
/// accept keys alike.
pub(crate) fn key_specs(
    file: &FileConfig,
    flags: &[String],
    flag_file: Option<&Path>,
) -> Result<Vec<String>, String> {
    let config_file = crate::config_file::path(&file.api_key_file);
    let outside = crate::secret_file::outside_key_specs(flag_file.or(config_file.as_deref()))?;
    Ok(file
        .api_keys
        .iter()
        .flatten()
        .chain(flags)
        .cloned()
        .chain(outside)
        .collect())
}

/// Reads and checks a config file (`crate::config_file::check`, what `config check` runs).
pub(crate) fn read_config(path: &Path) -> Result<FileConfig, String> {
    crate::config_file::load(path).map(|(c, _)| c)
}

/// The config file read and checked, and as a JSON value (what a reload compares key by
/// key).
fn read_config_and_value(path: &Path) -> Result<(FileConfig, serde_json::Value), String> {
    crate::config_file::load(path)
}

/// The server's limits: the defaults, with the config file's values, with the flags'.
fn server_limits(args: &ServeArgs, file: &FileConfig) -> Result<crate::server::Limits, String> {
    use std::time::Duration;
    let mut l = crate::server::Limits::default();
    let count = |name: &str, v: Option<usize>, into: &mut usize| match v {
        Some(0) => Err(format!("--{name} takes a number >= 1")),
        Some(n) => {
            *into = n;
            Ok(())
        }
        None => Ok(()),
    };
    let file_count = |n: std::num::NonZeroU64| usize::try_from(n.get()).unwrap_or(usize::MAX);
    count(
        "max-connections",
        Some(
            args.max_connections
                .unwrap_or(file_count(file.max_connections)),
        ),
        &mut l.max_connections,
    )?;
    count(
        "max-connections-per-address",
        Some(
            args.max_connections_per_address
                .unwrap_or(file_count(file.max_connections_per_address)),
        ),
        &mut l.max_connections_per_address,
    )?;
    let ms = |name: &str, v: Option<u64>, into: &mut Duration| match v {
        Some(0) => Err(format!("--{name} takes milliseconds >= 1")),
        Some(n) => {
            *into = Duration::from_millis(n);
            Ok(())
        }
        None => Ok(()),
    };
    ms(
        "first-request-timeout-ms",
        Some(
            args.first_request_timeout_ms
                .unwrap_or(file.first_request_timeout_ms.get()),
        ),
        &mut l.first_request_timeout,
    )?;
    ms(
        "header-read-timeout-ms",
        Some(
            args.header_read_timeout_ms
                .unwrap_or(file.header_read_timeout_ms.get()),
        ),
        &mut l.header_read_timeout,
    )?;
    ms(
        "body-timeout-ms",
        Some(args.body_timeout_ms.unwrap_or(file.body_timeout_ms.get())),
        &mut l.body_timeout,
    )?;
    l.unauthenticated.per_second = args
        .unauthenticated_rate_limit
        .unwrap_or(file.unauthenticated_rate_limit);
    l.unauthenticated.burst = args
        .unauthenticated_rate_burst
        .unwrap_or(file.unauthenticated_rate_burst);
    if !(l.unauthenticated.per_second >= 0.0 && l.unauthenticated.burst >= 0.0) {
        return Err(
            "--unauthenticated-rate-limit and --unauthenticated-rate-burst take numbers >= 0"
                .into(),
        );
    }
    if l.max_connections_per_address > l.max_connections {
        l.max_connections_per_address = l.max_connections;
    }
    Ok(l)
}

/// The file in the data dir that keeps the dev key (read by `mcp-stdio` too).
pub const DEV_KEY_FILE: &str = "dev-api-key";

/// Loads the persisted dev key or mints and stores one.
fn dev_key(data_dir: &Path) -> Result<String, String> {
    let path = data_dir.join(DEV_KEY_FILE);
    if let Ok(k) = std::fs::read_to_string(&path) {
        let k = k.trim().to_owned();
        if k.len() >= 16 {
            crate::secret_file::restrict(&path);
            return Ok(k);
        }
        // Too short to be a key of ours: replace it.
        let _ = std::fs::remove_file(&path);
    }
    std::fs::create_dir_all(data_dir)
        .map_err(|e| format!("cannot create {}: {e}", data_dir.display()))?;
    let key = format!("owdev_{}", crate::ids::mint_opaque());
    crate::secret_file::write_new(&path, &key)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(key)
}

async fn stop_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
    tracing::info!("shutting down");
}

/// Runs the host until SIGINT or SIGTERM.
pub fn run(args: ServeArgs) -> ExitCode {
    let telemetry = crate::observe::init_logging_and_traces("info", args.log_format);
    let outcome = run_inner(args);
    // After the runtime stopped: the exporter's last batch goes out on its own thread.
    telemetry.shutdown();
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("openwop serve: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run_inner(args: ServeArgs) -> Result<(), String> {
    let (file, file_value) = match &args.config {
        Some(p) => read_config_and_value(p)?,
        None => (crate::config_file::defaults(), serde_json::Value::Null),
    };
    let reload_source = ReloadSource {
        config: args.config.clone(),
        api_keys: args.api_keys.clone(),
        api_key_file: args.api_key_file.clone(),
        data_dir: None,
        started_with: file_value,
        keys: true,
    };
    // Read before the settings below take their fields out of `file`.
    let key_specs = key_specs(&file, &args.api_keys, args.api_key_file.as_deref())?;
    let server = server_limits(&args, &file)?;
    let peers = crate::config_file::peers_of(&file);
    let listen = args.listen.unwrap_or(file.listen);
    let data_dir = args
        .data_dir
        .unwrap_or_else(|| PathBuf::from(&file.data_dir));
    let workflows_dir = args.workflows.or(crate::config_file::path(&file.workflows));
    let egress_allow_loopback = args.egress_allow_loopback || file.egress_allow_loopback;
    let conformance = args.conformance || file.conformance;
    let database_file = match args
        .database_url_file
        .or(crate::config_file::path(&file.database_url_file))
    {
        Some(path) => Some(crate::secret_file::read_secret(&path)?.trim().to_owned()),
        None => None,
    };
    let database = args
        .database
        .or(database_file)
        .or(file.database)
        .filter(|d| !d.trim().is_empty());
    let agents_dir = args.agents.or(crate::config_file::path(&file.agents));
    let public_url = args
        .public_url
        .or(file.public_url)
        .map(|u| crate::host::public_url(&u))
        .transpose()?;
    let a2a = file.a2a.clone().unwrap_or_default();
    let a2a_default_skill = Some(a2a.default_skill.clone()).filter(|s| !s.is_empty());
    let visibility = crate::settings::visibility_of(&file.tenants);
    let rate = crate::identity::rate::RateConfig {
        per_second: args.rate_limit.unwrap_or(file.rate_limit),
        burst: args.rate_burst.unwrap_or(file.rate_burst),
    };
    let request_deadline = match args.request_deadline_secs {
        Some(0) => return Err("--request-deadline-secs takes a number of seconds >= 1".into()),
        Some(secs) => std::time::Duration::from_secs(secs),
        None => std::time::Duration::from_secs(file.request_deadline_secs.get()),
    };
    let tls = match (
        args.tls_cert.or(crate::config_file::path(&file.tls_cert)),
        args.tls_key.or(crate::config_file::path(&file.tls_key)),
    ) {
        (Some(cert), Some(key)) => Some(crate::server::tls::acceptor(&cert, &key)?),
        (None, None) => None,
        _ => return Err("--tls-cert and --tls-key go together".into()),
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let host_events = crate::ops::HostEventRetention {
        max_age: std::time::Duration::from_secs(
            args.host_events_max_age_secs
                .unwrap_or(file.host_events_max_age_secs),
        ),
        max_per_tenant: args
            .host_events_max_count
            .unwrap_or(file.host_events_max_count),
        ..crate::ops::HostEventRetention::default()
    };
    if !(rate.per_second >= 0.0 && rate.burst >= 0.0) {
        return Err("--rate-limit and --rate-burst take numbers >= 0".into());
    }
    let mcp = crate::settings::mcp_config(&file.mcp.clone().unwrap_or_default())?;
    let upstream = crate::upstream::SlaConfig {
        source: file
            .upstream_registry
            .as_deref()
            .filter(|s| !s.trim().is_empty())
            .map(crate::upstream::Source::parse),
        every: std::time::Duration::from_secs(
            file.upstream_registry_refresh_hours
                .get()
                .saturating_mul(3600),
        ),
    };
    let card_signing = crate::card_sign::SigningConfig {
        key_file: crate::config_file::path(&a2a.signing_key),
        also_publish: a2a
            .also_publish_keys
            .iter()
            .flatten()
            .map(PathBuf::from)
            .collect(),
    };
    let mut keys = KeyRing::default();
    for spec in &key_specs {
        keys.add_spec(spec).map_err(|e| e.to_string())?;
    }
    // The port first: a start that cannot serve touches nothing (no dev key minted, no
    // data dir opened, no run resumed or push delivered).
    let listener = std::net::TcpListener::bind(&listen)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let mut dev = None;
    if keys.is_empty() {
        let key = dev_key(&data_dir)?;
        keys.add("dev", &key).map_err(|e| e.to_string())?;
        dev = Some(key);
    }
    let reload_source = ReloadSource {
        data_dir: Some(data_dir.clone()),
        ..reload_source
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)
            .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        // Without a public URL, the card and discovery name the address listened on.
        let public_url = public_url.unwrap_or_else(|| format!("{scheme}://{addr}"));
        let config = HostConfig {
            workflows_dir,
            egress_allow_loopback,
            agents_dir,
            database,
            lease_ttl: std::time::Duration::from_millis(args.lease_ttl_ms),
            public_url: Some(public_url),
            a2a_default_skill,
            visibility,
            rate,
            request_deadline,
            host_events,
            tls,
            mcp,
            peers,
            upstream,
            card_signing,
            server,
            conformance,
            ..HostConfig::new(data_dir, keys)
        };
        let host = Host::build(config).await.map_err(|e| e.to_string())?;
        // Before "listening" is printed: from then on a SIGHUP reloads instead of
        // ending the process (its default action).
        spawn_reload_on_hangup(reload_source, host.reloader())?;
        if let Some(key) = dev {
            println!("dev API key for tenant \"dev\": {key}");
        }
        println!("openwop listening on {scheme}://{addr}");
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        host.serve(listener, stop_signal())
            .await
            .map_err(|e| format!("server error: {e}"))
    })
}

/// Where a reload reads from: the same config file, flags and key file as the start.
pub(crate) struct ReloadSource {
    pub(crate) config: Option<PathBuf>,
    pub(crate) api_keys: Vec<String>,
    pub(crate) api_key_file: Option<PathBuf>,
    /// Where the dev key is kept, when no key is configured.
    pub(crate) data_dir: Option<PathBuf>,
    /// The config file as the host started with it: what "needs a restart" is judged
    /// against.
    pub(crate) started_with: serde_json::Value,
    /// Whether api keys are reloaded (`serve`); `mcp-stdio` keeps the key ring it
    /// started with (its one caller was authenticated at start).
    pub(crate) keys: bool,
}

/// The config file's keys a reload applies; every other key is read at start only.
const RELOADED_KEYS: [&str; 4] = ["apiKeys", "apiKeyFile", "tenants", "peers"];

impl ReloadSource {
    /// Reads everything again and builds what a reload installs, plus the keys of the
    /// file that changed since the start but only take effect at a restart.
    fn read(&self) -> Result<(crate::reload::Reloadable, Vec<String>), String> {
        let (file, value) = match &self.config {
            Some(p) => read_config_and_value(p)?,
            None => (crate::config_file::defaults(), serde_json::Value::Null),
        };
        let restart = needs_restart(&self.started_with, &value);
        let visibility = crate::settings::visibility_of(&file.tenants);
        let peers = crate::config_file::peers_of(&file);
        if !self.keys {
            let restart = restart
                .into_iter()
                .filter(|k| k != "apiKeys" && k != "apiKeyFile")
                .collect();
            return Ok((
                crate::reload::Reloadable {
                    keys: None,
                    visibility,
                    peers,
                },
                restart,
            ));
        }
        let mut keys = KeyRing::default();
        for spec in key_specs(&file, &self.api_keys, self.api_key_file.as_deref())? {
            keys.add_spec(&spec).map_err(|e| e.to_string())?;
        }
        if keys.is_empty()
            && let Some(dir) = &self.data_dir
        {
            // As at start: with no key configured, the dev key is the one accepted.
            let key = dev_key(dir)?;
            keys.add("dev", &key).map_err(|e| e.to_string())?;
            tracing::warn!(
                file = %dir.join(DEV_KEY_FILE).display(),
                "config reload: no api key is configured; the dev key for tenant \"dev\" is accepted"
            );
        }
        Ok((
            crate::reload::Reloadable {
                keys: Some(keys),
                visibility,
                peers,
            },
            restart,
        ))
    }
}

/// The top-level keys of the config file, other than those a reload applies, whose value
/// differs between `before` and `after`.
fn needs_restart(before: &serde_json::Value, after: &serde_json::Value) -> Vec<String> {
    let empty = serde_json::Map::new();
    let before = before.as_object().unwrap_or(&empty);
    let after = after.as_object().unwrap_or(&empty);
    let mut names: Vec<&String> = before.keys().chain(after.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|k| !RELOADED_KEYS.contains(&k.as_str()))
        .filter(|k| before.get(*k) != after.get(*k))
        .cloned()
        .collect()
}

/// Reloads on every SIGHUP until the process ends. A refused reload is logged at error
/// level with its reason and counted; the configuration in force stays.
#[cfg(unix)]
pub(crate) fn spawn_reload_on_hangup(
    source: ReloadSource,
    reloader: crate::reload::Reloader,
) -> Result<(), String> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hangups =
        signal(SignalKind::hangup()).map_err(|e| format!("cannot listen for SIGHUP: {e}"))?;
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            reload_once(&source, &reloader).await;
        }
    });
    Ok(())
}

#[cfg(not(unix))]
pub(crate) fn spawn_reload_on_hangup(
    _source: ReloadSource,
    _reloader: crate::reload::Reloader,
) -> Result<(), String> {
    Ok(())
}

async fn reload_once(source: &ReloadSource, reloader: &crate::reload::Reloader) {
    let file = source.config.as_deref().map_or_else(
        || "(no config file)".to_owned(),
        |p| p.display().to_string(),
    );
    tracing::info!(config = %file, "SIGHUP: reloading api keys, tenant visibility and peers");
    let result = match source.read() {
        Ok((new, restart)) => reloader.apply(new).await.map(|applied| (applied, restart)),
        Err(e) => Err(e),
    };
    match result {
        Ok((applied, restart)) => {
            crate::reload::count(true);
            tracing::info!(
                keys = applied.keys,
                tenants = applied.tenants_narrowed,
                peers = applied.peers,
                "configuration reloaded"
            );
            for key in restart {
                tracing::warn!(
                    key = %key,
                    "config reload: `{key}` changed in the file but needs a restart to take effect; the value the host started with stays in force"
                );
            }
        }
        Err(reason) => {
            crate::reload::count(false);
            tracing::error!(
                reason = %reason,
                "config reload refused; the previous configuration stays in force"
            );
        }
    }
}
