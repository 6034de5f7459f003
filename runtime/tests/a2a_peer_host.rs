//! Serves a host with the A2A interface on a fixed loopback port for the real peers
//! (`tests/peers/a2a/`), until the process is stopped. Ignored by default:
//!   OPENWOP_A2A_PEER_PORT=38080 cargo test -p openwop --test a2a_peer_host -- --ignored --nocapture
//! Keys: `acme-key-0123456789abcdef` (tenant acme), `other-key-0123456789abcdef` (tenant other).

mod a2a_support;

use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
#[ignore = "serves until killed; used to drive the real A2A peers"]
async fn serve_for_peers() {
    let port = std::env::var("OPENWOP_A2A_PEER_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(38080);
    let host = a2a_support::start_with(Duration::from_secs(10), port).await;
    println!("A2A peer host listening on {}", host.base);
    let limit = std::env::var("OPENWOP_A2A_PEER_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3600);
    tokio::time::sleep(Duration::from_secs(limit)).await;
}
