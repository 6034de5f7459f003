//! Kill the real `openwop` binary with SIGKILL mid-run and start it again on the same
//! data dir: nothing is lost, sequences stay contiguous, suspended runs stay suspended
//! and waiting runs finish.

mod support;

use openwop::ids::project;
use reqwest::Client;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::KEY_A;
use support::process;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

/// Starts the binary and returns it with its base URL (read from its stdout).
async fn spawn(dir: &std::path::Path) -> (Child, String) {
    process::start(dir).await
}

async fn get(c: &Client, url: String) -> Value {
    c.get(url)
        .bearer_auth(KEY_A)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn events(c: &Client, base: &str, run: &str) -> Vec<Value> {
    let v = get(
        c,
        format!("{base}/runs/{}/events/poll?timeout=0", project(run)),
    )
    .await;
    v["events"].as_array().unwrap().clone()
}

async fn wait_status(c: &Client, base: &str, run: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let v = get(c, format!("{base}/runs/{}", project(run))).await;
        if v["status"] == status {
            return v;
        }
        assert!(Instant::now() < deadline, "{run} stuck at {}", v["status"]);
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn assert_contiguous(evs: &[Value]) {
    let seqs: Vec<i64> = evs
        .iter()
        .map(|e| e["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, (0..seqs.len() as i64).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_mid_run_loses_nothing_and_runs_resume() {
    let dir = tempfile::tempdir().unwrap();
    let c = Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let (mut first, base) = spawn(dir.path()).await;

    let create = |wf: &str, inputs: Value| {
        let c = c.clone();
        let base = base.clone();
        let body = json!({"workflowId": wf, "inputs": inputs});
        async move {
            let v: Value = c
                .post(format!("{base}/runs"))
                .bearer_auth(KEY_A)
                .json(&body)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            v["runId"].as_str().unwrap().to_owned()
        }
    };
    let slow = create("slow", json!({"ms": 1500})).await;
    let approval = create("approval", json!({})).await;
    wait_status(&c, &base, &approval, "waiting-approval").await;
    // The wait has started (its deadline is stored) before the kill.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !events(&c, &base, &slow)
        .await
        .iter()
        .any(|e| e["type"] == "node.started")
    {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let before_slow = events(&c, &base, &slow).await;
    let before_approval = events(&c, &base, &approval).await;

    first.kill().await.unwrap(); // SIGKILL on unix
    first.wait().await.unwrap();

    let (_second, base) = spawn(dir.path()).await;
    // The suspended run is still suspended with the same log.
    let snap = wait_status(&c, &base, &approval, "waiting-approval").await;
    assert_eq!(snap["interrupts"][0]["nodeId"], "approve");
    assert_eq!(events(&c, &base, &approval).await, before_approval);
    // The waiting run goes on from its stored deadline and completes.
    let snap = wait_status(&c, &base, &slow, "completed").await;
    assert_eq!(snap["outputs"], json!({"waitedMs": 1500}));
    let after_slow = events(&c, &base, &slow).await;
    assert_eq!(
        &after_slow[..before_slow.len()],
        &before_slow[..],
        "no event lost or rewritten"
    );
    assert_contiguous(&after_slow);
    assert_eq!(
        after_slow
            .iter()
            .filter(|e| e["type"] == "run.started")
            .count(),
        1
    );
    assert_eq!(after_slow.last().unwrap()["type"], "run.completed");
    // And the suspended run can still be resumed on the new process.
    let r = c
        .post(format!(
            "{base}/runs/{}/interrupts/approve",
            project(&approval)
        ))
        .bearer_auth(KEY_A)
        .json(&json!({"resumeValue": {"action": "accept", "note": "after-restart"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    wait_status(&c, &base, &approval, "completed").await;
    assert_contiguous(&events(&c, &base, &approval).await);
    // Both runs are listed.
    let list = get(&c, format!("{base}/runs")).await;
    assert_eq!(list["runs"].as_array().unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn dev_key_is_printed_and_survives_restart() {
    let dir = tempfile::tempdir().unwrap();
    let read_key = |out: String| {
        out.lines()
            .find_map(|l| {
                l.strip_prefix("dev API key for tenant \"dev\": ")
                    .map(str::to_owned)
            })
            .expect("dev key line")
    };
    let mut keys = Vec::new();
    for _ in 0..2 {
        // No API key: the host makes a dev key and prints it.
        let mut child = process::serve(dir.path()).spawn().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut out = String::new();
        while let Ok(Some(line)) = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .unwrap()
        {
            out.push_str(&line);
            out.push('\n');
            if line.starts_with("openwop listening on") {
                break;
            }
        }
        keys.push(read_key(out));
        child.kill().await.unwrap();
    }
    assert_eq!(keys[0], keys[1]);
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_shuts_down_gracefully_with_an_open_stream() {
    let dir = tempfile::tempdir().unwrap();
    // The host's log is kept (drained as it comes, so the child never blocks on a full
    // pipe) and shown if the shutdown is slow: whether it waited out the grace for a
    // stream that did not end, or never began shutting down, is then on record.
    let mut command = process::serve_keyed(dir.path());
    command
        .env("RUST_LOG", "info")
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().expect("spawn openwop");
    let mut log_lines = BufReader::new(child.stderr.take().expect("stderr is piped")).lines();
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let kept = log.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = log_lines.next_line().await {
            let mut kept = kept.lock().unwrap();
            kept.push_str(&line);
            kept.push('\n');
        }
    });
    let (mut child, base) = process::listening(child).await;
    let c = Client::new();
    let v: Value = c
        .post(format!("{base}/runs"))
        .bearer_auth(KEY_A)
        .json(&json!({"workflowId": "approval"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let run = v["runId"].as_str().unwrap().to_owned();
    let stream = c
        .get(format!("{base}/runs/{}/events", project(&run)))
        .bearer_auth(KEY_A)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let pid = child.id().unwrap();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let signalled = Instant::now();
    // Longer than the shutdown grace (10 s), so a host that waits it out for a stream that
    // did not end is told apart from one that never stops.
    let exit = tokio::time::timeout(Duration::from_secs(25), child.wait()).await;
    let took = signalled.elapsed();
    let shown = || log.lock().unwrap().clone();
    let exit = match exit {
        Ok(exit) => exit.unwrap(),
        Err(_) => panic!(
            "still running {took:?} after SIGTERM; its log:\n{}",
            shown()
        ),
    };
    assert!(exit.success(), "{exit:?}; its log:\n{}", shown());
    // The open stream ends when shutdown begins; the grace is for requests in flight.
    assert!(
        took < Duration::from_secs(8),
        "took {took:?} to exit after SIGTERM; its log:\n{}",
        shown()
    );
}
