//! hyper answers a request it cannot parse (headers too large, a URI too long, bad
//! header bytes) itself, before any service sees it, with an empty body and none of our
//! headers. This wrapper around the socket recognises those automatic answers as they are
//! written and sends in their place the same status with an OpenWOP error envelope and
//! `OpenWOP-Version`. Such a request reached no edge, so the host's own envelope is the
//! shape (as for the connection cap's `503`).
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

/// What replaces an automatic answer `head`, if it is one.
pub(super) fn replacement(head: &[u8]) -> Option<Vec<u8>> {
    if !head.ends_with(b"\r\n\r\n") {
        return None;
    }
    let (_, status, reason, message) = REPLACED
        .iter()
        .find(|(prefix, ..)| head.starts_with(prefix))?;
    let body = serde_json::json!({"error": "validation_error", "message": message}).to_string();
    Some(
        format!(
            "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\nopenwop-version: {}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            crate::discovery::PROTOCOL_VERSION,
            body.len()
        )
        .into_bytes(),
    )
}

/// A connection's socket, rewriting hyper's automatic refusals on their way out.
pub(super) struct Refusals<S> {
    inner: S,
    /// A replacement being written: its bytes, how many are out, the length to report.
    pending: Option<(Vec<u8>, usize, usize)>,
}

impl<S> Refusals<S> {
    pub(super) fn new(inner: S) -> Self {
        Refusals {
            inner,
            pending: None,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Refusals<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
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
            && let Some(bytes) = replacement(buf)
        {
            this.pending = Some((bytes, 0, buf.len()));
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
        let text = String::from_utf8(replacement(auto).expect("replaced")).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 "));
        assert!(head.contains("openwop-version: 2.0"));
        let json: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(json["error"], "validation_error");
        assert!(head.contains(&format!("content-length: {}", body.len())));
        // An answer of the host's own (it has a body) passes untouched.
        assert!(
            replacement(b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 60\r\n\r\n").is_none()
        );
        assert!(replacement(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").is_none());
    }
}
