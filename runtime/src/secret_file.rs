//! Secrets the host keeps in its data dir (the dev API key, the agent routing secret):
//! written once, readable by their owner only. And secrets an operator hands the host
//! outside the command line (where `ps` shows them): api keys in a file or in
//! `OPENWOP_API_KEYS`, the database URL in a file.

use std::path::Path;

/// Creates the file only if absent (two hosts starting on one dir cannot both write), and
/// readable by its owner only.
pub fn write_new(path: &Path, contents: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(contents.as_bytes())?;
    file.sync_all()
}

/// Narrows an existing secret file to its owner (files written by older releases were
/// world-readable). A failure is logged; the host still starts.
pub fn restrict(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let Ok(meta) = std::fs::metadata(path) else {
            return;
        };
        if meta.permissions().mode() & 0o077 != 0
            && let Err(e) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        {
            tracing::warn!(path = %path.display(), error = %e, "cannot make a secret file private");
        }
    }
}

/// The environment variable holding api keys: `TENANT:KEY` entries separated by commas,
/// whitespace or newlines.
pub const API_KEYS_ENV: &str = "OPENWOP_API_KEYS";

/// `TENANT:KEY` entries of a list: separated by commas, whitespace or newlines; blank
/// entries and lines starting with `#` are skipped.
pub fn key_specs(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .flat_map(|l| l.split(|c: char| c == ',' || c.is_whitespace()))
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Reads a secret file (api keys, a database URL), warning when others may read it.
pub fn read_secret(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        if let Ok(meta) = std::fs::metadata(path)
            && meta.permissions().mode() & 0o077 != 0
        {
            tracing::warn!(path = %path.display(), "a secret file is readable by other users; chmod 600 it");
        }
    }
    Ok(text)
}

/// Every api key spec given outside `--api-key`: the file's, then the environment's.
pub fn outside_key_specs(file: Option<&Path>) -> Result<Vec<String>, String> {
    let mut specs = Vec::new();
    if let Some(path) = file {
        let found = key_specs(&read_secret(path)?);
        if found.is_empty() {
            return Err(format!("{} holds no TENANT:KEY entry", path.display()));
        }
        specs.extend(found);
    }
    if let Ok(text) = std::env::var(API_KEYS_ENV) {
        specs.extend(key_specs(&text));
    }
    Ok(specs)
}

#[cfg(test)]
mod list_tests {
    use super::*;

    #[test]
    fn key_lists_split_on_commas_whitespace_and_lines_and_skip_comments() {
        assert_eq!(
            key_specs(
                "# keys
acme:k1, globex:k2

  initech:k3	umbrella:k4
#x:y
"
            ),
            ["acme:k1", "globex:k2", "initech:k3", "umbrella:k4"]
        );
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn secrets_are_owner_only_and_old_ones_are_narrowed() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("new");
        write_new(&new, "s").unwrap();
        assert_eq!(
            std::fs::metadata(&new).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert!(write_new(&new, "again").is_err(), "never overwritten");
        let old = dir.path().join("old");
        std::fs::write(&old, "s").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        restrict(&old);
        assert_eq!(
            std::fs::metadata(&old).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}
