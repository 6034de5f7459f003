//! Version values of the two embedded protocols, parsed so they compare by value.
//!
//! A2A speaks `major.minor` (a patch a peer sends is dropped: patches are never
//! negotiated), MCP speaks dated revisions. Comparing the strings would put `1.10` below
//! `1.9`, so both become tuples first.

use std::cmp::Ordering;
use std::fmt;

/// Which embedded protocol a negotiation is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    A2a,
    Mcp,
}

impl Protocol {
    /// The spelling of `negotiation.decided.protocol`.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::A2a => "a2a",
            Protocol::Mcp => "mcp",
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A parsed version: `(major, minor, 0)` for A2A, `(year, month, day)` for MCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version(u32, u32, u32);

impl Version {
    /// Parses a version of `protocol` as a peer or a facet spells it. `None` when the
    /// value is not a version of that protocol at all.
    pub fn parse(protocol: Protocol, raw: &str) -> Option<Version> {
        match protocol {
            Protocol::A2a => parse_a2a(raw.trim()),
            Protocol::Mcp => parse_mcp(raw.trim()),
        }
    }

    /// The canonical spelling: `1.0`, `2026-07-28`.
    pub fn render(self, protocol: Protocol) -> String {
        match protocol {
            Protocol::A2a => format!("{}.{}", self.0, self.1),
            Protocol::Mcp => format!("{:04}-{:02}-{:02}", self.0, self.1, self.2),
        }
    }
}

/// Orders two version strings of `protocol`; `None` if either does not parse.
pub fn compare(protocol: Protocol, a: &str, b: &str) -> Option<Ordering> {
    Some(Version::parse(protocol, a)?.cmp(&Version::parse(protocol, b)?))
}

fn number(part: &str) -> Option<u32> {
    // `+1` or ` 1` would parse with `str::parse`; a version is digits only.
    if part.is_empty() || part.len() > 9 || !part.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    part.parse().ok()
}

fn parse_a2a(raw: &str) -> Option<Version> {
    let mut parts = raw.split('.');
    let major = number(parts.next()?)?;
    let minor = number(parts.next()?)?;
    // A third component is a patch, which A2A says receivers ignore; a fourth is noise.
    if let Some(patch) = parts.next() {
        number(patch)?;
    }
    if parts.next().is_some() {
        return None;
    }
    Some(Version(major, minor, 0))
}

fn parse_mcp(raw: &str) -> Option<Version> {
    let bytes = raw.as_bytes();
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return None;
    }
    let year = number(&raw[0..4])?;
    let month = number(&raw[5..7])?;
    let day = number(&raw[8..10])?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    Some(Version(year, month, day))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a2a_versions_compare_numerically_not_as_text() {
        assert_eq!(
            compare(Protocol::A2a, "1.10", "1.9"),
            Some(Ordering::Greater)
        );
        assert_eq!(compare(Protocol::A2a, "0.3", "1.0"), Some(Ordering::Less));
    }

    #[test]
    fn a2a_patch_is_ignored() {
        assert_eq!(
            Version::parse(Protocol::A2a, "1.0.1"),
            Version::parse(Protocol::A2a, "1.0")
        );
        assert_eq!(
            Version::parse(Protocol::A2a, "1.0.1").map(|v| v.render(Protocol::A2a)),
            Some("1.0".into())
        );
    }

    #[test]
    fn a2a_rejects_what_is_not_major_minor() {
        for bad in [
            "",
            "1",
            "v1.0",
            "1.x",
            "1.0.0.0",
            "+1.0",
            "1..0",
            "2026-07-28",
        ] {
            assert_eq!(Version::parse(Protocol::A2a, bad), None, "{bad:?}");
        }
    }

    #[test]
    fn mcp_revisions_compare_as_dates() {
        assert_eq!(
            compare(Protocol::Mcp, "2025-06-18", "2026-07-28"),
            Some(Ordering::Less)
        );
        assert_eq!(
            compare(Protocol::Mcp, "2026-07-28", "2026-07-28"),
            Some(Ordering::Equal)
        );
        for bad in [
            "2026-7-28",
            "2026-13-01",
            "2026-00-10",
            "1.0",
            "2026-07-28T00:00:00Z",
        ] {
            assert_eq!(Version::parse(Protocol::Mcp, bad), None, "{bad:?}");
        }
    }
}
