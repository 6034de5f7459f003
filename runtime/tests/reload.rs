//! `openwop serve` reloads api keys, tenant visibility and peer credentials on SIGHUP,
//! with the real binary: open streams survive, a broken file is refused and the old
//! configuration stays, settings read only at start are reported as needing a restart.

mod support;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt as _;
use serde_json::{Value, json};
use support::process::{self, BIN};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

const KEEP: &str = "acme-keep-key-0123456789";
const GONE: &str = "acme-gone-key-0123456789";
const NEW: &str = "acme-new-key-0123456789";

/// A running `openwop serve` with its config file, its base URL and its stderr so far.
struct Served {
    child: Child,
    base: String,
    config: PathBuf,
    stderr: Arc<Mutex<String>>,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

impl Served {
    async fn start(config: &str, dir: tempfile::TempDir) -> Served {
        let file = dir.path().join("openwop.yaml");
        std::fs::write(&file, config).unwrap();
        // Its keys come from the config file (the test reloads them); info logs as JSON.
        let mut child = process::serve(&dir.path().join("data"))
            .args(["--log-format", "json", "--config"])
            .arg(&file)
            .env("RUST_LOG", "openwop=info")
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let sink = stderr.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        let (child, base) = process::listening(child).await;
        Served {
            child,
            base,
            config: file,
            stderr,
            http: reqwest::Client::new(),
            _dir: dir,
        }
    }

    fn write_config(&self, text: &str) {
        std::fs::write(&self.config, text).unwrap();
    }

    fn hangup(&self) {
        let pid = self.child.id().expect("running").to_string();
        let ok = std::process::Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -HUP {pid}");
    }

