//! One call on its way: the attempt loop (timeouts, retries, the idempotency key, tracing),
//! the body assembled from field setters, and how answers become values or errors. Written
//! by hand (`codegen/templates/client/transport.rs`).

use std::fmt;
use std::time::{Duration, Instant};

use super::{Client, Conditional, Error, HeaderMap, RequestInfo, ResponseValue, RetryPolicy};

/// One request on its way: everything but the body is plain data.
#[derive(Clone)]
pub(crate) struct Call<'a> {
    pub(crate) client: &'a Client,
    pub(crate) operation: &'static str,
    pub(crate) method: reqwest::Method,
    pub(crate) path: String,
    pub(crate) anonymous: bool,
    pub(crate) query: Vec<(&'static str, String)>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Option<serde_json::Value>,
    pub(crate) run_id: Option<String>,
    /// `Some(None)`: the call turned the timeout off.
    pub(crate) timeout: Option<Option<Duration>>,
    pub(crate) retry: Option<RetryPolicy>,
    /// The operation accepts `Idempotency-Key`: one is minted when the caller sets none.
    pub(crate) takes_idempotency_key: bool,
    pub(crate) idempotency_key: Option<String>,
    /// Why the call cannot be sent (an empty path parameter): `send` answers
    /// `Error::InvalidRequest` with it before anything goes out.
    pub(crate) invalid: Option<String>,
    /// The path carries a credential (the resume token of an anonymous operation): it is
    /// kept out of `Debug` and out of transport errors, which would print the URL.
    pub(crate) secret_path: bool,
}

/// Header values are left out, as the client's own are: a per-call `Authorization` is a
/// credential too.
impl fmt::Debug for Call<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Call")
            .field("operation", &self.operation)
            .field("method", &self.method)
            .field(
                "path",
                &if self.secret_path {
                    "<redacted>"
                } else {
                    self.path.as_str()
                },
            )
            .field("query", &self.query)
            .field("header_names", &header_names)
            .field("run_id", &self.run_id)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

/// A 2xx answer read whole: what the typed answers are decoded from.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) bytes: Vec<u8>,
    /// The URL the request went to (see `ResponseValue::with_url`).
    pub(crate) url: Option<reqwest::Url>,
}

/// How long past a long poll's hold (its `timeout` query parameter, in seconds) an attempt
/// may take: the host answers at the end of the hold, and the network needs a moment more.
const LONG_POLL_MARGIN: Duration = Duration::from_secs(10);

impl<'a> Call<'a> {
    pub(crate) fn new(
        client: &'a Client,
        operation: &'static str,
        method: reqwest::Method,
        path: String,
        anonymous: bool,
    ) -> Self {
        Self {
            client,
            operation,
            method,
            path,
            anonymous,
            query: Vec::new(),
            headers: Vec::new(),
            body: None,
            run_id: None,
            timeout: None,
            retry: None,
            takes_idempotency_key: false,
            idempotency_key: None,
            invalid: None,
            secret_path: false,
        }
    }

    /// Replaces a query parameter (the paging cursor).
    pub(crate) fn set_query(&mut self, key: &'static str, value: String) {
        self.query.retain(|(k, _)| *k != key);
        self.query.push((key, value));
    }

    pub(crate) fn info(&self, attempt: u32) -> RequestInfo {
        RequestInfo {
            operation_id: self.operation,
            method: self.method.clone(),
            attempt,
            run_id: self.run_id.clone(),
        }
    }

    /// The headers of every attempt: the call's own, plus the idempotency key.
    fn headers(&self) -> Vec<(String, String)> {
        let mut headers = self.headers.clone();
        if let Some(key) = &self.idempotency_key {
            headers.push(("Idempotency-Key".to_owned(), key.clone()));
        }
        headers
    }

    /// Whether sending the request twice does what sending it once does: an idempotent
    /// method, or an `Idempotency-Key` of an operation that takes one (minted, set with
    /// `idempotency_key(..)`, or sent as a header of the call). A key sent to an operation
    /// the document gives none is ignored by the host, so it makes nothing safe to repeat.
    fn repeatable(&self) -> bool {
        use reqwest::Method;
        matches!(
            self.method,
            Method::GET | Method::HEAD | Method::PUT | Method::DELETE | Method::OPTIONS
        ) || self.idempotency_key.is_some()
    }

