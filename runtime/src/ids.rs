//! Tenant-bound ids (`tenant/opaque`): minting, grammar checks and the path projection.
//!
//! Bodies always carry the bound form; only a URL path segment carries the projected
//! form, where every byte outside `[A-Za-z0-9._-]` becomes `~XX`. We also accept the
//! legacy `%2F` spelling, which axum has already percent-decoded into `/` by the time a
//! handler sees it.

use base64::Engine as _;

/// Why an id was refused; rendered as `400 validation_error` by the REST edge.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("`{0}` is not a tenant-bound id of the form tenant/opaque")]
    NotBound(String),
    #[error("`{0}` has a malformed `~` escape")]
    BadEscape(String),
    #[error("the tenant segment of `{0}` does not match ^[A-Za-z0-9._~-]{{1,128}}$")]
    BadTenant(String),
    #[error("the opaque segment of `{0}` does not match ^[A-Za-z0-9._~-]{{16,128}}$")]
    BadOpaque(String),
}

/// A parsed tenant-bound id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BoundId {
    tenant: String,
    opaque: String,
}

impl BoundId {
    /// The bound form `tenant/opaque`.
    pub fn as_bound(&self) -> String {
        format!("{}/{}", self.tenant, self.opaque)
    }

    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// Parses the bound form as found in a body (no projection undone).
    pub fn parse_bound(raw: &str) -> Result<Self, IdError> {
        let Some((tenant, opaque)) = raw.split_once('/') else {
            return Err(IdError::NotBound(raw.to_owned()));
        };
        let tenant_body = tenant.strip_prefix("anon:").unwrap_or(tenant);
        if !grammar_ok(tenant_body, 1) {
            return Err(IdError::BadTenant(raw.to_owned()));
        }
        if !grammar_ok(opaque, 16) {
            return Err(IdError::BadOpaque(raw.to_owned()));
        }
        Ok(Self {
            tenant: tenant.to_owned(),
            opaque: opaque.to_owned(),
        })
    }

    /// Parses a path segment: undoes the `~XX` projection exactly once, then checks the
    /// grammar. A segment that arrived as `%2F` is already `/` here and parses as is.
    pub fn parse_path(segment: &str) -> Result<Self, IdError> {
        let decoded = unproject(segment)?;
        Self::parse_bound(&decoded)
    }

    /// The one-segment path form (`acme~2Fr-...`).
    pub fn projected(&self) -> String {
        project(&self.as_bound())
    }
}

fn grammar_ok(s: &str, min: usize) -> bool {
    (min..=128).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'-'))
}

/// Projects a bound id into one path segment.
pub fn project(bound: &str) -> String {
    let mut out = String::with_capacity(bound.len() + 4);
    for b in bound.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
            out.push(b as char);
        } else {
            out.push_str(&format!("~{b:02X}"));
        }
    }
    out
}

/// Undoes the `~XX` path projection of any id once (author ids such as an agentId may
/// hold `~` or `:`, which clients project like any other byte outside `[A-Za-z0-9._-]`).
pub fn unproject_segment(segment: &str) -> Result<String, IdError> {
    unproject(segment)
}

fn unproject(segment: &str) -> Result<String, IdError> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'~' {
            let hex = bytes
                .get(i + 1..i + 3)
                .ok_or_else(|| IdError::BadEscape(segment.to_owned()))?;
            let hex =
                std::str::from_utf8(hex).map_err(|_| IdError::BadEscape(segment.to_owned()))?;
            let byte =
                u8::from_str_radix(hex, 16).map_err(|_| IdError::BadEscape(segment.to_owned()))?;
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| IdError::BadEscape(segment.to_owned()))
}

/// Mints an opaque segment for a tenant-bound id (a run, an interrupt, a webhook): 192
/// bits, base64url without padding (32 characters of the unreserved alphabet, never `~`):
/// the minting time in milliseconds (48 bits, big-endian) then 144 random bits. Ids minted
/// close in time share their leading characters, so the rows a commit inserts (a run, its
/// events, its A2A task) land on the same few index pages instead of one random page per
/// index: fewer WAL frames per commit and fewer pages for each checkpoint to write back.
/// The random part is what makes an id unguessable: a run id is also the MCP taskId,
/// whose opaque segment carries at least 128 bits of entropy (interop.md, "MCP tasks and
/// cancellation"); the time it carries is the creation time the run's snapshot shows
/// anyway.
pub fn mint_opaque() -> String {
    mint::<24>()
}

