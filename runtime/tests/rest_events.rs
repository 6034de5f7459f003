//! The run log over SSE and long-poll, and the host event channel.

mod support;
use openwop::ids::project;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::rest::*;
use support::*;

/// Parses an SSE body into (id, event, data) frames; comments are skipped.
fn frames(body: &str) -> Vec<(Option<String>, String, Value)> {
    body.split("\n\n")
        .filter(|b| b.lines().any(|l| l.starts_with("data:")))
        .map(|block| {
            let mut id = None;
            let mut event = String::new();
            let mut data = String::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    id = Some(v.trim().to_owned());
                } else if let Some(v) = line.strip_prefix("event:") {
                    event = v.trim().to_owned();
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim_start());
                }
            }
            (
                id,
                event,
                serde_json::from_str(&data).expect("data is JSON"),
            )
        })
        .collect()
}

async fn sse(h: &TestHost, run_id: &str, query: &str, last: Option<&str>) -> reqwest::Response {
    let mut req = h
        .get(&format!("/runs/{}/events{query}", project(run_id)), KEY_A)
        .header("accept", "text/event-stream");
    if let Some(l) = last {
        req = req.header("last-event-id", l);
    }
    req.send().await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn sse_frames_carry_sequence_type_and_envelope_and_close_after_terminal() {
    let h = start().await;
    let run_id = h.create(KEY_A, "slow", json!({"ms": 150})).await;
    let r = sse(&h, &run_id, "", None).await;
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    // The body ends by itself once run.completed is sent.
    let body = tokio::time::timeout(Duration::from_secs(10), r.text())
        .await
        .expect("stream closes")
        .unwrap();
    let fs = frames(&body);
    let types: Vec<&str> = fs.iter().map(|f| f.1.as_str()).collect();
    assert_eq!(
        types,
        [
            "run.started",
            "node.started",
            "node.completed",
            "run.completed"
        ]
    );
    for (i, (id, event, data)) in fs.iter().enumerate() {
        assert_eq!(id.as_deref(), Some(i.to_string().as_str()));
        assert_eq!(data["sequence"], i as i64);
        assert_eq!(&data["type"], event.as_str());
        assert_eq!(data["runId"], run_id);
        assert_eq!(data["schemaVersion"], 3);
        let keys: Vec<&String> = data.as_object().unwrap().keys().collect();
        for k in &keys {
            assert!(
                [
                    "eventId",
                    "runId",
                    "type",
                    "payload",
                    "timestamp",
                    "sequence",
                    "schemaVersion",
                    "nodeId"
                ]
                .contains(&k.as_str()),
                "{k}"
            );
        }
        let findings = openwop_generated::validators::validate_run_event(data);
        assert!(findings.is_empty(), "{findings:?}");
    }
    assert_eq!(fs[0].2["payload"]["transport"], "rest");
    assert_eq!(fs[0].2["payload"]["owner"]["tenant"], "acme");
    assert_eq!(fs[3].2["payload"]["outputs"], json!({"waitedMs": 150}));
}

#[tokio::test(flavor = "multi_thread")]
async fn sse_last_event_id_resumes_strictly_after() {
    let h = start().await;
    let run_id = h.create(KEY_A, "echo", json!({"x": 1})).await;
    h.wait_status(KEY_A, &run_id, "completed").await;
    let body = sse(&h, &run_id, "", Some("0")).await.text().await.unwrap();
    let seqs: Vec<i64> = frames(&body)
        .iter()
        .map(|f| f.2["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, [1]);
    // At or past the end of a finished run: closes with no frames.
    let body = sse(&h, &run_id, "", Some("1")).await.text().await.unwrap();
    assert!(frames(&body).is_empty());
    let body = sse(&h, &run_id, "", Some("99")).await.text().await.unwrap();
    assert!(frames(&body).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn sse_malformed_last_event_id_is_400() {
    let h = start().await;
    let run_id = h.create(KEY_A, "echo", json!({})).await;
    for bad in ["abc", "-1", "1.5"] {
        let (status, body) = envelope(sse(&h, &run_id, "", Some(bad)).await).await;
        assert_eq!(
            (status, body["error"].as_str().unwrap()),
            (400, "validation_error"),
            "{bad}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sse_tolerates_resumable_and_updates_stream_mode() {
    let h = start().await;
    let run_id = h.create(KEY_A, "echo", json!({})).await;
    let r = sse(&h, &run_id, "?resumable=true&streamMode=updates", None).await;
    assert_eq!(r.status(), 200);
    let fs = frames(&r.text().await.unwrap());
    assert_eq!(fs.last().unwrap().1, "run.completed");
}

#[tokio::test(flavor = "multi_thread")]
async fn sse_unknown_stream_mode_is_400_unsupported_stream_mode() {
    let h = start().await;
    let run_id = h.create(KEY_A, "echo", json!({})).await;
    let (status, body) = envelope(sse(&h, &run_id, "?streamMode=telepathy", None).await).await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (400, "unsupported_stream_mode")
    );
    assert_eq!(body["details"]["supported"], json!(["updates"]));
}

#[tokio::test(flavor = "multi_thread")]
async fn sse_live_tail_delivers_events_as_they_happen() {
    let h = start().await;
    let run_id = h.create(KEY_A, "approval", json!({})).await;
    h.wait_status(KEY_A, &run_id, "waiting-approval").await;
    // After the suspension (run.started, node.started, interrupt.requested, node.suspended).
    let stream = sse(&h, &run_id, "", Some("3")).await;
    let path = format!("/runs/{}/interrupts/approve", project(&run_id));
    let resolver = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        h.post(&path, KEY_A, json!({"resumeValue": {"action": "accept"}}))
            .send()
            .await
            .unwrap()
            .status()
    };
    let (body, status) = tokio::join!(
        tokio::time::timeout(Duration::from_secs(10), stream.text()),
        resolver
    );
    assert_eq!(status, 200);
    let types: Vec<String> = frames(&body.unwrap().unwrap())
        .into_iter()
        .map(|f| f.1)
        .collect();
    assert_eq!(
        types,
        ["interrupt.resolved", "node.completed", "run.completed"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn poll_shape_is_closed_and_waits_for_new_events() {
    let h = start().await;
    let run_id = h.create(KEY_A, "approval", json!({})).await;
    h.wait_status(KEY_A, &run_id, "waiting-approval").await;
    let base = format!("/runs/{}/events/poll", project(&run_id));
    let v: Value = h
        .get(&format!("{base}?timeout=1"), KEY_A)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        ["events", "isTerminal", "lastSequence", "runId", "status"]
    );
    assert_eq!(v["lastSequence"], 3);
    assert_eq!(v["status"], "waiting-approval");
    assert_eq!(v["isTerminal"], false);
    // Past the end: waits, then answers empty; lastSequence is still where the log stands.
    let started = Instant::now();
    let v: Value = h
        .get(&format!("{base}?afterSequence=3&timeout=1"), KEY_A)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(900));
    assert_eq!(v["events"], json!([]));
    assert_eq!(v["lastSequence"], 3);
    // A waiting poll returns as soon as an event lands.
    let path = format!("/runs/{}/interrupts/approve", project(&run_id));
    let poll = h
        .get(&format!("{base}?afterSequence=3&timeout=30"), KEY_A)
        .send();
    let resolve = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        h.post(&path, KEY_A, json!({"resumeValue": {"action": "accept"}}))
            .send()
            .await
            .unwrap()
    };
    let started = Instant::now();
    let (poll, _) = tokio::join!(poll, resolve);
    assert!(started.elapsed() < Duration::from_secs(10));
    let v: Value = poll.unwrap().json().await.unwrap();
    assert_eq!(v["events"][0]["type"], "interrupt.resolved");
    assert_eq!(v["events"][0]["sequence"], 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn poll_bad_parameters_are_400() {
    let h = start().await;
    let run_id = h.create(KEY_A, "echo", json!({})).await;
    for q in [
        "afterSequence=x",
        "afterSequence=-5",
        "timeout=61",
        "timeout=soon",
    ] {
        let r = h
            .get(
                &format!("/runs/{}/events/poll?{q}", project(&run_id)),
                KEY_A,
            )
            .send()
            .await
            .unwrap();
        assert_eq!(envelope(r).await.0, 400, "{q}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sequences_start_at_zero_without_gaps() {
    let h = start().await;
    let run_id = h.create(KEY_A, "approval", json!({})).await;
    h.wait_status(KEY_A, &run_id, "waiting-approval").await;
    h.post(
        &format!("/runs/{}/interrupts/approve", project(&run_id)),
        KEY_A,
        json!({"resumeValue": {"action": "accept"}}),
    )
    .send()
    .await
    .unwrap();
    h.wait_status(KEY_A, &run_id, "completed").await;
    let v: Value = h
        .get(
            &format!("/runs/{}/events/poll?timeout=1", project(&run_id)),
            KEY_A,
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let seqs: Vec<i64> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, (0..seqs.len() as i64).collect::<Vec<_>>());
    for e in v["events"].as_array().unwrap() {
        let findings = openwop_generated::validators::validate_run_event(e);
        assert!(findings.is_empty(), "{e}: {findings:?}");
    }
    assert_eq!(v["isTerminal"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn host_events_are_tenant_scoped() {
    let h = start().await;
    let payload = json!({"protocol": "a2a", "peer": "abababababababababababababababababababababababababababababababab", "negotiated": "1.0", "outcome": "accepted", "reason": "ok", "at": "2026-12-02T00:00:00Z"});
    h.ops
        .emit_host_event("acme", "negotiation.decided", "durable", payload.clone())
        .await
        .unwrap();
    h.ops
        .emit_host_event("other", "negotiation.decided", "durable", payload)
        .await
        .unwrap();
    let v: Value = h
        .get("/host/events", KEY_A)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let events = v["events"].as_array().unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["tenant"], "acme");
    assert_eq!(events[0]["delivery"], "durable");
    assert_eq!(events[0]["type"], "negotiation.decided");
    let findings = openwop_generated::validators::validate_host_event(&events[0]);
    assert!(findings.is_empty(), "{findings:?}");
    let (status, _) = envelope(
        h.http
            .get(format!("{}/host/events", h.base))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 401);
}

#[tokio::test(flavor = "multi_thread")]
async fn host_events_sse_sends_durable_with_id_and_ephemeral_live() {
    let h = start().await;
    h.ops
        .emit_host_event(
            "acme",
            "negotiation.decided",
            "durable",
            json!({"protocol": "mcp", "peer": "abababababababababababababababababababababababababababababababab", "negotiated": null, "outcome": "refused", "reason": "unsupported", "at": "2026-12-02T00:00:00Z"}),
        )
        .await
        .unwrap();
    let mut r = h
        .get("/host/events", KEY_A)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let ops = h.ops.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        ops.emit_host_event("other", "example.pinged", "ephemeral", json!({}))
            .await
            .unwrap();
        ops.emit_host_event("acme", "example.pinged", "ephemeral", json!({"n": 1}))
            .await
            .unwrap();
    });
    let mut text = String::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while frames(&text).len() < 2 {
        assert!(Instant::now() < deadline, "no second frame: {text}");
        let chunk = tokio::time::timeout(Duration::from_secs(10), r.chunk())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let fs = frames(&text);
    assert_eq!(fs[0].1, "negotiation.decided");
    assert!(fs[0].0.is_some(), "durable events carry an id");
    assert_eq!(fs[1].1, "example.pinged");
    assert!(fs[1].0.is_none(), "ephemeral events carry no id");
    assert_eq!(fs[1].2["payload"], json!({"n": 1}));
}

/// Every bundled workflow's events fit the corpus schemas, whatever the kind of node.
#[tokio::test(flavor = "multi_thread")]
async fn every_bundled_workflow_emits_valid_events() {
    let h = start().await;
    for (wf, inputs, end) in [
        ("echo", json!({"a": 1}), "completed"),
        ("slow", json!({"ms": 1}), "completed"),
        ("fail", json!({}), "failed"),
        ("approval", json!({}), "waiting-approval"),
        ("clarify", json!({}), "waiting-input"),
        ("credential", json!({}), "waiting-input"),
        ("external", json!({}), "waiting-external"),
    ] {
        let run_id = h.create(KEY_A, wf, inputs).await;
        h.wait_status(KEY_A, &run_id, end).await;
        if end.starts_with("waiting") {
            let node = h.snapshot(KEY_A, &run_id).await["interrupts"][0]["nodeId"]
                .as_str()
                .unwrap()
                .to_owned();
            let value = match wf {
                "credential" => json!({"outcome": "authorized"}),
                "approval" => json!({"action": "accept"}),
                _ => json!("ok"),
            };
            let r = h
                .post(
                    &format!("/runs/{}/interrupts/{node}", project(&run_id)),
                    KEY_A,
                    json!({"resumeValue": value}),
                )
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200, "{wf}");
            h.wait_status(KEY_A, &run_id, "completed").await;
        }
        for e in &h.events(KEY_A, &run_id).await {
            let findings = openwop_generated::validators::validate_run_event(e);
            assert!(findings.is_empty(), "{wf}: {e}: {findings:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn host_events_sse_resumes_after_last_event_id() {
    let h = start().await;
    let mut ids = Vec::new();
    for i in 0..3 {
        let ev = h.ops.emit_host_event("acme", "negotiation.decided", "durable", json!({"protocol": "a2a", "peer": "abababababababababababababababababababababababababababababababab", "outcome": "accepted", "reason": "ok", "at": "2026-12-02T00:00:00Z", "negotiated": format!("1.{i}")})).await.unwrap();
        ids.push(ev.event_id);
    }
    let mut r = h
        .get("/host/events", KEY_A)
        .header("accept", "text/event-stream")
        .header("last-event-id", &ids[0])
        .send()
        .await
        .unwrap();
    let mut text = String::new();
    while frames(&text).len() < 2 {
        let chunk = tokio::time::timeout(Duration::from_secs(10), r.chunk())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let got: Vec<String> = frames(&text).into_iter().map(|f| f.0.unwrap()).collect();
    assert_eq!(got, ids[1..]);
    // An id from another tenant (or none at all) is refused.
    let other = h
        .ops
        .emit_host_event(
            "other",
            "negotiation.decided",
            "durable",
            json!({"protocol": "a2a", "peer": "abababababababababababababababababababababababababababababababab", "negotiated": "1.0", "outcome": "accepted", "reason": "ok", "at": "2026-12-02T00:00:00Z"}),
        )
        .await
        .unwrap();
    let r = h
        .get("/host/events", KEY_A)
        .header("accept", "text/event-stream")
        .header("last-event-id", &other.event_id)
        .send()
        .await
        .unwrap();
    assert_eq!(envelope(r).await.0, 400);
}
