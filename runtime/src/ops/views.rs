//! Wire views of stored records, as the generated models: the run snapshot
//! (`models::RunSnapshot`), the run event envelope (`models::RunEvent`) and the host event
//! envelope (`models::HostEvent`). A record the models refuse (a value outside the
//! corpus's grammar, which the host never writes) is an internal error, never a
//! half-valid document on the wire.

use super::{EVENT_LOG_SCHEMA_VERSION, OpError, Ops};
use crate::clock::rfc3339;
use crate::generated::models::{self as m, HostEvent, RunEvent, RunSnapshot};
use crate::identity::Subject;
use crate::ids::BoundId;
use crate::store::{EventRecord, HostEventRecord, InterruptRecord, RunDetail, RunRecord};
use crate::wire::{object, wire};

fn stored(e: String) -> OpError {
    OpError::internal(format!("a stored record does not fit its wire model: {e}"))
}

/// Reads the model straight from the stored value (no copy of the value first).
fn decode<T: serde::de::DeserializeOwned>(what: &str, v: &serde_json::Value) -> Result<T, OpError> {
    T::deserialize(v).map_err(|e| stored(format!("{what}: {e}")))
}

/// The run snapshot, with the open interrupt when the run waits on one.
pub fn run_view(run: &RunRecord, open: Option<&InterruptRecord>) -> Result<RunSnapshot, OpError> {
    let interrupts = match open {
        None => Vec::new(),
        Some(i) => vec![m::OpenInterrupt {
            interrupt_id: wire("interruptId", i.interrupt_id.as_str()).map_err(stored)?,
            node_id: wire("nodeId", i.node_id.as_str()).map_err(stored)?,
            kind: wire("kind", i.kind.as_str()).map_err(stored)?,
            requested_at: None,
            expires_at: None,
        }],
    };
    let a = &run.annotations;
    Ok(RunSnapshot {
        run_id: wire("runId", run.run_id.as_str()).map_err(stored)?,
        workflow_id: wire("workflowId", run.workflow_id.as_str()).map_err(stored)?,
        status: run.status,
        owner: decode("owner", &run.owner)?,
        created_at: Some(rfc3339(run.created_ms)),
        updated_at: Some(rfc3339(run.updated_ms)),
        started_at: None,
        completed_at: None,
        current_node_id: interrupts.first().map(|i| i.node_id.clone()),
        inputs: Some(object(&run.inputs)),
        outputs: run.outputs.as_ref().map(object),
        error: run.error.as_ref().map(|e| decode("error", e)).transpose()?,
        interrupts,
        // Bound by `Ops::snapshot` for a run started over A2A.
        context_id: None,
        agent_id: a
            .agent_id
            .as_deref()
            .map(|id| wire("agentId", id))
            .transpose()
            .map_err(stored)?,
        tags: a
            .tags
            .as_ref()
            .map(|t| decode("tags", t))
            .transpose()?
            .unwrap_or_default(),
        metadata: a.metadata.as_ref().map(object),
        engine_version: None,
        event_log_schema_version: wire("eventLogSchemaVersion", EVENT_LOG_SCHEMA_VERSION)
            .map_err(stored)?,
    })
}

/// The snapshot of a run with what it shows beside it: the open interrupt when it waits
/// on one, and the A2A `contextId` when the run was started over A2A.
fn detail_view(detail: &RunDetail) -> Result<RunSnapshot, OpError> {
    let mut snapshot = run_view(&detail.run, detail.open_interrupt.as_ref())?;
    if let Some(context) = &detail.context_id {
        snapshot.context_id = Some(wire("contextId", context.as_str()).map_err(stored)?);
    }
    Ok(snapshot)
}

