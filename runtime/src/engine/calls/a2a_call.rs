//! The `a2a` node: send the message (negotiated and audited first), follow the remote
//! task it became, relay its INPUT_REQUIRED / AUTH_REQUIRED question and send the answer
//! back, cancel it when this run ends first.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{ATTEMPTS, Pause, message_id, phase, round};
use crate::engine::call_state::{ANSWER, CallStep, with_call};
use crate::engine::definition::{AnswerPart, InterruptKind};
use crate::engine::executor::{Engine, EngineError, context};
use crate::engine::template;
use crate::generated::dispatch::{self, RunStatus as Reverse};
use crate::generated::errors::ErrorCode;
use crate::generated::models;
use crate::negotiation::{self, Protocol};
use crate::peers::{self, CallError, Caller, a2a};
use crate::store::{RunPatch, RunRecord, Topic};

/// A template value as an A2A part (the `answer` part shapes).
fn a2a_part(part: &Value) -> Value {
    let mut out = Map::new();
    match part.get("kind").and_then(Value::as_str) {
        Some("text") => {
            let text = match part.get("text") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            out.insert("text".into(), json!(text));
        }
        Some("data") => {
            out.insert(
                "data".into(),
                part.get("data").cloned().unwrap_or(Value::Null),
            );
            out.insert("mediaType".into(), json!("application/json"));
        }
        Some("file") => {
            if let Some(url) = part.get("url") {
                out.insert("url".into(), url.clone());
            }
            if let Some(bytes) = part.get("bytes") {
                out.insert("raw".into(), bytes.clone());
            }
            for key in ["mediaType", "filename"] {
                if let Some(v) = part.get(key) {
                    out.insert(key.into(), v.clone());
                }
            }
        }
        _ => {}
    }
    Value::Object(out)
}

/// The interrupt a remote INPUT_REQUIRED or AUTH_REQUIRED raises here, in the generated
/// shapes every client of this host decodes: INPUT_REQUIRED is a clarification with one
/// question (`answer`, the remote status message's text); AUTH_REQUIRED is a `credential`
/// interrupt whose `connectUrl`, `provider`, `scopes` and `reason` come from the remote
/// status message's data part. Which remote task asked stays in the run's call state, not
/// in the interrupt. `Err` says why the remote request cannot be relayed.
fn remote_question(
    task: &models::A2aTask,
    wire: &str,
    peer: &str,
) -> Result<(InterruptKind, Value), String> {
    let message = task.status.message.as_ref();
    let text = message.map(a2a::message_text).unwrap_or_default();
    let data_part = message.and_then(|m| a2a::first_data(&m.parts));
    if wire == "TASK_STATE_AUTH_REQUIRED" {
        let grant = data_part.unwrap_or(Value::Null);
        let member = |key: &str| grant.get(key).filter(|v| !v.is_null()).cloned();
        let reason = member("reason")
            .filter(|r| {
                matches!(
                    r.as_str(),
                    Some("missing" | "expired" | "insufficient_scope")
                )
            })
            .unwrap_or_else(|| json!("missing"));
        let data = json!({
            "provider": member("provider").unwrap_or_else(|| json!(peer)),
            "scopes": member("scopes").unwrap_or_else(|| json!([])),
            "reason": reason,
            "connectUrl": member("connectUrl").ok_or(
                "the remote agent needs a credential but names no connectUrl in its status message's data part"
            )?,
        });
        let typed: models::CredentialData = serde_json::from_value(data)
            .map_err(|e| format!("its credential request does not fit: {e}"))?;
        return Ok((InterruptKind::Credential, json!(typed)));
    }
    let question = if !text.trim().is_empty() {
        text
    } else if let Some(d) = data_part {
        d.to_string()
    } else {
        format!("The agent `{peer}` asks for input.")
    };
    let data = models::ClarificationData {
        questions: vec![models::ClarificationQuestion {
            id: ANSWER.parse().map_err(|e| format!("{e}"))?,
            question: question.parse().map_err(|e| format!("{e}"))?,
            schema: None,
        }],
        context_type: Some("remote-agent".into()),
    };
    Ok((InterruptKind::Clarification, json!(data)))
}

