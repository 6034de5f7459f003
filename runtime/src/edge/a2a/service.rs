//! The A2A operations as projections of `ops`: every method here reads or changes runs
//! only through the core's operations, under the caller's Subject. Binding-neutral:
//! JSON-RPC and HTTP+JSON both call these with the same typed request (the generated A2A
//! models, `schemas/v2/a2a-wire.schema.json`), and both write the typed answer.

use crate::status::Lifecycle;
use std::sync::Arc;

use base64::Engine as _;
use openwop_generated::dispatch::A2A_TASK_STATES;
use openwop_generated::dispatch::A2aMethod;
use openwop_generated::errors::A2aError;
use openwop_generated::models::{
    A2aListTasksRequest, A2aListTasksResponse, A2aMessage, A2aRole, A2aSendMessageResponse,
    A2aTask, A2aTaskRequest,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::errors::Fault;
use super::gate::{self, Facts};
use super::project::{self, Projected, Shape, TaskSource};
use super::send::Send;
use super::{A2aConfig, facet_of};
use crate::app::AppState;
use crate::identity::Subject;
use crate::ids::BoundId;
use crate::ops::{
    A2aStart, CreateWith, OpError, OpenInterrupt, RunFilter, RunRecord, Transport, UpdatedCursor,
    run_view,
};
use crate::status::RunStatus;

/// Everything the A2A handlers reach.
#[derive(Clone)]
pub struct A2aState {
    pub app: AppState,
    pub config: Arc<A2aConfig>,
    /// The offer read from [`A2aState::facet`], once: the document never changes while
    /// the process runs, and every request negotiates.
    pub(crate) offer:
        Arc<std::sync::OnceLock<Result<crate::negotiation::Offer, crate::negotiation::OfferError>>>,
}

/// A failure inside the edge that is no operation's (an id or a projection the host
/// made and cannot read back); an operation's goes through [`Fault::host_fault`].
fn internal(e: impl std::fmt::Display) -> Fault {
    tracing::error!(error = %e, "A2A edge failure");
    Fault::internal()
}

/// An operation's failure while reading or writing a task's A2A side state.
fn side_fault(e: OpError) -> Fault {
    Fault::host_fault("A2A task state could not be read or written", e)
}

/// `historyLength`: absent, or a non-negative integer (a numeric string was read as its
/// number by [`super::read`]).
pub(super) fn history_length(n: Option<i64>) -> Result<Option<usize>, Fault> {
    n.map(|n| {
        usize::try_from(n)
            .map_err(|_| Fault::invalid_params("historyLength", "must be a non-negative integer"))
    })
    .transpose()
}

/// Milliseconds since the epoch of an RFC 3339 timestamp (`Z` or a numeric offset).
pub fn parse_timestamp_ms(raw: &str) -> Option<i64> {
    let b = raw.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| {
        raw.get(r)
            .filter(|s| s.bytes().all(|c| c.is_ascii_digit()))
            .and_then(|s| s.parse::<i64>().ok())
    };
    let (y, mo, d, h, mi, s) = (
        num(0..4)?,
        num(5..7)?,
        num(8..10)?,
        num(11..13)?,
        num(14..16)?,
        num(17..19)?,
    );
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut rest = &raw[19..];
    let mut millis = 0;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let padded = format!("{:0<3}", &frac[..digits.min(3)]);
        millis = padded.parse::<i64>().ok()?;
        rest = &frac[digits..];
    }
    let offset_min = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6
            && (rest.starts_with('+') || rest.starts_with('-'))
            && &rest[3..4] == ":" =>
        {
            let sign = if rest.starts_with('-') { -1 } else { 1 };
            sign * (rest[1..3].parse::<i64>().ok()? * 60 + rest[4..6].parse::<i64>().ok()?)
        }
        _ => return None,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400 + h * 3600 + mi * 60 + s) - offset_min * 60) * 1000 + millis)
}

