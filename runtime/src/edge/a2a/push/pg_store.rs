//! [`PushStore`] on PostgreSQL, shared by every replica on the database: a configuration
//! registered through one replica is served and delivered by all of them.
//!
//! Several replicas drain one outbox. [`PushStore::due`] claims what it returns in the
//! same statement (`FOR UPDATE SKIP LOCKED`, then `next_ms` moved past the longest
//! attempt), so each attempt is made by one replica; a replica that dies mid-attempt
//! leaves the row to come due again for another once the claim runs out. Delivery is at
//! least once: an attempt that outlives its claim may be repeated elsewhere.

use deadpool_postgres::{GenericClient, Pool};
use tokio_postgres::Row;

use super::store::{DeadLetter, Delivery, PushFuture, PushStore, Secret, StoredConfig};
use crate::edge::a2a::tasks::TaskStoreError;
use crate::store::StoreError;

/// How long a claimed delivery stays with the replica that took it. Longer than an
/// attempt can take (the egress timeout, 15 s, plus two reads), so a live replica is
/// never overtaken.
pub const CLAIM_MS: i64 = 60_000;

/// Advisory lock class serialising writes of one configuration across replicas, so two
/// concurrent registrations of one id cannot leave an orphaned secret behind.
const CONFIG_LOCK: i32 = 0x6f77_0002;

/// PostgreSQL behind the [`PushStore`] trait, on the pool of the host's run store.
#[derive(Clone)]
pub struct PgPushStore {
    pool: Pool,
}

impl PgPushStore {
    /// Uses `pool`, whose database already carries the push tables (migration 3).
    pub fn new(pool: Pool) -> PgPushStore {
        PgPushStore { pool }
    }

    fn run<'a, T: Send + 'a>(
        &'a self,
        f: impl Future<Output = Result<T, StoreError>> + Send + 'a,
    ) -> PushFuture<'a, T> {
        Box::pin(async move { f.await.map_err(TaskStoreError::from) })
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        Ok(self.pool.get().await?)
    }
}

const CONFIG_COLUMNS: &str = "run_id, config_id, url, scheme, created_ms";

fn config_row(r: &Row) -> Result<StoredConfig, StoreError> {
    Ok(StoredConfig {
        run_id: r.try_get(0)?,
        config_id: r.try_get(1)?,
        url: r.try_get(2)?,
        scheme: r.try_get(3)?,
        created_ms: r.try_get(4)?,
    })
}

fn delivery_row(r: &Row) -> Result<Delivery, StoreError> {
    let attempts: i32 = r.try_get(5)?;
    Ok(Delivery {
        delivery_id: r.try_get(0)?,
        run_id: r.try_get(1)?,
        config_id: r.try_get(2)?,
        state: r.try_get(3)?,
        body: r.try_get(4)?,
        attempts: attempts.max(0) as u32,
        last: r.try_get(6)?,
    })
}

/// Removes a configuration with its secret and its pending deliveries.
async fn discard(
    tx: &impl GenericClient,
    run_id: &str,
    config_id: &str,
) -> Result<bool, StoreError> {
    tx.execute(
        "DELETE FROM push_secrets WHERE secret_ref IN (SELECT secret_ref FROM push_configs WHERE run_id = $1 AND config_id = $2)",
        &[&run_id, &config_id],
    )
    .await?;
    tx.execute(
        "DELETE FROM push_outbox WHERE run_id = $1 AND config_id = $2",
        &[&run_id, &config_id],
    )
    .await?;
    Ok(tx
        .execute(
            "DELETE FROM push_configs WHERE run_id = $1 AND config_id = $2",
            &[&run_id, &config_id],
        )
        .await?
        > 0)
}

async fn lock_config(
    tx: &impl GenericClient,
    run_id: &str,
    config_id: &str,
) -> Result<(), StoreError> {
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, hashtext($2 || chr(10) || $3))",
        &[&CONFIG_LOCK, &run_id, &config_id],
    )
    .await?;
    Ok(())
}

/// Settles a delivery: removes it, files it as a dead letter if asked, and discards its
/// configuration when it was the task's last push.
async fn settle(
    pool: &Pool,
    d: &Delivery,
    dead: Option<(u32, &str, i64)>,
) -> Result<(), StoreError> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    if d.last {
        lock_config(&tx, &d.run_id, &d.config_id).await?;
    }
    tx.execute(
        "DELETE FROM push_outbox WHERE delivery_id = $1",
        &[&d.delivery_id],
    )
    .await?;
    if let Some((attempts, reason, now_ms)) = dead {
        let attempts = i32::try_from(attempts).unwrap_or(i32::MAX);
        tx.execute(
            "INSERT INTO push_dead_letters (delivery_id, run_id, config_id, state, attempts, reason, at_ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (delivery_id) DO UPDATE SET attempts = EXCLUDED.attempts, reason = EXCLUDED.reason, at_ms = EXCLUDED.at_ms",
            &[&d.delivery_id, &d.run_id, &d.config_id, &d.state, &attempts, &reason, &now_ms],
        )
        .await?;
    }
    if d.last {
        discard(&tx, &d.run_id, &d.config_id).await?;
    }
    tx.commit().await?;
    Ok(())
}

