//! The MCP wire vocabulary of the mount (runtime/README.md, "MCP wire types").
//!
//! Answers are the official SDK's models (`rmcp::model`, pinned, no transport): the probe
//! recorded in the README found them equal, value for value, to what the mount wrote by
//! hand, except a task that waits for input a client cannot be asked for (rmcp's
//! `DetailedTask` requires `inputRequests` there; ours says why in `statusMessage`), so
//! [`TaskAnswer`] wraps rmcp's `Task`. Requests are read into the small structs below,
//! not rmcp's: they keep the mount's tolerances (a `_meta` that is not an object is no
//! error here; `arguments: null` is no arguments) and read only what a method uses, while
//! the JSON-RPC envelope stays `edge::jsonrpc`'s, which echoes ids byte for byte (rmcp's
//! `NumberOrString` turns `1.0` into `1` and refuses integers past i64). Every answer is
//! written straight from its model into the response body ([`Reply`]), and so is every
//! message the host sends ([`Outgoing`]).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use rmcp::model::{
    CacheScope, CallToolResult, ClientCapabilities, ContentBlock, DiscoverResult, ElicitRequest,
    ElicitRequestParams, ElicitationSchema, EmptyObject, ErrorData, Implementation,
    InitializeResult, InputRequest, InputRequests, InputRequiredResult, ListToolsResult,
    ProtocolVersion, ResourceContents, ResultType, ServerCapabilities, Task, TaskStatus, Tool,
    ToolAnnotations, ToolsCapability,
};

/// One answer of `dispatch`: the method's model, and `_meta` naming the server for a
/// 2026-07-28 request. Written straight from the models into the response body (never
/// through a `Value`); `_meta` follows the answer's own members. None of the answers
/// carries a `_meta` of its own, so it is written once.
#[derive(Debug, Serialize)]
pub struct Reply {
    #[serde(flatten)]
    pub answer: MethodResult,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<ServerMeta>,
}

/// The answers of the methods `dispatch` serves.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum MethodResult {
    /// MCP's `EmptyResult` (`ping` of the initialize era): `{}`.
    Empty(EmptyObject),
    Discover(DiscoverResult),
    Tools(ListToolsResult),
    Call(CallAnswer),
    Task(TaskAnswer),
    Ack(Ack),
}

/// `_meta` of a 2026-07-28 answer: the server's `Implementation` under MCP's key.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ServerMeta {
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    pub server_info: &'static Implementation,
}

/// The server's `Implementation`: `openwop` and the crate's version.
pub fn server_info() -> &'static Implementation {
    static INFO: std::sync::LazyLock<Implementation> =
        std::sync::LazyLock::new(|| Implementation::new("openwop", env!("CARGO_PKG_VERSION")));
    &INFO
}

/// The one envelope of a message the host sends (`edge::jsonrpc`).
pub use crate::edge::jsonrpc::Outgoing;

/// `notifications/progress` params. Not rmcp's `ProgressNotificationParam`: its token is
/// a `NumberOrString` (a `1.0` would go back as `1`; ours is echoed as the client sent
/// it, as ids are) and its `progress` an `f64` (written `1.0`; ours is a count, `1`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress<'a> {
    pub progress_token: &'a Value,
    pub progress: u64,
    pub message: String,
}

/// An answer's `_meta` under one key of MCP's (`notifications/tasks`, a listen stream's
/// messages: the subscription id), after the answer's own members.
#[derive(Debug, Serialize)]
pub struct WithSubscription<'a, P> {
    #[serde(flatten)]
    pub params: P,
    #[serde(rename = "_meta")]
    pub meta: SubscriptionMeta<'a>,
}

#[derive(Debug, Serialize)]
pub struct SubscriptionMeta<'a> {
    /// The listen request's id as a value.
    #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
    pub subscription_id: &'a Value,
}

/// A typed `data` member as the JSON an [`RpcError`] carries (JSON-RPC leaves `data`
/// open, so the error holds a value; these structs are the shapes this mount writes).
pub fn data<T: Serialize>(data: &T) -> Value {
    // Plain structs of strings and numbers: writing them cannot fail.
    serde_json::to_value(data).unwrap_or_default()
}

