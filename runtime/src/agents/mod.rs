//! Agents: named bundles of workflows (persona, label, description, pack version) that the
//! host lists in each caller's inventory (`GET /agents`) and, with `a2a.agentCards`,
//! publishes as per-agent A2A cards reached through a minted routing value.
//!
//! Definitions load like workflows: a bundled set plus `--agents DIR`, where a file
//! replaces a bundled agent with the same id. Every workflow an agent routes must exist,
//! checked once at start so a typo is a start error, never a silently empty agent.

pub mod routing;

use std::collections::BTreeMap;
use std::path::Path;

pub use routing::RoutingKey;

const BUNDLED: &[(&str, &str)] = &[
    (
        "workflow-runner.yaml",
        include_str!("../../agents/workflow-runner.yaml"),
    ),
    (
        "approvals-desk.yaml",
        include_str!("../../agents/approvals-desk.yaml"),
    ),
];

/// An agent definition file (JSON or YAML): the generated type of
/// `schemas/v2/agent-definition.schema.json` (closed: an unknown key is refused). Its
/// fields shared with the inventory entry are that entry's schema, referenced.
pub use crate::generated::models::AgentDefinition;

/// The workflow a message naming no skill starts through this agent's card: its
/// `defaultSkill`, else the first of its workflows.
pub fn default_skill(def: &AgentDefinition) -> &str {
    def.default_skill
        .as_ref()
        .or(def.workflows.first())
        .map_or("", |w| w.as_str())
}

/// One inventory entry as the wire carries it: the generated `models::Agent`
/// (`schemas/v2/agent.schema.json`). Agents of this host have no optional capability that
/// can fail on its own and no memory, so `degraded` and `memoryDegraded` stay unset.
pub use crate::generated::models::Agent as AgentEntry;

/// Why agent definitions could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("cannot read agents from {path}: {message}")]
    Io { path: String, message: String },
    #[error("agent definition {source_name}: {message}")]
    Invalid {
        source_name: String,
        message: String,
    },
    #[error("agent `{agent_id}` routes workflow `{workflow_id}`, which this host does not have")]
    UnknownWorkflow {
        agent_id: String,
        workflow_id: String,
    },
}

fn invalid(source_name: &str, message: impl Into<String>) -> AgentError {
    AgentError::Invalid {
        source_name: source_name.to_owned(),
        message: message.into(),
    }
}

/// Parses a JSON or YAML definition: the schema (every finding with its JSON pointer),
/// then what a schema cannot say (no workflow twice, `defaultSkill` among `workflows`,
/// no blank text).
pub fn parse_definition(source_name: &str, text: &str) -> Result<AgentDefinition, AgentError> {
    let value = crate::definition_files::parse_value(text).map_err(|e| invalid(source_name, e))?;
    let findings = crate::generated::validators::validate_agent_definition(&value);
    if !findings.is_empty() {
        let lines: Vec<String> = findings
            .iter()
            .map(|f| {
                let at = crate::definition_files::shown_pointer(&f.pointer);
                format!("{at}: {}", f.message)
            })
            .collect();
        return Err(invalid(source_name, lines.join("; ")));
    }
    let def: AgentDefinition =
        serde_json::from_value(value).map_err(|e| invalid(source_name, e.to_string()))?;
    for (field, value) in [
        ("persona", def.persona.as_str()),
        ("label", def.label.as_str()),
        ("packVersion", def.pack_version.as_str()),
    ] {
        if value.trim().is_empty() {
            return Err(invalid(source_name, format!("`{field}` must not be empty")));
        }
    }
    if def
        .description
        .as_deref()
        .is_some_and(|d| d.trim().is_empty())
    {
        return Err(invalid(
            source_name,
            "`description` must not be empty when given",
        ));
    }
    for (i, id) in def.workflows.iter().enumerate() {
        if def.workflows[..i].contains(id) {
            return Err(invalid(
                source_name,
                format!("workflow `{id}` is listed twice"),
            ));
        }
    }
    if let Some(skill) = &def.default_skill
        && !def.workflows.contains(skill)
    {
        return Err(invalid(
            source_name,
            format!("`defaultSkill` `{skill}` is not one of the agent's `workflows`"),
        ));
    }
    Ok(def)
}

/// The agents a host knows, by id.
#[derive(Debug, Clone, Default)]
pub struct AgentRegistry {
    agents: BTreeMap<String, AgentDefinition>,
}

impl AgentRegistry {
    /// The bundled agents (they route the bundled workflows).
    pub fn bundled() -> Result<Self, AgentError> {
        let mut reg = Self::default();
        for (name, text) in BUNDLED {
            reg.insert(parse_definition(name, text)?);
        }
        Ok(reg)
    }

    pub fn insert(&mut self, def: AgentDefinition) {
        self.agents.insert(def.agent_id.to_string(), def);
    }

    /// Adds every `*.json`, `*.yaml` and `*.yml` file of `dir`; an id already present is
    /// replaced, so a directory can override a bundled agent.
    pub fn load_dir(&mut self, dir: &Path) -> Result<(), AgentError> {
        let files = crate::definition_files::read(dir).map_err(|u| AgentError::Io {
            path: u.path,
            message: u.message,
        })?;
        for (path, text) in files {
            self.insert(parse_definition(&path, &text)?);
        }
        Ok(())
    }

