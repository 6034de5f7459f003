//! Conformance mode's seams (`crate::conformance`): test-only endpoints under
//! `/conformance/seams/` that a certification suite calls to set up what it cannot reach
//! through the production wire. Mounted only in conformance mode (a stock host answers
//! 404, which the suite reads as "not offered"); each is Bearer-authenticated and acts in
//! the caller's tenant.

use super::error::ApiError;
use super::extract::{Caller, JsonBody};
use crate::app::AppState;
use crate::generated::errors::ErrorCode;
use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::ops::seams::{A2aInvoke, InvokeError, Invoked, McpInvoke};

impl From<InvokeError> for ApiError {
    fn from(e: InvokeError) -> Self {
        match e {
            InvokeError::Op(e) => e.into(),
            InvokeError::Failed {
                code,
                message,
                details,
            } => ApiError::new(code, message).with_details(details),
        }
    }
}

/// `POST /conformance/seams/sample/a2a/invoke`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct A2aInvokeRequest {
    peer_url: String,
    #[serde(default = "yes")]
    authenticated: bool,
    request_version: Option<String>,
    peer_offers_only: Option<String>,
}

fn yes() -> bool {
    true
}

/// One exchange through the host's production A2A client against `peerUrl` (the suite's
/// loopback agent): its card, the negotiation, `SendMessage`.
pub async fn a2a_invoke(
    State(state): State<AppState>,
    Caller(subject): Caller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<A2aInvokeRequest>,
) -> Result<Json<Value>, ApiError> {
    let traceparent = traceparent(&headers);
    let invoked = state
        .ops
        .seam_a2a_invoke(
            &subject,
            A2aInvoke {
                peer_url: body.peer_url,
                authenticated: body.authenticated,
                request_version: body.request_version,
                peer_offers_only: body.peer_offers_only,
                traceparent,
            },
        )
        .await?;
    Ok(Json(answer(invoked)))
}

/// The 200 answer of an invoke seam.
fn answer(invoked: Invoked) -> Value {
    let mut body = json!({
        "negotiatedVersion": invoked.negotiated_version,
        "protocol": invoked.protocol,
        "runId": invoked.run_id,
        "peerDigest": invoked.peer_digest,
        "result": invoked.result,
    });
    if let Some(rounds) = invoked.rounds {
        body["mrtr"] = json!({"rounds": rounds});
    }
    body
}

/// The caller's `traceparent` (and `tracestate`), when well formed.
fn traceparent(headers: &HeaderMap) -> Option<String> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    crate::trace::select(None, header("traceparent"), header("tracestate")).map(|tc| tc.traceparent)
}

/// `POST /conformance/seams/sample/mcp/invoke`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpInvokeRequest {
    server_url: String,
    #[serde(default = "yes")]
    authenticated: bool,
    request_version: Option<String>,
    tool: Option<String>,
    arguments: Option<Value>,
    /// Declared to the server in place of the host's own (form-mode elicitation); an
    /// input round they do not offer to answer ends the exchange with `mcp_error`.
    client_capabilities: Option<Value>,
    elicitation_answer: Option<Value>,
}

/// One exchange through the host's production MCP client against `serverUrl`.
pub async fn mcp_invoke(
    State(state): State<AppState>,
    Caller(subject): Caller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<McpInvokeRequest>,
) -> Result<Json<Value>, ApiError> {
    let arguments = body.arguments.unwrap_or_else(|| json!({}));
    if !arguments.is_object() {
        return Err(ApiError::validation("`arguments` must be an object"));
    }
    if body
        .client_capabilities
        .as_ref()
        .is_some_and(|c| !c.is_object())
    {
        return Err(ApiError::validation(
            "`clientCapabilities` must be an object",
        ));
    }
    let invoked = state
        .ops
        .seam_mcp_invoke(
            &subject,
            McpInvoke {
                server_url: body.server_url,
                authenticated: body.authenticated,
                request_version: body.request_version,
                tool: body.tool.unwrap_or_else(|| "echo".to_owned()),
                arguments,
                client_capabilities: body.client_capabilities,
                elicitation_answer: body.elicitation_answer,
                traceparent: traceparent(&headers),
            },
        )
        .await?;
    Ok(Json(answer(invoked)))
}

