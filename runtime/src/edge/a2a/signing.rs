//! Signs the cards this edge serves (`crate::card_sign`) and publishes the signing keys
//! at [`crate::card_sign::JWKS_PATH`], the `jku` every signature names.

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use openwop_generated::models::A2aAgentCard;

use super::errors::Fault;
use super::service::A2aState;
use crate::card_sign::JWKS_PATH;

/// `card`, signed with the host's key (unchanged when the edge has none).
pub(crate) fn signed(state: &A2aState, mut card: A2aAgentCard) -> Result<A2aAgentCard, Fault> {
    if let Some(signer) = &state.config.signer {
        let jku = format!("{}{JWKS_PATH}", state.base_url().trim_end_matches('/'));
        signer.sign_card(&mut card, &jku).map_err(|e| {
            tracing::error!(error = %e, "the agent card cannot be signed");
            Fault::internal()
        })?;
    }
    Ok(card)
}

/// `GET /.well-known/jwks.json`: public, the keys cards are signed with.
pub(crate) async fn get_jwks(State(state): State<A2aState>) -> Response {
    let Some(signer) = &state.config.signer else {
        return StatusCode::NOT_FOUND.into_response();
    };
    (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/jwk-set+json"),
            ),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=300"),
            ),
        ],
        signer.jwks().to_string(),
    )
        .into_response()
}
