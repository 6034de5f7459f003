//! hyper answers a request it cannot parse (headers too large, a URI too long, bad
//! header bytes) itself, before any service sees it, with an empty body and none of our
//! headers. This wrapper around the socket recognises those automatic answers as they are
//! written and sends in their place the same status with a body in the shape of the URL
//! the request named, read from its request line as it arrives: on an A2A interface URL
//! the binding's error (interop.md, "A2A error details": never the OpenWOP envelope on a
//! URL the card lists, a refusal before dispatch included), on the MCP endpoint a
//! JSON-RPC error, anywhere else the OpenWOP error envelope with `OpenWOP-Version` (as for
//! the connection cap's `503`).
//!
//! An automatic answer is the only one hyper writes as `connection: close` +
//! `content-length: 0` with one of these statuses: every answer of the host's own for
//! them has a body.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The automatic answers replaced, and what each says.
const REPLACED: [(&[u8], u16, &str, &str); 3] = [
    (
        b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\n",
        431,
        "Request Header Fields Too Large",
        "the request's headers are larger than this host reads",
    ),
    (
        b"HTTP/1.1 414 URI Too Long\r\nconnection: close\r\ncontent-length: 0\r\n",
        414,
        "URI Too Long",
        "the request's target is longer than this host reads",
    ),
    (
        b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n",
        400,
        "Bad Request",
        "the request's head is not valid HTTP/1.1 (a malformed request line or header)",
    ),
];

/// Whose error shape a refused request gets: the edge its URL belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Surface {
    Host,
    A2aJsonRpc,
    A2aRest,
    Mcp,
}

/// The edge a request line (`POST /a2a/jsonrpc HTTP/1.1`, or its first bytes) names.
fn surface(line: &[u8]) -> Surface {
    let target = line.split(|b| *b == b' ').nth(1).unwrap_or_default();
    let path = target.split(|b| *b == b'?').next().unwrap_or_default();
    let under = |prefix: &str| {
        path.strip_prefix(prefix.as_bytes())
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(b"/"))
    };
    if under(crate::edge::a2a::card::JSONRPC_PATH) {
        Surface::A2aJsonRpc
    } else if under(crate::edge::a2a::card::REST_PATH) {
        Surface::A2aRest
    } else if under(crate::settings::MCP_PATH) {
        Surface::Mcp
    } else {
        Surface::Host
    }
}