impl PushStore for PgPushStore {
    fn put(&self, config: StoredConfig, secret: Secret) -> PushFuture<'_, ()> {
        self.run(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            lock_config(&tx, &config.run_id, &config.config_id).await?;
            discard(&tx, &config.run_id, &config.config_id).await?;
            let secret_ref = format!("sec-{}", crate::ids::mint_opaque());
            tx.execute(
                "INSERT INTO push_secrets (secret_ref, token, credentials) VALUES ($1, $2, $3)",
                &[&secret_ref, &secret.token, &secret.credentials],
            )
            .await?;
            tx.execute(
                "INSERT INTO push_configs (run_id, config_id, url, scheme, secret_ref, created_ms) VALUES ($1, $2, $3, $4, $5, $6)",
                &[&config.run_id, &config.config_id, &config.url, &config.scheme, &secret_ref, &config.created_ms],
            )
            .await?;
            tx.commit().await?;
            Ok(())
        })
    }

    fn get(&self, run_id: &str, config_id: &str) -> PushFuture<'_, Option<StoredConfig>> {
        let (run_id, config_id) = (run_id.to_owned(), config_id.to_owned());
        self.run(async move {
            let client = self.client().await?;
            let row = client
                .query_opt(
                    &format!("SELECT {CONFIG_COLUMNS} FROM push_configs WHERE run_id = $1 AND config_id = $2"),
                    &[&run_id, &config_id],
                )
                .await?;
            row.as_ref().map(config_row).transpose()
        })
    }

    fn list(&self, run_id: &str) -> PushFuture<'_, Vec<StoredConfig>> {
        let run_id = run_id.to_owned();
        self.run(async move {
            let client = self.client().await?;
            let rows = client
                .query(
                    &format!("SELECT {CONFIG_COLUMNS} FROM push_configs WHERE run_id = $1 ORDER BY created_ms, config_id"),
                    &[&run_id],
                )
                .await?;
            rows.iter().map(config_row).collect()
        })
    }

    fn delete(&self, run_id: &str, config_id: &str) -> PushFuture<'_, bool> {
        let (run_id, config_id) = (run_id.to_owned(), config_id.to_owned());
        self.run(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            lock_config(&tx, &run_id, &config_id).await?;
            let removed = discard(&tx, &run_id, &config_id).await?;
            tx.commit().await?;
            Ok(removed)
        })
    }

    fn runs_with_configs(&self) -> PushFuture<'_, Vec<String>> {
        self.run(async move {
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT DISTINCT run_id FROM push_configs WHERE NOT closed ORDER BY run_id",
                    &[],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|r| r.try_get(0))
                .collect::<Result<_, _>>()?)
        })
    }

    fn enqueue_change(
        &self,
        run_id: &str,
        state: &str,
        body: &str,
        last: bool,
        observed_seq: i64,
        now_ms: i64,
    ) -> PushFuture<'_, usize> {
        let (run_id, state, body) = (run_id.to_owned(), state.to_owned(), body.to_owned());
        self.run(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            // Every replica's watcher sees the same change. The UPDATE takes the rows'
            // locks, and one that waited re-checks the condition on the committed row, so
            // a state is enqueued once however many replicas observe it.
            let targets: Vec<String> = tx
                .query(
                    "UPDATE push_configs SET last_state = $2, closed = $3, last_seq = $4
                     WHERE run_id = $1 AND NOT closed AND last_state IS DISTINCT FROM $2
                       AND (last_seq IS NULL OR last_seq <= $4)
                     RETURNING config_id",
                    &[&run_id, &state, &last, &observed_seq],
                )
                .await?
                .iter()
                .map(|r| r.try_get(0))
                .collect::<Result<_, _>>()?;
            for config_id in &targets {
                tx.execute(
                    "INSERT INTO push_outbox (delivery_id, run_id, config_id, state, body, next_ms, last) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                    &[&format!("pd-{}", crate::ids::mint_opaque()), &run_id, config_id, &state, &body, &now_ms, &last],
                )
                .await?;
            }
            tx.commit().await?;
            Ok(targets.len())
        })
    }

    fn due(&self, now_ms: i64, limit: usize) -> PushFuture<'_, Vec<Delivery>> {
        self.run(async move {
            let client = self.client().await?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let claimed_until = now_ms.saturating_add(CLAIM_MS);
            // Only a configuration's oldest delivery is offered, and a claimed one is not
            // due, so a receiver never has two of its pushes in flight at once. The
            // `o.next_ms` test sits on the locked row: a replica that waited for another's
            // claim re-reads it and skips the row.
            let rows = client
                .query(
                    "WITH heads AS (
                         SELECT DISTINCT ON (run_id, config_id) seq
                         FROM push_outbox ORDER BY run_id, config_id, seq
                     ), picked AS (
                         SELECT o.seq FROM push_outbox o JOIN heads h ON h.seq = o.seq
                         WHERE o.next_ms <= $1
                         ORDER BY o.next_ms, o.seq LIMIT $2
                         FOR UPDATE OF o SKIP LOCKED
                     )
                     UPDATE push_outbox SET next_ms = $3 FROM picked WHERE push_outbox.seq = picked.seq
                     RETURNING push_outbox.delivery_id, push_outbox.run_id, push_outbox.config_id,
                               push_outbox.state, push_outbox.body, push_outbox.attempts, push_outbox.last,
                               push_outbox.seq",
                    &[&now_ms, &limit, &claimed_until],
                )
                .await?;
            let mut due: Vec<(i64, Delivery)> = rows
                .iter()
                .map(|r| Ok((r.try_get(7)?, delivery_row(r)?)))
                .collect::<Result<_, StoreError>>()?;
            due.sort_by_key(|(seq, _)| *seq);
            Ok(due.into_iter().map(|(_, d)| d).collect())
        })
    }

    fn next_due_ms(&self) -> PushFuture<'_, Option<i64>> {
        self.run(async move {
            let client = self.client().await?;
            let row = client
                .query_one("SELECT MIN(next_ms) FROM push_outbox", &[])
                .await?;
            Ok(row.try_get(0)?)
        })
    }

    fn secret(&self, run_id: &str, config_id: &str) -> PushFuture<'_, Option<Secret>> {
        let (run_id, config_id) = (run_id.to_owned(), config_id.to_owned());
        self.run(async move {
            let client = self.client().await?;
            let row = client
                .query_opt(
                    "SELECT s.token, s.credentials FROM push_configs p JOIN push_secrets s ON s.secret_ref = p.secret_ref
                     WHERE p.run_id = $1 AND p.config_id = $2",
                    &[&run_id, &config_id],
                )
                .await?;
            Ok(match row {
                Some(r) => Some(Secret {
                    token: r.try_get(0)?,
                    credentials: r.try_get(1)?,
                }),
                None => None,
            })
        })
    }

    fn retry_later(&self, delivery_id: &str, attempts: u32, next_ms: i64) -> PushFuture<'_, ()> {
        let delivery_id = delivery_id.to_owned();
        self.run(async move {
            let client = self.client().await?;
            let attempts = i32::try_from(attempts).unwrap_or(i32::MAX);
            client
                .execute(
                    "UPDATE push_outbox SET attempts = $2, next_ms = $3 WHERE delivery_id = $1",
                    &[&delivery_id, &attempts, &next_ms],
                )
                .await?;
            Ok(())
        })
    }

    fn delivered(&self, delivery: &Delivery) -> PushFuture<'_, ()> {
        let d = delivery.clone();
        self.run(async move { settle(&self.pool, &d, None).await })
    }

    fn dead_letter(
        &self,
        delivery: &Delivery,
        attempts: u32,
        reason: &str,
        now_ms: i64,
    ) -> PushFuture<'_, ()> {
        let (d, reason) = (delivery.clone(), reason.to_owned());
        self.run(async move { settle(&self.pool, &d, Some((attempts, &reason, now_ms))).await })
    }

    fn dead_letters(&self) -> PushFuture<'_, Vec<DeadLetter>> {
        self.run(async move {
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT delivery_id, run_id, config_id, state, attempts, reason, at_ms FROM push_dead_letters ORDER BY at_ms, delivery_id",
                    &[],
                )
                .await?;
            rows.iter()
                .map(|r| {
                    let attempts: i32 = r.try_get(4)?;
                    Ok(DeadLetter {
                        delivery_id: r.try_get(0)?,
                        run_id: r.try_get(1)?,
                        config_id: r.try_get(2)?,
                        state: r.try_get(3)?,
                        attempts: attempts.max(0) as u32,
                        reason: r.try_get(5)?,
                        at_ms: r.try_get(6)?,
                    })
                })
                .collect()
        })
    }
}
