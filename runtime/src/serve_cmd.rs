//! `openwop serve`.

use crate::host::{Host, HostConfig};
use crate::identity::KeyRing;
use serde::Deserialize;
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

  openwop serve --workflows ./my-workflows --agents ./my-agents
      Add (or override) agents: *.json / *.yaml files with agentId, persona, label,
      description (optional), packVersion and workflows (ids the agent routes; each must
      exist, or the host refuses to start). GET /agents lists them; each is also an A2A
      card reached with its a2aTenant.

  curl -H 'Authorization: Bearer <key>' -H 'Content-Type: application/json' \\
       -d '{\"workflowId\":\"echo\",\"inputs\":{\"hello\":\"world\"}}' http://127.0.0.1:8080/runs

  openwop serve --log-format json 2>> openwop.log
      One JSON object per log line; every request is logged once (method, route template,
      status, latency, tenant; never a credential, a body or a query string).

Health and metrics: GET /healthz answers while the process is up; GET /metrics serves
request counts and latencies in the Prometheus text format (aggregate, no tenant labels).

Logs go to stderr; set RUST_LOG (e.g. RUST_LOG=openwop=debug) to change the level.")]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// Directory for the SQLite database and the dev key.
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// PostgreSQL URL (postgres://user@host:port/db) to keep runs in, shared by every
    /// replica on it. Without it runs are kept in SQLite in the data dir.
    #[arg(long, value_name = "URL", env = "OPENWOP_DATABASE_URL")]
    database: Option<String>,
    /// Milliseconds a replica's lease on a run lasts unrenewed: how soon another replica
    /// takes over the runs of one that died (PostgreSQL only).
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    lease_ttl_ms: u64,
    /// A JSON or YAML file with any of: listen, dataDir, database, apiKeys (["TENANT:KEY"]), workflows,
    /// agents, egressAllowLoopback (true/false), mcp ({tasks, callTimeoutMs,
    /// taskAnswerWithinMs, progressEveryMs, revisions, minimumRevision, mrtr: {maxRounds},
    /// allowedOrigins}).
    /// Command-line flags win over the file.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Accept KEY as a Bearer api key for TENANT (repeatable). Without any, a dev key for
    /// tenant "dev" is minted.
    #[arg(long = "api-key", value_name = "TENANT:KEY")]
    api_keys: Vec<String>,
    /// Directory of extra workflow definitions (*.json, *.yaml).
    #[arg(long, value_name = "DIR")]
    workflows: Option<PathBuf>,
    /// FOR TESTS ONLY: open the egress guard for loopback receivers, so A2A pushes may go
    /// to http://127.0.0.1:PORT or http://localhost:PORT. Private, link-local and metadata
    /// addresses stay refused. Logged at start and advertised in discovery as the
    /// relaxation `webhooks.egress-guard`; a relaxed host cannot certify.
    #[arg(long)]
    egress_allow_loopback: bool,
    /// Directory of extra agent definitions (*.json, *.yaml): agentId, persona, label,
    /// description, packVersion, workflows. A bundled agent with the same id is replaced.
    #[arg(long, value_name = "DIR")]
    agents: Option<PathBuf>,
    /// How log lines are written to stderr: text (colours only on a terminal) or json (one
    /// object per line, with the request's method, route, tenant, status and latency).
    #[arg(long, value_enum, default_value_t, env = "OPENWOP_LOG_FORMAT")]
    log_format: crate::observe::LogFormat,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct FileConfig {
    listen: Option<String>,
    pub(crate) data_dir: Option<PathBuf>,
    pub(crate) database: Option<String>,
    #[serde(default)]
    pub(crate) api_keys: Vec<String>,
    pub(crate) workflows: Option<PathBuf>,
    #[serde(default)]
    egress_allow_loopback: bool,
    pub(crate) agents: Option<PathBuf>,
    /// The MCP mount and its facet: floor, revisions, mrtr.maxRounds, tasks, timeouts,
    /// allowed origins.
    pub(crate) mcp: Option<crate::settings::McpFileConfig>,
}

pub(crate) fn read_config(path: &Path) -> Result<FileConfig, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if text.trim_start().starts_with('{') {
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    } else {
        yaml_serde::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// Loads the persisted dev key or mints and stores one.
fn dev_key(data_dir: &Path) -> Result<String, String> {
    let path = data_dir.join("dev-api-key");
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
    crate::observe::init_logging("info", args.log_format);
    match run_inner(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("openwop serve: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run_inner(args: ServeArgs) -> Result<(), String> {
    let file = match &args.config {
        Some(p) => read_config(p)?,
        None => FileConfig::default(),
    };
    let listen = args
        .listen
        .or(file.listen)
        .unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    let data_dir = args
        .data_dir
        .or(file.data_dir)
        .unwrap_or_else(|| PathBuf::from("./openwop-data"));
    let workflows_dir = args.workflows.or(file.workflows);
    let egress_allow_loopback = args.egress_allow_loopback || file.egress_allow_loopback;
    let database = args
        .database
        .or(file.database)
        .filter(|d| !d.trim().is_empty());
    let agents_dir = args.agents.or(file.agents);
    let mcp = file.mcp.clone().unwrap_or_default().to_config()?;
    let mut keys = KeyRing::default();
    for spec in file.api_keys.iter().chain(args.api_keys.iter()) {
        keys.add_spec(spec).map_err(|e| e.to_string())?;
    }
    let mut dev = None;
    if keys.is_empty() {
        let key = dev_key(&data_dir)?;
        keys.add("dev", &key).map_err(|e| e.to_string())?;
        dev = Some(key);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    rt.block_on(async move {
        let config = HostConfig {
            workflows_dir,
            egress_allow_loopback,
            agents_dir,
            database,
            lease_ttl: std::time::Duration::from_millis(args.lease_ttl_ms),
            mcp,
            ..HostConfig::new(data_dir, keys)
        };
        let host = Host::build(config).await.map_err(|e| e.to_string())?;
        let listener = tokio::net::TcpListener::bind(&listen)
            .await
            .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        if let Some(key) = dev {
            println!("dev API key for tenant \"dev\": {key}");
        }
        println!("openwop listening on http://{addr}");
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        host.serve(listener, stop_signal())
            .await
            .map_err(|e| format!("server error: {e}"))
    })
}
