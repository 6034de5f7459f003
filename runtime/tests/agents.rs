//! The agent inventory and per-agent A2A cards against a real host (interop.md
//! "Per-agent cards"): each test names the rule it checks.
//!
//! Tenant `acme` may run every workflow. Tenant `other` may run only `echo`, `slow` and
//! `fail`, so `approvals-desk` is outside its inventory and the extra agent `research`
//! (routing `clarify` and `echo`) shows it `echo` only.

mod support;

use std::path::Path;
use std::sync::Arc;

use openwop::host::{Host, HostConfig};
use openwop_generated::validators::{self, Options};
use reqwest::Method;
use serde_json::{Value, json};
use support::{KEY_A, KEY_B, TestHost};

/// Has R's shape, but this host never minted it.
const NEVER_MINTED: &str = "ag-AAAAAAAAAAAAAAAAAAAAAA";

const RESEARCH: &str = "agentId: research\npersona: Research Assistant\nlabel: Asks, then answers\ndescription: Clarifies a question, then echoes what it learned.\npackVersion: 0.4.2\nworkflows: [clarify, echo]\n";

fn config(data_dir: &Path, agents_dir: &Path) -> HostConfig {
    let mut config = support::keys::config(data_dir);
    adjust(&mut config, agents_dir);
    config
}

/// Tenant `other` sees three workflows; the extra agents come from `agents_dir`.
fn adjust(config: &mut HostConfig, agents_dir: &Path) {
    let filter: openwop::ops::WorkflowFilter = Arc::new(|subject, workflow| {
        subject.tenant != "other" || matches!(workflow, "echo" | "slow" | "fail")
    });
    config.agents_dir = Some(agents_dir.to_path_buf());
    config.workflow_filter = Some(filter);
    config.a2a_blocking_timeout = std::time::Duration::from_secs(5);
}

fn agents_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("agents dir");
    std::fs::write(dir.path().join("research.yaml"), RESEARCH).expect("write agent");
    dir
}

async fn start_on(data_dir: &Path, agents: &Path) -> TestHost {
    support::host()
        .data_dir(data_dir)
        .with(|c| adjust(c, agents))
        .start()
        .await
}

/// Raw bytes of an answer, to compare refusals byte for byte.
struct Raw {
    status: u16,
    content_type: String,
    body: Vec<u8>,
}

impl Raw {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

async fn raw(resp: reqwest::Response) -> Raw {
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    Raw {
        status,
        content_type,
        body: resp.bytes().await.expect("body").to_vec(),
    }
}

impl TestHost {
    async fn get(&self, key: Option<&str>, path: &str) -> Raw {
        let mut req = self.http.get(format!("{}{path}", self.base));
        if let Some(key) = key {
            req = req.bearer_auth(key);
        }
        raw(req.send().await.expect("send")).await
    }

    async fn inventory(&self, key: &str) -> Vec<Value> {
        let r = self.get(Some(key), "/agents").await;
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        r.json()["agents"]
            .as_array()
            .cloned()
            .expect("agents array")
    }

    async fn routing_value(&self, key: &str, agent_id: &str) -> String {
        let entry = self
            .inventory(key)
            .await
            .into_iter()
            .find(|e| e["agentId"] == agent_id)
            .expect("agent listed");
        entry["a2aTenant"].as_str().expect("a2aTenant").to_owned()
    }

    async fn rpc(&self, key: Option<&str>, method: &str, params: Value) -> Raw {
        let mut req = self
            .http
            .post(format!("{}/a2a/jsonrpc", self.base))
            .header("A2A-Version", "1.0")
            .json(&json!({"jsonrpc": "2.0", "id": "req-1", "method": method, "params": params}));
        if let Some(key) = key {
            req = req.bearer_auth(key);
        }
        raw(req.send().await.expect("send")).await
    }

