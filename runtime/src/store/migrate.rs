//! The one schema history both backends apply: numbered migrations in `migrations/`,
//! recorded in `schema_migrations` on SQLite and on PostgreSQL alike.
//!
//! Every file is written in PostgreSQL's dialect and kept to SQL both engines read.
//! Migrations 1-5 are idempotent (`IF NOT EXISTS`), so a database made before this history
//! existed can be adopted by applying them all (see `sqlite::legacy`); later ones run once,
//! as the history records ([`IDEMPOTENT_THROUGH`]). SQLite reads a
//! file after [`to_sqlite`], which rewrites the handful of spellings that differ; the same
//! function turns the shared statements of `sql.rs` into SQLite's.

/// One migration: applied once, in order, and recorded with its version.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Migration {
    pub version: i64,
    pub name: &'static str,
    pub sql: &'static str,
    /// SQLite's own text, where the migration cannot be written in SQL both engines read
    /// (triggers); `None`: [`to_sqlite`] of [`Migration::sql`].
    pub sqlite: Option<&'static str>,
}

impl Migration {
    /// The text SQLite applies.
    pub(crate) fn sqlite_sql(&self) -> String {
        match self.sqlite {
            Some(own) => own.to_owned(),
            None => to_sqlite(self.sql),
        }
    }
}

/// Every migration, oldest first. Append only: an applied file is never edited in a way
/// that changes what it creates.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "init",
        sql: include_str!("migrations/0001_init.sql"),
        sqlite: None,
    },
    Migration {
        version: 2,
        name: "claims_and_a2a",
        sql: include_str!("migrations/0002_claims_and_a2a.sql"),
        sqlite: None,
    },
    Migration {
        version: 3,
        name: "a2a_push",
        sql: include_str!("migrations/0003_a2a_push.sql"),
        sqlite: None,
    },
    Migration {
        version: 4,
        name: "mcp_sessions",
        sql: include_str!("migrations/0004_mcp_sessions.sql"),
        sqlite: None,
    },
    Migration {
        version: 5,
        name: "run_listings",
        sql: include_str!("migrations/0005_run_listings.sql"),
        sqlite: None,
    },
    Migration {
        version: 6,
        name: "run_annotations",
        sql: include_str!("migrations/0006_run_annotations.sql"),
        sqlite: None,
    },
    Migration {
        version: 7,
        name: "negotiation_payload",
        sql: include_str!("migrations/0007_negotiation_payload.sql"),
        sqlite: None,
    },
    Migration {
        version: 8,
        name: "lean_write_indexes",
        sql: include_str!("migrations/0008_lean_write_indexes.sql"),
        sqlite: None,
    },
    Migration {
        version: 9,
        name: "filtered_listings",
        sql: include_str!("migrations/0009_filtered_listings.sql"),
        sqlite: None,
    },
    Migration {
        version: 10,
        name: "state_listings_by_update",
        sql: include_str!("migrations/0010_state_listings_by_update.sql"),
        sqlite: None,
    },
    Migration {
        version: 11,
        name: "run_counts",
        sql: include_str!("migrations/0011_run_counts.sql"),
        sqlite: Some(include_str!("migrations/0011_run_counts.sqlite.sql")),
    },
];

/// The newest migration a database made before the history may already hold the
/// objects of: these are idempotent (`IF NOT EXISTS`), so adoption can apply them all.
/// Later ones (`ALTER TABLE … ADD COLUMN`, which SQLite cannot make conditional) run
/// exactly once, as the history records.
#[allow(dead_code)] // read by the tests; at run time the history is what keeps it true
pub(crate) const IDEMPOTENT_THROUGH: i64 = 5;

/// The bookkeeping table, the same on both backends.
pub(crate) const CREATE_HISTORY: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_ms BIGINT NOT NULL)";
pub(crate) const APPLIED: &str = "SELECT version FROM schema_migrations ORDER BY version";
pub(crate) const RECORD: &str =
    "INSERT INTO schema_migrations (version, name, applied_ms) VALUES ($1, $2, $3)";

