//! The `mcp` node (a tool call with input rounds and, when the server offers it, the
//! tasks extension) and the `mcp-client` node (one request, its answer kept verbatim).

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{ATTEMPTS, ClientRequest, Pause, phase, round};
use crate::engine::call_state::{CallStep, with_call};
use crate::engine::definition::{InterruptKind, OnToolError};
use crate::engine::executor::{Engine, EngineError, context};
use crate::engine::template;
use crate::generated::errors::ErrorCode;
use crate::generated::models;
use crate::negotiation::Protocol;
use crate::peers::mcp_wire::{CallToolResult, TaskStatus, Verbatim};
use crate::peers::{self, CallError, Caller, PeerKind, mcp};
use crate::store::{NewEvent, RunPatch, RunRecord, Topic};

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

impl Engine {
    /// An `mcp-client` node: one request through the MCP client, its answer kept
    /// verbatim as `{result}`. Only a server that cannot be reached at all, an unknown
    /// peer, a refused negotiation or a JSON-RPC error fail the node.
    pub(super) async fn call_mcp_client(
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
        // The answer as sent is the node's value (a workflow value, open).
        let answered = if request.method == "listTools" {
            mcp::list_tools(peers, &peer, &caller, &session, request.cursor.as_deref())
                .await
                .map(|r| r.0)
        } else if request.method == "readResource" {
            mcp::read_resource(peers, &peer, &caller, &session, uri)
                .await
                .map(|r| r.0)
        } else {
            let tool = request.tool.clone().unwrap_or_default();
            match mcp::call_tool::<Verbatim>(
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
                Ok(mcp::Called::Complete(result)) => Ok(result.0),
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

    #[allow(clippy::too_many_arguments)]
    pub(super) async fn call_mcp(
        &self,
        run: &RunRecord,
        id: &str,
        peer: &peers::Peer,
        caller: &Caller,
        call: &Map<String, Value>,
        tool: &str,
        arguments: Option<&Value>,
        on_tool_error: Option<OnToolError>,
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
                Some(mcp::Round {
                    responses: mcp::input_responses(&requests, &reply),
                    request_state: call
                        .get("requestState")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                })
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
            let request = mcp::call_tool::<CallToolResult>(
                peers, peer, caller, &session, tool, &arguments, answered,
            );
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
        result: &CallToolResult,
        on_tool_error: Option<OnToolError>,
        audit: Vec<NewEvent>,
    ) -> Result<CallStep, EngineError> {
        if result.is_error == Some(true) {
            let text = mcp::result_text(result);
            if on_tool_error == Some(OnToolError::Value) {
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
        on_tool_error: Option<OnToolError>,
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
            match task.task.status {
                TaskStatus::Completed => {
                    // A completed task without its result reads as a result with nothing.
                    let result = task
                        .result
                        .unwrap_or_else(|| CallToolResult::success(vec![]));
                    return self.tool_result(run, id, tool, &result, on_tool_error, vec![]);
                }
                TaskStatus::Failed => {
                    let why = task
                        .error
                        .as_ref()
                        .map_or("the task failed", |e| e.message.as_ref());
                    return self.fail(
                        run,
                        id,
                        ErrorCode::McpError,
                        &format!("node `{id}`: tool `{tool}`: {why}"),
                        vec![],
                    );
                }
                TaskStatus::Cancelled => {
                    return self.fail(
                        run,
                        id,
                        ErrorCode::PeerCallFailed,
                        &format!("node `{id}`: the MCP server cancelled the task of tool `{tool}`"),
                        vec![],
                    );
                }
                TaskStatus::InputRequired => {
                    let requests = task.input_requests.unwrap_or_default();
                    return self.relay_input(run, id, tool, call, requests, "task-asking", vec![]);
                }
                _ => {}
            }
            let every = task.task.poll_interval_ms.unwrap_or(500).clamp(100, 5_000);
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
}
