//! The MCP methods as projections of the run operations. Transport-independent: the
//! HTTP mount and `openwop mcp-stdio` both call [`McpState::dispatch`] with an
//! authenticated Subject and the request's negotiated context.

use serde_json::{Map, Value, json};

use super::gate::{Declared, TASKS_EXTENSION};
use super::request_state::{Claims, Refusal, request_digest};
use super::rpc::{INTERNAL_ERROR, METHOD_NOT_FOUND, MISSING_CAPABILITY, Message, RpcError};
use super::{McpState, cancel::RunGuard};
use crate::generated::dispatch::{MCP_METHODS, McpMethod, RunStatus, mcp_task_status};
use crate::generated::errors::ErrorCode;
use crate::identity::Subject;
use crate::ids::BoundId;
use crate::ops::{OpError, RunRecord, Transport};
use crate::status::Lifecycle;

/// The reason a run owned by an abandoned request is cancelled with.
pub const REQUEST_CANCELLED: &str = "mcp-request-cancelled";

/// How long a list result may be cached.
const LIST_TTL_MS: u64 = 60_000;

/// How long a requestState stays usable.
const STATE_TTL_MS: i64 = 10 * 60 * 1000;
/// What a task's poller is told to wait between polls.
const POLL_INTERVAL_MS: u64 = 500;

/// The era a request is served in.
#[derive(Debug, Clone, PartialEq)]
pub enum Era {
    /// 2026-07-28 and later: self-describing requests.
    Modern(Declared),
    /// An initialize-era session of this revision.
    Legacy(String),
}

/// Who asks, and in which era.
pub struct Ctx {
    pub subject: Subject,
    pub era: Era,
}

impl Ctx {
    fn declared(&self) -> Option<&Declared> {
        match &self.era {
            Era::Modern(d) => Some(d),
            Era::Legacy(_) => None,
        }
    }

    fn principal(&self) -> String {
        format!("{}#{}", self.subject.issuer, self.subject.subject_id)
    }
}

fn internal(e: impl std::fmt::Display) -> RpcError {
    tracing::error!(error = %e, "mcp request failed");
    RpcError::internal()
}

/// The one answer for a task the caller cannot read, whether or not it exists.
fn unknown_task(task_id: &str) -> RpcError {
    RpcError::invalid_params(format!("no task `{task_id}`"))
}

fn refused_state(why: Refusal) -> RpcError {
    tracing::info!(?why, "requestState refused");
    RpcError::invalid_params("requestState is not valid for this request")
}

/// Whether a method has a row in the map (or is the legacy era's `ping`).
pub fn is_routed(method: &str) -> bool {
    method == "ping" || McpMethod::from_method(method).is_some()
}