/// The SQLite spelling of SQL written for PostgreSQL. The whole difference, applied in
/// this order (nothing else is rewritten, so shared SQL sticks to what both engines read):
///
/// | PostgreSQL | SQLite | why |
/// | --- | --- | --- |
/// | `$N` | `?N` | numbered parameters (SQLite would number `$N` by first appearance) |
/// | `BIGSERIAL PRIMARY KEY` | `INTEGER PRIMARY KEY AUTOINCREMENT` | an ever-growing key (SQLite's rowid alias) |
/// | `BYTEA` | `BLOB` | bytes |
/// | `COLLATE "C"` | `COLLATE BINARY` | byte-order comparison of text |
/// | `strpos(` | `instr(` | position of a substring (same argument order) |
/// | `GREATEST(` | `max(` | the larger of two values |
pub(crate) fn to_sqlite(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('?');
        } else {
            out.push(c);
        }
    }
    for (pg, lite) in [
        ("BIGSERIAL PRIMARY KEY", "INTEGER PRIMARY KEY AUTOINCREMENT"),
        ("BYTEA", "BLOB"),
        ("COLLATE \"C\"", "COLLATE BINARY"),
        ("strpos(", "instr("),
        ("GREATEST(", "max("),
    ] {
        if out.contains(pg) {
            out = out.replace(pg, lite);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_contiguous_from_one() {
        let versions: Vec<i64> = MIGRATIONS.iter().map(|m| m.version).collect();
        assert_eq!(versions, (1..=MIGRATIONS.len() as i64).collect::<Vec<_>>());
    }

    #[test]
    fn sqlite_spelling_rewrites_only_the_listed_forms() {
        assert_eq!(
            to_sqlite("SELECT strpos($12, x) FROM t WHERE a = $1 AND b = '$' COLLATE \"C\""),
            "SELECT instr(?12, x) FROM t WHERE a = ?1 AND b = '$' COLLATE BINARY"
        );
        assert_eq!(
            to_sqlite("seq BIGSERIAL PRIMARY KEY, v BYTEA, m = GREATEST(a, $2)"),
            "seq INTEGER PRIMARY KEY AUTOINCREMENT, v BLOB, m = max(a, ?2)"
        );
    }

    #[test]
    fn migration_11_counts_the_runs_already_stored_on_sqlite() {
        let conn = rusqlite::Connection::open_in_memory().expect("open");
        for m in MIGRATIONS.iter().filter(|m| m.version < 11) {
            conn.execute_batch(&m.sqlite_sql()).expect("old migration");
        }
        conn.execute_batch(
            "INSERT INTO runs (run_id, tenant, workflow_id, status, owner, transport, inputs, state, node_index, created_ms, updated_ms, last_sequence) VALUES \
             ('t/a', 't', 'w', 'running', '{}', 'rest', '{}', '{}', 0, 0, 0, 0), \
             ('t/b', 't', 'w', 'completed', '{}', 'rest', '{}', '{}', 0, 0, 0, 0), \
             ('u/a', 'u', 'w', 'completed', '{}', 'rest', '{}', '{}', 0, 0, 0, 0)",
        )
        .expect("runs");
        let eleven = MIGRATIONS.iter().find(|m| m.version == 11).expect("11");
        conn.execute_batch(&eleven.sqlite_sql())
            .expect("migration 11");
        conn.execute_batch("UPDATE runs SET status = 'failed' WHERE run_id = 't/a'")
            .expect("update");
        let counts: Vec<(String, String, i64)> = conn
            .prepare("SELECT tenant, status, SUM(n) FROM run_counts GROUP BY tenant, status HAVING SUM(n) <> 0 ORDER BY tenant, status")
            .expect("prepare")
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .expect("query")
            .map(|r| r.expect("row"))
            .collect();
        let want = [
            ("t", "completed", 1),
            ("t", "failed", 1),
            ("u", "completed", 1),
        ];
        assert_eq!(
            counts,
            want.map(|(t, s, n)| (t.to_owned(), s.to_owned(), n))
        );
    }

    #[test]
    fn every_migration_reads_on_sqlite_and_the_adoptable_ones_apply_twice() {
        let conn = rusqlite::Connection::open_in_memory().expect("open");
        for m in MIGRATIONS {
            conn.execute_batch(&m.sqlite_sql())
                .unwrap_or_else(|e| panic!("migration {} on SQLite: {e}", m.version));
        }
        for m in MIGRATIONS
            .iter()
            .filter(|m| m.version <= IDEMPOTENT_THROUGH)
        {
            conn.execute_batch(&m.sqlite_sql())
                .unwrap_or_else(|e| panic!("migration {} again on SQLite: {e}", m.version));
        }
    }
}
