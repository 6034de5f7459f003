//! How an open interrupt is asked of an MCP client, and how the client's answer becomes
//! the interrupt's resume value. One mapping for every path that asks: the stateless
//! `InputRequiredResult`, a task's `inputRequests`, and the `elicitation/create` request a
//! 2025-11-25 session gets on its call's SSE stream.
//!
//! - approval and clarification: form mode (a flat object of string properties);
//! - credential: URL mode (the interrupt's `connectUrl`) when the client declared
//!   `elicitation.url`; otherwise it cannot be asked;
//! - anything else (external events): never asked.

use rmcp::model::{EnumSchema, PrimitiveSchemaDefinition, SingleSelectEnumSchema, StringSchema};
use serde_json::{Map, Value, json};

use super::rpc::RpcError;
use super::wire::{ElicitRequest, ElicitRequestParams, ElicitationSchema, InputRequest};

/// Which elicitation modes a client declared (`capabilities.elicitation`). An empty
/// `elicitation: {}` is form mode, as the 2025-06-18 revision defined it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Modes {
    pub form: bool,
    pub url: bool,
}

impl Modes {
    /// The modes declared in a client capabilities object.
    pub fn of(capabilities: &Value) -> Modes {
        let Some(e) = capabilities.get("elicitation").and_then(Value::as_object) else {
            return Modes::default();
        };
        if !e.contains_key("form") && !e.contains_key("url") {
            return Modes {
                form: true,
                url: false,
            };
        }
        Modes {
            form: e.contains_key("form"),
            url: e.contains_key("url"),
        }
    }

    pub fn any(self) -> bool {
        self.form || self.url
    }

    /// The suffix a 2025-11-25 session id carries for the modes its `initialize` declared
    /// (the store knows the whole id, so the suffix cannot be changed by the client).
    pub fn session_tag(self) -> &'static str {
        match (self.form, self.url) {
            (false, false) => "",
            (true, false) => ".e-f",
            (false, true) => ".e-u",
            (true, true) => ".e-fu",
        }
    }

    /// The modes a session id's suffix says its `initialize` declared.
    pub fn of_session(id: &str) -> Modes {
        match id.rsplit_once(".e-").map(|(_, t)| t) {
            Some("f") => Modes {
                form: true,
                url: false,
            },
            Some("u") => Modes {
                form: false,
                url: true,
            },
            Some("fu") => Modes {
                form: true,
                url: true,
            },
            _ => Modes::default(),
        }
    }
}

/// The open interrupt being asked about.
pub struct Asked<'a> {
    pub interrupt_id: &'a str,
    pub kind: &'a str,
    pub data: &'a Value,
}

/// What an interrupt needs from the client to be asked at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    Form,
    Url,
    /// No MCP request can answer it (an external event).
    Nothing,
}

/// The mode an interrupt of `kind` with `data` is asked in. A clarification whose
/// questions do not fit a flat form (an answer schema with structure, or a secret such as
/// `format: "password"`, which a form would show and log in clear) is never asked in
/// form mode; this host has no URL page for questions, so no MCP request can answer it.
pub fn needs(kind: &str, data: &Value) -> Needs {
    match kind {
        "approval" => Needs::Form,
        "clarification" if fits_form(data) => Needs::Form,
        "credential" => Needs::Url,
        _ => Needs::Nothing,
    }
}

/// Whether every question of a clarification can be one field of a flat form: no answer
/// schema, or a schema of one primitive type that is not a secret.
fn fits_form(data: &Value) -> bool {
    let questions = data
        .get("questions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    questions.iter().all(|q| match q.get("schema") {
        None => true,
        Some(schema) => {
            let primitive = matches!(
                schema.get("type").and_then(Value::as_str),
                None | Some("string" | "number" | "integer" | "boolean")
            );
            let structured = ["properties", "items", "oneOf", "anyOf", "allOf", "$ref"]
                .iter()
                .any(|k| schema.get(k).is_some());
            let secret = schema.get("format").and_then(Value::as_str) == Some("password")
                || schema.get("writeOnly") == Some(&Value::Bool(true));
            primitive && !structured && !secret
        }
    })
}

