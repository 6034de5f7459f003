//! The certificate authorities every TLS client of the host trusts (peers, push and
//! webhook deliveries, `mcp-stdio --connect`, `openwop probe`, the OTLP exporter, and
//! PostgreSQL without `sslrootcert`), and the rustls client configuration built on them.
//!
//! The system's store when it has one (`SSL_CERT_FILE`, `SSL_CERT_DIR`, then the
//! distribution's bundle, as `rustls-native-certs` finds them), so an operator's private CA
//! works as it does for any other program; else the Mozilla root set compiled in
//! (`webpki-roots`), so a binary in an image with no CA bundle (the root `Containerfile`
//! is `FROM scratch`) still reaches public HTTPS peers. Loaded once per process.

use std::sync::{Arc, OnceLock};

use rustls::RootCertStore;

/// Where the trusted roots came from, for the start-up log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    System,
    BuiltIn,
}

struct Roots {
    store: Arc<RootCertStore>,
    source: Source,
    count: usize,
}

fn loaded() -> &'static Roots {
    static ROOTS: OnceLock<Roots> = OnceLock::new();
    ROOTS.get_or_init(|| from_system(rustls_native_certs::load_native_certs().certs))
}

/// The roots given the certificates the system store holds.
fn from_system(system: Vec<rustls::pki_types::CertificateDer<'static>>) -> Roots {
    let mut store = RootCertStore::empty();
    let (added, _ignored) = store.add_parsable_certificates(system);
    if added > 0 {
        return Roots {
            store: Arc::new(store),
            source: Source::System,
            count: added,
        };
    }
    store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    Roots {
        count: store.len(),
        store: Arc::new(store),
        source: Source::BuiltIn,
    }
}

/// The trusted roots.
pub fn roots() -> Arc<RootCertStore> {
    loaded().store.clone()
}

/// Where the roots came from and how many there are.
pub fn describe() -> (Source, usize) {
    let r = loaded();
    (r.source, r.count)
}

/// A rustls client configuration on [`roots`] (aws-lc-rs, TLS 1.2 and 1.3) offering
/// HTTP/2 and HTTP/1.1 by ALPN, for `reqwest::ClientBuilder::use_preconfigured_tls`
/// (which sets no ALPN of its own on a configuration it is handed).
pub fn client_config() -> rustls::ClientConfig {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("aws-lc-rs supports rustls's default protocol versions")
        .with_root_certificates(roots())
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    config
}

/// `reqwest::Client::builder()` verifying servers against [`roots`].
pub fn http_client() -> reqwest::ClientBuilder {
    reqwest::Client::builder().use_preconfigured_tls(client_config())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn there_is_always_a_root_to_verify_against() {
        let (source, count) = describe();
        assert!(count > 0, "{source:?} gave no roots");
        assert_eq!(roots().len(), count);
        let config = client_config();
        assert_eq!(config.alpn_protocols[0], b"h2");
    }

    #[test]
    fn without_a_system_store_the_built_in_roots_are_used() {
        let none = from_system(Vec::new());
        assert_eq!(none.source, Source::BuiltIn);
        assert!(none.count > 100, "{} built-in roots", none.count);
        // A store with only unparsable entries is no store either.
        let junk = from_system(vec![rustls::pki_types::CertificateDer::from(vec![1, 2, 3])]);
        assert_eq!(junk.source, Source::BuiltIn);
    }

    #[test]
    fn a_client_on_these_roots_builds() {
        http_client().build().expect("the client builds");
    }
}
