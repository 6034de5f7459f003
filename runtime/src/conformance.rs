//! Conformance mode (`openwop serve --conformance`, config `conformance: true`,
//! `OPENWOP_CONFORMANCE`): what a certification suite needs from a host beside the
//! production wire, and nothing a stock host offers.
//!
//! It seeds the fixture workflows (our own definitions with our own node kinds, embedded
//! in the binary), advertises them in discovery's root `fixtures[]` with
//! `conformance.seamsProfile`, narrows the host card's skills to the approval fixture,
//! and opens the egress guard for loopback (the suite's peers listen there). Every one of
//! those is said in discovery's `host.relaxations`, so a host in this mode cannot pass
//! for a production one.

use crate::generated::models as m;
use serde_json::{Value, json};

/// `conformance.seamsProfile`: the seam endpoints (under [`SEAMS_PREFIX`]) this host
/// serves in conformance mode.
pub const SEAMS_PROFILE: &str = "openwop-conformance-seams-v2";

/// Where the seams are mounted.
pub const SEAMS_PREFIX: &str = "/conformance/seams";

/// The one skill the host card lists in conformance mode; a plain message starts it.
pub const APPROVAL_SKILL: &str = "conformance-approval";

/// The obligation conformance mode relaxes (`host.relaxations[].obligation`).
pub const RELAXED_OBLIGATION: &str = "conformance.test-mode";

/// The fixture workflows, by file name (the file name is the workflow id). Each is an
/// ordinary definition: REST starts it, MCP lists it as a tool of the same name, A2A
/// reaches it as a skill.
pub const FIXTURES: &[(&str, &str)] = &[
    (
        "conformance-noop.yaml",
        include_str!("../workflows/conformance/conformance-noop.yaml"),
    ),
    (
        "conformance-failure.yaml",
        include_str!("../workflows/conformance/conformance-failure.yaml"),
    ),
    (
        "conformance-delay.yaml",
        include_str!("../workflows/conformance/conformance-delay.yaml"),
    ),
    (
        "conformance-cancellable.yaml",
        include_str!("../workflows/conformance/conformance-cancellable.yaml"),
    ),
    (
        "conformance-approval.yaml",
        include_str!("../workflows/conformance/conformance-approval.yaml"),
    ),
    (
        "conformance-approval-approvers.yaml",
        include_str!("../workflows/conformance/conformance-approval-approvers.yaml"),
    ),
    (
        "conformance-clarification.yaml",
        include_str!("../workflows/conformance/conformance-clarification.yaml"),
    ),
    (
        "conformance-clarification-nested.yaml",
        include_str!("../workflows/conformance/conformance-clarification-nested.yaml"),
    ),
    (
        "conformance-clarification-sensitive.yaml",
        include_str!("../workflows/conformance/conformance-clarification-sensitive.yaml"),
    ),
    (
        "conformance-artifact-emit.yaml",
        include_str!("../workflows/conformance/conformance-artifact-emit.yaml"),
    ),
];

/// `conformance-credential`, offered only on a host whose public URL is https (its
/// `connectUrl` must be an https URL on the host's own origin); `{{publicUrl}}` in its
/// text is the host's public URL.
pub const CREDENTIAL_FIXTURE: (&str, &str) = (
    "conformance-credential.yaml",
    include_str!("../workflows/conformance/conformance-credential.yaml"),
);

/// `conformance-mcp-client`, offered only beside `mcp.client` (an MCP peer is
/// configured; the suite's server is the peer `conformance`).
pub const MCP_CLIENT_FIXTURE: (&str, &str) = (
    "conformance-mcp-client.yaml",
    include_str!("../workflows/conformance/conformance-mcp-client.yaml"),
);

/// The fixtures a host with `public_url` offers, as `(file name, text)`: [`FIXTURES`],
/// plus [`CREDENTIAL_FIXTURE`] when the public URL is https and [`MCP_CLIENT_FIXTURE`]
/// when it is an MCP client (`mcp_client`).
pub fn fixture_files(public_url: Option<&str>, mcp_client: bool) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = FIXTURES
        .iter()
        .map(|(n, t)| ((*n).to_owned(), (*t).to_owned()))
        .collect();
    if let Some(base) = public_url.filter(|u| u.starts_with("https://")) {
        let (name, text) = CREDENTIAL_FIXTURE;
        files.push((
            name.to_owned(),
            text.replace("{{publicUrl}}", base.trim_end_matches('/')),
        ));
    }
    if mcp_client {
        let (name, text) = MCP_CLIENT_FIXTURE;
        files.push((name.to_owned(), text.to_owned()));
    }
    files
}

