//! The integration tests' one set-up: in-process hosts ([`host`]), the tenants' keys
//! ([`keys`]), the real binary as a child process ([`process`]) and the protocol clients
//! (REST [`rest`], A2A [`a2a`], MCP [`mcp`]). See `tests/README.md`.
//!
//! Each test binary compiles this module on its own and uses only part of it, so unused
//! helpers are expected there.
#![allow(dead_code, unused_imports)]

pub mod a2a;
pub mod host;
pub mod keys;
pub mod mcp;
pub mod process;
pub mod rest;

pub use host::{TestHost, host};
pub use keys::{KEY_A, KEY_B, TENANT_A, TENANT_B};
