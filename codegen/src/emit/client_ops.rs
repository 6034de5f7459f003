//! One operation of the client: its `Client` method and its builder (path ids, query and
//! header parameters, body setters, the per-call settings, paging, `send`).

use std::collections::BTreeSet;

use heck::ToSnakeCase;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use serde_json::Value;
use syn::{Fields, Item, Type};

use crate::emit::client_docs;
use crate::emit::models_post::{json_name, outer};
use crate::format::ident;
use crate::load::Corpus;
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
    /// The header parameters the client sends on every call (lower case), from
    /// `emit::client::shared_headers`.
    pub shared_headers: &'a BTreeSet<String>,
    /// Hand-written modules under `client/` (from `codegen/templates/client/`).
    pub helper_modules: &'a [String],
}

pub(crate) fn model_path(name: &str) -> TokenStream {
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
pub(crate) fn struct_of<'a>(models: &'a syn::File, name: &str) -> Option<&'a syn::ItemStruct> {
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
            // Builder methods every operation's builder has, or its kind has, whatever
            // its parameters: a parameter of that name is the one renamed
            // (`pollRunEvents`'s `timeout` query parameter is `query_timeout`), so the
            // builder's own methods keep their names whatever parameters the spec adds.
            [
                "send",
                "send_raw",
                "sent",
                "body",
                "new",
                "call",
                "fields",
                "retry",
                "header",
                "timeout",
                "no_timeout",
                "idle_timeout",
                "max_reconnects",
                "reconnect_for",
                "pages",
                "stream",
            ]
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

