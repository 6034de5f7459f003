//! OpenTelemetry export: spans over OTLP (HTTP/protobuf) when the operator names a
//! collector with `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`).
//!
//! Without either variable nothing is installed: no exporter, no batch thread, no span of
//! this module is created (each constructor returns [`Span::none`] after one atomic load),
//! so a request costs what it cost before.
//!
//! With one, `openwop serve` exports one span per request (the HTTP server span every edge
//! shares, and inside it the MCP or A2A server span of the message it carries), one per
//! run step (a node the engine plans, or one round of a calling node's outside call) and
//! one per request the host sends a peer (A2A, MCP, HTTP) and one per delivery attempt it
//! posts on its own (A2A push notifications, interrupt notices). The standard variables are
//! honoured as the SDK reads them: `OTEL_EXPORTER_OTLP_HEADERS`, `..._TIMEOUT`,
//! `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER` (and `_ARG`),
//! `OTEL_BSP_*`; `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turn export off.
//!
//! Attribute names follow the OpenTelemetry semantic conventions:
//! - HTTP server and client spans: the HTTP conventions as stabilised in semantic
//!   conventions v1.23.0 and still the stable set in v1.45.0 (`http.request.method`,
//!   `_OTHER` for an unknown method, `http.route`, `http.response.status_code`,
//!   `url.path`, `url.scheme`, `server.address`, `server.port`,
//!   `network.protocol.version`, `user_agent.original`, `error.type` on a 5xx only for a
//!   server span; span name `{method} {http.route}`).
//! - MCP: the Model Context Protocol conventions (`gen-ai/mcp.md`, status Development) of
//!   the GenAI semantic conventions repository (v0.1.0 and its main branch after it), which
//!   took them over from semantic conventions v1.39: span name
//!   `{mcp.method.name} {gen_ai.tool.name}`,
//!   `mcp.method.name`, `mcp.protocol.version`, `mcp.session.id`, `jsonrpc.request.id`,
//!   `gen_ai.tool.name` and `gen_ai.operation.name = execute_tool` for `tools/call`,
//!   `rpc.response.status_code` and `error.type` (the JSON-RPC code) on an error,
//!   `error.type = tool_error` on a tool result with `isError: true`,
//!   `network.transport = tcp`, `network.protocol.name = http`. The server span's parent
//!   is the context in `params._meta` when there is one, linked to the transport's.
//! - A2A: the Agent2Agent conventions of the same repository (`gen-ai/a2a.md`, status
//!   Development): span name `{a2a.method.name}` (the protocol's operation name, the same
//!   on both bindings: `SendMessage` is `POST /message:send` on HTTP+JSON),
//!   `a2a.method.name`, `a2a.protocol.version`, `a2a.task.id`, `a2a.message.id`,
//!   `gen_ai.conversation.id` (the `contextId`), `a2a.task.state` (the A2A v1 wire name,
//!   `TASK_STATE_COMPLETED`) where an answer carries a task, `error.type`. These are the A2A
//!   equivalent of the generic RPC conventions' `rpc.system.name`/`rpc.method`, which the
//!   A2A conventions supersede for A2A as the MCP ones do for MCP (their method name is the
//!   same whichever binding carried the request, where `rpc.method` would not be).
//! - Run steps have no convention: `openwop.run.id`, `openwop.workflow.id`,
//!   `openwop.node.id`, `openwop.node.kind` (span kind INTERNAL).
//!
//! What is never exported: a credential, a body, a query string, a resume token (the
//! `/interrupts/{token}` path is exported with the token replaced by `REDACTED`).

use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::trace::{SpanContext, Status, TraceContextExt as _, TracerProvider as _};
use opentelemetry::{Context, KeyValue, Value as OtelValue};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The `tracing` target of every span this module makes: the OpenTelemetry layer sees
/// only these, and the log lines never show them.
pub const TARGET: &str = "openwop::otel";

static ON: AtomicBool = AtomicBool::new(false);