    /// Sends, retrying as the policy says, and reads the answer whole (a body cut short or
    /// too slow is retried like a failed request); a non-2xx answer is an `Error` (a `304`
    /// too, unless `not_modified_ok`).
    pub(crate) async fn send(&mut self, not_modified_ok: bool) -> Result<Answer, Error> {
        if let Some(problem) = &self.invalid {
            return Err(Error::InvalidRequest(problem.clone()));
        }
        if self.takes_idempotency_key && self.idempotency_key.is_none() {
            // A key the caller sent as a header is the call's key (it would otherwise be
            // replaced by a minted one, and a retry across restarts would act twice).
            if let Some(at) = self
                .headers
                .iter()
                .position(|(name, _)| name.eq_ignore_ascii_case("idempotency-key"))
            {
                self.idempotency_key = Some(self.headers.remove(at).1);
            } else {
                // One key per logical call, the same on every attempt: the host answers a
                // retry with the first attempt's result instead of acting twice.
                self.idempotency_key = Some(super::retry::mint_idempotency_key());
            }
        }
        #[cfg(feature = "tracing")]
        {
            use tracing::Instrument;
            let span = tracing::info_span!(
                "openwop.call",
                otel.name = self.operation,
                operation_id = self.operation,
                http.request.method = %self.method,
                http.response.status_code = tracing::field::Empty,
                attempt = tracing::field::Empty,
                run_id = self.run_id.as_deref().unwrap_or(""),
            );
            return self.attempts(not_modified_ok).instrument(span).await;
        }
        #[cfg(not(feature = "tracing"))]
        self.attempts(not_modified_ok).await
    }

    /// The per-attempt timeout: the call's or the client's, and for a long poll at least its
    /// hold and a margin (a client timeout shorter than the hold would time every poll out
    /// and retry it). A long poll always has one, even with no timeout set, so that the
    /// total timeout of a caller's own `reqwest::Client` cannot cut its hold short either.
    fn attempt_timeout(&self) -> Option<Duration> {
        let timeout = self.timeout.unwrap_or(self.client.settings.timeout);
        let hold = self
            .query
            .iter()
            .find(|(k, _)| *k == "timeout")
            .and_then(|(_, v)| v.parse::<u64>().ok())
            .map(Duration::from_secs);
        match (timeout, hold) {
            (Some(timeout), Some(hold)) => Some(timeout.max(hold + LONG_POLL_MARGIN)),
            (None, Some(hold)) => Some(hold + LONG_POLL_MARGIN),
            (timeout, None) => timeout,
        }
    }

