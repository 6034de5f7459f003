//! Rules for a host's public A2A 1.0 agent card (a2a-1.0 §4, interop.md "Per-agent cards").
//!
//! A template like `discovery_rules.rs`, copied verbatim into `generated/src/validators/`.
//! The card alone is checked for the fields A2A 1.0 requires, for fields 1.0 removed and
//! for per-agent routing values; with the host's discovery document, the card is also
//! checked against the `a2a` facet it must agree with. Rule ids are `agent-card.*`.

use serde_json::{Map, Value};

use super::discovery_rules::{A2A_1_0_PROFILE, strings, token};
use super::{Finding, Options};

/// Top-level card fields A2A 1.0 removed, with where their meaning moved.
const REMOVED_FIELDS: &[(&str, &str)] = &[
    ("url", "give each endpoint as a `supportedInterfaces[]` entry"),
    ("preferredTransport", "list the preferred interface first in `supportedInterfaces`"),
    ("additionalInterfaces", "move the entries into `supportedInterfaces`"),
    ("protocolVersion", "set `protocolVersion` on each `supportedInterfaces[]` entry"),
    ("supportsAuthenticatedExtendedCard", "use `capabilities.extendedAgentCard`"),
    // A2A 1.0 Appendix A.2.2: the extended card flag moved into `capabilities`.
    ("supportsExtendedAgentCard", "use `capabilities.extendedAgentCard`"),
];

/// Checks a public agent card, against the host's discovery document when one is given.
pub fn check(card: &Value, discovery: Option<&Value>, _opts: &Options) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(card) = card.as_object() else {
        push(&mut out, String::new(), "agent-card.required-field", "the agent card must be a JSON object".into());
        return out;
    };
    check_required(card, &mut out);
    // A card that also offers a 0.3 interface keeps 0.3's top-level fields for 0.3 clients
    // (A2A SDKs write them on such a card; a 1.0 client ignores them, as it must ignore
    // unknown fields): only a 1.0-only card is told to drop them.
    let ifaces = interfaces(card);
    let serves_0_3 = ifaces.iter().any(|(_, iface)| {
        iface
            .get("protocolVersion")
            .and_then(Value::as_str)
            .is_some_and(|v| v == "0.3" || v.starts_with("0.3."))
    });
    // Where the card already says it the 1.0 way, the sentence says so instead of asking for
    // what is there.
    let versions_set = !ifaces.is_empty() && ifaces.iter().all(|(_, i)| i.contains_key("protocolVersion"));
    for (field, instead) in REMOVED_FIELDS.iter().filter(|_| !serves_0_3) {
        if card.contains_key(*field) {
            let instead = match *field {
                "protocolVersion" if versions_set => "each `supportedInterfaces[]` entry already names its `protocolVersion`",
                _ => instead,
            };
            push(
                &mut out,
                format!("/{}", token(field)),
                "agent-card.removed-field",
                format!("remove `{field}`, which A2A 1.0 dropped: {instead}"),
            );
        }
    }
    check_well_formed(card, &ifaces, &mut out);
    check_tenants(card, &ifaces, discovery, &mut out);
    if let Some(discovery) = discovery {
        check_against_discovery(card, &ifaces, discovery, &mut out);
    }
    out
}

/// Whether `value` has the shape of a per-agent routing value (`a2aTenant`).
fn is_routing_value(value: &str) -> bool {
    (1..=128).contains(&value.len())
        && value.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'-'))
}

