//! `generated/src/lib.rs`: crate docs, lint allowances and the module list.

use proc_macro2::TokenStream;
use quote::quote;

use crate::format::ident;

/// `modules`: `(name, feature that gates it)`. `readme`: the crate has a `README.md`, whose
/// examples become the crate docs (and doctests) when the client is built.
pub(crate) fn emit(modules: &[(&str, Option<&str>)], readme: bool) -> TokenStream {
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
        //! `validators` (JSON Schema validation, jsonschema). `models`, `errors`, `dispatch`,
        //! `schemas` and `corpus` (which corpus this is) are always built.
        #readme

        // Generated code is judged by the generator's tests, not by lints meant for hand-written code.
        #![allow(clippy::all, clippy::pedantic, missing_docs, dead_code, unreachable_patterns, unused_imports, unused_mut, unused_variables, non_camel_case_types)]

        #( #modules )*
    }
}
