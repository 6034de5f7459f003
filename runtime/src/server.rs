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
//! - A cap on open connections; past it a connection gets one `503` and is closed. Each
//!   address has its own, smaller cap under it, so one address (10,000 silent sockets)
//!   can never take the connections everyone else needs.
//! - A first-request timeout: a new connection that sends no byte within it is closed,
//!   so silent sockets are let go well before the header-read timeout of keep-alive.
//! - The peer's address on every request (`ConnectInfo`), for the per-address limit on
//!   requests without a valid credential (`app::AppState::unauthenticated`).
//! - Refusals are counted (`observe::quiet`), never a log line each.
//! - Graceful shutdown with a deadline: no new connections, in-flight requests finish,
//!   and whatever is still open when the deadline passes is dropped.
//! - An accept error (`EMFILE`) is counted (`openwop_refusals_total{reason="accept_failed"}`,
//!   one log line per interval with a sample) and retried after a pause instead of spinning.
//! - The refusals hyper writes itself (431, 414, 400 for a head it cannot parse) carry an
//!   error envelope and `OpenWOP-Version` (`refusals.rs`).

mod refusals;
pub mod tls;

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, LazyLock, Mutex};
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
    /// Open connections from one address at most (IPv4 address, or IPv6 /64); one more
    /// gets a `503` and is closed.
    pub max_connections_per_address: usize,
    /// How long a new connection may stay silent before its first byte (plain TCP; over
    /// TLS the handshake is bounded by the header-read timeout).
    pub first_request_timeout: Duration,
    /// How long a request's body may take to arrive once its head is read (`408` past it).
    pub body_timeout: Duration,
    /// Requests without a valid credential each address may make: past it they are
    /// answered `429` with `Retry-After` in the edge's shape instead of `401`.
    pub unauthenticated: crate::identity::rate::RateConfig,
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
            // Far above what one client (or a NAT of a few hundred) keeps open, far below
            // the host-wide cap: one address holds at most 2.5% of it.
            max_connections_per_address: 256,
            first_request_timeout: Duration::from_secs(10),
            body_timeout: crate::edge::body::DEFAULT_TIMEOUT,
            unauthenticated: crate::identity::rate::RateConfig {
                per_second: 10.0,
                burst: 50.0,
            },
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
static OVER_CAPACITY: LazyLock<Vec<u8>> =
    LazyLock::new(|| refusal("the host has too many open connections"));

/// The answer to a connection over its address's cap.
static OVER_ADDRESS_CAPACITY: LazyLock<Vec<u8>> =
    LazyLock::new(|| refusal("this address has too many open connections to the host"));

/// A whole `503 service_unavailable` answer with `message`, its length counted here
/// rather than by hand.
fn refusal(message: &str) -> Vec<u8> {
    let body = serde_json::json!({"error": "service_unavailable", "message": message}).to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\n\
         content-type: application/json\r\n\
         openwop-version: 2.0\r\n\
         retry-after: 1\r\n\
         connection: close\r\n\
         content-length: {}\r\n\
         \r\n\
         {body}",
        body.len()
    )
    .into_bytes()
}

/// What one address is counted as: an IPv4 address, or the /64 of an IPv6 one (a host
/// given a /64 has all of it; counting each address would let it take every slot).
fn address_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

/// Open connections by address.
#[derive(Default)]
struct PerAddress(Mutex<HashMap<IpAddr, usize>>);

/// One connection's place in [`PerAddress`], given back when it closes.
struct AddressSlot {
    table: Arc<PerAddress>,
    key: IpAddr,
}

