//! SendMessage's request, read into the generated `A2aSendMessageRequest`
//! (`schemas/v2/a2a-wire.schema.json`), so a field of the wrong type is refused with invalid
//! parameters naming it (`message.taskId`), never read as absent: `taskId: 5` must not start
//! a new task, nor `skill: ["echo"]` run the default skill. The request model is open (A2A:
//! receivers ignore unknown fields), and the message is stored as it came.

use openwop_generated::models::{
    A2aMessage, A2aRole, A2aSendMessageConfiguration, A2aSendMessageRequest,
};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::errors::Fault;
use super::read;
use openwop_generated::errors::A2aError;

/// The longest `contextId` a message may carry (characters). A context id is a handle the
/// host stores with the task and matches on every later message, not a document: 256 is
/// far beyond any id an SDK mints (a UUID is 36).
pub const MAX_CONTEXT_ID: usize = 256;

/// `metadata.openwop`: the one member of an open `metadata` the host reads (OpenWOP's own
/// carrier, so it is typed here rather than in A2A's schema).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct OpenwopMetadata {
    #[serde(default)]
    skill: Option<String>,
    #[serde(default)]
    interrupt: Option<InterruptReply>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct InterruptReply {
    #[serde(default)]
    node_id: Option<String>,
}

/// The `openwop` member of an open `metadata` at `at`, read (a wrong type is refused
/// naming `{at}.openwop.…`).
fn openwop_of(metadata: Option<&Map<String, Value>>, at: &str) -> Result<OpenwopMetadata, Fault> {
    match metadata.and_then(|m| m.get("openwop")) {
        None | Some(Value::Null) => Ok(OpenwopMetadata::default()),
        Some(v) => read::typed_at(v, &format!("{at}.openwop"), &[]),
    }
}

/// The validated parts of a SendMessage request.
pub(crate) struct Send<'a> {
    /// The message as it came (stored in the task's history).
    pub message: &'a Value,
    /// The same message, read.
    pub typed: A2aMessage,
    pub message_id: String,
    pub task_id: Option<String>,
    pub context_id: Option<String>,
    /// `metadata.openwop.skill` of the message, else of the request.
    pub skill: Option<String>,
    /// `metadata.openwop.interrupt.nodeId` of the message.
    pub interrupt_node: Option<String>,
    /// The routing value of an agent card (`tenant`), when not empty.
    pub tenant: Option<String>,
    pub return_immediately: bool,
    /// The inline push configuration: the name it came under, and the value.
    pub inline_push: Option<(&'static str, Value)>,
    pub history_length: Option<usize>,
}

fn non_empty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.is_empty())
}

/// Reads and checks a SendMessage request before anything happens.
pub(super) fn parse_send(params: &Value) -> Result<Send<'_>, Fault> {
    let request: A2aSendMessageRequest = read::typed(params, read::COMMON)?;
    let raw = params
        .get("message")
        .ok_or_else(|| Fault::invalid_params("message", "is required"))?;
    let message = request.message;
    let message_openwop = openwop_of(message.metadata.as_ref(), "message.metadata")?;
    let request_openwop = openwop_of(request.metadata.as_ref(), "metadata")?;
    let message_id = message
        .message_id
        .clone()
        .filter(|id| !id.is_empty())
        .ok_or_else(|| Fault::invalid_params("message.messageId", "is required"))?;
    if message.parts.is_empty() {
        return Err(Fault::invalid_params(
            "message.parts",
            "needs at least one part",
        ));
    }
    for (i, part) in message.parts.iter().enumerate() {
        let members = [
            part.text.is_some(),
            part.raw.is_some(),
            part.url.is_some(),
            part.data.is_some(),
        ]
        .into_iter()
        .filter(|m| *m)
        .count();
        if members != 1 {
            return Err(Fault::invalid_params(
                &format!("message.parts[{i}]"),
                "must carry exactly one of text, raw, url or data",
            ));
        }
    }
    // The client is the user: ROLE_AGENT is the agent's own role, never a client's.
    let Some(role) = &message.role else {
        return Err(Fault::invalid_params("message.role", "is required"));
    };
    if *role != A2aRole::RoleUser {
        return Err(Fault::invalid_params(
            "message.role",
            "a client's message is ROLE_USER (ROLE_AGENT is the agent's)",
        ));
    }
    if message
        .context_id
        .as_ref()
        .is_some_and(|c| c.chars().count() > MAX_CONTEXT_ID)
    {
        return Err(Fault::invalid_params(
            "message.contextId",
            format!("is longer than {MAX_CONTEXT_ID} characters"),
        ));
    }
    // Skills take text and JSON data (the card's input modes); bytes or links would be
    // dropped on the way into a workflow, so they are refused on arrival instead.
    if let Some(i) = message
        .parts
        .iter()
        .position(|p| p.raw.is_some() || p.url.is_some())
    {
        return Err(Fault::a2a(
            A2aError::ContentTypeNotSupported,
            format!("message.parts[{i}]: this host's skills take text and data parts only"),
        ));
    }
    let configuration = request.configuration.unwrap_or_default();
    let modes = &configuration.accepted_output_modes;
    if !modes.is_empty() && !modes.iter().any(|m| accepts_json(m)) {
        return Err(Fault::a2a(
            A2aError::ContentTypeNotSupported,
            "configuration.acceptedOutputModes: every skill answers application/json",
        ));
    }
    let history_length = match configuration.history_length {
        None => None,
        Some(n) => Some(usize::try_from(n).map_err(|_| {
            Fault::invalid_params("historyLength", "must be a non-negative integer")
        })?),
    };
    Ok(Send {
        message: raw,
        message_id,
        task_id: non_empty(message.task_id.clone()),
        context_id: non_empty(message.context_id.clone()),
        typed: message,
        skill: message_openwop.skill.or(request_openwop.skill),
        interrupt_node: message_openwop.interrupt.and_then(|i| i.node_id),
        tenant: non_empty(request.tenant),
        return_immediately: configuration.return_immediately.unwrap_or(false),
        inline_push: inline_push_config(configuration),
        history_length,
    })
}