/// Whether a client with `modes` can be asked about an interrupt of `kind` with `data`.
pub fn can_ask(kind: &str, data: &Value, modes: Modes) -> bool {
    match needs(kind, data) {
        Needs::Form => modes.form,
        Needs::Url => modes.url,
        Needs::Nothing => false,
    }
}

/// The form an interrupt is asked with: its message and schema. An approval is one
/// `decision` among the actions it offers; a clarification one string per question, in
/// the order asked (each question's text its description).
fn form(kind: &str, data: &Value) -> Option<(String, ElicitationSchema)> {
    match kind {
        "approval" => {
            let actions = crate::ops::offered_actions(data);
            let decision = EnumSchema::builder(actions).title("Decision").build();
            let message = data
                .get("title")
                .and_then(Value::as_str)
                .unwrap_or("Approve?")
                .to_owned();
            let properties = [("decision", PrimitiveSchemaDefinition::Enum(decision))];
            Some((message, schema(properties)))
        }
        "clarification" => {
            let questions = data.get("questions").and_then(Value::as_array)?;
            let mut properties = Vec::with_capacity(questions.len());
            let mut text = Vec::with_capacity(questions.len());
            for q in questions {
                let id = q.get("id").and_then(Value::as_str)?;
                let question = q.get("question").and_then(Value::as_str).unwrap_or(id);
                let field = StringSchema::new().description(question.to_owned());
                properties.push((id, PrimitiveSchemaDefinition::String(field)));
                text.push(question.to_owned());
            }
            Some((text.join("\n"), schema(properties)))
        }
        _ => None,
    }
}

/// An object schema of `properties` in the order given (a repeated name keeps its first
/// place and its last definition), every one of them required.
fn schema<'a>(
    properties: impl IntoIterator<Item = (&'a str, PrimitiveSchemaDefinition)>,
) -> ElicitationSchema {
    let mut order: Vec<String> = Vec::new();
    let mut defined = std::collections::BTreeMap::new();
    for (name, definition) in properties {
        if defined.insert(name.to_owned(), definition).is_none() {
            order.push(name.to_owned());
        }
    }
    let mut schema = ElicitationSchema::new(defined).with_required(order.clone());
    schema.property_order = Some(order);
    schema
}

/// The choices a form's field offers, when it offers any.
fn options(field: &PrimitiveSchemaDefinition) -> Option<&[String]> {
    match field {
        PrimitiveSchemaDefinition::Enum(EnumSchema::Single(SingleSelectEnumSchema::Untitled(
            e,
        ))) => Some(&e.enum_),
        _ => None,
    }
}

/// The `elicitation/create` params that ask about `asked` of a client with `modes`, or
/// `None` when it cannot be asked of that client.
pub fn params(asked: &Asked<'_>, modes: Modes) -> Option<ElicitRequestParams> {
    if !can_ask(asked.kind, asked.data, modes) {
        return None;
    }
    match needs(asked.kind, asked.data) {
        Needs::Form => {
            let (message, requested_schema) = form(asked.kind, asked.data)?;
            Some(ElicitRequestParams::FormElicitationParams {
                meta: None,
                message,
                requested_schema,
            })
        }
        Needs::Url => {
            let url = asked.data.get("connectUrl").and_then(Value::as_str)?;
            let provider = asked
                .data
                .get("provider")
                .and_then(Value::as_str)
                .unwrap_or("the provider");
            Some(ElicitRequestParams::UrlElicitationParams {
                meta: None,
                message: format!("Connect {provider} to let the run go on, then accept."),
                url: url.to_owned(),
                elicitation_id: asked.interrupt_id.to_owned(),
            })
        }
        Needs::Nothing => None,
    }
}

/// The `inputRequests` entry (an `elicitation/create` request) for `asked`.
pub fn input_request(asked: &Asked<'_>, modes: Modes) -> Option<InputRequest> {
    params(asked, modes).map(|p| InputRequest::Elicitation(ElicitRequest::new(p)))
}

/// A resume value of one member (`{"action": "reject"}`, `{"outcome": "authorized"}`):
/// what the interrupt's kind reads, a workflow value and so open by design.
fn resume(member: &str, word: &str) -> Answer {
    Answer::Resume(json!({ member: word }))
}