    async fn attempts(&self, not_modified_ok: bool) -> Result<Answer, Error> {
        let policy = self.retry.as_ref().unwrap_or(&self.client.settings.retry);
        let timeout = self.attempt_timeout();
        let headers = self.headers();
        let started = Instant::now();
        let mut attempt = 1;
        loop {
            // The whole attempt is timed, hooks and the body's reading included (a hook that
            // hangs is a hung attempt), and cut to what is left of `max_elapsed`: the bound
            // holds while an attempt runs, not only between attempts.
            let timeout = policy.attempt_timeout(timeout, started);
            let sending = self.attempt(attempt, &headers, timeout, not_modified_ok);
            let result = match timeout {
                Some(limit) => {
                    tokio::time::timeout(limit, sending)
                        .await
                        .unwrap_or(Err(Error::TimedOut {
                            what: "answer",
                            waited: limit,
                        }))
                }
                None => sending.await,
            };
            #[cfg(feature = "tracing")]
            {
                let span = tracing::Span::current();
                span.record("attempt", attempt);
                if let Some(status) = match &result {
                    Ok(r) => Some(r.status),
                    Err(e) => e.status(),
                } {
                    span.record("http.response.status_code", status);
                }
            }
            let error = match result {
                Ok(response) => return Ok(response),
                Err(error) => error,
            };
            // A request the host cannot have acted on is safe to send again whatever it is.
            if !(error.is_retryable() && (self.repeatable() || error.acted_on_nothing())) {
                return Err(error);
            }
            let Some(wait) = policy.delay_within(attempt, error.retry_after(), started) else {
                return Err(error);
            };
            #[cfg(feature = "tracing")]
            tracing::debug!(attempt, ?wait, error = %error, "retrying");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    async fn attempt(
        &self,
        attempt: u32,
        headers: &[(String, String)],
        timeout: Option<Duration>,
        not_modified_ok: bool,
    ) -> Result<Answer, Error> {
        let request = self.client.prepare(
            self.method.clone(),
            &self.path,
            self.anonymous,
            &self.query,
            headers,
            self.body.as_ref(),
            timeout,
        )?;
        let response = self
            .client
            .execute(request, &self.info(attempt))
            .await
            .map_err(|e| self.redacted(e))?;
        let status = response.status();
        if status.is_success() || (not_modified_ok && status.as_u16() == 304) {
            let headers = response.headers().clone();
            // What a `Location` is resolved against; a path that is a credential is not kept
            // (an answer's `Debug` would print it): the base URL stands for it.
            let url = if self.secret_path {
                reqwest::Url::parse(&format!("{}/", self.client.settings.base_url)).ok()
            } else {
                Some(response.url().clone())
            };
            // Read inside the attempt: the timeout covers it, and a failure is retried.
            let bytes = read_body(response, self.client.settings.max_body_size)
                .await
                .map_err(|e| self.redacted(e))?;
            return Ok(Answer {
                status: status.as_u16(),
                headers,
                bytes,
                url,
            });
        }
        Err(self.redacted(error_answer(response).await))
    }

    /// A transport error of a call whose path is a credential, without its URL (reqwest's
    /// `Display` prints it, and errors end up in logs).
    fn redacted(&self, error: Error) -> Error {
        match error {
            Error::Transport(e) if self.secret_path => Error::Transport(e.without_url()),
            other => other,
        }
    }
}

/// A body assembled from field setters, checked against its model when sent.
#[derive(Debug, Default)]
pub(crate) struct Fields {
    map: serde_json::Map<String, serde_json::Value>,
    set_any: bool,
    problem: Option<String>,
}

impl Fields {
    pub(crate) fn whole<T: serde::Serialize>(&mut self, body: &T) {
        self.set_any = true;
        // A whole body replaces what was set before it (`.body(a).body(b)` sends `b`);
        // field setters after it change its fields.
        self.map.clear();
        match serde_json::to_value(body) {
            Ok(serde_json::Value::Object(map)) => self.map.extend(map),
            Ok(other) => {
                self.map.clear();
                self.map.insert(String::new(), other);
            }
            Err(e) => self.fail(format!("the body does not serialise: {e}")),
        }
    }

    pub(crate) fn set<T: serde::Serialize, E: fmt::Display>(
        &mut self,
        key: &str,
        value: Result<T, E>,
    ) {
        self.set_any = true;
        match value
            .map_err(|e| e.to_string())
            .and_then(|v| serde_json::to_value(v).map_err(|e| e.to_string()))
        {
            Ok(v) => {
                self.map.insert(key.to_owned(), v);
            }
            Err(e) => self.fail(format!("`{key}`: {e}")),
        }
    }

    fn fail(&mut self, message: String) {
        if self.problem.is_none() {
            self.problem = Some(message);
        }
    }

    /// The body to send: checked by decoding it as `T`, then encoded from `T`.
    pub(crate) fn finish<T: serde::Serialize + serde::de::DeserializeOwned>(
        self,
        required: bool,
    ) -> Result<Option<serde_json::Value>, Error> {
        if let Some(problem) = self.problem {
            return Err(Error::InvalidRequest(problem));
        }
        if !self.set_any && !required {
            return Ok(None);
        }
        let value = match self.map.get("") {
            Some(whole) if self.map.len() == 1 => whole.clone(),
            _ => serde_json::Value::Object(self.map),
        };
        let typed: T = serde_json::from_value(value)
            .map_err(|e| Error::InvalidRequest(format!("body: {e}")))?;
        serde_json::to_value(typed)
            .map(Some)
            .map_err(|e| Error::InvalidRequest(format!("body: {e}")))
    }
}

/// A 2xx answer's body, read whole up to `limit` bytes: a longer one (as its
/// `Content-Length` announces, or as it turns out) is `Error::TooLarge`, and the rest is
/// left unread.
async fn read_body(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, Error> {
    let too_large = || Error::TooLarge {
        what: "answer body",
        limit,
    };
    if response
        .content_length()
        .is_some_and(|length| length > limit as u64)
    {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if bytes.len() + chunk.len() > limit {
            return Err(too_large());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

pub(crate) fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut end = text.len().min(512);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// How much of a non-2xx answer's body is read: an error envelope is far smaller, and a
/// proxy's or a broken server's endless page must not fill the caller's memory. The rest
/// is left unread (the connection is closed, not reused).
pub(crate) const ERROR_BODY_LIMIT: usize = 1 << 20;

pub(crate) async fn error_answer(mut response: reqwest::Response) -> Error {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    match read_prefix(&mut response, ERROR_BODY_LIMIT).await {
        Ok(bytes) => super::api_error(status, headers, &bytes),
        Err(e) => Error::Transport(e),
    }
}

/// At most the first `limit` bytes of a body; the rest is left unread.
pub(crate) async fn read_prefix(
    response: &mut reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, reqwest::Error> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = limit - bytes.len();
        bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if chunk.len() >= room {
            break;
        }
    }
    Ok(bytes)
}

/// The envelope of an error body that is almost one: it names a code (a non-empty string
/// in `code_key`) but breaks the model beside it (an empty, missing or non-text `message`,
/// a `details` of the wrong shape, a member the model refuses). The code is what callers
/// route on, so it is kept: the message becomes the status's reason phrase when the host
/// gave none, and what still does not decode is left out. `None` when there is no code, or
/// the model refuses even the code and a message: then the answer is `Error::Http`.
pub(crate) fn lenient_envelope<T: serde::de::DeserializeOwned>(
    status: u16,
    bytes: &[u8],
    code_key: &str,
) -> Option<T> {
    use serde_json::Value;

    let Ok(Value::Object(mut body)) = serde_json::from_slice::<Value>(bytes) else {
        return None;
    };
    let code = body.get(code_key)?.as_str()?.trim().to_owned();
    if code.is_empty() {
        return None;
    }
    let message = match body.get("message") {
        Some(Value::String(m)) if !m.trim().is_empty() => m.clone(),
        _ => reqwest::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .map_or_else(|| format!("HTTP {status}"), str::to_owned),
    };
    body.insert(code_key.to_owned(), Value::String(code));
    body.insert("message".to_owned(), Value::String(message));
    // The whole body, then only the members of the envelope, then the code and message.
    let members = |keys: &[&str]| {
        body.iter()
            .filter(|(k, _)| keys.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<serde_json::Map<_, _>>()
    };
    [
        body.clone(),
        members(&[code_key, "message", "details"]),
        members(&[code_key, "message"]),
    ]
    .into_iter()
    .find_map(|candidate| serde_json::from_value(Value::Object(candidate)).ok())
}

pub(crate) fn json_answer<T: serde::de::DeserializeOwned>(
    answer: Answer,
) -> Result<ResponseValue<T>, Error> {
    let Answer {
        status,
        headers,
        bytes,
        url,
    } = answer;
    // An empty answer decodes as JSON null: `()`, `Option` and `Value` accept it.
    let body: &[u8] = if bytes.is_empty() { b"null" } else { &bytes };
    match serde_json::from_slice(body) {
        Ok(inner) => Ok(with_url(ResponseValue::new(inner, status, headers), url)),
        Err(e) => Err(Error::Decode {
            status,
            message: e.to_string().into(),
            body: excerpt(&bytes).into(),
            headers: Box::new(headers),
        }),
    }
}

/// An answer as it came, its body undecoded (`send_raw`).
pub(crate) fn raw_answer(answer: Answer) -> ResponseValue<Vec<u8>> {
    with_url(
        ResponseValue::new(answer.bytes, answer.status, answer.headers),
        answer.url,
    )
}

fn with_url<T>(value: ResponseValue<T>, url: Option<reqwest::Url>) -> ResponseValue<T> {
    match url {
        Some(url) => value.with_url(url),
        None => value,
    }
}

pub(crate) fn conditional_answer<T: serde::de::DeserializeOwned>(
    answer: Answer,
) -> Result<ResponseValue<Conditional<T>>, Error> {
    if answer.status == 304 {
        return Ok(with_url(
            ResponseValue::new(Conditional::NotModified, 304, answer.headers),
            answer.url,
        ));
    }
    Ok(json_answer::<T>(answer)?.map(Conditional::Fresh))
}

pub(crate) fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name)?.to_str().ok()
}

/// Projects an id into one path segment: bytes outside `[A-Za-z0-9._-]` become `~` and two
/// upper-case hex digits, so a tenant-bound id never splits the path. A segment of dots
/// alone (`.`, `..`) is projected whole (`~2E~2E`): as written, a URL parser would take it
/// for a step up the path and call another route.
pub fn project_path_segment(id: &str) -> String {
    let dots_only = id.bytes().all(|b| b == b'.');
    let mut out = String::with_capacity(id.len());
    for byte in id.bytes() {
        let plain = byte.is_ascii_alphanumeric()
            || matches!(byte, b'_' | b'-')
            || (byte == b'.' && !dots_only);
        if plain {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("~{byte:02X}"));
        }
    }
    out
}