/// `data` of an error whose cause has a host error code (the run's own reason).
#[derive(Debug, Serialize)]
pub struct Reason<'a> {
    pub reason: &'a str,
}

/// `data` of a header that disagrees with the body (-32020) or cannot be read.
#[derive(Debug, Serialize)]
pub struct Header<'a> {
    pub header: &'a str,
}

/// `data` of a refusal to come back later (HTTP 429 or 503, also in `Retry-After`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryAfter {
    pub retry_after_seconds: u64,
}

/// `data` of -32022: the revisions this endpoint serves and the one asked for.
#[derive(Debug, Serialize)]
pub struct Unsupported<'a> {
    pub supported: &'a Value,
    pub requested: &'a str,
}

/// `data` of -32021: the capabilities the request had to declare, as MCP names them.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MissingCapability {
    pub required_capabilities: ClientCapabilities,
}

/// `data` of a failed task's error: the run's reason (its error code, or null) and id.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskFailure<'a> {
    pub reason: Option<&'a Value>,
    pub run_id: &'a str,
}

/// The structuredContent of a tool error about a run (the tool's own; MCP leaves it
/// open): where the run is, with its task id or its recorded error object.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunAt<'a> {
    pub run_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<&'a str>,
    pub status: &'a str,
    /// The run's error object as the run recorded it (null when it has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'a Option<Value>>,
}

/// `tools/call` params. `arguments` stays an open object: it is the workflow's inputs,
/// judged by the tool's inputSchema (a wrong one is a tool error, not a protocol one).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallParams {
    pub name: String,
    /// `null` is the same as absent: no arguments.
    #[serde(default)]
    pub arguments: Option<Map<String, Value>>,
    #[serde(default)]
    pub request_state: Option<String>,
    /// Open on purpose: each entry is judged by `elicit::answer`, which names the input and
    /// what is wrong with it and spends nothing (a typed map would refuse the whole call).
    #[serde(default)]
    pub input_responses: Option<Value>,
}

/// `tasks/get` and `tasks/cancel` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskParams {
    pub task_id: String,
}

/// `tasks/update` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskParams {
    pub task_id: String,
    /// Keyed by the inputRequests keys; each value judged by `elicit::answer` (open, as in
    /// [`CallParams::input_responses`]).
    pub input_responses: Map<String, Value>,
}

/// The empty acknowledgement of `tasks/update` and `tasks/cancel`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ack {
    pub result_type: ResultType,
}

impl Ack {
    pub fn complete() -> Ack {
        Ack {
            result_type: ResultType::COMPLETE,
        }
    }
}

/// `tasks/get`'s answer (and the handle a call that became a task answers): rmcp's `Task` and what its status carries. Not rmcp's
/// `GetTaskResult`: a task waiting for input a client cannot be asked for has no
/// `inputRequests`, only a `statusMessage`, which rmcp's `DetailedTask` cannot hold.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskAnswer {
    /// `task` for the handle a call answers with, `complete` for `tasks/get`; none in a
    /// `notifications/tasks` (a notification is no result).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    #[serde(flatten)]
    pub task: Task,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<CallToolResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorData>,
    /// `elicitation/create` requests by key, as `elicit::input_request` builds them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
}

/// `tools/call`'s answer, as the 2026-07-28 result union has it (`resultType` tells which).
#[derive(Debug, Serialize)]
#[serde(untagged)]
#[allow(
    clippy::large_enum_variant,
    reason = "one per call, serialised at once; a box would be one more allocation a call"
)]
pub enum CallAnswer {
    Complete(CallToolResult),
    /// An MRTR round: what the client is asked and the sealed state it sends back.
    InputRequired(InputRequiredResult),
    Task(TaskAnswer),
}

/// A tool result of one text block, `isError` as given, and its structured content.
pub fn tool_text(text: String, structured: Option<Value>, is_error: bool) -> CallToolResult {
    let content = vec![ContentBlock::text(text)];
    let mut result = if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = structured;
    result
}

#[cfg(test)]
mod tests {
    use super::super::rpc::read_params;
    use super::*;
    use serde_json::json;

