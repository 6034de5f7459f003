//! OpenTelemetry export (issue #32): the real `openwop serve` with
//! `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at a tiny OTLP/HTTP receiver on loopback, which
//! decodes the protobuf it is sent. Request spans continue the caller's trace, run steps
//! and peer calls have spans of their own, attributes carry the semantic conventions'
//! names, and the peer sees the client span's id as its parent; push notifications and
//! interrupt notices get client spans too, an MCP tool error is `error.type = tool_error`,
//! and A2A spans carry the task state. Without the variable, nothing is sent.

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use prost::Message as _;
use serde_json::{Value, json};
use support::{KEY_A, process};

/// One exported span, flattened.
#[derive(Debug, Clone)]
struct Got {
    service: String,
    trace_id: String,
    span_id: String,
    parent: String,
    name: String,
    /// 1 internal, 2 server, 3 client.
    kind: i32,
    attrs: BTreeMap<String, String>,
    /// 2 is ERROR.
    status: i32,
    links: Vec<(String, String)>,
}

impl Got {
    fn attr(&self, key: &str) -> Option<&str> {
        self.attrs.get(key).map(String::as_str)
    }
}

fn text(v: &Option<opentelemetry_proto::tonic::common::v1::AnyValue>) -> String {
    match v.as_ref().and_then(|v| v.value.as_ref()) {
        Some(Any::StringValue(s)) => s.clone(),
        Some(Any::IntValue(i)) => i.to_string(),
        Some(Any::BoolValue(b)) => b.to_string(),
        Some(Any::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

/// The receiver: every span of every `POST /v1/traces`, and how many posts came.
#[derive(Default, Clone)]
struct Receiver {
    spans: Arc<Mutex<Vec<Got>>>,
    posts: Arc<Mutex<usize>>,
}

impl Receiver {
    async fn start() -> (Receiver, String) {
        let r = Receiver::default();
        let state = r.clone();
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(
                move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                    let state = state.clone();
                    async move {
                        assert_eq!(
                            headers.get("content-type").and_then(|v| v.to_str().ok()),
                            Some("application/x-protobuf")
                        );
                        let req = ExportTraceServiceRequest::decode(body).expect("OTLP protobuf");
                        *state.posts.lock().unwrap() += 1;
                        let mut spans = state.spans.lock().unwrap();
                        for rs in req.resource_spans {
                            let service = rs
                                .resource
                                .iter()
                                .flat_map(|r| r.attributes.iter())
                                .find(|kv| kv.key == "service.name")
                                .map(|kv| text(&kv.value))
                                .unwrap_or_default();
                            for ss in rs.scope_spans {
                                for s in ss.spans {
                                    spans.push(Got {
                                        service: service.clone(),
                                        trace_id: hex::encode(&s.trace_id),
                                        span_id: hex::encode(&s.span_id),
                                        parent: hex::encode(&s.parent_span_id),
                                        name: s.name,
                                        kind: s.kind,
                                        attrs: s
                                            .attributes
                                            .iter()
                                            .map(|kv| (kv.key.clone(), text(&kv.value)))
                                            .collect(),
                                        status: s.status.map_or(0, |st| st.code),
                                        links: s
                                            .links
                                            .iter()
                                            .map(|l| {
                                                (hex::encode(&l.trace_id), hex::encode(&l.span_id))
                                            })
                                            .collect(),
                                    });
                                }
                            }
                        }
                        (
                            [("content-type", "application/x-protobuf")],
                            Vec::<u8>::new(),
                        )
                    }
                },
            ),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move { axum::serve(listener, app).await.expect("receiver") });
        (r, base)
    }

    fn spans(&self) -> Vec<Got> {
        self.spans.lock().unwrap().clone()
    }

    /// Waits (up to 20 s) for a span `pick` accepts.
    async fn wait_for(&self, what: &str, pick: impl Fn(&Got) -> bool) -> Got {
        for _ in 0..200 {
            if let Some(s) = self.spans().into_iter().find(|s| pick(s)) {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no exported span: {what}; got {:#?}", self.spans());
    }
}

/// A peer the host's `http` node calls: answers JSON and keeps each `traceparent` header.
async fn stub_peer() -> (Arc<Mutex<Vec<String>>>, String) {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let s = seen.clone();
    let app = axum::Router::new().fallback(move |headers: axum::http::HeaderMap| {
        let s = s.clone();
        async move {
            if let Some(tp) = headers.get("traceparent").and_then(|v| v.to_str().ok()) {
                s.lock().unwrap().push(tp.to_owned());
            }
            axum::Json(json!({"ok": true}))
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await.expect("stub") });
    (seen, base)
}

struct Served {
    child: tokio::process::Child,
    base: String,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
}

/// A host exporting its spans to `collector` every 100 ms.
async fn serve_exporting(peer: &str, collector: &str) -> Served {
    serve(
        peer,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", collector),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    )
    .await
}

/// `openwop serve` with two workflows (`hello`: one transform; `fetch`: an `http` node
/// calling the stub peer) and `env` set (every inherited OTEL_* variable removed first).
async fn serve(peer: &str, env: &[(&str, &str)]) -> Served {
    let dir = tempfile::tempdir().expect("tempdir");
    let wf = dir.path().join("workflows");
    std::fs::create_dir_all(&wf).expect("mkdir");
    std::fs::write(
        wf.join("hello.yaml"),
        "id: hello\ninputSchema: {type: object}\nnodes:\n  - id: greet\n    kind: transform\n    value: {said: \"${inputs.text}\"}\noutputs: {greeting: \"${nodes.greet}\"}\n",
    )
    .expect("write");
    std::fs::write(
        wf.join("fetch.yaml"),
        "id: fetch\ninputSchema: {type: object}\nnodes:\n  - id: get\n    kind: http\n    peer: stub\n    method: GET\n    path: /thing\noutputs: {status: \"${nodes.get.status}\"}\n",
    )
    .expect("write");
    let config = dir.path().join("config.json");
    std::fs::write(
        &config,
        json!({"peers": [{"id": "stub", "kind": "http", "url": peer}]}).to_string(),
    )
    .expect("write");
    let mut cmd = process::serve_keyed(&dir.path().join("data"));
    // The host's own log filter: the spans it exports must not depend on the test's.
    cmd.arg("--egress-allow-loopback")
        .arg("--workflows")
        .arg(&wf)
        .arg("--config")
        .arg(&config)
        .env_remove("RUST_LOG")
        .stderr(std::process::Stdio::null());
    for (name, _) in std::env::vars() {
        if name.starts_with("OTEL_") {
            cmd.env_remove(name);
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let (child, base) = process::listening(cmd.spawn().expect("spawn openwop")).await;
    Served {
        child,
        base,
        http: reqwest::Client::new(),
        _dir: dir,
    }
}

impl Served {
    async fn create_run(&self, workflow: &str, traceparent: &str) -> String {
        let resp = self
            .http
            .post(format!("{}/runs", self.base))
            .bearer_auth(KEY_A)
            .header("traceparent", traceparent)
            .json(&json!({"workflowId": workflow, "inputs": {"text": "hi"}}))
            .send()
            .await
            .expect("send");
        assert_eq!(resp.status().as_u16(), 201);
        let body: Value = resp.json().await.expect("json");
        body["runId"].as_str().expect("runId").to_owned()
    }

    /// Waits for a run to end and returns its snapshot.
    async fn finished(&self, run_id: &str) -> Value {
        let path = run_id.replace('/', "~2F");
        for _ in 0..100 {
            let snap: Value = self
                .http
                .get(format!("{}/runs/{path}", self.base))
                .bearer_auth(KEY_A)
                .send()
                .await
                .expect("send")
                .json()
                .await
                .expect("json");
            if matches!(snap["status"].as_str(), Some("completed" | "failed")) {
                return snap;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("run {run_id} did not end");
    }

    /// Whether the process runs the SDK's batch export thread
    /// (`OpenTelemetry.Traces.BatchProcessor`, cut to 15 bytes by the kernel).
    fn has_batch_thread(&self) -> bool {
        let pid = self.child.id().expect("pid");
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .expect("/proc")
            .filter_map(Result::ok)
            .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
            .any(|name| name.starts_with("OpenTelemetry"))
    }

    /// SIGTERM, then waits for the graceful stop.
    async fn stop(mut self) {
        let pid = self.child.id().expect("pid");
        let ok = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("kill");
        assert!(ok.success());
        let status = tokio::time::timeout(Duration::from_secs(20), self.child.wait())
            .await
            .expect("stops within 20 s")
            .expect("wait");
        assert!(status.success(), "{status}");
    }
}

/// A JSON answer, or the JSON-RPC response in an SSE answer's `data:` line.
fn json_or_sse(text: &str) -> Value {
    let data = text
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .unwrap_or(text);
    serde_json::from_str(data.trim()).unwrap_or(Value::String(text.to_owned()))
}

const SERVER: i32 = 2;
const CLIENT: i32 = 3;
const INTERNAL: i32 = 1;

/// Request, step and peer-call spans, with the caller's trace continued and the semantic
/// conventions' attribute names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_continue_the_callers_trace_with_semconv_attributes() {
    let (receiver, collector) = Receiver::start().await;
    let (peer_saw, peer) = stub_peer().await;
    let host = serve_exporting(&peer, &collector).await;

    // REST createRun continuing a known trace.
    let (rest_trace, rest_parent) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let run = host
        .create_run("hello", &format!("00-{rest_trace}-{rest_parent}-01"))
        .await;
    assert!(host.has_batch_thread());
    let post = receiver
        .wait_for("POST /runs", |s| {
            s.name == "POST /runs" && s.trace_id == rest_trace
        })
        .await;
    assert_eq!(post.kind, SERVER);
    assert_eq!(post.parent, rest_parent, "the caller's span is the parent");
    assert_eq!(post.service, "openwop");
    assert_eq!(post.attr("http.request.method"), Some("POST"));
    assert_eq!(post.attr("http.route"), Some("/runs"));
    assert_eq!(post.attr("url.path"), Some("/runs"));
    assert_eq!(post.attr("url.scheme"), Some("http"));
    assert_eq!(post.attr("http.response.status_code"), Some("201"));
    assert_eq!(post.attr("server.address"), Some("127.0.0.1"));
    assert!(post.attr("server.port").is_some(), "{post:?}");
    // The run's step: in the caller's trace.
    let step = receiver
        .wait_for("step greet", |s| s.name == "step greet")
        .await;
    assert_eq!(step.kind, INTERNAL);
    assert_eq!(step.trace_id, rest_trace);
    assert_eq!(step.parent, rest_parent);
    assert_eq!(step.attr("openwop.run.id"), Some(run.as_str()));
    assert_eq!(step.attr("openwop.workflow.id"), Some("hello"));
    assert_eq!(step.attr("openwop.node.id"), Some("greet"));
    assert_eq!(step.attr("openwop.node.kind"), Some("core.transform"));

    // An MCP tools/call: the trace in `_meta` parents the MCP span (the header's, the HTTP
    // span's, is linked).
    let (meta_trace, meta_parent) = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
    let (hdr_trace, hdr_parent) = ("11111111111111111111111111111111", "2222222222222222");
    let reply: Value = host
        .http
        .post(format!("{}/mcp", host.base))
        .bearer_auth(KEY_A)
        .header("accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "hello")
        .header("traceparent", format!("00-{hdr_trace}-{hdr_parent}-01"))
        .json(
            &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
                "name": "hello",
                "arguments": {"text": "hi"},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "traceparent": format!("00-{meta_trace}-{meta_parent}-01"),
                },
            }}),
        )
        .send()
        .await
        .expect("send")
        .text()
        .await
        .map(|t| json_or_sse(&t))
        .expect("body");
    assert!(reply.get("result").is_some(), "{reply}");
    let mcp_http = receiver
        .wait_for("POST /mcp", |s| {
            s.name == "POST /mcp" && s.trace_id == hdr_trace
        })
        .await;
    assert_eq!(mcp_http.parent, hdr_parent);
    let mcp = receiver
        .wait_for("tools/call hello", |s| s.name == "tools/call hello")
        .await;
    assert_eq!(mcp.kind, SERVER);
    assert_eq!(mcp.trace_id, meta_trace, "{mcp:?}");
    assert_eq!(mcp.parent, meta_parent, "{mcp:?}");
    assert_eq!(
        mcp.links,
        vec![(mcp_http.trace_id.clone(), mcp_http.span_id.clone())],
        "linked to the transport's span"
    );
    assert_eq!(mcp.attr("mcp.method.name"), Some("tools/call"));
    assert_eq!(mcp.attr("gen_ai.tool.name"), Some("hello"));
    assert_eq!(mcp.attr("gen_ai.operation.name"), Some("execute_tool"));
    assert_eq!(mcp.attr("mcp.protocol.version"), Some("2026-07-28"));
    assert_eq!(mcp.attr("jsonrpc.request.id"), Some("7"));
    assert_eq!(mcp.attr("network.transport"), Some("tcp"));
    assert_eq!(mcp.status, 0, "{mcp:?}");

    // An MCP error: `error.type` and `rpc.response.status_code` are the JSON-RPC code.
    let _ = host
        .http
        .post(format!("{}/mcp", host.base))
        .bearer_auth(KEY_A)
        .header("accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/list")
        .json(
            &json!({"jsonrpc": "2.0", "id": "l-1", "method": "tools/list", "params": {
                "_meta": {"io.modelcontextprotocol/protocolVersion": "1999-01-01",
                          "io.modelcontextprotocol/clientCapabilities": {}},
            }}),
        )
        .send()
        .await
        .expect("send");
    let failed = receiver
        .wait_for("tools/list refused", |s| {
            s.name == "tools/list" && s.attr("jsonrpc.request.id") == Some("l-1")
        })
        .await;
    assert_eq!(failed.status, 2, "{failed:?}");
    let code = failed.attr("error.type").expect("error.type");
    assert!(code.starts_with('-'), "a JSON-RPC code: {failed:?}");
    assert_eq!(failed.attr("rpc.response.status_code"), Some(code));

    // An A2A SendMessage on the JSON-RPC binding: a child of the HTTP span.
    let (a2a_trace, a2a_parent) = ("33333333333333333333333333333333", "4444444444444444");
    let sent: Value = host
        .http
        .post(format!("{}/a2a/jsonrpc", host.base))
        .bearer_auth(KEY_A)
        .header("A2A-Version", "1.0")
        .header("traceparent", format!("00-{a2a_trace}-{a2a_parent}-01"))
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
                "messageId": "m-otel-1",
                "role": "ROLE_USER",
                "parts": [{"data": {"text": "hi"}}],
                "metadata": {"openwop": {"skill": "hello"}},
            }}}),
        )
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert!(sent.get("result").is_some(), "{sent}");
    let a2a_http = receiver
        .wait_for("POST /a2a/jsonrpc", |s| {
            s.name == "POST /a2a/jsonrpc" && s.trace_id == a2a_trace
        })
        .await;
    assert_eq!(a2a_http.parent, a2a_parent);
    let a2a = receiver
        .wait_for("SendMessage", |s| {
            s.name == "SendMessage" && s.trace_id == a2a_trace
        })
        .await;
    assert_eq!(a2a.kind, SERVER);
    assert_eq!(a2a.parent, a2a_http.span_id, "a child of the HTTP span");
    assert_eq!(a2a.attr("a2a.method.name"), Some("SendMessage"));
    assert_eq!(a2a.attr("a2a.message.id"), Some("m-otel-1"));
    assert_eq!(a2a.attr("a2a.protocol.version"), Some("1.0"));
    // The task the answer carries: its state, by its A2A v1 wire name.
    let state = sent["result"]["task"]["status"]["state"]
        .as_str()
        .expect("a task in the answer");
    assert!(state.starts_with("TASK_STATE_"), "{sent}");
    assert_eq!(a2a.attr("a2a.task.state"), Some(state), "{a2a:?}");

    // An MCP tool whose run fails answers a result with `isError: true`: the MCP span
    // fails with `error.type = tool_error` (not a JSON-RPC code: the call itself worked).
    let reply: Value = host
        .http
        .post(format!("{}/mcp", host.base))
        .bearer_auth(KEY_A)
        .header("accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "fail")
        .json(
            &json!({"jsonrpc": "2.0", "id": "f-1", "method": "tools/call", "params": {
                "name": "fail",
                "arguments": {},
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {}},
            }}),
        )
        .send()
        .await
        .expect("send")
        .text()
        .await
        .map(|t| json_or_sse(&t))
        .expect("body");
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let tool_failed = receiver
        .wait_for("tools/call fail", |s| {
            s.name == "tools/call fail" && s.kind == SERVER
        })
        .await;
    assert_eq!(
        tool_failed.attr("error.type"),
        Some("tool_error"),
        "{tool_failed:?}"
    );
    assert_eq!(tool_failed.status, 2, "{tool_failed:?}");
    assert_eq!(tool_failed.attr("rpc.response.status_code"), None);

    // A run whose `http` node calls the peer: the peer's traceparent names the client span.
    let (out_trace, out_parent) = ("55555555555555555555555555555555", "6666666666666666");
    let run = host
        .create_run("fetch", &format!("00-{out_trace}-{out_parent}-01"))
        .await;
    let snap = host.finished(&run).await;
    assert_eq!(snap["status"], "completed", "{snap}");
    let received = peer_saw.lock().unwrap().clone();
    assert_eq!(received.len(), 1, "{received:?}");
    let fields: Vec<&str> = received[0].split('-').collect();
    assert_eq!(fields[1], out_trace, "the peer joins the caller's trace");
    let client = receiver
        .wait_for("the peer call", |s| s.span_id == fields[2])
        .await;
    assert_eq!(client.kind, CLIENT, "{client:?}");
    assert_eq!(client.trace_id, out_trace);
    assert_eq!(client.name, "GET");
    assert_eq!(client.attr("http.request.method"), Some("GET"));
    assert_eq!(client.attr("http.response.status_code"), Some("200"));
    assert_eq!(client.attr("server.address"), Some("127.0.0.1"));
    assert_eq!(client.attr("openwop.peer.id"), Some("stub"));
    let step = receiver
        .wait_for("step get", |s| s.span_id == client.parent)
        .await;
    assert_eq!(step.name, "step get", "the call is a child of its step");
    assert_eq!(step.parent, out_parent);

    host.stop().await;
}

/// An `mcp` node calling a tool on this same host (its own `/mcp` as the peer): the
/// client span carries the MCP attributes, and the host's MCP server span for that call
/// is its child (the trace crossed in `params._meta`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_peer_call_has_a_client_span_the_server_span_continues() {
    // The peer URL is written before the host starts, so the port is chosen first: one the
    // system hands out (bound, then released), not a fixed one another suite may hold.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port();
    let (receiver, collector) = Receiver::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let wf = dir.path().join("workflows");
    std::fs::create_dir_all(&wf).expect("mkdir");
    std::fs::write(
        wf.join("hello.yaml"),
        "id: hello\ninputSchema: {type: object}\nnodes:\n  - id: greet\n    kind: transform\n    value: {said: \"${inputs.text}\"}\noutputs: {greeting: \"${nodes.greet}\"}\n",
    )
    .expect("write");
    std::fs::write(
        wf.join("tool.yaml"),
        "id: tool\ninputSchema: {type: object}\nnodes:\n  - id: call\n    kind: mcp\n    peer: self\n    tool: hello\n    arguments: {text: hi}\noutputs: {result: \"${nodes.call}\"}\n",
    )
    .expect("write");
    std::fs::write(
        wf.join("toolfail.yaml"),
        "id: toolfail\ninputSchema: {type: object}\nnodes:\n  - id: call\n    kind: mcp\n    peer: self\n    tool: fail\n    arguments: {}\noutputs: {result: \"${nodes.call}\"}\n",
    )
    .expect("write");
    let config = dir.path().join("config.json");
    std::fs::write(
        &config,
        json!({"peers": [{"id": "self", "kind": "mcp", "url": format!("http://127.0.0.1:{port}/mcp"),
                          "credential": {"env": "OTEL_TEST_SELF_KEY"}}]})
        .to_string(),
    )
    .expect("write");
    let mut cmd = tokio::process::Command::new(process::BIN);
    cmd.arg("serve")
        .args([
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--egress-allow-loopback",
        ])
        .args(["--api-key", &format!("acme:{KEY_A}")])
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--workflows")
        .arg(&wf)
        .arg("--config")
        .arg(&config)
        .env("OTEL_TEST_SELF_KEY", KEY_A)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &collector)
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let (child, base) = process::listening(cmd.spawn().expect("spawn openwop")).await;
    let host = Served {
        child,
        base,
        http: reqwest::Client::new(),
        _dir: dir,
    };
    let trace = "abababababababababababababababab";
    let run = host
        .create_run("tool", &format!("00-{trace}-cdcdcdcdcdcdcdcd-01"))
        .await;
    let snap = host.finished(&run).await;
    assert_eq!(snap["status"], "completed", "{snap}");
    let client = receiver
        .wait_for("the tools/call client span", |s| {
            s.kind == CLIENT && s.name == "tools/call hello"
        })
        .await;
    assert_eq!(client.trace_id, trace);
    assert_eq!(client.attr("mcp.method.name"), Some("tools/call"));
    assert_eq!(client.attr("gen_ai.tool.name"), Some("hello"));
    assert_eq!(client.attr("gen_ai.operation.name"), Some("execute_tool"));
    assert!(client.attr("mcp.protocol.version").is_some(), "{client:?}");
    assert!(client.attr("jsonrpc.request.id").is_some(), "{client:?}");
    assert_eq!(client.attr("openwop.peer.id"), Some("self"));
    assert_eq!(client.attr("server.port"), Some(port.to_string().as_str()));
    let server = receiver
        .wait_for("the tools/call server span", |s| {
            s.kind == SERVER && s.name == "tools/call hello"
        })
        .await;
    assert_eq!(server.trace_id, trace);
    assert_eq!(
        server.parent, client.span_id,
        "the server continues the client span"
    );

    // A tool that answers `isError: true`: both sides' spans fail with `tool_error`.
    let trace = "efefefefefefefefefefefefefefefef";
    let run = host
        .create_run("toolfail", &format!("00-{trace}-cdcdcdcdcdcdcdcd-01"))
        .await;
    host.finished(&run).await;
    let client = receiver
        .wait_for("the failing tools/call client span", |s| {
            s.kind == CLIENT && s.name == "tools/call fail" && s.trace_id == trace
        })
        .await;
    assert_eq!(client.attr("error.type"), Some("tool_error"), "{client:?}");
    assert_eq!(client.status, 2, "{client:?}");
    assert_eq!(client.attr("http.response.status_code"), Some("200"));
    let server = receiver
        .wait_for("the failing tools/call server span", |s| {
            s.kind == SERVER && s.name == "tools/call fail" && s.trace_id == trace
        })
        .await;
    assert_eq!(server.attr("error.type"), Some("tool_error"), "{server:?}");
    host.stop().await;
}

