//! The MCP methods as projections of the run operations. Transport-independent: the
//! HTTP mount and `openwop mcp-stdio` both call [`McpState::dispatch`] with an
//! authenticated Subject and the request's negotiated context.

use serde_json::{Map, Value, json};

use super::elicit::{self, Answer, Asked, Modes, Needs};
use super::gate::{Declared, TASKS_EXTENSION};
use super::request_state::{Claims, Refusal, request_digest};
use super::rpc::{INTERNAL_ERROR, METHOD_NOT_FOUND, MISSING_CAPABILITY, Message, RpcError};
use super::{McpState, cancel::RunGuard, session_elicit};
use crate::generated::dispatch::{MCP_METHODS, McpMethod, RunStatus, mcp_task_status};
use crate::generated::errors::ErrorCode;
use crate::identity::Subject;
use crate::ids::BoundId;
use crate::ops::{OpError, RunRecord, Transport};
use crate::status::Lifecycle;

/// The reason a run owned by an abandoned request is cancelled with.
pub const REQUEST_CANCELLED: &str = "mcp-request-cancelled";

/// The reason a run is cancelled with when the call that owns it is refused because the
/// client cannot be asked for the input the run needs.
pub const MISSING_CAPABILITY_REASON: &str = "mcp-missing-capability";
/// The reason a run is cancelled with when its call needs more input rounds than
/// `mcp.mrtr.maxRounds`.
pub const ROUNDS_EXCEEDED_REASON: &str = "mcp-mrtr-rounds-exceeded";

/// How long a list result may be cached.
const LIST_TTL_MS: u64 = 60_000;

/// How long a requestState stays usable.
pub(crate) const STATE_TTL_MS: i64 = 10 * 60 * 1000;
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
    /// The elicitation modes a 2025-11-25 session's `initialize` declared.
    pub session_modes: Modes,
    /// Where messages to the client go while this request is open (its SSE stream, or
    /// stdout on stdio); `None` when the transport cannot carry any (a JSON answer).
    pub outbound: Option<Outbound>,
    /// The W3C `traceparent` the request continues (`_meta` first, then the HTTP
    /// header): a run it creates keeps it, so its calls to peers continue that trace.
    pub trace: Option<String>,
}

impl Ctx {
    /// A request with no channel back to the client but its answer.
    pub fn new(subject: Subject, era: Era) -> Ctx {
        Ctx {
            subject,
            era,
            session_modes: Modes::default(),
            outbound: None,
            trace: None,
        }
    }
}

/// The channel a request's notifications travel on before its answer.
#[derive(Clone)]
pub struct Outbound {
    /// Serialized JSON-RPC messages, in order.
    tx: tokio::sync::mpsc::UnboundedSender<String>,
    /// `params._meta.progressToken` of the request: progress is reported only when set.
    progress_token: Option<Value>,
    /// The last `progress` sent for the request: every notification's is larger, across
    /// every wait of the call (input rounds included).
    progress: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Outbound {
    /// A channel for the request `message`; each string sent is one JSON-RPC message.
    pub fn new(tx: tokio::sync::mpsc::UnboundedSender<String>, message: &Message) -> Outbound {
        let progress_token = message
            .meta()
            .get("progressToken")
            .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
            .cloned();
        Outbound {
            tx,
            progress_token,
            progress: Default::default(),
        }
    }

    pub(crate) fn send(&self, message: Value) -> bool {
        self.tx.send(message.to_string()).is_ok()
    }
}

impl Ctx {
    fn declared(&self) -> Option<&Declared> {
        match &self.era {
            Era::Modern(d) => Some(d),
            Era::Legacy(_) => None,
        }
    }

    pub(crate) fn principal(&self) -> String {
        format!("{}#{}", self.subject.issuer, self.subject.subject_id)
    }

