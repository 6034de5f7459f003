//! The SQLite file's schema: the shared migrations (`store::migrate`), applied in one
//! transaction at open and recorded in `schema_migrations`, as PostgreSQL records them.
//!
//! A file made before the history existed (no `schema_migrations`, but a `runs` table:
//! the release that created its tables with one `CREATE TABLE IF NOT EXISTS` script) is
//! adopted: its `runs` table gains the lease columns the shared schema has (SQLite never
//! uses them: one process drives every run), then every migration is applied — each only
//! creates what is missing — and recorded. No row is touched.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::store::StoreError;
use crate::store::migrate::{APPLIED, CREATE_HISTORY, MIGRATIONS, RECORD, to_sqlite};

fn table_exists(conn: &Connection, table: &str) -> Result<bool, StoreError> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

pub(super) fn column_exists(
    conn: &Connection,
    table: &str,
    column: &str,
) -> Result<bool, StoreError> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2",
            params![table, column],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// Brings the file up to the newest migration.
pub(super) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let legacy = !table_exists(&tx, "schema_migrations")? && table_exists(&tx, "runs")?;
    tx.execute_batch(CREATE_HISTORY)?;
    if legacy && !column_exists(&tx, "runs", "lease_owner")? {
        tx.execute_batch(
            "ALTER TABLE runs ADD COLUMN lease_owner TEXT;
             ALTER TABLE runs ADD COLUMN lease_expires_ms BIGINT;",
        )?;
    }
    let applied: Vec<i64> = {
        let mut stmt = tx.prepare(APPLIED)?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        rows.collect::<Result<_, _>>()?
    };
    for m in MIGRATIONS {
        if applied.contains(&m.version) {
            continue;
        }
        // Before as well as after: a migration that copies a table can take a while.
        tracing::info!(version = m.version, name = m.name, "applying migration");
        tx.execute_batch(&m.sqlite_sql()).map_err(|e| {
            StoreError::Database(format!("migration {} ({}) failed: {e}", m.version, m.name))
        })?;
        tx.execute(
            &to_sqlite(RECORD),
            params![m.version, m.name, crate::clock::now_ms()],
        )?;
        if legacy {
            tracing::info!(
                version = m.version,
                name = m.name,
                "recorded migration on a data dir made before the migration history"
            );
        } else {
            tracing::info!(version = m.version, name = m.name, "applied migration");
        }
    }
    tx.commit()?;
    Ok(())
}
