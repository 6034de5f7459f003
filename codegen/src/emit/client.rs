//! `generated/src/client/mod.rs`: a typed async reqwest client with one builder per
//! `operationId`.
//!
//! - `client.<operation>(path ids…)` returns a builder; optional parameters are setters
//!   typed from their schema (integers, booleans, model enums such as `RunStatus`, strings);
//!   `send().await` answers [`ResponseValue<T>`] (status, headers, typed header accessors,
//!   `Deref` to `T`). An operation that declares `304` answers `ResponseValue<Conditional<T>>`.
//! - A JSON object body is a model: `.body(model)`, or one setter per body field (converted
//!   with `TryInto`, checked against the model when sent, so a missing required field or a
//!   value outside its schema is `Error::InvalidRequest` before anything is sent).
//! - Path ids are `&str`, projected into one path segment each (bytes outside
//!   `[A-Za-z0-9._-]` become `~XX`, the rule for tenant-bound ids).
//! - A `text/event-stream` operation answers an [`EventStream<T>`] of the model its schema
//!   names (`itemSchema`, `contentSchema`, or the `*.schema.json` file its description names),
//!   which reconnects with `Last-Event-ID` after a dropped connection.
//! - Header parameters every operation declares (`OpenWOP-Version`) are client-wide
//!   (`Client::with_header`); operations with `security: []` never send the credential.

use std::collections::BTreeSet;

use heck::{ToSnakeCase, ToUpperCamelCase};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use serde_json::Value;
use syn::{Fields, Item, Type};

use crate::emit::models_post::{json_name, outer};
use crate::format::ident;
use crate::load::{Corpus, OPENAPI};
use crate::openapi::{Operation, ResponseHeader};

/// What the client is emitted from besides the operations.
pub(crate) struct Inputs<'a> {
    pub corpus: &'a Corpus,
    pub ops: &'a [Operation],
    /// The model a schema written in the OpenAPI document names.
    pub named: &'a dyn Fn(&Value) -> Option<String>,
    /// The model the items of an event-stream operation are.
    pub stream_item: &'a dyn Fn(&Operation) -> Option<String>,
    /// typify's items (after post-processing): body fields, enums.
    pub models: &'a syn::File,
    pub open_enums: &'a BTreeSet<String>,
    /// Closed enums the models re-export from another module (`RunStatus`).
    pub reexported_enums: &'a BTreeSet<String>,
    pub headers: &'a [ResponseHeader],
    /// Hand-written modules under `client/` (from `codegen/templates/client/`).
    pub helper_modules: &'a [String],
}

/// How the API key travels, from the document's first security scheme.
fn auth_header(corpus: &Corpus) -> (String, bool) {
    let scheme = corpus
        .value(OPENAPI)
        .pointer("/components/securitySchemes")
        .and_then(Value::as_object)
        .and_then(|m| m.values().next());
    match scheme {
        Some(s)
            if s.get("type").and_then(Value::as_str) == Some("apiKey")
                && s.get("in").and_then(Value::as_str) == Some("header") =>
        {
            (
                s.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("Authorization")
                    .to_owned(),
                false,
            )
        }
        _ => ("Authorization".to_owned(), true),
    }
}

fn model_path(name: &str) -> TokenStream {
    let n = ident(name);
    quote!(crate::models::#n)
}

fn find_item<'a>(models: &'a syn::File, name: &str) -> Option<&'a Item> {
    models.items.iter().find(|i| match i {
        Item::Struct(s) => s.ident == name,
        Item::Enum(e) => e.ident == name,
        Item::Type(t) => t.ident == name,
        _ => false,
    })
}

/// The struct a model name is, following `type` aliases.
fn struct_of<'a>(models: &'a syn::File, name: &str) -> Option<&'a syn::ItemStruct> {
    let mut name = name.to_owned();
    for _ in 0..4 {
        match find_item(models, &name)? {
            Item::Struct(s) => return Some(s),
            Item::Type(t) => {
                let ty = &t.ty;
                name = quote!(#ty).to_string();
            }
            _ => return None,
        }
    }
    None
}

