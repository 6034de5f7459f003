//! The persisted A2A side of a task: its contextId and the A2A messages exchanged on it.
//!
//! The run itself (status, outputs, interrupts) stays in the run store and is only ever
//! read through `ops`; this table holds what A2A adds and OpenWOP has no field for. It
//! lives in its own SQLite file so the A2A edge needs nothing from the store's schema.

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS a2a_tasks (
    run_id TEXT PRIMARY KEY,
    context_id TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS a2a_messages (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
"#;

#[derive(Debug, thiserror::Error)]
pub enum TaskStoreError {
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
    conn: Arc<Mutex<Connection>>,
}

impl TaskStore {
    pub fn open(path: &Path) -> Result<TaskStore, TaskStoreError> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.execute_batch(SCHEMA)?;
        Ok(TaskStore {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// A store that lives as long as the process; for tests and a host without a data dir.
    pub fn in_memory() -> Result<TaskStore, TaskStoreError> {
        let conn = Connection::open_in_memory()?;
        conn.execute_batch(SCHEMA)?;
        Ok(TaskStore {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

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
        let (run_id, context_id) = (run_id.to_owned(), context_id.to_owned());
        self.with(move |c| {
            c.execute(
                "INSERT OR IGNORE INTO a2a_tasks (run_id, context_id) VALUES (?1, ?2)",
                params![run_id, context_id],
            )?;
            Ok(c.query_row(
                "SELECT context_id FROM a2a_tasks WHERE run_id = ?1",
                params![run_id],
                |r| r.get(0),
            )?)
        })
        .await
    }

    pub async fn context_of(&self, run_id: &str) -> Result<Option<String>, TaskStoreError> {
        let run_id = run_id.to_owned();
        self.with(move |c| {
            Ok(c.query_row(
                "SELECT context_id FROM a2a_tasks WHERE run_id = ?1",
                params![run_id],
                |r| r.get(0),
            )
            .optional()?)
        })
        .await
    }

    /// Appends a message to the task's history unless one with the same messageId is
    /// already there (a replayed SendMessage must not grow the history).
    pub async fn append_message(
        &self,
        run_id: &str,
        message: &Value,
    ) -> Result<(), TaskStoreError> {
        let run_id = run_id.to_owned();
        let message = message.clone();
        self.with(move |c| {
            let message_id = message.get("messageId").and_then(Value::as_str).unwrap_or_default().to_owned();
            let mut existing = c.prepare("SELECT message FROM a2a_messages WHERE run_id = ?1")?;
            let stored: Vec<String> = existing.query_map(params![run_id], |r| r.get(0))?.collect::<Result<_, _>>()?;
            for text in &stored {
                let m: Value = serde_json::from_str(text)?;
                if !message_id.is_empty() && m.get("messageId").and_then(Value::as_str) == Some(message_id.as_str()) {
                    return Ok(());
                }
            }
            c.execute(
                "INSERT INTO a2a_messages (run_id, seq, message) VALUES (?1, (SELECT COALESCE(MAX(seq), -1) + 1 FROM a2a_messages WHERE run_id = ?1), ?2)",
                params![run_id, serde_json::to_string(&message)?],
            )?;
            Ok(())
        })
        .await
    }

    /// The task's messages, oldest first.
    pub async fn history(&self, run_id: &str) -> Result<Vec<Value>, TaskStoreError> {
        let run_id = run_id.to_owned();
        self.with(move |c| {
            let mut stmt =
                c.prepare("SELECT message FROM a2a_messages WHERE run_id = ?1 ORDER BY seq")?;
            let rows: Vec<String> = stmt
                .query_map(params![run_id], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            rows.iter()
                .map(|t| serde_json::from_str(t).map_err(TaskStoreError::from))
                .collect()
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn context_binds_once_and_history_dedupes_by_message_id() {
        let store = TaskStore::in_memory().expect("store");
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
        TaskStore::open(&path)
            .expect("open")
            .bind_context("t/r", "ctx")
            .await
            .expect("bind");
        assert_eq!(
            TaskStore::open(&path)
                .expect("reopen")
                .context_of("t/r")
                .await
                .expect("read")
                .as_deref(),
            Some("ctx")
        );
    }
}
