//! Resume tokens: `ow2.hs256.<kid>.<payload>.<mac>`, a bearer credential for one interrupt.
//!
//! Stateless on purpose: the token carries what it names (run, node, interrupt, expiry) and
//! the MAC makes it unforgeable, so nothing about it is stored and it can never leak
//! through the event log or a projection. Single use comes from the interrupt itself: once
//! resolved (or closed by the run ending) the token's interrupt is no longer open.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::time::Duration;

type HmacSha256 = Hmac<Sha256>;

/// The name the token key is kept under in the store, shared by every replica.
pub const TOKEN_KEY: &str = "interrupt.token.key";

/// How long a token lives unless the interrupt's own timeout is sooner.
pub const DEFAULT_TTL: Duration = Duration::from_secs(30 * 60);

const PREFIX: &str = "ow2";
const ALG: &str = "hs256";

/// What a token binds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Claims {
    pub run_id: String,
    pub node_id: String,
    pub interrupt_id: String,
    /// Expiry, ms since the epoch.
    pub exp: i64,
}

/// Why a token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenError {
    /// Malformed, another alg or kid, or a MAC that does not verify: one answer for all,
    /// so a prober learns nothing about which part was wrong.
    Invalid,
    /// Genuine, but past its expiry.
    Expired,
}

/// The host's token key and the kid derived from it.
#[derive(Clone)]
pub struct TokenKey {
    key: Vec<u8>,
    kid: String,
    ttl: Duration,
}

impl std::fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenKey").field("kid", &self.kid).finish()
    }
}

/// 32 random bytes for a new key.
pub fn fresh_key() -> Vec<u8> {
    let mut key = [0u8; 32];
    if getrandom::fill(&mut key).is_err() {
        tracing::error!("no randomness for the interrupt token key");
    }
    key.to_vec()
}

impl TokenKey {
    pub fn new(key: Vec<u8>, ttl: Duration) -> Self {
        // The kid names the key without revealing it: a rotated key gets a new kid, and
        // tokens of the old one fail as unknown kid.
        let digest = Sha256::digest([b"openwop interrupt token kid\n".as_slice(), &key].concat());
        let kid = hex::encode(&digest[..8]);
        Self { key, kid, ttl }
    }

    pub fn kid(&self) -> &str {
        &self.kid
    }

    fn mac(&self, signed: &str) -> Vec<u8> {
        // HMAC takes keys of any length, so this never fails.
        <HmacSha256 as KeyInit>::new_from_slice(&self.key)
            .map(|mut mac| {
                mac.update(signed.as_bytes());
                mac.finalize().into_bytes().to_vec()
            })
            .unwrap_or_default()
    }

    /// A token for the interrupt, valid from `now_ms` for the default life, or until
    /// `deadline_ms` (the interrupt's own timeout) when that is sooner.
    pub fn mint(
        &self,
        run_id: &str,
        node_id: &str,
        interrupt_id: &str,
        now_ms: i64,
        deadline_ms: Option<i64>,
    ) -> (String, Claims) {
        let ttl_ms = i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX);
        let mut exp = now_ms.saturating_add(ttl_ms);
        if let Some(d) = deadline_ms {
            exp = exp.min(d);
        }
        let claims = Claims {
            run_id: run_id.to_owned(),
            node_id: node_id.to_owned(),
            interrupt_id: interrupt_id.to_owned(),
            exp,
        };
        let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap_or_default());
        let signed = format!("{PREFIX}.{ALG}.{}.{payload}", self.kid);
        let mac = URL_SAFE_NO_PAD.encode(self.mac(&signed));
        (format!("{signed}.{mac}"), claims)
    }

    /// Checks a token at `now_ms`: form, alg, kid and MAC first, expiry after.
    pub fn verify(&self, token: &str, now_ms: i64) -> Result<Claims, TokenError> {
        let parts: Vec<&str> = token.split('.').collect();
        let [prefix, alg, kid, payload, mac] = parts.as_slice() else {
            return Err(TokenError::Invalid);
        };
        if *prefix != PREFIX || *alg != ALG || *kid != self.kid {
            return Err(TokenError::Invalid);
        }
        let given = URL_SAFE_NO_PAD
            .decode(mac)
            .map_err(|_| TokenError::Invalid)?;
        let signed = &token[..token.len() - mac.len() - 1];
        let mut check =
            <HmacSha256 as KeyInit>::new_from_slice(&self.key).map_err(|_| TokenError::Invalid)?;
        check.update(signed.as_bytes());
        // Constant-time comparison.
        check
            .verify_slice(&given)
            .map_err(|_| TokenError::Invalid)?;
        let raw = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| TokenError::Invalid)?;
        let claims: Claims = serde_json::from_slice(&raw).map_err(|_| TokenError::Invalid)?;
        if claims.exp <= now_ms {
            return Err(TokenError::Expired);
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> TokenKey {
        TokenKey::new(vec![7; 32], DEFAULT_TTL)
    }

    #[test]
    fn a_minted_token_verifies_until_it_expires() {
        let k = key();
        let (token, claims) = k.mint("t/run", "approve", "t/int", 1_000, None);
        assert!(token.starts_with(&format!("ow2.hs256.{}.", k.kid())));
        assert_eq!(k.verify(&token, 1_001), Ok(claims.clone()));
        assert_eq!(claims.exp, 1_000 + 30 * 60 * 1000);
        assert_eq!(k.verify(&token, claims.exp), Err(TokenError::Expired));
    }

    #[test]
    fn the_interrupt_deadline_caps_the_life() {
        let (_, claims) = key().mint("t/run", "n", "t/i", 1_000, Some(5_000));
        assert_eq!(claims.exp, 5_000);
    }

    #[test]
    fn another_key_or_a_changed_part_is_invalid() {
        let k = key();
        let (token, _) = k.mint("t/run", "n", "t/i", 1_000, None);
        let other = TokenKey::new(vec![8; 32], DEFAULT_TTL);
        assert_eq!(other.verify(&token, 1_001), Err(TokenError::Invalid));
        let forged = token.replacen("ow2.hs256.", "ow2.hs512.", 1);
        assert_eq!(k.verify(&forged, 1_001), Err(TokenError::Invalid));
        let mut tampered = token.clone();
        let last = tampered.pop().unwrap();
        tampered.push(if last == 'A' { 'B' } else { 'A' });
        assert_eq!(k.verify(&tampered, 1_001), Err(TokenError::Invalid));
        for junk in [
            "",
            "ow2",
            "ow2.hs256..x.y",
            "a.b.c.d.e.f",
            "ow2.hs256.%%.%%.%%",
        ] {
            assert_eq!(k.verify(junk, 1_001), Err(TokenError::Invalid), "{junk}");
        }
    }
}
