//! Identity: turns a credential into a [`Subject`] before anything else happens.
//!
//! Only the api-key lane exists today. Keys are never kept: we hold, per key, its subject
//! (its id from the key's SHA-256) and a 128-bit SipHash-2-4 tag under a secret drawn at
//! start-up; a presented key is tagged and compared with every held tag in constant time,
//! so neither memory nor timing gives a key away. The tag, a keyed PRF, is what a request
//! computes: a SHA-256 per request cost more than the rest of authentication (in software).

pub(crate) mod entry;
pub mod rate;

use sha2::{Digest, Sha256};
use siphasher::sip128::SipHasher24;

/// The issuer recorded for subjects of our api-key lane.
pub const API_KEY_ISSUER: &str = "urn:openwop-rs:api-key";

pub(crate) use entry::Entry;
/// Who is calling: the generated v2 Subject (`schemas/v2/subject.schema.json`).
pub use openwop_generated::models::Subject;
use openwop_generated::models::{SubjectKind, SubjectLane};

/// Why a request carries no usable identity. Every variant is `401 unauthenticated`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("this operation needs a credential: send `Authorization: Bearer <api key>`")]
    Missing,
    #[error("the Authorization header is not of the form `Bearer <api key>`")]
    Malformed,
    #[error("the api key is not recognised")]
    Unknown,
    /// More than one `Authorization` header: which one a proxy in front of the host
    /// reads is not known, so none is trusted. A client mistake (400), not a 401.
    #[error("the request carries more than one Authorization header")]
    Ambiguous,
}

/// A configuration mistake in `--api-key TENANT:KEY`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeySpecError {
    #[error("`--api-key` takes TENANT:KEY; `{0}` has no `:`")]
    NoColon(String),
    #[error("tenant `{0}` does not match ^[A-Za-z0-9._~-]{{1,128}}$")]
    BadTenant(String),
    #[error("the key for tenant `{0}` is shorter than 16 characters")]
    ShortKey(String),
    #[error("the same api key is given to tenants `{0}` and `{1}`; a key names one tenant")]
    SharedKey(String, String),
    #[error("tenant `{0}` is given the same api key twice")]
    RepeatedKey(String),
}

/// The set of accepted api keys. The configured keys are part of the reloadable snapshot
/// (`crate::reload::live::Live`) a reload swaps whole, with the visibility and peers: a request
/// sees either the old set or the new one, never a mix, and nothing it holds is torn.
#[derive(Default)]
pub struct KeyRing {
    entries: crate::reload::live::Live,
    /// Keys minted while the host runs (conformance mode's credential seam): kept in
    /// memory only, so they end with the process.
    minted: std::sync::RwLock<Vec<Entry>>,
}

fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// The process's secret SipHash key for key tags, drawn once: every ring of the process
/// (the first and each reloaded one) tags with it, so their tags compare. Unknown outside
/// the process, so a tag cannot be matched by a key found offline, and nothing is written.
static TAG_KEY: std::sync::LazyLock<[u8; 16]> = std::sync::LazyLock::new(|| {
    let mut key = [0u8; 16];
    getrandom::fill(&mut key).expect("the operating system's random source is unavailable");
    key
});

/// The tag a presented or configured key is matched by.
fn tag(key: &str) -> [u8; 16] {
    SipHasher24::new_with_key(&TAG_KEY)
        .hash(key.as_bytes())
        .as_bytes()
}