/// True once the exporter is installed (`openwop serve` with a collector configured).
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Whether the environment names a collector and does not turn the SDK off.
pub fn configured() -> bool {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    let disabled = std::env::var("OTEL_SDK_DISABLED")
        .is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"))
        || std::env::var("OTEL_TRACES_EXPORTER")
            .is_ok_and(|v| v.trim().eq_ignore_ascii_case("none"));
    !disabled && (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
}

/// The installed provider; [`Telemetry::shutdown`] flushes the last spans.
#[derive(Default)]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Exports what is still queued and stops the batch thread. Blocking: call it
    /// outside the async runtime (after `block_on` returned), as `serve` does.
    pub fn shutdown(self) {
        if let Some(provider) = self.provider {
            ON.store(false, Ordering::Relaxed);
            if let Err(e) = provider.shutdown() {
                eprintln!("openwop: the OpenTelemetry exporter did not flush: {e}");
            }
        }
    }
}

/// Builds the exporter and provider from the environment: `None` when no collector is
/// configured. Must run outside an async runtime (the blocking HTTP client is built
/// here).
pub fn provider() -> Result<Option<SdkTracerProvider>, String> {
    if !configured() {
        return Ok(None);
    }
    use opentelemetry_otlp::WithHttpConfig as _;
    // The exporter's own default client would trust only the system's CA store, which an
    // image FROM scratch does not have: this one trusts what every other client does.
    let client = reqwest::blocking::Client::builder()
        .use_preconfigured_tls(crate::trust::client_config())
        .timeout(export_timeout())
        .build()
        .map_err(|e| format!("the OTLP exporter's HTTP client cannot be built: {e}"))?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .build()
        .map_err(|e| format!("the OTLP exporter cannot be built: {e}"))?;
    let mut resource = opentelemetry_sdk::Resource::builder()
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    // The SDK's default name is `unknown_service`; the operator's OTEL_SERVICE_NAME or
    // `service.name` in OTEL_RESOURCE_ATTRIBUTES wins over ours.
    let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.is_empty())
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| {
            v.split(',')
                .any(|kv| kv.trim().starts_with("service.name="))
        });
    if !named {
        resource = resource.with_service_name("openwop");
    }
    // The sampler comes from OTEL_TRACES_SAMPLER (default: parent-based, always on).
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    Ok(Some(provider))
}

/// The export timeout the exporter would give its own client:
/// `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, else `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds),
/// else 10 s.
fn export_timeout() -> std::time::Duration {
    [
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
    ]
    .iter()
    .find_map(|name| std::env::var(name).ok()?.trim().parse::<u64>().ok())
    .map_or(
        std::time::Duration::from_secs(10),
        std::time::Duration::from_millis,
    )
}

/// The `tracing` layer exporting this module's spans through `provider`, and the handle
/// that shuts it down. Marks export as on.
pub fn layer<S>(
    provider: SdkTracerProvider,
) -> (
    impl tracing_subscriber::Layer<S> + Send + Sync + 'static,
    Telemetry,
)
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a> + Send + Sync,
{
    use tracing_subscriber::Layer as _;
    let tracer = provider.tracer("openwop");
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        // Log events inside a span are the log's business, not the trace's.
        .with_tracked_inactivity(false)
        .with_filter(
            tracing_subscriber::filter::Targets::new().with_target(TARGET, tracing::Level::TRACE),
        );
    ON.store(true, Ordering::Relaxed);
    (
        layer,
        Telemetry {
            provider: Some(provider),
        },
    )
}

// ---------------------------------------------------------------------------------------
// Trace context

/// The OpenTelemetry context of a W3C trace context the host accepted (`crate::trace`).
fn remote(tc: &crate::trace::TraceContext) -> Context {
    remote_parts(&tc.traceparent, tc.tracestate.as_deref())
}

fn remote_parts(traceparent: &str, tracestate: Option<&str>) -> Context {
    use opentelemetry::propagation::TextMapPropagator as _;
    let mut carrier = std::collections::HashMap::new();
    carrier.insert("traceparent".to_owned(), traceparent.to_owned());
    if let Some(ts) = tracestate {
        carrier.insert("tracestate".to_owned(), ts.to_owned());
    }
    opentelemetry_sdk::propagation::TraceContextPropagator::new().extract(&carrier)
}

