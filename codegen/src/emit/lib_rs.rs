//! `generated/src/lib.rs`: crate docs, lint allowances and the module list.

use proc_macro2::TokenStream;
use quote::quote;

use crate::format::ident;
use crate::load::{Corpus, OPENAPI};

/// The protocol version the corpus describes: the OpenAPI document's `info.version`.
pub(crate) fn api_version(corpus: &Corpus) -> String {
    corpus
        .value(OPENAPI)
        .pointer("/info/version")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("0.0.0")
        .to_owned()
}

/// `modules`: `(name, feature that gates it)`. `readme`: the crate has a `README.md`, whose
/// examples become the crate docs (and doctests) when the client is built.
pub(crate) fn emit(
    modules: &[(&str, Option<&str>)],
    readme: bool,
    api_version: &str,
) -> TokenStream {
    let modules = modules.iter().map(|(m, feature)| {
        let m = ident(m);
        match feature {
            Some(f) => quote!(#[cfg(feature = #f)] pub mod #m;),
            None => quote!(pub mod #m;),
        }
    });
    let readme = readme
        .then(|| quote!(#![cfg_attr(feature = "client", doc = include_str!("../README.md"))]));
    quote! {
        //! The OpenWOP v2 spec corpus as Rust: error codes, dispatch tables, validators,
        //! models and a client. Written by `cargo xtask codegen`; edit the corpus, not this crate.
        //!
        //! Features: `client` (the async client, reqwest), `rustls` or `native-tls` (its TLS),
        //! `validators` (JSON Schema validation, jsonschema), `tracing` (a span per call),
        //! `testkit` (a scripted host for tests), `models` (serde models of every schema;
        //! implied by `client`). `errors`, `dispatch`, `schemas`, `versions` and `corpus`
        //! (which corpus this is) are always built.
        #readme

        // Generated code is judged by the generator's tests, not by lints meant for hand-written code.
        #![allow(clippy::all, clippy::pedantic, missing_docs, dead_code, unreachable_patterns, unused_imports, unused_mut, unused_variables, non_camel_case_types)]

        /// The OpenWOP API version the corpus this crate was generated from describes (the
        /// OpenAPI document's `info.version`). The client sends its `major.minor` as
        /// `OpenWOP-Version` and the whole as `OpenWOP-Client-Version`.
        pub const API_VERSION: &str = #api_version;

        /// This crate's own version (`User-Agent: openwop-rust/<SDK_VERSION>`).
        pub const SDK_VERSION: &str = env!("CARGO_PKG_VERSION");

        #( #modules )*
    }
}