/// What a client's elicitation result does to the interrupt.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Resolve the interrupt with this resume value.
    Resume(Value),
    /// The user dismissed the question (`cancel`): the interrupt stays open, unanswered.
    Dismissed,
}

/// Reads one elicitation result (`{action, content?}`) for `asked`, checking the content
/// against the form it was asked with. Every refusal says what is wrong, and nothing is
/// spent or resolved by a refused answer.
pub fn answer(asked: &Asked<'_>, result: &Value) -> Result<Answer, RpcError> {
    let key = asked.interrupt_id;
    let Some(result) = result.as_object() else {
        return Err(RpcError::invalid_params(format!(
            "inputResponses[\"{key}\"] must be an elicitation result object {{\"action\": \"accept\" | \"decline\" | \"cancel\", \"content\": {{…}}}}"
        )));
    };
    let action = result.get("action").and_then(Value::as_str);
    if asked.kind == "approval" && matches!(action, Some("accept" | "decline")) {
        return approval_answer(asked, result);
    }
    match (action, needs(asked.kind, asked.data)) {
        (Some("cancel"), _) => Ok(Answer::Dismissed),
        (Some("decline"), Needs::Url) => Ok(resume("outcome", "declined")),
        (Some("decline"), _) => Ok(resume("action", "decline")),
        (Some("accept"), Needs::Url) => Ok(resume("outcome", "authorized")),
        (Some("accept"), _) => {
            let content = result
                .get("content")
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new()));
            Ok(Answer::Resume(check_content(asked, content)?))
        }
        (other, _) => {
            // An approval's own actions are its form's `decision`: say which they are.
            let hint = if asked.kind == "approval" {
                let offered: Vec<String> = crate::ops::offered_actions(asked.data)
                    .iter()
                    .map(|a| format!("\"{a}\""))
                    .collect();
                format!(
                    " (this approval's offered actions, {}, go in content.decision)",
                    offered.join(", ")
                )
            } else {
                String::new()
            };
            Err(RpcError::invalid_params(format!(
                "inputResponses[\"{key}\"].action must be \"accept\", \"decline\" or \"cancel\", not {}{hint}",
                other.map_or_else(|| "missing".to_owned(), |a| format!("\"{a}\""))
            )))
        }
    }
}

/// An approval's answer as its resume value, `{"action": …}` naming one of the actions it
/// offers (the run's own rule, checked again when it is resolved): `accept` carries the
/// form's `decision`, `decline` is the approval's `reject`. Anything else is refused with
/// the offered actions named, and nothing is resolved.
fn approval_answer(
    asked: &Asked<'_>,
    result: &serde_json::Map<String, Value>,
) -> Result<Answer, RpcError> {
    let key = asked.interrupt_id;
    let offered = crate::ops::offered_actions(asked.data);
    let named = || {
        let listed: Vec<String> = offered.iter().map(|a| format!("\"{a}\"")).collect();
        listed.join(", ")
    };
    if result.get("action").and_then(Value::as_str) == Some("decline") {
        if offered.iter().any(|a| a == "reject") {
            return Ok(resume("action", "reject"));
        }
        return Err(RpcError::invalid_params(format!(
            "inputResponses[\"{key}\"]: this approval cannot be declined; accept it with content.decision one of {}",
            named()
        )));
    }
    let mut content = match result.get("content").cloned() {
        None => Map::new(),
        Some(Value::Object(c)) => c,
        Some(_) => {
            return Err(RpcError::invalid_params(format!(
                "inputResponses[\"{key}\"].content must be an object"
            )));
        }
    };
    // MCP's own `accept` is the user saying yes: with no `decision` it is the approval's
    // `accept` (when offered), as generic clients answer a form they did not fill.
    let decision = match content.remove("decision") {
        None if offered.iter().any(|a| a == "accept") => Some(Value::from("accept")),
        other => other,
    };
    match decision {
        Some(Value::String(d)) if offered.contains(&d) => {
            content.insert("action".to_owned(), Value::String(d));
            Ok(Answer::Resume(Value::Object(content)))
        }
        other => Err(RpcError::invalid_params(format!(
            "inputResponses[\"{key}\"].content field `decision` must be one of {}, not {}",
            named(),
            other.map_or_else(|| "missing".to_owned(), |v| v.to_string())
        ))),
    }
}

