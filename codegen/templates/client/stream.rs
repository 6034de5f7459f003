//! Server-sent event streams: SSE framing (`event:`, `id:`, `data:`, `retry:`), and
//! reconnection with `Last-Event-ID` after a drop, a silence or a transient refusal. Written
//! by hand (`codegen/templates/client/stream.rs`).

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::transport::{Call, error_answer, excerpt, read_prefix};
use super::{Client, Error, HeaderMap, RequestInfo};

/// How an [`EventStream`] reconnects.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamOptions {
    /// How long failures in a row may go on before the stream ends.
    pub(crate) reconnect_for: Duration,
    /// How many failures in a row end the stream, besides the time (none by default).
    pub(crate) max_reconnects: Option<u32>,
    pub(crate) idle_timeout: Duration,
}

impl Default for StreamOptions {
    fn default() -> Self {
        Self {
            reconnect_for: super::DEFAULT_RECONNECT_FOR,
            max_reconnects: None,
            idle_timeout: super::DEFAULT_STREAM_IDLE_TIMEOUT,
        }
    }
}

impl StreamOptions {
    /// Whether `failures` in a row, the first at `since`, are past the budget.
    pub(crate) fn spent(&self, failures: u32, since: Instant) -> bool {
        self.max_reconnects.is_some_and(|max| failures > max)
            || since.elapsed() >= self.reconnect_for
    }
}

/// The wait before the `n`th reconnection in a row (1-based): `base` (the host's `retry:`,
/// else 250 ms), doubled each time, at most 5 s (or `base`, when the host asked for more).
pub(crate) fn reconnect_wait(base: Option<Duration>, n: u32) -> Duration {
    let base = base.unwrap_or(Duration::from_millis(250));
    let factor = 1u32 << n.saturating_sub(1).min(5);
    base.saturating_mul(factor)
        .min(Duration::from_secs(5).max(base))
}

/// The longest wait a `Retry-After` on a reconnection may ask for; a longer one ends the
/// stream with the host's error.
const MAX_RECONNECT_WAIT: Duration = Duration::from_secs(60);

/// The total timeout of a stream request: in effect none (a run may wait on a person for
/// days), but set, so that it overrides a total timeout of a caller's `reqwest::Client`.
const STREAM_LIFETIME: Duration = Duration::from_secs(365 * 24 * 3600);

/// How long a connection must stay up, with or without events, before a drop no longer
/// counts as another failure in a row.
const HEALTHY_CONNECTION: Duration = Duration::from_secs(10);

/// One dispatched server-sent event, before its data is decoded.
#[derive(Debug, Clone)]
struct Frame {
    event: Option<String>,
    id: Option<String>,
    data: String,
}

/// An event with its SSE fields, as [`EventStream::next_event`] answers it.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent<T> {
    /// The `event:` name; `message` when the frame names none (the SSE default). OpenWOP
    /// hosts name each run event by its type (`run.completed`, …).
    pub event: String,
    /// The `id:` in force when the event was dispatched (what a reconnection resumes after).
    pub id: Option<String>,
    /// The decoded `data:`.
    pub data: T,
}

