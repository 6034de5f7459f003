//! `generated/src/client/mod.rs`: a typed async reqwest client with one builder per
//! `operationId`.
//!
//! - `client.<operation>(path ids…)` returns a builder; optional parameters are setters
//!   typed from their schema (integers, booleans, model enums such as `RunStatus`, strings);
//!   `send().await` answers [`ResponseValue<T>`] (status, headers, typed header accessors,
//!   `Deref` to `T`). An operation that declares `304` and takes `If-None-Match` answers
//!   `T` too, until `if_none_match(..)` makes it a conditional read (the builder's second
//!   state, `builder::IfNoneMatch`), whose `send()` answers `ResponseValue<Conditional<T>>`.
//! - A JSON object body is a model: `.body(model)`, or one setter per body field (converted
//!   with `TryInto`, checked against the model when sent, so a missing required field or a
//!   value outside its schema is `Error::InvalidRequest` before anything is sent).
//! - Path ids are `&str`, projected into one path segment each (bytes outside
//!   `[A-Za-z0-9._-]` become `~XX`, the rule for tenant-bound ids).
//! - A `text/event-stream` operation answers an [`EventStream<T>`] of the model its schema
//!   names (`itemSchema`, `contentSchema`, or the `*.schema.json` file its description names),
//!   which reconnects with `Last-Event-ID` after a dropped connection.
//! - Header parameters every operation declares, and the version header (`OpenWOP-Version`)
//!   when most do (see [`shared_headers`]), are client-wide
//!   (`Client::with_header`); operations with `security: []` never send the credential.

use std::collections::BTreeSet;

use proc_macro2::TokenStream;
use quote::quote;
use serde_json::Value;
use syn::{Item, Type};

// The inputs are defined with the operations that read them; the client's entry point
// names them here.
pub(crate) use crate::emit::client_ops::Inputs;
use crate::emit::client_ops::{OpParts, accessor, accessor_name, model_path, operation, struct_of};
use crate::emit::models_post::json_name;
use crate::format::ident;
use crate::load::{Corpus, OPENAPI};
use crate::openapi::{Operation, ResponseHeader};

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

/// The error code's field of the error model: its Rust name, its JSON name and its type.
struct CodeField {
    ident: syn::Ident,
    json: String,
    ty: String,
}

/// The model error answers carry (the most common schema of 4xx/5xx JSON answers) and,
/// when it has one, its field typed by an open enum (the error code).
fn error_model(inputs: &Inputs<'_>) -> Option<(String, Option<CodeField>)> {
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
        if !(p.path.segments.len() == 1 && inputs.open_enums.contains(&last)) {
            return None;
        }
        Some(CodeField {
            ident: f.ident.clone()?,
            json: json_name(f),
            ty: last,
        })
    });
    Some((name, code))
}

/// The header parameter every operation declares that selects the protocol version
/// (`OpenWOP-Version`), and the `major.minor` of `info.version` the SDK sends in it.
fn version_header(shared_headers: &BTreeSet<String>, ops: &[Operation]) -> Option<String> {
    let lower = shared_headers
        .iter()
        .find(|h| h.ends_with("-version") && !h.ends_with("-client-version"))?;
    ops.iter()
        .flat_map(|op| op.parameters.iter())
        .find(|p| p.location == "header" && p.name.eq_ignore_ascii_case(lower))
        .map(|p| p.name.clone())
}

/// The header the document names for the client's version (`OpenWOP-Client-Version`,
/// mentioned where an old client is refused), if any.
/// A header parameter some operation declares by that name wins over one only mentioned.
fn client_version_header(corpus: &Corpus, ops: &[Operation]) -> Option<String> {
    if let Some(p) = ops.iter().flat_map(|op| &op.parameters).find(|p| {
        p.location == "header" && p.name.to_ascii_lowercase().ends_with("-client-version")
    }) {
        return Some(p.name.clone());
    }
    let text = corpus.value(OPENAPI).to_string();
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .find(|w| w.len() > "-Client-Version".len() && w.ends_with("-Client-Version"))
        .map(str::to_owned)
}

/// `2.0.0` → `2.0`.
fn major_minor(version: &str) -> String {
    version.split('.').take(2).collect::<Vec<_>>().join(".")
}

