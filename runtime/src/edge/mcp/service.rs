//! The MCP methods as projections of the run operations. Transport-independent: the
//! HTTP mount and `openwop mcp-stdio` both call [`McpState::dispatch`] with an
//! authenticated Subject and the request's negotiated context.

use rmcp::model::ElicitationCapability;
use serde_json::{Map, Value};

use super::ctx::{
    Ctx, Era, MISSING_CAPABILITY_REASON, ROUNDS_EXCEEDED_REASON, STATE_TTL_MS, internal,
    open_fault, refused_state, state_run_fault,
};
use super::elicit::{self, Answer, Asked, Modes, Needs};
use super::gate::TASKS_EXTENSION;
use super::request_state::{Claims, Refusal, request_digest};
use super::rpc::{self, INVALID_REQUEST, METHOD_NOT_FOUND, MISSING_CAPABILITY, Message, RpcError};
use super::wire::{
    self, CacheScope, CallAnswer, CallParams, CallToolResult, ClientCapabilities, ContentBlock,
    DiscoverResult, EmptyObject, InputRequests, InputRequiredResult, ListToolsResult, MethodResult,
    ProtocolVersion, Reason, Reply, ResourceContents, ResultType, RunAt, ServerCapabilities,
    ServerMeta, Tool, ToolAnnotations, ToolsCapability,
};
use super::{McpState, cancel::RunGuard, session_elicit};
use crate::generated::dispatch::{MCP_METHODS, McpMethod, RunStatus};
use crate::generated::errors::ErrorCode;
use crate::identity::Subject;
use crate::ids::BoundId;
use crate::ops::{OpError, RunRecord, Transport};
use crate::status::Lifecycle;

/// How long a list result may be cached.
const LIST_TTL_MS: u64 = 60_000;

/// Whether a method has a row in the map (or is the legacy era's `ping`).
pub fn is_routed(method: &str) -> bool {
    method == "ping" || McpMethod::from_method(method).is_some()
}

impl McpState {
    /// The run's open interrupt (a store that cannot answer now is this request's 503):
    /// the one read every MCP path that answers an interrupt makes.
    pub(crate) async fn open_interrupt_of(
        &self,
        run: &RunRecord,
    ) -> Result<Option<crate::ops::InterruptRecord>, RpcError> {
        self.app.ops.open_interrupt(run).await.map_err(open_fault)
    }

    /// [`Self::open_interrupt_of`] for an open stream (`subscriptions/listen`): retried
    /// through a transient store fault as the stream's watch retries.
    pub(crate) async fn open_interrupt_in_stream(
        &self,
        run: &RunRecord,
    ) -> Result<Option<crate::ops::InterruptRecord>, RpcError> {
        let ops = &self.app.ops;
        ops.read_for_stream(|| ops.open_interrupt(run))
            .await
            .map_err(open_fault)
    }

