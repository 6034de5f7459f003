//! The A2A 1.0 client an `a2a` node uses: read the agent card, pick its JSON-RPC
//! interface, send a message without blocking, then follow the task by `GetTask`. It
//! speaks the same generated models as the A2A edge (`schemas/v2/a2a-wire.schema.json`):
//! requests are written from them and answers read into them.

use openwop_generated::models::{
    A2aAgentInterface, A2aMessage, A2aPart, A2aSendMessageConfiguration, A2aSendMessageRequest,
    A2aSendMessageResponse, A2aTask, A2aTaskRequest,
};
use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::rpc;
use super::{CallError, Caller, Peer, Peers};
use crate::negotiation::{self, Offer, Protocol};

/// Where and how a remote agent is spoken to, as its card says.
#[derive(Debug, Clone)]
pub struct Remote {
    /// The JSON-RPC interface's URL.
    pub endpoint: String,
    /// The interface's `protocolVersion` (what we send as `A2A-Version`).
    pub version: String,
    /// The interface's routing value, sent as `params.tenant` when present.
    pub tenant: Option<String>,
}

/// The card's URL: the peer URL itself when it names a JSON document, else the
/// well-known card under it.
fn card_url(peer: &Peer) -> String {
    if peer.url.ends_with(".json") {
        peer.url.clone()
    } else {
        format!(
            "{}/.well-known/agent-card.json",
            peer.url.trim_end_matches('/')
        )
    }
}

/// Reads the card and picks the JSON-RPC interface to speak to ([`pick_interface`]). The
/// `A2A-Version` negotiation is ours to decide; see [`crate::engine`]'s call nodes.
pub async fn remote(peers: &Peers, peer: &Peer, caller: &Caller) -> Result<Remote, CallError> {
    // A card changes rarely: it is read once a minute per peer, not on every call (each
    // step of a followed task would read it again otherwise).
    if let Some(card) = peers.cards.get(&peer.id) {
        return pick_interface(&card, peers.offer(Protocol::A2a));
    }
    let url = card_url(peer);
    let card = get_json(peers, peer, caller, &url, "agent card").await?;
    verify_card(peers, peer, caller, &url, &card).await?;
    let remote = pick_interface(&card, peers.offer(Protocol::A2a))?;
    peers.cards.put(&peer.id, card, super::CARD_KEPT_FOR);
    Ok(remote)
}

/// Reads the peer's agent card (and checks its signature, as [`remote`] does), uncached:
/// the conformance seam filters the card's offer before picking an interface. It stays
/// JSON, not the generated `A2aAgentCard`: the signature covers every member, unknown ones
/// too, and a pre-1.0 card (no `capabilities`, `skills` optional) must still be readable
/// for its interfaces.
pub async fn read_card(peers: &Peers, peer: &Peer, caller: &Caller) -> Result<Value, CallError> {
    let url = card_url(peer);
    let card = get_json(peers, peer, caller, &url, "agent card").await?;
    verify_card(peers, peer, caller, &url, &card).await?;
    Ok(card)
}

/// GETs `url` through the guard and reads its JSON; `what` names it in the errors ("the
/// {what} is not JSON", "… to the {what} request").
async fn get_json(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    url: &str,
    what: &str,
) -> Result<Value, CallError> {
    let response = peers
        .send(
            peer,
            caller,
            reqwest::Method::GET,
            url,
            HeaderMap::new(),
            None,
        )
        .await?;
    if !response.is_success() {
        return Err(CallError::Status {
            status: response.status,
            detail: format!(" to the {what} request"),
        });
    }
    serde_json::from_slice(&response.body)
        .map_err(|_| CallError::Protocol(format!("the {what} is not JSON")))
}

/// A signed card must verify before anything on it is used (`crate::card_sign::peer`):
/// its key sets are fetched through the guard like the card, and only on the card's own
/// origin. An unsigned card is accepted, as before.
async fn verify_card(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    url: &str,
    card: &Value,
) -> Result<(), CallError> {
    use crate::card_sign::peer as verify;
    let mut sets = std::collections::BTreeMap::new();
    for jku in verify::key_sets_to_fetch(card, url).map_err(CallError::Protocol)? {
        let set = get_json(peers, peer, caller, &jku, "agent card's key set").await?;
        sets.insert(jku, set);
    }
    match verify::check(card, &sets).map_err(CallError::Protocol)? {
        Some(kid) => {
            tracing::debug!(peer = %peer.id, kid, "the peer's agent card signature verifies")
        }
        None => tracing::debug!(peer = %peer.id, "the peer's agent card is unsigned"),
    }
    Ok(())
}

