//! Interrupt notices: when a run created with a `callbackUrl` suspends, the host posts
//! `{runId, nodeId, interruptId, kind, token, expiresAt}` there, through the egress guard.
//!
//! The notice is the only place a resume token travels, which is why it is minted here and
//! never stored. Delivery is best effort: a few attempts, then a logged failure; the
//! interrupt stays resolvable by `resolveInterruptByRun` either way.

use super::tokens::TokenKey;
use crate::egress::{Egress, SendError};
use crate::engine::{SuspendHook, Suspended};
use crate::generated::models::InterruptNotice;
use crate::wire::wire;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Where in a run's engine state its `callbackUrl` is kept.
pub const STATE_KEY: &str = "callbackUrl";

/// Waits before the second, third and fourth attempt.
const RETRY_DELAYS: [Duration; 3] = [
    Duration::from_millis(500),
    Duration::from_secs(2),
    Duration::from_secs(5),
];

/// The notice a suspension sends (`models::InterruptNotice`), with a fresh token for its
/// interrupt; `None` (logged) for a suspension whose ids the model refuses, which the
/// engine never raises.
pub fn notice(tokens: &TokenKey, s: &Suspended, now_ms: i64) -> Option<InterruptNotice> {
    let (token, claims) = tokens.mint(&s.run.run_id, &s.node_id, &s.interrupt_id, now_ms, None);
    let typed = (|| -> Result<InterruptNotice, String> {
        Ok(InterruptNotice {
            run_id: wire("runId", s.run.run_id.as_str())?,
            node_id: wire("nodeId", s.node_id.as_str())?,
            interrupt_id: wire("interruptId", s.interrupt_id.as_str())?,
            kind: s.kind.clone(),
            token,
            expires_at: crate::clock::rfc3339(claims.exp),
        })
    })();
    typed
        .map_err(|e| tracing::error!(run_id = %s.run.run_id, error = %e, "an interrupt notice does not fit its model; not sent"))
        .ok()
}

/// The engine hook that sends notices for runs that asked for them.
pub fn notifier(tokens: TokenKey, egress: Egress) -> SuspendHook {
    Arc::new(move |s: Suspended| {
        let Some(url) = s
            .run
            .state
            .get(STATE_KEY)
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return;
        };
        let Some(body) =
            notice(&tokens, &s, crate::clock::now_ms()).and_then(|n| serde_json::to_vec(&n).ok())
        else {
            return;
        };
        let egress = egress.clone();
        tokio::spawn(async move { deliver(&egress, &url, &s.run, body).await });
    })
}

async fn deliver(egress: &Egress, url: &str, run: &crate::store::RunRecord, body: Vec<u8>) {
    use crate::observe::otel;
    let run_id = run.run_id.as_str();
    let trace = run
        .state
        .get(crate::peers::TRACE_STATE_KEY)
        .and_then(Value::as_str);
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for attempt in 0..=RETRY_DELAYS.len() {
        // Each attempt is a CLIENT span of the run's trace (none without a collector).
        let span = otel::delivery_span(otel::Delivery {
            kind: "interrupt_notice",
            url,
            run_id,
            run_traceparent: trace,
            task_state: None,
            attempt: attempt as u32 + 1,
        });
        // Neither the URL nor the body (it holds the token) goes to the log.
        match otel::post_traced(egress, url, headers.clone(), body.clone(), span).await {
            Ok(status) => {
                tracing::info!(run_id, attempt, status, "interrupt notice delivered");
                return;
            }
            Err(SendError::Refused(reason)) => {
                tracing::warn!(run_id, %reason, "interrupt notice refused by the egress guard at delivery; not retried");
                return;
            }
            Err(e) => {
                tracing::warn!(run_id, attempt, error = %e, "interrupt notice not delivered");
                if let Some(delay) = RETRY_DELAYS.get(attempt) {
                    tokio::time::sleep(*delay).await;
                }
            }
        }
    }
    tracing::error!(run_id, "interrupt notice given up after every attempt");
}
