//! A run, as the REST wire shows it (the generated `RunSnapshot`), projected to an A2A 1.0
//! `Task` (the generated `A2aTask`, `schemas/v2/a2a-wire.schema.json`). It reads the typed
//! snapshot, not its JSON: the fields are known, the status is a `RunStatus` already, and
//! nothing is serialised to be read back.
//!
//! The state comes from the generated task-state table, never from a local match: the
//! open interrupt's kind selects an override row, which is how a credential interrupt (and
//! nothing else) becomes `TASK_STATE_AUTH_REQUIRED`. The projection is read-only; it never
//! needs to append to the run's log.

use crate::status::Lifecycle;

use openwop_generated::dispatch::{RunStatus, a2a_task_state};
use openwop_generated::models::{
    A2aArtifact, A2aMessage, A2aPart, A2aRole, A2aStreamResponse, A2aTask,
    A2aTaskArtifactUpdateEvent, A2aTaskStateName, A2aTaskStatus, A2aTaskStatusUpdateEvent,
    OpenInterrupt, RunSnapshot,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// Everything a Task is built from.
#[derive(Debug, Clone, Copy)]
pub struct TaskSource<'a> {
    /// The run snapshot (`schemas/v2/run-snapshot.schema.json`).
    pub snapshot: &'a RunSnapshot,
    /// The A2A contextId bound when the run was started over A2A; `None`: the run id, so a
    /// run started over REST still has one stable context.
    pub context_id: Option<&'a str>,
    /// The payload (`{kind, key, data, ...}`) of the first open interrupt, when the run
    /// waits on one. A credential interrupt's `connectUrl` is read from here.
    pub open_interrupt_payload: Option<&'a Value>,
    /// The A2A messages exchanged on the task, oldest first. Never model transcripts or
    /// run events: only what peers and this host said over A2A.
    pub history: &'a [Value],
    /// The completed run's answer as its workflow declares it; `None`: the outputs, as
    /// one `data` artifact.
    pub answer: Option<&'a [crate::ops::Artifact]>,
}

/// Caller-chosen trimming; it shortens the answer and never the stored state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// `None`: all history; `Some(0)`: none (the field is omitted); `Some(n)`: the last n.
    pub history_length: Option<usize>,
    pub include_artifacts: bool,
}

