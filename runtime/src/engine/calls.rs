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

use std::time::Duration;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::call_failure::{failure_code, transient};
use super::definition::{InterruptKind, Node, kind_str, node_id};
use super::events;
use super::executor::{Engine, EngineError, SuspendedAt, failure, with_node_result};
use super::status::suspended_status;
use super::template;
use crate::generated::dispatch::{self, RunStatus as Reverse};
use crate::generated::errors::ErrorCode;
use crate::generated::models;
use crate::negotiation::{self, Decision, Protocol};
use crate::peers::{self, CallError, Caller, PeerKind, a2a, mcp};
use crate::status::RunStatus;
use crate::store::{
    HostEventRecord, NewEvent, NewInterrupt, RunPatch, RunRecord, Subscription, Topic,
};

/// What a call step does to the run.
pub(super) enum CallStep {
    /// The node finished; the next node may follow in the same commit.
    Done(RunPatch, Vec<NewEvent>),
    /// Progress worth storing before going on (a remote task id): commit, then continue.
    Checkpoint(RunPatch, Vec<NewEvent>),
    /// The run ended (the node failed).
    End(RunPatch, Vec<NewEvent>),
    /// The run suspends on an interrupt carrying the remote question.
    Suspend(RunPatch, Vec<NewEvent>, SuspendedAt),
    /// The run stopped being one to drive (a cancel), or the host is stopping.
    Stopped,
}

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

/// `state.calls.<id>`, when the node has a call under way.
pub(super) fn call_state<'a>(state: &'a Value, id: &str) -> Option<&'a Map<String, Value>> {
    state.get("calls")?.get(id)?.as_object()
}

/// The state with `calls.<id>` set to `call`, or removed.
pub(super) fn with_call(state: &Value, id: &str, call: Option<Value>) -> Value {
    let mut state = state.as_object().cloned().unwrap_or_default();
    let calls = state
        .entry("calls")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = calls {
        match call {
            Some(c) => {
                m.insert(id.to_owned(), c);
            }
            None => {
                m.remove(id);
            }
        }
    }
    if state
        .get("calls")
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty)
    {
        state.remove("calls");
    }
    Value::Object(state)
}

/// The state a calling node starts with.
pub(super) fn begin(state: &Value, id: &str) -> Value {
    with_call(
        state,
        id,
        Some(json!({"phase": "send", "visit": crate::ids::mint_opaque(), "round": 0})),
    )
}

/// The change resolving an interrupt a call raised makes: the answer is stored for the
/// call to send back; the run stays on the node. `None` when the interrupt is not a
/// call's question.
pub(super) fn on_answer(run: &RunRecord, node_id: &str, resume: &Value) -> Option<RunPatch> {
    let call = call_state(&run.state, node_id)?;
    // A question asked in a call's own round is answered in the next round; one asked by
    // a remote MCP task goes back with `tasks/update`.
    let next = match call.get("phase").and_then(Value::as_str) {
        Some("asking") => "reply",
        Some("task-asking") => "task-reply",
        _ => return None,
    };
    // An A2A question is one clarification question, `answer`: its answer is what goes
    // back. (An MCP round keeps the whole value: it is keyed by the round's requests.)
    let reply = match resume.as_object() {
        Some(o) if !call.contains_key("requests") && o.len() == 1 => {
            o.get(ANSWER).unwrap_or(resume)
        }
        _ => resume,
    };
    let mut call = call.clone();
    call.insert("phase".into(), json!(next));
    call.insert("reply".into(), reply.clone());
    Some(RunPatch {
        status: Some(RunStatus::Running),
        state: Some(with_call(&run.state, node_id, Some(Value::Object(call)))),
        ..Default::default()
    })
}

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

