//! The MCP mount over streamable HTTP against a real host: each test names the rule.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::mcp::*;
use support::{KEY_A, KEY_B};

fn err_code(body: &Value) -> i64 {
    body["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no JSON-RPC error in {body}"))
}

#[tokio::test]
async fn anonymous_requests_get_a_jsonrpc_401_before_anything_is_read() {
    let h = start().await;
    let r = h
        .post_raw(
            None,
            &[],
            json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover"}),
        )
        .await;
    assert_eq!(r.status, 401);
    assert_eq!(r.body["jsonrpc"], "2.0");
    // JSON-RPC's invalid request: MCP forbids new codes in -32000..-32019.
    assert_eq!(r.body["error"]["code"], -32600, "{}", r.body);
    assert!(
        r.body.get("message").is_none(),
        "never the OpenWOP envelope: {}",
        r.body
    );
    // The MCP authorization challenge of an api-key host: a plain Bearer challenge (no
    // credential, so no error code) and no protected-resource pointer.
    let challenge = r
        .headers
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .expect("challenge")
        .to_owned();
    assert_eq!(challenge, "Bearer");
}

/// MCP authorization challenge matching the identity lanes: with api keys only there is no
/// authorization server, so no protected-resource document to point at (its
/// `authorization_servers` would be empty), and `error="invalid_token"` is only for a
/// credential that was presented.
#[tokio::test]
async fn mcp_authorization_challenge_is_plain_bearer_and_invalid_token_only_when_presented() {
    let h = start().await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover"});
    let unknown = h
        .post_raw(Some("not-a-key-0123456789"), &[], body.clone())
        .await;
    assert_eq!(unknown.status, 401);
    let challenge = unknown.headers["www-authenticate"].to_str().expect("ascii");
    assert!(
        challenge.starts_with("Bearer error=\"invalid_token\""),
        "{challenge}"
    );
    assert!(!challenge.contains("resource_metadata"), "{challenge}");
    let malformed = h
        .post_raw(None, &[("Authorization", "Basic abc".to_owned())], body)
        .await;
    let challenge = malformed.headers["www-authenticate"]
        .to_str()
        .expect("ascii");
    assert!(
        challenge.starts_with("Bearer error=\"invalid_request\""),
        "{challenge}"
    );
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let r = h
            .http
            .get(format!("{}{path}", h.base))
            .send()
            .await
            .expect("get");
        assert_eq!(r.status().as_u16(), 404, "{path}");
    }
}

#[tokio::test]
async fn discover_lists_the_facet_revisions_and_exactly_the_served_extensions() {
    let h = start().await;
    let r = h.call(KEY_A, "server/discover", json!({}), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let result = &r.body["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"], json!([MODERN, LEGACY]));
    assert_eq!(
        result["capabilities"]["extensions"],
        json!({"io.modelcontextprotocol/tasks": {}})
    );
    assert!(result["ttlMs"].is_u64());
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "openwop"
    );
    // Without tasks configured the extension disappears from discover.
    let h2 = support::mcp::start_with(openwop::edge::mcp::McpConfig {
        tasks: false,
        ..Default::default()
    })
    .await;
    let r = h2
        .call(KEY_A, "server/discover", json!({}), json!({}))
        .await;
    assert_eq!(r.body["result"]["capabilities"]["extensions"], json!({}));
}

#[tokio::test]
async fn header_checks_fail_closed_with_32020_on_400() {
    let h = start().await;
    let body = |method: &str, params: Value| json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let list = body("tools/list", json!({"_meta": meta(MODERN, json!({}))}));
    let cases: Vec<Vec<(&str, String)>> = vec![
        // No MCP-Protocol-Version at all.
        vec![("Mcp-Method", "tools/list".into())],
        // Header and _meta disagree.
        vec![
            ("MCP-Protocol-Version", LEGACY.into()),
            ("Mcp-Method", "tools/list".into()),
        ],
        // Mcp-Method missing or different.
        vec![("MCP-Protocol-Version", MODERN.into())],
        vec![
            ("MCP-Protocol-Version", MODERN.into()),
            ("Mcp-Method", "tools/call".into()),
        ],
    ];
    for headers in cases {
        let r = h.post_raw(Some(KEY_A), &headers, list.clone()).await;
        assert_eq!(
            (r.status, err_code(&r.body)),
            (400, -32020),
            "{headers:?}: {}",
            r.body
        );
    }
    let call = body(
        "tools/call",
        json!({"name": "echo", "_meta": meta(MODERN, json!({}))}),
    );
    let r = h
        .post_raw(
            Some(KEY_A),
            &[
                ("MCP-Protocol-Version", MODERN.into()),
                ("Mcp-Method", "tools/call".into()),
                ("Mcp-Name", "fail".into()),
            ],
            call,
        )
        .await;
    assert_eq!(
        (r.status, err_code(&r.body)),
        (400, -32020),
        "Mcp-Name mismatch: {}",
        r.body
    );
}

#[tokio::test]
async fn missing_meta_keys_are_32602_on_400() {
    let h = start().await;
    let r = h
        .post_raw(
            Some(KEY_A),
            &[("MCP-Protocol-Version", MODERN.into()), ("Mcp-Method", "tools/list".into())],
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}}),
        )
        .await;
    assert_eq!((r.status, err_code(&r.body)), (400, -32602), "{}", r.body);
}

#[tokio::test]
async fn an_unsupported_revision_is_refused_with_the_list_and_recorded() {
    let h = start().await;
    let mut params = json!({"_meta": meta("1900-01-01", json!({}))});
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("1900-01-01");
    let r = h
        .post_raw(
            Some(KEY_A),
            &[
                ("MCP-Protocol-Version", "1900-01-01".into()),
                ("Mcp-Method", "tools/list".into()),
            ],
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": params}),
        )
        .await;
    assert_eq!((r.status, err_code(&r.body)), (400, -32022), "{}", r.body);
    assert_eq!(
        r.body["error"]["data"]["supported"],
        json!([MODERN, LEGACY])
    );
    assert_eq!(r.body["error"]["data"]["requested"], "1900-01-01");
    assert_eq!(r.body["id"], 3);
    let decided = h.negotiations("acme").await;
    let refused = decided
        .iter()
        .find(|p| p["outcome"] == "refused")
        .expect("a refused negotiation.decided");
    assert_eq!(refused["protocol"], "mcp");
    assert_eq!(refused["floor"], LEGACY);
    // Below the floor is refused too, for the same reason code set.
    assert!(
        h.negotiations("other").await.is_empty(),
        "events stay in the caller's tenant"
    );
}

/// An initialize-era revision named in a request's `_meta` is not served there: -32022
/// with the list (the client initializes for it), and the record says refused, never
/// "downgraded" to a revision the request was not served.
#[tokio::test]
async fn an_initialize_era_revision_in_meta_is_refused_and_recorded_as_refused() {
    let h = start().await;
    let mut params = json!({"_meta": meta(LEGACY, json!({}))});
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(LEGACY);
    let r = h
        .post_raw(
            Some(KEY_A),
            &[
                ("MCP-Protocol-Version", LEGACY.into()),
                ("Mcp-Method", "tools/list".into()),
            ],
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": params}),
        )
        .await;
    assert_eq!((r.status, err_code(&r.body)), (400, -32022), "{}", r.body);
    assert_eq!(
        r.body["error"]["data"]["supported"],
        json!([MODERN, LEGACY])
    );
    assert_eq!(r.body["error"]["data"]["requested"], LEGACY);
    let decided = h.negotiations("acme").await;
    assert!(
        decided
            .iter()
            .all(|p| p["outcome"] != "downgraded" && p["outcome"] != "accepted"),
        "{decided:?}"
    );
    let refused = decided
        .iter()
        .find(|p| p["outcome"] == "refused")
        .expect("a refused negotiation.decided");
    assert_eq!(refused["requested"], LEGACY);
    assert!(
        refused.get("negotiated").is_none_or(Value::is_null),
        "{refused}"
    );
}

/// `tools/call` without an `id` is a notification, which gets no answer: nothing runs
/// (a run nobody learns the id of), and streamable HTTP says why on 400.
#[tokio::test]
async fn a_request_method_without_an_id_runs_nothing() {
    let h = start().await;
    let r = h
        .post_raw(
            Some(KEY_A),
            &[
                ("MCP-Protocol-Version", MODERN.into()),
                ("Mcp-Method", "tools/call".into()),
                ("Mcp-Name", "echo".into()),
            ],
            json!({"jsonrpc": "2.0", "method": "tools/call", "params": {
                "name": "echo", "arguments": {"x": 1}, "_meta": meta(MODERN, json!({}))}}),
        )
        .await;
    assert_eq!((r.status, err_code(&r.body)), (400, -32600), "{}", r.body);
    assert!(r.body["id"].is_null(), "{}", r.body);
    let runs: Value = h
        .http
        .get(format!("{}/runs", h.base))
        .bearer_auth(KEY_A)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(runs["runs"], json!([]), "{runs}");
}

