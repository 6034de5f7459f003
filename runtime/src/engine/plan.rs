//! What a run's nodes do, decided in memory: the planner turns the run's current node
//! (and the ones after it, up to a wait, a question, an outside call or the per-commit
//! cap) into one patch and its events, which the driver ([`super::drive`]) commits in
//! one guarded transaction.

use super::artifacts;
use super::call_state;
use super::definition::{self, Instr, Node};
use super::events;
use super::executor::{
    Engine, EngineError, SuspendedAt, context, failure, payload_error, with_node_result,
};
use super::registry::Workflow;
use super::status;
use super::template;
use crate::clock::now_ms;
use crate::status::RunStatus;
use crate::store::{Guard, NewEvent, NewInterrupt, RunPatch, RunRecord};
use serde_json::{Map, Value, json};

/// How many nodes one commit may cover: a long chain of instant nodes still shows
/// progress, and a transaction stays small.
const MAX_NODES_PER_COMMIT: usize = 64;

/// What one node does to the run, decided in memory.
enum Planned {
    /// Applied, and the next node may follow in the same commit.
    Next(RunPatch, Vec<NewEvent>),
    /// Applied, then committed; the run has ended (completed or failed).
    End(RunPatch, Vec<NewEvent>),
    /// Applied, then committed; the run waits on a deadline it now stores.
    Wait(RunPatch, Vec<NewEvent>),
    /// Applied, then committed; the run is suspended on this interrupt.
    Suspend(RunPatch, Vec<NewEvent>, SuspendedAt),
    /// Applied, then committed; the next step makes the node's outside call.
    Call(RunPatch, Vec<NewEvent>),
}

/// Steps decided in memory, committed together: the run as it will stand, the one
/// patch that gets it there from the stored run, and every event in order. The guard is
/// the stored status the batch started from, so a cancel committed meanwhile wins.
pub(super) struct Batch {
    pub(super) run: RunRecord,
    pub(super) guard: Guard,
    pub(super) patch: RunPatch,
    pub(super) events: Vec<NewEvent>,
    nodes: usize,
}

impl Batch {
    pub(super) fn new(run: RunRecord) -> Batch {
        let guard = match run.status {
            RunStatus::Pending => Guard::StatusIn(&[RunStatus::Pending]),
            _ => running(),
        };
        Batch {
            run,
            guard,
            patch: RunPatch::default(),
            events: Vec::new(),
            nodes: 0,
        }
    }

    /// Adds one step: later fields win, events append, and the in-memory run follows.
    pub(super) fn apply(&mut self, step: RunPatch, events: Vec<NewEvent>) {
        let run = &mut self.run;
        if let Some(s) = step.status {
            run.status = s;
            self.patch.status = Some(s);
        }
        if let Some(n) = step.node_index {
            run.node_index = n;
            self.patch.node_index = Some(n);
        }
        if let Some(w) = step.wait_until {
            run.wait_until = w;
            self.patch.wait_until = Some(w);
        }
        if let Some(state) = step.state {
            run.state = state.clone();
            self.patch.state = Some(state);
        }
        if let Some(outputs) = step.outputs {
            run.outputs = Some(outputs.clone());
            self.patch.outputs = Some(outputs);
        }
        if let Some(error) = step.error {
            run.error = Some(error.clone());
            self.patch.error = Some(error);
        }
        if step.open_interrupt.is_some() {
            self.patch.open_interrupt = step.open_interrupt;
        }
        self.patch.close_interrupts |= step.close_interrupts;
        self.events.extend(events);
    }
}

fn running() -> Guard {
    Guard::StatusIn(&[RunStatus::Running])
}

