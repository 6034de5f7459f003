//! `generated/src/validators/mod.rs`: `Finding`, `Options`, the schema registry compiled
//! once, and one entry point per document kind. Rule modules come from the templates.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::closed::Closed;
use crate::format::ident;
use crate::load::Corpus;
use crate::uris::SchemaUris;

/// A document kind: its entry point, and the schema file that describes it.
struct Kind {
    name: &'static str,
    schema: &'static str,
    /// Validate a closed root object one property at a time when its shape allows
    /// (`crate::split`). Only the discovery document: it is what `openwop validate` checks in
    /// CI, and the one kind whose split a differential test holds to the whole schema.
    split: bool,
}

const KINDS: &[Kind] = &[
    Kind {
        name: "discovery",
        schema: "schemas/v2/capabilities.schema.json",
        split: true,
    },
    Kind {
        name: "agent_card",
        schema: "schemas/v2/agent-card.schema.json",
        split: false,
    },
    Kind {
        name: "run_snapshot",
        schema: "schemas/v2/run-snapshot.schema.json",
        split: false,
    },
    Kind {
        name: "run_event",
        schema: "schemas/v2/run-event.schema.json",
        split: false,
    },
    Kind {
        name: "host_event",
        schema: "schemas/v2/host-event.schema.json",
        split: false,
    },
    Kind {
        name: "error_envelope",
        schema: "schemas/v2/error-envelope.schema.json",
        split: false,
    },
    Kind {
        name: "agent",
        schema: "schemas/v2/agent.schema.json",
        split: false,
    },
    Kind {
        name: "workflow_definition",
        schema: "schemas/v2/workflow-definition.schema.json",
        split: false,
    },
    Kind {
        name: "config_file",
        schema: "schemas/v2/config.schema.json",
        split: false,
    },
    Kind {
        name: "agent_definition",
        schema: "schemas/v2/agent-definition.schema.json",
        split: false,
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
    corpus: &Corpus,
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

    let splits: Vec<(&Kind, crate::split::Split)> = KINDS
        .iter()
        .filter(|k| k.split)
        .filter_map(|k| {
            let uri = uris.by_file.get(k.schema)?;
            crate::split::find(corpus, k.schema, uri)
                .ok()
                .map(|s| (k, s))
        })
        .collect();
    let mut verdicts = crate::emit::verdict::Verdicts::new(corpus, uris, closed);
    let split_statics: Vec<TokenStream> = splits
        .iter()
        .map(|(k, split)| {
            let uri = &uris.by_file[k.schema];
            let name = format_ident!("{}_SPLIT", k.name.to_uppercase());
            let table = format_ident!("{}_PROPERTIES", k.name.to_uppercase());
            let root = &split.root;
            let root_verdict = verdicts.inline(
                uri,
                serde_json::from_str(&split.root).expect("the split root is JSON"),
            );
            let rows: Vec<TokenStream> = split
                .properties
                .iter()
                .map(|(n, r)| {
                    let pointer = r.split_once('#').map_or("", |(_, p)| p);
                    let f = verdicts.node(uri, pointer);
                    quote!((#n, #r, verdict::#f as fn(&Value) -> bool))
                })
                .collect();
            let count = rows.len();
            let doc = format!(" `{}` validated one declared property at a time.", k.schema);
            let is_valid = format_ident!("is_valid_{}", k.name);
            let is_valid_doc = format!(
                " The JSON Schema's verdict alone on a {} document (`{}`), generated from the schema: \
                 what `validate_{}` reports no schema finding for.",
                k.name.replace('_', " "),
                k.schema,
                k.name
            );
            quote! {
                static #table: [(&str, &str, fn(&Value) -> bool); #count] = [#(#rows),*];
                #[doc = #doc]
                static #name: LazyLock<Split> =
                    LazyLock::new(|| Split::new(#root, verdict::#root_verdict, &#table));
                #[doc = #is_valid_doc]
                pub fn #is_valid(doc: &Value) -> bool {
                    #name.is_valid(doc)
                }
            }
        })
        .collect();
    let verdict_module = (!splits.is_empty()).then(|| {
        let items = verdicts.emit();
        quote! {
            /// Schema verdicts generated from the corpus (the codegen's `verdict`).
            mod verdict {
                #items
            }
        }
    });
    let split_support = (!splits.is_empty()).then(split_support);

    let schema_call = |k: &Kind| -> TokenStream {
        match uris.by_file.get(k.schema) {
            Some(_) if splits.iter().any(|(s, _)| s.name == k.name) => {
                let name = format_ident!("{}", k.name.to_uppercase());
                let split = format_ident!("{}_SPLIT", k.name.to_uppercase());
                quote!(split_findings(&#split, &#name, doc))
            }
            Some(_) => {
                let name = format_ident!("{}", k.name.to_uppercase());
                quote!(schema_findings(&#name, doc))
            }
            // A corpus without the card's schema (upstream's: the card is A2A's document)
            // checks cards by their rules alone.
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
                Ok(v) => {
                    let mut findings = Vec::new();
                    for e in v.iter_errors(body) {
                        push_schema_findings("", &e, &mut findings);
                    }
                    findings
                }
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
                Ok(v) => {
                    let mut findings = Vec::new();
                    for e in v.iter_errors(doc) {
                        push_schema_findings("", &e, &mut findings);
                    }
                    findings
                }
                Err(message) => vec![Finding {
                    pointer: String::new(),
                    rule: "schema.compile".to_owned(),
                    message: message.clone(),
                }],
            }
        }

        /// One schema error as findings, their pointers `prefix` followed by the error's
        /// instance path. A member the schema does not allow (`additionalProperties`,
        /// `unevaluatedProperties`) is a finding of its own at that member, not one finding
        /// on the object naming them all: each points at the line it is on, and a new
        /// unknown member is never taken for one reported before (a CI baseline).
        fn push_schema_findings(prefix: &str, e: &jsonschema::ValidationError<'_>, out: &mut Vec<Finding>) {
            use jsonschema::error::ValidationErrorKind;
            use std::fmt::Write;
            let mut pointer = String::with_capacity(prefix.len() + 16);
            pointer.push_str(prefix);
            let _ = write!(pointer, "{}", e.instance_path());
            let (what, members) = match e.kind() {
                ValidationErrorKind::AdditionalProperties { unexpected } => ("Additional", unexpected),
                ValidationErrorKind::UnevaluatedProperties { unexpected } => ("Unevaluated", unexpected),
                _ => {
                    // Formatting straight into a buffer of a typical message's size spares
                    // the reallocations `to_string` makes while a message grows.
                    let mut message = String::with_capacity(128);
                    // jsonschema quotes the offending value. An object or array is named
                    // instead: quoted whole, it buried the sentence, and any edit inside
                    // it (a date bumped elsewhere in the object) changed the message, and
                    // with it the finding's identity in a CI baseline or a SARIF alert.
                    // The pointer says which one; a scalar stays quoted.
                    let _ = match &**e.instance() {
                        serde_json::Value::Object(_) => write!(message, "{}", e.masked_with("the object")),
                        serde_json::Value::Array(_) => write!(message, "{}", e.masked_with("the array")),
                        _ => write!(message, "{e}"),
                    };
                    out.push(Finding { pointer, rule: "schema".to_owned(), message });
                    return;
                }
            };
            for name in members {
                let mut at = String::with_capacity(pointer.len() + name.len() + 1);
                at.push_str(&pointer);
                at.push('/');
                at.push_str(&name.replace('~', "~0").replace('/', "~1"));
                out.push(Finding {
                    pointer: at,
                    rule: "schema".to_owned(),
                    // jsonschema's sentence for one member.
                    message: format!("{what} properties are not allowed ('{name}' was unexpected)"),
                });
            }
        }

        #split_support

        #(#statics)*

        #(#split_statics)*

        #verdict_module

        #(#entry_points)*
    }
}

/// The split validator's code (`crate::split` says when a schema gets one).
fn split_support() -> TokenStream {
    quote! {
        /// A closed root object schema taken apart: the root's own keywords (`type`,
        /// `required`, `additionalProperties: false`) and each declared property. The verdict
        /// is the generated one (`verdict`), taken per property; errors are collected by
        /// jsonschema only under what fails, which gives the errors `iter_errors` gives on the
        /// whole document, in the same order, without collecting errors where nothing is
        /// wrong.
        struct Split {
            /// The root object with every property schema replaced by `true`, as JSON.
            root_schema: &'static str,
            /// Its generated verdict.
            root_verdict: fn(&Value) -> bool,
            /// The root compiled for its errors, when a document first fails it; `None`
            /// when it does not compile.
            root: std::sync::OnceLock<Option<jsonschema::Validator>>,
            /// `(name, $ref to its schema, its generated verdict)`, in the schema's order.
            properties: &'static [(&'static str, &'static str, fn(&Value) -> bool)],
            /// Each property's validator, compiled for its errors when a document first
            /// fails it; `None` when it does not compile.
            validators: Vec<std::sync::OnceLock<Option<jsonschema::Validator>>>,
        }

        impl Split {
            fn new(
                root_schema: &'static str,
                root_verdict: fn(&Value) -> bool,
                properties: &'static [(&'static str, &'static str, fn(&Value) -> bool)],
            ) -> Split {
                let validators = properties.iter().map(|_| std::sync::OnceLock::new()).collect();
                Split { root_schema, root_verdict, root: std::sync::OnceLock::new(), properties, validators }
            }

            /// The generated verdict alone.
            fn is_valid(&self, doc: &Value) -> bool {
                (self.root_verdict)(doc)
                    && doc.as_object().is_none_or(|members| {
                        members.iter().all(|(name, value)| {
                            self.properties.iter().find(|(n, _, _)| n == name).is_none_or(|(_, _, verdict)| verdict(value))
                        })
                    })
            }

            /// Property `i`'s validator, for its errors.
            fn validator(&self, i: usize) -> Option<&jsonschema::Validator> {
                self.validators[i]
                    .get_or_init(|| {
                        let mut reference = serde_json::Map::new();
                        reference.insert("$ref".to_owned(), Value::String(self.properties[i].1.to_owned()));
                        compile_schema(&Value::Object(reference)).ok()
                    })
                    .as_ref()
            }

            /// The schema's errors on `doc`; `None` when what failed does not compile (the
            /// whole-document validator then answers, and reports why).
            fn findings(&self, doc: &Value) -> Option<Vec<Finding>> {
                let root_valid = (self.root_verdict)(doc);
                let mut failing = Vec::new();
                if let Value::Object(members) = doc {
                    for (name, value) in members {
                        // A linear scan: `==` compares lengths before bytes, and there are
                        // some twenty names.
                        if let Some(i) = self.properties.iter().position(|(n, _, _)| n == name) {
                            if !(self.properties[i].2)(value) {
                                failing.push((name, i, value));
                            }
                        }
                    }
                }
                if root_valid && failing.is_empty() {
                    return Some(Vec::new());
                }
                // jsonschema reports a root object's errors in keyword order: `type` and
                // `required`, then `properties` (the members', in document order), then
                // `additionalProperties`.
                let mut findings = Vec::new();
                let mut additional = Vec::new();
                if !root_valid {
                    let root = self
                        .root
                        .get_or_init(|| serde_json::from_str(self.root_schema).ok().and_then(|r| compile_schema(&r).ok()))
                        .as_ref()?;
                    for e in root.iter_errors(doc) {
                        if matches!(e.kind(), jsonschema::error::ValidationErrorKind::AdditionalProperties { .. }) {
                            push_schema_findings("", &e, &mut additional);
                        } else {
                            push_schema_findings("", &e, &mut findings);
                        }
                    }
                }
                for (name, i, value) in failing {
                    let validator = self.validator(i)?;
                    let mut prefix = String::with_capacity(name.len() + 1);
                    prefix.push('/');
                    prefix.push_str(&name.replace('~', "~0").replace('/', "~1"));
                    for e in validator.iter_errors(value) {
                        push_schema_findings(&prefix, &e, &mut findings);
                    }
                }
                findings.extend(additional);
                Some(findings)
            }
        }

        /// The schema's errors on `doc` from its split, or from the whole-document validator
        /// when the split cannot answer.
        fn split_findings(
            split: &Split,
            whole: &LazyLock<Result<jsonschema::Validator, String>>,
            doc: &Value,
        ) -> Vec<Finding> {
            match split.findings(doc) {
                Some(findings) => findings,
                None => schema_findings(whole, doc),
            }
        }
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
