//! The A2A 1.0 interface: the public agent card, the JSON-RPC binding and the HTTP+JSON
//! binding. A projection of the run operations (`crate::ops`), never a second
//! implementation: every task is a run, read and changed through `ops` under the
//! caller's Subject.
//!
//! Mount with `Router::merge(edge::a2a::router(app_state, config))`. The router has no
//! fallback of its own, so it merges with the REST router; unknown paths under the A2A
//! prefixes are answered here in A2A's shapes.

pub mod card;
pub mod errors;
pub mod extended_card;
pub mod extract;
pub mod gate;
mod jsonrpc;
pub mod project;
mod proto_names;
pub mod push;
mod read;
mod rest;
mod send;
pub mod service;
mod signing;
mod stream;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tower_http::catch_panic::CatchPanicLayer;
use tracing::Instrument;

use crate::app::AppState;
use crate::identity::Subject;
use crate::negotiation::{self, Offer, Protocol};
pub use card::Skill;
use errors::{Fault, Transport};
pub(crate) use extract::A2A_JSON;
use openwop_generated::dispatch::A2aMethod;
use openwop_generated::models::{
    A2aAgentCard, A2aListTaskPushNotificationConfigsResponse, A2aListTasksResponse,
    A2aSendMessageResponse, A2aTask, A2aTaskPushNotificationConfig,
};
pub use service::A2aState;

/// The largest request body an A2A interface reads (413, in A2A's shape, beyond).
pub const BODY_LIMIT: usize = 1024 * 1024;

/// The A2A request header carrying the version a peer speaks.
pub const VERSION_HEADER: &str = "A2A-Version";

/// How the A2A edge is set up.
#[derive(Clone)]
pub struct A2aConfig {
    /// One skill per routed workflow.
    pub skills: Vec<Skill>,
    /// How long a blocking SendMessage waits for the run to finish or ask for input.
    pub blocking_timeout: Duration,
    /// The origin written into the card (`--public-url`); when `None`, the address the
    /// host listens on ([`A2aConfig::listen_base`]). Never a request header.
    pub public_base_url: Option<String>,
    /// `http://ADDR` of the listener, once the host serves.
    pub listen_base: Arc<std::sync::OnceLock<String>>,
    /// The skill a message naming none starts through the host card.
    pub default_skill: Option<String>,
    pub name: String,
    pub description: String,
    /// The outbound guard every push goes through.
    pub egress: crate::egress::Egress,
    /// How failed pushes are retried before they are dead-lettered.
    pub push_retry: crate::ops::push::RetryPolicy,
    /// When the card was last set up (the host's start): its `Last-Modified`.
    pub card_modified_ms: i64,
    /// The key every served card is signed with (`crate::card_sign`); `None`: unsigned.
    pub signer: Option<Arc<crate::card_sign::CardSigner>>,
}

impl A2aConfig {
    pub fn new(skills: Vec<Skill>) -> A2aConfig {
        A2aConfig {
            skills,
            blocking_timeout: Duration::from_secs(30),
            public_base_url: None,
            listen_base: Arc::default(),
            default_skill: None,
            name: "openwop".into(),
            description: "An OpenWOP v2 host; each skill runs one of its workflows.".into(),
            egress: crate::egress::Egress::default(),
            push_retry: crate::ops::push::RetryPolicy::default(),
            card_modified_ms: crate::clock::now_ms(),
            signer: None,
        }
    }
}

/// One skill per workflow of the host, sorted by workflow id.
pub fn skills_of_host(ops: &crate::ops::Ops) -> Vec<Skill> {
    ops.host_workflows()
        .iter()
        .map(|w| Skill {
            workflow_id: w.definition.id.to_string(),
            name: w
                .definition
                .name
                .clone()
                .unwrap_or_else(|| w.definition.id.to_string()),
            description: w
                .definition
                .description
                .clone()
                .unwrap_or_else(|| format!("Runs workflow {}", *w.definition.id)),
        })
        .collect()
}

