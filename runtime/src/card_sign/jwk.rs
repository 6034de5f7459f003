//! Public JWKs (RFC 7517) a card signature is checked with: Ed25519 (`OKP`), P-256
//! (`EC`) and RSA, the keys behind `EdDSA`, `ES256` and `RS256`, the algorithms A2A
//! agents sign cards with. Nothing else is accepted (no `none`, no shared-secret `HS*`:
//! a card's key is public by construction).

use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED, ED25519, RSA_PKCS1_2048_8192_SHA256, RsaPublicKeyComponents,
    UnparsedPublicKey,
};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// RFC 7638 thumbprint of an Ed25519 public key given as its base64url `x`: the `kid`
/// this host names its key by, so the id follows from the key alone.
pub fn thumbprint_okp(x: &str) -> String {
    let canonical = format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#);
    B64.encode(Sha256::digest(canonical.as_bytes()))
}

/// A public key ready to verify with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyKey {
    Ed25519(Vec<u8>),
    /// The uncompressed point `04 || x || y`.
    P256(Vec<u8>),
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
}

fn member(jwk: &Value, name: &str) -> Result<Vec<u8>, String> {
    jwk.get(name)
        .and_then(Value::as_str)
        .and_then(|s| B64.decode(s.trim_end_matches('=')).ok())
        .ok_or_else(|| format!("the JWK has no base64url `{name}`"))
}

impl VerifyKey {
    pub fn from_jwk(jwk: &Value) -> Result<Self, String> {
        let kty = jwk.get("kty").and_then(Value::as_str).unwrap_or("");
        let crv = jwk.get("crv").and_then(Value::as_str).unwrap_or("");
        match (kty, crv) {
            ("OKP", "Ed25519") => {
                let x = member(jwk, "x")?;
                if x.len() != 32 {
                    return Err("an Ed25519 `x` is 32 bytes".into());
                }
                Ok(Self::Ed25519(x))
            }
            ("EC", "P-256") => {
                let (x, y) = (member(jwk, "x")?, member(jwk, "y")?);
                if x.len() != 32 || y.len() != 32 {
                    return Err("a P-256 `x` and `y` are 32 bytes each".into());
                }
                let mut point = vec![4u8];
                point.extend(x);
                point.extend(y);
                Ok(Self::P256(point))
            }
            ("RSA", _) => Ok(Self::Rsa {
                n: member(jwk, "n")?,
                e: member(jwk, "e")?,
            }),
            _ => Err(format!(
                "unsupported key type `{kty}`{} (Ed25519, P-256 or RSA)",
                if crv.is_empty() {
                    String::new()
                } else {
                    format!(" `{crv}`")
                }
            )),
        }
    }

    /// Whether `signature` signs `message` under `alg`. An `alg` this key cannot make
    /// (or one not accepted at all) is an error, never a silent "no".
    pub fn verify(&self, alg: &str, message: &[u8], signature: &[u8]) -> Result<bool, String> {
        let ok = match (self, alg) {
            (Self::Ed25519(x), "EdDSA" | "Ed25519") => UnparsedPublicKey::new(&ED25519, x)
                .verify(message, signature)
                .is_ok(),
            (Self::P256(point), "ES256") => UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
                .verify(message, signature)
                .is_ok(),
            (Self::Rsa { n, e }, "RS256") => RsaPublicKeyComponents { n, e }
                .verify(&RSA_PKCS1_2048_8192_SHA256, message, signature)
                .is_ok(),
            _ => {
                return Err(format!(
                    "algorithm `{alg}` is not accepted for this key (EdDSA, ES256, RS256 only, each with its own key type)"
                ));
            }
        };
        Ok(ok)
    }
}
