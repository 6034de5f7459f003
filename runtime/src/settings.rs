//! What a host is set up with that more than one layer reads: the discovery document
//! advertises from these settings and the edges serve by them.

use std::time::Duration;

use serde::Deserialize;

/// The MCP revisions this host can speak: 2026-07-28 stateless and the 2025-11-25
/// initialize era. A configuration may offer a subset, never more.
pub const MCP_SPOKEN: [&str; 2] = ["2026-07-28", "2025-11-25"];

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
    /// While a call waits with a `progressToken`, how long it stays silent at most: a
    /// `notifications/progress` is sent at least this often.
    pub progress_every: Duration,
    /// `mcp.revisions`: the revisions offered, each one of [`MCP_SPOKEN`]; the newest is
    /// `preferredVersion`.
    pub revisions: Vec<String>,
    /// `mcp.minimumRevision`: the floor; nothing is negotiated below it.
    pub minimum_revision: String,
    /// Browser origins (`scheme://host[:port]`) allowed to call the mount besides loopback
    /// pages. The `Host` header is never trusted for this.
    pub allowed_origins: Vec<String>,
}

impl Default for McpConfig {
    fn default() -> McpConfig {
        McpConfig {
            tasks: true,
            call_timeout: Duration::from_secs(30),
            task_answer_within: Duration::from_millis(200),
            max_rounds: 4,
            progress_every: Duration::from_secs(5),
            revisions: MCP_SPOKEN.iter().map(|r| (*r).to_owned()).collect(),
            minimum_revision: "2025-11-25".to_owned(),
            allowed_origins: Vec::new(),
        }
    }
}

impl McpConfig {
    /// `preferredVersion`: the newest revision offered (revisions are ISO dates).
    pub fn preferred(&self) -> &str {
        self.revisions
            .iter()
            .max()
            .map_or(MCP_SPOKEN[0], String::as_str)
    }
}

/// The `mcp` block of a config file (`openwop serve --config`, `openwop mcp-stdio
/// --config`). Every field is optional; what is left out keeps its default.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpFileConfig {
    /// Serve the tasks extension.
    pub tasks: Option<bool>,
    /// Milliseconds a call without tasks waits for its run.
    pub call_timeout_ms: Option<u64>,
    /// Milliseconds a call with tasks waits before answering CreateTaskResult.
    pub task_answer_within_ms: Option<u64>,
    /// Milliseconds between progress notifications while nothing happens.
    pub progress_every_ms: Option<u64>,
    /// The revisions offered (a subset of those the host speaks).
    pub revisions: Option<Vec<String>>,
    /// The floor.
    pub minimum_revision: Option<String>,
    pub mrtr: Option<MrtrFileConfig>,
    /// Browser origins allowed besides loopback pages.
    pub allowed_origins: Option<Vec<String>>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MrtrFileConfig {
    /// `mcp.mrtr.maxRounds`, 1 to 16.
    pub max_rounds: Option<u32>,
}

