//! `generated/src/corpus.rs`: which corpus the crate was generated from. The one generated
//! file that carries the corpus hash; every other file's header names only its sources, so
//! a corpus edit rewrites the files whose content it changes plus this one.

use proc_macro2::TokenStream;
use quote::quote;

/// What the module states about the corpus.
pub(crate) struct Inputs<'a> {
    /// [`crate::load::Corpus::sha256`].
    pub sha256: &'a str,
    /// How many corpus files went into it.
    pub files: usize,
}

pub(crate) fn emit(inputs: &Inputs<'_>) -> TokenStream {
    let Inputs { sha256, files } = inputs;
    let files = proc_macro2::Literal::usize_unsuffixed(*files);
    quote! {
        //! The spec corpus this crate was generated from.

        /// sha256 over every corpus file (`spec/`, `schemas/`, `api/`) in path order, each
        /// contributing its relative path and the hex sha256 of its text. Two builds with
        /// the same value were generated from the same corpus.
        pub const SHA256: &str = #sha256;

        /// How many corpus files [`SHA256`] covers.
        pub const FILES: usize = #files;
    }
}
