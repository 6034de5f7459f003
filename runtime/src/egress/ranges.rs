//! Which IP addresses an outbound call may reach. Forms that embed an IPv4 address
//! (IPv4-mapped, IPv4-translated, IPv4-compatible, NAT64, 6to4, ISATAP) are judged by the
//! address they embed, so a
//! private IPv4 target cannot be smuggled in an IPv6 spelling, and a public one is not
//! refused for its spelling.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is refused, or `None` when it is publicly routable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocked {
    Loopback,
    Private,
    LinkLocal,
    UniqueLocal,
    Unspecified,
    /// Multicast, broadcast, documentation, benchmarking, shared (CGNAT) and other
    /// ranges IANA lists as not globally reachable.
    NotGlobal,
}

impl Blocked {
    pub fn as_str(self) -> &'static str {
        match self {
            Blocked::Loopback => "loopback",
            Blocked::Private => "private (RFC 1918)",
            Blocked::LinkLocal => "link-local (includes cloud metadata)",
            Blocked::UniqueLocal => "unique-local IPv6",
            Blocked::Unspecified => "unspecified",
            Blocked::NotGlobal => "not globally reachable",
        }
    }
}

/// Classifies one address.
pub fn classify(ip: IpAddr) -> Option<Blocked> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<Blocked> {
    let [a, b, c, _] = ip.octets();
    if ip.is_unspecified() || a == 0 {
        return Some(Blocked::Unspecified);
    }
    if a == 127 {
        return Some(Blocked::Loopback);
    }
    if a == 10 || (a == 172 && (16..=31).contains(&b)) || (a == 192 && b == 168) {
        return Some(Blocked::Private);
    }
    if a == 169 && b == 254 {
        return Some(Blocked::LinkLocal);
    }
    let not_global = (a == 100 && (64..=127).contains(&b)) // shared address space (CGNAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2) // documentation
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113)
        || (a == 198 && (18..=19).contains(&b)) // benchmarking
        || (a == 192 && b == 88 && c == 99) // deprecated 6to4 relay anycast
        || a >= 224; // multicast, reserved, broadcast
    not_global.then_some(Blocked::NotGlobal)
}

/// The IPv4 address an IPv6 address carries, for the forms that carry one.
pub fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let o = ip.octets();
    let tail = Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    // ::ffff:a.b.c.d (mapped)
    if s[..5] == [0, 0, 0, 0, 0] && s[5] == 0xffff {
        return Some(tail);
    }
    // ::ffff:0:a.b.c.d (translated, RFC 2765 / SIIT)
    if s[..4] == [0, 0, 0, 0] && s[4] == 0xffff && s[5] == 0 {
        return Some(tail);
    }
    // ::a.b.c.d (compatible; :: and ::1 are their own addresses)
    if s[..6] == [0; 6] && !(s[6] == 0 && s[7] <= 1) {
        return Some(tail);
    }
    // 64:ff9b::a.b.c.d (NAT64 well-known prefix)
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(tail);
    }
    // 2002:aabb:ccdd::/48 (6to4)
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new(o[2], o[3], o[4], o[5]));
    }
    // <prefix>:0:5efe:a.b.c.d and <prefix>:200:5efe:a.b.c.d (ISATAP interface ids, RFC 5214)
    if s[4] & 0xfdff == 0 && s[5] == 0x5efe {
        return Some(tail);
    }
    None
}