/// The connection side of an [`EventStream`]: SSE framing and reconnection.
struct StreamState {
    client: Client,
    operation: &'static str,
    path: String,
    anonymous: bool,
    query: Vec<(&'static str, String)>,
    headers: Vec<(String, String)>,
    run_id: Option<String>,
    options: StreamOptions,
    /// How long a connection may wait for the answer's head (the call's timeout, else the
    /// client's), besides the idle timeout.
    open_within: Option<Duration>,
    response: Option<reqwest::Response>,
    status: u16,
    /// The headers of the answer that opened this connection (for a `Decode` error).
    response_headers: HeaderMap,
    buffer: Vec<u8>,
    data: Option<String>,
    event: Option<String>,
    frames: VecDeque<Frame>,
    /// The id of the last event dispatched: what a reconnection resumes after.
    last_event_id: Option<String>,
    /// The `id:` read since (the SSE "last event ID buffer"): it becomes `last_event_id`
    /// only when its event is dispatched, so an event cut short by a drop is asked for
    /// again instead of skipped.
    id_buffer: Option<String>,
    /// The last line of the previous chunk ended in CR: an LF starting this one belongs
    /// to it.
    skip_lf: bool,
    /// Nothing of this connection's body parsed yet (a byte order mark may come first).
    at_start: bool,
    /// When this connection was opened: one that stayed up a while is not a failure in a
    /// row with the next, even if it carried only keep-alives.
    connected_at: std::time::Instant,
    retry: Option<Duration>,
    /// The `Retry-After` of the last refused reconnection.
    wait: Option<Duration>,
    frames_this_connection: usize,
    /// The host closed the stream: the next connection only checks that nothing newer
    /// exists, and counts as a reconnection only if something does.
    confirming: bool,
    /// The `sequence` of the newest run event dispatched (on a run's stream): an event at or
    /// below it is one the host sent again, and is dropped.
    last_sequence: Option<u64>,
    /// Clean closes in a row of connections that lasted less than [`HEALTHY_CONNECTION`]:
    /// the wait before the next connection grows with them.
    closes: u32,
    /// A failure that ends the stream once the events before it are read (an event too
    /// large).
    failed: Option<Error>,
    /// The largest event buffered (`ClientBuilder::max_event_size`).
    max_event: usize,
    failures: u32,
    /// When the first of the current failures in a row happened.
    failing_since: Option<Instant>,
    reconnects: u32,
    /// Connections tried so far, for [`RequestInfo::attempt`].
    tried: u32,
    /// The stream is open: every connection from now on is a reconnection.
    opened: bool,
    done: bool,
    /// The stream's span (`openwop.stream`), entered whenever the stream does any work; each
    /// connection is a child span of it.
    #[cfg(feature = "tracing")]
    span: tracing::Span,
}

impl StreamState {
    /// Opens a connection; `None` when the host answered `204 No Content` (the WHATWG
    /// "stop reconnecting").
    ///
    /// The wait for the answer's head is bounded by the idle timeout, the stream's timeout
    /// (the call's, else the client's) and `head_within`: opening a stream is part of a
    /// call, which `RetryPolicy::max_elapsed` bounds; reconnecting is not.
    async fn connect(
        &mut self,
        head_within: Option<Duration>,
    ) -> Result<Option<reqwest::Response>, Error> {
        let mut headers = self.headers.clone();
        headers.push(("Accept".to_owned(), "text/event-stream".to_owned()));
        // An empty id (`id:` with no value) resets the resumption point: nothing is sent.
        if let Some(id) = self.last_event_id.as_ref().filter(|id| !id.is_empty()) {
            headers.push(("Last-Event-ID".to_owned(), id.clone()));
        }
        // No total timeout: a stream lives as long as the run; silence is judged by the
        // idle timeout instead. Said explicitly, since a `reqwest::Client` given with
        // `http_client` may carry a total timeout of its own that would cut every stream.
        let request = self.client.prepare(
            reqwest::Method::GET,
            &self.path,
            self.anonymous,
            &self.query,
            &headers,
            None,
            Some(STREAM_LIFETIME),
        )?;
        self.tried += 1;
        let info = RequestInfo {
            operation_id: self.operation,
            method: reqwest::Method::GET,
            attempt: self.tried,
            run_id: self.run_id.clone(),
        };
        // Opening is bounded, though the stream is not: a host that accepts the connection
        // and then says nothing (or sends an error body that never ends) is silence too,
        // judged by the idle timeout.
        let waited = [head_within, self.open_within]
            .into_iter()
            .flatten()
            .fold(self.options.idle_timeout, Duration::min);
        let opening = tokio::time::timeout(waited, open_answer(&self.client, request, &info));
        // One child span per connection, until its answer's head: which attempt, and the
        // cursor it resumes after (an event id, no credential). Headers are not recorded.
        #[cfg(feature = "tracing")]
        let connection = tracing::info_span!(
            parent: &self.span,
            "openwop.stream.connect",
            otel.name = "openwop.stream.connect",
            attempt = self.tried,
            reconnect = self.opened,
            last_event_id = tracing::field::Empty,
            http.response.status_code = tracing::field::Empty,
        );
        #[cfg(feature = "tracing")]
        let opening = {
            use tracing::Instrument;
            if let Some(id) = self.last_event_id.as_ref().filter(|id| !id.is_empty()) {
                connection.record("last_event_id", id.as_str());
            }
            opening.instrument(connection.clone())
        };
        let answered = opening.await;
        #[cfg(feature = "tracing")]
        if let Some(status) = match &answered {
            Ok(Ok(response)) => Some(response.status().as_u16()),
            Ok(Err(e)) => e.status(),
            Err(_) => None,
        } {
            connection.record("http.response.status_code", status);
        }
        let response = match answered {
            Ok(response) => response?,
            Err(_) => {
                return Err(Error::TimedOut {
                    what: "answer to the event stream request",
                    waited,
                });
            }
        };
        self.status = response.status().as_u16();
        self.response_headers = response.headers().clone();
        if response.status() == reqwest::StatusCode::NO_CONTENT {
            return Ok(None);
        }
        Ok(Some(response))
    }

