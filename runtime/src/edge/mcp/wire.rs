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
//! `NumberOrString` turns `1.0` into `1` and refuses integers past i64).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use rmcp::model::{
    CacheScope, CallToolResult, ContentBlock, DiscoverResult, ErrorData, ListToolsResult,
    ProtocolVersion, ResourceContents, ResultType, ServerCapabilities, Task, TaskStatus, Tool,
    ToolAnnotations, ToolsCapability,
};

use super::rpc::RpcError;

/// Reads a method's params into `T`: a member of the wrong type or a missing one is
/// `-32602` naming it (`serde_path_to_error`). Absent params read as `{}`.
pub fn read<T: DeserializeOwned>(params: &Value) -> Result<T, RpcError> {
    let read = if params.is_null() {
        serde_path_to_error::deserialize(&Value::Object(Map::new()))
    } else {
        serde_path_to_error::deserialize(params)
    };
    read.map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            RpcError::invalid_params(inner.to_string())
        } else {
            RpcError::invalid_params(format!("`{path}`: {inner}"))
        }
    })
}

/// An answer as the JSON value the transports stamp and send. The rmcp models hold only
/// strings, numbers, maps and JSON values, so this cannot fail; if it ever did, the
/// request gets the internal error rather than a half-written answer.
pub fn write<T: Serialize>(answer: &T) -> Result<Value, RpcError> {
    serde_json::to_value(answer).map_err(super::ctx::internal)
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
    /// `elicitation/create` requests by key, as `elicit::input_request` writes them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<Map<String, Value>>,
}

/// `tools/call`'s answer, as the 2026-07-28 result union has it (`resultType` tells which).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum CallAnswer {
    Complete(CallToolResult),
    InputRequired(InputRequired),
    Task(TaskAnswer),
}

/// An MRTR round: what the client is asked and the sealed state it sends back. Not rmcp's
/// `InputRequiredResult` only because its entries are typed requests and ours are written
/// by `elicit` (the same JSON, value for value, in the probe).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequired {
    pub result_type: ResultType,
    pub input_requests: Map<String, Value>,
    pub request_state: String,
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
    use super::*;
    use serde_json::json;

    #[test]
    fn a_member_of_the_wrong_type_is_invalid_params_naming_it() {
        let e = read::<CallParams>(&json!({"name": "w", "arguments": [1]})).unwrap_err();
        assert_eq!(e.code, super::super::rpc::INVALID_PARAMS);
        assert!(e.message.starts_with("`arguments`: "), "{}", e.message);
        let e = read::<TaskParams>(&json!({"taskId": 5})).unwrap_err();
        assert!(e.message.starts_with("`taskId`: "), "{}", e.message);
        let e = read::<CallParams>(&Value::Null).unwrap_err();
        assert!(e.message.contains("`name`"), "{}", e.message);
    }

    #[test]
    fn the_tolerances_stay() {
        // `arguments: null` is no arguments; `_meta` of any shape is the transport's.
        let p: CallParams =
            read(&json!({"name": "w", "arguments": null, "_meta": 5, "extra": true})).unwrap();
        assert_eq!((p.name.as_str(), p.arguments), ("w", None));
        // A malformed input response is elicit's to judge, not the reader's.
        let p: CallParams = read(&json!({"name": "w", "requestState": "s",
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
            write(&answer).unwrap(),
            json!({"resultType": "complete", "taskId": "acme~2Fr", "status": "input_required",
                "statusMessage": "waiting", "createdAt": "t0", "lastUpdatedAt": "t1",
                "ttlMs": null, "pollIntervalMs": 500})
        );
    }

    #[test]
    fn an_input_round_and_a_tool_error_are_the_shapes_clients_read() {
        let round = CallAnswer::InputRequired(InputRequired {
            result_type: ResultType::INPUT_REQUIRED,
            input_requests: Map::from_iter([(
                "i1".to_owned(),
                json!({"method": "elicitation/create"}),
            )]),
            request_state: "s".into(),
        });
        assert_eq!(
            write(&round).unwrap(),
            json!({"resultType": "input_required",
                "inputRequests": {"i1": {"method": "elicitation/create"}}, "requestState": "s"})
        );
        let error = CallAnswer::Complete(tool_text("bad".into(), Some(json!({"a": 1})), true));
        assert_eq!(
            write(&error).unwrap(),
            json!({"resultType": "complete", "content": [{"type": "text", "text": "bad"}],
                "structuredContent": {"a": 1}, "isError": true})
        );
    }
}
