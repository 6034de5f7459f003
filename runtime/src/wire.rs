//! Small helpers every layer uses to build the generated models from the runtime's own
//! values (ids it minted, JSON it stored).

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
