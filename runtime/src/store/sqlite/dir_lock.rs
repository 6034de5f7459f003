//! One host process per SQLite data dir: an exclusive advisory lock (`flock`) on
//! `openwop.lock`, taken before the database is opened, so a second process on the same
//! dir fails at start without migrating, resuming or delivering anything. The kernel
//! drops the lock when the process ends, SIGKILL included, so a restart is never blocked
//! by a stale file.
//!
//! Within one process the lock is shared: a store opened again on the same dir (an
//! embedder's restart, the store suites' second store) reuses it, and it is released when
//! the last store of the dir is dropped.

use super::StoreError;
use std::collections::HashMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read as _, Seek as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// The lock file in the data dir.
pub const LOCK_FILE: &str = "openwop.lock";

/// Held for as long as a store of the dir is open in this process.
pub struct DirLock {
    _file: File,
}

fn held() -> &'static Mutex<HashMap<PathBuf, Weak<DirLock>>> {
    static HELD: OnceLock<Mutex<HashMap<PathBuf, Weak<DirLock>>>> = OnceLock::new();
    HELD.get_or_init(Default::default)
}

/// Takes (or, in this process, shares) the exclusive lock on `dir`, which must exist.
pub fn acquire(dir: &Path) -> Result<Arc<DirLock>, StoreError> {
    let key = dir.canonicalize().map_err(|e| {
        StoreError::Database(format!("cannot resolve data dir {}: {e}", dir.display()))
    })?;
    let mut table = held()
        .lock()
        .map_err(|_| StoreError::Database("the data dir lock table is poisoned".into()))?;
    if let Some(lock) = table.get(&key).and_then(Weak::upgrade) {
        return Ok(lock);
    }
    let path = key.join(LOCK_FILE);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| StoreError::Database(format!("cannot open {}: {e}", path.display())))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            let who = if holder.is_empty() {
                String::new()
            } else {
                format!(" (pid {holder})")
            };
            return Err(StoreError::DataDirInUse(format!(
                "the data dir {} is in use by another openwop process{who}; SQLite serves one \
                 host process per data dir: stop that one, use another --data-dir, or share \
                 runs between replicas with --database postgres://...",
                key.display()
            )));
        }
        Err(TryLockError::Error(e)) => {
            return Err(StoreError::Database(format!(
                "cannot lock {}: {e}",
                path.display()
            )));
        }
    }
    // Who holds it, for the next process's message; the lock, not this text, decides.
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = write!(file, "{}", std::process::id());
    let _ = file.flush();
    let lock = Arc::new(DirLock { _file: file });
    table.retain(|_, weak| weak.strong_count() > 0);
    table.insert(key, Arc::downgrade(&lock));
    Ok(lock)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dir_locked_by_another_open_file_is_refused_and_freed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let ours = acquire(dir.path()).expect("first lock");
        // The same process shares its lock.
        let again = acquire(dir.path()).expect("shared in process");
        assert!(Arc::ptr_eq(&ours, &again));
        drop((ours, again));
        // Another holder (as another process would be: its own open file description).
        let other = File::open(dir.path().join(LOCK_FILE)).unwrap();
        other.try_lock().expect("free once every store dropped it");
        let err = match acquire(dir.path()) {
            Err(StoreError::DataDirInUse(m)) => m,
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("a locked dir was opened"),
        };
        assert!(err.contains("in use by another openwop process"), "{err}");
        drop(other);
        acquire(dir.path()).expect("free again");
    }
}