/// Deliveries the host posts on its own, straight through the egress guard: an A2A push
/// notification and an interrupt notice to a run's `callbackUrl`. Each attempt is a CLIENT
/// span in the trace the run was created in, and the receiver's `traceparent` names it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_and_interrupt_notice_deliveries_have_client_spans() {
    let (receiver, collector) = Receiver::start().await;
    let (hook_saw, hook) = stub_peer().await;
    let host = serve_exporting(&hook, &collector).await;

    // A push: SendMessage with an inline push configuration, the trace in the message.
    let (push_trace, push_parent) = ("12121212121212121212121212121212", "3434343434343434");
    let sent: Value = host
        .http
        .post(format!("{}/a2a/jsonrpc", host.base))
        .bearer_auth(KEY_A)
        .header("A2A-Version", "1.0")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
                "message": {
                    "messageId": "m-otel-push",
                    "role": "ROLE_USER",
                    "parts": [{"data": {"text": "hi"}}],
                    "metadata": {"openwop": {"skill": "hello",
                        "traceparent": format!("00-{push_trace}-{push_parent}-01")}},
                },
                "configuration": {"taskPushNotificationConfig": {"url": format!("{hook}/push")}},
            }}),
        )
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert!(sent.get("result").is_some(), "{sent}");
    let seen = wait_for_traceparent(&hook_saw, push_trace).await;
    let push = receiver
        .wait_for("the push delivery span", |s| s.span_id == seen[2])
        .await;
    assert_eq!(push.kind, CLIENT, "{push:?}");
    assert_eq!(push.name, "POST");
    assert_eq!(push.trace_id, push_trace);
    assert_eq!(
        push.parent, push_parent,
        "in the run's trace, as its steps are"
    );
    assert_eq!(push.attr("http.request.method"), Some("POST"));
    assert_eq!(push.attr("http.response.status_code"), Some("200"));
    assert_eq!(push.attr("server.address"), Some("127.0.0.1"));
    assert_eq!(push.attr("openwop.delivery.kind"), Some("push"));
    assert!(
        push.attr("a2a.task.state")
            .is_some_and(|s| s.starts_with("TASK_STATE_")),
        "{push:?}"
    );
    assert!(push.attr("a2a.task.id").is_some(), "{push:?}");
    assert_eq!(push.status, 0, "{push:?}");

    // An interrupt notice: a REST run with a callbackUrl that suspends for approval.
    let (cb_trace, cb_parent) = ("56565656565656565656565656565656", "7878787878787878");
    let resp = host
        .http
        .post(format!("{}/runs", host.base))
        .bearer_auth(KEY_A)
        .header("traceparent", format!("00-{cb_trace}-{cb_parent}-01"))
        .json(&json!({"workflowId": "approval", "callbackUrl": format!("{hook}/notices")}))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 201);
    let seen = wait_for_traceparent(&hook_saw, cb_trace).await;
    let notice = receiver
        .wait_for("the interrupt notice span", |s| s.span_id == seen[2])
        .await;
    assert_eq!(notice.kind, CLIENT, "{notice:?}");
    assert_eq!(notice.trace_id, cb_trace);
    assert_eq!(notice.parent, cb_parent);
    assert_eq!(
        notice.attr("openwop.delivery.kind"),
        Some("interrupt_notice")
    );
    assert_eq!(notice.attr("http.response.status_code"), Some("200"));
    assert!(notice.attr("openwop.run.id").is_some(), "{notice:?}");
    host.stop().await;
}