/// Body field setters an operation's builder renames because one of its parameters holds
/// the name (`createRun` with a `workflowId` query parameter: the body's `workflow_id`
/// setter becomes `body_workflow_id`, and `.workflow_id("echo")` still compiles but sets the
/// query), as `(field, setter)`. Names taken the way [`operation`] takes them; a clash with
/// one of the builder's own methods is by design (stable names) and not listed.
pub(crate) fn renamed_body_setters(
    op: &Operation,
    named: &dyn Fn(&Value) -> Option<String>,
    models: &syn::File,
    shared_headers: &BTreeSet<String>,
) -> Vec<(String, String)> {
    let Some(fields) = op
        .body
        .as_ref()
        .and_then(named)
        .and_then(|m| struct_of(models, &m))
        .map(|s| &s.fields)
        .filter(|f| matches!(f, Fields::Named(_)))
    else {
        return Vec::new();
    };
    let mut names = Names::new();
    let builtin = names.0.clone();
    for p in &op.parameters {
        match p.location.as_str() {
            "path" => drop(names.take(&p.name, "path")),
            "query" => drop(names.take(&p.name, "query")),
            "header" if !shared_headers.contains(&p.name.to_ascii_lowercase()) => {
                drop(names.take_header(&p.name));
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for field in fields {
        let json = json_name(field);
        let plain = json.to_snake_case();
        let taken = names.take(&json, "body").to_string();
        let taken = taken.trim_start_matches("r#").to_owned();
        if taken != plain && !builtin.contains(&plain) {
            out.push((json, taken));
        }
    }
    out
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

pub(crate) struct OpParts {
    pub method: TokenStream,
    pub builder: TokenStream,
    /// Items outside the builder module (conversions of the paging cursor).
    pub extra: TokenStream,
    /// The builder has a conditional state (`if_none_match(..)`): the builder module needs
    /// its marker types.
    pub conditional: bool,
}

pub(crate) fn operation(
    op: &Operation,
    inputs: &Inputs<'_>,
    shared_headers: &BTreeSet<String>,
    model_names: &BTreeSet<String>,
) -> OpParts {
    // `ident`, not `format_ident!`: an operationId is any string (`2pause` → `_2pause`,
    // `self` → `Self_`); `openapi::load` has refused two that give one name.
    let (fn_name, builder_name) = crate::openapi::client_names(&op.operation_id);
    let (fn_name, builder_name) = (ident(&fn_name), ident(&builder_name));
    let verb = format_ident!("{}", op.method.to_uppercase());
    let anonymous = op.anonymous;
    let mut names = Names::new();

    // Path parameters are positional, in template order.
    let mut path_args = Vec::new();
    let mut path_arg_names = Vec::new();
    let mut pieces = Vec::new();
    let mut rest = op.path.as_str();
    let mut positional = BTreeSet::new();
    let mut run_id_init = None;
    let mut empty_checks = Vec::new();
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
        // An empty id would name another route (`/runs/` is the listing): refused before
        // anything is sent.
        empty_checks.push(quote! {
            if #arg.is_empty() {
                call.invalid.get_or_insert_with(|| format!("`{}` is empty", #raw));
            }
        });
        if raw == "runId" {
            run_id_init = Some(quote!(call.run_id = Some(#arg.to_owned());));
        }
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
        let doc = Some(client_docs::param_doc(p));
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
                    // Set twice, the last one counts (one parameter, not two).
                    self.call.set_query(#key, #render);
                    self
                }
            });
        }
    }

    let mut stream_last_event_id = None;
    let mut takes_key = false;
    // An operation that may answer `304` and takes `If-None-Match` has two states: a plain
    // read, whose `send()` answers the model (no `304` can answer a request naming no
    // ETag), and the conditional read `if_none_match(..)` turns it into, whose `send()`
    // answers `Conditional`. A user who never sends the header never matches a variant
    // that cannot happen.
    let conditional = op.not_modified
        && !op.streams
        && op.parameters.iter().any(|p| {
            p.location == "header"
                && p.name.eq_ignore_ascii_case("if-none-match")
                && !shared_headers.contains(&p.name.to_ascii_lowercase())
        });
    let mut conditional_setter = None;
    for p in op.parameters.iter().filter(|p| {
        p.location == "header" && !shared_headers.contains(&p.name.to_ascii_lowercase())
    }) {
        let key = &p.name;
        let doc = Some(client_docs::param_doc(p));
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
        } else if conditional && p.name.eq_ignore_ascii_case("if-none-match") {
            // Emitted with the builder, which it moves into its conditional state.
            conditional_setter = Some((name, key.clone(), client_docs::param_doc(p)));
        } else if p.name.eq_ignore_ascii_case("idempotency-key") {
            // Minted per call when not given, and sent on every attempt (see `RetryPolicy`).
            takes_key = true;
            setters.push(quote! {
                #(#[doc = #doc])*
                ///
                /// When it is not set, the client mints one for this call and sends it on every
                /// attempt, so a retry never acts twice.
                pub fn #name(mut self, value: impl Into<::std::string::String>) -> Self {
                    self.call.idempotency_key = Some(value.into());
                    self
                }
            });
        } else if p.required {
            required_args.push(quote!(#name: impl Into<::std::string::String>));
            required_names.push(name.clone());
            required_inits.push(quote!(call.headers.push((#key.to_owned(), #name.into()));));
        } else {
            setters.push(quote! {
                #(#[doc = #doc])*
                pub fn #name(mut self, value: impl Into<::std::string::String>) -> Self {
                    self.call.headers.push((#key.to_owned(), value.into()));
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
                let fallback = docs
                    .is_empty()
                    .then(|| format!(" Sets `{json}` in the body."));
                let fallback = fallback.iter();
                let docs = quote!(#(#docs)* #(#[doc = #fallback])*);
                let mut ty = &field.ty;
                if let Some((w, args)) = outer(ty)
                    && w == "Option"
                    && args.len() == 1
                {
                    ty = args[0];
                }
                let setter = match outer(ty) {
                    Some((w, _)) if w == "Map" || w == "Value" => quote! {
                        #docs
                        ///
                        /// Takes anything that serialises (a `json!` value, a map, your own
                        /// type); a value that fails to serialise fails `send()` with
                        /// `Error::InvalidRequest`, before anything is sent.
                        pub fn #name(mut self, value: impl ::serde::Serialize) -> Self {
                            self.fields.set(#json, Ok::<_, ::std::convert::Infallible>(value));
                            self
                        }
                    },
                    Some((w, args)) if w == "Vec" && args.len() == 1 => {
                        let item = qualify(args[0], model_names);
                        quote! {
                            #docs
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
                            #docs
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

    let model_ty = |name: Option<String>| match name {
        Some(n) => model_path(&n),
        None => quote!(::serde_json::Value),
    };

    // Per-call settings: their names are reserved in `Names::new`, so a parameter of the
    // same name was renamed instead.
    let retry_name = ident("retry");
    let header_name = ident("header");
    let mut setters_call = vec![
        quote! {
            /// The retry policy for this call (instead of the client's); `RetryPolicy::none()`
            /// sends it once.
            pub fn #retry_name(mut self, policy: super::RetryPolicy) -> Self {
                self.call.retry = Some(policy);
                self
            }
        },
        quote! {
            /// Sends one more header with this call. It replaces a client-wide one of the same
            /// name; an `Authorization` here replaces the client's API key for this call (a
            /// gateway forwarding each user's own token on a shared client).
            pub fn #header_name(mut self, name: impl Into<::std::string::String>, value: impl Into<::std::string::String>) -> Self {
                self.call.headers.push((name.into(), value.into()));
                self
            }
        },
    ];
    if !op.streams {
        let timeout_name = ident("timeout");
        setters_call.push(quote! {
            /// How long this call may take, per attempt (instead of the client's timeout).
            pub fn #timeout_name(mut self, timeout: ::std::time::Duration) -> Self {
                self.call.timeout = Some(Some(timeout));
                self
            }

            /// No timeout for this call.
            pub fn no_timeout(mut self) -> Self {
                self.call.timeout = Some(None);
                self
            }
        });
    }

    let paged = (!op.streams && !op.not_modified)
        .then(|| paging(op, inputs, model_names))
        .flatten();
    let mut extra = quote!();
    if let Some(p) = &paged {
        let (page_ty, item_ty, items, cursor, key) = (
            &p.page,
            &p.item,
            &p.items_field,
            &p.cursor_field,
            &p.query_key,
        );
        let pages_name = ident("pages");
        let stream_name = ident("stream");
        setters_call.push(quote! {
            /// Every page, following `nextCursor` from this call's `cursor` (or the first page)
            /// until a page has none. Each page is one call, retried like any other.
            pub fn #pages_name(self) -> super::Pages<'a, #page_ty> {
                let first = self.call.query.iter().find(|(k, _)| *k == #key).map(|(_, v)| v.clone());
                let call = self.call;
                super::Pages::new(
                    first,
                    move |cursor| {
                        let mut call = call.clone();
                        if let Some(cursor) = cursor {
                            call.set_query(#key, cursor);
                        }
                        Box::pin(async move {
                            super::json_answer(call.send(false).await?)
                        })
                    },
                    |page| page.#cursor.as_ref().map(|c| c.to_string()),
                )
            }

            /// Every item across the pages (see [`Self::pages`]).
            pub fn #stream_name(self) -> super::Items<'a, #page_ty, #item_ty> {
                super::Items::new(self.#pages_name(), |page| page.#items)
            }
        });
        if let Some(cursor_ty) = &p.cursor_ty {
            extra = quote! {
                impl ::std::convert::From<&#cursor_ty> for ::std::string::String {
                    fn from(cursor: &#cursor_ty) -> Self {
                        cursor.to_string()
                    }
                }

                impl ::std::convert::AsRef<str> for #cursor_ty {
                    fn as_ref(&self) -> &str {
                        self
                    }
                }
            };
        }
    }

    let (send, extra_fields, extra_inits) = if op.streams {
        let item = model_ty((inputs.stream_item)(op));
        let last = stream_last_event_id.map(|_| quote!(self.last_event_id));
        let last = last.unwrap_or_else(|| quote!(None));
        (
            quote! {
                /// Opens the stream (retrying as the retry policy says). An error answer is an
                /// `Err` here; once open, the stream reconnects by itself (see
                /// [`super::EventStream`]).
                pub async fn send(self) -> Result<super::EventStream<#item>, super::Error> {
                    let mut call = self.call;
                    #body_finish
                    super::EventStream::open(call, #last, self.options).await
                }

                /// How long the stream keeps reconnecting while every attempt fails, from the
                /// first failure in a row (default
                /// [`DEFAULT_RECONNECT_FOR`](super::DEFAULT_RECONNECT_FOR), 120 s: a host
                /// restart or deploy). A connection that delivers an event or stays up 10 s
                /// starts the count over; past it the stream ends with `Error::Stream`.
                pub fn reconnect_for(mut self, budget: ::std::time::Duration) -> Self {
                    self.options.reconnect_for = budget;
                    self
                }

                /// How many failures in a row end the stream with `Error::Stream`, besides
                /// [`reconnect_for`](Self::reconnect_for)'s time (no count by default).
                pub fn max_reconnects(mut self, attempts: u32) -> Self {
                    self.options.max_reconnects = Some(attempts);
                    self
                }

                /// How long the stream may stay silent (not even a keep-alive comment) before
                /// it counts as dropped and reconnects (default
                /// [`DEFAULT_STREAM_IDLE_TIMEOUT`](super::DEFAULT_STREAM_IDLE_TIMEOUT)).
                pub fn idle_timeout(mut self, timeout: ::std::time::Duration) -> Self {
                    self.options.idle_timeout = timeout;
                    self
                }

                /// How long opening the stream may wait for the host's answer, per
                /// connection (instead of the client's timeout; never more than the idle
                /// timeout). The stream itself has no total timeout: a run may wait on a
                /// person for days.
                pub fn timeout(mut self, timeout: ::std::time::Duration) -> Self {
                    self.call.timeout = Some(Some(timeout));
                    self
                }

                /// No timeout for opening the stream but the idle timeout.
                pub fn no_timeout(mut self) -> Self {
                    self.call.timeout = Some(None);
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
        let raw_doc = quote! {
            /// Sends the request as `send` does (the same retries, hooks and errors: a
            /// non-2xx answer is an `Err`), and answers the body undecoded, with its status
            /// and headers: for a media type the crate does not model (an `Accept` header
            /// set with `.header(..)`), or to read an answer as it came.
        };
        // `send` and `send_raw` read the same answer: the body checked, the call sent with
        // its retries, a `304` kept where the operation can answer one.
        let not_modified = op.not_modified;
        let sent = if conditional {
            // Whether a `304` is an answer depends on the state: the plain `send()` refuses
            // it (it cannot answer a request naming no ETag); `send_raw` hands it over.
            quote! {
                /// The answer, read whole (what `send` decodes and `send_raw` hands over).
                async fn sent(self, not_modified_ok: bool) -> Result<super::Answer, super::Error> {
                    let mut call = self.call;
                    #body_finish
                    call.send(not_modified_ok).await
                }

                #raw_doc
                pub async fn send_raw(self) -> Result<super::ResponseValue<::std::vec::Vec<u8>>, super::Error> {
                    Ok(super::raw_answer(self.sent(true).await?))
                }
            }
        } else {
            quote! {
                /// The answer, read whole (what `send` decodes and `send_raw` hands over).
                async fn sent(self) -> Result<super::Answer, super::Error> {
                    let mut call = self.call;
                    #body_finish
                    call.send(#not_modified).await
                }

                #raw_doc
                pub async fn send_raw(self) -> Result<super::ResponseValue<::std::vec::Vec<u8>>, super::Error> {
                    Ok(super::raw_answer(self.sent().await?))
                }
            }
        };
        let send = if conditional {
            // Emitted in the impls of the two states, below.
            quote!()
        } else if op.not_modified {
            quote! {
                /// Sends the request. A `304` (the copy named by `If-None-Match` is
                /// current) is `Conditional::NotModified`, not an error.
                pub async fn send(self) -> Result<super::ResponseValue<super::Conditional<#body>>, super::Error> {
                    super::conditional_answer(self.sent().await?)
                }
            }
        } else {
            quote! {
                /// Sends the request (retrying as the retry policy says).
                pub async fn send(self) -> Result<super::ResponseValue<#body>, super::Error> {
                    super::json_answer(self.sent().await?)
                }
            }
        };
        (
            quote! {
                #send

                #sent
            },
            quote!(),
            quote!(),
        )
    };

    let docs = client_docs::method_docs(
        inputs.corpus,
        op,
        &fn_name.to_string(),
        &path_arg_names
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        required_args.is_empty(),
        paged.is_some(),
    );
    let op_doc = format!(
        " A `{}` call (`{} {}`), made by [`Client::{fn_name}`](super::Client::{fn_name}): set what you need, then `send().await`.",
        op.operation_id,
        op.method.to_uppercase(),
        op.path
    );
    let op_id = &op.operation_id;
    let key_init = takes_key.then(|| quote!(call.takes_idempotency_key = true;));
    // An operation that needs no credential but names something in its path is reached
    // by the credential in its path (the resume token): that path stays out of logs.
    let secret_init =
        (anonymous && !path_args.is_empty()).then(|| quote!(call.secret_path = true;));
    let method = quote! {
        #(#[doc = #docs])*
        pub fn #fn_name(&self, #(#path_args,)* #(#required_args),*) -> builder::#builder_name<'_> {
            builder::#builder_name::new(self, #(#path_arg_names,)* #(#required_names),*)
        }
    };
    // The call a builder starts from, in both builder shapes: the path filled in, the
    // required parameters set, the idempotency key and secret headers prepared.
    let new_call = quote! {
        let mut path = ::std::string::String::new();
        #(#pieces)*
        let mut call = super::Call::new(client, #op_id, ::reqwest::Method::#verb, path, #anonymous);
        #(#empty_checks)*
        #run_id_init
        #key_init
        #secret_init
        #(#required_inits)*
    };
    if conditional {
        let body = match &op.response {
            Some(schema) => model_ty((inputs.named)(schema)),
            None => quote!(()),
        };
        let (setter, key, doc) = conditional_setter.expect("a conditional operation's header");
        let body_move = (!body_fields.is_empty()).then(|| quote!(fields: self.fields,));
        let builder = quote! {
            #[doc = #op_doc]
            ///
            /// Its `send()` answers the model; `if_none_match(..)` makes it a conditional read
            /// (the state [`IfNoneMatch`]), whose `send()` answers
            /// [`Conditional`](super::Conditional).
            #[must_use = "a call does nothing until it is sent"]
            #[derive(Debug)]
            pub struct #builder_name<'a, M = Unconditional> {
                call: super::Call<'a>,
                #body_fields
                mode: ::std::marker::PhantomData<fn() -> M>,
            }

            impl<'a> #builder_name<'a> {
                pub(super) fn new(client: &'a super::Client, #(#path_args,)* #(#required_args),*) -> Self {
                    #new_call
                    Self { call, #body_init mode: ::std::marker::PhantomData }
                }

                /// Sends the request (retrying as the retry policy says) and answers the
                /// representation. A `304`, which only a conditional read can get (an
                /// `If-None-Match` sent with `.header(..)` or by a hook), is an
                /// `Error::Http`: set the ETag with `if_none_match(..)` to have it answered.
                pub async fn send(self) -> Result<super::ResponseValue<#body>, super::Error> {
                    super::json_answer(self.sent(false).await?)
                }
            }

            impl<'a> #builder_name<'a, IfNoneMatch> {
                /// Sends the conditional read. A `304` (the copy named by `If-None-Match` is
                /// current) is `Conditional::NotModified`, not an error.
                pub async fn send(self) -> Result<super::ResponseValue<super::Conditional<#body>>, super::Error> {
                    super::conditional_answer(self.sent(true).await?)
                }
            }

            impl<'a, M> #builder_name<'a, M> {
                #[doc = #doc]
                ///
                /// Makes this a conditional read: `send()` then answers
                /// [`Conditional`](super::Conditional), `NotModified` when the host answers
                /// `304`. Set twice, the last one counts.
                pub fn #setter(mut self, value: impl Into<::std::string::String>) -> #builder_name<'a, IfNoneMatch> {
                    self.call.headers.retain(|(name, _)| !name.eq_ignore_ascii_case(#key));
                    self.call.headers.push((#key.to_owned(), value.into()));
                    #builder_name { call: self.call, #body_move mode: ::std::marker::PhantomData }
                }

                #(#setters)*

                #(#setters_call)*

                #send
            }
        };
        return OpParts {
            method,
            builder,
            extra,
            conditional,
        };
    }
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
                #new_call
                Self { call, #body_init #extra_inits }
            }

            #(#setters)*

            #(#setters_call)*

            #send
        }
    };
    OpParts {
        method,
        builder,
        extra,
        conditional,
    }
}

/// A list operation the client can page through: it takes a `cursor` query parameter and
/// its answer is a model with `nextCursor` and one array (the items).
struct Paging {
    page: TokenStream,
    item: TokenStream,
    items_field: syn::Ident,
    cursor_field: syn::Ident,
    /// The cursor's own model (a string newtype), when it has one.
    cursor_ty: Option<TokenStream>,
    query_key: String,
}

fn paging(op: &Operation, inputs: &Inputs<'_>, model_names: &BTreeSet<String>) -> Option<Paging> {
    let query_key = op
        .parameters
        .iter()
        .find(|p| p.location == "query" && p.name == "cursor")?
        .name
        .clone();
    let page = (inputs.named)(op.response.as_ref()?)?;
    let s = struct_of(inputs.models, &page)?;
    let mut cursor = None;
    let mut arrays = Vec::new();
    for field in &s.fields {
        let name = field.ident.clone()?;
        if json_name(field) == "nextCursor" {
            let inner = match outer(&field.ty) {
                Some((w, args)) if w == "Option" && args.len() == 1 => args[0],
                _ => return None,
            };
            let ty = match inner {
                Type::Path(p) if p.path.segments.len() == 1 => {
                    let last = p.path.segments[0].ident.to_string();
                    model_names.contains(&last).then(|| model_path(&last))
                }
                _ => None,
            };
            cursor = Some((name, ty));
        } else if let Some((w, args)) = outer(&field.ty)
            && w == "Vec"
            && args.len() == 1
        {
            arrays.push((name, qualify(args[0], model_names)));
        }
    }
    let (cursor_field, cursor_ty) = cursor?;
    let [(items_field, item)] = <[_; 1]>::try_from(arrays).ok()?;
    Some(Paging {
        page: model_path(&page),
        item,
        items_field,
        cursor_field,
        cursor_ty,
        query_key,
    })
}

/// `OpenWOP-Idempotent-Replay` → `openwop_idempotent_replay`.
pub(crate) fn accessor_name(header: &str) -> String {
    header.to_ascii_lowercase().replace('-', "_")
}

pub(crate) fn accessor(h: &ResponseHeader, headers: TokenStream) -> TokenStream {
    let name = ident(&accessor_name(&h.name));
    let key = &h.name;
    let mut docs: Vec<String> = crate::prose::lines(h.description.as_deref().unwrap_or(""))
        .into_iter()
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
