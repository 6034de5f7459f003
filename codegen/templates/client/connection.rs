//! The client itself: how it is configured (timeouts, retries, headers, hooks) and how one
//! HTTP request is assembled and sent. Written by hand
//! (`codegen/templates/client/connection.rs`); what the corpus decides (the credential's
//! header, the version headers) comes from constants the generator writes in `client/mod.rs`.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::{Error, RetryPolicy};

/// How long establishing a connection may take, unless the builder says otherwise.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one attempt of a call (hooks, connect, send, read the answer) may take, unless
/// the builder or the call says otherwise; with the default retries a call that times out
/// every time takes three of these plus the backoff ([`RetryPolicy::max_elapsed`] bounds the
/// whole). A long poll is not cut by it: its attempts may take its hold (the `timeout`
/// query parameter) and 10 s more. Event streams have no total timeout; they count as
/// dropped after [`DEFAULT_STREAM_IDLE_TIMEOUT`] of silence and reconnect.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long an event stream keeps reconnecting while every attempt fails (a host restarting
/// or being deployed, a network outage), unless the stream says otherwise
/// (`reconnect_for(..)`): two minutes of consecutive failures, counted from the first one
/// and reset by a connection that delivers an event or stays up 10 s. Then the stream ends
/// with [`Error::Stream`].
pub const DEFAULT_RECONNECT_FOR: Duration = Duration::from_secs(120);

/// The largest 2xx answer body the client reads, unless the builder says otherwise
/// ([`ClientBuilder::max_body_size`]): 32 MiB. A longer one is [`Error::TooLarge`].
pub const DEFAULT_MAX_BODY_SIZE: usize = 32 << 20;

/// The largest event (its `data:` lines, or a line not yet ended) an event stream buffers,
/// unless the builder says otherwise ([`ClientBuilder::max_event_size`]): 8 MiB. A larger
/// one ends the stream with [`Error::TooLarge`].
pub const DEFAULT_MAX_EVENT_SIZE: usize = 8 << 20;

/// How long an event stream may stay silent (not even a keep-alive comment; hosts send one
/// at least every 30 s) before it counts as dropped and reconnects.
pub const DEFAULT_STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(75);

/// What a [`Hook`] is told about the call a request belongs to.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RequestInfo {
    /// The OpenAPI `operationId` (`createRun`, …).
    pub operation_id: &'static str,
    /// The HTTP method.
    pub method: reqwest::Method,
    /// 1 for the first attempt, 2 for the first retry, …; for an event stream, 1 for the
    /// first connection tried, then one more for each further one.
    pub attempt: u32,
    /// The run the call is about, when the path names one.
    pub run_id: Option<String>,
}

/// What a hook answers: nothing, or an error that ends the call.
pub type HookFuture<'a> = Pin<Box<dyn Future<Output = Result<(), Error>> + Send + 'a>>;

