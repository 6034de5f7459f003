//! `generated/src/schemas.rs`: every corpus schema file's text, its URI, and the URIs the
//! corpus references but does not contain.

use heck::ToShoutySnakeCase;
use proc_macro2::TokenStream;
use quote::quote;

use crate::format::ident;
use crate::load::Corpus;
use crate::uris::SchemaUris;

/// The constant that holds a file: `schemas/v2/run-event.schema.json` → `RUN_EVENT`,
/// facets get `FACET_`, the data files' own schemas `SPEC_`.
pub(crate) fn const_name(rel: &str) -> String {
    let file = rel.rsplit('/').next().unwrap_or(rel);
    let stem = file.strip_suffix(".schema.json").unwrap_or(file);
    let prefix = if rel.starts_with("spec/v2/facets/") {
        "FACET_"
    } else if rel.starts_with("spec/") {
        "SPEC_"
    } else {
        ""
    };
    format!("{prefix}{}", stem.to_shouty_snake_case())
}

/// A raw string literal, so the embedded JSON stays readable in the committed file.
fn raw_literal(text: &str) -> TokenStream {
    let mut hashes = String::from("#");
    while text.contains(&format!("\"{hashes}")) {
        hashes.push('#');
    }
    let literal = format!("r{hashes}\"{text}\"{hashes}");
    // A raw string with enough hashes always lexes; fall back to an escaped literal anyway.
    literal.parse().unwrap_or_else(|_| quote!(#text))
}

pub(crate) fn emit(corpus: &Corpus, uris: &SchemaUris) -> TokenStream {
    let consts = corpus.schema_files.iter().map(|rel| {
        let name = ident(&const_name(rel));
        let doc = format!(" `{rel}`");
        let text = raw_literal(&corpus.files[rel].text);
        quote! {
            #[doc = #doc]
            pub const #name: &str = #text;
        }
    });
    let entries = corpus.schema_files.iter().map(|rel| {
        let name = ident(&const_name(rel));
        let uri = uris.by_file.get(rel).cloned().unwrap_or_default();
        quote!(SchemaFile { path: #rel, uri: #uri, text: #name })
    });
    let missing = uris.missing.keys();
    let openapi_uri = crate::uris::openapi_uri(uris);
    let openapi_text = raw_literal(
        &serde_json::to_string_pretty(&crate::uris::openapi_standalone(corpus, uris))
            .unwrap_or_default(),
    );
    quote! {
        //! The corpus schema files, embedded for serving and for the validators' registry.

        /// One embedded schema file.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct SchemaFile {
            /// Path relative to the corpus root.
            pub path: &'static str,
            /// The URI references resolve it by (its `$id`).
            pub uri: &'static str,
            /// The file's text.
            pub text: &'static str,
        }

        /// Every embedded schema file, sorted by path.
        pub static ALL: &[SchemaFile] = &[ #(#entries),* ];

        /// URIs the corpus references but does not contain. The validators treat each as a
        /// schema that accepts anything.
        pub static MISSING: &[&str] = &[ #(#missing),* ];

        /// The URI [`OPENAPI`] is registered under (and a host serves it from its own
        /// `/openapi.json`).
        pub const OPENAPI_URI: &str = #openapi_uri;

        /// The OpenAPI document as JSON, standing alone: every reference to a corpus file
        /// names that file's URI, so the schemas resolve from [`ALL`].
        pub const OPENAPI: &str = #openapi_text;

        /// The embedded file with this URI (fragment ignored).
        pub fn by_uri(uri: &str) -> Option<&'static SchemaFile> {
            let uri = uri.split('#').next().unwrap_or(uri);
            ALL.iter().find(|f| f.uri == uri)
        }

        #(#consts)*
    }
}
