//! Reading a request's parameters into the generated A2A request models
//! (`schemas/v2/a2a-wire.schema.json`), with the tolerances this edge documents kept in
//! one place, before the typed read:
//!
//! - ProtoJSON spellings: a field by its proto name (`task_id`, [`super::proto_names`]),
//!   `null` for "not set", an integer field as a numeric string (`"historyLength": "2"`)
//!   and a boolean as `"true"`/`"false"` (the HTTP+JSON query carries nothing else);
//! - members an operation does not read are never read, whatever their type (`tenant`
//!   outside SendMessage and GetExtendedAgentCard);
//! - ListTasks filters of the wrong type filter nothing, as they always did;
//! - a refusal names the field and keeps the words it always had
//!   ([`Fault::invalid_params`], a `google.rpc.BadRequest` violation).

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::errors::Fault;

/// How a refused field is named and described: `(serde path, field named, description)`.
/// A path listed here keeps the host's own words; any other field gets serde's.
pub(super) type Words = &'static [(&'static str, &'static str, &'static str)];

/// The words of the fields every method shares.
pub(super) const COMMON: Words = &[
    (
        "historyLength",
        "historyLength",
        "must be a non-negative integer",
    ),
    (
        "configuration.historyLength",
        "historyLength",
        "must be a non-negative integer",
    ),
    (
        "configuration.returnImmediately",
        "returnImmediately",
        "must be true or false",
    ),
    (
        "includeArtifacts",
        "includeArtifacts",
        "must be true or false",
    ),
    ("pageSize", "pageSize", "must be between 1 and 100"),
    ("id", "id", "is required"),
    ("taskId", "taskId", "is required"),
];

/// A serde error as invalid parameters naming the field: its path, and for a missing
/// field the field itself (serde reports that one at its parent).
pub(super) fn field_error(
    e: serde_path_to_error::Error<serde_json::Error>,
    at: &str,
    words: Words,
) -> Fault {
    let path = e.path().to_string();
    let fault = field_fault(&path, e.inner().to_string(), words);
    if at.is_empty() {
        return fault;
    }
    // Read from a member of the request: every field is named from the request's root.
    let field = fault
        .violations
        .first()
        .map(|v| v.field.clone())
        .unwrap_or_default();
    let description = fault
        .violations
        .first()
        .map(|v| v.description.clone())
        .unwrap_or_default();
    let field = if field == "params" {
        at.to_owned()
    } else {
        format!("{at}.{field}")
    };
    Fault::invalid_params(&field, description)
}

fn field_fault(path: &str, inner: String, words: Words) -> Fault {
    let inner = inner.split(" at line ").next().unwrap_or(&inner).to_owned();
    if let Some(name) = inner
        .strip_prefix("missing field `")
        .and_then(|r| r.strip_suffix('`'))
    {
        let field = if path == "." || path.is_empty() {
            name.to_owned()
        } else {
            format!("{path}.{name}")
        };
        return match words.iter().find(|(p, ..)| *p == field) {
            Some((_, named, description)) => Fault::invalid_params(named, *description),
            None => Fault::invalid_params(&field, "is required"),
        };
    }
    if let Some((_, named, description)) = words.iter().find(|(p, ..)| *p == path) {
        return Fault::invalid_params(named, *description);
    }
    let field = if path == "." || path.is_empty() {
        "params".to_owned()
    } else {
        path.to_owned()
    };
    Fault::invalid_params(&field, inner)
}

/// Reads `params` as `T`; a refusal names the field (in `words`' terms where listed).
pub(super) fn typed<T: DeserializeOwned>(params: &Value, words: Words) -> Result<T, Fault> {
    typed_at(params, "", words)
}

/// [`typed`] for a member of the request at `at` (`configuration.taskPushNotificationConfig`):
/// a refused field is named from the request's root.
pub(super) fn typed_at<T: DeserializeOwned>(
    value: &Value,
    at: &str,
    words: Words,
) -> Result<T, Fault> {
    // A well-formed request is read once, straight into `T`; only a refused one is read
    // again through `serde_path_to_error`, for the field its refusal names (tracking the
    // path costs on every read, so it is paid on the error path only). The same read
    // fails the same way.
    if let Ok(read) = T::deserialize(value) {
        return Ok(read);
    }
    serde_path_to_error::deserialize(value).map_err(|e| field_error(e, at, words))
}

