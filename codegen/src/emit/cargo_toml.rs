//! The generated crate's `Cargo.toml`. Dependency versions are spelled out (no
//! `workspace = true`) so a crate written with `--out` elsewhere builds on its own; a test
//! keeps them equal to the workspace's lines.

use crate::format::header;

/// `(name, requirement)` exactly as the workspace's `[workspace.dependencies]` states them.
pub(crate) const DEPENDENCIES: &[(&str, &str)] = &[
    (
        "jsonschema",
        r#"{ version = "0.61.2", default-features = false }"#,
    ),
    ("regress", r#""0.12""#),
    (
        "reqwest",
        r#"{ version = "0.13.5", default-features = false, features = ["json", "query", "stream", "native-tls", "charset", "http2"] }"#,
    ),
    ("serde", r#"{ version = "1", features = ["derive"] }"#),
    (
        "serde_json",
        r#"{ version = "1", features = ["preserve_order"] }"#,
    ),
];

pub(crate) fn emit(provenance: &str) -> String {
    let mut out = header("#", provenance);
    out.push_str(
        "[package]\n\
         name = \"openwop-generated\"\n\
         version = \"0.1.0\"\n\
         description = \"Models, validators, error and dispatch tables and a client, generated from the OpenWOP spec corpus\"\n\
         edition = \"2024\"\n\
         rust-version = \"1.90\"\n\
         license = \"Apache-2.0\"\n\
         publish = false\n\
         \n\
         [dependencies]\n",
    );
    for (name, req) in DEPENDENCIES {
        out.push_str(&format!("{name} = {req}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependency_lines_match_the_workspace() {
        let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
        let Ok(text) = std::fs::read_to_string(manifest) else {
            return; // Built outside the workspace: nothing to compare against.
        };
        for (name, req) in DEPENDENCIES {
            let line = format!("{name} = {req}");
            assert!(
                text.lines().any(|l| l.trim() == line),
                "workspace Cargo.toml has no line `{line}`"
            );
        }
    }
}
