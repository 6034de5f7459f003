//! What an operator sees: one access-log line per request (method, route template,
//! status, latency, tenant; never a credential, a body or a query string), request
//! counters and latencies for `/metrics`, and the liveness probe. Refusals (401, 429,
//! 408, 413, 503, connections refused at accept) are counted per interval instead
//! (`quiet`), so a flood of them cannot flood the log.
//!
//! Every label value comes from a closed set, whatever a client sends: methods the
//! host knows (anything else is `other`), route templates of the router (`unmatched`
//! otherwise), statuses the host answers with. So `/metrics` stays the same size
//! under any traffic.

pub mod method;
pub mod otel;
pub mod quiet;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

pub use method::method_label;

/// Request counts and latency sums by route template, method and status.
#[derive(Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(String, String, u16), Tally>>,
}

#[derive(Default, Clone, Copy)]
struct Tally {
    count: u64,
    seconds: f64,
}

impl Metrics {
    fn record(&self, route: &str, method: &str, status: u16, took: Duration) {
        if let Ok(mut map) = self.requests.lock() {
            let t = map
                .entry((route.to_owned(), method.to_owned(), status))
                .or_default();
            t.count += 1;
            t.seconds += took.as_secs_f64();
        }
    }

    /// The request series in the Prometheus text format; `extra` appends gauges the caller
    /// measured (runs by status, push queue depth).
    pub fn render(&self, extra: &[Gauge]) -> String {
        let mut out = String::new();
        let map = self.requests.lock().map(|m| m.clone()).unwrap_or_default();
        out.push_str("# HELP openwop_http_requests_total HTTP requests answered, by route template, method and status.\n");
        out.push_str("# TYPE openwop_http_requests_total counter\n");
        for ((route, method, status), t) in &map {
            let _ = writeln!(
                out,
                "openwop_http_requests_total{{route=\"{}\",method=\"{method}\",status=\"{status}\"}} {}",
                escape(route),
                t.count
            );
        }
        out.push_str("# HELP openwop_http_request_duration_seconds Time to the response head, by route template and method.\n");
        out.push_str("# TYPE openwop_http_request_duration_seconds summary\n");
        let mut by_route: BTreeMap<(&str, &str), Tally> = BTreeMap::new();
        for ((route, method, _), t) in &map {
            let e = by_route.entry((route, method)).or_default();
            e.count += t.count;
            e.seconds += t.seconds;
        }
        for ((route, method), t) in by_route {
            let labels = format!("route=\"{}\",method=\"{method}\"", escape(route));
            let _ = writeln!(
                out,
                "openwop_http_request_duration_seconds_sum{{{labels}}} {}",
                t.seconds
            );
            let _ = writeln!(
                out,
                "openwop_http_request_duration_seconds_count{{{labels}}} {}",
                t.count
            );
        }
        out.push_str("# HELP openwop_refusals_total Requests and connections refused (401, 429, 408, 413, 503, connections over a cap, connections that could not be accepted), by reason.\n");
        out.push_str("# TYPE openwop_refusals_total counter\n");
        for (kind, n) in quiet::totals() {
            let _ = writeln!(
                out,
                "openwop_refusals_total{{reason=\"{}\"}} {n}",
                kind.label()
            );
        }
        let mut last_name = "";
        for g in extra {
            if g.name != last_name {
                let _ = writeln!(out, "# HELP {} {}", g.name, g.help);
                let _ = writeln!(out, "# TYPE {} gauge", g.name);
                last_name = g.name;
            }
            let labels: Vec<String> = g
                .labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
                .collect();
            if labels.is_empty() {
                let _ = writeln!(out, "{} {}", g.name, g.value);
            } else {
                let _ = writeln!(out, "{}{{{}}} {}", g.name, labels.join(","), g.value);
            }
        }
        out
    }
}