    async fn rest(
        &self,
        key: Option<&str>,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Raw {
        let mut req = self
            .http
            .request(method, format!("{}/a2a/rest{path}", self.base))
            .header("A2A-Version", "1.0");
        if let Some(key) = key {
            req = req.bearer_auth(key);
        }
        if let Some(body) = body {
            req = req.json(&body);
        }
        raw(req.send().await.expect("send")).await
    }

    async fn public_card(&self) -> Value {
        let r = self.get(None, "/.well-known/agent-card.json").await;
        assert_eq!(r.status, 200);
        r.json()
    }

    async fn discovery(&self) -> Value {
        self.get(None, "/.well-known/openwop").await.json()
    }
}

fn ids(entries: &[Value]) -> Vec<&str> {
    entries
        .iter()
        .filter_map(|e| e["agentId"].as_str())
        .collect()
}

fn is_routing_value(r: &str) -> bool {
    (1..=128).contains(&r.len())
        && r.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._~-".contains(&b))
}

fn assert_same(a: &Raw, b: &Raw, what: &str) {
    assert_eq!(a.status, b.status, "{what}: status");
    assert_eq!(a.content_type, b.content_type, "{what}: content type");
    assert_eq!(
        a.body,
        b.body,
        "{what}: bodies differ\n{}\n{}",
        String::from_utf8_lossy(&a.body),
        String::from_utf8_lossy(&b.body)
    );
}

#[tokio::test]
async fn inventory_lists_only_agents_with_workflows_the_caller_may_run() {
    let (data, agents) = (tempfile::tempdir().expect("dir"), agents_dir());
    let h = start_on(data.path(), agents.path()).await;

    let acme = h.inventory(KEY_A).await;
    assert_eq!(
        ids(&acme),
        ["approvals-desk", "research", "workflow-runner"],
        "sorted by agentId"
    );
    let other = h.inventory(KEY_B).await;
    assert_eq!(
        ids(&other),
        ["research", "workflow-runner"],
        "approvals-desk routes nothing `other` may run"
    );
    let research = other
        .iter()
        .find(|e| e["agentId"] == "research")
        .expect("research");
    assert_eq!(
        research["workflows"],
        json!(["echo"]),
        "only the workflows this caller may run"
    );
    let research_a = acme
        .iter()
        .find(|e| e["agentId"] == "research")
        .expect("research");
    assert_eq!(research_a["workflows"], json!(["clarify", "echo"]));

    for entry in acme.iter().chain(other.iter()) {
        let findings = validators::validate_agent(entry);
        assert!(findings.is_empty(), "{entry}: {findings:#?}");
        let r = entry["a2aTenant"]
            .as_str()
            .expect("every entry has an a2aTenant");
        assert!(is_routing_value(r), "{r}");
        // Agents here have no memory and no optional capability; the fields stay away.
        assert!(entry.get("memoryDegraded").is_none() && entry.get("degraded").is_none());
    }
    // R encodes no tenant: both tenants see the same value for the same agent.
    assert_eq!(research["a2aTenant"], research_a["a2aTenant"]);

    // GET /agents/{agentId}: the entry; a hidden agent is answered exactly as an unknown one.
    let one = h.get(Some(KEY_A), "/agents/approvals-desk").await;
    assert_eq!(one.status, 200);
    assert_eq!(one.json(), acme[0]);
    let hidden = h.get(Some(KEY_B), "/agents/approvals-desk").await;
    let unknown = h.get(Some(KEY_B), "/agents/no-such-agent").await;
    assert_eq!(hidden.status, 404);
    assert_eq!(hidden.json()["error"], "not_found");
    assert_same(&hidden, &unknown, "hidden vs unknown agent");

    // Both routes authenticate first.
    for path in ["/agents", "/agents/approvals-desk"] {
        let r = h.get(None, path).await;
        assert_eq!(r.status, 401, "{path}");
        assert_eq!(r.json()["error"], "unauthenticated");
    }
    h.shutdown().await;
}

#[tokio::test]
async fn discovery_advertises_agents_and_agent_cards_and_the_public_card_lists_no_r() {
    let (data, agents) = (tempfile::tempdir().expect("dir"), agents_dir());
    let h = start_on(data.path(), agents.path()).await;
    let discovery = h.discovery().await;
    assert!(
        discovery["agents"]["manifestRuntime"].is_object(),
        "{}",
        discovery["agents"]
    );
    assert_eq!(discovery["a2a"]["agentCards"], json!(true));
    assert!(
        discovery["a2a"]["profiles"]
            .as_array()
            .expect("profiles")
            .contains(&json!("a2a-1.0"))
    );
    let findings: Vec<_> = validators::validate_discovery(&discovery, &Options::default())
        .into_iter()
        .filter(|f| f.rule != "discovery.refresh-overdue")
        .collect();
    assert!(findings.is_empty(), "{findings:#?}");

    let card = h.public_card().await;
    assert_eq!(card["capabilities"]["extendedAgentCard"], json!(true));
    let findings = validators::validate_agent_card(&card, Some(&discovery), &Options::default());
    assert!(findings.is_empty(), "{findings:#?}");
    let text = card.to_string();
    assert!(!text.contains("\"tenant\""), "{text}");
    for entry in h.inventory(KEY_A).await {
        let r = entry["a2aTenant"].as_str().expect("r");
        assert!(!text.contains(r), "the public card lists {r}");
    }
    h.shutdown().await;
}

#[tokio::test]
async fn get_extended_agent_card_with_r_returns_that_agents_card_on_both_bindings() {
    let (data, agents) = (tempfile::tempdir().expect("dir"), agents_dir());
    let h = start_on(data.path(), agents.path()).await;
    let discovery = h.discovery().await;
    let host_card = h.public_card().await;

    for (key, agent_id) in [
        (KEY_A, "approvals-desk"),
        (KEY_A, "research"),
        (KEY_B, "research"),
        (KEY_B, "workflow-runner"),
    ] {
        let entry = h
            .inventory(key)
            .await
            .into_iter()
            .find(|e| e["agentId"] == agent_id)
            .expect("entry");
        let r = entry["a2aTenant"].as_str().expect("r");

        let rpc = h
            .rpc(Some(key), "GetExtendedAgentCard", json!({"tenant": r}))
            .await;
        assert_eq!(rpc.status, 200);
        let card = rpc.json()["result"].clone();
        let rest = h
            .rest(
                Some(key),
                Method::GET,
                &format!("/{r}/extendedAgentCard"),
                None,
            )
            .await;
        assert_eq!(rest.status, 200, "{}", String::from_utf8_lossy(&rest.body));
        assert_eq!(rest.json(), card, "both bindings answer the same card");

        assert_eq!(card["name"], entry["persona"]);
        assert_eq!(card["version"], entry["packVersion"]);
        let description = entry.get("description").unwrap_or(&entry["label"]);
        assert_eq!(&card["description"], description);
        assert_eq!(card["capabilities"], host_card["capabilities"]);
        assert_eq!(card["securitySchemes"], host_card["securitySchemes"]);
        let interfaces = card["supportedInterfaces"].as_array().expect("interfaces");
        let host_interfaces = host_card["supportedInterfaces"]
            .as_array()
            .expect("interfaces");
        assert_eq!(interfaces.len(), host_interfaces.len());
        for (mine, host) in interfaces.iter().zip(host_interfaces) {
            let mut expected = host.clone();
            expected["tenant"] = json!(r);
            assert_eq!(mine, &expected);
        }
        let skills: Vec<&Value> = card["skills"]
            .as_array()
            .expect("skills")
            .iter()
            .map(|s| &s["id"])
            .collect();
        let routed: Vec<&Value> = entry["workflows"]
            .as_array()
            .expect("workflows")
            .iter()
            .collect();
        assert_eq!(
            skills, routed,
            "{agent_id}: one skill per workflow routed for this caller"
        );
        let text = card.to_string();
        assert!(
            !text.contains("degraded") && !text.contains("agentId") && !text.contains("a2aTenant"),
            "{text}"
        );

        let findings =
            validators::validate_agent_card(&card, Some(&discovery), &Options::default());
        assert!(findings.is_empty(), "{agent_id}: {findings:#?}");
    }

    // Without a tenant: the host's own card, to an authenticated caller only, listing
    // the skills that caller may run (a caller who may run all gets the public card).
    let rpc = h.rpc(Some(KEY_A), "GetExtendedAgentCard", json!({})).await;
    assert_eq!(rpc.json()["result"], host_card);
    let rpc = h.rpc(Some(KEY_B), "GetExtendedAgentCard", json!({})).await;
    let narrowed = rpc.json()["result"].clone();
    let skill_ids: Vec<&str> = narrowed["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert_eq!(skill_ids, ["echo", "fail", "slow"]);
    assert_eq!(
        narrowed["supportedInterfaces"],
        host_card["supportedInterfaces"]
    );
    assert!(
        !narrowed.to_string().contains("clarify"),
        "no default skill the caller may not run: {narrowed}"
    );
    let rest = h
        .rest(Some(KEY_B), Method::GET, "/extendedAgentCard", None)
        .await;
    assert_eq!(rest.json(), narrowed);
    let rpc = h.rpc(None, "GetExtendedAgentCard", json!({})).await;
    assert_eq!(rpc.status, 401);
    h.shutdown().await;
}

#[tokio::test]
async fn a_foreign_r_is_answered_byte_for_byte_as_a_never_minted_one_on_every_operation() {
    let (data, agents) = (tempfile::tempdir().expect("dir"), agents_dir());
    let h = start_on(data.path(), agents.path()).await;
    let foreign = h.routing_value(KEY_A, "approvals-desk").await;
    assert!(
        h.inventory(KEY_B)
            .await
            .iter()
            .all(|e| e["a2aTenant"] != json!(foreign))
    );

    // GetExtendedAgentCard, JSON-RPC and HTTP+JSON.
    let a = h
        .rpc(
            Some(KEY_B),
            "GetExtendedAgentCard",
            json!({"tenant": foreign}),
        )
        .await;
    let b = h
        .rpc(
            Some(KEY_B),
            "GetExtendedAgentCard",
            json!({"tenant": NEVER_MINTED}),
        )
        .await;
    assert_same(&a, &b, "JSON-RPC GetExtendedAgentCard");
    let error = &a.json()["error"];
    assert_eq!(error["code"], -32007, "{error}");
    assert!(!String::from_utf8_lossy(&a.body).contains(&foreign));
    let a = h
        .rest(
            Some(KEY_B),
            Method::GET,
            &format!("/{foreign}/extendedAgentCard"),
            None,
        )
        .await;
    let b = h
        .rest(
            Some(KEY_B),
            Method::GET,
            &format!("/{NEVER_MINTED}/extendedAgentCard"),
            None,
        )
        .await;
    assert_same(&a, &b, "HTTP+JSON GetExtendedAgentCard");
    assert_eq!(a.status, 400);
    assert_eq!(
        a.json()["error"]["details"][0]["reason"],
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED"
    );

    // Authentication comes before R is looked at: no key, a valid R or not, one 401.
    let a = h
        .rpc(None, "GetExtendedAgentCard", json!({"tenant": foreign}))
        .await;
    let b = h
        .rpc(
            None,
            "GetExtendedAgentCard",
            json!({"tenant": NEVER_MINTED}),
        )
        .await;
    assert_eq!(a.status, 401);
    assert_same(&a, &b, "unauthenticated JSON-RPC");
    let a = h
        .rest(
            None,
            Method::GET,
            &format!("/{foreign}/extendedAgentCard"),
            None,
        )
        .await;
    let b = h
        .rest(
            None,
            Method::GET,
            &format!("/{NEVER_MINTED}/extendedAgentCard"),
            None,
        )
        .await;
    assert_eq!(a.status, 401);
    assert_same(&a, &b, "unauthenticated HTTP+JSON");

    // Every other operation answers a foreign R as a never-minted one. A new task's
    // SendMessage routes by R (the agent's skills and default skill), so an unknown R is
    // refused there; every other operation ignores R, so absent answers alike too.
    let bad_send = |tenant: Option<&str>| {
        let mut p = json!({"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "x"}], "metadata": {"openwop": {"skill": "approval"}}}});
        if let Some(t) = tenant {
            p["tenant"] = json!(t);
        }
        p
    };
    let with = |tenant: Option<&str>, mut p: Value| {
        if let Some(t) = tenant {
            p["tenant"] = json!(t);
        }
        p
    };
    for (method, params) in [
        ("GetTask", json!({"id": "other/r-0123456789abcdefghijkl"})),
        ("ListTasks", json!({})),
        ("CancelTask", json!({"id": "acme/r-0123456789abcdefghijkl"})),
        ("SendMessage", bad_send(None)),
        (
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "other/r-0123456789abcdefghijkl", "url": "https://example.com/hook"}),
        ),
    ] {
        let a = h
            .rpc(Some(KEY_B), method, with(Some(&foreign), params.clone()))
            .await;
        let b = h
            .rpc(
                Some(KEY_B),
                method,
                with(Some(NEVER_MINTED), params.clone()),
            )
            .await;
        let none = h.rpc(Some(KEY_B), method, params.clone()).await;
        assert_same(&a, &b, method);
        if method != "SendMessage" {
            assert_same(&a, &none, method);
        }
    }
    for (method, path, body) in [
        (Method::GET, "/tasks/other~2Fr-0123456789abcdefghijkl", None),
        (Method::GET, "/tasks", None),
        (
            Method::POST,
            "/tasks/acme~2Fr-0123456789abcdefghijkl:cancel",
            None,
        ),
        (Method::POST, "/message:send", Some(bad_send(None))),
    ] {
        let a = h
            .rest(
                Some(KEY_B),
                method.clone(),
                &format!("/{foreign}{path}"),
                body.clone(),
            )
            .await;
        let b = h
            .rest(
                Some(KEY_B),
                method.clone(),
                &format!("/{NEVER_MINTED}{path}"),
                body.clone(),
            )
            .await;
        let none = h
            .rest(Some(KEY_B), method.clone(), path, body.clone())
            .await;
        assert_same(&a, &b, path);
        if path != "/message:send" {
            assert_same(&a, &none, path);
        }
    }
    h.shutdown().await;
}

#[tokio::test]
async fn r_never_selects_a_tenant_a_task_sent_with_r_belongs_to_the_caller() {
    let (data, agents) = (tempfile::tempdir().expect("dir"), agents_dir());
    let h = start_on(data.path(), agents.path()).await;
    let r = h.routing_value(KEY_A, "workflow-runner").await;
    let send = json!({"tenant": r, "message": {"messageId": "m-r", "role": "ROLE_USER", "parts": [{"data": {"x": 1}}], "metadata": {"openwop": {"skill": "echo"}}}});
    let sent = h.rpc(Some(KEY_A), "SendMessage", send).await.json();
    let task = &sent["result"]["task"];
    let id = task["id"].as_str().expect("task id");
    assert!(id.starts_with("acme/"), "{id}");
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");

    // The other tenant reaches the same agent's R, but never acme's task through it.
    let via_r = h
        .rpc(Some(KEY_B), "GetTask", json!({"id": id, "tenant": r}))
        .await;
    let plain = h.rpc(Some(KEY_B), "GetTask", json!({"id": id})).await;
    assert_same(&via_r, &plain, "GetTask with R");
    assert_eq!(via_r.json()["error"]["code"], -32001);
    let listed = h
        .rest(Some(KEY_B), Method::GET, &format!("/{r}/tasks"), None)
        .await
        .json();
    assert_eq!(listed["tasks"], json!([]), "{listed}");
    let mine = h
        .rest(Some(KEY_A), Method::GET, &format!("/{r}/tasks"), None)
        .await
        .json();
    assert_eq!(mine["totalSize"], 1, "{mine}");
    h.shutdown().await;
}

#[tokio::test]
async fn r_is_stable_across_restart_and_has_the_routing_value_shape() {
    let (data, agents) = (tempfile::tempdir().expect("dir"), agents_dir());
    let h = start_on(data.path(), agents.path()).await;
    let first: Vec<Value> = h
        .inventory(KEY_A)
        .await
        .into_iter()
        .map(|e| e["a2aTenant"].clone())
        .collect();
    h.shutdown().await;
    let secret = std::fs::read_to_string(data.path().join(openwop::agents::routing::SECRET_FILE))
        .expect("secret file");
    assert_eq!(secret.trim().len(), 64);

    let h = start_on(data.path(), agents.path()).await;
    let again: Vec<Value> = h
        .inventory(KEY_A)
        .await
        .into_iter()
        .map(|e| e["a2aTenant"].clone())
        .collect();
    assert_eq!(
        first, again,
        "same agent, same host version, same data dir: same R"
    );
    // The card reached with the old R still resolves after the restart.
    let r = first[0].as_str().expect("r");
    let card = h
        .rpc(Some(KEY_A), "GetExtendedAgentCard", json!({"tenant": r}))
        .await;
    assert_eq!(card.json()["result"]["name"], "Approvals Desk");
    h.shutdown().await;

    let mut seen = std::collections::BTreeSet::new();
    for r in &first {
        let r = r.as_str().expect("r");
        assert!(is_routing_value(r), "{r}");
        assert!(r.len() >= 3 + 22, "at least 128 bits: {r}");
        for leak in [
            "acme",
            "other",
            "approvals",
            "research",
            "workflow",
            "runner",
        ] {
            assert!(!r.contains(leak), "{r} spells {leak}");
        }
        assert!(seen.insert(r.to_owned()), "{r} repeats");
    }

    // Another data dir has another secret, so every R differs.
    let (data2, agents2) = (tempfile::tempdir().expect("dir"), agents_dir());
    let h = start_on(data2.path(), agents2.path()).await;
    let elsewhere: Vec<Value> = h
        .inventory(KEY_A)
        .await
        .into_iter()
        .map(|e| e["a2aTenant"].clone())
        .collect();
    assert!(first.iter().all(|r| !elsewhere.contains(r)));
    h.shutdown().await;
}

#[tokio::test]
async fn an_agent_routing_a_missing_workflow_stops_the_host_from_starting() {
    let (data, agents) = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    std::fs::write(
        agents.path().join("broken.json"),
        r#"{"agentId": "broken-agent", "persona": "B", "label": "L", "packVersion": "1", "workflows": ["echo", "no-such-workflow"]}"#,
    )
    .expect("write");
    let err = Host::build(config(data.path(), agents.path()))
        .await
        .err()
        .expect("start error")
        .to_string();
    assert!(
        err.contains("broken-agent") && err.contains("no-such-workflow"),
        "{err}"
    );
}

#[tokio::test]
async fn openwop_validate_accepts_the_public_card_and_every_per_agent_card() {
    let (data, agents) = (tempfile::tempdir().expect("dir"), agents_dir());
    let h = start_on(data.path(), agents.path()).await;
    let out = tempfile::tempdir().expect("out");
    let write = |name: &str, v: &Value| {
        let path = out.path().join(name);
        std::fs::write(&path, v.to_string()).expect("write");
        path.display().to_string()
    };
    let discovery = write("discovery.json", &h.discovery().await);
    let mut cards = vec![write("public.json", &h.public_card().await)];
    for entry in h.inventory(KEY_A).await {
        let r = entry["a2aTenant"].as_str().expect("r");
        let card = h
            .rpc(Some(KEY_A), "GetExtendedAgentCard", json!({"tenant": r}))
            .await
            .json()["result"]
            .clone();
        cards.push(write(
            &format!("{}.json", entry["agentId"].as_str().expect("id")),
            &card,
        ));
    }
    h.shutdown().await;
    let result = std::process::Command::new(support::process::BIN)
        .args([
            "validate",
            "--now",
            "2026-12-01",
            "--kind",
            "agent-card",
            "--discovery",
            &discovery,
        ])
        .args(&cards)
        .output()
        .expect("run openwop validate");
    assert!(
        result.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&result.stdout),
        String::from_utf8_lossy(&result.stderr)
    );
    assert_eq!(cards.len(), 4);
}

#[tokio::test]
async fn the_generated_client_reads_the_inventory_as_the_openapi_document_types_it() {
    let (data, agents) = (tempfile::tempdir().expect("dir"), agents_dir());
    std::fs::write(
        agents.path().join("team-helper.yaml"),
        "agentId: 'team:helper~1'\npersona: Helper\nlabel: Helps\npackVersion: '1'\nworkflows: [echo]\n",
    )
    .expect("write agent");
    let h = start_on(data.path(), agents.path()).await;
    let client = openwop_generated::client::Client::new(h.base.clone())
        .with_api_key(KEY_B)
        .expect("a valid key");
    let list = client
        .list_agents()
        .send()
        .await
        .expect("listAgents decodes as AgentList");
    let ids: Vec<String> = list.agents.iter().map(|a| a.agent_id.to_string()).collect();
    assert_eq!(ids, ["research", "team:helper~1", "workflow-runner"]);
    // The client projects `:` and `~` into the path; the host undoes it once.
    let one = client
        .get_agent("team:helper~1")
        .send()
        .await
        .expect("getAgent decodes as Agent");
    assert_eq!(one.agent_id.to_string(), "team:helper~1");
    assert_eq!(
        serde_json::to_value(&*one).expect("json"),
        serde_json::to_value(&list.agents[1]).expect("json")
    );
    match client.get_agent("approvals-desk").send().await {
        Err(openwop_generated::client::Error::Api { status, code, .. }) => {
            assert_eq!((status, code.as_str()), (404, "not_found"));
        }
        other => panic!("a hidden agent must be not_found: {other:?}"),
    }
    h.shutdown().await;
}

/// MCP `tools/list` applies the same rule as the inventory and `createRun`: a caller is
/// offered exactly the workflows it may run, and a tool it is not offered cannot be run.
#[tokio::test]
async fn mcp_tools_list_offers_only_what_the_caller_may_run() {
    let data = tempfile::tempdir().expect("data");
    let agents = agents_dir();
    let h = start_on(data.path(), agents.path()).await;
    let mcp = |key: &'static str, method: &'static str, params: Value| {
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        let mut req = h
            .http
            .post(format!("{}/mcp", h.base))
            .bearer_auth(key)
            .header("accept", "application/json")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", method);
        if let Some(name) = params.get("name").and_then(Value::as_str) {
            req = req.header("Mcp-Name", name.to_owned());
        }
        req.json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .send()
    };
    let names = |v: Value| -> Vec<String> {
        v["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    };
    let other: Value = mcp(KEY_B, "tools/list", json!({}))
        .await
        .expect("list")
        .json()
        .await
        .expect("json");
    assert_eq!(names(other), ["echo", "fail", "slow"]);
    let acme: Value = mcp(KEY_A, "tools/list", json!({}))
        .await
        .expect("list")
        .json()
        .await
        .expect("json");
    assert!(names(acme).contains(&"approval".to_owned()));
    let refused: Value = mcp(
        KEY_B,
        "tools/call",
        json!({"name": "approval", "arguments": {}}),
    )
    .await
    .expect("call")
    .json()
    .await
    .expect("json");
    assert!(refused.get("error").is_some(), "{refused}");
    h.shutdown().await;
}

/// `listWorkflows` is the set `tools/list` and the inventory show; `getWorkflow` answers
/// the definition as loaded for a workflow the caller may run, and a workflow outside
/// the caller's set exactly as one the host never had (apart from the echoed id).
#[tokio::test]
async fn list_workflows_shows_what_the_caller_may_run_and_get_workflow_hides_the_rest() {
    let data = tempfile::tempdir().expect("data");
    let agents = agents_dir();
    let h = start_on(data.path(), agents.path()).await;
    let ids = |r: &Raw| -> Vec<String> {
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        r.json()["workflows"]
            .as_array()
            .expect("workflows")
            .iter()
            .map(|w| w["workflowId"].as_str().expect("workflowId").to_owned())
            .collect()
    };
    assert_eq!(
        ids(&h.get(Some(KEY_B), "/workflows").await),
        ["echo", "fail", "slow"]
    );
    let all = ids(&h.get(Some(KEY_A), "/workflows").await);
    assert!(all.contains(&"approval".to_owned()), "{all:?}");
    let mut sorted = all.clone();
    sorted.sort();
    assert_eq!(all, sorted, "sorted by workflowId");
    let list = h.get(Some(KEY_A), "/workflows").await.json();
    let echo = list["workflows"]
        .as_array()
        .and_then(|w| w.iter().find(|w| w["workflowId"] == "echo"))
        .cloned()
        .expect("echo listed");
    assert!(echo["inputSchema"].is_object(), "{echo}");

    let def = h.get(Some(KEY_A), "/workflows/approval").await;
    assert_eq!(def.status, 200);
    let def = def.json();
    assert_eq!(def["id"], "approval");
    assert!(
        validators::validate_workflow_definition(&def).is_empty(),
        "{def}"
    );

    let hidden = h.get(Some(KEY_B), "/workflows/approval").await;
    let never = h.get(Some(KEY_B), "/workflows/no-such-flow").await;
    assert_eq!(hidden.status, 404);
    let mut never_as_hidden = never;
    never_as_hidden.body = String::from_utf8_lossy(&never_as_hidden.body)
        .replace("no-such-flow", "approval")
        .into_bytes();
    assert_same(&hidden, &never_as_hidden, "a hidden workflow");
    assert_eq!(h.get(None, "/workflows").await.status, 401);
    h.shutdown().await;
}
