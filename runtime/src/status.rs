//! A run's status: the generated `RunStatus` (from the corpus), and the lifecycle
//! questions every layer asks of it, answered here once.

pub use crate::generated::dispatch::RunStatus;

/// The lifecycle questions of a status.
pub trait Lifecycle: Copy {
    /// Waiting on an interrupt (approval, input or an external event).
    fn is_suspended(self) -> bool;
    /// Waiting for something a person types (approval or input).
    fn asks_for_input(self) -> bool;
    /// Pending, running or cancelling: the run needs a driver.
    fn needs_driver(self) -> bool;
}

impl Lifecycle for RunStatus {
    fn is_suspended(self) -> bool {
        matches!(
            self,
            RunStatus::WaitingApproval | RunStatus::WaitingInput | RunStatus::WaitingExternal
        )
    }

    fn asks_for_input(self) -> bool {
        matches!(self, RunStatus::WaitingApproval | RunStatus::WaitingInput)
    }

    fn needs_driver(self) -> bool {
        matches!(
            self,
            RunStatus::Pending | RunStatus::Running | RunStatus::Cancelling
        )
    }
}

/// The statuses a run never leaves.
pub const TERMINAL: [RunStatus; 3] = [
    RunStatus::Completed,
    RunStatus::Failed,
    RunStatus::Cancelled,
];

/// The statuses in which a run needs a driver.
pub const DRIVABLE: [RunStatus; 3] = [
    RunStatus::Pending,
    RunStatus::Running,
    RunStatus::Cancelling,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_is_in_exactly_one_lifecycle_class() {
        for s in RunStatus::ALL {
            let classes = [
                s.is_terminal(),
                s.is_suspended(),
                s.needs_driver(),
                *s == RunStatus::Paused,
            ];
            assert_eq!(classes.iter().filter(|c| **c).count(), 1, "{s:?}");
            assert_eq!(TERMINAL.contains(s), s.is_terminal());
            assert_eq!(DRIVABLE.contains(s), s.needs_driver());
        }
    }
}