/// The header parameters the client sends itself on every call (lower case), so that no
/// builder has a setter for them, and a warning for each that some operations lack.
///
/// A header every operation declares is client-wide. The version header (`*-Version`) is
/// client-wide when more than half of the operations declare it: one operation added without
/// it must not turn it off for every call (the client sends it on that one too, as a host
/// ignores a header it does not read), and the warning names the operations that lack it.
pub(crate) fn shared_headers(ops: &[Operation]) -> (BTreeSet<String>, Vec<String>) {
    let header_sets: Vec<BTreeSet<String>> = ops
        .iter()
        .map(|op| {
            op.parameters
                .iter()
                .filter(|p| p.location == "header")
                .map(|p| p.name.to_ascii_lowercase())
                .collect()
        })
        .collect();
    let mut shared = BTreeSet::new();
    let mut warnings = Vec::new();
    for header in header_sets.iter().flatten().collect::<BTreeSet<_>>() {
        let lacking: Vec<&Operation> = ops
            .iter()
            .zip(&header_sets)
            .filter(|(_, set)| !set.contains(header))
            .map(|(op, _)| op)
            .collect();
        if lacking.is_empty() {
            shared.insert(header.clone());
            continue;
        }
        if !header.ends_with("-version") {
            continue;
        }
        let name = ops
            .iter()
            .flat_map(|op| &op.parameters)
            .find(|p| p.location == "header" && p.name.eq_ignore_ascii_case(header))
            .map_or(header.as_str(), |p| p.name.as_str());
        let list = |ops: &mut dyn Iterator<Item = &Operation>| {
            ops.map(|op| {
                format!(
                    "{} ({OPENAPI}#/paths/{}/{})",
                    op.operation_id,
                    crate::uris::pointer_token(&op.path),
                    op.method.to_ascii_lowercase()
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
        };
        let declared = ops.len() - lacking.len();
        if lacking.len() * 2 < ops.len() {
            shared.insert(header.clone());
            warnings.push(format!(
                "header parameter {name} is declared by {declared} of {} operations but not by {}; the client sends it on every call",
                ops.len(),
                list(&mut lacking.iter().copied())
            ));
        } else {
            warnings.push(format!(
                "header parameter {name} is declared by only {declared} of {} operations ({}); it is not sent client-wide (VERSION_HEADER is None) and those operations have a setter for it",
                ops.len(),
                list(&mut ops.iter().zip(&header_sets).filter(|(_, set)| set.contains(header)).map(|(op, _)| op))
            ));
        }
    }
    (shared, warnings)
}

pub(crate) fn emit(inputs: &Inputs<'_>) -> TokenStream {
    let (auth_header, bearer) = auth_header(inputs.corpus);
    let shared_headers = inputs.shared_headers;
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
        .map(|op| operation(op, inputs, shared_headers, &model_names))
        .collect();
    let methods = parts.iter().map(|p| &p.method);
    let builders = parts.iter().map(|p| &p.builder);
    let extras = parts.iter().map(|p| &p.extra);

    let version_header = version_header(shared_headers, inputs.ops);
    let version_value = major_minor(&crate::emit::lib_rs::api_version(inputs.corpus));
    let version_header = match version_header {
        Some(h) => quote!(Some(#h)),
        None => quote!(None),
    };
    let client_version_header = match client_version_header(inputs.corpus, inputs.ops) {
        Some(h) => quote!(Some(#h)),
        None => quote!(None),
    };

    let reserved = [
        "status",
        "headers",
        "header",
        "new",
        "map",
        "into_inner",
        "into_parts",
        "retry_after",
        "request_id",
        "is_retryable",
        "is_timeout",
        "code",
    ];
    // `Location` is a URI reference (RFC 9110 §10.2.2): its accessor answers it resolved
    // against the request's URL, which the answer keeps, not as the host wrote it.
    let ok_accessors = inputs
        .headers
        .iter()
        .filter(|h| h.on_success && !reserved.contains(&accessor_name(&h.name).as_str()))
        .map(|h| {
            if h.name.eq_ignore_ascii_case("location") {
                location_accessor(h)
            } else {
                accessor(h, quote!(&self.headers))
            }
        });
    let err_accessors = inputs
        .headers
        .iter()
        .filter(|h| h.on_error && !reserved.contains(&accessor_name(&h.name).as_str()))
        .map(|h| accessor(h, quote!(self.headers()?)));

    // The member of the envelope that names the error code: what an error body must carry
    // to be the host's error (see `api_error`).
    let mut code_key = "error".to_owned();
    let (envelope_ty, envelope_decl, api_fields, api_build, api_code, code_text) = match error_model(
        inputs,
    ) {
        Some((name, code)) => {
            let ty = model_path(&name);
            match code {
                Some(CodeField {
                    ident: field,
                    json,
                    ty: code_ty,
                }) => {
                    code_key = json;
                    let code_ty = model_path(&code_ty);
                    (
                        ty.clone(),
                        quote!(),
                        quote! {
                            /// The error code (an open enum: a registered code or a vendor one).
                            code: #code_ty,
                            /// The whole envelope (boxed, as the headers are: an `Error` stays
                            /// small enough to return in a `Result` everywhere).
                            envelope: Box<#ty>,
                        },
                        quote!(Error::Api { status, code: envelope.#field.clone(), envelope: Box::new(envelope), headers: Box::new(headers) }),
                        quote! {
                            /// The error code of an API error.
                            pub fn code(&self) -> Option<&#code_ty> {
                                match self {
                                    Error::Api { code, .. } => Some(code),
                                    _ => None,
                                }
                            }
                        },
                        quote!(Error::Api { code, .. } => Some(code.to_string())),
                    )
                }
                None => (
                    ty.clone(),
                    quote!(),
                    quote! {
                        /// The whole envelope (boxed: an `Error` stays small).
                        envelope: Box<#ty>,
                    },
                    quote!(Error::Api {
                        status,
                        envelope: Box::new(envelope),
                        headers: Box::new(headers)
                    }),
                    quote!(),
                    quote!(Error::Api { envelope, .. } => envelope_text(envelope, "error")),
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
                /// The whole envelope (boxed: an `Error` stays small).
                envelope: Box<ErrorEnvelope>,
            },
            quote!(Error::Api {
                status,
                envelope: Box::new(envelope),
                headers: Box::new(headers)
            }),
            quote!(),
            quote!(Error::Api { envelope, .. } => Some(envelope.error.clone())),
        ),
    };

    // The two states of a builder whose operation may answer `304`: its `send()` answers
    // the model until a conditional header is set, and `Conditional` after.
    let conditional_modes = parts.iter().any(|p| p.conditional).then(|| {
        quote! {
            /// A read sent as it is: `send()` answers the representation (no `304` can
            /// answer a request that names no ETag). The default state of the builders of
            /// operations that may answer `304`.
            #[derive(Debug, Clone, Copy)]
            pub struct Unconditional;

            /// A conditional read (`if_none_match(..)` was set): `send()` answers
            /// [`Conditional`](super::Conditional), `NotModified` for a `304`.
            #[derive(Debug, Clone, Copy)]
            pub struct IfNoneMatch;
        }
    });

    let not_modified_arm = conditional_modes.is_some().then(|| {
        quote! {
            // Only a conditional read is answered 304, and a builder's plain `send()` is not
            // one: the `If-None-Match` came from `.header(..)` or a hook.
            Error::Http { status: 304, .. } => {
                write!(f, "HTTP 304 Not Modified to a read sent as unconditional; set the ETag with the builder's `if_none_match(..)`, whose `send()` answers `Conditional::NotModified`")?;
                if let Some(id) = self.request_id() {
                    write!(f, " (request id {id})")?;
                }
                Ok(())
            }
        }
    });

    let helpers = inputs.helper_modules.iter().map(|m| {
        let m = ident(m);
        if m == "testkit" {
            quote! {
                #[cfg(feature = "testkit")]
                pub mod testkit;
            }
        } else {
            quote!(mod #m; pub use #m::*;)
        }
    });

    quote! {
        //! A typed async client for the REST operations of the OpenAPI document.
        //!
        //! [`Client::builder`] (or [`Client::new`]), then one builder per operation:
        //! `client.get_run(run_id).send().await` answers a [`ResponseValue`] that derefs to
        //! the model (a conditional read, `.if_none_match(etag)`, answers a [`Conditional`]
        //! in it). Calls time out, retry what is safe to retry (see [`RetryPolicy`]) and
        //! send the version headers by default. Errors are [`Error`]: `Api` (the host's error
        //! envelope), `Transport`, `Decode`, `InvalidRequest` and `Stream`. Event-stream
        //! operations answer an [`EventStream`]; paged lists have `pages()` and `stream()`.

        use std::fmt;
        use std::ops::{Deref, DerefMut};

        pub use reqwest;
        pub use reqwest::header::HeaderMap;

        #(#helpers)*

        /// The header that selects the protocol version, sent on every request.
        const VERSION_HEADER: Option<&str> = #version_header;
        /// What the client sends in it: the `major.minor` of [`crate::API_VERSION`].
        const VERSION_HEADER_VALUE: &str = #version_value;
        /// The header that names the client's version (the API version it was generated
        /// for, as hosts compare it with their `minClientVersion`).
        const CLIENT_VERSION_HEADER: Option<&str> = #client_version_header;
        /// The header the credential travels in.
        const AUTH_HEADER: &str = #auth_header;
        /// Whether the credential is sent as `Bearer <key>` (else as the key itself).
        const AUTH_BEARER: bool = #bearer;

        #envelope_decl

        /// Why a call failed.
        ///
        /// `Display` shows the HTTP status, the error code, the host's message and its
        /// request id when there is one (`HTTP 401 unauthenticated: the api key is not
        /// recognised`); the envelope and headers stay in the `Api` variant. The cause of a
        /// `Transport` or `Stream` error is its [`source()`](std::error::Error::source), not
        /// part of its `Display`: print the chain (`{:#}` with `anyhow`, or walk `source()`)
        /// to see it.
        ///
        /// Large contents (an envelope, a header map) are boxed: an `Error` is at most 48
        /// bytes, so returning it in a `Result` costs little (no `clippy::result_large_err`).
        #[derive(Debug)]
        #[non_exhaustive]
        pub enum Error {
            /// Nothing was sent: a parameter or body field does not fit its schema, or a
            /// required body field is missing.
            InvalidRequest(::std::string::String),
            /// The host answered a non-2xx status with its error envelope.
            #[non_exhaustive]
            Api {
                /// The HTTP status.
                status: u16,
                #api_fields
                /// The answer's headers (`Retry-After`, …).
                headers: Box<HeaderMap>,
            },
            /// The request did not complete: no connection, a timeout, an answer cut short.
            Transport(reqwest::Error),
            /// The answer is not the shape the document promises.
            #[non_exhaustive]
            Decode {
                /// The HTTP status.
                status: u16,
                /// What did not fit.
                message: Box<str>,
                /// The start of the body, for the log.
                body: Box<str>,
                /// The answer's headers (a `201`'s `Location`, the request id); for an
                /// event of a stream, those of the answer that opened it.
                headers: Box<HeaderMap>,
            },
            /// An event stream dropped and could not be reopened within its reconnection
            /// budget.
            #[non_exhaustive]
            Stream {
                /// What happened, for the log (how many times in a row, for how long, and the
                /// last cause when it was not an error: silence).
                message: ::std::string::String,
                /// The last failure itself, when it was one (a refusal with its status and
                /// `Retry-After`, a transport error): the error's `source()`; `status()`,
                /// `headers()`, `request_id()`, `retry_after()` and `is_retryable()` answer
                /// from it.
                last: Option<Box<Error>>,
            },
            /// A non-2xx answer that is not the host's error envelope: a proxy's or load
            /// balancer's page (a `502`/`503`/`504` in HTML, say), or a server that is not an
            /// OpenWOP host. Retried by its status like an `Api` error; its headers
            /// (`Retry-After`, a request id) are kept.
            #[non_exhaustive]
            Http {
                /// The HTTP status.
                status: u16,
                /// The answer's headers.
                headers: Box<HeaderMap>,
                /// The start of the body, for the log.
                body: ::std::string::String,
            },
            /// No answer came within the time allowed (`waited`): a host that accepts the
            /// connection and then says nothing. Retryable, as a timeout of the transport is.
            #[non_exhaustive]
            TimedOut {
                /// What was waited for.
                what: &'static str,
                /// How long.
                waited: ::std::time::Duration,
            },
            /// An answer's body or an event of a stream is larger than the client accepts
            /// ([`ClientBuilder::max_body_size`], [`ClientBuilder::max_event_size`]). Not
            /// retryable: the same request would be answered the same.
            #[non_exhaustive]
            TooLarge {
                /// What was too large (`answer body`, `event`).
                what: &'static str,
                /// The limit, in bytes.
                limit: usize,
            },
            /// A [`Hook`] ended the call with its own error (made with [`Error::hook`]): a
            /// token that could not be refreshed, a request a policy refuses. The hook's
            /// error is the `source()`. Not retried.
            Hook(Box<dyn std::error::Error + Send + Sync + 'static>),
        }

        impl Error {
            /// An [`Error::Hook`]: what a [`Hook`] answers to end the call with its own
            /// error (anything that converts into a boxed error: an `io::Error`, your own
            /// error type, a `String`), kept as the `source()`.
            ///
            /// ```
            /// use openwop_sdk::client::Error;
            ///
            /// let e = Error::hook(std::io::Error::other("the token store is down"));
            /// assert!(std::error::Error::source(&e).is_some());
            /// let e = Error::hook("no token for this tenant");
            /// assert!(!e.is_retryable());
            /// ```
            pub fn hook(error: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Self {
                Error::Hook(error.into())
            }

            /// The HTTP status of an `Api`, `Http` or `Decode` error (of a `Stream` error, its
            /// last failure's).
            pub fn status(&self) -> Option<u16> {
                match self {
                    Error::Api { status, .. } | Error::Http { status, .. } | Error::Decode { status, .. } => Some(*status),
                    Error::Transport(e) => e.status().map(|s| s.as_u16()),
                    Error::Stream { last: Some(last), .. } => last.status(),
                    _ => None,
                }
            }

            /// The headers of an `Api`, `Http` or `Decode` error's answer (of a `Stream`
            /// error, its last failure's).
            pub fn headers(&self) -> Option<&HeaderMap> {
                match self {
                    Error::Api { headers, .. } | Error::Http { headers, .. } | Error::Decode { headers, .. } => Some(&**headers),
                    Error::Stream { last: Some(last), .. } => last.headers(),
                    _ => None,
                }
            }

            /// The request id the host gave the failed request (`X-Request-Id` or
            /// `Request-Id`), to quote when reporting it.
            pub fn request_id(&self) -> Option<&str> {
                let headers = self.headers()?;
                ["x-request-id", "request-id"].iter().find_map(|name| header_str(headers, name))
            }

            /// The host's message of an `Api` error.
            pub fn message(&self) -> Option<::std::string::String> {
                match self {
                    Error::Api { envelope, .. } => envelope_text(envelope, "message"),
                    _ => None,
                }
            }

            /// The code of an `Api` error as the registry knows it (`None` for a vendor code).
            pub fn registry_code(&self) -> Option<crate::errors::ErrorCode> {
                self.code_text()?.parse().ok()
            }

            fn code_text(&self) -> Option<::std::string::String> {
                match self {
                    #code_text,
                    _ => None,
                }
            }

            #api_code

            #(#err_accessors)*
        }

        /// A string member of the envelope, read through its JSON form (whatever its model).
        fn envelope_text<T: ::serde::Serialize>(envelope: &T, key: &str) -> Option<::std::string::String> {
            let value = ::serde_json::to_value(envelope).ok()?;
            value.get(key)?.as_str().map(str::to_owned)
        }

        impl fmt::Display for Error {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    Error::InvalidRequest(m) => write!(f, "invalid request: {m}"),
                    Error::Api { status, .. } => {
                        write!(f, "HTTP {status}")?;
                        if let Some(code) = self.code_text().filter(|c| !c.is_empty()) {
                            write!(f, " {code}")?;
                        }
                        if let Some(message) = self.message().filter(|m| !m.is_empty()) {
                            write!(f, ": {message}")?;
                        }
                        if let Some(id) = self.request_id() {
                            write!(f, " (request id {id})")?;
                        }
                        Ok(())
                    }
                    // What kind of failure; the `reqwest::Error` (its URL, and through its own
                    // sources the cause: connection refused, the body cut short) is the
                    // error's `source()`.
                    Error::Transport(e) => f.write_str(if e.is_timeout() {
                        "timed out (transport)"
                    } else if e.is_connect() {
                        "transport: could not connect"
                    } else if e.is_body() || e.is_decode() {
                        "transport: the answer was cut short"
                    } else {
                        "transport: the request did not complete"
                    }),
                    Error::Decode { status, message, .. } => {
                        write!(f, "cannot decode the HTTP {status} answer: {message}")?;
                        if let Some(id) = self.request_id() {
                            write!(f, " (request id {id})")?;
                        }
                        Ok(())
                    }
                    Error::Stream { message, .. } => write!(f, "event stream: {message}"),
                    #not_modified_arm
                    Error::Http { status: status @ 300..=399, headers, .. } => {
                        // The client follows no redirect (see `ClientBuilder::build`).
                        write!(f, "HTTP {status}: the host redirects")?;
                        if let Some(to) = header_str(headers, "location") {
                            write!(f, " to {}", to.chars().take(200).collect::<::std::string::String>())?;
                        }
                        write!(f, "; the client follows no redirect: use the host's own address as the base URL")?;
                        if let Some(id) = self.request_id() {
                            write!(f, " (request id {id})")?;
                        }
                        Ok(())
                    }
                    Error::Http { status, body, .. } => {
                        write!(f, "HTTP {status}, not an OpenWOP error answer")?;
                        let first = body.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
                        if !first.is_empty() {
                            write!(f, ": {}", first.chars().take(120).collect::<::std::string::String>())?;
                        }
                        if let Some(id) = self.request_id() {
                            write!(f, " (request id {id})")?;
                        }
                        Ok(())
                    }
                    Error::TimedOut { what, waited } => write!(f, "timed out: no {what} within {waited:?}"),
                    Error::TooLarge { what, limit } => write!(f, "the {what} is larger than the client accepts ({limit} bytes; see `ClientBuilder::max_body_size` and `max_event_size`)"),
                    Error::Hook(_) => write!(f, "a hook ended the call"),
                }
            }
        }

        // An error prints its cause or returns it, not both (or `anyhow`'s `{:#}` and `eyre`
        // print each cause twice): the causes of a `Transport`, a `Stream` and a `Hook` error
        // are their sources, and their `Display` leaves them out.
        impl std::error::Error for Error {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                match self {
                    Error::Transport(e) => Some(e),
                    Error::Stream { last: Some(last), .. } => Some(&**last),
                    Error::Hook(e) => Some(&**e),
                    _ => None,
                }
            }
        }

        impl From<reqwest::Error> for Error {
            fn from(e: reqwest::Error) -> Self {
                Error::Transport(e)
            }
        }

        /// The error a non-2xx answer is: the envelope when the body is one, or when it is
        /// almost one but names its code (an empty `message`, a `details` of the wrong
        /// shape): callers route on the code, so a host's small slip must not hide it.
        fn api_error(status: u16, headers: HeaderMap, bytes: &[u8]) -> Error {
            let envelope = ::serde_json::from_slice::<#envelope_ty>(bytes)
                .ok()
                .or_else(|| lenient_envelope::<#envelope_ty>(status, bytes, #code_key));
            match envelope {
                Some(envelope) => #api_build,
                // Not the host's envelope: a proxy's page, most likely. Kept as an answer
                // (status, headers) so that it is retried and its Retry-After honoured.
                None => Error::Http { status, headers: Box::new(headers), body: excerpt(bytes) },
            }
        }

        /// An answer: the decoded body with the status and headers it came with. Derefs to
        /// the body.
        #[derive(Debug, Clone)]
        pub struct ResponseValue<T> {
            inner: T,
            status: u16,
            headers: HeaderMap,
            /// The URL the request went to (what a `Location` is resolved against); the
            /// client's base URL for a call whose path is a credential.
            url: Option<reqwest::Url>,
        }

        impl<T> ResponseValue<T> {
            /// A value as an answer would carry it (for tests and mocks); see
            /// [`ResponseValue::with_url`].
            pub fn new(inner: T, status: u16, headers: HeaderMap) -> Self {
                Self { inner, status, headers, url: None }
            }

            /// The same answer, as one to a request sent to `url` (what a relative
            /// `Location` is resolved against; a value made with `new` has none, and its
            /// `Location` is answered as written).
            pub fn with_url(mut self, url: reqwest::Url) -> Self {
                self.url = Some(url);
                self
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
                ResponseValue { inner: f(self.inner), status: self.status, headers: self.headers, url: self.url }
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

        impl Client {
            #(#methods)*
        }

        #(#extras)*

        /// One builder per operation; each is made by the `Client` method of the same name.
        pub mod builder {
            #conditional_modes

            #(#builders)*
        }
    }
}

/// The accessor of `Location`: the reference resolved against the request's URL (RFC 9110
/// §10.2.2), as the header's description says it is; as written when the answer knows no
/// URL (one made with `ResponseValue::new`) or the reference does not resolve.
fn location_accessor(h: &ResponseHeader) -> TokenStream {
    let name = ident(&accessor_name(&h.name));
    let key = &h.name;
    let mut docs: Vec<String> = h
        .description
        .as_deref()
        .unwrap_or("")
        .lines()
        .map(|l| format!(" {l}"))
        .collect();
    docs.push(format!(
        " The `{key}` header, when the answer carries it, resolved against the request's URL"
    ));
    docs.push(" (`/runs/…` becomes `https://host/runs/…`).".to_owned());
    quote! {
        #(#[doc = #docs])*
        pub fn #name(&self) -> Option<::std::string::String> {
            let reference = header_str(&self.headers, #key)?;
            let resolved = self.url.as_ref().and_then(|url| url.join(reference.trim()).ok());
            Some(resolved.map_or_else(|| reference.to_owned(), ::std::string::String::from))
        }
    }
}
