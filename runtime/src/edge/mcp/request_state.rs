//! MRTR `requestState`: an opaque token the client echoes on its retry. It is ours, so it
//! is HMAC-SHA256 protected and binds everything the retry must not change: who asked,
//! until when, which call (a digest of the tool name and arguments), which run, which
//! interrupt, and which round. Single use is enforced by [`Spent`].
//!
//! The HMAC key lives in the host's data dir ([`persisted_key`]), so a state minted before
//! a restart still opens after it.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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

/// The file in the data dir that holds the requestState key (64 hex digits, mode 0600).
pub const KEY_FILE: &str = "mcp-request-state.key";

/// Why the requestState key could not be loaded or created.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("cannot read or write the MCP requestState key {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path} is not an MCP requestState key (64 hex digits); remove it to mint a new one, which invalidates outstanding requestStates"
    )]
    Malformed { path: PathBuf },
    #[error("no randomness for a new MCP requestState key")]
    NoRandomness,
}

/// The requestState key of the host whose data dir is `data_dir`: read from [`KEY_FILE`],
/// or minted with the OS generator and written there (mode 0600) on first start. A file
/// that is present but unreadable or malformed stops the start rather than being replaced:
/// a silent new key would void every outstanding state without saying why.
pub fn persisted_key(data_dir: &Path) -> Result<[u8; 32], KeyError> {
    let path = data_dir.join(KEY_FILE);
    let io = |source| KeyError::Io {
        path: path.clone(),
        source,
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => return parse_key(&text).ok_or(KeyError::Malformed { path }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(e)),
    }
    std::fs::create_dir_all(data_dir).map_err(io)?;
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|_| KeyError::NoRandomness)?;
    // Written whole under a private name, then linked into place: a host starting beside
    // us (`openwop mcp-stdio` on the same data dir) either wins the link or reads ours,
    // and nobody ever reads a half-written key.
    let mut tmp_name = [0u8; 8];
    getrandom::fill(&mut tmp_name).map_err(|_| KeyError::NoRandomness)?;
    let tmp = data_dir.join(format!(".{KEY_FILE}.{}", hex::encode(tmp_name)));
    let written = write_private(&tmp, hex::encode(key).as_bytes());
    let linked = written.and_then(|()| std::fs::hard_link(&tmp, &path));
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(key),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let text = std::fs::read_to_string(&path).map_err(io)?;
            parse_key(&text).ok_or(KeyError::Malformed { path })
        }
        Err(e) => Err(io(e)),
    }
}

fn parse_key(text: &str) -> Option<[u8; 32]> {
    let bytes = hex::decode(text.trim()).ok()?;
    bytes.try_into().ok()
}

/// Creates `path` readable and writable by its owner only, and fills it.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Spent states. INTERIM: held in process memory, so single use does not survive a
/// restart (an unexpired state could be replayed once after one). It belongs in the
/// store; expired entries are dropped as new ones arrive.
#[derive(Default)]
pub struct Spent {
    nonces: Mutex<HashMap<String, i64>>,
}

impl Spent {
    /// Marks `claims` used; `Err` when it already was.
    pub fn spend(&self, claims: &Claims, now_ms: i64) -> Result<(), Refusal> {
        let mut nonces = self.nonces.lock().unwrap_or_else(|p| p.into_inner());
        nonces.retain(|_, exp| *exp > now_ms);
        if nonces.contains_key(&claims.nonce) {
            return Err(Refusal::Spent);
        }
        nonces.insert(claims.nonce.clone(), claims.exp);
        Ok(())
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

    #[test]
    fn the_key_is_minted_once_then_read_back() {
        let dir = tempfile::tempdir().expect("dir");
        let first = persisted_key(dir.path()).expect("minted");
        assert_eq!(persisted_key(dir.path()).expect("read"), first);
        let path = dir.path().join(KEY_FILE);
        assert_eq!(
            std::fs::read_to_string(&path).expect("file"),
            hex::encode(first)
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        // Nothing but the key is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from(KEY_FILE)]);
    }

    #[test]
    fn a_damaged_key_file_stops_the_start_instead_of_being_replaced() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join(KEY_FILE);
        std::fs::write(&path, "not a key").expect("write");
        assert!(matches!(
            persisted_key(dir.path()),
            Err(KeyError::Malformed { .. })
        ));
        assert_eq!(std::fs::read_to_string(&path).expect("file"), "not a key");
    }

    #[test]
    fn a_state_is_spent_once() {
        let spent = Spent::default();
        assert_eq!(spent.spend(&claims(), 5), Ok(()));
        assert_eq!(spent.spend(&claims(), 5), Err(Refusal::Spent));
    }
}
