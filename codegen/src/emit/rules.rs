//! The rule catalogue as code (`Severity`, `RuleInfo`, `RULES`, `rule_info`, `RULES_DOC` in
//! `generated/src/validators/mod.rs`) and as the rule reference page (`generated/RULES.md`).

use proc_macro2::TokenStream;
use quote::quote;

use crate::rules::{EmittedBy, Rule, Severity};

/// Where the reference page is committed, relative to the repository root; the CLI's SARIF
/// help URIs and JSON `docs` fields point at `RULES_DOC#<rule id>`.
pub(crate) const RULES_DOC: &str = "generated/RULES.md";
/// The page's path inside the generated crate.
pub(crate) const RULES_FILE: &str = "RULES.md";

/// The items spliced into the validators module. `rules` is sorted by id (the loader checks).
pub(crate) fn emit(rules: &[Rule]) -> TokenStream {
    let rows = rules.iter().map(|r| {
        let Rule {
            id,
            summary,
            help,
            section,
            ..
        } = r;
        let severity = match r.severity {
            Severity::Warning => quote!(Severity::Warning),
            Severity::Error => quote!(Severity::Error),
        };
        let example = r.example_text();
        quote! {
            RuleInfo { id: #id, severity: #severity, summary: #summary, help: #help, section: #section, example: #example }
        }
    });
    quote! {
        /// How much a finding of a rule weighs: `Error` when the rule states a MUST, `Warning`
        /// when it states a SHOULD. Ordered, so `Warning < Error`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Severity {
            Warning,
            Error,
        }

        impl Severity {
            /// `"warning"` or `"error"`.
            pub fn as_str(self) -> &'static str {
                match self {
                    Severity::Warning => "warning",
                    Severity::Error => "error",
                }
            }
        }

        impl std::fmt::Display for Severity {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        /// The text is not `warning` or `error`.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct UnknownSeverity(pub String);

        impl std::fmt::Display for UnknownSeverity {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "unknown severity `{}` (expected `warning` or `error`)", self.0)
            }
        }

        impl std::error::Error for UnknownSeverity {}

        impl std::str::FromStr for Severity {
            type Err = UnknownSeverity;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    "warning" => Ok(Severity::Warning),
                    "error" => Ok(Severity::Error),
                    other => Err(UnknownSeverity(other.to_owned())),
                }
            }
        }

        /// One rule of the catalogue (`spec/v2/validation-rules.json`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct RuleInfo {
            /// The id findings carry (`Finding::rule`).
            pub id: &'static str,
            pub severity: Severity,
            /// One sentence: what the rule requires.
            pub summary: &'static str,
            /// What to change in a document that breaks it.
            pub help: &'static str,
            /// Where the rule comes from: an interop.md section or a schema description.
            pub section: &'static str,
            /// A document that breaks it: a repository-relative path under `tests/vectors/`
            /// (an agent card is checked against `<name>.discovery.json` beside it, else
            /// `tests/vectors/agent-card/discovery.json`), or inline JSON (starts with `{`);
            /// for `response.*` rules the inline object is `{operationId, status, body}`.
            /// Empty for a rule no document can trigger (it reports a broken build).
            pub example: &'static str,
        }

        /// Every rule the validators (and the CLI around them) report, sorted by id.
        pub static RULES: &[RuleInfo] = &[ #(#rows),* ];

        /// The catalogue entry of a rule id.
        pub fn rule_info(id: &str) -> Option<&'static RuleInfo> {
            RULES.binary_search_by(|r| r.id.cmp(id)).ok().map(|i| &RULES[i])
        }

        /// The rule reference page, relative to the repository root; each rule has the anchor
        /// `#<rule id>` there.
        pub const RULES_DOC: &str = #RULES_DOC;
    }
}

/// The rule reference page. `header` is the `@generated` line.
pub(crate) fn page(header: &str, rules: Option<&[Rule]>) -> String {
    let mut out = String::from(header);
    out.push_str("# Validation rules\n\n");
    let Some(rules) = rules else {
        out.push_str("The corpus these validators were generated from has no rule catalogue (`spec/v2/validation-rules.json`).\n");
        return out;
    };
    out.push_str(
        "Every rule `openwop validate` and the generated validators (`openwop_generated::validators`) \
         report, generated from `spec/v2/validation-rules.json`. A finding carries the rule's id; \
         each rule below has the anchor `#<rule id>`. `error` marks a broken MUST, `warning` a \
         broken SHOULD. Each example is a document that breaks the rule (a test holds it to that).\n\n",
    );
    out.push_str("| rule | severity | summary |\n| --- | --- | --- |\n");
    for r in rules {
        let summary = r.summary.replace('|', "\\|");
        out.push_str(&format!(
            "| [`{}`](#{}) | {} | {summary} |\n",
            r.id,
            r.id,
            severity(r)
        ));
    }
    for r in rules {
        out.push_str(&format!("\n<a id=\"{}\"></a>\n\n## {}\n\n", r.id, r.id));
        out.push_str(&format!("- severity: **{}**\n", severity(r)));
        out.push_str(&format!("- summary: {}\n", r.summary));
        out.push_str(&format!("- source: {}\n", r.section));
        if r.emitted_by == EmittedBy::Cli {
            out.push_str("- reported by: the `openwop validate` CLI, before any validator runs\n");
        }
        match &r.example {
            serde_json::Value::Null => out.push_str("- example: none (no document triggers it)\n"),
            serde_json::Value::String(path) => {
                out.push_str(&format!("- example: [`{path}`](../{path})\n"));
            }
            inline => {
                let text = serde_json::to_string_pretty(inline).unwrap_or_default();
                out.push_str(&format!(
                    "- example:\n\n  ```json\n  {}\n  ```\n",
                    text.replace('\n', "\n  ")
                ));
            }
        }
        out.push_str(&format!("\n{}\n", r.help));
    }
    out
}

fn severity(r: &Rule) -> &'static str {
    match r.severity {
        Severity::Warning => "warning",
        Severity::Error => "error",
    }
}
