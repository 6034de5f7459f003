//! The committed crate's models read and write the wire: open enums, openness by position,
//! typed payloads, byte-for-byte envelopes.

use std::str::FromStr;

use openwop_generated::models::{
    CancelRunRequest, CreateRunRequest, CreateRunResponse, ErrorCode, ErrorEnvelope, HostEvent,
    HostEventPayload, HostEventTypeValue, InterruptPayloadData, PollEventsResponse, RunCompleted,
    RunEvent, RunEventPayload, RunEventType,
};
use openwop_generated::{errors, validators};
use serde_json::{Value, json};

#[test]
fn open_enums_decode_listed_and_vendor_values() {
    let listed: RunEventType = serde_json::from_value(json!("run.started")).expect("decodes");
    assert_eq!(listed, RunEventType::RunStarted);
    assert!(listed.is_known());
    assert_eq!(
        serde_json::to_value(&listed).expect("encodes"),
        json!("run.started")
    );

    let vendor: RunEventType = serde_json::from_value(json!("acme.widget-made")).expect("decodes");
    assert_eq!(vendor, RunEventType::Other("acme.widget-made".to_owned()));
    assert!(!vendor.is_known());
    assert_eq!(vendor.as_str(), "acme.widget-made");
    assert_eq!(
        serde_json::to_string(&vendor).expect("encodes"),
        "\"acme.widget-made\""
    );

    // A listed value never decodes to `Other`, and `Other` holding one equals it anyway.
    assert_eq!(
        RunEventType::from("run.completed"),
        RunEventType::RunCompleted
    );
    assert_eq!(
        RunEventType::Other("run.completed".into()),
        RunEventType::RunCompleted
    );
    assert_eq!(
        RunEventType::from_str("node.failed").map(|t| t.to_string()),
        Ok("node.failed".to_owned())
    );
    assert_eq!(RunEventType::KNOWN.len(), 12);
}

#[test]
fn the_model_error_code_bridges_to_the_registry() {
    let code: ErrorCode = serde_json::from_value(json!("not_found")).expect("decodes");
    assert_eq!(code.registered(), Some(errors::ErrorCode::NotFound));
    assert_eq!(
        ErrorCode::from(errors::ErrorCode::RateLimited).as_str(),
        "rate_limited"
    );
    assert_eq!(code, errors::ErrorCode::NotFound);
    let vendor: ErrorCode = serde_json::from_value(json!("acme.quota_gone")).expect("decodes");
    assert_eq!(vendor.registered(), None);
    // Every registry code is a listed value of the model enum.
    for c in errors::ErrorCode::ALL {
        assert!(ErrorCode::from(*c).is_known(), "{c}");
    }
}

#[test]
fn answers_ignore_members_they_do_not_know() {
    let envelope: ErrorEnvelope = serde_json::from_value(json!({
        "error": "acme.quota_gone", "message": "m", "traceHint": "a future member"
    }))
    .expect("an envelope with an extra member decodes");
    assert_eq!(envelope.error, ErrorCode::Other("acme.quota_gone".into()));
    serde_json::from_value::<CreateRunResponse>(json!({
        "runId": "dev/run_0123456789abcdef", "status": "running",
        "eventsUrl": "http://h/runs/x/events", "statusUrl": "http://h/runs/x",
        "queuePosition": 3
    }))
    .expect("a createRun answer with an extra member decodes");
    serde_json::from_value::<PollEventsResponse>(json!({
        "runId": "dev/run_0123456789abcdef", "events": [], "lastSequence": -1,
        "status": "running", "isTerminal": false, "nextPollMs": 10
    }))
    .expect("a poll answer with an extra member decodes");
}

#[test]
fn request_bodies_refuse_members_they_do_not_know() {
    let err =
        serde_json::from_value::<CreateRunRequest>(json!({"workflowId": "echo", "priority": 1}))
            .expect_err("an unknown member of a closed request body is refused");
    assert!(err.to_string().contains("priority"), "{err}");
    serde_json::from_value::<CancelRunRequest>(json!({"reason": "x", "force": true}))
        .expect_err("closed");
    serde_json::from_value::<CreateRunRequest>(json!({"workflowId": "echo"}))
        .expect("known members only");
    // All-optional bodies have a Default.
    assert_eq!(
        serde_json::to_value(CancelRunRequest::default()).expect("encodes"),
        json!({})
    );
}

fn subject() -> Value {
    json!({"issuer": "openwop:api-key", "subjectId": "key-1", "tenant": "dev", "lane": "api-key", "kind": "user"})
}