/// Code run on every request before it is sent and every answer before it is read: set a
/// fresh token, add headers, log, count. Both methods default to doing nothing. Register one
/// with [`ClientBuilder::hook`]; [`ClientBuilder::on_request`] and
/// [`ClientBuilder::on_response`] take plain closures. A hook runs inside its attempt: the
/// attempt's timeout and [`RetryPolicy::max_elapsed`] bound it too (a hook that never
/// finishes is [`Error::TimedOut`]).
///
/// A hook that answers an error ends the call with it, unsent (from `on_request`) or
/// unread (from `on_response`), and it is not retried. Answer your own error with
/// [`Error::hook`] (an [`Error::Hook`], whose `source()` is your error):
/// `Err(Error::hook(io_error))`, `Err(Error::hook("no token for this tenant"))`.
///
/// ```
/// use openwop_sdk::client::{Client, Hook, HookFuture, RequestInfo};
/// // The SDK's own reqwest, re-exported: no reqwest dependency of yours to keep in step.
/// use openwop_sdk::client::reqwest::Request;
/// use std::sync::{Arc, RwLock};
///
/// /// Sends whatever token another task last refreshed.
/// struct Token(Arc<RwLock<String>>);
///
/// impl Hook for Token {
///     fn on_request<'a>(&'a self, request: &'a mut Request, _: &'a RequestInfo) -> HookFuture<'a> {
///         Box::pin(async move {
///             let token = format!("Bearer {}", self.0.read().unwrap());
///             request.headers_mut().insert("authorization", token.parse().unwrap());
///             Ok(())
///         })
///     }
/// }
///
/// let token = Arc::new(RwLock::new("first".to_owned()));
/// let client = Client::builder("http://127.0.0.1:8080").hook(Token(token.clone())).build()?;
/// # Ok::<(), openwop_sdk::client::Error>(())
/// ```
pub trait Hook: Send + Sync + 'static {
    /// Called with each request (each attempt) just before it is sent; it may change it.
    fn on_request<'a>(
        &'a self,
        request: &'a mut reqwest::Request,
        info: &'a RequestInfo,
    ) -> HookFuture<'a> {
        let _ = (request, info);
        Box::pin(async { Ok(()) })
    }

    /// Called with the status and headers of each answer, before its body is read.
    fn on_response<'a>(
        &'a self,
        status: u16,
        headers: &'a HeaderMap,
        info: &'a RequestInfo,
    ) -> HookFuture<'a> {
        let _ = (status, headers, info);
        Box::pin(async { Ok(()) })
    }
}

type RequestFn = dyn Fn(&mut reqwest::Request, &RequestInfo) + Send + Sync;
type ResponseFn = dyn Fn(u16, &HeaderMap, &RequestInfo) + Send + Sync;

struct OnRequest(Box<RequestFn>);

impl Hook for OnRequest {
    fn on_request<'a>(
        &'a self,
        request: &'a mut reqwest::Request,
        info: &'a RequestInfo,
    ) -> HookFuture<'a> {
        (self.0)(request, info);
        Box::pin(async { Ok(()) })
    }
}

struct OnResponse(Box<ResponseFn>);

impl Hook for OnResponse {
    fn on_response<'a>(
        &'a self,
        status: u16,
        headers: &'a HeaderMap,
        info: &'a RequestInfo,
    ) -> HookFuture<'a> {
        (self.0)(status, headers, info);
        Box::pin(async { Ok(()) })
    }
}

/// The API key; never printed.
#[derive(Clone)]
pub(crate) struct Secret(pub(crate) String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Everything a call consults besides the connection pool: shared by clones of one client,
/// so that a clone copies no string (a `with_*` method copies them once, for the new
/// client).
#[derive(Clone)]
pub(crate) struct Settings {
    /// The host's base URL, without a trailing slash.
    pub(crate) base_url: String,
    pub(crate) api_key: Option<Secret>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) retry: RetryPolicy,
    pub(crate) hooks: Vec<Arc<dyn Hook>>,
    pub(crate) trace_context: Option<Arc<dyn Fn() -> Option<String> + Send + Sync>>,
    pub(crate) max_body_size: usize,
    pub(crate) max_event_size: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            base_url: String::new(),
            api_key: None,
            headers: Vec::new(),
            timeout: Some(DEFAULT_TIMEOUT),
            retry: RetryPolicy::default(),
            hooks: Vec::new(),
            trace_context: None,
            max_body_size: DEFAULT_MAX_BODY_SIZE,
            max_event_size: DEFAULT_MAX_EVENT_SIZE,
        }
    }
}