#[tokio::test]
async fn every_accepted_modern_request_is_a_recorded_negotiation() {
    let h = start().await;
    h.call(KEY_A, "tools/list", json!({}), json!({})).await;
    let decided = h.negotiations("acme").await;
    assert!(
        decided
            .iter()
            .any(|p| p["outcome"] == "accepted" && p["negotiated"] == MODERN),
        "{decided:?}"
    );
}

#[tokio::test]
async fn tools_are_the_workflows_sorted_with_schemas_and_cache_fields() {
    let h = start().await;
    let r = h.call(KEY_A, "tools/list", json!({}), json!({})).await;
    let result = &r.body["result"];
    let names: Vec<&str> = result["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    for wf in ["approval", "echo", "slow"] {
        assert!(names.contains(&wf), "{wf} in {names:?}");
    }
    let slow = result["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "slow")
        .expect("slow");
    assert_eq!(slow["inputSchema"]["type"], "object");
    assert_eq!(slow["inputSchema"]["required"], json!(["ms"]));
    assert_eq!(result["cacheScope"], "private");
    assert!(result["ttlMs"].is_u64());
    assert_eq!(result["resultType"], "complete");
}

#[tokio::test]
async fn a_call_runs_the_workflow_over_transport_mcp() {
    let h = start().await;
    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "echo", "arguments": {"hello": "world"}}),
            json!({}),
        )
        .await;
    let result = &r.body["result"];
    assert_eq!(result["resultType"], "complete", "{}", r.body);
    assert_eq!(result["isError"], false);
    assert_eq!(result["structuredContent"]["hello"], "world");
    let runs = h
        .state
        .ops
        .list_runs(&h.subject("acme"), Default::default())
        .await
        .expect("runs");
    assert_eq!(runs.runs.len(), 1);
    assert_eq!(runs.runs[0].transport, "mcp");
}

#[tokio::test]
async fn failed_runs_are_tool_errors_not_protocol_errors() {
    let h = start().await;
    let r = h
        .call(KEY_A, "tools/call", json!({"name": "fail"}), json!({}))
        .await;
    assert_eq!(r.body["result"]["isError"], true, "{}", r.body);
}

/// SEP-1303: arguments that fail the tool's inputSchema are a tool execution error (a
/// result with `isError` and the schema's findings in its text) in both eras, and create no
/// run; a malformed call (arguments not an object, an unknown tool) stays a protocol error.
#[tokio::test]
async fn sep_1303_input_validation_failures_are_tool_errors_in_both_eras() {
    let h = start().await;
    for args in [json!({"ms": "soon"}), json!({})] {
        let r = h
            .call(
                KEY_A,
                "tools/call",
                json!({"name": "slow", "arguments": args}),
                json!({}),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        let result = &r.body["result"];
        assert_eq!(result["isError"], true, "{args}: {}", r.body);
        assert_eq!(result["resultType"], "complete");
        let text = result["content"][0]["text"].as_str().expect("text");
        assert!(text.contains("ms"), "{text}");
    }
    // The initialize era answers the same way.
    let init = h
        .post_raw(
            Some(KEY_A),
            &[],
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        )
        .await;
    let session = init.headers["mcp-session-id"]
        .to_str()
        .expect("session")
        .to_owned();
    let r = h
        .post_raw(
            Some(KEY_A),
            &[
                ("Mcp-Session-Id", session),
                ("MCP-Protocol-Version", LEGACY.to_owned()),
            ],
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "slow", "arguments": {"ms": "x"}}}),
        )
        .await;
    assert_eq!(r.body["result"]["isError"], true, "{}", r.body);
    assert!(
        r.body["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("argument `ms`")),
        "{}",
        r.body
    );
    // Malformed calls stay protocol errors.
    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "slow", "arguments": [1]}),
            json!({}),
        )
        .await;
    assert_eq!(err_code(&r.body), -32602, "{}", r.body);
    let r = h
        .call(KEY_A, "tools/call", json!({"name": "nope"}), json!({}))
        .await;
    assert_eq!(err_code(&r.body), -32602);
    let runs = h
        .state
        .ops
        .list_runs(&h.subject("acme"), Default::default())
        .await
        .expect("runs");
    assert!(runs.runs.is_empty());
}

#[tokio::test]
async fn a_schema_violation_says_in_the_message_which_argument_is_wrong_and_why() {
    let h = start().await;
    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": "soon"}}),
            json!({}),
        )
        .await;
    let message = r.body["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    assert!(message.contains("argument `ms`"), "{message}");
    assert!(message.contains("integer"), "{message}");
    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "slow", "arguments": {}}),
            json!({}),
        )
        .await;
    let message = r.body["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    assert!(
        message.contains("ms") && message.contains("required"),
        "{message}"
    );
    let r = h
        .call(KEY_A, "tools/call", json!({"name": "nope"}), json!({}))
        .await;
    let message = r.body["error"]["message"].as_str().expect("message");
    assert!(message.contains("nope"), "{message}");
}

#[tokio::test]
async fn a_suspended_run_asks_for_input_and_the_state_is_single_use_and_bound() {
    let h = start().await;
    let caps = json!({"elicitation": {}});
    let args = json!({"title": "ship it"});
    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "approval", "arguments": args}),
            caps.clone(),
        )
        .await;
    let result = r.body["result"].clone();
    assert_eq!(result["resultType"], "input_required", "{}", r.body);
    let requests = result["inputRequests"].as_object().expect("inputRequests");
    assert_eq!(requests.len(), 1);
    let (interrupt_id, request) = requests.iter().next().expect("one");
    assert_eq!(request["method"], "elicitation/create");
    let state = result["requestState"].as_str().expect("state").to_owned();
    let answer =
        json!({interrupt_id.clone(): {"action": "accept", "content": {"decision": "accept"}}});

    // Another principal, other arguments, or a tampered state are all refused.
    let retry = |args: Value, state: &str| json!({"name": "approval", "arguments": args, "requestState": state, "inputResponses": answer});
    let r = h
        .call(
            KEY_B,
            "tools/call",
            retry(args.clone(), &state),
            caps.clone(),
        )
        .await;
    assert_eq!(err_code(&r.body), -32602, "other principal: {}", r.body);
    let r = h
        .call(
            KEY_A,
            "tools/call",
            retry(json!({"title": "other"}), &state),
            caps.clone(),
        )
        .await;
    assert_eq!(err_code(&r.body), -32602, "other request: {}", r.body);
    let mut tampered = state.clone();
    tampered.insert(
        3,
        if tampered.as_bytes()[3] == b'A' {
            'B'
        } else {
            'A'
        },
    );
    let r = h
        .call(
            KEY_A,
            "tools/call",
            retry(args.clone(), &tampered),
            caps.clone(),
        )
        .await;
    assert_eq!(err_code(&r.body), -32602, "tampered: {}", r.body);

    let r = h
        .call(
            KEY_A,
            "tools/call",
            retry(args.clone(), &state),
            caps.clone(),
        )
        .await;
    assert_eq!(r.body["result"]["resultType"], "complete", "{}", r.body);
    assert_eq!(r.body["result"]["isError"], false);
    assert_eq!(
        r.body["result"]["structuredContent"]["decision"]["action"],
        "accept"
    );
    // The same state a second time: spent.
    let r = h.call(KEY_A, "tools/call", retry(args, &state), caps).await;
    assert_eq!(err_code(&r.body), -32602, "replay: {}", r.body);
}

#[tokio::test]
async fn input_is_only_asked_of_a_client_that_declared_elicitation() {
    let h = start().await;
    let r = h
        .call(KEY_A, "tools/call", json!({"name": "approval"}), json!({}))
        .await;
    assert_eq!(err_code(&r.body), -32021, "{}", r.body);
    assert!(r.body["error"]["data"]["requiredCapabilities"]["elicitation"].is_object());
}

#[tokio::test]
async fn an_unanswered_retry_is_asked_again_not_refused() {
    let h = start().await;
    let caps = json!({"elicitation": {}});
    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "approval"}),
            caps.clone(),
        )
        .await;
    let mut state = r.body["result"]["requestState"]
        .as_str()
        .expect("state")
        .to_owned();
    // Re-asking stays in the same round, so even more retries than maxRounds are fine.
    for _ in 0..5 {
        let r = h
            .call(
                KEY_A,
                "tools/call",
                json!({"name": "approval", "requestState": state, "inputResponses": {}}),
                caps.clone(),
            )
            .await;
        assert_eq!(
            r.body["result"]["resultType"], "input_required",
            "{}",
            r.body
        );
        state = r.body["result"]["requestState"]
            .as_str()
            .expect("state")
            .to_owned();
    }
}