/// Whether the error is worth trying again: the peer was not reached or was busy.
/// A template value as an A2A part (the `answer` part shapes).
fn a2a_part(part: &Value) -> Value {
    let mut out = Map::new();
    match part.get("kind").and_then(Value::as_str) {
        Some("text") => {
            let text = match part.get("text") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            out.insert("text".into(), json!(text));
        }
        Some("data") => {
            out.insert(
                "data".into(),
                part.get("data").cloned().unwrap_or(Value::Null),
            );
            out.insert("mediaType".into(), json!("application/json"));
        }
        Some("file") => {
            if let Some(url) = part.get("url") {
                out.insert("url".into(), url.clone());
            }
            if let Some(bytes) = part.get("bytes") {
                out.insert("raw".into(), bytes.clone());
            }
            for key in ["mediaType", "filename"] {
                if let Some(v) = part.get(key) {
                    out.insert(key.into(), v.clone());
                }
            }
        }
        _ => {}
    }
    Value::Object(out)
}

/// The id of the one question a remote A2A agent's INPUT_REQUIRED becomes; its answer
/// (`{"answer": ...}`) is what goes back to the remote task.
const ANSWER: &str = "answer";

/// The interrupt a remote INPUT_REQUIRED or AUTH_REQUIRED raises here, in the generated
/// shapes every client of this host decodes: INPUT_REQUIRED is a clarification with one
/// question (`answer`, the remote status message's text); AUTH_REQUIRED is a `credential`
/// interrupt whose `connectUrl`, `provider`, `scopes` and `reason` come from the remote
/// status message's data part. Which remote task asked stays in the run's call state, not
/// in the interrupt. `Err` says why the remote request cannot be relayed.
fn remote_question(
    task: &models::A2aTask,
    wire: &str,
    peer: &str,
) -> Result<(InterruptKind, Value), String> {
    let message = task.status.message.as_ref();
    let text = message.map(a2a::message_text).unwrap_or_default();
    let data_part = message.and_then(|m| a2a::first_data(&m.parts));
    if wire == "TASK_STATE_AUTH_REQUIRED" {
        let grant = data_part.unwrap_or(Value::Null);
        let member = |key: &str| grant.get(key).filter(|v| !v.is_null()).cloned();
        let reason = member("reason")
            .filter(|r| {
                matches!(
                    r.as_str(),
                    Some("missing" | "expired" | "insufficient_scope")
                )
            })
            .unwrap_or_else(|| json!("missing"));
        let data = json!({
            "provider": member("provider").unwrap_or_else(|| json!(peer)),
            "scopes": member("scopes").unwrap_or_else(|| json!([])),
            "reason": reason,
            "connectUrl": member("connectUrl").ok_or(
                "the remote agent needs a credential but names no connectUrl in its status message's data part"
            )?,
        });
        let typed: models::CredentialData = serde_json::from_value(data)
            .map_err(|e| format!("its credential request does not fit: {e}"))?;
        return Ok((InterruptKind::Credential, json!(typed)));
    }
    let question = if !text.trim().is_empty() {
        text
    } else if let Some(d) = data_part {
        d.to_string()
    } else {
        format!("The agent `{peer}` asks for input.")
    };
    let data = models::ClarificationData {
        questions: vec![models::ClarificationQuestion {
            id: ANSWER.parse().map_err(|e| format!("{e}"))?,
            question: question.parse().map_err(|e| format!("{e}"))?,
            schema: None,
        }],
        context_type: Some("remote-agent".into()),
    };
    Ok((InterruptKind::Clarification, json!(data)))
}