/// The exported span of one step of `run` at its current node (none without a collector,
/// or past the last node): a child of the trace the run was created in.
pub(super) fn step_span(wf: &Workflow, run: &RunRecord) -> tracing::Span {
    if !crate::observe::otel::on() {
        return tracing::Span::none();
    }
    let Some(instr) = usize::try_from(run.node_index)
        .ok()
        .and_then(|i| wf.program.get(i))
    else {
        return tracing::Span::none();
    };
    let kind = match instr {
        Instr::LoopStart { .. } | Instr::LoopEnd { .. } => "core.repeat",
        Instr::Node(node) => match node {
            Node::Transform { .. } => "core.transform",
            Node::Wait { .. } => "core.wait",
            Node::Fail { .. } => "core.fail",
            Node::Interrupt { .. } => "core.interrupt",
            Node::A2a { .. } => "core.a2a",
            Node::Mcp { .. } => "core.mcp",
            Node::McpClient { .. } => "core.mcp-client",
            Node::Http { .. } => "core.http",
            Node::Repeat { .. } => "core.repeat",
        },
    };
    let trace = run
        .state
        .get(crate::peers::TRACE_STATE_KEY)
        .and_then(Value::as_str);
    crate::observe::otel::step_span(&run.run_id, &run.workflow_id, instr.id(), kind, trace)
}

/// Marks a step span failed when the step failed the run.
pub(super) fn step_outcome(span: &tracing::Span, patch: &RunPatch) {
    if patch.status == Some(RunStatus::Failed) {
        let error = patch.error.as_ref();
        let text = |k: &str| {
            error
                .and_then(|e| e.get(k))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        crate::observe::otel::step_failed(span, &text("code"), &text("message"));
    }
}

/// A node (or block) whose `when` rendered falsy: no events, no value, on to `next`.
fn skipped(run: &RunRecord, id: &str, next: i64) -> Planned {
    let mut state = run.state.as_object().cloned().unwrap_or_default();
    if let Some(Value::Object(nodes)) = state.get_mut("nodes") {
        nodes.remove(id);
    }
    Planned::Next(
        RunPatch {
            node_index: Some(next),
            state: Some(Value::Object(state)),
            ..Default::default()
        },
        vec![],
    )
}

/// The state with a block's pass count set, or removed once the block is done.
fn with_passes(state: &Value, id: &str, passes: Option<u64>) -> Value {
    let mut state = state.as_object().cloned().unwrap_or_default();
    let loops = state
        .entry("loops")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = loops {
        match passes {
            Some(n) => {
                m.insert(id.to_owned(), json!(n));
            }
            None => {
                m.remove(id);
            }
        }
    }
    if state
        .get("loops")
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty)
    {
        state.remove("loops");
    }
    Value::Object(state)
}

impl Engine {
    /// Plans nodes in memory from `batch.run` as far as they go without waiting, input or
    /// an outside call, onto `batch`; true when the run has more to do after this commit
    /// (a wait, a call, the per-commit cap), with `suspended` set when it suspends.
    pub(super) fn plan_batch(
        &self,
        wf: &Workflow,
        batch: &mut Batch,
        suspended: &mut Option<SuspendedAt>,
    ) -> Result<bool, EngineError> {
        Ok(loop {
            match batch.run.status {
                RunStatus::Pending => {
                    let ev = events::run_started(&batch.run)
                        .map_err(payload_error(&batch.run.run_id))?;
                    let start = RunPatch {
                        status: Some(RunStatus::Running),
                        ..Default::default()
                    };
                    batch.apply(start, vec![ev]);
                }
                RunStatus::Running => match self.plan_node(wf, &batch.run)? {
                    Planned::Next(patch, events) => batch.apply(patch, events),
                    Planned::End(patch, events) => {
                        batch.apply(patch, events);
                        break false;
                    }
                    Planned::Wait(patch, events) => {
                        batch.apply(patch, events);
                        break true;
                    }
                    Planned::Suspend(patch, events, at) => {
                        batch.apply(patch, events);
                        *suspended = Some(at);
                        break false;
                    }
                    Planned::Call(patch, events) => {
                        batch.apply(patch, events);
                        break true;
                    }
                },
                _ => break false,
            }
            batch.nodes += 1;
            if batch.nodes >= MAX_NODES_PER_COMMIT {
                break true;
            }
        })
    }

