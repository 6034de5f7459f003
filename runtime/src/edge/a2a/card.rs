//! The public A2A agent card, built from the discovery `a2a` facet and the workflows the
//! host routes. Nothing here is configured twice: capabilities are the facets, interface
//! versions are the facet's versions, skills are the workflows.

use std::collections::BTreeMap;

use openwop_generated::models::{
    A2aAgentCapabilities, A2aAgentCard, A2aAgentInterface, A2aAgentSkill,
    A2aHttpAuthSecurityScheme, A2aSecurityRequirement, A2aSecurityScheme, A2aStringList,
};
use serde_json::Value;

use crate::negotiation::{Offer, OfferError, Protocol};

/// Where the JSON-RPC interface is mounted, relative to the host's base URL.
pub const JSONRPC_PATH: &str = "/a2a/jsonrpc";
/// Where the HTTP+JSON interface's routes start, relative to the host's base URL.
pub const REST_PATH: &str = "/a2a/rest";
/// The public card's well-known path.
pub const CARD_PATH: &str = "/.well-known/agent-card.json";

/// The name under which the card declares the Bearer scheme the host enforces.
pub const BEARER_SCHEME: &str = "bearer";

/// One routed workflow, offered as a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub workflow_id: String,
    pub name: String,
    pub description: String,
}

/// What the card is made of.
#[derive(Debug, Clone)]
pub struct CardInputs<'a> {
    /// The externally visible origin, e.g. `https://host.example` (no trailing slash).
    pub base_url: &'a str,
    /// The discovery document's `a2a` family.
    pub a2a_facet: &'a Value,
    pub skills: &'a [Skill],
    pub name: &'a str,
    pub description: &'a str,
    pub version: &'a str,
    /// `(organization, url)` of the operator, when configured.
    pub provider: Option<(&'a str, &'a str)>,
    /// The skill a message naming none starts.
    pub default_skill: Option<&'a str>,
}

/// The tag the default skill carries.
pub const DEFAULT_TAG: &str = "default";

/// What the default skill's `examples` say.
const DEFAULT_EXAMPLE: &str = "Any message that names no skill starts this one; set message.metadata.openwop.skill to a skill id to start another.";

/// The media types a workflow skill reads and writes.
const INPUT_MODES: [&str; 2] = ["application/json", "text/plain"];
const OUTPUT_MODES: [&str; 1] = ["application/json"];

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// Says on a card how its skills are chosen. A2A has no skill field on a message, so a
/// client that knows nothing of OpenWOP gets the default skill; one that does names
/// another in `message.metadata.openwop.skill`. The default skill (when it is on the card)
/// is tagged [`DEFAULT_TAG`] and its `examples` say so; any earlier marking is removed.
/// Returns the sentence a card's own description may carry.
pub fn mark_default_skill(card: &mut A2aAgentCard, default: Option<&str>) -> String {
    let mut listed_default = None;
    for skill in &mut card.skills {
        let is_default = default == Some(skill.id.as_str());
        skill.tags.retain(|t| t != DEFAULT_TAG);
        skill.examples.clear();
        if is_default {
            skill.tags.push(DEFAULT_TAG.to_owned());
            skill.examples.push(DEFAULT_EXAMPLE.to_owned());
            listed_default = default;
        }
    }
    match listed_default {
        Some(id) => format!(
            "A message that names no skill starts the default skill `{id}` (tagged `{DEFAULT_TAG}`); to start another, set message.metadata.openwop.skill to its id. A message with a taskId continues that task."
        ),
        None => "To start a task, set message.metadata.openwop.skill to the id of one of these skills. A message with a taskId continues that task.".to_owned(),
    }
}

/// The host card's description: the configured one, then how skills are chosen.
pub fn describe_host(card: &mut A2aAgentCard, description: &str, default: Option<&str>) {
    let rule = mark_default_skill(card, default);
    card.description = format!("{} {rule}", description.trim_end());
}

