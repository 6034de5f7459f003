//! The DNS-rebinding guard: a request that carries `Origin` (a browser page) reaches the
//! mount only when that origin is a loopback page or one the config allows
//! (`mcp.allowedOrigins`). The `Host` header is never consulted: a rebound name makes the
//! page's Origin and the request's Host agree, so trusting Host is no guard at all.

/// An origin as compared: lower-case scheme and host, and the port (the scheme's default
/// when none is written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub scheme: String,
    pub host: String,
    pub port: u16,
}

/// Reads `scheme://host[:port]` (nothing after it), or `None` for anything else: a port
/// that is not a number (`http://127.0.0.1:8080.evil.example`), userinfo, a path, `null`.
pub fn parse(text: &str) -> Option<Origin> {
    let (scheme, authority) = text.split_once("://")?;
    let scheme_ok = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'));
    if !scheme_ok {
        return None;
    }
    let scheme = scheme.to_ascii_lowercase();
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        if !host.chars().all(|c| c.is_ascii_hexdigit() || c == ':') {
            return None;
        }
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        (host, port)
    } else {
        match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | ':'));
    if !host_ok {
        return None;
    }
    let port = match port {
        Some(p) if !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) => {
            p.parse::<u16>().ok()?
        }
        Some(_) => return None,
        None => match scheme.as_str() {
            "http" | "ws" => 80,
            "https" | "wss" => 443,
            _ => return None,
        },
    };
    Some(Origin {
        scheme,
        host: host.to_ascii_lowercase(),
        port,
    })
}

fn is_loopback(o: &Origin) -> bool {
    matches!(o.scheme.as_str(), "http" | "https")
        && matches!(o.host.as_str(), "localhost" | "127.0.0.1" | "::1")
}

/// Whether a request with this `Origin` header value may call the mount.
pub fn allowed(origin: &str, allow_list: &[String]) -> bool {
    let Some(origin) = parse(origin.trim()) else {
        return false;
    };
    is_loopback(&origin)
        || allow_list
            .iter()
            .filter_map(|a| parse(a))
            .any(|a| a == origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_pages_pass_and_lookalike_hosts_do_not() {
        for ok in [
            "http://127.0.0.1:8080",
            "http://localhost:3000",
            "http://[::1]:9",
            "https://localhost",
        ] {
            assert!(allowed(ok, &[]), "{ok}");
        }
        for bad in [
            "http://127.0.0.1:8080.evil.example",
            "http://127.0.0.1.evil.example",
            "http://localhost.evil.example:80",
            "http://evil.example",
            "http://user@127.0.0.1:8080",
            "http://127.0.0.1:8080/path",
            "null",
            "",
            "file://",
        ] {
            assert!(!allowed(bad, &[]), "{bad}");
        }
    }

    #[test]
    fn the_allow_list_matches_scheme_host_and_port_exactly() {
        let list = vec!["https://app.example.com".to_owned()];
        assert!(allowed("https://app.example.com", &list));
        assert!(allowed("https://APP.example.com:443", &list));
        assert!(!allowed("http://app.example.com", &list));
        assert!(!allowed("https://app.example.com:8443", &list));
        assert!(!allowed("https://app.example.com.evil.example", &list));
    }
}
