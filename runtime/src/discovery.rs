//! The host's discovery document at `/.well-known/openwop`: the v2 root
//! (`models::Capabilities`), the families this host serves (their generated family
//! models), and a strong ETag over the exact bytes served.

use crate::generated::models as m;
use crate::identity::API_KEY_ISSUER;
use crate::settings::McpConfig;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The only protocol version this host serves.
pub const PROTOCOL_VERSION: &str = "2.0";

/// The document and what is served with it.
#[derive(Debug, Clone)]
pub struct Discovery {
    pub document: Value,
    pub body: bytes_body::Body,
    pub etag: String,
}

/// Serialised body (kept as shared bytes so every request reuses one allocation).
pub mod bytes_body {
    pub type Body = std::sync::Arc<[u8]>;
}

/// A model value from a literal of this module. Every literal is the host's own and the
/// tests hold the whole document to the validator, so a refusal here is a bug in this
/// file, reported by the first test that builds the document.
fn lit<T, S>(what: &str, value: S) -> T
where
    T: TryFrom<S>,
    T::Error: std::fmt::Display,
{
    T::try_from(value).unwrap_or_else(|e| panic!("discovery literal `{what}`: {e}"))
}

/// A family's common fields (`familyRecord`): stable since 2.0, witnessable unaided.
macro_rules! family {
    ($module:ident :: $ty:ident { $($field:ident : $value:expr),* $(,)? }) => {
        $module::$ty {
            status: lit("status", "stable"),
            since: lit("since", PROTOCOL_VERSION),
            until: None,
            witness: lit("witness", "witnessable-unaided"),
            $($field: $value,)*
        }
    };
}

/// The document (`models::Capabilities`) for a host whose list endpoint caps pages at
/// `max_page_size` and whose MCP mount runs with `mcp`.
pub fn capabilities(max_page_size: usize, mcp: &McpConfig) -> m::Capabilities {
    m::Capabilities {
        protocol_versions: vec![lit("protocolVersions", PROTOCOL_VERSION)],
        preferred_version: lit("preferredVersion", PROTOCOL_VERSION),
        protocol_version: Some(lit("protocolVersion", PROTOCOL_VERSION)),
        implementation: Some(m::Implementation {
            name: Some("openwop".into()),
            version: Some(env!("CARGO_PKG_VERSION").into()),
            vendor: None,
            url: None,
        }),
        engine_version: None,
        event_log_schema_version: Some(crate::ops::EVENT_LOG_SCHEMA_VERSION),
        min_client_version: None,
        extensions: Default::default(),
        // Both belong to conformance mode only (`crate::conformance::advertise`).
        conformance: None,
        fixtures: None,
        host: None,
        supported_transports: None,
        grpc: None,
        profiles: None,
        a2a: Some(m::A2aFamily {
            agent_cards: Some(true),
            ..a2a_family()
        }),
        mcp: Some(mcp_family(mcp)),
        auth: Some(family!(m::AuthFamily {
            lanes: vec![m::Lane {
                lane: lit("lane", "api-key"),
                issuers: vec![lit("issuers", API_KEY_ISSUER)],
                revocation: lit("revocation", "next-request"),
                revocation_window_seconds: None,
                minimum_assurance: lit("minimumAssurance", "bearer"),
                delegation_proofs: None,
            }],
            subject_link_key: None,
        })),
        interrupt: Some(family!(m::InterruptFamily {
            kinds: Some(
                ["approval", "clarification", "credential", "external-event"]
                    .into_iter()
                    .map(|k| lit("kinds", k))
                    .collect()
            ),
            token_algs: vec![lit("tokenAlgs", "hs256")],
            ref_kinds: None,
            // createRun's callbackUrl gets interrupt notices (ops::callback).
            callback_delivery: Some(true),
        })),
        run_list: Some(family!(m::RunListFamily {
            max_page_size: lit(
                "maxPageSize",
                u64::try_from(max_page_size.max(1)).unwrap_or(u64::MAX)
            ),
            filters: Some(vec![lit("filters", "workflowId"), lit("filters", "status")]),
        })),
        host_events: Some(family!(m::HostEventsFamily {
            types: vec![m::HostEventType {
                type_: lit("type", "negotiation.decided"),
                delivery: lit("delivery", "durable"),
            }],
        })),
        agents: Some(family!(m::AgentsFamily {
            // One inventory for every caller today; entries still list only the workflows
            // the caller may run (`Ops::may_run`).
            manifest_runtime: Some(m::ManifestRuntime {
                handoff_validation: false,
                install_scope: lit("installScope", "host"),
            }),
            profile: None,
        })),
        webhooks: None,
        idempotency: Some(family!(m::IdempotencyFamily {
            cross_region: Some(lit("crossRegion", "single-region")),
        })),
        event_log: Some(family!(m::EventLogFamily {
            cross_engine_ordering: None,
        })),
        oauth: None,
    }
}

