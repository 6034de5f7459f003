//! `generated/src/lib.rs`: crate docs, lint allowances and the module list.

use proc_macro2::TokenStream;
use quote::quote;

use crate::format::ident;

pub(crate) fn emit(modules: &[&str]) -> TokenStream {
    let modules = modules.iter().map(|m| ident(m));
    quote! {
        //! The OpenWOP v2 spec corpus as Rust: error codes, dispatch tables, validators,
        //! models and a client. Written by `cargo xtask codegen`; edit the corpus, not this crate.

        // Generated code is judged by the generator's tests, not by lints meant for hand-written code.
        #![allow(clippy::all, clippy::pedantic, missing_docs, dead_code, unreachable_patterns, unused_imports, unused_mut, unused_variables, non_camel_case_types)]

        #( pub mod #modules; )*
    }
}
