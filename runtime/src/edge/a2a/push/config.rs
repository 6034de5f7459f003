//! Reading a push configuration: the request of CreateTaskPushNotificationConfig and
//! SendMessage's inline `configuration.taskPushNotificationConfig`. A leaf of the A2A
//! edge (the operations in `push` and `service` both read through it), so neither of
//! them needs the other to read one.

use openwop_generated::models::{A2aAuthenticationInfo, A2aTaskPushNotificationConfig};
use serde_json::Value;

use crate::edge::a2a::errors::Fault;
use crate::edge::a2a::read::{self, Words};
use crate::ops::push::{NewPushConfig, Secret};

fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The words of a configuration's refusals, whatever the field's wrong type.
pub(crate) const WORDS: Words = &[
    ("url", "url", "is required"),
    ("id", "id", ID_RULE),
    ("token", "token", PRINTABLE),
    ("authentication", "authentication", "must be an object"),
    ("authentication.scheme", "authentication.scheme", SCHEME),
    (
        "authentication.credentials",
        "authentication.credentials",
        PRINTABLE,
    ),
    ("taskId", "taskId", "is required"),
];
const ID_RULE: &str = "must be 1 to 128 characters of A-Z a-z 0-9 - . _ ~";
const PRINTABLE: &str = "must be printable ASCII text";
const SCHEME: &str = "must be an HTTP authentication scheme";

/// A secret as a header can carry it; empty is none.
fn secret_text(v: Option<String>, field: &str) -> Result<Option<String>, Fault> {
    match v {
        None => Ok(None),
        Some(s) if s.is_empty() => Ok(None),
        // Anything a header value cannot carry (control characters, CR/LF) is refused
        // here rather than silently dropped at delivery.
        Some(s) if s.bytes().all(|b| b == b'\t' || (0x20..0x7f).contains(&b)) => Ok(Some(s)),
        Some(_) => Err(Fault::invalid_params(field, PRINTABLE)),
    }
}

/// Reads a `TaskPushNotificationConfig` found at `at` (`""`: the request itself); its
/// taskId is the caller's business.
pub fn parse_config(v: &Value, at: &str) -> Result<NewPushConfig, Fault> {
    if !v.is_object() {
        return Err(Fault::invalid_params(at, "must be an object"));
    }
    check_config(read::typed_at(v, at, WORDS)?, at)
}

/// The rules a configuration's fields obey beyond their types.
pub(crate) fn check_config(
    config: A2aTaskPushNotificationConfig,
    at: &str,
) -> Result<NewPushConfig, Fault> {
    let field = |f: &str| {
        if at.is_empty() {
            f.to_owned()
        } else {
            format!("{at}.{f}")
        }
    };
    let url = config
        .url
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Fault::invalid_params(&field("url"), "is required"))?;
    let id = match config.id {
        None => None,
        Some(s) if s.is_empty() => None,
        Some(s)
            if s.len() <= 128
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b)) =>
        {
            Some(s)
        }
        Some(_) => return Err(Fault::invalid_params(&field("id"), ID_RULE)),
    };
    let token = secret_text(config.token, &field("token"))?;
    let (scheme, credentials) = match config.authentication {
        None => (None, None),
        Some(A2aAuthenticationInfo {
            scheme,
            credentials,
        }) => {
            if scheme.is_empty() || !scheme.bytes().all(is_token_char) {
                return Err(Fault::invalid_params(
                    &field("authentication.scheme"),
                    SCHEME,
                ));
            }
            let credentials = secret_text(credentials, &field("authentication.credentials"))?;
            (Some(scheme), credentials)
        }
    };
    Ok(NewPushConfig {
        id,
        url,
        scheme,
        secret: Secret { token, credentials },
    })
}
