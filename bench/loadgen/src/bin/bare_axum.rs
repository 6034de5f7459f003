//! The REST benchmark's baseline: a bare axum handler answering a fixed JSON body the size
//! of a run snapshot, served the way `axum::serve` does (tokio's multi-thread runtime, as
//! many workers as the CPUs it may use, `TCP_NODELAY`). It exits by itself after
//! `--max-seconds`.
//!
//!   openwop-bare-axum --listen 127.0.0.1:38390 [--max-seconds 900]

use axum::Json;
use axum::routing::get;
use axum::serve::ListenerExt;
use serde_json::json;
use std::time::Duration;

fn main() -> anyhow::Result<()> {
    let mut listen = "127.0.0.1:0".to_owned();
    let mut max_seconds = 900u64;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--listen" => listen = args.next().unwrap_or_default(),
            "--max-seconds" => max_seconds = args.next().unwrap_or_default().parse()?,
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    let addr: std::net::SocketAddr = listen.parse()?;
    anyhow::ensure!(addr.ip().is_loopback(), "loopback only");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let fixed = json!({
            "runId": "acme~2F0123456789abcdefghij",
            "workflowId": "echo",
            "status": "completed",
            "createdAt": "2026-12-02T10:00:00.000Z",
            "updatedAt": "2026-12-02T10:00:00.010Z",
            "outputs": {"n": 1},
        });
        let app = axum::Router::new().route(
            "/fixed",
            get(move || std::future::ready(Json(fixed.clone()))),
        );
        let listener = tokio::net::TcpListener::bind(addr).await?;
        println!("bare axum listening on http://{}", listener.local_addr()?);
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app)
            .with_graceful_shutdown(tokio::time::sleep(Duration::from_secs(max_seconds)))
            .await?;
        anyhow::Ok(())
    })
}