fn ct_eq(a: &[u8; 16], b: &[u8; 16]) -> bool {
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

/// The Subject a key of `tenant` with `digest` authenticates as. Every part is held to
/// its grammar: the tenant by `is_tenant_id`, the issuer and the hex subject id by
/// construction.
fn subject_of(tenant: &str, digest: &[u8; 32]) -> Result<Subject, KeySpecError> {
    let wire = |what: &str| format!("api-key subject: {what} does not fit the Subject schema");
    Ok(Subject {
        issuer: API_KEY_ISSUER
            .parse()
            .unwrap_or_else(|_| panic!("{}", wire("issuer"))),
        subject_id: format!("key-{}", hex::encode(&digest[..8]))
            .parse()
            .unwrap_or_else(|_| panic!("{}", wire("subjectId"))),
        tenant: tenant
            .parse()
            .map_err(|_| KeySpecError::BadTenant(tenant.to_owned()))?,
        lane: SubjectLane::ApiKey,
        kind: SubjectKind::User,
        key_class: None,
        actor: None,
    })
}

impl KeyRing {
    /// Adds `key` for `tenant`. The subject id is derived from the key digest, so it is
    /// stable across restarts and carries nothing personal.
    pub fn add(&mut self, tenant: &str, key: &str) -> Result<(), KeySpecError> {
        if !crate::ids::is_tenant_id(tenant) {
            return Err(KeySpecError::BadTenant(tenant.to_owned()));
        }
        if key.len() < 16 {
            return Err(KeySpecError::ShortKey(tenant.to_owned()));
        }
        let (digest, tag) = (digest(key), tag(key));
        let entries = self.configured();
        if let Some(held) = entries.iter().find(|e| ct_eq(&e.tag, &tag)) {
            let held = held.subject.tenant.to_string();
            return Err(if held == tenant {
                KeySpecError::RepeatedKey(held)
            } else {
                KeySpecError::SharedKey(held, tenant.to_owned())
            });
        }
        let subject = subject_of(tenant, &digest)?;
        self.entries
            .swap(|s| std::sync::Arc::make_mut(&mut s.keys).push(Entry { tag, subject }));
        Ok(())
    }

    /// Parses and adds a `TENANT:KEY` spec.
    pub fn add_spec(&mut self, spec: &str) -> Result<(), KeySpecError> {
        let (tenant, key) = spec
            .split_once(':')
            .ok_or_else(|| KeySpecError::NoColon(spec.to_owned()))?;
        self.add(tenant, key)
    }

    /// Mints a new api key for `tenant` and accepts it from now on, until the process
    /// ends (never written anywhere). Only conformance mode's credential seam calls it.
    pub fn mint(&self, tenant: &str) -> Result<(String, Subject), KeySpecError> {
        if !crate::ids::is_tenant_id(tenant) {
            return Err(KeySpecError::BadTenant(tenant.to_owned()));
        }
        let key = format!("owconf_{}", crate::ids::mint_opaque());
        let digest = digest(&key);
        let subject = subject_of(tenant, &digest)?;
        self.minted
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(Entry {
                tag: tag(&key),
                subject: subject.clone(),
            });
        Ok((key, subject))
    }

    pub fn is_empty(&self) -> bool {
        self.configured().is_empty()
    }

    /// How many configured keys are accepted (minted ones aside).
    pub fn len(&self) -> usize {
        self.configured().len()
    }

    /// The reloadable snapshot the configured keys are kept in (`Host::build` keeps the
    /// visibility and peers in the same one). A reload swaps the keys there; keys minted
    /// by the conformance seam stay, since they were never configuration.
    pub fn live(&self) -> crate::reload::live::Live {
        self.entries.clone()
    }

    /// The configured keys as they stand now (as the current request was pinned to).
    pub(crate) fn configured(&self) -> std::sync::Arc<Vec<Entry>> {
        self.entries.current().keys.clone()
    }

    /// Resolves the request's one `Authorization` header; two or more are refused whatever
    /// they say.
    pub fn authenticate_headers(
        &self,
        headers: &axum::http::HeaderMap,
    ) -> Result<Subject, AuthError> {
        let mut values = headers.get_all(axum::http::header::AUTHORIZATION).iter();
        let first = values.next();
        if values.next().is_some() {
            return Err(AuthError::Ambiguous);
        }
        self.authenticate(first.map(|v| v.to_str().unwrap_or("")))
    }

    /// Resolves an `Authorization` header value.
    pub fn authenticate(&self, header: Option<&str>) -> Result<Subject, AuthError> {
        let header = header.ok_or(AuthError::Missing)?;
        let (scheme, key) = header.trim().split_once(' ').ok_or(AuthError::Malformed)?;
        if !scheme.eq_ignore_ascii_case("bearer") || key.trim().is_empty() {
            return Err(AuthError::Malformed);
        }
        let wanted = tag(key.trim());
        // Scan every entry so the time taken does not depend on which one matched.
        let mut found = None;
        for entry in self.configured().iter() {
            if ct_eq(&entry.tag, &wanted) {
                found = Some(entry.subject.clone());
            }
        }
        for entry in self.minted.read().unwrap_or_else(|e| e.into_inner()).iter() {
            if ct_eq(&entry.tag, &wanted) {
                found = Some(entry.subject.clone());
            }
        }
        found.ok_or(AuthError::Unknown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_resolve_to_their_tenant() {
        let mut ring = KeyRing::default();
        ring.add_spec("acme:acme-key-0123456789").unwrap();
        ring.add_spec("globex:globex-key-0123456789").unwrap();
        let s = ring
            .authenticate(Some("Bearer globex-key-0123456789"))
            .unwrap();
        assert_eq!(s.tenant, "globex");
        assert_eq!(s.lane, SubjectLane::ApiKey);
        assert_eq!(
            ring.authenticate(Some("bearer acme-key-0123456789"))
                .unwrap()
                .tenant,
            "acme"
        );
        assert_eq!(ring.authenticate(None).err(), Some(AuthError::Missing));
        assert_eq!(
            ring.authenticate(Some("Basic abc")).err(),
            Some(AuthError::Malformed)
        );
        assert_eq!(
            ring.authenticate(Some("Bearer nope-nope-nope-nope")).err(),
            Some(AuthError::Unknown)
        );
    }

    #[test]
    fn two_authorization_headers_are_refused_whatever_they_say() {
        let mut ring = KeyRing::default();
        ring.add_spec("acme:acme-key-0123456789").unwrap();
        let mut headers = axum::http::HeaderMap::new();
        headers.append(
            "authorization",
            "Bearer acme-key-0123456789".parse().unwrap(),
        );
        assert_eq!(ring.authenticate_headers(&headers).unwrap().tenant, "acme");
        headers.append(
            "authorization",
            "Bearer acme-key-0123456789".parse().unwrap(),
        );
        assert_eq!(
            ring.authenticate_headers(&headers).err(),
            Some(AuthError::Ambiguous)
        );
        assert_eq!(
            ring.authenticate_headers(&axum::http::HeaderMap::new())
                .err(),
            Some(AuthError::Missing)
        );
    }

    #[test]
    fn a_key_names_one_tenant() {
        let mut ring = KeyRing::default();
        ring.add_spec("acme:shared-key-0123456789").unwrap();
        assert_eq!(
            ring.add_spec("globex:shared-key-0123456789"),
            Err(KeySpecError::SharedKey("acme".into(), "globex".into()))
        );
        assert_eq!(
            ring.add_spec("acme:shared-key-0123456789"),
            Err(KeySpecError::RepeatedKey("acme".into()))
        );
        assert_eq!(
            ring.authenticate(Some("Bearer shared-key-0123456789"))
                .unwrap()
                .tenant,
            "acme"
        );
    }

    #[test]
    fn a_swap_of_the_configured_keys_keeps_minted_ones() {
        let mut ring = KeyRing::default();
        ring.add_spec("acme:old-key-0123456789").unwrap();
        let (minted, _) = ring.mint("acme").unwrap();
        let mut next = KeyRing::default();
        next.add_spec("acme:new-key-0123456789").unwrap();
        let keys = next.configured();
        ring.live().swap(|s| s.keys = keys);
        assert_eq!(
            ring.authenticate(Some("Bearer old-key-0123456789")).err(),
            Some(AuthError::Unknown)
        );
        assert!(ring.authenticate(Some("Bearer new-key-0123456789")).is_ok());
        assert!(ring.authenticate(Some(&format!("Bearer {minted}"))).is_ok());
        assert_eq!(ring.len(), 1);
    }

    #[test]
    fn bad_specs_are_refused() {
        let mut ring = KeyRing::default();
        assert!(matches!(
            ring.add_spec("nocolon"),
            Err(KeySpecError::NoColon(_))
        ));
        assert!(matches!(
            ring.add_spec("a b:0123456789abcdef"),
            Err(KeySpecError::BadTenant(_))
        ));
        assert!(matches!(
            ring.add_spec("acme:short"),
            Err(KeySpecError::ShortKey(_))
        ));
    }
}
