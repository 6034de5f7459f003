//! MRTR `requestState`: an opaque token the client echoes on its retry. It is ours, so it
//! is HMAC-SHA256 protected and binds everything the retry must not change: who asked,
//! until when, which call (a digest of the tool name and arguments), which run, which
//! interrupt, and which round. Single use is enforced by the run store's `claim_once`.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

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

/// Signs and checks states with one key.
pub struct Codec {
    key: Vec<u8>,
}

impl Codec {
    pub fn new(key: &[u8]) -> Codec {
        Codec { key: key.to_vec() }
    }

    fn mac(&self, payload: &[u8]) -> Hmac<Sha256> {
        // HMAC takes keys of any length; this cannot fail.
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
        mac.update(payload);
        mac
    }

    pub fn seal(&self, claims: &Claims) -> String {
        let payload = serde_json::to_vec(claims).unwrap_or_default();
        let tag = self.mac(&payload).finalize().into_bytes();
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// Checks integrity first (nothing in a forged state is read), then the bindings.
    pub fn open(
        &self,
        token: &str,
        principal: &str,
        digest: &str,
        now_ms: i64,
    ) -> Result<Claims, Refusal> {
        let (payload, tag) = token.split_once('.').ok_or(Refusal::Malformed)?;
        let payload = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| Refusal::Malformed)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| Refusal::Malformed)?;
        self.mac(&payload)
            .verify_slice(&tag)
            .map_err(|_| Refusal::Forged)?;
        let claims: Claims = serde_json::from_slice(&payload).map_err(|_| Refusal::Malformed)?;
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
        let (payload, tag) = token.split_once('.').expect("two parts");
        let mut forged: Claims =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).expect("b64")).expect("json");
        forged.round = 0;
        let forged = format!(
            "{}.{tag}",
            URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged).expect("json"))
        );
        assert_eq!(
            Codec::new(b"k").open(&forged, "iss#alice", "", 5),
            Err(Refusal::Forged)
        );
        assert_eq!(
            Codec::new(b"k").open("junk", "iss#alice", "", 5),
            Err(Refusal::Malformed)
        );
    }
}
