//! The generated crate's `Cargo.toml`. Dependency versions are spelled out (no
//! `workspace = true`) so a crate written with `--out` elsewhere builds on its own; a test
//! keeps each version equal to the workspace's line for that crate.
//!
//! Features: `client` (reqwest without TLS, futures-core, tokio's timer, getrandom for
//! idempotency keys and jitter, httpdate for `Retry-After`), `rustls` (the default TLS:
//! reqwest's `rustls`, aws-lc-rs provider and the platform verifier), `native-tls` (OpenSSL
//! on Linux), `validators` (jsonschema), `tracing` (a span per call), `testkit` (a scripted
//! loopback host: tokio's sockets, no server framework), `models` (the serde models; regress
//! for their patterns; implied by `client`). Errors, dispatch and schemas need only serde and
//! serde_json. Models are a feature because they are most of the crate's compile time and
//! the validators do not use them: the validate-only CLI builds without them.

use crate::format::header;

/// The package name: what a user searches the registry for. The workspace depends on it as
/// `openwop-generated` (`package = "openwop-sdk"`), so the host's imports stay as they are.
pub(crate) const PACKAGE_NAME: &str = "openwop-sdk";
/// The library's name in `use` paths.
pub(crate) const LIB_NAME: &str = "openwop_sdk";
/// The SDK's own version (its changelog is `generated/CHANGELOG.md`).
pub(crate) const VERSION: &str = "0.3.0";

/// `(name, requirement, optional)`; the requirement's `version` matches the workspace's.
pub(crate) const DEPENDENCIES: &[(&str, &str, bool)] = &[
    (
        "futures-core",
        r#"{ version = "0.3", default-features = false }"#,
        true,
    ),
    ("getrandom", r#""0.4""#, true),
    ("httpdate", r#""1""#, true),
    (
        "jsonschema",
        r#"{ version = "0.61.2", default-features = false }"#,
        true,
    ),
    ("regress", r#""0.12""#, true),
    (
        "reqwest",
        r#"{ version = "0.13.5", default-features = false, features = ["json", "query", "charset", "http2"] }"#,
        true,
    ),
    (
        "serde",
        r#"{ version = "1", features = ["derive"] }"#,
        false,
    ),
    ("serde_json", r#"{ version = "1" }"#, false),
    (
        "tokio",
        r#"{ version = "1.54", default-features = false, features = ["time"] }"#,
        true,
    ),
    (
        "tracing",
        r#"{ version = "0.1", default-features = false, features = ["std"] }"#,
        true,
    ),
];

const DEV_DEPENDENCIES: &[(&str, &str)] = &[(
    "tokio",
    r#"{ version = "1.54", features = ["rt-multi-thread", "macros", "net", "time", "io-util"] }"#,
)];

/// `(name, requirement)` with `optional = true` folded into an inline table.
fn line(name: &str, req: &str, optional: bool) -> String {
    if !optional {
        return format!("{name} = {req}\n");
    }
    match req.strip_suffix('}') {
        Some(table) => format!("{name} = {}, optional = true }}\n", table.trim_end()),
        None => format!("{name} = {{ version = {req}, optional = true }}\n"),
    }
}

/// `examples`: names of the examples under `examples/` (they need the client); `tests`:
/// names of the integration tests under `tests/` (they need the testkit).
pub(crate) fn emit(provenance: &str, examples: &[String], tests: &[String]) -> String {
    let mut out = header("#", provenance);
    out.push_str(&format!(
        "[package]\n\
         name = \"{PACKAGE_NAME}\"\n\
         version = \"{VERSION}\"\n\
         description = \"The OpenWOP v2 SDK for Rust: an async client with timeouts, retries, paging and resumable event streams, plus models, validators, error and dispatch tables, generated from the OpenWOP spec corpus\"\n\
         edition = \"2024\"\n\
         rust-version = \"1.90\"\n\
         license = \"Apache-2.0\"\n\
         readme = \"README.md\"\n\
         documentation = \"https://docs.rs/{PACKAGE_NAME}\"\n\
         keywords = [\"openwop\", \"workflow\", \"a2a\", \"mcp\", \"sdk\"]\n\
         categories = [\"api-bindings\", \"web-programming::http-client\"]\n\
         include = [\"src/**\", \"examples/**\", \"tests/**\", \"README.md\", \"CHANGELOG.md\", \"LICENSE\"]\n\
         \n\
         [lib]\n\
         name = \"{LIB_NAME}\"\n\
         \n\
         [package.metadata.docs.rs]\n\
         features = [\"client\", \"rustls\", \"validators\", \"tracing\", \"testkit\"]\n\
         \n\
         [features]\n\
         default = [\"client\", \"rustls\", \"validators\", \"models\"]\n\
         models = [\"dep:regress\"]\n\
         client = [\"models\", \"dep:reqwest\", \"dep:futures-core\", \"dep:tokio\", \"dep:getrandom\", \"dep:httpdate\"]\n\
         rustls = [\"client\", \"reqwest/rustls\"]\n\
         native-tls = [\"client\", \"reqwest/native-tls\"]\n\
         validators = [\"dep:jsonschema\"]\n\
         tracing = [\"client\", \"dep:tracing\"]\n\
         testkit = [\"client\", \"tokio/net\", \"tokio/io-util\", \"tokio/rt\", \"tokio/sync\", \"tokio/macros\"]\n\
         \n\
         [dependencies]\n",
    ));
    for (name, req, optional) in DEPENDENCIES {
        out.push_str(&line(name, req, *optional));
    }
    out.push_str("\n[dev-dependencies]\n");
    for (name, req) in DEV_DEPENDENCIES {
        out.push_str(&line(name, req, false));
    }
    for example in examples {
        out.push_str(&format!(
            "\n[[example]]\nname = \"{example}\"\nrequired-features = [\"client\"]\n"
        ));
    }
    for test in tests {
        out.push_str(&format!(
            "\n[[test]]\nname = \"{test}\"\nrequired-features = [\"testkit\"]\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(req: &str) -> String {
        let req = req.trim();
        if let Some(plain) = req.strip_prefix('"') {
            return plain.trim_end_matches('"').to_owned();
        }
        req.split("version = \"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_default()
            .to_owned()
    }

    /// The generated crate resolves to the versions the workspace locks.
    #[test]
    fn dependency_versions_match_the_workspace() {
        let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
        let Ok(text) = std::fs::read_to_string(manifest) else {
            return; // Built outside the workspace: nothing to compare against.
        };
        let all = DEPENDENCIES
            .iter()
            .map(|(n, r, _)| (*n, *r))
            .chain(DEV_DEPENDENCIES.iter().copied());
        for (name, req) in all {
            let workspace = text
                .lines()
                .find_map(|l| l.trim().strip_prefix(&format!("{name} = ")))
                .unwrap_or_else(|| panic!("workspace Cargo.toml has no `{name}` line"));
            assert_eq!(version(workspace), version(req), "{name}");
        }
    }

    #[test]
    fn optional_folds_into_the_table() {
        assert_eq!(
            line("a", r#"{ version = "1" }"#, true),
            "a = { version = \"1\", optional = true }\n"
        );
        assert_eq!(
            line("b", r#""2""#, true),
            "b = { version = \"2\", optional = true }\n"
        );
    }
}
