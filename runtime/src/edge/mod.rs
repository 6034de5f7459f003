//! The surfaces the host is reached through: REST, A2A and MCP, each calling the same
//! `ops`, plus what they share (trace context).

pub mod a2a;
pub mod body;
pub mod deadline;
pub mod jsonrpc;
pub mod mcp;
pub mod rest;
