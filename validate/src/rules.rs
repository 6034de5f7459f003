//! The rules a finding can name (the generated catalogue, `spec/v2/validation-rules.json`),
//! and where each rule's page is.

use std::path::Path;

pub use openwop_generated::validators::{RULES, RULES_DOC, RuleInfo, Severity, rule_info};

/// A PATH that could not be read or fetched.
pub const INPUT_UNREADABLE: &str = "input.unreadable";
/// A PATH whose text is not JSON.
pub const INPUT_MALFORMED: &str = "input.malformed";
/// An object that names a member twice (the document is still checked, as read).
pub const DUPLICATE_MEMBER: &str = "input.duplicate-member";
/// A card rule whose finding is about the `--discovery` document (it has no `a2a` facet),
/// reported there.
pub const DISCOVERY_HAS_A2A: &str = "agent-card.discovery-has-a2a";

/// The rule `id`.
pub fn lookup(id: &str) -> Option<&'static RuleInfo> {
    rule_info(id)
}

/// Every rule, sorted by id.
pub fn all() -> impl Iterator<Item = &'static RuleInfo> {
    RULES.iter()
}

/// Whether `id` is a finding about an input that could not be checked: such a finding
/// always makes the run exit 2, whatever its level says, since nothing was checked.
pub fn is_input(id: &str) -> bool {
    id == INPUT_UNREADABLE || id == INPUT_MALFORMED
}

/// The catalogue's severity of `id`; an id the catalogue lacks counts as an error (a
/// generator run over a corpus without a catalogue has none).
pub fn default_severity(id: &str) -> Severity {
    lookup(id).map_or(Severity::Error, |r| r.severity)
}
/// Where rule pages are: `base` joined with the rule reference page.
#[derive(Debug, Clone)]
pub struct Docs {
    base: String,
}

impl Docs {
    /// `base` is a URL (or directory) the repository's files are under, e.g.
    /// `https://github.com/OWNER/REPO/blob/main/`; without one, the rule page in the
    /// source tree this binary was built from (`file://`), which exists wherever
    /// `cargo install --path validate` ran.
    pub fn new(base: Option<&str>) -> Docs {
        // A space would end the link in Markdown and is not allowed in a SARIF helpUri.
        let base = match base.map(|b| b.trim().replace(' ', "%20")) {
            Some(b) if b.ends_with('/') => b,
            Some(b) => format!("{b}/"),
            None => {
                let root = Path::new(env!("CARGO_MANIFEST_DIR"))
                    .parent()
                    .unwrap_or(Path::new("/"));
                format!("file://{}/", root.display()).replace(' ', "%20")
            }
        };
        Docs { base }
    }

    /// The page of `id`: the rule reference, at the rule's anchor.
    pub fn rule(&self, id: &str) -> String {
        format!("{}{RULES_DOC}#{id}", self.base)
    }

    /// The rule reference page.
    pub fn page(&self) -> String {
        format!("{}{RULES_DOC}", self.base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_is_listed_once_and_input_rules_are_known() {
        let ids: Vec<&str> = all().map(|r| r.id).collect();
        let mut unique = ids.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(ids.len(), unique.len());
        assert!(ids.contains(&"schema") && ids.contains(&INPUT_MALFORMED));
        assert!(ids.contains(&INPUT_UNREADABLE) && ids.contains(&DUPLICATE_MEMBER));
        assert!(
            !is_input(DUPLICATE_MEMBER),
            "a duplicate member is a finding, not unreadable"
        );
        assert_eq!(default_severity("no.such-rule"), Severity::Error);
    }

    #[test]
    fn docs_links_end_at_the_rule_anchor() {
        let docs = Docs::new(Some("https://example.test/repo/blob/main"));
        assert_eq!(
            docs.rule("schema"),
            format!("https://example.test/repo/blob/main/{RULES_DOC}#schema")
        );
        assert!(Docs::new(None).rule("schema").starts_with("file:///"));
        assert!(
            Docs::new(Some("https://x.example/a b"))
                .rule("schema")
                .starts_with("https://x.example/a%20b/")
        );
    }
}
