//! `GetExtendedAgentCard`: without a tenant, the host's own card to an authenticated
//! caller; with `tenant` set to an agent's routing value R, that agent's card.
//!
//! Non-disclosure (interop.md "Per-agent cards"): the caller is authenticated before this
//! runs, and R is looked up only among the caller's own inventory entries
//! (`Ops::agent_by_routing_value`), so an R minted for an agent the caller cannot see and
//! an R the host never minted take the same path to the same constant refusal.

use axum::http::{HeaderMap, header};
use openwop_generated::errors::A2aError;
use serde_json::Value;

use super::card::{self, CardInputs};
use super::errors::Fault;
use super::service::A2aState;
use crate::agents::AgentEntry;
use crate::identity::Subject;

/// The one refusal for an R that names nothing in the caller's inventory. It echoes
/// nothing of the request, so the bytes cannot differ between the two cases.
fn unknown_routing_value() -> Fault {
    Fault::a2a(
        A2aError::ExtendedAgentCardNotConfigured,
        "no extended agent card is configured for this tenant value",
    )
}

/// The origin the card's interface URLs start with: the configured public base URL, or
/// the request's `Host`.
pub(crate) fn base_url(state: &A2aState, headers: &HeaderMap) -> String {
    state.config.public_base_url.clone().unwrap_or_else(|| {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("localhost");
        format!("http://{host}")
    })
}

/// The host's public card, as served at the well-known path.
pub(crate) fn host_card(state: &A2aState, headers: &HeaderMap) -> Result<Value, Fault> {
    let base = base_url(state, headers);
    let facet = state.facet();
    card::public_card(&CardInputs {
        base_url: &base,
        a2a_facet: &facet,
        skills: &state.config.skills,
        name: &state.config.name,
        description: &state.config.description,
        version: env!("CARGO_PKG_VERSION"),
        provider: None,
    })
    .map_err(|e| {
        tracing::error!(error = %e, "the agent card cannot be built");
        Fault::internal()
    })
}

/// The agent's card: the host card's interfaces (each carrying R), capabilities and
/// security, with the entry's persona, pack version and description (else label), and
/// one skill per workflow the entry lists. Only entry fields the card defines are read;
/// `degraded` and `memoryDegraded` stay on the entry.
pub fn agent_card(host_card: &Value, entry: &AgentEntry, routing_value: &str) -> Value {
    let mut card = host_card.clone();
    card["name"] = Value::String(entry.persona.to_string());
    card["version"] = Value::String(entry.pack_version.to_string());
    card["description"] = Value::String(
        entry
            .description
            .as_ref()
            .map_or_else(|| entry.label.to_string(), |d| d.to_string()),
    );
    if let Some(interfaces) = card
        .get_mut("supportedInterfaces")
        .and_then(Value::as_array_mut)
    {
        for iface in interfaces.iter_mut().filter_map(Value::as_object_mut) {
            iface.insert("tenant".into(), Value::String(routing_value.to_owned()));
        }
    }
    // Skills are taken from the host card's list (same shape), narrowed to the entry's
    // workflows in the entry's order; a workflow the host card does not list is left out.
    let by_id = |id: &str| {
        host_card
            .get("skills")
            .and_then(Value::as_array)
            .and_then(|skills| {
                skills
                    .iter()
                    .find(|s| s.get("id").and_then(Value::as_str) == Some(id))
            })
            .cloned()
    };
    let skills: Vec<Value> = entry
        .workflows
        .iter()
        .filter_map(|w| by_id(w.as_str()))
        .collect();
    card["skills"] = Value::Array(skills);
    card
}

/// The operation, for both bindings; `params` carries `tenant` as JSON-RPC sends it or
/// as the HTTP+JSON binding lifted it from the `/{tenant}` path prefix.
pub async fn get(
    state: &A2aState,
    subject: &Subject,
    headers: &HeaderMap,
    params: &Value,
) -> Result<Value, Fault> {
    let tenant = match params.get("tenant") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => return Err(Fault::invalid_params("tenant", "must be a string")),
    };
    let host = host_card(state, headers)?;
    let Some(r) = tenant else {
        return Ok(host);
    };
    let entry = state
        .app
        .ops
        .agent_by_routing_value(subject, r)
        .ok_or_else(unknown_routing_value)?;
    Ok(agent_card(&host, &entry, r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn host() -> Value {
        json!({
            "name": "openwop", "description": "host", "version": "0.1.0",
            "supportedInterfaces": [
                {"url": "http://h/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                {"url": "http://h/a2a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
            ],
            "capabilities": {"streaming": true, "pushNotifications": false, "extendedAgentCard": true},
            "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
            "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
            "defaultInputModes": ["application/json"], "defaultOutputModes": ["application/json"],
            "skills": [
                {"id": "echo", "name": "Echo", "description": "e", "tags": ["workflow"]},
                {"id": "slow", "name": "Slow", "description": "s", "tags": ["workflow"]},
                {"id": "fail", "name": "Fail", "description": "f", "tags": ["workflow"]}
            ]
        })
    }

    fn entry() -> AgentEntry {
        serde_json::from_value(json!({
            "agentId": "a", "persona": "Persona", "label": "Label", "packVersion": "3.1.4",
            "workflows": ["fail", "echo"], "a2aTenant": "ag-R",
            "degraded": ["memory"], "memoryDegraded": true,
        }))
        .expect("an inventory entry")
    }

    #[test]
    fn the_agent_card_follows_the_entry_and_the_host_card() {
        let host = host();
        let card = agent_card(&host, &entry(), "ag-R");
        assert_eq!(card["name"], "Persona");
        assert_eq!(card["version"], "3.1.4");
        assert_eq!(card["description"], "Label", "no description: the label");
        assert_eq!(card["capabilities"], host["capabilities"]);
        assert_eq!(card["securitySchemes"], host["securitySchemes"]);
        let ids: Vec<&str> = card["skills"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["id"].as_str())
            .collect();
        assert_eq!(ids, ["fail", "echo"]);
        for (i, iface) in card["supportedInterfaces"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            assert_eq!(iface["tenant"], "ag-R");
            assert_eq!(iface["url"], host["supportedInterfaces"][i]["url"]);
        }
        let text = card.to_string();
        assert!(
            !text.contains("degraded") && !text.contains("memory"),
            "{text}"
        );
        let mut described = entry();
        described.description = Some("Longer".try_into().expect("a description"));
        assert_eq!(
            agent_card(&host, &described, "ag-R")["description"],
            "Longer"
        );
    }
}
