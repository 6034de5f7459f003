//! Version negotiation for the embedded protocols (A2A and MCP), shared by both edges.
//!
//! The rules (interop.md §"Negotiation is a protocol"): a peer that asks for nothing gets
//! `preferredVersion`; nothing lands below the floor, whatever policy says; only an
//! authenticated peer may go below `preferredVersion`; every outcome, refusals included,
//! becomes a `negotiation.decided` payload. The decision is pure: the edge supplies the
//! clock and writes the event. The peer appears in the payload only as a [`PeerKey`]
//! digest: the caller's Subject when the host serves, the peer's origin when it calls out.

mod version;

pub use version::{Protocol, Version, compare};

use crate::generated::models::NegotiationDecided;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Map, Value};
use sha2::Sha256;

/// The store secret `peer` digests are keyed with ([`PeerKey`]), shared by every replica.
pub const PEER_KEY: &str = "negotiation.peer.key";

/// Keys the `peer` digest of `negotiation.decided`. A plain hash of an origin or a subject
/// id can be confirmed by anyone who guesses the input (origins are public, subject ids
/// are few); an HMAC under a secret only the host's store holds cannot, and every replica
/// of one store digests the same peer alike, so an operator can still group a peer's
/// negotiations.
#[derive(Clone)]
pub struct PeerKey {
    key: Vec<u8>,
}

impl std::fmt::Debug for PeerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PeerKey(..)")
    }
}

impl PeerKey {
    pub fn new(key: Vec<u8>) -> PeerKey {
        PeerKey { key }
    }

    /// 32 fresh random bytes, offered to the store the first time.
    pub fn fresh() -> Vec<u8> {
        let mut key = vec![0u8; 32];
        if getrandom::fill(&mut key).is_err() {
            // No randomness: the store keeps whichever key it already has; a new store
            // would get a weak key, so say so loudly rather than stop serving.
            tracing::error!("no randomness for the negotiation peer key");
        }
        key
    }

    /// The caller of an inbound exchange, by who it authenticated as (never by a header
    /// it chose, such as `Origin`).
    pub fn subject(&self, issuer: &str, subject_id: &str) -> String {
        self.digest(&format!("subject\n{issuer}\n{subject_id}"))
    }

    /// A peer the host calls, by its origin (`https://host:port`).
    pub fn origin(&self, origin: &str) -> String {
        self.digest(&format!("origin\n{origin}"))
    }

    fn digest(&self, identity: &str) -> String {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
        mac.update(identity.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }
}

/// What the host offers for one protocol, read from its discovery facet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    protocol: Protocol,
    /// Offered versions, canonical spelling, highest first.
    versions: Vec<(Version, String)>,
    preferred: (Version, String),
    floor: (Version, String),
}

/// Why a facet cannot be turned into an [`Offer`]. These are host configuration
/// mistakes; discovery validation reports them first, so here they only guard.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OfferError {
    #[error("the {protocol} facet has no `{field}`")]
    Missing {
        protocol: Protocol,
        field: &'static str,
    },
    #[error("`{value}` is not a {protocol} version")]
    NotAVersion { protocol: Protocol, value: String },
    #[error("preferredVersion `{0}` is not one of the offered versions")]
    PreferredNotOffered(String),
    #[error("the floor `{floor}` is above preferredVersion `{preferred}`")]
    FloorAbovePreferred { floor: String, preferred: String },
}

impl Offer {
    /// Builds an offer from explicit values.
    pub fn new(
        protocol: Protocol,
        versions: &[&str],
        preferred: &str,
        floor: &str,
    ) -> Result<Offer, OfferError> {
        let parse = |raw: &str| {
            Version::parse(protocol, raw)
                .map(|v| (v, v.render(protocol)))
                .ok_or_else(|| OfferError::NotAVersion {
                    protocol,
                    value: raw.to_owned(),
                })
        };
        let mut parsed = versions
            .iter()
            .map(|v| parse(v))
            .collect::<Result<Vec<_>, _>>()?;
        parsed.sort_by_key(|(v, _)| std::cmp::Reverse(*v));
        parsed.dedup_by(|a, b| a.0 == b.0);
        let preferred = parse(preferred)?;
        let floor = parse(floor)?;
        if !parsed.iter().any(|(v, _)| *v == preferred.0) {
            return Err(OfferError::PreferredNotOffered(preferred.1));
        }
        if floor.0 > preferred.0 {
            return Err(OfferError::FloorAbovePreferred {
                floor: floor.1,
                preferred: preferred.1,
            });
        }
        Ok(Offer {
            protocol,
            versions: parsed,
            preferred,
            floor,
        })
    }

