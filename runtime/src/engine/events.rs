//! The run events the host appends, built from the generated payload models
//! (`models::RunEventPayload`): the event type is the payload's own tag, so a payload and
//! its `type` cannot disagree, and a corpus change to a payload reaches every writer.
//!
//! Every value that goes into a payload is one the host minted or checked before (ids of
//! the id grammar, statuses, non-empty codes), so a constructor never fails on a valid
//! run; where a model refuses a value anyway (an empty templated failure message), the
//! payload says so in words the schema accepts instead of breaking the step.

use crate::generated::models::{
    self as m, ErrorObject, InterruptPayload, NodeCompleted, NodeFailed, NodeStarted, RunCancelled,
    RunCompleted, RunEventPayload, RunFailed, RunStarted,
};
use crate::store::{InterruptRecord, NewEvent, RunRecord};
use crate::wire::{object, wire};
use serde_json::{Map, Value};

/// A store event from a typed payload: `type` is the payload's tag.
pub fn typed(node_id: Option<&str>, payload: impl Into<RunEventPayload>) -> NewEvent {
    let payload = payload.into();
    let event_type = payload.tag().unwrap_or_default().to_owned();
    let payload = match payload.to_wire() {
        Ok(map) => Value::Object(map),
        // Only a payload type with a non-object schema could get here; ours has none.
        Err(e) => {
            tracing::error!(event_type, error = %e, "a run event payload does not serialise to an object");
            Value::Object(Map::new())
        }
    };
    NewEvent {
        event_type,
        node_id: node_id.map(str::to_owned),
        payload,
    }
}

fn elapsed_ms(run: &RunRecord) -> u64 {
    u64::try_from(crate::clock::now_ms() - run.created_ms).unwrap_or(0)
}

/// A model value from a literal the corpus accepts (the tests below hold each one to
/// its schema), for the fallbacks of payloads that must never fail to build.
fn literal<T: serde::de::DeserializeOwned>(s: &'static str) -> T {
    serde_json::from_value(Value::String(s.to_owned()))
        .unwrap_or_else(|e| panic!("`{s}` is not a valid literal for its model: {e}"))
}

/// `run.started`: the snapshot's owner, inputs, tags and metadata.
pub fn run_started(run: &RunRecord) -> Result<NewEvent, String> {
    let payload = RunStarted {
        workflow_id: wire("workflowId", run.workflow_id.as_str())?,
        owner: serde::Deserialize::deserialize(&run.owner).map_err(|e| format!("owner: {e}"))?,
        transport: wire("transport", run.transport.as_str())?,
        inputs: Some(object(&run.inputs)),
        engine_version: None,
        tags: run
            .annotations
            .tags
            .as_ref()
            .and_then(|t| serde::Deserialize::deserialize(t).ok())
            .unwrap_or_default(),
        metadata: run.annotations.metadata.as_ref().map(object),
    };
    Ok(typed(None, payload))
}

/// `run.completed` with the run's outputs.
pub fn run_completed(run: &RunRecord, outputs: &Value) -> NewEvent {
    typed(
        None,
        RunCompleted {
            outputs: object(outputs),
            duration_ms: Some(elapsed_ms(run)),
        },
    )
}

/// The error object of a failure: a code (the host's, or a definition's non-empty one)
/// and a message, which a template may have rendered empty.
pub fn error_object(code: &str, message: &str) -> ErrorObject {
    ErrorObject {
        code: wire("code", code).unwrap_or_else(|_: String| literal("internal_error")),
        message: wire("message", message)
            .unwrap_or_else(|_: String| literal("the run failed without a message")),
    }
}

/// `run.failed`.
pub fn run_failed(run: &RunRecord, error: ErrorObject, node_id: Option<&str>) -> NewEvent {
    typed(
        node_id,
        RunFailed {
            error,
            failed_node_id: node_id.and_then(|n| wire("failedNodeId", n).ok()),
            duration_ms: Some(elapsed_ms(run)),
        },
    )
}