/// One schema-valid payload for every run event type our corpus lists.
fn samples() -> Vec<(&'static str, Value)> {
    vec![
        (
            "run.started",
            json!({"workflowId": "echo", "owner": {"tenant": "dev", "subject": subject()}, "transport": "rest", "inputs": {"a": 1}}),
        ),
        (
            "run.completed",
            json!({"outputs": {"a": 1}, "durationMs": 5}),
        ),
        (
            "run.failed",
            json!({"error": {"code": "validation_error", "message": "bad"}, "failedNodeId": "n1"}),
        ),
        ("run.cancelled", json!({"reason": "caller-requested"})),
        (
            "node.started",
            json!({"nodeId": "n1", "typeId": "core.transform", "attempt": 0}),
        ),
        (
            "node.completed",
            json!({"nodeId": "n1", "outputs": {"x": true}}),
        ),
        (
            "node.failed",
            json!({"nodeId": "n1", "error": {"code": "internal_error", "message": "boom"}}),
        ),
        (
            "node.suspended",
            json!({"nodeId": "approve", "interruptId": "dev/int_0123456789abcdef", "kind": "approval"}),
        ),
        (
            "interrupt.requested",
            json!({"kind": "approval", "key": "approve", "data": {"artifactId": "a", "artifactType": "run", "title": "Approve?", "actions": ["accept", "reject"]}}),
        ),
        (
            "interrupt.resolved",
            json!({"nodeId": "approve", "interruptId": "dev/int_0123456789abcdef", "kind": "approval", "resumeValue": {"action": "accept"}}),
        ),
        (
            "artifact.created",
            json!({"artifactId": "n1.1", "artifactType": "report", "nodeId": "n1"}),
        ),
        (
            "negotiation.decided",
            json!({"protocol": "a2a", "peer": "0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f", "negotiated": "1.0", "outcome": "accepted", "reason": "ok", "at": "2026-12-01T00:00:00Z"}),
        ),
    ]
}

fn envelope(sequence: u64, ty: &str, payload: Value) -> String {
    // The host's member order: the schema's.
    let mut v = json!({
        "eventId": format!("evt_{sequence:016}"),
        "runId": "dev/run_0123456789abcdef",
        "type": ty,
        "payload": payload,
        "timestamp": "2026-12-01T00:00:00.000Z",
        "sequence": sequence,
        "schemaVersion": 1,
    });
    v["nodeId"] = json!("n1");
    serde_json::to_string(&v).expect("json")
}

#[test]
fn every_run_event_type_has_a_typed_payload_and_envelopes_round_trip() {
    let samples = samples();
    let listed: Vec<&str> = RunEventType::KNOWN.iter().map(|t| t.as_str()).collect();
    let sampled: Vec<&str> = samples.iter().map(|(t, _)| *t).collect();
    assert_eq!(listed, sampled, "a sample per listed run event type");
    assert_eq!(RunEventPayload::TAGS, sampled.as_slice());

    for (i, (ty, payload)) in samples.into_iter().enumerate() {
        let wire = envelope(i as u64, ty, payload);
        let doc: Value = serde_json::from_str(&wire).expect("json");
        let findings = validators::validate_run_event(&doc);
        assert!(
            findings.is_empty(),
            "{ty}: the sample is not schema-valid: {findings:?}"
        );

        let event: RunEvent = serde_json::from_str(&wire).unwrap_or_else(|e| panic!("{ty}: {e}"));
        assert_eq!(
            serde_json::to_string(&event).expect("encodes"),
            wire,
            "{ty}: not byte-for-byte"
        );
        let typed = event
            .typed_payload()
            .unwrap_or_else(|e| panic!("{ty}: {e}"));
        assert_eq!(typed.tag(), Some(ty));
        let matched = match &typed {
            RunEventPayload::RunStarted(p) => p.workflow_id.as_str() == "echo",
            RunEventPayload::RunCompleted(p) => p.outputs["a"] == json!(1),
            RunEventPayload::RunFailed(p) => p.error.code.as_str() == "validation_error",
            RunEventPayload::RunCancelled(p) => p.reason.as_str() == "caller-requested",
            RunEventPayload::NodeStarted(p) => p.node_id.as_str() == "n1",
            RunEventPayload::NodeCompleted(p) => p.node_id.as_str() == "n1",
            RunEventPayload::NodeFailed(p) => p.error.message.as_str() == "boom",
            RunEventPayload::InterruptRequested(p) => matches!(
                p.typed_data(),
                Ok(InterruptPayloadData::Approval(ref a)) if a.title.as_str() == "Approve?"
            ),
            RunEventPayload::InterruptResolved(p) => {
                p.resume_value == Some(json!({"action": "accept"}))
            }
            RunEventPayload::NodeSuspended(p) => {
                p.interrupt_id.as_str() == "dev/int_0123456789abcdef"
            }
            RunEventPayload::ArtifactCreated(p) => p.artifact_type.as_str() == "report",
            RunEventPayload::NegotiationDecided(p) => {
                p.negotiated.as_deref().map(|v| v.as_str()) == Some("1.0")
            }
            // The enum is non_exhaustive: a variant this test does not know fails the
            // assertion below rather than the build.
            _ => false,
        };
        assert!(matched, "{ty}: {typed:?}");
        assert_eq!(
            Value::Object(typed.to_wire().expect("encodes")),
            doc["payload"],
            "{ty}"
        );
    }
}