/// The public card lists no `tenant`. A card whose every interface carries one and the
/// same routing value is a per-agent card (the answer to `GetExtendedAgentCard` with that
/// tenant), which only a host advertising `a2a.agentCards` serves. Anything between the
/// two is neither.
fn check_tenants(card: &Map<String, Value>, ifaces: &[(usize, &Map<String, Value>)], discovery: Option<&Value>, out: &mut Vec<Finding>) {
    // An empty `tenant` is none: proto3's default for an unset string, which SDK-built
    // cards carry (`@a2a-js/sdk` writes `"tenant": ""` on every interface), as the host's
    // own peer client reads it.
    let tenants: Vec<(usize, Option<&str>)> = ifaces
        .iter()
        .filter_map(|(i, iface)| iface.get("tenant").map(|t| (*i, t.as_str())))
        .filter(|(_, t)| *t != Some(""))
        .collect();
    let Some((_, first)) = tenants.first() else {
        return;
    };
    if tenants.len() < ifaces.len() {
        for (i, _) in &tenants {
            push(
                out,
                format!("/supportedInterfaces/{i}/tenant"),
                "agent-card.no-tenant",
                "remove `tenant`: the public card must not list a per-agent routing value (a per-agent card carries the same one on every interface)".into(),
            );
        }
        return;
    }
    for (i, tenant) in &tenants {
        let sentence = match tenant {
            Some(t) if !is_routing_value(t) => "make `tenant` 1 to 128 characters of A-Z a-z 0-9 . _ ~ -: the shape of an agent's a2aTenant",
            Some(t) if Some(*t) != *first => "give every interface of a per-agent card the same `tenant`: the one agent's a2aTenant",
            None => "make `tenant` a string: the agent's a2aTenant",
            Some(_) => continue,
        };
        push(out, format!("/supportedInterfaces/{i}/tenant"), "agent-card.per-agent-tenant", sentence.into());
    }
    let agent_cards = discovery
        .and_then(|d| d.get("a2a"))
        .map(|a2a| a2a.get("agentCards") == Some(&Value::Bool(true)));
    if agent_cards == Some(false) {
        push(
            out,
            "/supportedInterfaces/0/tenant".into(),
            "agent-card.no-tenant",
            "remove `tenant`: the discovery document does not advertise `a2a.agentCards`, so the host serves no per-agent card and its cards list no routing value".into(),
        );
    }
}

fn push(out: &mut Vec<Finding>, pointer: String, rule: &str, message: String) {
    out.push(Finding {
        pointer,
        rule: rule.to_owned(),
        message,
    });
}

fn interfaces(card: &Map<String, Value>) -> Vec<(usize, &Map<String, Value>)> {
    card.get("supportedInterfaces")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.as_object().map(|o| (i, o)))
                .collect()
        })
        .unwrap_or_default()
}

/// What a required field must hold, for the check and for the sentence.
#[derive(Clone, Copy)]
enum Shape {
    Text,
    Object,
    /// A2A 1.0 §5.7: "Arrays marked as required MUST contain at least one element".
    NonEmptyTextList,
    List,
    NonEmptyList,
}

impl Shape {
    fn holds(self, v: &Value) -> bool {
        match self {
            Shape::Text => v.as_str().is_some_and(|s| !s.trim().is_empty()),
            Shape::Object => v.is_object(),
            Shape::NonEmptyTextList => v
                .as_array()
                .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_string)),
            Shape::List => v.is_array(),
            Shape::NonEmptyList => v.as_array().is_some_and(|a| !a.is_empty()),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Shape::Text => "a non-empty string",
            Shape::Object => "an object",
            Shape::NonEmptyTextList => "a non-empty array of strings",
            Shape::List => "an array",
            Shape::NonEmptyList => "a non-empty array",
        }
    }
}

const CARD_FIELDS: &[(&str, Shape)] = &[
    ("name", Shape::Text),
    ("description", Shape::Text),
    ("version", Shape::Text),
    ("supportedInterfaces", Shape::NonEmptyList),
    ("capabilities", Shape::Object),
    ("defaultInputModes", Shape::NonEmptyTextList),
    ("defaultOutputModes", Shape::NonEmptyTextList),
    // A card may offer no skill yet, but it must say so with an empty list (A2A's own
    // canonicalisation example, §8.4.1, shows `skills: []`).
    ("skills", Shape::List),
];
const INTERFACE_FIELDS: &[(&str, Shape)] = &[
    ("url", Shape::Text),
    ("protocolBinding", Shape::Text),
    ("protocolVersion", Shape::Text),
];
const SKILL_FIELDS: &[(&str, Shape)] = &[
    ("id", Shape::Text),
    ("name", Shape::Text),
    ("description", Shape::Text),
    ("tags", Shape::NonEmptyTextList),
];

