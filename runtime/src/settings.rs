//! What a host is set up with that more than one layer reads: the discovery document
//! advertises from these settings and the edges serve by them.

use std::time::Duration;

/// How the mount is set up.
#[derive(Debug, Clone)]
pub struct McpConfig {
    /// Serve the tasks extension (and advertise it in server/discover).
    pub tasks: bool,
    /// How long a call without tasks waits for its run to finish or ask for input.
    pub call_timeout: Duration,
    /// How long a call with tasks waits before answering CreateTaskResult.
    pub task_answer_within: Duration,
    /// `mcp.mrtr.maxRounds` advertised (and enforced) when discovery carries no `mcp` family.
    pub max_rounds: u32,
}

impl Default for McpConfig {
    fn default() -> McpConfig {
        McpConfig {
            tasks: true,
            call_timeout: Duration::from_secs(30),
            task_answer_within: Duration::from_millis(200),
            max_rounds: 4,
        }
    }
}

/// What one tenant may see and run (the config file's `tenants.<TENANT>`). Unset lists
/// leave that side open: a tenant not named in the file, or one with neither list, sees
/// every workflow and every agent, as a host without the section does.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TenantVisibility {
    /// The workflows the tenant may see and run; every other one is answered as unknown.
    #[serde(default)]
    pub workflows: Option<Vec<String>>,
    /// The agents in the tenant's inventory (each still listing only workflows the
    /// tenant may run); every other one is answered as unknown, its routing value as one
    /// never minted.
    #[serde(default)]
    pub agents: Option<Vec<String>>,
}

/// Per-tenant visibility of workflows and agents, by tenant id.
pub type Visibility = std::collections::BTreeMap<String, TenantVisibility>;

/// The config file's `a2a` section.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct A2aSettings {
    /// The skill (workflow id) a message naming none starts through the host card; `""`
    /// turns the default off (a message must then name its skill, unless the caller may
    /// run exactly one). Unset: [`DEFAULT_SKILL`].
    #[serde(default)]
    pub default_skill: Option<String>,
}

/// The host card's default skill out of the box: a workflow that asks one question and
/// completes with the answer, so a plain A2A client can send, stream, subscribe and
/// continue a task with no OpenWOP metadata at all.
pub const DEFAULT_SKILL: &str = "clarify";
