//! Applies the shared migrations (`store/migrations`, see `store::migrate`) at start.
//! Replicas starting together take one advisory lock, so each migration runs exactly once.

use super::StoreError;
use crate::store::migrate::{APPLIED, CREATE_HISTORY, MIGRATIONS, RECORD};

const MIGRATION_LOCK: i64 = 0x6f77_6d69_6772;

pub(super) async fn run(client: &mut deadpool_postgres::Object) -> Result<(), StoreError> {
    let tx = client.transaction().await?;
    tx.query("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    tx.batch_execute(CREATE_HISTORY).await?;
    let applied: Vec<i64> = tx
        .query(APPLIED, &[])
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    for m in MIGRATIONS {
        if applied.contains(&m.version) {
            continue;
        }
        // Before as well as after: a migration that copies a table can take a while.
        tracing::info!(version = m.version, name = m.name, "applying migration");
        tx.batch_execute(m.sql).await.map_err(|e| {
            StoreError::Database(format!(
                "migration {} ({}) failed: {}",
                m.version,
                m.name,
                super::db_error(e)
            ))
        })?;
        tx.execute(RECORD, &[&m.version, &m.name, &crate::clock::now_ms()])
            .await?;
        tracing::info!(version = m.version, name = m.name, "applied migration");
    }
    tx.commit().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::store::PgStore;
    use crate::store::migrate::MIGRATIONS;
    use crate::store::scratch::{ScratchSchema, skip_postgres};

    /// A scratch schema holding the store as the release before migration `version` left
    /// it (every earlier migration applied and recorded), and a client on it.
    async fn store_before(version: i64) -> (ScratchSchema, tokio_postgres::Client) {
        let schema = ScratchSchema::create()
            .await
            .expect("PostgreSQL for the migration test");
        let (client, conn) = tokio_postgres::connect(&schema.url(), tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(conn);
        client
            .batch_execute(crate::store::migrate::CREATE_HISTORY)
            .await
            .expect("history");
        for m in MIGRATIONS.iter().filter(|m| m.version < version) {
            client.batch_execute(m.sql).await.expect("old migration");
            client
                .execute(crate::store::migrate::RECORD, &[&m.version, &m.name, &0i64])
                .await
                .expect("record");
        }
        (schema, client)
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn replicas_starting_together_apply_each_migration_once() {
        if skip_postgres("replicas_starting_together_apply_each_migration_once") {
            return;
        }
        let schema = ScratchSchema::create()
            .await
            .expect("PostgreSQL for the migration test");
        let url = schema.url();
        let starts: Vec<_> = (0..4).map(|_| PgStore::connect(&url)).collect();
        for s in futures::future::join_all(starts).await {
            s.expect("every replica starts");
        }
        // A later start finds everything applied and changes nothing.
        PgStore::connect(&url).await.expect("restart");
        let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(conn);
        let rows = client
            .query(
                "SELECT version FROM schema_migrations ORDER BY version",
                &[],
            )
            .await
            .expect("read");
        let versions: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
        assert_eq!(
            versions,
            MIGRATIONS.iter().map(|m| m.version).collect::<Vec<_>>()
        );
        assert_eq!(versions, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);

        // Migration 7 in PostgreSQL's dialect: a negotiation recorded under the old names
        // reads with today's (`peer`, `negotiated`, null when refused); other types and
        // a quoted look-alike inside a value are left alone.
        let old = [
            (
                "e1",
                "negotiation.decided",
                r#"{"protocol":"a2a","outcome":"accepted","requested":"1.0","version":"1.0","floor":"1.0","peerDigest":"ab","reason":"ok","at":"t"}"#,
            ),
            (
                "e2",
                "negotiation.decided",
                r#"{"protocol":"mcp","outcome":"refused","requested":"\"version\":","floor":"x","peerDigest":"ab","reason":"unsupported","at":"t"}"#,
            ),
            ("e3", "other.event", r#"{"version":"1.0"}"#),
        ];
        for (id, ty, payload) in old {
            client
                .execute(
                    "INSERT INTO host_events (tenant, event_id, type, delivery, payload, ts_ms) VALUES ('t', $1, $2, 'durable', $3, 0)",
                    &[&id, &ty, &payload],
                )
                .await
                .expect("insert");
        }
        let seven = MIGRATIONS.iter().find(|m| m.version == 7).expect("7");
        client.batch_execute(seven.sql).await.expect("migration 7");
        let read = |id: &'static str| {
            let client = &client;
            async move {
                let row = client
                    .query_one(
                        "SELECT payload FROM host_events WHERE event_id = $1",
                        &[&id],
                    )
                    .await
                    .expect("row");
                serde_json::from_str::<serde_json::Value>(&row.get::<_, String>(0)).expect("json")
            }
        };
        let e1 = read("e1").await;
        assert_eq!(
            (&e1["negotiated"], &e1["peer"]),
            (&serde_json::json!("1.0"), &serde_json::json!("ab"))
        );
        assert!(e1.get("version").is_none() && e1.get("peerDigest").is_none());
        let e2 = read("e2").await;
        assert!(
            e2["negotiated"].is_null() && e2.get("negotiated").is_some(),
            "{e2}"
        );
        assert_eq!(e2["requested"], "\"version\":");
        assert_eq!(read("e3").await["version"], "1.0");
    }

    /// Migration 11 counts the runs already stored, per tenant and status, and the store
    /// counts on from there.
    #[tokio::test(flavor = "multi_thread")]
    async fn migration_11_counts_the_runs_already_stored() {
        if skip_postgres("migration_11_counts_the_runs_already_stored") {
            return;
        }
        let (schema, client) = store_before(11).await;
        let url = schema.url();
        for (id, tenant, status) in [
            ("t/a", "t", "running"),
            ("t/b", "t", "completed"),
            ("t/c", "t", "completed"),
            ("u/a", "u", "failed"),
        ] {
            client
                .execute(
                    "INSERT INTO runs (run_id, tenant, workflow_id, status, owner, transport, inputs, state, node_index, created_ms, updated_ms, last_sequence) VALUES ($1, $2, 'w', $3, '{}', 'rest', '{}', '{}', 0, 0, 0, 0)",
                    &[&id, &tenant, &status],
                )
                .await
                .expect("run");
        }
        let stores = crate::store::Stores::of(
            PgStore::connect(&url)
                .await
                .expect("the store applies migration 11"),
        );
        let total = |tenant: &'static str, statuses: Vec<crate::status::RunStatus>| {
            let runs = stores.runs.clone();
            async move {
                let mut q = crate::store::RunQuery::newest_first(tenant, 1);
                q.statuses = statuses;
                q.count_total = true;
                runs.query_runs(q).await.expect("query").total
            }
        };
        assert_eq!(total("t", vec![]).await, Some(3));
        assert_eq!(
            total("t", vec![crate::status::RunStatus::Completed]).await,
            Some(2)
        );
        assert_eq!(total("u", vec![]).await, Some(1));
        client
            .execute(
                "UPDATE runs SET status = 'failed' WHERE run_id = 't/a'",
                &[],
            )
            .await
            .expect("update");
        assert_eq!(
            total("t", vec![crate::status::RunStatus::Failed]).await,
            Some(1)
        );
        assert_eq!(total("t", vec![]).await, Some(3));
    }

    /// Migration 8 rebuilds `events` without the index on `event_id`: a store made before
    /// it keeps every event, and afterwards `events` has only its primary key and `runs`
    /// the partial `runs_live` instead of `runs_by_status`.
    #[tokio::test(flavor = "multi_thread")]
    async fn migration_8_keeps_every_event_and_drops_the_write_only_indexes() {
        if skip_postgres("migration_8_keeps_every_event_and_drops_the_write_only_indexes") {
            return;
        }
        // The store as the release before migration 8 left it, with a run's events.
        let (schema, client) = store_before(8).await;
        let url = schema.url();
        for seq in 0..3i64 {
            client
                .execute(
                    "INSERT INTO events (run_id, sequence, event_id, type, node_id, payload, ts_ms) VALUES ('t/r', $1, $2, 'node.completed', NULL, '{}', $1)",
                    &[&seq, &format!("ev-{seq}")],
                )
                .await
                .expect("event");
        }
        PgStore::connect(&url)
            .await
            .expect("the store applies migration 8");
        let events: Vec<(i64, String)> = client
            .query(
                "SELECT sequence, event_id FROM events ORDER BY sequence",
                &[],
            )
            .await
            .expect("read")
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        assert_eq!(
            events,
            (0..3).map(|s| (s, format!("ev-{s}"))).collect::<Vec<_>>()
        );
        let indexes = |table: &'static str| {
            let client = &client;
            async move {
                client
                    .query(
                        "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = $1 ORDER BY indexname",
                        &[&table],
                    )
                    .await
                    .expect("indexes")
                    .iter()
                    .map(|r| r.get::<_, String>(0))
                    .collect::<Vec<_>>()
            }
        };
        assert_eq!(indexes("events").await, ["events_rebuilt_pkey"]);
        let runs = indexes("runs").await;
        assert!(runs.contains(&"runs_live".to_owned()), "{runs:?}");
        assert!(!runs.contains(&"runs_by_status".to_owned()), "{runs:?}");
    }
}
