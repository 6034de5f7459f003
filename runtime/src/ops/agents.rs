//! The agent inventory: `listAgents`, `getAgent`, and resolving an A2A routing value,
//! all through the caller's own inventory, so nothing outside it is ever looked at.

use super::{OpError, Ops};
use crate::agents::{AgentEntry, routing};
use crate::engine::Workflow;
use crate::identity::Subject;
use std::sync::Arc;

/// Decides whether a caller may run a workflow the host has.
pub type WorkflowFilter = std::sync::Arc<dyn Fn(&Subject, &str) -> bool + Send + Sync>;

impl Ops {
    /// Whether `subject` may start `workflow_id`. The one place workflow visibility is
    /// decided: the inventory, agent cards and `createRun` all ask here. A served host
    /// lets every tenant run every workflow it has; an embedder (or a test) narrows that
    /// per caller with [`Ops::with_workflow_filter`].
    pub fn may_run(&self, subject: &Subject, workflow_id: &str) -> bool {
        self.engine.registry().get(workflow_id).is_some()
            && self.tenant_sees_workflow(subject, workflow_id)
            && self
                .workflow_filter
                .as_ref()
                .is_none_or(|f| f(subject, workflow_id))
    }

    /// `listWorkflows`: the workflows `subject` may run, sorted by id. MCP `tools/list`,
    /// the agent inventory and the A2A skills show exactly these. Narrowed per tenant by
    /// the config file's `tenants` section and by an embedder's filter.
    pub fn list_workflows(&self, subject: &Subject) -> Vec<Arc<Workflow>> {
        let registry = self.engine.registry();
        registry
            .ids()
            .filter(|id| self.may_run(subject, id))
            .filter_map(|id| registry.get(id))
            .collect()
    }

    /// The workflows every tenant may see, sorted by id: what the public card advertises
    /// as skills. The card is read without a credential, so a workflow the config file's
    /// `tenants` section hides from any tenant stays off it (a hidden name is never
    /// disclosed); the extended card lists what the caller may run.
    pub fn host_workflows(&self) -> Vec<Arc<Workflow>> {
        let registry = self.engine.registry();
        registry
            .ids()
            .filter(|id| self.visible_to_every_tenant(id))
            .filter_map(|id| registry.get(id))
            .collect()
    }

    /// Whether a failed run was failed by the host itself (a step it could not execute)
    /// rather than by the workflow's own outcome.
    pub fn failed_by_host(&self, run: &crate::store::RunRecord) -> bool {
        self.engine.failed_by_host(run)
    }

    /// `getWorkflow`: one workflow `subject` may run; any other is answered as unknown.
    pub fn get_workflow(
        &self,
        subject: &Subject,
        workflow_id: &str,
    ) -> Result<Arc<Workflow>, OpError> {
        self.engine
            .registry()
            .get(workflow_id)
            .filter(|_| self.may_run(subject, workflow_id))
            .ok_or_else(|| OpError::WorkflowNotFound {
                workflow_id: workflow_id.to_owned(),
            })
    }

    /// Narrows which workflows each caller may run (and so its agent inventory).
    pub fn with_workflow_filter(mut self, filter: WorkflowFilter) -> Self {
        self.workflow_filter = Some(filter);
        self
    }

    /// `listAgents`: every agent with at least one workflow the caller may run, each
    /// listing only those workflows; sorted by agentId.
    pub fn list_agents(&self, subject: &Subject) -> Vec<AgentEntry> {
        self.agents
            .registry
            .iter()
            .filter(|def| self.may_see_agent(subject, &def.agent_id))
            .filter_map(|def| self.agents.entry(def, |w| self.may_run(subject, w)))
            .collect()
    }

    /// The workflow a message naming no skill starts through `entry`'s card: the agent's
    /// `defaultSkill` (else its first workflow) when the caller may run it, else the first
    /// workflow of the entry (the caller's own narrowing of the agent).
    pub fn agent_default_skill(&self, entry: &AgentEntry) -> Option<String> {
        let configured = self
            .agents
            .registry
            .get(entry.agent_id.as_str())
            .map(|def| crate::agents::default_skill(def).to_owned());
        let listed = |w: &str| entry.workflows.iter().any(|x| x.as_str() == w);
        configured
            .filter(|w| listed(w))
            .or_else(|| entry.workflows.first().map(|w| w.to_string()))
    }

    /// `getAgent`: an agent outside the caller's inventory is answered as an unknown one.
    pub fn get_agent(&self, subject: &Subject, agent_id: &str) -> Result<AgentEntry, OpError> {
        self.list_agents(subject)
            .into_iter()
            .find(|e| e.agent_id.as_str() == agent_id)
            .ok_or(OpError::AgentNotFound)
    }

    /// Whether `agent_id` is in the caller's inventory and routes `workflow_id`: what a
    /// createRun naming an `agentId` must satisfy.
    pub fn agent_runs(&self, subject: &Subject, agent_id: &str, workflow_id: &str) -> bool {
        self.get_agent(subject, agent_id)
            .is_ok_and(|e| e.workflows.iter().any(|w| w.as_str() == workflow_id))
    }

    /// The inventory entry whose `a2aTenant` is `value`, searched only among the caller's
    /// own entries: a value minted for an agent outside them, and one never minted, both
    /// find nothing by the same path.
    pub fn agent_by_routing_value(&self, subject: &Subject, value: &str) -> Option<AgentEntry> {
        let mut found = None;
        // Every entry is compared, so the time taken does not say which one matched.
        for entry in self.list_agents(subject) {
            if entry
                .a2a_tenant
                .as_deref()
                .is_some_and(|r| routing::same(r, value))
            {
                found = Some(entry);
            }
        }
        found
    }
}
