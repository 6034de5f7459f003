//! `openwop mcp-stdio`: the MCP mount over stdin/stdout (newline-delimited JSON-RPC),
//! for clients that spawn their server. Either a bridge to a running host
//! (`--connect URL`, [`crate::mcp_bridge`]: the same runs as HTTP clients, no store opened
//! here) or a host of its own on a data directory; the caller authenticates with the api
//! key in `OPENWOP_API_KEY`, checked against the configured keys before any request is
//! read. Logs go to stderr only.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::edge::jsonrpc::Incoming;
use crate::edge::mcp::elicit::Modes;
use crate::edge::mcp::gate::META_VERSION;
use crate::edge::mcp::rpc::{INVALID_PARAMS, Message, RpcError, result_body};
use crate::edge::mcp::{Ctx, Era, McpState, Outbound, gate};
use crate::host::{Host, HostConfig};
use crate::identity::{KeyRing, Subject};

/// The environment variable holding the caller's api key.
pub const KEY_ENV: &str = "OPENWOP_API_KEY";

/// Serve MCP on stdin/stdout.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  OPENWOP_API_KEY=owdev_... openwop mcp-stdio --connect http://127.0.0.1:8080
      Bridge to the `openwop serve` already running: the same runs, workflows and keys as
      its HTTP clients (the dev key `serve` printed works as it is). Nothing is opened
      locally, so this works beside a SQLite host.

  OPENWOP_API_KEY=owdev_... openwop mcp-stdio
      Serve MCP from ./openwop-data with the dev key `openwop serve` minted there (when no
      other keys are configured); `serve` must not be running on that data dir.

  OPENWOP_API_KEY=acme:acme-secret-key-123 openwop mcp-stdio
      Serve MCP to the client that spawned this process, as tenant acme, with runs kept in
      ./openwop-data. A client configuration names this command and sets the variable.

  OPENWOP_API_KEY=acme-secret-key-123 openwop mcp-stdio --config openwop.yaml
      The keys (apiKeys), workflows, agents, database, tenants, peers and mcp settings of
      the config file `openwop serve --config` reads; the variable names which key to act
      as. `kill -HUP` re-reads its tenants and peers (the key stays), as serve's does.

  OPENWOP_API_KEY=acme:... openwop mcp-stdio --database postgres://postgres@127.0.0.1:5432/test
      Keep runs in the PostgreSQL database that `openwop serve --database` replicas share,
      so runs started here are visible (and resumable) over HTTP too.

With SQLite one process holds a data dir, and a second one (a serve, or another mcp-stdio)
stops at start: use --connect to reach a running serve, or a data dir of its own. Logs go to stderr; stdout
carries only JSON-RPC.")]
pub struct McpStdioArgs {
    /// Bridge to a running host's MCP endpoint (its origin, or the full `/mcp` URL) instead
    /// of opening a store here; OPENWOP_API_KEY is sent as the Bearer key.
    /// The flags that configure a store of this process's own are refused beside it.
    #[arg(long, value_name = "URL", env = "OPENWOP_CONNECT")]
    connect: Option<String>,
    /// Directory for the SQLite database (and the dev files of this host).
    #[arg(long, value_name = "DIR", env = "OPENWOP_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// PostgreSQL URL to keep runs in (shared with `openwop serve --database` replicas).
    #[arg(long, value_name = "URL", env = "OPENWOP_DATABASE_URL")]
    database: Option<String>,
    /// Accept KEY for TENANT (repeatable). Not needed when OPENWOP_API_KEY is itself
    /// TENANT:KEY, or the config file lists apiKeys; --api-key-file and OPENWOP_API_KEYS
    /// add keys without putting them on the command line.
    #[arg(long = "api-key", value_name = "TENANT:KEY")]
    api_keys: Vec<String>,
    /// A file of TENANT:KEY entries (one per line, or separated by commas or spaces).
    #[arg(long, value_name = "FILE", env = "OPENWOP_API_KEY_FILE")]
    api_key_file: Option<PathBuf>,
    /// Directory of extra workflow definitions (*.json, *.yaml).
    #[arg(long, value_name = "DIR", env = "OPENWOP_WORKFLOWS")]
    workflows: Option<PathBuf>,
    /// Directory of extra agent definitions (*.json, *.yaml).
    #[arg(long, value_name = "DIR", env = "OPENWOP_AGENTS")]
    agents: Option<PathBuf>,
    /// The JSON or YAML config file `openwop serve --config` reads (listen and
    /// egressAllowLoopback do not apply here); flags win.
    #[arg(long, value_name = "FILE", env = "OPENWOP_CONFIG")]
    config: Option<PathBuf>,
}

