//! Server-to-client `elicitation/create` in 2025-11-25 sessions: when a call's run asks
//! for input, the question goes out on the call's own SSE stream (the interrupt mapping
//! of `elicit.rs`, the same one the stateless era's InputRequiredResult uses) and the
//! call keeps waiting. The client's answer arrives as a JSON-RPC response POSTed on the
//! session, on any replica: the request id is a sealed state (as a `requestState`, bound
//! to the principal, run, interrupt and round, single use), so whoever receives the answer
//! resolves the interrupt itself, and the waiting call sees the run move on.

use serde_json::Value;

use super::McpState;
use super::ctx::{Ctx, Era, STATE_TTL_MS, internal, refused_state, state_run_fault};
use super::elicit::{self, Answer, Asked, Modes};
use super::request_state::{Claims, Refusal};
use super::rpc::RpcError;
use super::wire;
use crate::identity::Subject;
use crate::ids::BoundId;
use crate::ops::RunRecord;

/// The prefix of the JSON-RPC id of every `elicitation/create` the host sends.
pub const ID_PREFIX: &str = "openwop-elicit.";

/// The digest a session elicitation binds in place of a request digest: the answer is
/// a response, not a retry of the call.
const SESSION_DIGEST: &str = "session-elicitation";

/// How asking in the session ended for the waiting call.
#[allow(
    clippy::large_enum_variant,
    reason = "one per elicitation, moved once; boxing the common case buys nothing"
)]
pub enum Outcome {
    /// The interrupt was resolved; the run as read after it.
    Answered(RunRecord),
    /// The user dismissed the question (`cancel`, or an error response).
    Dismissed(String),
    /// No answer before the call's deadline.
    Unanswered(String),
}

impl McpState {
    /// Whether this call is a 2025-11-25 session call with a stream to ask on, whose
    /// `initialize` declared the mode the run's open interrupt needs.
    pub(crate) async fn session_can_be_asked(
        &self,
        ctx: &Ctx,
        run: &RunRecord,
    ) -> Result<bool, RpcError> {
        if !matches!(ctx.era, Era::Legacy(_)) || ctx.outbound.is_none() {
            return Ok(false);
        }
        let open = self.open_interrupt_of(run).await?;
        Ok(open.is_some_and(|o| elicit::can_ask(&o.kind, &o.data, ctx.session_modes)))
    }

    /// Sends `elicitation/create` for the run's open interrupt and waits until it is
    /// resolved, dismissed, or `deadline` passes.
    pub(crate) async fn ask_in_session(
        &self,
        ctx: &Ctx,
        run: &RunRecord,
        round: u32,
        deadline: tokio::time::Instant,
    ) -> Result<Outcome, RpcError> {
        let Some(out) = ctx.outbound.as_ref() else {
            return Err(RpcError::internal());
        };
        let Some(open) = self.open_interrupt_of(run).await? else {
            return Ok(Outcome::Answered(run.clone()));
        };
        let asked = Asked {
            interrupt_id: &open.interrupt_id,
            kind: &open.kind,
            data: &open.data,
        };
        let Some(params) = elicit::params(&asked, ctx.session_modes) else {
            return Ok(Outcome::Unanswered(open.interrupt_id.clone()));
        };
        let claims = Claims {
            principal: ctx.principal(),
            exp: crate::clock::now_ms() + STATE_TTL_MS,
            digest: SESSION_DIGEST.to_owned(),
            run: run.run_id.clone(),
            interrupt: open.interrupt_id.clone(),
            round,
            nonce: crate::ids::mint_opaque(),
        };
        let (tx, dismissed) = tokio::sync::oneshot::channel();
        self.waiters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(claims.nonce.clone(), tx);
        let _unregister = Unregister {
            state: self,
            nonce: claims.nonce.clone(),
        };
        let id = format!("{ID_PREFIX}{}", self.codec.seal(&claims));
        out.send(wire::Outgoing::request(&id, "elicitation/create", params).text());
        let bound = BoundId::parse_bound(&run.run_id).map_err(internal)?;
        let mut watch = self
            .app
            .ops
            .watch(&ctx.subject, &bound, run.last_sequence)
            .await?;
        let resolved = async {
            while let Some(update) = watch.next().await {
                let update = update?;
                let answered = update.events.iter().any(|e| {
                    e.event_type == "interrupt.resolved"
                        && e.payload.get("interruptId").and_then(Value::as_str)
                            == Some(open.interrupt_id.as_str())
                });
                if answered || update.run.status.is_terminal() {
                    return Ok::<_, crate::ops::OpError>(Some(update.run));
                }
            }
            Ok(None)
        };
        tokio::select! {
            r = resolved => match r? {
                Some(next) => Ok(Outcome::Answered(next)),
                None => Ok(Outcome::Unanswered(open.interrupt_id.clone())),
            },
            _ = dismissed => Ok(Outcome::Dismissed(open.interrupt_id.clone())),
            _ = tokio::time::sleep_until(deadline) => Ok(Outcome::Unanswered(open.interrupt_id.clone())),
        }
    }