    /// [`Engine::plan_node_untraced`] in the run step's exported span (none without a
    /// collector).
    fn plan_node(&self, wf: &Workflow, run: &RunRecord) -> Result<Planned, EngineError> {
        let span = step_span(wf, run);
        let _entered = span.enter();
        let planned = self.plan_node_untraced(wf, run);
        if let Ok(Planned::End(patch, _)) = &planned {
            step_outcome(&span, patch);
        }
        planned
    }

    /// What the run's current node does, decided in memory from the run as it stands.
    fn plan_node_untraced(&self, wf: &Workflow, run: &RunRecord) -> Result<Planned, EngineError> {
        let def = &wf.definition;
        let ctx = context(run);
        let index = usize::try_from(run.node_index).unwrap_or(usize::MAX);
        let invalid = payload_error(&run.run_id);
        let Some(instr) = wf.program.get(index) else {
            // Past the last node: the run is done.
            let rendered = def
                .outputs
                .as_ref()
                .map(|t| template::render(t, &ctx))
                .unwrap_or_else(|| json!({}));
            let outputs = match rendered {
                Value::Object(_) => rendered,
                Value::Null => json!({}),
                other => json!({"value": other}),
            };
            let ev = events::run_completed(run, &outputs);
            let patch = RunPatch {
                status: Some(RunStatus::Completed),
                outputs: Some(outputs),
                ..Default::default()
            };
            return Ok(Planned::End(patch, vec![ev]));
        };
        let next = run.node_index + 1;
        let node = match instr {
            Instr::LoopStart { id, when, end } => {
                if let Some(when) = when
                    && !template::truthy(&template::render(when, &ctx))
                {
                    return Ok(skipped(run, id, *end as i64 + 1));
                }
                let state = with_passes(&run.state, id, Some(0));
                let patch = RunPatch {
                    node_index: Some(next),
                    state: Some(state),
                    ..Default::default()
                };
                let started = events::node_started(id, "core.repeat").map_err(invalid)?;
                return Ok(Planned::Next(patch, vec![started]));
            }
            Instr::LoopEnd {
                id,
                start,
                max,
                until,
            } => {
                let passes = run
                    .state
                    .get("loops")
                    .and_then(|l| l.get(id.as_str()))
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
                    + 1;
                let satisfied = until
                    .as_ref()
                    .is_some_and(|u| template::truthy(&template::render(u, &ctx)));
                if !satisfied && passes < *max {
                    let patch = RunPatch {
                        node_index: Some(*start as i64 + 1),
                        state: Some(with_passes(&run.state, id, Some(passes))),
                        ..Default::default()
                    };
                    return Ok(Planned::Next(patch, vec![]));
                }
                let value = json!({"passes": passes, "satisfied": satisfied});
                let completed = events::node_completed(id, Some(&value)).map_err(invalid)?;
                let state = with_node_result(&with_passes(&run.state, id, None), id, value);
                let patch = RunPatch {
                    node_index: Some(next),
                    state: Some(state),
                    ..Default::default()
                };
                return Ok(Planned::Next(patch, vec![completed]));
            }
            Instr::Node(node) => node,
        };
        let node_id = definition::node_id(node);
        if let Some(when) = definition::when_of(node)
            && !template::truthy(&template::render(when, &ctx))
        {
            return Ok(skipped(run, node_id, next));
        }
        let invalid = payload_error(&run.run_id);
        Ok(match node {
            Node::A2a { .. } | Node::Mcp { .. } | Node::Http { .. } | Node::McpClient { .. } => {
                // The call itself happens outside the transaction: first the node starts
                // and what its call needs is stored, so a restart resumes it.
                let kind = match node {
                    Node::A2a { .. } => "core.a2a",
                    Node::Mcp { .. } => "core.mcp",
                    Node::McpClient { .. } => "core.mcp-client",
                    _ => "core.http",
                };
                let patch = RunPatch {
                    state: Some(call_state::begin(&run.state, node_id)),
                    ..Default::default()
                };
                Planned::Call(
                    patch,
                    vec![events::node_started(node_id, kind).map_err(invalid)?],
                )
            }
            Node::Repeat { .. } => {
                // `definition::compile` turns every block into markers.
                return Err(EngineError::Payload {
                    run_id: run.run_id.clone(),
                    message: format!("node `{node_id}`: a block reached the executor uncompiled"),
                });
            }
            Node::Transform {
                value, artifact, ..
            } => {
                let out = template::render(value, &ctx);
                let mut events =
                    vec![events::node_started(node_id, "core.transform").map_err(invalid)?];
                let mut state = run.state.clone();
                if let Some(artifact) = artifact {
                    let (recorded, id) = artifacts::record(
                        &state,
                        node_id,
                        &artifact.artifact_type,
                        artifact.name.as_deref().map(|n| n.as_str()),
                        &out,
                    );
                    state = recorded;
                    events.push(
                        events::artifact_created(&id, &artifact.artifact_type, node_id)
                            .map_err(payload_error(&run.run_id))?,
                    );
                }
                events.push(
                    events::node_completed(node_id, Some(&out))
                        .map_err(payload_error(&run.run_id))?,
                );
                let patch = RunPatch {
                    node_index: Some(next),
                    state: Some(with_node_result(&state, node_id, out)),
                    ..Default::default()
                };
                Planned::Next(patch, events)
            }
            Node::Fail { code, message, .. } => {
                let message = template::render(&json!(message.as_str()), &ctx);
                let (patch, mut events) = failure(
                    run,
                    code,
                    message.as_str().unwrap_or_default(),
                    Some(node_id),
                );
                events.insert(
                    0,
                    events::node_started(node_id, "core.fail").map_err(invalid)?,
                );
                // The node failed, then the run: `node.failed` carries the same error.
                let error = events::error_object(code, message.as_str().unwrap_or_default());
                events.insert(
                    1,
                    events::node_failed(node_id, error).map_err(payload_error(&run.run_id))?,
                );
                Planned::End(patch, events)
            }
            Node::Wait { .. } => {
                // `definition::parse` refused a wait without exactly one amount.
                let (amount, unit_ms) = definition::wait_amount(node).unwrap_or((Value::Null, 0));
                let amount = match amount {
                    Value::String(s) => template::render(&json!(s), &ctx),
                    other => other.clone(),
                };
                let ms = amount
                    .as_u64()
                    .and_then(|v| v.checked_mul(unit_ms))
                    .and_then(|v| i64::try_from(v).ok());
                let Some(amount) = ms else {
                    let (patch, events) = failure(
                        run,
                        "validation_error",
                        &format!(
                            "node `{}`: the wait time is not a non-negative integer",
                            node_id
                        ),
                        Some(node_id),
                    );
                    return Ok(Planned::End(patch, events));
                };
                // The deadline is stored with the commit, so a restarted host keeps it.
                let patch = RunPatch {
                    wait_until: Some(Some(now_ms().saturating_add(amount))),
                    ..Default::default()
                };
                let started = events::node_started(node_id, "core.wait").map_err(invalid)?;
                Planned::Wait(patch, vec![started])
            }
            Node::Interrupt { interrupt, .. } => {
                let data = interrupt
                    .data
                    .clone()
                    .map_or_else(|| json!({}), Value::Object);
                let data = template::render(&data, &ctx);
                let interrupt_id = crate::ids::mint_bound(&run.tenant).as_bound();
                let kind = definition::kind_str(interrupt.kind);
                let [requested, suspended] =
                    events::suspension(&run.run_id, node_id, &interrupt_id, kind, &data)
                        .map_err(payload_error(&run.run_id))?;
                let started = events::node_started(node_id, "core.interrupt").map_err(invalid)?;
                let patch = RunPatch {
                    status: Some(status::suspended_status(interrupt.kind)),
                    open_interrupt: Some(NewInterrupt {
                        node_id: node_id.to_owned(),
                        interrupt_id: interrupt_id.clone(),
                        kind: kind.into(),
                        data,
                    }),
                    ..Default::default()
                };
                let events = vec![started, requested, suspended];
                Planned::Suspend(
                    patch,
                    events,
                    SuspendedAt {
                        node_id: node_id.to_owned(),
                        interrupt_id,
                        kind: kind.to_owned(),
                    },
                )
            }
        })
    }
}
