//! What a resume value must be for the interrupt it answers: one check, in `ops`, for
//! every edge that resolves (REST, resume tokens, A2A, MCP), as interrupt.md has the server
//! enforce it on resolve.

use serde_json::{Value, json};

use super::OpError;

/// The actions an approval interrupt offers: its `actions`, else accept and reject (what
/// the edges offer for one that names none).
pub fn offered_actions(data: &Value) -> Vec<String> {
    let named: Vec<String> = data
        .get("actions")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if named.is_empty() {
        vec!["accept".to_owned(), "reject".to_owned()]
    } else {
        named
    }
}

/// An approval that lists its approvers (`approversList`, subject ids) may be decided
/// only by one of them: anyone else is refused `forbidden` and nothing is resolved
/// (interrupt.md). A resume token is its own authority and is not held to the list.
pub(super) fn check_approver(
    kind: &str,
    data: &Value,
    subject: &crate::identity::Subject,
) -> Result<(), OpError> {
    if kind != "approval" {
        return Ok(());
    }
    let Some(listed) = data.get("approversList").and_then(Value::as_array) else {
        return Ok(());
    };
    if listed
        .iter()
        .any(|a| a.as_str() == Some(subject.subject_id.as_str()))
    {
        return Ok(());
    }
    Err(OpError::BadInput {
        code: crate::generated::errors::ErrorCode::Forbidden,
        message: "this approval lists its approvers, and the caller is not one of them".into(),
    })
}

/// A resume value checked against the interrupt it answers, for every edge alike (REST,
/// resume tokens, A2A, MCP): a credential interrupt takes exactly `{"outcome":
/// "authorized" | "declined"}`; an approval takes `{"action": …}` naming one of the
/// actions it offers (interrupt.md: the server enforces the allowed actions on resolve;
/// `timeout` is the host's own record, never an answer). A refusal names what is offered
/// (`details.offeredActions`), and nothing is resolved.
pub(super) fn check(kind: &str, data: &Value, resume: &Value) -> Result<(), OpError> {
    match kind {
        "credential" => {
            let ok = resume.as_object().is_some_and(|o| {
                o.len() == 1
                    && matches!(
                        o.get("outcome").and_then(Value::as_str),
                        Some("authorized" | "declined")
                    )
            });
            if !ok {
                return Err(OpError::validation(
                    "a credential interrupt resumes with exactly {\"outcome\": \"authorized\" | \"declined\"}",
                ));
            }
        }
        "approval" => {
            let offered = offered_actions(data);
            let action = resume
                .as_object()
                .and_then(|o| o.get("action"))
                .and_then(Value::as_str);
            if !action.is_some_and(|a| a != "timeout" && offered.iter().any(|o| o == a)) {
                let listed: Vec<String> = offered.iter().map(|a| format!("\"{a}\"")).collect();
                let got = match action {
                    Some(a) => format!("not \"{a}\""),
                    None => "and this answer names none".to_owned(),
                };
                return Err(OpError::Validation {
                    message: format!(
                        "this approval interrupt resumes with {{\"action\": …}} naming one of its offered actions ({}), {got}",
                        listed.join(", ")
                    ),
                    details: Some(json!({"offeredActions": offered})),
                });
            }
        }
        _ => {}
    }
    Ok(())
}
