//! Serves a host with the MCP mount (and REST) on a fixed loopback port for the real
//! MCP clients and the conformance suite (`tests/peers/mcp/`), until stopped. Ignored:
//!   OPENWOP_MCP_PEER_PORT=38280 cargo test -p openwop --test mcp_peer_host -- --ignored --nocapture
//! Keys: `acme-key-0123456789abcdef` (tenant acme), `other-key-0123456789abcdef` (tenant other).

mod mcp_support;

use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
#[ignore = "serves until killed; used to drive the real MCP clients"]
async fn serve_for_peers() {
    let port: u16 = std::env::var("OPENWOP_MCP_PEER_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(38280);
    // The conformance fixture pack, only when asked for.
    let fixtures = std::env::var_os("OPENWOP_MCP_FIXTURES").map(std::path::PathBuf::from);
    let host =
        mcp_support::start_on_port(openwop::edge::mcp::McpConfig::default(), port, fixtures).await;
    println!("MCP peer host listening on {}/mcp", host.base);
    let limit = std::env::var("OPENWOP_MCP_PEER_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3600);
    tokio::time::sleep(Duration::from_secs(limit)).await;
}
