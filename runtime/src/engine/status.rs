//! The engine's own status question: which status a run takes while it waits.

use super::definition::InterruptKind;
use crate::status::RunStatus;

/// The status a run takes while suspended on an interrupt of `kind`.
pub fn suspended_status(kind: InterruptKind) -> RunStatus {
    match kind {
        InterruptKind::Approval => RunStatus::WaitingApproval,
        InterruptKind::Clarification | InterruptKind::Credential => RunStatus::WaitingInput,
        InterruptKind::ExternalEvent => RunStatus::WaitingExternal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::definition::kind_str;

    /// The rule the workflow definition schema states for `interrupt.kind`, which the A2A
    /// edge's state-filter test restates as a table.
    #[test]
    fn each_interrupt_kind_suspends_in_its_schema_status() {
        let table = [
            (
                InterruptKind::Approval,
                RunStatus::WaitingApproval,
                "approval",
            ),
            (
                InterruptKind::Clarification,
                RunStatus::WaitingInput,
                "clarification",
            ),
            (
                InterruptKind::Credential,
                RunStatus::WaitingInput,
                "credential",
            ),
            (
                InterruptKind::ExternalEvent,
                RunStatus::WaitingExternal,
                "external-event",
            ),
        ];
        for (kind, status, wire) in table {
            assert_eq!(suspended_status(kind), status);
            assert_eq!(kind_str(kind), wire);
            assert_eq!(kind.to_string(), wire);
        }
    }
}