/// A client bound to one host. Cheap to clone: two reference counts (the connection pool,
/// and one shared block of settings: base URL, API key, headers, timeouts, retries, hooks).
///
/// [`Client::builder`] sets everything; [`Client::new`] is the builder's defaults: a 10 s
/// connect timeout, a 30 s timeout per attempt, [`RetryPolicy::default`], and on every request
/// the `OpenWOP-Version` the crate was generated for, `OpenWOP-Client-Version` and
/// `User-Agent: openwop-rust/<crate version>`.
#[derive(Clone)]
pub struct Client {
    pub(crate) http: reqwest::Client,
    pub(crate) settings: Arc<Settings>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Header values may be credentials too: only their names are shown.
        let names: Vec<&str> = self
            .settings
            .headers
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        f.debug_struct("Client")
            .field("base_url", &shown_url(&self.settings.base_url))
            .field("api_key", &self.settings.api_key)
            .field("headers", &names)
            .field("timeout", &self.settings.timeout)
            .field("retry", &self.settings.retry)
            .field("hooks", &self.settings.hooks.len())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client for the host at `base_url` (scheme, host and optional path prefix) with the
    /// default timeouts and retries ([`Client::builder`] to change them).
    ///
    /// # Panics
    ///
    /// When `base_url` is not an `http`/`https` URL with a host, or the TLS backend cannot
    /// be initialised (as `reqwest::Client::new` does); use [`ClientBuilder::build`] to get
    /// either as an error.
    pub fn new(base_url: impl Into<String>) -> Self {
        match Self::builder(base_url).build() {
            Ok(client) => client,
            Err(e) => panic!("openwop client: {e}"),
        }
    }

    /// A builder for a client of the host at `base_url`.
    ///
    /// ```
    /// use openwop_sdk::client::{Client, RetryPolicy};
    /// use std::time::Duration;
    ///
    /// let client = Client::builder("http://127.0.0.1:8080")
    ///     .api_key("owdev_…")
    ///     .timeout(Duration::from_secs(30))
    ///     .retry(RetryPolicy::default().max_attempts(5))
    ///     .header("X-Team", "payments")
    ///     .build()?;
    /// # Ok::<(), openwop_sdk::client::Error>(())
    /// ```
    pub fn builder(base_url: impl Into<String>) -> ClientBuilder {
        ClientBuilder {
            base_url: base_url.into(),
            http: None,
            connect_timeout: Some(DEFAULT_CONNECT_TIMEOUT),
            api_key: None,
            headers: Vec::new(),
            settings: Settings::default(),
        }
    }

    /// A client that sends through an existing `reqwest::Client`: its own timeouts, proxies
    /// and TLS apply, and the client adds no per-call timeout (set one with
    /// [`ClientBuilder::timeout`] after [`ClientBuilder::http_client`] if you want both).
    pub fn with_client(base_url: impl Into<String>, http: reqwest::Client) -> Self {
        let builder = Self::builder(base_url).http_client(http).no_timeout();
        match builder.build() {
            Ok(client) => client,
            Err(e) => panic!("openwop client: {e}"),
        }
    }