#[tokio::test]
async fn a_round_beyond_max_rounds_is_refused() {
    let workflows = tempfile::tempdir().expect("dir");
    std::fs::write(
        workflows.path().join("twice.yaml"),
        "id: twice\ninputSchema: { type: object }\nnodes:\n  - id: one\n    kind: interrupt\n    interrupt: { kind: approval, data: { title: one } }\n  - id: two\n    kind: interrupt\n    interrupt: { kind: approval, data: { title: two } }\n",
    )
    .expect("write");
    let config = openwop::edge::mcp::McpConfig {
        max_rounds: 1,
        ..Default::default()
    };
    let h = support::mcp::start_full(config, Some(workflows.path().to_path_buf())).await;
    let caps = json!({"elicitation": {}});
    let r = h
        .call(KEY_A, "tools/call", json!({"name": "twice"}), caps.clone())
        .await;
    let result = &r.body["result"];
    assert_eq!(result["resultType"], "input_required", "{}", r.body);
    let key = result["inputRequests"]
        .as_object()
        .expect("requests")
        .keys()
        .next()
        .expect("one")
        .clone();
    let state = result["requestState"].as_str().expect("state");
    let r = h
        .call(KEY_A, "tools/call", json!({"name": "twice", "requestState": state, "inputResponses": {key: {"action": "accept", "content": {"decision": "accept"}}}}), caps)
        .await;
    assert_eq!(err_code(&r.body), -32602, "{}", r.body);
    assert_eq!(
        r.body["error"]["data"]["reason"],
        "mcp_mrtr_rounds_exceeded"
    );
}

#[tokio::test]
async fn with_tasks_a_running_call_answers_create_task_result_and_tasks_work() {
    let h = start().await;
    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 60000}}),
            tasks_caps(),
        )
        .await;
    let task = r.body["result"].clone();
    assert_eq!(task["resultType"], "task", "{}", r.body);
    assert_eq!(task["status"], "working");
    let task_id = task["taskId"].as_str().expect("taskId").to_owned();
    assert!(task.get("task").is_none(), "flat, no nested task");
    let run = h.run(&task_id).await;
    assert_eq!(run.transport, "mcp");

    let before = h.run(&task_id).await.last_sequence;
    let r = h
        .call(KEY_A, "tasks/get", json!({"taskId": task_id}), tasks_caps())
        .await;
    assert_eq!(r.body["result"]["status"], "working", "{}", r.body);
    assert_eq!(
        h.run(&task_id).await.last_sequence,
        before,
        "tasks/get appends nothing"
    );

    // Unknown and unreadable (another tenant's) tasks answer identically.
    let unknown = format!("{}x", &task_id[..task_id.len() - 1]);
    let a = h
        .call(
            KEY_A,
            "tasks/get",
            json!({"taskId": "acme:nope"}),
            tasks_caps(),
        )
        .await;
    let b = h
        .call(KEY_B, "tasks/get", json!({"taskId": task_id}), tasks_caps())
        .await;
    let c = h
        .call(KEY_A, "tasks/get", json!({"taskId": unknown}), tasks_caps())
        .await;
    for r in [&a, &b, &c] {
        assert_eq!(err_code(&r.body), -32602, "{}", r.body);
    }
    assert_eq!(
        b.body["error"]["message"],
        json!(format!("no task `{task_id}`"))
    );

    let r = h
        .call(
            KEY_A,
            "tasks/cancel",
            json!({"taskId": task_id}),
            tasks_caps(),
        )
        .await;
    // An empty ack (no task envelope); the outcome is read with tasks/get.
    assert_eq!(r.body["result"]["resultType"], "complete", "{}", r.body);
    for field in ["taskId", "status", "result", "error", "inputRequests"] {
        assert!(r.body["result"].get(field).is_none(), "{}", r.body);
    }
    assert_eq!(h.run(&task_id).await.status.as_str(), "cancelled");
    let got = h
        .call(KEY_A, "tasks/get", json!({"taskId": task_id}), tasks_caps())
        .await;
    assert_eq!(got.body["result"]["status"], "cancelled", "{}", got.body);

    // Cancelling a task that has ended answers the same ack and appends nothing.
    let before = h.run(&task_id).await;
    let again = h
        .call(
            KEY_A,
            "tasks/cancel",
            json!({"taskId": task_id}),
            tasks_caps(),
        )
        .await;
    assert_eq!(
        again.body["result"]["resultType"], "complete",
        "{}",
        again.body
    );
    assert!(
        again.body["result"].get("status").is_none(),
        "{}",
        again.body
    );
    assert_eq!(h.run(&task_id).await.last_sequence, before.last_sequence);
}

#[tokio::test]
async fn tasks_methods_need_the_extension_declared_on_this_request() {
    let h = start().await;
    let r = h
        .call(KEY_A, "tasks/get", json!({"taskId": "acme:x"}), json!({}))
        .await;
    assert_eq!(err_code(&r.body), -32021, "{}", r.body);
}

#[tokio::test]
async fn tasks_update_resolves_the_interrupt() {
    let h = start().await;
    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "approval"}),
            tasks_caps(),
        )
        .await;
    assert_eq!(
        r.body["result"]["resultType"], "task",
        "never input_required with tasks: {}",
        r.body
    );
    assert_eq!(r.body["result"]["status"], "input_required");
    let task_id = r.body["result"]["taskId"].as_str().expect("id").to_owned();
    let r = h
        .call(KEY_A, "tasks/get", json!({"taskId": task_id}), tasks_caps())
        .await;
    let (key, _) = r.body["result"]["inputRequests"]
        .as_object()
        .expect("requests")
        .iter()
        .next()
        .expect("one");
    // Keys never issued resolve nothing: an ack, and the run is untouched.
    let before = h.run(&task_id).await;
    let r = h
        .call(KEY_A, "tasks/update", json!({"taskId": task_id, "inputResponses": {"unknown-key": {"action": "accept", "content": {}}}}), tasks_caps())
        .await;
    assert_eq!(r.body["result"]["resultType"], "complete", "{}", r.body);
    let after = h.run(&task_id).await;
    assert_eq!(
        (after.status.as_str(), after.last_sequence),
        ("waiting-approval", before.last_sequence)
    );
    let r = h
        .call(KEY_A, "tasks/update", json!({"taskId": task_id, "inputResponses": {key: {"action": "accept", "content": {"decision": "accept"}}}}), tasks_caps())
        .await;
    assert_eq!(r.body["result"]["resultType"], "complete", "{}", r.body);
    h.wait_status(&task_id, "completed").await;
    let r = h
        .call(KEY_A, "tasks/get", json!({"taskId": task_id}), tasks_caps())
        .await;
    assert_eq!(r.body["result"]["status"], "completed");
    assert_eq!(r.body["result"]["result"]["isError"], false);
}

#[tokio::test]
async fn a_client_disconnect_before_the_answer_cancels_the_run() {
    let h = start().await;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(400))
        .build()
        .expect("client");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "slow", "arguments": {"ms": 60000}, "_meta": meta(MODERN, json!({}))}});
    let sent = client
        .post(format!("{}/mcp", h.base))
        .bearer_auth(KEY_A)
        .header("accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", MODERN)
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "slow")
        .json(&body)
        .send()
        .await;
    // The SSE headers may arrive before the timeout; the body never does. Drop it all.
    if let Ok(resp) = sent {
        let _ = resp.text().await;
    }
    drop(client);
    let mut run = None;
    for _ in 0..100 {
        let runs = h
            .state
            .ops
            .list_runs(&h.subject("acme"), Default::default())
            .await
            .expect("runs");
        if let Some(r) = runs.runs.first()
            && r.status.as_str() == "cancelled"
        {
            run = Some(r.clone());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let run = run.expect("the abandoned run was cancelled");
    let events = h.events(&run.run_id).await;
    let cancelled = events
        .iter()
        .find(|e| e.event_type == "run.cancelled")
        .expect("run.cancelled");
    assert_eq!(cancelled.payload["reason"], "mcp-request-cancelled");
}

#[tokio::test]
async fn after_the_answer_a_disconnect_changes_nothing() {
    let h = start().await;
    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 60000}}),
            tasks_caps(),
        )
        .await;
    let task_id = r.body["result"]["taskId"].as_str().expect("id").to_owned();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(h.run(&task_id).await.status.as_str(), "running");
}