/// The arguments (by id) that configure a store here, which `--connect` does not open.
const STORE_ARGS: [&str; 7] = [
    "data_dir",
    "database",
    "api_keys",
    "api_key_file",
    "workflows",
    "agents",
    "config",
];

/// `--connect` beside a flag that configures a local store is a mistake worth a refusal;
/// the same setting from the environment is not: a container or service unit sets
/// OPENWOP_DATA_DIR (or OPENWOP_DATABASE_URL) for `serve`, and `mcp-stdio --connect` run
/// in it must still work. clap's `conflicts_with` counts environment values too, so the
/// rule is checked here, on where each value came from.
pub fn check_connect_alone(m: &clap::ArgMatches) -> Result<(), String> {
    if m.value_source("connect").is_none() {
        return Ok(());
    }
    for id in STORE_ARGS {
        if m.value_source(id) == Some(clap::parser::ValueSource::CommandLine) {
            let flag = match id {
                "api_keys" => "--api-key".to_owned(),
                other => format!("--{}", other.replace('_', "-")),
            };
            return Err(format!(
                "the argument '--connect <URL>' cannot be used with '{flag}': the bridge \
                 opens no store here, the host it connects to has its own"
            ));
        }
    }
    Ok(())
}

pub fn run(args: McpStdioArgs) -> ExitCode {
    crate::observe::init_logging("warn", crate::observe::LogFormat::Text);
    match run_inner(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("openwop mcp-stdio: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The key ring and the caller: `OPENWOP_API_KEY` is the caller's key, or `TENANT:KEY`,
/// which is then also the one key accepted when nothing else configures keys. With no
/// keys configured, a bare key equal to the dev key `openwop serve` keeps in the data dir
/// (`dev_key`) acts as tenant `dev`, exactly as it does on `serve`.
pub fn caller(
    specs: &[String],
    env_key: &str,
    dev_key: Option<&str>,
) -> Result<(KeyRing, Subject), String> {
    let mut keys = KeyRing::default();
    for spec in specs {
        keys.add_spec(spec).map_err(|e| e.to_string())?;
    }
    let mut key = env_key.trim().to_owned();
    if keys.is_empty() {
        match dev_key.map(str::trim) {
            Some(dev) if !key.contains(':') && dev == key => {
                keys.add("dev", &key).map_err(|e| e.to_string())?;
            }
            _ => keys.add_spec(&key).map_err(|e| {
                format!(
                    "{KEY_ENV}: {e} (with no --api-key or apiKeys, give TENANT:KEY, or the dev \
                     key `openwop serve` printed for this data dir)"
                )
            })?,
        }
    }
    if let Some((_, k)) = key.split_once(':')
        && keys.authenticate(Some(&format!("Bearer {key}"))).is_err()
    {
        key = k.to_owned();
    }
    let subject = keys
        .authenticate(Some(&format!("Bearer {key}")))
        .map_err(|e| format!("{KEY_ENV}: {e}"))?;
    Ok((keys, subject))
}

fn run_inner(args: McpStdioArgs) -> Result<(), String> {
    let (file, file_value) = match &args.config {
        Some(p) => crate::config_file::load(p)?,
        None => (crate::config_file::defaults(), serde_json::Value::Null),
    };
    let env_key = std::env::var(KEY_ENV).map_err(|_| {
        format!("set {KEY_ENV} to the api key to act as (TENANT:KEY, or KEY with --api-key)")
    })?;
    if let Some(url) = &args.connect {
        return connect(url, &env_key);
    }
    let specs = crate::serve_cmd::key_specs(&file, &args.api_keys, args.api_key_file.as_deref())?;
    let mcp = crate::settings::mcp_config(&file.mcp.clone().unwrap_or_default())?;
    let data_dir = args
        .data_dir
        .unwrap_or_else(|| PathBuf::from(&file.data_dir));
    let dev_key = std::fs::read_to_string(data_dir.join(crate::serve_cmd::DEV_KEY_FILE)).ok();
    let (keys, subject) = caller(&specs, &env_key, dev_key.as_deref())?;
    let database = args
        .database
        .or(file.database.clone())
        .filter(|d| !d.trim().is_empty());
    // SIGHUP re-reads the config file's tenant visibility and peers (their credentials
    // too), as `serve` does; the api keys stay: this process's one caller was
    // authenticated at start (stop it to revoke that key).
    let reload_source = crate::serve_cmd::ReloadSource {
        config: args.config.clone(),
        api_keys: args.api_keys.clone(),
        api_key_file: args.api_key_file.clone(),
        data_dir: None,
        started_with: file_value,
        keys: false,
    };
    let visibility = crate::settings::visibility_of(&file.tenants);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    rt.block_on(async move {
        let host = Host::build(HostConfig {
            visibility,
            workflows_dir: args.workflows.or(crate::config_file::path(&file.workflows)),
            agents_dir: args.agents.or(crate::config_file::path(&file.agents)),
            database,
            mcp: mcp.clone(),
            peers: crate::config_file::peers_of(&file),
            conformance: file.conformance,
            ..HostConfig::new(data_dir, keys)
        })
        .await
        .map_err(|e| {
            let e = e.to_string();
            if e.contains("in use by another openwop process") {
                format!("{e}; or bridge to that host: openwop mcp-stdio --connect URL")
            } else {
                e
            }
        })?;
        crate::serve_cmd::spawn_reload_on_hangup(reload_source, host.reloader())?;
        // The same mount `openwop serve` has, with the key every replica of this store
        // shares, so states cross transports, replicas and restarts alike.
        let state = host.mcp_state(mcp);
        let (input, output, writer) = std_pipes();
        serve(state, subject, input, output).await;
        // The output side is closed once serve returns; let the last lines reach stdout.
        let _ = tokio::task::spawn_blocking(move || writer.join()).await;
        drop(host);
        Ok(())
    })
}

/// `--connect`: the bridge over this process's stdin/stdout.
fn connect(url: &str, key: &str) -> Result<(), String> {
    let bridge = std::sync::Arc::new(crate::mcp_bridge::Bridge::new(url, key)?);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    rt.block_on(async move {
        let (input, output, writer) = std_pipes();
        crate::mcp_bridge::run(bridge, input, output).await;
        let _ = tokio::task::spawn_blocking(move || writer.join()).await;
    });
    Ok(())
}

/// Bridges the process's stdin/stdout to async pipes through two plain threads (the
/// workspace builds tokio without its stdio feature).
fn std_pipes() -> (
    tokio::io::DuplexStream,
    tokio::io::DuplexStream,
    std::thread::JoinHandle<()>,
) {
    use std::io::{Read, Write};
    use tokio::io::AsyncReadExt;
    let handle = tokio::runtime::Handle::current();
    let (mut to_serve, input) = tokio::io::duplex(64 * 1024);
    let reader_rt = handle.clone();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin();
        let mut buf = [0u8; 8192];
        loop {
            let n = match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if reader_rt.block_on(to_serve.write_all(&buf[..n])).is_err() {
                break;
            }
        }
        // Dropping `to_serve` is the end of input.
    });
    let (output, mut from_serve) = tokio::io::duplex(64 * 1024);
    let writer = std::thread::spawn(move || {
        let mut stdout = std::io::stdout();
        let mut buf = [0u8; 8192];
        loop {
            let n = match handle.block_on(from_serve.read(&mut buf)) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if stdout
                .write_all(&buf[..n])
                .and_then(|()| stdout.flush())
                .is_err()
            {
                break;
            }
        }
    });
    (input, output, writer)
}

/// Serves one stdio connection until its input ends; requests in flight then are still
/// answered before it returns.
pub async fn serve<R, W>(state: McpState, subject: Subject, input: R, output: W)
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    // Each message is serialized once where it is made (a response echoes its request id
    // as sent); the writer only frames lines.
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(mut line) = rx.recv().await {
            line.push('\n');
            if output.write_all(line.as_bytes()).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });
    let mut lines = BufReader::new(input).lines();
    let mut session: Option<String> = None;
    // The elicitation modes the session's initialize declared: its calls are asked with
    // elicitation/create on stdout, and the answers come back as responses on stdin.
    let mut session_modes = Modes::default();
    let in_flight: Arc<std::sync::Mutex<HashMap<String, JoinHandle<()>>>> = Arc::default();
    let mut listens: HashMap<String, Listen> = HashMap::new();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        let message = match crate::edge::mcp::rpc::parse_incoming(line.as_bytes(), true) {
            Ok(Incoming::Request(m)) => m,
            Ok(Incoming::Response(value)) => {
                // A response to a request the host sent: the answer to an
                // elicitation/create. Nothing is written back for a response; a refusal is
                // logged.
                if session.is_some()
                    && let Err(e) = state.take_response(&subject, session_modes, &value).await
                {
                    tracing::warn!(error = %e.message, "an elicitation answer on stdin was refused");
                }
                continue;
            }
            Err(e) => {
                let _ = tx.send(e.body(None));
                continue;
            }
        };
        if message.method == "notifications/cancelled" {
            // Dropping the request's future releases its hold on the run: cancelled.
            let key = message.params.get("requestId").map(Value::to_string);
            // A subscription named by the cancel ends (its feed stops).
            if let Some(k) = &key
                && let Some(feed) = listens.remove(k)
            {
                feed.abort();
            }
            if let Some(handle) = key.and_then(|k| {
                in_flight
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&k)
            }) {
                handle.abort();
            }
            continue;
        }
        if message.method == "initialize" && !message.meta().contains_key(META_VERSION) {
            match state.initialize(&subject, &message.params).await {
                Ok((result, version)) => {
                    session = Some(version);
                    session_modes = Modes::of(&message.params["capabilities"]);
                    let _ = tx.send(result_body(&message.echo_id(), &result));
                }
                Err(e) => {
                    let _ = tx.send(e.body(message.id.as_ref()));
                }
            }
            continue;
        }
        // The initialize era's `ping` is answered at any time, before `initialize` too
        // (2025-11-25 lifecycle); the stateless era removed it (SEP-2575), so a `ping`
        // naming a 2026 revision in `_meta` is dispatched and answered method-not-found.
        if message.method == "ping" && !message.meta().contains_key(META_VERSION) {
            if let Some(id) = &message.id {
                let _ = tx.send(result_body(id, &rmcp::model::EmptyObject {}));
            }
            continue;
        }
        let era = match stdio_era(&state, &subject, &message, session.as_deref()).await {
            Ok(era) => era,
            Err(e) => {
                if !message.is_notification() {
                    let _ = tx.send(e.body(message.id.as_ref()));
                }
                continue;
            }
        };
        let mut ctx = Ctx::new(subject.clone(), era);
        // stdio has no headers: `_meta` is the only carrier.
        ctx.trace = crate::edge::mcp::request_trace(&message, &axum::http::HeaderMap::new());
        ctx.session_modes = session_modes;
        if message.method == "subscriptions/listen"
            && matches!(ctx.era, Era::Modern(_))
            && let Some(id) = message.id.clone()
        {
            // The acknowledgement and every notification go to stdout, until the client
            // sends notifications/cancelled for this request or stdin closes.
            let (feed_tx, mut feed_rx) = mpsc::channel::<String>(16);
            let out = tx.clone();
            let feed = tokio::spawn(async move {
                while let Some(v) = feed_rx.recv().await {
                    if out.send(v).is_err() {
                        break;
                    }
                }
            });
            match crate::edge::mcp::listen::start(state.clone(), ctx, message, feed_tx).await {
                Ok(task) => {
                    listens.insert(id.value().to_string(), Listen { task, feed });
                }
                // The store could not be read to set it up: the listen's error response.
                Err(e) => {
                    feed.abort();
                    let _ = tx.send(e.body(Some(&id)));
                }
            }
            continue;
        }
        ctx.outbound = Some(Outbound::new(tx.clone(), &message));
        let state = state.clone();
        let tx = tx.clone();
        let id = message.id.clone();
        // Keyed as `notifications/cancelled` names it: the id as a value.
        let key = id.as_ref().map(|id| id.value().to_string());
        let registry = in_flight.clone();
        let done_key = key.clone();
        // stdio has no headers: `_meta` is the only trace carrier.
        let span = crate::edge::mcp::trace_span(&message, &axum::http::HeaderMap::new());
        let handle = tokio::spawn(tracing::Instrument::instrument(
            async move {
                let took = std::time::Instant::now();
                let answer = Box::pin(state.dispatch(&ctx, &message)).await;
                // The request log of stdio, as the HTTP edge logs each request: inside
                // the request's span, so the caller's trace id (from `_meta`) is on it.
                let latency_ms = took.elapsed().as_secs_f64() * 1000.0;
                match &answer {
                    Err(e) if e.code == crate::edge::mcp::rpc::INTERNAL_ERROR => {
                        tracing::error!(code = e.code, latency_ms, "request failed")
                    }
                    Err(e) => tracing::warn!(code = e.code, latency_ms, "request refused"),
                    Ok(_) => tracing::info!(latency_ms, "request"),
                }
                let reply = match answer {
                    Ok(Some(result)) => id.as_ref().map(|id| result_body(id, &result)),
                    Ok(None) => None,
                    Err(e) => id.as_ref().map(|id| e.body(Some(id))),
                };
                if let Some(k) = done_key {
                    registry
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(&k);
                }
                if let Some(reply) = reply {
                    let _ = tx.send(reply);
                }
            },
            span,
        ));
        if let Some(k) = key {
            in_flight
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(k, handle);
        }
    }
    // Subscriptions end with the input; nobody is left to read them.
    for (_, listen) in listens.drain() {
        listen.abort();
    }
    // The end of input is not a cancel: requests already read are answered (a piped
    // `initialize` + `tools/list` gets both answers), each within its own wait.
    let pending: Vec<JoinHandle<()>> = in_flight
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .drain()
        .map(|(_, h)| h)
        .collect();
    for handle in pending {
        let _ = handle.await;
    }
    drop(tx);
    let _ = writer.await;
}

/// A `subscriptions/listen` served on stdio: the subscription and the feed to stdout.
struct Listen {
    task: JoinHandle<()>,
    feed: JoinHandle<()>,
}

impl Listen {
    fn abort(self) {
        self.task.abort();
        self.feed.abort();
    }
}

/// stdio has no headers: a request names its revision in `_meta`, or rides the
/// initialize-era session of this process.
async fn stdio_era(
    state: &McpState,
    subject: &Subject,
    message: &Message,
    session: Option<&str>,
) -> Result<Era, RpcError> {
    if message.meta().contains_key(META_VERSION) {
        let declared = gate::declared(message)?;
        // An initialize-era revision is refused (-32022, recorded as refused): it is
        // served after initialize.
        state
            .negotiate(subject, &declared.version, crate::edge::mcp::Via::Request)
            .await?;
        return Ok(Era::Modern(declared));
    }
    match session {
        Some(v) => Ok(Era::Legacy(v.to_owned())),
        None => Err(RpcError::new(
            INVALID_PARAMS,
            format!("params._meta must carry `{META_VERSION}` (or initialize first)"),
        )),
    }
}
