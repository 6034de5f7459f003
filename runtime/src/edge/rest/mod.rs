//! The REST + SSE edge: routing, the `OpenWOP-Version` rules, and error rendering. No
//! run logic lives here; handlers translate HTTP to `ops` calls and back.

mod agents;
mod artifacts;
mod discovery;
pub mod error;
mod events;
mod extract;
mod host_events;
mod interrupts;
mod rendered;
mod runs;
mod seams;
mod version;
mod workflows;

use crate::generated::errors::ErrorCode;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use error::ApiError;

/// The largest request body accepted (413 beyond).
pub const BODY_LIMIT: usize = 1024 * 1024;

pub use crate::app::AppState;

/// A request past its deadline: `503 service_unavailable`.
fn past_deadline(within: std::time::Duration) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    ApiError::new(
        ErrorCode::ServiceUnavailable,
        crate::edge::deadline::message(within),
    )
    .into_response()
}

/// A body refused before it was read whole (`edge::body`).
fn body_refused(why: crate::edge::body::Refused) -> axum::response::Response {
    use crate::edge::body::Refused;
    use axum::response::IntoResponse as _;
    let code = match why {
        Refused::TooLarge { .. } => ErrorCode::PayloadTooLarge,
        Refused::Stalled { .. } => ErrorCode::RequestTimeout,
        Refused::Broken => ErrorCode::ValidationError,
    };
    ApiError::new(code, why.message()).into_response()
}

/// The REST router. `seams`: mount conformance mode's seams (`/conformance/seams/...`) and
/// its connect page; without, they are answered 404 like any route the host does not have.
pub fn router(state: AppState, seams: Option<crate::conformance::Seams>) -> Router {
    let within = state.request_deadline;
    let body_within = state.body_timeout;
    let kept = std::sync::Arc::new(rendered::RenderedRuns::default());
    let mut router = Router::new();
    if let Some(seams) = seams {
        let (start, connect) = (seams.clone(), seams);
        router = router
            .route(
                "/conformance/seams/sample/oauth/authorize-start",
                post(move |caller, headers, body| {
                    seams::authorize_start(start.clone(), caller, headers, body)
                }),
            )
            .route(
                crate::conformance::CONNECT_PATH,
                get(move |caller, headers| {
                    seams::connect_synthetic(connect.clone(), caller, headers)
                }),
            )
            .route(
                "/conformance/oauth/synthetic/authorize",
                get(seams::synthetic_authorize),
            )
            .route(
                "/conformance/seams/sample/auth/credential/mint",
                post(seams::mint),
            )
            .route(
                "/conformance/seams/sample/a2a/invoke",
                post(seams::a2a_invoke),
            )
            .route(
                "/conformance/seams/sample/mcp/invoke",
                post(seams::mcp_invoke),
            );
    }
    router
        .route("/.well-known/openwop", get(discovery::get_discovery))
        .route("/openapi.json", get(discovery::get_openapi))
        .route("/runs", post(runs::create_run).get(runs::list_runs))
        // The getRun answers this router keeps (`rendered`), held by its route's handler
        // (a layer would cost every GET a service and an extension map).
        .route(
            "/runs/{run_id}",
            get(move |state, caller, path, headers| {
                runs::get_run(state, kept.clone(), caller, path, headers)
            }),
        )
        .route("/runs/{run_id}/cancel", post(runs::cancel_run))
        .route(
            "/runs/{run_id}/interrupts/{node_id}",
            post(runs::resolve_interrupt),
        )
        .route(
            "/interrupts/{token}",
            get(interrupts::inspect).post(interrupts::resolve),
        )
        .route("/runs/{run_id}/events", get(events::stream_events))
        .route("/runs/{run_id}/events/poll", get(events::poll_events))
        .route(
            "/runs/{run_id}/artifacts/{artifact_id}",
            get(artifacts::get_artifact),
        )
        .route("/host/events", get(host_events::host_events))
        .route("/agents", get(agents::list_agents))
        .route("/agents/{agent_id}", get(agents::get_agent))
        .route("/workflows", get(workflows::list_workflows))
        .route("/workflows/{workflow_id}", get(workflows::get_workflow))
        .fallback(|| async { ApiError::new(ErrorCode::NotFound, "no such route on this host") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                ErrorCode::MethodNotAllowed,
                "this route does not accept that method",
            )
        })
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::from_fn(move |req, next| {
            crate::edge::body::guard(BODY_LIMIT, body_within, body_refused, req, next)
        }))
        .layer(axum::middleware::from_fn(move |req, next| {
            crate::edge::deadline::run(within, past_deadline, req, next)
        }))
        .layer(axum::middleware::from_fn(version::negotiate))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            |_panic: Box<dyn std::any::Any + Send>| {
                use axum::response::IntoResponse;
                let mut resp = ApiError::new(
                    ErrorCode::InternalError,
                    "the host failed while handling the request",
                )
                .into_response();
                resp.headers_mut().insert(
                    version::HEADER,
                    axum::http::HeaderValue::from_static(crate::discovery::PROTOCOL_VERSION),
                );
                resp
            },
        ))
        .with_state(state)
}
