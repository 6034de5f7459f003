//! The per-agent A2A routing value R (`a2aTenant`): a keyed MAC over the agent id and the
//! host version, so it is stable for both, unguessable without the host's secret, and
//! carries nothing about who asked. The secret lives in the data dir and is made once.

use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::path::Path;

/// The file in the data dir holding the secret, as 64 hex digits.
pub const SECRET_FILE: &str = "agent-routing-secret";

/// Bytes of MAC kept in R: 128 bits, so R cannot be guessed by enumeration.
const MAC_BYTES: usize = 16;

/// Why the secret could not be loaded or made.
#[derive(Debug, thiserror::Error)]
pub enum RoutingKeyError {
    #[error("cannot create {path}: {message}")]
    Create { path: String, message: String },
    #[error("cannot read {path}: {message}")]
    Read { path: String, message: String },
    // Replacing a damaged secret would silently change every agent's routing value, so
    // the operator decides (restore it, or delete the file to mint a new one).
    #[error(
        "{path} does not hold a 64-hex-digit secret; restore it, or delete it to mint a new one (every agent's a2aTenant changes)"
    )]
    Damaged { path: String },
}

/// The MAC key and the host version R is minted for.
#[derive(Clone)]
pub struct RoutingKey {
    key: [u8; 32],
    version: String,
}

impl std::fmt::Debug for RoutingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoutingKey")
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl RoutingKey {
    pub fn new(key: [u8; 32], version: &str) -> Self {
        Self {
            key,
            version: version.to_owned(),
        }
    }

    /// The store's name for the secret every replica shares.
    pub const SHARED_NAME: &'static str = "agents.routing.key";

    /// This key as the store shares it: the data dir's secret is offered, and the first
    /// one a store holds is every replica's (one host keeps its own, so R never changes
    /// on an upgrade).
    pub fn candidate(&self) -> Vec<u8> {
        self.key.to_vec()
    }

    /// The key the store settled on.
    pub fn from_shared(bytes: &[u8], version: &str) -> Option<Self> {
        let key: [u8; 32] = bytes.try_into().ok()?;
        Some(Self::new(key, version))
    }

    /// A key that lives only in memory (tests of other layers; never a served host).
    pub fn ephemeral() -> Self {
        let mut key = [0u8; 32];
        // The OS generator failing means the machine cannot produce safe values at all.
        getrandom::fill(&mut key).expect("the operating system's random source is unavailable");
        Self::new(key, env!("CARGO_PKG_VERSION"))
    }

    /// The data dir's secret, made on first start, for this build's version.
    pub fn load_or_create(data_dir: &Path) -> Result<Self, RoutingKeyError> {
        Self::load_or_create_for(data_dir, env!("CARGO_PKG_VERSION"))
    }

    pub fn load_or_create_for(data_dir: &Path, version: &str) -> Result<Self, RoutingKeyError> {
        let path = data_dir.join(SECRET_FILE);
        let shown = path.display().to_string();
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let bytes = hex::decode(text.trim()).map_err(|_| RoutingKeyError::Damaged {
                    path: shown.clone(),
                })?;
                let key: [u8; 32] = bytes
                    .try_into()
                    .map_err(|_| RoutingKeyError::Damaged { path: shown })?;
                Ok(Self::new(key, version))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let create = |e: std::io::Error| RoutingKeyError::Create {
                    path: shown.clone(),
                    message: e.to_string(),
                };
                std::fs::create_dir_all(data_dir).map_err(create)?;
                let fresh = Self::ephemeral();
                crate::secret_file::write_new(&path, &hex::encode(fresh.key)).map_err(create)?;
                tracing::info!(path = %shown, "minted the agent routing secret");
                Ok(Self::new(fresh.key, version))
            }
            Err(e) => Err(RoutingKeyError::Read {
                path: shown,
                message: e.to_string(),
            }),
        }
    }

    /// R for `agent_id`: `ag-` and 128 bits of HMAC-SHA256, base64url without padding.
    pub fn mint(&self, agent_id: &str) -> String {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key)
            .expect("HMAC takes a key of any length");
        // Length-prefixed fields, so no (version, agentId) pair can collide with another.
        for field in ["openwop-a2a-tenant-v1", &self.version, agent_id] {
            mac.update(&(field.len() as u64).to_be_bytes());
            mac.update(field.as_bytes());
        }
        let tag = mac.finalize().into_bytes();
        format!(
            "ag-{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&tag[..MAC_BYTES])
        )
    }
}

/// Equality that takes the same time wherever the first difference is.
pub fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_r(s: &str) -> bool {
        (1..=128).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._~-".contains(&b))
    }

    #[test]
    fn r_matches_the_pattern_and_depends_on_agent_version_and_key() {
        let k = RoutingKey::new([7; 32], "1.0.0");
        let r = k.mint("workflow-runner");
        assert!(is_r(&r) && r.len() == 25, "{r}");
        assert_eq!(r, k.mint("workflow-runner"));
        assert_ne!(r, k.mint("approvals-desk"));
        assert_ne!(r, RoutingKey::new([7; 32], "1.0.1").mint("workflow-runner"));
        assert_ne!(r, RoutingKey::new([8; 32], "1.0.0").mint("workflow-runner"));
        assert!(!r.contains("workflow"));
    }

    #[test]
    fn the_secret_is_made_once_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let a = RoutingKey::load_or_create_for(dir.path(), "1")
            .unwrap()
            .mint("x");
        let b = RoutingKey::load_or_create_for(dir.path(), "1")
            .unwrap()
            .mint("x");
        assert_eq!(a, b);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(dir.path().join(SECRET_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "{mode:o}");
        }
        std::fs::write(dir.path().join(SECRET_FILE), "not hex").unwrap();
        assert!(matches!(
            RoutingKey::load_or_create_for(dir.path(), "1"),
            Err(RoutingKeyError::Damaged { .. })
        ));
    }

    #[test]
    fn same_compares_whole_strings() {
        assert!(same("ag-abc", "ag-abc"));
        assert!(!same("ag-abc", "ag-abd"));
        assert!(!same("ag-abc", "ag-ab"));
    }
}
