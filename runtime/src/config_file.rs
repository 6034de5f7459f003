//! The config file (`openwop serve --config`, `mcp-stdio --config`, `probe --config`,
//! `config check`): read as JSON or YAML, checked against
//! `schemas/v2/config.schema.json` and against what the host checks at start, and handed
//! out as the generated [`ConfigFile`]. `serve` and `config check` call the same
//! [`check`], so they cannot disagree about a file.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The config file: the generated type of `schemas/v2/config.schema.json` (closed).
pub use crate::generated::models::ConfigFile;

/// One thing wrong with a config file, at a JSON pointer into it (`""`: the whole file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub pointer: String,
    pub message: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = crate::definition_files::shown_pointer(&self.pointer);
        write!(f, "{at}: {}", self.message)
    }
}

fn finding(pointer: impl Into<String>, message: impl Into<String>) -> Finding {
    Finding {
        pointer: pointer.into(),
        message: message.into(),
    }
}

/// Why a file could not be read as a document at all (before any check).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read {0}")]
    Unreadable(String),
    #[error("{0}")]
    Unparsable(String),
}

/// Reads `path` as JSON (when it starts with `{`) or YAML, as `serve` does.
pub fn read_value(path: &Path) -> Result<Value, ReadError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ReadError::Unreadable(format!("{}: {e}", path.display())))?;
    let value = crate::definition_files::parse_value(&text)
        .map_err(|e| ReadError::Unparsable(format!("{}: {e}", path.display())))?;
    // An empty YAML file is no keys at all.
    Ok(if value.is_null() {
        Value::Object(Default::default())
    } else {
        value
    })
}

/// Reads and checks `path`: the file as the host uses it, or every finding (each line
/// `POINTER: message`) joined into one error.
pub fn load(path: &Path) -> Result<(ConfigFile, Value), String> {
    let value = read_value(path).map_err(|e| e.to_string())?;
    match check(&value) {
        Ok(file) => Ok((file, value)),
        Err(findings) => Err(format!(
            "{} is not a valid config file:\n{}",
            path.display(),
            findings
                .iter()
                .map(|f| format!("  {f}"))
                .collect::<Vec<_>>()
                .join("\n")
        )),
    }
}

/// No file: every key at its default.
pub fn defaults() -> ConfigFile {
    ConfigFile::default()
}

/// The checks `serve` applies to a config file at start: the schema (unknown keys, types,
/// ranges), then what the schema cannot say: api key grammar (TENANT:KEY, the key at
/// least 16 characters, a key naming one tenant), the api key file and the database URL
/// file readable, the `mcp` section (revisions this host speaks, the floor among them,
/// origins), the peers (ids, URLs, one credential source, readable secrets, no id twice),
/// the public URL, and TLS certificate and key given together.
pub fn check(value: &Value) -> Result<ConfigFile, Vec<Finding>> {
    match check_keeping_file(value) {
        (Some(file), findings) if findings.is_empty() => Ok(file),
        (_, findings) => Err(findings),
    }
}

/// What `config check` reports: [`check`]'s findings, then, when the file is well formed
/// enough to describe a host, [`check_against_host`]'s.
pub fn check_all(value: &Value) -> Vec<Finding> {
    let (file, mut findings) = check_keeping_file(value);
    if let Some(file) = file {
        findings.extend(check_against_host(&file));
    }
    findings
}

/// [`check`], keeping the file when it fits the schema (whatever else is wrong with it).
fn check_keeping_file(value: &Value) -> (Option<ConfigFile>, Vec<Finding>) {
    let schema: Vec<Finding> = crate::generated::validators::validate_config_file(value)
        .into_iter()
        .map(|f| {
            unknown_key(&f.pointer, &f.message).unwrap_or_else(|| finding(f.pointer, f.message))
        })
        .collect();
    if !schema.is_empty() {
        return (None, schema);
    }
    let file: ConfigFile = match serde_path_to_error::deserialize(value).map_err(|e| {
        let pointer: String = e
            .path()
            .iter()
            .map(|seg| match seg {
                serde_path_to_error::Segment::Seq { index } => format!("/{index}"),
                serde_path_to_error::Segment::Map { key } => format!("/{key}"),
                serde_path_to_error::Segment::Enum { variant } => format!("/{variant}"),
                serde_path_to_error::Segment::Unknown => String::new(),
            })
            .collect();
        vec![finding(pointer, e.into_inner().to_string())]
    }) {
        Ok(file) => file,
        Err(findings) => return (None, findings),
    };
    let mut out = Vec::new();
    let mut keys = crate::identity::KeyRing::default();
    for (i, spec) in file.api_keys.iter().flatten().enumerate() {
        if let Err(e) = keys.add_spec(spec) {
            out.push(finding(format!("/apiKeys/{i}"), e.to_string()));
        }
    }
    if let Some(path) = &file.api_key_file {
        match crate::secret_file::read_secret(Path::new(path)) {
            Err(e) => out.push(finding("/apiKeyFile", e)),
            Ok(text) => {
                let specs = crate::secret_file::key_specs(&text);
                if specs.is_empty() {
                    out.push(finding(
                        "/apiKeyFile",
                        format!("{path} holds no TENANT:KEY entry"),
                    ));
                }
                for spec in specs {
                    if let Err(e) = keys.add_spec(&spec) {
                        out.push(finding("/apiKeyFile", format!("{path}: {e}")));
                    }
                }
            }
        }
    }
    if let Some(path) = &file.database_url_file
        && let Err(e) = crate::secret_file::read_secret(Path::new(path))
    {
        out.push(finding("/databaseUrlFile", e));
    }
    if let Some(mcp) = &file.mcp
        && let Err((pointer, message)) = crate::settings::mcp_config_at(mcp)
    {
        out.push(finding(pointer, message));
    }
    let peers: Vec<crate::peers::PeerFileConfig> = peers_of(&file);
    for (i, peer) in peers.iter().enumerate() {
        if let Err(e) = crate::peers::Peers::from_config(
            std::slice::from_ref(peer),
            crate::egress::Egress::default(),
        ) {
            out.push(finding(format!("/peers/{i}"), e));
        }
        if peers[..i].iter().any(|p| p.id == peer.id) {
            out.push(finding(
                format!("/peers/{i}/id"),
                format!("the peer id `{}` appears twice", peer.id),
            ));
        }
    }
    if let Some(url) = &file.public_url
        && let Err(e) = crate::host::public_url(url)
    {
        out.push(finding("/publicUrl", e));
    }
    match (&file.tls_cert, &file.tls_key) {
        (Some(_), None) => out.push(finding("/tlsCert", "tlsCert and tlsKey go together")),
        (None, Some(_)) => out.push(finding("/tlsKey", "tlsCert and tlsKey go together")),
        _ => {}
    }
    (Some(file), out)
}

