//! The artifacts a run's nodes record (a `transform` node with `artifact`): kept in the
//! run's state, announced by `artifact.created`, and read back by `getArtifact`.
//!
//! They live in the run's state because that is what the engine commits atomically with
//! the node's events: an artifact exists exactly when its `artifact.created` does.

use serde_json::{Map, Value, json};

/// One recorded artifact.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub artifact_id: String,
    pub artifact_type: String,
    pub node_id: String,
    pub name: Option<String>,
    pub data: Value,
}

/// The state with one more artifact, and its id: `<nodeId>.<n>`, `n` the number of
/// artifacts the run recorded before, so a node inside a `repeat` block records a new
/// one on every pass and no two ids of a run are ever equal.
pub fn record(
    state: &Value,
    node_id: &str,
    artifact_type: &str,
    name: Option<&str>,
    data: &Value,
) -> (Value, String) {
    let mut state = state.as_object().cloned().unwrap_or_default();
    let list = state
        .entry("artifacts")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !list.is_array() {
        *list = Value::Array(Vec::new());
    }
    let Value::Array(list) = list else {
        unreachable!("made an array just above")
    };
    let id = format!("{node_id}.{}", list.len());
    let mut entry = Map::new();
    entry.insert("artifactId".into(), json!(id));
    entry.insert("artifactType".into(), json!(artifact_type));
    entry.insert("nodeId".into(), json!(node_id));
    if let Some(name) = name {
        entry.insert("name".into(), json!(name));
    }
    entry.insert("data".into(), data.clone());
    list.push(Value::Object(entry));
    (Value::Object(state), id)
}

/// The artifact `artifact_id` of a run whose state is `state`.
pub fn find(state: &Value, artifact_id: &str) -> Option<Recorded> {
    let entry = state
        .get("artifacts")?
        .as_array()?
        .iter()
        .find(|a| a.get("artifactId").and_then(Value::as_str) == Some(artifact_id))?;
    let text = |k: &str| entry.get(k).and_then(Value::as_str).map(str::to_owned);
    Some(Recorded {
        artifact_id: text("artifactId")?,
        artifact_type: text("artifactType")?,
        node_id: text("nodeId")?,
        name: text("name"),
        data: entry.get("data").cloned().unwrap_or(Value::Null),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_per_run_and_read_back() {
        let (state, first) = record(&json!({"nodes": {}}), "emit", "t", Some("n"), &json!(1));
        let (state, second) = record(&state, "emit", "t", None, &json!({"a": 2}));
        assert_eq!((first.as_str(), second.as_str()), ("emit.0", "emit.1"));
        let got = find(&state, "emit.1").unwrap();
        assert_eq!(got.data, json!({"a": 2}));
        assert_eq!(got.name, None);
        assert_eq!(find(&state, "emit.0").unwrap().name.as_deref(), Some("n"));
        assert!(find(&state, "emit.2").is_none());
        assert!(
            state.get("nodes").is_some(),
            "the rest of the state is kept"
        );
    }
}