/// The card's JSON-RPC interface to use: the first (the card lists them in its order of
/// preference) whose `protocolVersion` this host accepts, else the first JSON-RPC one, so
/// the negotiation refuses it by its version. A2A 1.0 §5: several interfaces may serve
/// different versions; an agent migrating to 1.0 lists a 0.3 interface beside its 1.0
/// one, in either order (the Python a2a-sdk serves both on one endpoint), and taking the
/// first JSON-RPC interface blindly refused such an agent although it speaks 1.0. The card
/// stays the JSON its signature covers (`crate::card_sign`); its interfaces are read into
/// the generated `A2aAgentInterface`, and one that does not read is one we cannot use.
#[allow(
    clippy::result_large_err,
    reason = "once per call to a peer, beside a network round trip"
)]
pub fn pick_interface(card: &Value, offer: Option<&Offer>) -> Result<Remote, CallError> {
    let interfaces = card
        .get("supportedInterfaces")
        .and_then(Value::as_array)
        .ok_or_else(|| CallError::Protocol("the agent card lists no supportedInterfaces".into()))?;
    let jsonrpc: Vec<A2aAgentInterface> = interfaces
        .iter()
        .filter_map(|i| A2aAgentInterface::deserialize(i).ok())
        .filter(|i| i.protocol_binding.as_deref() == Some("JSONRPC"))
        .collect();
    let version_of = |i: &A2aAgentInterface| {
        i.protocol_version
            .clone()
            .unwrap_or_else(|| "1.0".to_owned())
    };
    let accepted = |i: &&A2aAgentInterface| {
        offer.is_some_and(|o| {
            negotiation::decide(Protocol::A2a, Some(&version_of(i)), true, o).is_accepted()
        })
    };
    let chosen = jsonrpc
        .iter()
        .find(accepted)
        .or_else(|| jsonrpc.first())
        .ok_or_else(|| CallError::Protocol("the agent card offers no JSONRPC interface".into()))?;
    let endpoint = chosen
        .url
        .clone()
        .ok_or_else(|| CallError::Protocol("the JSONRPC interface has no url".into()))?;
    Ok(Remote {
        endpoint,
        version: version_of(chosen),
        // An empty tenant is proto3's default, i.e. none (SDK-built cards such as
        // @a2a-js/sdk's carry `tenant: ""`): nothing is sent then.
        tenant: chosen.tenant.clone().filter(|t| !t.is_empty()),
    })
}

fn headers(remote: &Remote) -> HeaderMap {
    let mut h = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(&major_minor(&remote.version)) {
        h.insert("A2A-Version", v);
    }
    h
}

/// `A2A-Version` carries Major.Minor only: a card may name a patch release (`1.0.1`),
/// which is never negotiated and never sent (A2A 1.0, "Versioning").
fn major_minor(version: &str) -> String {
    version.splitn(3, '.').take(2).collect::<Vec<_>>().join(".")
}

/// An answer read into its model; the error says what it is not.
fn read_answer<T: DeserializeOwned>(value: &Value, what: &str) -> Result<T, String> {
    T::deserialize(value).map_err(|e| format!("the answer is not an A2A {what}: {e}"))
}

/// A message the engine composed (its parts rendered from the workflow's templates) read
/// into the model it is sent as; one that does not fit is refused before anything is sent.
pub fn message_of(message: Value) -> Result<A2aMessage, String> {
    serde_json::from_value(message)
        .map_err(|e| format!("the message to send is not an A2A Message: {e}"))
}

/// What `SendMessage` answered.
pub enum Sent {
    Task(Box<A2aTask>),
    Message(Box<A2aMessage>),
}

