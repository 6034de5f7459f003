//! The wire vocabulary of the host's MCP client (runtime/README.md, "MCP wire types", "Our
//! MCP client").
//!
//! Requests are rmcp's params (`PaginatedRequestParams`, `ReadResourceRequestParams`,
//! `CallToolRequestParams`, `GetTaskParams`, `UpdateTaskParams`, `CancelTaskParams`), with
//! `_meta` an rmcp `RequestMetaObject` and this host's capabilities an rmcp
//! `ClientCapabilities`. Answers are read into rmcp's models where they are no stricter
//! than this client has always been (`CallToolResult`, `Task`, `ErrorData`), into the
//! small structs below where rmcp's would refuse an answer for a member this client never
//! reads (each says why), and kept [`Verbatim`] where the answer is a workflow's value
//! (the `mcp-client` node's, the conformance seam's). The JSON-RPC envelope is
//! [`super::rpc`]'s (rmcp's `NumberOrString` is lossy, see the README's table).

use std::collections::BTreeMap;

use serde::de::{DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use rmcp::model::{
    CallToolRequestParams, CallToolResult, CancelTaskParams, ClientCapabilities, ContentBlock,
    ElicitResult, ElicitationAction, ElicitationCapability, ErrorData, FormElicitationCapability,
    GetTaskParams, Implementation, InputResponses, PaginatedRequestParams,
    ReadResourceRequestParams, RequestMetaObject, ResultType, ServerCapabilities, Task, TaskStatus,
    UpdateTaskParams,
};

/// `_meta` keys rmcp writes only from its typed values: the revision (rmcp's
/// `ProtocolVersion` has no constructor from a string outside serde, and the negotiated
/// one is ours) and capabilities a caller declared as it wrote them ([`Capabilities`]).
const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";

/// The tasks extension (SEP-2663).
pub const TASKS: &str = rmcp::model::TASKS_EXTENSION_ID;

/// The client capabilities a request declares.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Capabilities {
    /// This host's own, typed ([`own_capabilities`]).
    Ours(ClientCapabilities),
    /// A caller's declaration (conformance mode's MCP seam declares the suite's), relayed
    /// as it was written: rmcp's `ClientCapabilities` would drop the members it does not
    /// know, and the point of the seam is that the server sees exactly what was declared.
    Declared(Map<String, Value>),
}

impl Capabilities {
    /// `declared`, else this host's own; `tasks` adds the tasks extension (replacing any
    /// `extensions` a declaration carried, as before).
    pub fn of(declared: Option<&Map<String, Value>>, tasks: bool) -> Capabilities {
        match declared {
            Some(declared) => {
                let mut declared = declared.clone();
                if tasks {
                    let extensions =
                        Map::from_iter([(TASKS.to_owned(), Value::Object(Map::new()))]);
                    declared.insert("extensions".into(), Value::Object(extensions));
                }
                Capabilities::Declared(declared)
            }
            None => {
                let mut ours = own_capabilities();
                if tasks {
                    ours.extensions = Some(BTreeMap::from([(TASKS.to_owned(), Map::new())]));
                }
                Capabilities::Ours(ours)
            }
        }
    }
}

/// What this host declares as an MCP client: it can answer elicitation (form) rounds,
/// relayed to whoever waits on the calling run.
pub fn own_capabilities() -> ClientCapabilities {
    let mut capabilities = ClientCapabilities::default();
    capabilities.elicitation =
        Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
    capabilities
}

/// This host as an MCP client names itself.
pub fn client_info() -> Implementation {
    Implementation::new("openwop", env!("CARGO_PKG_VERSION"))
}

/// A 2026-07-28 request's `_meta` (SEP-2575: every request self-describing): the revision,
/// the capabilities, who is asking, and the run's trace.
pub fn request_meta(
    version: &str,
    capabilities: Capabilities,
    traceparent: &str,
) -> RequestMetaObject {
    let mut meta = RequestMetaObject::new();
    meta.insert(
        PROTOCOL_VERSION_KEY.into(),
        Value::String(version.to_owned()),
    );
    match capabilities {
        Capabilities::Ours(c) => meta.set_client_capabilities(c),
        Capabilities::Declared(c) => {
            meta.insert(CLIENT_CAPABILITIES_KEY.into(), Value::Object(c));
        }
    }
    meta.set_client_info(client_info());
    meta.set_traceparent(traceparent);
    meta
}

/// A request before 2026-07-28 carries only the run's trace in `_meta`.
pub fn trace_meta(traceparent: &str) -> RequestMetaObject {
    let mut meta = RequestMetaObject::new();
    meta.set_traceparent(traceparent);
    meta
}

/// An answer as the server sent it, uninterpreted: the value of an `mcp-client` node
/// (its contract, in the workflow-definition schema: the answer kept verbatim, members no
/// model knows included) and the conformance seam's result. Nothing in the host reads it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Verbatim(pub Value);

/// `server/discover` params: `_meta` alone. Not rmcp's `DiscoverRequestParams`, which is
/// empty and denies unknown fields: rmcp carries a request's `_meta` in its own envelope,
/// and the envelope here is ours.
#[derive(Debug, Serialize)]
pub struct MetaOnly {
    #[serde(rename = "_meta")]
    pub meta: RequestMetaObject,
}

/// `initialize` params. Not rmcp's `InitializeRequestParams` only because its
/// `capabilities` is typed, and a declaration is relayed as written ([`Capabilities`]).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    pub protocol_version: String,
    pub capabilities: Capabilities,
    pub client_info: Implementation,
    #[serde(rename = "_meta")]
    pub meta: RequestMetaObject,
}

