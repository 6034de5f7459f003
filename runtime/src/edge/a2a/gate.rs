//! The interop rule "refuse a row whose `requires` facet is not advertised, with the row's
//! error", applied once, from the generated operation table.
//!
//! A method may have several rows told apart by their `when` text. A handler states the
//! facts of its request (`Facts`); each `when` text of the map is read by exactly one
//! predicate below, and a test fails when the map gains a `when` this module cannot read,
//! so a map edit can never silently bypass a refusal.

use openwop_generated::dispatch::{A2aOperation, a2a_operations};
use serde_json::Value;

use super::errors::{Fault, Transport};

/// What a handler knows about a request before acting on it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Facts {
    pub has_task_id: bool,
    pub return_immediately: bool,
    pub inline_push_config: bool,
    /// The run status of the named task, once it has been read.
    pub task_suspended: bool,
    pub task_terminal: bool,
}

impl Facts {
    /// What a request says about itself before anything is read: whether its message
    /// names a task, and what its configuration asks for. The named task's state is not
    /// known yet (those rows are judged again once the task is read).
    pub fn of_request(params: &Value) -> Facts {
        let configuration = params.get("configuration");
        let set = |key: &str| {
            configuration
                .and_then(|c| c.get(key))
                .is_some_and(|v| !v.is_null())
        };
        Facts {
            has_task_id: params
                .get("message")
                .and_then(|m| m.get("taskId"))
                .and_then(Value::as_str)
                .is_some_and(|t| !t.is_empty()),
            return_immediately: configuration
                .and_then(|c| c.get("returnImmediately"))
                .is_some_and(|v| v.as_bool() == Some(true) || v.as_str() == Some("true")),
            // The 1.0 name, or the pre-1.0 one some clients still send.
            inline_push_config: set("taskPushNotificationConfig") || set("pushNotificationConfig"),
            task_suspended: false,
            task_terminal: false,
        }
    }
}

/// Whether a row's `when` holds for `facts`; `None` for a `when` text we cannot read.
pub fn applies(when: Option<&str>, facts: &Facts) -> Option<bool> {
    let Some(when) = when else { return Some(true) };
    Some(match when {
        "message has no taskId" => !facts.has_task_id,
        "message has no taskId and configuration.returnImmediately is true" => {
            !facts.has_task_id && facts.return_immediately
        }
        "message has no taskId and configuration.taskPushNotificationConfig is set" => {
            !facts.has_task_id && facts.inline_push_config
        }
        "message has a taskId whose run is waiting-approval, waiting-input or waiting-external" => {
            facts.has_task_id && facts.task_suspended
        }
        "message has a taskId whose run is neither suspended nor terminal" => {
            facts.has_task_id && !facts.task_suspended && !facts.task_terminal
        }
        "message has a taskId whose run is terminal and still retained" => {
            facts.has_task_id && facts.task_terminal
        }
        "any message; selected as SendMessage would be" => true,
        _ => return None,
    })
}

/// Checks every applicable row of `method` against what the discovery document
/// advertises. Returns the rows that apply (map order) or the first refusal. An unknown
/// method is `MethodNotFound`.
pub fn check(
    method: &str,
    facts: &Facts,
    discovery: &Value,
) -> Result<Vec<&'static A2aOperation>, Fault> {
    let mut rows = a2a_operations(method).peekable();
    if rows.peek().is_none() {
        return Err(Fault::transport(
            Transport::MethodNotFound,
            format!("no A2A method `{method}`"),
        ));
    }
    let mut applicable = Vec::new();
    for row in rows {
        // An unreadable `when` counts as applying: refusing is the safe side.
        if !applies(row.when, facts).unwrap_or(true) {
            continue;
        }
        if let Some(missing) = row
            .requires
            .iter()
            .find(|r| !crate::discovery::advertises(discovery, r))
        {
            let error = row
                .refusal
                .unwrap_or(openwop_generated::errors::A2aError::UnsupportedOperation);
            return Err(Fault::a2a(
                error,
                format!("{method} needs {missing}, which this host does not advertise"),
            ));
        }
        applicable.push(row);
    }
    Ok(applicable)
}

#[cfg(test)]
mod tests {
    use super::*;
    use openwop_generated::dispatch::A2A_OPERATIONS;
    use openwop_generated::errors::A2aError;
    use serde_json::json;

    #[test]
    fn every_when_text_of_the_map_is_understood() {
        for row in A2A_OPERATIONS {
            assert!(
                applies(row.when, &Facts::default()).is_some(),
                "unreadable when: {:?}",
                row.when
            );
        }
    }

    #[test]
    fn rows_requiring_an_unadvertised_facet_are_refused_with_the_rows_error() {
        let bare = json!({"a2a": {"versions": ["1.0"], "preferredVersion": "1.0", "minimumVersion": "1.0"}});
        for row in A2A_OPERATIONS
            .iter()
            .filter(|r| !r.requires.is_empty() && r.when.is_none())
        {
            let err = check(row.method, &Facts::default(), &bare).expect_err(row.method);
            assert_eq!(
                err.kind,
                super::super::errors::Kind::A2a(row.refusal.expect("refusal")),
                "{}",
                row.method
            );
        }
        // Streaming without a2a.streaming: the row's UnsupportedOperationError.
        let err = check("SendStreamingMessage", &Facts::default(), &bare).expect_err("refused");
        assert_eq!(err.jsonrpc_code(), -32004);
        // Push configs without a2a.pushNotifications: -32003.
        let err = check("CreateTaskPushNotificationConfig", &Facts::default(), &bare)
            .expect_err("refused");
        assert_eq!(
            err.kind,
            super::super::errors::Kind::A2a(A2aError::PushNotificationNotSupported)
        );
    }

    #[test]
    fn send_message_options_are_gated_by_their_own_rows() {
        let no_durable = json!({"a2a": {"streaming": true}});
        let plain = Facts::default();
        assert!(check("SendMessage", &plain, &no_durable).is_ok());
        let immediate = Facts {
            return_immediately: true,
            ..Facts::default()
        };
        assert_eq!(
            check("SendMessage", &immediate, &no_durable)
                .expect_err("refused")
                .jsonrpc_code(),
            -32004
        );
        assert!(
            check(
                "SendMessage",
                &immediate,
                &json!({"a2a": {"durableTasks": true}})
            )
            .is_ok()
        );
        let push = Facts {
            inline_push_config: true,
            ..Facts::default()
        };
        assert_eq!(
            check("SendMessage", &push, &no_durable)
                .expect_err("refused")
                .jsonrpc_code(),
            -32003
        );
        // With a taskId the option rows do not apply.
        let follow_up = Facts {
            has_task_id: true,
            return_immediately: true,
            task_suspended: true,
            ..Facts::default()
        };
        assert!(check("SendMessage", &follow_up, &no_durable).is_ok());
    }

    #[test]
    fn unknown_methods_and_v0_3_names_are_method_not_found() {
        for m in ["message/send", "tasks/get", "Nope"] {
            assert_eq!(
                check(m, &Facts::default(), &json!({}))
                    .expect_err(m)
                    .jsonrpc_code(),
                -32601
            );
        }
    }
}