/// [`capabilities`] as the JSON document the edges read families back from.
pub fn document(max_page_size: usize, mcp: &McpConfig) -> Value {
    to_json(&capabilities(max_page_size, mcp))
}

fn to_json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or_else(|e| panic!("a discovery model does not serialise: {e}"))
}

/// The relaxation `--egress-allow-loopback` records: the guard admits loopback receivers.
pub fn egress_loopback_relaxation() -> m::Relaxation {
    m::Relaxation {
        obligation: lit("obligation", crate::egress::RELAXED_OBLIGATION),
        durability: lit("durability", "session"),
        reason: lit(
            "reason",
            "egress guard opened for loopback receivers (--egress-allow-loopback), for tests",
        ),
    }
}

/// Writes the URLs a peer reaches the host's protocols at, from the configured public
/// base URL (never from a request): `a2a.agentCardUrl` and `mcp.serverUrls`.
pub fn set_public_urls(document: &mut Value, base_url: &str) {
    let base = base_url.trim_end_matches('/');
    if let Some(a2a) = document.get_mut("a2a").and_then(Value::as_object_mut) {
        a2a.insert(
            "agentCardUrl".into(),
            json!(format!("{base}{}", crate::edge::a2a::card::CARD_PATH)),
        );
    }
    if let Some(mcp) = document.get_mut("mcp").and_then(Value::as_object_mut) {
        mcp.insert(
            "serverUrls".into(),
            json!([format!("{base}{}", crate::settings::MCP_PATH)]),
        );
    }
}

/// Advertises `mcp.client`: workflows on this host may call MCP servers (some are
/// configured). Only then; without peers the member stays absent.
pub fn set_mcp_client(document: &mut Value) {
    if let Some(mcp) = document.get_mut("mcp").and_then(Value::as_object_mut) {
        mcp.insert("client".into(), json!(true));
    }
}

/// Records an operator relaxation in `host.relaxations[]`, so it is never silent.
pub fn add_relaxation(document: &mut Value, relaxation: m::Relaxation) {
    let relaxation = to_json(&relaxation);
    if let Some(root) = document.as_object_mut() {
        let host = root.entry("host").or_insert_with(|| json!({}));
        if let Some(items) = host
            .as_object_mut()
            .map(|h| h.entry("relaxations").or_insert_with(|| json!([])))
            .and_then(Value::as_array_mut)
        {
            items.push(relaxation);
        }
    }
}

/// The `a2a` family the A2A edge serves (without `agentCards`, which the host's document
/// adds: every inventory entry is also a per-agent card, which the rules allow only beside
/// `a2a-1.0` and `agents.manifestRuntime`, both advertised; the self-check holds us to it).
fn a2a_family() -> m::A2aFamily {
    family!(m::A2aFamily {
        versions: vec![lit("versions", "1.0")],
        preferred_version: lit("preferredVersion", "1.0"),
        minimum_version: lit("minimumVersion", "1.0"),
        // The built-in registry's check date until the refresh SLA evaluates
        // (`crate::upstream`): no date is written in the runtime.
        refreshed_at: lit("refreshedAt", built_in_checked_at("a2a").as_str()),
        refresh_window_days: lit("refreshWindowDays", 90u64),
        profiles: Some(vec![lit("profiles", "a2a-1.0")]),
        agent_card_url: None,
        streaming: Some(true),
        push_notifications: Some(true),
        durable_tasks: Some(true),
        agent_cards: None,
    })
}