#[tokio::test]
async fn legacy_clients_initialize_and_use_their_session() {
    let h = start().await;
    let r = h
        .post_raw(
            Some(KEY_A),
            &[],
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        )
        .await;
    assert_eq!(r.body["result"]["protocolVersion"], LEGACY, "{}", r.body);
    let session = r
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("session")
        .to_owned();
    let with_session = [
        ("Mcp-Session-Id", session.clone()),
        ("MCP-Protocol-Version", LEGACY.to_owned()),
    ];
    let r = h
        .post_raw(
            Some(KEY_A),
            &with_session,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
        )
        .await;
    assert!(r.body["result"]["tools"].is_array(), "{}", r.body);
    let r = h.post_raw(Some(KEY_A), &with_session, json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {"a": 1}}})).await;
    assert_eq!(r.body["result"]["isError"], false, "{}", r.body);
    // A session belongs to whoever opened it: anyone else gets what an id that never
    // existed gets, and cannot close it either.
    let list = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}});
    let r = h.post_raw(Some(KEY_B), &with_session, list.clone()).await;
    assert_eq!(r.status, 404, "{}", r.body);
    let never = [
        ("Mcp-Session-Id", openwop::ids::mint_opaque()),
        ("MCP-Protocol-Version", LEGACY.to_owned()),
    ];
    let unknown = h.post_raw(Some(KEY_B), &never, list.clone()).await;
    assert_eq!((r.status, &r.body), (unknown.status, &unknown.body));
    let delete = |key: &'static str| {
        h.http
            .delete(format!("{}/mcp", h.base))
            .bearer_auth(key)
            .header("Mcp-Session-Id", &session)
            .send()
    };
    assert_eq!(delete(KEY_B).await.expect("delete").status(), 404);
    let r = h.post_raw(Some(KEY_A), &with_session, list.clone()).await;
    assert!(r.body["result"]["tools"].is_array(), "{}", r.body);
    // DELETE closes it; a second DELETE finds nothing, as today.
    assert_eq!(delete(KEY_A).await.expect("delete").status(), 204);
    assert_eq!(delete(KEY_A).await.expect("delete").status(), 404);
    let r = h.post_raw(Some(KEY_A), &with_session, list).await;
    assert_eq!(r.status, 404, "{}", r.body);
    let decided = h.negotiations("acme").await;
    assert!(
        decided
            .iter()
            .any(|p| p["outcome"] == "downgraded" && p["negotiated"] == LEGACY),
        "the downgrade is recorded as one (interop.md: \"the event then reports outcome: downgraded\"): {decided:?}"
    );
}

#[tokio::test]
async fn initialize_below_the_floor_gets_a_counter_offer_and_the_refusal_is_recorded() {
    let h = start().await;
    for asked in ["2025-06-18", "2024-11-05", "1999-01-01"] {
        let r = h
            .post_raw(Some(KEY_A), &[], json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
            .await;
        assert_eq!(
            r.body["result"]["protocolVersion"], LEGACY,
            "{asked}: {}",
            r.body
        );
        assert!(r.headers.get("mcp-session-id").is_some(), "{asked}");
    }
    let decided = h.negotiations("acme").await;
    // The floor decided: each asked revision was refused, then the counter-offer accepted.
    for asked in ["2025-06-18", "2024-11-05"] {
        assert!(
            decided.iter().any(|p| p["requested"] == asked
                && p["outcome"] == "refused"
                && p["reason"] == "below-floor"),
            "{decided:?}"
        );
    }
    assert!(
        !decided.iter().any(|p| p["outcome"] != "refused"
            && p["negotiated"] != LEGACY
            && p["negotiated"] != MODERN),
        "nothing below the floor was accepted: {decided:?}"
    );
}

#[tokio::test]
async fn without_an_initialize_era_revision_initialize_is_refused_with_32022() {
    let config = openwop::settings::mcp_config(&openwop::settings::McpFileConfig {
        revisions: Some(vec![MODERN.to_owned()]),
        ..Default::default()
    })
    .expect("config");
    let h = support::mcp::start_with(config).await;
    let r = h
        .post_raw(Some(KEY_A), &[], json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}}}))
        .await;
    assert_eq!(err_code(&r.body), -32022, "{}", r.body);
    assert_eq!(r.body["error"]["data"]["supported"], json!([MODERN]));
    let r = h.call(KEY_A, "server/discover", json!({}), json!({})).await;
    assert_eq!(
        r.body["result"]["supportedVersions"],
        json!([MODERN]),
        "{}",
        r.body
    );
}

#[tokio::test]
async fn the_origin_guard_uses_the_allow_list_and_never_trusts_host() {
    let config = openwop::edge::mcp::McpConfig {
        allowed_origins: vec!["https://app.example.com".into()],
        ..Default::default()
    };
    let h = support::mcp::start_with(config).await;
    let port = h.base.rsplit(':').next().expect("port").to_owned();
    let discover = |origin: String, host: Option<String>| {
        let mut req = h
            .http
            .post(format!("{}/mcp", h.base))
            .bearer_auth(KEY_A)
            .header("accept", "application/json")
            .header("MCP-Protocol-Version", MODERN)
            .header("Mcp-Method", "server/discover")
            .header("Origin", origin)
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta(MODERN, json!({}))}}));
        if let Some(host) = host {
            req = req.header("Host", host);
        }
        req.send()
    };
    for (origin, host) in [
        (format!("http://127.0.0.1:{port}.evil.example"), None),
        (
            "http://evil.example".to_owned(),
            Some("evil.example".to_owned()),
        ),
        ("https://app.example.com.evil.example".to_owned(), None),
    ] {
        let resp = discover(origin.clone(), host).await.expect("send");
        assert_eq!(resp.status().as_u16(), 403, "{origin}");
        let body: Value = resp.json().await.expect("json");
        assert_eq!(body["error"]["code"], -32600, "a JSON-RPC refusal: {body}");
    }
    for origin in [
        format!("http://127.0.0.1:{port}"),
        "https://app.example.com".to_owned(),
    ] {
        let resp = discover(origin.clone(), None).await.expect("send");
        assert_eq!(resp.status().as_u16(), 200, "{origin}");
    }
}

#[tokio::test]
async fn get_is_405_and_unknown_methods_404() {
    let h = start().await;
    let resp = h
        .http
        .get(format!("{}/mcp", h.base))
        .bearer_auth(KEY_A)
        .send()
        .await
        .expect("get");
    assert_eq!(resp.status(), 405);
    let r = h.call(KEY_A, "ping", json!({}), json!({})).await;
    assert_eq!((r.status, err_code(&r.body)), (404, -32601));
    // initialize with 2026 _meta is a modern request for a removed method.
    let r = h.call(KEY_A, "initialize", json!({}), json!({})).await;
    assert_eq!((r.status, err_code(&r.body)), (404, -32601), "{}", r.body);
}

#[tokio::test]
async fn unknown_methods_are_404_before_any_header_check() {
    let h = start().await;
    let r = h
        .post_raw(
            Some(KEY_A),
            &[],
            json!({"jsonrpc": "2.0", "id": 9, "method": "tasks/result", "params": {}}),
        )
        .await;
    assert_eq!(
        (r.status, err_code(&r.body), r.body["id"].clone()),
        (404, -32601, json!(9)),
        "{}",
        r.body
    );
}

#[tokio::test]
async fn legacy_sessions_answer_ping_and_modern_requests_do_not() {
    let h = start().await;
    let r = h
        .post_raw(Some(KEY_A), &[], json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": LEGACY, "capabilities": {}}}))
        .await;
    let session = r
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("session")
        .to_owned();
    let r = h
        .post_raw(
            Some(KEY_A),
            &[("Mcp-Session-Id", session)],
            json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
        )
        .await;
    assert_eq!(r.body["result"], json!({}), "{}", r.body);
    let r = h.call(KEY_A, "ping", json!({}), json!({})).await;
    assert_eq!(err_code(&r.body), -32601);
}

#[tokio::test]
async fn the_conformance_fixtures_load_only_when_asked_and_text_outputs_are_text() {
    let h = start().await;
    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "test_simple_text"}),
            json!({}),
        )
        .await;
    assert_eq!(
        err_code(&r.body),
        -32602,
        "not served by default: {}",
        r.body
    );
    let pack =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mcp-conformance");
    let h = support::mcp::start_full(Default::default(), Some(pack)).await;
    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "test_simple_text"}),
            json!({}),
        )
        .await;
    let result = &r.body["result"];
    assert_eq!(
        result["content"][0]["text"], "This is a simple text response for testing.",
        "{}",
        r.body
    );
    assert_eq!(
        result["structuredContent"]["value"],
        "This is a simple text response for testing."
    );
    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "test_error_handling"}),
            json!({}),
        )
        .await;
    assert_eq!(r.body["result"]["isError"], true);
    assert!(
        r.body["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| !t.is_empty())
    );
}

/// A workflows dir with a wait in seconds, a workflow that fails itself, and one the host
/// fails (its second wait does not resolve to a number).
fn outcome_workflows() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("dir");
    let files = [
        (
            "secs.yaml",
            "id: secs\ninputSchema: { type: object }\nnodes:\n  - id: w\n    kind: wait\n    seconds: \"${inputs.s}\"\n",
        ),
        (
            "reports.yaml",
            "id: reports\ninputSchema: { type: object }\nnodes:\n  - id: w\n    kind: wait\n    ms: 300\n  - id: f\n    kind: fail\n    code: acme.broken\n    message: the job reports a failure\n",
        ),
        (
            "breaks.yaml",
            "id: breaks\ninputSchema: { type: object }\nnodes:\n  - id: w\n    kind: wait\n    ms: 300\n  - id: bad\n    kind: wait\n    ms: \"${inputs.missing}\"\n",
        ),
    ];
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("write");
    }
    dir
}

