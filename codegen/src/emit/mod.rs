//! One module per generated file.

pub(crate) mod cargo_toml;
pub(crate) mod client;
pub(crate) mod client_docs;
pub(crate) mod client_ops;
pub(crate) mod config_doc;
pub(crate) mod corpus;
pub(crate) mod dispatch;
pub(crate) mod errors;
pub(crate) mod lib_rs;
pub(crate) mod models;
pub(crate) mod models_post;
pub(crate) mod patterns;
pub(crate) mod rules;
pub(crate) mod schemas;
pub(crate) mod validators;
pub(crate) mod verdict;
pub(crate) mod versions;
