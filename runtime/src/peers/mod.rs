//! The client direction: the remote A2A agents, MCP servers and HTTP services a workflow's
//! `a2a`, `mcp` and `http` nodes call.
//!
//! Peers are host configuration (`peers` in the config file), never workflow text: a
//! workflow names a peer by id, and the operator decides where that id points, which
//! credential the host presents there and which tenants may use it. Every call goes
//! through the egress guard ([`crate::egress::Egress::request`]), so a peer URL is judged
//! at start and again at every call. The only credential a call carries is the peer's
//! own (read from an environment variable or a file at start); nothing a caller sent this
//! host (its Bearer key, a resume token, a push credential) is within reach of this
//! module, and the secret never leaves it: not in events, snapshots, answers or logs.

pub mod a2a;
pub mod mcp;
pub mod mcp_wire;
pub(crate) mod peer;
pub mod rpc;

pub use peer::{Peer, PeerKind};

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, USER_AGENT};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::egress::{Egress, Response, SendError};
use crate::negotiation::{Offer, Protocol};

/// One `peers[]` entry of the config file as the host holds it: read through the
/// generated `ConfigPeer` (`schemas/v2/config.schema.json#/$defs/configPeer`, closed), so
/// the schema is the one description of the format.
#[derive(Debug, Clone, Deserialize)]
#[serde(from = "crate::generated::models::ConfigPeer")]
pub struct PeerFileConfig {
    pub id: String,
    pub kind: PeerKind,
    /// A2A: the agent card's URL, or a base URL whose `/.well-known/agent-card.json` is
    /// the card. MCP: the server's endpoint. HTTP: the base URL paths are appended to.
    pub url: String,
    /// Where the secret the host presents (`Authorization: Bearer`) is read from.
    pub credential: Option<CredentialSource>,
    /// The tenants whose runs may call this peer; absent: every tenant.
    pub tenants: Option<Vec<String>>,
    /// How long one call may take (a remote tool, a blocking request); 300 s by default.
    pub timeout_secs: Option<u64>,
}

/// Exactly one of `env` and `file`.
#[derive(Debug, Clone)]
pub struct CredentialSource {
    pub env: Option<String>,
    pub file: Option<PathBuf>,
}

impl From<crate::generated::models::ConfigPeer> for PeerFileConfig {
    fn from(p: crate::generated::models::ConfigPeer) -> Self {
        use crate::generated::models::ConfigPeerKind;
        PeerFileConfig {
            id: p.id,
            kind: match p.kind {
                ConfigPeerKind::A2a => PeerKind::A2a,
                ConfigPeerKind::Mcp => PeerKind::Mcp,
                ConfigPeerKind::Http => PeerKind::Http,
            },
            url: p.url,
            credential: p.credential.map(|c| CredentialSource {
                env: c.env,
                file: c.file.map(PathBuf::from),
            }),
            tenants: p
                .tenants
                .map(|t| t.iter().map(ToString::to_string).collect()),
            timeout_secs: Some(p.timeout_secs.get()),
        }
    }
}

impl Peer {
    /// A peer named by a request instead of the config: conformance mode's invoke seams
    /// point the production clients at the suite's loopback agents and servers. No
    /// credential is presented, and every call still goes through the egress guard.
    pub fn ad_hoc(kind: PeerKind, url: &str) -> Peer {
        Peer {
            id: format!("conformance-seam:{url}"),
            kind,
            url: url.to_owned(),
            secret: None,
            tenants: None,
            timeout: Duration::from_secs(30),
        }
    }

    /// The peer's origin (`scheme://host:port`), what a negotiation digest is taken of.
    pub fn origin(&self) -> String {
        reqwest::Url::parse(&self.url)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_default()
    }
}

/// Why a call to a peer did not give an answer the node can use.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("the egress guard refused the peer's URL: {0}")]
    Refused(String),
    #[error("{0}")]
    Transport(String),
    #[error("the peer answered HTTP {status}{detail}")]
    Status { status: u16, detail: String },
    #[error("the peer's answer is not what its protocol says: {0}")]
    Protocol(String),
    /// A JSON-RPC error from the peer, as the client rules read it (code, and the
    /// ErrorInfo `reason` when one came in `data` as an array or an object).
    #[error("the peer refused the call: {message} (code {code}{})", reason.as_deref().map(|r| format!(", reason {r}")).unwrap_or_default())]
    Rpc {
        code: i64,
        message: String,
        reason: Option<String>,
        data: Option<Value>,
    },
}

