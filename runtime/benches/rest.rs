//! Loopback throughput of the host beside a bare axum handler, measured in one run:
//! `create+get` and `get-only` against the host, `bare` against a handler returning a fixed
//! JSON body. Prints requests per second and the ratio host/bare.
//!
//! Run: `cargo bench -p openwop --bench rest` (add `--profile dev` for a quick look;
//! `OPENWOP_BENCH_REQUESTS` and `OPENWOP_BENCH_CONCURRENCY` change the load).

use axum::Json;
use axum::routing::get;
use openwop::host::{Host, HostConfig};
use openwop::identity::KeyRing;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const KEY: &str = "bench-key-0123456789";

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs `total` calls of `f` with `concurrency` in flight; returns requests per second.
async fn measure<F, Fut>(total: usize, concurrency: usize, requests_per_call: usize, f: F) -> f64
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let per_worker = total / concurrency;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let f = f.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..per_worker {
                f().await;
            }
        }));
    }
    for t in tasks {
        t.await.expect("worker");
    }
    (per_worker * concurrency * requests_per_call) as f64 / start.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() {
    let total = env_usize("OPENWOP_BENCH_REQUESTS", 4000);
    let concurrency = env_usize("OPENWOP_BENCH_CONCURRENCY", 16).max(1);
    let dir = tempfile::tempdir().expect("temp dir");

    let mut keys = KeyRing::default();
    keys.add("bench", KEY).expect("key");
    let host = Host::build(HostConfig {
        // One key drives the whole load: no per-key rate limit.
        rate: openwop::identity::rate::RateConfig {
            per_second: 0.0,
            burst: 0.0,
        },
        ..HostConfig::new(dir.path().to_path_buf(), keys)
    })
    .await
    .expect("host");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let stop = host.stopper();
    tokio::spawn(host.serve(listener, std::future::pending()));

    let fixed =
        json!({"runId": "bench/0123456789abcdefghij", "status": "completed", "workflowId": "echo"});
    let bare = axum::Router::new().route(
        "/fixed",
        get(move || std::future::ready(Json(fixed.clone()))),
    );
    let bare_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let bare_url = format!("http://{}/fixed", bare_listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(bare_listener, bare).await });

    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let created: Value = client
        .post(format!("{base}/runs"))
        .bearer_auth(KEY)
        .json(&json!({"workflowId": "echo", "inputs": {"n": 1}}))
        .send()
        .await
        .expect("create")
        .json()
        .await
        .expect("json");
    let status_url = format!(
        "{base}{}",
        created["statusUrl"].as_str().expect("statusUrl")
    );

    let c = client.clone();
    let bare_rps = measure(total, concurrency, 1, move || {
        let (c, u) = (c.clone(), bare_url.clone());
        async move {
            let r = c.get(u).send().await.expect("bare");
            assert!(r.status().is_success());
            let _ = r.bytes().await;
        }
    })
    .await;

    let c = client.clone();
    let get_rps = measure(total, concurrency, 1, move || {
        let (c, u) = (c.clone(), status_url.clone());
        async move {
            let r = c.get(u).bearer_auth(KEY).send().await.expect("get");
            assert!(r.status().is_success());
            let _ = r.bytes().await;
        }
    })
    .await;

    let c = client.clone();
    let b = base.clone();
    let create_get_rps = measure(total / 2, concurrency, 2, move || {
        let (c, b) = (c.clone(), b.clone());
        async move {
            let r = c
                .post(format!("{b}/runs"))
                .bearer_auth(KEY)
                .json(&json!({"workflowId": "echo", "inputs": {}}))
                .send()
                .await
                .expect("create");
            assert_eq!(r.status(), 201);
            let v: Value = r.json().await.expect("json");
            let u = format!("{b}{}", v["statusUrl"].as_str().expect("statusUrl"));
            let r = c.get(u).bearer_auth(KEY).send().await.expect("get");
            assert!(r.status().is_success());
            let _ = r.bytes().await;
        }
    })
    .await;

    println!("loopback, {concurrency} in flight, {total} requests per scenario");
    println!("bare axum fixed JSON : {bare_rps:>10.0} req/s");
    println!(
        "host get-only        : {get_rps:>10.0} req/s   ratio host/bare {:.3}",
        get_rps / bare_rps
    );
    println!(
        "host create+get      : {create_get_rps:>10.0} req/s   ratio host/bare {:.3}",
        create_get_rps / bare_rps
    );
    let _ = stop.send(true);
}
