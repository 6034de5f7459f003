//! The engine itself: its error type, the shared state every part of it reads (store,
//! workflows, leases, peers, the suspend hook), and the small helpers the planner
//! ([`super::plan`]), the driver ([`super::drive`]) and the calling nodes
//! ([`super::calls`]) share. It depends on none of them, so they depend on it alone.

use super::definition::{Instr, Node};
use super::events;
use super::registry::{Registry, Workflow};
use crate::status::RunStatus;
use crate::store::{Advanced, Guard, NewEvent, RunPatch, RunRecord, RunStore, StoreError};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// The engine layer's error type. Which variant an error is decides what happens to the
/// run: a store error is never the workflow's fault, so the step is retried; a definition
/// the engine cannot execute fails the run, since retrying would fail the same way.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The store did not take or answer a call (a dropped connection, a locked database,
    /// a pool timeout), or refused it because the run changed under the engine (a guard,
    /// a lost lease). The run is left as it was.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A definition error: the run's workflow is gone from this host.
    #[error("run `{run_id}` names workflow `{workflow_id}`, which this host no longer has")]
    MissingWorkflow { run_id: String, workflow_id: String },
    /// A value the run would put into an event is not one its payload model accepts (a
    /// stored run from before a corpus change, or a host bug): retrying would fail alike.
    #[error("run `{run_id}`: an event payload cannot be built: {message}")]
    Payload { run_id: String, message: String },
}

/// The interrupt a suspending commit opens, for the suspend hook.
pub(super) struct SuspendedAt {
    pub(super) node_id: String,
    pub(super) interrupt_id: String,
    pub(super) kind: String,
}

/// How long a replica's claim on a run lasts without renewal, unless configured.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(10);

/// A run that has just suspended on an interrupt.
#[derive(Debug, Clone)]
pub struct Suspended {
    pub run: RunRecord,
    pub node_id: String,
    pub interrupt_id: String,
    pub kind: String,
}

/// Called after each suspension is committed (the interrupt notice goes out from there).
pub type SuspendHook = Arc<dyn Fn(Suspended) + Send + Sync>;

/// The executor and the workflows it knows.
pub struct Engine {
    pub(super) on_suspend: std::sync::OnceLock<SuspendHook>,
    pub(super) store: Arc<dyn RunStore>,
    pub(super) registry: Registry,
    /// Runs with a driving task, and whether it must look once more before stopping.
    pub(super) active: Mutex<HashMap<String, bool>>,
    /// Interrupts whose suspending write failed with a store error, by run: the commit
    /// may have landed with only its answer lost, and then the suspend hook is still owed.
    pub(super) unconfirmed_suspends: Mutex<HashMap<String, String>>,
    pub(super) shutdown: watch::Receiver<bool>,
    /// This process's name on run leases.
    pub(super) replica: String,
    pub(super) lease_ttl: Duration,
    /// The remote peers calling nodes reach (none unless configured).
    pub(super) peers: std::sync::OnceLock<crate::peers::Peers>,
}

/// A payload the models refused, as the engine's error for the run.
pub(super) fn payload_error(run_id: &str) -> impl FnOnce(String) -> EngineError + '_ {
    move |message| EngineError::Payload {
        run_id: run_id.to_owned(),
        message,
    }
}

/// `run.failed` plus the patch that ends the run.
pub(super) fn failure(
    run: &RunRecord,
    code: &str,
    message: &str,
    node_id: Option<&str>,
) -> (RunPatch, Vec<NewEvent>) {
    let error = events::error_object(code, message);
    // The snapshot's `error` is the same {code, message} the event carries.
    let stored = serde_json::to_value(&error).unwrap_or_else(|_| json!({}));
    let patch = RunPatch {
        status: Some(RunStatus::Failed),
        error: Some(stored),
        wait_until: Some(None),
        close_interrupts: true,
        ..Default::default()
    };
    (patch, vec![events::run_failed(run, error, node_id)])
}

/// The template context of a run.
pub(super) fn context(run: &RunRecord) -> Value {
    json!({
        "inputs": run.inputs,
        "nodes": run.state.get("nodes").cloned().unwrap_or_else(|| json!({})),
        // The passes each open `repeat` block has completed.
        "loops": run.state.get("loops").cloned().unwrap_or_else(|| json!({})),
        "run": {"id": run.run_id, "workflowId": run.workflow_id},
    })
}

