//! TLS to PostgreSQL (rustls), chosen by the URL as libpq reads it:
//!
//! - no `sslmode`, `disable`, `prefer`: plain TCP, as before (`prefer` does not insist);
//! - `sslmode=require`: TLS or no connection; the server's certificate is not checked
//!   (libpq's meaning of `require`), unless `sslrootcert=FILE` is given, which makes it
//!   `verify-ca`;
//! - `sslmode=verify-ca`: TLS, the certificate chains to `sslrootcert` (or the system's
//!   roots without it); any name;
//! - `sslmode=verify-full`: as `verify-ca`, and the certificate names the host.
//!
//! `sslrootcert` is read here and never reaches `tokio_postgres`, which does not know it.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};

use crate::store::StoreError;

/// How the connections of one store are made.
#[derive(Clone)]
pub enum PgTls {
    Plain,
    Rustls(MakeRustlsConnect),
}

/// How far the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// Encryption only (`require`).
    Nothing,
    /// The chain, to the roots (`verify-ca`).
    Chain,
    /// The chain and the host name (`verify-full`).
    Full,
}

/// A URL with the TLS parameters this module reads taken out, and what they asked for.
#[derive(Debug, PartialEq, Eq)]
pub struct Parsed {
    /// The URL `tokio_postgres` parses (`sslmode=require` stands for any verifying mode).
    pub url: String,
    /// `None`: no TLS demanded.
    pub verify: Option<Verify>,
    pub root_cert: Option<String>,
}

/// Reads `sslmode` and `sslrootcert` off a `postgres://` URL.
pub fn parse(url: &str) -> Result<Parsed, StoreError> {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, q),
        None => (url, ""),
    };
    let mut kept = Vec::new();
    let mut mode = None;
    let mut root_cert = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "sslmode" => mode = Some(value.to_owned()),
            "sslrootcert" => root_cert = Some(percent_decode(value)),
            _ => kept.push(pair.to_owned()),
        }
    }
    let verify = match mode.as_deref() {
        None | Some("disable" | "allow" | "prefer") => None,
        Some("require") if root_cert.is_some() => Some(Verify::Chain),
        Some("require") => Some(Verify::Nothing),
        Some("verify-ca") => Some(Verify::Chain),
        Some("verify-full") => Some(Verify::Full),
        Some(other) => {
            return Err(StoreError::Database(format!(
                "invalid PostgreSQL URL: sslmode `{other}` is not one of disable, allow, prefer, require, verify-ca, verify-full"
            )));
        }
    };
    match (verify, mode.as_deref()) {
        (Some(_), _) => kept.push("sslmode=require".into()),
        (None, Some(m @ ("disable" | "prefer"))) => kept.push(format!("sslmode={m}")),
        _ => {}
    }
    let url = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok(Parsed {
        url,
        verify,
        root_cert,
    })
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Some(hex) = s.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl PgTls {
    /// The connector `parsed` asks for.
    pub fn for_url(parsed: &Parsed) -> Result<PgTls, StoreError> {
        let Some(verify) = parsed.verify else {
            return Ok(PgTls::Plain);
        };
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let verifier: Arc<dyn ServerCertVerifier> = match verify {
            Verify::Nothing => Arc::new(EncryptOnly(provider.signature_verification_algorithms)),
            Verify::Chain | Verify::Full => {
                let mut roots = rustls::RootCertStore::empty();
                match &parsed.root_cert {
                    Some(path) => {
                        let certs = CertificateDer::pem_file_iter(path)
                            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                            .map_err(|e| {
                                StoreError::Database(format!("cannot read sslrootcert {path}: {e}"))
                            })?;
                        let (added, _) = roots.add_parsable_certificates(certs);
                        if added == 0 {
                            return Err(StoreError::Database(format!(
                                "sslrootcert {path} holds no usable certificate"
                            )));
                        }
                    }
                    // The system's store, or the built-in roots where it has none.
                    None => roots = (*crate::trust::roots()).clone(),
                }
                let webpki = rustls::client::WebPkiServerVerifier::builder_with_provider(
                    Arc::new(roots),
                    provider.clone(),
                )
                .build()
                .map_err(|e| StoreError::Database(format!("cannot set up TLS: {e}")))?;
                if verify == Verify::Full {
                    webpki
                } else {
                    Arc::new(AnyName(webpki))
                }
            }
        };
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| StoreError::Database(format!("cannot set up TLS: {e}")))?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(PgTls::Rustls(MakeRustlsConnect {
            config: Arc::new(config),
        }))
    }
}

/// `require`: the connection is encrypted; who answers is not checked (libpq's meaning).
#[derive(Debug)]
struct EncryptOnly(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// `verify-ca`: the chain is checked, the name is not.
#[derive(Debug)]
struct AnyName(Arc<rustls::client::WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `tokio_postgres`'s TLS hook, over rustls.
#[derive(Clone)]
pub struct MakeRustlsConnect {
    config: Arc<rustls::ClientConfig>,
}

impl<S> MakeTlsConnect<S> for MakeRustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsConnect;
    type Error = rustls::pki_types::InvalidDnsNameError;

    fn make_tls_connect(&mut self, domain: &str) -> Result<RustlsConnect, Self::Error> {
        Ok(RustlsConnect {
            config: self.config.clone(),
            name: ServerName::try_from(domain.to_owned())?,
        })
    }
}

pub struct RustlsConnect {
    config: Arc<rustls::ClientConfig>,
    name: ServerName<'static>,
}

impl<S> TlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<RustlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            tokio_rustls::TlsConnector::from(self.config)
                .connect(self.name, stream)
                .await
                .map(RustlsStream)
        })
    }
}

/// A TLS connection to the server.
pub struct RustlsStream<S>(tokio_rustls::client::TlsStream<S>);

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for RustlsStream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        // SCRAM's -PLUS variants are not offered; password auth still works over TLS.
        ChannelBinding::none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslmode_and_sslrootcert_are_read_off_the_url() {
        let p = parse("postgres://u@h:5432/db").unwrap();
        assert_eq!((p.url.as_str(), p.verify), ("postgres://u@h:5432/db", None));
        let p = parse("postgres://u@h/db?sslmode=require&options=-csearch_path%3Dx").unwrap();
        assert_eq!(p.verify, Some(Verify::Nothing));
        assert_eq!(
            p.url,
            "postgres://u@h/db?options=-csearch_path%3Dx&sslmode=require"
        );
        let p = parse("postgres://u@h/db?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem").unwrap();
        assert_eq!(p.verify, Some(Verify::Full));
        assert_eq!(p.root_cert.as_deref(), Some("/etc/ca.pem"));
        assert_eq!(p.url, "postgres://u@h/db?sslmode=require");
        let p = parse("postgres://u@h/db?sslmode=require&sslrootcert=ca.pem").unwrap();
        assert_eq!(
            p.verify,
            Some(Verify::Chain),
            "libpq: a root makes require verify-ca"
        );
        assert_eq!(
            parse("postgres://h/db?sslmode=disable").unwrap().verify,
            None
        );
        assert!(parse("postgres://h/db?sslmode=sometimes").is_err());
    }
}
