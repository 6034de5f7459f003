//! The A2A side file of an older release, taken in once.
//!
//! Before the interop store, A2A push configurations, their secrets, the outbox and dead
//! letters lived in `a2a.sqlite` beside the runs' file. At the first start on such a data
//! dir their rows are copied into the main file (one transaction; a row already there is
//! kept), the secrets are then erased from the old file, and the file is renamed
//! `a2a.sqlite.imported`, so it is never read again and no token or credential is left
//! outside the one table that holds them. Copying again after a crash between these
//! steps changes nothing (every row is keyed).

use std::path::{Path, PathBuf};

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, TransactionBehavior, params_from_iter};

use crate::store::StoreError;

/// The side file an older release kept in the data dir.
pub const OLD_FILE: &str = "a2a.sqlite";
/// What it is renamed to once its rows are in the main file.
pub const IMPORTED_FILE: &str = "a2a.sqlite.imported";

/// The tables taken over and the columns copied, as the old file had them; `last_seq`
/// arrived late in that file, so a file without it copies NULL (no observation yet).
const TABLES: &[(&str, &[&str])] = &[
    ("push_secrets", &["secret_ref", "token", "credentials"]),
    (
        "push_configs",
        &[
            "run_id",
            "config_id",
            "url",
            "scheme",
            "secret_ref",
            "last_state",
            "last_seq",
            "closed",
            "created_ms",
        ],
    ),
    (
        "push_outbox",
        &[
            "delivery_id",
            "run_id",
            "config_id",
            "state",
            "body",
            "attempts",
            "next_ms",
            "last",
        ],
    ),
    (
        "push_dead_letters",
        &[
            "delivery_id",
            "run_id",
            "config_id",
            "state",
            "attempts",
            "reason",
            "at_ms",
        ],
    ),
];

fn io(path: &Path, what: &str, e: std::io::Error) -> StoreError {
    StoreError::Database(format!("cannot {what} {}: {e}", path.display()))
}

fn table_exists(conn: &Connection, table: &str) -> Result<bool, StoreError> {
    Ok(conn
        .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1")?
        .exists([table])?)
}

/// The rows of one old table, in their stored order.
fn rows_of(
    old: &Connection,
    table: &str,
    columns: &[&str],
) -> Result<Vec<Vec<SqlValue>>, StoreError> {
    if !table_exists(old, table)? {
        return Ok(Vec::new());
    }
    let mut select = Vec::with_capacity(columns.len());
    for c in columns {
        if super::schema::column_exists(old, table, c)? {
            select.push((*c).to_owned());
        } else {
            select.push(format!("NULL AS {c}"));
        }
    }
    let order = if table == "push_outbox" {
        " ORDER BY seq"
    } else {
        ""
    };
    let mut stmt = old.prepare(&format!("SELECT {} FROM {table}{order}", select.join(", ")))?;
    let mut rows = stmt.query([])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let mut values = Vec::with_capacity(columns.len());
        for i in 0..columns.len() {
            values.push(r.get::<_, SqlValue>(i)?);
        }
        out.push(values);
    }
    Ok(out)
}

/// Copies the push state of `dir/a2a.sqlite` into `main` and retires the old file.
pub(super) fn import_push_file(dir: &Path, main: &mut Connection) -> Result<(), StoreError> {
    let path = dir.join(OLD_FILE);
    if !path.exists() {
        return Ok(());
    }
    let old = Connection::open(&path)?;
    old.busy_timeout(std::time::Duration::from_secs(5))?;
    let mut copied = Vec::new();
    let tx = main.transaction_with_behavior(TransactionBehavior::Immediate)?;
    for (table, columns) in TABLES {
        let rows = rows_of(&old, table, columns)?;
        let placeholders: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
        let mut insert = tx.prepare(&format!(
            "INSERT OR IGNORE INTO {table} ({}) VALUES ({})",
            columns.join(", "),
            placeholders.join(", ")
        ))?;
        let mut n = 0;
        for row in &rows {
            n += insert.execute(params_from_iter(row.iter()))?;
        }
        copied.push((*table, n));
    }
    tx.commit()?;
    // The secrets now live in the main file only.
    old.pragma_update(None, "secure_delete", "ON")?;
    if table_exists(&old, "push_secrets")? {
        old.execute("DELETE FROM push_secrets", [])?;
    }
    // Back to a rollback journal: the WAL is folded in and removed, so the renamed file
    // is complete on its own.
    old.pragma_update(None, "journal_mode", "DELETE")?;
    drop(old);
    let target = dir.join(IMPORTED_FILE);
    std::fs::rename(&path, &target).map_err(|e| io(&path, "rename", e))?;
    for suffix in ["-wal", "-shm"] {
        let stale = PathBuf::from(format!("{}{suffix}", path.display()));
        if stale.exists() {
            std::fs::remove_file(&stale).map_err(|e| io(&stale, "remove", e))?;
        }
    }
    tracing::info!(
        from = %path.display(),
        renamed_to = %target.display(),
        secrets = copied[0].1,
        configs = copied[1].1,
        outbox = copied[2].1,
        dead_letters = copied[3].1,
        "took the A2A push state of an older release into the main database"
    );
    Ok(())
}
