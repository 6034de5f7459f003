//! `create+get` throughput of real `openwop serve` processes, measured in one run: one
//! replica on SQLite, one on PostgreSQL, two on one PostgreSQL schema (requests split
//! between them). Prints requests per second and the ratios to SQLite.
//!
//! Run: `bench/replicas/run.sh` (or `cargo bench -p openwop --bench replicas --profile dev`);
//! `OPENWOP_BENCH_REQUESTS` and `OPENWOP_BENCH_CONCURRENCY` change the load,
//! `OPENWOP_TEST_DATABASE_URL` the server.

// The integration tests' support module, for its `process` helpers.
#[path = "../tests/support/mod.rs"]
mod support;

use support::process;

use openwop::ids::project;
use openwop::store::scratch::ScratchSchema;
use reqwest::Client;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;
use tokio::process::{Child, Command};

const KEY: &str = "bench-key-0123456789";

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Replica {
    _child: Child,
    base: String,
    _dir: tempfile::TempDir,
}

async fn spawn(database: Option<&str>) -> Replica {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_openwop"));
    cmd.args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--api-key",
        &format!("bench:{KEY}"),
        // One key drives the whole load: no per-key rate limit.
        "--rate-limit",
        "0",
    ])
    .arg("--data-dir")
    .arg(dir.path());
    if let Some(url) = database {
        cmd.args(["--database", url]);
    }
    let child = cmd
        .env("RUST_LOG", "warn")
        .env_remove("OPENWOP_DATABASE_URL")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn openwop");
    let (child, base) = process::listening(child).await;
    Replica {
        _child: child,
        base,
        _dir: dir,
    }
}

/// `total` create+get pairs, `concurrency` in flight, spread round-robin over `bases`;
/// returns requests per second.
async fn measure(c: &Client, bases: &[String], total: usize, concurrency: usize) -> f64 {
    let next = Arc::new(AtomicUsize::new(0));
    let bases = Arc::new(bases.to_vec());
    let start = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let (c, next, bases) = (c.clone(), next.clone(), bases.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        return;
                    }
                    let base = &bases[i % bases.len()];
                    let body = json!({"workflowId": "echo", "inputs": {"i": i}});
                    let r = c
                        .post(format!("{base}/runs"))
                        .bearer_auth(KEY)
                        .json(&body)
                        .send()
                        .await
                        .expect("create");
                    assert!(r.status().is_success(), "create: {}", r.status());
                    let v: Value = r.json().await.expect("json");
                    let id = v["runId"].as_str().expect("runId");
                    // Read on the other replica when there are two.
                    let other = &bases[(i + 1) % bases.len()];
                    let r = c
                        .get(format!("{other}/runs/{}", project(id)))
                        .bearer_auth(KEY)
                        .send()
                        .await
                        .expect("get");
                    assert!(r.status().is_success(), "get: {}", r.status());
                }
            })
        })
        .collect();
    for w in workers {
        w.await.expect("worker");
    }
    (total * 2) as f64 / start.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() {
    let total = env_usize("OPENWOP_BENCH_REQUESTS", 1000);
    let concurrency = env_usize("OPENWOP_BENCH_CONCURRENCY", 16).max(1);
    let c = Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .expect("client");

    let sqlite = spawn(None).await;
    let schema = ScratchSchema::create()
        .await
        .expect("PostgreSQL for the benchmark");
    let pg_a = spawn(Some(&schema.url())).await;
    let pg_b = spawn(Some(&schema.url())).await;

    // Warm connections and caches on every host first.
    for bases in [
        vec![sqlite.base.clone()],
        vec![pg_a.base.clone(), pg_b.base.clone()],
    ] {
        measure(&c, &bases, 50, 4).await;
    }
    let one_sqlite = measure(&c, std::slice::from_ref(&sqlite.base), total, concurrency).await;
    let one_pg = measure(&c, std::slice::from_ref(&pg_a.base), total, concurrency).await;
    let two_pg = measure(
        &c,
        &[pg_a.base.clone(), pg_b.base.clone()],
        total,
        concurrency,
    )
    .await;

    println!("create+get, {total} pairs, {concurrency} in flight, requests/s:");
    println!("  SQLite, 1 replica:      {one_sqlite:>8.0}");
    println!(
        "  PostgreSQL, 1 replica:  {one_pg:>8.0}   ({:.2}x SQLite)",
        one_pg / one_sqlite
    );
    println!(
        "  PostgreSQL, 2 replicas: {two_pg:>8.0}   ({:.2}x SQLite, {:.2}x one PostgreSQL replica)",
        two_pg / one_sqlite,
        two_pg / one_pg
    );
    println!(
        "  (cores on this machine: {})",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
}
