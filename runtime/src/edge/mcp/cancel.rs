//! The run belongs to the request until its answer is handed to the transport: if the
//! request is dropped first (client disconnect, stdio cancel), the run is cancelled as
//! `cancelRun` does, with reason `mcp-request-cancelled`.

use std::sync::Arc;

use crate::identity::Subject;
use crate::ids::BoundId;
use crate::ops::Ops;

use super::ctx::REQUEST_CANCELLED;

pub struct RunGuard {
    armed: Option<(Arc<Ops>, Subject, String)>,
}

impl RunGuard {
    pub fn arm(ops: Arc<Ops>, subject: Subject, run_id: &str) -> RunGuard {
        RunGuard {
            armed: Some((ops, subject, run_id.to_owned())),
        }
    }

    /// The answer is ready: dropping the guard no longer cancels.
    pub fn hand_over(mut self) {
        self.armed = None;
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        let Some((ops, subject, run_id)) = self.armed.take() else {
            return;
        };
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                run_id,
                "request abandoned outside a runtime; run not cancelled"
            );
            return;
        };
        handle.spawn(async move {
            let Ok(id) = BoundId::parse_bound(&run_id) else {
                return;
            };
            match ops
                .cancel_run(&subject, &id, Some(REQUEST_CANCELLED.into()))
                .await
            {
                Ok(_) => tracing::info!(run_id, "run cancelled: its MCP request went away"),
                // Already terminal: the request lost the race with the run's own end.
                Err(e) => tracing::debug!(run_id, error = %e, "abandoned run not cancelled"),
            }
        });
    }
}