/// What replaces an automatic answer `head`, if it is one, for the request whose request
/// line (or its first bytes) is `line`.
pub(super) fn replacement(head: &[u8], line: &[u8]) -> Option<Vec<u8>> {
    use crate::edge::a2a::errors::{Fault, Transport};
    if !head.ends_with(b"\r\n\r\n") {
        return None;
    }
    let (_, status, reason, message) = REPLACED
        .iter()
        .find(|(prefix, ..)| head.starts_with(prefix))?;
    let (body, extra) = match surface(line) {
        Surface::Host => (
            serde_json::json!({"error": "validation_error", "message": message}).to_string(),
            format!(
                "openwop-version: {}\r\n",
                crate::discovery::PROTOCOL_VERSION
            ),
        ),
        Surface::A2aJsonRpc => (
            Fault::transport(Transport::InvalidRequest, *message)
                .jsonrpc_body(&crate::edge::jsonrpc::Id::null()),
            String::new(),
        ),
        Surface::A2aRest => {
            let mut body = Fault::transport(Transport::InvalidRequest, *message).rest_body();
            // google.rpc.Status's code is the HTTP status the answer travels with.
            body.error.code = i64::from(*status);
            (
                serde_json::to_string(&body).unwrap_or_default(),
                String::new(),
            )
        }
        Surface::Mcp => (
            crate::edge::mcp::rpc::RpcError::new(crate::edge::mcp::rpc::INVALID_REQUEST, *message)
                .body(None),
            String::new(),
        ),
    };
    Some(
        format!(
            "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n{extra}connection: close\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}

/// The most of a request line kept to tell its edge: enough for any path this host routes
/// by prefix, however long the target (a 414's is longer than the host reads).
const LINE_KEPT: usize = 256;

/// A connection's socket, rewriting hyper's automatic refusals on their way out.
pub(super) struct Refusals<S> {
    inner: S,
    /// A replacement being written: its bytes, how many are out, the length to report.
    pending: Option<(Vec<u8>, usize, usize)>,
    /// The current request's line as read so far (at most [`LINE_KEPT`] bytes).
    line: Vec<u8>,
    /// Whether the bytes read next belong to that line: from the connection's start and
    /// from each answer written (the next request starts after it) until a line end. A
    /// request pipelined behind another, read in the same bytes, is not seen, and its
    /// refusal takes the host's shape (HTTP clients do not pipeline).
    reading_line: bool,
}

impl<S> Refusals<S> {
    pub(super) fn new(inner: S) -> Self {
        Refusals {
            inner,
            pending: None,
            line: Vec::new(),
            reading_line: true,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Refusals<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if this.reading_line {
            let new = &buf.filled()[before..];
            // Blank lines before a request line are allowed (RFC 9112 §2.2).
            let new = if this.line.is_empty() {
                let start = new.iter().position(|b| !matches!(b, b'\r' | b'\n'));
                &new[start.unwrap_or(new.len())..]
            } else {
                new
            };
            let end = new.iter().position(|b| *b == b'\n');
            let take = end.unwrap_or(new.len()).min(LINE_KEPT - this.line.len());
            this.line.extend_from_slice(&new[..take]);
            if end.is_some() || this.line.len() >= LINE_KEPT {
                this.reading_line = false;
            }
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Refusals<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.pending.is_none()
            && let Some(bytes) = replacement(buf, &this.line)
        {
            this.pending = Some((bytes, 0, buf.len()));
        }
        // An answer is going out: the next bytes read start the next request's line.
        if !buf.is_empty() {
            this.line.clear();
            this.reading_line = true;
        }
        let Some((bytes, written, report)) = this.pending.as_mut() else {
            return Pin::new(&mut this.inner).poll_write(cx, buf);
        };
        while *written < bytes.len() {
            match Pin::new(&mut this.inner).poll_write(cx, &bytes[*written..]) {
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                }
                Poll::Ready(Ok(n)) => *written += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        let report = *report;
        this.pending = None;
        Poll::Ready(Ok(report))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    // Not vectored: hyper then writes an answer's head in one buffer, so an automatic
    // answer arrives whole in one call.
    fn is_write_vectored(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hypers_automatic_answers_are_replaced() {
        let auto = b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\ndate: Thu, 03 Dec 2026 18:48:49 GMT\r\n\r\n";
        let text =
            String::from_utf8(replacement(auto, b"GET /runs HTTP/1.1").expect("replaced")).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 "));
        assert!(head.contains("openwop-version: 2.0"));
        let json: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(json["error"], "validation_error");
        assert!(head.contains(&format!("content-length: {}", body.len())));
        // An answer of the host's own (it has a body) passes untouched.
        assert!(
            replacement(b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 60\r\n\r\n", b"").is_none()
        );
        assert!(replacement(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n", b"").is_none());
    }

    /// On a URL an A2A card lists, or the MCP endpoint, the refusal is that edge's error,
    /// never the OpenWOP envelope (interop.md, "A2A error details").
    #[test]
    fn the_shape_follows_the_url_the_request_line_names() {
        let auto = b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";
        let body = |line: &[u8]| -> (String, serde_json::Value) {
            let text = String::from_utf8(replacement(auto, line).expect("replaced")).unwrap();
            let (head, body) = text.split_once("\r\n\r\n").unwrap();
            (head.to_owned(), serde_json::from_str(body).unwrap())
        };
        let (head, rpc) = body(b"POST /a2a/jsonrpc HTTP/1.1");
        assert!(head.starts_with("HTTP/1.1 431 ") && !head.contains("openwop-version"));
        assert_eq!(
            (rpc["jsonrpc"].as_str(), rpc["error"]["code"].as_i64()),
            (Some("2.0"), Some(-32600)),
            "{rpc}"
        );
        assert!(rpc["id"].is_null());
        let (_, rest) = body(b"GET /a2a/rest/tasks/abc?x=1 HTTP/1.1");
        assert_eq!(rest["error"]["code"], 431, "{rest}");
        assert_eq!(rest["error"]["status"], "INVALID_ARGUMENT", "{rest}");
        let (_, mcp) = body(b"POST /mcp HTTP/1.1");
        assert_eq!(mcp["error"]["code"], -32600, "{mcp}");
        // Cut short (a 414's target is longer than kept): the prefix still decides.
        let (_, long) = body(b"GET /a2a/rest/tasks/aaaaaaaaaaaaaaaaaaaaaaaaaaaa");
        assert_eq!(long["error"]["code"], 431, "{long}");
        for line in [
            &b"GET /runs HTTP/1.1"[..],
            b"GET /a2a/jsonrpcx HTTP/1.1",
            b"GET /mcpx HTTP/1.1",
            b"",
        ] {
            let (head, host) = body(line);
            assert!(head.contains("openwop-version"), "{head}");
            assert_eq!(host["error"], "validation_error", "{host}");
        }
    }
}