/// The `a2a` family as JSON. The card and the refusal rule read the family back from the
/// document, so the two cannot disagree.
pub fn a2a_fields() -> Value {
    to_json(&a2a_family())
}

/// The built-in registry's check date for `protocol`, for a family built before any
/// evaluation (the epoch, so overdue and loud, when the corpus has none). Here, not in
/// `upstream`, because the document is built from it and the refresh SLA reads the document.
pub fn built_in_checked_at(protocol: &str) -> String {
    openwop_generated::versions::CHECKED_AT
        .iter()
        .find(|(p, _)| *p == protocol)
        .map_or_else(|| crate::clock::date_of_day(0), |(_, d)| (*d).to_owned())
}

/// The revisions served by default: 2026-07-28 stateless (preferred) and the 2025-11-25
/// initialize era as the floor (`mcp.revisions` in the config file offers a subset).
pub const MCP_REVISIONS: [&str; 2] = crate::settings::MCP_SPOKEN;

fn mcp_family(config: &McpConfig) -> m::McpFamily {
    let mut features = vec!["server-discover", "mrtr", "cacheable-lists"];
    if config.tasks {
        features.push("extensions");
    }
    family!(m::McpFamily {
        revisions: config
            .revisions
            .iter()
            .map(|r| lit("revisions", r.as_str()))
            .collect(),
        preferred_version: lit("preferredVersion", config.preferred()),
        minimum_revision: lit("minimumRevision", config.minimum_revision.as_str()),
        refreshed_at: lit("refreshedAt", built_in_checked_at("mcp").as_str()),
        refresh_window_days: lit("refreshWindowDays", 90u64),
        profiles: Some(vec![lit("profiles", "mcp-2026-07-28")]),
        features: Some(features.into_iter().map(|f| lit("features", f)).collect()),
        server_urls: None,
        server_mount: Some(m::ServerMount {
            transports: Some(vec![
                lit("transports", "streamable-http"),
                lit("transports", "stdio"),
            ]),
        }),
        mrtr: Some(m::Mrtr {
            max_rounds: lit("maxRounds", u64::from(config.max_rounds.clamp(1, 16))),
        }),
        client: None,
    })
}

/// The `mcp` family the MCP mount serves with `config`, as JSON. The mount and the refusal
/// rules read the family back from the document, so the two cannot disagree.
pub fn mcp_fields(config: &McpConfig) -> Value {
    to_json(&mcp_family(config))
}

/// Whether a document advertises a `requires` entry of the interop map (`family.field`):
/// the family is present and the field is there and not `false` (a flag that is true, or
/// a block such as `mcp.serverMount`). The one test every map row's refusal uses, on
/// every edge.
pub fn advertises(document: &Value, requirement: &str) -> bool {
    let Some((family, field)) = requirement.split_once('.') else {
        return false;
    };
    match document.get(family).and_then(|f| f.get(field)) {
        None | Some(Value::Null | Value::Bool(false)) => false,
        Some(_) => true,
    }
}

impl Discovery {
    /// Whether this host advertises a map row's `requires` entry ([`advertises`]).
    pub fn advertises(&self, requirement: &str) -> bool {
        advertises(&self.document, requirement)
    }

    pub fn new(document: Value) -> Self {
        let body: Vec<u8> = serde_json::to_vec(&document).unwrap_or_default();
        let etag = format!("\"{}\"", hex::encode(&Sha256::digest(&body)[..16]));
        Self {
            document,
            body: body.into(),
            etag,
        }
    }
}

/// The document the edges read now. The refresh SLA (`crate::upstream`) replaces it when
/// it re-evaluates the advertisement; a reader takes one snapshot per use, so one request
/// never sees two documents.
#[derive(Debug)]
pub struct Live {
    current: std::sync::RwLock<std::sync::Arc<Discovery>>,
}

