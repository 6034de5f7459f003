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

#[cfg(test)]
mod tests {
    use super::*;

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
