//! `openwop-validate`: checks OpenWOP v2 discovery documents and A2A agent cards against
//! the spec corpus, for people and for CI. The library loads documents, runs the generated
//! validators and renders the findings; [`cli`] is the clap command, shared by the
//! standalone `openwop-validate` binary and the host's `openwop validate`.
//!
//! This package compiles none of the host (no server stack, no stores) so a CI job can
//! install it in a fraction of the host's build time; `.ci/run` checks its dependency tree.

pub mod baseline;
pub mod cli;
pub mod config;
pub mod explain;
pub mod format;
pub mod junit;
pub mod load;
pub mod position;
pub mod report;
pub mod rules;
pub mod sarif;

use openwop_generated::validators::{self, Finding, Options};
use serde_json::Value;

/// What kind of document a PATH holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// A discovery document (`/.well-known/openwop`).
    Discovery,
    /// A host's public A2A agent card (`/.well-known/agent-card.json`).
    AgentCard,
}

impl Kind {
    /// The well-known path fetched when a PATH is a bare origin.
    pub fn well_known_path(self) -> &'static str {
        match self {
            Kind::Discovery => "/.well-known/openwop",
            Kind::AgentCard => "/.well-known/agent-card.json",
        }
    }
}

impl Kind {
    /// The kind a PATH names by its well-known file name, for a run without `--kind`: a
    /// file named `agent-card.json` or a URL whose path ends in `/agent-card.json` (as
    /// [`Kind::AgentCard`]'s well-known path does) is an agent card; anything else (among
    /// it `/.well-known/openwop`) a discovery document.
    pub fn of_path(path: &str) -> Kind {
        let path = if crate::load::is_url(path) {
            // The URL's path, without its query or fragment.
            let rest = path.split_once("://").map_or(path, |(_, rest)| rest);
            let rest = rest.split(['?', '#']).next().unwrap_or_default();
            rest.split_once('/').map_or("", |(_, p)| p)
        } else {
            path
        };
        let card = Kind::AgentCard.well_known_path();
        let name = card.rsplit('/').next().unwrap_or(card);
        if path.rsplit('/').next() == Some(name) {
            Kind::AgentCard
        } else {
            Kind::Discovery
        }
    }

    /// The kind a document's shape clearly is, when it is one: an object with
    /// `protocolVersions` is a discovery document; one without it that has
    /// `supportedInterfaces` or `skills` (an A2A card's members; a discovery document has
    /// neither) is an agent card. `None` for anything less clear.
    pub fn of_shape(doc: &Value) -> Option<Kind> {
        let members = doc.as_object()?;
        if members.contains_key("protocolVersions") {
            return Some(Kind::Discovery);
        }
        if members.contains_key("supportedInterfaces") || members.contains_key("skills") {
            return Some(Kind::AgentCard);
        }
        None
    }

    /// How a note names this kind.
    pub fn described(self) -> &'static str {
        match self {
            Kind::Discovery => "an OpenWOP discovery document",
            Kind::AgentCard => "an A2A agent card",
        }
    }

    /// The `--kind` value of this kind.
    pub fn flag(self) -> &'static str {
        match self {
            Kind::Discovery => "discovery",
            Kind::AgentCard => "agent-card",
        }
    }
}

/// Validates one document. `discovery` is only used for agent cards.
pub fn validate(
    kind: Kind,
    doc: &Value,
    discovery: Option<&Value>,
    opts: &Options,
) -> Vec<Finding> {
    match kind {
        Kind::Discovery => validators::validate_discovery(doc, opts),
        Kind::AgentCard => validators::validate_agent_card(doc, discovery, opts),
    }
}

/// Parses `YYYY-MM-DD` into the `(year, month, day)` the validators take as "today".
pub fn parse_today(raw: &str) -> Result<(i32, u32, u32), String> {
    let bad = || format!("\"{raw}\" is not a date; write it as YYYY-MM-DD, e.g. 2026-12-01");
    let mut parts = raw.splitn(3, '-');
    let (Some(y), Some(m), Some(d)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(y, 4) || !digits(m, 2) || !digits(d, 2) {
        return Err(bad());
    }
    let year: i32 = y.parse().map_err(|_| bad())?;
    let month: u32 = m.parse().map_err(|_| bad())?;
    let day: u32 = d.parse().map_err(|_| bad())?;
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let last = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return Err(bad()),
    };
    if !(1..=last).contains(&day) {
        return Err(bad());
    }
    Ok((year, month, day))
}

#[cfg(test)]
mod tests {
    use super::{Kind, parse_today};

    #[test]
    fn a_well_known_name_or_a_clear_shape_names_the_kind() {
        for (path, kind) in [
            ("public/.well-known/agent-card.json", Kind::AgentCard),
            ("agent-card.json", Kind::AgentCard),
            (
                "https://h.example/.well-known/agent-card.json",
                Kind::AgentCard,
            ),
            (
                "https://h.example/.well-known/agent-card.json?x=1",
                Kind::AgentCard,
            ),
            ("public/.well-known/openwop", Kind::Discovery),
            ("https://h.example", Kind::Discovery),
            ("https://agent-card.json", Kind::Discovery),
            ("my-agent-card.json", Kind::Discovery),
            ("-", Kind::Discovery),
        ] {
            assert_eq!(Kind::of_path(path), kind, "{path}");
        }
        let shape = |text: &str| Kind::of_shape(&serde_json::from_str(text).expect("JSON"));
        assert_eq!(
            shape(r#"{"protocolVersions": ["2.0"]}"#),
            Some(Kind::Discovery)
        );
        assert_eq!(
            shape(r#"{"name": "x", "skills": []}"#),
            Some(Kind::AgentCard)
        );
        assert_eq!(
            shape(r#"{"supportedInterfaces": []}"#),
            Some(Kind::AgentCard)
        );
        assert_eq!(shape(r#"{"name": "x"}"#), None);
        assert_eq!(shape("[]"), None);
    }

    #[test]
    fn today_accepts_real_dates_only() {
        assert_eq!(parse_today("2026-12-01"), Ok((2026, 12, 1)));
        assert_eq!(parse_today("2028-02-29"), Ok((2028, 2, 29)));
        for bad in [
            "2026-02-29",
            "2026-13-01",
            "2026-1-01",
            "2026-12-01x",
            "+202-01-01",
            "today",
            "",
        ] {
            assert!(parse_today(bad).is_err(), "{bad} was accepted");
        }
    }
}
