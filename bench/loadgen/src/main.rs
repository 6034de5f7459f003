//! The benchmarks' load generator. One thread (pin it with `taskset`), keep-alive HTTP/1.1
//! connections, a fixed number of requests in flight for a fixed time after a warm-up;
//! prints one JSON object with the rate, latency percentiles, and the CPU the kernel
//! counted for the server processes named with `--pid` over the measured interval.
//!
//!   openwop-loadgen http --scenario a2a --url http://127.0.0.1:38181/a2a/jsonrpc \
//!       --auth 'Bearer KEY' --a2a-skill echo --pid 1234 --concurrency 16 --duration 10
//!   openwop-loadgen sse-memory --base http://127.0.0.1:38181 --auth 'Bearer KEY' --pid 1234
//!   openwop-loadgen commit-cost --base http://127.0.0.1:38181 --auth 'Bearer KEY' --pid 1234
//!
//! Loopback only: every URL must name 127.0.0.1 (or localhost); every loop is bounded in
//! time.

mod client;
mod procfs;
mod scenario;
mod streams;

use clap::Parser;
use scenario::{Kind, Scenario, Worker};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(about = "Load generator for the OpenWOP benchmarks (loopback only)")]
enum Cmd {
    /// Fixed concurrency for a fixed time against one scenario.
    Http(HttpArgs),
    /// RSS of the server before and after N idle SSE subscribers on one waiting run, and
    /// the latency of GET /.well-known/openwop with 0 and with M streams open.
    SseMemory(streams::SseMemoryArgs),
    /// Server CPU of one unrelated echo run (A2A blocking SendMessage) with 0, 1,000, ...
    /// SSE streams open on other runs.
    CommitCost(streams::CommitCostArgs),
}

#[derive(clap::Args)]
struct HttpArgs {
    #[arg(long, value_enum)]
    scenario: Kind,
    /// Target URL (repeat for several replicas: rest-create-get reads on the next one).
    #[arg(long, required = true)]
    url: Vec<String>,
    /// The Authorization header value, e.g. "Bearer KEY".
    #[arg(long)]
    auth: Option<String>,
    /// A2A: `metadata.openwop.skill` of every message (our host routes by it).
    #[arg(long)]
    a2a_skill: Option<String>,
    /// MCP SDK: the protocol revision to initialize with.
    #[arg(long, default_value = "2025-11-25")]
    mcp_protocol: String,
    /// Requests in flight (one connection each).
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Seconds measured.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Seconds of load before the measurement starts.
    #[arg(long, default_value_t = 3.0)]
    warmup: f64,
    /// Server processes whose CPU is counted (repeatable).
    #[arg(long)]
    pid: Vec<u32>,
    /// Also count the CPU of every process with this command name (e.g. postgres).
    #[arg(long)]
    also_name: Option<String>,
    /// A label echoed in the output.
    #[arg(long, default_value = "")]
    label: String,
}

/// `host:port` and path of a loopback URL.
pub fn split_url(url: &str) -> anyhow::Result<(SocketAddr, String)> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| anyhow::anyhow!("only http:// URLs: {url}"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].to_owned()),
        None => (rest, "/".to_owned()),
    };
    let authority = authority.replace("localhost", "127.0.0.1");
    let addr: SocketAddr = authority.parse()?;
    anyhow::ensure!(
        addr.ip().is_loopback(),
        "loopback addresses only, not {addr}"
    );
    Ok((addr, path))
}

fn ratio(n: u64, d: u64) -> Value {
    if d == 0 {
        Value::Null
    } else {
        json!((n as f64 / d as f64 * 100.0).round() / 100.0)
    }
}

pub fn percentiles(mut lat: Vec<Duration>) -> Value {
    lat.sort_unstable();
    let pick = |q: f64| -> f64 {
        if lat.is_empty() {
            return 0.0;
        }
        let i = ((lat.len() as f64 - 1.0) * q).round() as usize;
        lat[i].as_secs_f64() * 1e3
    };
    let r = |x: f64| (x * 1000.0).round() / 1000.0;
    json!({
        "p50": r(pick(0.50)), "p90": r(pick(0.90)), "p99": r(pick(0.99)),
        "max": r(pick(1.0)), "n": lat.len(),
    })
}