impl Live {
    pub fn new(discovery: Discovery) -> Self {
        Self {
            current: std::sync::RwLock::new(std::sync::Arc::new(discovery)),
        }
    }

    /// The document as served now (its body and strong ETag with it).
    pub fn get(&self) -> std::sync::Arc<Discovery> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Serves `discovery` from now on.
    pub fn set(&self, discovery: Discovery) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = std::sync::Arc::new(discovery);
    }

    /// Whether the current document advertises a map row's `requires` entry.
    pub fn advertises(&self, requirement: &str) -> bool {
        self.get().advertises(requirement)
    }
}

/// [`self_check`] with "today" given as a day number (the refresh SLA's clock).
pub fn self_check_on(document: &Value, today: i64) -> Vec<String> {
    let date = crate::clock::date_of_day(today);
    let part = |r: std::ops::Range<usize>| date.get(r).and_then(|p| p.parse::<u32>().ok());
    let today = match (part(0..4), part(5..7), part(8..10)) {
        (Some(y), Some(m), Some(d)) => Some((y as i32, m, d)),
        _ => None,
    };
    check_with(document, &crate::generated::validators::Options { today })
}

/// Findings of the generated validator on our own document; empty when it is valid.
///
/// An overdue `refreshedAt` is logged, not fatal: it says the interop advertisement needs a
/// human to re-check it against upstream, and a host that refused to start on a calendar
/// date would take a working deployment down for no wire fault. `openwop validate` still
/// reports it, so CI that checks the served document catches it.
pub fn self_check(document: &Value) -> Vec<String> {
    check_with(document, &crate::generated::validators::Options::default())
}

fn check_with(document: &Value, options: &crate::generated::validators::Options) -> Vec<String> {
    use crate::generated::validators;
    let mut fatal = Vec::new();
    for f in validators::validate_discovery(document, options) {
        let line = format!(
            "{} [{}]: {}",
            crate::definition_files::shown_pointer(&f.pointer),
            f.rule,
            f.message
        );
        if f.rule == "discovery.refresh-overdue" {
            tracing::warn!("{line}");
        } else {
            fatal.push(line);
        }
    }
    fatal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_document_passes_the_generated_validator() {
        let doc = document(100, &Default::default());
        assert_eq!(self_check(&doc), Vec::<String>::new());
    }

    #[test]
    fn an_opened_egress_guard_is_advertised_as_a_relaxation_and_stays_valid() {
        let mut doc = document(100, &Default::default());
        add_relaxation(&mut doc, egress_loopback_relaxation());
        assert_eq!(
            doc["host"]["relaxations"][0]["obligation"],
            "webhooks.egress-guard"
        );
        assert_eq!(self_check(&doc), Vec::<String>::new());
    }

    #[test]
    fn a_requirement_is_advertised_by_a_true_flag_or_a_present_block() {
        let doc = json!({
            "a2a": {"streaming": true, "pushNotifications": false},
            "mcp": {"serverMount": {"transports": ["stdio"]}},
        });
        assert!(advertises(&doc, "a2a.streaming"));
        assert!(advertises(&doc, "mcp.serverMount"));
        assert!(!advertises(&doc, "a2a.pushNotifications"));
        assert!(!advertises(&doc, "a2a.agentCards"));
        assert!(!advertises(&doc, "webhooks.retryPolicy"));
        assert!(!advertises(&doc, "streaming"));
    }

    #[test]
    fn a_broken_document_is_reported() {
        let mut doc = document(100, &Default::default());
        doc.as_object_mut().unwrap().remove("preferredVersion");
        doc["supportedTransports"] = json!(["grpc"]);
        assert!(!self_check(&doc).is_empty());
    }

    #[test]
    fn etag_is_strong_and_tracks_the_body() {
        let a = Discovery::new(document(100, &Default::default()));
        let b = Discovery::new(document(50, &Default::default()));
        assert!(a.etag.starts_with('"') && !a.etag.starts_with("W/"));
        assert_ne!(a.etag, b.etag);
    }
}