/// The `a2a` family of a discovery document, or the host's own while the document does
/// not carry one yet.
pub fn facet_of(discovery: &Value) -> Value {
    discovery
        .get("a2a")
        .cloned()
        .unwrap_or_else(crate::discovery::a2a_fields)
}

/// Builds the A2A routes, and starts push delivery with the A2A projection as its body.
pub fn router(app: AppState, config: A2aConfig) -> Router {
    let (egress, retry) = (config.egress.clone(), config.push_retry);
    let state = A2aState {
        app,
        config: Arc::new(config),
        offer: Arc::default(),
    };
    state
        .app
        .ops
        .start_push(Arc::new(push::Render(state.clone())), egress, retry);
    let within = state.app.request_deadline;
    let body_within = state.app.body_timeout;
    // A panic in a handler is still answered in the shape of the URL it hit.
    let jsonrpc_panic = CatchPanicLayer::custom(|_: Box<dyn std::any::Any + Send>| {
        Fault::internal().into_jsonrpc_response(&crate::edge::jsonrpc::Id::null())
    });
    let rest_panic = CatchPanicLayer::custom(|_: Box<dyn std::any::Any + Send>| {
        Fault::internal().into_rest_response()
    });
    let jsonrpc_routes = Router::new()
        .route(
            card::JSONRPC_PATH,
            post(jsonrpc::handle).fallback(jsonrpc::wrong_method),
        )
        .route(
            &format!("{}/", card::JSONRPC_PATH),
            post(jsonrpc::handle).fallback(jsonrpc::wrong_method),
        )
        .layer(jsonrpc_panic)
        .layer(axum::middleware::from_fn(move |req, next| {
            crate::edge::body::guard(
                BODY_LIMIT,
                body_within,
                |why| body_refused(why).into_jsonrpc_response(&crate::edge::jsonrpc::Id::null()),
                req,
                next,
            )
        }))
        .layer(axum::middleware::from_fn(move |req, next| {
            crate::edge::deadline::run(
                within,
                |w| past_deadline(w).into_jsonrpc_response(&crate::edge::jsonrpc::Id::null()),
                req,
                next,
            )
        }));
    let rest_routes = Router::new()
        .route(card::CARD_PATH, get(get_card))
        .route(crate::card_sign::JWKS_PATH, get(signing::get_jwks))
        .route(card::REST_PATH, any(rest::handle))
        .route(&format!("{}/{{*rest}}", card::REST_PATH), any(rest::handle))
        .layer(rest_panic)
        .layer(axum::middleware::from_fn(move |req, next| {
            crate::edge::body::guard(
                BODY_LIMIT,
                body_within,
                |why| body_refused(why).into_rest_response(),
                req,
                next,
            )
        }))
        .layer(axum::middleware::from_fn(move |req, next| {
            crate::edge::deadline::run(within, |w| past_deadline(w).into_rest_response(), req, next)
        }));
    jsonrpc_routes.merge(rest_routes).with_state(state)
}

/// A body refused before it was read whole (`edge::body`), on either binding.
fn body_refused(why: crate::edge::body::Refused) -> Fault {
    use crate::edge::body::Refused;
    let kind = match why {
        Refused::TooLarge { .. } => Transport::PayloadTooLarge,
        Refused::Stalled { .. } => Transport::RequestTimeout,
        Refused::Broken => Transport::InvalidRequest,
    };
    Fault::transport(kind, why.message())
}

/// A request past its deadline: 503 on both bindings (`UNAVAILABLE`).
fn past_deadline(within: std::time::Duration) -> Fault {
    Fault::transport(
        Transport::Unavailable,
        crate::edge::deadline::message(within),
    )
}

/// The `A2A-Version` a request asks for: the header, else the `A2A-Version` query value.
fn requested_version(headers: &HeaderMap, query: Option<&str>) -> Option<String> {
    if let Some(v) = headers.get(VERSION_HEADER) {
        return Some(v.to_str().unwrap_or("?").to_owned());
    }
    query?.split('&').find_map(|pair| {
        pair.strip_prefix("A2A-Version=")
            .map(|v| v.replace("%2E", "."))
    })
}