/// The W3C `traceparent` naming `span`, when it is an exported span.
pub fn traceparent_of(span: &Span) -> Option<String> {
    if span.is_none() {
        return None;
    }
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    sc.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            sc.trace_id(),
            sc.span_id(),
            sc.trace_flags().to_u8()
        )
    })
}

/// The span context of the span the current task is in (for a link), if exported.
fn ambient() -> Option<SpanContext> {
    let cx = Context::current();
    let sc = cx.span().span_context().clone();
    sc.is_valid().then_some(sc)
}

/// Sets `attribute` on the current exported span (the innermost one entered), if any.
pub fn record_current(key: &'static str, value: impl Into<OtelValue>) {
    if on() {
        Context::current()
            .span()
            .set_attribute(KeyValue::new(key, value));
    }
}

/// Marks the current exported span failed with `error_type` (a low-cardinality class:
/// a JSON-RPC code, an error code) and `message`.
pub fn error_current(error_type: impl Into<OtelValue>, message: &str) {
    if on() {
        let cx = Context::current();
        let span = cx.span();
        span.set_attribute(KeyValue::new("error.type", error_type));
        span.set_status(Status::error(message.to_owned()));
    }
}

fn error_on(span: &Span, error_type: impl Into<OtelValue>, message: &str) {
    span.set_attribute("error.type", error_type);
    span.set_status(Status::error(message.to_owned()));
}

// ---------------------------------------------------------------------------------------
// HTTP server spans (every edge)

/// The HTTP server span of one request, continuing the `traceparent` header's trace.
/// `route` is the router's template (absent when no route matched).
pub fn http_server_span(request: &axum::extract::Request, route: Option<&str>) -> Span {
    if !on() {
        return Span::none();
    }
    let method = request.method();
    let known = super::method::method_label(method);
    // The conventions' name for a method outside the known set is `_OTHER`.
    let method_attr = if known == "other" { "_OTHER" } else { known };
    let name = match route {
        Some(r) => format!("{} {r}", if known == "other" { "HTTP" } else { known }),
        None => if known == "other" { "HTTP" } else { known }.to_owned(),
    };
    let span =
        tracing::info_span!(target: TARGET, "http.server", otel.name = %name, otel.kind = "server");
    let headers = request.headers();
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(tc) = crate::trace::select(None, header("traceparent"), header("tracestate")) {
        let _ = span.set_parent(remote(&tc));
    }
    span.set_attribute("http.request.method", method_attr);
    if known == "other" {
        span.set_attribute("http.request.method_original", method.as_str().to_owned());
    }
    if let Some(r) = route {
        span.set_attribute("http.route", r.to_owned());
    }
    span.set_attribute("url.path", scrubbed_path(request.uri().path(), route));
    span.set_attribute(
        "url.scheme",
        request.uri().scheme_str().unwrap_or("http").to_owned(),
    );
    span.set_attribute(
        "network.protocol.version",
        match request.version() {
            axum::http::Version::HTTP_10 => "1.0",
            axum::http::Version::HTTP_2 => "2",
            axum::http::Version::HTTP_3 => "3",
            _ => "1.1",
        },
    );
    if let Some(host) = header("host") {
        let (address, port) = split_host(host);
        span.set_attribute("server.address", address.to_owned());
        if let Some(port) = port {
            span.set_attribute("server.port", i64::from(port));
        }
    }
    if let Some(ua) = header("user-agent") {
        span.set_attribute("user_agent.original", ua.to_owned());
    }
    span
}

/// Records the answer's status on an HTTP server span; a 5xx fails it (a 4xx is the
/// client's error, and the conventions leave a server span unset for it).
pub fn http_server_end(span: &Span, status: u16) {
    if span.is_none() {
        return;
    }
    span.set_attribute("http.response.status_code", i64::from(status));
    if status >= 500 {
        error_on(span, status.to_string(), "");
    }
}