/// A `data` part's value with integral doubles read back as integers. A2A's `data` is a
/// `google.protobuf.Value`, whose numbers are doubles, so protobuf-based peers (the Python
/// SDK) send `60000` as `60000.0`; a workflow's `integer` input must still accept it.
fn integral_numbers(value: &Value) -> Value {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53: beyond it a double is not one integer
    match value {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() <= EXACT => Value::from(f as i64),
            _ => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(integral_numbers).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), integral_numbers(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The text of a message's text parts, joined by newlines; `None` when it has none.
fn text_of(message: &A2aMessage) -> Option<String> {
    let text: Vec<&str> = message
        .parts
        .iter()
        .filter_map(|p| p.text.as_deref())
        .collect();
    (!text.is_empty()).then(|| text.join("\n"))
}

/// The workflow input a message carries: its first object `data` part, else its text
/// (the inputs are the workflow's own, an open object).
fn inputs_of(message: &A2aMessage) -> Value {
    if let Some(data) = message
        .parts
        .iter()
        .find_map(|p| p.data.as_ref().filter(|d| d.is_object()))
    {
        return integral_numbers(data);
    }
    match text_of(message) {
        None => Value::Object(Default::default()),
        Some(text) => Value::Object(
            [("text".to_owned(), Value::String(text))]
                .into_iter()
                .collect(),
        ),
    }
}

/// The resume value a message gives an open interrupt: `metadata.openwop.interrupt.resumeValue`
/// (read by name: `metadata` is open, and the value is whatever the interrupt takes, `null`
/// included), else the first `data` part, else the text.
fn resume_value_of(message: &A2aMessage) -> Option<Value> {
    if let Some(v) = message
        .metadata
        .as_ref()
        .and_then(|m| m.get("openwop"))
        .and_then(|o| o.get("interrupt"))
        .and_then(|i| i.get("resumeValue"))
    {
        return Some(v.clone());
    }
    if let Some(data) = message.parts.iter().find_map(|p| p.data.as_ref()) {
        return Some(integral_numbers(data));
    }
    text_of(message).map(Value::String)
}

/// The idempotency key a messageId becomes: hashed, so any messageId fits the key grammar,
/// and prefixed, so it cannot collide with a REST caller's own keys.
fn idempotency_key(message_id: &str) -> String {
    format!(
        "a2a-message-{}",
        hex::encode(&Sha256::digest(message_id.as_bytes())[..16])
    )
}

fn mint_context_id() -> String {
    format!("ctx-{}", crate::ids::mint_opaque())
}

impl A2aState {
    /// The origin the card's interface URLs start with: the configured public base URL, else
    /// the address the host listens on. Never a request header: a card is the same for every
    /// caller, whatever `Host` it sent.
    pub(crate) fn base_url(&self) -> String {
        self.config
            .public_base_url
            .clone()
            .or_else(|| self.config.listen_base.get().cloned())
            .unwrap_or_else(|| "http://localhost".to_owned())
    }

    pub fn facet(&self) -> Value {
        facet_of(&self.app.discovery.get().document)
    }

    /// A task the caller may read, or the one TaskNotFound answer. An id that is not even
    /// a run id, a foreign tenant and a missing run all end here alike.
    pub(crate) async fn load(&self, subject: &Subject, task_id: &str) -> Result<RunRecord, Fault> {
        let Ok(id) = BoundId::parse_bound(task_id) else {
            return Err(Fault::task_not_found(task_id));
        };
        self.app
            .ops
            .get_run(subject, &id)
            .await
            .map_err(|e| match e.unreadable_run() {
                // Echo the id as the client wrote it.
                Some(_) => Fault::task_not_found(task_id),
                None => e.into(),
            })
    }

    /// The task's contextId: the bound one, else the run id (runs started over REST).
    async fn context_of(&self, run: &RunRecord) -> Result<String, Fault> {
        self.app.ops.a2a_context(run).await.map_err(side_fault)
    }

    pub async fn project(&self, run: &RunRecord, shape: Shape) -> Result<Projected, Fault> {
        self.project_answered(run, shape, self.app.ops.answer(run), false)
            .await
    }

    /// [`Self::project`] for an open stream: its store read is retried through a
    /// transient fault as the stream's watch retries (a stream must not end on a read
    /// its watch would have ridden out).
    pub async fn project_in_stream(
        &self,
        run: &RunRecord,
        shape: Shape,
    ) -> Result<Projected, Fault> {
        self.project_answered(run, shape, self.app.ops.answer(run), true)
            .await
    }

    /// [`Self::project`] with the run's declared answer already rendered.
    async fn project_answered(
        &self,
        run: &RunRecord,
        shape: Shape,
        answer: Option<crate::ops::Answer>,
        in_stream: bool,
    ) -> Result<Projected, Fault> {
        // The open interrupt, contextId and history in one store call.
        let ops = &self.app.ops;
        let side = if in_stream {
            ops.read_for_stream(|| ops.a2a_task(run)).await
        } else {
            ops.a2a_task(run).await
        }
        .map_err(side_fault)?;
        let open = side.open_interrupt;
        let snapshot = run_view(run, open.as_ref())?;
        // The interrupt as the workflow raised it (`{kind, data}`, `data` the node's own
        // open value), which the task's status message carries as a data part.
        let payload = open
            .as_ref()
            .map(|i| json!({"kind": i.kind, "data": i.data}));
        let history = side.history;
        project::task(
            TaskSource {
                snapshot: &snapshot,
                // The bound contextId, else the run id (runs started over REST).
                context_id: side.context_id.as_deref(),
                open_interrupt_payload: payload.as_ref(),
                history: &history,
                answer: answer.as_ref().map(|a| a.artifacts.as_slice()),
            },
            shape,
        )
        .map_err(internal)
    }

    /// SendMessage up to the point where the task exists (created, resumed or replayed);
    /// the caller decides whether to wait for it.
    pub(crate) async fn accept_message(
        &self,
        subject: &Subject,
        method: A2aMethod,
        send: Send<'_>,
    ) -> Result<(RunRecord, Option<usize>, bool), Fault> {
        let mut facts = Facts {
            has_task_id: send.task_id.is_some(),
            return_immediately: send.return_immediately,
            inline_push_config: send.inline_push.is_some(),
            ..Facts::default()
        };
        let Some(task_id) = send.task_id.as_deref() else {
            // The inline configuration is judged before the run exists, so a refused URL
            // changes nothing.
            let inline = match &send.inline_push {
                Some((key, raw)) => {
                    let at = format!("configuration.{key}");
                    let config = super::push::config::parse_config(raw, &at)?;
                    self.check_push_url(&config, &at).await?;
                    Some(config)
                }
                None => None,
            };
            let (run, replay) = self.create(subject, &send).await?;
            // A replayed message registered its configuration the first time.
            if let Some(config) = inline
                && !replay
            {
                self.store_push_config(&run, config).await?;
            }
            return Ok((run, send.history_length, send.return_immediately));
        };
        let run = self.load(subject, task_id).await?;
        let status = run.status;
        facts.task_suspended = status.is_suspended();
        facts.task_terminal = status.is_terminal();
        // The dispatcher judged the rows a request alone decides; these depend on the
        // named task's state, known only now.
        gate::check(method.as_str(), &facts, &self.app.discovery.get().document)?;
        let context = self.context_of(&run).await?;
        if send.context_id.as_ref().is_some_and(|c| *c != context) {
            return Err(Fault::invalid_params(
                "message.contextId",
                "is not the contextId of the task named by message.taskId",
            ));
        }
        if facts.task_terminal {
            return Err(Fault::unsupported(
                "the task is in a terminal state and takes no more messages",
            ));
        }
        if !facts.task_suspended {
            return Err(Fault::unsupported(
                "the task is working and its workflow declares no input path for messages",
            ));
        }
        let open = self
            .app
            .ops
            .open_interrupt(&run)
            .await
            .map_err(side_fault)?
            .ok_or_else(|| Fault::unsupported("the task has no open interrupt to answer"))?;
        if let Some(node) = &send.interrupt_node
            && *node != open.node_id
        {
            return Err(Fault::invalid_params(
                "message.metadata.openwop.interrupt.nodeId",
                "does not name the task's open interrupt",
            ));
        }
        let value = resume_value_of(&send.typed)
            .ok_or_else(|| Fault::invalid_params("message.parts", "carry no resume value"))?;
        // The status message asks a person to "reply accept, reject": a text reply that
        // names an offered action is that approval answer. Anything else goes to the run's
        // own check, which names the offered actions when it refuses.
        let value = match (&value, open.kind.as_str()) {
            (Value::String(text), "approval")
                if crate::ops::offered_actions(&open.data)
                    .iter()
                    .any(|a| a == text.trim()) =>
            {
                // The approval's answer (OpenWOP's interrupt resolution, an open value).
                json!({"action": text.trim()})
            }
            _ => value,
        };
        let id = BoundId::parse_bound(&run.run_id).map_err(internal)?;
        let resumed = self
            .app
            .ops
            .resolve_interrupt(subject, &id, &open.node_id, value)
            .await
            .map_err(|e| match e {
                OpError::Validation { message, .. } => Fault::invalid_params("message", message),
                e => e.into(),
            })?;
        let mut message = send.message.clone();
        message["taskId"] = Value::String(run.run_id.clone());
        message["contextId"] = Value::String(context);
        self.app
            .ops
            .a2a_append_message(&run, message)
            .await
            .map_err(side_fault)?;
        Ok((resumed, send.history_length, send.return_immediately))
    }

    async fn create(&self, subject: &Subject, send: &Send<'_>) -> Result<(RunRecord, bool), Fault> {
        let workflow_id = self.skill_for(subject, send)?;
        let request = crate::ops::run_request(&workflow_id, inputs_of(&send.typed))?;
        // The task's context and first message are written with the run, in one
        // transaction; a replayed messageId keeps the task as it was bound the first time.
        let message = send.message.clone();
        let start = A2aStart {
            context_id: send.context_id.clone().unwrap_or_else(mint_context_id),
            message_id: send.message_id.clone(),
            message: Box::new(move |run_id, context| {
                let mut message = message;
                message["taskId"] = Value::String(run_id.to_owned());
                message["contextId"] = Value::String(context.to_owned());
                message
            }),
        };
        let with = CreateWith {
            a2a: Some(start),
            // An inline push configuration is stored after the creation: the run must
            // not finish before it is in place.
            start_later: send.inline_push.is_some(),
            // The trace the message carries (`metadata.openwop`); the header's is not
            // visible here, and the message is the carrier A2A names first.
            trace: crate::trace::select(
                send.typed.metadata.as_ref().and_then(|m| m.get("openwop")),
                None,
                None,
            )
            .map(|tc| tc.traceparent),
            ..CreateWith::default()
        };
        let created = self
            .app
            .ops
            .create_run_with(
                subject,
                request,
                Transport::A2a,
                Some(&idempotency_key(&send.message_id)),
                with,
            )
            .await
            .map_err(|e| match e {
                OpError::Validation { message, .. } => {
                    Fault::invalid_params("message.parts", message)
                }
                e => e.into(),
            })?;
        Ok((created.run, created.replay))
    }

    /// The skill a new task runs. Through an agent's card (`tenant` set to its routing
    /// value R): the skill `metadata.openwop.skill` names among that agent's workflows,
    /// else the agent's default. Through the host card: the named skill, else the host's
    /// default skill, else the caller's only workflow. An R outside the caller's
    /// inventory is refused exactly as one never minted; a skill the caller may not run
    /// is refused exactly as one the host does not have.
    fn skill_for(&self, subject: &Subject, send: &Send<'_>) -> Result<String, Fault> {
        const FIELD: &str = "message.metadata.openwop.skill";
        let named = send.skill.as_deref();
        let no_skill =
            |id: &str| Fault::invalid_params(FIELD, format!("no skill `{id}` on this host"));
        let ops = &self.app.ops;
        let agent = match send.tenant.as_deref() {
            None => None,
            Some(r) => Some(ops.agent_by_routing_value(subject, r).ok_or_else(|| {
                Fault::invalid_params("tenant", "names no agent card this caller can reach")
            })?),
        };
        match (named, agent) {
            (Some(id), Some(entry)) if entry.workflows.iter().any(|w| w.as_str() == id) => {
                Ok(id.to_owned())
            }
            (Some(id), Some(_)) => Err(no_skill(id)),
            // Whether the caller may run it is decided once, by createRun (the same answer).
            (Some(id), None) => Ok(id.to_owned()),
            (None, Some(entry)) => ops
                .agent_default_skill(&entry)
                .ok_or_else(|| Fault::invalid_params(FIELD, "name one of the card's skills")),
            (None, None) => {
                if let Some(default) = self
                    .config
                    .default_skill
                    .as_deref()
                    .filter(|d| ops.may_run(subject, d))
                {
                    return Ok(default.to_owned());
                }
                match ops.list_workflows(subject).as_slice() {
                    [only] => Ok(only.definition.id.to_string()),
                    _ => Err(Fault::invalid_params(
                        FIELD,
                        "name one of the card's skills",
                    )),
                }
            }
        }
    }

    /// SendMessage: accept, then wait (unless returnImmediately), then answer the Task.
    pub(crate) async fn send_message(
        &self,
        subject: &Subject,
        send: Send<'_>,
    ) -> Result<A2aSendMessageResponse, Fault> {
        let (run, history, immediate) = self
            .accept_message(subject, A2aMethod::SendMessage, send)
            .await?;
        let run = if immediate {
            run
        } else {
            self.app
                .ops
                .settle(
                    subject,
                    run,
                    |s| s.is_suspended(),
                    self.config.blocking_timeout,
                )
                .await?
        };
        // A workflow that answers quickly as a Message (`answer.asMessage`) does so when
        // its run completed within this call; anything else is a Task.
        let answer = self.app.ops.answer(&run);
        if let Some(answer) = answer.as_ref().filter(|a| a.as_message) {
            let parts: Vec<crate::ops::Part> = answer
                .artifacts
                .iter()
                .flat_map(|a| a.parts.iter().cloned())
                .collect();
            let context_id = self.context_of(&run).await?;
            return Ok(A2aSendMessageResponse {
                message: Some(A2aMessage {
                    // Derived from the task, so a re-read names the same message.
                    message_id: Some(format!("{}:answer", run.run_id)),
                    context_id: Some(context_id),
                    task_id: Some(run.run_id.clone()),
                    role: Some(A2aRole::RoleAgent),
                    parts: project::a2a_parts(&parts),
                    metadata: None,
                    extensions: Vec::new(),
                    reference_task_ids: Vec::new(),
                }),
                task: None,
            });
        }
        let shape = Shape {
            history_length: history,
            include_artifacts: true,
        };
        let projected = self.project_answered(&run, shape, answer, false).await?;
        Ok(A2aSendMessageResponse {
            task: Some(projected.task),
            message: None,
        })
    }

    /// SubscribeToTask up to the first event: a live task the caller can read.
    pub async fn subscribe(
        &self,
        subject: &Subject,
        request: A2aTaskRequest,
    ) -> Result<(RunRecord, Option<usize>), Fault> {
        let run = self.load(subject, &request.id).await?;
        if run.status.is_terminal() {
            return Err(Fault::unsupported(
                "the task is in a terminal state; read it with GetTask",
            ));
        }
        Ok((run, history_length(request.history_length)?))
    }

    pub async fn get_task(
        &self,
        subject: &Subject,
        request: A2aTaskRequest,
    ) -> Result<A2aTask, Fault> {
        let history = history_length(request.history_length)?;
        let run = self.load(subject, &request.id).await?;
        Ok(self
            .project(
                &run,
                Shape {
                    history_length: history,
                    include_artifacts: true,
                },
            )
            .await?
            .task)
    }

    pub async fn cancel_task(
        &self,
        subject: &Subject,
        request: A2aTaskRequest,
    ) -> Result<A2aTask, Fault> {
        let id = request.id.as_str();
        let run = self.load(subject, id).await?;
        let bound = BoundId::parse_bound(&run.run_id).map_err(internal)?;
        let run = self
            .app
            .ops
            .cancel_run(subject, &bound, None)
            .await
            .map_err(|e| match e {
                OpError::RunTerminal { .. } => Fault::a2a(
                    A2aError::TaskNotCancelable,
                    "the task is already in a terminal state",
                ),
                e if e.unreadable_run().is_some() => Fault::task_not_found(id),
                e => e.into(),
            })?;
        Ok(self.project(&run, Shape::default()).await?.task)
    }

    /// ListTasks: exactly the runs `listRuns` gives this Subject, filtered and paged here.
    pub async fn list_tasks(
        &self,
        subject: &Subject,
        request: A2aListTasksRequest,
    ) -> Result<A2aListTasksResponse, Fault> {
        let page_size = match request.page_size {
            None => 50,
            Some(n) if (1..=100).contains(&n) => n as usize,
            Some(_) => {
                return Err(Fault::invalid_params(
                    "pageSize",
                    "must be between 1 and 100",
                ));
            }
        };
        let history = history_length(request.history_length)?;
        let include_artifacts = request.include_artifacts.unwrap_or(false);
        let context_filter = request.context_id.filter(|s| !s.is_empty());
        // An unset status arrives as UNSPECIFIED, or as UNRECOGNIZED from the JS SDK's
        // serializer; both mean "no filter".
        let status_filter = match request
            .status
            .as_ref()
            .map(AsRef::<str>::as_ref)
            .filter(|s| !s.is_empty() && !matches!(*s, "TASK_STATE_UNSPECIFIED" | "UNRECOGNIZED"))
        {
            None => None,
            Some(wire) => match A2A_TASK_STATES.iter().find(|r| r.wire == wire) {
                Some(row) => Some(row.wire),
                None => {
                    return Err(Fault::invalid_params(
                        "status",
                        "is not a task state this host produces",
                    ));
                }
            },
        };
        let after_ms = match request.status_timestamp_after.as_deref() {
            None => None,
            Some(raw) => Some(parse_timestamp_ms(raw).ok_or_else(|| {
                Fault::invalid_params("statusTimestampAfter", "is not an RFC 3339 timestamp")
            })?),
        };
        let after = match request.page_token.as_deref().filter(|s| !s.is_empty()) {
            None => None,
            Some(token) => Some(decode_page_token(token).ok_or_else(|| {
                Fault::invalid_params("pageToken", "is not a token this host issued")
            })?),
        };
        // The candidate set is listRuns under this Subject; every filter runs in the
        // store, newest status change first (the run id breaks ties, so paging never
        // skips or repeats).
        let mut filter = status_filter.map(filter_for_state).unwrap_or_default();
        filter.context_id = context_filter;
        filter.updated_since_ms = after_ms;
        let (runs, next, total) = self
            .app
            .ops
            .runs_by_update(subject, filter, after, page_size)
            .await?;
        let mut tasks = Vec::with_capacity(runs.len());
        for run in &runs {
            let projected = self
                .project(
                    run,
                    Shape {
                        history_length: history,
                        include_artifacts,
                    },
                )
                .await?;
            tasks.push(projected.task);
        }
        Ok(A2aListTasksResponse {
            tasks,
            next_page_token: next.as_ref().map(encode_page_token).unwrap_or_default(),
            page_size: page_size as u64,
            total_size: total,
        })
    }
}

/// The runs whose projected A2A state is `wire`, as the generated task-state table
/// says: the statuses of its rows, and, where a row of another state overrides one of
/// them for an interrupt kind (waiting-input with a credential interrupt is
/// auth-required), that kind excluded, or required when `wire` is the override's.
fn filter_for_state(wire: &str) -> RunFilter {
    let rows: Vec<_> = A2A_TASK_STATES.iter().filter(|r| r.wire == wire).collect();
    let statuses: Vec<RunStatus> = rows.iter().map(|r| r.run_status).collect();
    let required: Vec<String> = rows
        .iter()
        .filter_map(|r| r.interrupt_kind.map(str::to_owned))
        .collect();
    let open_interrupt = if !required.is_empty() {
        Some(OpenInterrupt::OfKind(required))
    } else {
        let excluded: Vec<String> = A2A_TASK_STATES
            .iter()
            .filter(|r| r.wire != wire && statuses.contains(&r.run_status))
            .filter_map(|r| r.interrupt_kind.map(str::to_owned))
            .collect();
        (!excluded.is_empty()).then_some(OpenInterrupt::NotOfKind(excluded))
    };
    RunFilter {
        statuses,
        open_interrupt,
        ..RunFilter::default()
    }
}

/// A page token: where the previous page stopped, by last update then run id.
fn encode_page_token(cursor: &UpdatedCursor) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(format!("a2a-list:{}:{}", cursor.updated_ms, cursor.run_id))
}

fn decode_page_token(token: &str) -> Option<UpdatedCursor> {
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (updated_ms, run_id) = text.strip_prefix("a2a-list:")?.split_once(':')?;
    Some(UpdatedCursor {
        updated_ms: updated_ms.parse().ok()?,
        run_id: run_id.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client's message with these members (messageId and role filled in).
    fn message(members: Value) -> A2aMessage {
        let mut m = json!({"messageId": "m", "role": "ROLE_USER"});
        for (k, v) in members.as_object().expect("members") {
            m[k] = v.clone();
        }
        serde_json::from_value(m).expect("a message")
    }

    #[test]
    fn timestamps_parse_with_z_fractions_and_offsets() {
        assert_eq!(parse_timestamp_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_timestamp_ms("1970-01-01T00:00:01.5Z"), Some(1500));
        assert_eq!(parse_timestamp_ms("1970-01-01T01:00:00+01:00"), Some(0));
        assert_eq!(
            parse_timestamp_ms("2026-12-02T18:00:00.000Z"),
            Some(1_796_234_400_000)
        );
        for bad in [
            "",
            "2026-12-02",
            "2026-12-02T18:00:00",
            "2026-13-02T18:00:00Z",
            "yesterday",
        ] {
            assert_eq!(parse_timestamp_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn message_parts_become_inputs_and_resume_values() {
        let m = message(json!({"parts": [{"text": "hi"}, {"data": {"a": 1}}]}));
        assert_eq!(inputs_of(&m), json!({"a": 1}));
        assert_eq!(
            inputs_of(&message(json!({"parts": [{"text": "hi"}]}))),
            json!({"text": "hi"})
        );
        assert_eq!(resume_value_of(&m), Some(json!({"a": 1})));
        let with_meta = message(
            json!({"parts": [{"text": "x"}], "metadata": {"openwop": {"interrupt": {"resumeValue": "accept"}}}}),
        );
        assert_eq!(resume_value_of(&with_meta), Some(json!("accept")));
    }

    #[test]
    fn integral_doubles_from_protobuf_peers_become_integers() {
        let m = message(
            json!({"parts": [{"data": {"ms": 60000.0, "ratio": 0.5, "list": [1.0, 2.5], "big": 1e300}}]}),
        );
        let inputs = inputs_of(&m);
        assert!(inputs["ms"].is_i64(), "{inputs}");
        assert_eq!(inputs["ms"], json!(60000));
        assert_eq!(inputs["ratio"], json!(0.5));
        assert_eq!(inputs["list"], json!([1, 2.5]));
        assert!(inputs["big"].is_f64());
    }

    #[test]
    fn idempotency_keys_fit_the_key_grammar_for_any_message_id() {
        let key = idempotency_key("any thing\u{1F600}");
        assert!(key.len() <= 255 && key.bytes().all(|b| (0x21..0x7f).contains(&b)));
        assert_eq!(key, idempotency_key("any thing\u{1F600}"));
        assert_ne!(key, idempotency_key("other"));
    }

    #[test]
    fn page_tokens_round_trip_and_reject_foreign_ones() {
        let cursor = UpdatedCursor {
            updated_ms: 150,
            run_id: "acme/r-1".into(),
        };
        assert_eq!(decode_page_token(&encode_page_token(&cursor)), Some(cursor));
        assert_eq!(decode_page_token("bm9wZQ"), None);
    }

    /// Every wire state's filter admits exactly the runs the generated table projects to
    /// that state, over every run that can exist: a suspended run has the open interrupt
    /// whose kind put it in its status, any other run has none.
    #[test]
    fn state_filters_select_exactly_the_runs_that_project_to_the_state() {
        let mut runs: Vec<(RunStatus, Option<&str>)> = RunStatus::ALL
            .iter()
            .filter(|s| !s.is_suspended())
            .map(|s| (*s, None))
            .collect();
        // Which status each interrupt kind suspends a run in is the workflow definition
        // schema's rule (engine::status tests it); an edge test states it, not imports it.
        runs.extend([
            (RunStatus::WaitingApproval, Some("approval")),
            (RunStatus::WaitingInput, Some("clarification")),
            (RunStatus::WaitingInput, Some("credential")),
            (RunStatus::WaitingExternal, Some("external-event")),
        ]);
        let mut wires: Vec<&str> = A2A_TASK_STATES.iter().map(|r| r.wire).collect();
        wires.sort_unstable();
        wires.dedup();
        for wire in wires {
            let filter = filter_for_state(wire);
            for &(status, kind) in &runs {
                let projected = openwop_generated::dispatch::a2a_task_state(status, kind).wire;
                let has = |kinds: &[String]| kind.is_some_and(|k| kinds.iter().any(|x| x == k));
                let admitted = filter.statuses.contains(&status)
                    && match &filter.open_interrupt {
                        None => true,
                        Some(OpenInterrupt::OfKind(k)) => has(k),
                        Some(OpenInterrupt::NotOfKind(k)) => !has(k),
                    };
                assert_eq!(
                    admitted,
                    projected == wire,
                    "{wire}: {status:?} with {kind:?}"
                );
            }
        }
    }
}