/// One gauge sample for [`Metrics::render`].
pub struct Gauge {
    pub name: &'static str,
    pub help: &'static str,
    pub labels: Vec<(&'static str, String)>,
    pub value: f64,
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The access log and the request metrics, around every route. The span's `tenant` is
/// filled in by the edges' caller extractors once the credential is resolved.
pub async fn access_log(
    State(metrics): State<std::sync::Arc<Metrics>>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = method_label(request.method());
    // The template, never the path: ids and tokens stay out of the log.
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "unmatched".to_owned());
    let request_id = request_id(request.headers());
    let span = tracing::info_span!(
        "request",
        method = %method,
        route = %route,
        request_id = request_id.to_str().unwrap_or_default(),
        tenant = tracing::field::Empty,
    );
    // The exported HTTP server span (none without a collector): outside the log's span,
    // so the MCP and A2A spans the edges open are its children.
    let matched = (route != "unmatched").then_some(route.as_str());
    let exported = otel::http_server_span(&request, matched);
    let response = tracing::Instrument::instrument(
        tracing::Instrument::instrument(next.run(request), span.clone()),
        exported.clone(),
    )
    .await;
    let mut response = response;
    response.headers_mut().insert(REQUEST_ID, request_id);
    let took = started.elapsed();
    let status = response.status().as_u16();
    otel::http_server_end(&exported, status);
    metrics.record(&route, method, status, took);
    let refusal = response
        .extensions()
        .get::<quiet::Refusal>()
        .copied()
        .or_else(|| quiet::Refusal::of_status(status));
    if let Some(kind) = refusal {
        // Counted, and written as one line per interval (see `quiet`).
        quiet::refused(kind);
        return response;
    }
    quiet::tick();
    span.in_scope(|| {
        let latency_ms = took.as_secs_f64() * 1000.0;
        if status >= 500 {
            tracing::error!(status, latency_ms, "request failed");
        } else if status >= 400 {
            tracing::warn!(status, latency_ms, "request refused");
        } else {
            tracing::info!(status, latency_ms, "request");
        }
    });
    response
}

/// The header that names a request, on every answer and in its access-log line.
const REQUEST_ID: axum::http::HeaderName = axum::http::HeaderName::from_static("x-request-id");

/// The id of one request: the caller's `X-Request-Id` when it is a plain token (1 to 128
/// of `A-Za-z0-9._:-`, so a proxy's or client's id carries through but nothing else
/// reaches the log), else one made here, unique across processes (a random prefix drawn
/// at start and a counter). Answered as `X-Request-Id` on every response, refusals
/// included, so the id a client quotes from an error finds the host's log line.
fn request_id(headers: &axum::http::HeaderMap) -> axum::http::HeaderValue {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    if let Some(given) = headers.get(&REQUEST_ID)
        && (1..=128).contains(&given.len())
        && given
            .as_bytes()
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
    {
        return given.clone();
    }
    static PREFIX: OnceLock<String> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let prefix = PREFIX.get_or_init(|| {
        let mut bytes = [0u8; 6];
        // Without the OS's randomness the clock still tells processes apart.
        if getrandom::fill(&mut bytes).is_err() {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default();
            bytes.copy_from_slice(&nanos.to_le_bytes()[..6]);
        }
        hex::encode(bytes)
    });
    let id = format!("req_{prefix}{:010x}", NEXT.fetch_add(1, Ordering::Relaxed));
    axum::http::HeaderValue::from_str(&id).expect("hex digits are a header value")
}

/// Records the authenticated tenant on the request's span (the access log line).
pub fn record_tenant(tenant: &str) {
    tracing::Span::current().record("tenant", tenant);
}

/// How log lines are written (to stderr).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines; colours only when stderr is a terminal.
    #[default]
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// Sets up logging once per process: `RUST_LOG` wins over `default_level`.
pub fn init_logging(default_level: &str, format: LogFormat) {
    install(default_level, format, None);
}

/// [`init_logging`], plus the OpenTelemetry exporter when the environment names a
/// collector (`openwop serve`). Call it before the async runtime starts, and shut the
/// returned handle down after it stopped, so the last spans are flushed.
pub fn init_logging_and_traces(default_level: &str, format: LogFormat) -> otel::Telemetry {
    match otel::provider() {
        Ok(Some(provider)) => {
            let telemetry = install(default_level, format, Some(provider));
            if otel::on() {
                tracing::info!(
                    "exporting spans over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)"
                );
            }
            telemetry
        }
        Ok(None) => install(default_level, format, None),
        Err(e) => {
            let telemetry = install(default_level, format, None);
            tracing::error!(error = %e, "OpenTelemetry export is off");
            telemetry
        }
    }
}

fn install(
    default_level: &str,
    format: LogFormat,
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
) -> otel::Telemetry {
    use std::io::IsTerminal as _;
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| default_level.into());
    // The exported spans are never log lines, nor part of a line's span context.
    let filter = match format!("{}=off", otel::TARGET).parse() {
        Ok(directive) => filter.add_directive(directive),
        Err(_) => filter,
    };
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let fmt = match format {
        LogFormat::Text => fmt.with_ansi(std::io::stderr().is_terminal()).boxed(),
        LogFormat::Json => fmt.json().with_current_span(true).boxed(),
    };
    let registry = tracing_subscriber::registry().with(fmt.with_filter(filter));
    match provider {
        Some(provider) => {
            let (layer, telemetry) = otel::layer(provider);
            if registry.with(layer).try_init().is_ok() {
                telemetry
            } else {
                // Logging was set up already (a test process): nothing would reach the
                // exporter, so it is shut down at once.
                telemetry.shutdown();
                otel::Telemetry::default()
            }
        }
        None => {
            let _ = registry.try_init();
            otel::Telemetry::default()
        }
    }
}