/// `run.cancelled`.
pub fn run_cancelled(run: &RunRecord, reason: &str, cancelled_by: &str) -> NewEvent {
    let reason = wire("reason", reason).unwrap_or_else(|_: String| literal("caller-requested"));
    typed(
        None,
        RunCancelled {
            reason,
            cancelled_by: wire("cancelledBy", cancelled_by).ok(),
            duration_ms: Some(elapsed_ms(run)),
            parent_run_id: None,
        },
    )
}

/// `node.started`. Node ids are held to the id grammar when a definition is loaded.
pub fn node_started(node_id: &str, type_id: &'static str) -> Result<NewEvent, String> {
    Ok(typed(
        Some(node_id),
        NodeStarted {
            node_id: wire("nodeId", node_id)?,
            type_id: literal(type_id),
            attempt: None,
        },
    ))
}

/// `node.completed`; `outputs` only when the node produced an object.
pub fn node_completed(node_id: &str, outputs: Option<&Value>) -> Result<NewEvent, String> {
    Ok(typed(
        Some(node_id),
        NodeCompleted {
            node_id: wire("nodeId", node_id)?,
            outputs: outputs.and_then(Value::as_object).cloned(),
            duration_ms: None,
        },
    ))
}

/// `node.failed`: the node whose failure fails the run, with the run's error.
pub fn node_failed(node_id: &str, error: ErrorObject) -> Result<NewEvent, String> {
    Ok(typed(
        Some(node_id),
        NodeFailed {
            node_id: wire("nodeId", node_id)?,
            error,
            attempts: None,
        },
    ))
}

/// The deterministic re-entry key of the interrupt a run raises at a node (at most 256
/// characters, as the interrupt payload's `key` must be).
pub fn interrupt_key(run_id: &str, node_id: &str) -> String {
    let key = format!("{run_id}:{node_id}");
    if key.chars().count() <= 256 {
        key
    } else {
        use sha2::Digest;
        format!(
            "sha256:{}",
            hex::encode(sha2::Sha256::digest(key.as_bytes()))
        )
    }
}

/// The interrupt payload as raised: what `interrupt.requested` carries and what a resume
/// token inspects.
pub fn interrupt_payload(
    run_id: &str,
    node_id: &str,
    kind: &str,
    data: &Value,
) -> Result<InterruptPayload, String> {
    Ok(InterruptPayload {
        kind: wire("kind", kind)?,
        key: wire("key", interrupt_key(run_id, node_id))?,
        resume_schema: None,
        timeout_ms: None,
        data: object(data),
    })
}

/// `interrupt.requested`.
pub fn interrupt_requested(payload: InterruptPayload, node_id: &str) -> NewEvent {
    typed(Some(node_id), m::InterruptRequested(payload))
}

/// `node.suspended`: appended right after `interrupt.requested`, naming the interrupt's
/// id (which the raised payload does not carry), so a client following the log reaches
/// the interrupt without reading the snapshot.
pub fn node_suspended(node_id: &str, interrupt_id: &str, kind: &str) -> Result<NewEvent, String> {
    let payload = m::NodeSuspended {
        node_id: wire("nodeId", node_id)?,
        interrupt_id: wire("interruptId", interrupt_id)?,
        kind: Some(wire("kind", kind)?),
    };
    Ok(typed(Some(node_id), payload))
}

/// The events that suspend a run on an interrupt, in their order: `interrupt.requested`
/// (the interrupt as raised; the corpus closes its payload) and `node.suspended` naming the
/// interrupt's id, which the raised payload does not carry. Every suspension appends both,
/// whichever node raised it.
pub fn suspension(
    run_id: &str,
    node_id: &str,
    interrupt_id: &str,
    kind: &str,
    data: &Value,
) -> Result<[NewEvent; 2], String> {
    let payload = interrupt_payload(run_id, node_id, kind, data)?;
    Ok([
        interrupt_requested(payload, node_id),
        node_suspended(node_id, interrupt_id, kind)?,
    ])
}