impl McpFileConfig {
    /// The mount's settings: the defaults with this file's values, checked.
    pub fn to_config(&self) -> Result<McpConfig, String> {
        let mut c = McpConfig::default();
        if let Some(t) = self.tasks {
            c.tasks = t;
        }
        let ms = |name: &str, v: u64, min: u64| {
            if v < min {
                Err(format!("mcp.{name} must be at least {min}"))
            } else {
                Ok(Duration::from_millis(v))
            }
        };
        if let Some(v) = self.call_timeout_ms {
            c.call_timeout = ms("callTimeoutMs", v, 100)?;
        }
        if let Some(v) = self.task_answer_within_ms {
            c.task_answer_within = ms("taskAnswerWithinMs", v, 0)?;
        }
        if let Some(v) = self.progress_every_ms {
            c.progress_every = ms("progressEveryMs", v, 100)?;
        }
        if let Some(max) = self.mrtr.as_ref().and_then(|m| m.max_rounds) {
            if !(1..=16).contains(&max) {
                return Err(format!("mcp.mrtr.maxRounds must be 1 to 16, not {max}"));
            }
            c.max_rounds = max;
        }
        if let Some(revisions) = &self.revisions {
            if revisions.is_empty() {
                return Err("mcp.revisions must list at least one revision".into());
            }
            if let Some(r) = revisions.iter().find(|r| !MCP_SPOKEN.contains(&r.as_str())) {
                return Err(format!(
                    "mcp.revisions: this host does not speak {r} (it speaks {})",
                    MCP_SPOKEN.join(", ")
                ));
            }
            let mut revisions = revisions.clone();
            revisions.sort_unstable_by(|a, b| b.cmp(a));
            revisions.dedup();
            c.revisions = revisions;
        }
        if let Some(floor) = &self.minimum_revision {
            c.minimum_revision = floor.clone();
        } else if !c.revisions.contains(&c.minimum_revision) {
            // Offering only newer revisions raises the floor with them.
            c.minimum_revision = c.revisions.iter().min().cloned().unwrap_or_default();
        }
        if !c.revisions.contains(&c.minimum_revision) {
            return Err(format!(
                "mcp.minimumRevision {} is not one of mcp.revisions ({})",
                c.minimum_revision,
                c.revisions.join(", ")
            ));
        }
        if let Some(origins) = &self.allowed_origins {
            for o in origins {
                if crate::edge::mcp::origin::parse(o).is_none() {
                    return Err(format!(
                        "mcp.allowedOrigins: `{o}` is not an origin (scheme://host[:port])"
                    ));
                }
            }
            c.allowed_origins = origins.clone();
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(yaml: &str) -> Result<McpConfig, String> {
        let f: McpFileConfig = yaml_serde::from_str(yaml).map_err(|e| e.to_string())?;
        f.to_config()
    }

    #[test]
    fn the_mcp_facet_settings_are_read_from_the_config_file() {
        let c = file(
            "tasks: false\ncallTimeoutMs: 90000\nrevisions: [2026-07-28]\nmrtr: { maxRounds: 2 }\nallowedOrigins: ['https://app.example.com']\n",
        )
        .expect("config");
        assert!(!c.tasks);
        assert_eq!(c.call_timeout, Duration::from_secs(90));
        assert_eq!(c.revisions, vec!["2026-07-28"]);
        assert_eq!(
            c.minimum_revision, "2026-07-28",
            "the floor rises with the revisions"
        );
        assert_eq!(c.preferred(), "2026-07-28");
        assert_eq!(c.max_rounds, 2);
        assert_eq!(c.allowed_origins, vec!["https://app.example.com"]);
    }

    #[test]
    fn settings_the_host_cannot_keep_are_refused_with_a_reason() {
        for (yaml, says) in [
            ("revisions: [2025-06-18]", "does not speak 2025-06-18"),
            ("revisions: []", "at least one"),
            ("minimumRevision: 2025-06-18", "not one of mcp.revisions"),
            ("mrtr: { maxRounds: 17 }", "1 to 16"),
            ("callTimeoutMs: 5", "at least 100"),
            ("allowedOrigins: ['app.example.com']", "not an origin"),
            ("bogus: 1", "unknown field"),
        ] {
            let e = file(yaml).expect_err(yaml);
            assert!(e.contains(says), "{yaml}: {e}");
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
    /// A PEM Ed25519 private key the cards are signed with; unset: the key the host
    /// minted at first start and keeps in its store.
    #[serde(default)]
    pub signing_key: Option<std::path::PathBuf>,
    /// Public JWK (or JWKS) files published beside the signing key: the previous key
    /// while a rotation settles.
    #[serde(default)]
    pub also_publish_keys: Vec<std::path::PathBuf>,
}

/// The host card's default skill out of the box: a workflow that asks one question and
/// completes with the answer, so a plain A2A client can send, stream, subscribe and
/// continue a task with no OpenWOP metadata at all.
pub const DEFAULT_SKILL: &str = "clarify";