impl From<SendError> for CallError {
    fn from(e: SendError) -> Self {
        match e {
            SendError::Refused(r) => CallError::Refused(r.to_string()),
            other => CallError::Transport(other.to_string()),
        }
    }
}

/// The outbound side of one run: who is calling (for tracing), never a credential.
#[derive(Debug, Clone)]
pub struct Caller {
    pub run_id: String,
    /// A W3C `traceparent` naming a new span of the run's trace for this request.
    pub traceparent: String,
}

/// Where a run's state keeps the `traceparent` of the request that created it.
pub const TRACE_STATE_KEY: &str = "traceparent";

impl Caller {
    /// The run's trace with a fresh span for this outbound request: the trace of the
    /// request that created the run when it carried one (kept in the run's state, so the
    /// call is a child of the caller's trace, also after a restart), else a stable id
    /// derived from the run.
    pub fn for_run(run_id: &str, state: &Value) -> Caller {
        use sha2::{Digest, Sha256};
        let inbound = state
            .get(TRACE_STATE_KEY)
            .and_then(Value::as_str)
            .filter(|t| crate::trace::is_traceparent(t));
        let trace_id = match inbound {
            // `00-<trace-id>-<parent-id>-<flags>`: the trace id is characters 3..35.
            Some(tp) => tp[3..35].to_owned(),
            None => hex::encode(&Sha256::digest(run_id.as_bytes())[..16]),
        };
        let span = Sha256::digest(format!("{run_id}/{}", crate::ids::mint_opaque()).as_bytes());
        // An all-zero span id is invalid; a digest is that with negligible odds, but the
        // last byte is forced odd all the same.
        let mut span: [u8; 8] = span[..8].try_into().unwrap_or([1; 8]);
        span[7] |= 1;
        Caller {
            run_id: run_id.to_owned(),
            traceparent: format!("00-{trace_id}-{}-01", hex::encode(span)),
        }
    }
}

/// The peer table: by id, in the reloadable snapshot (`crate::reload::live::Live`) every clone
/// of one [`Peers`] shares and a reload swaps whole, so a rotated credential reaches the
/// next call while a call in flight keeps the `Arc<Peer>` it started with.
type Table = crate::reload::live::Live;

/// The configured peers and the one way to reach them.
#[derive(Clone)]
pub struct Peers {
    by_id: Table,
    egress: Egress,
    /// What the host itself speaks, negotiated against each peer as the server side is.
    a2a_offer: Option<Offer>,
    mcp_offer: Option<Offer>,
    /// How many input rounds one tool call may take (`mcp.mrtr.maxRounds`).
    max_rounds: u32,
    /// Keys the `peer` digest of the calling run's `negotiation.decided` events.
    peer_key: crate::negotiation::PeerKey,
    /// Each MCP peer's `tools/list` (tool name → inputSchema) until it expires, for the
    /// SEP-2243 headers a tool's arguments ask for.
    listed_tools: Arc<Kept<Map<String, Value>>>,
    /// Each A2A peer's agent card, read at most once per [`CARD_KEPT_FOR`].
    cards: Arc<Kept<Value>>,
}

/// Values kept per peer id until they expire: a peer's tool list, its card.
struct Kept<T>(Mutex<BTreeMap<String, (Instant, Arc<T>)>>);

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Kept(Mutex::default())
    }
}

impl<T> Kept<T> {
    /// The value kept for `peer`, while it is fresh.
    fn get(&self, peer: &str) -> Option<Arc<T>> {
        let kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        kept.get(peer)
            .filter(|(until, _)| Instant::now() < *until)
            .map(|(_, value)| value.clone())
    }

    /// Keeps `value` for `peer` for `ttl`.
    fn put(&self, peer: &str, value: T, ttl: Duration) {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        kept.insert(peer.to_owned(), (Instant::now() + ttl, Arc::new(value)));
    }
}

/// How long an A2A peer's card is kept before it is read again.
const CARD_KEPT_FOR: Duration = Duration::from_secs(60);