    /// The same client sending `key` as the API credential on every request that takes
    /// one. Fails ([`Error::InvalidRequest`]) when `key` is empty, blank or not a valid
    /// header value, as [`ClientBuilder::build`] does.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Result<Self, Error> {
        let key = Secret(key.into());
        check_api_key(&key)?;
        Arc::make_mut(&mut self.settings).api_key = Some(key);
        Ok(self)
    }

    /// The same client sending a header on every request; it replaces a default of the same
    /// name (for example `OpenWOP-Version`). Fails ([`Error::InvalidRequest`]) when the name
    /// or value is not a valid header, as [`ClientBuilder::build`] does.
    pub fn with_header(
        mut self,
        name: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<Self, Error> {
        let (name, value) = (name.into(), value.into());
        put(&mut HeaderMap::new(), &name, &value)?;
        Arc::make_mut(&mut self.settings).headers.push((name, value));
        Ok(self)
    }

    /// The same client with another retry policy.
    pub fn with_retry(mut self, policy: RetryPolicy) -> Self {
        Arc::make_mut(&mut self.settings).retry = policy;
        self
    }

    /// The same client with another timeout per call (`None`: no timeout).
    pub fn with_timeout(mut self, timeout: Option<Duration>) -> Self {
        Arc::make_mut(&mut self.settings).timeout = timeout;
        self
    }

    /// The host's base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.settings.base_url
    }

    /// The underlying `reqwest::Client`.
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// The retry policy calls use unless they set their own.
    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.settings.retry
    }

    /// The timeout calls use unless they set their own.
    pub fn timeout(&self) -> Option<Duration> {
        self.settings.timeout
    }

    /// One request, ready to send: the defaults, then the client's headers, then the call's,
    /// then the credential, unless the call sent its own `Authorization`.
    pub(crate) fn prepare(
        &self,
        method: reqwest::Method,
        path: &str,
        anonymous: bool,
        query: &[(&'static str, String)],
        headers: &[(String, String)],
        body: Option<&serde_json::Value>,
        timeout: Option<Duration>,
    ) -> Result<reqwest::Request, Error> {
        let mut map = HeaderMap::new();
        put(
            &mut map,
            "user-agent",
            &format!("openwop-rust/{}", crate::SDK_VERSION),
        )?;
        if let Some(name) = super::VERSION_HEADER {
            put(&mut map, name, super::VERSION_HEADER_VALUE)?;
        }
        if let Some(name) = super::CLIENT_VERSION_HEADER {
            put(&mut map, name, crate::API_VERSION)?;
        }
        for (name, value) in self.settings.headers.iter().chain(headers) {
            put(&mut map, name, value)?;
        }
        let call_credential = headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case(super::AUTH_HEADER));
        if let (false, false, Some(key)) = (anonymous, call_credential, &self.settings.api_key) {
            let credential = if super::AUTH_BEARER {
                format!("Bearer {}", key.0)
            } else {
                key.0.clone()
            };
            let mut value = HeaderValue::from_str(&credential).map_err(|_| {
                Error::InvalidRequest("the API key is not a valid header value".to_owned())
            })?;
            value.set_sensitive(true);
            map.insert(header_name(super::AUTH_HEADER)?, value);
        }
        if !map.contains_key("traceparent")
            && let Some(parent) = self.settings.trace_context.as_ref().and_then(|f| f())
        {
            put(&mut map, "traceparent", &parent)?;
        }
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.settings.base_url))
            .headers(map);
        if !query.is_empty() {
            request = request.query(query);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        if let Some(timeout) = timeout {
            request = request.timeout(timeout);
        }
        request.build().map_err(Error::Transport)
    }

    /// Sends one request through the hooks.
    pub(crate) async fn execute(
        &self,
        mut request: reqwest::Request,
        info: &RequestInfo,
    ) -> Result<reqwest::Response, Error> {
        for hook in &self.settings.hooks {
            hook.on_request(&mut request, info).await?;
        }
        let response = self.http.execute(request).await?;
        for hook in &self.settings.hooks {
            hook.on_response(response.status().as_u16(), response.headers(), info)
                .await?;
        }
        Ok(response)
    }
}

/// A base URL as logs and errors may show it: a `user:password@` is replaced.
fn shown_url(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let authority = rest.split('/').next().unwrap_or("");
            match authority.rsplit_once('@') {
                Some((_, host)) => {
                    format!("{scheme}://<redacted>@{host}{}", &rest[authority.len()..])
                }
                None => url.to_owned(),
            }
        }
        None => url.to_owned(),
    }
}

/// The check every way of setting the API key makes: an empty (or blank) key, a config
/// value that was never filled in, would make every call a `401`.
fn check_api_key(key: &Secret) -> Result<(), Error> {
    if key.0.trim().is_empty() {
        return Err(Error::InvalidRequest(
            "the API key is empty (an unset environment variable or config value?)".to_owned(),
        ));
    }
    HeaderValue::from_str(&key.0).map(drop).map_err(|_| {
        Error::InvalidRequest(
            "the API key is not a valid header value (a line break or control character?)"
                .to_owned(),
        )
    })
}