/// The request path with every path parameter that is a credential (the resume token of
/// `/interrupts/{token}`) replaced by `REDACTED`; other ids stay (they are not secrets, and
/// an operator looks for them).
fn scrubbed_path(path: &str, route: Option<&str>) -> String {
    let Some(route) = route.filter(|r| r.contains("{token}")) else {
        return path.to_owned();
    };
    let template: Vec<&str> = route.split('/').collect();
    path.split('/')
        .enumerate()
        .map(|(i, seg)| {
            if template.get(i) == Some(&"{token}") {
                "REDACTED"
            } else {
                seg
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// `host[:port]` (or `[v6]:port`) as address and port.
fn split_host(host: &str) -> (&str, Option<u16>) {
    if let Some(rest) = host.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((addr, tail)) => (addr, tail.strip_prefix(':').and_then(|p| p.parse().ok())),
            None => (host, None),
        };
    }
    match host.rsplit_once(':') {
        Some((addr, port)) if !addr.contains(':') => (addr, port.parse().ok()),
        _ => (host, None),
    }
}

// ---------------------------------------------------------------------------------------
// MCP and A2A server spans

/// What the MCP server span of one message says.
pub struct McpServer<'a> {
    pub method: &'a str,
    /// `params.name` of a `tools/call`.
    pub tool: Option<&'a str>,
    /// The JSON-RPC id, absent on a notification.
    pub request_id: Option<serde_json::Value>,
    pub session_id: Option<&'a str>,
    /// The trace context the message continues (`_meta` first, then the header).
    pub trace: Option<crate::trace::TraceContext>,
}

/// The MCP server span of one message (kind SERVER), child of the `_meta` trace context
/// when the message carries one (linked to the HTTP span it came in), else of the HTTP
/// span.
pub fn mcp_server_span(m: McpServer<'_>) -> Span {
    if !on() {
        return Span::none();
    }
    let name = match m.tool {
        Some(tool) if m.method == "tools/call" => format!("{} {tool}", m.method),
        _ => m.method.to_owned(),
    };
    let span =
        tracing::info_span!(target: TARGET, "mcp.server", otel.name = %name, otel.kind = "server");
    if let Some(tc) = m
        .trace
        .as_ref()
        .filter(|tc| tc.source == crate::trace::TraceSource::Message)
    {
        if let Some(transport) = ambient() {
            span.add_link(transport);
        }
        let _ = span.set_parent(remote(tc));
    }
    span.set_attribute("mcp.method.name", m.method.to_owned());
    if m.method == "tools/call" {
        span.set_attribute("gen_ai.operation.name", "execute_tool");
        if let Some(tool) = m.tool {
            span.set_attribute("gen_ai.tool.name", tool.to_owned());
        }
    }
    if let Some(id) = m.request_id.as_ref().and_then(id_text) {
        span.set_attribute("jsonrpc.request.id", id);
    }
    if let Some(session) = m.session_id {
        span.set_attribute("mcp.session.id", session.to_owned());
    }
    span.set_attribute("network.transport", "tcp");
    span.set_attribute("network.protocol.name", "http");
    span
}

/// A JSON-RPC id as the conventions want it: the string itself, or the number's text;
/// nothing for `null`.
fn id_text(id: &serde_json::Value) -> Option<String> {
    match id {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// Records a JSON-RPC error answered on the current MCP or A2A span: `error.type` and
/// `rpc.response.status_code` are the code, the status description its message.
pub fn rpc_error_current(code: i64, message: &str) {
    if on() {
        record_current("rpc.response.status_code", code.to_string());
        error_current(code.to_string(), message);
    }
}

/// The A2A server span of one request (either binding), named by the protocol's
/// operation; parented like the MCP one, on `Message.metadata.openwop` when that carries
/// the trace.
pub fn a2a_server_span(
    method: &str,
    params: &serde_json::Value,
    version: Option<&str>,
    trace: Option<crate::trace::TraceContext>,
) -> Span {
    if !on() {
        return Span::none();
    }
    let span = tracing::info_span!(target: TARGET, "a2a.server", otel.name = %method, otel.kind = "server");
    if let Some(tc) = trace
        .as_ref()
        .filter(|tc| tc.source == crate::trace::TraceSource::Message)
    {
        if let Some(transport) = ambient() {
            span.add_link(transport);
        }
        let _ = span.set_parent(remote(tc));
    }
    span.set_attribute("a2a.method.name", method.to_owned());
    if let Some(v) = version {
        span.set_attribute("a2a.protocol.version", v.to_owned());
    }
    let text = |v: &serde_json::Value| v.as_str().map(str::to_owned);
    if let Some(task) = params
        .get("id")
        .or_else(|| params.get("taskId"))
        .and_then(text)
    {
        span.set_attribute("a2a.task.id", task);
    }
    if let Some(message) = params.get("message") {
        if let Some(id) = message.get("messageId").and_then(text) {
            span.set_attribute("a2a.message.id", id);
        }
        if let Some(task) = message.get("taskId").and_then(text) {
            span.set_attribute("a2a.task.id", task);
        }
        if let Some(context) = message.get("contextId").and_then(text) {
            span.set_attribute("gen_ai.conversation.id", context);
        }
    }
    span
}

// ---------------------------------------------------------------------------------------
// Run steps

/// The span of one run step: the run's current node planned, or one round of its outside
/// call. Its parent is the trace the run was created in (kept in the run's state); a run
/// created without one has steps that each start a trace.
pub fn step_span(
    run_id: &str,
    workflow_id: &str,
    node_id: &str,
    kind: &str,
    traceparent: Option<&str>,
) -> Span {
    if !on() {
        return Span::none();
    }
    let name = format!("step {node_id}");
    let span =
        tracing::info_span!(target: TARGET, "step", otel.name = %name, otel.kind = "internal");
    match traceparent.filter(|tp| crate::trace::is_traceparent(tp)) {
        Some(tp) => {
            let _ = span.set_parent(remote_parts(tp, None));
        }
        // Not a child of whatever request happens to drive the run.
        None => {
            let _ = span.set_parent(Context::new());
        }
    }
    span.set_attribute("openwop.run.id", run_id.to_owned());
    span.set_attribute("openwop.workflow.id", workflow_id.to_owned());
    span.set_attribute("openwop.node.id", node_id.to_owned());
    span.set_attribute("openwop.node.kind", kind.to_owned());
    span
}

/// Marks a step span failed with the run's error code.
pub fn step_failed(span: &Span, code: &str, message: &str) {
    if !span.is_none() {
        error_on(span, code.to_owned(), message);
    }
}

// ---------------------------------------------------------------------------------------
// Peer calls

/// What a request to a peer is, for its CLIENT span.
pub struct PeerCall<'a> {
    /// `a2a`, `mcp` or `http`.
    pub kind: &'a str,
    pub peer_id: &'a str,
    pub http_method: &'a str,
    pub url: &'a str,
    /// The JSON body (a JSON-RPC request for MCP and A2A's JSON-RPC binding).
    pub body: Option<&'a serde_json::Value>,
    /// `Mcp-Session-Id` and `MCP-Protocol-Version` the request carries.
    pub mcp_session: Option<&'a str>,
    pub mcp_version: Option<&'a str>,
    /// `A2A-Version` the request carries.
    pub a2a_version: Option<&'a str>,
    /// The trace the run's calls continue, for a call made outside any step span.
    pub caller_traceparent: &'a str,
}

/// The CLIENT span of one request to a peer: a child of the current step span (or of the
/// run's trace). MCP requests are named and attributed as MCP client spans, A2A JSON-RPC
/// requests as A2A client spans, anything else as an HTTP client span.
pub fn peer_call_span(c: PeerCall<'_>) -> Span {
    if !on() {
        return Span::none();
    }
    let rpc_method = c
        .body
        .and_then(|b| b.get("method"))
        .and_then(serde_json::Value::as_str);
    let tool = c
        .body
        .and_then(|b| b.get("params"))
        .and_then(|p| p.get("name"))
        .and_then(serde_json::Value::as_str);
    let name = match (c.kind, rpc_method) {
        ("mcp", Some(m)) if m == "tools/call" && tool.is_some() => {
            format!("{m} {}", tool.unwrap_or_default())
        }
        ("mcp" | "a2a", Some(m)) => m.to_owned(),
        _ => c.http_method.to_owned(),
    };
    let span =
        tracing::info_span!(target: TARGET, "peer.call", otel.name = %name, otel.kind = "client");
    if ambient().is_none() {
        let _ = span.set_parent(remote_parts(c.caller_traceparent, None));
    }
    span.set_attribute("http.request.method", c.http_method.to_owned());
    url_attributes(&span, c.url);
    span.set_attribute("openwop.peer.id", c.peer_id.to_owned());
    let id = c.body.and_then(|b| b.get("id")).and_then(id_text);
    match (c.kind, rpc_method) {
        ("mcp", Some(m)) => {
            span.set_attribute("mcp.method.name", m.to_owned());
            if m == "tools/call" {
                span.set_attribute("gen_ai.operation.name", "execute_tool");
                if let Some(tool) = tool {
                    span.set_attribute("gen_ai.tool.name", tool.to_owned());
                }
            }
            if let Some(id) = id {
                span.set_attribute("jsonrpc.request.id", id);
            }
            if let Some(s) = c.mcp_session {
                span.set_attribute("mcp.session.id", s.to_owned());
            }
            if let Some(v) = c.mcp_version {
                span.set_attribute("mcp.protocol.version", v.to_owned());
            }
            span.set_attribute("network.transport", "tcp");
            span.set_attribute("network.protocol.name", "http");
        }
        ("a2a", Some(m)) => {
            span.set_attribute("a2a.method.name", m.to_owned());
            if let Some(v) = c.a2a_version {
                span.set_attribute("a2a.protocol.version", v.to_owned());
            }
        }
        _ => {}
    }
    span
}

/// `server.address`, `server.port` and `url.full` of a CLIENT span: the URL without its
/// query (which may carry anything) and without userinfo.
fn url_attributes(span: &Span, raw: &str) {
    let Ok(url) = reqwest::Url::parse(raw) else {
        return;
    };
    if let Some(host) = url.host_str() {
        span.set_attribute("server.address", host.to_owned());
    }
    if let Some(port) = url.port_or_known_default() {
        span.set_attribute("server.port", i64::from(port));
    }
    let mut full = url.clone();
    full.set_query(None);
    full.set_fragment(None);
    let _ = full.set_username("");
    let _ = full.set_password(None);
    span.set_attribute("url.full", full.to_string());
}

/// An A2A task state as the A2A conventions name it: the A2A v1 wire name
/// (`TASK_STATE_COMPLETED`), also for a state a v0.3 peer spelt `completed` or
/// `input-required`.
pub fn task_state_value(state: &str) -> String {
    if state.starts_with("TASK_STATE_") {
        state.to_owned()
    } else {
        format!(
            "TASK_STATE_{}",
            state.to_ascii_uppercase().replace(['-', ' '], "_")
        )
    }
}

/// The state of the task an A2A answer carries: a `Task` (GetTask, CancelTask), or
/// SendMessage's `{task}` (or a v0.3 result that is a task); `None` for a message or a
/// list.
pub fn task_state_of(result: &serde_json::Value) -> Option<String> {
    let task = result.get("task").unwrap_or(result);
    task.get("status")?
        .get("state")?
        .as_str()
        .map(task_state_value)
}

/// Records the state of the task an A2A answer carries on the current (A2A server) span.
pub fn a2a_task_state_current(state: &str) {
    if on() {
        record_current("a2a.task.state", task_state_value(state));
    }
}

/// Records an MCP tool execution error (a result with `isError: true`) on the current
/// (MCP server) span: `error.type = tool_error` (the MCP conventions' value for a tool
/// execution error), `text` (its first text block) as the status description.
pub fn mcp_tool_error_current(text: &str) {
    if on() {
        error_current("tool_error", &text.chars().take(200).collect::<String>());
    }
}

fn is_tool_error(result: &serde_json::Value) -> bool {
    result.get("isError").and_then(serde_json::Value::as_bool) == Some(true)
}

fn tool_error_text(result: &serde_json::Value) -> String {
    result
        .get("content")
        .and_then(serde_json::Value::as_array)
        .and_then(|c| c.iter().find_map(|b| b.get("text")?.as_str()))
        .unwrap_or_default()
        .chars()
        .take(200)
        .collect()
}

/// Records a peer's answer on its CLIENT span: the HTTP status (>= 400 fails it), the
/// session an MCP `initialize` opened, a JSON-RPC error in a JSON answer, an MCP tool
/// result with `isError` (`error.type = tool_error`) and the state of the task an A2A
/// answer carries.
pub fn peer_call_end(
    span: &Span,
    kind: &str,
    status: u16,
    session: Option<&str>,
    body: Option<&[u8]>,
) {
    if span.is_none() {
        return;
    }
    span.set_attribute("http.response.status_code", i64::from(status));
    if let Some(s) = session {
        span.set_attribute("mcp.session.id", s.to_owned());
    }
    if status >= 400 {
        error_on(span, status.to_string(), "");
        return;
    }
    let parsed = body.and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok());
    // A JSON-RPC answer's `result`; on A2A's HTTP+JSON binding the body itself.
    let result = parsed
        .as_ref()
        .and_then(|v| v.get("result").or((kind == "a2a").then_some(v)));
    if let Some(result) = result {
        match kind {
            "a2a" => {
                if let Some(state) = task_state_of(result) {
                    span.set_attribute("a2a.task.state", state);
                }
            }
            "mcp" if is_tool_error(result) => {
                error_on(span, "tool_error", &tool_error_text(result));
            }
            _ => {}
        }
    }
    let error = parsed.and_then(|v| v.get("error").cloned());
    if let Some(error) = error {
        let code = error.get("code").and_then(serde_json::Value::as_i64);
        let message = error
            .get("message")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        if let Some(code) = code {
            span.set_attribute("rpc.response.status_code", code.to_string());
            error_on(span, code.to_string(), message);
        }
    }
}

/// Marks a peer call that got no answer (refused by the guard, a transport failure).
pub fn peer_call_failed(span: &Span, error_type: &str, message: &str) {
    if !span.is_none() {
        error_on(span, error_type.to_owned(), message);
    }
}

/// The `error.type` of a request that got no usable answer.
pub fn send_error_type(e: &crate::egress::SendError) -> String {
    use crate::egress::SendError;
    match e {
        SendError::Refused(_) => "egress_refused".to_owned(),
        SendError::Redirect(status) | SendError::Status(status) => status.to_string(),
        SendError::Transport(_) => "transport".to_owned(),
        SendError::TooLarge => "response_too_large".to_owned(),
    }
}

// ---------------------------------------------------------------------------------------
// Deliveries: what the host posts on its own (A2A push notifications, interrupt notices
// to a run's `callbackUrl`), straight through the egress guard rather than a peer.

/// What a delivery is, for its CLIENT span.
pub struct Delivery<'a> {
    /// `push` (an A2A push notification) or `interrupt_notice` (a `callbackUrl` notice).
    pub kind: &'a str,
    pub url: &'a str,
    pub run_id: &'a str,
    /// The trace the run was created in (kept in its state), if any.
    pub run_traceparent: Option<&'a str>,
    /// The A2A task state a push reports.
    pub task_state: Option<&'a str>,
    /// 1 for the first attempt.
    pub attempt: u32,
}