    /// The elicitation modes this request (2026) declared.
    pub(crate) fn modes(&self) -> Modes {
        match &self.era {
            Era::Modern(d) => Modes::of(&d.capabilities),
            Era::Legacy(_) => self.session_modes,
        }
    }
}

pub(crate) fn internal(e: impl std::fmt::Display) -> RpcError {
    tracing::error!(error = %e, "mcp request failed");
    RpcError::internal()
}

/// A run's open interrupt that could not be read: 503 for a transient store fault.
pub(crate) fn open_fault(e: OpError) -> RpcError {
    RpcError::host_fault("the run's open interrupt could not be read", e)
}

/// The run a requestState names, unreadable: a store that cannot answer now is its 503
/// (the state stays good for a retry), anything else a state from another request.
pub(crate) fn state_run_fault(e: OpError) -> RpcError {
    match e {
        OpError::Unavailable { .. } => RpcError::from(e),
        _ => refused_state(Refusal::OtherRequest),
    }
}

/// The one answer for a task the caller cannot read, whether or not it exists.
fn unknown_task(task_id: &str) -> RpcError {
    RpcError::invalid_params(format!("no task `{task_id}`"))
}

pub(crate) fn refused_state(why: Refusal) -> RpcError {
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
            McpMethod::ToolsCall => {
                let result = self.call_tool(ctx, params).await?;
                // A tool execution error fails the exported MCP span (`tool_error`).
                crate::observe::otel::mcp_tool_result_current(&result);
                result
            }
            McpMethod::TasksGet => self.get_task(ctx, params).await?,
            McpMethod::TasksUpdate => self.update_task(ctx, params).await?,
            McpMethod::TasksCancel => self.cancel_task(ctx, params).await?,
            // Notifications: over HTTP the cancel is the closed stream, on stdio the
            // transport handles it before dispatch; nothing is answered either way.
            McpMethod::NotificationsCancelled | McpMethod::NotificationsTasks => return Ok(None),
            // Answered by the transport, which owns what they open: initialize the
            // session, subscriptions/listen the stream (streamable HTTP and stdio).
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
                if let Some(hints) = &d.tool {
                    if let Some(output) = &hints.output_schema {
                        // Like inputSchema, an object schema: structuredContent is the
                        // run's outputs object.
                        let mut output = output.clone();
                        output.entry("type").or_insert_with(|| json!("object"));
                        tool["outputSchema"] = Value::Object(output);
                    }
                    if let Some(annotations) = &hints.annotations {
                        tool["annotations"] = json!(annotations);
                    }
                }
                tool
            })
            .collect();
        json!({"resultType": "complete", "tools": tools, "ttlMs": LIST_TTL_MS, "cacheScope": "private"})
    }

    pub(crate) fn max_rounds(&self) -> u32 {
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
        // Arguments are checked before anything is created; create_run checks again. A
        // call whose arguments fail the tool's inputSchema is a tool execution error
        // (SEP-1303, since 2025-11-25), answered in both eras: a result with `isError` and
        // the schema's findings in its text, so the model reads them and corrects itself.
        // Only a malformed call (no such tool, arguments not an object) is a protocol error.
        let problems = workflow.check_inputs(&arguments);
        if !problems.is_empty() {
            // Clients show the message, not `data`: it says which argument and why.
            let said: Vec<String> = problems
                .iter()
                .take(5)
                .map(|p| {
                    let at = p.pointer.trim_start_matches('/').replace('/', ".");
                    if at.is_empty() {
                        format!("arguments: {}", p.message)
                    } else {
                        format!("argument `{at}`: {}", p.message)
                    }
                })
                .collect();
            let more = problems.len().saturating_sub(said.len());
            let mut message = format!("invalid arguments for tool `{name}`: {}", said.join("; "));
            if more > 0 {
                message.push_str(&format!(" (and {more} more)"));
            }
            return Ok(json!({
                "resultType": "complete",
                "content": [{"type": "text", "text": message}],
                "isError": true,
            }));
        }
        let request = crate::ops::run_request(name, arguments.clone())?;
        let run = self
            .app
            .ops
            .create_run_with(
                &ctx.subject,
                request,
                Transport::Mcp,
                None,
                crate::ops::CreateWith {
                    trace: ctx.trace.clone(),
                    ..Default::default()
                },
            )
            .await?
            .run;
        // Progress reports every event of the new run, those its creation committed too.
        self.answer_run(ctx, name, &arguments, run, 0, -1).await
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
        reported: i64,
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
        let deadline = tokio::time::Instant::now() + wait;
        let mut run = run;
        let mut round = round;
        let mut reported = reported;
        let answer = loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            run = self.settle(ctx, run, reported, left).await?;
            reported = run.last_sequence;
            let status = run.status;
            if status.is_terminal() {
                break self.call_result(&run).await;
            }
            if tasks {
                break self.task_view(&run, false, ctx.modes()).await;
            }
            if !status.asks_for_input() {
                // Still running (or waiting on something outside MCP) when the call gives
                // up: the run goes on, and the caller learns how to come back for it.
                break Ok(self.still_open(
                    &run,
                    format!(
                        "Run {} is still {} after {} s, the most this call waits; it goes on.",
                        run.run_id,
                        run.status.as_str(),
                        wait.as_secs()
                    ),
                ));
            }
            // A 2025-11-25 session is asked on the call's own stream, as the stateless
            // era is asked through InputRequiredResult: same mapping, same round ceiling.
            if self.session_can_be_asked(ctx, &run).await? {
                round += 1;
                if round > self.max_rounds() {
                    break Err(self.rounds_exceeded(ctx, &run).await);
                }
                match self.ask_in_session(ctx, &run, round, deadline).await? {
                    session_elicit::Outcome::Answered(next) => {
                        run = next;
                        continue;
                    }
                    session_elicit::Outcome::Dismissed(interrupt_id) => {
                        break Ok(self.dismissed(&run, &interrupt_id));
                    }
                    session_elicit::Outcome::Unanswered(interrupt_id) => {
                        break Ok(self.still_open(
                            &run,
                            format!(
                                "Run {} still waits at interrupt {interrupt_id}: the question was not answered within {} s.",
                                run.run_id,
                                wait.as_secs()
                            ),
                        ));
                    }
                }
            }
            break self
                .input_required(ctx, tool, arguments, &run, round + 1)
                .await;
        };
        // The answer exists (a refusal included, which settles the run itself); from here
        // on the transport decides when it was sent.
        guard.hand_over();
        answer
    }

    /// Waits for the run as `ops.settle` does (until it ends or asks for input, or `wait`
    /// passes); a request that sent a `progressToken` is told what the run does meanwhile:
    /// one `notifications/progress` per node started or completed, and one every
    /// `progress_every` while nothing happens, each with a larger `progress`.
    async fn settle(
        &self,
        ctx: &Ctx,
        run: RunRecord,
        reported: i64,
        wait: std::time::Duration,
    ) -> Result<RunRecord, RpcError> {
        let reporting = ctx
            .outbound
            .as_ref()
            .and_then(|o| o.progress_token.clone().map(|t| (o, t)));
        let Some((out, token)) = reporting else {
            return Ok(self
                .app
                .ops
                .settle(&ctx.subject, run, |s| s.asks_for_input(), wait)
                .await?);
        };
        let settled = |r: &RunRecord| r.status.asks_for_input() || r.status.is_terminal();
        if settled(&run) {
            return Ok(run);
        }
        let id = BoundId::parse_bound(&run.run_id).map_err(internal)?;
        // From the last event already reported: a new run's first nodes may have been
        // committed with its creation.
        let mut watch = self.app.ops.watch(&ctx.subject, &id, reported).await?;
        let started = tokio::time::Instant::now();
        let deadline = started + wait;
        let mut latest = run;
        let report = |message: String| {
            let progress = out
                .progress
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                + 1;
            out.send(json!({
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": token, "progress": progress, "message": message},
            }))
        };
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Ok(latest);
            }
            let step = left.min(
                self.config
                    .progress_every
                    .max(std::time::Duration::from_millis(100)),
            );
            match tokio::time::timeout(step, watch.next()).await {
                Ok(Some(Ok(update))) => {
                    latest = update.run;
                    for event in &update.events {
                        let node = event.payload.get("nodeId").and_then(Value::as_str);
                        let what = match (event.event_type.as_str(), node) {
                            ("node.started", Some(n)) => format!("node `{n}` started"),
                            ("node.completed", Some(n)) => format!("node `{n}` completed"),
                            _ => continue,
                        };
                        report(what);
                    }
                    if settled(&latest) {
                        return Ok(latest);
                    }
                }
                Ok(Some(Err(e))) => return Err(e.into()),
                // The run ended (its last update was seen) or the host is stopping.
                Ok(None) => return Ok(latest),
                Err(_) => {
                    report(format!(
                        "run {} is {} ({} s)",
                        latest.run_id,
                        latest.status.as_str(),
                        started.elapsed().as_secs()
                    ));
                }
            }
        }
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
                // A workflow that declares its answer shows it as content blocks; the
                // outputs stay the structuredContent either way.
                let content = match self.app.ops.answer(run) {
                    Some(answer) => content_blocks(&answer),
                    None => json!([{"type": "text", "text": text}]),
                };
                json!({
                    "resultType": "complete",
                    "content": content,
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

    /// How a caller comes back for a run that outlived its call, said in every answer
    /// that leaves a run going.
    fn come_back(&self, run: &RunRecord) -> String {
        let task = crate::ids::project(&run.run_id);
        if self.served_extensions().contains(&TASKS_EXTENSION) {
            format!(
                "Come back for it with tasks/get {{\"taskId\": \"{task}\"}} (declare the {TASKS_EXTENSION} extension; tasks/update answers its input, tasks/cancel ends it), or over REST with GET /runs/{task}."
            )
        } else {
            format!("Come back for it over REST with GET /runs/{task}.")
        }
    }

    /// A tool error about a run that goes on: what it waits for and how to come back.
    fn still_open(&self, run: &RunRecord, why: String) -> Value {
        json!({
            "resultType": "complete",
            "content": [{"type": "text", "text": format!("{why} {}", self.come_back(run))}],
            "structuredContent": {
                "runId": run.run_id,
                "taskId": crate::ids::project(&run.run_id),
                "status": run.status.as_str(),
            },
            "isError": true,
        })
    }

    /// Refuses a call that cannot go on over MCP after its run started, ending the run
    /// with the refusal's own reason (the client cancelled nothing) so it is not left
    /// waiting for an answer that cannot come.
    async fn refuse_started(
        &self,
        ctx: &Ctx,
        run: &RunRecord,
        reason: &str,
        error: RpcError,
    ) -> RpcError {
        if let Ok(id) = BoundId::parse_bound(&run.run_id) {
            match self
                .app
                .ops
                .cancel_run(&ctx.subject, &id, Some(reason.into()))
                .await
            {
                Ok(_) | Err(OpError::RunTerminal { .. }) => {}
                Err(e) => {
                    tracing::warn!(error = %e, run_id = run.run_id, "a refused call's run could not be cancelled")
                }
            }
        }
        let mut data = error.data.as_deref().cloned().unwrap_or_else(|| json!({}));
        data["runId"] = json!(run.run_id);
        data["runCancelledReason"] = json!(reason);
        let message = format!(
            "{} (run {} was cancelled: {reason})",
            error.message, run.run_id
        );
        RpcError { message, ..error }.with_data(data)
    }

    /// The refusal of an input round beyond `mcp.mrtr.maxRounds`; the run ends with it.
    pub(crate) async fn rounds_exceeded(&self, ctx: &Ctx, run: &RunRecord) -> RpcError {
        let error = RpcError::invalid_params(format!(
            "more than {} input rounds for one call",
            self.max_rounds()
        ))
        .with_data(json!({"reason": ErrorCode::McpMrtrRoundsExceeded.as_str()}));
        self.refuse_started(ctx, run, ROUNDS_EXCEEDED_REASON, error)
            .await
    }

    async fn input_required(
        &self,
        ctx: &Ctx,
        tool: &str,
        arguments: &Value,
        run: &RunRecord,
        round: u32,
    ) -> Result<Value, RpcError> {
        let Some(open) = self.app.ops.open_interrupt(run).await.map_err(open_fault)? else {
            return self.call_result(run).await;
        };
        let asked = Asked {
            interrupt_id: &open.interrupt_id,
            kind: &open.kind,
            data: &open.data,
        };
        if elicit::needs(&open.kind, &open.data) == Needs::Nothing {
            return Ok(self.still_open(
                run,
                format!(
                    "Run {} waits on a {} interrupt, which no MCP request can answer.",
                    run.run_id, open.kind
                ),
            ));
        }
        let Some(declared) = ctx.declared() else {
            // The initialize era has no input_required; the run stays suspended.
            return Ok(self.still_open(
                run,
                format!(
                    "Run {} waits for input at interrupt {} ({}), and this session cannot be asked for it.",
                    run.run_id, open.interrupt_id, open.kind
                ),
            ));
        };
        let modes = Modes::of(&declared.capabilities);
        let Some(request) = elicit::input_request(&asked, modes) else {
            if elicit::needs(&open.kind, &open.data) == Needs::Url {
                // The map's rule: a credential interrupt without URL-mode elicitation is a
                // tool error, and the run waits for the credential elsewhere.
                return Ok(self.still_open(
                    run,
                    format!(
                        "Run {} waits for a credential ({}); declare the elicitation capability with `url` to be asked for it here.",
                        run.run_id,
                        open.data.get("provider").and_then(Value::as_str).unwrap_or("a provider")
                    ),
                ));
            }
            let error = RpcError::new(
                MISSING_CAPABILITY,
                "this tool asks for input: declare the elicitation capability (form mode) in clientCapabilities",
            )
            .with_data(json!({"requiredCapabilities": {"elicitation": {}}}));
            return Err(self
                .refuse_started(ctx, run, MISSING_CAPABILITY_REASON, error)
                .await);
        };
        if round > self.max_rounds() {
            return Err(self.rounds_exceeded(ctx, run).await);
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

    /// The retry of an input_required round: checks the state, reads the answer, and only
    /// then spends the state and resolves the interrupt, so a malformed answer leaves the
    /// state usable for the corrected retry.
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
        let id =
            BoundId::parse_bound(&claims.run).map_err(|_| refused_state(Refusal::Malformed))?;
        let run = self
            .app
            .ops
            .get_run(&ctx.subject, &id)
            .await
            .map_err(state_run_fault)?;
        if let Some(responses) = responses
            && !responses.is_object()
        {
            return Err(RpcError::invalid_params(
                "`inputResponses` must be an object keyed by the inputRequests keys",
            ));
        }
        let Some(answer) = responses.and_then(|r| r.get(&claims.interrupt)) else {
            // Not answered: ask again, in the same round, with a fresh state.
            self.spend(&claims).await?;
            return self
                .input_required(ctx, tool, arguments, &run, claims.round)
                .await;
        };
        // A state for an interrupt that is no longer open is stale, whatever the answer.
        let open = self
            .app
            .ops
            .open_interrupt(&run)
            .await
            .map_err(open_fault)?;
        let Some(open) = open.filter(|o| o.interrupt_id == claims.interrupt) else {
            return Err(refused_state(Refusal::Spent));
        };
        let asked = Asked {
            interrupt_id: &open.interrupt_id,
            kind: &open.kind,
            data: &open.data,
        };
        let answer = elicit::answer(&asked, answer)?;
        self.spend(&claims).await?;
        let Answer::Resume(resume) = answer else {
            return Ok(self.dismissed(&run, &open.interrupt_id));
        };
        let run = self
            .resolve(ctx, &run, &open.node_id, &open.interrupt_id, resume)
            .await?;
        let reported = run.last_sequence;
        self.answer_run(ctx, tool, arguments, run, claims.round, reported)
            .await
    }

    /// Spends a state on every replica; a second use is refused.
    pub(crate) async fn spend(&self, claims: &Claims) -> Result<(), RpcError> {
        // Single use is recorded in the interop store, so a state spent on one replica is
        // spent on all of them; the record outlives the state's own expiry.
        let fresh = self
            .app
            .ops
            .spend_request_state(&claims.nonce, claims.exp)
            .await
            .map_err(|e| RpcError::host_fault("cannot record a spent requestState", e))?;
        if fresh {
            Ok(())
        } else {
            Err(refused_state(Refusal::Spent))
        }
    }

    /// The answer to an elicitation the user dismissed (`cancel`): the question is left
    /// open and the run keeps waiting; nothing is cancelled.
    pub(crate) fn dismissed(&self, run: &RunRecord, interrupt_id: &str) -> Value {
        self.still_open(
            run,
            format!(
                "The input was dismissed; run {} still waits at interrupt {interrupt_id}.",
                run.run_id
            ),
        )
    }

    /// Resolves the open interrupt `interrupt_id` (at `node_id`) with `resume`.
    pub(crate) async fn resolve(
        &self,
        ctx: &Ctx,
        run: &RunRecord,
        node_id: &str,
        interrupt_id: &str,
        resume: Value,
    ) -> Result<RunRecord, RpcError> {
        let id = BoundId::parse_bound(&run.run_id).map_err(internal)?;
        self.app
            .ops
            .resolve_interrupt(&ctx.subject, &id, node_id, resume)
            .await
            .map_err(|e| match e {
                OpError::Validation { message, .. } => RpcError::invalid_params(format!(
                    "the answer to `{interrupt_id}` was refused: {message}"
                )),
                OpError::InterruptAlreadyResolved { .. } | OpError::InterruptNotFound { .. } => {
                    RpcError::invalid_params(format!(
                        "interrupt `{interrupt_id}` was already answered"
                    ))
                }
                e => e.into(),
            })
    }

    /// A run the caller may read, or the one unknown-task answer. The taskId is the run id
    /// in its projected form (`acme~2F…`, the form every answer gives); the bound form
    /// (`acme/…`) is read too.
    pub(crate) async fn load_task(
        &self,
        subject: &Subject,
        params: &Value,
    ) -> Result<RunRecord, RpcError> {
        let task_id = params
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::invalid_params("`taskId` must be a string"))?;
        let Ok(id) = BoundId::parse_bound(task_id).or_else(|_| BoundId::parse_path(task_id)) else {
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

    /// The Task of a run; `detailed` adds the result, error or the input requests a client
    /// with `modes` can be asked (none to one that declared no elicitation).
    pub(crate) async fn task_view(
        &self,
        run: &RunRecord,
        detailed: bool,
        modes: Modes,
    ) -> Result<Value, RpcError> {
        let status = run.status;
        let by_host = self.app.ops.failed_by_host(run);
        let mut task = json!({
            "resultType": if detailed { "complete" } else { "task" },
            "taskId": crate::ids::project(&run.run_id),
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
            && let Some(open) = self.app.ops.open_interrupt(run).await.map_err(open_fault)?
        {
            let asked = Asked {
                interrupt_id: &open.interrupt_id,
                kind: &open.kind,
                data: &open.data,
            };
            match elicit::input_request(&asked, modes) {
                Some(request) => task["inputRequests"] = json!({open.interrupt_id: request}),
                // Never offered to a client that cannot take it; the status says why the
                // task waits (nothing from inside the run).
                None => {
                    task["statusMessage"] = json!(match elicit::needs(&open.kind, &open.data) {
                        Needs::Form =>
                            "waiting for input; declare the elicitation capability to be asked for it",
                        Needs::Url =>
                            "waiting for a credential; declare the elicitation capability with `url` to be asked for it",
                        Needs::Nothing => "waiting for input no MCP request can give",
                    });
                }
            }
        }
        Ok(task)
    }

    /// `tasks/get`: a read; nothing is appended to the run's log.
    async fn get_task(&self, ctx: &Ctx, params: &Value) -> Result<Value, RpcError> {
        let run = self.load_task(&ctx.subject, params).await?;
        self.task_view(&run, true, ctx.modes()).await
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
        let open = self
            .app
            .ops
            .open_interrupt(&run)
            .await
            .map_err(open_fault)?;
        if let Some(open) = open
            && let Some(answer) = responses.get(&open.interrupt_id)
        {
            let asked = Asked {
                interrupt_id: &open.interrupt_id,
                kind: &open.kind,
                data: &open.data,
            };
            if let Answer::Resume(resume) = elicit::answer(&asked, answer)? {
                self.resolve(ctx, &run, &open.node_id, &open.interrupt_id, resume)
                    .await?;
            }
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

/// MCP content blocks of a declared answer, its artifacts' parts in order: text as
/// `text`; a file by URL as a `resource_link`; a file by content as `image` or `audio`
/// for those media types, else an embedded `resource` blob; data as `text` holding its
/// JSON (the outputs are the structuredContent already).
fn content_blocks(answer: &crate::ops::Answer) -> Value {
    use crate::ops::Part;
    let blocks = answer
        .artifacts
        .iter()
        .flat_map(|a| a.parts.iter().map(move |p| (a, p)))
        .map(|(artifact, part)| match part {
            Part::Text(text) => json!({"type": "text", "text": text}),
            Part::Data(data) => json!({"type": "text", "text": data.to_string()}),
            Part::File {
                url: Some(url),
                media_type,
                filename,
                ..
            } => {
                let name = filename
                    .clone()
                    .or_else(|| artifact.name.clone())
                    .unwrap_or_else(|| url.clone());
                json!({"type": "resource_link", "uri": url, "name": name, "mimeType": media_type})
            }
            Part::File {
                bytes,
                media_type,
                filename,
                ..
            } => {
                let data = bytes.clone().unwrap_or_default();
                let kind = media_type.split('/').next().unwrap_or_default();
                match kind {
                    "image" | "audio" => {
                        json!({"type": kind, "data": data, "mimeType": media_type})
                    }
                    _ => {
                        let name = filename.clone().unwrap_or_else(|| "answer".to_owned());
                        json!({"type": "resource", "resource": {
                            "uri": format!("openwop:answer/{name}"),
                            "mimeType": media_type,
                            "blob": data,
                        }})
                    }
                }
            }
        })
        .collect();
    Value::Array(blocks)
}