    /// Reads the `a2a` facet (`versions`, `preferredVersion`, `minimumVersion`) or the
    /// `mcp` facet (`revisions`, `preferredVersion`, `minimumRevision`).
    pub fn from_facet(protocol: Protocol, facet: &Value) -> Result<Offer, OfferError> {
        let (list_key, floor_key) = match protocol {
            Protocol::A2a => ("versions", "minimumVersion"),
            Protocol::Mcp => ("revisions", "minimumRevision"),
        };
        let missing = |field| OfferError::Missing { protocol, field };
        let versions: Vec<&str> = facet
            .get(list_key)
            .and_then(Value::as_array)
            .ok_or_else(|| missing(list_key))?
            .iter()
            .map(|v| v.as_str().ok_or_else(|| missing(list_key)))
            .collect::<Result<_, _>>()?;
        let preferred = facet
            .get("preferredVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| missing("preferredVersion"))?;
        let floor = facet
            .get(floor_key)
            .and_then(Value::as_str)
            .ok_or_else(|| missing(floor_key))?;
        Offer::new(protocol, &versions, preferred, floor)
    }

    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    pub fn preferred(&self) -> &str {
        &self.preferred.1
    }

    pub fn floor(&self) -> &str {
        &self.floor.1
    }

    /// The versions a peer can actually get (offered and not below the floor), preferred
    /// first, then the rest highest first: the order the A2A card lists its interfaces in.
    pub fn served(&self) -> Vec<&str> {
        let mut out = vec![self.preferred.1.as_str()];
        out.extend(
            self.versions
                .iter()
                .filter(|(v, _)| *v >= self.floor.0 && *v != self.preferred.0)
                .map(|(_, s)| s.as_str()),
        );
        out
    }

    /// Every offered version, preferred first, then highest first: the protocolVersion
    /// set an A2A card's interfaces must equal.
    pub fn offered(&self) -> Vec<&str> {
        let mut out = vec![self.preferred.1.as_str()];
        out.extend(
            self.versions
                .iter()
                .filter(|(v, _)| *v != self.preferred.0)
                .map(|(_, s)| s.as_str()),
        );
        out
    }

    /// `metadata.supportedVersions` of A2A's VersionNotSupportedError: comma-joined.
    pub fn supported_versions_joined(&self) -> String {
        self.served().join(",")
    }
}

/// `negotiation.decided.outcome` (interop.md, "The audit event").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// `preferredVersion`, or an offered version above it.
    Accepted,
    /// An authenticated peer got a version between the floor and `preferredVersion`.
    Downgraded,
    Refused,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Accepted => "accepted",
            Outcome::Downgraded => "downgraded",
            Outcome::Refused => "refused",
        }
    }
}

/// `negotiation.decided.reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Ok,
    BelowFloor,
    Unauthenticated,
    Unsupported,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Ok => "ok",
            Reason::BelowFloor => "below-floor",
            Reason::Unauthenticated => "unauthenticated",
            Reason::Unsupported => "unsupported",
        }
    }
}

/// One negotiation's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub protocol: Protocol,
    pub outcome: Outcome,
    /// The decided version; `None` when refused.
    pub version: Option<String>,
    /// What the peer asked for, as it asked (bounded, printable); `None` when it asked for nothing.
    pub requested: Option<String>,
    pub floor: String,
    pub reason: Reason,
    /// The [`PeerKey`] digest of the peer, set by [`Decision::with_peer`].
    pub peer: Option<String>,
}

/// The longest `requested` value recorded. The header is peer-controlled text; the event
/// must stay content-free, so anything longer cannot be a version and is cut.
const REQUESTED_MAX: usize = 32;

fn recordable(raw: &str) -> Option<String> {
    let kept: String = raw
        .trim()
        .chars()
        .filter(|c| c.is_ascii_graphic())
        .take(REQUESTED_MAX)
        .collect();
    (!kept.is_empty()).then_some(kept)
}