    fn backoff(&self) -> Duration {
        reconnect_wait(self.retry, self.failures)
    }

    /// The connection works: failures in a row start over.
    fn sound(&mut self) {
        self.failures = 0;
        self.failing_since = None;
    }

    /// Feeds bytes to the SSE parser (lines end in LF, CRLF or CR; a leading byte order
    /// mark is dropped). Each line is handled as soon as its end arrives, a CR included:
    /// waiting for a possible LF would hold an event back until the next chunk.
    fn feed(&mut self, mut bytes: &[u8]) {
        if self.skip_lf && !bytes.is_empty() {
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
            self.skip_lf = false;
        }
        // What is buffered holds no line end: only the new bytes need looking at.
        let mut scan_from = self.buffer.len();
        self.buffer.extend_from_slice(bytes);
        if self.at_start {
            const BOM: &[u8] = b"\xEF\xBB\xBF";
            if self.buffer.len() < BOM.len() && BOM.starts_with(&self.buffer) {
                return;
            }
            if self.buffer.starts_with(BOM) {
                self.buffer.drain(..BOM.len());
                scan_from = 0;
            }
            self.at_start = false;
        }
        let mut start = 0;
        while let Some(offset) = self.buffer[scan_from..]
            .iter()
            .position(|b| *b == b'\n' || *b == b'\r')
        {
            // The run's terminal event was dispatched: nothing after it is read.
            if self.done {
                return;
            }
            let end = scan_from + offset;
            let mut next = end + 1;
            if self.buffer[end] == b'\r' {
                match self.buffer.get(end + 1) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            let line = String::from_utf8_lossy(&self.buffer[start..end]).into_owned();
            start = next;
            scan_from = next;
            if self.too_large(line.len()) {
                return;
            }
            self.line(&line);
        }
        // One move of the unfinished line per chunk, not one per line.
        self.buffer.drain(..start);
        self.too_large(self.buffer.len());
    }

    /// Whether the event being read (its data so far, and `unfinished` bytes of a line not
    /// yet ended) is past the limit: then the stream fails. A host that sends bytes but
    /// never an event's end must not fill the caller's memory.
    fn too_large(&mut self, unfinished: usize) -> bool {
        let pending = unfinished + self.data.as_ref().map_or(0, String::len);
        if pending > self.max_event {
            self.failed.get_or_insert(Error::TooLarge {
                what: "event",
                limit: self.max_event,
            });
            self.done = true;
        }
        self.failed.is_some()
    }

    fn line(&mut self, line: &str) {
        if line.is_empty() {
            let event = self.event.take();
            // Dispatching sets the resumption point, with or without data.
            if self.id_buffer.is_some() {
                self.last_event_id = self.id_buffer.clone();
            }
            if let Some(data) = self.data.take() {
                if self.run_id.is_some() {
                    // A run event the host sends again (a resumption that ignored
                    // `Last-Event-ID`) is not a new event.
                    if let Some(sequence) = sequence_of(&data) {
                        if self.last_sequence.is_some_and(|last| sequence <= last) {
                            return;
                        }
                        self.last_sequence = Some(sequence);
                    }
                    // Nothing follows a run's terminal event: the stream ends with it, even
                    // when the host would send it again.
                    if ends_run(event.as_deref(), &data) {
                        self.done = true;
                    }
                }
                self.frames.push_back(Frame {
                    event,
                    id: self.last_event_id.clone(),
                    data,
                });
                self.sound();
                self.frames_this_connection += 1;
                if self.confirming {
                    // The close was early, not the end: the confirming connection resumed.
                    self.confirming = false;
                    self.count_reconnect();
                }
            }
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            "event" => self.event = Some(value.to_owned()),
            "id" if !value.contains('\0') => self.id_buffer = Some(value.to_owned()),
            "retry" => {
                if let Ok(ms) = value.trim().parse::<u64>() {
                    self.retry = Some(Duration::from_millis(ms));
                }
            }
            _ => {}
        }
    }

    fn count_reconnect(&mut self) {
        self.reconnects += 1;
        #[cfg(feature = "tracing")]
        self.span.record("reconnects", self.reconnects);
    }

    fn reset_connection(&mut self) {
        self.response = None;
        self.buffer.clear();
        self.data = None;
        self.event = None;
        // An id whose event never completed is not a place to resume after.
        self.id_buffer = None;
        self.skip_lf = false;
        self.at_start = true;
    }

    /// A connection lost or refused (`last`, when the failure was an error); once the
    /// failures in a row have gone on for `reconnect_for` (or number more than
    /// `max_reconnects`, when set), the stream's end, carrying the last one.
    fn dropped(&mut self, why: String, last: Option<Error>) -> Option<Result<Frame, Error>> {
        self.reset_connection();
        self.confirming = false;
        self.failures += 1;
        let since = *self.failing_since.get_or_insert_with(Instant::now);
        #[cfg(feature = "tracing")]
        tracing::debug!(
            parent: &self.span,
            failures = self.failures,
            why = %why,
            "event stream connection lost"
        );
        if self.options.spent(self.failures, since) {
            self.done = true;
            let mut message = format!(
                "dropped {} times in a row over {:.1}s",
                self.failures,
                since.elapsed().as_secs_f64()
            );
            // An error is the `source()`; a silence is said here.
            if last.is_none() {
                message.push_str(&format!("; last: {why}"));
            }
            return Some(Err(Error::Stream {
                message,
                last: last.map(Box::new),
            }));
        }
        None
    }

    async fn next_frame(&mut self) -> Option<Result<Frame, Error>> {
        loop {
            if let Some(frame) = self.frames.pop_front() {
                return Some(Ok(frame));
            }
            if let Some(failed) = self.failed.take() {
                self.reset_connection();
                self.done = true;
                return Some(Err(failed));
            }
            if self.done {
                self.reset_connection();
                return None;
            }
            let Some(response) = self.response.as_mut() else {
                if self.failures > 0 {
                    let wait = self.wait.take().unwrap_or_else(|| self.backoff());
                    tokio::time::sleep(wait).await;
                } else if self.closes > 0 {
                    // After a clean close too: a host that closes at once (or ignores
                    // `Last-Event-ID` and replays) is not asked again in a tight loop.
                    tokio::time::sleep(reconnect_wait(self.retry, self.closes)).await;
                }
                let connected = self.connect(None).await;
                match connected {
                    // `204 No Content`: the host says the stream is over.
                    Ok(None) => {
                        self.done = true;
                        return None;
                    }
                    Ok(Some(response)) => {
                        self.response = Some(response);
                        self.frames_this_connection = 0;
                        self.connected_at = std::time::Instant::now();
                        if !self.confirming {
                            self.count_reconnect();
                        }
                    }
                    // A dropped connection, a timeout, or a host that is busy right now
                    // (429, 503, …): wait (its Retry-After when it gave one) and try again.
                    Err(e)
                        if e.is_retryable()
                            && e.retry_after().is_none_or(|w| w <= MAX_RECONNECT_WAIT) =>
                    {
                        // Spread as a call's retries are: every stream a restart or a rate
                        // limit refused at once would otherwise come back at once.
                        self.wait = e.retry_after().map(|w| {
                            super::retry::spread_retry_after(
                                w,
                                Duration::from_millis(250),
                                Duration::from_secs(5),
                            )
                        });
                        if let Some(end) = self.dropped(e.to_string(), Some(e)) {
                            return Some(end);
                        }
                    }
                    // The host refused to resume (the run is gone, the key revoked…).
                    Err(other) => {
                        self.done = true;
                        return Some(Err(other));
                    }
                }
                continue;
            };
            match tokio::time::timeout(self.options.idle_timeout, response.chunk()).await {
                Ok(Ok(Some(bytes))) => {
                    // Bytes alone (a keep-alive) do not make a connection sound: one a proxy
                    // resets right after a comment would otherwise reconnect forever. A
                    // dispatched event does (`line`), and so does a connection that stayed
                    // up for a while.
                    if self.connected_at.elapsed() >= HEALTHY_CONNECTION {
                        self.sound();
                    }
                    self.feed(&bytes);
                }
                // The host closed the stream. A resumption with nothing newer closes at
                // once: reconnect once (after a pause that grows while closes come quickly),
                // and a close without new frames ends the stream.
                Ok(Ok(None)) => {
                    let lasted = self.connected_at.elapsed();
                    self.reset_connection();
                    if self.confirming && self.frames_this_connection == 0 {
                        self.done = true;
                        return None;
                    }
                    if lasted >= HEALTHY_CONNECTION {
                        self.closes = 0;
                    }
                    self.closes += 1;
                    self.confirming = true;
                }
                Ok(Err(e)) => {
                    let why = e.to_string();
                    if let Some(end) = self.dropped(why, Some(Error::Transport(e))) {
                        return Some(end);
                    }
                }
                Err(_) => {
                    let why = format!("nothing received for {:?}", self.options.idle_timeout);
                    if let Some(end) = self.dropped(why, None) {
                        return Some(end);
                    }
                }
            }
        }
    }
}

/// The `sequence` of a run event's data, when it has one.
fn sequence_of(data: &str) -> Option<u64> {
    #[derive(serde::Deserialize)]
    struct Sequenced {
        sequence: Option<u64>,
    }
    serde_json::from_str::<Sequenced>(data).ok()?.sequence
}

/// Whether an event ends its run: `run.completed`, `run.failed` or `run.cancelled`
/// (`RunEventType`'s terminal types, after which a run's log holds nothing), by its
/// `event:` name (OpenWOP hosts name each event by its type) or, when the frame names
/// none, by its data's `type`.
fn ends_run(event: Option<&str>, data: &str) -> bool {
    match event.filter(|e| !e.is_empty() && *e != "message") {
        Some(name) => ends_run_type(name),
        None => serde_json::from_str::<serde_json::Value>(data)
            .ok()
            .and_then(|data| data.get("type")?.as_str().map(ends_run_type))
            .unwrap_or(false),
    }
}

/// Whether a run event of this type ends its run; the one list the stream and the
/// convenience helpers both go by.
pub(super) fn ends_run_type(event_type: &str) -> bool {
    matches!(event_type, "run.completed" | "run.failed" | "run.cancelled")
}

/// The answer to a stream request, when it is one: a non-2xx is its error, and a 2xx that
/// is not an event stream (a JSON answer, a proxy's page) a `Decode` error, since it would
/// read as a stream that ends at once: a finished run. A `204 No Content` is answered as
/// it is: it ends the stream (the WHATWG "stop reconnecting").
async fn open_answer(
    client: &Client,
    request: reqwest::Request,
    info: &RequestInfo,
) -> Result<reqwest::Response, Error> {
    let response = client.execute(request, info).await?;
    let status = response.status();
    if !status.is_success() {
        return Err(error_answer(response).await);
    }
    if status == reqwest::StatusCode::NO_CONTENT {
        return Ok(response);
    }
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if !content_type
        .trim_start()
        .to_ascii_lowercase()
        .starts_with("text/event-stream")
    {
        let headers = response.headers().clone();
        // Only its start is shown: a page that never ends must not be read whole.
        let mut response = response;
        let body = read_prefix(&mut response, 4096).await.unwrap_or_default();
        return Err(Error::Decode {
            status: status.as_u16(),
            message: format!("not an event stream (Content-Type `{content_type}`)").into(),
            body: excerpt(&body).into(),
            headers: Box::new(headers),
        });
    }
    Ok(response)
}

/// The read in flight, in a `Mutex` only ever reached through `&mut` (`get_mut`, never
/// locked), so that an `EventStream` is `Sync` without asking the read to be.
type Pending = std::sync::Mutex<
    Pin<Box<dyn Future<Output = (Option<Result<Frame, Error>>, Box<StreamState>)> + Send>>,
>;

/// A server-sent event stream of `T` (a run's events, the host's events).
///
/// Each `data:` frame is decoded as `T`; keep-alive comments are skipped; the `event:` name
/// and `id:` of each frame are kept ([`EventStream::next_event`]).
///
/// After a dropped connection (an error, or silence past the idle timeout) or a refusal
/// worth retrying (`429`, `503`, … with their `Retry-After`) it reconnects with
/// `Last-Event-ID` set to the newest `id:` received, backing off (the host's `retry:`, else
/// 250 ms, doubling up to 5 s). It keeps trying for `reconnect_for` (default
/// [`DEFAULT_RECONNECT_FOR`](super::DEFAULT_RECONNECT_FOR), 120 s) of failures in a row,
/// enough for a host to restart or be deployed: a connection that delivers an event, or stays
/// up 10 s, starts the count over. `max_reconnects(n)` ends it after `n` failures in a row as
/// well (no count by default). Past the budget it yields [`Error::Stream`] (the last failure
/// is its `source()`) and ends. [`EventStream::reconnects`] counts the reconnections.
///
/// When the host closes the stream it resumes once more, after a pause (the same backoff,
/// growing while closes follow each other quickly); a resumption the host closes without
/// new frames ends the stream (and is not counted as a reconnection: a stream that simply
/// ended reads 0). On a run's stream, a run event whose `sequence` is at or below the last
/// one read is dropped (a host that ignores `Last-Event-ID` and sends the log again), and the
/// stream ends right after the run's terminal event (`run.completed`, `run.failed`,
/// `run.cancelled`): nothing can follow it. A `204 No Content` answer, to the first
/// connection or a later one, ends the stream too. An event larger than the client's
/// `max_event_size` ends it with [`Error::TooLarge`]. Use [`EventStream::next`], or the
/// `futures` `Stream` impl.
pub struct EventStream<T> {
    state: Option<Box<StreamState>>,
    pending: Option<Pending>,
    last_event_id: Option<String>,
    reconnects: u32,
    marker: std::marker::PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for EventStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStream")
            .field("last_event_id", &self.last_event_id)
            .field("reconnects", &self.reconnects)
            .finish_non_exhaustive()
    }
}

impl<T: serde::de::DeserializeOwned + Send + 'static> EventStream<T> {
    pub(crate) async fn open(
        call: Call<'_>,
        last_event_id: Option<String>,
        options: StreamOptions,
    ) -> Result<Self, Error> {
        if let Some(problem) = call.invalid {
            return Err(Error::InvalidRequest(problem));
        }
        // The stream's span lives as long as the stream: opening it, and every later read
        // and reconnection, happen inside it. No path, query or header is recorded (the
        // credential headers stay out, and the client marks them sensitive besides).
        #[cfg(feature = "tracing")]
        let span = tracing::info_span!(
            "openwop.stream",
            otel.name = call.operation,
            operation_id = call.operation,
            http.request.method = "GET",
            run_id = call.run_id.as_deref().unwrap_or(""),
            reconnects = tracing::field::Empty,
        );
        #[cfg(feature = "tracing")]
        {
            use tracing::Instrument;
            let opening = Self::open_in_span(call, last_event_id, options, span.clone());
            return opening.instrument(span).await;
        }
        #[cfg(not(feature = "tracing"))]
        Self::open_in_span(call, last_event_id, options).await
    }

