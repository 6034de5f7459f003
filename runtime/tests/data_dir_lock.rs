//! One host process per SQLite data dir, checked on the real binary: a second `openwop
//! serve` on a dir another process holds stops at start with a clear message and drives
//! nothing of it; a start that cannot bind its port touches no data dir at all.

mod support;

use openwop::ids::project;
use reqwest::Client;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::KEY_A;
use support::process::{self, BIN};
use tokio::process::{Child, Command};

async fn spawn(dir: &std::path::Path) -> (Child, String) {
    process::start(dir).await
}

/// Runs the binary to its end (at most 20 s) and returns (success, stdout, stderr).
async fn run_to_end(args: &[&std::ffi::OsStr]) -> (bool, String, String) {
    let out = tokio::time::timeout(
        Duration::from_secs(20),
        Command::new(BIN)
            .args(args)
            .env("RUST_LOG", "warn")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("a refused start ends by itself")
    .expect("run openwop");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn events(c: &Client, base: &str, run: &str) -> Vec<Value> {
    let v: Value = c
        .get(format!(
            "{base}/runs/{}/events/poll?timeout=0",
            project(run)
        ))
        .bearer_auth(KEY_A)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v["events"].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn a_second_process_on_a_held_data_dir_is_refused_and_drives_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let c = Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let (mut first, base) = spawn(dir.path()).await;
    let created: Value = c
        .post(format!("{base}/runs"))
        .bearer_auth(KEY_A)
        .json(&json!({"workflowId": "slow", "inputs": {"ms": 1500}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let run = created["runId"].as_str().expect("runId").to_owned();

    // The second process, on another port: refused at start, before it resumes the run.
    let (ok, stdout, stderr) = run_to_end(&[
        "serve".as_ref(),
        "--listen".as_ref(),
        "127.0.0.1:0".as_ref(),
        "--api-key".as_ref(),
        format!("acme:{KEY_A}").as_ref(),
        "--data-dir".as_ref(),
        dir.path().as_os_str(),
    ])
    .await;
    assert!(!ok, "a second host on one SQLite data dir must not start");
    assert!(!stdout.contains("listening"), "{stdout}");
    assert!(
        stderr.contains("in use by another openwop process")
            && stderr.contains(&format!("pid {}", first.id().unwrap())),
        "the refusal names the holder: {stderr}"
    );

    // The first finishes the run alone: each node ran once, the log is contiguous.
    let deadline = Instant::now() + Duration::from_secs(20);
    let log = loop {
        let log = events(&c, &base, &run).await;
        if log.iter().any(|e| e["type"] == "run.completed") {
            break log;
        }
        assert!(Instant::now() < deadline, "the run completes: {log:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let completed = log.iter().filter(|e| e["type"] == "node.completed").count();
    assert_eq!(completed, 1, "{log:?}");
    for (i, e) in log.iter().enumerate() {
        assert_eq!(e["sequence"], json!(i), "{log:?}");
    }

    // Once the holder is gone (even by SIGKILL) the dir is free again.
    first.kill().await.unwrap();
    first.wait().await.unwrap();
    let (_again, _) = spawn(dir.path()).await;
}

#[tokio::test]
async fn a_start_on_a_busy_port_touches_no_data_dir() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    let parent = tempfile::tempdir().unwrap();
    let data = parent.path().join("data");
    // No --api-key: a start that got further would mint and write a dev key.
    let (ok, stdout, stderr) = run_to_end(&[
        "serve".as_ref(),
        "--listen".as_ref(),
        addr.as_ref(),
        "--data-dir".as_ref(),
        data.as_os_str(),
    ])
    .await;
    assert!(!ok);
    assert!(stderr.contains("cannot listen on"), "{stderr}");
    assert!(!stdout.contains("dev API key"), "{stdout}");
    assert!(!data.exists(), "nothing was created in the data dir");
    drop(busy);
}
