//! Signed A2A agent cards (A2A 1.0 "Agent Card Signing"): each card carries
//! `signatures[]`, JWS JSON objects (`protected`, `signature`, optional `header`) over the
//! card's canonical form with the payload detached, and a peer's signed card is verified
//! before the host talks to it.
//!
//! Choices, and why:
//! - **Ed25519 (`EdDSA`)**: its signatures are deterministic, so one card gives the same
//!   bytes on every request and the card's strong ETag (a digest of the body) stays
//!   meaningful; ECDSA would sign the same card differently each time.
//! - **aws-lc-rs** for the curve arithmetic: rustls already builds it here, with the same
//!   features, so signing adds no new crypto stack. JWS itself is a few lines over it
//!   (base64url of a header, a dot, the detached payload); the JWT crates sign claims
//!   sets and would have us re-encode the card as a token payload.
//! - **serde_json_canonicalizer** for RFC 8785 (number formatting and UTF-16 key order
//!   are easy to get subtly wrong by hand).
//!
//! The canonical form: the card without `signatures`, with the fields protobuf's JSON
//! mapping leaves out when unset (empty strings, arrays and objects, recursively, and
//! nulls) dropped, then RFC 8785. That is what A2A's field-presence rule amounts to for
//! JSON, and what the official SDKs sign and verify, so a card an SDK parses and
//! re-serialises still verifies. A verifier also accepts the plain RFC 8785 form of the
//! card as received (a signer that did not drop empties).

pub mod jwk;
pub mod peer;

use std::path::Path;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair as _};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use openwop_generated::models::{A2aAgentCard, A2aAgentCardSignature};
use serde_json::{Map, Value, json};

/// Where the host publishes its card-signing keys (the `jku` of every signature).
pub const JWKS_PATH: &str = "/.well-known/jwks.json";
/// The store's name for the minted key, shared by every replica of one database.
pub const KEY_NAME: &str = "a2a-card-signing-key";
/// The JWS algorithm this host signs with.
pub const ALG: &str = "EdDSA";

/// How the host's cards are signed (config `a2a.signingKey`, `a2a.alsoPublishKeys`).
#[derive(Debug, Clone, Default)]
pub struct SigningConfig {
    /// A PEM Ed25519 private key; `None`: the key the host minted and keeps in its store.
    pub key_file: Option<std::path::PathBuf>,
    /// Public JWK files (a JWK or a JWKS each) published beside the signing key: the
    /// previous key while a rotation settles.
    pub also_publish: Vec<std::path::PathBuf>,
}

impl SigningConfig {
    /// The keys of [`SigningConfig::also_publish`], read.
    pub fn also_published(&self) -> Result<Vec<Value>, String> {
        let mut out = Vec::new();
        for path in &self.also_publish {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let v: Value = serde_json::from_str(&text)
                .map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
            match v.get("keys").and_then(Value::as_array) {
                Some(keys) => out.extend(keys.iter().cloned()),
                None => out.push(v),
            }
        }
        Ok(out)
    }
}

/// A card's canonical bytes (see the module docs).
pub fn canonical(card: &Value) -> Result<Vec<u8>, String> {
    let mut card = card.clone();
    if let Some(o) = card.as_object_mut() {
        o.remove("signatures");
    }
    let cleaned = clean(card).unwrap_or_else(|| Value::Object(Map::new()));
    serde_json_canonicalizer::to_vec(&cleaned).map_err(|e| format!("cannot canonicalise: {e}"))
}

/// The card without `signatures`, in plain RFC 8785 (no fields dropped).
pub fn canonical_plain(card: &Value) -> Result<Vec<u8>, String> {
    let mut card = card.clone();
    if let Some(o) = card.as_object_mut() {
        o.remove("signatures");
    }
    serde_json_canonicalizer::to_vec(&card).map_err(|e| format!("cannot canonicalise: {e}"))
}

