//! Conformance mode (`openwop serve --conformance`): what it advertises, the fixture
//! workflows one by one, the host card's single skill, and a stock host left as it was.

mod support;
use serde_json::{Value, json};
use support::rest::*;
use support::*;

async fn conformance_host() -> TestHost {
    start_with(|c| c.conformance = true).await
}

async fn discovery(h: &TestHost, version_header: bool) -> Value {
    let mut req = h.http.get(format!("{}/.well-known/openwop", h.base));
    if version_header {
        req = req.header("OpenWOP-Version", "2.0");
    }
    let r = req.send().await.unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default().to_owned())
        .collect()
}

// ---- discovery ----------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn conformance_mode_advertises_fixtures_and_the_seams_profile_with_and_without_the_version_header()
 {
    let h = conformance_host().await;
    for with_header in [false, true] {
        let doc = discovery(&h, with_header).await;
        let fixtures: Vec<&str> = doc["fixtures"]
            .as_array()
            .expect("fixtures[] at the root")
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        assert_eq!(fixtures, openwop::conformance::fixture_ids());
        assert!(fixtures.contains(&"conformance-noop"));
        assert_eq!(
            doc["conformance"]["seamsProfile"],
            "openwop-conformance-seams-v2"
        );
        let obligations: Vec<&str> = doc["host"]["relaxations"]
            .as_array()
            .expect("relaxations")
            .iter()
            .map(|r| r["obligation"].as_str().unwrap())
            .collect();
        assert!(
            obligations.contains(&"conformance.test-mode"),
            "{obligations:?}"
        );
        assert!(
            obligations.contains(&"webhooks.egress-guard"),
            "loopback egress is said too: {obligations:?}"
        );
        let findings = openwop_generated::validators::validate_discovery(&doc, &Default::default());
        assert!(findings.is_empty(), "{findings:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stock_host_offers_no_fixture_no_seam_and_no_relaxation() {
    let h = start().await;
    for with_header in [false, true] {
        let doc = discovery(&h, with_header).await;
        assert!(doc.get("fixtures").is_none(), "{doc}");
        assert!(doc.get("conformance").is_none(), "{doc}");
        assert!(doc.get("host").is_none(), "{doc}");
    }
    // No fixture workflow is loaded.
    let r = h
        .post(
            "/runs",
            KEY_A,
            json!({"workflowId": "conformance-noop", "inputs": {}}),
        )
        .send()
        .await
        .unwrap();
    let (status, body) = envelope(r).await;
    assert_eq!(status, 404, "{body}");
    // The card keeps every bundled workflow as a skill, `clarify` the default.
    let card: Value = h
        .http
        .get(format!("{}/.well-known/agent-card.json", h.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let skills: Vec<&str> = card["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert!(
        skills.contains(&"clarify") && skills.contains(&"echo"),
        "{skills:?}"
    );
    assert!(!skills.iter().any(|s| s.starts_with("conformance-")));
}

#[tokio::test(flavor = "multi_thread")]
async fn seeding_is_idempotent_across_restarts_of_one_data_dir() {
    // Two hosts on one data dir in turn: the second start seeds the same fixtures again
    // and the first host's run is still there under its fixture.
    let dir = tempfile::tempdir().unwrap();
    let build = || {
        let mut c = support::keys::config(dir.path());
        c.conformance = true;
        c
    };
    let first = openwop::host::Host::build(build()).await.expect("first");
    let ids: Vec<String> = first
        .state
        .ops
        .list_workflows(
            &first
                .state
                .keys
                .authenticate(Some(&format!("Bearer {KEY_A}")))
                .unwrap(),
        )
        .iter()
        .map(|w| w.definition.id.to_string())
        .collect();
    let _ = first.stopper().send(true);
    drop(first);
    let second = openwop::host::Host::build(build()).await.expect("second");
    let again: Vec<String> = second
        .state
        .ops
        .list_workflows(
            &second
                .state
                .keys
                .authenticate(Some(&format!("Bearer {KEY_A}")))
                .unwrap(),
        )
        .iter()
        .map(|w| w.definition.id.to_string())
        .collect();
    assert_eq!(ids, again);
    for f in openwop::conformance::fixture_ids() {
        assert_eq!(ids.iter().filter(|i| *i == f).count(), 1, "{f} once");
    }
    let _ = second.stopper().send(true);
}

// ---- the fixtures -------------------------------------------------------------------

/// The data of the interrupt the run raised (its `interrupt.requested` event).
async fn requested_data(h: &TestHost, run: &str) -> Value {
    let events = h.events(KEY_A, run).await;
    let requested = events
        .iter()
        .find(|e| e["type"] == "interrupt.requested")
        .expect("interrupt.requested");
    requested["payload"]["data"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn fixture_noop_completes_with_started_and_completed_events() {
    let h = conformance_host().await;
    let run = h.create(KEY_A, "conformance-noop", json!({})).await;
    h.wait_status(KEY_A, &run, "completed").await;
    let k = kinds(&h.events(KEY_A, &run).await);
    assert_eq!(k.first().map(String::as_str), Some("run.started"), "{k:?}");
    assert!(k.contains(&"node.completed".to_owned()), "{k:?}");
    assert_eq!(k.last().map(String::as_str), Some("run.completed"), "{k:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn fixture_failure_fails_with_conformance_test_failure() {
    let h = conformance_host().await;
    let run = h.create(KEY_A, "conformance-failure", json!({})).await;
    let snap = h.wait_status(KEY_A, &run, "failed").await;
    assert_eq!(snap["error"]["code"], "conformance_test_failure", "{snap}");
    assert!(snap["error"]["message"].is_string());
    let k = kinds(&h.events(KEY_A, &run).await);
    assert!(k.contains(&"node.failed".to_owned()), "{k:?}");
    assert_eq!(k.last().map(String::as_str), Some("run.failed"), "{k:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn fixture_delay_runs_while_it_waits_then_completes_and_checks_its_bounds() {
    let h = conformance_host().await;
    let run = h
        .create(KEY_A, "conformance-delay", json!({"delayMs": 600}))
        .await;
    let snap = h.snapshot(KEY_A, &run).await;
    assert_eq!(snap["status"], "running", "{snap}");
    let done = h.wait_status(KEY_A, &run, "completed").await;
    assert_eq!(done["outputs"]["waitedMs"], 600, "{done}");
    // Without delayMs the default is 1000.
    let run = h.create(KEY_A, "conformance-delay", json!({})).await;
    let done = h.wait_status(KEY_A, &run, "completed").await;
    assert_eq!(done["outputs"]["waitedMs"], 1000, "{done}");
    for bad in [
        json!({"delayMs": 30001}),
        json!({"delayMs": -1}),
        json!({"delayMs": "1"}),
    ] {
        let r = h
            .post(
                "/runs",
                KEY_A,
                json!({"workflowId": "conformance-delay", "inputs": bad}),
            )
            .send()
            .await
            .unwrap();
        let (status, body) = envelope(r).await;
        assert_eq!(status, 400, "{bad}: {body}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn fixture_cancellable_ends_cancelled_when_cancelled() {
    let h = conformance_host().await;
    let run = h.create(KEY_A, "conformance-cancellable", json!({})).await;
    h.wait_status(KEY_A, &run, "running").await;
    let r = h
        .post(
            &format!("/runs/{}/cancel", openwop::ids::project(&run)),
            KEY_A,
            json!({}),
        )
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    h.wait_status(KEY_A, &run, "cancelled").await;
    let k = kinds(&h.events(KEY_A, &run).await);
    assert!(k.contains(&"run.cancelled".to_owned()), "{k:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn fixture_approval_suspends_with_accept_and_reject_and_resolves_once() {
    let h = conformance_host().await;
    let run = h.create(KEY_A, "conformance-approval", json!({})).await;
    let snap = h.wait_status(KEY_A, &run, "waiting-approval").await;
    // Our vocabulary's suspension event is `interrupt.requested` (upstream names it
    // `node.suspended`); the snapshot lists the open interrupt with its id.
    assert!(snap["interrupts"][0]["interruptId"].is_string(), "{snap}");
    let node = snap["interrupts"][0]["nodeId"].as_str().unwrap().to_owned();
    let requested = requested_data(&h, &run).await;
    assert_eq!(
        requested["actions"],
        json!(["accept", "reject"]),
        "{requested}"
    );
    assert!(requested.get("approversList").is_none());
    let path = format!("/runs/{}/interrupts/{node}", openwop::ids::project(&run));
    // Any other resume shape is a 400 and resolves nothing.
    for bad in [
        json!({"action": "maybe"}),
        json!({"decision": "accept"}),
        json!("accept"),
    ] {
        let r = h
            .post(&path, KEY_A, json!({"resumeValue": bad}))
            .send()
            .await
            .unwrap();
        let (status, body) = envelope(r).await;
        assert_eq!(status, 400, "{bad}: {body}");
    }
    let r = h
        .post(&path, KEY_A, json!({"resumeValue": {"action": "accept"}}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    h.wait_status(KEY_A, &run, "completed").await;
    let k = kinds(&h.events(KEY_A, &run).await);
    assert_eq!(
        k.iter().filter(|t| *t == "interrupt.resolved").count(),
        1,
        "{k:?}"
    );
    let again = h
        .post(&path, KEY_A, json!({"resumeValue": {"action": "reject"}}))
        .send()
        .await
        .unwrap();
    let (status, _) = envelope(again).await;
    assert_eq!(status, 409);
}

#[tokio::test(flavor = "multi_thread")]
async fn fixture_clarification_asks_q1_and_completes_with_the_answers() {
    let h = conformance_host().await;
    let run = h
        .create(KEY_A, "conformance-clarification", json!({}))
        .await;
    h.wait_status(KEY_A, &run, "waiting-input").await;
    let requested = requested_data(&h, &run).await;
    assert_eq!(
        requested["questions"],
        json!([{"id": "q1", "question": "What is your favorite color?"}]),
        "{requested}"
    );
    let r = h
        .post(
            &format!("/runs/{}/interrupts/ask", openwop::ids::project(&run)),
            KEY_A,
            json!({"resumeValue": {"answers": {"q1": "blue"}}}),
        )
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let done = h.wait_status(KEY_A, &run, "completed").await;
    assert_eq!(done["outputs"]["answer"]["answers"]["q1"], "blue", "{done}");
}

// ---- MCP and A2A ----------------------------------------------------------------------

async fn mcp(h: &TestHost, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    mcp_with_meta(h, method, params).await
}

/// A 2026-07-28 request whose params carry their own `_meta`.
async fn mcp_with_meta(h: &TestHost, method: &str, params: Value) -> Value {
    let mut req = h
        .http
        .post(format!("{}/mcp", h.base))
        .bearer_auth(KEY_A)
        .header("accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", method);
    if let Some(name) = params.get("name").and_then(Value::as_str) {
        req = req.header("Mcp-Name", name.to_owned());
    }
    let text = req
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let json_text = text
        .lines()
        .find_map(|l| l.strip_prefix("data: ").or_else(|| l.strip_prefix("data:")))
        .map(str::to_owned)
        .unwrap_or(text);
    serde_json::from_str(&json_text).expect("JSON-RPC answer")
}

#[tokio::test(flavor = "multi_thread")]
async fn every_fixture_is_an_mcp_tool_of_the_same_name() {
    let h = conformance_host().await;
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = mcp(&h, "tools/list", params).await;
        for t in page["result"]["tools"].as_array().expect("tools") {
            names.push(t["name"].as_str().unwrap().to_owned());
        }
        match page["result"]["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    for f in openwop::conformance::fixture_ids() {
        assert!(names.iter().any(|n| n == f), "{f} not in {names:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn over_mcp_noop_completes_and_failure_is_a_tool_error_not_a_jsonrpc_error() {
    let h = conformance_host().await;
    let ok = mcp(
        &h,
        "tools/call",
        json!({"name": "conformance-noop", "arguments": {}}),
    )
    .await;
    assert!(ok.get("error").is_none(), "{ok}");
    assert_ne!(ok["result"]["isError"], true, "{ok}");
    let failed = mcp(
        &h,
        "tools/call",
        json!({"name": "conformance-failure", "arguments": {}}),
    )
    .await;
    assert!(
        failed.get("error").is_none(),
        "never a JSON-RPC error: {failed}"
    );
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    // The run it started says it came over MCP.
    let runs: Value = h
        .get("/runs?workflowId=conformance-noop&limit=5", KEY_A)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let run = runs["runs"][0]["runId"]
        .as_str()
        .expect("a noop run")
        .to_owned();
    let events = h.events(KEY_A, &run).await;
    let started = events.iter().find(|e| e["type"] == "run.started").unwrap();
    assert_eq!(started["payload"]["transport"], "mcp", "{started}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_host_card_lists_only_the_approval_fixture_and_a_plain_message_starts_it() {
    let h = conformance_host().await;
    let card: Value = h
        .http
        .get(format!("{}/.well-known/agent-card.json", h.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let skills: Vec<&str> = card["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(skills, ["conformance-approval"], "{card}");
    let url = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["protocolBinding"] == "JSONRPC")
        .and_then(|i| i["url"].as_str())
        .expect("JSON-RPC interface")
        .to_owned();
    let answer: Value = h
        .http
        .post(url)
        .bearer_auth(KEY_A)
        .header("A2A-Version", "1.0")
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {
                "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hello"}]},
                "configuration": {"returnImmediately": true}
            }
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let task = &answer["result"]["task"];
    assert!(task["id"].is_string(), "{answer}");
    let runs: Value = h
        .get("/runs?workflowId=conformance-approval&limit=5", KEY_A)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(runs["runs"].as_array().map(Vec::len), Some(1), "{runs}");
}

#[tokio::test(flavor = "multi_thread")]
async fn fixture_approval_approvers_refuses_a_caller_not_listed() {
    let h = conformance_host().await;
    let run = h
        .create(KEY_A, "conformance-approval-approvers", json!({}))
        .await;
    h.wait_status(KEY_A, &run, "waiting-approval").await;
    let requested = requested_data(&h, &run).await;
    assert_eq!(
        requested["approversList"],
        json!(["urn:conformance:listed-approver"])
    );
    let r = h
        .post(
            &format!("/runs/{}/interrupts/approve", openwop::ids::project(&run)),
            KEY_A,
            json!({"resumeValue": {"action": "accept"}}),
        )
        .send()
        .await
        .unwrap();
    let (status, body) = envelope(r).await;
    assert_eq!((status, body["error"].as_str()), (403, Some("forbidden")));
    // Nothing was resolved: the run still waits.
    h.wait_status(KEY_A, &run, "waiting-approval").await;
    // Over MCP the same caller cannot resolve it either (the plain approval fixture is
    // resolvable by anyone of the tenant: only the list narrows it).
}

#[tokio::test(flavor = "multi_thread")]
async fn nested_and_sensitive_clarifications_are_never_asked_as_forms_over_mcp() {
    let h = conformance_host().await;
    for tool in [
        "conformance-clarification-nested",
        "conformance-clarification-sensitive",
    ] {
        let mut params = json!({"name": tool, "arguments": {}});
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        });
        let answer = mcp_with_meta(&h, "tools/call", params).await;
        assert!(answer.get("error").is_none(), "{tool}: {answer}");
        assert_eq!(answer["result"]["isError"], true, "{tool}: {answer}");
        assert!(
            answer["result"].get("inputRequests").is_none(),
            "{tool} must not be a form: {answer}"
        );
    }
    // The flat one is a form with q1.
    let mut params = json!({"name": "conformance-clarification", "arguments": {}});
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    });
    let answer = mcp_with_meta(&h, "tools/call", params).await;
    let text = answer.to_string();
    assert!(
        text.contains("\"mode\":\"form\"") && text.contains("q1"),
        "{answer}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_credential_mint_seam_mints_a_new_subject_in_the_callers_tenant() {
    let h = conformance_host().await;
    let path = "/conformance/seams/sample/auth/credential/mint";
    let r = h
        .post(path, KEY_A, json!({"lane": "api-key"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let minted: Value = r.json().await.unwrap();
    assert_eq!(minted["lane"], "api-key");
    let key = minted["credential"]
        .as_str()
        .expect("credential")
        .to_owned();
    let subject_id = minted["subjectId"].as_str().expect("subjectId").to_owned();
    // The new key works, in the caller's tenant, as another subject: it reads the
    // tenant's runs, and its runs are owned by the minted subject.
    let run = h.create(&key, "conformance-noop", json!({})).await;
    let snap = h.wait_status(&key, &run, "completed").await;
    assert_eq!(snap["owner"]["tenant"], "acme");
    assert_eq!(snap["owner"]["subject"]["subjectId"], subject_id);
    let own = h.snapshot(KEY_A, &run).await;
    assert_ne!(own["owner"]["subject"]["subjectId"], json!(null));
    // Without a credential: 401; another lane: 400.
    let r = h
        .http
        .post(format!("{}{path}", h.base))
        .json(&json!({"lane": "api-key"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = h
        .post(path, KEY_A, json!({"lane": "oauth"}))
        .send()
        .await
        .unwrap();
    let (status, _) = envelope(r).await;
    assert_eq!(status, 400);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stock_host_mounts_no_seam() {
    let h = start().await;
    let r = h
        .post(
            "/conformance/seams/sample/auth/credential/mint",
            KEY_A,
            json!({"lane": "api-key"}),
        )
        .send()
        .await
        .unwrap();
    let (status, _) = envelope(r).await;
    assert_eq!(status, 404);
}

// ---- the A2A invoke seam ------------------------------------------------------------

/// A loopback A2A agent whose card offers `versions` (one JSON-RPC interface each) and
/// whose SendMessage answers a message; it records each `A2A-Version` it is sent.
async fn fake_agent(versions: &[&str]) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use axum::routing::{get, post};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let interfaces: Vec<Value> = versions
        .iter()
        .map(|v| json!({"url": format!("{base}/rpc"), "protocolBinding": "JSONRPC", "protocolVersion": v}))
        .collect();
    let card = json!({
        "name": "fake", "description": "a fake agent", "version": "1",
        "supportedInterfaces": interfaces,
        "capabilities": {}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [],
    });
    let seen2 = seen.clone();
    let app = axum::Router::new()
        .route(
            "/.well-known/agent-card.json",
            get(move || {
                let card = card.clone();
                async move { axum::Json(card) }
            }),
        )
        .route(
            "/rpc",
            post(move |headers: axum::http::HeaderMap, axum::Json(body): axum::Json<Value>| {
                let seen = seen2.clone();
                async move {
                    let v = headers
                        .get("a2a-version")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_owned();
                    seen.lock().unwrap().push(v);
                    axum::Json(json!({
                        "jsonrpc": "2.0", "id": body["id"],
                        "result": {"message": {"messageId": "reply-1", "role": "ROLE_AGENT", "parts": [{"text": "pong"}]}}
                    }))
                }
            }),
        );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (base, seen)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_a2a_invoke_seam_negotiates_sends_and_records_on_the_run() {
    let h = conformance_host().await;
    let (peer, seen) = fake_agent(&["1.0"]).await;
    let r = h
        .post(
            "/conformance/seams/sample/a2a/invoke",
            KEY_A,
            json!({"peerUrl": peer}),
        )
        .header(
            "traceparent",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let answer: Value = r.json().await.unwrap();
    assert_eq!(answer["negotiatedVersion"], "1.0", "{answer}");
    assert_eq!(answer["protocol"], "a2a");
    assert!(
        answer["peerDigest"].as_str().is_some_and(|d| d.len() == 64),
        "{answer}"
    );
    assert_eq!(answer["result"]["message"]["parts"][0]["text"], "pong");
    assert_eq!(seen.lock().unwrap().as_slice(), ["1.0"], "A2A-Version sent");
    let run = answer["runId"].as_str().unwrap().to_owned();
    let events = h.events(KEY_A, &run).await;
    let decided = events
        .iter()
        .find(|e| e["type"] == "negotiation.decided")
        .expect("negotiation.decided on the run");
    assert_eq!(decided["payload"]["outcome"], "accepted", "{decided}");
    assert_eq!(decided["payload"]["peer"], answer["peerDigest"]);
    h.wait_status(KEY_A, &run, "completed").await;
    // And on the host's own log, under the caller's tenant.
    let host: Value = h
        .get("/host/events", KEY_A)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(host.to_string().contains("negotiation.decided"), "{host}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_a2a_invoke_seam_refuses_below_the_floor_with_nothing_on_the_wire() {
    let h = conformance_host().await;
    let (peer, seen) = fake_agent(&["0.3", "1.0"]).await;
    let r = h
        .post(
            "/conformance/seams/sample/a2a/invoke",
            KEY_A,
            json!({"peerUrl": peer, "requestVersion": "0.3"}),
        )
        .send()
        .await
        .unwrap();
    let (status, body) = envelope(r).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "interop_version_unsupported");
    assert_eq!(body["details"]["protocol"], "a2a");
    assert_eq!(body["details"]["requested"], "0.3");
    assert_eq!(body["details"]["reason"], "below-floor", "{body}");
    assert_eq!(body["details"]["supported"], json!(["1.0"]));
    assert!(seen.lock().unwrap().is_empty(), "no SendMessage went out");
    let run = body["details"]["runId"].as_str().unwrap().to_owned();
    let events = h.events(KEY_A, &run).await;
    let decided = events
        .iter()
        .find(|e| e["type"] == "negotiation.decided")
        .expect("the refusal is recorded on the run");
    assert_eq!(decided["payload"]["outcome"], "refused");
    // A peer that keeps only 0.3 in its offer: refused too.
    let r = h
        .post(
            "/conformance/seams/sample/a2a/invoke",
            KEY_A,
            json!({"peerUrl": peer, "peerOffersOnly": "0.3"}),
        )
        .send()
        .await
        .unwrap();
    let (status, body) = envelope(r).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("interop_version_unsupported")),
        "{body}"
    );
    assert!(seen.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn conformance_and_conformance_down_are_ordinary_mcp_peers_of_the_config() {
    // The suite's test MCP server and an address nothing answers, as `peers:` entries
    // (loopback, plain http: conformance mode opens the guard for loopback).
    let peers: Vec<openwop::peers::PeerFileConfig> = serde_json::from_value(json!([
        {"id": "conformance", "kind": "mcp", "url": "http://127.0.0.1:21001/mcp"},
        {"id": "conformance-down", "kind": "mcp", "url": "http://127.0.0.1:21002/mcp"},
        {"id": "conformance.down", "kind": "mcp", "url": "http://127.0.0.1:21002/mcp"},
    ]))
    .unwrap();
    let h = start_with(|c| {
        c.conformance = true;
        c.peers = peers;
    })
    .await;
    let doc = discovery(&h, true).await;
    assert_eq!(doc["mcp"]["client"], true, "{doc}");
}

// ---- the MCP invoke seam ------------------------------------------------------------

/// A loopback 2026-07-28 MCP server offering `revisions`: `echo` asks one input round,
/// then answers with what it was given (or `declined`).
async fn fake_mcp(revisions: &[&str]) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use axum::routing::post;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/mcp", listener.local_addr().unwrap());
    let methods = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = methods.clone();
    let revisions: Vec<String> = revisions.iter().map(|r| (*r).to_owned()).collect();
    let app = axum::Router::new().route(
        "/mcp",
        post(move |axum::Json(body): axum::Json<Value>| {
            let seen = seen.clone();
            let revisions = revisions.clone();
            async move {
                let method = body["method"].as_str().unwrap_or("").to_owned();
                seen.lock().unwrap().push(method.clone());
                let id = body["id"].clone();
                let result = match method.as_str() {
                    "server/discover" => json!({
                        "supportedVersions": revisions,
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "fake", "version": "1"},
                    }),
                    "tools/list" => json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}),
                    "tools/call" => match body["params"].get("inputResponses") {
                        // `broken` answers a tool error.
                        _ if body["params"]["name"] == "broken" => json!({
                            "content": [{"type": "text", "text": "boom"}], "isError": true,
                        }),
                        // `loop` asks again whatever it is told.
                        _ if body["params"]["name"] == "loop" => json!({
                            "resultType": "input_required",
                            "inputRequests": {"again": {"method": "elicitation/create", "params": {
                                "mode": "form", "message": "Again?",
                                "requestedSchema": {"type": "object", "properties": {}}
                            }}},
                        }),
                        None => json!({
                            "resultType": "input_required",
                            "inputRequests": {"color": {"method": "elicitation/create", "params": {
                                "mode": "form", "message": "Which color?",
                                "requestedSchema": {"type": "object", "properties": {"color": {"type": "string"}}}
                            }}},
                            "requestState": "state-1",
                        }),
                        Some(responses) => {
                            let r = &responses["color"];
                            let text = if r["action"] == "accept" {
                                r["content"]["color"].as_str().unwrap_or("?").to_owned()
                            } else {
                                "declined".to_owned()
                            };
                            json!({"content": [{"type": "text", "text": text}], "isError": false})
                        }
                    },
                    _ => return axum::Json(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}})),
                };
                axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result}))
            }
        }),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (base, methods)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_mcp_invoke_seam_discovers_calls_and_answers_input_rounds() {
    let h = conformance_host().await;
    let (server, methods) = fake_mcp(&["2026-07-28"]).await;
    let r = h
        .post(
            "/conformance/seams/sample/mcp/invoke",
            KEY_A,
            json!({"serverUrl": server, "elicitationAnswer": {"color": "blue"}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let answer: Value = r.json().await.unwrap();
    assert_eq!(answer["negotiatedVersion"], "2026-07-28", "{answer}");
    assert_eq!(answer["protocol"], "mcp");
    assert_eq!(answer["result"]["content"][0]["text"], "blue", "{answer}");
    assert_eq!(answer["mrtr"]["rounds"], 1);
    assert_eq!(
        methods.lock().unwrap().first().map(String::as_str),
        Some("server/discover")
    );
    let run = answer["runId"].as_str().unwrap().to_owned();
    let events = h.events(KEY_A, &run).await;
    let decided = events
        .iter()
        .find(|e| e["type"] == "negotiation.decided")
        .expect("negotiation.decided on the run");
    assert_eq!(decided["payload"]["protocol"], "mcp");
    assert_eq!(decided["payload"]["outcome"], "accepted");
    // Without an answer the round is declined.
    let r = h
        .post(
            "/conformance/seams/sample/mcp/invoke",
            KEY_A,
            json!({"serverUrl": server}),
        )
        .send()
        .await
        .unwrap();
    let answer: Value = r.json().await.unwrap();
    assert_eq!(
        answer["result"]["content"][0]["text"], "declined",
        "{answer}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_mcp_invoke_seam_refuses_below_the_floor_before_the_wire() {
    let h = conformance_host().await;
    let (server, methods) = fake_mcp(&["2026-07-28"]).await;
    let r = h
        .post(
            "/conformance/seams/sample/mcp/invoke",
            KEY_A,
            json!({"serverUrl": server, "requestVersion": "2025-06-18"}),
        )
        .send()
        .await
        .unwrap();
    let (status, body) = envelope(r).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "interop_version_unsupported");
    assert_eq!(body["details"]["protocol"], "mcp");
    assert_eq!(body["details"]["reason"], "below-floor", "{body}");
    assert!(
        methods.lock().unwrap().is_empty(),
        "nothing went on the wire"
    );
    // A server that speaks only a revision below the floor: refused after discover.
    let (old, _) = fake_mcp(&["2025-06-18"]).await;
    let r = h
        .post(
            "/conformance/seams/sample/mcp/invoke",
            KEY_A,
            json!({"serverUrl": old}),
        )
        .send()
        .await
        .unwrap();
    let (status, body) = envelope(r).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("interop_version_unsupported")),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn fixture_credential_is_offered_with_an_https_origin_and_asks_for_synthetic() {
    let h = start_with(|c| {
        c.conformance = true;
        c.public_url = Some("https://wop.example.test".into());
    })
    .await;
    let doc = discovery(&h, false).await;
    assert!(
        doc["fixtures"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "conformance-credential"),
        "{doc}"
    );
    assert_eq!(doc["oauth"]["providers"][0]["id"], "synthetic", "{doc}");
    let run = h.create(KEY_A, "conformance-credential", json!({})).await;
    h.wait_status(KEY_A, &run, "waiting-input").await;
    let data = requested_data(&h, &run).await;
    assert_eq!(data["provider"], "synthetic");
    assert_eq!(data["scopes"], json!(["openwop.read"]));
    assert_eq!(data["reason"], "missing");
    assert_eq!(
        data["connectUrl"],
        "https://wop.example.test/conformance/connect/synthetic"
    );
    // Over MCP, a client that offers URL mode is asked in URL mode.
    let mut params = json!({"name": "conformance-credential", "arguments": {}});
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}}},
    });
    let answer = mcp_with_meta(&h, "tools/call", params).await;
    let text = answer.to_string();
    assert!(
        text.contains("\"mode\":\"url\"") && text.contains("conformance/connect/synthetic"),
        "{answer}"
    );
    // Without an https origin it is not offered, nor is the oauth family.
    let plain = conformance_host().await;
    let doc = discovery(&plain, false).await;
    assert!(
        !doc["fixtures"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "conformance-credential")
    );
    assert!(doc.get("oauth").is_none());
}

// ---- the MCP client fixture ------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn fixture_mcp_client_calls_the_configured_server_and_keeps_its_answer_verbatim() {
    let (server, _) = fake_mcp(&["2026-07-28"]).await;
    // An address nothing answers: a port bound and released.
    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/mcp", l.local_addr().unwrap())
    };
    let peers: Vec<openwop::peers::PeerFileConfig> = serde_json::from_value(json!([
        {"id": "conformance", "kind": "mcp", "url": server},
        {"id": "conformance-down", "kind": "mcp", "url": down},
    ]))
    .unwrap();
    let h = start_with(|c| {
        c.conformance = true;
        c.peers = peers;
    })
    .await;
    let doc = discovery(&h, false).await;
    assert!(
        doc["fixtures"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "conformance-mcp-client"),
        "{doc}"
    );
    let run_of = |inputs: Value| {
        let h = &h;
        async move {
            let run = h.create(KEY_A, "conformance-mcp-client", inputs).await;
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            loop {
                let snap = h.snapshot(KEY_A, &run).await;
                if ["completed", "failed"].contains(&snap["status"].as_str().unwrap()) {
                    return (run, snap);
                }
                assert!(std::time::Instant::now() < deadline, "{snap}");
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
    };
    // serverHealth (the default) on the default server.
    let (run, snap) = run_of(json!({})).await;
    assert_eq!(snap["status"], "completed", "{snap}");
    assert_eq!(snap["outputs"]["result"]["state"], "reachable", "{snap}");
    assert_eq!(
        snap["outputs"]["result"]["discover"]["supportedVersions"],
        json!(["2026-07-28"])
    );
    let events = h.events(KEY_A, &run).await;
    let completed = events
        .iter()
        .find(|e| e["type"] == "node.completed" && e["payload"]["nodeId"] == "mcp-client")
        .expect("node.completed of the client node");
    assert_eq!(
        completed["payload"]["outputs"]["result"]["state"],
        "reachable"
    );
    // The server nothing answers: unreachable, and the run still completes.
    let (_, snap) = run_of(json!({"serverId": "conformance-down"})).await;
    assert_eq!(snap["status"], "completed", "{snap}");
    assert_eq!(snap["outputs"]["result"]["state"], "unreachable");
    // callTool: the whole result, isError included, and the run completes.
    let (_, snap) = run_of(json!({"method": "callTool", "name": "broken", "arguments": {}})).await;
    assert_eq!(snap["status"], "completed", "{snap}");
    assert_eq!(
        snap["outputs"]["result"],
        json!({"content": [{"type": "text", "text": "boom"}], "isError": true})
    );
    // listTools: one page as sent.
    let (_, snap) = run_of(json!({"method": "listTools"})).await;
    assert_eq!(
        snap["outputs"]["result"]["tools"][0]["name"], "echo",
        "{snap}"
    );
    // An unknown server id fails the node with not_found.
    let (_, snap) = run_of(json!({"serverId": "nowhere"})).await;
    assert_eq!(snap["status"], "failed", "{snap}");
    assert_eq!(snap["error"]["code"], "not_found");
}

#[tokio::test(flavor = "multi_thread")]
async fn over_mcp_a_caller_not_listed_cannot_resolve_the_approvers_fixture() {
    let h = conformance_host().await;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    });
    let mut params = json!({"name": "conformance-approval-approvers", "arguments": {}});
    params["_meta"] = meta.clone();
    let asked = mcp_with_meta(&h, "tools/call", params).await;
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let key = result["inputRequests"]
        .as_object()
        .and_then(|m| m.keys().next().cloned())
        .expect("one input request");
    let mut params = json!({
        "name": "conformance-approval-approvers",
        "arguments": {},
        "inputResponses": {key: {"action": "accept", "content": {"decision": "accept"}}},
        "requestState": result["requestState"],
    });
    params["_meta"] = meta;
    let answered = mcp_with_meta(&h, "tools/call", params).await;
    assert_ne!(answered["result"]["resultType"], "complete", "{answered}");
    assert!(
        answered.get("error").is_some() || answered["result"]["isError"] == true,
        "{answered}"
    );
    let runs: Value = h
        .get(
            "/runs?workflowId=conformance-approval-approvers&limit=5",
            KEY_A,
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(runs["runs"][0]["status"], "waiting-approval", "{runs}");
}

// ---- node.suspended -------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn a_suspended_run_emits_node_suspended_naming_the_interrupt_id() {
    let h = conformance_host().await;
    let run = h.create(KEY_A, "conformance-approval", json!({})).await;
    let snap = h.wait_status(KEY_A, &run, "waiting-approval").await;
    let interrupt_id = snap["interrupts"][0]["interruptId"].clone();
    assert!(interrupt_id.is_string(), "{snap}");
    let events = h.events(KEY_A, &run).await;
    for e in &events {
        let findings = openwop_generated::validators::validate_run_event(e);
        assert!(findings.is_empty(), "{e}: {findings:?}");
    }
    let k = kinds(&events);
    let requested = k.iter().position(|t| t == "interrupt.requested");
    let suspended = k.iter().position(|t| t == "node.suspended");
    assert!(
        matches!((requested, suspended), (Some(r), Some(s)) if r < s),
        "interrupt.requested is kept, node.suspended follows it: {k:?}"
    );
    let suspended = &events[suspended.unwrap()];
    assert_eq!(
        suspended["payload"]["interruptId"], interrupt_id,
        "{suspended}"
    );
    assert_eq!(suspended["payload"]["nodeId"], "approve");
    assert_eq!(suspended["payload"]["kind"], "approval");
    assert_eq!(suspended["nodeId"], "approve");
    // The id the log names resolves the interrupt (interrupt.resolved names it too).
    let r = h
        .post(
            &format!("/runs/{}/interrupts/approve", openwop::ids::project(&run)),
            KEY_A,
            json!({"resumeValue": {"action": "accept"}}),
        )
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    h.wait_status(KEY_A, &run, "completed").await;
    let events = h.events(KEY_A, &run).await;
    let resolved = events
        .iter()
        .find(|e| e["type"] == "interrupt.resolved")
        .expect("interrupt.resolved");
    assert_eq!(resolved["payload"]["interruptId"], interrupt_id);
    // Every host emits it, not only conformance mode.
    let stock = start().await;
    let run = stock.create(KEY_A, "approval", json!({})).await;
    stock.wait_status(KEY_A, &run, "waiting-approval").await;
    assert!(
        kinds(&stock.events(KEY_A, &run).await).contains(&"node.suspended".to_owned()),
        "a stock host emits node.suspended too"
    );
}

// ---- conformance-artifact-emit and getArtifact ----------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn fixture_artifact_emit_records_an_artifact_served_as_an_a2a_artifact_and_isolated() {
    let h = conformance_host().await;
    let run = h
        .create(KEY_A, "conformance-artifact-emit", json!({}))
        .await;
    h.wait_status(KEY_A, &run, "completed").await;
    let events = h.events(KEY_A, &run).await;
    let created = events
        .iter()
        .find(|e| e["type"] == "artifact.created")
        .expect("artifact.created");
    assert!(
        openwop_generated::validators::validate_run_event(created).is_empty(),
        "{created}"
    );
    assert_eq!(created["payload"]["artifactType"], "conformance.sample");
    assert_eq!(created["payload"]["nodeId"], "emit");
    let artifact_id = created["payload"]["artifactId"]
        .as_str()
        .expect("artifactId")
        .to_owned();
    let path = format!(
        "/runs/{}/artifacts/{artifact_id}",
        openwop::ids::project(&run)
    );
    // As an A2A Artifact.
    let r = h
        .get(&path, KEY_A)
        .header("accept", "application/a2a+json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["content-type"].to_str().unwrap(),
        "application/a2a+json"
    );
    let a2a: Value = r.json().await.unwrap();
    assert_eq!(a2a["artifactId"], artifact_id.as_str(), "{a2a}");
    assert_eq!(a2a["name"], "conformance sample");
    let parts = a2a["parts"].as_array().expect("parts");
    assert_eq!(parts.len(), 1, "{a2a}");
    assert_eq!(parts[0]["mediaType"], "application/json");
    assert_eq!(parts[0]["data"]["fixture"], "conformance-artifact-emit");
    assert_eq!(parts[0]["data"]["runId"], run.as_str());
    // As the host's own shape.
    let r = h.get(&path, KEY_A).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let own: Value = r.json().await.unwrap();
    assert_eq!(own["runId"], run.as_str(), "{own}");
    assert_eq!(own["artifactType"], "conformance.sample");
    assert_eq!(own["nodeId"], "emit");
    assert_eq!(own["data"], parts[0]["data"]);
    // Another tenant's run answers exactly as a run that never existed, and as an unknown
    // artifact of one's own run: one 404, byte for byte.
    let body = |r: reqwest::Response| async move {
        assert_eq!(r.status(), 404);
        r.bytes().await.unwrap()
    };
    let foreign = body(h.get(&path, KEY_B).send().await.unwrap()).await;
    let never = |tenant: &str| {
        format!(
            "/runs/{}/artifacts/{artifact_id}",
            openwop::ids::project(&format!("{tenant}/AAAAAAAAAAAAAAAAAAAAAA"))
        )
    };
    let never_acme = body(h.get(&never("acme"), KEY_B).send().await.unwrap()).await;
    let never_own = body(h.get(&never("other"), KEY_B).send().await.unwrap()).await;
    let unknown_artifact = body(
        h.get(
            &format!("/runs/{}/artifacts/nope.0", openwop::ids::project(&run)),
            KEY_A,
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(foreign, never_acme);
    assert_eq!(foreign, never_own);
    assert_eq!(foreign, unknown_artifact);
    let parsed: Value = serde_json::from_slice(&foreign).unwrap();
    assert_eq!(parsed["error"], "not_found", "{parsed}");
    // The route is every host's: a stock host answers it (an unknown run: the same 404).
    let stock = start().await;
    let r = stock.get(&never("acme"), KEY_A).send().await.unwrap();
    assert_eq!(body(r).await, foreign);
}

// ---- the OAuth authorize-start seam and the connect URL --------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn the_authorize_start_seam_starts_a_pkce_flow_and_refuses_mismatched_metadata() {
    let h = start_with(|c| {
        c.conformance = true;
        c.public_url = Some("https://wop.example.test".into());
    })
    .await;
    let path = "/conformance/seams/sample/oauth/authorize-start";
    let r = h
        .post(
            path,
            KEY_A,
            json!({"provider": "synthetic", "connection": "c1"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let started: Value = r.json().await.unwrap();
    let url = started["authorizationUrl"]
        .as_str()
        .expect("authorizationUrl");
    assert!(
        url.starts_with("https://wop.example.test/conformance/oauth/synthetic/authorize?"),
        "{url}"
    );
    for part in [
        "response_type=code",
        "code_challenge_method=S256",
        "code_challenge=",
        "state=",
        "scope=openwop.read",
    ] {
        assert!(url.contains(part), "{part} in {url}");
    }
    // The suite's own authorization server, given by its metadata.
    let r = h
        .post(
            path,
            KEY_A,
            json!({"provider": "suite", "authUrl": "http://127.0.0.1:21555/authorize",
                   "tokenUrl": "http://127.0.0.1:21555/token", "issuer": "http://127.0.0.1:21555",
                   "pkce": true, "scopes": ["a", "b"]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let started: Value = r.json().await.unwrap();
    assert!(
        started["authorizationUrl"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:21555/authorize?"),
        "{started}"
    );
    // Metadata that does not match the registered provider: 422.
    for bad in [
        json!({"provider": "synthetic", "authUrl": "https://elsewhere.test/authorize",
               "tokenUrl": "https://elsewhere.test/token", "issuer": "https://elsewhere.test"}),
        json!({"provider": "suite", "authUrl": "http://127.0.0.1:21555/authorize",
               "tokenUrl": "http://127.0.0.1:21555/token", "issuer": "http://127.0.0.1:21555",
               "pkce": false}),
    ] {
        let r = h.post(path, KEY_A, bad.clone()).send().await.unwrap();
        let (status, body) = envelope(r).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (422, Some("connection_auth_metadata_mismatch")),
            "{bad}: {body}"
        );
    }
    // A malformed request is a 400; without a credential, 401.
    let r = h
        .post(path, KEY_A, json!({"provider": "synthetic"}))
        .send()
        .await
        .unwrap();
    assert_eq!(envelope(r).await.0, 400);
    let r = h
        .http
        .post(format!("{}{path}", h.base))
        .json(&json!({"provider": "synthetic", "connection": "c1"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // The credential fixture's connectUrl is served on the host: a signed-in user is sent
    // into the synthetic provider's authorization, whose page says what it is.
    let run = h.create(KEY_A, "conformance-credential", json!({})).await;
    h.wait_status(KEY_A, &run, "waiting-input").await;
    let connect = requested_data(&h, &run).await["connectUrl"]
        .as_str()
        .unwrap()
        .to_owned();
    let connect_path = connect
        .strip_prefix("https://wop.example.test")
        .expect("on the host's origin");
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = no_redirects
        .get(format!("{}{connect_path}", h.base))
        .bearer_auth(KEY_A)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        location.starts_with("https://wop.example.test/conformance/oauth/synthetic/authorize?")
            && location.contains("code_challenge_method=S256"),
        "{location}"
    );
    let page = h
        .http
        .get(format!(
            "{}{}",
            h.base,
            location.strip_prefix("https://wop.example.test").unwrap()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    // A stock host serves none of it.
    let stock = start().await;
    let r = stock
        .post(
            path,
            KEY_A,
            json!({"provider": "synthetic", "connection": "c1"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(envelope(r).await.0, 404);
    let r = stock.get(connect_path, KEY_A).send().await.unwrap();
    assert_eq!(envelope(r).await.0, 404);
}

// ---- a recording MCP server and A2A agent ----------------------------------------------

/// One request a recording peer received: its method, its `Authorization` header, its
/// params (or, for A2A, the body).
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    authorization: Option<String>,
    params: Value,
    mcp_name: Option<String>,
}

type SeenLog = std::sync::Arc<std::sync::Mutex<Vec<Seen>>>;

/// A loopback 2026-07-28 MCP server that records every request. `echo` asks one form-mode
/// input round and answers the colour it is given; `resources/read` answers one text
/// content for the URI asked.
async fn recording_mcp() -> (String, SeenLog) {
    use axum::routing::post;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/mcp", listener.local_addr().unwrap());
    let log: SeenLog = Default::default();
    let seen = log.clone();
    let app = axum::Router::new().route(
        "/mcp",
        post(
            move |headers: axum::http::HeaderMap, axum::Json(body): axum::Json<Value>| {
                let seen = seen.clone();
                async move {
                    let header = |n: &str| {
                        headers
                            .get(n)
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_owned)
                    };
                    let method = body["method"].as_str().unwrap_or("").to_owned();
                    seen.lock().unwrap().push(Seen {
                        method: method.clone(),
                        authorization: header("authorization"),
                        params: body["params"].clone(),
                        mcp_name: header("mcp-name"),
                    });
                    let result = match method.as_str() {
                        "server/discover" => json!({
                            "supportedVersions": ["2026-07-28"],
                            "capabilities": {"tools": {}, "resources": {}},
                            "serverInfo": {"name": "recording", "version": "1"},
                        }),
                        "tools/list" => json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}),
                        "resources/read" => json!({"contents": [{
                            "uri": body["params"]["uri"], "mimeType": "text/plain", "text": "sample resource",
                        }]}),
                        "tools/call" => match body["params"].get("inputResponses") {
                            None => json!({
                                "resultType": "input_required",
                                "inputRequests": {"color": {"method": "elicitation/create", "params": {
                                    "mode": "form", "message": "Which color?",
                                    "requestedSchema": {"type": "object", "properties": {"color": {"type": "string"}}}
                                }}},
                                "requestState": "state-1",
                            }),
                            Some(r) => json!({"content": [{"type": "text",
                                "text": r["color"]["content"]["color"].as_str().unwrap_or("declined")}], "isError": false}),
                        },
                        _ => return axum::Json(json!({"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32601, "message": "no"}})),
                    };
                    axum::Json(json!({"jsonrpc": "2.0", "id": body["id"], "result": result}))
                }
            },
        ),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (base, log)
}

/// A loopback A2A 1.0 agent that records every request (card reads included).
async fn recording_agent() -> (String, SeenLog) {
    use axum::routing::{get, post};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let log: SeenLog = Default::default();
    let card = json!({
        "name": "recording", "description": "records requests", "version": "1",
        "supportedInterfaces": [{"url": format!("{base}/rpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [],
    });
    let record = |log: SeenLog, method: &'static str| {
        move |headers: axum::http::HeaderMap| {
            log.lock().unwrap().push(Seen {
                method: method.to_owned(),
                authorization: headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned),
                params: Value::Null,
                mcp_name: None,
            });
        }
    };
    let (card_log, rpc_log) = (
        record(log.clone(), "card"),
        record(log.clone(), "SendMessage"),
    );
    let app = axum::Router::new()
        .route(
            "/.well-known/agent-card.json",
            get(move |headers: axum::http::HeaderMap| {
                card_log(headers);
                let card = card.clone();
                async move { axum::Json(card) }
            }),
        )
        .route(
            "/rpc",
            post(
                move |headers: axum::http::HeaderMap, axum::Json(body): axum::Json<Value>| {
                    rpc_log(headers);
                    async move {
                        axum::Json(json!({
                            "jsonrpc": "2.0", "id": body["id"],
                            "result": {"message": {"messageId": "reply-1", "role": "ROLE_AGENT", "parts": [{"text": "pong"}]}}
                        }))
                    }
                },
            ),
        );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (base, log)
}

// ---- readResource through the host's MCP client -----------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn fixture_mcp_client_reads_a_resource_and_keeps_the_answer_verbatim() {
    let (server, seen) = recording_mcp().await;
    let peers: Vec<openwop::peers::PeerFileConfig> = serde_json::from_value(json!([
        {"id": "conformance", "kind": "mcp", "url": server},
    ]))
    .unwrap();
    let h = start_with(|c| {
        c.conformance = true;
        c.peers = peers;
    })
    .await;
    let finished = |inputs: Value| {
        let h = &h;
        async move {
            let run = h.create(KEY_A, "conformance-mcp-client", inputs).await;
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            loop {
                let snap = h.snapshot(KEY_A, &run).await;
                if ["completed", "failed"].contains(&snap["status"].as_str().unwrap()) {
                    return snap;
                }
                assert!(std::time::Instant::now() < deadline, "{snap}");
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
    };
    let snap = finished(json!({"method": "readResource", "uri": "conformance://sample"})).await;
    assert_eq!(snap["status"], "completed", "{snap}");
    assert_eq!(
        snap["outputs"]["result"],
        json!({"contents": [{"uri": "conformance://sample", "mimeType": "text/plain", "text": "sample resource"}]})
    );
    let read = seen
        .lock()
        .unwrap()
        .iter()
        .find(|s| s.method == "resources/read")
        .cloned()
        .expect("resources/read went to the server");
    assert_eq!(read.params["uri"], "conformance://sample");
    assert_eq!(read.mcp_name.as_deref(), Some("conformance://sample"));
    assert!(read.params["_meta"]["io.modelcontextprotocol/protocolVersion"].is_string());
    // Without a uri the node fails before the wire.
    let snap = finished(json!({"method": "readResource"})).await;
    assert_eq!(snap["status"], "failed", "{snap}");
    assert_eq!(snap["error"]["code"], "validation_error");
}

// ---- the invoke seams: authenticated and clientCapabilities ------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn the_invoke_seams_present_the_configured_peer_credential_only_when_authenticated() {
    let (server, mcp_seen) = recording_mcp().await;
    let (agent, a2a_seen) = recording_agent().await;
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("peer-secret");
    std::fs::write(&secret, "peer-secret-0123456789\n").unwrap();
    let peers: Vec<openwop::peers::PeerFileConfig> = serde_json::from_value(json!([
        {"id": "conformance", "kind": "mcp", "url": server, "credential": {"file": secret}},
        {"id": "suite-agent", "kind": "a2a", "url": format!("{agent}/.well-known/agent-card.json"),
         "credential": {"file": secret}},
    ]))
    .unwrap();
    let h = start_with(|c| {
        c.conformance = true;
        c.peers = peers;
    })
    .await;
    let invoke = |path: &'static str, body: Value| {
        let h = &h;
        async move {
            let r = h.post(path, KEY_A, body).send().await.unwrap();
            assert_eq!(r.status(), 200, "{path}");
        }
    };
    let bearer = Some("Bearer peer-secret-0123456789".to_owned());
    // Authenticated (the default): the configured peer's credential, on every request.
    invoke(
        "/conformance/seams/sample/mcp/invoke",
        json!({"serverUrl": server, "elicitationAnswer": {"color": "red"}}),
    )
    .await;
    invoke(
        "/conformance/seams/sample/a2a/invoke",
        json!({"peerUrl": agent}),
    )
    .await;
    for (what, seen) in [("mcp", &mcp_seen), ("a2a", &a2a_seen)] {
        let seen = std::mem::take(&mut *seen.lock().unwrap());
        assert!(!seen.is_empty(), "{what}");
        for s in &seen {
            assert_eq!(s.authorization, bearer, "{what} {}", s.method);
        }
    }
    // Unauthenticated: no credential at all, and never the caller's own key.
    invoke(
        "/conformance/seams/sample/mcp/invoke",
        json!({"serverUrl": server, "authenticated": false, "elicitationAnswer": {"color": "red"}}),
    )
    .await;
    invoke(
        "/conformance/seams/sample/a2a/invoke",
        json!({"peerUrl": agent, "authenticated": false}),
    )
    .await;
    for (what, seen) in [("mcp", &mcp_seen), ("a2a", &a2a_seen)] {
        let seen = std::mem::take(&mut *seen.lock().unwrap());
        assert!(!seen.is_empty(), "{what}");
        for s in &seen {
            assert_eq!(s.authorization, None, "{what} {}", s.method);
        }
    }
    // A peer with no configured credential gets none either way, never KEY_A.
    let (other, other_seen) = recording_mcp().await;
    invoke(
        "/conformance/seams/sample/mcp/invoke",
        json!({"serverUrl": other, "elicitationAnswer": {"color": "red"}}),
    )
    .await;
    for s in other_seen.lock().unwrap().iter() {
        assert_eq!(s.authorization, None, "{}", s.method);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_mcp_invoke_seam_declares_client_capabilities_and_answers_only_offered_elicitation() {
    let h = conformance_host().await;
    let (server, seen) = recording_mcp().await;
    let path = "/conformance/seams/sample/mcp/invoke";
    let declared = |seen: &SeenLog| -> Vec<Value> {
        seen.lock()
            .unwrap()
            .iter()
            .filter(|s| s.method == "tools/call")
            .map(|s| s.params["_meta"]["io.modelcontextprotocol/clientCapabilities"].clone())
            .collect()
    };
    // Offered: the round is answered, and the server saw exactly what was declared.
    let offered = json!({"elicitation": {"form": {}}, "x-suite": {"marker": 1}});
    let r = h
        .post(
            path,
            KEY_A,
            json!({"serverUrl": server, "clientCapabilities": offered, "elicitationAnswer": {"color": "green"}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let answer: Value = r.json().await.unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "green", "{answer}");
    let calls = declared(&seen);
    assert_eq!(calls.len(), 2, "the call and its answered round");
    assert!(calls.iter().all(|c| *c == offered), "{calls:?}");
    seen.lock().unwrap().clear();
    // Not offered: the server's round goes unanswered and the exchange ends with mcp_error.
    let r = h
        .post(
            path,
            KEY_A,
            json!({"serverUrl": server, "clientCapabilities": {}, "elicitationAnswer": {"color": "green"}}),
        )
        .send()
        .await
        .unwrap();
    let (status, body) = envelope(r).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (502, Some("mcp_error")),
        "{body}"
    );
    assert_eq!(body["details"]["reason"], "elicitation-not-offered");
    let calls = declared(&seen);
    assert_eq!(calls, [json!({})], "declared as given; no answer was sent");
    // Not an object: 400.
    let r = h
        .post(
            path,
            KEY_A,
            json!({"serverUrl": server, "clientCapabilities": "all"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(envelope(r).await.0, 400);
}