    async fn reloads(&self, outcome: &str) -> u64 {
        let text = self
            .http
            .get(format!("{}/metrics", self.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let series = format!("openwop_config_reloads_total{{outcome=\"{outcome}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(series.as_str()))
            .unwrap_or_else(|| panic!("/metrics lacks {series}: {text}"))
            .trim()
            .parse()
            .unwrap()
    }

    /// Sends SIGHUP and waits until the reload counter of `outcome` has gone up.
    async fn reload(&self, outcome: &str) {
        let before = self.reloads(outcome).await;
        self.hangup();
        for _ in 0..200 {
            if self.reloads(outcome).await > before {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "no {outcome} reload after SIGHUP; stderr:\n{}",
            self.stderr()
        );
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    async fn status_of(&self, path: &str, key: &str) -> u16 {
        self.http
            .get(format!("{}{path}", self.base))
            .bearer_auth(key)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }

    async fn create(&self, key: &str, workflow: &str, inputs: Value) -> String {
        let r = self
            .http
            .post(format!("{}/runs", self.base))
            .bearer_auth(key)
            .json(&json!({"workflowId": workflow, "inputs": inputs}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201, "create {workflow}");
        r.json::<Value>().await.unwrap()["runId"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    async fn wait_status(&self, key: &str, run: &str, want: &[&str]) -> Value {
        for _ in 0..200 {
            let snap: Value = self
                .http
                .get(format!("{}/runs/{}", self.base, openwop::ids::project(run)))
                .bearer_auth(key)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if want.contains(&snap["status"].as_str().unwrap_or("")) {
                return snap;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("run {run} never reached {want:?}");
    }
}

fn keys_config(keys: &[&str], extra: &str) -> String {
    let keys: Vec<String> = keys.iter().map(|k| format!("\"acme:{k}\"")).collect();
    format!("apiKeys: [{}]\n{extra}", keys.join(", "))
}

/// Reads SSE frames off `body` until one of type `want` arrives; returns the types seen.
async fn read_until<B: AsRef<[u8]>>(
    body: &mut (impl futures::Stream<Item = reqwest::Result<B>> + Unpin),
    buffer: &mut String,
    want: &str,
) -> Vec<String> {
    let mut seen = Vec::new();
    tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            while let Some(end) = buffer.find("\n\n") {
                let frame: String = buffer.drain(..end + 2).collect();
                if let Some(t) = frame
                    .lines()
                    .find_map(|l| l.strip_prefix("event:"))
                    .map(|t| t.trim().to_owned())
                {
                    let done = t == want;
                    seen.push(t);
                    if done {
                        return;
                    }
                }
            }
            match body.next().await {
                Some(Ok(chunk)) => buffer.push_str(&String::from_utf8_lossy(chunk.as_ref())),
                Some(Err(e)) => panic!("the stream failed before {want}: {e}; saw {seen:?}"),
                None => panic!("the stream ended before {want}; saw {seen:?}"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {want} on the stream"));
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_added_and_a_key_removed_take_effect_on_sighup_while_an_open_stream_keeps_going() {
    let served = Served::start(
        &keys_config(&[KEEP, GONE], ""),
        tempfile::tempdir().unwrap(),
    )
    .await;
    assert_eq!(served.status_of("/runs", KEEP).await, 200);
    assert_eq!(served.status_of("/runs", GONE).await, 200);
    assert_eq!(served.status_of("/runs", NEW).await, 401);

    // A run waiting for approval, followed over SSE from before the reload.
    let run = served.create(KEEP, "approval", json!({})).await;
    served.wait_status(KEEP, &run, &["waiting-approval"]).await;
    let stream = served
        .http
        .get(format!(
            "{}/runs/{}/events",
            served.base,
            openwop::ids::project(&run)
        ))
        .bearer_auth(KEEP)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let mut body = stream.bytes_stream();
    let mut buffer = String::new();
    let before = read_until(&mut body, &mut buffer, "interrupt.requested").await;
    assert!(before.contains(&"run.started".to_owned()), "{before:?}");

    // GONE is removed, NEW added; the listen address changes too, which needs a restart.
    served.write_config(&keys_config(&[KEEP, NEW], "listen: 127.0.0.1:1\n"));
    served.reload("applied").await;
    assert_eq!(served.status_of("/runs", NEW).await, 200, "the added key");
    assert_eq!(
        served.status_of("/runs", GONE).await,
        401,
        "the removed key"
    );
    assert_eq!(served.status_of("/runs", KEEP).await, 200, "the kept key");
    let log = served.stderr();
    assert!(
        log.contains("needs a restart") && log.contains("\"key\":\"listen\""),
        "the listen change is reported as needing a restart: {log}"
    );

    // The stream opened before the reload still delivers: the new key resolves the
    // interrupt, and the old stream sees the run through to its end.
    let r = served
        .http
        .post(format!(
            "{}/runs/{}/interrupts/approve",
            served.base,
            openwop::ids::project(&run)
        ))
        .bearer_auth(NEW)
        .json(&json!({"resumeValue": {"action": "accept"}}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "resolve: {}", r.status());
    let after = read_until(&mut body, &mut buffer, "run.completed").await;
    assert!(after.contains(&"node.completed".to_owned()), "{after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_or_invalid_file_is_refused_and_the_old_keys_keep_working() {
    let served = Served::start(&keys_config(&[KEEP], ""), tempfile::tempdir().unwrap()).await;
    for broken in [
        // Not YAML at all.
        format!("apiKeys: [\"acme:{NEW}\"\n  - : :"),
        // An unknown key.
        keys_config(&[NEW], "apiKyes: []\n"),
        // A key too short to be one.
        keys_config(&["short"], ""),
        // Visibility naming a workflow the host does not have.
        keys_config(
            &[NEW],
            "tenants:\n  acme:\n    workflows: [no-such-workflow]\n",
        ),
    ] {
        served.write_config(&broken);
        served.reload("refused").await;
        assert_eq!(served.status_of("/runs", KEEP).await, 200, "{broken}");
        assert_eq!(served.status_of("/runs", NEW).await, 401, "{broken}");
    }
    let log = served.stderr();
    assert!(
        log.contains("config reload refused") && log.contains("\"level\":\"ERROR\""),
        "{log}"
    );
    assert!(
        log.contains("no-such-workflow"),
        "the reason is logged: {log}"
    );
    assert!(
        log.contains("shorter than 16"),
        "the reason is logged: {log}"
    );
    // A good file afterwards is applied.
    served.write_config(&keys_config(&[NEW], ""));
    served.reload("applied").await;
    assert_eq!(served.status_of("/runs", NEW).await, 200);
    assert_eq!(served.status_of("/runs", KEEP).await, 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenant_visibility_is_reloaded() {
    let served = Served::start(&keys_config(&[KEEP], ""), tempfile::tempdir().unwrap()).await;
    assert_eq!(served.status_of("/workflows/slow", KEEP).await, 200);
    served.write_config(&keys_config(
        &[KEEP],
        "tenants:\n  acme:\n    workflows: [echo]\n",
    ));
    served.reload("applied").await;
    assert_eq!(served.status_of("/workflows/slow", KEEP).await, 404);
    assert_eq!(served.status_of("/workflows/echo", KEEP).await, 200);
}

/// A service that records the Authorization header of every request it gets.
async fn recording_service() -> (u16, Arc<Mutex<Vec<String>>>) {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let s = seen.clone();
    let app = axum::Router::new().fallback(move |headers: axum::http::HeaderMap| {
        let s = s.clone();
        async move {
            let auth = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned();
            s.lock().unwrap().push(auth);
            axum::Json(json!({"ok": true}))
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (port, seen)
}

fn peer_config(workflows: &Path, port: u16, secret: &Path) -> String {
    keys_config(
        &[KEEP],
        &format!(
            "egressAllowLoopback: true\nworkflows: {}\npeers:\n  - id: svc\n    kind: http\n    url: http://127.0.0.1:{port}\n    credential: {{file: {}}}\n",
            workflows.display(),
            secret.display()
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_peer_credential_reaches_the_next_outbound_call() {
    let (port, seen) = recording_service().await;
    let dir = tempfile::tempdir().unwrap();
    let workflows = dir.path().join("workflows");
    std::fs::create_dir(&workflows).unwrap();
    std::fs::write(
        workflows.join("call.yaml"),
        "id: call\ninputSchema: {type: object}\nnodes:\n  - {id: get, kind: http, peer: svc, method: GET, path: /things}\noutputs: {status: \"${nodes.get.status}\"}\n",
    )
    .unwrap();
    let secret = dir.path().join("svc.key");
    std::fs::write(&secret, "svc-credential-first").unwrap();
    let config = peer_config(&workflows, port, &secret);
    let served = Served::start(&config, dir).await;

    let run = served.create(KEEP, "call", json!({})).await;
    let snap = served
        .wait_status(KEEP, &run, &["completed", "failed"])
        .await;
    assert_eq!(snap["status"], "completed", "{snap}");
    assert_eq!(
        seen.lock().unwrap().clone(),
        ["Bearer svc-credential-first"]
    );

    // Rotate the secret in its file; nothing else changes.
    std::fs::write(&secret, "svc-credential-second").unwrap();
    served.reload("applied").await;
    let run = served.create(KEEP, "call", json!({})).await;
    let snap = served
        .wait_status(KEEP, &run, &["completed", "failed"])
        .await;
    assert_eq!(snap["status"], "completed", "{snap}");
    assert_eq!(
        seen.lock().unwrap().clone(),
        [
            "Bearer svc-credential-first",
            "Bearer svc-credential-second"
        ]
    );

    // A peer a workflow needs cannot be taken away by a reload.
    served.write_config(&keys_config(&[KEEP], "egressAllowLoopback: true\n"));
    served.reload("refused").await;
    assert!(served.stderr().contains("svc"), "{}", served.stderr());
}

#[test]
fn serve_help_teaches_the_reload() {
    let out = std::process::Command::new(BIN)
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "kill -HUP",
        "needs a restart",
        "openwop_config_reloads_total",
    ] {
        assert!(text.contains(needle), "serve --help lacks {needle}");
    }
}

/// The usual rotation: the config file names a key file, and only the key file changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_rotated_in_the_api_key_file_take_effect_on_sighup() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    std::fs::write(&keys, format!("# acme's keys\nacme:{KEEP}\nacme:{GONE}\n")).unwrap();
    let config = format!("apiKeyFile: {}\n", keys.display());
    let served = Served::start(&config, dir).await;
    assert_eq!(served.status_of("/runs", GONE).await, 200);
    std::fs::write(&keys, format!("acme:{KEEP}\nacme:{NEW}\n")).unwrap();
    served.reload("applied").await;
    assert_eq!(served.status_of("/runs", NEW).await, 200);
    assert_eq!(served.status_of("/runs", GONE).await, 401);
    assert_eq!(served.status_of("/runs", KEEP).await, 200);
    // A key file emptied by mistake is refused; the keys in force stay.
    std::fs::write(&keys, "# nothing yet\n").unwrap();
    served.reload("refused").await;
    assert_eq!(served.status_of("/runs", NEW).await, 200);
    assert!(
        served.stderr().contains("holds no TENANT:KEY entry"),
        "{}",
        served.stderr()
    );
}
