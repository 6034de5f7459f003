//! Run statuses come from the generated crate; here only the questions the engine asks.

pub use crate::generated::dispatch::RunStatus;

use super::definition::InterruptKind;

/// Completed, failed or cancelled: nothing more will happen to the run.
pub fn is_terminal(s: RunStatus) -> bool {
    matches!(
        s,
        RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled
    )
}

/// The statuses a run never leaves, as strings for store guards.
pub fn terminal_strs() -> Vec<String> {
    [
        RunStatus::Completed,
        RunStatus::Failed,
        RunStatus::Cancelled,
    ]
    .iter()
    .map(|s| s.as_str().to_owned())
    .collect()
}

/// The status a run takes while suspended on an interrupt of `kind`.
pub fn suspended_status(kind: InterruptKind) -> RunStatus {
    match kind {
        InterruptKind::Approval => RunStatus::WaitingApproval,
        InterruptKind::Clarification | InterruptKind::Credential => RunStatus::WaitingInput,
        InterruptKind::ExternalEvent => RunStatus::WaitingExternal,
    }
}

/// Parses a stored status; an unknown string is treated as failed rather than trusted.
pub fn parse(s: &str) -> RunStatus {
    s.parse().unwrap_or(RunStatus::Failed)
}
