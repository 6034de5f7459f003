//! A run, as the REST wire shows it (the generated `RunSnapshot`), projected to an A2A 1.0
//! `Task` (ProtoJSON spelling). It reads the typed snapshot, not its JSON: the fields are
//! known, the status is a `RunStatus` already, and nothing is serialised to be read back.
//!
//! The state comes from the generated task-state table, never from a local match: the
//! open interrupt's kind selects an override row, which is how a credential interrupt (and
//! nothing else) becomes `TASK_STATE_AUTH_REQUIRED`. The projection is read-only; it never
//! needs to append to the run's log.

use crate::status::Lifecycle;

use openwop_generated::dispatch::{RunStatus, a2a_task_state};
use openwop_generated::models::{OpenInterrupt, RunSnapshot};
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
fn declared_artifacts(declared: &[crate::ops::Artifact]) -> Value {
    Value::Array(
        declared
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let mut artifact = Map::new();
                artifact.insert("artifactId".into(), json!(format!("answer-{i}")));
                if let Some(name) = &a.name {
                    artifact.insert("name".into(), json!(name));
                }
                if let Some(description) = &a.description {
                    artifact.insert("description".into(), json!(description));
                }
                artifact.insert("parts".into(), parts(&a.parts));
                Value::Object(artifact)
            })
            .collect(),
    )
}

/// A2A 1.0 Parts of rendered answer parts: `text`, `url` or `raw` (with `mediaType` and
/// `filename`), `data`.
pub fn parts(parts: &[crate::ops::Part]) -> Value {
    use crate::ops::Part;
    Value::Array(
        parts
            .iter()
            .map(|p| match p {
                Part::Text(text) => json!({"text": text}),
                Part::Data(data) => json!({"data": data, "mediaType": "application/json"}),
                Part::File {
                    url,
                    bytes,
                    media_type,
                    filename,
                } => {
                    let mut part = Map::new();
                    match (url, bytes) {
                        (Some(url), _) => part.insert("url".into(), json!(url)),
                        (None, bytes) => part.insert("raw".into(), json!(bytes)),
                    };
                    part.insert("mediaType".into(), json!(media_type));
                    if let Some(f) = filename {
                        part.insert("filename".into(), json!(f));
                    }
                    Value::Object(part)
                }
            })
            .collect(),
    )
}

/// The fields of a Task the projection reads more than once.
#[derive(Debug, Clone)]
pub struct Projected {
    pub task: Value,
    pub status: RunStatus,
    pub wire_state: &'static str,
}

impl Projected {
    pub fn task_id(&self) -> &str {
        self.task["id"].as_str().unwrap_or_default()
    }

    pub fn context_id(&self) -> &str {
        self.task["contextId"].as_str().unwrap_or_default()
    }

    /// `StreamResponse{task}`.
    pub fn as_stream_task(&self) -> Value {
        json!({"task": self.task})
    }

    /// `StreamResponse{statusUpdate}` for the task's current status.
    pub fn as_status_update(&self) -> Value {
        json!({"statusUpdate": {"taskId": self.task["id"], "contextId": self.task["contextId"], "status": self.task["status"]}})
    }