/// The content of an `accept` must be an object, and a field the form offered choices for
/// must hold one of them. Anything else is passed on as the resume value, as a REST
/// resolve would pass it (clients fill forms loosely: booleans for strings, fields left
/// out), and never becomes authority.
fn check_content(asked: &Asked<'_>, content: Value) -> Result<Value, RpcError> {
    let key = asked.interrupt_id;
    let bad =
        |why: String| RpcError::invalid_params(format!("inputResponses[\"{key}\"].content {why}"));
    let Value::Object(content) = content else {
        return Err(bad("must be an object".into()));
    };
    let Some((_, schema)) = form(asked.kind, asked.data) else {
        return Ok(Value::Object(content));
    };
    for (field, value) in &content {
        let Some(options) = schema.properties.get(field).and_then(options) else {
            continue;
        };
        if !value
            .as_str()
            .is_some_and(|v| options.iter().any(|o| o == v))
        {
            return Err(bad(format!(
                "field `{field}` must be one of {}, not {value}",
                Value::from(options)
            )));
        }
    }
    Ok(Value::Object(content))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approval() -> Value {
        json!({"title": "Ship it?", "actions": ["accept", "reject"]})
    }

    fn asked<'a>(kind: &'a str, data: &'a Value) -> Asked<'a> {
        Asked {
            interrupt_id: "int-1",
            kind,
            data,
        }
    }

    #[test]
    fn a_session_id_carries_the_modes_its_initialize_declared() {
        for modes in [
            Modes::default(),
            Modes {
                form: true,
                url: false,
            },
            Modes {
                form: false,
                url: true,
            },
            Modes {
                form: true,
                url: true,
            },
        ] {
            let id = format!("AAAAAAAAAAAAAAAAAAAAAA{}", modes.session_tag());
            assert_eq!(Modes::of_session(&id), modes);
        }
    }

    #[test]
    fn declared_modes_follow_the_elicitation_capability() {
        assert_eq!(Modes::of(&json!({})), Modes::default());
        assert_eq!(
            Modes::of(&json!({"elicitation": {}})),
            Modes {
                form: true,
                url: false
            }
        );
        assert_eq!(
            Modes::of(&json!({"elicitation": {"url": {}}})),
            Modes {
                form: false,
                url: true
            }
        );
        assert_eq!(
            Modes::of(&json!({"elicitation": {"form": {}, "url": {}}})),
            Modes {
                form: true,
                url: true
            }
        );
    }

    #[test]
    fn a_credential_interrupt_is_asked_in_url_mode_only_of_clients_that_declared_it() {
        let data = json!({"provider": "example", "connectUrl": "https://example.test/connect"});
        let form_only = Modes {
            form: true,
            url: false,
        };
        assert_eq!(input_request(&asked("credential", &data), form_only), None);
        let with_url = Modes {
            form: true,
            url: true,
        };
        let request = input_request(&asked("credential", &data), with_url).expect("asked");
        let request = serde_json::to_value(&request).unwrap();
        assert_eq!(request["params"]["mode"], "url");
        assert_eq!(request["params"]["url"], "https://example.test/connect");
        assert_eq!(request["params"]["elicitationId"], "int-1");
        let a = asked("credential", &data);
        assert_eq!(
            answer(&a, &json!({"action": "accept"})).expect("ok"),
            Answer::Resume(json!({"outcome": "authorized"}))
        );
        assert_eq!(
            answer(&a, &json!({"action": "decline"})).expect("ok"),
            Answer::Resume(json!({"outcome": "declined"}))
        );
    }

    #[test]
    fn an_external_wait_is_never_asked() {
        let all = Modes {
            form: true,
            url: true,
        };
        assert_eq!(input_request(&asked("external", &json!({})), all), None);
    }

    #[test]
    fn a_malformed_answer_is_refused_with_a_message_saying_what_is_wrong() {
        let data = approval();
        let a = asked("approval", &data);
        for (bad, says) in [
            (
                json!({"action": "bogus"}),
                "must be \"accept\", \"decline\" or \"cancel\"",
            ),
            (json!({}), "missing"),
            (json!("accept"), "must be an elicitation result object"),
            (
                json!({"action": "accept", "content": "yes"}),
                "must be an object",
            ),
            (
                json!({"action": "accept", "content": {"decision": "maybe"}}),
                "must be one of",
            ),
            (
                json!({"action": "accept", "content": {"decision": 1}}),
                "must be one of",
            ),
        ] {
            let e = answer(&a, &bad).expect_err("refused");
            assert_eq!(e.code, super::super::rpc::INVALID_PARAMS);
            assert!(e.message.contains(says), "{} lacks {says}", e.message);
            assert!(e.message.contains("int-1"), "{}", e.message);
        }
        assert_eq!(
            answer(
                &a,
                &json!({"action": "accept", "content": {"decision": "reject"}})
            )
            .expect("ok"),
            Answer::Resume(json!({"action": "reject"}))
        );
        // An approval's decision is its resume value; MCP's `accept` with none is the
        // approval's `accept`, other fields kept.
        assert_eq!(
            answer(&a, &json!({"action": "accept", "content": {"note": true}})).expect("ok"),
            Answer::Resume(json!({"note": true, "action": "accept"}))
        );
        assert_eq!(
            answer(&a, &json!({"action": "accept"})).expect("ok"),
            Answer::Resume(json!({"action": "accept"}))
        );
        // Without an `accept` to fall back on, a decision must be named.
        let reject_only = json!({"title": "No?", "actions": ["reject", "refine"]});
        let r = asked("approval", &reject_only);
        let e = answer(&r, &json!({"action": "accept"})).expect_err("no decision");
        assert!(
            e.message.contains("\"reject\", \"refine\""),
            "{}",
            e.message
        );
        // Loosely filled forms pass elsewhere (a client's boolean, a field left out).
        let questions = json!({"questions": [{"id": "q", "question": "Name?"}]});
        let c = asked("clarification", &questions);
        assert!(answer(&c, &json!({"action": "accept", "content": {"q": true}})).is_ok());
        assert!(answer(&c, &json!({"action": "accept"})).is_ok());
    }

    #[test]
    fn cancel_dismisses_the_question_and_decline_takes_the_decline_path() {
        let data = approval();
        let a = asked("approval", &data);
        assert_eq!(
            answer(&a, &json!({"action": "cancel"})).expect("ok"),
            Answer::Dismissed
        );
        // An approval declined is the approval rejected.
        assert_eq!(
            answer(&a, &json!({"action": "decline"})).expect("ok"),
            Answer::Resume(json!({"action": "reject"}))
        );
        let accept_only = json!({"title": "Go?", "actions": ["accept"]});
        let only = asked("approval", &accept_only);
        let e = answer(&only, &json!({"action": "decline"})).expect_err("no reject offered");
        assert!(e.message.contains("\"accept\""), "{}", e.message);
    }

    #[test]
    fn forms_are_the_bytes_clients_were_sent_before_the_models() {
        // The form of an approval and of a clarification, as the mount wrote them by hand
        // (member order included: a clarification's fields in the order asked, a repeated
        // id keeping its first place).
        let form_only = Modes {
            form: true,
            url: false,
        };
        let data = approval();
        let request = input_request(&asked("approval", &data), form_only).expect("asked");
        assert_eq!(
            serde_json::to_string(&request).unwrap(),
            r#"{"method":"elicitation/create","params":{"mode":"form","message":"Ship it?","requestedSchema":{"type":"object","properties":{"decision":{"type":"string","title":"Decision","enum":["accept","reject"]}},"required":["decision"]}}}"#
        );
        let data = json!({"questions": [{"id": "why", "question": "Why?"},
            {"id": "a", "question": "And?"}, {"id": "why", "question": "Why, again?"}]});
        let params = params(&asked("clarification", &data), form_only).expect("asked");
        assert_eq!(
            serde_json::to_string(&params).unwrap(),
            r#"{"mode":"form","message":"Why?\nAnd?\nWhy, again?","requestedSchema":{"type":"object","properties":{"why":{"type":"string","description":"Why, again?"},"a":{"type":"string","description":"And?"}},"required":["why","a"]}}"#
        );
    }
}
