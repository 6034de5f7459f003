//! The operations: one implementation of each, called by every edge with the caller's
//! Subject. Tenant isolation is enforced here and nowhere else.

mod agents;
mod answer;
mod artifacts;
pub mod callback;
mod error;
mod held;
mod interop;
pub mod push;
mod resume;
pub mod seams;
pub mod tokens;
mod views;
pub mod visibility;
mod watch;

/// The records `ops` hands out: edges read them, never the store they come from.
pub use crate::store::{
    EventRecord, HostEventRecord, InterruptRecord, OpenInterrupt, RunRecord, UpdatedCursor,
};
pub use agents::WorkflowFilter;
pub use answer::{Answer, Artifact, Part};
pub use error::OpError;
pub use held::{HeldHostEvents, hand_over_host_events};
pub use interop::{SESSION_IDLE_MS, Session};
pub use resume::offered_actions;
pub use tokens::TokenKey;
pub use views::{event_view, host_event_view, run_view, to_json};
pub use watch::{HostWatch, RETRY_WITHIN, RunWatch, Update};

/// The closed `createRun` body: the generated model, which every edge builds (REST
/// decodes it, A2A and MCP fill it in through [`run_request`]).
pub use crate::generated::models::CreateRunRequest;

use crate::engine::Engine;
use crate::generated::errors::ErrorCode;
use crate::identity::Subject;
use crate::ids::BoundId;
use crate::status::{RunStatus, TERMINAL};
pub use crate::store::{A2aStart, CreateWith};
use crate::store::{
    Guard, IdempotencyClaim, InteropStore, NewRun, RunOrder, RunPatch, RunQuery, RunStore,
    StoreError, Stores,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Duration;

/// The v2 event-log era this host writes.
pub const EVENT_LOG_SCHEMA_VERSION: i64 = 3;

/// How a run arrived; recorded in `run.started.transport`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Rest,
    Mcp,
    A2a,
    Ui,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Rest => "rest",
            Transport::Mcp => "mcp",
            Transport::A2a => "a2a",
            Transport::Ui => "ui",
        }
    }
}

/// A `createRun` body naming a workflow and its inputs, and nothing else: what the A2A
/// and MCP edges start a run with.
pub fn run_request(workflow_id: &str, inputs: Value) -> Result<CreateRunRequest, OpError> {
    let Value::Object(inputs) = inputs else {
        return Err(OpError::validation("`inputs` must be a JSON object"));
    };
    Ok(CreateRunRequest {
        workflow_id: crate::wire::wire("workflowId", workflow_id).map_err(OpError::validation)?,
        inputs: Some(inputs),
        tenant_id: None,
        agent_id: None,
        tags: Vec::new(),
        metadata: None,
        callback_url: None,
    })
}

/// The most tags a run carries (`tags.maxItems` of the createRun body).
const MAX_TAGS: usize = 100;

/// What `create_run` returns.
#[derive(Debug, Clone)]
pub struct CreatedRun {
    pub run: RunRecord,
    pub replay: bool,
    /// The A2A contextId bound to the run, when the creation carried one.
    pub context_id: Option<String>,
}

/// `listRuns` parameters.
#[derive(Debug, Clone, Default)]
pub struct ListParams {
    pub limit: Option<usize>,
    pub cursor: Option<String>,
    pub workflow_id: Option<String>,
    pub status: Option<RunStatus>,
}

/// A page of runs.
#[derive(Debug, Clone)]
pub struct RunPage {
    pub runs: Vec<RunRecord>,
    pub next_cursor: Option<String>,
}

/// What [`Ops::runs_by_update`] narrows a listing by (each unset part: no condition).
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    /// Runs in one of these statuses; empty: any.
    pub statuses: Vec<RunStatus>,
    /// A condition on the kind of the run's open interrupt.
    pub open_interrupt: Option<OpenInterrupt>,
    /// Runs of this A2A contextId (a run not started over A2A is its own context).
    pub context_id: Option<String>,
    /// Runs last updated at or after this (ms since the epoch).
    pub updated_since_ms: Option<i64>,
}