/// The fields A2A 1.0's proto marks REQUIRED inside the card's nested messages (§5.7: "MUST
/// be present and set"), by where they are.
const PROVIDER_FIELDS: &[(&str, Shape)] = &[("url", Shape::Text), ("organization", Shape::Text)];
const SIGNATURE_FIELDS: &[(&str, Shape)] = &[("protected", Shape::Text), ("signature", Shape::Text)];
/// A `SecurityScheme` is a proto `oneof`: exactly one of these members, each with its own
/// required fields.
const SCHEME_KINDS: &[(&str, &[(&str, Shape)])] = &[
    ("apiKeySecurityScheme", &[("location", Shape::Text), ("name", Shape::Text)]),
    ("httpAuthSecurityScheme", &[("scheme", Shape::Text)]),
    ("oauth2SecurityScheme", &[("flows", Shape::Object)]),
    ("openIdConnectSecurityScheme", &[("openIdConnectUrl", Shape::Text)]),
    ("mtlsSecurityScheme", &[]),
];
/// `OAuthFlows` is a `oneof` too (`implicit` and `password` are deprecated, still allowed).
const FLOW_KINDS: &[(&str, &[(&str, Shape)])] = &[
    (
        "authorizationCode",
        &[("authorizationUrl", Shape::Text), ("tokenUrl", Shape::Text), ("scopes", Shape::Object)],
    ),
    ("clientCredentials", &[("tokenUrl", Shape::Text), ("scopes", Shape::Object)]),
    (
        "deviceCode",
        &[("deviceAuthorizationUrl", Shape::Text), ("tokenUrl", Shape::Text), ("scopes", Shape::Object)],
    ),
    ("implicit", &[("authorizationUrl", Shape::Text), ("scopes", Shape::Object)]),
    ("password", &[("tokenUrl", Shape::Text), ("scopes", Shape::Object)]),
];

fn check_required(card: &Map<String, Value>, out: &mut Vec<Finding>) {
    require(card, "", CARD_FIELDS, "the agent card", out);
    for (list, fields, what) in [
        ("supportedInterfaces", INTERFACE_FIELDS, "interface"),
        ("skills", SKILL_FIELDS, "skill"),
        ("signatures", SIGNATURE_FIELDS, "signature"),
    ] {
        for (i, item) in card.get(list).and_then(Value::as_array).into_iter().flatten().enumerate() {
            let base = format!("/{list}/{i}");
            match item.as_object() {
                Some(item) => require(item, &base, fields, &format!("each {what}"), out),
                None => push(out, base, "agent-card.required-field", format!("make this {what} an object")),
            }
        }
    }
    // A member of the wrong type (`provider` a string) is the schema's finding.
    if let Some(provider) = card.get("provider").and_then(Value::as_object) {
        require(provider, "/provider", PROVIDER_FIELDS, "`provider`", out);
    }
    let schemes = card.get("securitySchemes").and_then(Value::as_object).into_iter().flatten();
    for (name, scheme) in schemes {
        let Some(scheme) = scheme.as_object() else { continue };
        let base = format!("/securitySchemes/{}", token(name));
        let Some((kind, fields, inner)) = one_of(scheme, SCHEME_KINDS, &base, "security scheme", out) else {
            continue;
        };
        let base = format!("{base}/{kind}");
        require(inner, &base, fields, &format!("`{kind}`"), out);
        if let Some(flows) = inner.get("flows").and_then(Value::as_object) {
            let base = format!("{base}/flows");
            if let Some((flow, fields, inner)) = one_of(flows, FLOW_KINDS, &base, "`flows`", out) {
                require(inner, &format!("{base}/{flow}"), fields, &format!("`{flow}`"), out);
            }
        }
    }
}

/// The rule of [`check_well_formed`] and [`check_requirement_shape`].
const WELL_FORMED: &str = "agent-card.well-formed";

