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
        assert_eq!(versions, [1, 2, 3, 4, 5, 6, 7]);

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
}