/// The answer of a long-poll.
#[derive(Debug, Clone)]
pub struct PollResult {
    pub run: RunRecord,
    pub events: Vec<EventRecord>,
}

/// The operations and what they need.
pub struct Ops {
    runs: Arc<dyn RunStore>,
    interop: Arc<dyn InteropStore>,
    engine: Arc<Engine>,
    agents: Arc<crate::agents::Agents>,
    workflow_filter: Option<WorkflowFilter>,
    /// Per-tenant visibility from the config file (empty: everyone sees everything), in
    /// the reloadable snapshot a reload swaps whole (`crate::reload::live::Live`).
    visibility: crate::reload::live::Live,
    max_page_size: usize,
    tokens: TokenKey,
    /// Keys the `peer` digest of inbound `negotiation.decided` events.
    peer_key: crate::negotiation::PeerKey,
    /// Judges `callbackUrl` at create time (delivery judges it again).
    egress: crate::egress::Egress,
    /// Flips to true when the host stops: every watch and wait ends.
    shutdown: tokio::sync::watch::Receiver<bool>,
    /// The push side, once the A2A edge has started it.
    push: push::PushSlot,
    /// Where the connected host-log streams stand (retention keeps what they have not read).
    host_floors: Arc<watch::HostFloors>,
    /// How long a watch rides out a failing store before its stream ends with the error.
    stream_retry: Duration,
}

/// How long durable host events are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostEventRetention {
    /// Events older than this are dropped.
    pub max_age: Duration,
    /// At most this many of a tenant's newest events are kept.
    pub max_per_tenant: u64,
    /// How often retention runs.
    pub every: Duration,
}

impl Default for HostEventRetention {
    fn default() -> Self {
        HostEventRetention {
            max_age: Duration::from_secs(7 * 24 * 3600),
            max_per_tenant: 10_000,
            every: Duration::from_secs(60),
        }
    }
}

/// The largest page `listRuns` returns.
pub const MAX_PAGE_SIZE: usize = 100;

/// Events are terminal when they end the run; SSE closes after one.
pub fn is_terminal_event(event_type: &str) -> bool {
    matches!(event_type, "run.completed" | "run.failed" | "run.cancelled")
}

impl Ops {
    pub fn new(stores: Stores, engine: Arc<Engine>) -> Self {
        Self {
            runs: stores.runs,
            interop: stores.interop,
            engine,
            agents: Arc::new(crate::agents::Agents::empty()),
            workflow_filter: None,
            visibility: crate::reload::live::Live::default(),
            max_page_size: MAX_PAGE_SIZE,
            // A process-local key until the host installs the store's shared one.
            tokens: TokenKey::new(tokens::fresh_key(), tokens::DEFAULT_TTL),
            peer_key: crate::negotiation::PeerKey::new(crate::negotiation::PeerKey::fresh()),
            egress: crate::egress::Egress::default(),
            // Never flips (its sender is gone) until the host installs its own.
            shutdown: tokio::sync::watch::channel(false).1,
            push: push::PushSlot::new(),
            host_floors: Arc::default(),
            stream_retry: watch::RETRY_WITHIN,
        }
    }

    /// The same operations, ending a watch whose store reads have failed for `within`
    /// (with the error: every stream then ends in its edge's error shape).
    pub fn with_stream_retry(mut self, within: Duration) -> Self {
        self.stream_retry = within;
        self
    }

    /// Drops durable host events past `retention`, except what a stream connected to this
    /// process has not read yet. Returns how many were dropped.
    pub async fn prune_host_events(&self, retention: HostEventRetention) -> Result<u64, OpError> {
        let before_ms = crate::clock::now_ms()
            .saturating_sub(i64::try_from(retention.max_age.as_millis()).unwrap_or(i64::MAX));
        let keep = i64::try_from(retention.max_per_tenant).unwrap_or(i64::MAX);
        Ok(self
            .runs
            .prune_host_events(keep, before_ms, self.host_floors.by_tenant())
            .await?)
    }