/// `GET /healthz`: the process is up and answering.
pub async fn healthz() -> impl IntoResponse {
    axum::Json(serde_json::json!({"status": "ok"}))
}

/// How long `/readyz` waits for the store.
const READY_WITHIN: Duration = Duration::from_secs(2);

/// `GET /readyz`: 200 when the store answers and has applied every migration this host
/// knows, else 503 with the reason (and while the host shuts down).
pub async fn readyz(State(ops): State<std::sync::Arc<crate::ops::Ops>>) -> Response {
    let (status, body) = match ops.readiness(READY_WITHIN).await {
        Ok(version) => (
            axum::http::StatusCode::OK,
            serde_json::json!({"status": "ready", "schemaVersion": version}),
        ),
        Err(reason) => (
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            serde_json::json!({"status": "unavailable", "reason": reason}),
        ),
    };
    (status, axum::Json(body)).into_response()
}

/// `GET /metrics`: the request series, runs by status, the push queue and dead letters
/// (read from the store: a scrape is one store call), store latency.
pub async fn metrics(
    State((metrics, ops)): State<(std::sync::Arc<Metrics>, std::sync::Arc<crate::ops::Ops>)>,
) -> Response {
    let mut gauges = Vec::new();
    match ops.gauges().await {
        Ok(g) => {
            for &status in crate::status::RunStatus::ALL {
                let n = g
                    .runs_by_status
                    .iter()
                    .find(|(s, _)| *s == status)
                    .map_or(0, |(_, n)| *n);
                gauges.push(Gauge {
                    name: "openwop_runs",
                    help: "Runs in the store, by status.",
                    labels: vec![("status", status.as_str().to_owned())],
                    value: n as f64,
                });
            }
            gauges.push(Gauge {
                name: "openwop_push_pending",
                help: "A2A push deliveries waiting to be delivered or retried (the outbox depth).",
                labels: vec![],
                value: g.push_pending as f64,
            });
            gauges.push(Gauge {
                name: "openwop_push_dead_letters",
                help: "A2A push deliveries given up on.",
                labels: vec![],
                value: g.push_dead_letters as f64,
            });
            gauges.push(Gauge {
                name: "openwop_store_up",
                help: "1 when the store answered this scrape.",
                labels: vec![],
                value: 1.0,
            });
        }
        Err(e) => {
            tracing::warn!(error = %e, "metrics: the store did not answer");
            gauges.push(Gauge {
                name: "openwop_store_up",
                help: "1 when the store answered this scrape.",
                labels: vec![],
                value: 0.0,
            });
        }
    }
    let mut text = metrics.render(&gauges);
    render_store_latency(&mut text);
    render_store_batches(&mut text);
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

/// PostgreSQL's batched calls: batches sent and the calls they carried, by kind (their
/// ratio is the mean batch size; 1 means no call waited for another).
fn render_store_batches(out: &mut String) {
    use crate::store::latency::Batched;
    let batches = crate::store::latency::batches();
    if batches.is_empty() {
        return;
    }
    type Pick = fn(&(Batched, u64, u64)) -> u64;
    let families: [(&str, &str, Pick); 2] = [
        (
            "openwop_store_batches_total",
            "Statements PostgreSQL was sent for batched calls (plain creations, run details), by kind.",
            |b| b.1,
        ),
        (
            "openwop_store_batched_calls_total",
            "Calls those statements carried, by kind.",
            |b| b.2,
        ),
    ];
    for (name, help, pick) in families {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for b in &batches {
            let _ = writeln!(out, "{name}{{kind=\"{}\"}} {}", b.0.label(), pick(b));
        }
    }
}

fn render_store_latency(out: &mut String) {
    use crate::store::latency;
    let snaps = latency::snapshot();
    if snaps.is_empty() {
        return;
    }
    out.push_str("# HELP openwop_store_call_duration_seconds Store calls (SQLite: a call, queueing included; PostgreSQL: a statement), by backend.\n");
    out.push_str("# TYPE openwop_store_call_duration_seconds histogram\n");
    for s in snaps {
        let backend = s.backend.label();
        for (bound, n) in latency::BUCKETS.iter().zip(s.buckets) {
            let _ = writeln!(
                out,
                "openwop_store_call_duration_seconds_bucket{{backend=\"{backend}\",le=\"{bound}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "openwop_store_call_duration_seconds_bucket{{backend=\"{backend}\",le=\"+Inf\"}} {}",
            s.count
        );
        let _ = writeln!(
            out,
            "openwop_store_call_duration_seconds_sum{{backend=\"{backend}\"}} {}",
            s.seconds
        );
        let _ = writeln!(
            out,
            "openwop_store_call_duration_seconds_count{{backend=\"{backend}\"}} {}",
            s.count
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_render_in_the_prometheus_text_format() {
        let m = Metrics::default();
        m.record("/runs", "POST", 201, Duration::from_millis(5));
        m.record("/runs", "POST", 201, Duration::from_millis(15));
        m.record("/runs/{run_id}", "GET", 404, Duration::from_millis(1));
        let text = m.render(&[Gauge {
            name: "openwop_runs",
            help: "Runs by status.",
            labels: vec![("status", "running".into())],
            value: 3.0,
        }]);
        assert!(text.contains(
            "openwop_http_requests_total{route=\"/runs\",method=\"POST\",status=\"201\"} 2\n"
        ));
        assert!(text.contains(
            "openwop_http_request_duration_seconds_count{route=\"/runs/{run_id}\",method=\"GET\"} 1\n"
        ));
        assert!(text.contains("# TYPE openwop_runs gauge\nopenwop_runs{status=\"running\"} 3\n"));
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (_, value) = line.rsplit_once(' ').expect("sample");
            assert!(value.parse::<f64>().is_ok(), "{line}");
        }
    }

    /// PostgreSQL's batches show as two counters per kind (process-wide: other tests may
    /// add to them, so the values are read back, not assumed).
    #[test]
    fn batched_calls_render_as_counters_by_kind() {
        use crate::store::latency::{self, Batched};
        latency::record_batch(Batched::Create, 8);
        let mut text = String::new();
        render_store_batches(&mut text);
        assert!(text.contains("# TYPE openwop_store_batches_total counter\n"));
        assert!(text.contains("# TYPE openwop_store_batched_calls_total counter\n"));
        let value = |name: &str| -> u64 {
            let line = text
                .lines()
                .find(|l| l.starts_with(&format!("{name}{{kind=\"create\"}} ")))
                .unwrap_or_else(|| panic!("{name} in {text}"));
            line.rsplit_once(' ').unwrap().1.parse().unwrap()
        };
        assert!(value("openwop_store_batches_total") >= 1);
        assert!(value("openwop_store_batched_calls_total") >= 8);
    }
}