#[test]
fn a_vendor_event_type_is_other_with_its_payload_as_sent() {
    let wire = envelope(3, "acme.widget-made", json!({"widget": 7}));
    let event: RunEvent = serde_json::from_str(&wire).expect("a vendor event decodes");
    assert_eq!(serde_json::to_string(&event).expect("encodes"), wire);
    match event.typed_payload().expect("typed") {
        RunEventPayload::Other(map) => assert_eq!(map["widget"], json!(7)),
        other => panic!("{other:?}"),
    }
    // A listed type whose payload breaks its schema is an error, not `Other`.
    let broken: RunEvent =
        serde_json::from_str(&envelope(4, "run.completed", json!({"durationMs": 1})))
            .expect("envelope decodes");
    assert!(broken.typed_payload().is_err());
}

#[test]
fn writers_set_a_typed_payload_and_its_type() {
    let mut event: RunEvent =
        serde_json::from_str(&envelope(0, "acme.placeholder", json!({}))).expect("decodes");
    let completed: RunCompleted =
        serde_json::from_value(json!({"outputs": {"ok": true}})).expect("payload");
    event.set_typed_payload(completed).expect("sets");
    assert_eq!(event.type_, RunEventType::RunCompleted);
    let wire: Value = serde_json::to_value(&event).expect("encodes");
    assert_eq!(wire["type"], json!("run.completed"));
    assert_eq!(wire["payload"], json!({"outputs": {"ok": true}}));
    assert!(validators::validate_run_event(&wire).is_empty());
}

#[test]
fn host_events_have_an_open_type_and_a_typed_payload() {
    let wire = json!({
        "eventId": "hev_0123456789abcdef", "type": "negotiation.decided",
        "timestamp": "2026-12-01T00:00:00.000Z", "delivery": "durable", "tenant": "dev",
        "payload": {"protocol": "mcp", "peer": "0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f", "negotiated": null, "outcome": "refused", "reason": "below-floor", "at": "2026-12-01T00:00:00Z"}
    });
    assert!(validators::validate_host_event(&wire).is_empty());
    let event: HostEvent = serde_json::from_value(wire.clone()).expect("decodes");
    assert_eq!(event.type_, HostEventTypeValue::NegotiationDecided);
    assert_eq!(
        serde_json::to_string(&event).expect("encodes"),
        wire.to_string()
    );
    assert!(matches!(
        event.typed_payload(),
        Ok(HostEventPayload::NegotiationDecided(_))
    ));

    let mut vendor = wire.clone();
    vendor["type"] = json!("acme.tick");
    vendor["delivery"] = json!("ephemeral");
    vendor["payload"] = json!({"n": 1});
    let event: HostEvent = serde_json::from_value(vendor).expect("decodes");
    assert_eq!(event.type_.as_str(), "acme.tick");
    assert!(matches!(
        event.typed_payload(),
        Ok(HostEventPayload::Other(_))
    ));
}

#[test]
fn an_empty_object_and_an_absent_one_stay_apart() {
    use openwop_generated::models::{RunSnapshot, RunStatus};
    let snapshot = json!({
        "runId": "acme/run_0123456789abcdef", "workflowId": "echo", "status": "completed",
        "owner": {"tenant": "acme", "subject": subject()},
        "inputs": {}, "outputs": {}, "eventLogSchemaVersion": 3
    });
    let decoded: RunSnapshot = serde_json::from_value(snapshot.clone()).expect("decodes");
    assert_eq!(decoded.status, RunStatus::Completed);
    assert_eq!(decoded.outputs, Some(serde_json::Map::new()));
    assert!(decoded.metadata.is_none());
    // `{}` is written back, an absent member stays absent.
    assert_eq!(serde_json::to_value(&decoded).expect("encodes"), snapshot);
    // The status is the dispatch tables' own type.
    let _: openwop_generated::dispatch::RunStatus = decoded.status;

    let request: CreateRunRequest =
        serde_json::from_value(json!({"workflowId": "echo"})).expect("decodes");
    assert!(request.inputs.is_none());
    let request: CreateRunRequest =
        serde_json::from_value(json!({"workflowId": "echo", "inputs": {}})).expect("decodes");
    assert_eq!(request.inputs, Some(serde_json::Map::new()));
}