    async fn open_in_span(
        call: Call<'_>,
        last_event_id: Option<String>,
        options: StreamOptions,
        #[cfg(feature = "tracing")] span: tracing::Span,
    ) -> Result<Self, Error> {
        let open_within = call.timeout.unwrap_or(call.client.settings.timeout);
        let mut state = Box::new(StreamState {
            client: call.client.clone(),
            operation: call.operation,
            path: call.path,
            anonymous: call.anonymous,
            query: call.query,
            headers: call.headers,
            run_id: call.run_id,
            options,
            open_within,
            response: None,
            status: 200,
            response_headers: HeaderMap::new(),
            buffer: Vec::new(),
            data: None,
            event: None,
            frames: VecDeque::new(),
            last_event_id,
            id_buffer: None,
            skip_lf: false,
            at_start: true,
            connected_at: std::time::Instant::now(),
            retry: None,
            wait: None,
            frames_this_connection: 0,
            confirming: false,
            last_sequence: None,
            closes: 0,
            failed: None,
            max_event: call.client.settings.max_event_size,
            failures: 0,
            failing_since: None,
            reconnects: 0,
            tried: 0,
            opened: false,
            done: false,
            #[cfg(feature = "tracing")]
            span,
        });
        // Opening follows the retry policy like any other read.
        let policy = call
            .retry
            .unwrap_or_else(|| state.client.settings.retry.clone());
        let started = std::time::Instant::now();
        let mut attempt = 1;
        let response = loop {
            // Each attempt's wait for the head is cut to what is left of `max_elapsed`.
            let head_within = policy.attempt_timeout(None, started);
            match state.connect(head_within).await {
                Ok(response) => break response,
                Err(e) if e.is_retryable() => {
                    match policy.delay_within(attempt, e.retry_after(), started) {
                        Some(wait) => tokio::time::sleep(wait).await,
                        None => return Err(e),
                    }
                }
                Err(e) => return Err(e),
            }
            attempt += 1;
        };
        // `None`: a `204 No Content`, a stream that has ended before its first event.
        state.done = response.is_none();
        state.opened = true;
        state.response = response;
        state.connected_at = std::time::Instant::now();
        let last_event_id = state.last_event_id.clone();
        Ok(Self {
            state: Some(state),
            pending: None,
            last_event_id,
            reconnects: 0,
            marker: std::marker::PhantomData,
        })
    }