/// `SendMessage` without blocking: the answer is the task as it starts (or a direct
/// Message reply), so its id can be stored before anything else happens.
pub async fn send(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    remote: &Remote,
    message: A2aMessage,
) -> Result<Sent, CallError> {
    let request = A2aSendMessageRequest {
        tenant: remote.tenant.clone(),
        message,
        configuration: Some(A2aSendMessageConfiguration {
            return_immediately: Some(true),
            ..A2aSendMessageConfiguration::default()
        }),
        metadata: None,
    };
    let answer = rpc::call(
        peers,
        peer,
        caller,
        &remote.endpoint,
        headers(remote),
        "SendMessage",
        &request,
    )
    .await?;
    let sent: A2aSendMessageResponse =
        read_answer(&answer.result, "SendMessageResponse").map_err(CallError::Protocol)?;
    if let Some(task) = sent.task {
        return Ok(Sent::Task(Box::new(task)));
    }
    if let Some(message) = sent.message {
        return Ok(Sent::Message(Box::new(message)));
    }
    // Pre-1.0 servers answer the Task itself.
    if answer.result.get("status").is_some() && answer.result.get("id").is_some() {
        return read_answer(&answer.result, "Task")
            .map(|task| Sent::Task(Box::new(task)))
            .map_err(CallError::Protocol);
    }
    Err(CallError::Protocol(
        "SendMessage answered neither a task nor a message".into(),
    ))
}

/// A task by id, as GetTask and CancelTask ask for it.
fn task_request(remote: &Remote, task_id: &str) -> A2aTaskRequest {
    A2aTaskRequest {
        tenant: remote.tenant.clone(),
        id: task_id.to_owned(),
        history_length: None,
    }
}

/// `GetTask`, without history (the node reads status and artifacts).
pub async fn get_task(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    remote: &Remote,
    task_id: &str,
) -> Result<A2aTask, CallError> {
    let answer = rpc::call(
        peers,
        peer,
        caller,
        &remote.endpoint,
        headers(remote),
        "GetTask",
        &task_request(remote, task_id),
    )
    .await?;
    read_answer(&answer.result, "Task").map_err(CallError::Protocol)
}

/// `CancelTask`; a task that already ended is not an error worth more than a log line.
pub async fn cancel_task(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    remote: &Remote,
    task_id: &str,
) -> Result<(), CallError> {
    rpc::call(
        peers,
        peer,
        caller,
        &remote.endpoint,
        headers(remote),
        "CancelTask",
        &task_request(remote, task_id),
    )
    .await
    .map(|_| ())
}

/// The wire state of a task (`status.state`).
pub fn state_of(task: &A2aTask) -> &str {
    task.status.state.as_ref()
}

/// The text of a message's text parts, joined by newlines.
pub fn message_text(message: &A2aMessage) -> String {
    parts_text(&message.parts)
}

fn parts_text<'a>(parts: impl IntoIterator<Item = &'a A2aPart>) -> String {
    parts
        .into_iter()
        .filter_map(|p| p.text.as_deref())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first `data` part's value (open: the peer's own).
pub fn first_data<'a>(parts: impl IntoIterator<Item = &'a A2aPart>) -> Option<Value> {
    parts.into_iter().find_map(|p| p.data.clone())
}

/// The node's value for a finished task: `{taskId, contextId, state, artifacts, text,
/// data}`, `text` and `data` read from the artifacts, else from the status message. The
/// value is the workflow's (an open object its templates read), written as JSON.
pub fn task_value(task: &A2aTask) -> Value {
    let all_parts: Vec<&A2aPart> = task.artifacts.iter().flat_map(|a| &a.parts).collect();
    let status_message = task.status.message.as_ref();
    let (text, data) = if all_parts.is_empty() {
        (
            status_message.map(message_text).unwrap_or_default(),
            status_message.and_then(|m| first_data(&m.parts)),
        )
    } else {
        (
            parts_text(all_parts.iter().copied()),
            first_data(all_parts.iter().copied()),
        )
    };
    json!({
        "taskId": task.id,
        "contextId": task.context_id,
        "state": state_of(task),
        "artifacts": task.artifacts,
        "text": text,
        "data": data,
    })
}

/// The node's value for a direct Message reply (a workflow value, as [`task_value`]).
pub fn message_value(message: &A2aMessage) -> Value {
    json!({
        "taskId": Value::Null,
        "contextId": message.context_id,
        "state": "TASK_STATE_COMPLETED",
        "artifacts": [],
        "text": message_text(message),
        "data": first_data(&message.parts),
    })
}