async fn settled_task(h: &support::TestHost, task_id: &str) -> Value {
    for _ in 0..100 {
        let r = h
            .call(KEY_A, "tasks/get", json!({"taskId": task_id}), tasks_caps())
            .await;
        if ["completed", "failed", "cancelled"]
            .contains(&r.body["result"]["status"].as_str().unwrap_or(""))
        {
            return r.body["result"].clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("task {task_id} never ended");
}

#[tokio::test]
async fn a_wait_in_seconds_keeps_a_deadline_that_many_seconds_away() {
    let workflows = outcome_workflows();
    let h =
        support::mcp::start_full(Default::default(), Some(workflows.path().to_path_buf())).await;
    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "secs", "arguments": {"s": 120}}),
            tasks_caps(),
        )
        .await;
    assert_eq!(r.body["result"]["resultType"], "task", "{}", r.body);
    let task_id = r.body["result"]["taskId"].as_str().expect("id").to_owned();
    let run = h.run(&task_id).await;
    let left = run.wait_until.expect("a stored deadline") - run.created_ms;
    assert!(
        (120_000..130_000).contains(&left),
        "deadline {left} ms after creation"
    );
    // Zero seconds finishes within the call, with or without tasks.
    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "secs", "arguments": {"s": 0}}),
            json!({}),
        )
        .await;
    assert_eq!(r.body["result"]["isError"], false, "{}", r.body);
}

#[tokio::test]
async fn a_failure_the_host_raises_is_a_failed_task_and_the_workflows_own_is_a_tool_error() {
    let workflows = outcome_workflows();
    let h =
        support::mcp::start_full(Default::default(), Some(workflows.path().to_path_buf())).await;

    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "reports"}),
            tasks_caps(),
        )
        .await;
    assert_eq!(r.body["result"]["resultType"], "task", "{}", r.body);
    let task = settled_task(&h, r.body["result"]["taskId"].as_str().expect("id")).await;
    assert_eq!(task["status"], "completed", "{task}");
    assert_eq!(task["result"]["isError"], true, "{task}");
    assert!(task.get("error").is_none(), "{task}");

    let r = h
        .call(KEY_A, "tools/call", json!({"name": "breaks"}), tasks_caps())
        .await;
    assert_eq!(r.body["result"]["resultType"], "task", "{}", r.body);
    let task = settled_task(&h, r.body["result"]["taskId"].as_str().expect("id")).await;
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(task["error"]["code"], -32603, "{task}");
    assert!(task["error"]["message"].is_string(), "{task}");
    assert_eq!(
        task["error"]["data"]["reason"], "validation_error",
        "{task}"
    );
    assert!(task.get("result").is_none(), "{task}");

    // Without tasks the same run is still a tool error, as the tools/call row says.
    let r = h
        .call(KEY_A, "tools/call", json!({"name": "breaks"}), json!({}))
        .await;
    assert_eq!(r.body["result"]["isError"], true, "{}", r.body);
}

/// Reads `data:` frames of an open SSE response until `n` have arrived (or 10 s pass).
async fn sse_frames(resp: &mut reqwest::Response, n: usize, buf: &mut String) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let frames: Vec<Value> = buf
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect();
        if frames.len() >= n {
            return frames;
        }
        let chunk = tokio::time::timeout_at(deadline, resp.chunk())
            .await
            .expect("frames in time")
            .expect("read");
        match chunk {
            Some(bytes) => buf.push_str(&String::from_utf8_lossy(&bytes)),
            None => return frames,
        }
    }
}

#[tokio::test]
async fn listen_acknowledges_only_readable_tasks_and_streams_their_changes_tagged() {
    let h = start().await;
    let mine = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "approval"}),
            tasks_caps(),
        )
        .await;
    let mine = mine.body["result"]["taskId"]
        .as_str()
        .expect("task")
        .to_owned();
    let theirs = h
        .call(
            KEY_B,
            "tools/call",
            json!({"name": "approval"}),
            tasks_caps(),
        )
        .await;
    let theirs = theirs.body["result"]["taskId"]
        .as_str()
        .expect("task")
        .to_owned();
    let never = "acme/AAAAAAAAAAAAAAAAAAAAAA";
    let open = |task_ids: Vec<&str>, caps: Value| {
        let mut params = json!({"notifications": {"taskIds": task_ids, "toolsListChanged": true, "promptsListChanged": true}});
        params["_meta"] = meta(MODERN, caps);
        h.http
            .post(format!("{}/mcp", h.base))
            .bearer_auth(KEY_A)
            .header("accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", MODERN)
            .header("Mcp-Method", "subscriptions/listen")
            .json(&json!({"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen", "params": params}))
            .send()
    };
    let mut resp = open(vec![mine.as_str(), theirs.as_str(), never], tasks_caps())
        .await
        .expect("listen");
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut buf = String::new();
    let frames = sse_frames(&mut resp, 1, &mut buf).await;
    // First frame: the acknowledgement, with the honoured subset only: the caller's own
    // task; the other tenant's is left out exactly as the one that never existed, and the
    // list-changed kinds this server never sends are not honoured.
    assert_eq!(
        frames[0]["method"], "notifications/subscriptions/acknowledged",
        "{}",
        frames[0]
    );
    assert_eq!(
        frames[0]["params"]["notifications"],
        json!({"taskIds": [mine]})
    );
    assert_eq!(
        frames[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );

    // A foreign task and an unknown one are acknowledged identically (both left out).
    let mut foreign = open(vec![theirs.as_str()], tasks_caps())
        .await
        .expect("listen");
    let mut unknown = open(vec![never], tasks_caps()).await.expect("listen");
    let (mut b1, mut b2) = (String::new(), String::new());
    assert_eq!(
        sse_frames(&mut foreign, 1, &mut b1).await[0],
        sse_frames(&mut unknown, 1, &mut b2).await[0]
    );
    drop((foreign, unknown));
    // Without the tasks extension declared, no task is honoured.
    let mut bare = open(vec![mine.as_str()], json!({})).await.expect("listen");
    let mut b3 = String::new();
    assert_eq!(
        sse_frames(&mut bare, 1, &mut b3).await[0]["params"]["notifications"],
        json!({})
    );
    drop(bare);

    // Resolving the caller's task streams what tasks/get would answer, tagged.
    let got = h
        .call(KEY_A, "tasks/get", json!({"taskId": mine}), tasks_caps())
        .await;
    let key = got.body["result"]["inputRequests"]
        .as_object()
        .expect("requests")
        .keys()
        .next()
        .expect("one")
        .clone();
    // The other tenant's task changing sends nothing on this stream.
    let _ = h
        .state
        .ops
        .cancel_run(
            &h.subject("other"),
            &openwop::ids::BoundId::parse_path(&theirs).unwrap(),
            None,
        )
        .await;
    h.call(KEY_A, "tasks/update", json!({"taskId": mine, "inputResponses": {key: {"action": "accept", "content": {"decision": "accept"}}}}), tasks_caps()).await;
    h.wait_status(&mine, "completed").await;
    let frames = sse_frames(&mut resp, 2, &mut buf).await;
    let tasks: Vec<&Value> = frames[1..].iter().collect();
    assert!(
        tasks.iter().all(|f| f["method"] == "notifications/tasks"),
        "{frames:?}"
    );
    assert!(
        tasks
            .iter()
            .all(|f| f["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub-1")
    );
    assert!(
        tasks.iter().all(|f| f["params"]["taskId"] == mine.as_str()),
        "never the other tenant's task: {frames:?}"
    );
    // Changes that land together may arrive as one notification: read until the last
    // one says completed.
    let mut frames = frames;
    while !frames
        .last()
        .is_some_and(|f| f["params"]["status"] == "completed")
    {
        frames = sse_frames(&mut resp, frames.len() + 1, &mut buf).await;
    }
    let last = frames.last().unwrap();
    assert_eq!(last["params"]["result"]["isError"], false, "{last}");
}

/// The `reason` of a run's `run.cancelled` event, if it was cancelled.
async fn cancel_reason(h: &support::TestHost, run_id: &str) -> Option<Value> {
    h.events(run_id)
        .await
        .into_iter()
        .find(|e| e.event_type == "run.cancelled")
        .map(|e| e.payload["reason"].clone())
}

/// One input_required round of `tool`: (interrupt key, requestState, the request).
async fn ask(h: &support::TestHost, tool: &str, caps: Value) -> (String, String, Value) {
    let r = h
        .call(KEY_A, "tools/call", json!({"name": tool}), caps)
        .await;
    let result = &r.body["result"];
    assert_eq!(result["resultType"], "input_required", "{}", r.body);
    let (key, request) = result["inputRequests"]
        .as_object()
        .expect("requests")
        .iter()
        .next()
        .expect("one");
    (
        key.clone(),
        result["requestState"].as_str().expect("state").to_owned(),
        request.clone(),
    )
}

#[tokio::test]
async fn a_malformed_answer_is_refused_without_spending_the_request_state() {
    let h = start().await;
    let caps = json!({"elicitation": {}});
    let (key, state, _) = ask(&h, "approval", caps.clone()).await;
    for bad in [
        json!({"action": "bogus"}),
        json!({"action": "accept", "content": {"decision": "maybe"}}),
        json!({"action": "accept", "content": "yes"}),
    ] {
        let r = h
            .call(
                KEY_A,
                "tools/call",
                json!({"name": "approval", "requestState": state, "inputResponses": {key.clone(): bad}}),
                caps.clone(),
            )
            .await;
        assert_eq!(err_code(&r.body), -32602, "{}", r.body);
        let message = r.body["error"]["message"].as_str().expect("message");
        assert!(message.contains(&key), "names the input: {message}");
    }
    // The corrected retry with the same state goes through.
    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "approval", "requestState": state, "inputResponses": {key: {"action": "accept", "content": {"decision": "accept"}}}}),
            caps,
        )
        .await;
    assert_eq!(r.body["result"]["isError"], false, "{}", r.body);
    let run_id = r.body["result"]["structuredContent"]["decision"].clone();
    assert_eq!(run_id["action"], "accept");
}

