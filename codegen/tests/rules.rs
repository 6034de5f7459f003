//! The rule catalogue as the generated crate carries it (`validators::RULES`): each rule's
//! example triggers that rule, the catalogue agrees with the JSON Schema beside it, and the
//! reference page has an anchor per rule.

use std::path::{Path, PathBuf};

use openwop_generated::validators::{self, Options, RULES, RULES_DOC, Severity, rule_info};
use serde_json::Value;

const TODAY: Options = Options {
    today: Some((2026, 12, 1)),
};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The rule ids the example of `id` yields, run through the validator its namespace names.
fn triggered(id: &str, example: &str) -> Vec<String> {
    let findings = if let Some(path) = example.strip_prefix("tests/vectors/") {
        let path = repo().join("tests/vectors").join(path);
        if id.starts_with("input.") {
            // The CLI reports these before a validator runs: the example must fail exactly
            // the way the rule names.
            let text = std::fs::read_to_string(&path);
            let rule = match &text {
                Err(_) => "input.unreadable",
                Ok(text) if serde_json::from_str::<Value>(text).is_err() => "input.malformed",
                // It parses (the last member counting); that the CLI reports the member
                // named twice is openwop-validate's test (`a_member_named_twice_is_a_finding`).
                Ok(text)
                    if id == "input.duplicate-member"
                        && text.matches("\"preferredVersion\"").count() == 2 =>
                {
                    "input.duplicate-member"
                }
                Ok(_) => "none",
            };
            return vec![rule.to_owned()];
        }
        let doc = read(&path);
        if path.to_string_lossy().contains("/agent-card/") {
            let stem = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default();
            let own = path.with_file_name(format!("{stem}.discovery.json"));
            let shared = repo().join("tests/vectors/agent-card/discovery.json");
            let discovery = read(if own.exists() { &own } else { &shared });
            validators::validate_agent_card(&doc, Some(&discovery), &TODAY)
        } else {
            validators::validate_discovery(&doc, &TODAY)
        }
    } else {
        let inline: Value = serde_json::from_str(example).unwrap_or_else(|e| panic!("{id}: {e}"));
        assert!(
            id.starts_with("response."),
            "{id}: inline examples are for response rules"
        );
        let op = inline["operationId"].as_str().expect("operationId");
        let status = inline["status"].as_u64().expect("status") as u16;
        validators::validate_response(op, status, &inline["body"])
    };
    findings.into_iter().map(|f| f.rule).collect()
}

#[test]
fn every_example_triggers_its_rule() {
    assert!(RULES.len() >= 40, "{} rules", RULES.len());
    for rule in RULES {
        if rule.example.is_empty() {
            // Only rules that report a broken build have no example.
            assert!(
                ["schema.compile", "schema.unavailable"].contains(&rule.id),
                "{} has no example",
                rule.id
            );
            continue;
        }
        let found = triggered(rule.id, rule.example);
        assert!(
            found.iter().any(|r| r == rule.id),
            "the example of {} ({}) yields {found:?}",
            rule.id,
            rule.example
        );
    }
}

#[test]
fn every_invalid_vector_names_a_catalogued_rule() {
    for kind in ["discovery", "agent-card"] {
        let dir = repo().join("tests/vectors").join(kind).join("invalid");
        for entry in std::fs::read_dir(&dir).expect("vectors") {
            let name = entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned();
            let rule = name
                .split("--")
                .next()
                .unwrap_or_default()
                .trim_end_matches(".json");
            let rule = rule.trim_end_matches(".discovery");
            assert!(
                rule_info(rule).is_some(),
                "{kind}/invalid/{name} names {rule}, which the catalogue lacks"
            );
        }
    }
}

#[test]
fn rules_are_sorted_and_looked_up_by_id() {
    assert!(RULES.windows(2).all(|w| w[0].id < w[1].id));
    assert_eq!(
        rule_info("discovery.no-grpc").map(|r| r.severity),
        Some(Severity::Error)
    );
    assert_eq!(
        rule_info("discovery.auth-revocation-window").map(|r| r.severity),
        Some(Severity::Warning)
    );
    assert!(rule_info("discovery.nope").is_none());
    assert_eq!("warning".parse::<Severity>(), Ok(Severity::Warning));
    assert_eq!(Severity::Error.as_str(), "error");
    assert!("fatal".parse::<Severity>().is_err());
    assert!(Severity::Warning < Severity::Error);
}

#[test]
fn the_catalogue_satisfies_its_schema() {
    let schema = validators::compile_schema(
        &serde_json::json!({"$ref": "https://openwop.dev/spec/v2/validation-rules.schema.json"}),
    )
    .expect("the catalogue schema compiles");
    let catalogue = read(&repo().join("spec/v2/validation-rules.json"));
    let errors: Vec<String> = schema
        .iter_errors(&catalogue)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn the_reference_page_has_an_anchor_per_rule() {
    let page = std::fs::read_to_string(repo().join(RULES_DOC)).expect("the rule reference page");
    for rule in RULES {
        assert!(
            page.contains(&format!("<a id=\"{}\"></a>\n\n## {}\n", rule.id, rule.id)),
            "{} has no anchor",
            rule.id
        );
    }
}