/// What an operation answers: one typed answer, or a stream of `StreamResponse`s (ended,
/// when the host cannot go on with it, by the error).
pub(crate) enum Answer {
    Value(Reply),
    Stream(futures::stream::BoxStream<'static, stream::Item>),
}

/// The answer of a unary operation, as its binding writes it (the generated A2A models).
#[derive(serde::Serialize)]
#[serde(untagged)]
pub(crate) enum Reply {
    Sent(Box<A2aSendMessageResponse>),
    Task(Box<A2aTask>),
    Tasks(A2aListTasksResponse),
    PushConfig(Box<A2aTaskPushNotificationConfig>),
    PushConfigs(A2aListTaskPushNotificationConfigsResponse),
    /// `google.protobuf.Empty` (DeleteTaskPushNotificationConfig).
    Empty(serde_json::Map<String, Value>),
    Card(Box<A2aAgentCard>),
}

impl Reply {
    /// The state of the task this answer carries, if it carries one.
    fn task_state(&self) -> Option<&openwop_generated::models::A2aTaskStateName> {
        let task = match self {
            Reply::Sent(sent) => sent.task.as_ref()?,
            Reply::Task(task) => task,
            _ => return None,
        };
        Some(&task.status.state)
    }
}

/// Answers one A2A operation, whichever binding carried it: the bindings differ in how
/// they read the request and render the answer, never in what the operation does. The
/// map's rule "refuse a row whose `requires` is not advertised, with the row's error"
/// runs here, once, for every method (the rows that depend on a named task's state are
/// judged again once the task is read); the match is exhaustive over the map's methods.
pub(crate) async fn dispatch(
    state: &A2aState,
    subject: &Subject,
    headers: &HeaderMap,
    method: A2aMethod,
    params: &Value,
) -> Result<Answer, Fault> {
    // Either spelling of a field, as ProtoJSON parsers accept (`task_id` or `taskId`).
    let params = proto_names::json_names(params);
    gate::check(
        method.as_str(),
        &gate::Facts::of_request(&params),
        &state.app.discovery.get().document,
    )?;
    // The method's typed request reads these (`read`: the tolerances, then the model).
    let params = &read::loosen(method, &params);
    let reply = match method {
        A2aMethod::SendMessage => Reply::Sent(Box::new(
            Box::pin(state.send_message(subject, send::parse_send(params)?)).await?,
        )),
        A2aMethod::SendStreamingMessage => {
            let send = send::parse_send(params)?;
            let (run, history, _) = state.accept_message(subject, method, send).await?;
            // As the SDK servers do: the sender is the one who answers an interrupt, so its
            // stream ends there and the answer is a new message.
            return stream_of(state, subject, run, history, stream::Until::Interrupted).await;
        }
        A2aMethod::SubscribeToTask => {
            let (run, history) = state
                .subscribe(subject, read::typed(params, read::COMMON)?)
                .await?;
            // A subscriber follows the task to its end: an input or auth request is a
            // state the task passes through (A2A 1.0 §3.1.6), not the end of the stream.
            return stream_of(state, subject, run, history, stream::Until::Terminal).await;
        }
        A2aMethod::GetTask => Reply::Task(Box::new(
            state
                .get_task(subject, read::typed(params, read::COMMON)?)
                .await?,
        )),
        A2aMethod::ListTasks => Reply::Tasks(
            state
                .list_tasks(subject, read::typed(params, read::COMMON)?)
                .await?,
        ),
        A2aMethod::CancelTask => Reply::Task(Box::new(
            state
                .cancel_task(subject, read::typed(params, read::COMMON)?)
                .await?,
        )),
        A2aMethod::CreateTaskPushNotificationConfig => Reply::PushConfig(Box::new(
            state
                .create_push_config(subject, read::typed(params, push::config::WORDS)?)
                .await?,
        )),
        A2aMethod::GetTaskPushNotificationConfig => Reply::PushConfig(Box::new(
            state
                .get_push_config(subject, read::typed(params, read::COMMON)?)
                .await?,
        )),
        A2aMethod::ListTaskPushNotificationConfigs => Reply::PushConfigs(
            state
                .list_push_configs(subject, read::typed(params, read::COMMON)?)
                .await?,
        ),
        A2aMethod::DeleteTaskPushNotificationConfig => {
            state
                .delete_push_config(subject, read::typed(params, read::COMMON)?)
                .await?;
            Reply::Empty(serde_json::Map::new())
        }
        A2aMethod::GetExtendedAgentCard => Reply::Card(Box::new(
            extended_card::get(
                state,
                subject,
                headers,
                read::typed(params, extended_card::WORDS)?,
            )
            .await?,
        )),
    };
    Ok(Answer::Value(reply))
}

async fn stream_of(
    state: &A2aState,
    subject: &Subject,
    run: crate::ops::RunRecord,
    history: Option<usize>,
    until: stream::Until,
) -> Result<Answer, Fault> {
    let events = stream::open(state.clone(), subject.clone(), run, history, until).await?;
    Ok(Answer::Stream(futures::StreamExt::boxed(events)))
}

/// The method a request names, or the binding's method-not-found.
pub(crate) fn method_of(name: &str) -> Result<A2aMethod, Fault> {
    A2aMethod::from_method(name).ok_or_else(|| {
        Fault::transport(Transport::MethodNotFound, format!("no A2A method `{name}`"))
    })
}

/// Negotiates the version of one authenticated exchange and records the outcome as a
/// durable `negotiation.decided` host event of the caller's tenant, refusals included.
pub(crate) async fn negotiate(
    state: &A2aState,
    subject: &Subject,
    headers: &HeaderMap,
    query: Option<&str>,
) -> Result<(), Fault> {
    let offer = state
        .offer
        .get_or_init(|| Offer::from_facet(Protocol::A2a, &state.facet()))
        .as_ref()
        .map_err(|e| {
            tracing::error!(error = %e, "the a2a facet cannot be negotiated from");
            Fault::internal()
        })?;
    let requested = requested_version(headers, query);
    // The peer is who it authenticated as, never a header it chose (such as Origin); only
    // a keyed digest is recorded.
    let peer = state
        .app
        .ops
        .peer_key()
        .subject(&subject.issuer, &subject.subject_id);
    let decision =
        negotiation::decide(Protocol::A2a, requested.as_deref(), true, offer).with_peer(peer);
    let payload = decision.payload(&crate::clock::rfc3339(crate::clock::now_ms()));
    state
        .app
        .ops
        .emit_host_event(&subject.tenant, "negotiation.decided", "durable", payload)
        .await
        .map_err(|e| Fault::host_fault("negotiation.decided could not be recorded", e))?;
    if decision.is_accepted() {
        Ok(())
    } else {
        Err(Fault::version_not_supported(
            decision.requested.as_deref(),
            &offer.supported_versions_joined(),
        ))
    }
}

/// One A2A request on either binding: negotiated, then dispatched in its span. The
/// negotiation's host event is held for the task the request may create (one commit),
/// else written before the answer.
pub(crate) async fn serve(
    state: &A2aState,
    subject: &Subject,
    headers: &HeaderMap,
    query: Option<&str>,
    method: &str,
    params: &Value,
) -> Result<Answer, Fault> {
    let exported = exported_span(method, params, headers);
    let request = async {
        negotiate(state, subject, headers, query).await?;
        let span = request_span(method, params, headers);
        async {
            let method = method_of(method)?;
            // Boxed, as the MCP mount's dispatch: each wrapper around it (the spans, the
            // held host events, axum's handler) would otherwise move the whole nested
            // state of a call, typed answers included, at every poll's hand-over.
            Box::pin(dispatch(state, subject, headers, method, params)).await
        }
        .instrument(span)
        .await
    }
    .instrument(exported.clone());
    state
        .app
        .ops
        .holding_host_events(request)
        .await
        // A store that cannot write now: 503 with Retry-After (issue #35).
        .unwrap_or_else(|e| Err(Fault::host_fault("a host event could not be recorded", e)))
        .inspect(|answer| {
            // The state of the task the answer carries (`a2a.task.state`); a stream's
            // states go out after the span's request has been answered.
            if let Answer::Value(reply) = answer
                && let Some(state) = reply.task_state()
            {
                let _in = exported.enter();
                crate::observe::otel::a2a_task_state_current(state.as_ref());
            }
        })
        .inspect_err(|fault| {
            let _in = exported.enter();
            crate::observe::otel::rpc_error_current(fault.jsonrpc_code(), &fault.message);
        })
}

/// The exported A2A server span of a request (none without a collector): the trace in
/// the message's metadata first, as [`request_span`] reads it.
fn exported_span(method: &str, params: &Value, headers: &HeaderMap) -> tracing::Span {
    if !crate::observe::otel::on() {
        return tracing::Span::none();
    }
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let carrier = params
        .get("message")
        .and_then(|m| m.get("metadata"))
        .and_then(|m| m.get("openwop"));
    let trace = crate::trace::select(carrier, header("traceparent"), header("tracestate"));
    crate::observe::otel::a2a_server_span(method, params, header("a2a-version"), trace)
}

/// The span an A2A request runs in: its method, and the W3C trace it continues when it
/// carries a well-formed one (message metadata first, then the header). The trace is
/// for correlation only; nothing reads it to decide who the caller is or what it may do.
pub(crate) fn request_span(method: &str, params: &Value, headers: &HeaderMap) -> tracing::Span {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let carrier = params
        .get("message")
        .and_then(|m| m.get("metadata"))
        .and_then(|m| m.get("openwop"));
    match crate::trace::select(carrier, header("traceparent"), header("tracestate")) {
        Some(tc) => {
            tracing::info_span!("a2a", method, trace_id = tc.trace_id(), parent_id = tc.parent_id(), trace_source = ?tc.source)
        }
        None => tracing::info_span!("a2a", method),
    }
}

/// `GET /.well-known/agent-card.json`: public, the same card for every served version
/// (so also the `preferredVersion` card when no `A2A-Version` is sent), with a strong
/// ETag, a cache lifetime and `Last-Modified` (the card is set up once, at start).
async fn get_card(State(state): State<A2aState>, headers: HeaderMap) -> Response {
    let card = match extended_card::host_card(&state).and_then(|c| signing::signed(&state, c)) {
        Ok(card) => card,
        Err(fault) => return fault.into_rest_response(),
    };
    let body = match serde_json::to_string(&card) {
        Ok(body) => body,
        Err(_) => return Fault::internal().into_rest_response(),
    };
    let etag = format!(
        "\"{}\"",
        hex::encode(&Sha256::digest(body.as_bytes())[..16])
    );
    let cache = HeaderValue::from_static("public, max-age=300");
    let modified = HeaderValue::from_str(&crate::clock::http_date(state.config.card_modified_ms))
        .unwrap_or_else(|_| HeaderValue::from_static("Thu, 01 Jan 1970 00:00:00 GMT"));
    let etag_value =
        HeaderValue::from_str(&etag).unwrap_or_else(|_| HeaderValue::from_static("\"card\""));
    if headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag))
    {
        return (
            StatusCode::NOT_MODIFIED,
            [
                (header::ETAG, etag_value),
                (header::CACHE_CONTROL, cache),
                (header::LAST_MODIFIED, modified),
            ],
        )
            .into_response();
    }
    (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (header::ETAG, etag_value),
            (header::CACHE_CONTROL, cache),
            (header::LAST_MODIFIED, modified),
        ],
        body,
    )
        .into_response()
}
