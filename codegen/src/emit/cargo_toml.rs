//! The generated crate's `Cargo.toml`. Dependency versions are spelled out (no
//! `workspace = true`) so a crate written with `--out` elsewhere builds on its own; a test
//! keeps each version equal to the workspace's line for that crate.
//!
//! Features: `client` (reqwest without TLS, futures-core, tokio's timer), `rustls` (the
//! default TLS: reqwest's `rustls`, aws-lc-rs provider and the platform verifier),
//! `native-tls` (OpenSSL on Linux), `validators` (jsonschema). Models, errors, dispatch and
//! schemas need only serde, serde_json and regress.

use crate::format::header;

/// `(name, requirement, optional)`; the requirement's `version` matches the workspace's.
pub(crate) const DEPENDENCIES: &[(&str, &str, bool)] = &[
    (
        "futures-core",
        r#"{ version = "0.3", default-features = false }"#,
        true,
    ),
    (
        "jsonschema",
        r#"{ version = "0.61.2", default-features = false }"#,
        true,
    ),
    ("regress", r#""0.12""#, false),
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
    (
        "serde_json",
        r#"{ version = "1", features = ["preserve_order"] }"#,
        false,
    ),
    (
        "tokio",
        r#"{ version = "1.54", default-features = false, features = ["time"] }"#,
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

/// `examples`: names of the examples under `examples/` (they need the client).
pub(crate) fn emit(provenance: &str, examples: &[String]) -> String {
    let mut out = header("#", provenance);
    out.push_str(
        "[package]\n\
         name = \"openwop-generated\"\n\
         version = \"0.1.0\"\n\
         description = \"OpenWOP v2 models, validators, error and dispatch tables and an async client, generated from the OpenWOP spec corpus\"\n\
         edition = \"2024\"\n\
         rust-version = \"1.90\"\n\
         license = \"Apache-2.0\"\n\
         readme = \"README.md\"\n\
         keywords = [\"openwop\", \"workflow\", \"a2a\", \"mcp\", \"sdk\"]\n\
         categories = [\"api-bindings\", \"web-programming::http-client\"]\n\
         publish = false\n\
         \n\
         [features]\n\
         default = [\"client\", \"rustls\", \"validators\"]\n\
         client = [\"dep:reqwest\", \"dep:futures-core\", \"dep:tokio\"]\n\
         rustls = [\"client\", \"reqwest/rustls\"]\n\
         native-tls = [\"client\", \"reqwest/native-tls\"]\n\
         validators = [\"dep:jsonschema\"]\n\
         \n\
         [dependencies]\n",
    );
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
