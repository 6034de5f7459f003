//! Secrets the host keeps in its data dir (the dev API key, the agent routing secret):
//! written once, readable by their owner only.

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