fn flag(facet: &Value, key: &str) -> bool {
    facet.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn interface(url: String, binding: &str, version: &str) -> A2aAgentInterface {
    A2aAgentInterface {
        url: Some(url),
        protocol_binding: Some(binding.to_owned()),
        protocol_version: Some(version.to_owned()),
        tenant: None,
    }
}

/// Builds the public card. Interfaces are listed preferred version first, JSONRPC before
/// HTTP+JSON within a version; no interface carries a `tenant`.
pub fn public_card(inputs: &CardInputs<'_>) -> Result<A2aAgentCard, OfferError> {
    let offer = Offer::from_facet(Protocol::A2a, inputs.a2a_facet)?;
    let base = inputs.base_url.trim_end_matches('/');
    let mut supported_interfaces = Vec::new();
    for version in offer.offered() {
        supported_interfaces.push(interface(
            format!("{base}{JSONRPC_PATH}"),
            "JSONRPC",
            version,
        ));
        supported_interfaces.push(interface(
            format!("{base}{REST_PATH}"),
            "HTTP+JSON",
            version,
        ));
    }
    let skills = inputs
        .skills
        .iter()
        .map(|s| A2aAgentSkill {
            id: s.workflow_id.clone(),
            name: s.name.clone(),
            description: s.description.clone(),
            tags: vec!["workflow".to_owned()],
            examples: Vec::new(),
            input_modes: strings(&INPUT_MODES),
            output_modes: strings(&OUTPUT_MODES),
            security_requirements: Vec::new(),
        })
        .collect();
    // Exactly what the edge enforces: a Bearer api key on every operation. It says how
    // a peer proves who it is, and nothing about what it may do.
    let bearer = A2aSecurityScheme {
        http_auth_security_scheme: Some(A2aHttpAuthSecurityScheme {
            scheme: Some("Bearer".to_owned()),
            description: Some(
                "An api key issued by this host, sent as Authorization: Bearer <key>.".to_owned(),
            ),
            bearer_format: None,
        }),
        ..A2aSecurityScheme::default()
    };
    let mut card = A2aAgentCard {
        name: inputs.name.to_owned(),
        description: inputs.description.to_owned(),
        supported_interfaces,
        provider: inputs.provider.map(|(organization, url)| {
            openwop_generated::models::A2aAgentProvider {
                organization: organization.to_owned(),
                url: url.to_owned(),
            }
        }),
        version: inputs.version.to_owned(),
        documentation_url: None,
        capabilities: A2aAgentCapabilities {
            streaming: Some(flag(inputs.a2a_facet, "streaming")),
            push_notifications: Some(flag(inputs.a2a_facet, "pushNotifications")),
            extensions: Vec::new(),
            extended_agent_card: Some(flag(inputs.a2a_facet, "agentCards")),
        },
        security_schemes: BTreeMap::from([(BEARER_SCHEME.to_owned(), bearer)]),
        security_requirements: vec![A2aSecurityRequirement {
            schemes: BTreeMap::from([(
                BEARER_SCHEME.to_owned(),
                A2aStringList { list: Vec::new() },
            )]),
        }],
        default_input_modes: strings(&INPUT_MODES),
        default_output_modes: strings(&OUTPUT_MODES),
        skills,
        signatures: Vec::new(),
        icon_url: None,
    };
    describe_host(&mut card, inputs.description, inputs.default_skill);
    Ok(card)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn facet() -> Value {
        json!({"status": "stable", "since": "2.0", "witness": "witnessable-unaided",
               "versions": ["1.0"], "preferredVersion": "1.0", "minimumVersion": "1.0", "refreshedAt": "2026-11-20",
               "profiles": ["a2a-1.0"], "streaming": true, "durableTasks": true})
    }

    fn skills() -> Vec<Skill> {
        vec![
            Skill {
                workflow_id: "echo".into(),
                name: "Echo".into(),
                description: "Echoes".into(),
            },
            Skill {
                workflow_id: "approval".into(),
                name: "Approval".into(),
                description: "Waits for approval".into(),
            },
        ]
    }

    fn card_for(facet: &Value) -> Value {
        serde_json::to_value(typed_card_for(facet)).expect("a card writes")
    }

    fn typed_card_for(facet: &Value) -> A2aAgentCard {
        let skills = skills();
        public_card(&CardInputs {
            base_url: "http://127.0.0.1:8080/",
            a2a_facet: facet,
            skills: &skills,
            name: "openwop",
            description: "OpenWOP host",
            version: "0.1.0",
            provider: None,
            default_skill: Some("approval"),
        })
        .expect("card")
    }

    #[test]
    fn interfaces_are_jsonrpc_and_http_json_at_the_facet_versions_preferred_first() {
        let mut f = facet();
        f["versions"] = json!(["1.0", "1.1"]);
        f["preferredVersion"] = json!("1.1");
        let card = card_for(&f);
        let interfaces = card["supportedInterfaces"].as_array().expect("interfaces");
        assert_eq!(
            interfaces[0],
            json!({"url": "http://127.0.0.1:8080/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.1"})
        );
        assert_eq!(interfaces[1]["protocolBinding"], json!("HTTP+JSON"));
        let mut versions: Vec<&str> = interfaces
            .iter()
            .filter_map(|i| i["protocolVersion"].as_str())
            .collect();
        versions.dedup();
        assert_eq!(versions, vec!["1.1", "1.0"]);
        assert!(
            interfaces.iter().all(|i| i.get("tenant").is_none()),
            "the public card lists no tenant"
        );
        assert!(
            interfaces
                .iter()
                .all(|i| i["protocolBinding"] != json!("GRPC"))
        );
    }

    #[test]
    fn capabilities_equal_the_facets() {
        let card = card_for(&facet());
        assert_eq!(
            card["capabilities"],
            json!({"streaming": true, "pushNotifications": false, "extendedAgentCard": false})
        );
        let mut f = facet();
        f["streaming"] = json!(false);
        f["pushNotifications"] = json!(true);
        assert_eq!(card_for(&f)["capabilities"]["streaming"], json!(false));
        assert_eq!(
            card_for(&f)["capabilities"]["pushNotifications"],
            json!(true)
        );
    }

    #[test]
    fn one_skill_per_routed_workflow_with_the_workflow_id() {
        let card = card_for(&facet());
        let ids: Vec<&str> = card["skills"]
            .as_array()
            .expect("skills")
            .iter()
            .filter_map(|s| s["id"].as_str())
            .collect();
        assert_eq!(ids, vec!["echo", "approval"]);
        assert!(
            card["skills"]
                .as_array()
                .expect("skills")
                .iter()
                .all(|s| !s["tags"].as_array().expect("tags").is_empty())
        );
    }

    #[test]
    fn the_card_says_how_skills_are_chosen_and_tags_the_default() {
        let card = card_for(&facet());
        let description = card["description"].as_str().expect("description");
        assert!(description.starts_with("OpenWOP host "), "{description}");
        assert!(
            description.contains("default skill `approval`")
                && description.contains("message.metadata.openwop.skill"),
            "{description}"
        );
        let tagged: Vec<&str> = card["skills"]
            .as_array()
            .expect("skills")
            .iter()
            .filter(|s| {
                s["tags"]
                    .as_array()
                    .is_some_and(|t| t.contains(&json!(DEFAULT_TAG)))
            })
            .filter_map(|s| s["id"].as_str())
            .collect();
        assert_eq!(tagged, ["approval"]);
        // Re-saying it for another default moves the tag; no default names the rule only.
        let mut again = typed_card_for(&facet());
        describe_host(&mut again, "Agent", Some("echo"));
        let json = serde_json::to_value(&again).unwrap();
        assert_eq!(json["skills"][0]["tags"], json!(["workflow", "default"]));
        assert_eq!(json["skills"][1]["tags"], json!(["workflow"]));
        assert!(json["skills"][1].get("examples").is_none());
        describe_host(&mut again, "Agent", None);
        assert!(
            !serde_json::to_string(&again)
                .unwrap()
                .contains("\"default\"")
        );
        assert!(
            again
                .description
                .contains("set message.metadata.openwop.skill")
        );
    }

    #[test]
    fn security_scheme_is_the_bearer_the_edge_enforces() {
        let card = card_for(&facet());
        let schemes = card["securitySchemes"].as_object().expect("schemes");
        assert_eq!(schemes.len(), 1);
        assert_eq!(
            schemes[BEARER_SCHEME]["httpAuthSecurityScheme"]["scheme"],
            json!("Bearer")
        );
        // No scope: the empty list is left out, as ProtoJSON (and a2a-sdk) write it.
        assert_eq!(
            card["securityRequirements"],
            json!([{"schemes": {"bearer": {}}}])
        );
    }

    #[test]
    fn an_inconsistent_facet_is_refused() {
        let mut f = facet();
        f["preferredVersion"] = json!("2.0");
        let skills = skills();
        let inputs = CardInputs {
            base_url: "http://h",
            a2a_facet: &f,
            skills: &skills,
            name: "n",
            description: "d",
            version: "v",
            provider: None,
            default_skill: None,
        };
        assert!(public_card(&inputs).is_err());
    }
}