/// A resume value as the next message's parts: a string is a text part, `{text}` a text
/// part, any other value a data part.
pub fn reply_parts(resume: &Value) -> Vec<A2aPart> {
    let text = |t: &str| A2aPart {
        text: Some(t.to_owned()),
        ..A2aPart::default()
    };
    match resume {
        Value::String(s) => vec![text(s)],
        Value::Object(o) if o.len() == 1 && o.get("text").is_some_and(Value::is_string) => {
            vec![text(o["text"].as_str().unwrap_or_default())]
        }
        other => vec![A2aPart {
            data: Some(other.clone()),
            media_type: Some("application/json".to_owned()),
            ..A2aPart::default()
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_task_reads_as_text_and_data_from_artifacts_else_the_status_message() {
        let task = json!({"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [{"artifactId": "a", "parts": [{"text": "one"}, {"data": {"n": 1}}]}, {"artifactId": "b", "parts": [{"text": "two"}]}]});
        let task: A2aTask = serde_json::from_value(task).expect("a task");
        let v = task_value(&task);
        assert_eq!(v["text"], "one\ntwo");
        assert_eq!(v["data"], json!({"n": 1}));
        assert_eq!(v["state"], "TASK_STATE_COMPLETED");
        let bare = json!({"id": "t", "status": {"state": "TASK_STATE_COMPLETED", "message": {"parts": [{"text": "done"}]}}});
        let bare: A2aTask = serde_json::from_value(bare).expect("a task");
        assert_eq!(task_value(&bare)["text"], "done");
    }

    /// A2A 1.0 §5: interfaces may serve different versions; the first JSON-RPC one whose
    /// version we accept is used, whatever comes before it.
    #[test]
    fn the_first_jsonrpc_interface_of_a_version_we_accept_is_used() {
        let offer = Offer::new(Protocol::A2a, &["1.0"], "1.0", "1.0").unwrap();
        let card = json!({"supportedInterfaces": [
            {"url": "https://a.example/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
            {"url": "https://a.example/v03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
            {"url": "https://a.example/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0", "tenant": "t"},
            {"url": "https://a.example/v1b", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        ]});
        let r = pick_interface(&card, Some(&offer)).unwrap();
        assert_eq!(
            (r.endpoint.as_str(), r.version.as_str(), r.tenant.as_deref()),
            ("https://a.example/v1", "1.0", Some("t"))
        );
        // Only versions we do not accept: the first JSON-RPC one, for the negotiation to
        // refuse by name.
        let old = json!({"supportedInterfaces": [
            {"url": "https://a.example/v03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
            {"url": "https://a.example/v02", "protocolBinding": "JSONRPC", "protocolVersion": "0.2"},
        ]});
        let r = pick_interface(&old, Some(&offer)).unwrap();
        assert_eq!(
            (r.endpoint.as_str(), r.version.as_str()),
            ("https://a.example/v03", "0.3")
        );
        // An empty tenant (proto3's default) is no tenant.
        let empty = json!({"supportedInterfaces": [{"url": "u", "protocolBinding": "JSONRPC", "protocolVersion": "1.0", "tenant": ""}]});
        assert_eq!(pick_interface(&empty, Some(&offer)).unwrap().tenant, None);
        let none = json!({"supportedInterfaces": [{"url": "u", "protocolBinding": "GRPC", "protocolVersion": "1.0"}]});
        assert!(matches!(
            pick_interface(&none, Some(&offer)),
            Err(CallError::Protocol(_))
        ));
    }

    #[test]
    fn the_version_header_never_carries_a_patch_number() {
        for (card, sent) in [
            ("1.0.1", "1.0"),
            ("1.0", "1.0"),
            ("2", "2"),
            ("0.3.0", "0.3"),
        ] {
            let remote = Remote {
                endpoint: "http://x".into(),
                version: card.into(),
                tenant: None,
            };
            assert_eq!(headers(&remote)["A2A-Version"], sent, "{card}");
        }
    }

    #[test]
    fn a_resume_value_becomes_text_or_data_parts() {
        let parts = |v: Value| serde_json::to_value(reply_parts(&v)).expect("json");
        assert_eq!(parts(json!("Ada")), json!([{"text": "Ada"}]));
        assert_eq!(parts(json!({"text": "Ada"})), json!([{"text": "Ada"}]));
        assert_eq!(
            parts(json!({"outcome": "authorized"}))[0]["data"],
            json!({"outcome": "authorized"})
        );
    }
}
