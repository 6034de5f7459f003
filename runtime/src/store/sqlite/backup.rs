//! `openwop backup`: a consistent copy of a live SQLite data dir.
//!
//! The database goes through SQLite's online backup API in one step: the copy runs inside
//! one read transaction of the source, so it is the database as of one commit, and in WAL
//! mode the host keeps writing meanwhile (a reader never blocks the writer). An incremental
//! backup would restart whenever another process commits, which under steady load never
//! finishes. A plain file copy of a WAL database can tear between the file and its `-wal`.
//! The data dir's other files (the dev key, the agent routing secret, …) are small and
//! written once; they are copied as they are, with their permissions.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use super::FILE;
use super::dir_lock::LOCK_FILE;

/// What a backup wrote.
#[derive(Debug)]
pub struct Written {
    /// Bytes of the database copy.
    pub database_bytes: u64,
    /// The other files copied beside it.
    pub files: Vec<PathBuf>,
}

/// Copies the data dir `source` into `dest`, which must not exist or be an empty directory.
pub fn backup(source: &Path, dest: &Path) -> Result<Written, String> {
    let db = source.join(FILE);
    if !db.is_file() {
        return Err(format!(
            "{} has no {FILE}: not an openwop SQLite data dir",
            source.display()
        ));
    }
    match std::fs::read_dir(dest) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(format!(
                    "{} is not empty; back up into a new directory",
                    dest.display()
                ));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dest)
                .map_err(|e| format!("cannot create {}: {e}", dest.display()))?;
        }
        Err(e) => return Err(format!("cannot read {}: {e}", dest.display())),
    }
    // Read-only on the source: a backup never writes to the live database (no migration,
    // no checkpoint of its own). The host's data-dir lock is not taken: it is what keeps a
    // second *host* out, and the backup is a reader.
    let from = Connection::open_with_flags(
        &db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| format!("cannot open {}: {e}", db.display()))?;
    // The host's writer may hold the write lock for a moment; wait for it rather than fail.
    from.busy_timeout(std::time::Duration::from_secs(30))
        .map_err(|e| e.to_string())?;
    let target = dest.join(FILE);
    let mut to = Connection::open(&target)
        .map_err(|e| format!("cannot create {}: {e}", target.display()))?;
    {
        let copy = rusqlite::backup::Backup::new(&from, &mut to)
            .map_err(|e| format!("cannot start the backup: {e}"))?;
        // -1: every page in one step, one read transaction (see the module comment).
        loop {
            match copy.step(-1) {
                Ok(rusqlite::backup::StepResult::Done) => break,
                Ok(rusqlite::backup::StepResult::Busy | rusqlite::backup::StepResult::Locked) => {
                    std::thread::sleep(std::time::Duration::from_millis(50))
                }
                Ok(rusqlite::backup::StepResult::More) => {}
                Ok(_) => {}
                Err(e) => return Err(format!("the backup failed: {e}")),
            }
        }
    }
    // The copy is a standalone file: fold the copy's journal in so one file is the backup.
    to.pragma_update(None, "journal_mode", "DELETE")
        .map_err(|e| format!("cannot finish {}: {e}", target.display()))?;
    drop(to);
    let mut files = Vec::new();
    let entries =
        std::fs::read_dir(source).map_err(|e| format!("cannot read {}: {e}", source.display()))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name_text = name.to_string_lossy();
        let is_database = name_text == FILE || name_text.starts_with(&format!("{FILE}-"));
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if is_database || name_text == LOCK_FILE || !is_file {
            continue;
        }
        let to = dest.join(&name);
        std::fs::copy(entry.path(), &to)
            .map_err(|e| format!("cannot copy {}: {e}", entry.path().display()))?;
        files.push(to);
    }
    files.sort();
    let database_bytes = std::fs::metadata(&target).map(|m| m.len()).unwrap_or(0);
    Ok(Written {
        database_bytes,
        files,
    })
}
