//! MRTR `requestState`: an opaque token the client echoes on its retry. It is ours, so it
//! is sealed with XChaCha20-Poly1305 (an AEAD: integrity and confidentiality at once) and
//! binds everything the retry must not change: who asked, until when, which call (a digest
//! of the tool name and arguments), which run, which interrupt, and which round. The client
//! can read none of it (no principal, run id or interrupt id shows through). Single use is
//! enforced by the interop store's `claim_once`.
//!
//! Wire form: `v2.` + base64url(24-byte random nonce ‖ ciphertext ‖ tag). The AEAD key is
//! derived from the key kept in the run store (`mcp.requestState.key`, shared by every
//! replica), so a state opens on any replica and after a restart.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::XChaCha20Poly1305;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The prefix of every state this codec seals.
const PREFIX: &str = "v2.";
/// Bound into every seal as associated data, so a ciphertext made for another purpose with
/// the same key never opens as a requestState.
const AAD: &[u8] = b"openwop mcp requestState v2";
const NONCE_LEN: usize = 24;

/// What a `requestState` carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// `issuer#subjectId` of the caller the state was minted for.
    pub principal: String,
    /// Expiry, ms since the epoch.
    pub exp: i64,
    /// Hex SHA-256 of the tool name and its arguments.
    pub digest: String,
    pub run: String,
    pub interrupt: String,
    /// The round this state answers (1 for the first input_required).
    pub round: u32,
    /// Unique per state: the single-use key.
    pub nonce: String,
}

/// Why a `requestState` is refused. All of them read the same to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Malformed,
    Forged,
    Expired,
    OtherPrincipal,
    OtherRequest,
    Spent,
}

/// The digest a state binds: the tool name and its arguments in a canonical form
/// (serde_json's maps are ordered, so equal arguments serialize equally).
pub fn request_digest(tool: &str, arguments: &Value) -> String {
    let mut h = Sha256::new();
    h.update(tool.as_bytes());
    h.update([0]);
    h.update(arguments.to_string().as_bytes());
    hex::encode(h.finalize())
}

/// Seals and opens states with one key.
pub struct Codec {
    cipher: XChaCha20Poly1305,
}

impl Codec {
    /// A codec whose AEAD key is derived from `key` (any length; the host's is 32 random
    /// bytes from the store).
    pub fn new(key: &[u8]) -> Codec {
        let derived =
            Sha256::digest([b"openwop mcp requestState aead key\n".as_slice(), key].concat());
        let cipher = XChaCha20Poly1305::new_from_slice(&derived)
            .unwrap_or_else(|_| unreachable!("a SHA-256 digest is a 32-byte key"));
        Codec { cipher }
    }