impl PerAddress {
    fn take(self: &Arc<Self>, ip: IpAddr, max: usize) -> Option<AddressSlot> {
        let key = address_key(ip);
        let mut open = self.0.lock().ok()?;
        let n = open.entry(key).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(AddressSlot {
            table: self.clone(),
            key,
        })
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        if let Ok(mut open) = self.table.0.lock()
            && let Some(n) = open.get_mut(&self.key)
        {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.key);
            }
        }
    }
}

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
    let graceful = GracefulShutdown::new();
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let per_address = Arc::new(PerAddress::default());
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
    // Told to connections not yet served: one that has not sent its first byte (or
    // finished its TLS handshake) is counted by `graceful` but cannot be told to stop by
    // it, so without this the shutdown waited for it until `first_request_timeout`.
    let (stopping_tx, stopping) = tokio::sync::watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors (or a connection reset before accept): wait for
                    // some to close rather than spin on the error. Counted, not logged
                    // each time: out of descriptors it fails every 100 ms.
                    crate::observe::quiet::accept_failed(&e);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        // The address's share first: a flood from one address is refused before it can
        // take a slot of the host-wide cap.
        let Some(slot) = per_address.take(peer.ip(), limits.max_connections_per_address) else {
            crate::observe::quiet::refused(crate::observe::quiet::Refusal::AddressConnectionCap);
            // Over TLS a plaintext answer would be noise: the connection is just closed.
            if tls.is_none() {
                tokio::spawn(refuse(stream, OVER_ADDRESS_CAPACITY.as_slice()));
            }
            continue;
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            crate::observe::quiet::refused(crate::observe::quiet::Refusal::ConnectionCap);
            if tls.is_none() {
                tokio::spawn(refuse(stream, OVER_CAPACITY.as_slice()));
            }
            continue;
        };
        let (builder, watcher) = (builder.clone(), graceful.watcher());
        let service = with_peer(app.clone(), peer);
        let tls = tls.clone();
        let handshake_within = limits.header_read_timeout;
        let first_within = limits.first_request_timeout;
        let mut stopping = stopping.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let ended = match tls {
                None => {
                    // A connection that says nothing is let go soon: it cannot hold a
                    // slot for the whole header-read timeout before its first request,
                    // nor hold the shutdown at all.
                    let mut first = [0u8; 1];
                    tokio::select! {
                        peeked = tokio::time::timeout(first_within, stream.peek(&mut first)) => {
                            match peeked {
                                Ok(Ok(n)) if n > 0 => {}
                                _ => return,
                            }
                        }
                        _ = stopping.wait_for(|s| *s) => return,
                    }
                    let io = TokioIo::new(refusals::Refusals::new(stream));
                    watcher.watch(builder.serve_connection(io, service)).await
                }
                Some(acceptor) => {
                    // The handshake gets the time a request's headers get.
                    let handshake = tokio::select! {
                        handshake = tokio::time::timeout(handshake_within, acceptor.accept(stream)) => handshake,
                        _ = stopping.wait_for(|s| *s) => return,
                    };
                    let stream = match handshake {
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
    let _ = stopping_tx.send(true);
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

/// The router for one connection: every request carries the peer's address.
fn with_peer(
    app: Router,
    peer: SocketAddr,
) -> TowerToHyperService<
    tower::util::MapRequest<
        Router,
        impl FnMut(hyper::Request<Incoming>) -> hyper::Request<Incoming> + Clone,
    >,
> {
    TowerToHyperService::new(tower::ServiceExt::map_request(
        app,
        move |mut request: hyper::Request<Incoming>| {
            request
                .extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
            request
        },
    ))
}

async fn refuse(mut stream: TcpStream, answer: &'static [u8]) {
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = stream.write_all(answer).await;
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
        let text = std::str::from_utf8(&OVER_CAPACITY).expect("ascii");
        let (head, body) = text.split_once("\r\n\r\n").expect("head and body");
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .and_then(|n| n.parse().ok())
            .expect("content length");
        assert_eq!(body.len(), length);
        let json: serde_json::Value = serde_json::from_str(body.trim_end()).expect("json body");
        assert_eq!(json["error"], "service_unavailable");
        let text = std::str::from_utf8(&OVER_ADDRESS_CAPACITY).expect("ascii");
        let (head, body) = text.split_once("\r\n\r\n").expect("head and body");
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let json: serde_json::Value = serde_json::from_str(body).expect("json body");
        assert_eq!(json["error"], "service_unavailable");
    }

    #[test]
    fn an_address_is_counted_by_itself_or_its_ipv6_64() {
        let table = Arc::new(PerAddress::default());
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let first = table.take(a, 2).expect("first");
        let _second = table.take(a, 2).expect("second");
        assert!(table.take(a, 2).is_none(), "a third from one address");
        assert!(
            table.take(b, 2).is_some(),
            "another address is not affected"
        );
        drop(first);
        assert!(
            table.take(a, 2).is_some(),
            "a closed connection frees its slot"
        );
        let v6a: IpAddr = "2001:db8::1".parse().unwrap();
        let v6b: IpAddr = "2001:db8::ffff:2".parse().unwrap();
        assert_eq!(address_key(v6a), address_key(v6b));
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(address_key(mapped), a);
    }
}