/// The fields of the first `traceparent` the stub received in `trace` (waits up to 20 s).
async fn wait_for_traceparent(seen: &Arc<Mutex<Vec<String>>>, trace: &str) -> Vec<String> {
    for _ in 0..200 {
        if let Some(tp) = seen
            .lock()
            .unwrap()
            .iter()
            .find(|tp| tp.split('-').nth(1) == Some(trace))
        {
            return tp.split('-').map(str::to_owned).collect();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "no request in trace {trace}; saw {:?}",
        seen.lock().unwrap()
    );
}

/// The provider is shut down on a graceful stop: a span still queued (the batch delay is
/// a minute) reaches the collector before the process exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_stop_flushes_the_last_spans() {
    let (receiver, collector) = Receiver::start().await;
    let (_, peer) = stub_peer().await;
    let host = serve(
        &peer,
        &[
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                &format!("{collector}/v1/traces"),
            ),
            ("OTEL_BSP_SCHEDULE_DELAY", "60000"),
            ("OTEL_SERVICE_NAME", "openwop-otel-test"),
        ],
    )
    .await;
    let trace = "77777777777777777777777777777777";
    host.create_run("hello", &format!("00-{trace}-8888888888888888-01"))
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        receiver.spans().is_empty(),
        "nothing before the batch is due"
    );
    host.stop().await;
    let spans = receiver.spans();
    let post = spans
        .iter()
        .find(|s| s.name == "POST /runs" && s.trace_id == trace)
        .unwrap_or_else(|| panic!("flushed at stop: {spans:#?}"));
    assert_eq!(
        post.service, "openwop-otel-test",
        "OTEL_SERVICE_NAME is honoured"
    );
}

/// Without a collector configured nothing is exported and no export thread runs; with
/// one but `OTEL_SDK_DISABLED=true`, neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_variable_nothing_is_sent() {
    let (receiver, collector) = Receiver::start().await;
    let (_, peer) = stub_peer().await;
    for env in [
        // The batch settings alone do not turn export on.
        vec![("OTEL_BSP_SCHEDULE_DELAY", "10")],
        vec![
            ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "10"),
            ("OTEL_SDK_DISABLED", "true"),
        ],
    ] {
        let host = serve(&peer, &env).await;
        let run = host
            .create_run(
                "fetch",
                "00-99999999999999999999999999999999-aaaaaaaaaaaaaaaa-01",
            )
            .await;
        assert_eq!(host.finished(&run).await["status"], "completed");
        assert!(!host.has_batch_thread(), "{env:?}");
        tokio::time::sleep(Duration::from_millis(300)).await;
        host.stop().await;
        assert_eq!(*receiver.posts.lock().unwrap(), 0, "{env:?}");
    }
}
