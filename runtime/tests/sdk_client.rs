//! The SDK (`openwop-sdk`, imported here as `openwop_generated`) against this host, with the
//! SDK's scripted host in between to lose answers on purpose: a retried `createRun` whose
//! first answer never arrived starts one run, paging follows the host's cursors, and an event
//! stream refused once with 503 resumes.

mod support;

use std::time::Duration;

use openwop_generated::client::testkit::{Reply, ScriptedHost};
use openwop_generated::client::{Client, RetryPolicy};
use serde_json::json;
use support::KEY_A;
use support::rest::start;

/// The scripted proxy on a loopback port below 32768.
async fn proxy() -> ScriptedHost {
    for port in 21000..21200 {
        if let Ok(host) = ScriptedHost::bind(("127.0.0.1", port)).await {
            return host;
        }
    }
    panic!("no free port in 21000..21200");
}

fn client(base: &str) -> Client {
    Client::builder(base)
        .api_key(KEY_A)
        .retry(RetryPolicy::default().initial_backoff(Duration::from_millis(10)))
        .build()
        .expect("client")
}

/// How many runs of `workflow` the tenant has, read straight from the host.
async fn runs_of(base: &str, workflow: &str) -> usize {
    let client = client(base);
    let mut runs = client.list_runs().workflow_id(workflow).limit(1).stream();
    let mut n = 0;
    while let Some(run) = runs.next().await {
        run.expect("listRuns page");
        n += 1;
    }
    n
}

#[tokio::test]
async fn a_create_run_whose_first_answer_is_lost_starts_one_run() {
    let h = start().await;
    let proxy = proxy().await;
    // The host acts on the first attempt, but its answer never reaches the client.
    proxy.on(
        "POST",
        "/runs",
        [Reply::forward_and_drop(&h.base), Reply::forward(&h.base)],
    );
    let created = client(proxy.url())
        .create_run()
        .workflow_id("echo")
        .inputs(json!({"n": 1}))
        .send()
        .await
        .expect("the retry answers");
    assert_eq!(proxy.hits("POST", "/runs"), 2);
    assert_eq!(created.openwop_idempotent_replay(), Some(true));
    let keys: Vec<_> = proxy
        .requests()
        .iter()
        .map(|r| r.header("idempotency-key").map(str::to_owned))
        .collect();
    assert!(keys[0].is_some() && keys[0] == keys[1], "{keys:?}");
    assert_eq!(runs_of(&h.base, "echo").await, 1);

    // The same loss with a 503 in between, and a key of the caller's own.
    proxy.on(
        "POST",
        "/runs",
        [
            Reply::forward_and_drop(&h.base),
            Reply::error(503, "service_unavailable", "restarting").header("Retry-After", "0"),
            Reply::forward(&h.base),
        ],
    );
    let again = client(proxy.url())
        .create_run()
        .workflow_id("echo")
        .inputs(json!({"n": 2}))
        .idempotency_key("order-42")
        .send()
        .await
        .expect("the third attempt answers");
    assert_eq!(again.openwop_idempotent_replay(), Some(true));
    assert_eq!(runs_of(&h.base, "echo").await, 2);
}

#[tokio::test]
async fn the_host_accepts_the_sdk_headers_and_pages_through_its_cursors() {
    let h = start().await;
    let client = client(&h.base);
    for n in 0..3 {
        client
            .create_run()
            .workflow_id("echo")
            .inputs(json!({ "n": n }))
            .send()
            .await
            .expect("create");
    }
    let mut pages = client.list_runs().limit(2).pages();
    let mut sizes = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.expect("page");
        assert_eq!(page.header("openwop-version"), Some("2.0"));
        sizes.push(page.runs.len());
    }
    assert_eq!(sizes, [2, 1]);
    // The host's own error, as a person reads it.
    let err = client
        .get_run("acme/run_0000000000000000")
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(404));
    assert!(err.to_string().starts_with("HTTP 404 not_found: "), "{err}");
    assert!(!err.is_retryable());
    // The id the host logged the request under, to quote in a report.
    let id = err.request_id().expect("the host names every request");
    assert!(id.starts_with("req_"), "{id}");
    assert!(
        err.to_string().ends_with(&format!("(request id {id})")),
        "{err}"
    );
}

#[tokio::test]
async fn an_event_stream_refused_once_with_503_resumes() {
    let h = start().await;
    let direct = client(&h.base);
    let created = direct
        .create_run()
        .workflow_id("echo")
        .inputs(json!({"n": 1}))
        .send()
        .await
        .expect("create");
    let done = direct
        .wait_until_terminal(&created.run_id)
        .await
        .expect("ends");
    let path = format!(
        "/runs/{}/events",
        openwop_generated::client::project_path_segment(&created.run_id)
    );
    let proxy = proxy().await;
    proxy.on(
        "GET",
        &path,
        [
            Reply::error(503, "service_unavailable", "restarting").header("Retry-After", "0"),
            Reply::forward(&h.base),
        ],
    );
    let client = client(proxy.url());
    let mut events = client
        .stream_run_events(&created.run_id)
        .send()
        .await
        .expect("opened after the 503");
    let mut names = Vec::new();
    while let Some(event) = events.next_event().await {
        let event = event.expect("event");
        assert_eq!(event.event, event.data.type_.to_string());
        names.push(event.event);
    }
    assert_eq!(names.first().map(String::as_str), Some("run.started"));
    assert_eq!(names.last().map(String::as_str), Some("run.completed"));
    assert!(proxy.hits("GET", &path) >= 2);
    let _ = done;
}

/// Author ids may hold `:` and `~` (`^[A-Za-z0-9._~:-]{1,128}$`); the SDK projects them
/// into their path segment like any id (`review~3Alegal`), and the host reads a nodeId
/// back through the same projection, as it does an agentId or a workflowId.
#[tokio::test]
async fn an_interrupt_at_a_node_whose_id_has_a_colon_is_resolved_through_the_sdk() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("sign-off.yaml"),
        r#"id: sign-off
name: Sign off
inputSchema: { type: object }
nodes:
  - id: "review:legal~1"
    kind: interrupt
    interrupt:
      kind: approval
      data:
        artifactId: "${run.id}"
        artifactType: run
        title: Sign off
        actions: [accept, reject]
"#,
    )
    .unwrap();
    let workflows = dir.path().to_path_buf();
    let h = support::rest::start_with(move |c| c.workflows_dir = Some(workflows)).await;
    let client = client(&h.base);
    let run = client
        .create_run()
        .workflow_id("sign-off")
        .send()
        .await
        .expect("created")
        .into_inner();
    let run_id = run.run_id.to_string();
    let waiting = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let snapshot = client.run_snapshot(&run_id).await.expect("snapshot");
            if !snapshot.interrupts.is_empty() {
                return snapshot;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the run waits");
    assert_eq!(waiting.interrupts[0].node_id.as_str(), "review:legal~1");
    client
        .resolve_interrupt(&run_id, "review:legal~1", json!({"action": "accept"}))
        .await
        .expect("resolved at the projected node id");
    let done = tokio::time::timeout(Duration::from_secs(10), client.wait_until_terminal(&run_id))
        .await
        .expect("finishes")
        .expect("snapshot");
    assert_eq!(done.status.as_str(), "completed");
}
