//! The one outbound guard. Every call the host makes to a URL someone else chose (A2A
//! pushes, interrupt notices, and the workflow nodes that call remote A2A agents, MCP
//! servers and HTTP services) goes through [`Egress`]:
//!
//! - at registration, [`Egress::check`] refuses a URL that is not https, names
//!   `localhost` (or `*.localhost`) or a cloud metadata host, carries userinfo, or whose
//!   host is or resolves to an address [`ranges::classify`] refuses;
//! - at delivery, [`Egress::request`] checks again from scratch (fresh resolution, every
//!   address), then connects only to the addresses it just checked (the client is pinned
//!   to them and cannot resolve any name itself) and never follows a redirect: a 3xx is a
//!   failed delivery.
//!
//! Resolution is a trait ([`Resolve`]) so tests can play DNS rebinding. The one opening
//! is the operator's `allow_loopback` setting (`openwop serve --egress-allow-loopback`):
//! loopback addresses and `localhost` become reachable, and plain http only when every
//! address is loopback. The host logs it and advertises it as a relaxation.

pub mod ranges;

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::Url;
use reqwest::header::HeaderMap;
use reqwest::redirect::Policy;

pub use ranges::{Blocked, classify};

/// The obligation id the loopback opening relaxes, as advertised in discovery.
pub const RELAXED_OBLIGATION: &str = "webhooks.egress-guard";

/// Host names refused whatever they resolve to: cloud metadata services.
const METADATA_HOSTS: &[&str] = &[
    "metadata",
    "metadata.google.internal",
    "metadata.goog",
    "instance-data",
    "instance-data.ec2.internal",
    "metadata.azure.internal",
];

/// The future a resolver returns.
pub type Resolving<'a> = Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send + 'a>>;

/// Turns a host name into addresses. The system resolver in production; tests inject
/// their own to answer differently at registration and at delivery.
pub trait Resolve: Send + Sync {
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> Resolving<'a>;
}

/// The operating system's resolver.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> Resolving<'a> {
        Box::pin(async move {
            Ok(tokio::net::lookup_host((host, port))
                .await?
                .map(|a| a.ip())
                .collect())
        })
    }
}

/// Why the guard refused a URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("the URL cannot be parsed")]
    Malformed,
    #[error("the URL must use https")]
    Scheme,
    #[error("the URL must not carry a user name or password")]
    Userinfo,
    #[error("the URL has no host")]
    NoHost,
    #[error("the host `{0}` is never reachable from this host")]
    Name(String),
    #[error("the host resolves to a {class} address")]
    Address { ip: IpAddr, class: &'static str },
    #[error("the host cannot be resolved")]
    Unresolvable,
}

/// Why a delivery did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("refused by the egress guard: {0}")]
    Refused(#[from] Refused),
    #[error("the receiver answered {0}, a redirect, which is never followed")]
    Redirect(u16),
    #[error("the receiver answered {0}")]
    Status(u16),
    #[error("the request failed: {0}")]
    Transport(String),
    #[error("the answer is larger than the host reads ({MAX_RESPONSE_BYTES} bytes)")]
    TooLarge,
}

/// A URL that passed the guard, with the addresses it was judged by.
#[derive(Debug, Clone)]
pub struct Checked {
    pub url: Url,
    /// The domain name to pin, when the host is a name rather than an address literal.
    domain: Option<String>,
    pub addrs: Vec<SocketAddr>,
}

/// The guard and the only way to make an outbound call.
#[derive(Clone)]
pub struct Egress {
    resolver: Arc<dyn Resolve>,
    allow_loopback: bool,
    timeout: Duration,
    /// One client per set of checked addresses ([`Pinned`]), kept between calls. Building a
    /// client sets up TLS (the system roots are read and parsed), which cost tens of
    /// milliseconds of CPU per outbound request; a kept client also keeps its connections,
    /// so a workflow calling one peer again does not connect again. A client only ever
    /// reaches the addresses of its key (it cannot resolve a name itself), and every
    /// request is judged again first, so keeping it changes nothing the guard decides.
    clients: Arc<Mutex<HashMap<Pinned, reqwest::Client>>>,
}

/// What a kept client is pinned to: the name (when the URL has one) and its addresses.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Pinned {
    domain: Option<String>,
    addrs: Vec<SocketAddr>,
}

/// The most clients kept; past it the cache starts over (addresses change rarely, and a
/// host talks to few destinations).
const MAX_KEPT_CLIENTS: usize = 256;

impl std::fmt::Debug for Egress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Egress")
            .field("allow_loopback", &self.allow_loopback)
            .finish()
    }
}

impl Default for Egress {
    fn default() -> Self {
        Egress::new(Arc::new(SystemResolver), false)
    }
}

impl Egress {
    pub fn new(resolver: Arc<dyn Resolve>, allow_loopback: bool) -> Egress {
        Egress {
            resolver,
            allow_loopback,
            timeout: Duration::from_secs(15),
            clients: Arc::default(),
        }
    }