/// The workflow ids of `files` (the file name is the id).
pub fn ids_of(files: &[(String, String)]) -> Vec<String> {
    files
        .iter()
        .map(|(n, _)| n.trim_end_matches(".yaml").to_owned())
        .collect()
}

/// The carrier workflow of the invoke seams: each exchange is recorded on a run of it
/// (`runId` in the seam's answer). Seeded with the fixtures, not listed among them.
pub const SEAM_CARRIER: (&str, &str) = (
    "conformance-seam-exchange.yaml",
    include_str!("../workflows/conformance/conformance-seam-exchange.yaml"),
);

/// The carrier's workflow id.
pub const SEAM_CARRIER_ID: &str = "conformance-seam-exchange";

/// The ids of [`FIXTURES`] (offered on every host in conformance mode), in order.
pub fn fixture_ids() -> Vec<&'static str> {
    FIXTURES
        .iter()
        .map(|(file, _)| file.trim_end_matches(".yaml"))
        .collect()
}

/// The relaxation conformance mode records: fixtures, seams and loopback egress.
pub fn relaxation() -> m::Relaxation {
    m::Relaxation {
        obligation: RELAXED_OBLIGATION
            .try_into()
            .unwrap_or_else(|e| panic!("conformance obligation literal: {e}")),
        durability: m::RelaxationDurability::Session,
        reason: "conformance mode (--conformance): fixture workflows, test-only seams under /conformance/seams/ and loopback egress are served, for certification only"
            .try_into()
            .unwrap_or_else(|e| panic!("conformance reason literal: {e}")),
    }
}

/// The egress relaxation conformance mode makes: the suite's A2A agents and MCP servers
/// listen on loopback, over plain http.
pub fn loopback_relaxation() -> m::Relaxation {
    m::Relaxation {
        reason: "egress guard opened for loopback peers by conformance mode (--conformance), for certification only"
            .try_into()
            .unwrap_or_else(|e| panic!("conformance reason literal: {e}")),
        ..crate::discovery::egress_loopback_relaxation()
    }
}

/// Writes conformance mode's advertisement into a discovery document: the root
/// `fixtures[]` (`fixtures`, the ids seeded), `conformance.seamsProfile` and the
/// relaxation; with the credential fixture, an `oauth` family listing its `synthetic`
/// provider (upstream offers that fixture only beside one).
pub fn advertise(document: &mut Value, fixtures: &[String]) {
    if let Some(root) = document.as_object_mut() {
        root.insert("fixtures".into(), json!(fixtures));
        root.insert("conformance".into(), json!({"seamsProfile": SEAMS_PROFILE}));
        if fixtures.iter().any(|f| f == "conformance-credential") {
            root.insert(
                "oauth".into(),
                json!({
                    "status": "stable",
                    "since": crate::discovery::PROTOCOL_VERSION,
                    "witness": "witnessable-unaided",
                    "providers": [{"id": "synthetic", "scopesSupported": ["openwop.read"]}],
                    "credentialInterrupt": true,
                }),
            );
        }
    }
    crate::discovery::add_relaxation(document, relaxation());
}

/// What the seams need from the host's configuration.
#[derive(Debug, Clone, Default)]
pub struct Seams {
    /// The host's public URL (`--public-url`); unset: the origin a request names.
    pub public_url: Option<String>,
}

/// The OAuth provider conformance mode offers (the credential fixture asks for it).
pub const SYNTHETIC_PROVIDER: &str = "synthetic";

/// The scopes the synthetic provider supports (discovery's `oauth.providers`).
pub const SYNTHETIC_SCOPES: &[&str] = &["openwop.read"];

/// Where the credential fixture's `connectUrl` points, on the host's origin.
pub const CONNECT_PATH: &str = "/conformance/connect/synthetic";

/// An authorization server's metadata, as far as starting an authorization needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderMetadata {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
}

/// The synthetic provider's metadata: an issuer on the host's own origin.
pub fn synthetic_metadata(origin: &str) -> ProviderMetadata {
    let issuer = format!(
        "{}/conformance/oauth/synthetic",
        origin.trim_end_matches('/')
    );
    ProviderMetadata {
        authorization_endpoint: format!("{issuer}/authorize"),
        token_endpoint: format!("{issuer}/token"),
        issuer,
    }
}