/// `"2"` → `2` and `"true"` → `true` for the integer and boolean members named, when the
/// string is one; anything else is left for the typed read to refuse.
fn scalars(object: &mut Map<String, Value>, integers: &[&str], booleans: &[&str]) {
    for (key, value) in object.iter_mut() {
        let Value::String(s) = value else { continue };
        if integers.contains(&key.as_str())
            && let Ok(n) = s.trim().parse::<i64>()
        {
            *value = Value::from(n);
        } else if booleans.contains(&key.as_str()) && (s == "true" || s == "false") {
            *value = Value::Bool(s == "true");
        }
    }
}

/// ProtoJSON's `null` is "not set": members holding it are dropped, except inside open
/// values (`metadata`, `data`), which are the client's own.
fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            for (key, v) in map.iter_mut() {
                if key != "metadata" && key != "data" {
                    drop_nulls(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

/// The parameters of one method, with the tolerances above applied: what the typed read
/// of that method's request model sees.
pub(super) fn loosen(method: openwop_generated::dispatch::A2aMethod, params: &Value) -> Value {
    use openwop_generated::dispatch::A2aMethod as M;
    let mut params = params.clone();
    drop_nulls(&mut params);
    let Some(object) = params.as_object_mut() else {
        return params;
    };
    scalars(
        object,
        &["historyLength", "pageSize"],
        &["includeArtifacts"],
    );
    match method {
        M::SendMessage | M::SendStreamingMessage => {
            if let Some(Value::Object(configuration)) = object.get_mut("configuration") {
                scalars(configuration, &["historyLength"], &["returnImmediately"]);
                // Output modes were read as the strings among them, and a list that is not
                // one as none: an entry that is no string names no mode.
                match configuration.get_mut("acceptedOutputModes") {
                    Some(Value::Array(modes)) => {
                        for mode in modes.iter_mut().filter(|m| !m.is_string()) {
                            *mode = Value::String(String::new());
                        }
                    }
                    Some(_) => {
                        configuration.remove("acceptedOutputModes");
                    }
                    None => {}
                }
            }
        }
        M::GetExtendedAgentCard => {}
        M::ListTasks => {
            // A filter that is not a string filters nothing (the JS SDK's serializer has
            // sent odd values here); the store never sees it.
            for key in ["contextId", "pageToken", "statusTimestampAfter", "status"] {
                if object.get(key).is_some_and(|v| !v.is_string()) {
                    object.remove(key);
                }
            }
            object.remove("tenant");
        }
        _ => {
            // Every other operation acts for the caller's own tenant and reads no `tenant`.
            object.remove("tenant");
        }
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;
    use openwop_generated::dispatch::A2aMethod;
    use serde_json::json;

    #[test]
    fn protojson_spellings_are_read_as_the_field_type() {
        let read = loosen(
            A2aMethod::ListTasks,
            &json!({"pageSize": "5", "historyLength": " 2", "includeArtifacts": "true",
                    "contextId": 7, "status": null, "tenant": 3, "metadata": {"k": null}}),
        );
        assert_eq!(
            read,
            json!({"pageSize": 5, "historyLength": 2, "includeArtifacts": true, "metadata": {"k": null}})
        );
        let send = loosen(
            A2aMethod::SendMessage,
            &json!({"tenant": "R", "configuration": {"returnImmediately": "false", "historyLength": "x",
                    "acceptedOutputModes": [5, "text/plain"]}}),
        );
        assert_eq!(
            send,
            json!({"tenant": "R", "configuration": {"returnImmediately": false, "historyLength": "x",
                    "acceptedOutputModes": ["", "text/plain"]}})
        );
    }

    /// A refusal keeps the field and the words the host always used, whatever serde says.
    #[test]
    fn a_refused_field_keeps_its_name_and_words() {
        use openwop_generated::models::{A2aListTasksRequest, A2aTaskRequest};
        let message = |f: Fault| f.message;
        let id = typed::<A2aTaskRequest>(&json!({"id": 5}), COMMON).expect_err("id: 5");
        assert_eq!(message(id), "invalid parameters: id: is required");
        let missing = typed::<A2aTaskRequest>(&json!({}), COMMON).expect_err("no id");
        assert_eq!(message(missing), "invalid parameters: id: is required");
        let list = loosen(A2aMethod::ListTasks, &json!({"pageSize": "abc"}));
        let page = typed::<A2aListTasksRequest>(&list, COMMON).expect_err("pageSize");
        assert_eq!(
            message(page),
            "invalid parameters: pageSize: must be between 1 and 100"
        );
        // A field without words of its own is named by its path, with serde's words.
        let at = typed_at::<A2aTaskRequest>(&json!({"id": "t", "historyLength": true}), "x", &[])
            .expect_err("historyLength");
        assert_eq!(at.violations[0].field, "x.historyLength");
    }
}