impl Engine {
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn call_a2a(
        &self,
        run: &RunRecord,
        id: &str,
        peer: &peers::Peer,
        caller: &Caller,
        call: &Map<String, Value>,
        parts: &[AnswerPart],
        metadata: &Map<String, Value>,
    ) -> Result<CallStep, EngineError> {
        let peers = self.peers();
        let remote = match self
            .retrying(ATTEMPTS, || a2a::remote(peers, peer, caller))
            .await
        {
            Ok(r) => r,
            Err(e) => return self.call_failed(run, id, peer.kind, e, vec![]),
        };
        let visit = call.get("visit").and_then(Value::as_str).unwrap_or("0");
        let mut call = call.clone();
        match phase(&call) {
            "send" => {
                let Some(offer) = peers.offer(Protocol::A2a) else {
                    return self.fail(
                        run,
                        id,
                        ErrorCode::PeerCallFailed,
                        "this host offers no A2A version",
                        vec![],
                    );
                };
                let decision =
                    negotiation::decide(Protocol::A2a, Some(&remote.version), true, offer)
                        .with_peer(peers.peer_digest(peer));
                let audit = vec![self.negotiation_event(run, id, &decision).await?];
                if !decision.is_accepted() {
                    return self.fail(
                        run,
                        id,
                        ErrorCode::InteropVersionUnsupported,
                        &format!(
                            "node `{id}`: the agent speaks A2A {}, which this host does not accept (floor {})",
                            remote.version, decision.floor
                        ),
                        audit,
                    );
                }
                let ctx = context(run);
                let parts: Vec<Value> = parts
                    .iter()
                    .map(|p| {
                        let raw = serde_json::to_value(p).unwrap_or(Value::Null);
                        a2a_part(&template::render(&raw, &ctx))
                    })
                    .collect();
                let mut md = template::render(&Value::Object(metadata.clone()), &ctx)
                    .as_object()
                    .cloned()
                    .unwrap_or_default();
                let ow = md
                    .entry("openwop")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(ow) = ow {
                    ow.insert("traceparent".into(), json!(caller.traceparent));
                }
                let message = match a2a::message_of(json!({
                    "messageId": message_id(&run.run_id, id, visit, 0),
                    "role": "ROLE_USER",
                    "parts": parts,
                    "metadata": md,
                })) {
                    Ok(message) => message,
                    Err(e) => {
                        return self.call_failed(run, id, peer.kind, CallError::Protocol(e), audit);
                    }
                };
                match self
                    .retrying(ATTEMPTS, || {
                        a2a::send(peers, peer, caller, &remote, message.clone())
                    })
                    .await
                {
                    Ok(a2a::Sent::Message(reply)) => {
                        self.done(run, id, a2a::message_value(&reply), audit)
                    }
                    Ok(a2a::Sent::Task(task)) => {
                        call.insert("phase".into(), json!("follow"));
                        call.insert("taskId".into(), json!(task.id));
                        call.insert("contextId".into(), json!(task.context_id));
                        Ok(CallStep::Checkpoint(
                            RunPatch {
                                state: Some(with_call(&run.state, id, Some(Value::Object(call)))),
                                ..Default::default()
                            },
                            audit,
                        ))
                    }
                    Err(e) => self.call_failed(run, id, peer.kind, e, audit),
                }
            }
            "reply" => {
                let next_round = round(&call) + 1;
                let reply = call.get("reply").cloned().unwrap_or(Value::Null);
                let message = match a2a::message_of(json!({
                    "messageId": message_id(&run.run_id, id, visit, next_round),
                    "role": "ROLE_USER",
                    "taskId": call.get("taskId"),
                    "contextId": call.get("contextId"),
                    "parts": a2a::reply_parts(&reply),
                    "metadata": {"openwop": {"traceparent": caller.traceparent}},
                })) {
                    Ok(message) => message,
                    Err(e) => {
                        return self.call_failed(
                            run,
                            id,
                            peer.kind,
                            CallError::Protocol(e),
                            vec![],
                        );
                    }
                };
                match self
                    .retrying(ATTEMPTS, || {
                        a2a::send(peers, peer, caller, &remote, message.clone())
                    })
                    .await
                {
                    Ok(a2a::Sent::Message(reply)) => {
                        self.done(run, id, a2a::message_value(&reply), vec![])
                    }
                    Ok(a2a::Sent::Task(_)) => {
                        call.insert("phase".into(), json!("follow"));
                        call.insert("round".into(), json!(next_round));
                        call.remove("reply");
                        Ok(CallStep::Checkpoint(
                            RunPatch {
                                state: Some(with_call(&run.state, id, Some(Value::Object(call)))),
                                ..Default::default()
                            },
                            vec![],
                        ))
                    }
                    Err(e) => self.call_failed(run, id, peer.kind, e, vec![]),
                }
            }
            "follow" => self.follow_a2a(run, id, peer, caller, &remote, call).await,
            // `asking`: the run is suspended; nothing to do until the answer comes.
            _ => Ok(CallStep::Stopped),
        }
    }

