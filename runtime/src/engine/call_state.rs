//! What a calling node keeps in the run (`state.calls.<nodeId>`, see [`super::calls`]) and
//! what a call step hands the driver: shared by the driver, the planner and the calls
//! themselves, and depending on none of them.

use serde_json::{Map, Value, json};

use super::executor::SuspendedAt;
use crate::status::RunStatus;
use crate::store::{NewEvent, RunPatch, RunRecord};

/// What a call step does to the run.
pub(super) enum CallStep {
    /// The node finished; the next node may follow in the same commit.
    Done(RunPatch, Vec<NewEvent>),
    /// Progress worth storing before going on (a remote task id): commit, then continue.
    Checkpoint(RunPatch, Vec<NewEvent>),
    /// The run ended (the node failed).
    End(RunPatch, Vec<NewEvent>),
    /// The run suspends on an interrupt carrying the remote question.
    Suspend(RunPatch, Vec<NewEvent>, SuspendedAt),
    /// The run stopped being one to drive (a cancel), or the host is stopping.
    Stopped,
}

/// The id of the one question a remote A2A agent's INPUT_REQUIRED becomes; its answer
/// (`{"answer": ...}`) is what goes back to the remote task.
pub(super) const ANSWER: &str = "answer";

/// `state.calls.<id>`, when the node has a call under way.
pub(super) fn call_state<'a>(state: &'a Value, id: &str) -> Option<&'a Map<String, Value>> {
    state.get("calls")?.get(id)?.as_object()
}

/// The state with `calls.<id>` set to `call`, or removed.
pub(super) fn with_call(state: &Value, id: &str, call: Option<Value>) -> Value {
    let mut state = state.as_object().cloned().unwrap_or_default();
    let calls = state
        .entry("calls")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = calls {
        match call {
            Some(c) => {
                m.insert(id.to_owned(), c);
            }
            None => {
                m.remove(id);
            }
        }
    }
    if state
        .get("calls")
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty)
    {
        state.remove("calls");
    }
    Value::Object(state)
}

/// The state a calling node starts with.
pub(super) fn begin(state: &Value, id: &str) -> Value {
    with_call(
        state,
        id,
        Some(json!({"phase": "send", "visit": crate::ids::mint_opaque(), "round": 0})),
    )
}

/// The change resolving an interrupt a call raised makes: the answer is stored for the
/// call to send back; the run stays on the node. `None` when the interrupt is not a
/// call's question.
pub(super) fn on_answer(run: &RunRecord, node_id: &str, resume: &Value) -> Option<RunPatch> {
    let call = call_state(&run.state, node_id)?;
    // A question asked in a call's own round is answered in the next round; one asked by
    // a remote MCP task goes back with `tasks/update`.
    let next = match call.get("phase").and_then(Value::as_str) {
        Some("asking") => "reply",
        Some("task-asking") => "task-reply",
        _ => return None,
    };
    // An A2A question is one clarification question, `answer`: its answer is what goes
    // back. (An MCP round keeps the whole value: it is keyed by the round's requests.)
    let reply = match resume.as_object() {
        Some(o) if !call.contains_key("requests") && o.len() == 1 => {
            o.get(ANSWER).unwrap_or(resume)
        }
        _ => resume,
    };
    let mut call = call.clone();
    call.insert("phase".into(), json!(next));
    call.insert("reply".into(), reply.clone());
    Some(RunPatch {
        status: Some(RunStatus::Running),
        state: Some(with_call(&run.state, node_id, Some(Value::Object(call)))),
        ..Default::default()
    })
}