impl Default for Peers {
    /// No peers: every calling node fails with `peer_call_failed`.
    fn default() -> Peers {
        Peers {
            by_id: Table::default(),
            egress: Egress::default(),
            a2a_offer: None,
            mcp_offer: None,
            max_rounds: 4,
            peer_key: crate::negotiation::PeerKey::new(crate::negotiation::PeerKey::fresh()),
            listed_tools: Arc::default(),
            cards: Arc::default(),
        }
    }
}

impl std::fmt::Debug for Peers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.table().values()).finish()
    }
}

impl Peers {
    /// Reads the config entries: unique ids, URLs that parse, secrets that can be read.
    /// The guard's own judgement of each URL is [`Peers::check_urls`] (it resolves names).
    pub fn from_config(entries: &[PeerFileConfig], egress: Egress) -> Result<Peers, String> {
        let mut by_id = BTreeMap::new();
        for e in entries {
            let at = format!("peers[{}]", e.id);
            if e.id.is_empty()
                || e.id.len() > 64
                || !e
                    .id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
            {
                return Err(format!(
                    "{at}: an id is 1-64 letters, digits, `.`, `_` or `-`"
                ));
            }
            reqwest::Url::parse(&e.url).map_err(|err| format!("{at}.url: {err}"))?;
            let secret = match &e.credential {
                None => None,
                Some(CredentialSource {
                    env: Some(var),
                    file: None,
                }) => Some(
                    std::env::var(var)
                        .map_err(|_| {
                            format!("{at}.credential: environment variable {var} is not set")
                        })?
                        .trim()
                        .to_owned(),
                ),
                Some(CredentialSource {
                    env: None,
                    file: Some(path),
                }) => Some(
                    // Trimmed as the environment's is: a file's trailing newline would
                    // make the header invalid, and the credential silently absent.
                    crate::secret_file::read_secret(path)
                        .map_err(|err| format!("{at}.credential: {err}"))?
                        .trim()
                        .to_owned(),
                ),
                Some(_) => {
                    return Err(format!(
                        "{at}.credential: give exactly one of `env` and `file`"
                    ));
                }
            };
            if secret.as_deref().is_some_and(str::is_empty) {
                return Err(format!("{at}.credential: the secret is empty"));
            }
            let peer = Peer {
                id: e.id.clone(),
                kind: e.kind,
                url: e.url.clone(),
                secret,
                tenants: e.tenants.as_ref().map(|t| t.iter().cloned().collect()),
                timeout: Duration::from_secs(e.timeout_secs.unwrap_or(300).max(1)),
            };
            if by_id.insert(e.id.clone(), Arc::new(peer)).is_some() {
                return Err(format!("{at}: the id appears twice"));
            }
        }
        let table = Table::default();
        table.swap(|s| s.peers = Arc::new(by_id));
        Ok(Peers {
            by_id: table,
            egress,
            ..Peers::default()
        })
    }

    /// The same set-up (egress, offers, rounds, peer key) with `entries` as its peers,
    /// judged as [`Peers::from_config`] judges them; nothing is installed yet.
    pub fn reconfigured(&self, entries: &[PeerFileConfig]) -> Result<Peers, String> {
        let fresh = Peers::from_config(entries, self.egress.clone())?;
        Ok(Peers {
            by_id: fresh.by_id,
            ..self.clone()
        })
    }

    /// The same peers kept in `live` (the host's one reloadable snapshot) from now on:
    /// `Host::build` puts them there before any clone is handed out.
    pub fn in_live(self, live: &crate::reload::live::Live) -> Peers {
        let table = self.table();
        live.swap(|s| s.peers = table);
        Peers {
            by_id: live.clone(),
            ..self
        }
    }