/// `POST /conformance/seams/sample/oauth/authorize-start`, read: a provider with a named
/// connection, or a provider with its authorization server's metadata.
#[derive(Debug, Clone, Default)]
pub struct AuthorizeStart {
    pub provider: String,
    pub connection: Option<String>,
    pub auth_url: Option<String>,
    pub token_url: Option<String>,
    pub issuer: Option<String>,
    /// `true` or `"S256"` (absent: S256); anything else is refused.
    pub pkce: Option<Value>,
    pub scopes: Option<Vec<String>>,
}

/// Why an authorization could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthorizeError {
    /// The request itself is wrong (`validation_error`).
    #[error("{0}")]
    Invalid(String),
    /// The metadata does not match the registered provider, or cannot be used safely
    /// (`connection_auth_metadata_mismatch`).
    #[error("{0}")]
    Mismatch(String),
}

/// A URL an authorization may use: https, or http on a loopback address (conformance
/// mode's suite runs its authorization server there).
fn usable_url(what: &str, raw: &str) -> Result<reqwest::Url, AuthorizeError> {
    let url = reqwest::Url::parse(raw)
        .map_err(|e| AuthorizeError::Invalid(format!("`{what}` is not a URL: {e}")))?;
    let host = url.host_str().unwrap_or_default();
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|a| a.is_loopback());
    match url.scheme() {
        "https" => Ok(url),
        "http" if loopback => Ok(url),
        _ => Err(AuthorizeError::Mismatch(format!(
            "`{what}` must be an https URL (http only on loopback)"
        ))),
    }
}

/// Starts an authorization code flow with PKCE S256 (RFC 7636) for `req`, redirecting
/// back to `origin`: the authorization URL a user is sent to. The `state` is 256 random
/// bits. Nothing is kept: this host does not serve the callback that would redeem the code
/// (the seam shows the start of the flow only).
pub fn authorization_url(origin: &str, req: &AuthorizeStart) -> Result<String, AuthorizeError> {
    if req.provider.is_empty() {
        return Err(AuthorizeError::Invalid("`provider` is required".into()));
    }
    let synthetic = req.provider == SYNTHETIC_PROVIDER;
    let given = [&req.auth_url, &req.token_url, &req.issuer];
    let metadata = match (&req.connection, given.iter().all(|g| g.is_some())) {
        (Some(_), false) if given.iter().all(|g| g.is_none()) => {
            if !synthetic {
                return Err(AuthorizeError::Invalid(format!(
                    "provider `{}` is not offered here (oauth.providers lists `{SYNTHETIC_PROVIDER}`)",
                    req.provider
                )));
            }
            synthetic_metadata(origin)
        }
        (None, true) => {
            let (Some(auth), Some(token), Some(issuer)) =
                (&req.auth_url, &req.token_url, &req.issuer)
            else {
                unreachable!("all three checked present")
            };
            usable_url("authUrl", auth)?;
            usable_url("tokenUrl", token)?;
            let issuer_url = usable_url("issuer", issuer)?;
            if issuer_url.query().is_some() || issuer_url.fragment().is_some() {
                return Err(AuthorizeError::Mismatch(
                    "`issuer` must have no query or fragment (RFC 8414)".into(),
                ));
            }
            let given = ProviderMetadata {
                issuer: issuer.clone(),
                authorization_endpoint: auth.clone(),
                token_endpoint: token.clone(),
            };
            if synthetic && given != synthetic_metadata(origin) {
                return Err(AuthorizeError::Mismatch(format!(
                    "the metadata given does not match the registered provider `{SYNTHETIC_PROVIDER}`"
                )));
            }
            given
        }
        _ => {
            return Err(AuthorizeError::Invalid(
                "give `connection`, or all of `authUrl`, `tokenUrl` and `issuer`".into(),
            ));
        }
    };
    match &req.pkce {
        None | Some(Value::Bool(true)) => {}
        Some(Value::String(m)) if m == "S256" => {}
        Some(other) => {
            return Err(AuthorizeError::Mismatch(format!(
                "PKCE with S256 is required; the provider offers {other}"
            )));
        }
    }
    let scopes: Vec<String> = match &req.scopes {
        Some(s) => s.clone(),
        None if synthetic => SYNTHETIC_SCOPES.iter().map(|s| (*s).to_owned()).collect(),
        None => Vec::new(),
    };
    if synthetic
        && let Some(bad) = scopes
            .iter()
            .find(|s| !SYNTHETIC_SCOPES.contains(&s.as_str()))
    {
        return Err(AuthorizeError::Invalid(format!(
            "scope `{bad}` is not one provider `{SYNTHETIC_PROVIDER}` supports"
        )));
    }
    let state = random_token();
    let verifier = random_token();
    let challenge = {
        use base64::Engine as _;
        use sha2::Digest as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(sha2::Sha256::digest(verifier.as_bytes()))
    };
    let mut url = usable_url("authUrl", &metadata.authorization_endpoint)?;
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("response_type", "code");
        q.append_pair("client_id", "openwop");
        q.append_pair(
            "redirect_uri",
            &format!(
                "{}/conformance/oauth/callback",
                origin.trim_end_matches('/')
            ),
        );
        if !scopes.is_empty() {
            q.append_pair("scope", &scopes.join(" "));
        }
        q.append_pair("state", &state);
        q.append_pair("code_challenge", &challenge);
        q.append_pair("code_challenge_method", "S256");
    }
    Ok(url.to_string())
}

