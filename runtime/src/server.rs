//! The HTTP server loop: what `axum::serve` does, plus the limits a host facing the
//! internet needs and `axum::serve` has no knobs for.
//!
//! - `TCP_NODELAY` on every accepted socket: an SSE answer or a small JSON body must not
//!   wait for Nagle's delayed ACK (measured: every MCP SSE answer waited ~20 ms).
//! - The router is built once and shared (`axum::serve` rebuilds it per connection).
//! - HTTP/1.1 only: plain TCP clients of REST, A2A and MCP speak it, and the h1/h2
//!   detection buffer is per connection.
//! - A header-read timeout, which also closes a keep-alive connection that sends nothing
//!   (so idle or half-sent requests cannot pile up until descriptors run out).
//! - A cap on open connections; past it a connection gets one `503` and is closed.
//! - Graceful shutdown with a deadline: no new connections, in-flight requests finish,
//!   and whatever is still open when the deadline passes is dropped.
//! - An accept error (`EMFILE`) is logged and retried after a pause instead of spinning.
//! - The refusals hyper writes itself (431, 414, 400 for a head it cannot parse) carry an
//!   error envelope and `OpenWOP-Version` (`refusals.rs`).

mod refusals;
pub mod tls;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// The server's limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Open connections at most; one more gets a `503` and is closed.
    pub max_connections: usize,
    /// How long a client has to send a request's headers, counted from the first byte of
    /// a request or, on a keep-alive connection, from the end of the previous answer.
    pub header_read_timeout: Duration,
    /// How long in-flight requests may take to finish after shutdown begins.
    pub shutdown_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 10_000,
            // Long enough that a client's pooled keep-alive connection is rarely closed
            // under it (clients with longer pools retry on a fresh one), short enough that
            // idle sockets cannot accumulate past the connection cap for long.
            header_read_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

/// hyper's read buffer limit for a request head (see `serve`).
const MAX_HEAD_BUFFER: usize = 128 * 1024;

/// The answer to a connection over the cap, written before any request is read.
const OVER_CAPACITY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
content-type: application/json\r\n\
openwop-version: 2.0\r\n\
retry-after: 1\r\n\
connection: close\r\n\
content-length: 82\r\n\
\r\n\
{\"error\":\"service_unavailable\",\"message\":\"the host has too many open connections\"}";

/// Serves `app` on `listener` until `shutdown` resolves, then drains within the grace.
///
/// With `tls`, every connection is a TLS one (the handshake bounded like a request's
/// headers); plain HTTP is not served beside it.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let service = TowerToHyperService::new(app);
    let graceful = GracefulShutdown::new();
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        // hyper checks its buffer limit only while a head is incomplete, and one read may
        // take the buffer past it: with the default (about 400 KiB) a 500 KB head that
        // arrived at once was parsed and served (seen under load). At 128 KiB no head
        // over 256 KiB can ever complete, so an oversized head is always a 431, while a
        // long URI (64 KiB and more) still gets its own 414.
        .max_buf_size(MAX_HEAD_BUFFER)
        .keep_alive(true);
    let builder = Arc::new(builder);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors (or a connection reset before accept): wait for
                    // some to close rather than spin on the error.
                    tracing::warn!(error = %e, "accept failed; pausing 100 ms");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            tracing::warn!(%peer, limit = limits.max_connections, "connection refused: at the connection cap");
            // Over TLS a plaintext answer would be noise: the connection is just closed.
            if tls.is_none() {
                tokio::spawn(refuse(stream));
            }
            continue;
        };
        let (builder, service, watcher) = (builder.clone(), service.clone(), graceful.watcher());
        let tls = tls.clone();
        let handshake_within = limits.header_read_timeout;
        tokio::spawn(async move {
            let ended = match tls {
                None => {
                    let io = TokioIo::new(refusals::Refusals::new(stream));
                    watcher.watch(builder.serve_connection(io, service)).await
                }
                Some(acceptor) => {
                    // The handshake gets the time a request's headers get.
                    let stream =
                        match tokio::time::timeout(handshake_within, acceptor.accept(stream)).await
                        {
                            Ok(Ok(stream)) => stream,
                            Ok(Err(e)) => {
                                tracing::debug!(%peer, error = %e, "TLS handshake failed");
                                return;
                            }
                            Err(_) => {
                                tracing::debug!(%peer, "TLS handshake timed out");
                                return;
                            }
                        };
                    let io = TokioIo::new(refusals::Refusals::new(stream));
                    watcher.watch(builder.serve_connection(io, service)).await
                }
            };
            if let Err(e) = ended {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            grace_ms = u64::try_from(limits.shutdown_grace.as_millis()).unwrap_or(u64::MAX),
            "connections still open at the end of the shutdown grace were dropped"
        );
    }
    Ok(())
}

async fn refuse(mut stream: TcpStream) {
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = stream.write_all(OVER_CAPACITY).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

// `TowerToHyperService` needs the router's error to be `Infallible`, which it is; this
// keeps that promise checked here rather than in a distant type error.
const _: fn() = || {
    fn infallible<S: tower::Service<hyper::Request<Incoming>, Error = Infallible>>() {}
    infallible::<Router>();
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_over_capacity_answer_is_well_formed() {
        let text = std::str::from_utf8(OVER_CAPACITY).expect("ascii");
        let (head, body) = text.split_once("\r\n\r\n").expect("head and body");
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .and_then(|n| n.parse().ok())
            .expect("content length");
        assert_eq!(body.len(), length);
        let json: serde_json::Value = serde_json::from_str(body.trim_end()).expect("json body");
        assert_eq!(json["error"], "service_unavailable");
    }
}