pub(super) fn with_node_result(state: &Value, node_id: &str, value: Value) -> Value {
    let mut state = state.as_object().cloned().unwrap_or_default();
    let nodes = state
        .entry("nodes")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = nodes {
        m.insert(node_id.to_owned(), value);
    }
    Value::Object(state)
}

impl Engine {
    pub fn new(
        store: Arc<dyn RunStore>,
        registry: Registry,
        shutdown: watch::Receiver<bool>,
    ) -> Arc<Self> {
        Self::with_lease_ttl(store, registry, shutdown, DEFAULT_LEASE_TTL)
    }

    /// An engine whose run leases last `lease_ttl` without renewal: how long a run
    /// waits after its replica dies before another takes it over.
    pub fn with_lease_ttl(
        store: Arc<dyn RunStore>,
        registry: Registry,
        shutdown: watch::Receiver<bool>,
        lease_ttl: Duration,
    ) -> Arc<Self> {
        let replica = format!("replica-{}", crate::ids::mint_opaque());
        let lease_ttl = lease_ttl.max(Duration::from_millis(300));
        Arc::new(Self {
            on_suspend: std::sync::OnceLock::new(),
            store,
            registry,
            active: Mutex::new(HashMap::new()),
            unconfirmed_suspends: Mutex::new(HashMap::new()),
            shutdown,
            replica,
            lease_ttl,
            peers: std::sync::OnceLock::new(),
        })
    }

    /// Installs the remote peers calling nodes reach; the first set stays.
    pub fn set_peers(&self, peers: crate::peers::Peers) {
        if self.peers.set(peers).is_err() {
            tracing::warn!("the engine's peers were already set");
        }
    }

    /// The configured peers and the one way to reach them (the engine's call nodes, and
    /// conformance mode's invoke seams, which drive the same clients).
    pub fn peers(&self) -> &crate::peers::Peers {
        static NONE: std::sync::OnceLock<crate::peers::Peers> = std::sync::OnceLock::new();
        self.peers
            .get()
            .unwrap_or_else(|| NONE.get_or_init(crate::peers::Peers::default))
    }

    pub(super) fn store(&self) -> &Arc<dyn RunStore> {
        &self.store
    }

    pub(super) fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.clone()
    }

    /// Installs what happens after a run suspends; the first hook set stays.
    pub fn set_on_suspend(&self, hook: SuspendHook) {
        if self.on_suspend.set(hook).is_err() {
            tracing::warn!("the engine's suspend hook was already set");
        }
    }

    /// This process's name on run leases.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// Every engine write: fenced by this replica's lease on the run.
    pub(super) async fn advance(
        &self,
        run_id: &str,
        guard: Guard,
        mut patch: RunPatch,
        events: Vec<NewEvent>,
    ) -> Result<Advanced, StoreError> {
        patch.lease_owner = Some(self.replica.clone());
        self.store.advance(run_id, guard, patch, events).await
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Whether a failed run was failed by the host itself (a step it could not execute,
    /// a workflow it no longer has) rather than by the workflow's own outcome (a `fail`
    /// node, or an interrupt answered on its failure path). A failing run stays on the
    /// node that failed it, so the node says which. Store errors never fail a run (the
    /// step is retried), so they never show up here.
    pub fn failed_by_host(&self, run: &RunRecord) -> bool {
        if run.status != RunStatus::Failed {
            return false;
        }
        let Ok(wf) = self.workflow_of(run) else {
            return true;
        };
        let node = usize::try_from(run.node_index)
            .ok()
            .and_then(|i| wf.program.get(i));
        // A calling node fails on the remote side's answer: the workflow's outcome too.
        !matches!(
            node,
            Some(Instr::Node(
                Node::Fail { .. }
                    | Node::Interrupt { .. }
                    | Node::A2a { .. }
                    | Node::Mcp { .. }
                    | Node::Http { .. }
                    | Node::McpClient { .. }
            ))
        )
    }

    pub(super) fn workflow_of(&self, run: &RunRecord) -> Result<Arc<Workflow>, EngineError> {
        self.registry
            .get(&run.workflow_id)
            .ok_or_else(|| EngineError::MissingWorkflow {
                run_id: run.run_id.clone(),
                workflow_id: run.workflow_id.clone(),
            })
    }
}
