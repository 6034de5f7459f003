//! `GetExtendedAgentCard`: without a tenant, the host's own card to an authenticated
//! caller; with `tenant` set to an agent's routing value R, that agent's card.
//!
//! Non-disclosure (interop.md "Per-agent cards"): the caller is authenticated before this
//! runs, and R is looked up only among the caller's own inventory entries
//! (`Ops::agent_by_routing_value`), so an R minted for an agent the caller cannot see and
//! an R the host never minted take the same path to the same constant refusal.

use axum::http::HeaderMap;
use openwop_generated::errors::A2aError;
use openwop_generated::models::{A2aAgentCard, A2aGetExtendedAgentCardRequest};

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

/// The host's public card, as served at the well-known path.
pub(crate) fn host_card(state: &A2aState) -> Result<A2aAgentCard, Fault> {
    let base = state.base_url();
    let facet = state.facet();
    card::public_card(&CardInputs {
        base_url: &base,
        a2a_facet: &facet,
        skills: &state.config.skills,
        name: &state.config.name,
        description: &state.config.description,
        version: env!("CARGO_PKG_VERSION"),
        provider: None,
        default_skill: state.config.default_skill.as_deref(),
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
pub fn agent_card(
    host_card: &A2aAgentCard,
    entry: &AgentEntry,
    routing_value: &str,
    default_skill: Option<&str>,
) -> A2aAgentCard {
    let mut card = host_card.clone();
    card.name = entry.persona.to_string();
    card.version = entry.pack_version.to_string();
    for iface in &mut card.supported_interfaces {
        iface.tenant = Some(routing_value.to_owned());
    }
    // Skills are taken from the host card's list (same shape), narrowed to the entry's
    // workflows in the entry's order; a workflow the host card does not list is left out.
    card.skills = entry
        .workflows
        .iter()
        .filter_map(|w| host_card.skills.iter().find(|s| s.id == w.as_str()))
        .cloned()
        .collect();
    // The description stays the entry's (interop.md); the default skill's tag and
    // examples say how a skill is chosen.
    card::mark_default_skill(&mut card, default_skill);
    card.description = entry
        .description
        .as_ref()
        .map_or_else(|| entry.label.to_string(), |d| d.to_string());
    card
}

/// The words of this request's one refusal.
pub(super) const WORDS: super::read::Words = &[("tenant", "tenant", "must be a string")];

/// The operation, for both bindings; the request carries `tenant` as JSON-RPC sends it or
/// as the HTTP+JSON binding lifted it from the `/{tenant}` path prefix.
pub async fn get(
    state: &A2aState,
    subject: &Subject,
    _headers: &HeaderMap,
    request: A2aGetExtendedAgentCardRequest,
) -> Result<A2aAgentCard, Fault> {
    let tenant = request.tenant.as_deref().filter(|s| !s.is_empty());
    let host = host_card(state)?;
    let Some(r) = tenant else {
        // The caller's own view of the host card: the skills it may run.
        let mut card = host;
        card.skills
            .retain(|s| state.app.ops.may_run(subject, &s.id));
        let default = state
            .config
            .default_skill
            .as_deref()
            .filter(|d| state.app.ops.may_run(subject, d));
        card::describe_host(&mut card, &state.config.description, default);
        return super::signing::signed(state, card);
    };
    let entry = state
        .app
        .ops
        .agent_by_routing_value(subject, r)
        .ok_or_else(unknown_routing_value)?;
    let default = state.app.ops.agent_default_skill(&entry);
    super::signing::signed(state, agent_card(&host, &entry, r, default.as_deref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn host() -> A2aAgentCard {
        serde_json::from_value(json!({
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
        }))
        .expect("a card")
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
        let card = serde_json::to_value(agent_card(&host, &entry(), "ag-R", Some("echo"))).unwrap();
        let host = serde_json::to_value(&host).unwrap();
        assert_eq!(card["name"], "Persona");
        assert_eq!(card["version"], "3.1.4");
        assert_eq!(card["description"], "Label", "no description: the label");
        assert_eq!(card["skills"][1]["tags"], json!(["workflow", "default"]));
        assert!(card["skills"][0].get("examples").is_none());
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
        let host: A2aAgentCard = serde_json::from_value(host).unwrap();
        assert_eq!(
            agent_card(&host, &described, "ag-R", None).description,
            "Longer"
        );
    }
}
