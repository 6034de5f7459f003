//! The tasks extension's methods: `tasks/get`, `tasks/update`, `tasks/cancel`, and the
//! Task a run is shown as (also the answer of a call that became a task).

use rmcp::model::{ErrorCode, ErrorData};
use serde_json::Value;

use super::McpState;
use super::ctx::{Ctx, internal, unknown_task};
use super::elicit::{self, Answer, Asked, Modes, Needs};
use super::rpc::{INTERNAL_ERROR, RpcError};
use super::wire::{
    self, Ack, InputRequests, ResultType, Task, TaskAnswer, TaskFailure, TaskParams, TaskStatus,
    UpdateTaskParams,
};
use crate::generated::dispatch::mcp_task_status;
use crate::identity::Subject;
use crate::ids::BoundId;
use crate::ops::{OpError, RunRecord};
use crate::status::Lifecycle;

/// What a task's poller is told to wait between polls.
const POLL_INTERVAL_MS: u64 = 500;

impl McpState {
    /// A run the caller may read, or the one unknown-task answer. The taskId is the run id
    /// in its projected form (`acme~2F…`, the form every answer gives); the bound form
    /// (`acme/…`) is read too.
    pub(crate) async fn load_task(
        &self,
        subject: &Subject,
        task_id: &str,
    ) -> Result<RunRecord, RpcError> {
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
    ) -> Result<TaskAnswer, RpcError> {
        self.task_view_with(run, detailed, modes, false).await
    }

    /// [`Self::task_view`] for an open stream (`subscriptions/listen`): its store read
    /// rides out a transient fault as the stream's watch does.
    pub(crate) async fn task_view_in_stream(
        &self,
        run: &RunRecord,
        modes: Modes,
    ) -> Result<TaskAnswer, RpcError> {
        self.task_view_with(run, true, modes, true).await
    }

    async fn task_view_with(
        &self,
        run: &RunRecord,
        detailed: bool,
        modes: Modes,
        in_stream: bool,
    ) -> Result<TaskAnswer, RpcError> {
        let status = run.status;
        let by_host = self.app.ops.failed_by_host(run);
        let mut task = Task::new(
            crate::ids::project(&run.run_id),
            if by_host {
                TaskStatus::Failed
            } else {
                task_status(mcp_task_status(status))?
            },
            crate::clock::rfc3339(run.created_ms),
            crate::clock::rfc3339(run.updated_ms),
        )
        .with_poll_interval_ms(POLL_INTERVAL_MS);
        let mut answer = TaskAnswer {
            result_type: Some(if detailed {
                ResultType::COMPLETE
            } else {
                ResultType::TASK
            }),
            task: Task::default(),
            result: None,
            error: None,
            input_requests: None,
        };
        if !detailed {
            answer.task = task;
            return Ok(answer);
        }
        if by_host {
            // The one case the task status `failed` is for: the host raised the error, the
            // workflow did not report it.
            // The run's error object as the run recorded it (open).
            let error = run.error.as_ref();
            let message = error
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
                .unwrap_or("the host could not run the workflow")
                .to_owned();
            let data = wire::data(&TaskFailure {
                reason: error.and_then(|e| e.get("code")),
                run_id: &run.run_id,
            });
            answer.error = Some(ErrorData::new(
                ErrorCode(INTERNAL_ERROR as i32),
                message,
                Some(data),
            ));
        } else if status.is_terminal() {
            answer.result = Some(self.call_result(run).await?);
        } else if status.asks_for_input()
            && let Some(open) = if in_stream {
                self.open_interrupt_in_stream(run).await?
            } else {
                self.open_interrupt_of(run).await?
            }
        {
            let asked = Asked {
                interrupt_id: &open.interrupt_id,
                kind: &open.kind,
                data: &open.data,
            };
            match elicit::input_request(&asked, modes) {
                Some(request) => {
                    answer.input_requests =
                        Some(InputRequests::from([(open.interrupt_id.clone(), request)]));
                }
                // Never offered to a client that cannot take it; the status says why the
                // task waits (nothing from inside the run).
                None => {
                    let why = match elicit::needs(&open.kind, &open.data) {
                        Needs::Form => {
                            "waiting for input; declare the elicitation capability to be asked for it"
                        }
                        Needs::Url => {
                            "waiting for a credential; declare the elicitation capability with `url` to be asked for it"
                        }
                        Needs::Nothing => "waiting for input no MCP request can give",
                    };
                    task.status_message = Some(why.to_owned());
                }
            }
        }
        answer.task = task;
        Ok(answer)
    }

    /// `tasks/get`: a read; nothing is appended to the run's log.
    pub(super) async fn get_task(
        &self,
        ctx: &Ctx,
        params: TaskParams,
    ) -> Result<TaskAnswer, RpcError> {
        let run = self.load_task(&ctx.subject, &params.task_id).await?;
        self.task_view(&run, true, ctx.modes()).await
    }

    /// `tasks/update`: each input response resolves the interrupt it is keyed by.
    pub(super) async fn update_task(
        &self,
        ctx: &Ctx,
        params: UpdateTaskParams,
    ) -> Result<Ack, RpcError> {
        let run = self.load_task(&ctx.subject, &params.task_id).await?;
        let responses = &params.input_responses;
        // Only a key naming the open interrupt resolves anything; keys never issued,
        // already answered or no longer open are ignored, as the map's row says.
        let open = self.open_interrupt_of(&run).await?;
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
        Ok(Ack::complete())
    }

    /// `tasks/cancel`: cancelRun on the run behind the task. The answer is an empty ack,
    /// the same on a task that has already ended (nothing is appended then); the outcome
    /// is read with tasks/get.
    pub(super) async fn cancel_task(&self, ctx: &Ctx, params: TaskParams) -> Result<Ack, RpcError> {
        let run = self.load_task(&ctx.subject, &params.task_id).await?;
        let id = BoundId::parse_bound(&run.run_id).map_err(internal)?;
        match self.app.ops.cancel_run(&ctx.subject, &id, None).await {
            Ok(_) | Err(OpError::RunTerminal { .. }) => Ok(Ack::complete()),
            Err(e) => Err(internal(e)),
        }
    }
}

/// The map's task status name as rmcp's enum; a name the map grows that this does not know
/// is the internal error (the generated map and this table changed apart), not a guess.
fn task_status(name: &str) -> Result<TaskStatus, RpcError> {
    Ok(match name {
        "working" => TaskStatus::Working,
        "input_required" => TaskStatus::InputRequired,
        "completed" => TaskStatus::Completed,
        "failed" => TaskStatus::Failed,
        "cancelled" => TaskStatus::Cancelled,
        other => return Err(internal(format!("unknown MCP task status `{other}`"))),
    })
}
