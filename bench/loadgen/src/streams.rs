//! Many idle SSE subscribers held on one thread, and what they cost the server: its
//! memory, the latency of an unrelated request, and the CPU of an unrelated run.

use crate::client::Conn;
use crate::scenario::{Kind, Scenario, Worker};
use crate::{percentiles, procfs, split_url};
use hyper::Method;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

#[derive(clap::Args)]
pub struct SseMemoryArgs {
    /// The host's base URL.
    #[arg(long)]
    base: String,
    /// The Authorization header value.
    #[arg(long)]
    auth: String,
    /// The server process.
    #[arg(long)]
    pid: u32,
    /// Idle subscribers to open on the waiting run.
    #[arg(long, default_value_t = 10_000)]
    streams: usize,
    /// Streams open while GET /.well-known/openwop is timed.
    #[arg(long, default_value_t = 2_000)]
    probe_at: usize,
    /// Discovery requests timed at each point (one connection, one at a time).
    #[arg(long, default_value_t = 2_000)]
    probe_requests: usize,
    /// Seconds to let the server settle before reading its RSS.
    #[arg(long, default_value_t = 3.0)]
    settle: f64,
}

#[derive(clap::Args)]
pub struct CommitCostArgs {
    /// The host's base URL.
    #[arg(long)]
    base: String,
    /// The Authorization header value.
    #[arg(long)]
    auth: String,
    /// The server process.
    #[arg(long)]
    pid: u32,
    /// Open streams at each step (streams stay open from one step to the next; a step
    /// lower than the one before closes them all first, e.g. a last 0 as a control for
    /// drift such as the database growing).
    #[arg(long, value_delimiter = ',', default_value = "0,1000,9999,0")]
    levels: Vec<usize>,
    /// Echo runs (A2A blocking SendMessage, one at a time) measured at each step.
    #[arg(long, default_value_t = 2000)]
    runs: usize,
    /// Seconds of idle CPU measured at each step (subtracted from the runs' CPU): the
    /// streams' keep-alive comments cost something even with no run going.
    #[arg(long, default_value_t = 15.0)]
    idle: f64,
    /// Waiting runs the streams are spread over.
    #[arg(long, default_value_t = 100)]
    waiting_runs: usize,
}

