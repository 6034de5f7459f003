//! Wire views of stored records: the run snapshot, the run event envelope and the host
//! event envelope, in their closed v2 shapes.

use super::EVENT_LOG_SCHEMA_VERSION;
use crate::clock::rfc3339;
use crate::store::{EventRecord, HostEventRecord, InterruptRecord, RunRecord};
use serde_json::{Value, json};

/// The closed run snapshot.
pub fn run_view(run: &RunRecord, open: Option<&InterruptRecord>) -> Value {
    let mut v = json!({
        "runId": run.run_id,
        "workflowId": run.workflow_id,
        "status": run.status.as_str(),
        "owner": run.owner,
        "eventLogSchemaVersion": EVENT_LOG_SCHEMA_VERSION,
        "createdAt": rfc3339(run.created_ms),
        "updatedAt": rfc3339(run.updated_ms),
        "inputs": run.inputs,
    });
    if let Some(o) = &run.outputs {
        v["outputs"] = o.clone();
    }
    if let Some(e) = &run.error {
        v["error"] = e.clone();
    }
    if let Some(i) = open {
        v["currentNodeId"] = json!(i.node_id);
        v["interrupts"] =
            json!([{"interruptId": i.interrupt_id, "nodeId": i.node_id, "kind": i.kind}]);
    }
    v
}

/// The run event envelope.
pub fn event_view(e: &EventRecord) -> Value {
    let mut v = json!({
        "eventId": e.event_id,
        "runId": e.run_id,
        "type": e.event_type,
        "payload": e.payload,
        "timestamp": rfc3339(e.timestamp_ms),
        "sequence": e.sequence,
        "schemaVersion": EVENT_LOG_SCHEMA_VERSION,
    });
    if let Some(n) = &e.node_id {
        v["nodeId"] = json!(n);
    }
    v
}

/// The host event envelope.
pub fn host_event_view(e: &HostEventRecord) -> Value {
    let mut v = json!({
        "eventId": e.event_id,
        "type": e.event_type,
        "timestamp": rfc3339(e.timestamp_ms),
        "delivery": e.delivery,
        "tenant": e.tenant,
        "payload": e.payload,
    });
    if let Some(w) = &e.workspace_id {
        v["workspaceId"] = json!(w);
    }
    v
}
