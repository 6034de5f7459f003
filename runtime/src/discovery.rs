//! The host's discovery document at `/.well-known/openwop`: the closed v2 root, the
//! families this host serves, and a strong ETag over the exact bytes served.

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

fn family(witness: &str, facets: Value) -> Value {
    let mut v = json!({"status": "stable", "since": PROTOCOL_VERSION, "witness": witness});
    if let (Some(o), Value::Object(f)) = (v.as_object_mut(), facets) {
        o.extend(f);
    }
    v
}

/// Builds the document for a host whose list endpoint caps pages at `max_page_size` and
/// whose MCP mount runs with `mcp`.
pub fn document(max_page_size: usize, mcp: &McpConfig) -> Value {
    json!({
        "protocolVersions": [PROTOCOL_VERSION],
        "preferredVersion": PROTOCOL_VERSION,
        "protocolVersion": PROTOCOL_VERSION,
        "implementation": {"name": "openwop", "version": env!("CARGO_PKG_VERSION")},
        "eventLogSchemaVersion": crate::ops::EVENT_LOG_SCHEMA_VERSION,
        "auth": family("witnessable-unaided", json!({
            "lanes": [{
                "lane": "api-key",
                "issuers": [API_KEY_ISSUER],
                "revocation": "next-request",
                "minimumAssurance": "bearer"
            }]
        })),
        "interrupt": family("witnessable-unaided", json!({
            "kinds": ["approval", "clarification", "credential", "external-event"],
            "tokenAlgs": ["hs256"],
            // createRun's callbackUrl gets interrupt notices (ops::callback).
            "callbackDelivery": true
        })),
        "runList": family("witnessable-unaided", json!({
            "maxPageSize": max_page_size,
            "filters": ["workflowId", "status"]
        })),
        "hostEvents": family("witnessable-unaided", json!({
            "types": [{"type": "negotiation.decided", "delivery": "durable"}]
        })),
        "eventLog": family("witnessable-unaided", json!({})),
        "idempotency": family("witnessable-unaided", json!({"crossRegion": "single-region"})),
        "agents": family("witnessable-unaided", json!({
            // One inventory for every caller today; entries still list only the workflows
            // the caller may run (`Ops::may_run`).
            "manifestRuntime": {"installScope": "host"}
        })),
        "a2a": a2a_family(),
        "mcp": family("witnessable-unaided", mcp_fields(mcp)),
    })
}

/// The relaxation `--egress-allow-loopback` records: the guard admits loopback receivers.
pub fn egress_loopback_relaxation() -> Value {
    json!({
        "obligation": crate::egress::RELAXED_OBLIGATION,
        "durability": "session",
        "reason": "egress guard opened for loopback receivers (--egress-allow-loopback), for tests"
    })
}

/// Records an operator relaxation in `host.relaxations[]`, so it is never silent.
pub fn add_relaxation(document: &mut Value, relaxation: Value) {
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

/// The A2A edge's family plus `agentCards`: every inventory entry is also served as a
/// per-agent card, which the rules allow only beside `a2a-1.0` and `agents.manifestRuntime`
/// (both advertised here; the self-check holds us to it).
fn a2a_family() -> Value {
    let mut a2a = a2a_fields();
    if let Some(o) = a2a.as_object_mut() {
        o.insert("agentCards".into(), Value::Bool(true));
    }
    a2a
}

/// The `a2a` family the A2A edge serves. The card and the
/// refusal rule read the family back from the document, so the two cannot disagree.
pub fn a2a_fields() -> Value {
    json!({
        "status": "stable",
        "since": "2.0",
        "witness": "witnessable-unaided",
        "versions": ["1.0"],
        "preferredVersion": "1.0",
        "minimumVersion": "1.0",
        "refreshedAt": "2026-11-20",
        "profiles": ["a2a-1.0"],
        "streaming": true,
        "pushNotifications": true,
        "durableTasks": true
    })
}

/// The revisions served: 2026-07-28 stateless (preferred) and the 2025-11-25 initialize
/// era as the floor.
pub const MCP_REVISIONS: [&str; 2] = ["2026-07-28", "2025-11-25"];

/// The `mcp` family the MCP mount serves with `config`. The mount and the refusal rules
/// read the family back from the document, so the two cannot disagree.
pub fn mcp_fields(config: &McpConfig) -> Value {
    let mut features = vec!["server-discover", "mrtr", "cacheable-lists"];
    if config.tasks {
        features.push("extensions");
    }
    json!({
        "revisions": MCP_REVISIONS,
        "preferredVersion": "2026-07-28",
        "minimumRevision": "2025-11-25",
        "refreshedAt": "2026-12-02",
        "profiles": ["mcp-2026-07-28"],
        "features": features,
        "serverMount": {"transports": ["streamable-http", "stdio"]},
        "mrtr": {"maxRounds": config.max_rounds.clamp(1, 16)},
    })
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

/// Findings of the generated validator on our own document; empty when it is valid.
///
/// An overdue `refreshedAt` is logged, not fatal: it says the interop advertisement needs a
/// human to re-check it against upstream, and a host that refused to start on a calendar
/// date would take a working deployment down for no wire fault. `openwop validate` still
/// reports it, so CI that checks the served document catches it.
pub fn self_check(document: &Value) -> Vec<String> {
    use crate::generated::validators;
    let mut fatal = Vec::new();
    for f in validators::validate_discovery(document, &validators::Options::default()) {
        let line = format!(
            "{} [{}]: {}",
            if f.pointer.is_empty() {
                "/"
            } else {
                &f.pointer
            },
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