    /// Runs [`Ops::prune_host_events`] every `retention.every` until the host stops.
    pub fn spawn_host_event_retention(self: &Arc<Self>, retention: HostEventRetention) {
        let ops = self.clone();
        let mut shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            loop {
                match ops.prune_host_events(retention).await {
                    Ok(0) => {}
                    Ok(n) => tracing::debug!(dropped = n, "host events past retention dropped"),
                    Err(e) => tracing::warn!(error = %e, "host event retention failed; will retry"),
                }
                tokio::select! {
                    _ = watch::stopped(&mut shutdown) => return,
                    _ = tokio::time::sleep(retention.every) => {}
                }
            }
        });
    }

    /// Readiness (`/readyz`): the store answers within `within` and has applied every
    /// migration this host knows. `Err` says why not, for the operator.
    pub async fn readiness(&self, within: Duration) -> Result<i64, String> {
        if *self.shutdown.borrow() {
            return Err("the host is shutting down".into());
        }
        let applied = tokio::time::timeout(within, self.runs.schema_version())
            .await
            .map_err(|_| format!("the store did not answer within {} ms", within.as_millis()))?
            .map_err(|e| format!("the store is unreachable: {e}"))?;
        let wanted = crate::store::latest_migration();
        if applied < wanted {
            return Err(format!(
                "the database has applied migrations through {applied}; this host needs {wanted}"
            ));
        }
        // Reads may work while writes fail (a full disk): while the last write failed,
        // one small write of its own says whether they succeed again.
        if let Some(fault) = self.runs.write_fault() {
            match tokio::time::timeout(within, self.runs.probe_write()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(format!("the store refuses writes: {e}")),
                Err(_) => return Err(format!("the store refuses writes: {fault}")),
            }
        }
        Ok(applied)
    }

    /// Runs by status, the push outbox depth and dead letters (`/metrics`).
    pub async fn gauges(&self) -> Result<crate::store::StoreGauges, OpError> {
        Ok(self.runs.gauges().await?)
    }

    /// The same operations, ending watches and waits when `shutdown` flips to true.
    pub fn with_shutdown(mut self, shutdown: tokio::sync::watch::Receiver<bool>) -> Self {
        self.shutdown = shutdown;
        self
    }

    /// The same operations, signing resume tokens with `tokens`.
    pub fn with_tokens(mut self, tokens: TokenKey) -> Self {
        self.tokens = tokens;
        self
    }

    /// The same operations, judging `callbackUrl`s with `egress`.
    pub fn with_egress(mut self, egress: crate::egress::Egress) -> Self {
        self.egress = egress;
        self
    }

    pub fn tokens(&self) -> &TokenKey {
        &self.tokens
    }

    /// The same operations, digesting negotiation peers with `key` (the store's shared
    /// one, so every replica digests a peer alike).
    pub fn with_peer_key(mut self, key: crate::negotiation::PeerKey) -> Self {
        self.peer_key = key;
        self
    }

    pub fn peer_key(&self) -> &crate::negotiation::PeerKey {
        &self.peer_key
    }

    /// The same operations, with `agents` as the agent inventory.
    pub fn with_agents(mut self, agents: crate::agents::Agents) -> Self {
        self.agents = Arc::new(agents);
        self
    }

    pub fn max_page_size(&self) -> usize {
        self.max_page_size
    }

    /// Loads a run the caller may see. A foreign tenant segment is refused before any
    /// lookup, so the answer cannot depend on whether the run exists.
    async fn load(&self, subject: &Subject, id: &BoundId) -> Result<RunRecord, OpError> {
        let run_id = callers_run_id(subject, id)?;
        match self.runs.get_run(&run_id).await? {
            Some(run) if run.tenant == subject.tenant => Ok(run),
            _ => Err(OpError::RunNotFound { run_id }),
        }
    }

    /// `createRun`. `idempotency_key` replays: same key and body → the same run.
    pub async fn create_run(
        &self,
        subject: &Subject,
        request: CreateRunRequest,
        transport: Transport,
        idempotency_key: Option<&str>,
    ) -> Result<CreatedRun, OpError> {
        self.create_run_with(
            subject,
            request,
            transport,
            idempotency_key,
            CreateWith::default(),
        )
        .await
    }

    /// [`Ops::create_run`], writing `with` (a new A2A task's context and first message,
    /// the operation's host events) in the creation's transaction: one commit.
    pub async fn create_run_with(
        &self,
        subject: &Subject,
        request: CreateRunRequest,
        transport: Transport,
        idempotency_key: Option<&str>,
        with: CreateWith,
    ) -> Result<CreatedRun, OpError> {
        if let Some(t) = &request.tenant_id
            && t.as_str() != subject.tenant
        {
            return Err(OpError::TenantMismatch { id: t.to_string() });
        }
        if request.tags.len() > MAX_TAGS {
            return Err(OpError::validation(format!(
                "`tags` has {} entries; at most {MAX_TAGS} are accepted",
                request.tags.len()
            )));
        }
        if let Some(url) = &request.callback_url {
            // Refused before anything is created; delivery checks again, since what a
            // name resolves to can change.
            if let Err(refused) = self.egress.check(url).await {
                return Err(OpError::BadInput {
                    code: ErrorCode::WebhookUrlRejected,
                    message: format!("`callbackUrl` is refused by the egress guard: {refused}"),
                });
            }
        }
        // The model holds the id grammar already.
        let workflow_id = request.workflow_id.to_string();
        let workflow = self
            .engine
            .registry()
            .get(&workflow_id)
            .filter(|_| self.may_run(subject, &workflow_id))
            .ok_or_else(|| OpError::WorkflowNotFound {
                workflow_id: workflow_id.clone(),
            })?;
        if let Some(agent_id) = &request.agent_id
            && !self.agent_runs(subject, agent_id, &workflow_id)
        {
            return Err(OpError::validation(format!(
                "`agentId` `{}` names no agent of the caller's inventory that runs `{workflow_id}`",
                agent_id.as_str()
            )));
        }
        let inputs = Value::Object(request.inputs.clone().unwrap_or_default());
        let problems = workflow.check_inputs(&inputs);
        if !problems.is_empty() {
            return Err(OpError::Validation {
                message: format!(
                    "`inputs` do not match the input schema of workflow `{workflow_id}`"
                ),
                details: Some(json!({"errors": problems})),
            });
        }
        let claim = match idempotency_key {
            None => None,
            Some(key) => {
                if key.is_empty()
                    || key.len() > 255
                    || !key.bytes().all(|b| (0x21..0x7f).contains(&b))
                {
                    return Err(OpError::BadInput {
                        code: ErrorCode::IdempotencyKeyInvalid,
                        message: "`Idempotency-Key` must be 1-255 visible ASCII characters".into(),
                    });
                }
                Some(IdempotencyClaim {
                    tenant: subject.tenant.to_string(),
                    principal: format!("{}|{}", subject.issuer, subject.subject_id),
                    key: key.to_owned(),
                    body_hash: body_hash(&request),
                    // A new A2A task is keyed by its messageId, and the interop map's
                    // SendMessage row returns the existing task for a repeated one,
                    // whatever that message says (keys claimed earlier included).
                    any_body: with.a2a.is_some(),
                })
            }
        };
        let owner = json!({"tenant": subject.tenant, "subject": subject});
        let new = NewRun {
            run_id: crate::ids::mint_bound(&subject.tenant).as_bound(),
            tenant: subject.tenant.to_string(),
            workflow_id,
            status: RunStatus::Pending,
            owner,
            transport: transport.as_str().to_owned(),
            inputs,
            // Engine state, never projected: where interrupt notices go, and the trace
            // the creating request continued (the run's calls to peers continue it).
            state: {
                let mut state = serde_json::Map::new();
                if let Some(url) = &request.callback_url {
                    state.insert(callback::STATE_KEY.into(), json!(url.as_str()));
                }
                // Well formed: the edge took it from its trace selection.
                if let Some(tp) = &with.trace {
                    state.insert(crate::peers::TRACE_STATE_KEY.into(), json!(tp));
                }
                Value::Object(state)
            },
            annotations: crate::store::RunAnnotations {
                agent_id: request.agent_id.as_ref().map(|a| a.to_string()),
                tags: (!request.tags.is_empty()).then(|| json!(request.tags)),
                metadata: request.metadata.clone().map(Value::Object),
            },
        };
        // The workflow's first steps go into the creation's transaction: a run that
        // finishes without waiting is created finished, in one commit.
        let (plan, first) = self.engine.first_step();
        let mut with = with;
        if !with.start_later {
            with.first_step = Some(plan);
        }
        // Durable host events the request raised before (its negotiation) are written
        // with the run, in the same transaction.
        let held = held::take();
        with.host_events.splice(0..0, held.iter().cloned());
        let created = match self.runs.create_run_with(new, claim, with).await {
            Ok(created) => created,
            Err(e) => {
                held::give_back(held);
                return Err(e.into());
            }
        };
        if !created.replay {
            self.engine.start_created(&created.run, first);
        }
        Ok(CreatedRun {
            run: created.run,
            replay: created.replay,
            context_id: created.context_id,
        })
    }

    /// `getRun`.
    pub async fn get_run(&self, subject: &Subject, id: &BoundId) -> Result<RunRecord, OpError> {
        self.load(subject, id).await
    }

    /// The open interrupt of a run the caller may see.
    pub async fn open_interrupt(
        &self,
        run: &RunRecord,
    ) -> Result<Option<crate::store::InterruptRecord>, OpError> {
        Ok(self.runs.open_interrupt(&run.run_id).await?)
    }

    /// `listRuns`: the caller's tenant only, newest first.
    pub async fn list_runs(
        &self,
        subject: &Subject,
        params: ListParams,
    ) -> Result<RunPage, OpError> {
        let limit = params.limit.unwrap_or(20).clamp(1, self.max_page_size);
        let before = match &params.cursor {
            None => None,
            Some(c) => Some(decode_cursor(c, &subject.tenant)?),
        };
        let runs = self
            .runs
            .query_runs(RunQuery {
                statuses: params.status.into_iter().collect(),
                workflow_id: params.workflow_id,
                order: RunOrder::Created { before },
                ..RunQuery::newest_first(subject.tenant.clone(), limit + 1)
            })
            .await?;
        let mut runs = runs.runs;
        let next_cursor = if runs.len() > limit {
            runs.truncate(limit);
            runs.last()
                .map(|r| encode_cursor(&subject.tenant, r.list_order))
        } else {
            None
        };
        Ok(RunPage { runs, next_cursor })
    }

    /// The caller's runs by last update, newest first, filtered in the store (A2A
    /// `ListTasks`): exactly the runs `listRuns` would give the same Subject, narrowed by
    /// `filter`; a page after `after`, the cursor of the next page when there is one, and
    /// the count of every run the filter admits.
    pub async fn runs_by_update(
        &self,
        subject: &Subject,
        filter: RunFilter,
        after: Option<UpdatedCursor>,
        limit: usize,
    ) -> Result<(Vec<RunRecord>, Option<UpdatedCursor>, u64), OpError> {
        let limit = limit.clamp(1, self.max_page_size);
        let page = self
            .runs
            .query_runs(RunQuery {
                statuses: filter.statuses,
                context_id: filter.context_id,
                updated_since_ms: filter.updated_since_ms,
                open_interrupt: filter.open_interrupt,
                order: RunOrder::Updated { after },
                count_total: true,
                // One more than the page: whether another page follows.
                ..RunQuery::newest_first(subject.tenant.clone(), limit + 1)
            })
            .await?;
        let total = page.total.unwrap_or(page.runs.len() as u64);
        let mut runs = page.runs;
        let next = (runs.len() > limit).then(|| {
            runs.truncate(limit);
            runs.last().map(UpdatedCursor::after)
        });
        Ok((runs, next.flatten(), total))
    }

    /// `cancelRun`: a live run becomes `cancelled` at once (its waits and interrupts
    /// end with it); a finished run is `run_terminal`.
    pub async fn cancel_run(
        &self,
        subject: &Subject,
        id: &BoundId,
        reason: Option<String>,
    ) -> Result<RunRecord, OpError> {
        let run = self.load(subject, id).await?;
        if run.status.is_terminal() {
            return Err(OpError::RunTerminal { status: run.status });
        }
        let ev = crate::engine::events::run_cancelled(
            &run,
            reason.as_deref().unwrap_or("caller-requested"),
            &subject.subject_id,
        );
        let patch = RunPatch {
            status: Some(RunStatus::Cancelled),
            wait_until: Some(None),
            close_interrupts: true,
            ..Default::default()
        };
        match self
            .runs
            .advance(&run.run_id, Guard::StatusNotIn(&TERMINAL), patch, vec![ev])
            .await
        {
            Ok(adv) => {
                // A remote task the run was following or answering is cancelled too.
                self.engine.after_change(&adv);
                Ok(adv.run)
            }
            Err(StoreError::Guard { status }) => Err(OpError::RunTerminal { status }),
            Err(e) => Err(e.into()),
        }
    }

    /// Resolves the open interrupt at `node_id`. Of two concurrent calls one wins; the
    /// other gets `interrupt_already_resolved`.
    pub async fn resolve_interrupt(
        &self,
        subject: &Subject,
        id: &BoundId,
        node_id: &str,
        resume_value: Value,
    ) -> Result<RunRecord, OpError> {
        let run = self.load(subject, id).await?;
        if let Some(open) = self.runs.open_interrupt(&run.run_id).await?
            && open.node_id == node_id
        {
            resume::check_approver(&open.kind, &open.data, subject)?;
        }
        self.resolve_loaded(&run, node_id, resume_value).await
    }

    /// The one resolve, for a run the caller has already been authorized for (by
    /// Subject or by resume token).
    async fn resolve_loaded(
        &self,
        run: &RunRecord,
        node_id: &str,
        resume_value: Value,
    ) -> Result<RunRecord, OpError> {
        if !crate::ids::is_author_id(node_id) {
            return Err(OpError::validation(format!(
                "node id `{node_id}` does not match ^[A-Za-z0-9._~:-]{{1,128}}$"
            )));
        }
        if let Some(open) = self.runs.open_interrupt(&run.run_id).await?
            && open.node_id == node_id
        {
            resume::check(&open.kind, &open.data, &resume_value)?;
        }
        match self
            .runs
            .resolve_interrupt(&run.run_id, node_id, resume_value, self.engine.on_resolve())
            .await
        {
            Ok(adv) => {
                self.engine.after_change(&adv);
                Ok(adv.run)
            }
            Err(StoreError::NoOpenInterrupt) => Err(OpError::InterruptNotFound {
                node_id: node_id.to_owned(),
            }),
            Err(StoreError::InterruptAlreadyResolved) => Err(OpError::InterruptAlreadyResolved {
                node_id: node_id.to_owned(),
            }),
            Err(e) => Err(e.into()),
        }
    }

    /// The run and open interrupt a resume token names. The token alone authorizes; a
    /// genuine token whose interrupt is no longer open (resolved, or the run ended) is
    /// `interrupt_already_resolved`.
    pub async fn interrupt_by_token(
        &self,
        token: &str,
    ) -> Result<(RunRecord, crate::store::InterruptRecord), OpError> {
        let claims = self
            .tokens
            .verify(token, crate::clock::now_ms())
            .map_err(|e| match e {
                tokens::TokenError::Invalid => OpError::InterruptTokenInvalid,
                tokens::TokenError::Expired => OpError::InterruptExpired,
            })?;
        let run = self
            .runs
            .get_run(&claims.run_id)
            .await?
            .ok_or_else(|| OpError::RunNotFound {
                run_id: claims.run_id.clone(),
            })?;
        match self.runs.open_interrupt(&run.run_id).await? {
            Some(open)
                if open.interrupt_id == claims.interrupt_id && open.node_id == claims.node_id =>
            {
                Ok((run, open))
            }
            _ => Err(OpError::InterruptAlreadyResolved {
                node_id: claims.node_id,
            }),
        }
    }

    /// The open interrupt a resume token names, as raised: the payload
    /// `interrupt.requested` carries.
    pub async fn interrupt_view_by_token(
        &self,
        token: &str,
    ) -> Result<crate::generated::models::InterruptPayload, OpError> {
        let (run, open) = self.interrupt_by_token(token).await?;
        crate::engine::events::interrupt_payload(&run.run_id, &open.node_id, &open.kind, &open.data)
            .map_err(OpError::internal)
    }

    /// Resolves the interrupt a resume token names, through the same resolve as
    /// `resolveInterruptByRun`.
    pub async fn resolve_by_token(
        &self,
        token: &str,
        resume_value: Value,
    ) -> Result<(RunRecord, String), OpError> {
        let (run, open) = self.interrupt_by_token(token).await?;
        match self.resolve_loaded(&run, &open.node_id, resume_value).await {
            Ok(run) => Ok((run, open.node_id)),
            // Between the look and the resolve the interrupt went away: someone else won.
            Err(OpError::InterruptNotFound { .. }) => Err(OpError::InterruptAlreadyResolved {
                node_id: open.node_id,
            }),
            Err(e) => Err(e),
        }
    }

    /// Long-poll: the events after `after` and the run as read after them, as soon as
    /// there are any, or the run as it stands (no events) once `timeout` passes.
    pub async fn poll(
        &self,
        subject: &Subject,
        id: &BoundId,
        after: i64,
        timeout: Duration,
    ) -> Result<PollResult, OpError> {
        let mut watch = self.watch(subject, id, after).await?;
        // One look whatever the timeout; a wait only when there is nothing yet.
        let found = match watch.try_next().await? {
            Some(update) => Some(Ok(update)),
            None => watch.next_within(timeout).await,
        };
        match found {
            Some(Ok(update)) => Ok(PollResult {
                run: update.run,
                events: update.events,
            }),
            Some(Err(e)) => Err(e),
            None => Ok(PollResult {
                run: self.load(subject, id).await?,
                events: Vec::new(),
            }),
        }
    }

    /// Durable host events of the caller's tenant after `after`, at most `limit`.
    pub async fn host_events(
        &self,
        subject: &Subject,
        after: i64,
        limit: usize,
    ) -> Result<Vec<HostEventRecord>, OpError> {
        Ok(self.runs.host_events(&subject.tenant, after, limit).await?)
    }

    /// Where a durable host event of the caller's tenant sits in its log, for `after` and
    /// `Last-Event-ID`; an unknown id, or another tenant's, is a validation error.
    pub async fn host_event_position(
        &self,
        subject: &Subject,
        event_id: &str,
    ) -> Result<i64, OpError> {
        self.runs
            .host_event_seq(&subject.tenant, event_id)
            .await?
            .ok_or_else(|| {
                OpError::validation("`Last-Event-ID` names no host event of this tenant")
            })
    }

    /// Records a host event for a tenant (A2A/MCP negotiation outcomes, tests). Inside
    /// [`Ops::holding_host_events`] a durable one is held for the request's creation (its
    /// `seq` is assigned when it is written).
    pub async fn emit_host_event(
        &self,
        tenant: &str,
        event_type: &str,
        delivery: &str,
        payload: Value,
    ) -> Result<HostEventRecord, OpError> {
        // A type the corpus binds a payload to (`negotiation.decided`) carries that
        // payload (`models::HostEventPayload`), or nothing is recorded.
        let fits = payload.as_object().is_some_and(|map| {
            crate::generated::models::HostEventPayload::decode(event_type, map).is_ok()
        });
        if !fits {
            return Err(OpError::internal(format!(
                "a `{event_type}` host event ({delivery}) does not fit its schema"
            )));
        }
        let ev = HostEventRecord::new(
            tenant.to_owned(),
            event_type,
            delivery,
            payload,
            crate::clock::now_ms(),
        );
        if delivery != "durable" {
            return Ok(self.runs.append_host_event(ev).await?);
        }
        // Inside a request that holds its events: stored later, with the run it creates
        // or when it ends (`seq` is assigned then).
        match held::hold(ev.clone()) {
            None => Ok(ev),
            Some(ev) => Ok(self.runs.append_host_event(ev).await?),
        }
    }
}

