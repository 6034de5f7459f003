//! The A2A 1.0 interface against a real host: each test names the interop rule it checks.

mod support;

use reqwest::Method;
use serde_json::{Value, json};
use support::a2a::*;
use support::{KEY_A, KEY_B};

fn error_info(error: &Value) -> &Value {
    error["data"]
        .as_array()
        .and_then(|d| {
            d.iter()
                .find(|x| x["@type"] == "type.googleapis.com/google.rpc.ErrorInfo")
        })
        .unwrap_or(&Value::Null)
}

fn is_openwop_envelope(body: &Value) -> bool {
    body.get("error").is_some_and(Value::is_string) && body.get("message").is_some()
}

#[tokio::test]
async fn card_lists_both_bindings_every_skill_and_the_enforced_bearer_scheme() {
    let h = start().await;
    let resp = h
        .http
        .get(format!("{}/.well-known/agent-card.json", h.base))
        .send()
        .await
        .expect("card");
    assert_eq!(resp.status(), 200);
    let etag = resp.headers().get("etag").cloned().expect("etag");
    assert!(resp.headers().get("cache-control").is_some());
    let card: Value = resp.json().await.expect("json");
    let interfaces = card["supportedInterfaces"].as_array().expect("interfaces");
    assert_eq!(interfaces[0]["protocolBinding"], "JSONRPC");
    assert_eq!(interfaces[0]["protocolVersion"], "1.0");
    assert_eq!(
        interfaces[0]["url"],
        json!(format!("{}/a2a/jsonrpc", h.base))
    );
    assert!(
        interfaces
            .iter()
            .any(|i| i["protocolBinding"] == "HTTP+JSON")
    );
    assert!(interfaces.iter().all(|i| i.get("tenant").is_none()));
    let skills: Vec<&str> = card["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    for wf in ["approval", "echo", "slow", "credential"] {
        assert!(skills.contains(&wf), "skill {wf}");
    }
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    assert_eq!(card["capabilities"]["pushNotifications"], true);
    // The generated per-card rules, against our discovery document with the a2a family
    // this edge serves.
    let discovery: Value = h
        .http
        .get(format!("{}/.well-known/openwop", h.base))
        .send()
        .await
        .expect("discovery")
        .json()
        .await
        .expect("json");
    assert!(
        discovery.get("a2a").is_some(),
        "the host advertises the a2a family"
    );
    let findings = openwop_generated::validators::validate_agent_card(
        &card,
        Some(&discovery),
        &openwop_generated::validators::Options {
            today: Some((2026, 12, 2)),
        },
    );
    assert!(findings.is_empty(), "{findings:?}");
    let mut broken = card.clone();
    broken["capabilities"]["streaming"] = json!(false);
    broken["supportedInterfaces"] = json!([{"url": "http://x/a2a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}]);
    assert!(
        !openwop_generated::validators::validate_agent_card(
            &broken,
            Some(&discovery),
            &openwop_generated::validators::Options {
                today: Some((2026, 12, 2))
            }
        )
        .is_empty(),
        "the validator would notice a drift"
    );
    // Conditional GET.
    let again = h
        .http
        .get(format!("{}/.well-known/agent-card.json", h.base))
        .header("if-none-match", etag)
        .send()
        .await
        .expect("card");
    assert_eq!(again.status(), 304);
}

#[tokio::test]
async fn blocking_send_message_creates_a_run_of_the_skill_under_the_callers_subject() {
    let h = start().await;
    let body = h.rpc("SendMessage", json!({"message": user_message("m-echo-1", Some("echo"), json!([{"data": {"hello": "world"}}]))})).await;
    let task = &body["result"]["task"];
    assert_eq!(body["id"], "req-1");
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{body}");
    assert_eq!(
        task["artifacts"][0]["parts"][0]["data"],
        json!({"hello": "world"})
    );
    assert!(task["contextId"].as_str().is_some_and(|c| !c.is_empty()));
    assert_eq!(task["history"][0]["messageId"], "m-echo-1");
    // The task is the run: REST shows it to the same Subject.
    let run_id = task["id"].as_str().expect("id");
    let (status, run) = h.get_run(KEY_A, run_id).await;
    assert_eq!(status, 200);
    assert_eq!(run["workflowId"], "echo");
    assert_eq!(run["status"], "completed");
}

#[tokio::test]
async fn a_repeated_message_id_from_the_same_principal_returns_the_existing_task() {
    let h = start().await;
    let params =
        json!({"message": user_message("m-dup", Some("echo"), json!([{"data": {"n": 1}}]))});
    let first = h.rpc("SendMessage", params.clone()).await;
    let second = h.rpc("SendMessage", params).await;
    assert_eq!(
        first["result"]["task"]["id"],
        second["result"]["task"]["id"]
    );
    let listed = h.rpc("ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], 1);
    // The same messageId from another principal is another task.
    let (_, other) = h
        .rpc_with(
            Some(KEY_B),
            Some("1.0"),
            "SendMessage",
            json!({"message": user_message("m-dup", Some("echo"), json!([{"data": {"n": 1}}]))}),
        )
        .await;
    assert_ne!(other["result"]["task"]["id"], first["result"]["task"]["id"]);
}

#[tokio::test]
async fn multi_turn_resolves_the_open_interrupt_and_enforces_context_rules() {
    let h = start().await;
    let first = h.rpc("SendMessage", json!({"message": user_message("m-appr-1", Some("approval"), json!([{"data": {"title": "deploy"}}]))})).await;
    let task = &first["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{first}"
    );
    assert_eq!(task["metadata"]["openwop"]["interrupt"]["kind"], "approval");
    assert_eq!(
        task["metadata"]["openwop"]["interrupt"]["nodeId"],
        "approve"
    );
    let task_id = task["id"].as_str().expect("id").to_owned();
    let context = task["contextId"].as_str().expect("ctx").to_owned();

    // A contextId that is not the task's: invalid params, and the run does not change.
    let mut wrong = user_message("m-appr-2", None, json!([{"data": {"action": "accept"}}]));
    wrong["taskId"] = json!(task_id);
    wrong["contextId"] = json!("some-other-context");
    let refused = h.rpc("SendMessage", json!({"message": wrong})).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(
        h.get_run(KEY_A, &task_id).await.1["status"],
        "waiting-approval"
    );

    // taskId alone: the answer carries the task's contextId.
    let mut reply = user_message("m-appr-3", None, json!([{"data": {"action": "accept"}}]));
    reply["taskId"] = json!(task_id);
    let done = h.rpc("SendMessage", json!({"message": reply})).await;
    let task = &done["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(task["contextId"], json!(context));
    assert_eq!(
        task["artifacts"][0]["parts"][0]["data"]["decision"],
        json!({"action": "accept"})
    );
    assert_eq!(task["history"].as_array().map(Vec::len), Some(2));

    // A message to the retained terminal task: UnsupportedOperationError, nothing appended.
    let (_, events_before) = h.get_run(KEY_A, &task_id).await;
    let mut late = user_message("m-appr-4", None, json!([{"text": "again"}]));
    late["taskId"] = json!(task_id);
    let refused = h.rpc("SendMessage", json!({"message": late})).await;
    assert_eq!(refused["error"]["code"], -32004);
    assert_eq!(
        error_info(&refused["error"])["reason"],
        "UNSUPPORTED_OPERATION"
    );
    assert_eq!(
        h.get_run(KEY_A, &task_id).await.1["updatedAt"],
        events_before["updatedAt"]
    );
}

#[tokio::test]
async fn credential_interrupt_projects_to_auth_required_with_connect_url_and_nothing_else_does() {
    let h = start().await;
    let body = h
        .rpc(
            "SendMessage",
            json!({"message": user_message("m-cred", Some("credential"), json!([{"data": {}}]))}),
        )
        .await;
    let task = &body["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_AUTH_REQUIRED",
        "{body}"
    );
    assert_eq!(
        task["metadata"]["openwop"]["interrupt"]["kind"],
        "credential"
    );
    let parts = task["status"]["message"]["parts"]
        .as_array()
        .expect("parts");
    assert!(
        parts
            .iter()
            .any(|p| p["data"]["connectUrl"] == "https://localhost/connect/example")
    );
    for (wf, msg) in [
        ("approval", "m-na-1"),
        ("clarify", "m-na-2"),
        ("external", "m-na-3"),
    ] {
        let body = h
            .rpc(
                "SendMessage",
                json!({"message": user_message(msg, Some(wf), json!([{"data": {}}]))}),
            )
            .await;
        assert_eq!(
            body["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
            "{wf}: {body}"
        );
    }
}

#[tokio::test]
async fn unreadable_tasks_are_answered_exactly_as_unknown_ones() {
    let h = start().await;
    let theirs = h
        .rpc(
            "SendMessage",
            json!({"message": user_message("m-iso", Some("echo"), json!([{"data": {}}]))}),
        )
        .await;
    let foreign_id = theirs["result"]["task"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    // REST refuses the foreign tenant with 403; A2A must not reveal that difference.
    assert_eq!(h.get_run(KEY_B, &foreign_id).await.0, 403);
    let unknown_id = "other/r-aaaaaaaaaaaaaaaaaaaaaa";
    for method in ["GetTask", "CancelTask", "SubscribeToTask"] {
        let (s1, foreign) = h
            .rpc_with(Some(KEY_B), Some("1.0"), method, json!({"id": foreign_id}))
            .await;
        let (s2, unknown) = h
            .rpc_with(Some(KEY_B), Some("1.0"), method, json!({"id": unknown_id}))
            .await;
        assert_eq!(s1, s2);
        assert_eq!(foreign["error"]["code"], -32001, "{method}: {foreign}");
        assert_eq!(
            foreign.to_string().replace(&foreign_id, "ID"),
            unknown.to_string().replace(unknown_id, "ID"),
            "{method}"
        );
    }
    let mut msg = user_message("m-iso-2", None, json!([{"text": "hi"}]));
    msg["taskId"] = json!(foreign_id);
    let (_, refused) = h
        .rpc_with(
            Some(KEY_B),
            Some("1.0"),
            "SendMessage",
            json!({"message": msg}),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32001);
    // HTTP+JSON: google.rpc.Status 404, identical apart from the id.
    let (s1, foreign) = h
        .rest(
            Some(KEY_B),
            Method::GET,
            &format!("/tasks/{}", foreign_id.replace('/', "~2F")),
            None,
        )
        .await;
    let (s2, unknown) = h
        .rest(
            Some(KEY_B),
            Method::GET,
            &format!("/tasks/{}", unknown_id.replace('/', "~2F")),
            None,
        )
        .await;
    assert_eq!((s1, s2), (404, 404));
    assert_eq!(foreign["error"]["status"], "NOT_FOUND");
    assert_eq!(
        foreign.to_string().replace(&foreign_id, "ID"),
        unknown.to_string().replace(unknown_id, "ID")
    );
}

#[tokio::test]
async fn list_tasks_returns_exactly_what_list_runs_gives_the_same_subject() {
    let h = start().await;
    for i in 0..3 {
        h.rpc("SendMessage", json!({"message": user_message(&format!("m-l-{i}"), Some("echo"), json!([{"data": {"i": i}}]))})).await;
    }
    h.rpc_with(
        Some(KEY_B),
        Some("1.0"),
        "SendMessage",
        json!({"message": user_message("m-l-b", Some("echo"), json!([{"data": {}}]))}),
    )
    .await;
    // A run created over REST is a task too.
    let resp = h
        .http
        .post(format!("{}/runs", h.base))
        .bearer_auth(KEY_A)
        .json(&json!({"workflowId": "echo", "inputs": {}}))
        .send()
        .await
        .expect("rest");
    assert!(resp.status().is_success(), "{}", resp.status());
    let runs: Value = h
        .http
        .get(format!("{}/runs", h.base))
        .bearer_auth(KEY_A)
        .send()
        .await
        .expect("runs")
        .json()
        .await
        .expect("json");
    let mut rest_ids: Vec<String> = runs["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .filter_map(|r| r["runId"].as_str().map(str::to_owned))
        .collect();
    let listed = h.rpc("ListTasks", json!({"pageSize": 2})).await;
    let page1 = &listed["result"];
    assert_eq!(page1["totalSize"], 4);
    assert_eq!(page1["pageSize"], 2);
    assert!(
        page1["tasks"][0].get("artifacts").is_none(),
        "artifacts only with includeArtifacts"
    );
    let token = page1["nextPageToken"].as_str().expect("token").to_owned();
    assert!(!token.is_empty());
    let page2 = h
        .rpc(
            "ListTasks",
            json!({"pageSize": 2, "pageToken": token, "includeArtifacts": true}),
        )
        .await;
    assert_eq!(page2["result"]["nextPageToken"], "");
    assert!(page2["result"]["tasks"][0].get("artifacts").is_some());
    let mut a2a_ids: Vec<String> = page1["tasks"]
        .as_array()
        .into_iter()
        .chain(page2["result"]["tasks"].as_array())
        .flatten()
        .filter_map(|t| t["id"].as_str().map(str::to_owned))
        .collect();
    a2a_ids.sort();
    rest_ids.sort();
    assert_eq!(a2a_ids, rest_ids);
    // Filters and bounds.
    let ctx = page1["tasks"][0]["contextId"].clone();
    let by_ctx = h.rpc("ListTasks", json!({"contextId": ctx})).await;
    assert_eq!(by_ctx["result"]["totalSize"], 1);
    let none = h
        .rpc("ListTasks", json!({"status": "TASK_STATE_WORKING"}))
        .await;
    assert_eq!(none["result"]["totalSize"], 0);
    for bad in [
        json!({"pageSize": 0}),
        json!({"pageSize": 101}),
        json!({"pageToken": "forged"}),
    ] {
        assert_eq!(h.rpc("ListTasks", bad).await["error"]["code"], -32602);
    }
    // Metadata or a contextId never widen the set: a foreign context is simply empty.
    let (_, b) = h
        .rpc_with(
            Some(KEY_B),
            Some("1.0"),
            "ListTasks",
            json!({"contextId": ctx}),
        )
        .await;
    assert_eq!(b["result"]["totalSize"], 0);
}

#[tokio::test]
async fn cancel_task_cancels_as_cancel_run_and_a_terminal_task_is_not_cancelable() {
    let h = start().await;
    let body = h
        .rpc("SendMessage", json!({"message": user_message("m-slow", Some("slow"), json!([{"data": {"ms": 60000}}])), "configuration": {"returnImmediately": true}}))
        .await;
    let task_id = body["result"]["task"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert!(
        matches!(
            body["result"]["task"]["status"]["state"].as_str(),
            Some("TASK_STATE_SUBMITTED" | "TASK_STATE_WORKING")
        ),
        "{body}"
    );
    let cancelled = h.rpc("CancelTask", json!({"id": task_id})).await;
    assert_eq!(
        cancelled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{cancelled}"
    );
    let again = h.rpc("CancelTask", json!({"id": task_id})).await;
    assert_eq!(again["error"]["code"], -32002);
    assert_eq!(error_info(&again["error"])["reason"], "TASK_NOT_CANCELABLE");
    // HTTP+JSON twin with the projected id and the verb suffix.
    let (status, rest) = h
        .rest(
            Some(KEY_A),
            Method::POST,
            &format!("/tasks/{}:cancel", task_id.replace('/', "~2F")),
            None,
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(rest["error"]["details"][0]["reason"], "TASK_NOT_CANCELABLE");
}

#[tokio::test]
async fn errors_on_a2a_urls_are_never_the_openwop_envelope() {
    let h = start().await;
    // 401 before dispatch, both bindings.
    let (status, body) = h
        .rpc_with(None, Some("1.0"), "GetTask", json!({"id": "x"}))
        .await;
    assert_eq!(status, 401);
    assert!(
        body["error"]["code"].is_i64() && !is_openwop_envelope(&body),
        "{body}"
    );
    let (status, body) = h.rest(None, Method::GET, "/tasks", None).await;
    assert_eq!(status, 401);
    assert_eq!(body["error"]["status"], "UNAUTHENTICATED");
    let (status, body) = h
        .rpc_with(
            Some("wrong-key-0123456789"),
            Some("1.0"),
            "GetTask",
            json!({"id": "x"}),
        )
        .await;
    assert_eq!(status, 401);
    assert!(!is_openwop_envelope(&body));
    // Malformed JSON-RPC.
    let resp = h
        .http
        .post(format!("{}/a2a/jsonrpc", h.base))
        .bearer_auth(KEY_A)
        .header("Content-Type", "application/json")
        .body("{not json")
        .send()
        .await
        .expect("send");
    let body: Value = resp.json().await.expect("json");
    assert_eq!(body["error"]["code"], -32700);
    let resp = h
        .http
        .post(format!("{}/a2a/jsonrpc", h.base))
        .bearer_auth(KEY_A)
        .json(&json!({"id": 1, "method": "GetTask"}))
        .send()
        .await
        .expect("send");
    assert_eq!(
        resp.json::<Value>().await.expect("json")["error"]["code"],
        -32600
    );
    // Not POST on the JSON-RPC URL: 405, still a JSON-RPC body.
    let resp = h
        .http
        .get(format!("{}/a2a/jsonrpc", h.base))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 405);
    assert_eq!(resp.headers()["allow"], "POST");
    assert_eq!(
        resp.json::<Value>().await.expect("json")["error"]["code"],
        -32600
    );
    // 413.
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\",\"params\":{{\"pad\":\"{}\"}}}}",
        "x".repeat(2 * 1024 * 1024)
    );
    let resp = h
        .http
        .post(format!("{}/a2a/jsonrpc", h.base))
        .bearer_auth(KEY_A)
        .header("Content-Type", "application/json")
        .body(big)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 413);
    assert!(!is_openwop_envelope(
        &resp.json::<Value>().await.expect("json")
    ));
    // Unknown methods, v0.3 names, unknown HTTP+JSON routes.
    assert_eq!(
        h.rpc("message/send", json!({})).await["error"]["code"],
        -32601
    );
    let (status, body) = h
        .rest(Some(KEY_A), Method::GET, "/no/such/route", None)
        .await;
    assert_eq!(status, 404);
    assert!(!is_openwop_envelope(&body) && body["error"]["code"] == 404);
    // Push configs are served (a2a.pushNotifications); an unknown task is A2A-shaped.
    // The refusal of an unadvertised row is the gate's unit test.
    let push = h
        .rpc(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "acme/r-aaaaaaaaaaaaaaaa", "url": "https://x.example"}),
        )
        .await;
    assert_eq!(push["error"]["code"], -32001);
    assert_eq!(error_info(&push["error"])["domain"], "a2a-protocol.org");
    // With a2a.agentCards advertised the extended card is served; an R it never minted
    // is its refusal (runtime/tests/agents.rs covers the rest).
    let ext = h
        .rpc("GetExtendedAgentCard", json!({"tenant": "ag-never-minted"}))
        .await;
    assert_eq!(ext["error"]["code"], -32007);
    let (status, body) = h
        .rest(
            Some(KEY_A),
            Method::GET,
            "/ag-never-minted/extendedAgentCard",
            None,
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body["error"]["details"][0]["reason"],
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED"
    );
}

#[tokio::test]
async fn version_negotiation_fails_closed_and_every_outcome_is_a_durable_host_event() {
    let h = start().await;
    let (_, body) = h
        .rpc_with(Some(KEY_A), Some("99.0"), "ListTasks", json!({}))
        .await;
    assert_eq!(body["error"]["code"], -32009, "{body}");
    let info = error_info(&body["error"]);
    assert_eq!(info["reason"], "VERSION_NOT_SUPPORTED");
    assert_eq!(info["metadata"]["supportedVersions"], "1.0");
    let (_, below) = h
        .rpc_with(Some(KEY_A), Some("0.3"), "ListTasks", json!({}))
        .await;
    assert_eq!(below["error"]["code"], -32009);
    // No header: the preferred version is served.
    let (_, ok) = h.rpc_with(Some(KEY_A), None, "ListTasks", json!({})).await;
    assert!(ok.get("result").is_some(), "{ok}");
    let (_, patch) = h
        .rpc_with(Some(KEY_A), Some("1.0.3"), "ListTasks", json!({}))
        .await;
    assert!(
        patch.get("result").is_some(),
        "patch versions are ignored: {patch}"
    );
    // A caller-chosen Origin header does not change who the peer is.
    let with_origin = h
        .http
        .post(format!("{}/a2a/jsonrpc", h.base))
        .bearer_auth(KEY_A)
        .header("Origin", "https://claimed.example")
        .json(&json!({"jsonrpc": "2.0", "id": "o", "method": "ListTasks", "params": {}}))
        .send()
        .await
        .expect("send");
    assert_eq!(with_origin.status().as_u16(), 200);

    let events: Value = h
        .http
        .get(format!("{}/host/events", h.base))
        .bearer_auth(KEY_A)
        .send()
        .await
        .expect("events")
        .json()
        .await
        .expect("json");
    let decided: Vec<&Value> = events["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["type"] == "negotiation.decided")
        .collect();
    assert_eq!(decided.len(), 5, "{events}");
    assert!(
        decided
            .iter()
            .all(|e| e["delivery"] == "durable" && e["tenant"] == "acme")
    );
    let outcomes: Vec<(&str, &str)> = decided
        .iter()
        .map(|e| {
            (
                e["payload"]["outcome"].as_str().unwrap_or(""),
                e["payload"]["reason"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        vec![
            ("refused", "unsupported"),
            ("refused", "below-floor"),
            ("accepted", "ok"),
            ("accepted", "ok"),
            ("accepted", "ok")
        ]
    );
    for e in &decided {
        let findings = openwop_generated::validators::validate_host_event(e);
        assert!(findings.is_empty(), "{e}: {findings:?}");
        let digest = e["payload"]["peer"].as_str().expect("digest");
        assert_eq!(digest.len(), 64);
        // One authenticated caller, one peer: the digest keys its Subject, whatever
        // Origin it claimed.
        assert_eq!(digest, decided[0]["payload"]["peer"], "{e}");
        assert!(
            !e.to_string().contains("urn:openwop") && !e.to_string().contains("claimed"),
            "the peer is recorded only as a digest"
        );
        let refused = e["payload"]["outcome"] == "refused";
        assert_eq!(e["payload"]["negotiated"].is_null(), refused, "{e}");
    }
    assert!(decided[2]["payload"].get("requested").is_none());
    assert_eq!(decided[2]["payload"]["negotiated"], "1.0");
    // The other tenant sees none of them.
    let theirs: Value = h
        .http
        .get(format!("{}/host/events", h.base))
        .bearer_auth(KEY_B)
        .send()
        .await
        .expect("events")
        .json()
        .await
        .expect("json");
    assert_eq!(theirs["events"].as_array().map(Vec::len), Some(0));
}

#[tokio::test]
async fn streaming_sends_the_task_first_and_subscribe_refuses_terminal_tasks() {
    let h = start().await;
    let resp = h
        .http
        .post(format!("{}/a2a/jsonrpc", h.base))
        .bearer_auth(KEY_A)
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 9, "method": "SendStreamingMessage", "params": {"message": user_message("m-stream", Some("approval"), json!([{"data": {"title": "t"}}]))}}))
        .send()
        .await
        .expect("send");
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap_or("")
            .starts_with("text/event-stream")
    );
    // The stream ends as soon as the run asks for input: well inside the edge's 15 s
    // re-read interval, which a stream waiting on a stale status would sit out.
    let text = tokio::time::timeout(std::time::Duration::from_secs(10), resp.text())
        .await
        .expect("the stream ends at the interrupted state")
        .expect("stream");
    let frames: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect();
    assert!(!frames.is_empty(), "{text}");
    assert!(frames.iter().all(|f| f["id"] == 9 && f["jsonrpc"] == "2.0"));
    assert!(
        frames[0]["result"].get("task").is_some(),
        "task first: {text}"
    );
    for f in &frames[1..] {
        let r = &f["result"];
        assert!(
            r.get("statusUpdate").is_some() || r.get("artifactUpdate").is_some(),
            "{f}"
        );
    }
    let last = frames.last().expect("last");
    let state = last["result"]["task"]["status"]["state"]
        .as_str()
        .or_else(|| last["result"]["statusUpdate"]["status"]["state"].as_str());
    assert_eq!(state, Some("TASK_STATE_INPUT_REQUIRED"));

    let done = h
        .rpc(
            "SendMessage",
            json!({"message": user_message("m-sub", Some("echo"), json!([{"data": {}}]))}),
        )
        .await;
    let id = done["result"]["task"]["id"].clone();
    assert_eq!(
        h.rpc("SubscribeToTask", json!({"id": id})).await["error"]["code"],
        -32004
    );
}

#[tokio::test]
async fn http_json_binding_serves_the_same_operations() {
    let h = start().await;
    let (status, sent) = h
        .rest(
            Some(KEY_A),
            Method::POST,
            "/message:send",
            Some(json!({"message": user_message("m-rest", Some("echo"), json!([{"text": "hi"}]))})),
        )
        .await;
    assert_eq!(status, 200, "{sent}");
    let task = &sent["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        task["artifacts"][0]["parts"][0]["data"],
        json!({"text": "hi"})
    );
    let id = task["id"].as_str().expect("id");
    // Both the projected and the raw bound id reach the task.
    for path in [
        format!("/tasks/{}", id.replace('/', "~2F")),
        format!("/tasks/{id}"),
        format!("/tasks/{}?historyLength=0", id.replace('/', "%2F")),
    ] {
        let (status, got) = h.rest(Some(KEY_A), Method::GET, &path, None).await;
        assert_eq!(status, 200, "{path}: {got}");
        assert_eq!(got["id"], json!(id));
    }
    let (_, got) = h
        .rest(
            Some(KEY_A),
            Method::GET,
            &format!("/tasks/{}?historyLength=0", id.replace('/', "~2F")),
            None,
        )
        .await;
    assert!(got.get("history").is_none());
    let (status, list) = h
        .rest(Some(KEY_A), Method::GET, "/tasks?pageSize=10", None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(list["totalSize"], 1);
    let (status, bad) = h
        .rest(Some(KEY_A), Method::GET, "/tasks?pageSize=500", None)
        .await;
    assert_eq!(status, 400);
    assert_eq!(bad["error"]["status"], "INVALID_ARGUMENT");
}

#[tokio::test]
async fn a_message_to_a_working_task_without_an_input_path_is_refused_and_not_dropped() {
    let h = start().await;
    let body = h
        .rpc("SendMessage", json!({"message": user_message("m-busy", Some("slow"), json!([{"data": {"ms": 30000}}])), "configuration": {"returnImmediately": true}}))
        .await;
    let task_id = body["result"]["task"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let mut follow = user_message("m-busy-2", None, json!([{"text": "are you done?"}]));
    follow["taskId"] = json!(task_id);
    let refused = h.rpc("SendMessage", json!({"message": follow})).await;
    assert_eq!(refused["error"]["code"], -32004, "{refused}");
    // The refused message is not in the task's history.
    let got = h.rpc("GetTask", json!({"id": task_id})).await;
    assert_eq!(
        got["result"]["history"].as_array().map(Vec::len),
        Some(1),
        "{got}"
    );
    h.rpc("CancelTask", json!({"id": task_id})).await;
}

#[tokio::test]
async fn a_live_stream_orders_artifacts_before_the_terminal_status_and_subscribe_starts_with_the_task()
 {
    let h = start().await;
    let open = |method: &'static str, params: Value| {
        let http = h.http.clone();
        let url = format!("{}/a2a/jsonrpc", h.base);
        async move {
            let text = http
                .post(url)
                .bearer_auth(KEY_A)
                .header("A2A-Version", "1.0")
                .json(&json!({"jsonrpc": "2.0", "id": "s", "method": method, "params": params}))
                .send()
                .await
                .expect("send")
                .text()
                .await
                .expect("stream");
            text.lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .filter_map(|d| serde_json::from_str::<Value>(d).ok())
                .map(|f| f["result"].clone())
                .collect::<Vec<Value>>()
        }
    };
    let frames = open(
        "SendStreamingMessage",
        json!({"message": user_message("m-live", Some("slow"), json!([{"data": {"ms": 400}}]))}),
    )
    .await;
    let kinds: Vec<&str> = frames
        .iter()
        .filter_map(|f| {
            f.as_object()
                .and_then(|o| o.keys().next())
                .map(String::as_str)
        })
        .collect();
    assert_eq!(kinds.first(), Some(&"task"), "{frames:?}");
    assert_eq!(kinds.last(), Some(&"statusUpdate"), "{frames:?}");
    let artifact_at = kinds
        .iter()
        .position(|k| *k == "artifactUpdate")
        .expect("an artifact update");
    assert!(artifact_at < kinds.len() - 1);
    assert_eq!(
        frames.last().expect("last")["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    assert_eq!(
        frames[artifact_at]["artifactUpdate"]["artifact"]["parts"][0]["data"]["waitedMs"],
        400
    );

    // SubscribeToTask on a live task: the current Task first, then the same kind of updates.
    let started = h
        .rpc("SendMessage", json!({"message": user_message("m-live-2", Some("slow"), json!([{"data": {"ms": 400}}])), "configuration": {"returnImmediately": true}}))
        .await;
    let id = started["result"]["task"]["id"].clone();
    let frames = open("SubscribeToTask", json!({"id": id})).await;
    assert_eq!(frames[0]["task"]["id"], id, "{frames:?}");
    assert_eq!(
        frames.last().expect("last")["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{frames:?}"
    );
}

#[tokio::test]
async fn tasks_are_durable_across_a_host_restart() {
    let first = start().await;
    let body = first
        .rpc("SendMessage", json!({"message": user_message("m-durable", Some("approval"), json!([{"data": {"title": "later"}}]))}))
        .await;
    let task = body["result"]["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    // A second host on the same data directory (a restart) answers the same task.
    let second = support::a2a::start_on(first.data_dir()).await;
    let got = second.rpc("GetTask", json!({"id": task["id"]})).await;
    assert_eq!(got["result"]["contextId"], task["contextId"], "{got}");
    assert_eq!(got["result"]["history"][0]["messageId"], "m-durable");
    let mut reply = user_message("m-durable-2", None, json!([{"data": {"action": "accept"}}]));
    reply["taskId"] = task["id"].clone();
    let done = second.rpc("SendMessage", json!({"message": reply})).await;
    assert_eq!(
        done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );
}

#[tokio::test]
async fn the_a2a_family_this_edge_serves_keeps_discovery_valid() {
    let h = start().await;
    let discovery: Value = h
        .http
        .get(format!("{}/.well-known/openwop", h.base))
        .send()
        .await
        .expect("discovery")
        .json()
        .await
        .expect("json");
    // The edge's family, plus `agentCards` (the host serves per-agent cards).
    // (and the card URL of the configured public URL).
    let mut served = openwop::discovery::a2a_fields();
    served["agentCards"] = json!(true);
    served["agentCardUrl"] = json!(format!("{}/.well-known/agent-card.json", h.base));
    assert_eq!(discovery["a2a"], served);
    let findings = openwop_generated::validators::validate_discovery(
        &discovery,
        &openwop_generated::validators::Options {
            today: Some((2026, 12, 2)),
        },
    );
    assert!(findings.is_empty(), "{findings:?}");
}

#[tokio::test]
async fn a_message_id_reused_for_a_different_message_returns_the_existing_task() {
    let h = start().await;
    let first = h
        .rpc(
            "SendMessage",
            json!({"message": user_message("m-reuse", Some("echo"), json!([{"data": {"v": 1}}]))}),
        )
        .await;
    assert!(first.get("result").is_some(), "{first}");
    let second = h
        .rpc(
            "SendMessage",
            json!({"message": user_message("m-reuse", Some("echo"), json!([{"data": {"v": 2}}]))}),
        )
        .await;
    // The map's SendMessage row: a repeated messageId returns the existing task, as it was.
    assert_eq!(
        second["result"]["task"]["id"], first["result"]["task"]["id"],
        "{second}"
    );
    assert_eq!(
        second["result"]["task"]["artifacts"][0]["parts"][0]["data"],
        json!({"v": 1})
    );
    assert_eq!(
        h.rpc("ListTasks", json!({})).await["result"]["totalSize"],
        1
    );
}

#[tokio::test]
async fn list_tasks_filters_by_status_timestamp() {
    let h = start().await;
    h.rpc(
        "SendMessage",
        json!({"message": user_message("m-ts", Some("echo"), json!([{"data": {}}]))}),
    )
    .await;
    let all = h
        .rpc(
            "ListTasks",
            json!({"statusTimestampAfter": "2000-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(all["result"]["totalSize"], 1, "{all}");
    let none = h
        .rpc(
            "ListTasks",
            json!({"statusTimestampAfter": "2999-01-01T00:00:00.000+02:00"}),
        )
        .await;
    assert_eq!(none["result"]["totalSize"], 0, "{none}");
    let bad = h
        .rpc("ListTasks", json!({"statusTimestampAfter": "yesterday"}))
        .await;
    assert_eq!(bad["error"]["code"], -32602);
}