impl McpState {
    /// Answers one request. `Ok(None)` for a notification (nothing is sent back).
    pub async fn dispatch(&self, ctx: &Ctx, message: &Message) -> Result<Option<Value>, RpcError> {
        // `ping` left with 2026-07-28; the initialize era still has it.
        if message.method == "ping" && matches!(ctx.era, Era::Legacy(_)) {
            return Ok((!message.is_notification()).then(|| json!({})));
        }
        let Some(method) = McpMethod::from_method(&message.method) else {
            if message.is_notification() {
                return Ok(None);
            }
            return Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("no method `{}`", message.method),
            ));
        };
        let row = method.row();
        // The map's rule for every row: one whose `requires` is not advertised is refused.
        if let Some(missing) = row
            .requires
            .iter()
            .find(|r| !self.app.discovery.advertises(r))
        {
            return Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!(
                    "`{}` needs {missing}, which this host does not advertise",
                    message.method
                ),
            ));
        }
        if let Some(extension) = row.extension {
            if !self.served_extensions().contains(&extension) {
                return Err(RpcError::new(
                    METHOD_NOT_FOUND,
                    format!("no method `{}`", message.method),
                ));
            }
            // Never assumed from an earlier request: this request must declare it.
            if !ctx.declared().is_some_and(|d| d.has_extension(extension)) {
                return Err(RpcError::new(
                    MISSING_CAPABILITY,
                    format!(
                        "`{}` needs the {extension} extension in this request's clientCapabilities",
                        message.method
                    ),
                )
                .with_data(json!({"requiredCapabilities": {"extensions": {extension: {}}}})));
            }
        }
        let params = &message.params;
        let result = match method {
            McpMethod::ServerDiscover => self.discover(),
            McpMethod::ToolsList => self.list_tools(&ctx.subject),
            McpMethod::ToolsCall => self.call_tool(ctx, params).await?,
            McpMethod::TasksGet => self.get_task(ctx, params).await?,
            McpMethod::TasksUpdate => self.update_task(ctx, params).await?,
            McpMethod::TasksCancel => self.cancel_task(ctx, params).await?,
            // Notifications: over HTTP the cancel is the closed stream, on stdio the
            // transport handles it before dispatch; nothing is answered either way.
            McpMethod::NotificationsCancelled | McpMethod::NotificationsTasks => return Ok(None),
            // Answered by the transport, which owns what they open: initialize the
            // session, subscriptions/listen the stream (served on streamable HTTP only).
            McpMethod::Initialize | McpMethod::SubscriptionsListen => {
                return Err(RpcError::new(
                    METHOD_NOT_FOUND,
                    format!("`{}` is not served here", message.method),
                ));
            }
        };
        if message.is_notification() {
            return Ok(None);
        }
        Ok(Some(self.stamp(ctx, result)))
    }

    /// Modern results name the server; legacy results stay as that revision defines them.
    fn stamp(&self, ctx: &Ctx, mut result: Value) -> Value {
        if let (Era::Modern(_), Some(obj)) = (&ctx.era, result.as_object_mut()) {
            let meta = obj.entry("_meta").or_insert_with(|| json!({}));
            meta["io.modelcontextprotocol/serverInfo"] = self.server_info();
        }
        result
    }

    pub fn server_info(&self) -> Value {
        json!({"name": "openwop", "version": env!("CARGO_PKG_VERSION")})
    }

    /// The extensions this mount serves: those of the map's method rows we implement.
    pub fn served_extensions(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = MCP_METHODS.iter().filter_map(|m| m.extension).collect();
        out.sort_unstable();
        out.dedup();
        out.retain(|e| *e == TASKS_EXTENSION && self.config.tasks);
        out
    }

    pub fn capabilities(&self) -> Value {
        let extensions: Map<String, Value> = self
            .served_extensions()
            .into_iter()
            .map(|e| (e.to_owned(), json!({})))
            .collect();
        json!({"tools": {"listChanged": false}, "extensions": extensions})
    }

    fn discover(&self) -> Value {
        json!({
            "resultType": "complete",
            "supportedVersions": self.facet()["revisions"],
            "capabilities": self.capabilities(),
            "ttlMs": LIST_TTL_MS,
            "cacheScope": "public",
        })
    }

    /// One tool per workflow, sorted by name. The registry is the same for every tenant
    /// today, but the list is still `private`: it is the caller's tenant's registry.
    /// The workflows this caller may run (the same rule `createRun` and the agents
    /// inventory apply), so a listed tool is always one the caller can call.
    fn list_tools(&self, subject: &Subject) -> Value {
        let tools: Vec<Value> = self
            .app
            .ops
            .list_workflows(subject)
            .iter()
            .map(|w| {
                let d = &w.definition;
                let mut schema = d.input_schema.clone();
                // A tool's inputSchema is an object schema; runs take object inputs anyway.
                schema.entry("type").or_insert_with(|| json!("object"));
                let mut tool = json!({"name": d.id, "inputSchema": schema});
                if let Some(name) = &d.name {
                    tool["title"] = json!(name);
                }
                if let Some(description) = &d.description {
                    tool["description"] = json!(description);
                }
                tool
            })
            .collect();
        json!({"resultType": "complete", "tools": tools, "ttlMs": LIST_TTL_MS, "cacheScope": "private"})
    }

    fn max_rounds(&self) -> u32 {
        self.facet()["mrtr"]["maxRounds"]
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(1)
    }

    async fn call_tool(&self, ctx: &Ctx, params: &Value) -> Result<Value, RpcError> {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::invalid_params("`name` must be a string"))?;
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => json!({}),
            Some(a @ Value::Object(_)) => a.clone(),
            Some(_) => return Err(RpcError::invalid_params("`arguments` must be an object")),
        };
        if let Some(state) = params.get("requestState") {
            let token = state
                .as_str()
                .ok_or_else(|| RpcError::invalid_params("`requestState` must be a string"))?;
            return self
                .continue_call(ctx, name, &arguments, token, params.get("inputResponses"))
                .await;
        }
        let workflow = self.app.ops.get_workflow(&ctx.subject, name)?;
        // Arguments are checked before anything is created; create_run checks again.
        let problems = workflow.check_inputs(&arguments);
        if !problems.is_empty() {
            return Err(RpcError::invalid_params(format!("the arguments do not match the input schema of `{name}`"))
                .with_data(json!({"errors": problems.iter().map(|p| json!({"pointer": p.pointer, "message": p.message})).collect::<Vec<_>>()})));
        }
        let request = crate::ops::run_request(name, arguments.clone())?;
        let run = self
            .app
            .ops
            .create_run(&ctx.subject, request, Transport::Mcp, None)
            .await?
            .run;
        self.answer_run(ctx, name, &arguments, run, 0).await
    }

    /// Waits for the run while the request owns it, then projects it. `round` is the
    /// number of input_required rounds already answered for this logical call.
    async fn answer_run(
        &self,
        ctx: &Ctx,
        tool: &str,
        arguments: &Value,
        run: RunRecord,
        round: u32,
    ) -> Result<Value, RpcError> {
        let tasks = ctx
            .declared()
            .is_some_and(|d| d.has_extension(TASKS_EXTENSION))
            && self.served_extensions().contains(&TASKS_EXTENSION);
        // With tasks the client polls, so the answer is not held back.
        let wait = if tasks {
            self.config.task_answer_within
        } else {
            self.config.call_timeout
        };
        let guard = RunGuard::arm(self.app.ops.clone(), ctx.subject.clone(), &run.run_id);
        let run = self
            .app
            .ops
            .settle(&ctx.subject, run, |s| s.asks_for_input(), wait)
            .await?;
        let status = run.status;
        let answer = if status.is_terminal() {
            self.call_result(&run).await?
        } else if tasks {
            self.task_view(&run, false).await?
        } else if status.asks_for_input() {
            self.input_required(ctx, tool, arguments, &run, round + 1)
                .await?
        } else {
            // Still running (or waiting on something outside MCP) when the call gives up:
            // the run goes on and the caller learns its id.
            json!({
                "resultType": "complete",
                "content": [{"type": "text", "text": format!("run {} is still {}; it was not finished within the call", run.run_id, run.status.as_str())}],
                "structuredContent": {"runId": run.run_id, "status": run.status.as_str()},
                "isError": true,
            })
        };
        // The answer exists; from here on the transport decides when it was sent.
        guard.hand_over();
        Ok(answer)
    }

    /// `CallToolResult` of a finished run: completed is a success, failed and cancelled
    /// are tool errors the model can read.
    async fn call_result(&self, run: &RunRecord) -> Result<Value, RpcError> {
        let status = run.status;
        let result = match status {
            RunStatus::Completed => {
                let outputs = run.outputs.clone().unwrap_or_else(|| json!({}));
                // The engine wraps an output that is not an object as {"value": …}; a
                // text output is shown as the text itself, anything else as its JSON.
                let text = match outputs
                    .as_object()
                    .filter(|o| o.len() == 1)
                    .and_then(|o| o.get("value"))
                {
                    Some(Value::String(t)) => t.clone(),
                    _ => outputs.to_string(),
                };
                json!({
                    "resultType": "complete",
                    "content": [{"type": "text", "text": text}],
                    "structuredContent": outputs,
                    "isError": false,
                })
            }
            _ => {
                let why = run
                    .error
                    .as_ref()
                    .and_then(|e| e.get("message").and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_else(|| format!("the run ended {}", run.status.as_str()));
                json!({
                    "resultType": "complete",
                    "content": [{"type": "text", "text": why}],
                    "structuredContent": {"runId": run.run_id, "status": run.status.as_str(), "error": run.error},
                    "isError": true,
                })
            }
        };
        Ok(result)
    }

    /// The elicitation that answers an interrupt, or `None` when the interrupt cannot be
    /// answered through a form (credentials and external waits).
    fn elicitation(kind: &str, data: &Value) -> Option<Value> {
        let (message, properties, required) = match kind {
            "approval" => {
                let actions = data
                    .get("actions")
                    .cloned()
                    .unwrap_or_else(|| json!(["accept", "reject"]));
                (
                    data.get("title")
                        .and_then(Value::as_str)
                        .unwrap_or("Approve?")
                        .to_owned(),
                    json!({"decision": {"type": "string", "enum": actions}}),
                    json!(["decision"]),
                )
            }
            "clarification" => {
                let questions = data.get("questions").and_then(Value::as_array)?;
                let mut props = Map::new();
                let mut text = Vec::new();
                for q in questions {
                    let id = q.get("id").and_then(Value::as_str)?;
                    let question = q.get("question").and_then(Value::as_str).unwrap_or(id);
                    props.insert(
                        id.to_owned(),
                        json!({"type": "string", "description": question}),
                    );
                    text.push(question.to_owned());
                }
                let required: Vec<&String> = props.keys().collect();
                let required = json!(required);
                (text.join("\n"), Value::Object(props), required)
            }
            _ => return None,
        };
        Some(json!({
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": message,
                "requestedSchema": {"type": "object", "properties": properties, "required": required},
            }
        }))
    }

    async fn input_required(
        &self,
        ctx: &Ctx,
        tool: &str,
        arguments: &Value,
        run: &RunRecord,
        round: u32,
    ) -> Result<Value, RpcError> {
        let Some(open) = self.app.ops.open_interrupt(run).await.map_err(internal)? else {
            return self.call_result(run).await;
        };
        let Some(request) = Self::elicitation(&open.kind, &open.data) else {
            return Ok(json!({
                "resultType": "complete",
                "content": [{"type": "text", "text": format!("run {} waits on a {} interrupt, which cannot be answered here", run.run_id, open.kind)}],
                "structuredContent": {"runId": run.run_id, "status": run.status.as_str()},
                "isError": true,
            }));
        };
        let Some(declared) = ctx.declared() else {
            // The initialize era has no input_required; the run stays suspended.
            return Ok(json!({
                "content": [{"type": "text", "text": format!("run {} waits for input at interrupt {}", run.run_id, open.interrupt_id)}],
                "structuredContent": {"runId": run.run_id, "status": run.status.as_str(), "interruptId": open.interrupt_id},
                "isError": true,
            }));
        };
        if declared.capabilities.get("elicitation").is_none() {
            return Err(RpcError::new(
                MISSING_CAPABILITY,
                "this tool asks for input: declare the elicitation capability",
            )
            .with_data(json!({"requiredCapabilities": {"elicitation": {}}})));
        }
        if round > self.max_rounds() {
            return Err(RpcError::invalid_params(format!(
                "more than {} input rounds for one call",
                self.max_rounds()
            ))
            .with_data(
                json!({"reason": ErrorCode::McpMrtrRoundsExceeded.as_str(), "runId": run.run_id}),
            ));
        }
        let claims = Claims {
            principal: ctx.principal(),
            exp: crate::clock::now_ms() + STATE_TTL_MS,
            digest: request_digest(tool, arguments),
            run: run.run_id.clone(),
            interrupt: open.interrupt_id.clone(),
            round,
            nonce: crate::ids::mint_opaque(),
        };
        Ok(json!({
            "resultType": "input_required",
            "inputRequests": {open.interrupt_id: request},
            "requestState": self.codec.seal(&claims),
        }))
    }

    /// The retry of an input_required round: checks the state, resolves the interrupt
    /// with the answer, and waits for the run again.
    async fn continue_call(
        &self,
        ctx: &Ctx,
        tool: &str,
        arguments: &Value,
        token: &str,
        responses: Option<&Value>,
    ) -> Result<Value, RpcError> {
        let now = crate::clock::now_ms();
        let claims = self
            .codec
            .open(
                token,
                &ctx.principal(),
                &request_digest(tool, arguments),
                now,
            )
            .map_err(refused_state)?;
        // Single use is recorded in the interop store, so a state spent on one replica is
        // spent on all of them; the record outlives the state's own expiry.
        let fresh = self
            .app
            .ops
            .spend_request_state(&claims.nonce, claims.exp)
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "cannot record a spent requestState");
                RpcError::internal()
            })?;
        if !fresh {
            return Err(refused_state(Refusal::Spent));
        }
        let id =
            BoundId::parse_bound(&claims.run).map_err(|_| refused_state(Refusal::Malformed))?;
        let run = self
            .app
            .ops
            .get_run(&ctx.subject, &id)
            .await
            .map_err(|_| refused_state(Refusal::OtherRequest))?;
        let answer = responses.and_then(|r| r.get(&claims.interrupt));
        let Some(answer) = answer else {
            // Not answered: ask again, in the same round.
            return self
                .input_required(ctx, tool, arguments, &run, claims.round)
                .await;
        };
        let run = self
            .apply_answer(ctx, &run, &claims.interrupt, answer)
            .await?;
        self.answer_run(ctx, tool, arguments, run, claims.round)
            .await
    }

    /// Applies one elicitation result to the run's open interrupt `interrupt_id`.
    async fn apply_answer(
        &self,
        ctx: &Ctx,
        run: &RunRecord,
        interrupt_id: &str,
        answer: &Value,
    ) -> Result<RunRecord, RpcError> {
        let open = self.app.ops.open_interrupt(run).await.map_err(internal)?;
        let Some(open) = open.filter(|o| o.interrupt_id == interrupt_id) else {
            return Err(RpcError::invalid_params(format!(
                "interrupt `{interrupt_id}` is not open"
            )));
        };
        let id = BoundId::parse_bound(&run.run_id).map_err(internal)?;
        let action = answer.get("action").and_then(Value::as_str);
        let resume = match action {
            Some("accept") => answer.get("content").cloned().unwrap_or_else(|| json!({})),
            Some("decline") => json!({"action": "decline"}),
            Some("cancel") => {
                // No interrupt-only cancel exists in the core; cancelling the answer ends the run.
                return self
                    .app
                    .ops
                    .cancel_run(&ctx.subject, &id, Some("mcp-input-cancelled".into()))
                    .await
                    .map_err(internal);
            }
            _ => {
                return Err(RpcError::invalid_params(
                    "an input response must have action accept, decline or cancel",
                ));
            }
        };
        self.app
            .ops
            .resolve_interrupt(&ctx.subject, &id, &open.node_id, resume)
            .await
            .map_err(|e| match e {
                OpError::Validation { message, .. } => RpcError::invalid_params(message),
                OpError::InterruptAlreadyResolved { .. } => RpcError::invalid_params(format!(
                    "interrupt `{interrupt_id}` was already answered"
                )),
                e => e.into(),
            })
    }

    /// A run the caller may read, or the one unknown-task answer.
    pub(crate) async fn load_task(
        &self,
        subject: &Subject,
        params: &Value,
    ) -> Result<RunRecord, RpcError> {
        let task_id = params
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::invalid_params("`taskId` must be a string"))?;
        let Ok(id) = BoundId::parse_bound(task_id) else {
            return Err(unknown_task(task_id));
        };
        self.app
            .ops
            .get_run(subject, &id)
            .await
            .map_err(|e| match e.unreadable_run() {
                // Echo the id as the client wrote it.
                Some(_) => unknown_task(task_id),
                None => e.into(),
            })
    }

    /// The Task of a run; `detailed` adds the result, error or input requests.
    pub(crate) async fn task_view(
        &self,
        run: &RunRecord,
        detailed: bool,
    ) -> Result<Value, RpcError> {
        let status = run.status;
        let by_host = self.app.ops.failed_by_host(run);
        let mut task = json!({
            "resultType": if detailed { "complete" } else { "task" },
            "taskId": run.run_id,
            "status": if by_host { "failed" } else { mcp_task_status(status) },
            "createdAt": crate::clock::rfc3339(run.created_ms),
            "lastUpdatedAt": crate::clock::rfc3339(run.updated_ms),
            "ttlMs": Value::Null,
            "pollIntervalMs": POLL_INTERVAL_MS,
        });
        if !detailed {
            return Ok(task);
        }
        if by_host {
            // The one case the task status `failed` is for: the host raised the error, the
            // workflow did not report it.
            let error = run.error.clone().unwrap_or_else(|| json!({}));
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("the host could not run the workflow");
            task["error"] = json!({
                "code": INTERNAL_ERROR,
                "message": message,
                "data": {"reason": error.get("code").cloned().unwrap_or(Value::Null), "runId": run.run_id},
            });
        } else if status.is_terminal() {
            task["result"] = self.call_result(run).await?;
        } else if status.asks_for_input()
            && let Some(open) = self.app.ops.open_interrupt(run).await.map_err(internal)?
            && let Some(request) = Self::elicitation(&open.kind, &open.data)
        {
            task["inputRequests"] = json!({open.interrupt_id: request});
        }
        Ok(task)
    }

    /// `tasks/get`: a read; nothing is appended to the run's log.
    async fn get_task(&self, ctx: &Ctx, params: &Value) -> Result<Value, RpcError> {
        let run = self.load_task(&ctx.subject, params).await?;
        self.task_view(&run, true).await
    }

    /// `tasks/update`: each input response resolves the interrupt it is keyed by.
    async fn update_task(&self, ctx: &Ctx, params: &Value) -> Result<Value, RpcError> {
        let run = self.load_task(&ctx.subject, params).await?;
        let responses = params
            .get("inputResponses")
            .and_then(Value::as_object)
            .ok_or_else(|| RpcError::invalid_params("`inputResponses` must be an object"))?;
        // Only a key naming the open interrupt resolves anything; keys never issued,
        // already answered or no longer open are ignored, as the map's row says.
        let open = self.app.ops.open_interrupt(&run).await.map_err(internal)?;
        if let Some(open) = open
            && let Some(answer) = responses.get(&open.interrupt_id)
        {
            self.apply_answer(ctx, &run, &open.interrupt_id, answer)
                .await?;
        }
        Ok(json!({"resultType": "complete"}))
    }

    /// `tasks/cancel`: cancelRun on the run behind the task. The answer is an empty ack,
    /// the same on a task that has already ended (nothing is appended then); the outcome
    /// is read with tasks/get.
    async fn cancel_task(&self, ctx: &Ctx, params: &Value) -> Result<Value, RpcError> {
        let run = self.load_task(&ctx.subject, params).await?;
        let id = BoundId::parse_bound(&run.run_id).map_err(internal)?;
        match self.app.ops.cancel_run(&ctx.subject, &id, None).await {
            Ok(_) | Err(OpError::RunTerminal { .. }) => Ok(json!({"resultType": "complete"})),
            Err(e) => Err(internal(e)),
        }
    }
}