/// The CLIENT span of one delivery attempt (`POST`, the HTTP client conventions), a child
/// of the trace the run was created in, as the run's steps are (a run created without
/// one: each attempt starts a trace). The receiver gets this span as its `traceparent`
/// ([`post_traced`]).
pub fn delivery_span(d: Delivery<'_>) -> Span {
    if !on() {
        return Span::none();
    }
    let span =
        tracing::info_span!(target: TARGET, "delivery", otel.name = "POST", otel.kind = "client");
    match d
        .run_traceparent
        .filter(|tp| crate::trace::is_traceparent(tp))
    {
        Some(tp) => {
            let _ = span.set_parent(remote_parts(tp, None));
        }
        None => {
            let _ = span.set_parent(Context::new());
        }
    }
    span.set_attribute("http.request.method", "POST");
    url_attributes(&span, d.url);
    if d.attempt > 1 {
        span.set_attribute("http.request.resend_count", i64::from(d.attempt - 1));
    }
    span.set_attribute("openwop.delivery.kind", d.kind.to_owned());
    span.set_attribute("openwop.run.id", d.run_id.to_owned());
    if d.kind == "push" {
        span.set_attribute("a2a.task.id", crate::ids::project(d.run_id));
    }
    if let Some(state) = d.task_state {
        span.set_attribute("a2a.task.state", task_state_value(state));
    }
    span
}

