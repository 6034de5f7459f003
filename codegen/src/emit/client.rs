//! `generated/src/client.rs`: a typed async reqwest client, one method per `operationId`.
//!
//! Path parameters are positional `&str`s, projected into one path segment each (bytes
//! outside `[A-Za-z0-9._-]` become `~XX`, the rule for tenant-bound ids). Query parameters
//! are `&str` when required, else `Option<&str>`. A JSON body or answer is the model type
//! the OpenAPI document names when there is one, else `serde_json::Value`. A streaming
//! operation answers the raw `reqwest::Response`. Header parameters every operation declares
//! (`OpenWOP-Version`) are set once with `Client::with_header`; the others are per-call
//! `Option<&str>` arguments (`Idempotency-Key`, `If-None-Match`, `Last-Event-ID`, …).

use std::collections::BTreeSet;

use heck::ToSnakeCase;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use serde_json::Value;

use crate::format::ident;
use crate::load::{Corpus, OPENAPI};
use crate::openapi::Operation;

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

fn model_type(name: Option<String>) -> TokenStream {
    match name {
        Some(n) => {
            let n = ident(&n);
            quote!(crate::models::#n)
        }
        None => quote!(serde_json::Value),
    }
}

fn method(
    op: &Operation,
    named: &dyn Fn(&Value) -> Option<String>,
    shared_headers: &BTreeSet<String>,
) -> TokenStream {
    let fn_name = ident(&op.operation_id.to_snake_case());
    let verb = format_ident!("{}", op.method.to_uppercase());
    let mut used = BTreeSet::new();
    let mut arg_name = |raw: &str| {
        let mut name = raw.to_snake_case();
        if name.is_empty() {
            name = "param".to_owned();
        }
        while !used.insert(name.clone()) {
            name.push('_');
        }
        ident(&name)
    };

    // The path, built piece by piece so each parameter is projected.
    let mut args = Vec::new();
    let mut pieces = Vec::new();
    let mut rest = op.path.as_str();
    while let Some(open) = rest.find('{') {
        let Some(len) = rest[open..].find('}') else {
            break;
        };
        let literal = &rest[..open];
        if !literal.is_empty() {
            pieces.push(quote!(path.push_str(#literal);));
        }
        let arg = arg_name(&rest[open + 1..open + len]);
        args.push(quote!(#arg: &str));
        pieces.push(quote!(path.push_str(&project_path_segment(#arg));));
        rest = &rest[open + len + 1..];
    }
    if !rest.is_empty() {
        pieces.push(quote!(path.push_str(#rest);));
    }

    let mut query = Vec::new();
    for p in op.parameters.iter().filter(|p| p.location == "query") {
        let arg = arg_name(&p.name);
        let key = &p.name;
        if p.required {
            args.push(quote!(#arg: &str));
            query.push(quote!(query.push((#key, #arg));));
        } else {
            args.push(quote!(#arg: Option<&str>));
            query.push(quote! {
                if let Some(value) = #arg {
                    query.push((#key, value));
                }
            });
        }
    }

    // Headers every operation declares (`OpenWOP-Version`) are set once with
    // `Client::with_header`; the rest are per-call arguments.
    let mut headers = Vec::new();
    for p in op.parameters.iter().filter(|p| {
        p.location == "header" && !shared_headers.contains(&p.name.to_ascii_lowercase())
    }) {
        let arg = arg_name(&p.name);
        let key = &p.name;
        if p.required {
            args.push(quote!(#arg: &str));
            headers.push(quote!(let request = request.header(#key, #arg);));
        } else {
            args.push(quote!(#arg: Option<&str>));
            headers.push(quote! {
                let request = match #arg {
                    Some(value) => request.header(#key, value),
                    None => request,
                };
            });
        }
    }

    let body = op.body.as_ref().map(|schema| {
        let ty = model_type(named(schema));
        let arg = arg_name("body");
        args.push(quote!(#arg: &#ty));
        quote!(let request = request.json(#arg);)
    });

    let mut docs = Vec::new();
    if let Some(summary) = &op.summary {
        docs.push(format!(" {summary}"));
        docs.push(String::new());
    }
    docs.push(format!(
        " `{} {}` ({})",
        op.method, op.path, op.operation_id
    ));
    let (ret, finish) = if op.streams {
        (
            quote!(reqwest::Response),
            quote!(self.send_raw(request).await),
        )
    } else {
        let ty = model_type(op.response.as_ref().and_then(named));
        (ty, quote!(self.send_json(request).await))
    };
    quote! {
        #(#[doc = #docs])*
        pub async fn #fn_name(&self, #(#args),*) -> Result<#ret, Error> {
            let mut path = String::new();
            #(#pieces)*
            let mut query: Vec<(&str, &str)> = Vec::new();
            #(#query)*
            let request = self.request(reqwest::Method::#verb, &path).query(&query);
            #(#headers)*
            #body
            #finish
        }
    }
}

pub(crate) fn emit(
    corpus: &Corpus,
    ops: &[Operation],
    named: &dyn Fn(&Value) -> Option<String>,
) -> TokenStream {
    let (header, bearer) = auth_header(corpus);
    let credential = if bearer {
        quote!(format!("Bearer {key}"))
    } else {
        quote!(key.clone())
    };
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
    let shared_headers: BTreeSet<String> = match header_sets.split_first() {
        Some((first, rest)) => first
            .iter()
            .filter(|h| rest.iter().all(|set| set.contains(*h)))
            .cloned()
            .collect(),
        None => BTreeSet::new(),
    };
    let methods = ops.iter().map(|op| method(op, named, &shared_headers));
    quote! {
        //! A typed async client for the REST operations of the OpenAPI document.

        use std::fmt;

        /// The OpenWOP error envelope a failed request answers with.
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        pub struct ErrorEnvelope {
            /// The registry code (or a vendor-shaped one).
            pub error: String,
            /// A sentence for people.
            pub message: String,
            /// Code-specific details.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub details: Option<serde_json::Value>,
        }

        /// Why a call failed.
        #[derive(Debug)]
        pub enum Error {
            /// The host answered a non-2xx status with an OpenWOP error envelope.
            Api { status: u16, envelope: ErrorEnvelope },
            /// The request did not complete.
            Transport(reqwest::Error),
            /// The answer is not the shape the document promises.
            Decode { status: u16, message: String },
        }

        impl fmt::Display for Error {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    Error::Api { status, envelope } => write!(f, "HTTP {status} {}: {}", envelope.error, envelope.message),
                    Error::Transport(e) => write!(f, "transport: {e}"),
                    Error::Decode { status, message } => write!(f, "cannot decode the HTTP {status} answer: {message}"),
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

        /// Projects an id into one path segment: bytes outside `[A-Za-z0-9._-]` become `~`
        /// and two upper-case hex digits, so a tenant-bound id never splits the path.
        pub fn project_path_segment(id: &str) -> String {
            let mut out = String::with_capacity(id.len());
            for byte in id.bytes() {
                if byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-') {
                    out.push(char::from(byte));
                } else {
                    out.push_str(&format!("~{byte:02X}"));
                }
            }
            out
        }

        /// A client bound to one host.
        #[derive(Debug, Clone)]
        pub struct Client {
            base_url: String,
            http: reqwest::Client,
            api_key: Option<String>,
            headers: Vec<(String, String)>,
        }

        impl Client {
            /// A client for the host at `base_url` (scheme, host and optional path prefix).
            pub fn new(base_url: impl Into<String>) -> Self {
                Self::with_client(base_url, reqwest::Client::new())
            }

            /// A client that sends through an existing `reqwest::Client`.
            pub fn with_client(base_url: impl Into<String>, http: reqwest::Client) -> Self {
                let base_url = base_url.into().trim_end_matches('/').to_owned();
                Self { base_url, http, api_key: None, headers: Vec::new() }
            }

            /// Sends `key` as the API credential on every request.
            pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
                self.api_key = Some(key.into());
                self
            }

            /// The host's base URL, without a trailing slash.
            pub fn base_url(&self) -> &str {
                &self.base_url
            }

            /// Sends a header on every request, e.g. `OpenWOP-Version`.
            pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
                self.headers.push((name.into(), value.into()));
                self
            }

            fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
                let mut request = self.http.request(method, format!("{}{path}", self.base_url));
                for (name, value) in &self.headers {
                    request = request.header(name.as_str(), value.as_str());
                }
                match &self.api_key {
                    Some(key) => request.header(#header, #credential),
                    None => request,
                }
            }

            async fn send_raw(&self, request: reqwest::RequestBuilder) -> Result<reqwest::Response, Error> {
                let response = request.send().await.map_err(Error::Transport)?;
                if response.status().is_success() {
                    return Ok(response);
                }
                let status = response.status().as_u16();
                let bytes = response.bytes().await.map_err(Error::Transport)?;
                Err(api_error(status, &bytes))
            }

            async fn send_json<T: serde::de::DeserializeOwned>(&self, request: reqwest::RequestBuilder) -> Result<T, Error> {
                let response = self.send_raw(request).await?;
                let status = response.status().as_u16();
                let bytes = response.bytes().await.map_err(Error::Transport)?;
                // An empty answer (204) decodes as JSON null: `()`, `Option` and `Value` accept it.
                let body: &[u8] = if bytes.is_empty() { b"null" } else { &bytes };
                serde_json::from_slice(body).map_err(|e| Error::Decode { status, message: e.to_string() })
            }

            #(#methods)*
        }

        fn api_error(status: u16, bytes: &[u8]) -> Error {
            match serde_json::from_slice::<ErrorEnvelope>(bytes) {
                Ok(envelope) => Error::Api { status, envelope },
                Err(e) => Error::Decode {
                    status,
                    message: format!("a non-2xx answer without an OpenWOP error envelope ({e})"),
                },
            }
        }
    }
}