#[tokio::test]
async fn a_request_state_reveals_no_principal_run_or_interrupt() {
    let h = start().await;
    let (key, state, _) = ask(&h, "approval", json!({"elicitation": {}})).await;
    for needle in [key.as_str(), "acme", "alice", "approval"] {
        assert!(!state.contains(needle), "{needle} readable in {state}");
    }
    use base64::Engine as _;
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(state.trim_start_matches("v2."))
        .expect("base64url");
    let text = String::from_utf8_lossy(&raw);
    for needle in [key.as_str(), "acme/", "\"run\"", "principal"] {
        assert!(
            !text.contains(needle),
            "{needle} readable in the decoded state"
        );
    }
}

#[tokio::test]
async fn an_elicitation_answered_cancel_leaves_the_run_waiting_and_says_how_to_come_back() {
    let h = start().await;
    let caps = json!({"elicitation": {}});
    let (key, state, _) = ask(&h, "approval", caps.clone()).await;
    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "approval", "requestState": state, "inputResponses": {key: {"action": "cancel"}}}),
            caps,
        )
        .await;
    let result = &r.body["result"];
    assert_eq!(result["isError"], true, "{}", r.body);
    let text = result["content"][0]["text"].as_str().expect("text");
    assert!(text.contains("tasks/get"), "{text}");
    let task_id = result["structuredContent"]["taskId"]
        .as_str()
        .expect("taskId");
    assert!(task_id.contains("~2F"), "projected: {task_id}");
    assert!(text.contains(task_id), "{text}");
    let run = h.run(task_id).await;
    assert_eq!(run.status.as_str(), "waiting-approval");
    assert_eq!(cancel_reason(&h, task_id).await, None);
    // The task path picks the question up again.
    let r = h
        .call(KEY_A, "tasks/get", json!({"taskId": task_id}), tasks_caps())
        .await;
    assert_eq!(r.body["result"]["status"], "input_required", "{}", r.body);
    assert!(r.body["result"]["inputRequests"].is_object(), "{}", r.body);
}

#[tokio::test]
async fn a_refusal_after_the_run_started_ends_it_with_its_own_reason_on_http_400() {
    let h = start().await;
    let r = h
        .call(KEY_A, "tools/call", json!({"name": "approval"}), json!({}))
        .await;
    assert_eq!(err_code(&r.body), -32021, "{}", r.body);
    assert_eq!(
        r.status, 400,
        "the stateless row's status, not a 200 stream"
    );
    let run_id = r.body["error"]["data"]["runId"].as_str().expect("runId");
    assert_eq!(h.run(run_id).await.status.as_str(), "cancelled");
    assert_eq!(
        cancel_reason(&h, run_id).await,
        Some(json!("mcp-missing-capability"))
    );
}

#[tokio::test]
async fn a_round_beyond_max_rounds_ends_the_run_as_rounds_exceeded_not_request_cancelled() {
    let workflows = tempfile::tempdir().expect("dir");
    std::fs::write(
        workflows.path().join("twice.yaml"),
        "id: twice\ninputSchema: { type: object }\nnodes:\n  - id: one\n    kind: interrupt\n    interrupt: { kind: approval, data: { title: one } }\n  - id: two\n    kind: interrupt\n    interrupt: { kind: approval, data: { title: two } }\n",
    )
    .expect("write");
    let config = openwop::edge::mcp::McpConfig {
        max_rounds: 1,
        ..Default::default()
    };
    let h = support::mcp::start_full(config, Some(workflows.path().to_path_buf())).await;
    let caps = json!({"elicitation": {}});
    let (key, state, _) = ask(&h, "twice", caps.clone()).await;
    let r = h
        .call(KEY_A, "tools/call", json!({"name": "twice", "requestState": state, "inputResponses": {key: {"action": "accept", "content": {"decision": "accept"}}}}), caps)
        .await;
    assert_eq!(err_code(&r.body), -32602, "{}", r.body);
    let run_id = r.body["error"]["data"]["runId"].as_str().expect("runId");
    assert_eq!(
        cancel_reason(&h, run_id).await,
        Some(json!("mcp-mrtr-rounds-exceeded"))
    );
}

#[tokio::test]
async fn a_task_id_is_the_projected_run_id_and_either_form_reads_the_task() {
    let h = start().await;
    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 60000}}),
            tasks_caps(),
        )
        .await;
    let task_id = r.body["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    assert!(task_id.starts_with("acme~2F"), "{task_id}");
    let bound = task_id.replacen("~2F", "/", 1);
    for id in [&task_id, &bound] {
        let r = h
            .call(KEY_A, "tasks/get", json!({"taskId": id}), tasks_caps())
            .await;
        assert_eq!(r.body["result"]["taskId"], json!(task_id), "{}", r.body);
    }
    h.call(
        KEY_A,
        "tasks/cancel",
        json!({"taskId": task_id}),
        tasks_caps(),
    )
    .await;
}

#[tokio::test]
async fn a_task_offers_input_only_to_a_client_that_declared_elicitation() {
    let h = start().await;
    let no_elicitation = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "approval"}),
            no_elicitation.clone(),
        )
        .await;
    let task_id = r.body["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    let r = h
        .call(
            KEY_A,
            "tasks/get",
            json!({"taskId": task_id}),
            no_elicitation,
        )
        .await;
    let task = &r.body["result"];
    assert_eq!(task["status"], "input_required", "{}", r.body);
    assert!(task.get("inputRequests").is_none(), "{}", r.body);
    assert!(
        task["statusMessage"]
            .as_str()
            .is_some_and(|m| m.contains("elicitation")),
        "{}",
        r.body
    );
    let r = h
        .call(KEY_A, "tasks/get", json!({"taskId": task_id}), tasks_caps())
        .await;
    assert!(r.body["result"]["inputRequests"].is_object(), "{}", r.body);
}

#[tokio::test]
async fn a_credential_interrupt_is_asked_in_url_mode_of_a_client_that_declared_it() {
    let h = start().await;
    // Without url mode: a tool error saying what to declare; the run waits.
    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "credential"}),
            json!({"elicitation": {}}),
        )
        .await;
    assert_eq!(r.body["result"]["isError"], true, "{}", r.body);
    let text = r.body["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    assert!(text.contains("url"), "{text}");
    let caps = json!({"elicitation": {"form": {}, "url": {}}});
    let (key, state, request) = ask(&h, "credential", caps.clone()).await;
    assert_eq!(request["params"]["mode"], "url", "{request}");
    assert_eq!(
        request["params"]["url"],
        "https://localhost/connect/example"
    );
    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "credential", "requestState": state, "inputResponses": {key: {"action": "accept"}}}),
            caps.clone(),
        )
        .await;
    assert_eq!(r.body["result"]["isError"], false, "{}", r.body);
    assert_eq!(
        r.body["result"]["structuredContent"]["grant"]["outcome"],
        "authorized"
    );
    // With tasks, the task shows the same URL-mode request.
    let mut with_tasks = caps;
    with_tasks["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "credential"}),
            with_tasks.clone(),
        )
        .await;
    let task_id = r.body["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    let r = h
        .call(KEY_A, "tasks/get", json!({"taskId": task_id}), with_tasks)
        .await;
    let requests = r.body["result"]["inputRequests"]
        .as_object()
        .expect("requests");
    assert_eq!(
        requests.values().next().expect("one")["params"]["mode"],
        "url"
    );
}

