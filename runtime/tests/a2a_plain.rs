//! A2A 1.0 as a client that knows nothing of OpenWOP meets it: no `metadata.openwop`,
//! the wire rules of A2A 1.0.1 and of our interop map. Each test names the rule it checks.

mod support;

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use support::a2a::*;
use support::{KEY_A, TestHost};

fn plain(id: &str, text: &str) -> Value {
    user_message(id, None, json!([{"text": text}]))
}

async fn rest_raw(
    h: &TestHost,
    method: Method,
    path: &str,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> reqwest::Response {
    let mut req = h
        .http
        .request(method, format!("{}/a2a/rest{path}", h.base))
        .bearer_auth(KEY_A)
        .header("A2A-Version", "1.0")
        .body(body);
    if let Some(ct) = content_type {
        req = req.header("Content-Type", ct);
    }
    req.send().await.expect("send")
}

/// The SSE `data:` frames of a finished response.
fn frames(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

fn state_of(frame: &Value) -> Option<&str> {
    let r = frame.get("result").unwrap_or(frame);
    r["task"]["status"]["state"]
        .as_str()
        .or_else(|| r["statusUpdate"]["status"]["state"].as_str())
}

#[tokio::test]
async fn a_jsonrpc_request_without_id_is_a_notification_never_executed_nor_answered() {
    let h = start().await;
    let resp = h
        .http
        .post(format!("{}/a2a/jsonrpc", h.base))
        .bearer_auth(KEY_A)
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "method": "SendMessage",
                      "params": {"message": user_message("m-notify", Some("echo"), json!([{"text": "x"}]))}}))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 204);
    assert!(resp.text().await.expect("body").is_empty());
    let listed = h.rpc("ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], 0, "{listed}");
    // An explicit null id is a request (answered with id null).
    let (status, body) = h
        .rpc_with(Some(KEY_A), Some("1.0"), "ListTasks", json!({}))
        .await;
    assert_eq!((status, body["id"].clone()), (200, json!("req-1")));
}

/// JSON-RPC 2.0 §4.1: a notification gets no answer even when its params are malformed
/// (by-position params here), while the same request with an id is told -32602.
#[tokio::test]
async fn a_notification_with_malformed_params_is_still_not_answered() {
    let h = start().await;
    let post = |body: Value| {
        h.http
            .post(format!("{}/a2a/jsonrpc", h.base))
            .bearer_auth(KEY_A)
            .header("A2A-Version", "1.0")
            .json(&body)
            .send()
    };
    let resp = post(json!({"jsonrpc": "2.0", "method": "SendMessage", "params": [1, 2]}))
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 204);
    assert!(resp.text().await.expect("body").is_empty());
    let resp = post(json!({"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": [1, 2]}))
        .await
        .expect("send");
    let body: Value = resp.json().await.expect("json");
    assert_eq!(
        (body["id"].clone(), body["error"]["code"].clone()),
        (json!(7), json!(-32602)),
        "{body}"
    );
}

#[tokio::test]
async fn http_json_bodies_must_be_a2a_json_or_415() {
    let h = start().await;
    let body = serde_json::to_vec(
        &json!({"message": user_message("m-ct", Some("echo"), json!([{"text": "x"}]))}),
    )
    .unwrap();
    let refused = rest_raw(
        &h,
        Method::POST,
        "/message:send",
        Some("text/plain"),
        body.clone(),
    )
    .await;
    assert_eq!(refused.status().as_u16(), 415);
    let refusal: Value = refused.json().await.expect("json");
    assert_eq!(refusal["error"]["code"], 415, "{refusal}");
    assert_eq!(refusal["error"]["status"], "INVALID_ARGUMENT");
    let none = rest_raw(&h, Method::POST, "/message:send", None, body.clone()).await;
    assert_eq!(none.status().as_u16(), 415);
    assert_eq!(
        h.rpc("ListTasks", json!({})).await["result"]["totalSize"],
        0,
        "nothing was started"
    );
    for ct in ["application/a2a+json", "application/json; charset=utf-8"] {
        let mut b: Value = serde_json::from_slice(&body).unwrap();
        b["message"]["messageId"] = json!(format!("m-ct-{ct}"));
        let ok = rest_raw(
            &h,
            Method::POST,
            "/message:send",
            Some(ct),
            serde_json::to_vec(&b).unwrap(),
        )
        .await;
        assert_eq!(ok.status().as_u16(), 200, "{ct}");
    }
}

