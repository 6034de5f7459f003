//! Per-tenant visibility from the config file (`tenants.<TENANT>.{workflows,agents}`), on
//! the real binary: every edge narrows through `Ops::may_run` alike, and a routing value
//! R of an agent outside the caller's inventory is answered byte for byte as an R the
//! host never minted, on every A2A operation of both bindings.

mod support;

use reqwest::{Client, Method};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use support::process::{self, BIN};
use support::{KEY_A, KEY_B};
const NEVER_MINTED: &str = "ag-AAAAAAAAAAAAAAAAAAAAAA";

struct Served {
    child: Child,
    base: String,
    http: Client,
    _dir: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// `openwop serve --config FILE`: tenant `other` may see three workflows and one agent.
async fn serve() -> Served {
    let dir = tempfile::tempdir().expect("dir");
    let config = dir.path().join("openwop.yaml");
    std::fs::write(
        &config,
        format!(
            "{}\
             listen: 127.0.0.1:0\n\
             dataDir: {}\n\
             tenants:\n  other:\n    workflows: [echo, slow, fail]\n    agents: [workflow-runner]\n",
            support::keys::api_keys_yaml(),
            dir.path().join("data").display()
        ),
    )
    .expect("config");
    let child = Command::new(BIN)
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let (child, base) = process::listening(child).await;
    Served {
        child,
        base,
        http: Client::new(),
        _dir: dir,
    }
}

/// Status, content type and body bytes of one answer.
async fn raw(resp: reqwest::Response) -> (u16, String, Vec<u8>) {
    let status = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap_or("").to_owned())
        .unwrap_or_default();
    (status, ct, resp.bytes().await.expect("body").to_vec())
}

impl Served {
    async fn get(&self, key: &str, path: &str) -> (u16, Value) {
        let resp = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(key)
            .send()
            .await
            .expect("send");
        let (s, _, b) = raw(resp).await;
        (s, serde_json::from_slice(&b).unwrap_or(Value::Null))
    }

    async fn rpc(&self, key: &str, method: &str, params: Value) -> (u16, String, Vec<u8>) {
        raw(self
            .http
            .post(format!("{}/a2a/jsonrpc", self.base))
            .bearer_auth(key)
            .header("A2A-Version", "1.0")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .send()
            .await
            .expect("send"))
        .await
    }

    async fn rest(
        &self,
        key: &str,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, String, Vec<u8>) {
        let mut req = self
            .http
            .request(method, format!("{}/a2a/rest{path}", self.base))
            .bearer_auth(key)
            .header("A2A-Version", "1.0");
        if let Some(body) = body {
            req = req.json(&body);
        }
        raw(req.send().await.expect("send")).await
    }

    async fn mcp_tools(&self, key: &str) -> Vec<String> {
        let resp: Value = self
            .http
            .post(format!("{}/mcp", self.base))
            .bearer_auth(key)
            .header("accept", "application/json")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "tools/list")
            .json(
                &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}}}),
            )
            .send()
            .await
            .expect("send")
            .json()
            .await
            .expect("json");
        resp["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    }
}

fn ids(v: &Value, list: &str, field: &str) -> Vec<String> {
    v[list]
        .as_array()
        .or_else(|| v.as_array())
        .expect("a list")
        .iter()
        .filter_map(|e| e[field].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn tenant_visibility_in_the_config_file_narrows_every_edge_alike() {
    let h = serve().await;
    // REST listWorkflows / getWorkflow.
    let (_, theirs) = h.get(KEY_B, "/workflows").await;
    assert_eq!(
        ids(&theirs, "workflows", "workflowId"),
        ["echo", "fail", "slow"]
    );
    let (_, ours) = h.get(KEY_A, "/workflows").await;
    assert_eq!(
        ids(&ours, "workflows", "workflowId").len(),
        7,
        "a tenant not named sees all"
    );
    let hidden = h.get(KEY_B, "/workflows/clarify").await;
    let unknown = h.get(KEY_B, "/workflows/nope").await;
    assert_eq!(hidden.0, 404);
    assert_eq!(
        hidden.1.to_string().replace("clarify", "X"),
        unknown.1.to_string().replace("nope", "X")
    );
    // REST createRun.
    let create = |workflow: &str| {
        h.http
            .post(format!("{}/runs", h.base))
            .bearer_auth(KEY_B)
            .json(&json!({"workflowId": workflow, "inputs": {}}))
            .send()
    };
    let (s1, _, hidden) = raw(create("clarify").await.expect("send")).await;
    let (s2, _, unknown) = raw(create("nope").await.expect("send")).await;
    assert_eq!((s1, s2), (404, 404));
    assert_eq!(
        String::from_utf8_lossy(&hidden).replace("clarify", "X"),
        String::from_utf8_lossy(&unknown).replace("nope", "X")
    );
    // The agent inventory: only the agent named for tenant `other`.
    let (_, agents) = h.get(KEY_B, "/agents").await;
    assert_eq!(ids(&agents, "agents", "agentId"), ["workflow-runner"]);
    let (status, _) = h.get(KEY_B, "/agents/approvals-desk").await;
    assert_eq!(status, 404);
    // MCP tools/list.
    assert_eq!(h.mcp_tools(KEY_B).await, ["echo", "fail", "slow"]);
    assert_eq!(h.mcp_tools(KEY_A).await.len(), 7);
    // A2A: a hidden skill is refused as an unknown one; the extended card lists only
    // what tenant `other` may run; the default skill (clarify) is not its, so a plain
    // message must name a skill.
    let send = |skill: &str, id: &str| {
        json!({"message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": "x"}],
                           "metadata": {"openwop": {"skill": skill}}}})
    };
    let (_, _, hidden) = h.rpc(KEY_B, "SendMessage", send("clarify", "m-1")).await;
    let (_, _, unknown) = h.rpc(KEY_B, "SendMessage", send("nope", "m-1")).await;
    assert_eq!(
        String::from_utf8_lossy(&hidden).replace("clarify", "X"),
        String::from_utf8_lossy(&unknown).replace("nope", "X")
    );
    // The public card is read without a credential: it names only what every tenant
    // may see, never a workflow the config hides from one of them.
    let public: Value = h
        .http
        .get(format!("{}/.well-known/agent-card.json", h.base))
        .send()
        .await
        .expect("card")
        .json()
        .await
        .expect("json");
    assert_eq!(ids(&public, "skills", "id"), ["echo", "fail", "slow"]);
    let (_, _, card) = h.rpc(KEY_B, "GetExtendedAgentCard", json!({})).await;
    let card: Value = serde_json::from_slice(&card).expect("json");
    assert_eq!(
        ids(&card["result"], "skills", "id"),
        ["echo", "fail", "slow"]
    );
    let plain =
        json!({"message": {"messageId": "m-2", "role": "ROLE_USER", "parts": [{"text": "hi"}]}});
    let (_, _, refused) = h.rpc(KEY_B, "SendMessage", plain.clone()).await;
    let refused: Value = serde_json::from_slice(&refused).expect("json");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let (_, _, started) = h.rpc(KEY_A, "SendMessage", plain).await;
    let started: Value = serde_json::from_slice(&started).expect("json");
    assert_eq!(
        started["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{started}"
    );
}