/// The push configuration a SendMessage carries inline: `taskPushNotificationConfig`
/// (the A2A 1.0 name), or `pushNotificationConfig` (the pre-1.0 name some clients still
/// send; ignoring it would leave the client believing it registered). The value is read
/// by the push rules, which name its fields under the key it came with.
fn inline_push_config(configuration: A2aSendMessageConfiguration) -> Option<(&'static str, Value)> {
    match (
        configuration.task_push_notification_config,
        configuration.push_notification_config,
    ) {
        (Some(c), _) if !c.is_null() => Some(("taskPushNotificationConfig", c)),
        (_, Some(c)) if !c.is_null() => Some(("pushNotificationConfig", c)),
        _ => None,
    }
}

/// Whether an accepted output mode admits `application/json` (parameters ignored).
fn accepts_json(mode: &str) -> bool {
    let essence = mode
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    matches!(
        essence.as_str(),
        "application/json" | "application/*" | "*/*"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field_of(fault: &Fault) -> String {
        fault
            .violations
            .first()
            .map(|v| v.field.clone())
            .unwrap_or_default()
    }

    #[test]
    fn send_requests_are_validated_before_anything_happens() {
        let ok =
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}});
        assert!(parse_send(&ok).is_ok());
        for bad in [
            json!({}),
            json!({"message": {"role": "ROLE_USER", "parts": [{"text": "x"}]}}),
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}}),
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x", "data": {}}]}}),
            json!({"message": {"messageId": "m", "role": "user", "parts": [{"text": "x"}]}}),
        ] {
            assert_eq!(
                parse_send(&bad).err().map(|f| f.jsonrpc_code()),
                Some(-32602),
                "{bad}"
            );
        }
    }

    /// Strict JSON-RPC: a SendMessage field of the wrong type is invalid params naming the
    /// field, never read as absent.
    #[test]
    fn send_message_fields_of_the_wrong_type_are_invalid_params_naming_the_field() {
        let msg = |extra: Value| {
            let mut m = json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]});
            for (k, v) in extra.as_object().expect("object") {
                m[k] = v.clone();
            }
            json!({"message": m})
        };
        let long = "c".repeat(MAX_CONTEXT_ID + 1);
        for (params, field) in [
            (msg(json!({"taskId": 5})), "message.taskId"),
            (
                msg(json!({"metadata": {"openwop": {"skill": ["echo"]}}})),
                "message.metadata.openwop.skill",
            ),
            (msg(json!({"role": "ROLE_AGENT"})), "message.role"),
            (msg(json!({"contextId": long})), "message.contextId"),
            (msg(json!({"messageId": 7})), "message.messageId"),
            (
                msg(json!({"parts": [{"text": 1}]})),
                "message.parts[0].text",
            ),
            (
                json!({"message": {"role": "ROLE_USER", "parts": [{"text": "x"}]}}),
                "message.messageId",
            ),
            (
                {
                    let mut p = msg(json!({}));
                    p["tenant"] = json!(3);
                    p
                },
                "tenant",
            ),
            (
                {
                    let mut p = msg(json!({}));
                    p["metadata"] = json!({"openwop": {"skill": 1}});
                    p
                },
                "metadata.openwop.skill",
            ),
        ] {
            let fault = parse_send(&params)
                .err()
                .unwrap_or_else(|| panic!("{params}"));
            assert_eq!(fault.jsonrpc_code(), -32602, "{params}");
            assert_eq!(field_of(&fault), field, "{params}");
        }
        // At the bound, and unknown members, pass.
        let at = "c".repeat(MAX_CONTEXT_ID);
        assert!(
            parse_send(&msg(
                json!({"contextId": at, "extensions": [], "x-other": 1})
            ))
            .is_ok()
        );
    }

    #[test]
    fn parts_and_output_modes_a_skill_cannot_handle_are_refused_on_arrival() {
        let msg = |parts: Value| json!({"messageId": "m", "role": "ROLE_USER", "parts": parts});
        let raw = json!({"message": msg(json!([{"raw": "aGk=", "mediaType": "image/png"}]))});
        assert_eq!(
            parse_send(&raw).err().map(|f| f.jsonrpc_code()),
            Some(-32005)
        );
        let url =
            json!({"message": msg(json!([{"text": "see"}, {"url": "https://x.example/a.pdf"}]))});
        assert_eq!(
            parse_send(&url).err().map(|f| f.jsonrpc_code()),
            Some(-32005)
        );
        let modes = |m: Value| json!({"message": msg(json!([{"text": "x"}])), "configuration": {"acceptedOutputModes": m}});
        assert_eq!(
            parse_send(&modes(json!(["image/png"])))
                .err()
                .map(|f| f.jsonrpc_code()),
            Some(-32005)
        );
        for ok in [
            json!([]),
            json!(["application/json; charset=utf-8"]),
            json!(["text/plain", "*/*"]),
        ] {
            assert!(parse_send(&modes(ok.clone())).is_ok(), "{ok}");
        }
    }
}