struct Shared {
    measuring: AtomicBool,
    stop: AtomicBool,
    requests: AtomicU64,
    iterations: AtomicU64,
    errors: AtomicU64,
}

async fn http(args: HttpArgs) -> anyhow::Result<()> {
    let targets = args
        .url
        .iter()
        .map(|u| split_url(u))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let addrs: Vec<SocketAddr> = targets.iter().map(|(a, _)| *a).collect();
    let paths: Vec<String> = targets.iter().map(|(_, p)| p.clone()).collect();
    let mut scenario = Scenario {
        kind: args.scenario,
        paths,
        auth: args.auth.clone(),
        a2a_skill: args.a2a_skill.clone(),
        mcp_protocol: args.mcp_protocol.clone(),
        status_path: String::new(),
    };
    if scenario.kind == Kind::RestGet {
        // One run to read, created before the load.
        let mut c = client::Conn::new(addrs[0]);
        let mut headers = vec![("content-type", "application/json")];
        if let Some(a) = &args.auth {
            headers.push(("authorization", a.as_str()));
        }
        let a = c
            .send(
                hyper::Method::POST,
                &format!("{}/runs", scenario.paths[0].trim_end_matches('/')),
                &headers,
                Some(r#"{"workflowId":"echo","inputs":{"n":1}}"#.into()),
            )
            .await?;
        anyhow::ensure!(a.status.as_u16() == 201, "create: {}", a.status);
        let v: Value = serde_json::from_slice(&a.body)?;
        scenario.status_path = v["statusUrl"]
            .as_str()
            .ok_or_else(|| anyhow::anyhow!("no statusUrl"))?
            .to_owned();
    }
    if scenario.kind == Kind::RestCreateGet {
        for p in &mut scenario.paths {
            *p = format!("{}/runs", p.trim_end_matches('/'));
        }
    }
    let scenario = Arc::new(scenario);
    let shared = Arc::new(Shared {
        measuring: AtomicBool::new(false),
        stop: AtomicBool::new(false),
        requests: AtomicU64::new(0),
        iterations: AtomicU64::new(0),
        errors: AtomicU64::new(0),
    });
    let mut workers = Vec::new();
    for id in 0..args.concurrency.max(1) {
        let (scenario, shared, addrs) = (scenario.clone(), shared.clone(), addrs.clone());
        workers.push(tokio::spawn(async move {
            let mut w = Worker {
                id,
                conns: addrs.into_iter().map(client::Conn::new).collect(),
                session: None,
                n: 0,
            };
            scenario.prepare(&mut w).await?;
            let mut lat = Vec::with_capacity(1 << 16);
            let mut scratch = Vec::with_capacity(4);
            let mut reported = 0;
            while !shared.stop.load(Ordering::Relaxed) {
                scratch.clear();
                let r = scenario.once(&mut w, &mut scratch).await;
                let measuring = shared.measuring.load(Ordering::Relaxed);
                match r {
                    Ok(k) if measuring => {
                        shared.requests.fetch_add(k, Ordering::Relaxed);
                        shared.iterations.fetch_add(1, Ordering::Relaxed);
                        lat.extend_from_slice(&scratch);
                    }
                    Ok(_) => {}
                    Err(e) => {
                        if measuring {
                            shared.errors.fetch_add(1, Ordering::Relaxed);
                        }
                        if reported < 3 {
                            eprintln!("worker {id}: {e:#}");
                            reported += 1;
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
            let opened: u64 = w.conns.iter().map(|c| c.opened).sum();
            anyhow::Ok((lat, opened))
        }));
    }
    let tick = Duration::from_secs(1) / u32::try_from(procfs::clock_ticks()).unwrap_or(100);
    let load_before = procfs::loadavg();
    tokio::time::sleep(Duration::from_secs_f64(args.warmup)).await;
    let c0 = procfs::CpuSample::take(&args.pid, args.also_name.as_deref())?;
    let steal0 = procfs::steal_ticks();
    let t0 = Instant::now();
    shared.measuring.store(true, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs_f64(args.duration)).await;
    shared.measuring.store(false, Ordering::Relaxed);
    let elapsed = t0.elapsed();
    let c1 = procfs::CpuSample::take(&args.pid, args.also_name.as_deref())?;
    let steal1 = procfs::steal_ticks();
    shared.stop.store(true, Ordering::Relaxed);
    let load_after = procfs::loadavg();
    let mut lat = Vec::new();
    let mut opened = 0;
    for w in workers {
        match tokio::time::timeout(Duration::from_secs(60), w).await {
            Ok(Ok(Ok((l, o)))) => {
                lat.extend(l);
                opened += o;
            }
            Ok(Ok(Err(e))) => anyhow::bail!("a worker could not start: {e:#}"),
            Ok(Err(e)) => anyhow::bail!("a worker panicked: {e}"),
            Err(_) => anyhow::bail!("a worker did not finish within 60 s"),
        }
    }
    let (server_cpu, named_cpu, own_cpu) = c0.delta(&c1, tick);
    let requests = shared.requests.load(Ordering::Relaxed);
    let iterations = shared.iterations.load(Ordering::Relaxed);
    let secs = elapsed.as_secs_f64();
    let per = |d: Duration| {
        if requests == 0 {
            Value::Null
        } else {
            json!((d.as_secs_f64() * 1e3 / requests as f64 * 10000.0).round() / 10000.0)
        }
    };
    let out = json!({
        "label": args.label,
        "scenario": format!("{:?}", args.scenario),
        "urls": args.url,
        "concurrency": args.concurrency,
        "seconds": (secs * 1000.0).round() / 1000.0,
        "requests": requests,
        "iterations": iterations,
        "errors": shared.errors.load(Ordering::Relaxed),
        "connections_opened": opened,
        "rps": (requests as f64 / secs * 10.0).round() / 10.0,
        "latency_ms": percentiles(lat),
        "server_pids": args.pid,
        "server_cpus": args.pid.iter().map(|&p| procfs::cpus_of(p)).collect::<Vec<_>>(),
        "server_cpu_ms": server_cpu.as_secs_f64() * 1e3,
        "server_cpu_ms_per_req": per(server_cpu),
        "server_cpu_util": (server_cpu.as_secs_f64() / secs * 1000.0).round() / 1000.0,
        // Counted on the servers' threads alive at both samples.
        "server_context_switches_per_req": ratio(c1.switches.saturating_sub(c0.switches), requests),
        "server_read_syscalls_per_req": ratio(c1.syscr.saturating_sub(c0.syscr), requests),
        "server_write_syscalls_per_req": ratio(c1.syscw.saturating_sub(c0.syscw), requests),
        "also_name": args.also_name,
        "also_cpu_ms_per_req": args.also_name.as_ref().map(|_| per(named_cpu)),
        "loadgen_cpus": procfs::own_cpus(),
        "loadgen_cpu_util": (own_cpu.as_secs_f64() / secs * 1000.0).round() / 1000.0,
        // Share of the machine's CPU time the hypervisor took over the measured seconds.
        "machine_steal": match (steal0, steal1) {
            (Some((s0, a0)), Some((s1, a1))) if a1 > a0 => {
                json!(((s1 - s0) as f64 / (a1 - a0) as f64 * 1000.0).round() / 1000.0)
            }
            _ => Value::Null,
        },
        "loadavg_before": load_before,
        "loadavg_after": load_after,
    });
    println!("{out}");
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let cmd = Cmd::parse();
    // One thread: the generator is pinned to one core and must not compete with itself.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        match cmd {
            Cmd::Http(a) => http(a).await,
            Cmd::SseMemory(a) => streams::sse_memory(a).await,
            Cmd::CommitCost(a) => streams::commit_cost(a).await,
        }
    })
}