/// A field or parameter type with every bare model name written `crate::models::Name`.
fn qualify(ty: &Type, models: &BTreeSet<String>) -> TokenStream {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            if p.path.leading_colon.is_none()
                && p.path.segments.len() == 1
                && models.contains(&p.path.segments[0].ident.to_string())
            {
                let seg = &p.path.segments[0];
                let id = &seg.ident;
                let args = generic_args(&seg.arguments, models);
                return quote!(crate::models::#id #args);
            }
            let colon = p.path.leading_colon.map(|_| quote!(::));
            let segs = p.path.segments.iter().map(|seg| {
                let id = &seg.ident;
                let args = generic_args(&seg.arguments, models);
                quote!(#id #args)
            });
            quote!(#colon #(#segs)::*)
        }
        other => quote!(#other),
    }
}

fn generic_args(args: &syn::PathArguments, models: &BTreeSet<String>) -> TokenStream {
    match args {
        syn::PathArguments::AngleBracketed(a) => {
            let parts = a.args.iter().map(|g| match g {
                syn::GenericArgument::Type(t) => qualify(t, models),
                other => quote!(#other),
            });
            quote!(<#(#parts),*>)
        }
        _ => quote!(),
    }
}

fn docs_of(attrs: &[syn::Attribute]) -> Vec<&syn::Attribute> {
    attrs.iter().filter(|a| a.path().is_ident("doc")).collect()
}

/// Setter names already used by a builder; a clash gets a prefix, then an underscore.
struct Names(BTreeSet<String>);

impl Names {
    fn new() -> Self {
        Self(
            ["send", "body", "new", "call", "fields"]
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
        )
    }

    /// A header parameter: `OpenWOP-Dedup` → `openwop_dedup` (as the header accessors).
    fn take_header(&mut self, raw: &str) -> proc_macro2::Ident {
        self.take(&accessor_name(raw), "header")
    }

    fn take(&mut self, raw: &str, prefix: &str) -> proc_macro2::Ident {
        let mut name = raw.to_snake_case();
        if name.is_empty() {
            name = "param".to_owned();
        }
        if self.0.contains(&name) {
            name = format!("{prefix}_{name}");
        }
        while !self.0.insert(name.clone()) {
            name.push('_');
        }
        ident(&name)
    }
}

/// A query parameter's setter type and how its value becomes the query string.
fn query_setter(
    p: &crate::openapi::Parameter,
    named: &dyn Fn(&Value) -> Option<String>,
    models: &syn::File,
    reexported: &BTreeSet<String>,
) -> (TokenStream, TokenStream) {
    let kind = p.schema.get("type").and_then(Value::as_str);
    let minimum = p.schema.get("minimum").and_then(Value::as_f64);
    match kind {
        Some("integer") if minimum.is_some_and(|m| m >= 0.0) => {
            (quote!(u64), quote!(value.to_string()))
        }
        Some("integer") => (quote!(i64), quote!(value.to_string())),
        Some("number") => (quote!(f64), quote!(value.to_string())),
        Some("boolean") => (quote!(bool), quote!(value.to_string())),
        _ => match named(&p.schema) {
            // A model enum (e.g. `RunStatus`) is taken as itself; its Display is the wire string.
            Some(model)
                if reexported.contains(&model)
                    || matches!(find_item(models, &model), Some(Item::Enum(_))) =>
            {
                let path = model_path(&model);
                (quote!(#path), quote!(value.to_string()))
            }
            _ => (
                quote!(impl Into<::std::string::String>),
                quote!(value.into()),
            ),
        },
    }
}

struct OpParts {
    method: TokenStream,
    builder: TokenStream,
}

fn operation(
    op: &Operation,
    inputs: &Inputs<'_>,
    shared_headers: &BTreeSet<String>,
    model_names: &BTreeSet<String>,
) -> OpParts {
    let fn_name = ident(&op.operation_id.to_snake_case());
    let builder_name = format_ident!("{}", op.operation_id.to_upper_camel_case());
    let verb = format_ident!("{}", op.method.to_uppercase());
    let anonymous = op.anonymous;
    let mut names = Names::new();

    // Path parameters are positional, in template order.
    let mut path_args = Vec::new();
    let mut path_arg_names = Vec::new();
    let mut pieces = Vec::new();
    let mut rest = op.path.as_str();
    let mut positional = BTreeSet::new();
    while let Some(open) = rest.find('{') {
        let Some(len) = rest[open..].find('}') else {
            break;
        };
        let literal = &rest[..open];
        if !literal.is_empty() {
            pieces.push(quote!(path.push_str(#literal);));
        }
        let raw = &rest[open + 1..open + len];
        positional.insert(raw.to_owned());
        let arg = names.take(raw, "path");
        path_args.push(quote!(#arg: &str));
        path_arg_names.push(arg.clone());
        pieces.push(quote!(path.push_str(&super::project_path_segment(#arg));));
        rest = &rest[open + len + 1..];
    }
    if !rest.is_empty() {
        pieces.push(quote!(path.push_str(#rest);));
    }

    let mut setters = Vec::new();
    let mut required_inits = Vec::new();
    let mut required_args = Vec::new();
    let mut required_names = Vec::new();
    for p in op.parameters.iter().filter(|p| p.location == "query") {
        let key = &p.name;
        let (ty, render) = query_setter(p, inputs.named, inputs.models, inputs.reexported_enums);
        let doc = p.description.clone().map(|d| format!(" {d}"));
        let doc = doc.iter();
        let name = names.take(&p.name, "query");
        if p.required {
            required_args.push(quote!(#name: #ty));
            required_names.push(name.clone());
            required_inits.push(quote!({ let value = #name; call.query.push((#key, #render)); }));
        } else {
            setters.push(quote! {
                #(#[doc = #doc])*
                pub fn #name(mut self, value: #ty) -> Self {
                    self.call.query.push((#key, #render));
                    self
                }
            });
        }
    }

    let mut stream_last_event_id = None;
    for p in op.parameters.iter().filter(|p| {
        p.location == "header" && !shared_headers.contains(&p.name.to_ascii_lowercase())
    }) {
        let key = &p.name;
        let doc = p.description.clone().map(|d| format!(" {d}"));
        let doc = doc.iter();
        let name = names.take_header(&p.name);
        if op.streams && p.name.eq_ignore_ascii_case("last-event-id") {
            stream_last_event_id = Some(name.clone());
            setters.push(quote! {
                #(#[doc = #doc])*
                /// Reconnections continue from the newest id received after it.
                pub fn #name(mut self, value: impl Into<::std::string::String>) -> Self {
                    self.last_event_id = Some(value.into());
                    self
                }
            });
        } else if p.required {
            required_args.push(quote!(#name: impl Into<::std::string::String>));
            required_names.push(name.clone());
            required_inits.push(quote!(call.headers.push((#key, #name.into()));));
        } else {
            setters.push(quote! {
                #(#[doc = #doc])*
                pub fn #name(mut self, value: impl Into<::std::string::String>) -> Self {
                    self.call.headers.push((#key, value.into()));
                    self
                }
            });
        }
    }

    // The body: a struct model gets `.body(model)` and one setter per field.
    let body_model = op.body.as_ref().and_then(|b| (inputs.named)(b));
    let body_struct = body_model
        .as_deref()
        .and_then(|m| struct_of(inputs.models, m))
        .filter(|s| matches!(s.fields, Fields::Named(_)));
    let body_required = op.body_required;
    let (body_fields, body_init, body_finish) = match (&op.body, &body_model, body_struct) {
        (None, _, _) => (quote!(), quote!(), quote!()),
        (Some(_), Some(model), Some(s)) => {
            let model_ty = model_path(model);
            setters.push(quote! {
                /// The whole body; field setters called after it change single fields.
                pub fn body(mut self, body: #model_ty) -> Self {
                    self.fields.whole(&body);
                    self
                }
            });
            for field in &s.fields {
                let json = json_name(field);
                let name = names.take(&json, "body");
                let docs = docs_of(&field.attrs);
                let mut ty = &field.ty;
                if let Some((w, args)) = outer(ty)
                    && w == "Option"
                    && args.len() == 1
                {
                    ty = args[0];
                }
                let setter = match outer(ty) {
                    Some((w, _)) if w == "Map" || w == "Value" => quote! {
                        #(#docs)*
                        pub fn #name(mut self, value: impl Into<::serde_json::Value>) -> Self {
                            self.fields.set(#json, Ok::<_, ::std::convert::Infallible>(value.into()));
                            self
                        }
                    },
                    Some((w, args)) if w == "Vec" && args.len() == 1 => {
                        let item = qualify(args[0], model_names);
                        quote! {
                            #(#docs)*
                            pub fn #name<I, V>(mut self, values: I) -> Self
                            where
                                I: IntoIterator<Item = V>,
                                V: TryInto<#item>,
                                V::Error: ::std::fmt::Display,
                            {
                                let items: Result<Vec<#item>, _> = values.into_iter().map(|v| v.try_into()).collect();
                                self.fields.set(#json, items);
                                self
                            }
                        }
                    }
                    _ => {
                        let ty = qualify(ty, model_names);
                        quote! {
                            #(#docs)*
                            pub fn #name<V>(mut self, value: V) -> Self
                            where
                                V: TryInto<#ty>,
                                V::Error: ::std::fmt::Display,
                            {
                                self.fields.set(#json, value.try_into());
                                self
                            }
                        }
                    }
                };
                setters.push(setter);
            }
            (
                quote!(fields: super::Fields,),
                quote!(fields: super::Fields::default(),),
                quote!(call.body = self.fields.finish::<#model_ty>(#body_required)?;),
            )
        }
        (Some(_), model, _) => {
            let ty = match model {
                Some(m) => model_path(m),
                None => quote!(::serde_json::Value),
            };
            setters.push(quote! {
                /// The request body.
                pub fn body(mut self, body: impl Into<#ty>) -> Self {
                    let body: #ty = body.into();
                    self.fields.whole(&body);
                    self
                }
            });
            (
                quote!(fields: super::Fields,),
                quote!(fields: super::Fields::default(),),
                quote!(call.body = self.fields.finish::<::serde_json::Value>(#body_required)?;),
            )
        }
    };

    let mut docs = Vec::new();
    if let Some(summary) = &op.summary {
        docs.push(format!(" {summary}"));
        docs.push(String::new());
    }
    docs.push(format!(
        " `{} {}` ({})",
        op.method, op.path, op.operation_id
    ));

    let model_ty = |name: Option<String>| match name {
        Some(n) => model_path(&n),
        None => quote!(::serde_json::Value),
    };
    let (send, extra_fields, extra_inits) = if op.streams {
        let item = model_ty((inputs.stream_item)(op));
        let last = stream_last_event_id.map(|_| quote!(self.last_event_id));
        let last = last.unwrap_or_else(|| quote!(None));
        (
            quote! {
                /// Opens the stream. An error answer is an `Err` here; once open, the stream
                /// reconnects by itself (see [`super::EventStream`]).
                pub async fn send(self) -> Result<super::EventStream<#item>, super::Error> {
                    let mut call = self.call;
                    #body_finish
                    super::EventStream::open(call, #last, self.options).await
                }

                /// How many consecutive failed reconnections end the stream with an error.
                pub fn max_reconnects(mut self, attempts: u32) -> Self {
                    self.options.max_reconnects = attempts;
                    self
                }

                /// How long the stream may stay silent (not even a keep-alive comment) before
                /// it counts as dropped and reconnects.
                pub fn idle_timeout(mut self, timeout: ::std::time::Duration) -> Self {
                    self.options.idle_timeout = timeout;
                    self
                }
            },
            quote!(last_event_id: Option<::std::string::String>, options: super::StreamOptions,),
            quote!(last_event_id: None, options: super::StreamOptions::default(),),
        )
    } else {
        let body = match &op.response {
            Some(schema) => model_ty((inputs.named)(schema)),
            None => quote!(()),
        };
        if op.not_modified {
            (
                quote! {
                    /// Sends the request. A `304` (the copy named by `If-None-Match` is
                    /// current) is `Conditional::NotModified`, not an error.
                    pub async fn send(self) -> Result<super::ResponseValue<super::Conditional<#body>>, super::Error> {
                        let mut call = self.call;
                        #body_finish
                        let response = call.send(true).await?;
                        super::conditional_answer(response).await
                    }
                },
                quote!(),
                quote!(),
            )
        } else {
            (
                quote! {
                    /// Sends the request.
                    pub async fn send(self) -> Result<super::ResponseValue<#body>, super::Error> {
                        let mut call = self.call;
                        #body_finish
                        let response = call.send(false).await?;
                        super::json_answer(response).await
                    }
                },
                quote!(),
                quote!(),
            )
        }
    };

    let op_doc = format!(
        " A `{}` call (`{} {}`): set what you need, then `send().await`.",
        op.operation_id, op.method, op.path
    );
    let method = quote! {
        #(#[doc = #docs])*
        pub fn #fn_name(&self, #(#path_args,)* #(#required_args),*) -> builder::#builder_name<'_> {
            builder::#builder_name::new(self, #(#path_arg_names,)* #(#required_names),*)
        }
    };
    let builder = quote! {
        #[doc = #op_doc]
        #[must_use = "a call does nothing until it is sent"]
        #[derive(Debug)]
        pub struct #builder_name<'a> {
            call: super::Call<'a>,
            #body_fields
            #extra_fields
        }

        impl<'a> #builder_name<'a> {
            pub(super) fn new(client: &'a super::Client, #(#path_args,)* #(#required_args),*) -> Self {
                let mut path = ::std::string::String::new();
                #(#pieces)*
                let mut call = super::Call::new(client, ::reqwest::Method::#verb, path, #anonymous);
                #(#required_inits)*
                Self { call, #body_init #extra_inits }
            }

            #(#setters)*

            #send
        }
    };
    OpParts { method, builder }
}

/// `OpenWOP-Idempotent-Replay` → `openwop_idempotent_replay`.
fn accessor_name(header: &str) -> String {
    header.to_ascii_lowercase().replace('-', "_")
}

fn accessor(h: &ResponseHeader, headers: TokenStream) -> TokenStream {
    let name = ident(&accessor_name(&h.name));
    let key = &h.name;
    let mut docs: Vec<String> = h
        .description
        .as_deref()
        .unwrap_or("")
        .lines()
        .map(|l| format!(" {l}"))
        .collect();
    docs.push(format!(" The `{key}` header, when the answer carries it."));
    match h.kind.as_str() {
        "boolean" => quote! {
            #(#[doc = #docs])*
            pub fn #name(&self) -> Option<bool> {
                header_str(#headers, #key).map(|v| v.trim().eq_ignore_ascii_case("true"))
            }
        },
        "integer" => quote! {
            #(#[doc = #docs])*
            pub fn #name(&self) -> Option<u64> {
                header_str(#headers, #key).and_then(|v| v.trim().parse().ok())
            }
        },
        _ => quote! {
            #(#[doc = #docs])*
            pub fn #name(&self) -> Option<&str> {
                header_str(#headers, #key)
            }
        },
    }
}

/// The model error answers carry (the most common schema of 4xx/5xx JSON answers) and,
/// when it has one, its field typed by an open enum (the error code).
fn error_model(inputs: &Inputs<'_>) -> Option<(String, Option<(syn::Ident, String)>)> {
    let doc = inputs.corpus.value(OPENAPI);
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for item in doc.get("paths")?.as_object()?.values() {
        for verb in ["get", "put", "post", "delete", "patch"] {
            let Some(responses) = item
                .get(verb)
                .and_then(|o| o.get("responses"))
                .and_then(Value::as_object)
            else {
                continue;
            };
            for (code, r) in responses {
                if !(code.starts_with('4') || code.starts_with('5')) {
                    continue;
                }
                let r = match r
                    .get("$ref")
                    .and_then(Value::as_str)
                    .and_then(|p| p.strip_prefix('#'))
                {
                    Some(p) => doc.pointer(p).unwrap_or(r),
                    None => r,
                };
                if let Some(schema) = r.pointer("/content/application~1json/schema")
                    && let Some(name) = (inputs.named)(schema)
                {
                    *counts.entry(name).or_default() += 1;
                }
            }
        }
    }
    let (name, _) = counts.into_iter().max_by_key(|(_, n)| *n)?;
    let s = struct_of(inputs.models, &name)?;
    let code = s.fields.iter().find_map(|f| {
        let Type::Path(p) = &f.ty else { return None };
        let last = p.path.segments.last()?.ident.to_string();
        (p.path.segments.len() == 1 && inputs.open_enums.contains(&last))
            .then(|| (f.ident.clone(), last))
    });
    let code = code.and_then(|(i, t)| i.map(|i| (i, t)));
    Some((name, code))
}

pub(crate) fn emit(inputs: &Inputs<'_>) -> TokenStream {
    let (header, bearer) = auth_header(inputs.corpus);
    let credential = if bearer {
        quote!(format!("Bearer {}", key.0))
    } else {
        quote!(key.0.clone())
    };
    let header_sets: Vec<BTreeSet<String>> = inputs
        .ops
        .iter()
        .map(|op| {
            op.parameters
                .iter()
                .filter(|p| p.location == "header")
                .map(|p| p.name.to_ascii_lowercase())
                .collect()
        })
        .collect();
    let shared_headers: BTreeSet<String> = match header_sets.split_first() {
        Some((first, rest)) => first
            .iter()
            .filter(|h| rest.iter().all(|set| set.contains(*h)))
            .cloned()
            .collect(),
        None => BTreeSet::new(),
    };
    let model_names: BTreeSet<String> = inputs
        .models
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Struct(s) => Some(s.ident.to_string()),
            Item::Enum(e) => Some(e.ident.to_string()),
            Item::Type(t) => Some(t.ident.to_string()),
            _ => None,
        })
        .chain(inputs.open_enums.iter().cloned())
        .chain(inputs.reexported_enums.iter().cloned())
        .collect();
    let parts: Vec<OpParts> = inputs
        .ops
        .iter()
        .map(|op| operation(op, inputs, &shared_headers, &model_names))
        .collect();
    let methods = parts.iter().map(|p| &p.method);
    let builders = parts.iter().map(|p| &p.builder);

    let reserved = [
        "status",
        "headers",
        "header",
        "new",
        "map",
        "into_inner",
        "into_parts",
    ];
    let ok_accessors = inputs
        .headers
        .iter()
        .filter(|h| h.on_success && !reserved.contains(&accessor_name(&h.name).as_str()))
        .map(|h| accessor(h, quote!(&self.headers)));
    let err_accessors = inputs
        .headers
        .iter()
        .filter(|h| h.on_error && !reserved.contains(&accessor_name(&h.name).as_str()))
        .map(|h| accessor(h, quote!(self.headers()?)));

    let (envelope_ty, envelope_decl, api_fields, api_build, api_code, api_display) =
        match error_model(inputs) {
            Some((name, code)) => {
                let ty = model_path(&name);
                match code {
                    Some((field, code_ty)) => {
                        let code_ty = model_path(&code_ty);
                        (
                            ty.clone(),
                            quote!(),
                            quote! {
                                /// The error code (an open enum: a registered code or a vendor one).
                                code: #code_ty,
                                /// The whole envelope.
                                envelope: #ty,
                            },
                            quote!(Error::Api { status, code: envelope.#field.clone(), envelope, headers }),
                            quote! {
                                /// The error code of an API error.
                                pub fn code(&self) -> Option<&#code_ty> {
                                    match self {
                                        Error::Api { code, .. } => Some(code),
                                        _ => None,
                                    }
                                }
                            },
                            quote!(Error::Api { status, code, .. } => write!(f, "HTTP {status}: {code}")),
                        )
                    }
                    None => (
                        ty.clone(),
                        quote!(),
                        quote! {
                            /// The whole envelope.
                            envelope: #ty,
                        },
                        quote!(Error::Api {
                            status,
                            envelope,
                            headers
                        }),
                        quote!(),
                        quote!(Error::Api { status, .. } => write!(f, "HTTP {status}")),
                    ),
                }
            }
            None => (
                quote!(ErrorEnvelope),
                quote! {
                    /// The error body a failed request answers with.
                    #[derive(Debug, Clone, PartialEq, ::serde::Serialize, ::serde::Deserialize)]
                    pub struct ErrorEnvelope {
                        /// The error code.
                        pub error: ::std::string::String,
                        /// A sentence for people.
                        #[serde(default)]
                        pub message: ::std::string::String,
                        /// Code-specific details.
                        #[serde(default, skip_serializing_if = "Option::is_none")]
                        pub details: Option<::serde_json::Value>,
                    }
                },
                quote! {
                    /// The whole envelope.
                    envelope: ErrorEnvelope,
                },
                quote!(Error::Api {
                    status,
                    envelope,
                    headers
                }),
                quote!(),
                quote!(Error::Api { status, envelope, .. } => write!(f, "HTTP {status}: {}", envelope.error)),
            ),
        };

    let helpers = inputs.helper_modules.iter().map(|m| {
        let m = ident(m);
        quote!(mod #m; pub use #m::*;)
    });

    quote! {
        //! A typed async client for the REST operations of the OpenAPI document.
        //!
        //! `Client::new(base_url).with_api_key(key)`, then one builder per operation:
        //! `client.get_run(run_id).send().await` answers a [`ResponseValue`] that derefs to
        //! the model. Errors are [`Error`]: `Api` (the host's error envelope), `Transport`,
        //! `Decode` and `InvalidRequest`. Event-stream operations answer an [`EventStream`].

        use std::collections::VecDeque;
        use std::fmt;
        use std::future::Future;
        use std::ops::{Deref, DerefMut};
        use std::pin::Pin;
        use std::task::{Context, Poll};
        use std::time::Duration;

        pub use reqwest::header::HeaderMap;

        #(#helpers)*

        #envelope_decl

        /// Why a call failed.
        #[derive(Debug)]
        #[non_exhaustive]
        pub enum Error {
            /// Nothing was sent: a parameter or body field does not fit its schema, or a
            /// required body field is missing.
            InvalidRequest(::std::string::String),
            /// The host answered a non-2xx status with its error envelope.
            Api {
                /// The HTTP status.
                status: u16,
                #api_fields
                /// The answer's headers (`Retry-After`, …).
                headers: HeaderMap,
            },
            /// The request did not complete.
            Transport(reqwest::Error),
            /// The answer is not the shape the document promises.
            Decode {
                /// The HTTP status.
                status: u16,
                /// What did not fit.
                message: ::std::string::String,
                /// The start of the body, for the log.
                body: ::std::string::String,
            },
            /// An event stream dropped and could not be reopened.
            Stream(::std::string::String),
        }

        impl Error {
            /// The HTTP status of an `Api` or `Decode` error.
            pub fn status(&self) -> Option<u16> {
                match self {
                    Error::Api { status, .. } | Error::Decode { status, .. } => Some(*status),
                    Error::Transport(e) => e.status().map(|s| s.as_u16()),
                    _ => None,
                }
            }

            /// The headers of an `Api` error's answer.
            pub fn headers(&self) -> Option<&HeaderMap> {
                match self {
                    Error::Api { headers, .. } => Some(headers),
                    _ => None,
                }
            }

            #api_code

            #(#err_accessors)*
        }

        impl fmt::Display for Error {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    Error::InvalidRequest(m) => write!(f, "invalid request: {m}"),
                    #api_display,
                    Error::Transport(e) => write!(f, "transport: {e}"),
                    Error::Decode { status, message, .. } => write!(f, "cannot decode the HTTP {status} answer: {message}"),
                    Error::Stream(m) => write!(f, "event stream: {m}"),
                }
            }
        }

        impl std::error::Error for Error {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                match self {
                    Error::Transport(e) => Some(e),
                    _ => None,
                }
            }
        }

        impl From<reqwest::Error> for Error {
            fn from(e: reqwest::Error) -> Self {
                Error::Transport(e)
            }
        }

        /// An answer: the decoded body with the status and headers it came with. Derefs to
        /// the body.
        #[derive(Debug, Clone)]
        pub struct ResponseValue<T> {
            inner: T,
            status: u16,
            headers: HeaderMap,
        }

        impl<T> ResponseValue<T> {
            /// A value as an answer would carry it (for tests and mocks).
            pub fn new(inner: T, status: u16, headers: HeaderMap) -> Self {
                Self { inner, status, headers }
            }

            /// The HTTP status.
            pub fn status(&self) -> u16 {
                self.status
            }

            /// Every header of the answer.
            pub fn headers(&self) -> &HeaderMap {
                &self.headers
            }

            /// One header as text, when present and visible ASCII.
            pub fn header(&self, name: &str) -> Option<&str> {
                header_str(&self.headers, name)
            }

            /// The body.
            pub fn into_inner(self) -> T {
                self.inner
            }

            /// Body, status and headers.
            pub fn into_parts(self) -> (T, u16, HeaderMap) {
                (self.inner, self.status, self.headers)
            }

            /// The same answer with its body mapped.
            pub fn map<U>(self, f: impl FnOnce(T) -> U) -> ResponseValue<U> {
                ResponseValue { inner: f(self.inner), status: self.status, headers: self.headers }
            }

            #(#ok_accessors)*
        }

        impl<T> Deref for ResponseValue<T> {
            type Target = T;
            fn deref(&self) -> &T {
                &self.inner
            }
        }

        impl<T> DerefMut for ResponseValue<T> {
            fn deref_mut(&mut self) -> &mut T {
                &mut self.inner
            }
        }

        /// The answer to a conditional read (`If-None-Match`).
        #[derive(Debug, Clone, PartialEq)]
        pub enum Conditional<T> {
            /// The current representation.
            Fresh(T),
            /// `304`: the copy the request named is current.
            NotModified,
        }

        impl<T> Conditional<T> {
            /// The representation, unless it was not modified.
            pub fn fresh(self) -> Option<T> {
                match self {
                    Conditional::Fresh(t) => Some(t),
                    Conditional::NotModified => None,
                }
            }

            /// The representation by reference, unless it was not modified.
            pub fn as_fresh(&self) -> Option<&T> {
                match self {
                    Conditional::Fresh(t) => Some(t),
                    Conditional::NotModified => None,
                }
            }

            /// True for a `304`.
            pub fn is_not_modified(&self) -> bool {
                matches!(self, Conditional::NotModified)
            }
        }

        fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
            headers.get(name)?.to_str().ok()
        }

        /// Projects an id into one path segment: bytes outside `[A-Za-z0-9._-]` become `~`
        /// and two upper-case hex digits, so a tenant-bound id never splits the path.
        pub fn project_path_segment(id: &str) -> ::std::string::String {
            let mut out = ::std::string::String::with_capacity(id.len());
            for byte in id.bytes() {
                if byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-') {
                    out.push(char::from(byte));
                } else {
                    out.push_str(&format!("~{byte:02X}"));
                }
            }
            out
        }

        /// The API key; never printed.
        #[derive(Clone)]
        struct Secret(::std::string::String);

        impl fmt::Debug for Secret {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("<redacted>")
            }
        }

        /// A client bound to one host. Cheap to clone (the connection pool is shared).
        #[derive(Clone)]
        pub struct Client {
            base_url: ::std::string::String,
            http: reqwest::Client,
            api_key: Option<Secret>,
            headers: Vec<(::std::string::String, ::std::string::String)>,
        }

        impl fmt::Debug for Client {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                // Header values may be credentials too: only their names are shown.
                let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
                f.debug_struct("Client")
                    .field("base_url", &self.base_url)
                    .field("api_key", &self.api_key)
                    .field("headers", &names)
                    .finish_non_exhaustive()
            }
        }

        impl Client {
            /// A client for the host at `base_url` (scheme, host and optional path prefix).
            pub fn new(base_url: impl Into<::std::string::String>) -> Self {
                Self::with_client(base_url, reqwest::Client::new())
            }

            /// A client that sends through an existing `reqwest::Client` (timeouts, proxies, TLS).
            pub fn with_client(base_url: impl Into<::std::string::String>, http: reqwest::Client) -> Self {
                let base_url = base_url.into().trim_end_matches('/').to_owned();
                Self { base_url, http, api_key: None, headers: Vec::new() }
            }

            /// Sends `key` as the API credential on every request that takes one.
            pub fn with_api_key(mut self, key: impl Into<::std::string::String>) -> Self {
                self.api_key = Some(Secret(key.into()));
                self
            }

            /// Sends a header on every request, e.g. `OpenWOP-Version`.
            pub fn with_header(mut self, name: impl Into<::std::string::String>, value: impl Into<::std::string::String>) -> Self {
                self.headers.push((name.into(), value.into()));
                self
            }

            /// The host's base URL, without a trailing slash.
            pub fn base_url(&self) -> &str {
                &self.base_url
            }

            /// The underlying `reqwest::Client`.
            pub fn http(&self) -> &reqwest::Client {
                &self.http
            }

            fn request(
                &self,
                method: reqwest::Method,
                path: &str,
                anonymous: bool,
                query: &[(&'static str, ::std::string::String)],
                headers: &[(&'static str, ::std::string::String)],
            ) -> Result<reqwest::RequestBuilder, Error> {
                let mut request = self.http.request(method, format!("{}{path}", self.base_url));
                if !query.is_empty() {
                    request = request.query(query);
                }
                for (name, value) in &self.headers {
                    request = request.header(name.as_str(), value.as_str());
                }
                for (name, value) in headers {
                    request = request.header(*name, value.as_str());
                }
                if let (false, Some(key)) = (anonymous, &self.api_key) {
                    let mut value = reqwest::header::HeaderValue::from_str(&#credential)
                        .map_err(|_| Error::InvalidRequest("the API key is not a valid header value".to_owned()))?;
                    value.set_sensitive(true);
                    request = request.header(#header, value);
                }
                Ok(request)
            }

            #(#methods)*
        }

        /// One request on its way: everything but the body is plain data.
        #[derive(Debug)]
        struct Call<'a> {
            client: &'a Client,
            method: reqwest::Method,
            path: ::std::string::String,
            anonymous: bool,
            query: Vec<(&'static str, ::std::string::String)>,
            headers: Vec<(&'static str, ::std::string::String)>,
            body: Option<::serde_json::Value>,
        }

        impl<'a> Call<'a> {
            fn new(client: &'a Client, method: reqwest::Method, path: ::std::string::String, anonymous: bool) -> Self {
                Self { client, method, path, anonymous, query: Vec::new(), headers: Vec::new(), body: None }
            }

            fn build(&self) -> Result<reqwest::RequestBuilder, Error> {
                let request = self.client.request(self.method.clone(), &self.path, self.anonymous, &self.query, &self.headers)?;
                Ok(match &self.body {
                    Some(body) => request.json(body),
                    None => request,
                })
            }

            /// Sends; a non-2xx answer is an `Error` (a `304` too, unless `not_modified_ok`).
            async fn send(&self, not_modified_ok: bool) -> Result<reqwest::Response, Error> {
                let response = self.build()?.send().await?;
                let status = response.status();
                if status.is_success() || (not_modified_ok && status.as_u16() == 304) {
                    return Ok(response);
                }
                Err(error_answer(response).await)
            }
        }

        /// A body assembled from field setters, checked against its model when sent.
        #[derive(Debug, Default)]
        struct Fields {
            map: ::serde_json::Map<::std::string::String, ::serde_json::Value>,
            set_any: bool,
            problem: Option<::std::string::String>,
        }

        impl Fields {
            fn whole<T: ::serde::Serialize>(&mut self, body: &T) {
                self.set_any = true;
                match ::serde_json::to_value(body) {
                    Ok(::serde_json::Value::Object(map)) => self.map.extend(map),
                    Ok(other) => {
                        self.map.clear();
                        self.map.insert(::std::string::String::new(), other);
                    }
                    Err(e) => self.fail(format!("the body does not serialise: {e}")),
                }
            }

            fn set<T: ::serde::Serialize, E: fmt::Display>(&mut self, key: &str, value: Result<T, E>) {
                self.set_any = true;
                match value.map_err(|e| e.to_string()).and_then(|v| ::serde_json::to_value(v).map_err(|e| e.to_string())) {
                    Ok(v) => {
                        self.map.insert(key.to_owned(), v);
                    }
                    Err(e) => self.fail(format!("`{key}`: {e}")),
                }
            }

            fn fail(&mut self, message: ::std::string::String) {
                if self.problem.is_none() {
                    self.problem = Some(message);
                }
            }

            /// The body to send: checked by decoding it as `T`, then encoded from `T`.
            fn finish<T: ::serde::Serialize + ::serde::de::DeserializeOwned>(self, required: bool) -> Result<Option<::serde_json::Value>, Error> {
                if let Some(problem) = self.problem {
                    return Err(Error::InvalidRequest(problem));
                }
                if !self.set_any && !required {
                    return Ok(None);
                }
                let value = match self.map.get("") {
                    Some(whole) if self.map.len() == 1 => whole.clone(),
                    _ => ::serde_json::Value::Object(self.map),
                };
                let typed: T = ::serde_json::from_value(value).map_err(|e| Error::InvalidRequest(format!("body: {e}")))?;
                ::serde_json::to_value(typed)
                    .map(Some)
                    .map_err(|e| Error::InvalidRequest(format!("body: {e}")))
            }
        }

        fn excerpt(bytes: &[u8]) -> ::std::string::String {
            let text = ::std::string::String::from_utf8_lossy(bytes);
            let mut end = text.len().min(512);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text[..end].to_owned()
        }

        async fn error_answer(response: reqwest::Response) -> Error {
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            let bytes = match response.bytes().await {
                Ok(b) => b,
                Err(e) => return Error::Transport(e),
            };
            match ::serde_json::from_slice::<#envelope_ty>(&bytes) {
                Ok(envelope) => #api_build,
                Err(e) => Error::Decode {
                    status,
                    message: format!("a non-2xx answer without an error envelope ({e})"),
                    body: excerpt(&bytes),
                },
            }
        }

        async fn json_answer<T: ::serde::de::DeserializeOwned>(response: reqwest::Response) -> Result<ResponseValue<T>, Error> {
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            let bytes = response.bytes().await?;
            // An empty answer decodes as JSON null: `()`, `Option` and `Value` accept it.
            let body: &[u8] = if bytes.is_empty() { b"null" } else { &bytes };
            match ::serde_json::from_slice(body) {
                Ok(inner) => Ok(ResponseValue { inner, status, headers }),
                Err(e) => Err(Error::Decode { status, message: e.to_string(), body: excerpt(&bytes) }),
            }
        }

        async fn conditional_answer<T: ::serde::de::DeserializeOwned>(response: reqwest::Response) -> Result<ResponseValue<Conditional<T>>, Error> {
            if response.status().as_u16() == 304 {
                let headers = response.headers().clone();
                return Ok(ResponseValue { inner: Conditional::NotModified, status: 304, headers });
            }
            Ok(json_answer::<T>(response).await?.map(Conditional::Fresh))
        }

        /// How an [`EventStream`] reconnects.
        #[derive(Debug, Clone, Copy)]
        struct StreamOptions {
            max_reconnects: u32,
            idle_timeout: Duration,
        }

        impl Default for StreamOptions {
            fn default() -> Self {
                // The host sends a keep-alive comment at least every 30 seconds.
                Self { max_reconnects: 8, idle_timeout: Duration::from_secs(75) }
            }
        }

        /// One dispatched server-sent event.
        #[derive(Debug, Clone)]
        struct Frame {
            data: ::std::string::String,
        }

        /// The connection side of an [`EventStream`]: SSE framing and reconnection.
        struct StreamState {
            client: Client,
            path: ::std::string::String,
            anonymous: bool,
            query: Vec<(&'static str, ::std::string::String)>,
            headers: Vec<(&'static str, ::std::string::String)>,
            options: StreamOptions,
            response: Option<reqwest::Response>,
            status: u16,
            buffer: Vec<u8>,
            data: Option<::std::string::String>,
            frames: VecDeque<Frame>,
            last_event_id: Option<::std::string::String>,
            retry: Option<Duration>,
            frames_this_connection: usize,
            confirming: bool,
            failures: u32,
            done: bool,
        }

        impl StreamState {
            async fn connect(&mut self) -> Result<reqwest::Response, Error> {
                let mut headers = self.headers.clone();
                headers.push(("Accept", "text/event-stream".to_owned()));
                if let Some(id) = &self.last_event_id {
                    headers.push(("Last-Event-ID", id.clone()));
                }
                let request = self.client.request(reqwest::Method::GET, &self.path, self.anonymous, &self.query, &headers)?;
                let response = request.send().await?;
                if !response.status().is_success() {
                    return Err(error_answer(response).await);
                }
                self.status = response.status().as_u16();
                Ok(response)
            }

            fn backoff(&self) -> Duration {
                let base = self.retry.unwrap_or(Duration::from_millis(250));
                let factor = 1u32 << self.failures.saturating_sub(1).min(5);
                (base * factor).min(Duration::from_secs(5))
            }

            /// Feeds bytes to the SSE parser (lines end in LF, CRLF or CR).
            fn feed(&mut self, bytes: &[u8]) {
                self.buffer.extend_from_slice(bytes);
                loop {
                    let Some(end) = self.buffer.iter().position(|b| *b == b'\n' || *b == b'\r') else {
                        return;
                    };
                    let mut next = end + 1;
                    if self.buffer[end] == b'\r' {
                        match self.buffer.get(end + 1) {
                            Some(b'\n') => next += 1,
                            Some(_) => {}
                            // A CR at the end may be the first half of a CRLF.
                            None => return,
                        }
                    }
                    let line = ::std::string::String::from_utf8_lossy(&self.buffer[..end]).into_owned();
                    self.buffer.drain(..next);
                    self.line(&line);
                }
            }

            fn line(&mut self, line: &str) {
                if line.is_empty() {
                    if let Some(data) = self.data.take() {
                        self.frames.push_back(Frame { data });
                        self.frames_this_connection += 1;
                        self.confirming = false;
                    }
                    return;
                }
                if line.starts_with(':') {
                    return;
                }
                let (field, value) = match line.split_once(':') {
                    Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                    None => (line, ""),
                };
                match field {
                    "data" => match &mut self.data {
                        Some(data) => {
                            data.push('\n');
                            data.push_str(value);
                        }
                        None => self.data = Some(value.to_owned()),
                    },
                    "id" if !value.contains('\0') => self.last_event_id = Some(value.to_owned()),
                    "retry" => {
                        if let Ok(ms) = value.trim().parse::<u64>() {
                            self.retry = Some(Duration::from_millis(ms));
                        }
                    }
                    _ => {}
                }
            }

            fn dropped(&mut self, why: ::std::string::String) -> Option<Result<Frame, Error>> {
                self.response = None;
                self.buffer.clear();
                self.data = None;
                self.confirming = false;
                self.failures += 1;
                if self.failures > self.options.max_reconnects {
                    self.done = true;
                    return Some(Err(Error::Stream(format!("dropped {} times in a row; last: {why}", self.failures))));
                }
                None
            }

            async fn next_frame(&mut self) -> Option<Result<Frame, Error>> {
                loop {
                    if let Some(frame) = self.frames.pop_front() {
                        return Some(Ok(frame));
                    }
                    if self.done {
                        return None;
                    }
                    let Some(response) = self.response.as_mut() else {
                        if self.failures > 0 {
                            tokio::time::sleep(self.backoff()).await;
                        }
                        match self.connect().await {
                            Ok(response) => {
                                self.response = Some(response);
                                self.frames_this_connection = 0;
                            }
                            Err(Error::Transport(e)) => {
                                if let Some(end) = self.dropped(e.to_string()) {
                                    return Some(end);
                                }
                            }
                            // The host refused to resume (the run is gone, the key revoked…).
                            Err(other) => {
                                self.done = true;
                                return Some(Err(other));
                            }
                        }
                        continue;
                    };
                    match tokio::time::timeout(self.options.idle_timeout, response.chunk()).await {
                        Ok(Ok(Some(bytes))) => {
                            self.failures = 0;
                            self.feed(&bytes);
                        }
                        // The host closed the stream. It does so after a terminal event, and
                        // a resumption with nothing newer closes at once: reconnect once, and
                        // a close without frames ends the stream.
                        Ok(Ok(None)) => {
                            self.response = None;
                            self.buffer.clear();
                            self.data = None;
                            if self.confirming && self.frames_this_connection == 0 {
                                self.done = true;
                                return None;
                            }
                            self.confirming = true;
                        }
                        Ok(Err(e)) => {
                            if let Some(end) = self.dropped(e.to_string()) {
                                return Some(end);
                            }
                        }
                        Err(_) => {
                            let why = format!("nothing received for {:?}", self.options.idle_timeout);
                            if let Some(end) = self.dropped(why) {
                                return Some(end);
                            }
                        }
                    }
                }
            }
        }

        type Pending<T> = Pin<Box<dyn Future<Output = (Option<Result<T, Error>>, Box<StreamState>)> + Send>>;

        /// A server-sent event stream of `T` (a run's events, the host's events).
        ///
        /// Each `data:` frame is decoded as `T`; keep-alive comments are skipped. After a
        /// dropped connection (an error, or silence past the idle timeout) it reconnects with
        /// `Last-Event-ID` set to the newest `id:` received, backing off, until
        /// `max_reconnects` attempts in a row have failed (then it yields [`Error::Stream`]
        /// and ends). When the host closes the stream (it does after a run's terminal event)
        /// it resumes once more; a resumption the host closes without frames ends the stream.
        /// Use [`EventStream::next`], or the `futures` `Stream` impl.
        pub struct EventStream<T> {
            state: Option<Box<StreamState>>,
            pending: Option<Pending<T>>,
            last_event_id: Option<::std::string::String>,
        }

        impl<T> fmt::Debug for EventStream<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct("EventStream").field("last_event_id", &self.last_event_id).finish_non_exhaustive()
            }
        }

        impl<T: ::serde::de::DeserializeOwned + Send + 'static> EventStream<T> {
            async fn open(call: Call<'_>, last_event_id: Option<::std::string::String>, options: StreamOptions) -> Result<Self, Error> {
                let mut state = Box::new(StreamState {
                    client: call.client.clone(),
                    path: call.path,
                    anonymous: call.anonymous,
                    query: call.query,
                    headers: call.headers,
                    options,
                    response: None,
                    status: 200,
                    buffer: Vec::new(),
                    data: None,
                    frames: VecDeque::new(),
                    last_event_id,
                    retry: None,
                    frames_this_connection: 0,
                    confirming: false,
                    failures: 0,
                    done: false,
                });
                let response = state.connect().await?;
                state.response = Some(response);
                let last_event_id = state.last_event_id.clone();
                Ok(Self { state: Some(state), pending: None, last_event_id })
            }

            /// The next event; `None` once the stream has ended.
            pub async fn next(&mut self) -> Option<Result<T, Error>> {
                std::future::poll_fn(|cx| self.poll_item(cx)).await
            }

            /// The newest `id:` received (what a reconnection sends as `Last-Event-ID`).
            pub fn last_event_id(&self) -> Option<&str> {
                self.last_event_id.as_deref()
            }

            fn poll_item(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T, Error>>> {
                if self.pending.is_none() {
                    let Some(mut state) = self.state.take() else {
                        return Poll::Ready(None);
                    };
                    self.pending = Some(Box::pin(async move {
                        let item = state.next_frame().await.map(|frame| {
                            frame.and_then(|frame| {
                                ::serde_json::from_str::<T>(&frame.data).map_err(|e| Error::Decode {
                                    status: state.status,
                                    message: format!("an event is not the documented shape: {e}"),
                                    body: excerpt(frame.data.as_bytes()),
                                })
                            })
                        });
                        (item, state)
                    }));
                }
                let Some(pending) = self.pending.as_mut() else {
                    return Poll::Ready(None);
                };
                match pending.as_mut().poll(cx) {
                    Poll::Ready((item, state)) => {
                        self.pending = None;
                        self.last_event_id = state.last_event_id.clone();
                        self.state = Some(state);
                        Poll::Ready(item)
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }

        impl<T: ::serde::de::DeserializeOwned + Send + 'static> ::futures_core::Stream for EventStream<T> {
            type Item = Result<T, Error>;
            fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
                self.get_mut().poll_item(cx)
            }
        }

        /// One builder per operation; each is made by the `Client` method of the same name.
        pub mod builder {
            #(#builders)*
        }
    }
}