/// A member repeated in an HTTP+JSON body is refused, as the JSON-RPC binding refuses it:
/// serde's `Value` keeps the last one, and something in front of the host reading the first
/// would see another request. Nothing is started.
#[tokio::test]
async fn http_json_bodies_with_a_repeated_member_are_refused() {
    let h = start().await;
    let body = br#"{"message": {"role": "ROLE_USER", "messageId": "m-a", "messageId": "m-b", "parts": [{"text": "x"}]}}"#;
    let refused = rest_raw(
        &h,
        Method::POST,
        "/message:send",
        Some("application/a2a+json"),
        body.to_vec(),
    )
    .await;
    assert_eq!(refused.status().as_u16(), 400);
    let refusal: Value = refused.json().await.expect("json");
    assert_eq!(refusal["error"]["status"], "INVALID_ARGUMENT", "{refusal}");
    assert!(
        refusal["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("`messageId` appears twice")),
        "{refusal}"
    );
    assert_eq!(
        h.rpc("ListTasks", json!({})).await["result"]["totalSize"],
        0,
        "nothing was started"
    );
}

#[tokio::test]
async fn a_wrong_method_on_an_existing_route_is_405_with_allow_and_an_unknown_route_404() {
    let h = start().await;
    let wrong = rest_raw(&h, Method::DELETE, "/message:send", None, Vec::new()).await;
    assert_eq!(wrong.status().as_u16(), 405);
    assert_eq!(wrong.headers()["allow"], "POST");
    let body: Value = wrong.json().await.expect("json");
    assert_eq!(body["error"]["code"], 405, "{body}");
    let unknown = rest_raw(&h, Method::GET, "/no/such/route", None, Vec::new()).await;
    assert_eq!(unknown.status().as_u16(), 404);
    let rpc_get = h
        .http
        .get(format!("{}/a2a/jsonrpc", h.base))
        .bearer_auth(KEY_A)
        .send()
        .await
        .expect("send");
    assert_eq!(rpc_get.status().as_u16(), 405);
    assert_eq!(rpc_get.headers()["allow"], "POST");
}

#[tokio::test]
async fn an_oversized_body_is_413_resource_exhausted() {
    let h = start().await;
    let big = vec![b' '; 1024 * 1024 + 10];
    let resp = rest_raw(
        &h,
        Method::POST,
        "/message:send",
        Some("application/json"),
        big,
    )
    .await;
    assert_eq!(resp.status().as_u16(), 413);
    let body: Value = resp.json().await.expect("json");
    assert_eq!(body["error"]["status"], "RESOURCE_EXHAUSTED", "{body}");
    assert_eq!(body["error"]["code"], 413);
}

#[tokio::test]
async fn the_card_carries_last_modified_beside_etag_and_cache_control() {
    let h = start().await;
    let resp = h
        .http
        .get(format!("{}/.well-known/agent-card.json", h.base))
        .send()
        .await
        .expect("card");
    let headers = resp.headers().clone();
    assert!(headers.contains_key("etag") && headers.contains_key("cache-control"));
    let modified = headers["last-modified"].to_str().expect("ascii");
    assert!(
        modified.ends_with(" GMT") && modified.len() == 29,
        "IMF-fixdate: {modified}"
    );
    let again = h
        .http
        .get(format!("{}/.well-known/agent-card.json", h.base))
        .header("If-None-Match", headers["etag"].clone())
        .send()
        .await
        .expect("card");
    assert_eq!(again.status().as_u16(), 304);
    assert_eq!(again.headers()["last-modified"], modified);
}

#[tokio::test]
async fn proto_field_names_are_accepted_as_protojson_parsers_do() {
    let h = start().await;
    // SendMessage spelled with proto names throughout.
    let sent = h
        .rpc(
            "SendMessage",
            json!({"message": {"message_id": "m-proto", "role": "ROLE_USER",
                               "parts": [{"data": {"a": 1}}],
                               "metadata": {"openwop": {"skill": "echo"}}},
                   "configuration": {"history_length": 0}}),
        )
        .await;
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    assert!(task.get("history").is_none(), "history_length 0: {task}");
    let id = task["id"].as_str().expect("id");
    let got = h
        .rpc("GetTask", json!({"id": id, "history_length": 0}))
        .await;
    assert!(got["result"].get("history").is_none(), "{got}");
    assert_eq!(
        h.rpc("GetTask", json!({"id": id})).await["result"]["history"][0]["messageId"],
        "m-proto"
    );
    // A continuation naming its task with `task_id`.
    let asked = h
        .rpc(
            "SendMessage",
            json!({"message": plain("m-proto-2", "hello")}),
        )
        .await;
    let asked_id = asked["result"]["task"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let reply = json!({"message": {"message_id": "m-proto-3", "role": "ROLE_USER",
                                   "task_id": asked_id, "parts": [{"text": "go on"}]}});
    let done = h.rpc("SendMessage", reply).await;
    assert_eq!(
        done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );
    // HTTP+JSON query parameters too.
    let (status, page) = h
        .rest(
            Some(KEY_A),
            Method::GET,
            "/tasks?page_size=1&include_artifacts=true",
            None,
        )
        .await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["pageSize"], 1);
    assert!(page["tasks"][0].get("artifacts").is_some(), "{page}");
    // Push config paths read `task_id` in a body as well.
    let (_, listed) = h
        .rest(
            Some(KEY_A),
            Method::GET,
            &format!("/tasks/{}/pushNotificationConfigs", id.replace('/', "~2F")),
            None,
        )
        .await;
    assert_eq!(listed["configs"], json!([]), "{listed}");
}

#[tokio::test]
async fn history_carries_only_a2a_message_fields_while_metadata_and_extensions_round_trip() {
    let h = start().await;
    let mut message = user_message(
        "m-fields",
        Some("echo"),
        json!([{"text": "x", "vendorPartHint": 7}]),
    );
    message["clientOwn"] = json!({"secret": "not for the wire"});
    message["kind"] = json!("message");
    message["metadata"]["mine"] = json!({"deep": [1, {"k": "v"}]});
    message["extensions"] = json!(["https://ext.example/one"]);
    let sent = h.rpc("SendMessage", json!({"message": message})).await;
    let id = sent["result"]["task"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let from_get = h.rpc("GetTask", json!({"id": id})).await["result"]["history"][0].clone();
    let from_list =
        h.rpc("ListTasks", json!({"historyLength": 5})).await["result"]["tasks"][0]["history"][0]
            .clone();
    for shown in [&sent["result"]["task"]["history"][0], &from_get, &from_list] {
        let keys: Vec<&str> = shown
            .as_object()
            .expect("message")
            .keys()
            .map(String::as_str)
            .collect();
        for key in &keys {
            assert!(
                [
                    "messageId",
                    "contextId",
                    "taskId",
                    "role",
                    "parts",
                    "metadata",
                    "extensions",
                    "referenceTaskIds"
                ]
                .contains(key),
                "{key} in {shown}"
            );
        }
        assert_eq!(shown["parts"], json!([{"text": "x"}]));
        assert_eq!(shown["metadata"]["mine"], json!({"deep": [1, {"k": "v"}]}));
        assert_eq!(shown["extensions"], json!(["https://ext.example/one"]));
    }
}

/// Opens a JSON-RPC stream and returns the response to read from.
async fn open_stream(h: &TestHost, method: &str, params: Value) -> reqwest::Response {
    h.http
        .post(format!("{}/a2a/jsonrpc", h.base))
        .bearer_auth(KEY_A)
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": "s-1", "method": method, "params": params}))
        .send()
        .await
        .expect("stream")
}

#[tokio::test]
async fn subscribe_to_an_input_required_task_streams_until_it_is_terminal() {
    let h = start().await;
    // A plain message starts the default skill, which asks one question.
    let asked = h
        .rpc("SendMessage", json!({"message": plain("m-sub-1", "hello")}))
        .await;
    let task = &asked["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{asked}"
    );
    let id = task["id"].as_str().expect("id").to_owned();
    let stream = open_stream(&h, "SubscribeToTask", json!({"id": id})).await;
    assert_eq!(stream.status().as_u16(), 200);
    let reader = tokio::spawn(async move { stream.text().await });
    // Still open while the task waits for input.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !reader.is_finished(),
        "the stream must not end at INPUT_REQUIRED"
    );
    let mut reply = plain("m-sub-2", "do the thing");
    reply["taskId"] = json!(id);
    let done = h.rpc("SendMessage", json!({"message": reply})).await;
    assert_eq!(
        done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );
    let text = tokio::time::timeout(Duration::from_secs(10), reader)
        .await
        .expect("the stream ends at the terminal state")
        .expect("join")
        .expect("body");
    let got = frames(&text);
    assert!(got[0]["result"].get("task").is_some(), "{text}");
    assert_eq!(state_of(&got[0]), Some("TASK_STATE_INPUT_REQUIRED"));
    assert_eq!(
        state_of(got.last().expect("last")),
        Some("TASK_STATE_COMPLETED"),
        "{text}"
    );
    // A sender's own stream still ends where the sender has to act.
    let sent = open_stream(
        &h,
        "SendStreamingMessage",
        json!({"message": plain("m-sub-3", "again")}),
    )
    .await;
    let text = tokio::time::timeout(Duration::from_secs(10), sent.text())
        .await
        .expect("ends at INPUT_REQUIRED")
        .expect("body");
    assert_eq!(
        state_of(frames(&text).last().expect("last")),
        Some("TASK_STATE_INPUT_REQUIRED")
    );
}

#[tokio::test]
async fn a_push_config_on_a_terminal_task_is_accepted_read_listed_and_deleted() {
    let dir = tempfile::tempdir().expect("dir");
    let h = start_configured(dir.path().to_path_buf(), 0, |c| {
        c.egress_allow_loopback = true
    })
    .await;
    let done = h
        .rpc(
            "SendMessage",
            json!({"message": user_message("m-push-t", Some("echo"), json!([{"data": {}}]))}),
        )
        .await;
    assert_eq!(
        done["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let id = done["result"]["task"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let created = h
        .rpc(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": "http://127.0.0.1:9/hook", "token": "t-secret"}),
        )
        .await;
    let config = &created["result"];
    assert_eq!(config["taskId"], json!(id), "{created}");
    let config_id = config["id"].as_str().expect("config id").to_owned();
    let got = h
        .rpc(
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": config_id}),
        )
        .await;
    assert_eq!(got["result"]["url"], "http://127.0.0.1:9/hook", "{got}");
    assert!(!got.to_string().contains("t-secret"));
    let listed = h
        .rpc("ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    assert_eq!(
        listed["result"]["configs"].as_array().map(Vec::len),
        Some(1)
    );
    for _ in 0..2 {
        let deleted = h
            .rpc(
                "DeleteTaskPushNotificationConfig",
                json!({"taskId": id, "id": config_id}),
            )
            .await;
        assert_eq!(deleted["result"], json!({}), "{deleted}");
    }
}

#[tokio::test]
async fn a_plain_message_starts_the_default_skill_and_multi_turn_continues_it() {
    let h = start().await;
    let asked = h
        .rpc(
            "SendMessage",
            json!({"message": plain("m-plain-1", "hi there")}),
        )
        .await;
    let task = &asked["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{asked}"
    );
    let id = task["id"].as_str().expect("id");
    let (_, run) = h.get_run(KEY_A, id).await;
    assert_eq!(run["workflowId"], "clarify");
    let mut reply = plain("m-plain-2", "ship it");
    reply["taskId"] = json!(id);
    let done = h.rpc("SendMessage", json!({"message": reply})).await;
    let task = &done["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(task["history"].as_array().map(Vec::len), Some(2));
    // The card says so: the default skill is tagged, the description names the rule.
    let card: Value = h
        .http
        .get(format!("{}/.well-known/agent-card.json", h.base))
        .send()
        .await
        .expect("card")
        .json()
        .await
        .expect("json");
    let defaults: Vec<&str> = card["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .filter(|s| {
            s["tags"]
                .as_array()
                .is_some_and(|t| t.contains(&json!("default")))
        })
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert_eq!(defaults, ["clarify"]);
    assert!(
        card["description"]
            .as_str()
            .is_some_and(|d| d.contains("message.metadata.openwop.skill")),
        "{card}"
    );
    // `metadata.openwop.skill` still picks another.
    let echo = h
        .rpc(
            "SendMessage",
            json!({"message": user_message("m-plain-3", Some("echo"), json!([{"text": "x"}]))}),
        )
        .await;
    assert_eq!(
        echo["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
}

#[tokio::test]
async fn without_a_default_skill_a_message_must_name_one() {
    let dir = tempfile::tempdir().expect("dir");
    let h = start_configured(dir.path().to_path_buf(), 0, |c| c.a2a_default_skill = None).await;
    let refused = h
        .rpc("SendMessage", json!({"message": plain("m-none", "hi")}))
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}

#[tokio::test]
async fn a_message_through_an_agents_card_starts_that_agents_default_skill() {
    let h = start().await;
    let agents: Value = h
        .http
        .get(format!("{}/agents", h.base))
        .bearer_auth(KEY_A)
        .send()
        .await
        .expect("agents")
        .json()
        .await
        .expect("json");
    let routing = |agent: &str| {
        agents["agents"]
            .as_array()
            .or_else(|| agents.as_array())
            .expect("entries")
            .iter()
            .find(|e| e["agentId"] == agent)
            .and_then(|e| e["a2aTenant"].as_str())
            .expect("R")
            .to_owned()
    };
    for (agent, workflow) in [("workflow-runner", "echo"), ("approvals-desk", "clarify")] {
        let r = routing(agent);
        let sent = h
            .rpc(
                "SendMessage",
                json!({"tenant": r, "message": plain(&format!("m-agent-{agent}"), "hi")}),
            )
            .await;
        let id = sent["result"]["task"]["id"].as_str().expect("task");
        assert_eq!(
            h.get_run(KEY_A, id).await.1["workflowId"],
            workflow,
            "{agent}"
        );
        let card = h.rpc("GetExtendedAgentCard", json!({"tenant": r})).await;
        let tagged: Vec<&str> = card["result"]["skills"]
            .as_array()
            .expect("skills")
            .iter()
            .filter(|s| {
                s["tags"]
                    .as_array()
                    .is_some_and(|t| t.contains(&json!("default")))
            })
            .filter_map(|s| s["id"].as_str())
            .collect();
        assert_eq!(tagged, [workflow], "{card}");
    }
    // A skill the agent does not route is refused, and so is an R never minted.
    let r = routing("workflow-runner");
    let wrong = h
        .rpc(
            "SendMessage",
            json!({"tenant": r, "message": user_message("m-agent-x", Some("clarify"), json!([{"text": "x"}]))}),
        )
        .await;
    assert_eq!(wrong["error"]["code"], -32602, "{wrong}");
    let never = h
        .rpc(
            "SendMessage",
            json!({"tenant": "ag-00000000000000000000000000000000", "message": plain("m-agent-y", "x")}),
        )
        .await;
    assert_eq!(never["error"]["code"], -32602, "{never}");
}

#[tokio::test]
async fn card_and_discovery_urls_come_from_the_public_url_never_from_the_host_header() {
    let dir = tempfile::tempdir().expect("dir");
    let h = start_configured(dir.path().to_path_buf(), 0, |c| {
        c.public_url = Some("https://wop.example.com/".into())
    })
    .await;
    let card: Value = h
        .http
        .get(format!("{}/.well-known/agent-card.json", h.base))
        .header("Host", "evil.example")
        .send()
        .await
        .expect("card")
        .json()
        .await
        .expect("json");
    let urls: Vec<&str> = card["supportedInterfaces"]
        .as_array()
        .expect("interfaces")
        .iter()
        .filter_map(|i| i["url"].as_str())
        .collect();
    assert_eq!(
        urls,
        [
            "https://wop.example.com/a2a/jsonrpc",
            "https://wop.example.com/a2a/rest"
        ]
    );
    let discovery: Value = h
        .http
        .get(format!("{}/.well-known/openwop", h.base))
        .header("Host", "evil.example")
        .send()
        .await
        .expect("discovery")
        .json()
        .await
        .expect("json");
    assert_eq!(
        discovery["a2a"]["agentCardUrl"],
        "https://wop.example.com/.well-known/agent-card.json"
    );
    assert_eq!(
        discovery["mcp"]["serverUrls"],
        json!(["https://wop.example.com/mcp"])
    );
    assert!(!discovery.to_string().contains("evil.example"));
    // The extended card too.
    let extended = h.rpc("GetExtendedAgentCard", json!({})).await;
    assert_eq!(
        extended["result"]["supportedInterfaces"][0]["url"],
        "https://wop.example.com/a2a/jsonrpc"
    );
}

#[tokio::test]
async fn subscribe_to_an_auth_required_task_streams_until_it_is_terminal() {
    let h = start().await;
    let asked = h
        .rpc(
            "SendMessage",
            json!({"message": user_message("m-auth-1", Some("credential"), json!([{"data": {}}]))}),
        )
        .await;
    let task = &asked["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_AUTH_REQUIRED",
        "{asked}"
    );
    let id = task["id"].as_str().expect("id").to_owned();
    let stream = open_stream(&h, "SubscribeToTask", json!({"id": id})).await;
    let reader = tokio::spawn(async move { stream.text().await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !reader.is_finished(),
        "the stream must not end at AUTH_REQUIRED"
    );
    let mut reply = user_message(
        "m-auth-2",
        None,
        json!([{"data": {"outcome": "authorized"}}]),
    );
    reply["taskId"] = json!(id);
    let done = h.rpc("SendMessage", json!({"message": reply})).await;
    assert_eq!(
        done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );
    let text = tokio::time::timeout(Duration::from_secs(10), reader)
        .await
        .expect("the stream ends at the terminal state")
        .expect("join")
        .expect("body");
    let got = frames(&text);
    assert_eq!(state_of(&got[0]), Some("TASK_STATE_AUTH_REQUIRED"));
    assert_eq!(
        state_of(got.last().expect("last")),
        Some("TASK_STATE_COMPLETED"),
        "{text}"
    );
}

fn answers_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/answers")
}

/// A workflow that declares its answer (`answer.artifacts`) is answered with those parts,
/// text and files included, as A2A agents answer; one that declares `asMessage` answers a
/// quick run with a Message (A2A 1.0 SendMessageResponse is a Task or a Message).
#[tokio::test]
async fn declared_answers_are_artifacts_of_text_file_and_data_parts_or_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let h = support::a2a::start_configured(dir.path().to_path_buf(), 0, |c| {
        c.workflows_dir = Some(answers_dir());
    })
    .await;
    let mut m = user_message(
        "m-greet-task",
        Some("greet_task"),
        json!([{"data": {"name": "Ada"}}]),
    );
    m["parts"] = json!([{"data": {"name": "Ada"}}]);
    let r = h.rpc("SendMessage", json!({"message": m})).await;
    let task = &r["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{r}");
    assert_eq!(
        task["artifacts"],
        json!([{"artifactId": "answer-0", "name": "greeting", "parts": [{"text": "Hello, Ada!"}]}])
    );
    // The same artifacts on a later read.
    let got = h.rpc("GetTask", json!({"id": task["id"]})).await;
    assert_eq!(got["result"]["artifacts"], task["artifacts"], "{got}");

    let m = user_message("m-greet", Some("greet"), json!([{"data": {"name": "Ada"}}]));
    let r = h.rpc("SendMessage", json!({"message": m})).await;
    let message = &r["result"]["message"];
    assert!(r["result"].get("task").is_none(), "{r}");
    assert_eq!(message["role"], "ROLE_AGENT", "{r}");
    assert_eq!(
        message["parts"],
        json!([
            {"text": "Hello, Ada!"},
            {"url": "https://files.example.com/Ada.txt", "mediaType": "text/plain", "filename": "Ada.txt"},
            {"raw": "aGk=", "mediaType": "image/png"},
            {"data": {"who": "Ada"}, "mediaType": "application/json"}
        ])
    );
    // The run behind the Message is still a task the caller can read.
    let got = h.rpc("GetTask", json!({"id": message["taskId"]})).await;
    assert_eq!(
        got["result"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{got}"
    );
}

/// POSTs raw bytes to the JSON-RPC URL with a Content-Type of our choosing.
async fn jsonrpc_raw(h: &TestHost, content_type: Option<&str>, body: &str) -> (u16, String) {
    let mut req = h
        .http
        .post(format!("{}/a2a/jsonrpc", h.base))
        .bearer_auth(KEY_A)
        .header("A2A-Version", "1.0")
        .body(body.to_owned());
    if let Some(ct) = content_type {
        req = req.header("Content-Type", ct);
    }
    let resp = req.send().await.expect("send");
    let status = resp.status().as_u16();
    (status, resp.text().await.expect("body"))
}

/// A2A content-type rules: the JSON-RPC binding refuses a body that is not JSON by its
/// media type, before reading it, in the JSON-RPC error shape (ContentTypeNotSupportedError
/// with its ErrorInfo) on HTTP 415; HTTP+JSON's 415 carries the same ErrorInfo.
#[tokio::test]
async fn a2a_content_type_a_non_json_media_type_is_refused_on_both_bindings() {
    let h = start().await;
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": user_message("m-ct-rpc", Some("echo"), json!([{"text": "x"}]))}})
    .to_string();
    for ct in [
        Some("text/plain"),
        None,
        Some("application/x-www-form-urlencoded"),
    ] {
        let (status, text) = jsonrpc_raw(&h, ct, &request).await;
        assert_eq!(status, 415, "{ct:?}: {text}");
        let body: Value = serde_json::from_str(&text).expect("a JSON-RPC error");
        assert_eq!(body["jsonrpc"], "2.0");
        assert_eq!(body["error"]["code"], -32005, "{body}");
        assert_eq!(
            body["error"]["data"][0]["reason"],
            "CONTENT_TYPE_NOT_SUPPORTED"
        );
        assert_eq!(body["error"]["data"][0]["domain"], "a2a-protocol.org");
    }
    // The TCK's own probe: a Python repr sent as text/plain is refused by its media type.
    let (status, _) = jsonrpc_raw(&h, Some("text/plain"), "{'jsonrpc': '2.0', 'id': 1}").await;
    assert_eq!(status, 415);
    assert_eq!(
        h.rpc("ListTasks", json!({})).await["result"]["totalSize"],
        0,
        "nothing was started"
    );
    for ct in ["application/json; charset=utf-8", "application/a2a+json"] {
        let body = request.replace("m-ct-rpc", &format!("m-ct-{ct}"));
        let (status, text) = jsonrpc_raw(&h, Some(ct), &body).await;
        assert_eq!(status, 200, "{ct}: {text}");
    }
    let refused = rest_raw(
        &h,
        Method::POST,
        "/message:send",
        Some("text/plain"),
        br#"{"message": {}}"#.to_vec(),
    )
    .await;
    assert_eq!(refused.status().as_u16(), 415);
    let refusal: Value = refused.json().await.expect("json");
    assert_eq!(
        refusal["error"]["details"][0]["reason"], "CONTENT_TYPE_NOT_SUPPORTED",
        "{refusal}"
    );
    // Every HTTP+JSON refusal names its reason: an unknown route, a bad body.
    let unknown = rest_raw(&h, Method::GET, "/no/such/route", None, vec![]).await;
    let unknown: Value = unknown.json().await.expect("json");
    assert_eq!(unknown["error"]["details"][0]["reason"], "METHOD_NOT_FOUND");
    let bad = rest_raw(
        &h,
        Method::POST,
        "/message:send",
        Some("application/json"),
        b"{not json".to_vec(),
    )
    .await;
    let bad: Value = bad.json().await.expect("json");
    assert_eq!(
        bad["error"]["details"][0]["reason"], "INVALID_REQUEST",
        "{bad}"
    );
}

/// interop.md "A2A error details": on an HTTP+JSON interface every refusal is A2A §11.6's
/// `google.rpc.Status`, and A2A clients map it by the ErrorInfo reason alone (a 404 without
/// one becomes MethodNotFound in a2a-sdk). So each kind of refusal, the ones made before
/// dispatch included (credential, media type, size, method, route, version), carries
/// exactly one ErrorInfo in domain `a2a-protocol.org` with the reason of that refusal.
#[tokio::test]
async fn http_json_every_refusal_carries_one_error_info_with_its_reason() {
    let h = start().await;
    let unauthenticated = h
        .http
        .get(format!("{}/a2a/rest/tasks", h.base))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .expect("send");
    let big = vec![b'a'; 2 * 1024 * 1024];
    let old_version = h
        .http
        .get(format!("{}/a2a/rest/tasks", h.base))
        .bearer_auth(KEY_A)
        .header("A2A-Version", "0.3")
        .send()
        .await
        .expect("send");
    let cases: Vec<(&str, reqwest::Response, u16, &str)> = vec![
        ("no credential", unauthenticated, 401, "UNAUTHENTICATED"),
        (
            "text/plain body",
            rest_raw(
                &h,
                Method::POST,
                "/message:send",
                Some("text/plain"),
                b"{}".to_vec(),
            )
            .await,
            415,
            "CONTENT_TYPE_NOT_SUPPORTED",
        ),
        (
            "no media type",
            rest_raw(&h, Method::POST, "/message:send", None, b"{}".to_vec()).await,
            415,
            "CONTENT_TYPE_NOT_SUPPORTED",
        ),
        (
            "body over the cap",
            rest_raw(
                &h,
                Method::POST,
                "/message:send",
                Some("application/json"),
                big,
            )
            .await,
            413,
            "PAYLOAD_TOO_LARGE",
        ),
        (
            "method the route does not take",
            rest_raw(&h, Method::DELETE, "/message:send", None, vec![]).await,
            405,
            "METHOD_NOT_ALLOWED",
        ),
        (
            "unknown route",
            rest_raw(&h, Method::GET, "/no/such/route", None, vec![]).await,
            404,
            "METHOD_NOT_FOUND",
        ),
        (
            "body that is not JSON",
            rest_raw(
                &h,
                Method::POST,
                "/message:send",
                Some("application/json"),
                b"{not json".to_vec(),
            )
            .await,
            400,
            "INVALID_REQUEST",
        ),
        (
            "version below the floor",
            old_version,
            400,
            "VERSION_NOT_SUPPORTED",
        ),
        (
            "unknown task",
            rest_raw(
                &h,
                Method::GET,
                "/tasks/acme~2Fr-aaaaaaaaaaaaaaaa",
                None,
                vec![],
            )
            .await,
            404,
            "TASK_NOT_FOUND",
        ),
    ];
    for (what, resp, status, reason) in cases {
        assert_eq!(resp.status().as_u16(), status, "{what}");
        let body: Value = resp.json().await.expect("a google.rpc.Status body");
        assert_eq!(body["error"]["code"], status, "{what}: {body}");
        assert!(body["error"]["status"].is_string(), "{what}: {body}");
        let infos: Vec<&Value> = body["error"]["details"]
            .as_array()
            .expect("details")
            .iter()
            .filter(|d| d["@type"] == "type.googleapis.com/google.rpc.ErrorInfo")
            .collect();
        assert_eq!(infos.len(), 1, "{what}: exactly one ErrorInfo: {body}");
        assert_eq!(infos[0]["reason"], reason, "{what}: {body}");
        assert_eq!(infos[0]["domain"], "a2a-protocol.org", "{what}: {body}");
    }
}

/// Strict JSON-RPC: a member repeated in one object is an invalid request (-32600), never
/// "the last one wins" (`"method":"GetTask","method":"CancelTask"` must not cancel).
#[tokio::test]
async fn jsonrpc_duplicate_members_are_invalid_requests_and_change_nothing() {
    let h = start().await;
    let first = h
        .rpc(
            "SendMessage",
            json!({"message": user_message("m-dup", Some("approval"), json!([{"data": {"title": "t"}}]))}),
        )
        .await;
    let task_id = first["result"]["task"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"GetTask","method":"CancelTask","params":{{"id":"{task_id}"}}}}"#
    );
    let (status, text) = jsonrpc_raw(&h, Some("application/json"), &body).await;
    let reply: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(
        (status, reply["error"]["code"].clone()),
        (200, json!(-32600)),
        "{reply}"
    );
    let nested = format!(
        r#"{{"jsonrpc":"2.0","id":6,"method":"CancelTask","params":{{"id":"{task_id}","id":"x"}}}}"#
    );
    let (_, text) = jsonrpc_raw(&h, Some("application/json"), &nested).await;
    let reply: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    assert_eq!(
        h.get_run(KEY_A, &task_id).await.1["status"],
        "waiting-approval",
        "nothing was cancelled"
    );
}

/// Strict JSON-RPC: the request id comes back byte for byte, whatever a double can hold.
#[tokio::test]
async fn jsonrpc_ids_are_echoed_byte_for_byte() {
    let h = start().await;
    for raw in ["123456789012345678901234567890", r#""\u0041b""#, "-1.50"] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{raw},"method":"ListTasks","params":{{}}}}"#);
        let (status, text) = jsonrpc_raw(&h, Some("application/json"), &body).await;
        assert_eq!(status, 200, "{text}");
        assert!(text.contains(&format!(r#""id":{raw},"#)), "{raw}: {text}");
        // Refusals echo it too.
        let body = format!(r#"{{"jsonrpc":"2.0","id":{raw},"method":"Nope"}}"#);
        let (_, text) = jsonrpc_raw(&h, Some("application/json"), &body).await;
        assert!(text.contains(&format!(r#""id":{raw},"#)), "{raw}: {text}");
    }
}

/// Strict JSON-RPC: SendMessage fields of the wrong type are invalid params naming the
/// field, and nothing is started (`taskId: 5` is not "no taskId").
#[tokio::test]
async fn send_message_fields_of_the_wrong_type_are_invalid_params_naming_the_field() {
    let h = start().await;
    let with = |extra: Value| {
        let mut m = user_message("m-typed", Some("echo"), json!([{"text": "x"}]));
        for (k, v) in extra.as_object().expect("object") {
            m[k] = v.clone();
        }
        json!({"message": m})
    };
    for (params, field) in [
        (with(json!({"taskId": 5})), "message.taskId"),
        (
            with(json!({"metadata": {"openwop": {"skill": ["echo"]}}})),
            "message.metadata.openwop.skill",
        ),
        (with(json!({"role": "ROLE_AGENT"})), "message.role"),
        (
            with(json!({"contextId": "c".repeat(100 * 1024)})),
            "message.contextId",
        ),
    ] {
        let reply = h.rpc("SendMessage", params).await;
        assert_eq!(reply["error"]["code"], -32602, "{field}: {reply}");
        assert_eq!(
            reply["error"]["data"][0]["fieldViolations"][0]["field"], field,
            "{reply}"
        );
        let (status, rest) = h
            .rest(
                Some(KEY_A),
                Method::POST,
                "/message:send",
                Some(with(json!({"taskId": 5}))),
            )
            .await;
        assert_eq!(status, 400, "{rest}");
        assert_eq!(
            rest["error"]["details"][0]["reason"], "INVALID_PARAMS",
            "{rest}"
        );
    }
    assert_eq!(
        h.rpc("ListTasks", json!({})).await["result"]["totalSize"],
        0,
        "nothing was started"
    );
}

/// Approval answers are checked against the interrupt's offered actions on both bindings
/// (400 / -32602 naming them), the run stays waiting, and a text reply naming an offered
/// action is that answer.
#[tokio::test]
async fn an_approval_answer_outside_its_offered_actions_is_refused_and_the_run_waits() {
    let h = start().await;
    let first = h
        .rpc(
            "SendMessage",
            json!({"message": user_message("m-maybe", Some("approval"), json!([{"data": {"title": "t"}}]))}),
        )
        .await;
    let task_id = first["result"]["task"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let reply = |id: &str, part: Value| {
        let mut m = user_message(id, None, json!([part]));
        m["taskId"] = json!(task_id);
        json!({"message": m})
    };
    let refused = h
        .rpc(
            "SendMessage",
            reply("m-maybe-1", json!({"data": {"action": "maybe"}})),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let said = refused["error"]["message"].as_str().expect("message");
    assert!(said.contains("\"accept\", \"reject\""), "{said}");
    let (status, rest) = h
        .rest(
            Some(KEY_A),
            Method::POST,
            "/message:send",
            Some(reply("m-maybe-2", json!({"data": {"action": "maybe"}}))),
        )
        .await;
    assert_eq!(status, 400, "{rest}");
    assert_eq!(rest["error"]["status"], "INVALID_ARGUMENT");
    assert!(
        rest["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("\"accept\", \"reject\""),
        "{rest}"
    );
    assert_eq!(
        h.get_run(KEY_A, &task_id).await.1["status"],
        "waiting-approval"
    );
    let done = h
        .rpc("SendMessage", reply("m-maybe-3", json!({"text": "accept"})))
        .await;
    assert!(done.get("result").is_some(), "{done}");
    let run = h.get_run(KEY_A, &task_id).await.1;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["outputs"]["decision"], json!({"action": "accept"}));
}