/// `artifact.created`: a node recorded an artifact of the run.
pub fn artifact_created(
    artifact_id: &str,
    artifact_type: &str,
    node_id: &str,
) -> Result<NewEvent, String> {
    let payload = m::ArtifactCreated {
        artifact_id: wire("artifactId", artifact_id)?,
        artifact_type: wire("artifactType", artifact_type)?,
        node_id: Some(wire("nodeId", node_id)?),
    };
    Ok(typed(Some(node_id), payload))
}

/// `interrupt.resolved`, for an interrupt whose resume value is stored.
pub fn interrupt_resolved(interrupt: &InterruptRecord, resume: &Value) -> Result<NewEvent, String> {
    let payload = m::InterruptResolved {
        node_id: wire("nodeId", interrupt.node_id.as_str())?,
        interrupt_id: wire("interruptId", interrupt.interrupt_id.as_str())?,
        kind: Some(wire("kind", interrupt.kind.as_str())?),
        resume_value: Some(resume.clone()),
    };
    Ok(typed(Some(&interrupt.node_id), payload))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generated::validators::validate_run_event;
    use serde_json::json;

    fn envelope(ev: &NewEvent) -> Value {
        json!({
            "eventId": "ev_0123456789abcdef", "runId": "acme/run_0123456789abcdef",
            "type": ev.event_type, "payload": ev.payload,
            "timestamp": "2026-01-01T00:00:00Z", "sequence": 0, "schemaVersion": 3,
        })
    }

    #[test]
    fn an_empty_failure_message_still_makes_a_valid_event() {
        let error = error_object("acme.broke", "");
        let run = crate::store::RunRecord {
            run_id: "acme/run_0123456789abcdef".into(),
            tenant: "acme".into(),
            workflow_id: "w".into(),
            status: crate::status::RunStatus::Running,
            owner: json!({}),
            transport: "rest".into(),
            inputs: json!({}),
            state: json!({}),
            outputs: None,
            error: None,
            node_index: 0,
            wait_until: None,
            created_ms: crate::clock::now_ms(),
            updated_ms: 0,
            last_sequence: -1,
            list_order: 0,
            annotations: Default::default(),
        };
        let ev = run_failed(&run, error, Some("n1"));
        assert_eq!(ev.event_type, "run.failed");
        assert!(validate_run_event(&envelope(&ev)).is_empty());
        let ev = run_cancelled(&run, "", "someone");
        assert_eq!(ev.payload["reason"], "caller-requested");
        assert!(validate_run_event(&envelope(&ev)).is_empty());
    }

    #[test]
    fn every_literal_fits_its_model() {
        let _: m::ErrorObjectCode = literal("internal_error");
        let _: m::ErrorObjectMessage = literal("the run failed without a message");
        let _: m::RunCancelledReason = literal("caller-requested");
        for type_id in ["core.transform", "core.fail", "core.wait", "core.interrupt"] {
            let _: m::TypeId = literal(type_id);
        }
    }

    #[test]
    fn node_suspended_and_artifact_created_fit_the_corpus() {
        let ev = node_suspended("approve", "acme/0123456789abcdef", "approval").unwrap();
        assert_eq!(ev.event_type, "node.suspended");
        assert_eq!(ev.payload["interruptId"], "acme/0123456789abcdef");
        assert!(validate_run_event(&envelope(&ev)).is_empty());
        let ev = artifact_created("emit.0", "conformance.sample", "emit").unwrap();
        assert_eq!(ev.event_type, "artifact.created");
        assert_eq!(
            ev.payload,
            json!({"artifactId": "emit.0", "artifactType": "conformance.sample", "nodeId": "emit"})
        );
        assert!(validate_run_event(&envelope(&ev)).is_empty());
    }

    #[test]
    fn a_long_interrupt_key_is_digested_to_fit() {
        let long = format!("acme/{}", "a".repeat(128));
        let key = interrupt_key(&long, &"n".repeat(128));
        assert!(key.starts_with("sha256:") && key.len() <= 256);
        assert_eq!(interrupt_key("t/r", "n"), "t/r:n");
    }
}
