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
