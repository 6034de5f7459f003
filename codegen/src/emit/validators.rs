//! `generated/src/validators/mod.rs`: `Finding`, `Options`, the schema registry compiled
//! once, and one entry point per document kind. Rule modules come from the templates.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::closed::Closed;
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

/// The rule ids this module's generated code emits itself (the templates emit the rest);
/// the rule catalogue must list each (`crate::rules::cross_check`). A test holds this list
/// to the literals below.
pub(crate) const EMITTED: &[&str] = &[
    "response.undocumented",
    "response.unknown-operation",
    "schema",
    "schema.compile",
    "schema.unavailable",
];

/// `templates` are the rule-module names (`discovery_rules`, `agent_card_rules`, …);
/// `catalogue` the rule catalogue's items (`emit::rules::emit`).
pub(crate) fn emit(
    uris: &SchemaUris,
    templates: &[String],
    ops: &[crate::openapi::Operation],
    catalogue: &TokenStream,
    closed: &[Closed],
) -> TokenStream {
    let closed_rows = closed.iter().map(|c| {
        let (uri, pointer) = (&c.uri, &c.pointer);
        let names = c.names.iter();
        quote!((#uri, #pointer, &[#(#names),*]))
    });
    let responses: Vec<(&str, &str, &str)> = ops
        .iter()
        .flat_map(|op| {
            op.json_responses.iter().map(move |(status, pointer)| {
                (op.operation_id.as_str(), status.as_str(), pointer.as_str())
            })
        })
        .collect();
    let response_count = responses.len();
    let response_rows = responses.iter().map(|(op, status, pointer)| {
        // The pointer travels as a URI fragment: characters a fragment may not hold are
        // percent-encoded (RFC 6901 §6), `{runId}` among them.
        let pointer: String = pointer
            .chars()
            .map(|c| match c {
                '{' | '}' | '%' | ' ' | '"' | '<' | '>' | '^' | '`' | '|' | '\\' => {
                    format!("%{:02X}", c as u32)
                }
                c => c.to_string(),
            })
            .collect();
        quote!(Response { operation_id: #op, status: #status, pointer: #pointer })
    });
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

        #catalogue

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
                let mut value = serde_json::from_str(file.text).map_err(|e| format!("{}: {e}", file.path))?;
                close_records(file.uri, &mut value);
                resources.push((file.uri, value));
            }
            for uri in crate::schemas::MISSING {
                resources.push((*uri, Value::Object(serde_json::Map::new())));
            }
            let openapi = serde_json::from_str(crate::schemas::OPENAPI)
                .map_err(|e| format!("the OpenAPI document: {e}"))?;
            resources.push((crate::schemas::OPENAPI_URI, openapi));
            jsonschema::Registry::new()
                .extend(resources)
                .and_then(|builder| builder.prepare())
                .map_err(|e| format!("cannot build the schema registry: {e}"))
        });

        /// The records closed by `unevaluatedProperties: false` whose declared names the
        /// generator worked out, `(file URI, pointer, names)`: each is registered with
        /// `additionalProperties: false` beside those names instead. The verdict is the same on
        /// every document (codegen/src/closed.rs says why), but a wrong value inside a record
        /// no longer also reports every property of the record as unexpected, and collecting
        /// errors no longer re-validates each `allOf` branch.
        static CLOSED_RECORDS: &[(&str, &str, &[&str])] = &[#(#closed_rows),*];

        fn close_records(uri: &str, schema: &mut Value) {
            for (_, pointer, names) in CLOSED_RECORDS.iter().filter(|(u, _, _)| *u == uri) {
                let Some(Value::Object(record)) = schema.pointer_mut(pointer) else { continue };
                record.remove("unevaluatedProperties");
                let properties = record
                    .entry("properties")
                    .or_insert_with(|| Value::Object(serde_json::Map::new()));
                if let Value::Object(properties) = properties {
                    for name in *names {
                        properties.entry(*name).or_insert(Value::Bool(true));
                    }
                }
                record.insert("additionalProperties".to_owned(), Value::Bool(false));
            }
        }

        fn compile(uri: &str) -> Result<jsonschema::Validator, String> {
            let mut root = serde_json::Map::new();
            root.insert("$ref".to_owned(), Value::String(uri.to_owned()));
            compile_schema(&Value::Object(root)).map_err(|e| format!("cannot compile {uri}: {e}"))
        }

        /// Compiles `schema` as every validator here is compiled: against the registry of
        /// every corpus file, formats checked. For a caller that validates a part of a corpus
        /// schema (`{"$ref": "<uri>#/<pointer>"}`) on its own.
        pub fn compile_schema(schema: &Value) -> Result<jsonschema::Validator, String> {
            let registry = REGISTRY.as_ref().map_err(Clone::clone)?;
            jsonschema::options()
                .with_registry(registry)
                .should_validate_formats(true)
                .build(schema)
                .map_err(|e| e.to_string())
        }

        /// A documented answer with a JSON body.
        struct Response {
            operation_id: &'static str,
            /// `200`, a range such as `4XX`, or `default`.
            status: &'static str,
            /// Where its schema sits in the OpenAPI document.
            pointer: &'static str,
        }

        /// Every documented JSON answer of every operation, in document order.
        static RESPONSES: [Response; #response_count] = [ #(#response_rows),* ];

        /// The answers' validators, compiled on first use.
        static RESPONSE_VALIDATORS: [std::sync::OnceLock<Result<jsonschema::Validator, String>>; #response_count] =
            [const { std::sync::OnceLock::new() }; #response_count];

        /// Validates an answer's JSON body against the schema the OpenAPI document gives
        /// `operation_id` for `status` (an exact code, else its `NXX` range, else
        /// `default`). A status the document gives no JSON body for is the finding
        /// `response.undocumented`, an unknown operation `response.unknown-operation`.
        pub fn validate_response(operation_id: &str, status: u16, body: &Value) -> Vec<Finding> {
            if !RESPONSES.iter().any(|r| r.operation_id == operation_id) {
                return vec![Finding {
                    pointer: String::new(),
                    rule: "response.unknown-operation".to_owned(),
                    message: format!("the OpenAPI document has no operation `{operation_id}`"),
                }];
            }
            let exact = status.to_string();
            let range = format!("{}XX", status / 100);
            let found = [exact.as_str(), range.as_str(), "default"].iter().find_map(|want| {
                RESPONSES
                    .iter()
                    .position(|r| r.operation_id == operation_id && r.status.eq_ignore_ascii_case(want))
            });
            let Some(i) = found else {
                return vec![Finding {
                    pointer: String::new(),
                    rule: "response.undocumented".to_owned(),
                    message: format!("`{operation_id}` documents no JSON body for status {status}"),
                }];
            };
            let validator = RESPONSE_VALIDATORS[i].get_or_init(|| {
                compile(&format!("{}#{}", crate::schemas::OPENAPI_URI, RESPONSES[i].pointer))
            });
            match validator {
                Ok(v) => v
                    .iter_errors(body)
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

        /// Every schema error of `doc`, collected only when the schema rejects it: the
        /// verdict alone is several times cheaper than collecting errors.
        fn schema_findings(validator: &LazyLock<Result<jsonschema::Validator, String>>, doc: &Value) -> Vec<Finding> {
            match &**validator {
                // The verdict first: `is_valid` stops at the first failure and builds no error
                // values, so a document the schema accepts (the usual case) never pays for
                // collecting every error (issue #17). Debug builds check that the two paths
                // agree on every document any test validates.
                Ok(v) if v.is_valid(doc) => {
                    debug_assert!(v.iter_errors(doc).next().is_none(), "is_valid accepted a document iter_errors rejects");
                    Vec::new()
                }
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

#[cfg(test)]
mod tests {
    use super::EMITTED;

    /// Every rule-id literal of this file is in [`EMITTED`], so the catalogue cross-check
    /// sees every id the generated module can report.
    #[test]
    fn emitted_lists_every_rule_id_literal() {
        let source = include_str!("validators.rs");
        let namespaces = ["schema", "response"].into_iter().collect();
        let mut found = crate::rules::template_ids(source, &namespaces);
        // `"schema"` itself has no namespace; the emitters write it as `rule: "schema"`.
        assert!(source.contains("rule: \"schema\".to_owned()"));
        found.insert("schema".to_owned());
        let listed: std::collections::BTreeSet<String> =
            EMITTED.iter().map(|s| (*s).to_owned()).collect();
        assert_eq!(found, listed);
    }
}