#[tokio::test]
async fn a_call_with_a_progress_token_reports_progress_while_the_run_goes_on() {
    let config = openwop::edge::mcp::McpConfig {
        progress_every: Duration::from_millis(200),
        ..Default::default()
    };
    let h = support::mcp::start_with(config).await;
    let mut m = meta(MODERN, json!({}));
    m["progressToken"] = json!("tok-1");
    let resp = h
        .http
        .post(format!("{}/mcp", h.base))
        .bearer_auth(KEY_A)
        .header("accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", MODERN)
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "slow")
        .json(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "slow", "arguments": {"ms": 1200}, "_meta": m}}))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 200);
    let text = resp.text().await.expect("body");
    let messages: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: ").or_else(|| l.strip_prefix("data:")))
        .map(|d| serde_json::from_str(d).expect("json"))
        .collect();
    let (last, notes) = messages.split_last().expect("messages");
    assert_eq!(last["id"], 9, "the answer comes last: {text}");
    assert_eq!(last["result"]["isError"], false, "{last}");
    assert!(notes.len() >= 2, "node events and heartbeats: {text}");
    let mut previous = 0.0;
    for n in notes {
        assert_eq!(n["method"], "notifications/progress", "{n}");
        assert_eq!(n["params"]["progressToken"], "tok-1");
        let p = n["params"]["progress"].as_f64().expect("progress");
        assert!(p > previous, "progress increases: {text}");
        previous = p;
    }
    assert!(
        notes.iter().any(|n| n["params"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("started"))),
        "a node event is reported: {text}"
    );
}

#[tokio::test]
async fn a_call_without_a_progress_token_gets_no_notifications() {
    let h = start().await;
    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 300}}),
            json!({}),
        )
        .await;
    assert_eq!(
        r.body["id"], 7,
        "the first message is the answer: {}",
        r.body
    );
    assert_eq!(r.body["result"]["isError"], false);
}

#[tokio::test]
async fn the_call_timeout_is_configurable_and_the_answer_says_how_to_come_back() {
    let config = openwop::edge::mcp::McpConfig {
        call_timeout: Duration::from_millis(300),
        ..Default::default()
    };
    let h = support::mcp::start_with(config).await;
    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 60000}}),
            json!({}),
        )
        .await;
    let result = &r.body["result"];
    assert_eq!(result["isError"], true, "{}", r.body);
    let text = result["content"][0]["text"].as_str().expect("text");
    let task_id = result["structuredContent"]["taskId"]
        .as_str()
        .expect("taskId");
    assert!(
        text.contains("tasks/get") && text.contains(task_id),
        "{text}"
    );
    assert!(text.contains(&format!("GET /runs/{task_id}")), "{text}");
    // The run goes on: the answer was sent, so nothing cancelled it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(h.run(task_id).await.status.as_str(), "running");
    let r = h
        .call(KEY_A, "tasks/get", json!({"taskId": task_id}), tasks_caps())
        .await;
    assert_eq!(r.body["result"]["status"], "working", "{}", r.body);
}

/// Opens a 2025-11-25 session declaring `capabilities`; returns its id.
async fn legacy_session(h: &support::TestHost, capabilities: Value) -> String {
    let r = h
        .post_raw(
            Some(KEY_A),
            &[],
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": LEGACY, "capabilities": capabilities, "clientInfo": {"name": "t", "version": "1"}}}),
        )
        .await;
    r.headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("session")
        .to_owned()
}

/// A tools/call on a session, as an open SSE response.
async fn legacy_call(h: &support::TestHost, session: &str, tool: &str) -> reqwest::Response {
    h.http
        .post(format!("{}/mcp", h.base))
        .bearer_auth(KEY_A)
        .header("accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", session)
        .header("MCP-Protocol-Version", LEGACY)
        .json(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": tool, "arguments": {}}}))
        .send()
        .await
        .expect("send")
}

async fn post_response(h: &support::TestHost, session: &str, body: Value) -> u16 {
    h.http
        .post(format!("{}/mcp", h.base))
        .bearer_auth(KEY_A)
        .header("Mcp-Session-Id", session)
        .header("MCP-Protocol-Version", LEGACY)
        .json(&body)
        .send()
        .await
        .expect("send")
        .status()
        .as_u16()
}

#[tokio::test]
async fn a_legacy_session_that_declared_elicitation_is_asked_on_the_calls_stream() {
    let h = start().await;
    let session = legacy_session(&h, json!({"elicitation": {}})).await;
    let mut resp = legacy_call(&h, &session, "approval").await;
    assert_eq!(resp.status().as_u16(), 200);
    let mut buf = String::new();
    let frames = sse_frames(&mut resp, 1, &mut buf).await;
    let request = &frames[0];
    assert_eq!(request["method"], "elicitation/create", "{request}");
    assert_eq!(request["params"]["mode"], "form");
    assert!(request["params"]["requestedSchema"]["properties"]["decision"].is_object());
    let id = request["id"].clone();
    // A malformed answer is refused and spends nothing; the corrected one is taken.
    let bad = post_response(
        &h,
        &session,
        json!({"jsonrpc": "2.0", "id": id, "result": {"action": "bogus"}}),
    )
    .await;
    assert_eq!(bad, 400);
    let ok = post_response(&h, &session, json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {"decision": "accept"}}})).await;
    assert_eq!(ok, 202);
    // The same answer again: spent.
    let again = post_response(&h, &session, json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {"decision": "accept"}}})).await;
    assert_eq!(again, 400);
    let frames = sse_frames(&mut resp, 2, &mut buf).await;
    let answer = &frames[1];
    assert_eq!(answer["id"], 5, "{answer}");
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["decision"]["action"],
        "accept"
    );
}

#[tokio::test]
async fn a_legacy_elicitation_dismissed_leaves_the_run_waiting() {
    let h = start().await;
    let session = legacy_session(&h, json!({"elicitation": {}})).await;
    let mut resp = legacy_call(&h, &session, "clarify").await;
    let mut buf = String::new();
    let frames = sse_frames(&mut resp, 1, &mut buf).await;
    let id = frames[0]["id"].clone();
    assert_eq!(
        post_response(
            &h,
            &session,
            json!({"jsonrpc": "2.0", "id": id, "result": {"action": "cancel"}})
        )
        .await,
        202
    );
    let frames = sse_frames(&mut resp, 2, &mut buf).await;
    let answer = &frames[1]["result"];
    assert_eq!(answer["isError"], true, "{answer}");
    let task_id = answer["structuredContent"]["taskId"]
        .as_str()
        .expect("taskId");
    assert_eq!(h.run(task_id).await.status.as_str(), "waiting-input");
}

#[tokio::test]
async fn a_legacy_session_without_elicitation_is_not_asked_and_is_told_how_to_come_back() {
    let h = start().await;
    let session = legacy_session(&h, json!({})).await;
    let resp = legacy_call(&h, &session, "approval").await;
    let text = resp.text().await.expect("body");
    assert!(!text.contains("elicitation/create"), "{text}");
    assert!(text.contains("\"isError\":true"), "{text}");
    assert!(text.contains("GET /runs/"), "{text}");
}

/// A workflow's declared answer and tool metadata reach MCP: `outputSchema` and
/// `annotations` in tools/list, the answer's parts as content blocks (text, resource_link,
/// image, text of data) with the outputs as structuredContent.
#[tokio::test]
async fn declared_answers_are_content_blocks_and_tool_metadata_is_listed() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/answers");
    let h = support::mcp::start_full(Default::default(), Some(dir)).await;
    let r = h.call(KEY_A, "tools/list", json!({}), json!({})).await;
    let tools = r.body["result"]["tools"].as_array().expect("tools").clone();
    let greet = tools
        .iter()
        .find(|t| t["name"] == "greet")
        .expect("greet listed");
    assert_eq!(
        greet["annotations"],
        json!({"readOnlyHint": true, "idempotentHint": true})
    );
    assert_eq!(greet["outputSchema"]["type"], "object");
    assert_eq!(greet["outputSchema"]["required"], json!(["greeting"]));
    let echo = tools
        .iter()
        .find(|t| t["name"] == "echo")
        .expect("echo listed");
    assert!(echo.get("outputSchema").is_none() && echo.get("annotations").is_none());

    let r = h
        .call(
            KEY_A,
            "tools/call",
            json!({"name": "greet", "arguments": {"name": "Ada"}}),
            json!({}),
        )
        .await;
    let result = &r.body["result"];
    assert_eq!(result["isError"], false, "{}", r.body);
    assert_eq!(
        result["structuredContent"],
        json!({"greeting": "Hello, Ada!"})
    );
    assert_eq!(
        result["content"],
        json!([
            {"type": "text", "text": "Hello, Ada!"},
            {"type": "resource_link", "uri": "https://files.example.com/Ada.txt", "name": "Ada.txt", "mimeType": "text/plain"},
            {"type": "image", "data": "aGk=", "mimeType": "image/png"},
            {"type": "text", "text": "{\"who\":\"Ada\"}"}
        ])
    );
}

