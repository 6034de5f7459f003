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
        assert_eq!(versions, [1, 2, 3, 4, 5, 6]);
    }
}