    /// Polls the remote task until it ends or asks, watching this run for a cancel.
    async fn follow_a2a(
        &self,
        run: &RunRecord,
        id: &str,
        peer: &peers::Peer,
        caller: &Caller,
        remote: &a2a::Remote,
        mut call: Map<String, Value>,
    ) -> Result<CallStep, EngineError> {
        let peers = self.peers();
        let task_id = call
            .get("taskId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let mut wakes = self.store().subscribe(&[Topic::Run(run.run_id.clone())]);
        let mut shutdown = self.shutdown_signal();
        let mut delay = Duration::from_millis(100);
        let mut warned = false;
        loop {
            let task = match self
                .retrying(ATTEMPTS, || {
                    a2a::get_task(peers, peer, caller, remote, &task_id)
                })
                .await
            {
                Ok(t) => t,
                Err(e) => return self.call_failed(run, id, peer.kind, e, vec![]),
            };
            let wire = a2a::state_of(&task).to_owned();
            // The generated reverse table decides what the remote state means here.
            match dispatch::a2a_task_state_reverse(&wire) {
                Some(Reverse::Completed) => {
                    return self.done(run, id, a2a::task_value(&task), vec![]);
                }
                Some(Reverse::Failed) if wire == "TASK_STATE_REJECTED" => {
                    let why = task
                        .status
                        .message
                        .as_ref()
                        .map(a2a::message_text)
                        .filter(|t| !t.is_empty())
                        .unwrap_or_else(|| "the remote agent rejected the task".into());
                    return self.fail(
                        run,
                        id,
                        ErrorCode::RejectedByRemote,
                        &format!("node `{id}`: {why}"),
                        vec![],
                    );
                }
                Some(Reverse::WaitingInput) => {
                    call.insert("phase".into(), json!("asking"));
                    return match remote_question(&task, &wire, &peer.id) {
                        Ok((kind, data)) => self.suspend(run, id, kind, data, call, vec![]),
                        Err(why) => self.fail(
                            run,
                            id,
                            ErrorCode::PeerCallFailed,
                            &format!("node `{id}`: the remote request cannot be relayed: {why}"),
                            vec![],
                        ),
                    };
                }
                Some(Reverse::Pending | Reverse::Running) if wire != "TASK_STATE_UNSPECIFIED" => {}
                Some(Reverse::Pending | Reverse::Running) | None => {
                    if !warned {
                        tracing::warn!(run_id = %run.run_id, node = id, state = %wire, "the remote task's state is unspecified or unknown; reading it as pending");
                        warned = true;
                    }
                }
                Some(other) => {
                    return self.fail(
                        run,
                        id,
                        ErrorCode::PeerCallFailed,
                        &format!(
                            "node `{id}`: the remote task ended {wire} ({})",
                            other.as_str()
                        ),
                        vec![],
                    );
                }
            }
            match self
                .pause_poll(&run.run_id, delay, &mut wakes, &mut shutdown)
                .await?
            {
                Pause::Again => {}
                Pause::Stopping => return Ok(CallStep::Stopped),
                Pause::NotRunning => {
                    // Cancelled here: cancel there too.
                    if let Err(e) = a2a::cancel_task(peers, peer, caller, remote, &task_id).await {
                        tracing::warn!(run_id = %run.run_id, error = %e, "cannot cancel the remote task");
                    }
                    return Ok(CallStep::Stopped);
                }
            }
            delay = (delay * 2).min(Duration::from_secs(2));
        }
    }
}
