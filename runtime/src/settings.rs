//! What a host is set up with that more than one layer reads: the discovery document
//! advertises from these settings and the edges serve by them.

use std::time::Duration;

/// The MCP revisions this host can speak: 2026-07-28 stateless and the 2025-11-25
/// initialize era. A configuration may offer a subset, never more.
pub const MCP_SPOKEN: [&str; 2] = ["2026-07-28", "2025-11-25"];

/// Where the MCP mount answers: the mount serves it and the discovery document names it,
/// so it lives here, below both.
pub const MCP_PATH: &str = "/mcp";

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
/// --config`): the generated type of `schemas/v2/config.schema.json#/$defs/configMcp`.
pub use crate::generated::models::ConfigMcp as McpFileConfig;

/// The mount's settings: the defaults with the file's values, checked. An error names the
/// key (`mcp.revisions`, ...) it is about.
pub fn mcp_config(file: &McpFileConfig) -> Result<McpConfig, String> {
    mcp_config_at(file).map_err(|(_, message)| message)
}

/// As [`mcp_config`], with the JSON pointer (below the file's root) of the offending key.
pub fn mcp_config_at(file: &McpFileConfig) -> Result<McpConfig, (String, String)> {
    let at = |key: &str, message: String| (format!("/mcp/{key}"), message);
    let mut c = McpConfig {
        tasks: file.tasks,
        ..McpConfig::default()
    };
    let ms = |name: &str, v: i64, min: i64| {
        if v < min {
            Err(at(name, format!("mcp.{name} must be at least {min}")))
        } else {
            Ok(Duration::from_millis(v.unsigned_abs()))
        }
    };
    c.call_timeout = ms("callTimeoutMs", file.call_timeout_ms, 100)?;
    c.task_answer_within = Duration::from_millis(file.task_answer_within_ms);
    c.progress_every = ms("progressEveryMs", file.progress_every_ms, 100)?;
    if let Some(m) = &file.mrtr {
        let max = m.max_rounds.get();
        if !(1..=16).contains(&max) {
            return Err(at(
                "mrtr/maxRounds",
                format!("mcp.mrtr.maxRounds must be 1 to 16, not {max}"),
            ));
        }
        c.max_rounds = max as u32;
    }
    if let Some(revisions) = &file.revisions {
        if revisions.is_empty() {
            return Err(at(
                "revisions",
                "mcp.revisions must list at least one revision".into(),
            ));
        }
        if let Some((i, r)) = revisions
            .iter()
            .enumerate()
            .find(|(_, r)| !MCP_SPOKEN.contains(&r.as_str()))
        {
            return Err(at(
                &format!("revisions/{i}"),
                format!(
                    "mcp.revisions: this host does not speak {r} (it speaks {})",
                    MCP_SPOKEN.join(", ")
                ),
            ));
        }
        let mut revisions = revisions.clone();
        revisions.sort_unstable_by(|a, b| b.cmp(a));
        revisions.dedup();
        c.revisions = revisions;
    }
    if let Some(floor) = &file.minimum_revision {
        c.minimum_revision = floor.clone();
    } else if !c.revisions.contains(&c.minimum_revision) {
        // Offering only newer revisions raises the floor with them.
        c.minimum_revision = c.revisions.iter().min().cloned().unwrap_or_default();
    }
    if !c.revisions.contains(&c.minimum_revision) {
        return Err(at(
            "minimumRevision",
            format!(
                "mcp.minimumRevision {} is not one of mcp.revisions ({})",
                c.minimum_revision,
                c.revisions.join(", ")
            ),
        ));
    }
    if let Some(origins) = &file.allowed_origins {
        for (i, o) in origins.iter().enumerate() {
            if crate::edge::mcp::origin::parse(o).is_none() {
                return Err(at(
                    &format!("allowedOrigins/{i}"),
                    format!("mcp.allowedOrigins: `{o}` is not an origin (scheme://host[:port])"),
                ));
            }
        }
        c.allowed_origins = origins.clone();
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(yaml: &str) -> Result<McpConfig, String> {
        let f: McpFileConfig = yaml_serde::from_str(yaml).map_err(|e| e.to_string())?;
        mcp_config(&f)
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

/// What one tenant may see and run (the config file's `tenants.<TENANT>`, read through the
/// generated `ConfigTenant`). Unset lists leave that side open: a tenant not named in the
/// file, or one with neither list, sees every workflow and every agent, as a host without
/// the section does.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(from = "crate::generated::models::ConfigTenant")]
pub struct TenantVisibility {
    /// The workflows the tenant may see and run; every other one is answered as unknown.
    pub workflows: Option<Vec<String>>,
    /// The agents in the tenant's inventory (each still listing only workflows the
    /// tenant may run); every other one is answered as unknown, its routing value as one
    /// never minted.
    pub agents: Option<Vec<String>>,
}

impl From<crate::generated::models::ConfigTenant> for TenantVisibility {
    fn from(t: crate::generated::models::ConfigTenant) -> Self {
        TenantVisibility {
            workflows: t
                .workflows
                .map(|w| w.iter().map(ToString::to_string).collect()),
            agents: t
                .agents
                .map(|a| a.iter().map(ToString::to_string).collect()),
        }
    }
}

/// Per-tenant visibility of workflows and agents, by tenant id.
pub type Visibility = std::collections::BTreeMap<String, TenantVisibility>;

/// The config file's `tenants` section as the host holds it.
pub fn visibility_of(
    tenants: &std::collections::BTreeMap<String, crate::generated::models::ConfigTenant>,
) -> Visibility {
    tenants
        .iter()
        .map(|(t, v)| (t.clone(), v.clone().into()))
        .collect()
}

/// The config file's `a2a` section: the generated type of
/// `schemas/v2/config.schema.json#/$defs/configA2a`.
pub use crate::generated::models::ConfigA2a as A2aSettings;

/// The host card's default skill out of the box: a workflow that asks one question and
/// completes with the answer, so a plain A2A client can send, stream, subscribe and
/// continue a task with no OpenWOP metadata at all.
pub const DEFAULT_SKILL: &str = "clarify";