    /// `StreamResponse{artifactUpdate}` for each artifact of the task (whole, one chunk).
    pub fn as_artifact_updates(&self) -> Vec<Value> {
        self.task["artifacts"]
            .as_array()
            .map(|artifacts| {
                artifacts
                    .iter()
                    .map(|a| {
                        json!({"artifactUpdate": {"taskId": self.task["id"], "contextId": self.task["contextId"], "artifact": a, "append": false, "lastChunk": true}})
                    })
                    .collect()
            })
            .unwrap_or_default()
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

    let mut task_status = Map::new();
    task_status.insert("state".into(), json!(row.wire));
    if let Some(message) = status_message(
        snapshot,
        status,
        interrupt,
        source.open_interrupt_payload,
        row.wire,
    )? {
        task_status.insert("message".into(), message);
    }
    if let Some(at) = [
        &snapshot.updated_at,
        &snapshot.completed_at,
        &snapshot.started_at,
        &snapshot.created_at,
    ]
    .into_iter()
    .find_map(Option::as_deref)
    {
        task_status.insert("timestamp".into(), json!(at));
    }

    let mut out = Map::new();
    out.insert("id".into(), json!(run_id));
    out.insert(
        "contextId".into(),
        json!(source.context_id.unwrap_or(run_id)),
    );
    out.insert("status".into(), Value::Object(task_status));
    if shape.include_artifacts
        && let Some(declared) = source.answer
    {
        out.insert("artifacts".into(), declared_artifacts(declared));
    } else if shape.include_artifacts
        && let Some(outputs) = &snapshot.outputs
    {
        out.insert(
            "artifacts".into(),
            json!([{"artifactId": OUTPUTS_ARTIFACT_ID, "name": "outputs", "parts": [{"data": outputs, "mediaType": "application/json"}]}]),
        );
    }
    let history = match shape.history_length {
        None => source.history,
        Some(n) => &source.history[source.history.len().saturating_sub(n)..],
    };
    if !history.is_empty() {
        out.insert(
            "history".into(),
            Value::Array(history.iter().map(a2a_message).collect()),
        );
    }
    if let Some(i) = interrupt {
        out.insert(
            "metadata".into(),
            json!({"openwop": {"interrupt": interrupt_carrier(i)}}),
        );
    }
    Ok(Projected {
        task: Value::Object(out),
        status,
        wire_state: row.wire,
    })
}

/// The fields A2A 1.0 defines on a `Message`.
const MESSAGE_FIELDS: [&str; 8] = [
    "messageId",
    "contextId",
    "taskId",
    "role",
    "parts",
    "metadata",
    "extensions",
    "referenceTaskIds",
];

/// The fields A2A 1.0 defines on a `Part` (one content member and its companions).
const PART_FIELDS: [&str; 7] = [
    "text",
    "raw",
    "url",
    "data",
    "metadata",
    "filename",
    "mediaType",
];

fn only(value: &Value, fields: &[&str]) -> Map<String, Value> {
    value
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(k, _)| fields.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// A stored message as A2A defines one: only A2A's own fields, on the message and on each
/// part, so what a client added of its own is never sent back and every history entry
/// validates against A2A's schema. `metadata` and `extensions` are A2A's fields whose
/// contents are opaque: they round-trip untouched, as interop.md requires.
pub fn a2a_message(stored: &Value) -> Value {
    let mut message = only(stored, &MESSAGE_FIELDS);
    if let Some(parts) = message.get_mut("parts").and_then(Value::as_array_mut) {
        for part in parts.iter_mut() {
            *part = Value::Object(only(part, &PART_FIELDS));
        }
    }
    Value::Object(message)
}

/// `metadata.openwop.interrupt`: what a peer needs to answer the interrupt, nothing more.
fn interrupt_carrier(interrupt: &OpenInterrupt) -> Value {
    json!({
        "kind": interrupt.kind.to_string(),
        "nodeId": interrupt.node_id.as_str(),
        "interruptId": interrupt.interrupt_id.as_str(),
    })
}

fn agent_message(message_id: String, parts: Vec<Value>, metadata: Option<Value>) -> Value {
    let mut m = Map::new();
    m.insert("messageId".into(), json!(message_id));
    m.insert("role".into(), json!("ROLE_AGENT"));
    m.insert("parts".into(), Value::Array(parts));
    if let Some(md) = metadata {
        m.insert("metadata".into(), md);
    }
    Value::Object(m)
}

/// The status message: what the peer must do (interrupts) or why the run failed. Its
/// messageId derives from what it describes, so repeated reads give the same message.
fn status_message(
    snapshot: &RunSnapshot,
    status: RunStatus,
    interrupt: Option<&OpenInterrupt>,
    payload: Option<&Value>,
    wire: &str,
) -> Result<Option<Value>, ProjectError> {
    if let Some(i) = interrupt {
        let interrupt_id = i.interrupt_id.as_str();
        let carrier = interrupt_carrier(i);
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
            grant.insert("connectUrl".into(), json!(connect_url));
            for key in ["provider", "scopes", "reason"] {
                if let Some(v) = data.get(key) {
                    grant.insert(key.into(), v.clone());
                }
            }
            let parts = vec![
                json!({"text": format!("Authorization with {provider} is needed; open {connect_url} to grant it.")}),
                json!({"data": Value::Object(grant), "mediaType": "application/json"}),
            ];
            return Ok(Some(agent_message(
                format!("{interrupt_id}:status"),
                parts,
                Some(json!({"openwop": {"interrupt": carrier}})),
            )));
        }
        let mut parts = vec![json!({"text": asked_text(&i.kind.to_string(), data)})];
        if let Some(d) = data {
            parts.push(json!({"data": d, "mediaType": "application/json"}));
        }
        return Ok(Some(agent_message(
            format!("{interrupt_id}:status"),
            parts,
            Some(json!({"openwop": {"interrupt": carrier}})),
        )));
    }
    if status == RunStatus::Failed
        && let Some(error) = &snapshot.error
    {
        let (code, message) = (error.code.as_str(), error.message.as_str());
        return Ok(Some(agent_message(
            format!("{}:failed", snapshot.run_id.as_str()),
            vec![json!({"text": format!("{code}: {message}")})],
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
            assert_eq!(p.task["status"]["state"], json!(wire), "{status}");
            assert_eq!(p.task["id"], json!("acme/r-0123456789abcdef"));
            assert_eq!(
                p.task["status"]["timestamp"],
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
                p.task["status"]["state"],
                json!("TASK_STATE_INPUT_REQUIRED")
            );
            assert_eq!(
                p.task["metadata"]["openwop"]["interrupt"],
                json!({"kind": kind, "nodeId": "gate", "interruptId": "acme/i-0123456789abcdef"})
            );
            assert_eq!(p.task["status"]["message"]["role"], json!("ROLE_AGENT"));
        }
    }

    #[test]
    fn credential_interrupt_projects_to_auth_required_with_connect_url() {
        let payload = json!({"kind": "credential", "key": "k", "data": {"provider": "github", "scopes": ["repo"], "reason": "missing", "connectUrl": "https://host.example/connect/abc"}});
        let p = project(&waiting("waiting-input", "credential"), Some(&payload));
        assert_eq!(p.task["status"]["state"], json!("TASK_STATE_AUTH_REQUIRED"));
        assert_eq!(
            p.task["metadata"]["openwop"]["interrupt"]["kind"],
            json!("credential")
        );
        let parts = p.task["status"]["message"]["parts"]
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
                    p.task["status"]["state"],
                    json!("TASK_STATE_AUTH_REQUIRED"),
                    "{status}/{kind}"
                );
            }
        }
        // A stale credential interrupt on a run no longer waiting does not select the override.
        let p = project(&waiting("running", "credential"), None);
        assert_eq!(p.task["status"]["state"], json!("TASK_STATE_WORKING"));
        assert!(p.task.get("metadata").is_none());
    }