fn header_name(name: &str) -> Result<HeaderName, Error> {
    HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| Error::InvalidRequest(format!("`{name}` is not a header name")))
}

fn put(map: &mut HeaderMap, name: &str, value: &str) -> Result<(), Error> {
    let mut value = HeaderValue::from_str(value)
        .map_err(|_| Error::InvalidRequest(format!("the `{name}` value is not a header value")))?;
    let name = header_name(name)?;
    // A credential set as a header (per call, or on the builder) is marked as the API key
    // is, so a hook or a log that prints the request's headers shows `Sensitive`.
    if is_credential(&name) {
        value.set_sensitive(true);
    }
    map.insert(name, value);
    Ok(())
}

/// Headers that carry a credential by their name.
fn is_credential(name: &HeaderName) -> bool {
    let name = name.as_str();
    name.eq_ignore_ascii_case(super::AUTH_HEADER)
        || matches!(
            name,
            "authorization" | "proxy-authorization" | "cookie" | "x-api-key"
        )
}

/// Configures a [`Client`]; made by [`Client::builder`]. Every setting has a documented
/// default, so `Client::builder(url).build()` is ready to use.
#[must_use = "a builder does nothing until `build()`"]
pub struct ClientBuilder {
    base_url: String,
    http: Option<reqwest::Client>,
    connect_timeout: Option<Duration>,
    api_key: Option<Secret>,
    headers: Vec<(String, String)>,
    settings: Settings,
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("base_url", &shown_url(&self.base_url))
            .field("connect_timeout", &self.connect_timeout)
            .field("timeout", &self.settings.timeout)
            .field("retry", &self.settings.retry)
            .field("max_body_size", &self.settings.max_body_size)
            .field("max_event_size", &self.settings.max_event_size)
            .finish_non_exhaustive()
    }
}