/// 256 random bits, base64url without padding.
fn random_token() -> String {
    use base64::Engine as _;
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random source is unavailable");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorize_start_builds_a_pkce_url_and_refuses_mismatched_metadata() {
        let origin = "https://wop.example.test";
        let start = AuthorizeStart {
            provider: "synthetic".into(),
            connection: Some("default".into()),
            ..Default::default()
        };
        let url = reqwest::Url::parse(&authorization_url(origin, &start).unwrap()).unwrap();
        assert_eq!(
            url.path(),
            "/conformance/oauth/synthetic/authorize",
            "{url}"
        );
        let q: std::collections::HashMap<_, _> = url.query_pairs().into_owned().collect();
        assert_eq!(q["code_challenge_method"], "S256");
        assert_eq!(q["scope"], "openwop.read");
        assert_eq!(q["response_type"], "code");
        assert!(q["state"].len() >= 43, "256 bits of state");
        let mismatch = AuthorizeStart {
            provider: "synthetic".into(),
            auth_url: Some("https://elsewhere.test/authorize".into()),
            token_url: Some("https://elsewhere.test/token".into()),
            issuer: Some("https://elsewhere.test".into()),
            ..Default::default()
        };
        assert!(matches!(
            authorization_url(origin, &mismatch),
            Err(AuthorizeError::Mismatch(_))
        ));
        let no_pkce = AuthorizeStart {
            provider: "other".into(),
            auth_url: Some("http://127.0.0.1:9/authorize".into()),
            token_url: Some("http://127.0.0.1:9/token".into()),
            issuer: Some("http://127.0.0.1:9".into()),
            pkce: Some(Value::Bool(false)),
            ..Default::default()
        };
        assert!(matches!(
            authorization_url(origin, &no_pkce),
            Err(AuthorizeError::Mismatch(_))
        ));
        let plain = AuthorizeStart {
            pkce: None,
            ..no_pkce
        };
        assert!(
            authorization_url(origin, &plain)
                .unwrap()
                .starts_with("http://127.0.0.1:9/authorize?")
        );
    }

    #[test]
    fn every_fixture_parses_and_its_file_names_its_id() {
        for (file, text) in fixture_files(Some("https://wop.example.com"), true) {
            let (file, text) = (file.as_str(), text.as_str());
            let def = crate::engine::definition::parse(file, text)
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!(format!("{}.yaml", *def.id), file);
        }
    }

    #[test]
    fn the_advertised_document_stays_valid() {
        let mut doc = crate::discovery::document(100, &Default::default());
        let files = fixture_files(Some("https://wop.example.com"), true);
        advertise(&mut doc, &ids_of(&files));
        assert_eq!(doc["oauth"]["providers"][0]["id"], "synthetic");
        assert_eq!(crate::discovery::self_check(&doc), Vec::<String>::new());
        assert_eq!(doc["conformance"]["seamsProfile"], SEAMS_PROFILE);
        assert_eq!(doc["fixtures"][0], "conformance-noop");
        assert_eq!(
            doc["host"]["relaxations"][0]["obligation"],
            RELAXED_OBLIGATION
        );
    }
}