/// A digest of the request body, stable across key order, for idempotency comparison.
fn body_hash(req: &CreateRunRequest) -> String {
    // The keys (and nulls for absent members) of the body this host accepted before it
    // read createRun into the generated model, so a key claimed then still replays;
    // `residency`, `scopeId`, `mode`, `evalSuiteRef` and `configurable` are no longer
    // accepted and stay null.
    let mut v = json!({
        "workflowId": req.workflow_id, "inputs": req.inputs, "tenantId": req.tenant_id,
        "residency": null, "scopeId": null, "mode": null,
        "evalSuiteRef": null, "agentId": req.agent_id, "configurable": null,
        "tags": (!req.tags.is_empty()).then_some(&req.tags), "metadata": req.metadata,
    });
    // Only when given, so keys claimed before callbackUrl existed still replay.
    if let Some(url) = &req.callback_url {
        v["callbackUrl"] = json!(url);
    }
    hex::encode(Sha256::digest(canonical_json(&v)))
}

/// `v` as compact JSON with every object's keys sorted: serde_json keeps insertion order
/// (preserve_order), so the form a body hash is taken of sorts them. Written straight from
/// `v`, without building a sorted copy of it first.
fn canonical_json(v: &Value) -> Vec<u8> {
    struct Sorted<'a>(&'a Value);
    impl serde::Serialize for Sorted<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::{SerializeMap as _, SerializeSeq as _};
            match self.0 {
                Value::Object(m) => {
                    let mut entries: Vec<_> = m.iter().collect();
                    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                    let mut map = s.serialize_map(Some(entries.len()))?;
                    for (k, v) in entries {
                        map.serialize_entry(k, &Sorted(v))?;
                    }
                    map.end()
                }
                Value::Array(a) => {
                    let mut seq = s.serialize_seq(Some(a.len()))?;
                    for v in a {
                        seq.serialize_element(&Sorted(v))?;
                    }
                    seq.end()
                }
                other => other.serialize(s),
            }
        }
    }
    // Serializing a Value (string keys) into memory cannot fail.
    serde_json::to_vec(&Sorted(v)).unwrap_or_default()
}