fn classify_v6(ip: Ipv6Addr) -> Option<Blocked> {
    if ip.is_unspecified() {
        return Some(Blocked::Unspecified);
    }
    if ip.is_loopback() {
        return Some(Blocked::Loopback);
    }
    if let Some(v4) = embedded_v4(ip) {
        return classify_v4(v4);
    }
    let s = ip.segments();
    if s[0] & 0xfe00 == 0xfc00 {
        // fc00::/7, which holds fd00:ec2::254 (a cloud metadata address)
        return Some(Blocked::UniqueLocal);
    }
    if s[0] & 0xffc0 == 0xfe80 {
        return Some(Blocked::LinkLocal);
    }
    let not_global = s[0] & 0xffc0 == 0xfec0 // deprecated site-local
        || s[0] & 0xff00 == 0xff00 // multicast
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || (s[0] == 0x2001 && s[1] < 0x0200) // IETF protocol assignments (Teredo included)
        || (s[0] == 0x0064 && s[1] == 0xff9b && s[2] == 1) // local-use NAT64
        || (s[0] == 0x0100 && s[1..4] == [0, 0, 0]) // discard-only
        || s[0] == 0x3fff; // documentation (RFC 9637)
    not_global.then_some(Blocked::NotGlobal)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> Option<Blocked> {
        classify(s.parse().expect("ip"))
    }

    #[test]
    fn every_range_class_is_refused_in_both_families() {
        for (ip, want) in [
            ("127.0.0.1", Blocked::Loopback),
            ("127.255.0.9", Blocked::Loopback),
            ("10.1.2.3", Blocked::Private),
            ("172.16.0.1", Blocked::Private),
            ("172.31.255.255", Blocked::Private),
            ("192.168.1.1", Blocked::Private),
            ("169.254.169.254", Blocked::LinkLocal),
            ("0.0.0.0", Blocked::Unspecified),
            ("100.64.0.1", Blocked::NotGlobal),
            ("224.0.0.1", Blocked::NotGlobal),
            ("255.255.255.255", Blocked::NotGlobal),
            ("::1", Blocked::Loopback),
            ("::", Blocked::Unspecified),
            ("fd00:ec2::254", Blocked::UniqueLocal),
            ("fc00::1", Blocked::UniqueLocal),
            ("fe80::1", Blocked::LinkLocal),
            ("ff02::1", Blocked::NotGlobal),
            ("::ffff:127.0.0.1", Blocked::Loopback),
            ("::ffff:169.254.169.254", Blocked::LinkLocal),
            ("::10.0.0.1", Blocked::Private),
            ("64:ff9b::192.168.0.1", Blocked::Private),
            ("64:ff9b::7f00:1", Blocked::Loopback),
            ("2002:a9fe:a9fe::1", Blocked::LinkLocal),
            ("2002:7f00:1::", Blocked::Loopback),
            // IPv4-translated (SIIT): judged by the IPv4 it carries.
            ("::ffff:0:a9fe:a9fe", Blocked::LinkLocal),
            ("::ffff:0:127.0.0.1", Blocked::Loopback),
            ("::ffff:0:10.0.0.1", Blocked::Private),
            ("::ffff:0:0.0.0.0", Blocked::Unspecified),
            // IPv4-compatible and mapped in their hex spellings.
            ("::a9fe:a9fe", Blocked::LinkLocal),
            ("::ffff:7f00:1", Blocked::Loopback),
            ("::ffff:a00:1", Blocked::Private),
            // NAT64 well-known prefix, hex spelling; the local-use prefix is never global.
            ("64:ff9b::a9fe:a9fe", Blocked::LinkLocal),
            ("64:ff9b:1::93b8:d822", Blocked::NotGlobal),
            // 6to4 of private and metadata addresses.
            ("2002:c0a8:101::", Blocked::Private),
            ("2002:a00:1::1", Blocked::Private),
            // ISATAP interface ids under a global prefix.
            ("2606:4700::5efe:a9fe:a9fe", Blocked::LinkLocal),
            ("2606:4700::200:5efe:7f00:1", Blocked::Loopback),
            ("2606:4700::5efe:192.168.0.1", Blocked::Private),
            // Teredo (2001::/32) carries an obfuscated IPv4; the range is never global.
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", Blocked::NotGlobal),
        ] {
            assert_eq!(c(ip), Some(want), "{ip}");
        }
    }

    #[test]
    fn public_addresses_pass_in_every_spelling() {
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "172.32.0.1",
            "2606:4700::1111",
            "::ffff:93.184.216.34",
            "64:ff9b::808:808",
            "2002:5db8:d822::1",
            "::ffff:0:93.184.216.34",
            "2606:4700::5efe:5db8:d822",
        ] {
            assert_eq!(c(ip), None, "{ip}");
        }
    }
}