    /// The next event; `None` once the stream has ended.
    pub async fn next(&mut self) -> Option<Result<T, Error>> {
        self.next_event()
            .await
            .map(|item| item.map(|event| event.data))
    }

    /// The next event with its `event:` name and `id:`; `None` once the stream has ended.
    pub async fn next_event(&mut self) -> Option<Result<SseEvent<T>, Error>> {
        std::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    /// The newest `id:` received (what a reconnection sends as `Last-Event-ID`).
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// How many times the stream has reconnected since it was opened.
    pub fn reconnects(&self) -> u32 {
        self.reconnects
    }

    /// When the current failures in a row began (what `FollowRun` carries on from).
    pub(crate) fn failing_since(&self) -> Option<Instant> {
        self.state.as_ref()?.failing_since
    }

    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<SseEvent<T>, Error>>> {
        if self.pending.is_none() {
            let Some(mut state) = self.state.take() else {
                return Poll::Ready(None);
            };
            #[cfg(feature = "tracing")]
            let span = state.span.clone();
            let reading = async move {
                let item = state.next_frame().await;
                (item, state)
            };
            // Whoever polls the stream, its reads and reconnections are in its own span.
            #[cfg(feature = "tracing")]
            let reading = tracing::Instrument::instrument(reading, span);
            self.pending = Some(std::sync::Mutex::new(Box::pin(reading)));
        }
        let Some(pending) = self.pending.as_mut() else {
            return Poll::Ready(None);
        };
        let pending = pending.get_mut().unwrap_or_else(|e| e.into_inner());
        let (item, state) = match pending.as_mut().poll(cx) {
            Poll::Ready(done) => done,
            Poll::Pending => return Poll::Pending,
        };
        self.pending = None;
        self.last_event_id = state.last_event_id.clone();
        self.reconnects = state.reconnects;
        let status = state.status;
        let item = item.map(|frame| {
            let frame = frame?;
            let data = serde_json::from_str::<T>(&frame.data).map_err(|e| Error::Decode {
                status,
                message: format!("an event is not the documented shape: {e}").into(),
                body: excerpt(frame.data.as_bytes()).into(),
                headers: Box::new(state.response_headers.clone()),
            })?;
            Ok(SseEvent {
                // No `event:`, or an empty one, is the default type.
                event: frame
                    .event
                    .filter(|e| !e.is_empty())
                    .unwrap_or_else(|| "message".to_owned()),
                id: frame.id,
                data,
            })
        });
        self.state = Some(state);
        Poll::Ready(item)
    }
}

impl<T: serde::de::DeserializeOwned + Send + 'static> futures_core::Stream for EventStream<T> {
    type Item = Result<T, Error>;
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut()
            .poll_event(cx)
            .map(|item| item.map(|event| event.map(|e| e.data)))
    }
}

// An `EventStream` is `Send` and `Sync` (as `FollowRun` is), whatever the read in flight is.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<EventStream<serde_json::Value>>();
};
