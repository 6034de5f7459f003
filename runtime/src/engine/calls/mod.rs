//! The calling nodes (`a2a`, `mcp`, `http`): a run's calls to configured remote peers.
//!
//! A call is made outside any store transaction, so what it needs survives a crash in
//! the run itself, under `state.calls.<nodeId>`:
//!
//! - `phase`: `send` (the node started; nothing sent yet, or not known to have been),
//!   `follow` (an A2A task is under way: its `taskId`/`contextId` are stored), `asking`
//!   (the remote side asked a question; the run is suspended on an interrupt that carries
//!   it), `reply` (the question was answered here; the answer goes back next);
//! - `visit`: minted when the node starts, so every message this visit sends has an id
//!   derived from the run, the node, the visit and the round: a restarted host re-sends
//!   the same messageId (a peer that dedupes on it sees one message), never a new one;
//! - `round`, the `reply` resume value, and for MCP the round's `requests` and the
//!   server's `requestState` (echoed byte for byte).
//!
//! A restarted host (or the replica that takes the run over) picks the call up from its
//! phase: it follows the stored remote task instead of sending again. Remote states come
//! back through the generated `taskStateReverse` table: INPUT_REQUIRED and AUTH_REQUIRED
//! suspend this run on an interrupt with the remote question, REJECTED fails the node with
//! `rejected_by_remote`, UNSPECIFIED is read as pending with a warning.
//!
//! This module takes a call one step further and holds what every call shares (retries,
//! failing or suspending the node, the negotiation audit, polling); the A2A node is in
//! [`a2a_call`], the `mcp` and `mcp-client` nodes in [`mcp_call`].

mod a2a_call;
mod mcp_call;

use std::time::Duration;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::call_failure::{failure_code, transient};
use super::call_state::{CallStep, call_state, with_call};
use super::definition::{InterruptKind, Node, kind_str, node_id};
use super::events;
use super::executor::{Engine, EngineError, SuspendedAt, context, failure, with_node_result};
use super::status::suspended_status;
use super::template;
use crate::generated::errors::ErrorCode;
use crate::generated::models;
use crate::negotiation::{Decision, Protocol};
use crate::peers::{CallError, Caller, PeerKind, a2a, mcp};
use crate::status::RunStatus;
use crate::store::{HostEventRecord, NewEvent, NewInterrupt, RunPatch, RunRecord, Subscription};

/// How a wait between two polls of a remote task ended ([`Engine::pause_poll`]).
enum Pause {
    /// Poll again.
    Again,
    /// The host is stopping: leave the run as it is, to be resumed.
    Stopping,
    /// The run is no longer running here (cancelled): cancel the remote side too.
    NotRunning,
}

/// How many times a call the peer did not answer is tried before the node fails.
const ATTEMPTS: u32 = 4;

/// The messageId of one round of one visit: derived, so a re-send is the same message.
fn message_id(run_id: &str, node: &str, visit: &str, round: u64) -> String {
    let d = Sha256::digest(format!("{run_id}\n{node}\n{visit}\n{round}").as_bytes());
    hex::encode(&d[..16])
}

fn phase(call: &Map<String, Value>) -> &str {
    call.get("phase").and_then(Value::as_str).unwrap_or("send")
}

fn round(call: &Map<String, Value>) -> u64 {
    call.get("round").and_then(Value::as_u64).unwrap_or(0)
}

/// What an `mcp-client` node asks, rendered.
struct ClientRequest {
    method: String,
    peer: String,
    tool: Option<String>,
    arguments: Value,
    cursor: Option<String>,
    uri: Option<String>,
}