impl Ops {
    /// The snapshots of a page of runs, in the page's order, read in one store call
    /// (`listRuns`). A run gone since the page was read is `RunNotFound`.
    pub async fn snapshots(&self, runs: &[RunRecord]) -> Result<Vec<RunSnapshot>, OpError> {
        let ids = runs.iter().map(|r| r.run_id.clone()).collect();
        let details = self.runs.run_details(ids).await?;
        let mut details = details.iter().peekable();
        let mut out = Vec::with_capacity(runs.len());
        for run in runs {
            // `run_details` keeps the order asked and leaves out only missing runs.
            match details.next_if(|d| d.run.run_id == run.run_id) {
                Some(detail) => out.push(detail_view(detail)?),
                None => {
                    return Err(OpError::RunNotFound {
                        run_id: run.run_id.clone(),
                    });
                }
            }
        }
        Ok(out)
    }

    /// The stamp of a run's stored detail ([`crate::store::RunStore::detail_stamp`]) for
    /// a caller who may see it: what was made from a [`Ops::get_snapshot`] read after
    /// this stamp was taken holds while the stamp is the same. `None`: nothing may be
    /// kept (the store cannot say). Another tenant's id is refused as `get_snapshot`
    /// refuses it, so an edge asks this first and answers alike.
    pub fn snapshot_stamp(&self, subject: &Subject, id: &BoundId) -> Result<Option<u64>, OpError> {
        Ok(self.runs.detail_stamp(&super::callers_run_id(subject, id)?))
    }

    /// `getRun`: a run the caller may see and its snapshot, read in one store call. A
    /// foreign tenant segment is refused before any lookup, as `get_run` refuses it.
    pub async fn get_snapshot(
        &self,
        subject: &Subject,
        id: &BoundId,
    ) -> Result<(RunRecord, RunSnapshot), OpError> {
        let run_id = super::callers_run_id(subject, id)?;
        match self.runs.run_detail(&run_id).await? {
            Some(detail) if detail.run.tenant == subject.tenant => {
                let view = detail_view(&detail)?;
                Ok((detail.run, view))
            }
            _ => Err(OpError::RunNotFound { run_id }),
        }
    }
}

/// The run event envelope.
pub fn event_view(e: &EventRecord) -> Result<RunEvent, OpError> {
    Ok(RunEvent {
        event_id: wire("eventId", e.event_id.as_str()).map_err(stored)?,
        run_id: wire("runId", e.run_id.as_str()).map_err(stored)?,
        type_: e.event_type.as_str().into(),
        payload: object(&e.payload),
        timestamp: rfc3339(e.timestamp_ms),
        sequence: u64::try_from(e.sequence).map_err(|x| stored(format!("sequence: {x}")))?,
        schema_version: std::num::NonZeroU64::new(EVENT_LOG_SCHEMA_VERSION.unsigned_abs())
            .ok_or_else(|| stored("schemaVersion: 0".into()))?,
        node_id: e
            .node_id
            .as_deref()
            .map(|n| wire("nodeId", n))
            .transpose()
            .map_err(stored)?,
        engine_version: None,
        causation_id: None,
    })
}

/// The host event envelope.
pub fn host_event_view(e: &HostEventRecord) -> Result<HostEvent, OpError> {
    Ok(HostEvent {
        event_id: wire("eventId", e.event_id.as_str()).map_err(stored)?,
        type_: e.event_type.as_str().into(),
        timestamp: rfc3339(e.timestamp_ms),
        delivery: wire("delivery", e.delivery.as_str()).map_err(stored)?,
        workspace_id: e
            .workspace_id
            .as_deref()
            .map(|w| wire("workspaceId", w))
            .transpose()
            .map_err(stored)?,
        tenant: Some(wire("tenant", e.tenant.as_str()).map_err(stored)?),
        payload: object(&e.payload),
    })
}

/// The JSON text of a view, for SSE `data:` lines.
pub fn to_json<T: serde::Serialize>(view: &T) -> String {
    serde_json::to_string(view).unwrap_or_else(|e| {
        tracing::error!(error = %e, "a wire view does not serialise");
        "{}".to_owned()
    })
}