/// What this client reads of a `server/discover` answer. Not rmcp's `DiscoverResult`,
/// which requires `resultType`, `ttlMs` and `cacheScope`: servers of the draft revisions
/// omit them, and this client reads none of them. `capabilities` that rmcp's
/// `ServerCapabilities` cannot read count as none (the tasks extension is then not used),
/// as a capability this client does not understand always has.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Discovered {
    pub supported_versions: Vec<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub capabilities: ServerCapabilities,
}

impl Discovered {
    /// The server lists the tasks extension.
    pub fn offers_tasks(&self) -> bool {
        self.capabilities
            .extensions
            .as_ref()
            .is_some_and(|e| e.contains_key(TASKS))
    }
}

/// The `data` of a `-32022` (unsupported revision) error: what the server speaks.
#[derive(Debug, Deserialize)]
pub struct Unsupported {
    pub supported: Vec<String>,
}

/// What this client reads of an `initialize` answer: the revision. Not rmcp's
/// `InitializeResult`, which also requires `capabilities` and `serverInfo`, which this
/// client never reads and a legacy server that leaves them out was always answered.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeAnswer {
    #[serde(default)]
    pub protocol_version: String,
}

/// What this client reads of a `tools/list` page to mirror `x-mcp-header` arguments.
/// Not rmcp's `ListToolsResult`: one tool it cannot read (no `inputSchema`, say) would
/// lose every other tool's headers; such a tool is passed over.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsPage {
    #[serde(default)]
    pub tools: Vec<Lenient<ListedTool>>,
    #[serde(default)]
    pub ttl_ms: Option<u64>,
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// A listed tool: its name and input schema.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedTool {
    pub name: String,
    pub input_schema: Map<String, Value>,
}

/// Which `tools/call` answer this is (the 2026-07-28 result union): absent is `complete`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultKind {
    #[serde(default)]
    pub result_type: Option<ResultType>,
}

/// An MRTR round, read as the MCP edge writes it (`edge::mcp::wire::InputRequired`): not
/// rmcp's `InputRequiredResult`, whose entries are typed requests: a request this host does
/// not answer (sampling, roots) must reach the node, which fails naming it, rather than
/// fail the read.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRound {
    #[serde(default)]
    pub input_requests: Map<String, Value>,
    #[serde(default)]
    pub request_state: Option<String>,
}

/// A tool call's result. rmcp's `CallToolResult`, read so that a content block of a type
/// rmcp does not know (a newer revision's), or one it cannot read, is passed over as this
/// client always has (it reads text blocks and `structuredContent`), instead of failing
/// the whole result; and any object is a result (rmcp wants one of its members).
#[derive(Debug, Clone)]
pub struct ToolResult(pub CallToolResult);

impl<'de> Deserialize<'de> for ToolResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Wire {
            #[serde(default)]
            result_type: Option<ResultType>,
            #[serde(default)]
            content: Vec<Lenient<ContentBlock>>,
            #[serde(default)]
            structured_content: Option<Value>,
            #[serde(default)]
            is_error: Option<bool>,
        }
        let wire = Wire::deserialize(d)?;
        let mut result =
            CallToolResult::success(wire.content.into_iter().filter_map(|b| b.0).collect());
        result.result_type = wire.result_type;
        result.structured_content = wire.structured_content;
        result.is_error = wire.is_error;
        Ok(ToolResult(result))
    }
}

/// `tasks/get`'s answer: rmcp's `Task` (read from the same object) and what its status
/// carries. Not rmcp's `GetTaskResult`, whose `DetailedTask` refuses an `input_required`
/// task without `inputRequests` (the MCP edge answers one, saying why in
/// `statusMessage`) and types each input request ([`InputRound`] says why not).
#[derive(Debug)]
pub struct TaskState {
    pub task: Task,
    pub result: Option<CallToolResult>,
    pub error: Option<ErrorData>,
    pub input_requests: Option<Map<String, Value>>,
}

impl<'de> Deserialize<'de> for TaskState {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Payload {
            #[serde(default)]
            result: Option<ToolResult>,
            #[serde(default)]
            error: Option<ErrorData>,
            #[serde(default)]
            input_requests: Option<Map<String, Value>>,
        }
        // Two reads of one object rather than `flatten`, which would lose the path of a
        // member of the wrong type.
        let object = Value::deserialize(d)?;
        let task: Task = named(&object)?;
        let payload: Payload = named(&object)?;
        Ok(TaskState {
            task,
            result: payload.result.map(|r| r.0),
            error: payload.error,
            input_requests: payload.input_requests,
        })
    }
}

/// `T` from `object`, an error naming the member that does not read.
fn named<T: DeserializeOwned, E: serde::de::Error>(object: &Value) -> Result<T, E> {
    crate::wire::read_naming(object).map_err(E::custom)
}

/// A value read if it reads as `T`, else `None` (passed over), never an error.
#[derive(Debug)]
pub struct Lenient<T>(pub Option<T>);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        Ok(Lenient(T::deserialize(value).ok()))
    }
}

/// `deserialize_with` for a member that counts as its default when it does not read.
fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(d: D) -> Result<T, D::Error> {
    Ok(Lenient::<T>::deserialize(d)?.0.unwrap_or_default())
}

/// Reads `method`'s answer into `T`: a member missing or of the wrong type is an error
/// naming it (the text of a `CallError::Protocol`), never a panic.
pub fn read<T: DeserializeOwned>(method: &str, result: &Value) -> Result<T, String> {
    crate::wire::read_naming(result).map_err(|e| format!("the answer to `{method}`: {e}"))
}
