//! Per-tenant visibility: which workflows and agents each tenant may see and run, as the
//! config file's `tenants` section says (`crate::settings::TenantVisibility`). Read only
//! through [`Ops::may_run`] and [`Ops::may_see_agent`], so every operation that lists,
//! reads, starts or routes to a workflow or an agent narrows alike.

use super::Ops;
use crate::identity::Subject;
use crate::settings::Visibility;

impl Ops {
    /// The same operations, narrowing each tenant to what `visibility` names for it.
    pub fn with_visibility(self, visibility: Visibility) -> Self {
        self.replace_visibility(visibility);
        self
    }

    /// Narrows each tenant to what `visibility` names from now on. Check it with
    /// [`Ops::unknown_visibility_names`] first. (A reload swaps it with the keys and
    /// peers, `crate::reload`.)
    pub fn replace_visibility(&self, visibility: Visibility) {
        let visibility = std::sync::Arc::new(visibility);
        self.visibility.swap(|s| s.visibility = visibility);
    }

    /// The same operations with their visibility kept in `live` (the host's one
    /// reloadable snapshot) from now on.
    pub fn in_live(mut self, live: &crate::reload::live::Live) -> Self {
        let visibility = self.visibility();
        live.swap(|s| s.visibility = visibility);
        self.visibility = live.clone();
        self
    }

    /// Every workflow and agent `visibility` names that this host does not have.
    pub fn unknown_visibility_names(&self, visibility: &Visibility) -> Vec<String> {
        unknown_names(
            visibility,
            |w| self.engine.registry().get(w).is_some(),
            |a| self.agents.registry.get(a).is_some(),
        )
    }

    /// The visibility in force now: one snapshot per question, so a reload landing
    /// midway cannot answer half from each.
    fn visibility(&self) -> std::sync::Arc<Visibility> {
        self.visibility.current().visibility.clone()
    }

    /// Whether the tenant's configuration lets it see `workflow_id` (part of `may_run`).
    pub(super) fn tenant_sees_workflow(&self, subject: &Subject, workflow_id: &str) -> bool {
        self.visibility()
            .get(subject.tenant.as_str())
            .and_then(|v| v.workflows.as_ref())
            .is_none_or(|ids| ids.iter().any(|w| w == workflow_id))
    }

    /// Whether no tenant's configuration hides `workflow_id` (what a public, unauthenticated
    /// listing may name).
    pub(super) fn visible_to_every_tenant(&self, workflow_id: &str) -> bool {
        self.visibility().values().all(|v| {
            v.workflows
                .as_ref()
                .is_none_or(|ids| ids.iter().any(|w| w == workflow_id))
        })
    }

    /// Whether `agent_id` may be in the caller's inventory at all (it is listed only when
    /// it also routes a workflow the caller may run).
    pub fn may_see_agent(&self, subject: &Subject, agent_id: &str) -> bool {
        self.visibility()
            .get(subject.tenant.as_str())
            .and_then(|v| v.agents.as_ref())
            .is_none_or(|ids| ids.iter().any(|a| a == agent_id))
    }
}

/// Every workflow and agent a visibility section names that the host does not have: a
/// typo would otherwise hide something silently.
pub fn unknown_names(
    visibility: &Visibility,
    has_workflow: impl Fn(&str) -> bool,
    has_agent: impl Fn(&str) -> bool,
) -> Vec<String> {
    let mut out = Vec::new();
    for (tenant, v) in visibility {
        for w in v.workflows.iter().flatten().filter(|w| !has_workflow(w)) {
            out.push(format!("tenants.{tenant}.workflows: no workflow `{w}`"));
        }
        for a in v.agents.iter().flatten().filter(|a| !has_agent(a)) {
            out.push(format!("tenants.{tenant}.agents: no agent `{a}`"));
        }
    }
    out
}
