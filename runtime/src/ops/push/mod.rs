//! Push notifications as operations: registering, reading, listing and deleting a task's
//! push configurations, and the delivery workers (`deliver`). The A2A edge parses the
//! requests and renders the bodies; the rules live here:
//! - a URL passes the egress guard at registration, and again at every delivery;
//! - `token` and `authentication.credentials` are stored apart, by reference, and never
//!   returned, logged, written to the event log or to the task rows;
//! - a configId is random and encodes nothing about who registered it.

pub mod deliver;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;
use tokio::sync::mpsc;

use super::{OpError, Ops};
use crate::egress::Egress;
use crate::store::RunRecord;
pub use crate::store::{Secret, StoredConfig};
pub use deliver::{Backoff, PUSH_CONTENT_TYPE, RetryPolicy, authorization};

/// Push configurations one task may hold: each is a delivery per state change, so an
/// unbounded number would let one task multiply the host's outbound traffic.
pub const MAX_CONFIGS_PER_TASK: usize = 16;

/// A configuration as a request carries it, already validated by its edge.
#[derive(Debug, Clone)]
pub struct NewPushConfig {
    /// The client's own id for it; one is minted when absent.
    pub id: Option<String>,
    pub url: String,
    /// The `Authorization` scheme the credentials go with.
    pub scheme: Option<String>,
    pub secret: Secret,
}

/// A push body, rendered for a run as it stands.
pub struct Rendered {
    /// The task state it reports (the outbox keeps one push per state and config).
    pub state: &'static str,
    pub body: String,
    /// The task's final push: its configurations and secrets go after it.
    pub last: bool,
}

/// How a run becomes a push body (the A2A edge's projection).
pub trait PushRender: Send + Sync + 'static {
    /// The body for `run` as it stands; `None` when it cannot be rendered (it is logged).
    fn render<'a>(&'a self, run: &'a RunRecord) -> BoxFuture<'a, Option<Rendered>>;
}

/// The running push side: the guard URLs pass, and the watcher's kick.
pub(super) struct Push {
    egress: Egress,
    kick: mpsc::UnboundedSender<String>,
    /// Set once this process has stored a configuration (or found one at start).
    configured: Arc<AtomicBool>,
}

/// Where the push side is kept once started (the A2A edge starts it with its renderer).
pub(super) type PushSlot = OnceLock<Push>;

impl Ops {
    /// Starts delivering pushes: `render` makes the bodies, `policy` says how failures are
    /// retried. The first start wins; a second is ignored.
    pub fn start_push(&self, render: Arc<dyn PushRender>, egress: Egress, policy: RetryPolicy) {
        if self.push.get().is_some() {
            return;
        }
        let (kick, rx) = mpsc::unbounded_channel();
        let configured = Arc::new(AtomicBool::new(false));
        if self
            .push
            .set(Push {
                egress: egress.clone(),
                kick,
                configured: configured.clone(),
            })
            .is_err()
        {
            return;
        }
        deliver::spawn(
            deliver::Watcher {
                runs: self.runs.clone(),
                store: self.interop.clone(),
                render,
                shutdown: self.shutdown.clone(),
                configured,
            },
            egress,
            policy,
            rx,
        );
    }

    /// Whether push notifications are delivered by this host.
    pub fn serves_push(&self) -> bool {
        self.push.get().is_some()
    }

    fn push(&self) -> Result<&Push, OpError> {
        self.push
            .get()
            .ok_or_else(|| OpError::internal("push notifications were not started"))
    }

    /// Judges a push URL now (delivery judges it again); a refusal is a validation error
    /// that says why.
    pub async fn check_push_url(&self, url: &str) -> Result<(), OpError> {
        self.push()?
            .egress
            .check(url)
            .await
            .map(|_| ())
            .map_err(|e| OpError::validation(format!("refused by the egress guard: {e}")))
    }

    /// Stores a configuration for a task the caller may read (at most
    /// [`MAX_CONFIGS_PER_TASK`]; replacing one by its id is always allowed), after
    /// [`Ops::check_push_url`], and pushes the task's current state to it.
    pub async fn add_push_config(
        &self,
        run: &RunRecord,
        config: NewPushConfig,
    ) -> Result<StoredConfig, OpError> {
        let push = self.push()?;
        // Before the write: a commit of the run seen from now on is looked at.
        push.configured.store(true, Ordering::SeqCst);
        let stored = StoredConfig {
            run_id: run.run_id.clone(),
            config_id: config
                .id
                .unwrap_or_else(|| format!("pc-{}", crate::ids::mint_opaque())),
            url: config.url,
            scheme: config.scheme,
            created_ms: crate::clock::now_ms(),
        };
        if !self
            .interop
            .push_put_within(stored.clone(), config.secret, MAX_CONFIGS_PER_TASK)
            .await?
        {
            return Err(OpError::validation(format!(
                "a task takes at most {MAX_CONFIGS_PER_TASK} push notification configs; delete one first"
            )));
        }
        let _ = push.kick.send(run.run_id.clone());
        Ok(stored)
    }

    /// One configuration of a task the caller may read; `None` for an unknown configId
    /// or another task's.
    pub async fn push_config(
        &self,
        run: &RunRecord,
        config_id: &str,
    ) -> Result<Option<StoredConfig>, OpError> {
        self.push()?;
        Ok(self.interop.push_get(&run.run_id, config_id).await?)
    }

    /// Every configuration of a task the caller may read.
    pub async fn push_configs(&self, run: &RunRecord) -> Result<Vec<StoredConfig>, OpError> {
        self.push()?;
        Ok(self.interop.push_list(&run.run_id).await?)
    }

    /// Deletes a configuration; an absent one (or another task's) is the same success.
    pub async fn delete_push_config(
        &self,
        run: &RunRecord,
        config_id: &str,
    ) -> Result<(), OpError> {
        self.push()?;
        self.interop.push_delete(&run.run_id, config_id).await?;
        Ok(())
    }

    /// Pushes that ran out of attempts (operators and tests; A2A clients never see them).
    pub async fn push_dead_letters(&self) -> Result<Vec<crate::store::DeadLetter>, OpError> {
        Ok(self.interop.push_dead_letters().await?)
    }
}
