//! Verifying a peer's card (the A2A client in `crate::peers`). A card without signatures
//! is accepted as before (signing is a SHOULD); a card with signatures is accepted only
//! when one of them verifies.
//!
//! Where the key comes from: a `jku` is fetched (through the egress guard, by the
//! caller) only on the card's own origin, so a key set is as trustworthy as the card's
//! URL; a `jku` elsewhere is refused, since anyone can publish keys for their own
//! signature. An embedded `jwk` (no `jku`) is used as given: it proves the card was not
//! changed after signing, not who signed it.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{SigHeader, header_of, verify};

fn origin(url: &str) -> Option<(String, String, u16)> {
    let u = reqwest::Url::parse(url).ok()?;
    Some((
        u.scheme().to_owned(),
        u.host_str()?.to_ascii_lowercase(),
        u.port_or_known_default()?,
    ))
}

fn signatures(card: &Value) -> &[Value] {
    card.get("signatures")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The key sets to fetch before [`check`]: each signature's `jku`, when it is on the
/// card's origin. A `jku` on another origin is an error.
pub fn key_sets_to_fetch(card: &Value, card_url: &str) -> Result<Vec<String>, String> {
    let own = origin(card_url);
    let mut out = Vec::new();
    for (i, sig) in signatures(card).iter().enumerate() {
        let Ok((header, _)) = header_of(sig, i) else {
            continue; // judged (and reported) by `check`
        };
        if let Some(jku) = header.jku {
            if origin(&jku).is_none() || origin(&jku) != own {
                return Err(format!(
                    "signature {i} names its key set at {jku}, which is not on the card's origin"
                ));
            }
            if !out.contains(&jku) {
                out.push(jku);
            }
        }
    }
    Ok(out)
}

/// The key for one signature: from its fetched `jku` set (by `kid`, or the only key),
/// else its embedded `jwk`.
fn key_for(header: &SigHeader, sets: &BTreeMap<String, Value>) -> Result<Value, String> {
    if let Some(jku) = &header.jku {
        let keys = sets
            .get(jku)
            .and_then(|s| s.get("keys"))
            .and_then(Value::as_array)
            .ok_or_else(|| format!("the key set at {jku} could not be read"))?;
        let found = match &header.kid {
            Some(kid) => keys
                .iter()
                .find(|k| k.get("kid").and_then(Value::as_str) == Some(kid)),
            None if keys.len() == 1 => keys.first(),
            None => None,
        };
        return found.cloned().ok_or_else(|| {
            format!(
                "the key set at {jku} has no key `{}`",
                header.kid.as_deref().unwrap_or("(no kid)")
            )
        });
    }
    header
        .jwk
        .clone()
        .ok_or_else(|| "the signature names no key (no `jku`, no `jwk`)".to_owned())
}

/// Judges a peer's card with the key sets fetched for it (`jku` → JWKS document).
/// `Ok(None)`: unsigned; `Ok(Some(kid))`: a signature by `kid` verifies.
pub fn check(card: &Value, sets: &BTreeMap<String, Value>) -> Result<Option<String>, String> {
    if signatures(card).is_empty() {
        return Ok(None);
    }
    verify(card, |h| key_for(h, sets))
        .map(Some)
        .map_err(|e| format!("the agent card's signature does not verify: {e}"))
}