/// Drops nulls and empty strings, arrays and objects, recursively (a container that
/// empties is dropped too).
fn clean(v: Value) -> Option<Value> {
    match v {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::Array(items) => {
            let kept: Vec<Value> = items.into_iter().filter_map(clean).collect();
            (!kept.is_empty()).then_some(Value::Array(kept))
        }
        Value::Object(map) => {
            let kept: Map<String, Value> = map
                .into_iter()
                .filter_map(|(k, v)| clean(v).map(|v| (k, v)))
                .collect();
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        other => Some(other),
    }
}

/// The host's card-signing key.
pub struct CardSigner {
    key: Ed25519KeyPair,
    kid: String,
    jwk: Value,
    /// Public keys published beside the current one (a rotation's previous key).
    also_published: Vec<Value>,
}

impl std::fmt::Debug for CardSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CardSigner")
            .field("kid", &self.kid)
            .finish()
    }
}

impl CardSigner {
    /// A fresh Ed25519 key as PKCS#8 DER (what the store keeps).
    pub fn mint() -> Vec<u8> {
        Ed25519KeyPair::generate_pkcs8(&SystemRandom::new())
            .map(|d| d.as_ref().to_vec())
            .unwrap_or_default()
    }

    /// The key in PKCS#8 DER (v1, as OpenSSL writes it, or v2).
    pub fn from_pkcs8(der: &[u8]) -> Result<Self, String> {
        let key = Ed25519KeyPair::from_pkcs8_maybe_unchecked(der)
            .map_err(|e| format!("not an Ed25519 PKCS#8 private key: {e}"))?;
        let x = B64.encode(key.public_key().as_ref());
        let kid = jwk::thumbprint_okp(&x);
        let jwk =
            json!({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "alg": ALG, "use": "sig"});
        Ok(Self {
            key,
            kid,
            jwk,
            also_published: Vec::new(),
        })
    }

    /// The key in a PEM file (`-----BEGIN PRIVATE KEY-----`, e.g. from
    /// `openssl genpkey -algorithm ed25519`).
    pub fn from_pem_file(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let der = pem_body(&text, "PRIVATE KEY")
            .ok_or_else(|| format!("{}: no PEM `PRIVATE KEY` block", path.display()))?;
        Self::from_pkcs8(&der).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Publishes `keys` (public JWKs, e.g. the previous key during a rotation) beside
    /// the current one. A private member (`d`) is refused.
    pub fn with_also_published(mut self, keys: Vec<Value>) -> Result<Self, String> {
        for k in &keys {
            if k.get("d").is_some() {
                return Err("a key to publish carries a private part (`d`)".into());
            }
            jwk::VerifyKey::from_jwk(k)?;
        }
        self.also_published = keys;
        Ok(self)
    }

    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The public key as a JWK.
    pub fn public_jwk(&self) -> &Value {
        &self.jwk
    }

    /// The JWKS served at [`JWKS_PATH`]: the current key first, then any kept beside it.
    pub fn jwks(&self) -> Value {
        let mut keys = vec![self.jwk.clone()];
        keys.extend(self.also_published.iter().cloned());
        json!({ "keys": keys })
    }

    /// Replaces `card`'s signatures with one by this key; `jku` is where the key is
    /// published.
    pub fn sign(&self, card: &mut Value, jku: &str) -> Result<(), String> {
        let (protected, signature) = self.signature(card, jku)?;
        let sig = json!({"protected": protected, "signature": signature});
        card.as_object_mut()
            .ok_or("a card is a JSON object")?
            .insert("signatures".into(), json!([sig]));
        Ok(())
    }

    /// [`CardSigner::sign`] for a card this host builds: the signature is over the card's
    /// JSON as it will be served (the typed card writes the same JSON every time).
    pub fn sign_card(&self, card: &mut A2aAgentCard, jku: &str) -> Result<(), String> {
        card.signatures.clear();
        let json =
            serde_json::to_value(&*card).map_err(|e| format!("cannot write the card: {e}"))?;
        let (protected, signature) = self.signature(&json, jku)?;
        card.signatures = vec![A2aAgentCardSignature {
            protected,
            signature,
            header: None,
        }];
        Ok(())
    }

    /// The base64url protected header and signature over `card` without `signatures`.
    fn signature(&self, card: &Value, jku: &str) -> Result<(String, String), String> {
        let header = json!({"alg": ALG, "typ": "JOSE", "kid": self.kid, "jku": jku});
        let protected = B64.encode(header.to_string().as_bytes());
        let payload = B64.encode(canonical(card)?);
        let signature = self.key.sign(format!("{protected}.{payload}").as_bytes());
        Ok((protected, B64.encode(signature.as_ref())))
    }
}

/// The DER inside the first PEM block labelled `label`.
pub fn pem_body(text: &str, label: &str) -> Option<Vec<u8>> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = text.find(&begin)? + begin.len();
    let stop = start + text[start..].find(&end)?;
    let b64: String = text[start..stop]
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    base64::engine::general_purpose::STANDARD.decode(b64).ok()
}