    pub fn seal(&self, claims: &Claims) -> String {
        let plaintext = serde_json::to_vec(claims).unwrap_or_default();
        let mut nonce = [0u8; NONCE_LEN];
        if getrandom::fill(&mut nonce).is_err() {
            // Without randomness no state is minted that could repeat a nonce: the empty
            // state below never opens.
            tracing::error!("no randomness for a requestState nonce");
            return String::new();
        }
        let Ok(sealed) = self.cipher.encrypt(
            (&nonce).into(),
            Payload {
                msg: &plaintext,
                aad: AAD,
            },
        ) else {
            tracing::error!("a requestState could not be sealed");
            return String::new();
        };
        let mut bytes = nonce.to_vec();
        bytes.extend_from_slice(&sealed);
        format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes))
    }

    /// Checks integrity first (nothing of a forged state is read), then the bindings.
    pub fn open(
        &self,
        token: &str,
        principal: &str,
        digest: &str,
        now_ms: i64,
    ) -> Result<Claims, Refusal> {
        let body = token.strip_prefix(PREFIX).ok_or(Refusal::Malformed)?;
        let bytes = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| Refusal::Malformed)?;
        if bytes.len() <= NONCE_LEN {
            return Err(Refusal::Malformed);
        }
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| Refusal::Malformed)?;
        let plaintext = self
            .cipher
            .decrypt(
                (&nonce).into(),
                Payload {
                    msg: sealed,
                    aad: AAD,
                },
            )
            .map_err(|_| Refusal::Forged)?;
        let claims: Claims = serde_json::from_slice(&plaintext).map_err(|_| Refusal::Malformed)?;
        if claims.exp <= now_ms {
            return Err(Refusal::Expired);
        }
        if claims.principal != principal {
            return Err(Refusal::OtherPrincipal);
        }
        if claims.digest != digest {
            return Err(Refusal::OtherRequest);
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claims() -> Claims {
        Claims {
            principal: "iss#alice".into(),
            exp: 10_000,
            digest: request_digest("approval", &json!({"a": 1})),
            run: "acme:r1".into(),
            interrupt: "i1".into(),
            round: 1,
            nonce: "n1".into(),
        }
    }

    #[test]
    fn a_sealed_state_opens_only_for_its_principal_request_and_lifetime() {
        let codec = Codec::new(b"k");
        let c = claims();
        let token = codec.seal(&c);
        assert_eq!(
            codec.open(&token, "iss#alice", &c.digest, 5).as_ref(),
            Ok(&c)
        );
        assert_eq!(
            codec.open(&token, "iss#bob", &c.digest, 5),
            Err(Refusal::OtherPrincipal)
        );
        let other = request_digest("approval", &json!({"a": 2}));
        assert_eq!(
            codec.open(&token, "iss#alice", &other, 5),
            Err(Refusal::OtherRequest)
        );
        assert_eq!(
            codec.open(&token, "iss#alice", &c.digest, 10_000),
            Err(Refusal::Expired)
        );
    }

    #[test]
    fn tampering_or_another_key_is_forgery() {
        let token = Codec::new(b"k").seal(&claims());
        assert_eq!(
            Codec::new(b"other").open(&token, "iss#alice", "", 5),
            Err(Refusal::Forged)
        );
        // Flip one bit of the ciphertext: it no longer opens.
        let mut bytes = URL_SAFE_NO_PAD
            .decode(token.strip_prefix(PREFIX).expect("prefix"))
            .expect("b64");
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let forged = format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(&bytes));
        assert_eq!(
            Codec::new(b"k").open(&forged, "iss#alice", "", 5),
            Err(Refusal::Forged)
        );
        for junk in ["junk", "v2.", "v2.AAAA", "v2.!!"] {
            assert_eq!(
                Codec::new(b"k").open(junk, "iss#alice", "", 5),
                Err(Refusal::Malformed)
            );
        }
    }

    #[test]
    fn a_request_state_is_encrypted_so_nothing_it_binds_is_readable() {
        // Values long enough that random ciphertext cannot contain them by chance (a
        // two-letter id would show up in about one seal in thirty).
        let c = Claims {
            principal: "urn:issuer-of-this-test#alice-the-principal".into(),
            run: "acme/run-id-that-must-stay-hidden".into(),
            interrupt: "interrupt-id-that-must-stay-hidden".into(),
            nonce: "nonce-that-must-stay-hidden".into(),
            ..claims()
        };
        let token = Codec::new(b"k").seal(&c);
        let bytes = URL_SAFE_NO_PAD
            .decode(token.strip_prefix(PREFIX).expect("prefix"))
            .expect("b64");
        let text = String::from_utf8_lossy(&bytes);
        for secret in [&c.principal, &c.run, &c.interrupt, &c.nonce, &c.digest] {
            assert!(!text.contains(secret.as_str()), "{secret} shows through");
            assert!(!token.contains(secret.as_str()), "{secret} shows through");
        }
        // Two seals of the same claims differ (a fresh nonce each), and both open.
        let again = Codec::new(b"k").seal(&c);
        assert_ne!(token, again);
        assert_eq!(
            Codec::new(b"k").open(&again, &c.principal, &c.digest, 5),
            Ok(c)
        );
    }
}