/// What a client needs to use the card beyond its fields' presence: URLs it can open,
/// versions it can compare, skills it can tell apart, security it can satisfy. A member of
/// the wrong type is the schema's finding, not this rule's.
fn check_well_formed(card: &Map<String, Value>, ifaces: &[(usize, &Map<String, Value>)], out: &mut Vec<Finding>) {
    let mut urls: Vec<(String, &str)> = Vec::new();
    for &(i, iface) in ifaces {
        let binding = iface.get("protocolBinding").and_then(Value::as_str).filter(|b| !b.trim().is_empty());
        // A2A 1.0 names three bindings exactly so, and a custom one by a URI: any other
        // value (`JSON-RPC`, `http+json`) names no binding a client knows.
        let canonical = binding.and_then(canonical_binding);
        if let Some(binding) = binding
            && canonical.is_none_or(|c| c != binding)
            && !is_absolute_uri(binding)
        {
            let sentence = match canonical {
                Some(c) => format!("write `protocolBinding` as \"{c}\", A2A 1.0's exact spelling: a client compares it as it is"),
                None => format!(
                    "make `protocolBinding` \"JSONRPC\", \"HTTP+JSON\" or \"GRPC\", or a URI naming a custom binding (`{}` is none)",
                    binding.chars().take(40).collect::<String>()
                ),
            };
            push(out, format!("/supportedInterfaces/{i}/protocolBinding"), WELL_FORMED, sentence);
        }
        // Every interface's `url` is an address a client opens: the HTTP bindings' an
        // http(s) URL, a gRPC one a target (`host:443`) or a URL, a custom binding's (named
        // by a URI, or by no binding A2A knows) an absolute URI (`wss://`).
        if let Some(url) = iface.get("url").and_then(Value::as_str).filter(|u| !u.trim().is_empty()) {
            let pointer = format!("/supportedInterfaces/{i}/url");
            match canonical {
                Some("JSONRPC" | "HTTP+JSON") => urls.push((pointer, url)),
                Some(_) if is_absolute_uri(url) || is_host_port(url) => {}
                Some(_) => push(out, pointer, WELL_FORMED, "make this a gRPC target, `host:port` (such as `agent.example.com:443`), or an absolute URL: a client opens it as it is".into()),
                None if is_absolute_uri(url) => {}
                None => push(out, pointer, WELL_FORMED, "make this an absolute URL, with its scheme (such as `wss://agent.example.com/a2a`): a client opens it as it is".into()),
            }
        }
        if let Some(version) = iface.get("protocolVersion").and_then(Value::as_str).filter(|v| !v.trim().is_empty()) {
            let sentence = if !is_version(version) {
                Some(format!("make `protocolVersion` an A2A version, Major.Minor such as \"1.0\" (`{}` is none)", version.chars().take(40).collect::<String>()))
            } else if major_minor(version) != version {
                // A2A 1.0: a version is Major.Minor, and a patch number is ignored: the
                // comparisons with the discovery document read this one as Major.Minor too.
                Some(format!("`protocolVersion` is Major.Minor: write \"{}\" (A2A versions carry no patch number)", major_minor(version)))
            } else {
                None
            };
            if let Some(sentence) = sentence {
                push(out, format!("/supportedInterfaces/{i}/protocolVersion"), WELL_FORMED, sentence);
            }
        }
    }
    for key in ["documentationUrl", "iconUrl"] {
        if let Some(url) = card.get(key).and_then(Value::as_str) {
            urls.push((format!("/{key}"), url));
        }
    }
    if let Some(url) = card.get("provider").and_then(|p| p.get("url")).and_then(Value::as_str).filter(|u| !u.trim().is_empty()) {
        urls.push(("/provider/url".to_owned(), url));
    }
    for (pointer, url) in urls {
        if !is_web_url(url) {
            push(out, pointer, WELL_FORMED, "make this an absolute http or https URL (https in production): a client opens it as it is".into());
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for (i, skill) in card.get("skills").and_then(Value::as_array).into_iter().flatten().enumerate() {
        if let Some(id) = skill.get("id").and_then(Value::as_str)
            && !seen.insert(id)
        {
            push(out, format!("/skills/{i}/id"), WELL_FORMED, format!("give this skill an id of its own: an earlier skill is `{id}` too"));
        }
    }
    let declared = card.get("securitySchemes").and_then(Value::as_object);
    // The card's requirements and each skill's name schemes of the card's `securitySchemes`.
    let mut undeclared = false;
    for (base, list) in requirement_lists(card) {
        for (i, requirement) in list.and_then(Value::as_array).into_iter().flatten().enumerate() {
            let names = requirement.get("schemes").and_then(Value::as_object).into_iter().flatten();
            for (name, _) in names {
                if !declared.is_some_and(|d| d.contains_key(name)) {
                    undeclared = true;
                    push(
                        out,
                        format!("{base}/{i}/schemes/{}", token(name)),
                        WELL_FORMED,
                        format!("declare `{name}` in `securitySchemes`, or name a scheme the card declares: a client cannot satisfy a requirement it cannot look up"),
                    );
                }
            }
        }
    }
    check_schemes(declared, out);
    check_requirement_shape(card, out);
    // A2A 1.0 §3.1.11 and §13.3: GetExtendedAgentCard MUST require authentication, with one
    // of the schemes the public card declares. A card that offers the extended card and
    // declares none leaves a client no way to ask for it (and the agent none to accept it).
    // An empty `securitySchemes` declares none either; one of another type is the schema's.
    // A requirement naming a scheme the card does not declare is told to declare it, above,
    // which is this fix too: one finding.
    let extended = card.get("capabilities").and_then(|c| c.get("extendedAgentCard")) == Some(&Value::Bool(true));
    let no_scheme = match card.get("securitySchemes") {
        None => true,
        Some(Value::Object(schemes)) => schemes.is_empty(),
        Some(_) => false,
    };
    if extended && no_scheme && !undeclared {
        push(
            out,
            "/capabilities/extendedAgentCard".into(),
            WELL_FORMED,
            "declare in `securitySchemes` the scheme a client authenticates with to get the extended card (A2A 1.0 §13.3: GetExtendedAgentCard MUST require authentication with a scheme the public card declares), or set `capabilities.extendedAgentCard` to false".into(),
        );
    }
}

/// The URL members of a security scheme and of its OAuth flows, by where they are.
const SCHEME_URLS: &[&str] = &["openIdConnectUrl", "oauth2MetadataUrl"];
const FLOW_URLS: &[&str] = &["authorizationUrl", "tokenUrl", "refreshUrl", "deviceAuthorizationUrl"];

/// The declared schemes a client can use: an API key sent where A2A 1.0 says one goes
/// (`query`, `header` or `cookie`), and OAuth and OpenID Connect endpoints a client opens.
/// A missing member, or one that is no string, is `agent-card.required-field`'s or the
/// schema's finding.
fn check_schemes(declared: Option<&Map<String, Value>>, out: &mut Vec<Finding>) {
    for (name, scheme) in declared.into_iter().flatten() {
        let base = format!("/securitySchemes/{}", token(name));
        if let Some(location) = scheme.get("apiKeySecurityScheme").and_then(|k| k.get("location")).and_then(Value::as_str)
            && !location.trim().is_empty()
            && !matches!(location, "query" | "header" | "cookie")
        {
            let lower = location.trim().to_ascii_lowercase();
            let sentence = if matches!(lower.as_str(), "query" | "header" | "cookie") {
                format!("write `location` as \"{lower}\": A2A 1.0 spells the API key's place in lower case")
            } else {
                format!("make `location` \"query\", \"header\" or \"cookie\": where a client sends the API key (`{}` is none)", location.chars().take(40).collect::<String>())
            };
            push(out, format!("{base}/apiKeySecurityScheme/location"), WELL_FORMED, sentence);
        }
        let Some(scheme) = scheme.as_object() else { continue };
        for (kind, inner) in scheme {
            let Some(inner) = inner.as_object() else { continue };
            let mut urls: Vec<(String, &Value)> = SCHEME_URLS
                .iter()
                .filter_map(|key| inner.get(*key).map(|v| (format!("{base}/{}/{key}", token(kind)), v)))
                .collect();
            for (flow, fields) in inner.get("flows").and_then(Value::as_object).into_iter().flatten() {
                for key in FLOW_URLS {
                    if let Some(v) = fields.get(*key) {
                        urls.push((format!("{base}/{}/flows/{}/{key}", token(kind), token(flow)), v));
                    }
                }
            }
            for (pointer, url) in urls {
                if let Some(url) = url.as_str().filter(|u| !u.trim().is_empty())
                    && !is_web_url(url)
                {
                    push(out, pointer, WELL_FORMED, "make this an absolute http or https URL (https in production): a client sends credentials to it as it is".into());
                }
            }
        }
    }
}

/// A security requirement in A2A 0.3's shape, `{"oauth": ["read"]}`, on a 1.0 card: 1.0
/// writes `{"schemes": {"oauth": {"list": ["read"]}}}`, and a 1.0 client reads the 0.3 one as
/// a requirement naming no scheme at all (its `schemes` is empty), which anyone satisfies.
/// The card's `securityRequirements` and each skill's, each with its pointer.
fn requirement_lists(card: &Map<String, Value>) -> Vec<(String, Option<&Value>)> {
    let mut lists = vec![("/securityRequirements".to_owned(), card.get("securityRequirements"))];
    for (i, skill) in card.get("skills").and_then(Value::as_array).into_iter().flatten().enumerate() {
        lists.push((format!("/skills/{i}/securityRequirements"), skill.get("securityRequirements")));
    }
    lists
}

/// The card's requirements and each skill's, one finding per requirement naming the 1.0
/// shape of all its 0.3 members (0.3 ANDs them, as 1.0 ANDs the members of `schemes`). A
/// member whose value is a list is a 0.3 scopes list; other unknown members are left
/// alone, as readers ignore them.
fn check_requirement_shape(card: &Map<String, Value>, out: &mut Vec<Finding>) {
    for (base, list) in requirement_lists(card) {
        for (i, requirement) in list.and_then(Value::as_array).into_iter().flatten().enumerate() {
            let Some(requirement) = requirement.as_object() else { continue };
            let old: Vec<(&String, &Vec<Value>)> = requirement
                .iter()
                .filter(|(name, _)| *name != "schemes")
                .filter_map(|(name, scopes)| scopes.as_array().map(|scopes| (name, scopes)))
                .collect();
            if old.is_empty() {
                continue;
            }
            // A requirement with both shapes keeps what its `schemes` already names: the
            // sentence shows the two merged (a 0.3 member of a name `schemes` has adds its
            // scopes to that scheme's list).
            let kept = requirement.get("schemes").and_then(Value::as_object);
            let mut merged: Vec<String> = Vec::new();
            for (name, value) in kept.into_iter().flatten() {
                let extra: Vec<&Value> = old.iter().filter(|(n, _)| *n == name).flat_map(|(_, scopes)| scopes.iter()).collect();
                merged.push(format!("{}: {}", Value::String(name.clone()), scheme_scopes(value, &extra)));
            }
            for (name, scopes) in &old {
                if !kept.is_some_and(|k| k.contains_key(name.as_str())) {
                    merged.push(format!("{}: {}", Value::String((*name).clone()), scope_list(scopes.iter())));
                }
            }
            let old = merged;
            push(
                out,
                format!("{base}/{i}"),
                WELL_FORMED,
                format!(
                    "write this security requirement in A2A 1.0's shape, {{\"schemes\": {{{}}}}}: a scheme name with a list of scopes is A2A 0.3's shape, which a 1.0 client reads as a requirement naming no scheme",
                    old.join(", ")
                ),
            );
        }
    }
}

/// A 1.0 scopes object, `{"list": [...]}`, as the requirement-shape sentence writes it.
fn scope_list<'a>(scopes: impl Iterator<Item = &'a Value>) -> String {
    format!("{{\"list\": [{}]}}", scopes.map(Value::to_string).collect::<Vec<_>>().join(", "))
}

/// A scheme's value in a 1.0 requirement with `extra` scopes added to its list; a value of
/// another shape is written as it is.
fn scheme_scopes(value: &Value, extra: &[&Value]) -> String {
    match value.as_object() {
        Some(o) if o.keys().all(|k| k == "list") && o.get("list").is_none_or(Value::is_array) => {
            let mut scopes: Vec<&Value> = o.get("list").and_then(Value::as_array).into_iter().flatten().collect();
            for scope in extra {
                if !scopes.contains(scope) {
                    scopes.push(scope);
                }
            }
            scope_list(scopes.into_iter())
        }
        _ => value.to_string(),
    }
}

/// `Major.Minor`, or with a patch number (which A2A says is not sent and is ignored:
/// `agent-card.well-formed` asks for it to go, and the other rules read [`major_minor`]).
fn is_version(v: &str) -> bool {
    let parts: Vec<&str> = v.split('.').collect();
    (2..=3).contains(&parts.len()) && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// A version's `Major.Minor` (`1.0` of `1.0.1`): A2A 1.0 ignores a patch number.
fn major_minor(v: &str) -> &str {
    match v.match_indices('.').nth(1) {
        Some((second, _)) => &v[..second],
        None => v,
    }
}

/// An absolute `http`/`https` URL with a host.
fn is_web_url(url: &str) -> bool {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    let rest = if lower.starts_with("https://") {
        &url[8..]
    } else if lower.starts_with("http://") {
        &url[7..]
    } else {
        return false;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit('@').next().unwrap_or("");
    !host.is_empty() && !host.starts_with(':') && !url.chars().any(char::is_whitespace)
}

/// The binding A2A 1.0 names that `binding` spells, ignoring case and punctuation
/// (`JSON-RPC`, `http+json`, `grpc`), if any.
fn canonical_binding(binding: &str) -> Option<&'static str> {
    let letters: String = binding.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_uppercase()).collect();
    match letters.as_str() {
        "JSONRPC" => Some("JSONRPC"),
        "HTTPJSON" => Some("HTTP+JSON"),
        "GRPC" => Some("GRPC"),
        _ => None,
    }
}

/// An absolute URI (RFC 3986 §4.3): a scheme, a colon and more, with no whitespace.
fn is_absolute_uri(uri: &str) -> bool {
    let Some((scheme, rest)) = uri.split_once(':') else {
        return false;
    };
    scheme.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
        && !rest.is_empty()
        && !uri.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// A gRPC target, `host:port` (`[::1]:443` for an IPv6 address).
fn is_host_port(target: &str) -> bool {
    let Some((host, port)) = target.rsplit_once(':') else {
        return false;
    };
    !host.is_empty()
        && !host.chars().any(|c| c.is_whitespace() || c.is_control() || matches!(c, '/' | '?' | '#' | '@'))
        && !port.is_empty()
        && port.len() <= 5
        && port.bytes().all(|b| b.is_ascii_digit())
}

/// The one member of a proto `oneof` object that `record` must hold, with the fields its
/// kind requires and its object; a finding when it holds none of `kinds` (a 0.3 scheme
/// such as `{"type": "http"}` among them) or several.
fn one_of<'a, 'k>(
    record: &'a Map<String, Value>,
    kinds: &'k [(&'static str, &'k [(&'k str, Shape)])],
    base: &str,
    what: &str,
    out: &mut Vec<Finding>,
) -> Option<(&'static str, &'k [(&'k str, Shape)], &'a Map<String, Value>)> {
    let present: Vec<(&'static str, &'k [(&'k str, Shape)])> =
        kinds.iter().copied().filter(|(k, _)| record.contains_key(*k)).collect();
    let names = || kinds.iter().map(|(k, _)| format!("`{k}`")).collect::<Vec<_>>().join(", ");
    match present.as_slice() {
        [] => {
            push(out, base.to_owned(), "agent-card.required-field", format!("give this {what} one of {}: A2A 1.0 names its kind by that member", names()));
            None
        }
        [(kind, fields)] => record.get(*kind).and_then(Value::as_object).map(|inner| (*kind, *fields, inner)),
        [_, extra @ ..] => {
            for (kind, _) in extra {
                push(out, format!("{base}/{kind}"), "agent-card.required-field", format!("keep one of {}: this {what} names {} kinds", names(), present.len()));
            }
            None
        }
    }
}

fn require(
    record: &Map<String, Value>,
    base: &str,
    fields: &[(&str, Shape)],
    owner: &str,
    out: &mut Vec<Finding>,
) {
    for (field, shape) in fields {
        let pointer = format!("{base}/{field}");
        match record.get(*field) {
            None => push(
                out,
                pointer,
                "agent-card.required-field",
                format!("add `{field}` ({}): A2A 1.0 requires it on {owner}", shape.describe()),
            ),
            Some(v) if !shape.holds(v) => push(
                out,
                pointer,
                "agent-card.required-field",
                format!("make `{field}` {}", shape.describe()),
            ),
            Some(_) => {}
        }
    }
}

fn check_against_discovery(card: &Map<String, Value>, ifaces: &[(usize, &Map<String, Value>)], discovery: &Value, out: &mut Vec<Finding>) {
    let Some(a2a) = discovery.get("a2a").and_then(Value::as_object) else {
        // A finding about the discovery document, not the card: its pointer is into the
        // discovery document (its `a2a` member when there is one that is no object, else
        // the document itself), and `openwop validate` reports it there, once however many
        // cards are checked against it. The sentence names no card, so it is one finding.
        let (pointer, message) = match discovery.get("a2a") {
            Some(_) => (
                "/a2a".to_owned(),
                "make `a2a` the A2A facet object (with `versions`, `preferredVersion`, `minimumVersion` and `refreshedAt`): the host serves an agent card, so its discovery document must advertise A2A",
            ),
            None => (
                String::new(),
                "add the `a2a` facet (with `versions`, `preferredVersion`, `minimumVersion` and `refreshedAt`): the host serves an agent card, so its discovery document must advertise A2A (or stop serving the card)",
            ),
        };
        push(out, pointer, "agent-card.discovery-has-a2a", message.into());
        return;
    };
    check_versions(a2a, ifaces, out);

    if strings(a2a, "profiles").any(|(_, p)| p == A2A_1_0_PROFILE) {
        let has_jsonrpc = ifaces.iter().any(|(_, iface)| {
            iface.get("protocolBinding").and_then(Value::as_str) == Some("JSONRPC")
                && iface.get("protocolVersion").and_then(Value::as_str).map(major_minor) == Some("1.0")
        });
        if !has_jsonrpc {
            push(
                out,
                "/supportedInterfaces".into(),
                "agent-card.jsonrpc-interface",
                format!("add a `JSONRPC` interface with `protocolVersion` \"1.0\": the host claims the \"{A2A_1_0_PROFILE}\" profile"),
            );
        }
    }

    let capabilities = card.get("capabilities").and_then(Value::as_object);
    let flag = |record: Option<&Map<String, Value>>, key: &str| {
        record.and_then(|r| r.get(key)).and_then(Value::as_bool).unwrap_or(false)
    };
    for (key, rule) in [
        ("streaming", "agent-card.streaming-matches"),
        ("pushNotifications", "agent-card.push-notifications-matches"),
    ] {
        // A value that is no boolean is the schema's finding (its type), not a mismatch:
        // "set it to true" would not say what is wrong with `"yes"`.
        let mistyped = |record: Option<&Map<String, Value>>| {
            record.and_then(|r| r.get(key)).is_some_and(|v| !v.is_boolean())
        };
        if mistyped(capabilities) || mistyped(Some(a2a)) {
            continue;
        }
        let facet = flag(Some(a2a), key);
        if flag(capabilities, key) != facet {
            push(
                out,
                format!("/capabilities/{key}"),
                rule,
                format!("set `capabilities.{key}` to {facet} to match `a2a.{key}` in the discovery document (absent counts as false)"),
            );
        }
    }
    if a2a.get("agentCards") == Some(&Value::Bool(true)) && !flag(capabilities, "extendedAgentCard") {
        push(
            out,
            "/capabilities/extendedAgentCard".into(),
            "agent-card.extended-card-declared",
            "set `capabilities.extendedAgentCard` to true: the discovery document advertises `a2a.agentCards`".into(),
        );
    }
}

fn check_versions(a2a: &Map<String, Value>, ifaces: &[(usize, &Map<String, Value>)], out: &mut Vec<Finding>) {
    let offered: Vec<&str> = strings(a2a, "versions").map(|(_, v)| v).collect();
    // A `protocolVersion` that is no version is `agent-card.well-formed`'s finding.
    let listed: Vec<&str> = ifaces
        .iter()
        .filter_map(|(_, iface)| iface.get("protocolVersion").and_then(Value::as_str))
        .filter(|v| is_version(v))
        .map(major_minor)
        .collect();
    let quote = |vs: &[&str]| vs.iter().map(|v| format!("\"{v}\"")).collect::<Vec<_>>().join(", ");
    let mut missing: Vec<&str> = offered.iter().copied().filter(|v| !listed.contains(v)).collect();
    let mut extra: Vec<&str> = listed.iter().copied().filter(|v| !offered.contains(v)).collect();
    missing.dedup();
    extra.sort_unstable();
    extra.dedup();
    if !missing.is_empty() || !extra.is_empty() {
        let mut change = Vec::new();
        if !missing.is_empty() {
            change.push(format!("add interfaces for {}", quote(&missing)));
        }
        if !extra.is_empty() {
            change.push(format!("remove the interfaces for {}", quote(&extra)));
        }
        push(
            out,
            "/supportedInterfaces".into(),
            "agent-card.interface-versions",
            format!(
                "{}: the card's protocol versions must be exactly the facet's `a2a.versions` [{}]",
                change.join(" and "),
                quote(&offered)
            ),
        );
    }
    if let (Some(preferred), Some((i, first))) = (
        a2a.get("preferredVersion").and_then(Value::as_str),
        ifaces.first(),
    ) {
        let first_version = first.get("protocolVersion").and_then(Value::as_str).map(major_minor);
        if first_version.is_some_and(|v| v != preferred) {
            push(
                out,
                format!("/supportedInterfaces/{i}/protocolVersion"),
                "agent-card.preferred-interface-first",
                format!("list an interface for the preferred version \"{preferred}\" first: a client takes the first interface as the host's preference"),
            );
        }
    }
}