#[tokio::test]
async fn a_foreign_routing_value_is_answered_as_a_never_minted_one_on_every_operation() {
    let h = serve().await;
    let (_, acme_agents) = h.get(KEY_A, "/agents").await;
    let foreign = acme_agents["agents"]
        .as_array()
        .or_else(|| acme_agents.as_array())
        .expect("entries")
        .iter()
        .find(|e| e["agentId"] == "approvals-desk")
        .and_then(|e| e["a2aTenant"].as_str())
        .expect("R")
        .to_owned();
    let task = "other/r-0123456789abcdefghijkl";
    let message =
        |id: &str| json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": "x"}]});
    let rpc_calls: Vec<(&str, Value)> = vec![
        ("SendMessage", json!({"message": message("m-a")})),
        ("SendStreamingMessage", json!({"message": message("m-b")})),
        ("GetTask", json!({"id": task})),
        ("ListTasks", json!({})),
        ("CancelTask", json!({"id": task})),
        ("SubscribeToTask", json!({"id": task})),
        (
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task, "url": "https://example.com/hook"}),
        ),
        (
            "GetTaskPushNotificationConfig",
            json!({"taskId": task, "id": "c1"}),
        ),
        ("ListTaskPushNotificationConfigs", json!({"taskId": task})),
        (
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": task, "id": "c1"}),
        ),
        ("GetExtendedAgentCard", json!({})),
    ];
    for (method, params) in rpc_calls {
        let with = |r: &str| {
            let mut p = params.clone();
            p["tenant"] = json!(r);
            p
        };
        let a = h.rpc(KEY_B, method, with(&foreign)).await;
        let b = h.rpc(KEY_B, method, with(NEVER_MINTED)).await;
        assert_eq!(
            a,
            b,
            "JSON-RPC {method}:\n{}\n{}",
            String::from_utf8_lossy(&a.2),
            String::from_utf8_lossy(&b.2)
        );
        assert!(
            !String::from_utf8_lossy(&a.2).contains(&foreign),
            "{method}"
        );
    }
    let t = task.replace('/', "~2F");
    let rest_calls: Vec<(Method, String, Option<Value>)> = vec![
        (
            Method::POST,
            "/message:send".into(),
            Some(json!({"message": message("m-c")})),
        ),
        (
            Method::POST,
            "/message:stream".into(),
            Some(json!({"message": message("m-d")})),
        ),
        (Method::GET, format!("/tasks/{t}"), None),
        (Method::GET, "/tasks".into(), None),
        (Method::POST, format!("/tasks/{t}:cancel"), None),
        (Method::POST, format!("/tasks/{t}:subscribe"), None),
        (
            Method::POST,
            format!("/tasks/{t}/pushNotificationConfigs"),
            Some(json!({"url": "https://example.com/hook"})),
        ),
        (
            Method::GET,
            format!("/tasks/{t}/pushNotificationConfigs/c1"),
            None,
        ),
        (
            Method::GET,
            format!("/tasks/{t}/pushNotificationConfigs"),
            None,
        ),
        (
            Method::DELETE,
            format!("/tasks/{t}/pushNotificationConfigs/c1"),
            None,
        ),
        (Method::GET, "/extendedAgentCard".into(), None),
    ];
    for (method, path, body) in rest_calls {
        let a = h
            .rest(
                KEY_B,
                method.clone(),
                &format!("/{foreign}{path}"),
                body.clone(),
            )
            .await;
        let b = h
            .rest(
                KEY_B,
                method.clone(),
                &format!("/{NEVER_MINTED}{path}"),
                body.clone(),
            )
            .await;
        assert_eq!(
            a,
            b,
            "HTTP+JSON {method} {path}:\n{}\n{}",
            String::from_utf8_lossy(&a.2),
            String::from_utf8_lossy(&b.2)
        );
        assert!(!String::from_utf8_lossy(&a.2).contains(&foreign), "{path}");
    }
}