impl ClientBuilder {
    /// Sends `key` as the API credential on every request that takes one. An empty or blank
    /// key, or one that is not a header value, fails [`ClientBuilder::build`].
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(Secret(key.into()));
        self
    }

    /// Sends a header on every request; it replaces a default of the same name.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// How long establishing a connection may take (default [`DEFAULT_CONNECT_TIMEOUT`]).
    /// Not applied to a client given with [`ClientBuilder::http_client`].
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// How long one attempt of a call (its hooks, sending, reading the answer) may take
    /// (default [`DEFAULT_TIMEOUT`]); a call's own
    /// `timeout(..)` overrides it. Event streams use their idle timeout instead. To bound a
    /// call with all its retries, see [`RetryPolicy::max_elapsed`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.settings.timeout = Some(timeout);
        self
    }

    /// No per-attempt timeout (a host that never answers then blocks the call forever,
    /// unless [`RetryPolicy::max_elapsed`] bounds it).
    pub fn no_timeout(mut self) -> Self {
        self.settings.timeout = None;
        self
    }

    /// The retry policy (default [`RetryPolicy::default`]; [`RetryPolicy::none`] turns
    /// retries off).
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.settings.retry = policy;
        self
    }

    /// The largest 2xx answer body a call reads (default [`DEFAULT_MAX_BODY_SIZE`], 32 MiB);
    /// a larger one fails the call with [`Error::TooLarge`], unread.
    pub fn max_body_size(mut self, bytes: usize) -> Self {
        self.settings.max_body_size = bytes;
        self
    }

    /// The largest event an event stream buffers (default [`DEFAULT_MAX_EVENT_SIZE`],
    /// 8 MiB): its `data:` lines together, or a line whose end has not come yet. A larger one
    /// ends the stream with [`Error::TooLarge`].
    pub fn max_event_size(mut self, bytes: usize) -> Self {
        self.settings.max_event_size = bytes;
        self
    }

    /// Runs `hook` on every request and answer, after the hooks registered before it.
    pub fn hook(mut self, hook: impl Hook) -> Self {
        self.settings.hooks.push(Arc::new(hook));
        self
    }

    /// Runs `f` on every request (every attempt) just before it is sent.
    pub fn on_request(
        self,
        f: impl Fn(&mut reqwest::Request, &RequestInfo) + Send + Sync + 'static,
    ) -> Self {
        self.hook(OnRequest(Box::new(f)))
    }

    /// Runs `f` with the status and headers of every answer.
    pub fn on_response(
        self,
        f: impl Fn(u16, &HeaderMap, &RequestInfo) + Send + Sync + 'static,
    ) -> Self {
        self.hook(OnResponse(Box::new(f)))
    }

    /// Where the current trace comes from: `f` answers a W3C `traceparent` value (or `None`)
    /// and the client sends it on every request that does not set one. With OpenTelemetry,
    /// inject the current context there with your propagator.
    pub fn trace_context(mut self, f: impl Fn() -> Option<String> + Send + Sync + 'static) -> Self {
        self.settings.trace_context = Some(Arc::new(f));
        self
    }

    /// Sends through an existing `reqwest::Client` (proxies, TLS, pool settings); the connect
    /// timeout and the redirect policy are then the given client's own (the client this
    /// builder makes follows no redirect: build yours with
    /// `.redirect(reqwest::redirect::Policy::none())` to keep that).
    pub fn http_client(mut self, http: reqwest::Client) -> Self {
        self.http = Some(http);
        self
    }

    /// The client. Fails ([`Error::InvalidRequest`]) when the base URL is not an `http` or
    /// `https` URL with a host and without a query or fragment, or when the API key or a
    /// header is not a valid header; or when the TLS backend cannot be initialised.
    pub fn build(self) -> Result<Client, Error> {
        // Errors name the URL without a `user:password@` it may carry.
        let shown = shown_url(&self.base_url);
        let url = reqwest::Url::parse(&self.base_url).map_err(|e| {
            Error::InvalidRequest(format!(
                "the base URL `{shown}` is not a URL ({e}); write it with its scheme, as in http://127.0.0.1:8080"
            ))
        })?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
            return Err(Error::InvalidRequest(format!(
                "the base URL `{shown}` must be an http or https URL with a host"
            )));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(Error::InvalidRequest(format!(
                "the base URL `{shown}` has a query or fragment; operations' paths are appended to it"
            )));
        }
        // Without a TLS feature reqwest refuses every https request, and the refusal reads
        // as a transport error worth retrying. Said here, once, with the fix. (A client
        // given with `http_client` brings its own TLS.)
        #[cfg(not(any(feature = "rustls", feature = "native-tls")))]
        if url.scheme() == "https" && self.http.is_none() {
            return Err(Error::InvalidRequest(format!(
                "the base URL `{shown}` is https, but this build of openwop-sdk has no TLS: enable its `rustls` (a default feature) or `native-tls` feature"
            )));
        }
        for (name, value) in &self.headers {
            put(&mut HeaderMap::new(), name, value)?;
        }
        if let Some(key) = &self.api_key {
            check_api_key(key)?;
        }
        let http = match self.http {
            Some(http) => http,
            None => {
                // Redirects are not followed. An OpenWOP host answers its API where it is;
                // reqwest's default turned a `POST` redirected by `301`/`302` into a body-less
                // `GET` (a create answered by a listing), dropped the API key on a move to
                // another origin (a `401` with a valid key) and sent the client's other
                // headers there. A `3xx` is an `Error::Http` naming where it points.
                let mut builder =
                    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
                if let Some(timeout) = self.connect_timeout {
                    builder = builder.connect_timeout(timeout);
                }
                builder.build()?
            }
        };
        Ok(Client {
            http,
            settings: Arc::new(Settings {
                base_url: self.base_url.trim_end_matches('/').to_owned(),
                api_key: self.api_key,
                headers: self.headers,
                ..self.settings
            }),
        })
    }
}
