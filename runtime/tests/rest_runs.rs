//! createRun, getRun, listRuns, cancelRun and interrupt resolution over real HTTP.

mod support;
use openwop::ids::project;
use serde_json::{Value, json};
use support::rest::*;
use support::*;

#[tokio::test(flavor = "multi_thread")]
async fn create_echo_completes_with_outputs_equal_to_inputs() {
    let h = start().await;
    let r = h
        .post(
            "/runs",
            KEY_A,
            json!({"workflowId": "echo", "inputs": {"a": 1, "b": [true]}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let v: Value = r.json().await.unwrap();
    let run_id = v["runId"].as_str().unwrap();
    assert!(run_id.starts_with("acme/"));
    assert_eq!(v["eventsUrl"], format!("/runs/{}/events", project(run_id)));
    let snap = h.wait_status(KEY_A, run_id, "completed").await;
    assert_eq!(snap["outputs"], json!({"a": 1, "b": [true]}));
    assert_eq!(snap["owner"]["tenant"], "acme");
    assert_eq!(snap["owner"]["subject"]["lane"], "api-key");
    assert_eq!(snap["eventLogSchemaVersion"], 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn create_body_is_closed_unknown_field_is_validation_error() {
    let h = start().await;
    let r = h
        .post(
            "/runs",
            KEY_A,
            json!({"workflowId": "echo", "inputs": {}, "surprise": 1}),
        )
        .send()
        .await
        .unwrap();
    let (status, body) = envelope(r).await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (400, "validation_error")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn create_unknown_workflow_is_404_not_found() {
    let h = start().await;
    let r = h
        .post("/runs", KEY_A, json!({"workflowId": "no-such-flow"}))
        .send()
        .await
        .unwrap();
    let (status, body) = envelope(r).await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (404, "not_found")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn create_inputs_are_checked_against_the_input_schema() {
    let h = start().await;
    let r = h
        .post(
            "/runs",
            KEY_A,
            json!({"workflowId": "slow", "inputs": {"ms": "soon"}}),
        )
        .send()
        .await
        .unwrap();
    let (status, body) = envelope(r).await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (400, "validation_error")
    );
    assert!(
        !body["details"]["errors"].as_array().unwrap().is_empty(),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn idempotency_key_replays_same_run_and_refuses_a_different_body() {
    let h = start().await;
    let body = json!({"workflowId": "echo", "inputs": {"n": 1}});
    let first = h
        .post("/runs", KEY_A, body.clone())
        .header("idempotency-key", "k-1")
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), 201);
    assert!(first.headers().get("openwop-idempotent-replay").is_none());
    let first: Value = first.json().await.unwrap();
    let again = h
        .post("/runs", KEY_A, body.clone())
        .header("idempotency-key", "k-1")
        .send()
        .await
        .unwrap();
    assert_eq!(again.headers()["openwop-idempotent-replay"], "true");
    let again: Value = again.json().await.unwrap();
    assert_eq!(first["runId"], again["runId"]);
    // Another tenant using the same key gets its own run.
    let other = h
        .post("/runs", KEY_B, body)
        .header("idempotency-key", "k-1")
        .send()
        .await
        .unwrap();
    assert!(other.headers().get("openwop-idempotent-replay").is_none());
    let r = h
        .post(
            "/runs",
            KEY_A,
            json!({"workflowId": "echo", "inputs": {"n": 2}}),
        )
        .header("idempotency-key", "k-1")
        .send()
        .await
        .unwrap();
    let (status, err) = envelope(r).await;
    assert_eq!(
        (status, err["error"].as_str().unwrap()),
        (409, "idempotency_key_mismatch")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn get_run_accepts_tilde_and_percent_projections() {
    let h = start().await;
    let run_id = h.create(KEY_A, "echo", json!({})).await;
    let tilde = h
        .get(&format!("/runs/{}", project(&run_id)), KEY_A)
        .send()
        .await
        .unwrap();
    assert_eq!(tilde.status(), 200);
    let percent = h
        .get(&format!("/runs/{}", run_id.replace('/', "%2F")), KEY_A)
        .send()
        .await
        .unwrap();
    assert_eq!(percent.status(), 200);
    let v: Value = percent.json().await.unwrap();
    assert_eq!(v["runId"], run_id);
}

#[tokio::test(flavor = "multi_thread")]
async fn get_run_bad_id_grammar_is_validation_error() {
    let h = start().await;
    for bad in ["acme", "acme~2Fshort", "acme~ZZ0123456789abcdef", "acme%2"] {
        let (status, body) =
            envelope(h.get(&format!("/runs/{bad}"), KEY_A).send().await.unwrap()).await;
        assert_eq!(
            (status, body["error"].as_str().unwrap()),
            (400, "validation_error"),
            "{bad}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn get_run_in_own_tenant_that_does_not_exist_is_404() {
    let h = start().await;
    let (status, body) = envelope(
        h.get("/runs/acme~2F0123456789abcdefXYZ", KEY_A)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (404, "not_found")
    );
}

/// A foreign tenant's existing run and a never-existing one answer byte-identically.
#[tokio::test(flavor = "multi_thread")]
async fn cross_tenant_probes_are_403_id_tenant_mismatch_and_identical() {
    let h = start().await;
    let existing = h.create(KEY_A, "approval", json!({})).await;
    h.wait_status(KEY_A, &existing, "waiting-approval").await;
    let never = "acme/NeverExisted0123456789";
    type Probe<'a> = Box<dyn Fn(&str) -> reqwest::RequestBuilder + 'a>;
    let probes: Vec<(&str, Probe<'_>)> = vec![
        (
            "get",
            Box::new(|id: &str| h.get(&format!("/runs/{}", project(id)), KEY_B)),
        ),
        (
            "cancel",
            Box::new(|id: &str| h.post(&format!("/runs/{}/cancel", project(id)), KEY_B, json!({}))),
        ),
        (
            "resolve",
            Box::new(|id: &str| {
                h.post(
                    &format!("/runs/{}/interrupts/approve", project(id)),
                    KEY_B,
                    json!({"resumeValue": 1}),
                )
            }),
        ),
        (
            "events",
            Box::new(|id: &str| h.get(&format!("/runs/{}/events", project(id)), KEY_B)),
        ),
        (
            "poll",
            Box::new(|id: &str| {
                h.get(
                    &format!("/runs/{}/events/poll?timeout=1", project(id)),
                    KEY_B,
                )
            }),
        ),
    ];
    for (name, probe) in probes {
        let a = probe(&existing).send().await.unwrap();
        let b = probe(never).send().await.unwrap();
        assert_eq!(a.status(), 403, "{name}");
        assert_eq!(a.status(), b.status(), "{name}");
        let (ta, tb) = (a.text().await.unwrap(), b.text().await.unwrap());
        assert_eq!(ta, tb, "{name}");
        let v: Value = serde_json::from_str(&ta).unwrap();
        assert_eq!(v["error"], "id_tenant_mismatch");
    }
    // The run is untouched by the probes.
    assert_eq!(
        h.snapshot(KEY_A, &existing).await["status"],
        "waiting-approval"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn get_run_etag_and_if_none_match_304() {
    let h = start().await;
    let run_id = h.create(KEY_A, "approval", json!({})).await;
    h.wait_status(KEY_A, &run_id, "waiting-approval").await;
    let path = format!("/runs/{}", project(&run_id));
    let r = h.get(&path, KEY_A).send().await.unwrap();
    let etag = r.headers()["etag"].to_str().unwrap().to_owned();
    assert!(etag.starts_with('"'));
    let r = h
        .get(&path, KEY_A)
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 304);
    assert_eq!(r.headers()["openwop-version"], "2.0");
    // A new event changes the ETag.
    h.post(&format!("{path}/cancel"), KEY_A, json!({}))
        .send()
        .await
        .unwrap();
    let r = h
        .get(&path, KEY_A)
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn list_runs_newest_first_filters_limit_and_cursor() {
    let h = start().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(h.create(KEY_A, "echo", json!({"i": i})).await);
    }
    let approval = h.create(KEY_A, "approval", json!({})).await;
    h.create(KEY_B, "echo", json!({})).await;
    h.wait_status(KEY_A, &approval, "waiting-approval").await;

    let v: Value = h
        .get("/runs", KEY_A)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let listed: Vec<&str> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["runId"].as_str().unwrap())
        .collect();
    assert_eq!(listed.len(), 6, "only the caller's tenant");
    assert_eq!(listed[0], approval, "newest first");
    assert_eq!(listed[5], ids[0]);

    let v: Value = h
        .get("/runs?workflowId=approval", KEY_A)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 1);
    let v: Value = h
        .get("/runs?status=waiting-approval", KEY_A)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["runs"][0]["runId"], approval);

    // Pages of two, following the cursor to the end.
    let mut seen = Vec::new();
    let mut url = "/runs?limit=2".to_owned();
    loop {
        let v: Value = h
            .get(&url, KEY_A)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let page = v["runs"].as_array().unwrap();
        assert!(page.len() <= 2);
        seen.extend(page.iter().map(|r| r["runId"].as_str().unwrap().to_owned()));
        match v["nextCursor"].as_str() {
            Some(c) => url = format!("/runs?limit=2&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(seen, listed);

    // The cursor is bound to the tenant that got it.
    let v: Value = h
        .get("/runs?limit=2", KEY_A)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let cursor = v["nextCursor"].as_str().unwrap();
    let (status, body) = envelope(
        h.get(&format!("/runs?cursor={cursor}"), KEY_B)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (400, "validation_error")
    );
    let (status, _) = envelope(h.get("/runs?cursor=garbage!", KEY_A).send().await.unwrap()).await;
    assert_eq!(status, 400);
}

#[tokio::test(flavor = "multi_thread")]
async fn list_runs_limit_is_capped_at_max_page_size() {
    let h = start().await;
    let max = openwop::ops::MAX_PAGE_SIZE;
    for _ in 0..(max + 2) {
        h.ops
            .create_run(
                &subject_a(),
                serde_json::from_value(json!({"workflowId": "echo"})).unwrap(),
                openwop::ops::Transport::Rest,
                None,
            )
            .await
            .unwrap();
    }
    let v: Value = h
        .get(&format!("/runs?limit={}", max * 5), KEY_A)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), max);
    assert!(v["nextCursor"].is_string());
    let (status, _) = envelope(h.get("/runs?limit=0", KEY_A).send().await.unwrap()).await;
    assert_eq!(status, 400);
}

fn subject_a() -> openwop::identity::Subject {
    support::keys::key_ring()
        .authenticate(Some(&format!("Bearer {KEY_A}")))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_returns_run_and_status_then_409_run_terminal() {
    let h = start().await;
    let run_id = h.create(KEY_A, "slow", json!({"ms": 60000})).await;
    h.wait_status(KEY_A, &run_id, "running").await;
    let path = format!("/runs/{}/cancel", project(&run_id));
    let r = h
        .post(&path, KEY_A, json!({"reason": "test-over"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v, json!({"runId": run_id, "status": "cancelled"}));
    let (status, body) = envelope(h.post(&path, KEY_A, json!({})).send().await.unwrap()).await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (409, "run_terminal")
    );
    // Completed runs are terminal too; cancel with no body at all is accepted.
    let done = h.create(KEY_A, "echo", json!({})).await;
    h.wait_status(KEY_A, &done, "completed").await;
    let r = h
        .http
        .post(format!("{}/runs/{}/cancel", h.base, project(&done)))
        .bearer_auth(KEY_A)
        .send()
        .await
        .unwrap();
    assert_eq!(envelope(r).await.0, 409);
    // The cancelled event carries the reason.
    let events = h.events(KEY_A, &run_id).await;
    let last = events.last().unwrap().clone();
    assert_eq!(last["type"], "run.cancelled");
    assert_eq!(last["payload"]["reason"], "test-over");
    assert!(last["payload"]["durationMs"].is_i64());
}

/// Issue #33: a GET of an unchanged run is answered from what the last GET made (kept
/// under the run's detail stamp); the answer after a change's own answer is the changed
/// run, every time, with a new ETag.
#[tokio::test(flavor = "multi_thread")]
async fn a_polled_run_shows_each_change_once_the_change_is_answered() {
    let h = start().await;
    for _ in 0..10 {
        let run_id = h.create(KEY_A, "approval", json!({})).await;
        h.wait_status(KEY_A, &run_id, "waiting-approval").await;
        let path = format!("/runs/{}", project(&run_id));
        let read = |etag: Option<String>| {
            let mut req = h.get(&path, KEY_A);
            if let Some(etag) = etag {
                req = req.header("if-none-match", etag);
            }
            async move {
                let r = req.send().await.unwrap();
                let status = r.status().as_u16();
                let etag = r.headers()["etag"].to_str().unwrap().to_owned();
                (status, etag, r.bytes().await.unwrap())
            }
        };
        let (s1, etag1, body1) = read(None).await;
        let (s2, etag2, body2) = read(None).await;
        assert_eq!((s1, s2), (200, 200));
        assert_eq!((&etag1, &body1), (&etag2, &body2), "an unchanged run");
        assert_eq!(read(Some(etag1.clone())).await.0, 304);
        let r = h
            .post(
                &format!("{path}/interrupts/approve"),
                KEY_A,
                json!({"resumeValue": {"action": "accept"}}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let (s3, etag3, body3) = read(Some(etag1.clone())).await;
        assert_eq!(s3, 200, "the resolution changed the run");
        assert_ne!(etag3, etag1);
        let v: Value = serde_json::from_slice(&body3).unwrap();
        assert_ne!(v["status"], "waiting-approval", "{v}");
        assert!(
            v["interrupts"].as_array().is_none_or(|i| i.is_empty()),
            "{v}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn resolve_interrupt_completes_run_then_409_interrupt_already_resolved() {
    let h = start().await;
    let run_id = h.create(KEY_A, "approval", json!({})).await;
    let snap = h.wait_status(KEY_A, &run_id, "waiting-approval").await;
    assert_eq!(snap["interrupts"][0]["kind"], "approval");
    let path = format!("/runs/{}/interrupts/approve", project(&run_id));
    let r = h
        .post(&path, KEY_A, json!({"resumeValue": {"action": "accept"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["runId"], run_id);
    assert_eq!(v["nodeId"], "approve");
    let snap = h.wait_status(KEY_A, &run_id, "completed").await;
    assert_eq!(snap["outputs"]["decision"], json!({"action": "accept"}));
    let (status, body) = envelope(
        h.post(&path, KEY_A, json!({"resumeValue": 1}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (409, "interrupt_already_resolved")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn resolve_interrupt_at_a_node_without_one_is_404_interrupt_not_found_and_body_is_closed() {
    let h = start().await;
    let run_id = h.create(KEY_A, "approval", json!({})).await;
    h.wait_status(KEY_A, &run_id, "waiting-approval").await;
    let base = format!("/runs/{}/interrupts", project(&run_id));
    let (status, body) = envelope(
        h.post(
            &format!("{base}/elsewhere"),
            KEY_A,
            json!({"resumeValue": 1}),
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (404, "interrupt_not_found")
    );
    let (status, _) = envelope(
        h.post(
            &format!("{base}/approve"),
            KEY_A,
            json!({"resumeValue": 1, "x": 2}),
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 400);
    let (status, _) = envelope(
        h.post(&format!("{base}/approve"), KEY_A, json!({}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400);
}

#[tokio::test(flavor = "multi_thread")]
async fn resolve_interrupt_after_cancel_is_409() {
    let h = start().await;
    let run_id = h.create(KEY_A, "approval", json!({})).await;
    h.wait_status(KEY_A, &run_id, "waiting-approval").await;
    h.post(
        &format!("/runs/{}/cancel", project(&run_id)),
        KEY_A,
        json!({}),
    )
    .send()
    .await
    .unwrap();
    let r = h
        .post(
            &format!("/runs/{}/interrupts/approve", project(&run_id)),
            KEY_A,
            json!({"resumeValue": 1}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(envelope(r).await.1["error"], "interrupt_already_resolved");
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_resolves_exactly_one_wins() {
    let h = start().await;
    let run_id = h.create(KEY_A, "approval", json!({})).await;
    h.wait_status(KEY_A, &run_id, "waiting-approval").await;
    let path = format!("/runs/{}/interrupts/approve", project(&run_id));
    let sends = (0..8).map(|i| {
        h.post(
            &path,
            KEY_A,
            json!({"resumeValue": {"action": "accept", "n": i}}),
        )
        .send()
    });
    let results = futures::future::join_all(sends).await;
    let codes: Vec<u16> = results
        .into_iter()
        .map(|r| r.unwrap().status().as_u16())
        .collect();
    assert_eq!(codes.iter().filter(|c| **c == 200).count(), 1, "{codes:?}");
    assert_eq!(codes.iter().filter(|c| **c == 409).count(), 7, "{codes:?}");
    let snap = h.wait_status(KEY_A, &run_id, "completed").await;
    let events = h.events(KEY_A, &run_id).await;
    let resolved = events
        .iter()
        .filter(|e| e["type"] == "interrupt.resolved")
        .count();
    assert_eq!(resolved, 1);
    assert!(snap["outputs"]["decision"]["n"].is_i64());
}

#[tokio::test(flavor = "multi_thread")]
async fn interrupt_kinds_map_to_their_waiting_statuses() {
    let h = start().await;
    for (wf, status, kind) in [
        ("clarify", "waiting-input", "clarification"),
        ("credential", "waiting-input", "credential"),
        ("external", "waiting-external", "external-event"),
    ] {
        let run_id = h.create(KEY_A, wf, json!({})).await;
        let snap = h.wait_status(KEY_A, &run_id, status).await;
        assert_eq!(snap["interrupts"][0]["kind"], kind, "{wf}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn credential_interrupt_carries_https_connect_url_and_checks_resume_value() {
    let h = start().await;
    let run_id = h.create(KEY_A, "credential", json!({})).await;
    h.wait_status(KEY_A, &run_id, "waiting-input").await;
    let events = h.events(KEY_A, &run_id).await;
    let req = events
        .iter()
        .find(|e| e["type"] == "interrupt.requested")
        .unwrap()
        .clone();
    assert!(
        req["payload"]["data"]["connectUrl"]
            .as_str()
            .unwrap()
            .starts_with("https://")
    );
    assert_eq!(req["payload"]["kind"], "credential");
    let path = format!("/runs/{}/interrupts/connect", project(&run_id));
    let (status, _) = envelope(
        h.post(&path, KEY_A, json!({"resumeValue": {"outcome": "maybe"}}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400);
    let r = h
        .post(
            &path,
            KEY_A,
            json!({"resumeValue": {"outcome": "declined"}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let snap = h.wait_status(KEY_A, &run_id, "failed").await;
    assert_eq!(snap["error"]["code"], "connector_auth_declined");
}

#[tokio::test(flavor = "multi_thread")]
async fn fail_workflow_ends_failed_with_error() {
    let h = start().await;
    let run_id = h.create(KEY_A, "fail", json!({})).await;
    let snap = h.wait_status(KEY_A, &run_id, "failed").await;
    assert_eq!(snap["error"]["code"], "example.failed");
}

/// A resolve that lands while the executor is still finishing the suspend step must not
/// be dropped: every run completes.
#[tokio::test(flavor = "multi_thread")]
async fn resolving_right_after_suspend_always_completes() {
    let h = start().await;
    let mut runs = Vec::new();
    for _ in 0..20 {
        runs.push(h.create(KEY_A, "approval", json!({})).await);
    }
    for run_id in &runs {
        let path = format!("/runs/{}/interrupts/approve", project(run_id));
        // Retry 404 (not suspended yet) as fast as possible to hit the window.
        loop {
            let r = h
                .post(&path, KEY_A, json!({"resumeValue": {"action": "accept"}}))
                .send()
                .await
                .unwrap();
            if r.status() == 200 {
                break;
            }
            assert_eq!(r.status(), 404);
        }
    }
    for run_id in &runs {
        h.wait_status(KEY_A, run_id, "completed").await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_creates_with_one_idempotency_key_make_one_run() {
    let h = start().await;
    let body = json!({"workflowId": "echo", "inputs": {"same": true}});
    let sends = (0..8).map(|_| {
        h.post("/runs", KEY_A, body.clone())
            .header("idempotency-key", "burst")
            .send()
    });
    let mut ids = std::collections::HashSet::new();
    let mut replays = 0;
    for r in futures::future::join_all(sends).await {
        let r = r.unwrap();
        assert_eq!(r.status(), 201);
        if r.headers().get("openwop-idempotent-replay").is_some() {
            replays += 1;
        }
        let v: Value = r.json().await.unwrap();
        ids.insert(v["runId"].as_str().unwrap().to_owned());
    }
    assert_eq!(ids.len(), 1);
    assert_eq!(replays, 7);
}

/// Approval answers are checked against the interrupt's offered actions (interrupt.md: the
/// server enforces the allowed actions on resolve), as credential answers are: 400 naming
/// them, and the run keeps waiting; `timeout` is the host's own record, never an answer.
#[tokio::test(flavor = "multi_thread")]
async fn an_approval_answer_outside_its_offered_actions_is_400_naming_them() {
    let h = start().await;
    let run_id = h.create(KEY_A, "approval", json!({})).await;
    h.wait_status(KEY_A, &run_id, "waiting-approval").await;
    let path = format!("/runs/{}/interrupts/approve", project(&run_id));
    for bad in [
        json!({"action": "maybe"}),
        json!({"action": "timeout"}),
        json!("accept"),
        json!({}),
    ] {
        let (status, body) = envelope(
            h.post(&path, KEY_A, json!({"resumeValue": bad}))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(
            (status, body["error"].clone()),
            (400, json!("validation_error")),
            "{bad}: {body}"
        );
        let said = body["message"].as_str().unwrap();
        assert!(said.contains("\"accept\", \"reject\""), "{said}");
        assert_eq!(
            body["details"]["offeredActions"],
            json!(["accept", "reject"])
        );
    }
    let snap = h.snapshot(KEY_A, &run_id).await;
    assert_eq!(snap["status"], "waiting-approval", "{snap}");
    let r = h
        .post(
            &path,
            KEY_A,
            json!({"resumeValue": {"action": "reject", "note": "n"}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let snap = h.wait_status(KEY_A, &run_id, "completed").await;
    assert_eq!(snap["outputs"]["decision"]["action"], "reject");
}