impl Engine {
    /// Takes a calling node one step further from its stored phase.
    pub(super) async fn call_out(
        &self,
        run: &RunRecord,
        node: &Node,
    ) -> Result<CallStep, EngineError> {
        let id = node_id(node);
        let Some(call) = call_state(&run.state, id).cloned() else {
            return Ok(CallStep::Stopped);
        };
        if let Node::McpClient {
            method,
            peer,
            tool,
            arguments,
            cursor,
            uri,
            ..
        } = node
        {
            let ctx = context(run);
            let render = |t: &Option<Value>| {
                t.as_ref()
                    .map(|t| template::render(t, &ctx))
                    .filter(|v| !v.is_null())
            };
            let text = |t: &Option<Value>, default: &str| {
                render(t)
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_else(|| default.to_owned())
            };
            let request = ClientRequest {
                method: text(method, "serverHealth"),
                peer: text(peer, "conformance"),
                tool: render(tool).and_then(|v| v.as_str().map(str::to_owned)),
                arguments: render(arguments).unwrap_or_else(|| json!({})),
                cursor: render(cursor).and_then(|v| v.as_str().map(str::to_owned)),
                uri: render(uri).and_then(|v| v.as_str().map(str::to_owned)),
            };
            return self.call_mcp_client(run, id, &request).await;
        }
        let Some((peer_id, kind)) = super::definition::peer_of(node) else {
            return Ok(CallStep::Stopped);
        };
        let Some(peer) = self.peers().get(peer_id, kind, &run.tenant) else {
            return self.fail(
                run,
                id,
                ErrorCode::PeerCallFailed,
                &format!(
                    "node `{id}`: no {} peer `{peer_id}` is configured for this run",
                    kind.as_str()
                ),
                vec![],
            );
        };
        let caller = Caller::for_run(&run.run_id, &run.state);
        match node {
            Node::Http {
                method, path, body, ..
            } => {
                let ctx = context(run);
                let path = template::render(&json!(path.as_str()), &ctx);
                let path = path.as_str().unwrap_or("/").to_owned();
                let body = body.as_ref().map(|b| template::render(b, &ctx));
                let method = method.to_string();
                // Only a GET is tried again: anything else may have taken effect. Anything
                // else carries an Idempotency-Key derived from the run, node and visit, so a
                // service that honours it (this host's own createRun does) takes the same
                // request sent again after a crash as the one it already served.
                let attempts = if method == "GET" { ATTEMPTS } else { 1 };
                let visit = call.get("visit").and_then(Value::as_str).unwrap_or("0");
                let key = (method != "GET").then(|| message_id(&run.run_id, id, visit, 0));
                let result = self
                    .retrying(attempts, || {
                        self.peers().http(
                            &peer,
                            &caller,
                            &method,
                            &path,
                            body.as_ref(),
                            key.as_deref(),
                        )
                    })
                    .await;
                match result {
                    Ok(value) => self.done(run, id, value, vec![]),
                    Err(e) => self.call_failed(run, id, peer.kind, e, vec![]),
                }
            }
            Node::Mcp {
                tool,
                arguments,
                on_tool_error,
                ..
            } => {
                self.call_mcp(
                    run,
                    id,
                    &peer,
                    &caller,
                    &call,
                    tool,
                    arguments.as_ref(),
                    *on_tool_error,
                )
                .await
            }
            Node::A2a {
                parts, metadata, ..
            } => {
                self.call_a2a(run, id, &peer, &caller, &call, parts, metadata)
                    .await
            }
            _ => Ok(CallStep::Stopped),
        }
    }

    async fn retrying<T, F, Fut>(&self, attempts: u32, mut f: F) -> Result<T, CallError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, CallError>>,
    {
        let mut delay = Duration::from_millis(500);
        let mut tried = 0;
        loop {
            tried += 1;
            match f().await {
                Err(e) if transient(&e) && tried < attempts => {
                    tracing::warn!(error = %e, retry_in_ms = delay.as_millis() as u64, "a peer call failed; trying again");
                    tokio::time::sleep(delay).await;
                    delay *= 2;
                }
                other => return other,
            }
        }
    }

    /// The node finished with `value`.
    fn done(
        &self,
        run: &RunRecord,
        id: &str,
        value: Value,
        mut before: Vec<NewEvent>,
    ) -> Result<CallStep, EngineError> {
        let completed =
            events::node_completed(id, Some(&value)).map_err(|message| EngineError::Payload {
                run_id: run.run_id.clone(),
                message,
            })?;
        before.push(completed);
        let state = with_call(&with_node_result(&run.state, id, value), id, None);
        Ok(CallStep::Done(
            RunPatch {
                node_index: Some(run.node_index + 1),
                state: Some(state),
                ..Default::default()
            },
            before,
        ))
    }

    fn fail(
        &self,
        run: &RunRecord,
        id: &str,
        code: ErrorCode,
        message: &str,
        mut before: Vec<NewEvent>,
    ) -> Result<CallStep, EngineError> {
        let (mut patch, events) = failure(run, code.as_str(), message, Some(id));
        patch.state = Some(with_call(&run.state, id, None));
        before.extend(events);
        Ok(CallStep::End(patch, before))
    }

    fn call_failed(
        &self,
        run: &RunRecord,
        id: &str,
        kind: PeerKind,
        e: CallError,
        before: Vec<NewEvent>,
    ) -> Result<CallStep, EngineError> {
        self.fail(
            run,
            id,
            failure_code(&e, kind),
            &format!("node `{id}`: {e}"),
            before,
        )
    }

    /// Suspends the run on an interrupt raised for the remote side's question.
    fn suspend(
        &self,
        run: &RunRecord,
        id: &str,
        kind: InterruptKind,
        data: Value,
        call: Map<String, Value>,
        mut before: Vec<NewEvent>,
    ) -> Result<CallStep, EngineError> {
        let kind_name = kind_str(kind);
        let interrupt_id = crate::ids::mint_bound(&run.tenant).as_bound();
        match events::suspension(&run.run_id, id, &interrupt_id, kind_name, &data) {
            Ok(suspension) => before.extend(suspension),
            Err(message) => {
                return self.fail(
                    run,
                    id,
                    ErrorCode::PeerCallFailed,
                    &format!("node `{id}`: the remote question cannot be relayed: {message}"),
                    before,
                );
            }
        }
        let patch = RunPatch {
            status: Some(suspended_status(kind)),
            state: Some(with_call(&run.state, id, Some(Value::Object(call)))),
            open_interrupt: Some(NewInterrupt {
                node_id: id.to_owned(),
                interrupt_id: interrupt_id.clone(),
                kind: kind_name.into(),
                data,
            }),
            ..Default::default()
        };
        Ok(CallStep::Suspend(
            patch,
            before,
            SuspendedAt {
                node_id: id.to_owned(),
                interrupt_id,
                kind: kind_name.to_owned(),
            },
        ))
    }