fn encode_cursor(tenant: &str, list_order: i64) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{tenant}\n{list_order}"))
}

/// A cursor names the tenant it was minted for; another tenant cannot use it.
fn decode_cursor(cursor: &str, tenant: &str) -> Result<i64, OpError> {
    use base64::Engine as _;
    let bad = || OpError::validation("`cursor` is not a cursor this host issued to the caller");
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| bad())?;
    let text = String::from_utf8(raw).map_err(|_| bad())?;
    let (t, order) = text.split_once('\n').ok_or_else(bad)?;
    if t != tenant {
        return Err(bad());
    }
    order.parse().map_err(|_| bad())
}

/// The stored id of a run the caller names, refusing a foreign tenant segment before any
/// lookup (`TenantMismatch`), so no answer depends on whether another tenant's run exists.
fn callers_run_id(subject: &Subject, id: &BoundId) -> Result<String, OpError> {
    let run_id = id.as_bound();
    if id.tenant() != subject.tenant {
        return Err(OpError::TenantMismatch { id: run_id });
    }
    Ok(run_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Idempotency keys stored earlier hold hashes of a sorted copy's `to_string()`; the
    /// direct writer must produce the same bytes, or those keys would stop replaying.
    #[test]
    fn canonical_json_is_the_sorted_copy_byte_for_byte() {
        fn sorted_copy(v: &Value) -> Value {
            match v {
                Value::Object(m) => {
                    let mut keys: Vec<_> = m.keys().collect();
                    keys.sort();
                    Value::Object(
                        keys.into_iter()
                            .map(|k| (k.clone(), sorted_copy(&m[k])))
                            .collect(),
                    )
                }
                Value::Array(a) => Value::Array(a.iter().map(sorted_copy).collect()),
                other => other.clone(),
            }
        }
        for v in [
            json!(null),
            json!({"b": 1, "a": [3, {"z": null, "y": "é\"\n"}], "A": 1.5, "": -0.0}),
            json!({"workflowId": "echo", "inputs": {"n": 1, "m": [true, false, {}]}, "tags": null}),
            json!([[], {}, "x", 1e300, u64::MAX, i64::MIN]),
        ] {
            assert_eq!(
                String::from_utf8(canonical_json(&v)).unwrap(),
                sorted_copy(&v).to_string()
            );
        }
    }
}