    /// Sets the whole-request timeout of a delivery.
    pub fn with_timeout(mut self, timeout: Duration) -> Egress {
        self.timeout = timeout;
        self
    }

    pub fn allows_loopback(&self) -> bool {
        self.allow_loopback
    }

    /// Judges `raw` now: scheme, host name, and every address it resolves to.
    pub async fn check(&self, raw: &str) -> Result<Checked, Refused> {
        let url = Url::parse(raw).map_err(|_| Refused::Malformed)?;
        let plain_http = match url.scheme() {
            "https" => false,
            "http" if self.allow_loopback => true,
            _ => return Err(Refused::Scheme),
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Refused::Userinfo);
        }
        let port = url.port_or_known_default().ok_or(Refused::NoHost)?;
        // The URL parser has already turned every IP spelling (decimal, hex, bracketed)
        // into its canonical text, so a host that parses as an address is one.
        let host = url.host_str().ok_or(Refused::NoHost)?;
        let literal = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host)
            .parse::<IpAddr>()
            .ok();
        let (domain, ips) = match literal {
            Some(ip) => (None, vec![ip]),
            None => {
                let name = host.trim_end_matches('.').to_ascii_lowercase();
                let is_localhost = name == "localhost" || name.ends_with(".localhost");
                if (is_localhost && !self.allow_loopback)
                    || METADATA_HOSTS.contains(&name.as_str())
                    || name.is_empty()
                {
                    return Err(Refused::Name(name));
                }
                // A resolver that never answers must not hold a registration or a
                // delivery forever.
                let ips = tokio::time::timeout(self.timeout, self.resolver.resolve(&name, port))
                    .await
                    .map_err(|_| Refused::Unresolvable)?
                    .map_err(|_| Refused::Unresolvable)?;
                (Some(host.to_owned()), ips)
            }
        };
        if ips.is_empty() {
            return Err(Refused::Unresolvable);
        }
        for ip in &ips {
            match classify(*ip) {
                None if !plain_http => {}
                Some(Blocked::Loopback) if self.allow_loopback => {}
                // Plain http is opened for loopback receivers only.
                None => return Err(Refused::Scheme),
                Some(class) => {
                    return Err(Refused::Address {
                        ip: *ip,
                        class: class.as_str(),
                    });
                }
            }
        }
        let addrs = ips
            .into_iter()
            .map(|ip| SocketAddr::new(ip, port))
            .collect();
        Ok(Checked { url, domain, addrs })
    }

    /// POSTs `body` to `raw` after checking it again, connected only to the checked
    /// addresses. Succeeds on a 2xx answer only.
    pub async fn post(
        &self,
        raw: &str,
        headers: HeaderMap,
        body: Vec<u8>,
    ) -> Result<u16, SendError> {
        let response = self
            .request(reqwest::Method::POST, raw, headers, Some(body), None)
            .await?;
        match response.status {
            200..=299 => Ok(response.status),
            status => Err(SendError::Status(status)),
        }
    }

    /// Any request to `raw`, judged again from scratch and connected only to the addresses
    /// just checked; a redirect is an error (never followed). Every other status is the
    /// caller's to judge. The body is read up to [`MAX_RESPONSE_BYTES`]; `timeout`
    /// overrides the guard's own for calls that may legitimately take long (a remote
    /// tool).
    pub async fn request(
        &self,
        method: reqwest::Method,
        raw: &str,
        headers: HeaderMap,
        body: Option<Vec<u8>>,
        timeout: Option<Duration>,
    ) -> Result<Response, SendError> {
        let checked = self.check(raw).await.inspect_err(|e| {
            tracing::warn!(reason = %e, "egress refused at delivery time");
        })?;
        let client = self.client_for(&checked)?;
        let mut request = client
            .request(method, checked.url.clone())
            .headers(headers)
            .timeout(timeout.unwrap_or(self.timeout));
        if let Some(body) = body {
            request = request.body(body);
        }
        let mut response = request
            .send()
            .await
            .map_err(|e| SendError::Transport(without_url(&e)))?;
        let status = response.status().as_u16();
        if (300..=399).contains(&status) {
            return Err(SendError::Redirect(status));
        }
        let headers = response.headers().clone();
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| SendError::Transport(without_url(&e)))?
        {
            if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                return Err(SendError::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Response {
            status,
            headers,
            body,
        })
    }
}