/// The clarification an MCP `input_required` round becomes: one question per input
/// request, keyed by the request's key, with its `requestedSchema`.
fn tool_questions(input_requests: &Map<String, Value>, tool: &str) -> Result<Value, String> {
    let questions = input_requests
        .iter()
        .map(|(key, request)| {
            let params = request.get("params");
            let message = params
                .and_then(|p| p.get("message"))
                .and_then(Value::as_str)
                .filter(|m| !m.trim().is_empty())
                .map(str::to_owned)
                .unwrap_or_else(|| format!("The tool `{tool}` asks for input."));
            Ok(models::ClarificationQuestion {
                id: key
                    .parse()
                    .map_err(|e| format!("request key `{key}`: {e}"))?,
                question: message.parse().map_err(|e| format!("{e}"))?,
                schema: params
                    .and_then(|p| p.get("requestedSchema"))
                    .and_then(Value::as_object)
                    .cloned(),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(json!(models::ClarificationData {
        questions,
        context_type: Some("remote-tool".into()),
    }))
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

fn context(run: &RunRecord) -> Value {
    super::executor::context(run)
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

    /// An `mcp-client` node: one request through the MCP client, its answer kept
    /// verbatim as `{result}`. Only a server that cannot be reached at all, an unknown
    /// peer, a refused negotiation or a JSON-RPC error fail the node.
    async fn call_mcp_client(
        &self,
        run: &RunRecord,
        id: &str,
        request: &ClientRequest,
    ) -> Result<CallStep, EngineError> {
        let peers = self.peers();
        let Some(peer) = peers.get(&request.peer, PeerKind::Mcp, &run.tenant) else {
            return self.fail(
                run,
                id,
                ErrorCode::NotFound,
                &format!("node `{id}`: no MCP server `{}` for this run", request.peer),
                vec![],
            );
        };
        let caller = Caller::for_run(&run.run_id, &run.state);
        let Some(offer) = peers.offer(Protocol::Mcp) else {
            return self.fail(
                run,
                id,
                ErrorCode::PeerCallFailed,
                "this host offers no MCP revision",
                vec![],
            );
        };
        if request.method == "serverHealth" {
            // Reachable is any answer to server/discover, an error included.
            let result = match mcp::discover(peers, &peer, &caller, offer.preferred()).await {
                Ok(discover) => json!({"state": "reachable", "discover": discover}),
                Err(CallError::Rpc { .. } | CallError::Status { .. } | CallError::Protocol(_)) => {
                    json!({"state": "reachable", "discover": null})
                }
                Err(_) => json!({"state": "unreachable", "discover": null}),
            };
            return self.done(run, id, json!({"result": result}), vec![]);
        }
        if !matches!(
            request.method.as_str(),
            "callTool" | "listTools" | "readResource"
        ) {
            return self.fail(
                run,
                id,
                ErrorCode::ValidationError,
                &format!(
                    "node `{id}`: method `{}` is not one of callTool, listTools, readResource, serverHealth",
                    request.method
                ),
                vec![],
            );
        }
        let uri = request.uri.as_deref().unwrap_or_default();
        if request.method == "readResource" && uri.is_empty() {
            return self.fail(
                run,
                id,
                ErrorCode::ValidationError,
                &format!("node `{id}`: readResource needs a `uri`"),
                vec![],
            );
        }
        let (session, decision) = match mcp::connect(peers, &peer, &caller, offer).await {
            Ok(c) => c,
            Err(e) => return self.call_failed(run, id, PeerKind::Mcp, e, vec![]),
        };
        let audit = vec![self.negotiation_event(run, id, &decision).await?];
        let Some(mut session) = session else {
            return self.fail(
                run,
                id,
                ErrorCode::InteropVersionUnsupported,
                &format!(
                    "node `{id}`: the MCP server speaks {}, below this host's floor {}",
                    decision.requested.as_deref().unwrap_or("no revision"),
                    decision.floor
                ),
                audit,
            );
        };
        // One request answered in place: nothing here follows a task.
        session.tasks = false;
        let answered = if request.method == "listTools" {
            mcp::list_tools(peers, &peer, &caller, &session, request.cursor.as_deref()).await
        } else if request.method == "readResource" {
            mcp::read_resource(peers, &peer, &caller, &session, uri).await
        } else {
            let tool = request.tool.clone().unwrap_or_default();
            match mcp::call_tool(
                peers,
                &peer,
                &caller,
                &session,
                &tool,
                &request.arguments,
                None,
            )
            .await
            {
                Ok(mcp::Called::Complete(result)) => Ok(result),
                Ok(mcp::Called::InputRequired {
                    input_requests,
                    request_state,
                }) => Ok(json!({
                    "resultType": "input_required",
                    "inputRequests": input_requests,
                    "requestState": request_state,
                })),
                Ok(mcp::Called::Task(task)) => Ok(json!({"resultType": "task", "taskId": task})),
                Err(e) => Err(e),
            }
        };
        mcp::close(peers, &peer, &caller, &session).await;
        match answered {
            Ok(result) => self.done(run, id, json!({"result": result}), audit),
            Err(e) => self.call_failed(run, id, PeerKind::Mcp, e, audit),
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
            .append_host_event(HostEventRecord {
                seq: 0,
                tenant: run.tenant.clone(),
                event_id: crate::ids::mint_event_id(),
                event_type: "negotiation.decided".into(),
                delivery: "durable".into(),
                workspace_id: None,
                payload: payload.clone(),
                timestamp_ms: now,
            })
            .await?;
        Ok(NewEvent {
            event_type: "negotiation.decided".into(),
            node_id: Some(id.to_owned()),
            payload,
        })
    }

    #[allow(clippy::too_many_arguments)]
    async fn call_a2a(
        &self,
        run: &RunRecord,
        id: &str,
        peer: &peers::Peer,
        caller: &Caller,
        call: &Map<String, Value>,
        parts: &[super::definition::AnswerPart],
        metadata: &Map<String, Value>,
    ) -> Result<CallStep, EngineError> {
        let peers = self.peers();
        let remote = match self
            .retrying(ATTEMPTS, || a2a::remote(peers, peer, caller))
            .await
        {
            Ok(r) => r,
            Err(e) => return self.call_failed(run, id, peer.kind, e, vec![]),
        };
        let visit = call.get("visit").and_then(Value::as_str).unwrap_or("0");
        let mut call = call.clone();
        match phase(&call) {
            "send" => {
                let Some(offer) = peers.offer(Protocol::A2a) else {
                    return self.fail(
                        run,
                        id,
                        ErrorCode::PeerCallFailed,
                        "this host offers no A2A version",
                        vec![],
                    );
                };
                let decision =
                    negotiation::decide(Protocol::A2a, Some(&remote.version), true, offer)
                        .with_peer(peers.peer_digest(peer));
                let audit = vec![self.negotiation_event(run, id, &decision).await?];
                if !decision.is_accepted() {
                    return self.fail(
                        run,
                        id,
                        ErrorCode::InteropVersionUnsupported,
                        &format!(
                            "node `{id}`: the agent speaks A2A {}, which this host does not accept (floor {})",
                            remote.version, decision.floor
                        ),
                        audit,
                    );
                }
                let ctx = context(run);
                let parts: Vec<Value> = parts
                    .iter()
                    .map(|p| {
                        let raw = serde_json::to_value(p).unwrap_or(Value::Null);
                        a2a_part(&template::render(&raw, &ctx))
                    })
                    .collect();
                let mut md = template::render(&Value::Object(metadata.clone()), &ctx)
                    .as_object()
                    .cloned()
                    .unwrap_or_default();
                let ow = md
                    .entry("openwop")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(ow) = ow {
                    ow.insert("traceparent".into(), json!(caller.traceparent));
                }
                let message = match a2a::message_of(json!({
                    "messageId": message_id(&run.run_id, id, visit, 0),
                    "role": "ROLE_USER",
                    "parts": parts,
                    "metadata": md,
                })) {
                    Ok(message) => message,
                    Err(e) => {
                        return self.call_failed(run, id, peer.kind, CallError::Protocol(e), audit);
                    }
                };
                match self
                    .retrying(ATTEMPTS, || {
                        a2a::send(peers, peer, caller, &remote, message.clone())
                    })
                    .await
                {
                    Ok(a2a::Sent::Message(reply)) => {
                        self.done(run, id, a2a::message_value(&reply), audit)
                    }
                    Ok(a2a::Sent::Task(task)) => {
                        call.insert("phase".into(), json!("follow"));
                        call.insert("taskId".into(), json!(task.id));
                        call.insert("contextId".into(), json!(task.context_id));
                        Ok(CallStep::Checkpoint(
                            RunPatch {
                                state: Some(with_call(&run.state, id, Some(Value::Object(call)))),
                                ..Default::default()
                            },
                            audit,
                        ))
                    }
                    Err(e) => self.call_failed(run, id, peer.kind, e, audit),
                }
            }
            "reply" => {
                let next_round = round(&call) + 1;
                let reply = call.get("reply").cloned().unwrap_or(Value::Null);
                let message = match a2a::message_of(json!({
                    "messageId": message_id(&run.run_id, id, visit, next_round),
                    "role": "ROLE_USER",
                    "taskId": call.get("taskId"),
                    "contextId": call.get("contextId"),
                    "parts": a2a::reply_parts(&reply),
                    "metadata": {"openwop": {"traceparent": caller.traceparent}},
                })) {
                    Ok(message) => message,
                    Err(e) => {
                        return self.call_failed(
                            run,
                            id,
                            peer.kind,
                            CallError::Protocol(e),
                            vec![],
                        );
                    }
                };
                match self
                    .retrying(ATTEMPTS, || {
                        a2a::send(peers, peer, caller, &remote, message.clone())
                    })
                    .await
                {
                    Ok(a2a::Sent::Message(reply)) => {
                        self.done(run, id, a2a::message_value(&reply), vec![])
                    }
                    Ok(a2a::Sent::Task(_)) => {
                        call.insert("phase".into(), json!("follow"));
                        call.insert("round".into(), json!(next_round));
                        call.remove("reply");
                        Ok(CallStep::Checkpoint(
                            RunPatch {
                                state: Some(with_call(&run.state, id, Some(Value::Object(call)))),
                                ..Default::default()
                            },
                            vec![],
                        ))
                    }
                    Err(e) => self.call_failed(run, id, peer.kind, e, vec![]),
                }
            }
            "follow" => self.follow_a2a(run, id, peer, caller, &remote, call).await,
            // `asking`: the run is suspended; nothing to do until the answer comes.
            _ => Ok(CallStep::Stopped),
        }
    }

    /// Polls the remote task until it ends or asks, watching this run for a cancel.
    async fn follow_a2a(
        &self,
        run: &RunRecord,
        id: &str,
        peer: &peers::Peer,
        caller: &Caller,
        remote: &a2a::Remote,
        mut call: Map<String, Value>,
    ) -> Result<CallStep, EngineError> {
        let peers = self.peers();
        let task_id = call
            .get("taskId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let mut wakes = self.store().subscribe(&[Topic::Run(run.run_id.clone())]);
        let mut shutdown = self.shutdown_signal();
        let mut delay = Duration::from_millis(100);
        let mut warned = false;
        loop {
            let task = match self
                .retrying(ATTEMPTS, || {
                    a2a::get_task(peers, peer, caller, remote, &task_id)
                })
                .await
            {
                Ok(t) => t,
                Err(e) => return self.call_failed(run, id, peer.kind, e, vec![]),
            };
            let wire = a2a::state_of(&task).to_owned();
            // The generated reverse table decides what the remote state means here.
            match dispatch::a2a_task_state_reverse(&wire) {
                Some(Reverse::Completed) => {
                    return self.done(run, id, a2a::task_value(&task), vec![]);
                }
                Some(Reverse::Failed) if wire == "TASK_STATE_REJECTED" => {
                    let why = task
                        .status
                        .message
                        .as_ref()
                        .map(a2a::message_text)
                        .filter(|t| !t.is_empty())
                        .unwrap_or_else(|| "the remote agent rejected the task".into());
                    return self.fail(
                        run,
                        id,
                        ErrorCode::RejectedByRemote,
                        &format!("node `{id}`: {why}"),
                        vec![],
                    );
                }
                Some(Reverse::WaitingInput) => {
                    call.insert("phase".into(), json!("asking"));
                    return match remote_question(&task, &wire, &peer.id) {
                        Ok((kind, data)) => self.suspend(run, id, kind, data, call, vec![]),
                        Err(why) => self.fail(
                            run,
                            id,
                            ErrorCode::PeerCallFailed,
                            &format!("node `{id}`: the remote request cannot be relayed: {why}"),
                            vec![],
                        ),
                    };
                }
                Some(Reverse::Pending | Reverse::Running) if wire != "TASK_STATE_UNSPECIFIED" => {}
                Some(Reverse::Pending | Reverse::Running) | None => {
                    if !warned {
                        tracing::warn!(run_id = %run.run_id, node = id, state = %wire, "the remote task's state is unspecified or unknown; reading it as pending");
                        warned = true;
                    }
                }
                Some(other) => {
                    return self.fail(
                        run,
                        id,
                        ErrorCode::PeerCallFailed,
                        &format!(
                            "node `{id}`: the remote task ended {wire} ({})",
                            other.as_str()
                        ),
                        vec![],
                    );
                }
            }
            match self
                .pause_poll(&run.run_id, delay, &mut wakes, &mut shutdown)
                .await?
            {
                Pause::Again => {}
                Pause::Stopping => return Ok(CallStep::Stopped),
                Pause::NotRunning => {
                    // Cancelled here: cancel there too.
                    if let Err(e) = a2a::cancel_task(peers, peer, caller, remote, &task_id).await {
                        tracing::warn!(run_id = %run.run_id, error = %e, "cannot cancel the remote task");
                    }
                    return Ok(CallStep::Stopped);
                }
            }
            delay = (delay * 2).min(Duration::from_secs(2));
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn call_mcp(
        &self,
        run: &RunRecord,
        id: &str,
        peer: &peers::Peer,
        caller: &Caller,
        call: &Map<String, Value>,
        tool: &str,
        arguments: Option<&Value>,
        on_tool_error: Option<super::definition::OnToolError>,
    ) -> Result<CallStep, EngineError> {
        let peers = self.peers();
        let Some(offer) = peers.offer(Protocol::Mcp) else {
            return self.fail(
                run,
                id,
                ErrorCode::PeerCallFailed,
                "this host offers no MCP revision",
                vec![],
            );
        };
        let (session, decision) = match self
            .retrying(ATTEMPTS, || mcp::connect(peers, peer, caller, offer))
            .await
        {
            Ok(c) => c,
            Err(e) => return self.call_failed(run, id, peer.kind, e, vec![]),
        };
        // The first round's negotiation is the one audited; later rounds re-decide the same.
        let audit = if phase(call) == "send" {
            vec![self.negotiation_event(run, id, &decision).await?]
        } else {
            vec![]
        };
        let Some(session) = session else {
            return self.fail(
                run,
                id,
                ErrorCode::InteropVersionUnsupported,
                &format!(
                    "node `{id}`: the MCP server speaks {}, below this host's floor {}",
                    decision.requested.as_deref().unwrap_or("no revision"),
                    decision.floor
                ),
                audit,
            );
        };
        let ctx = context(run);
        let arguments = arguments
            .map(|a| template::render(a, &ctx))
            .unwrap_or_else(|| json!({}));
        let answered = match phase(call) {
            "reply" => {
                let requests = call
                    .get("requests")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                let reply = call.get("reply").cloned().unwrap_or(Value::Null);
                Some((
                    mcp::input_responses(&requests, &reply),
                    call.get("requestState")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                ))
            }
            "send" => None,
            "task" | "task-reply" => {
                let task_id = call
                    .get("taskId")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                return self
                    .follow_mcp_task(
                        run,
                        id,
                        peer,
                        caller,
                        call.clone(),
                        &session,
                        &task_id,
                        tool,
                        on_tool_error,
                    )
                    .await;
            }
            _ => return Ok(CallStep::Stopped),
        };
        // A tool call may have effects: it is sent once, never retried blindly. A cancel
        // of this run meanwhile drops the request, which closes its stream: MCP's cancel.
        let mut wakes = self.store().subscribe(&[Topic::Run(run.run_id.clone())]);
        let called = {
            // In a block of its own: a cancelled request is dropped (its stream closed)
            // before the session is closed below.
            let request = mcp::call_tool(peers, peer, caller, &session, tool, &arguments, answered);
            tokio::pin!(request);
            loop {
                tokio::select! {
                    r = &mut request => break Some(r),
                    _ = wakes.recv() => {
                        if !self.still_running(&run.run_id).await? {
                            break None;
                        }
                    }
                }
            }
        };
        // A legacy session serves this one call: it is closed whatever the call came to
        // (a later round or a retry opens its own).
        mcp::close(peers, peer, caller, &session).await;
        let Some(called) = called else {
            return Ok(CallStep::Stopped);
        };
        match called {
            Ok(mcp::Called::Complete(result)) => {
                self.tool_result(run, id, tool, &result, on_tool_error, audit)
            }
            Ok(mcp::Called::Task(task_id)) => {
                // The task's id is stored before anything else: a restart follows it.
                let mut call = call.clone();
                call.insert("phase".into(), json!("task"));
                call.insert("taskId".into(), json!(task_id));
                call.remove("reply");
                call.remove("requests");
                call.remove("requestState");
                Ok(CallStep::Checkpoint(
                    RunPatch {
                        state: Some(with_call(&run.state, id, Some(Value::Object(call)))),
                        ..Default::default()
                    },
                    audit,
                ))
            }
            Ok(mcp::Called::InputRequired {
                input_requests,
                request_state,
            }) => {
                let mut call = call.clone();
                match request_state {
                    Some(s) => call.insert("requestState".into(), json!(s)),
                    None => call.remove("requestState"),
                };
                self.relay_input(run, id, tool, call, input_requests, "asking", audit)
            }
            Err(e) => self.call_failed(run, id, PeerKind::Mcp, e, audit),
        }
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

    /// Relays a tool's input requests (an input round, or a task's `inputRequests`) to
    /// whoever waits on the run: one clarification, a question per request, asked in
    /// `phase` so the answer goes back the same way. More rounds than
    /// `mcp.mrtr.maxRounds`, a request other than `elicitation/create`, or one that
    /// cannot be put as a question fail the node.
    #[allow(clippy::too_many_arguments)]
    fn relay_input(
        &self,
        run: &RunRecord,
        id: &str,
        tool: &str,
        mut call: Map<String, Value>,
        requests: Map<String, Value>,
        phase: &str,
        audit: Vec<NewEvent>,
    ) -> Result<CallStep, EngineError> {
        let next_round = round(&call) + 1;
        let max = self.peers().max_rounds();
        if next_round > u64::from(max) {
            return self.fail(
                run,
                id,
                ErrorCode::McpMrtrRoundsExceeded,
                &format!("node `{id}`: the server asked for input more than {max} times"),
                audit,
            );
        }
        if let Some((key, other)) = requests
            .iter()
            .find(|(_, r)| r.get("method").and_then(Value::as_str) != Some("elicitation/create"))
        {
            let method = other.get("method").and_then(Value::as_str).unwrap_or("?");
            return self.fail(
                run,
                id,
                ErrorCode::McpError,
                &format!(
                    "node `{id}`: the server asks `{key}` by {method}, which this host does not answer"
                ),
                audit,
            );
        }
        let data = match tool_questions(&requests, tool) {
            Ok(d) => d,
            Err(why) => {
                return self.fail(
                    run,
                    id,
                    ErrorCode::McpError,
                    &format!("node `{id}`: the tool's input request cannot be relayed: {why}"),
                    audit,
                );
            }
        };
        call.insert("phase".into(), json!(phase));
        call.insert("round".into(), json!(next_round));
        call.insert("requests".into(), Value::Object(requests));
        call.remove("reply");
        self.suspend(run, id, InterruptKind::Clarification, data, call, audit)
    }

    /// The node's end from a `CallToolResult`: its value, or `mcp_error` when the tool
    /// says `isError` (kept as a value when the node says `onToolError: value`).
    fn tool_result(
        &self,
        run: &RunRecord,
        id: &str,
        tool: &str,
        result: &Value,
        on_tool_error: Option<super::definition::OnToolError>,
        audit: Vec<NewEvent>,
    ) -> Result<CallStep, EngineError> {
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            let text = mcp::result_text(result);
            if on_tool_error == Some(super::definition::OnToolError::Value) {
                return self.done(run, id, json!({"isError": true, "text": text}), audit);
            }
            let text = if text.is_empty() {
                "the tool reported an error".to_owned()
            } else {
                text
            };
            return self.fail(
                run,
                id,
                ErrorCode::McpError,
                &format!("node `{id}`: tool `{tool}`: {text}"),
                audit,
            );
        }
        self.done(run, id, mcp::result_value(result), audit)
    }

    /// Follows a tool call the server made a task (the tasks extension): `tasks/get`
    /// until it ends, `pollIntervalMs` apart (within 100 ms and 5 s); its input requests
    /// suspend the run like an input round and the answer goes back with `tasks/update`;
    /// a cancel of the run is `tasks/cancel` there. The task id lives in the run, so a
    /// restarted host follows the same task and never calls the tool again.
    #[allow(clippy::too_many_arguments)]
    async fn follow_mcp_task(
        &self,
        run: &RunRecord,
        id: &str,
        peer: &peers::Peer,
        caller: &Caller,
        mut call: Map<String, Value>,
        session: &mcp::Session,
        task_id: &str,
        tool: &str,
        on_tool_error: Option<super::definition::OnToolError>,
    ) -> Result<CallStep, EngineError> {
        let peers = self.peers();
        if !session.tasks {
            return self.fail(
                run,
                id,
                ErrorCode::PeerCallFailed,
                &format!("node `{id}`: the MCP server no longer offers the tasks extension its task `{task_id}` needs"),
                vec![],
            );
        }
        if phase(&call) == "task-reply" {
            let requests = call
                .get("requests")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let reply = call.get("reply").cloned().unwrap_or(Value::Null);
            let responses = mcp::input_responses(&requests, &reply);
            // Answered keys are ignored by the server, so a re-sent update is harmless.
            if let Err(e) = self
                .retrying(ATTEMPTS, || {
                    mcp::task_update(peers, peer, caller, session, task_id, responses.clone())
                })
                .await
            {
                return self.call_failed(run, id, peer.kind, e, vec![]);
            }
            call.insert("phase".into(), json!("task"));
            call.remove("reply");
            call.remove("requests");
        }
        let mut wakes = self.store().subscribe(&[Topic::Run(run.run_id.clone())]);
        let mut shutdown = self.shutdown_signal();
        loop {
            let task = match self
                .retrying(ATTEMPTS, || {
                    mcp::task_get(peers, peer, caller, session, task_id)
                })
                .await
            {
                Ok(t) => t,
                Err(e) => return self.call_failed(run, id, peer.kind, e, vec![]),
            };
            match task.get("status").and_then(Value::as_str).unwrap_or("") {
                "completed" => {
                    let result = task.get("result").cloned().unwrap_or(Value::Null);
                    return self.tool_result(run, id, tool, &result, on_tool_error, vec![]);
                }
                "failed" => {
                    let why = task
                        .pointer("/error/message")
                        .and_then(Value::as_str)
                        .unwrap_or("the task failed");
                    return self.fail(
                        run,
                        id,
                        ErrorCode::McpError,
                        &format!("node `{id}`: tool `{tool}`: {why}"),
                        vec![],
                    );
                }
                "cancelled" => {
                    return self.fail(
                        run,
                        id,
                        ErrorCode::PeerCallFailed,
                        &format!("node `{id}`: the MCP server cancelled the task of tool `{tool}`"),
                        vec![],
                    );
                }
                "input_required" => {
                    let requests = task
                        .get("inputRequests")
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default();
                    return self.relay_input(run, id, tool, call, requests, "task-asking", vec![]);
                }
                _ => {}
            }
            let every = task
                .get("pollIntervalMs")
                .and_then(Value::as_u64)
                .unwrap_or(500)
                .clamp(100, 5_000);
            let every = Duration::from_millis(every);
            match self
                .pause_poll(&run.run_id, every, &mut wakes, &mut shutdown)
                .await?
            {
                Pause::Again => {}
                Pause::Stopping => return Ok(CallStep::Stopped),
                Pause::NotRunning => {
                    // Cancelled here: cancel there too.
                    if let Err(e) = mcp::task_cancel(peers, peer, caller, session, task_id).await {
                        tracing::warn!(run_id = %run.run_id, error = %e, "cannot cancel the remote MCP task");
                    }
                    return Ok(CallStep::Stopped);
                }
            }
        }
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