/// Streams opened so far, and how they fared.
struct Holder {
    addr: SocketAddr,
    auth: String,
    ready: Arc<AtomicUsize>,
    failed: Arc<AtomicUsize>,
    ended: Arc<AtomicUsize>,
    connecting: Arc<Semaphore>,
    opened: usize,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Holder {
    fn new(addr: SocketAddr, auth: &str) -> Self {
        Holder {
            addr,
            auth: auth.to_owned(),
            ready: Arc::default(),
            failed: Arc::default(),
            ended: Arc::default(),
            // Connects and header reads in flight at once: the listen backlog is finite.
            connecting: Arc::new(Semaphore::new(128)),
            opened: 0,
            tasks: Vec::new(),
        }
    }

    /// Opens one subscriber on `path`; it reads (and drops) whatever comes until the end.
    fn open(&mut self, path: &str) {
        self.opened += 1;
        let (addr, ready, failed, ended, connecting) = (
            self.addr,
            self.ready.clone(),
            self.failed.clone(),
            self.ended.clone(),
            self.connecting.clone(),
        );
        let request = format!(
            "GET {path} HTTP/1.1\r\nhost: {addr}\r\nauthorization: {}\r\naccept: text/event-stream\r\n\r\n",
            self.auth
        );
        self.tasks.push(tokio::spawn(async move {
            let stream = {
                let _permit = connecting.acquire().await;
                match subscribe(addr, request).await {
                    Ok(s) => s,
                    Err(e) => {
                        if failed.fetch_add(1, Ordering::Relaxed) < 3 {
                            eprintln!("stream: {e:#}");
                        }
                        return;
                    }
                }
            };
            ready.fetch_add(1, Ordering::Relaxed);
            let mut stream = stream;
            let mut buf = [0u8; 256];
            loop {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            ended.fetch_add(1, Ordering::Relaxed);
        }));
    }

    /// Closes every stream (the server sees each connection end).
    async fn close_all(&mut self) {
        for t in self.tasks.drain(..) {
            t.abort();
            let _ = t.await;
        }
        self.ready = Arc::default();
        self.failed = Arc::default();
        self.ended = Arc::default();
        self.opened = 0;
    }

    /// Waits until every stream opened is ready or failed (at most `limit`).
    async fn settle(&self, limit: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + limit;
        loop {
            let done = self.ready.load(Ordering::Relaxed) + self.failed.load(Ordering::Relaxed);
            if done >= self.opened {
                break;
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "only {done} of {} streams answered",
                self.opened
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        anyhow::ensure!(
            self.failed.load(Ordering::Relaxed) == 0,
            "{} streams failed",
            self.failed.load(Ordering::Relaxed)
        );
        Ok(())
    }

    fn open_now(&self) -> usize {
        self.ready.load(Ordering::Relaxed) - self.ended.load(Ordering::Relaxed)
    }
}

/// Connects, sends the GET, and reads the head of the answer: it must be a 200 event
/// stream.
async fn subscribe(addr: SocketAddr, request: String) -> anyhow::Result<TcpStream> {
    let mut stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    stream.write_all(request.as_bytes()).await?;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 512];
    loop {
        let n = tokio::time::timeout(Duration::from_secs(60), stream.read(&mut buf)).await??;
        anyhow::ensure!(n > 0, "closed before the head of the answer");
        head.extend_from_slice(&buf[..n]);
        if head.windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
        anyhow::ensure!(head.len() < 16 * 1024, "answer head too long");
    }
    let text = String::from_utf8_lossy(&head);
    anyhow::ensure!(
        text.starts_with("HTTP/1.1 200"),
        "answer: {}",
        text.lines().next().unwrap_or("")
    );
    anyhow::ensure!(
        text.to_ascii_lowercase().contains("text/event-stream"),
        "not an event stream"
    );
    Ok(stream)
}

/// Creates a run of `workflow`; answers its events path.
async fn create_run(conn: &mut Conn, auth: &str, workflow: &str) -> anyhow::Result<String> {
    let a = conn
        .send(
            Method::POST,
            "/runs",
            &[
                ("authorization", auth),
                ("content-type", "application/json"),
            ],
            Some(format!(r#"{{"workflowId":"{workflow}","inputs":{{}}}}"#).into()),
        )
        .await?;
    anyhow::ensure!(a.status.as_u16() == 201, "create {workflow}: {}", a.status);
    let v: Value = serde_json::from_slice(&a.body)?;
    let events = match v["eventsUrl"].as_str() {
        Some(e) => e.to_owned(),
        None => format!(
            "{}/events",
            v["statusUrl"]
                .as_str()
                .ok_or_else(|| anyhow::anyhow!("no statusUrl"))?
        ),
    };
    Ok(events)
}

/// Times `n` GET /.well-known/openwop one at a time on one connection.
async fn probe_discovery(addr: SocketAddr, n: usize) -> anyhow::Result<Value> {
    let mut conn = Conn::new(addr);
    for _ in 0..50 {
        conn.send(Method::GET, "/.well-known/openwop", &[], None)
            .await?;
    }
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let a = conn
            .send(Method::GET, "/.well-known/openwop", &[], None)
            .await?;
        lat.push(t.elapsed());
        anyhow::ensure!(a.status.is_success(), "discovery: {}", a.status);
    }
    Ok(percentiles(lat))
}

fn own_rss() -> u64 {
    procfs::rss_bytes(std::process::id()).unwrap_or(0)
}

pub async fn sse_memory(args: SseMemoryArgs) -> anyhow::Result<()> {
    let (addr, _) = split_url(&args.base)?;
    let mut conn = Conn::new(addr);
    let events = create_run(&mut conn, &args.auth, "approval").await?;
    drop(conn);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let load_before = procfs::loadavg();
    let discovery_0 = probe_discovery(addr, args.probe_requests).await?;
    tokio::time::sleep(Duration::from_secs_f64(args.settle)).await;
    let rss_0 = procfs::rss_bytes(args.pid)?;

    let mut holder = Holder::new(addr, &args.auth);
    let t = Instant::now();
    let probe_at = args.probe_at.min(args.streams);
    for _ in 0..probe_at {
        holder.open(&events);
    }
    holder.settle(Duration::from_secs(300)).await?;
    let discovery_at = probe_discovery(addr, args.probe_requests).await?;
    // The probe's connection is closed before the rest open (the host caps connections).
    tokio::time::sleep(Duration::from_millis(500)).await;
    for _ in probe_at..args.streams {
        holder.open(&events);
    }
    holder.settle(Duration::from_secs(600)).await?;
    let open_secs = t.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_secs_f64(args.settle)).await;
    let tick = Duration::from_secs(1) / u32::try_from(procfs::clock_ticks()).unwrap_or(100);
    let c0 = procfs::CpuSample::take(&[args.pid], None)?;
    let idle = Duration::from_secs(5);
    tokio::time::sleep(idle).await;
    let c1 = procfs::CpuSample::take(&[args.pid], None)?;
    let rss_1 = procfs::rss_bytes(args.pid)?;
    let (idle_cpu, _, _) = c0.delta(&c1, tick);
    let open = holder.open_now();
    let mib = |b: u64| (b as f64 / 1048576.0 * 10.0).round() / 10.0;
    let out = json!({
        "streams": open,
        "server_rss_mib_before": mib(rss_0),
        "server_rss_mib_after": mib(rss_1),
        "server_rss_mib_delta": mib(rss_1.saturating_sub(rss_0)),
        "bytes_per_stream": if open > 0 { rss_1.saturating_sub(rss_0) / open as u64 } else { 0 },
        "seconds_to_open": (open_secs * 100.0).round() / 100.0,
        "server_idle_cpu_util_with_streams": (idle_cpu.as_secs_f64() / idle.as_secs_f64() * 1000.0).round() / 1000.0,
        "discovery_latency_ms_0_streams": discovery_0,
        "discovery_latency_ms_at": {"streams": probe_at, "latency": discovery_at},
        "server_cpus": procfs::cpus_of(args.pid),
        "loadgen_cpus": procfs::own_cpus(),
        "loadgen_rss_mib": mib(own_rss()),
        "loadavg_before": load_before,
        "loadavg_after": procfs::loadavg(),
    });
    println!("{out}");
    Ok(())
}

pub async fn commit_cost(args: CommitCostArgs) -> anyhow::Result<()> {
    let (addr, _) = split_url(&args.base)?;
    let tick = Duration::from_secs(1) / u32::try_from(procfs::clock_ticks()).unwrap_or(100);
    let mut conn = Conn::new(addr);
    let mut waiting = Vec::new();
    for _ in 0..args.waiting_runs.max(1) {
        waiting.push(create_run(&mut conn, &args.auth, "approval").await?);
    }
    drop(conn);
    let echo = Scenario {
        kind: Kind::A2a,
        paths: vec!["/a2a/jsonrpc".to_owned()],
        auth: Some(args.auth.clone()),
        a2a_skill: Some("echo".to_owned()),
        mcp_protocol: String::new(),
        status_path: String::new(),
    };
    let mut worker = Worker {
        id: 0,
        conns: vec![Conn::new(addr)],
        session: None,
        n: 0,
    };
    let mut scratch = Vec::new();
    for _ in 0..50 {
        echo.once(&mut worker, &mut scratch).await?;
    }
    let load_before = procfs::loadavg();
    let mut holder = Holder::new(addr, &args.auth);
    let mut results = Vec::new();
    for &level in &args.levels {
        // The echo connection is closed while streams open: at the top level every
        // connection the host allows may be needed.
        worker.conns = vec![Conn::new(addr)];
        if level < holder.opened {
            holder.close_all().await;
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        while holder.opened < level {
            let path = waiting[holder.opened % waiting.len()].clone();
            holder.open(&path);
        }
        holder.settle(Duration::from_secs(600)).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let c0 = procfs::CpuSample::take(&[args.pid], None)?;
        let t0 = Instant::now();
        tokio::time::sleep(Duration::from_secs_f64(args.idle)).await;
        let c1 = procfs::CpuSample::take(&[args.pid], None)?;
        let idle_secs = t0.elapsed().as_secs_f64();
        let idle_ms_per_s = c0.delta(&c1, tick).0.as_secs_f64() * 1e3 / idle_secs;

        for _ in 0..5 {
            echo.once(&mut worker, &mut scratch).await?;
        }
        let mut lat = Vec::with_capacity(args.runs);
        let c0 = procfs::CpuSample::take(&[args.pid], None)?;
        let t0 = Instant::now();
        for _ in 0..args.runs {
            scratch.clear();
            echo.once(&mut worker, &mut scratch).await?;
            lat.extend_from_slice(&scratch);
        }
        let secs = t0.elapsed().as_secs_f64();
        let c1 = procfs::CpuSample::take(&[args.pid], None)?;
        let cpu_ms = c0.delta(&c1, tick).0.as_secs_f64() * 1e3;
        let per_run = cpu_ms / args.runs as f64;
        let net = (cpu_ms - idle_ms_per_s * secs) / args.runs as f64;
        let r = |x: f64| (x * 1000.0).round() / 1000.0;
        let row = json!({
            "streams_open": holder.open_now(),
            "echo_runs": args.runs,
            "server_cpu_ms_per_run": r(per_run),
            "idle_cpu_ms_per_s": r(idle_ms_per_s),
            "server_cpu_ms_per_run_net_of_idle": r(net),
            "echo_latency_ms": percentiles(lat),
        });
        println!("{row}");
        results.push((level, per_run, net));
    }
    let base = results.first().map(|r| (r.1, r.2)).unwrap_or((1.0, 1.0));
    let summary: Vec<Value> = results
        .iter()
        .map(|(level, per, net)| {
            json!({
                "streams": level,
                "cpu_ms_per_run": (per * 1000.0).round() / 1000.0,
                "ratio_to_first": (per / base.0 * 100.0).round() / 100.0,
                "net_ratio_to_first": (net / base.1 * 100.0).round() / 100.0,
            })
        })
        .collect();
    println!(
        "{}",
        json!({
            "summary": summary,
            "server_cpus": procfs::cpus_of(args.pid),
            "loadgen_cpus": procfs::own_cpus(),
            "loadgen_rss_mib": (own_rss() as f64 / 1048576.0).round(),
            "loadavg_before": load_before,
            "loadavg_after": procfs::loadavg(),
        })
    );
    Ok(())
}