/// SEP-2243 custom headers: a tool whose input schema marks `region` with
/// `x-mcp-header: Region` (the conformance fixture `test_custom_header`) is called only
/// with `Mcp-Param-Region` mirroring the argument, literally or as `=?base64?…?=`; a
/// missing, different or undecodable header, or one for an argument the body lacks, is
/// -32020 on HTTP 400 and starts no run.
#[tokio::test]
async fn a_tools_x_mcp_header_argument_must_be_mirrored_in_its_mcp_param_header() {
    let pack =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mcp-conformance");
    let h = support::mcp::start_full(Default::default(), Some(pack)).await;
    let call = |region: Option<Value>, header: Option<&str>| {
        let h = &h;
        let header = header.map(str::to_owned);
        async move {
            let mut arguments = json!({});
            if let Some(r) = region {
                arguments["region"] = r;
            }
            let mut headers = vec![
                ("MCP-Protocol-Version", MODERN.to_owned()),
                ("Mcp-Method", "tools/call".to_owned()),
                ("Mcp-Name", "test_custom_header".to_owned()),
            ];
            if let Some(v) = header {
                headers.push(("Mcp-Param-Region", v));
            }
            h.post_raw(
                Some(KEY_A),
                &headers,
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                    "name": "test_custom_header", "arguments": arguments, "_meta": meta(MODERN, json!({}))}}),
            )
            .await
        }
    };
    let ok = call(Some(json!("eu-west")), Some("eu-west")).await;
    assert_eq!(ok.body["result"]["isError"], false, "{}", ok.body);
    // "Hello" as Base64, in the encoded-word wrapper.
    let ok = call(Some(json!("Hello")), Some("=?base64?SGVsbG8=?=")).await;
    assert_eq!(ok.body["result"]["isError"], false, "{}", ok.body);
    let runs = || async {
        let body: Value = h
            .http
            .get(format!("{}/runs?limit=100", h.base))
            .bearer_auth(KEY_A)
            .send()
            .await
            .expect("list")
            .json()
            .await
            .expect("json");
        body["runs"].as_array().map(Vec::len)
    };
    let before = runs().await;
    for (region, header, why) in [
        (Some(json!("eu-west")), None, "missing"),
        (Some(json!("eu-west")), Some("us-east"), "different"),
        (
            Some(json!("Hello")),
            Some("=?base64?SGVsbG8?="),
            "bad padding",
        ),
        (
            Some(json!("Hello")),
            Some("=?base64?SGVs!!!bG8=?="),
            "not Base64",
        ),
        (None, Some("eu-west"), "no such argument"),
    ] {
        let r = call(region, header).await;
        assert_eq!(r.status, 400, "{why}: {}", r.body);
        assert_eq!(err_code(&r.body), -32020, "{why}: {}", r.body);
    }
    assert_eq!(runs().await, before, "no refused call started a run");
}

/// POSTs raw bytes to the mount as a well-formed 2026 request of `method` would travel.
async fn post_bytes(
    h: &support::TestHost,
    content_type: Option<&str>,
    method: &str,
    body: String,
) -> (u16, String) {
    let mut req = h
        .http
        .post(format!("{}/mcp", h.base))
        .bearer_auth(KEY_A)
        .header("accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", MODERN)
        .header("Mcp-Method", method)
        .body(body);
    if let Some(ct) = content_type {
        req = req.header("Content-Type", ct);
    }
    let resp = req.send().await.expect("send");
    let status = resp.status().as_u16();
    (status, resp.text().await.expect("body"))
}

fn modern_request(id: &str, method: &str) -> String {
    let meta = meta(MODERN, json!({}));
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{"_meta":{meta}}}}}"#)
}

/// Strict JSON-RPC: the MCP endpoint takes JSON-RPC as application/json only; anything
/// else is a JSON-RPC error on HTTP 415, before the body is read.
#[tokio::test]
async fn strict_jsonrpc_the_mount_refuses_a_non_json_content_type() {
    let h = start().await;
    let body = modern_request("1", "tools/list");
    for ct in [
        Some("text/plain"),
        None,
        Some("application/x-www-form-urlencoded"),
    ] {
        let (status, text) = post_bytes(&h, ct, "tools/list", body.clone()).await;
        assert_eq!(status, 415, "{ct:?}: {text}");
        let reply: Value = serde_json::from_str(&text).expect("a JSON-RPC error");
        assert_eq!(reply["jsonrpc"], "2.0");
        assert_eq!(err_code(&reply), -32600, "{reply}");
    }
    let (status, text) = post_bytes(
        &h,
        Some("application/json; charset=utf-8"),
        "tools/list",
        body,
    )
    .await;
    assert_eq!(status, 200, "{text}");
}

/// Strict JSON-RPC: a member repeated in any object is an invalid request (-32600).
#[tokio::test]
async fn strict_jsonrpc_duplicate_members_are_invalid_requests() {
    let h = start().await;
    let meta = meta(MODERN, json!({}));
    for body in [
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{{"_meta":{meta}}}}}"#
        ),
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","name":"fail","_meta":{meta}}}}}"#
        ),
    ] {
        let (status, text) = post_bytes(&h, Some("application/json"), "tools/call", body).await;
        let reply: Value = serde_json::from_str(&text).expect("json");
        assert_eq!((status, err_code(&reply)), (400, -32600), "{reply}");
    }
    let runs = h
        .state
        .ops
        .list_runs(&h.subject("acme"), Default::default())
        .await
        .expect("runs");
    assert!(runs.runs.is_empty(), "nothing ran");
}

/// Strict JSON-RPC: ids come back byte for byte, a 30-digit integer included, on answers
/// and refusals alike.
#[tokio::test]
async fn strict_jsonrpc_ids_are_echoed_byte_for_byte() {
    let h = start().await;
    for id in ["123456789012345678901234567890", r#""\u0041b""#] {
        let (status, text) = post_bytes(
            &h,
            Some("application/json"),
            "tools/list",
            modern_request(id, "tools/list"),
        )
        .await;
        assert_eq!(status, 200, "{text}");
        assert!(text.contains(&format!(r#""id":{id},"#)), "{id}: {text}");
        let (_, text) = post_bytes(
            &h,
            Some("application/json"),
            "nope/x",
            modern_request(id, "nope/x"),
        )
        .await;
        assert!(text.contains(&format!(r#""id":{id},"#)), "{id}: {text}");
    }
}

/// MCP `ping`: the initialize era's ping is answered `{}` at any time, before `initialize`
/// too (as in a session, checked above); the stateless era removed it (SEP-2575: 404).
#[tokio::test]
async fn ping_is_answered_in_the_initialize_era_before_a_session_too() {
    let h = start().await;
    let r = h
        .post_raw(
            Some(KEY_A),
            &[],
            json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["result"].clone()),
        (200, json!({})),
        "{}",
        r.body
    );
    assert_eq!(r.body["id"], 3);
    let r = h
        .post_raw(
            Some(KEY_A),
            &[("MCP-Protocol-Version", LEGACY.to_owned())],
            json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}),
        )
        .await;
    assert_eq!(r.body["result"], json!({}), "{}", r.body);
    // Still authenticated first.
    let r = h
        .post_raw(
            None,
            &[],
            json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}),
        )
        .await;
    assert_eq!(r.status, 401);
    let r = h.call(KEY_A, "ping", json!({}), json!({})).await;
    assert_eq!((r.status, err_code(&r.body)), (404, -32601));
}

/// Approval answers are checked against the interrupt's offered actions on the MCP edge
/// too: `{"action": "maybe"}` and a decision outside them are refused naming the offered
/// actions, the requestState stays usable, and the run stays waiting.
#[tokio::test]
async fn an_approval_answer_outside_its_offered_actions_is_refused_and_the_run_waits() {
    let h = start().await;
    let caps = json!({"elicitation": {}});
    let (key, state, _) = ask(&h, "approval", caps.clone()).await;
    for bad in [
        json!({"action": "maybe"}),
        json!({"action": "accept", "content": {"decision": "maybe"}}),
    ] {
        let r = h
            .call(
                KEY_A,
                "tools/call",
                json!({"name": "approval", "requestState": state, "inputResponses": {key.clone(): bad}}),
                caps.clone(),
            )
            .await;
        assert_eq!(err_code(&r.body), -32602, "{}", r.body);
        let said = r.body["error"]["message"].as_str().expect("message");
        assert!(said.contains("accept") && said.contains("reject"), "{said}");
    }
    let runs = h
        .state
        .ops
        .list_runs(&h.subject("acme"), Default::default())
        .await
        .expect("runs");
    assert_eq!(runs.runs.len(), 1);
    assert_eq!(runs.runs[0].status.as_str(), "waiting-approval");
}