    /// Fails on the first agent routing a workflow `exists` does not know.
    pub fn check_routes(&self, exists: impl Fn(&str) -> bool) -> Result<(), AgentError> {
        for def in self.agents.values() {
            if let Some(missing) = def.workflows.iter().find(|w| !exists(w)) {
                return Err(AgentError::UnknownWorkflow {
                    agent_id: def.agent_id.to_string(),
                    workflow_id: missing.to_string(),
                });
            }
        }
        Ok(())
    }

    /// One agent by id.
    pub fn get(&self, agent_id: &str) -> Option<&AgentDefinition> {
        self.agents.get(agent_id)
    }

    /// Every agent, sorted by id.
    pub fn iter(&self) -> impl Iterator<Item = &AgentDefinition> {
        self.agents.values()
    }
}

/// The agents plus the key their routing values are minted with.
pub struct Agents {
    pub registry: AgentRegistry,
    pub routing: RoutingKey,
}

impl Agents {
    /// No agents at all (a host built without an agents directory still has the bundled
    /// ones; this is for tests of other layers).
    pub fn empty() -> Self {
        Self {
            registry: AgentRegistry::default(),
            routing: RoutingKey::ephemeral(),
        }
    }

    /// The entry of `def` as a caller sees it, given the workflows that caller may run;
    /// `None` when it may run none of them (the agent is then not in its inventory).
    pub fn entry(
        &self,
        def: &AgentDefinition,
        may_run: impl Fn(&str) -> bool,
    ) -> Option<AgentEntry> {
        let workflows: Vec<String> = def
            .workflows
            .iter()
            .filter(|w| may_run(w))
            .map(ToString::to_string)
            .collect();
        if workflows.is_empty() {
            return None;
        }
        // `parse_definition` held every field to the agent schema's grammar.
        let entry = (|| -> Result<AgentEntry, String> {
            use crate::wire::wire;
            Ok(AgentEntry {
                agent_id: wire("agentId", def.agent_id.as_str())?,
                persona: wire("persona", def.persona.as_str())?,
                label: wire("label", def.label.as_str())?,
                description: def
                    .description
                    .as_deref()
                    .map(|d| wire("description", d.as_str()))
                    .transpose()?,
                pack_version: wire("packVersion", def.pack_version.as_str())?,
                workflows: workflows
                    .iter()
                    .map(|w| wire("workflows", w.as_str()))
                    .collect::<Result<_, _>>()?,
                a2a_tenant: Some(wire("a2aTenant", self.routing.mint(&def.agent_id))?),
                degraded: None,
                memory_degraded: None,
            })
        })();
        entry
            .map_err(|e| tracing::error!(agent_id = %def.agent_id, error = %e, "an agent does not fit the inventory entry model"))
            .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_agents_parse_and_route_bundled_workflows() {
        let agents = AgentRegistry::bundled().unwrap();
        let workflows = crate::engine::Registry::bundled().unwrap();
        agents.check_routes(|w| workflows.get(w).is_some()).unwrap();
        let ids: Vec<&str> = agents.iter().map(|a| a.agent_id.as_str()).collect();
        assert_eq!(ids, ["approvals-desk", "workflow-runner"]);
    }

    #[test]
    fn an_unknown_workflow_names_agent_and_workflow() {
        let mut agents = AgentRegistry::default();
        agents.insert(
            parse_definition(
                "x.yaml",
                "agentId: a\npersona: P\nlabel: L\npackVersion: '1'\nworkflows: [echo, nope]\n",
            )
            .unwrap(),
        );
        let err = agents
            .check_routes(|w| w == "echo")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`a`") && err.contains("`nope`"), "{err}");
    }

    #[test]
    fn bad_definitions_are_refused() {
        for bad in [
            "agentId: 'a b'\npersona: P\nlabel: L\npackVersion: '1'\nworkflows: [echo]\n",
            "agentId: a\npersona: ''\nlabel: L\npackVersion: '1'\nworkflows: [echo]\n",
            "agentId: a\npersona: P\nlabel: L\npackVersion: '1'\nworkflows: []\n",
            "agentId: a\npersona: P\nlabel: L\npackVersion: '1'\nworkflows: [echo, echo]\n",
            "agentId: a\npersona: P\nlabel: L\npackVersion: '1'\nworkflows: [echo]\nextra: 1\n",
            "{\"agentId\": \"a\"}",
        ] {
            assert!(parse_definition("bad", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn entries_list_only_runnable_workflows() {
        let agents = Agents::empty();
        let def = parse_definition(
            "x",
            "agentId: a\npersona: P\nlabel: L\npackVersion: '1'\nworkflows: [echo, slow]\n",
        )
        .unwrap();
        let entry = agents.entry(&def, |w| w == "slow").unwrap();
        assert_eq!(entry.workflows.len(), 1);
        assert_eq!(entry.workflows[0].as_str(), "slow");
        assert!(agents.entry(&def, |_| false).is_none());
    }
}