impl Default for Shape {
    fn default() -> Self {
        Shape {
            history_length: None,
            include_artifacts: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProjectError {
    #[error("the run waits on a credential interrupt whose payload carries no connectUrl")]
    NoConnectUrl,
}

/// The artifact id of a run's outputs. Fixed, so it is the same on every read and in
/// every artifactUpdate of the task.
pub const OUTPUTS_ARTIFACT_ID: &str = "outputs";

/// A declared answer's artifacts, ids fixed by position (`answer-0`, …) so every read and
/// every artifactUpdate names the same artifact.
fn declared_artifacts(declared: &[crate::ops::Artifact]) -> Vec<A2aArtifact> {
    declared
        .iter()
        .enumerate()
        .map(|(i, a)| A2aArtifact {
            artifact_id: format!("answer-{i}"),
            name: a.name.clone(),
            description: a.description.clone(),
            parts: a2a_parts(&a.parts),
            metadata: None,
            extensions: Vec::new(),
        })
        .collect()
}

/// A `data` part of JSON (`mediaType: application/json`); the value is open.
pub fn data_part(data: Value) -> A2aPart {
    A2aPart {
        data: Some(data),
        media_type: Some("application/json".to_owned()),
        ..A2aPart::default()
    }
}

/// A `text` part.
pub fn text_part(text: impl Into<String>) -> A2aPart {
    A2aPart {
        text: Some(text.into()),
        ..A2aPart::default()
    }
}

/// A2A 1.0 Parts of rendered answer parts: `text`, `url` or `raw` (with `mediaType` and
/// `filename`), `data`.
pub fn a2a_parts(parts: &[crate::ops::Part]) -> Vec<A2aPart> {
    use crate::ops::Part;
    parts
        .iter()
        .map(|p| match p {
            Part::Text(text) => text_part(text.clone()),
            Part::Data(data) => data_part(data.clone()),
            Part::File {
                url,
                bytes,
                media_type,
                filename,
            } => {
                let (url, raw) = match (url, bytes) {
                    (Some(url), _) => (Some(url.clone()), None),
                    (None, bytes) => (None, bytes.clone()),
                };
                A2aPart {
                    url,
                    raw,
                    media_type: Some(media_type.clone()),
                    filename: filename.clone(),
                    ..A2aPart::default()
                }
            }
        })
        .collect()
}

/// [`a2a_parts`] as JSON, for the REST artifact route's A2A form.
pub fn parts(parts: &[crate::ops::Part]) -> Value {
    serde_json::to_value(a2a_parts(parts)).unwrap_or_default()
}

/// The fields of a Task the projection reads more than once.
#[derive(Debug, Clone)]
pub struct Projected {
    pub task: A2aTask,
    pub status: RunStatus,
    pub wire_state: &'static str,
}

impl Projected {
    pub fn task_id(&self) -> &str {
        &self.task.id
    }

    pub fn context_id(&self) -> &str {
        self.task.context_id.as_deref().unwrap_or_default()
    }

    /// `StreamResponse{task}`.
    pub fn as_stream_task(&self) -> A2aStreamResponse {
        A2aStreamResponse {
            task: Some(self.task.clone()),
            ..A2aStreamResponse::default()
        }
    }

    /// `StreamResponse{statusUpdate}` for the task's current status.
    pub fn as_status_update(&self) -> A2aStreamResponse {
        A2aStreamResponse {
            status_update: Some(A2aTaskStatusUpdateEvent {
                task_id: self.task.id.clone(),
                context_id: self.context_id().to_owned(),
                status: self.task.status.clone(),
                metadata: None,
            }),
            ..A2aStreamResponse::default()
        }
    }

    /// `StreamResponse{artifactUpdate}` for each artifact of the task (whole, one chunk).
    pub fn as_artifact_updates(&self) -> Vec<A2aStreamResponse> {
        self.task
            .artifacts
            .iter()
            .map(|a| A2aStreamResponse {
                artifact_update: Some(A2aTaskArtifactUpdateEvent {
                    task_id: self.task.id.clone(),
                    context_id: self.context_id().to_owned(),
                    artifact: a.clone(),
                    append: Some(false),
                    last_chunk: Some(true),
                    metadata: None,
                }),
                ..A2aStreamResponse::default()
            })
            .collect()
    }
}

/// Projects a run to a Task.
pub fn task(source: TaskSource<'_>, shape: Shape) -> Result<Projected, ProjectError> {
    let snapshot = source.snapshot;
    let run_id = snapshot.run_id.as_str();
    let status = snapshot.status;
    let interrupt = snapshot
        .interrupts
        .first()
        .filter(|_| status.is_suspended());
    let kind = interrupt.map(|i| i.kind.to_string());
    let row = a2a_task_state(status, kind.as_deref());

    let timestamp = [
        &snapshot.updated_at,
        &snapshot.completed_at,
        &snapshot.started_at,
        &snapshot.created_at,
    ]
    .into_iter()
    .find_map(Option::clone);
    let task_status = A2aTaskStatus {
        state: A2aTaskStateName::from(row.wire),
        message: status_message(
            snapshot,
            status,
            interrupt,
            source.open_interrupt_payload,
            row.wire,
        )?,
        timestamp,
    };
    let artifacts = match (shape.include_artifacts, source.answer, &snapshot.outputs) {
        (false, _, _) => Vec::new(),
        (true, Some(declared), _) => declared_artifacts(declared),
        (true, None, Some(outputs)) => vec![A2aArtifact {
            artifact_id: OUTPUTS_ARTIFACT_ID.to_owned(),
            name: Some("outputs".to_owned()),
            description: None,
            parts: vec![data_part(Value::Object(outputs.clone()))],
            metadata: None,
            extensions: Vec::new(),
        }],
        (true, None, None) => Vec::new(),
    };
    let history = match shape.history_length {
        None => source.history,
        Some(n) => &source.history[source.history.len().saturating_sub(n)..],
    };
    let task = A2aTask {
        id: run_id.to_owned(),
        context_id: Some(source.context_id.unwrap_or(run_id).to_owned()),
        status: task_status,
        artifacts,
        history: history.iter().filter_map(a2a_message).collect(),
        metadata: interrupt.map(interrupt_metadata),
    };
    Ok(Projected {
        task,
        status,
        wire_state: row.wire,
    })
}

/// A stored message as A2A defines one: read into the typed Message, so only A2A's own
/// fields, on the message and on each part, are ever sent back (what a client added of its
/// own is not), and every history entry validates against A2A's schema. `metadata` and a
/// part's `data` and `metadata` are open values: they round-trip untouched, as interop.md
/// requires. A stored message that does not read (none should: each was read the same way
/// on arrival) is left out and logged.
pub fn a2a_message(stored: &Value) -> Option<A2aMessage> {
    A2aMessage::deserialize(stored)
        .inspect_err(|e| tracing::warn!(error = %e, "a stored A2A message does not read as one"))
        .ok()
}

/// `metadata.openwop.interrupt`: what a peer needs to answer the interrupt, nothing more.
/// A Task's and a Message's `metadata` is open (a `google.protobuf.Struct`); the `openwop`
/// member is this host's own carrier, written as JSON.
fn interrupt_metadata(interrupt: &OpenInterrupt) -> Map<String, Value> {
    let carrier = json!({
        "kind": interrupt.kind.to_string(),
        "nodeId": interrupt.node_id.as_str(),
        "interruptId": interrupt.interrupt_id.as_str(),
    });
    Map::from_iter([("openwop".to_owned(), json!({ "interrupt": carrier }))])
}

fn agent_message(
    message_id: String,
    parts: Vec<A2aPart>,
    metadata: Option<Map<String, Value>>,
) -> A2aMessage {
    A2aMessage {
        message_id: Some(message_id),
        context_id: None,
        task_id: None,
        role: Some(A2aRole::RoleAgent),
        parts,
        metadata,
        extensions: Vec::new(),
        reference_task_ids: Vec::new(),
    }
}

/// The status message: what the peer must do (interrupts) or why the run failed. Its
/// messageId derives from what it describes, so repeated reads give the same message.
fn status_message(
    snapshot: &RunSnapshot,
    status: RunStatus,
    interrupt: Option<&OpenInterrupt>,
    payload: Option<&Value>,
    wire: &str,
) -> Result<Option<A2aMessage>, ProjectError> {
    if let Some(i) = interrupt {
        let interrupt_id = i.interrupt_id.as_str();
        // The interrupt's payload is the workflow's (open): read by name.
        let data = payload.and_then(|p| p.get("data"));
        if wire == "TASK_STATE_AUTH_REQUIRED" {
            let data = data.ok_or(ProjectError::NoConnectUrl)?;
            let connect_url = data
                .get("connectUrl")
                .and_then(Value::as_str)
                .ok_or(ProjectError::NoConnectUrl)?;
            let provider = data
                .get("provider")
                .and_then(Value::as_str)
                .unwrap_or("the provider");
            let mut grant = Map::new();
            grant.insert("connectUrl".into(), Value::String(connect_url.to_owned()));
            for key in ["provider", "scopes", "reason"] {
                if let Some(v) = data.get(key) {
                    grant.insert(key.into(), v.clone());
                }
            }
            let parts = vec![
                text_part(format!(
                    "Authorization with {provider} is needed; open {connect_url} to grant it."
                )),
                data_part(Value::Object(grant)),
            ];
            return Ok(Some(agent_message(
                format!("{interrupt_id}:status"),
                parts,
                Some(interrupt_metadata(i)),
            )));
        }
        let mut parts = vec![text_part(asked_text(&i.kind.to_string(), data))];
        if let Some(d) = data {
            parts.push(data_part(d.clone()));
        }
        return Ok(Some(agent_message(
            format!("{interrupt_id}:status"),
            parts,
            Some(interrupt_metadata(i)),
        )));
    }
    if status == RunStatus::Failed
        && let Some(error) = &snapshot.error
    {
        let (code, message) = (error.code.as_str(), error.message.as_str());
        return Ok(Some(agent_message(
            format!("{}:failed", snapshot.run_id.as_str()),
            vec![text_part(format!("{code}: {message}"))],
            None,
        )));
    }
    Ok(None)
}

/// The text of an input-required status message: what the run asks, in words a person
/// (or the agent relaying it) can answer, since a plain A2A client shows the text part and
/// may ignore the data part: the clarification's questions, the approval's title and
/// actions, the awaited event. The data part beside it carries the whole interrupt.
fn asked_text(kind: &str, data: Option<&Value>) -> String {
    let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let generic =
        || format!("The task waits for {kind} input; reply on this task with the resume value.");
    let Some(data) = data else {
        return generic();
    };
    match kind {
        "clarification" => {
            let questions: Vec<String> = data
                .get("questions")
                .and_then(Value::as_array)
                .map(|qs| qs.iter().filter_map(|q| field(q, "question")).collect())
                .unwrap_or_default();
            match questions.as_slice() {
                [] => generic(),
                [one] => one.clone(),
                many => many
                    .iter()
                    .enumerate()
                    .map(|(n, q)| format!("{}. {q}", n + 1))
                    .collect::<Vec<_>>()
                    .join("\n"),
            }
        }
        "approval" => {
            let title = field(data, "title").unwrap_or_else(|| "Approve?".into());
            let actions: Vec<&str> = data
                .get("actions")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if actions.is_empty() {
                title
            } else {
                format!("{title} (reply {})", actions.join(", "))
            }
        }
        "external-event" => match field(data, "eventType") {
            Some(event) => format!("The task waits for the event `{event}`."),
            None => generic(),
        },
        _ => generic(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A typed answer as the JSON it is written as.
    fn j<T: serde::Serialize>(value: &T) -> Value {
        serde_json::to_value(value).expect("json")
    }

    #[test]
    fn an_input_required_status_message_says_what_is_asked() {
        let q = |qs: Value| asked_text("clarification", Some(&json!({"questions": qs})));
        assert_eq!(
            q(json!([{"id": "a", "question": "Which colour?"}])),
            "Which colour?"
        );
        assert_eq!(
            q(json!([{"id": "a", "question": "Who?"}, {"id": "b", "question": "When?"}])),
            "1. Who?\n2. When?"
        );
        assert_eq!(
            asked_text(
                "approval",
                Some(&json!({"title": "Ship it?", "actions": ["accept", "reject"]}))
            ),
            "Ship it? (reply accept, reject)"
        );
        assert_eq!(
            asked_text(
                "external-event",
                Some(&json!({"eventType": "payment.settled"}))
            ),
            "The task waits for the event `payment.settled`."
        );
        assert!(asked_text("clarification", None).contains("reply on this task"));
    }

    fn snapshot(status: &str) -> Value {
        json!({
            "runId": "acme/r-0123456789abcdef",
            "workflowId": "echo",
            "status": status,
            "owner": {"tenant": "acme", "subject": {
                "issuer": "urn:openwop-rs:api-key", "subjectId": "key-0123456789abcdef",
                "tenant": "acme", "lane": "api-key", "kind": "user"
            }},
            "eventLogSchemaVersion": 3,
            "updatedAt": "2026-12-02T18:00:00.000Z",
        })
    }

    fn waiting(status: &str, kind: &str) -> Value {
        let mut s = snapshot(status);
        s["interrupts"] =
            json!([{"interruptId": "acme/i-0123456789abcdef", "nodeId": "gate", "kind": kind}]);
        s
    }

    /// The typed snapshot of a JSON one, as a host would have built it.
    fn typed(s: &Value) -> RunSnapshot {
        serde_json::from_value(s.clone()).expect("a run snapshot")
    }

    fn project(s: &Value, payload: Option<&Value>) -> Projected {
        task(
            TaskSource {
                snapshot: &typed(s),
                context_id: s.get("contextId").and_then(Value::as_str),
                open_interrupt_payload: payload,
                history: &[],
                answer: None,
            },
            Shape::default(),
        )
        .expect("projects")
    }

    #[test]
    fn every_run_status_projects_through_the_generated_table() {
        let expected = [
            ("pending", "TASK_STATE_SUBMITTED"),
            ("running", "TASK_STATE_WORKING"),
            ("paused", "TASK_STATE_WORKING"),
            ("completed", "TASK_STATE_COMPLETED"),
            ("failed", "TASK_STATE_FAILED"),
            ("cancelling", "TASK_STATE_WORKING"),
            ("cancelled", "TASK_STATE_CANCELED"),
        ];
        for (status, wire) in expected {
            let p = project(&snapshot(status), None);
            assert_eq!(j(&p.task)["status"]["state"], json!(wire), "{status}");
            assert_eq!(j(&p.task)["id"], json!("acme/r-0123456789abcdef"));
            assert_eq!(
                j(&p.task)["status"]["timestamp"],
                json!("2026-12-02T18:00:00.000Z")
            );
        }
    }

    #[test]
    fn waiting_runs_are_input_required_with_the_interrupt_carrier() {
        for (status, kind) in [
            ("waiting-approval", "approval"),
            ("waiting-input", "clarification"),
            ("waiting-external", "external-event"),
        ] {
            let p = project(&waiting(status, kind), None);
            assert_eq!(
                j(&p.task)["status"]["state"],
                json!("TASK_STATE_INPUT_REQUIRED")
            );
            assert_eq!(
                j(&p.task)["metadata"]["openwop"]["interrupt"],
                json!({"kind": kind, "nodeId": "gate", "interruptId": "acme/i-0123456789abcdef"})
            );
            assert_eq!(j(&p.task)["status"]["message"]["role"], json!("ROLE_AGENT"));
        }
    }

    #[test]
    fn credential_interrupt_projects_to_auth_required_with_connect_url() {
        let payload = json!({"kind": "credential", "key": "k", "data": {"provider": "github", "scopes": ["repo"], "reason": "missing", "connectUrl": "https://host.example/connect/abc"}});
        let p = project(&waiting("waiting-input", "credential"), Some(&payload));
        assert_eq!(
            j(&p.task)["status"]["state"],
            json!("TASK_STATE_AUTH_REQUIRED")
        );
        assert_eq!(
            j(&p.task)["metadata"]["openwop"]["interrupt"]["kind"],
            json!("credential")
        );
        let shown = j(&p.task);
        let parts = shown["status"]["message"]["parts"]
            .as_array()
            .expect("parts");
        assert!(parts.iter().any(|part| part["data"]["connectUrl"] == json!("https://host.example/connect/abc")));
        // Without the payload the host cannot honour the MUST, so it says so instead of
        // answering an auth-required task with no way to authorize.
        let bare = task(
            TaskSource {
                snapshot: &typed(&waiting("waiting-input", "credential")),
                context_id: None,
                open_interrupt_payload: None,
                history: &[],
                answer: None,
            },
            Shape::default(),
        );
        assert_eq!(bare.err(), Some(ProjectError::NoConnectUrl));
    }

    #[test]
    fn auth_required_is_never_emitted_otherwise() {
        for status in [
            "pending",
            "running",
            "paused",
            "waiting-approval",
            "waiting-input",
            "waiting-external",
            "completed",
            "failed",
            "cancelling",
            "cancelled",
        ] {
            for kind in ["approval", "clarification", "external-event"] {
                let p = project(&waiting(status, kind), None);
                assert_ne!(
                    j(&p.task)["status"]["state"],
                    json!("TASK_STATE_AUTH_REQUIRED"),
                    "{status}/{kind}"
                );
            }
        }
        // A stale credential interrupt on a run no longer waiting does not select the override.
        let p = project(&waiting("running", "credential"), None);
        assert_eq!(j(&p.task)["status"]["state"], json!("TASK_STATE_WORKING"));
        assert!(j(&p.task).get("metadata").is_none());
    }

    #[test]
    fn outputs_become_one_stable_artifact_only_when_asked() {
        let mut s = snapshot("completed");
        s["outputs"] = json!({"echo": "hi"});
        let p = project(&s, None);
        assert_eq!(
            j(&p.task)["artifacts"][0]["artifactId"],
            json!(OUTPUTS_ARTIFACT_ID)
        );
        assert_eq!(
            j(&p.task)["artifacts"][0]["parts"][0]["data"],
            json!({"echo": "hi"})
        );
        let without = task(
            TaskSource {
                snapshot: &typed(&s),
                context_id: None,
                open_interrupt_payload: None,
                history: &[],
                answer: None,
            },
            Shape {
                history_length: None,
                include_artifacts: false,
            },
        )
        .expect("p");
        assert!(
            j(&without.task).get("artifacts").is_none(),
            "omitted, not []"
        );
    }

    #[test]
    fn history_carries_only_the_fields_a2a_defines_and_opaque_values_round_trip() {
        let stored = json!({
            "messageId": "m1", "role": "ROLE_USER", "taskId": "t", "contextId": "c",
            "parts": [{"text": "hi", "mediaType": "text/plain", "vendorHint": 1}],
            "metadata": {"mine": {"deep": [1, 2]}, "openwop": {"skill": "echo"}},
            "extensions": ["https://ext.example/x"],
            "referenceTaskIds": ["t0"],
            "kind": "message", "clientOwn": {"x": 1}
        });
        let shown = j(&a2a_message(&stored));
        assert_eq!(
            shown,
            json!({
                "messageId": "m1", "role": "ROLE_USER", "taskId": "t", "contextId": "c",
                "parts": [{"text": "hi", "mediaType": "text/plain"}],
                "metadata": {"mine": {"deep": [1, 2]}, "openwop": {"skill": "echo"}},
                "extensions": ["https://ext.example/x"],
                "referenceTaskIds": ["t0"]
            })
        );
    }

    #[test]
    fn history_length_only_trims_the_answer() {
        let history: Vec<Value> = (0..5).map(|i| json!({"messageId": format!("m{i}"), "role": "ROLE_USER", "parts": [{"text": "x"}]})).collect();
        let s = typed(&snapshot("running"));
        let shaped = |n| {
            let t = task(
                TaskSource {
                    snapshot: &s,
                    context_id: None,
                    open_interrupt_payload: None,
                    history: &history,
                    answer: None,
                },
                Shape {
                    history_length: n,
                    include_artifacts: true,
                },
            )
            .expect("p")
            .task;
            j(&t)
        };
        assert_eq!(shaped(None)["history"].as_array().map(Vec::len), Some(5));
        assert_eq!(shaped(Some(2))["history"], json!([history[3], history[4]]));
        assert!(shaped(Some(0)).get("history").is_none());
        assert_eq!(history.len(), 5);
    }

    #[test]
    fn context_id_is_the_stored_one_else_the_run_id() {
        let mut s = snapshot("running");
        assert_eq!(project(&s, None).context_id(), "acme/r-0123456789abcdef");
        s["contextId"] = json!("ctx-1");
        assert_eq!(project(&s, None).context_id(), "ctx-1");
    }

    #[test]
    fn failed_runs_explain_themselves_by_code() {
        let mut s = snapshot("failed");
        s["error"] = json!({"code": "validation_error", "message": "bad input"});
        let p = project(&s, None);
        assert_eq!(
            j(&p.task)["status"]["message"]["parts"][0]["text"],
            json!("validation_error: bad input")
        );
    }

    #[test]
    fn stream_responses_name_their_member_and_carry_ids() {
        let mut s = snapshot("completed");
        s["outputs"] = json!({});
        let p = project(&s, None);
        assert!(j(&p.as_stream_task()).get("task").is_some());
        assert_eq!(
            j(&p.as_status_update())["statusUpdate"]["status"]["state"],
            json!("TASK_STATE_COMPLETED")
        );
        let updates = p.as_artifact_updates();
        assert_eq!(updates.len(), 1);
        assert_eq!(
            j(&updates[0])["artifactUpdate"]["artifact"]["artifactId"],
            json!(OUTPUTS_ARTIFACT_ID)
        );
        assert_eq!(j(&updates[0])["artifactUpdate"]["lastChunk"], json!(true));
    }
}