    /// Answers one request. `Ok(None)` for a notification (nothing is sent back).
    pub async fn dispatch(&self, ctx: &Ctx, message: &Message) -> Result<Option<Reply>, RpcError> {
        // `ping` left with 2026-07-28; the initialize era still has it.
        if message.method == "ping" && matches!(ctx.era, Era::Legacy(_)) {
            return Ok((!message.is_notification()).then(|| Reply {
                answer: MethodResult::Empty(EmptyObject {}),
                meta: None,
            }));
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
        // A request method sent without an `id` is a notification, which gets no answer:
        // running it would start work (a run) whose id nobody ever learns. Nothing runs;
        // streamable HTTP answers 400 with this error (MCP lets a refused notification
        // carry one), stdio answers nothing.
        if message.is_notification() && !message.method.starts_with("notifications/") {
            return Err(RpcError::new(
                INVALID_REQUEST,
                format!(
                    "`{}` is a request: send it with an `id` (without one it is a notification, which gets no answer, so nothing was run)",
                    message.method
                ),
            ));
        }
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
                .with_data(missing_capability(|c| {
                    c.extensions = Some([(extension.to_owned(), Map::new())].into());
                })));
            }
        }
        let params = &message.params;
        let answer = match method {
            McpMethod::ServerDiscover => MethodResult::Discover(self.discover()),
            McpMethod::ToolsList => MethodResult::Tools(self.list_tools(&ctx.subject)),
            McpMethod::ToolsCall => {
                let answer = self.call_tool(ctx, rpc::read_params(params)?).await?;
                // A tool execution error fails the exported MCP span (`tool_error`).
                if let CallAnswer::Complete(result) = &answer
                    && result.is_error == Some(true)
                {
                    let text = result.content.iter().find_map(|c| c.as_text());
                    crate::observe::otel::mcp_tool_error_current(text.map_or("", |t| &t.text));
                }
                MethodResult::Call(answer)
            }
            McpMethod::TasksGet => {
                MethodResult::Task(self.get_task(ctx, rpc::read_params(params)?).await?)
            }
            McpMethod::TasksUpdate => {
                MethodResult::Ack(self.update_task(ctx, rpc::read_params(params)?).await?)
            }
            McpMethod::TasksCancel => {
                MethodResult::Ack(self.cancel_task(ctx, rpc::read_params(params)?).await?)
            }
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
        // Modern results name the server; legacy results stay as that revision defines them.
        let meta = matches!(ctx.era, Era::Modern(_)).then(|| ServerMeta {
            server_info: wire::server_info(),
        });
        Ok(Some(Reply { answer, meta }))
    }

    /// The extensions this mount serves: those of the map's method rows we implement.
    pub fn served_extensions(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = MCP_METHODS.iter().filter_map(|m| m.extension).collect();
        out.sort_unstable();
        out.dedup();
        out.retain(|e| *e == TASKS_EXTENSION && self.config.tasks);
        out
    }

    pub fn capabilities(&self) -> ServerCapabilities {
        let mut tools = ToolsCapability::default();
        tools.list_changed = Some(false);
        let mut capabilities = ServerCapabilities::default();
        capabilities.tools = Some(tools);
        capabilities.extensions = Some(
            self.served_extensions()
                .into_iter()
                .map(|e| (e.to_owned(), Map::new()))
                .collect(),
        );
        capabilities
    }

    fn discover(&self) -> DiscoverResult {
        // The facet's revisions are strings the config checked against MCP_SPOKEN.
        let revisions: Vec<ProtocolVersion> =
            serde_json::from_value(self.facet()["revisions"].clone()).unwrap_or_default();
        let mut discovered = DiscoverResult::new(revisions, self.capabilities());
        discovered.ttl_ms = LIST_TTL_MS;
        discovered.cache_scope = CacheScope::Public;
        discovered
    }

    /// One tool per workflow, sorted by name. The registry is the same for every tenant
    /// today, but the list is still `private`: it is the caller's tenant's registry.
    /// The workflows this caller may run (the same rule `createRun` and the agents
    /// inventory apply), so a listed tool is always one the caller can call.
    fn list_tools(&self, subject: &Subject) -> ListToolsResult {
        let tools = self
            .app
            .ops
            .list_workflows(subject)
            .iter()
            .map(|w| {
                let d = &w.definition;
                let mut schema = d.input_schema.clone();
                // A tool's inputSchema is an object schema; runs take object inputs anyway.
                schema.entry("type").or_insert_with(|| "object".into());
                let mut tool = Tool::default();
                tool.name = d.id.to_string().into();
                tool.input_schema = schema.into();
                tool.title = d.name.clone();
                tool.description = d.description.clone().map(Into::into);
                if let Some(hints) = &d.tool {
                    if let Some(output) = &hints.output_schema {
                        // Like inputSchema, an object schema: structuredContent is the
                        // run's outputs object.
                        let mut output = output.clone();
                        output.entry("type").or_insert_with(|| "object".into());
                        tool.output_schema = Some(output.into());
                    }
                    if let Some(a) = &hints.annotations {
                        tool.annotations = Some(ToolAnnotations::from_raw(
                            a.title.clone(),
                            a.read_only_hint,
                            a.destructive_hint,
                            a.idempotent_hint,
                            a.open_world_hint,
                        ));
                    }
                }
                tool
            })
            .collect();
        let mut listed = ListToolsResult::with_all_items(tools);
        listed.result_type = Some(ResultType::COMPLETE);
        listed.ttl_ms = Some(LIST_TTL_MS);
        listed.cache_scope = Some(CacheScope::Private);
        listed
    }

    pub(crate) fn max_rounds(&self) -> u32 {
        self.facet()["mrtr"]["maxRounds"]
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(1)
    }

    async fn call_tool(&self, ctx: &Ctx, params: CallParams) -> Result<CallAnswer, RpcError> {
        let name = params.name.as_str();
        let arguments = Value::Object(params.arguments.unwrap_or_default());
        if let Some(token) = &params.request_state {
            return self
                .continue_call(
                    ctx,
                    name,
                    &arguments,
                    token,
                    params.input_responses.as_ref(),
                )
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
            return Ok(CallAnswer::Complete(wire::tool_text(message, None, true)));
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
    ) -> Result<CallAnswer, RpcError> {
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
                break self.call_result(&run).await.map(CallAnswer::Complete);
            }
            if tasks {
                break self
                    .task_view(&run, false, ctx.modes())
                    .await
                    .map(CallAnswer::Task);
            }
            if !status.asks_for_input() {
                // Still running (or waiting on something outside MCP) when the call gives
                // up: the run goes on, and the caller learns how to come back for it.
                break Ok(CallAnswer::Complete(self.still_open(
                    &run,
                    format!(
                        "Run {} is still {} after {} s, the most this call waits; it goes on.",
                        run.run_id,
                        run.status.as_str(),
                        wait.as_secs()
                    ),
                )));
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
                        break Ok(CallAnswer::Complete(self.dismissed(&run, &interrupt_id)));
                    }
                    session_elicit::Outcome::Unanswered(interrupt_id) => {
                        break Ok(CallAnswer::Complete(self.still_open(
                            &run,
                            format!(
                                "Run {} still waits at interrupt {interrupt_id}: the question was not answered within {} s.",
                                run.run_id,
                                wait.as_secs()
                            ),
                        )));
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
            let params = wire::Progress {
                progress_token: &token,
                progress,
                message,
            };
            out.send(wire::Outgoing::notification("notifications/progress", params).text())
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
    pub(super) async fn call_result(&self, run: &RunRecord) -> Result<CallToolResult, RpcError> {
        let status = run.status;
        let result = match status {
            RunStatus::Completed => {
                // The run's outputs object: the tool's structuredContent, open by definition.
                let outputs = run
                    .outputs
                    .clone()
                    .unwrap_or_else(|| Value::Object(Map::new()));
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
                let mut result = wire::tool_text(text, Some(outputs), false);
                if let Some(answer) = self.app.ops.answer(run) {
                    result.content = content_blocks(&answer);
                }
                result
            }
            _ => {
                let why = run
                    .error
                    .as_ref()
                    .and_then(|e| e.get("message").and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_else(|| format!("the run ended {}", run.status.as_str()));
                // The tool's own structuredContent (MCP leaves it open), holding the run's
                // error object as the run recorded it.
                let structured = wire::data(&RunAt {
                    run_id: &run.run_id,
                    task_id: None,
                    status: run.status.as_str(),
                    error: Some(&run.error),
                });
                wire::tool_text(why, Some(structured), true)
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
    fn still_open(&self, run: &RunRecord, why: String) -> CallToolResult {
        // structuredContent is the tool's own (MCP leaves it open): where the run is.
        let structured = wire::data(&RunAt {
            run_id: &run.run_id,
            task_id: Some(&crate::ids::project(&run.run_id)),
            status: run.status.as_str(),
            error: None,
        });
        wire::tool_text(
            format!("{why} {}", self.come_back(run)),
            Some(structured),
            true,
        )
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
        // The error's open `data`, with where the run went.
        let mut data = match error.data.as_deref() {
            Some(Value::Object(data)) => data.clone(),
            _ => Map::new(),
        };
        data.insert("runId".to_owned(), run.run_id.clone().into());
        data.insert("runCancelledReason".to_owned(), reason.into());
        let message = format!(
            "{} (run {} was cancelled: {reason})",
            error.message, run.run_id
        );
        RpcError { message, ..error }.with_data(Value::Object(data))
    }

    /// The refusal of an input round beyond `mcp.mrtr.maxRounds`; the run ends with it.
    pub(crate) async fn rounds_exceeded(&self, ctx: &Ctx, run: &RunRecord) -> RpcError {
        let error = RpcError::invalid_params(format!(
            "more than {} input rounds for one call",
            self.max_rounds()
        ))
        .with_data(wire::data(&Reason {
            reason: ErrorCode::McpMrtrRoundsExceeded.as_str(),
        }));
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
    ) -> Result<CallAnswer, RpcError> {
        let Some(open) = self.open_interrupt_of(run).await? else {
            return self.call_result(run).await.map(CallAnswer::Complete);
        };
        let asked = Asked {
            interrupt_id: &open.interrupt_id,
            kind: &open.kind,
            data: &open.data,
        };
        if elicit::needs(&open.kind, &open.data) == Needs::Nothing {
            return Ok(CallAnswer::Complete(self.still_open(
                run,
                format!(
                    "Run {} waits on a {} interrupt, which no MCP request can answer.",
                    run.run_id, open.kind
                ),
            )));
        }
        let Some(declared) = ctx.declared() else {
            // The initialize era has no input_required; the run stays suspended.
            return Ok(CallAnswer::Complete(self.still_open(
                run,
                format!(
                    "Run {} waits for input at interrupt {} ({}), and this session cannot be asked for it.",
                    run.run_id, open.interrupt_id, open.kind
                ),
            )));
        };
        let modes = Modes::of(&declared.capabilities);
        let Some(request) = elicit::input_request(&asked, modes) else {
            if elicit::needs(&open.kind, &open.data) == Needs::Url {
                // The map's rule: a credential interrupt without URL-mode elicitation is a
                // tool error, and the run waits for the credential elsewhere.
                return Ok(CallAnswer::Complete(self.still_open(
                    run,
                    format!(
                        "Run {} waits for a credential ({}); declare the elicitation capability with `url` to be asked for it here.",
                        run.run_id,
                        open.data.get("provider").and_then(Value::as_str).unwrap_or("a provider")
                    ),
                )));
            }
            let error = RpcError::new(
                MISSING_CAPABILITY,
                "this tool asks for input: declare the elicitation capability (form mode) in clientCapabilities",
            )
            .with_data(missing_capability(|c| {
                c.elicitation = Some(ElicitationCapability::default());
            }));
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
        Ok(CallAnswer::InputRequired(InputRequiredResult::new(
            Some(InputRequests::from([(open.interrupt_id.clone(), request)])),
            Some(self.codec.seal(&claims)),
        )))
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
    ) -> Result<CallAnswer, RpcError> {
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
        let open = self.open_interrupt_of(&run).await?;
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
            return Ok(CallAnswer::Complete(
                self.dismissed(&run, &open.interrupt_id),
            ));
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
    pub(crate) fn dismissed(&self, run: &RunRecord, interrupt_id: &str) -> CallToolResult {
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
}

/// -32021's `data`: the client capabilities the request had to declare.
fn missing_capability(declare: impl FnOnce(&mut ClientCapabilities)) -> Value {
    let mut required = ClientCapabilities::default();
    declare(&mut required);
    wire::data(&wire::MissingCapability {
        required_capabilities: required,
    })
}

/// MCP content blocks of a declared answer, its artifacts' parts in order: text as
/// `text`; a file by URL as a `resource_link`; a file by content as `image` or `audio`
/// for those media types, else an embedded `resource` blob; data as `text` holding its
/// JSON (the outputs are the structuredContent already).
fn content_blocks(answer: &crate::ops::Answer) -> Vec<ContentBlock> {
    use crate::ops::Part;
    answer
        .artifacts
        .iter()
        .flat_map(|a| a.parts.iter().map(move |p| (a, p)))
        .map(|(artifact, part)| match part {
            Part::Text(text) => ContentBlock::text(text.clone()),
            Part::Data(data) => ContentBlock::text(data.to_string()),
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
                ContentBlock::resource_link(
                    rmcp::model::Resource::new(url.clone(), name)
                        .with_mime_type(media_type.clone()),
                )
            }
            Part::File {
                bytes,
                media_type,
                filename,
                ..
            } => {
                let data = bytes.clone().unwrap_or_default();
                match media_type.split('/').next().unwrap_or_default() {
                    "image" => ContentBlock::image(data, media_type.clone()),
                    "audio" => ContentBlock::audio(data, media_type.clone()),
                    _ => {
                        let name = filename.clone().unwrap_or_else(|| "answer".to_owned());
                        ContentBlock::resource(
                            ResourceContents::blob(data, format!("openwop:answer/{name}"))
                                .with_mime_type(media_type.clone()),
                        )
                    }
                }
            }
        })
        .collect()
}