    /// A JSON-RPC response POSTed on a 2025-11-25 session: the answer to an
    /// `elicitation/create` the host sent. A malformed answer is refused before the state
    /// is spent; an accepted one resolves the interrupt here, a dismissal tells the waiting
    /// call (when it waits in this process) and leaves the interrupt open.
    pub async fn take_response(
        &self,
        subject: &Subject,
        session_modes: Modes,
        response: &Value,
    ) -> Result<(), RpcError> {
        let Some(token) = response
            .get("id")
            .and_then(Value::as_str)
            .and_then(|id| id.strip_prefix(ID_PREFIX))
        else {
            // Not an answer to anything the host asked: nothing to do.
            return Ok(());
        };
        let principal = format!("{}#{}", subject.issuer, subject.subject_id);
        let claims = self
            .codec
            .open(token, &principal, SESSION_DIGEST, crate::clock::now_ms())
            .map_err(refused_state)?;
        let id =
            BoundId::parse_bound(&claims.run).map_err(|_| refused_state(Refusal::Malformed))?;
        let run = self
            .app
            .ops
            .get_run(subject, &id)
            .await
            .map_err(state_run_fault)?;
        let open = self.open_interrupt_of(&run).await?;
        let Some(open) = open.filter(|o| o.interrupt_id == claims.interrupt) else {
            return Err(refused_state(Refusal::Spent));
        };
        let asked = Asked {
            interrupt_id: &open.interrupt_id,
            kind: &open.kind,
            data: &open.data,
        };
        let answer = match (response.get("result"), response.get("error")) {
            (Some(result), None) if elicit::can_ask(&open.kind, &open.data, session_modes) => {
                elicit::answer(&asked, result)?
            }
            (Some(_), None) => return Err(refused_state(Refusal::OtherRequest)),
            // The client could not ask its user: the question stays open.
            (None, Some(_)) => Answer::Dismissed,
            _ => {
                return Err(RpcError::invalid_params(
                    "a response carries exactly one of `result` and `error`",
                ));
            }
        };
        self.spend(&claims).await?;
        match answer {
            Answer::Resume(resume) => {
                let ctx = Ctx::new(subject.clone(), Era::Legacy(String::new()));
                self.resolve(&ctx, &run, &open.node_id, &open.interrupt_id, resume)
                    .await?;
            }
            Answer::Dismissed => {
                let waiter = self
                    .waiters
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&claims.nonce);
                if let Some(tx) = waiter {
                    let _ = tx.send(());
                }
            }
        }
        Ok(())
    }
}

/// Takes a waiting call's entry out of the registry however the wait ends.
struct Unregister<'a> {
    state: &'a McpState,
    nonce: String,
}

impl Drop for Unregister<'_> {
    fn drop(&mut self) {
        self.state
            .waiters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.nonce);
    }
}