impl Egress {
    /// The kept client pinned to exactly `checked`'s addresses, built on first use.
    fn client_for(&self, checked: &Checked) -> Result<reqwest::Client, SendError> {
        let pin = Pinned {
            domain: checked.domain.clone(),
            addrs: checked.addrs.clone(),
        };
        let mut kept = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(client) = kept.get(&pin) {
            return Ok(client.clone());
        }
        let mut builder = crate::trust::http_client()
            .redirect(Policy::none())
            .no_proxy()
            .connect_timeout(self.timeout)
            // A name the pin does not cover has nowhere to go.
            .dns_resolver(Arc::new(NoResolution));
        if let Some(domain) = &checked.domain {
            builder = builder.resolve_to_addrs(domain, &checked.addrs);
        }
        let client = builder
            .build()
            .map_err(|e| SendError::Transport(e.to_string()))?;
        if kept.len() >= MAX_KEPT_CLIENTS {
            kept.clear();
        }
        kept.insert(pin, client.clone());
        Ok(client)
    }
}

/// The most of a response body an outbound call reads: a peer cannot make the host
/// buffer without bound.
pub const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

/// A response that passed the guard, read whole.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Response {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The media type, lower-cased, without parameters.
    pub fn media_type(&self) -> String {
        self.headers
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(|v| v.trim().to_ascii_lowercase())
            .unwrap_or_default()
    }
}

/// A transport error's text without the URL (its path or query may be a capability).
fn without_url(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "transport error"
    };
    kind.to_owned()
}

/// The resolver of a pinned client: it refuses every name, so the only names a delivery
/// can reach are the ones pinned to checked addresses.
struct NoResolution;

impl reqwest::dns::Resolve for NoResolution {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let name = name.as_str().to_owned();
        Box::pin(async move {
            Err(
                Box::new(io::Error::other(format!("`{name}` is not pinned")))
                    as Box<dyn std::error::Error + Send + Sync>,
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct Fixed(HashMap<&'static str, Vec<IpAddr>>);

    impl Resolve for Fixed {
        fn resolve<'a>(&'a self, host: &'a str, _port: u16) -> Resolving<'a> {
            let found = self.0.get(host).cloned();
            Box::pin(async move { found.ok_or_else(|| io::Error::other("nxdomain")) })
        }
    }

    fn guard(allow_loopback: bool) -> Egress {
        let mut names = HashMap::new();
        names.insert("public.test", vec!["93.184.216.34".parse().expect("ip")]);
        names.insert(
            "mixed.test",
            vec![
                "93.184.216.34".parse().expect("ip"),
                "10.0.0.5".parse().expect("ip"),
            ],
        );
        names.insert("loop.test", vec!["127.0.0.1".parse().expect("ip")]);
        Egress::new(Arc::new(Fixed(names)), allow_loopback)
    }

    #[tokio::test]
    async fn urls_are_judged_by_scheme_name_and_every_address() {
        let g = guard(false);
        assert!(g.check("https://public.test/hook").await.is_ok());
        assert_eq!(
            g.check("http://public.test/hook").await.err(),
            Some(Refused::Scheme)
        );
        assert_eq!(
            g.check("ftp://public.test/").await.err(),
            Some(Refused::Scheme)
        );
        assert_eq!(g.check("not a url").await.err(), Some(Refused::Malformed));
        assert_eq!(
            g.check("https://u:p@public.test/").await.err(),
            Some(Refused::Userinfo)
        );
        assert!(matches!(
            g.check("https://mixed.test/").await,
            Err(Refused::Address { .. })
        ));
        assert!(matches!(
            g.check("https://localhost/").await,
            Err(Refused::Name(_))
        ));
        assert!(matches!(
            g.check("https://a.b.localhost./").await,
            Err(Refused::Name(_))
        ));
        assert!(matches!(
            g.check("https://metadata.google.internal/").await,
            Err(Refused::Name(_))
        ));
        assert_eq!(
            g.check("https://nowhere.test/").await.err(),
            Some(Refused::Unresolvable)
        );
        // WHATWG host parsing turns odd IPv4 spellings into the address they mean.
        for odd in [
            "https://2130706433/",
            "https://0x7f.1/",
            "https://[::ffff:7f00:1]/",
            "https://[64:ff9b::a00:1]/",
        ] {
            assert!(
                matches!(g.check(odd).await, Err(Refused::Address { .. })),
                "{odd}"
            );
        }
    }

    #[tokio::test]
    async fn the_loopback_opening_admits_loopback_only() {
        let g = guard(true);
        assert!(g.check("http://127.0.0.1:9/").await.is_ok());
        assert!(g.check("http://loop.test:9/").await.is_ok());
        // `localhost` is no longer refused by name (the fixed resolver does not know it).
        assert_eq!(
            g.check("http://localhost:9/").await.err(),
            Some(Refused::Unresolvable)
        );
        assert_eq!(
            g.check("http://public.test/").await.err(),
            Some(Refused::Scheme)
        );
        assert!(matches!(
            g.check("https://10.0.0.1/").await,
            Err(Refused::Address { .. })
        ));
        assert!(matches!(
            g.check("http://169.254.169.254/").await,
            Err(Refused::Address { .. })
        ));
    }
}
