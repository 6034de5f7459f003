//! The OpenWOP v2 interop host as a library: the `openwop` binary is a thin shell over it.
//!
//! Layers, outermost first: `edge` (HTTP surfaces), `identity` (credential → Subject),
//! `ops` (the operations every edge calls), `engine` (workflow execution), `store`.

pub mod agents;
pub mod app;
pub mod backup_cmd;
pub mod card_sign;
pub mod clock;
pub mod config_cmd;
pub mod config_file;
pub mod conformance;
pub mod definition_files;
pub mod discovery;
pub mod edge;
pub mod egress;
pub mod engine;
pub mod generated;
pub mod host;
pub mod identity;
pub mod ids;
pub mod mcp_bridge;
pub mod mcp_stdio_cmd;
pub mod negotiation;
pub mod observe;
pub mod ops;
pub mod peers;
pub mod probe_cmd;
pub mod reload;
pub mod secret_file;
pub mod serve_cmd;
pub mod server;
pub mod settings;
pub mod status;
pub mod store;
pub mod trace;
pub mod trust;
/// `openwop validate` lives in its own package (`validate/`) so it can be installed without
/// the host; re-exported under its old path for the host's tests and benchmarks.
pub use openwop_validate as validate;
pub mod upstream;
pub mod wire;