    #[test]
    fn outputs_become_one_stable_artifact_only_when_asked() {
        let mut s = snapshot("completed");
        s["outputs"] = json!({"echo": "hi"});
        let p = project(&s, None);
        assert_eq!(
            p.task["artifacts"][0]["artifactId"],
            json!(OUTPUTS_ARTIFACT_ID)
        );
        assert_eq!(
            p.task["artifacts"][0]["parts"][0]["data"],
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
        assert!(without.task.get("artifacts").is_none(), "omitted, not []");
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
        let shown = a2a_message(&stored);
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
            task(
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
            .task
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
            p.task["status"]["message"]["parts"][0]["text"],
            json!("validation_error: bad input")
        );
    }

    #[test]
    fn stream_responses_name_their_member_and_carry_ids() {
        let mut s = snapshot("completed");
        s["outputs"] = json!({});
        let p = project(&s, None);
        assert!(p.as_stream_task().get("task").is_some());
        assert_eq!(
            p.as_status_update()["statusUpdate"]["status"]["state"],
            json!("TASK_STATE_COMPLETED")
        );
        let updates = p.as_artifact_updates();
        assert_eq!(updates.len(), 1);
        assert_eq!(
            updates[0]["artifactUpdate"]["artifact"]["artifactId"],
            json!(OUTPUTS_ARTIFACT_ID)
        );
        assert_eq!(updates[0]["artifactUpdate"]["lastChunk"], json!(true));
    }
}