/// The time-prefixed form of [`mint_opaque`] in `N` bytes: 6 of time, `N - 6` random.
fn mint<const N: usize>() -> String {
    let mut bytes = [0u8; N];
    let ms = u64::try_from(crate::clock::now_ms()).unwrap_or(0);
    bytes[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
    // The OS generator failing means the machine cannot produce safe ids at all.
    getrandom::fill(&mut bytes[6..]).expect("the operating system's random source is unavailable");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Mints a fresh bound id for `tenant`.
pub fn mint_bound(tenant: &str) -> BoundId {
    BoundId {
        tenant: tenant.to_owned(),
        opaque: mint_opaque(),
    }
}

/// Mints an event id (same grammar as an opaque segment): 128 bits, 80 of them random (22
/// characters). An event id names an event inside a run the caller may already read; it
/// is never looked up alone, so it needs uniqueness, not a task id's entropy, and a run
/// holds many events.
pub fn mint_event_id() -> String {
    mint::<16>()
}

/// True when `s` is a valid tenant id.
pub fn is_tenant_id(s: &str) -> bool {
    grammar_ok(s, 1)
}

/// True when `s` matches the author-minted id grammar (`workflowId`, `nodeId`, ...).
pub fn is_author_id(s: &str) -> bool {
    (1..=128).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'-' | b':'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projection_round_trips_and_uses_uppercase_hex() {
        let id = BoundId::parse_bound("acme/r-9f3c0000000000000").unwrap();
        assert_eq!(id.projected(), "acme~2Fr-9f3c0000000000000");
        assert_eq!(BoundId::parse_path(&id.projected()).unwrap(), id);
    }

    #[test]
    fn tilde_in_bound_id_is_projected_once() {
        let id = BoundId::parse_bound("a~b/0123456789abcdef").unwrap();
        assert_eq!(id.projected(), "a~7Eb~2F0123456789abcdef");
        assert_eq!(BoundId::parse_path(&id.projected()).unwrap(), id);
    }

    #[test]
    fn legacy_percent_form_arrives_decoded_and_parses() {
        assert!(BoundId::parse_path("acme/0123456789abcdef").is_ok());
    }

    #[test]
    fn bad_ids_are_refused() {
        assert!(matches!(
            BoundId::parse_path("acme"),
            Err(IdError::NotBound(_))
        ));
        assert!(matches!(
            BoundId::parse_path("acme~2Fshort"),
            Err(IdError::BadOpaque(_))
        ));
        assert!(matches!(
            BoundId::parse_path("acme~2"),
            Err(IdError::BadEscape(_))
        ));
        assert!(matches!(
            BoundId::parse_path("acme~ZZx"),
            Err(IdError::BadEscape(_))
        ));
        assert!(matches!(
            BoundId::parse_path("~2F0123456789abcdef"),
            Err(IdError::BadTenant(_))
        ));
        assert!(matches!(
            BoundId::parse_path("a b~2F0123456789abcdef"),
            Err(IdError::BadTenant(_))
        ));
    }

    #[test]
    fn minted_ids_fit_the_grammar_and_differ() {
        let a = mint_opaque();
        let b = mint_opaque();
        assert_ne!(a, b);
        assert!(grammar_ok(&a, 16) && !a.contains('~'));
        // 6 bytes of time and 18 random (at least the 128 bits an MCP taskId carries).
        assert_eq!(a.len(), 32);
        let random = &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&a)
            .expect("base64url")[6..];
        assert!(random.len() * 8 >= 128, "{} random bits", random.len() * 8);
        let e = mint_event_id();
        assert!(grammar_ok(&e, 16) && e.len() == 22, "{e}");
    }
}