/// What a host built from `file` would refuse at start beyond the file itself: its
/// workflow and agent directories must load, agents route workflows that exist, every
/// peer a workflow names must be configured, every name `tenants` uses must exist, and
/// `a2a.defaultSkill` must be a workflow. The same registries and checks `Host::build`
/// uses. (Conformance fixtures are left out: they exist only in conformance mode.)
pub fn check_against_host(file: &ConfigFile) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut registry = match crate::engine::Registry::bundled() {
        Ok(r) => r,
        Err(e) => return vec![finding("", e.to_string())],
    };
    if let Some(dir) = &file.workflows
        && let Err(e) = registry.load_dir(Path::new(dir))
    {
        out.push(finding("/workflows", e.to_string()));
    }
    let mut agents = match crate::agents::AgentRegistry::bundled() {
        Ok(a) => a,
        Err(e) => return vec![finding("", e.to_string())],
    };
    if let Some(dir) = &file.agents
        && let Err(e) = agents.load_dir(Path::new(dir))
    {
        out.push(finding("/agents", e.to_string()));
    }
    if let Err(e) = agents.check_routes(|w| registry.get(w).is_some()) {
        out.push(finding("/agents", e.to_string()));
    }
    if let Ok(peers) = crate::peers::Peers::from_config(&peers_of(file), Default::default()) {
        for missing in registry.unknown_peers(&peers) {
            out.push(finding("/peers", missing));
        }
    }
    let visibility = crate::settings::visibility_of(&file.tenants);
    for (tenant, v) in &visibility {
        for (i, w) in v.workflows.iter().flatten().enumerate() {
            if registry.get(w).is_none() {
                out.push(finding(
                    format!("/tenants/{}/workflows/{i}", escape(tenant)),
                    format!("tenants.{tenant}.workflows: no workflow `{w}`"),
                ));
            }
        }
        for (i, a) in v.agents.iter().flatten().enumerate() {
            if agents.get(a).is_none() {
                out.push(finding(
                    format!("/tenants/{}/agents/{i}", escape(tenant)),
                    format!("tenants.{tenant}.agents: no agent `{a}`"),
                ));
            }
        }
    }
    let skill = file
        .a2a
        .as_ref()
        .map_or(crate::settings::DEFAULT_SKILL, |a| a.default_skill.as_str());
    if !skill.is_empty() && registry.get(skill).is_none() {
        out.push(finding(
            "/a2a/defaultSkill",
            format!("a2a.defaultSkill: no workflow `{skill}`"),
        ));
    }
    out
}

/// A schema finding about a key the schema does not have (`Additional properties are not
/// allowed ('a' was unexpected)`; the validators report one per key, at the key's own
/// pointer) in the config check's words; `None` for any other finding.
fn unknown_key(pointer: &str, message: &str) -> Option<Finding> {
    let key = message
        .strip_prefix("Additional properties are not allowed ('")?
        .strip_suffix("' was unexpected)")?;
    Some(finding(
        pointer.to_owned(),
        format!("unknown key `{key}`: the schema (generated/CONFIG.md) has no such key here"),
    ))
}

/// A JSON pointer segment for `s` (RFC 6901: `~` and `/` escaped).
fn escape(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// The file's peers as the host holds them.
pub fn peers_of(file: &ConfigFile) -> Vec<crate::peers::PeerFileConfig> {
    file.peers
        .iter()
        .flatten()
        .cloned()
        .map(crate::peers::PeerFileConfig::from)
        .collect()
}

/// A path key of the file as a path.
pub fn path(p: &Option<String>) -> Option<PathBuf> {
    p.as_deref().map(PathBuf::from)
}
