//! `generated/src/validators/mod.rs`: `Finding`, `Options`, the schema registry compiled
//! once, and one entry point per document kind. Rule modules come from the templates.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::format::ident;
use crate::uris::SchemaUris;

/// A document kind: its entry point, and the schema file that describes it.
struct Kind {
    name: &'static str,
    schema: &'static str,
}

const KINDS: &[Kind] = &[
    Kind {
        name: "discovery",
        schema: "schemas/v2/capabilities.schema.json",
    },
    Kind {
        name: "agent_card",
        schema: "schemas/v2/agent-card.schema.json",
    },
    Kind {
        name: "run_snapshot",
        schema: "schemas/v2/run-snapshot.schema.json",
    },
    Kind {
        name: "run_event",
        schema: "schemas/v2/run-event.schema.json",
    },
    Kind {
        name: "host_event",
        schema: "schemas/v2/host-event.schema.json",
    },
    Kind {
        name: "error_envelope",
        schema: "schemas/v2/error-envelope.schema.json",
    },
    Kind {
        name: "agent",
        schema: "schemas/v2/agent.schema.json",
    },
    Kind {
        name: "workflow_definition",
        schema: "schemas/v2/workflow-definition.schema.json",
    },
];

/// `templates` are the rule-module names (`discovery_rules`, `agent_card_rules`, …).
pub(crate) fn emit(uris: &SchemaUris, templates: &[String]) -> TokenStream {
    let has = |m: &str| templates.iter().any(|t| t == m);
    let modules = templates.iter().map(|t| ident(t));

    let statics = KINDS.iter().filter_map(|k| {
        let uri = uris.by_file.get(k.schema)?;
        let name = format_ident!("{}", k.name.to_uppercase());
        Some(quote! {
            static #name: LazyLock<Result<jsonschema::Validator, String>> = LazyLock::new(|| compile(#uri));
        })
    });

    let schema_call = |k: &Kind| -> TokenStream {
        match uris.by_file.get(k.schema) {
            Some(_) => {
                let name = format_ident!("{}", k.name.to_uppercase());
                quote!(schema_findings(&#name, doc))
            }
            // The agent card has no corpus schema (it is A2A's document); its rules carry it.
            None if k.name == "agent_card" => quote!(Vec::new()),
            None => {
                let message = format!(
                    "the corpus this crate was generated from has no {}",
                    k.schema
                );
                quote!(
                    vec![Finding { pointer: String::new(), rule: "schema.unavailable".to_owned(), message: #message.to_owned() }]
                )
            }
        }
    };

    let entry_points = KINDS.iter().map(|k| {
        let func = format_ident!("validate_{}", k.name);
        let schema = schema_call(k);
        let doc = format!(" Validates a {} document: the JSON Schema `{}`", k.name.replace('_', " "), k.schema);
        match k.name {
            "discovery" => {
                let rules = if has("discovery_rules") {
                    quote!(findings.extend(discovery_rules::check(doc, opts));)
                } else {
                    quote!(let _ = opts;)
                };
                quote! {
                    #[doc = #doc]
                    #[doc = " plus the rules a schema cannot state."]
                    pub fn #func(doc: &Value, opts: &Options) -> Vec<Finding> {
                        let mut findings = #schema;
                        #rules
                        findings
                    }
                }
            }
            "agent_card" => {
                let rules = if has("agent_card_rules") {
                    quote!(findings.extend(agent_card_rules::check(doc, discovery, opts));)
                } else {
                    quote!(let _ = (discovery, opts);)
                };
                quote! {
                    #[doc = #doc]
                    #[doc = " (when the corpus has one) plus the per-card rules, checked against the host's discovery document when given."]
                    pub fn #func(doc: &Value, discovery: Option<&Value>, opts: &Options) -> Vec<Finding> {
                        let mut findings = #schema;
                        #rules
                        findings
                    }
                }
            }
            _ => quote! {
                #[doc = #doc]
                #[doc = "."]
                pub fn #func(doc: &Value) -> Vec<Finding> {
                    #schema
                }
            },
        }
    });

    quote! {
        //! Validators: each corpus JSON Schema compiled once, plus the corpus-driven rules a
        //! schema cannot state.

        use std::sync::LazyLock;

        use serde_json::Value;

        #( pub mod #modules; )*

        /// One problem found in a document.
        #[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
        pub struct Finding {
            /// JSON pointer to the offending value (empty for the whole document).
            pub pointer: String,
            /// Stable rule id: `schema` for a JSON Schema failure, else the rule's own id.
            pub rule: String,
            /// A plain sentence saying what is wrong.
            pub message: String,
        }

        /// Inputs the rules need besides the document.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct Options {
            /// "Today" as (year, month, day) for the refresh window; `None` means the system clock.
            pub today: Option<(i32, u32, u32)>,
        }

        /// Every corpus schema file under its URI; referenced files the corpus lacks accept anything.
        static REGISTRY: LazyLock<Result<jsonschema::Registry<'static>, String>> = LazyLock::new(|| {
            let mut resources: Vec<(&'static str, Value)> = Vec::new();
            for file in crate::schemas::ALL {
                let value = serde_json::from_str(file.text).map_err(|e| format!("{}: {e}", file.path))?;
                resources.push((file.uri, value));
            }
            for uri in crate::schemas::MISSING {
                resources.push((*uri, Value::Object(serde_json::Map::new())));
            }
            jsonschema::Registry::new()
                .extend(resources)
                .and_then(|builder| builder.prepare())
                .map_err(|e| format!("cannot build the schema registry: {e}"))
        });

        fn compile(uri: &str) -> Result<jsonschema::Validator, String> {
            let registry = REGISTRY.as_ref().map_err(Clone::clone)?;
            let mut root = serde_json::Map::new();
            root.insert("$ref".to_owned(), Value::String(uri.to_owned()));
            jsonschema::options()
                .with_registry(registry)
                .should_validate_formats(true)
                .build(&Value::Object(root))
                .map_err(|e| format!("cannot compile {uri}: {e}"))
        }

        fn schema_findings(validator: &LazyLock<Result<jsonschema::Validator, String>>, doc: &Value) -> Vec<Finding> {
            match &**validator {
                Ok(v) => v
                    .iter_errors(doc)
                    .map(|e| Finding {
                        pointer: e.instance_path().to_string(),
                        rule: "schema".to_owned(),
                        message: e.to_string(),
                    })
                    .collect(),
                Err(message) => vec![Finding {
                    pointer: String::new(),
                    rule: "schema.compile".to_owned(),
                    message: message.clone(),
                }],
            }
        }

        #(#statics)*

        #(#entry_points)*
    }
}