    /// Drops kept tool lists and cards (a reload: a peer's URL may have moved).
    pub fn forget_kept(&self) {
        self.listed_tools
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.cards
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// The peers as configured now (as the current request was pinned to).
    pub(crate) fn table(&self) -> Arc<BTreeMap<String, Arc<Peer>>> {
        self.by_id.current().peers.clone()
    }

    /// The most input rounds one tool call may take before the node fails.
    pub fn with_max_rounds(mut self, rounds: u32) -> Peers {
        self.max_rounds = rounds;
        self
    }

    pub fn max_rounds(&self) -> u32 {
        self.max_rounds
    }

    /// The versions the host speaks (its discovery facets), used as a client too.
    pub fn with_offers(mut self, a2a: Option<Offer>, mcp: Option<Offer>) -> Peers {
        self.a2a_offer = a2a;
        self.mcp_offer = mcp;
        self
    }

    /// The store's shared key for negotiation peer digests.
    pub fn with_peer_key(mut self, key: crate::negotiation::PeerKey) -> Peers {
        self.peer_key = key;
        self
    }

    /// The digest `negotiation.decided` records for `peer` (its origin, keyed).
    pub fn peer_digest(&self, peer: &Peer) -> String {
        self.peer_key.origin(&peer.origin())
    }

    pub fn offer(&self, protocol: Protocol) -> Option<&Offer> {
        match protocol {
            Protocol::A2a => self.a2a_offer.as_ref(),
            Protocol::Mcp => self.mcp_offer.as_ref(),
        }
    }

    /// Judges every peer URL with the egress guard now, so a peer the guard would refuse
    /// stops the host at start instead of failing runs later.
    pub async fn check_urls(&self) -> Result<(), String> {
        for peer in self.table().values() {
            self.egress
                .check(&peer.url)
                .await
                .map_err(|e| format!("peers[{}].url: refused by the egress guard: {e}", peer.id))?;
        }
        Ok(())
    }

    /// A peer of `kind` by id, as the run's tenant may use it. A peer the tenant may not
    /// use is answered exactly as one that does not exist.
    pub fn get(&self, id: &str, kind: PeerKind, tenant: &str) -> Option<Arc<Peer>> {
        self.table()
            .get(id)
            .filter(|p| p.kind == kind)
            .filter(|p| p.tenants.as_ref().is_none_or(|t| t.contains(tenant)))
            .cloned()
    }

    /// Whether a peer of `kind` with this id exists at all (for checking definitions at
    /// start, whatever tenant runs them).
    pub fn has(&self, id: &str, kind: PeerKind) -> bool {
        self.table().get(id).is_some_and(|p| p.kind == kind)
    }

    /// Conformance mode's invoke seams: a peer at `url` (a request names it, not the
    /// config). `authenticated`: it presents the credential of the configured peer of
    /// `kind` the tenant may use at that URL, else at its origin, when there is one; the
    /// caller's own credential is never within reach here. Unauthenticated: none.
    pub fn seam_peer(&self, kind: PeerKind, url: &str, tenant: &str, authenticated: bool) -> Peer {
        let mut peer = Peer::ad_hoc(kind, url);
        if !authenticated {
            return peer;
        }
        let origin = peer.origin();
        let table = self.table();
        let usable = || {
            table
                .values()
                .filter(|p| p.kind == kind && p.secret.is_some())
                .filter(|p| p.tenants.as_ref().is_none_or(|t| t.contains(tenant)))
        };
        let same = |a: &str| a.trim_end_matches('/') == url.trim_end_matches('/');
        let configured = usable()
            .find(|p| same(&p.url))
            .or_else(|| usable().find(|p| !origin.is_empty() && p.origin() == origin));
        if let Some(configured) = configured {
            peer.secret = configured.secret.clone();
            peer.timeout = configured.timeout;
        }
        peer
    }

    /// True when any MCP server is configured (discovery's `mcp.client`).
    pub fn any(&self, kind: PeerKind) -> bool {
        self.table().values().any(|p| p.kind == kind)
    }

    /// The headers every outbound request carries: the peer's own credential (and no
    /// other), the run's trace, and who is calling.
    fn headers(&self, peer: &Peer, caller: &Caller, json_body: bool) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            USER_AGENT,
            HeaderValue::from_static(concat!("openwop/", env!("CARGO_PKG_VERSION"))),
        );
        if json_body {
            h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        h.insert(ACCEPT, HeaderValue::from_static("application/json"));
        if let Some(secret) = &peer.secret
            && let Ok(mut v) = HeaderValue::from_str(&format!("Bearer {secret}"))
        {
            v.set_sensitive(true);
            h.insert(AUTHORIZATION, v);
        }
        if let Ok(v) = HeaderValue::from_str(&caller.traceparent) {
            h.insert("traceparent", v);
        }
        h
    }

