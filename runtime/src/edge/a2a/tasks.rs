//! The persisted A2A side of a task: its contextId and the A2A messages exchanged on it.
//!
//! The run itself (status, outputs, interrupts) stays in the run store and is only ever
//! read through `ops`; the contextId binding and the history (what A2A adds and OpenWOP
//! has no field for) are kept by the run store too, so every replica on a shared
//! database sees one binding and one de-duplicated history. The SQLite file here holds
//! only what never needs sharing.

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::Connection;
use serde_json::Value;

use crate::store::{Store, StoreError};

// The context binding and the history moved to the run store (`Store::a2a_*`).
const SCHEMA: &str = "";

#[derive(Debug, thiserror::Error)]
pub enum TaskStoreError {
    #[error("A2A task store: {0}")]
    Store(#[from] StoreError),
    #[error("A2A task store: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("A2A task store: a stored message is not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("A2A task store: the connection lock was poisoned")]
    Poisoned,
    #[error("A2A task store: worker thread failed")]
    Join,
}

/// The side table. Calls run on a blocking thread; there is one connection, as the
/// statements are single-row and short.
#[derive(Clone)]
pub struct TaskStore {
    #[allow(dead_code)] // for A2A-only tables that need no sharing
    conn: Arc<Mutex<Connection>>,
    runs: Arc<dyn Store>,
}

impl TaskStore {
    pub fn open(path: &Path, runs: Arc<dyn Store>) -> Result<TaskStore, TaskStoreError> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.execute_batch(SCHEMA)?;
        Ok(TaskStore {
            conn: Arc::new(Mutex::new(conn)),
            runs,
        })
    }

    /// A store that lives as long as the process; for tests and a host without a data dir.
    pub fn in_memory(runs: Arc<dyn Store>) -> Result<TaskStore, TaskStoreError> {
        let conn = Connection::open_in_memory()?;
        conn.execute_batch(SCHEMA)?;
        Ok(TaskStore {
            conn: Arc::new(Mutex::new(conn)),
            runs,
        })
    }

    #[allow(dead_code)] // for A2A-only tables that need no sharing
    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, TaskStoreError> + Send + 'static,
    ) -> Result<T, TaskStoreError> {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            let guard = conn.lock().map_err(|_| TaskStoreError::Poisoned)?;
            f(&guard)
        })
        .await
        .map_err(|_| TaskStoreError::Join)?
    }

    /// Binds a contextId to a run, once: a second bind keeps the first value and returns it.
    pub async fn bind_context(
        &self,
        run_id: &str,
        context_id: &str,
    ) -> Result<String, TaskStoreError> {
        Ok(self.runs.a2a_bind_context(run_id, context_id).await?)
    }

    pub async fn context_of(&self, run_id: &str) -> Result<Option<String>, TaskStoreError> {
        Ok(self.runs.a2a_context_of(run_id).await?)
    }

    /// Appends a message to the task's history unless one with the same messageId is
    /// already there (a replayed SendMessage must not grow the history), on any replica.
    pub async fn append_message(
        &self,
        run_id: &str,
        message: &Value,
    ) -> Result<(), TaskStoreError> {
        let message_id = message
            .get("messageId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        self.runs
            .a2a_append_message(run_id, message_id, message.clone())
            .await?;
        Ok(())
    }

    /// The task's messages, oldest first.
    pub async fn history(&self, run_id: &str) -> Result<Vec<Value>, TaskStoreError> {
        Ok(self.runs.a2a_history(run_id).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{LocalWakeups, SqliteStore};
    use serde_json::json;

    fn runs(dir: &Path) -> Arc<dyn Store> {
        Arc::new(SqliteStore::open(dir, Arc::new(LocalWakeups::default())).expect("run store"))
    }

    #[tokio::test]
    async fn context_binds_once_and_history_dedupes_by_message_id() {
        let dir = tempfile::tempdir().expect("dir");
        let store = TaskStore::in_memory(runs(dir.path())).expect("store");
        assert_eq!(
            store.bind_context("t/r", "ctx-1").await.expect("bind"),
            "ctx-1"
        );
        assert_eq!(
            store.bind_context("t/r", "ctx-2").await.expect("bind"),
            "ctx-1"
        );
        assert_eq!(
            store.context_of("t/r").await.expect("read").as_deref(),
            Some("ctx-1")
        );
        assert_eq!(store.context_of("t/other").await.expect("read"), None);
        let m1 = json!({"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "a"}]});
        let m2 = json!({"messageId": "m2", "role": "ROLE_USER", "parts": [{"text": "b"}]});
        store.append_message("t/r", &m1).await.expect("append");
        store
            .append_message("t/r", &m1)
            .await
            .expect("append again");
        store.append_message("t/r", &m2).await.expect("append");
        assert_eq!(store.history("t/r").await.expect("history"), vec![m1, m2]);
    }

    #[tokio::test]
    async fn survives_reopening_the_file() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("a2a.sqlite");
        TaskStore::open(&path, runs(dir.path()))
            .expect("open")
            .bind_context("t/r", "ctx")
            .await
            .expect("bind");
        assert_eq!(
            TaskStore::open(&path, runs(dir.path()))
                .expect("reopen")
                .context_of("t/r")
                .await
                .expect("read")
                .as_deref(),
            Some("ctx")
        );
    }
}