/// `POST /conformance/seams/sample/auth/credential/mint`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MintRequest {
    lane: String,
}

/// Mints a new api key, and so a new Subject, in the caller's tenant: the suite needs a
/// second principal of the same tenant (an approver not listed, a caller who does not
/// own a run). Only the `api-key` lane exists on this host.
pub async fn mint(
    State(state): State<AppState>,
    Caller(subject): Caller,
    JsonBody(body): JsonBody<MintRequest>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    if body.lane != "api-key" {
        return Err(ApiError::new(
            ErrorCode::ValidationError,
            format!(
                "lane `{}`: this host mints credentials of the `api-key` lane only",
                body.lane
            ),
        ));
    }
    let (credential, minted) = state
        .keys
        .mint(&subject.tenant)
        .map_err(|e| ApiError::new(ErrorCode::InternalError, e.to_string()))?;
    Ok((
        StatusCode::CREATED,
        Json(json!({
            "lane": "api-key",
            "credential": credential,
            "subjectId": minted.subject_id,
        })),
    ))
}

/// `POST /conformance/seams/sample/oauth/authorize-start`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuthorizeStartRequest {
    provider: String,
    connection: Option<String>,
    auth_url: Option<String>,
    token_url: Option<String>,
    issuer: Option<String>,
    pkce: Option<Value>,
    scopes: Option<Vec<String>>,
}

/// The origin authorizations redirect back to: the public URL, else the request's `Host`.
fn origin(seams: &crate::conformance::Seams, headers: &HeaderMap) -> String {
    match &seams.public_url {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None => format!(
            "http://{}",
            headers
                .get(axum::http::header::HOST)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("localhost")
        ),
    }
}

impl From<crate::conformance::AuthorizeError> for ApiError {
    fn from(e: crate::conformance::AuthorizeError) -> Self {
        use crate::conformance::AuthorizeError;
        match e {
            AuthorizeError::Invalid(m) => ApiError::validation(m),
            AuthorizeError::Mismatch(m) => {
                ApiError::new(ErrorCode::ConnectionAuthMetadataMismatch, m)
            }
        }
    }
}

/// Starts an authorization (PKCE S256) for a provider: 201 `{authorizationUrl}`; metadata
/// that does not match the registered provider is 422 `connection_auth_metadata_mismatch`.
pub async fn authorize_start(
    seams: crate::conformance::Seams,
    Caller(_subject): Caller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<AuthorizeStartRequest>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let url = crate::conformance::authorization_url(
        &origin(&seams, &headers),
        &crate::conformance::AuthorizeStart {
            provider: body.provider,
            connection: body.connection,
            auth_url: body.auth_url,
            token_url: body.token_url,
            issuer: body.issuer,
            pkce: body.pkce,
            scopes: body.scopes,
        },
    )?;
    Ok((StatusCode::CREATED, Json(json!({"authorizationUrl": url}))))
}

/// The credential fixture's `connectUrl`: a signed-in user following it is sent (303) into
/// the authorization flow of provider `synthetic`, as authorize-start starts it.
pub async fn connect_synthetic(
    seams: crate::conformance::Seams,
    Caller(_subject): Caller,
    headers: HeaderMap,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse as _;
    let url = crate::conformance::authorization_url(
        &origin(&seams, &headers),
        &crate::conformance::AuthorizeStart {
            provider: crate::conformance::SYNTHETIC_PROVIDER.into(),
            connection: Some("conformance-credential".into()),
            ..Default::default()
        },
    )?;
    Ok((StatusCode::SEE_OTHER, [(axum::http::header::LOCATION, url)]).into_response())
}

/// The synthetic provider's authorization endpoint: a page that says what it is. No
/// authorization server stands behind it; nothing is granted here.
pub async fn synthetic_authorize() -> axum::response::Response {
    use axum::response::IntoResponse as _;
    (
        StatusCode::OK,
        [(axum::http::header::CONTENT_TYPE, "text/html; charset=utf-8")],
        "<!doctype html><html><head><title>Synthetic provider</title></head><body>\
         <h1>Synthetic provider</h1><p>This is the <code>synthetic</code> OAuth provider of an \
         OpenWOP host in conformance mode. It exists for certification only: no \
         authorization server stands behind it and nothing is granted here.</p></body></html>",
    )
        .into_response()
}