    /// One request to `url` on behalf of `peer`, through the guard.
    pub(crate) async fn send(
        &self,
        peer: &Peer,
        caller: &Caller,
        method: reqwest::Method,
        url: &str,
        extra: HeaderMap,
        body: Option<&Value>,
    ) -> Result<Response, CallError> {
        use crate::observe::otel;
        let mut headers = self.headers(peer, caller, body.is_some());
        for (name, value) in extra.iter() {
            headers.insert(name, value.clone());
        }
        // The request's exported CLIENT span (none without a collector): the traceparent
        // the peer receives, in the header and wherever the body carries the run's, names
        // it, so the peer's spans join this trace under this call.
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let span = otel::peer_call_span(otel::PeerCall {
            kind: peer.kind.as_str(),
            peer_id: &peer.id,
            http_method: method.as_str(),
            url,
            body,
            mcp_session: header("mcp-session-id"),
            mcp_version: header("mcp-protocol-version"),
            a2a_version: header("a2a-version"),
            caller_traceparent: &caller.traceparent,
        });
        let traced = otel::traceparent_of(&span);
        if let Some(v) = traced
            .as_deref()
            .and_then(|t| HeaderValue::from_str(t).ok())
        {
            headers.insert("traceparent", v);
        }
        let body = match (body, &traced) {
            (Some(b), Some(tp)) => {
                let mut b = b.clone();
                otel::retrace(&mut b, &caller.traceparent, tp);
                Some(serde_json::to_vec(&b).unwrap_or_default())
            }
            (Some(b), None) => Some(serde_json::to_vec(b).unwrap_or_default()),
            (None, _) => None,
        };
        let sent = self
            .egress
            .request(method, url, headers, body, Some(peer.timeout));
        match tracing::Instrument::instrument(sent, span.clone()).await {
            Ok(response) => {
                let session = response
                    .headers
                    .get("mcp-session-id")
                    .and_then(|v| v.to_str().ok());
                // The JSON answer: the body, or an SSE answer's last `data:` line (an MCP
                // server may answer a call as a stream).
                let media = response.media_type();
                let body = if media.ends_with("json") {
                    Some(response.body.as_slice())
                } else if media == "text/event-stream" {
                    response
                        .body
                        .split(|b| *b == b'\n')
                        .filter_map(|line| line.strip_prefix(b"data:"))
                        .next_back()
                } else {
                    None
                };
                otel::peer_call_end(&span, peer.kind.as_str(), response.status, session, body);
                Ok(response)
            }
            Err(e) => {
                otel::peer_call_failed(&span, &otel::send_error_type(&e), &e.to_string());
                Err(e.into())
            }
        }
    }

    /// An `http` node's request: `path` appended to the peer's base URL, a JSON body, the
    /// answer as `{status, body}`; a status outside 2xx is an error.
    pub async fn http(
        &self,
        peer: &Peer,
        caller: &Caller,
        method: &str,
        path: &str,
        body: Option<&Value>,
        idempotency_key: Option<&str>,
    ) -> Result<Value, CallError> {
        let method = reqwest::Method::from_bytes(method.as_bytes())
            .map_err(|_| CallError::Protocol(format!("`{method}` is not an HTTP method")))?;
        let url = format!("{}{}", peer.url.trim_end_matches('/'), path);
        let mut headers = HeaderMap::new();
        if let Some(v) = idempotency_key.and_then(|k| HeaderValue::from_str(k).ok()) {
            headers.insert("idempotency-key", v);
        }
        let response = self.send(peer, caller, method, &url, headers, body).await?;
        let parsed = if response.media_type().ends_with("json") {
            serde_json::from_slice(&response.body).unwrap_or_else(|_| {
                Value::String(String::from_utf8_lossy(&response.body).into_owned())
            })
        } else if response.body.is_empty() {
            Value::Null
        } else {
            Value::String(String::from_utf8_lossy(&response.body).into_owned())
        };
        if !response.is_success() {
            return Err(CallError::Status {
                status: response.status,
                detail: String::new(),
            });
        }
        // The `http` node's value: a workflow value (no protocol message), the body any
        // JSON the service answered.
        Ok(serde_json::json!({"status": response.status, "body": parsed}))
    }
}