    /// The negotiation's audit events: `negotiation.decided` on the host's own event log
    /// (interop.md "The audit event": every outcome, the outbound ones included; the same
    /// payload and keyed peer digest an inbound negotiation records, under the calling
    /// run's tenant), and its copy for the calling run's log, returned to be committed with
    /// the step (the node it belongs to is named there). The host's is written first, so a
    /// call never goes out unaudited; a step repeated after a crash records its
    /// negotiation again, as it negotiates again.
    async fn negotiation_event(
        &self,
        run: &RunRecord,
        id: &str,
        decision: &Decision,
    ) -> Result<NewEvent, EngineError> {
        let now = crate::clock::now_ms();
        let payload = decision.payload(&crate::clock::rfc3339(now));
        let fits = payload.as_object().is_some_and(|map| {
            models::HostEventPayload::decode("negotiation.decided", map).is_ok()
        });
        if !fits {
            return Err(EngineError::Payload {
                run_id: run.run_id.clone(),
                message: "a negotiation.decided payload does not fit its schema".into(),
            });
        }
        self.store()
            .append_host_event(HostEventRecord::new(
                run.tenant.clone(),
                "negotiation.decided",
                "durable",
                payload.clone(),
                now,
            ))
            .await?;
        Ok(NewEvent {
            event_type: "negotiation.decided".into(),
            node_id: Some(id.to_owned()),
            payload,
        })
    }

    /// Waits `delay` between two polls of a remote task, or less: a commit on the run
    /// (a cancel, say) or the host stopping ends the wait.
    async fn pause_poll(
        &self,
        run_id: &str,
        delay: Duration,
        wakes: &mut Subscription,
        shutdown: &mut tokio::sync::watch::Receiver<bool>,
    ) -> Result<Pause, EngineError> {
        tokio::select! {
            _ = tokio::time::sleep(delay) => Ok(Pause::Again),
            _ = shutdown.changed() => Ok(Pause::Stopping),
            _ = wakes.recv() => Ok(if self.still_running(run_id).await? {
                Pause::Again
            } else {
                Pause::NotRunning
            }),
        }
    }

    /// Whether the run is still `running`, i.e. this step may go on driving it.
    async fn still_running(&self, run_id: &str) -> Result<bool, EngineError> {
        let current = self.store().get_run(run_id).await?;
        Ok(current.is_some_and(|r| r.status == RunStatus::Running))
    }

    /// Cancels the remote tasks a run that just ended was still following or asking
    /// about (best effort: the remote side learns of it once).
    pub(super) fn cancel_remote_calls(&self, run: &RunRecord) {
        let Some(calls) = run.state.get("calls").and_then(Value::as_object) else {
            return;
        };
        let Ok(wf) = self.workflow_of(run) else {
            return;
        };
        for (id, call) in calls {
            let Some(task_id) = call.get("taskId").and_then(Value::as_str) else {
                continue;
            };
            let Some(node) = super::definition::all_nodes(&wf.definition.nodes)
                .into_iter()
                .find(|n| node_id(n) == id)
                .cloned()
            else {
                continue;
            };
            let Some((peer_id, kind)) = super::definition::peer_of(&node) else {
                continue;
            };
            if kind == PeerKind::Http {
                continue;
            }
            let Some(peer) = self.peers().get(peer_id, kind, &run.tenant) else {
                continue;
            };
            let peers = self.peers().clone();
            let caller = Caller::for_run(&run.run_id, &run.state);
            let task_id = task_id.to_owned();
            let run_id = run.run_id.clone();
            tokio::spawn(async move {
                let result = async {
                    if kind == PeerKind::Mcp {
                        // An MCP call that became a task: `tasks/cancel` in a session that
                        // declares the extension.
                        let Some(offer) = peers.offer(Protocol::Mcp) else {
                            return Ok(());
                        };
                        let (Some(session), _) =
                            mcp::connect(&peers, &peer, &caller, offer).await?
                        else {
                            return Ok(());
                        };
                        return mcp::task_cancel(&peers, &peer, &caller, &session, &task_id).await;
                    }
                    let remote = a2a::remote(&peers, &peer, &caller).await?;
                    a2a::cancel_task(&peers, &peer, &caller, &remote, &task_id).await
                }
                .await;
                if let Err(e) = result {
                    tracing::warn!(run_id, error = %e, "cannot cancel the remote task of an ended run");
                }
            });
        }
    }
}