/// Why a signed card was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("signature {index}: {reason}")]
    Bad { index: usize, reason: String },
    #[error("no signature verifies ({0})")]
    NoneVerifies(String),
}

/// The parts of one signature's header a verifier needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SigHeader {
    pub alg: String,
    pub kid: Option<String>,
    pub jku: Option<String>,
    pub jwk: Option<Value>,
}

/// The protected header of `signatures[index]`, merged with its unprotected `header`
/// (only `kid` may come from there: the algorithm and keys must be signed).
pub fn header_of(sig: &Value, index: usize) -> Result<(SigHeader, String), VerifyError> {
    let bad = |reason: &str| VerifyError::Bad {
        index,
        reason: reason.to_owned(),
    };
    let protected = sig
        .get("protected")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("no `protected` header"))?;
    let decoded = B64
        .decode(protected.trim_end_matches('='))
        .map_err(|_| bad("`protected` is not base64url"))?;
    let header: Value =
        serde_json::from_slice(&decoded).map_err(|_| bad("`protected` is not a JSON object"))?;
    let field = |k: &str| header.get(k).and_then(Value::as_str).map(str::to_owned);
    let alg = field("alg").ok_or_else(|| bad("the protected header names no `alg`"))?;
    let kid = field("kid").or_else(|| {
        sig.get("header")
            .and_then(|h| h.get("kid"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    Ok((
        SigHeader {
            alg,
            kid,
            jku: field("jku"),
            jwk: header.get("jwk").cloned(),
        },
        protected.to_owned(),
    ))
}

/// Verifies a signed card: at least one signature must verify with the key `key_for`
/// gives for its header (`None`: no key known for it). A card without signatures is not
/// this function's business (see [`peer`]).
pub fn verify(
    card: &Value,
    key_for: impl Fn(&SigHeader) -> Result<Value, String>,
) -> Result<String, VerifyError> {
    let sigs = card
        .get("signatures")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let payloads = [canonical(card), canonical_plain(card)];
    let mut reasons = Vec::new();
    for (index, sig) in sigs.iter().enumerate() {
        let attempt = || -> Result<String, String> {
            let (header, protected) = header_of(sig, index).map_err(|e| e.to_string())?;
            let signature = sig
                .get("signature")
                .and_then(Value::as_str)
                .and_then(|s| B64.decode(s.trim_end_matches('=')).ok())
                .ok_or("`signature` is not base64url")?;
            let key = jwk::VerifyKey::from_jwk(&key_for(&header)?)?;
            for payload in payloads.iter().flatten() {
                let input = format!("{protected}.{}", B64.encode(payload));
                if key.verify(&header.alg, input.as_bytes(), &signature)? {
                    return Ok(header.kid.clone().unwrap_or_default());
                }
            }
            Err("the signature does not match the card".into())
        };
        match attempt() {
            Ok(kid) => return Ok(kid),
            Err(reason) => reasons.push(format!("signature {index}: {reason}")),
        }
    }
    Err(VerifyError::NoneVerifies(if reasons.is_empty() {
        "the card has no signatures".into()
    } else {
        reasons.join("; ")
    }))
}

#[cfg(test)]
mod tests;
