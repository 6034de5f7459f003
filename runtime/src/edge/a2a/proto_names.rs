//! Request field names as ProtoJSON reads them. A2A's JSON is the ProtoJSON form of its
//! proto messages, whose parsers accept a field by its JSON name (`taskId`) and by its
//! proto name (`task_id`); SDK servers built on them do. Requests are read here into the
//! JSON names once, before any operation looks at them, so every operation and both
//! bindings accept either spelling.

use serde_json::{Map, Value};

/// Fields whose value is opaque (`google.protobuf.Struct` / `Value`): never renamed
/// inside, since what a client keeps there is its own.
const OPAQUE: [&str; 2] = ["metadata", "data"];

/// `task_id` → `taskId`; a name without `_` is returned as it is.
fn json_name(proto: &str) -> String {
    let mut out = String::with_capacity(proto.len());
    let mut upper = false;
    for c in proto.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `value` with every proto field name spelled as its JSON name. When a request spells
/// one field both ways, the JSON name wins (the proto spelling is dropped).
pub fn json_names(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            // JSON names first, so a proto spelling of the same field cannot replace one.
            for (key, v) in map.iter().filter(|(k, _)| !k.contains('_')) {
                out.insert(key.clone(), rename_in(key, v));
            }
            for (key, v) in map.iter().filter(|(k, _)| k.contains('_')) {
                let name = json_name(key);
                if !out.contains_key(&name) {
                    let renamed = rename_in(&name, v);
                    out.insert(name, renamed);
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(json_names).collect()),
        other => other.clone(),
    }
}

fn rename_in(name: &str, value: &Value) -> Value {
    if OPAQUE.contains(&name) {
        value.clone()
    } else {
        json_names(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn proto_field_names_are_read_as_their_json_names() {
        let request = json!({
            "history_length": 2,
            "message": {"message_id": "m", "task_id": "t", "context_id": "c",
                        "reference_task_ids": ["r"],
                        "parts": [{"text": "x", "media_type": "text/plain"}]},
            "configuration": {"return_immediately": true, "accepted_output_modes": ["a"],
                              "task_push_notification_config": {"url": "https://x"}}
        });
        assert_eq!(
            json_names(&request),
            json!({
                "historyLength": 2,
                "message": {"messageId": "m", "taskId": "t", "contextId": "c",
                            "referenceTaskIds": ["r"],
                            "parts": [{"text": "x", "mediaType": "text/plain"}]},
                "configuration": {"returnImmediately": true, "acceptedOutputModes": ["a"],
                                  "taskPushNotificationConfig": {"url": "https://x"}}
            })
        );
    }

    #[test]
    fn opaque_values_keep_their_names_and_the_json_name_wins() {
        let request = json!({
            "metadata": {"my_key": 1},
            "message": {"parts": [{"data": {"snake_case": true}}], "metadata": {"a_b": {"c_d": 1}}},
            "task_id": "proto", "taskId": "json"
        });
        let read = json_names(&request);
        assert_eq!(read["metadata"], json!({"my_key": 1}));
        assert_eq!(
            read["message"]["parts"][0]["data"],
            json!({"snake_case": true})
        );
        assert_eq!(read["message"]["metadata"], json!({"a_b": {"c_d": 1}}));
        assert_eq!(read["taskId"], "json");
        assert!(read.get("task_id").is_none());
    }
}
