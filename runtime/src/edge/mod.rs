//! HTTP surfaces. REST today; A2A and MCP will sit beside it and call the same `ops`.

pub mod a2a;
pub mod mcp;
pub mod rest;
