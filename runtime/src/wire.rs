//! Small helpers every layer uses to build the generated models from the runtime's own
//! values (ids it minted, JSON it stored).

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// A2A's own JSON media type (A2A 1.0): what the A2A edge takes and writes, what an artifact
/// is served as to an A2A client, and what a push delivery is sent as. One constant for all.
pub const A2A_JSON: &str = "application/a2a+json";

/// A value of an id or string model, or the reason it is not one (a host bug: ids are
/// minted or checked before they get here).
pub fn wire<T, S>(what: &str, value: S) -> Result<T, String>
where
    T: TryFrom<S>,
    T::Error: std::fmt::Display,
{
    T::try_from(value).map_err(|e| format!("{what}: {e}"))
}

/// An object value as a JSON object map (`{}` for anything else).
pub fn object(v: &Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

/// `value` read as `T`, or why not, naming the member that does not read (`` `a.b`:
/// invalid type: … ``; the bare reason when the whole value is at fault). A value that
/// reads is read once, straight into `T`; only a refused one is read again through
/// `serde_path_to_error` for the path (tracking it costs on every read, so only the error
/// path pays). The MCP mount's params and the MCP client's answers are read this way.
pub fn read_naming<T: DeserializeOwned>(value: &Value) -> Result<T, String> {
    if let Ok(read) = T::deserialize(value) {
        return Ok(read);
    }
    // The same read fails the same way; this one says where.
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            inner.to_string()
        } else {
            format!("`{path}`: {inner}")
        }
    })
}