    #[test]
    fn a_member_of_the_wrong_type_is_invalid_params_naming_it() {
        let e = read_params::<CallParams>(&json!({"name": "w", "arguments": [1]})).unwrap_err();
        assert_eq!(e.code, super::super::rpc::INVALID_PARAMS);
        assert!(e.message.starts_with("`arguments`: "), "{}", e.message);
        let e = read_params::<TaskParams>(&json!({"taskId": 5})).unwrap_err();
        assert!(e.message.starts_with("`taskId`: "), "{}", e.message);
        let e = read_params::<CallParams>(&Value::Null).unwrap_err();
        assert!(e.message.contains("`name`"), "{}", e.message);
    }

    #[test]
    fn the_tolerances_stay() {
        // `arguments: null` is no arguments; `_meta` of any shape is the transport's.
        let p: CallParams =
            read_params(&json!({"name": "w", "arguments": null, "_meta": 5, "extra": true}))
                .unwrap();
        assert_eq!((p.name.as_str(), p.arguments), ("w", None));
        // A malformed input response is elicit's to judge, not the reader's.
        let p: CallParams = read_params(&json!({"name": "w", "requestState": "s",
            "inputResponses": {"i1": "accept"}}))
        .unwrap();
        assert_eq!(p.input_responses, Some(json!({"i1": "accept"})));
    }

    #[test]
    fn a_task_that_cannot_ask_says_why_with_no_input_requests() {
        let mut task =
            Task::new("acme~2Fr", TaskStatus::InputRequired, "t0", "t1").with_poll_interval_ms(500);
        task.status_message = Some("waiting".into());
        let answer = TaskAnswer {
            result_type: Some(ResultType::COMPLETE),
            task,
            result: None,
            error: None,
            input_requests: None,
        };
        assert_eq!(
            serde_json::to_value(&answer).unwrap(),
            json!({"resultType": "complete", "taskId": "acme~2Fr", "status": "input_required",
                "statusMessage": "waiting", "createdAt": "t0", "lastUpdatedAt": "t1",
                "ttlMs": null, "pollIntervalMs": 500})
        );
    }

    #[test]
    fn an_input_round_and_a_tool_error_are_the_shapes_clients_read() {
        let round = CallAnswer::InputRequired(InputRequiredResult::new(
            Some(InputRequests::from([(
                "i1".to_owned(),
                InputRequest::Elicitation(ElicitRequest::new(
                    ElicitRequestParams::UrlElicitationParams {
                        meta: None,
                        message: "m".into(),
                        url: "https://x.test/c".into(),
                        elicitation_id: "i1".into(),
                    },
                )),
            )])),
            Some("s".into()),
        ));
        assert_eq!(
            serde_json::to_string(&round).unwrap(),
            json!({"resultType": "input_required",
                "inputRequests": {"i1": {"method": "elicitation/create", "params": {"mode": "url",
                    "message": "m", "url": "https://x.test/c", "elicitationId": "i1"}}},
                "requestState": "s"})
            .to_string()
        );
        let error = CallAnswer::Complete(tool_text("bad".into(), Some(json!({"a": 1})), true));
        assert_eq!(
            serde_json::to_value(&error).unwrap(),
            json!({"resultType": "complete", "content": [{"type": "text", "text": "bad"}],
                "structuredContent": {"a": 1}, "isError": true})
        );
    }

    #[test]
    fn a_reply_is_its_answer_then_the_server_meta_of_a_modern_request() {
        // Written straight from the models: the same bytes the mount wrote when it stamped
        // `_meta` into the answer's `Value` (after the answer's own members).
        let modern = Reply {
            answer: MethodResult::Ack(Ack::complete()),
            meta: Some(ServerMeta {
                server_info: server_info(),
            }),
        };
        assert_eq!(
            serde_json::to_string(&modern).unwrap(),
            format!(
                r#"{{"resultType":"complete","_meta":{{"io.modelcontextprotocol/serverInfo":{{"name":"openwop","version":"{}"}}}}}}"#,
                env!("CARGO_PKG_VERSION")
            )
        );
        let legacy_ping = Reply {
            answer: MethodResult::Empty(EmptyObject {}),
            meta: None,
        };
        assert_eq!(serde_json::to_string(&legacy_ping).unwrap(), "{}");
    }
}
