//! The validation rule catalogue, `spec/v2/validation-rules.json`: every rule id the
//! generated validators report, with its severity, sentence, help, source and a failing
//! example.
//!
//! The catalogue is optional (upstream's corpus has none; the validators then carry an empty
//! `RULES`). When it is present it must list exactly the ids the validators emit: every
//! `<namespace>.<name>` string literal of a rule template whose namespace the catalogue uses,
//! plus the ids the validator module itself emits ([`crate::emit::validators::EMITTED`]).
//! Rules the CLI reports around the validators (`emittedBy: cli`) are exempt from the second
//! direction. A mismatch is a [`Error::CrossCheck`] naming the id.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::load::{Corpus, RULES};
use crate::templates::Template;

/// The catalogue file, typed (unknown members are refused, so a misspelt key cannot pass).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Catalogue {
    #[serde(rename = "$schema")]
    _schema: Option<String>,
    #[allow(dead_code)] // read only to refuse a catalogue without one
    version: String,
    rules: Vec<Rule>,
}

/// One rule of the catalogue.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Rule {
    pub id: String,
    pub severity: Severity,
    pub summary: String,
    pub help: String,
    pub section: String,
    #[serde(default)]
    pub emitted_by: EmittedBy,
    /// A vector path, an inline JSON value, or null (no document triggers the rule).
    #[serde(default)]
    pub example: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Severity {
    Warning,
    Error,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum EmittedBy {
    #[default]
    Validators,
    Cli,
}

impl Rule {
    /// The example as the generated `RuleInfo::example` holds it: the vector path, the
    /// inline value as compact JSON, or empty.
    pub fn example_text(&self) -> String {
        match &self.example {
            Value::Null => String::new(),
            Value::String(path) => path.clone(),
            inline => inline.to_string(),
        }
    }
}

fn cross(pointer: String, message: String) -> Error {
    Error::CrossCheck {
        file: RULES.to_owned(),
        pointer,
        message,
    }
}

/// Reads and checks the catalogue; `None` when the corpus has none. `spec_root` resolves
/// example paths, which must exist.
pub(crate) fn load(corpus: &Corpus, spec_root: &Path) -> Result<Option<Vec<Rule>>> {
    if !corpus.has(RULES) {
        return Ok(None);
    }
    let catalogue: Catalogue =
        serde_json::from_value(corpus.value(RULES).clone()).map_err(|e| Error::Shape {
            file: RULES.to_owned(),
            pointer: String::new(),
            message: e.to_string(),
        })?;
    let rules = catalogue.rules;
    for (i, rule) in rules.iter().enumerate() {
        let at = |field: &str| format!("/rules/{i}/{field}");
        if !is_rule_id(&rule.id) {
            return Err(cross(
                at("id"),
                format!(
                    "`{}` is not a rule id (`name` or `namespace.name`, lower case and hyphens)",
                    rule.id
                ),
            ));
        }
        if let Some(previous) = i.checked_sub(1).map(|p| &rules[p])
            && previous.id >= rule.id
        {
            return Err(cross(
                at("id"),
                format!(
                    "`{}` comes after `{}`: rules are sorted by id, each id once",
                    rule.id, previous.id
                ),
            ));
        }
        for (field, text) in [
            ("summary", &rule.summary),
            ("help", &rule.help),
            ("section", &rule.section),
        ] {
            if text.trim().is_empty() {
                return Err(cross(
                    at(field),
                    format!("rule `{}` has an empty {field}", rule.id),
                ));
            }
        }
        if let Value::String(path) = &rule.example
            && (!path.starts_with("tests/vectors/") || !spec_root.join(path).exists())
        {
            return Err(cross(
                at("example"),
                format!(
                    "the example of `{}`, {path}, is not a path under tests/vectors/ that exists",
                    rule.id
                ),
            ));
        }
    }
    Ok(Some(rules))
}

/// `name` or `namespace.name`, each part `[a-z][a-z0-9-]*`.
fn is_rule_id(id: &str) -> bool {
    let part = |p: &str| {
        p.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
            && p.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    match id.split_once('.') {
        Some((ns, name)) => part(ns) && part(name),
        None => part(id),
    }
}

/// The rule ids a template's source emits: its string literals of the form
/// `<namespace>.<name>` whose namespace is one of `namespaces`.
pub(crate) fn template_ids(source: &str, namespaces: &BTreeSet<&str>) -> BTreeSet<String> {
    struct Literals<'a> {
        namespaces: &'a BTreeSet<&'a str>,
        found: BTreeSet<String>,
    }
    impl Literals<'_> {
        fn consider(&mut self, value: String) {
            if let Some((ns, _)) = value.split_once('.')
                && self.namespaces.contains(ns)
                && is_rule_id(&value)
            {
                self.found.insert(value);
            }
        }

        /// A macro's body is opaque to the syntax tree (`vec![…]`, `quote!{…}`): its string
        /// literals are read from the tokens.
        fn tokens(&mut self, tokens: proc_macro2::TokenStream) {
            for tree in tokens {
                match tree {
                    proc_macro2::TokenTree::Group(g) => self.tokens(g.stream()),
                    proc_macro2::TokenTree::Literal(l) => {
                        if let Ok(lit) = syn::parse_str::<syn::LitStr>(&l.to_string()) {
                            self.consider(lit.value());
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    impl<'ast> syn::visit::Visit<'ast> for Literals<'_> {
        fn visit_lit_str(&mut self, lit: &'ast syn::LitStr) {
            self.consider(lit.value());
        }

        fn visit_macro(&mut self, mac: &'ast syn::Macro) {
            self.tokens(mac.tokens.clone());
        }
    }
    let mut visitor = Literals {
        namespaces,
        found: BTreeSet::new(),
    };
    // Templates were parsed when loaded; one that does not parse here emits nothing.
    if let Ok(file) = syn::parse_file(source) {
        syn::visit::Visit::visit_file(&mut visitor, &file);
    }
    visitor.found
}

/// Every id the validators emit (`id → where`) is in the catalogue, and every catalogue rule
/// the validators report is emitted somewhere.
pub(crate) fn cross_check(
    rules: &[Rule],
    templates: &[Template],
    module_ids: &[&str],
) -> Result<()> {
    let namespaces: BTreeSet<&str> = rules
        .iter()
        .filter_map(|r| r.id.split_once('.').map(|(ns, _)| ns))
        .collect();
    let mut emitted: BTreeMap<String, String> = BTreeMap::new();
    for id in module_ids {
        emitted.insert(
            (*id).to_owned(),
            "codegen/src/emit/validators.rs".to_owned(),
        );
    }
    for t in templates {
        for id in template_ids(&t.rendered, &namespaces) {
            emitted
                .entry(id)
                .or_insert_with(|| format!("codegen/templates/{}.rs", t.name));
        }
    }
    for (id, source) in &emitted {
        if !rules.iter().any(|r| &r.id == id) {
            return Err(cross(
                "/rules".to_owned(),
                format!(
                    "{source} emits the rule `{id}`, which the catalogue does not list; add it"
                ),
            ));
        }
    }
    for (i, rule) in rules.iter().enumerate() {
        match (rule.emitted_by, emitted.contains_key(&rule.id)) {
            (EmittedBy::Validators, false) => {
                return Err(cross(
                    format!("/rules/{i}"),
                    format!(
                        "the catalogue lists `{}`, which no rule template or the validator module emits; remove it or mark it `emittedBy: cli`",
                        rule.id
                    ),
                ));
            }
            (EmittedBy::Cli, true) => {
                return Err(cross(
                    format!("/rules/{i}/emittedBy"),
                    format!(
                        "`{}` is marked `emittedBy: cli` but the validators emit it",
                        rule.id
                    ),
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(id: &str, emitted_by: EmittedBy) -> Rule {
        Rule {
            id: id.to_owned(),
            severity: Severity::Error,
            summary: "s".into(),
            help: "h".into(),
            section: "x".into(),
            emitted_by,
            example: Value::Null,
        }
    }

    fn template(name: &str, source: &str) -> Template {
        Template {
            name: name.to_owned(),
            label: name.to_owned(),
            rendered: source.to_owned(),
            requires: Vec::new(),
        }
    }

    const SOURCE: &str = r#"
        const EVENT: &str = "negotiation.decided";
        fn f(out: &mut Vec<(String, &str)>) {
            out.push(("a2a-1.0".into(), "discovery.no-grpc"));
            out.push(("x".into(), vec!["discovery.required-field"][0]));
        }
    "#;

    #[test]
    fn template_ids_are_the_literals_of_catalogue_namespaces() {
        let namespaces = BTreeSet::from(["discovery", "agent-card"]);
        let ids: Vec<String> = template_ids(SOURCE, &namespaces).into_iter().collect();
        assert_eq!(ids, ["discovery.no-grpc", "discovery.required-field"]);
    }

    #[test]
    fn an_emitted_id_missing_from_the_catalogue_is_named() {
        let rules = [
            rule("discovery.no-grpc", EmittedBy::Validators),
            rule("schema", EmittedBy::Validators),
        ];
        let err = cross_check(&rules, &[template("discovery_rules", SOURCE)], &["schema"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("discovery.required-field") && err.contains("discovery_rules"),
            "{err}"
        );
    }

    #[test]
    fn a_catalogue_id_nothing_emits_is_named_unless_the_cli_emits_it() {
        let mut rules = vec![
            rule("discovery.no-grpc", EmittedBy::Validators),
            rule("discovery.required-field", EmittedBy::Validators),
            rule("input.malformed", EmittedBy::Cli),
            rule("schema", EmittedBy::Validators),
        ];
        let templates = [template("discovery_rules", SOURCE)];
        cross_check(&rules, &templates, &["schema"]).expect("the catalogue matches");
        rules.push(rule("schema.stale", EmittedBy::Validators));
        let err = cross_check(&rules, &templates, &["schema"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("schema.stale"), "{err}");
        rules.pop();
        rules[0].emitted_by = EmittedBy::Cli;
        let err = cross_check(&rules, &templates, &["schema"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("discovery.no-grpc") && err.contains("emittedBy"),
            "{err}"
        );
    }

    #[test]
    fn rule_ids_have_one_grammar() {
        for good in [
            "schema",
            "discovery.no-grpc",
            "agent-card.required-field",
            "input.malformed",
        ] {
            assert!(is_rule_id(good), "{good}");
        }
        for bad in [
            "",
            "Schema",
            "a2a-1.0",
            "discovery.",
            ".x",
            "a.b.c",
            "discovery.no_grpc",
        ] {
            assert!(!is_rule_id(bad), "{bad}");
        }
    }
}