/// Decides which version of `protocol` to speak with a peer that asked for `requested`
/// (`None` or blank: it asked for nothing).
pub fn decide(
    protocol: Protocol,
    requested: Option<&str>,
    authenticated: bool,
    offer: &Offer,
) -> Decision {
    let requested_raw = requested.map(str::trim).filter(|r| !r.is_empty());
    let mut decision = Decision {
        protocol,
        outcome: Outcome::Refused,
        version: None,
        requested: requested_raw.and_then(recordable),
        floor: offer.floor.1.clone(),
        reason: Reason::Unsupported,
        peer: None,
    };
    let Some(raw) = requested_raw else {
        decision.outcome = Outcome::Accepted;
        decision.version = Some(offer.preferred.1.clone());
        decision.reason = Reason::Ok;
        return decision;
    };
    // An offer of the other protocol cannot serve this one: refuse rather than guess.
    let Some(asked) = Version::parse(protocol, raw).filter(|_| offer.protocol == protocol) else {
        return decision;
    };
    // The floor comes first: below it fails closed whether or not policy would allow a
    // downgrade and whoever the peer is.
    if asked < offer.floor.0 {
        decision.reason = Reason::BelowFloor;
        return decision;
    }
    let Some((_, spelled)) = offer.versions.iter().find(|(v, _)| *v == asked) else {
        return decision;
    };
    if asked < offer.preferred.0 && !authenticated {
        decision.reason = Reason::Unauthenticated;
        return decision;
    }
    decision.outcome = if asked < offer.preferred.0 {
        Outcome::Downgraded
    } else {
        Outcome::Accepted
    };
    decision.version = Some(spelled.clone());
    decision.reason = Reason::Ok;
    decision
}

/// A string model of the payload, or `None` when the model refuses the value.
fn text<T: TryFrom<String>>(v: &str) -> Option<T> {
    T::try_from(v.to_owned()).ok()
}

impl Decision {
    /// Records who the peer was, as a [`PeerKey`] digest ([`PeerKey::subject`] or
    /// [`PeerKey::origin`]).
    pub fn with_peer(mut self, digest: String) -> Self {
        self.peer = Some(digest);
        self
    }

    /// Refuses what was decided, for `reason`: a version the protocol serves, but not on
    /// the path that asked for it (an MCP initialize-era revision named in a request's
    /// `_meta`). The record then says so, rather than that it was served.
    pub fn refuse(mut self, reason: Reason) -> Self {
        self.outcome = Outcome::Refused;
        self.version = None;
        self.reason = reason;
        self
    }

    /// A version was decided (accepted or downgraded).
    pub fn is_accepted(&self) -> bool {
        self.outcome != Outcome::Refused
    }

    /// The `negotiation.decided` payload (`models::NegotiationDecided`), stamped `at`.
    /// A value its model refuses (a requested version is kept printable and bounded, the
    /// others are the host's own) is left out rather than sent outside the schema. A
    /// decision without [`Decision::with_peer`] is a bug of ours; it is recorded under the
    /// digest of nothing rather than not at all.
    pub fn decided(&self, at: &str) -> NegotiationDecided {
        use crate::generated::models::{
            NegotiationDecidedOutcome as O, NegotiationDecidedProtocol as P,
            NegotiationDecidedReason as R,
        };
        NegotiationDecided {
            protocol: match self.protocol {
                Protocol::A2a => P::A2a,
                Protocol::Mcp => P::Mcp,
            },
            outcome: match self.outcome {
                Outcome::Accepted => O::Accepted,
                Outcome::Downgraded => O::Downgraded,
                Outcome::Refused => O::Refused,
            },
            peer: self
                .peer
                .as_deref()
                .and_then(text)
                .unwrap_or_else(|| text(&"0".repeat(64)).expect("64 hex digits")),
            requested: self.requested.as_deref().and_then(text),
            negotiated: self.version.as_deref().and_then(text),
            floor: text(&self.floor),
            reason: match self.reason {
                Reason::Ok => R::Ok,
                Reason::BelowFloor => R::BelowFloor,
                Reason::Unauthenticated => R::Unauthenticated,
                Reason::Unsupported => R::Unsupported,
            },
            at: at.to_owned(),
        }
    }

    /// [`Decision::decided`] as the JSON a host event carries.
    pub fn payload(&self, at: &str) -> Value {
        serde_json::to_value(self.decided(at)).unwrap_or_else(|_| Value::Object(Map::new()))
    }
}

#[cfg(test)]
mod tests;