/// Posts a delivery in `span` (from [`delivery_span`]; `Span::none()` without export):
/// the receiver's `traceparent` names the span, which records the status or the failure.
pub async fn post_traced(
    egress: &crate::egress::Egress,
    url: &str,
    mut headers: reqwest::header::HeaderMap,
    body: Vec<u8>,
    span: Span,
) -> Result<u16, crate::egress::SendError> {
    use tracing::Instrument as _;
    if let Some(v) = traceparent_of(&span).and_then(|tp| tp.parse().ok()) {
        headers.insert("traceparent", v);
    }
    let outcome = egress
        .post(url, headers, body)
        .instrument(span.clone())
        .await;
    if !span.is_none() {
        match &outcome {
            Ok(status) => span.set_attribute("http.response.status_code", i64::from(*status)),
            Err(e) => {
                if let crate::egress::SendError::Status(status) = e {
                    span.set_attribute("http.response.status_code", i64::from(*status));
                }
                error_on(&span, send_error_type(e), &e.to_string());
            }
        }
    }
    outcome
}

/// Replaces every string equal to `old` in `value` with `new`: the request's body carries
/// the run's `traceparent` (`params._meta`, `message.metadata.openwop`), which must name
/// the request's own span as the header does.
pub fn retrace(value: &mut serde_json::Value, old: &str, new: &str) {
    match value {
        serde_json::Value::String(s) if s == old => *s = new.to_owned(),
        serde_json::Value::Array(items) => items.iter_mut().for_each(|v| retrace(v, old, new)),
        serde_json::Value::Object(map) => map.values_mut().for_each(|v| retrace(v, old, new)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resume_token_never_leaves_in_url_path() {
        assert_eq!(
            scrubbed_path("/interrupts/owr_secret", Some("/interrupts/{token}")),
            "/interrupts/REDACTED"
        );
        assert_eq!(
            scrubbed_path("/runs/acme~2Fr-1", Some("/runs/{run_id}")),
            "/runs/acme~2Fr-1"
        );
    }

    #[test]
    fn host_header_splits_into_address_and_port() {
        assert_eq!(split_host("127.0.0.1:8080"), ("127.0.0.1", Some(8080)));
        assert_eq!(split_host("example.com"), ("example.com", None));
        assert_eq!(split_host("[::1]:9"), ("::1", Some(9)));
    }

    #[test]
    fn retrace_replaces_the_run_traceparent_wherever_the_body_carries_it() {
        let mut body = serde_json::json!({
            "params": {"_meta": {"traceparent": "A"}, "message": {"metadata": {"openwop": {"traceparent": "A"}}}},
            "other": ["A", "B"]
        });
        retrace(&mut body, "A", "Z");
        assert_eq!(body["params"]["_meta"]["traceparent"], "Z");
        assert_eq!(
            body["params"]["message"]["metadata"]["openwop"]["traceparent"],
            "Z"
        );
        assert_eq!(body["other"], serde_json::json!(["Z", "B"]));
    }

    #[test]
    fn without_export_no_span_is_made() {
        assert!(!on());
        assert!(step_span("r", "w", "n", "transform", None).is_none());
        assert!(traceparent_of(&Span::none()).is_none());
    }
}
