//! createRun's `agentId`, `tags` and `metadata`: kept with the run and returned on its
//! snapshot (tags and metadata on `run.started` too), as the corpus says; an `agentId`
//! outside the caller's inventory, or one that does not route the workflow, is refused;
//! members the corpus does not list (`residency`, `scopeId`, `mode`, `evalSuiteRef`,
//! `configurable`) are refused like any unknown member.

mod support;
use serde_json::{Value, json};
use support::rest::*;
use support::*;

#[tokio::test(flavor = "multi_thread")]
async fn tags_metadata_and_agent_id_come_back_on_the_snapshot_and_run_started() {
    let h = start().await;
    let r = h
        .post(
            "/runs",
            KEY_A,
            json!({
                "workflowId": "echo", "inputs": {"x": 1}, "agentId": "workflow-runner",
                "tags": ["blue", "nightly"], "metadata": {"order": 42, "by": {"team": "ops"}},
            }),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let run_id = r.json::<Value>().await.unwrap()["runId"]
        .as_str()
        .unwrap()
        .to_owned();
    let snap = h.wait_status(KEY_A, &run_id, "completed").await;
    assert_eq!(snap["agentId"], "workflow-runner");
    assert_eq!(snap["tags"], json!(["blue", "nightly"]));
    assert_eq!(
        snap["metadata"],
        json!({"order": 42, "by": {"team": "ops"}})
    );
    let started = h
        .events(KEY_A, &run_id)
        .await
        .into_iter()
        .find(|e| e["type"] == "run.started")
        .expect("run.started");
    assert_eq!(started["payload"]["tags"], json!(["blue", "nightly"]));
    assert_eq!(started["payload"]["metadata"]["order"], 42);

    // A run created without them has none, and `outputs: {}` of a run with no outputs
    // is there, not left out.
    let plain = h.create(KEY_A, "echo", json!({})).await;
    let snap = h.wait_status(KEY_A, &plain, "completed").await;
    for absent in ["agentId", "tags", "metadata"] {
        assert!(snap.get(absent).is_none(), "{absent}: {snap}");
    }
    assert_eq!(snap["outputs"], json!({}));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_id_must_route_the_workflow_for_the_caller() {
    let h = start().await;
    for body in [
        json!({"workflowId": "echo", "agentId": "no-such-agent"}),
        // approvals-desk does not route echo.
        json!({"workflowId": "echo", "agentId": "approvals-desk"}),
    ] {
        let r = h.post("/runs", KEY_A, body.clone()).send().await.unwrap();
        let (status, envelope) = envelope(r).await;
        assert_eq!(
            (status, envelope["error"].as_str()),
            (400, Some("validation_error")),
            "{body}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn members_the_corpus_does_not_list_are_refused_and_tags_are_bounded() {
    let h = start().await;
    for (member, value) in [
        ("residency", json!({"region": "eu"})),
        ("scopeId", json!("s")),
        ("mode", json!("standard")),
        ("evalSuiteRef", json!("suite")),
        ("configurable", json!({})),
    ] {
        let mut body = json!({"workflowId": "echo"});
        body[member] = value;
        let r = h.post("/runs", KEY_A, body).send().await.unwrap();
        let (status, envelope) = envelope(r).await;
        assert_eq!(
            (status, envelope["error"].as_str()),
            (400, Some("validation_error")),
            "{member}"
        );
    }
    let many: Vec<String> = (0..101).map(|i| format!("t{i}")).collect();
    let r = h
        .post("/runs", KEY_A, json!({"workflowId": "echo", "tags": many}))
        .send()
        .await
        .unwrap();
    let (status, envelope) = envelope(r).await;
    assert_eq!(
        (status, envelope["error"].as_str()),
        (400, Some("validation_error"))
    );
    let long = "x".repeat(257);
    let r = h
        .post(
            "/runs",
            KEY_A,
            json!({"workflowId": "echo", "tags": [long]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
}
