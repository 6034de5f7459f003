//! [`InteropStore`] on PostgreSQL, shared by every replica on the database: a push
//! configuration registered through one replica is served and delivered by all of them,
//! a session opened through one serves on all, a claim made on one holds for all.
//!
//! Several replicas drain one outbox. [`InteropStore::push_due`] claims what it returns in
//! the same statement (`FOR UPDATE SKIP LOCKED`, then `next_ms` moved past the longest
//! attempt), so each attempt is made by one replica; a replica that dies mid-attempt
//! leaves the row to come due again for another once the claim runs out. Delivery is at
//! least once: an attempt that outlives its claim may be repeated elsewhere.

use deadpool_postgres::GenericClient;
use serde_json::Value;

use super::{A2A_HISTORY_LOCK, PgStore, all, exec, one};
use crate::clock::now_ms;
use crate::store::sql;
use crate::store::{
    A2aStart, A2aTask, DeadLetter, Delivery, InteropStore, Secret, SessionRecord, StoreError,
    StoreFuture, StoredConfig,
};

/// How long a claimed delivery stays with the replica that took it (`sql::PUSH_CLAIM_MS`).
pub const CLAIM_MS: i64 = sql::PUSH_CLAIM_MS;

/// Advisory lock class serialising writes of one configuration across replicas, so two
/// concurrent registrations of one id cannot leave an orphaned secret behind.
const CONFIG_LOCK: i32 = 0x6f77_0002;

/// Advisory lock class serialising the registrations of one task, so the bound on its
/// configurations holds across concurrent requests and replicas.
const TASK_CONFIGS_LOCK: i32 = 0x6f77_0003;

/// The push attempt counters are INTEGER columns (migration 3).
fn attempts(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// Binds a task's context and appends its first message inside an open transaction (a
/// replayed creation); the contextId bound.
pub(super) async fn start_task(
    tx: &impl GenericClient,
    run_id: &str,
    a2a: A2aStart,
) -> Result<String, StoreError> {
    exec(tx, sql::BIND_CONTEXT, &[&run_id, &a2a.context_id]).await?;
    let context = one(tx, sql::CONTEXT_OF, &[&run_id], |r| r.text("context_id"))
        .await?
        .ok_or_else(|| StoreError::Database("a bound context vanished".into()))?;
    let message = (a2a.message)(run_id, &context).to_string();
    let message_id = (!a2a.message_id.is_empty()).then_some(a2a.message_id);
    exec(
        tx,
        "SELECT pg_advisory_xact_lock($1, hashtext($2))",
        &[&A2A_HISTORY_LOCK, &run_id],
    )
    .await?;
    exec(tx, sql::APPEND_MESSAGE, &[&run_id, &message_id, &message]).await?;
    Ok(context)
}

/// Removes a configuration with its secret and its pending deliveries.
async fn discard(
    tx: &impl GenericClient,
    run_id: &str,
    config_id: &str,
) -> Result<bool, StoreError> {
    exec(tx, sql::DISCARD_SECRET, &[&run_id, &config_id]).await?;
    exec(tx, sql::DISCARD_DELIVERIES, &[&run_id, &config_id]).await?;
    Ok(exec(tx, sql::DISCARD_CONFIG, &[&run_id, &config_id]).await? > 0)
}

async fn lock_config(
    tx: &impl GenericClient,
    run_id: &str,
    config_id: &str,
) -> Result<(), StoreError> {
    exec(
        tx,
        "SELECT pg_advisory_xact_lock($1, hashtext($2 || chr(10) || $3))",
        &[&CONFIG_LOCK, &run_id, &config_id],
    )
    .await?;
    Ok(())
}

impl PgStore {
    /// Settles a delivery: removes it, files it as a dead letter if asked, and discards
    /// its configuration when it was the task's last push.
    async fn settle(&self, d: &Delivery, dead: Option<(u32, &str, i64)>) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        if d.last {
            lock_config(&tx, &d.run_id, &d.config_id).await?;
        }
        exec(&tx, sql::SETTLE, &[&d.delivery_id]).await?;
        if let Some((n, reason, now_ms)) = dead {
            exec(
                &tx,
                sql::DEAD_LETTER,
                &[
                    &d.delivery_id,
                    &d.run_id,
                    &d.config_id,
                    &d.state,
                    &attempts(n),
                    &reason,
                    &now_ms,
                ],
            )
            .await?;
        }
        if d.last {
            discard(&tx, &d.run_id, &d.config_id).await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

impl InteropStore for PgStore {
    fn a2a_bind_context(&self, run_id: &str, context_id: &str) -> StoreFuture<'_, String> {
        let (run_id, context_id) = (run_id.to_owned(), context_id.to_owned());
        Box::pin(self.noted(async move {
            let client = self.client().await?;
            exec(&client, sql::BIND_CONTEXT, &[&run_id, &context_id]).await?;
            one(&client, sql::CONTEXT_OF, &[&run_id], |r| {
                r.text("context_id")
            })
            .await?
            .ok_or_else(|| StoreError::Database("a bound context vanished".into()))
        }))
    }

    fn a2a_context_of(&self, run_id: &str) -> StoreFuture<'_, Option<String>> {
        let run_id = run_id.to_owned();
        Box::pin(async move {
            let client = self.client().await?;
            one(&client, sql::CONTEXT_OF, &[&run_id], |r| {
                r.text("context_id")
            })
            .await
        })
    }

    fn a2a_append_message(
        &self,
        run_id: &str,
        message_id: &str,
        message: Value,
    ) -> StoreFuture<'_, bool> {
        let run_id = run_id.to_owned();
        let message_id = (!message_id.is_empty()).then(|| message_id.to_owned());
        Box::pin(self.noted(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            // The advisory lock orders appends, so two replicas never pick the same `seq`.
            exec(
                &tx,
                "SELECT pg_advisory_xact_lock($1, hashtext($2))",
                &[&A2A_HISTORY_LOCK, &run_id],
            )
            .await?;
            let n = exec(
                &tx,
                sql::APPEND_MESSAGE,
                &[&run_id, &message_id, &message.to_string()],
            )
            .await?;
            tx.commit().await?;
            Ok(n == 1)
        }))
    }

    fn a2a_history(&self, run_id: &str) -> StoreFuture<'_, Vec<Value>> {
        let run_id = run_id.to_owned();
        Box::pin(async move {
            let client = self.client().await?;
            all(&client, sql::HISTORY, &[&run_id], |r| r.json("message")).await
        })
    }

    fn a2a_task(&self, run_id: &str) -> StoreFuture<'_, A2aTask> {
        let run_id = run_id.to_owned();
        Box::pin(async move {
            let client = self.client().await?;
            // Three statements sent together on one connection (pipelined): one round
            // trip's wait instead of three.
            let id: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&run_id];
            let (open_interrupt, context_id, history) = futures::try_join!(
                one(&client, sql::OPEN_INTERRUPT_OF, &id, sql::interrupt),
                one(&client, sql::CONTEXT_OF, &id, |r| r.text("context_id")),
                all(&client, sql::HISTORY, &id, |r| r.json("message")),
            )?;
            Ok(A2aTask {
                open_interrupt,
                context_id,
                history,
            })
        })
    }

    fn push_put(&self, config: StoredConfig, secret: Secret) -> StoreFuture<'_, ()> {
        let put = self.push_put_within(config, secret, usize::MAX);
        Box::pin(async move { put.await.map(|_| ()) })
    }

    fn push_put_within(
        &self,
        config: StoredConfig,
        secret: Secret,
        max: usize,
    ) -> StoreFuture<'_, bool> {
        Box::pin(self.noted(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            if max != usize::MAX {
                // One registration of a task at a time, so the count below holds.
                exec(
                    &tx,
                    "SELECT pg_advisory_xact_lock($1, hashtext($2))",
                    &[&TASK_CONFIGS_LOCK, &config.run_id],
                )
                .await?;
                let others = one(
                    &tx,
                    sql::OTHER_CONFIGS,
                    &[&config.run_id, &config.config_id],
                    |r| r.int("n"),
                )
                .await?
                .unwrap_or(0);
                if usize::try_from(others).unwrap_or(usize::MAX) >= max {
                    return Ok(false);
                }
            }
            lock_config(&tx, &config.run_id, &config.config_id).await?;
            discard(&tx, &config.run_id, &config.config_id).await?;
            let secret_ref = format!("sec-{}", crate::ids::mint_opaque());
            exec(
                &tx,
                sql::INSERT_PUSH_SECRET,
                &[&secret_ref, &secret.token, &secret.credentials],
            )
            .await?;
            exec(
                &tx,
                sql::INSERT_CONFIG,
                &[
                    &config.run_id,
                    &config.config_id,
                    &config.url,
                    &config.scheme,
                    &config.created_ms,
                    &secret_ref,
                ],
            )
            .await?;
            // Every replica's push watcher learns at this commit that configurations
            // exist, before the wake-ups of any later commit (see `listen`).
            let payload = super::listen::push_payload(&config.run_id);
            super::notify(&tx, &self.inner.channel, &payload).await?;
            tx.commit().await?;
            Ok(true)
        }))
    }

    fn push_get(&self, run_id: &str, config_id: &str) -> StoreFuture<'_, Option<StoredConfig>> {
        let (run_id, config_id) = (run_id.to_owned(), config_id.to_owned());
        Box::pin(async move {
            let client = self.client().await?;
            one(
                &client,
                sql::CONFIG,
                &[&run_id, &config_id],
                sql::push_config,
            )
            .await
        })
    }

    fn push_list(&self, run_id: &str) -> StoreFuture<'_, Vec<StoredConfig>> {
        let run_id = run_id.to_owned();
        Box::pin(async move {
            let client = self.client().await?;
            all(&client, sql::CONFIGS_OF, &[&run_id], sql::push_config).await
        })
    }

    fn push_delete(&self, run_id: &str, config_id: &str) -> StoreFuture<'_, bool> {
        let (run_id, config_id) = (run_id.to_owned(), config_id.to_owned());
        Box::pin(self.noted(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            lock_config(&tx, &run_id, &config_id).await?;
            let removed = discard(&tx, &run_id, &config_id).await?;
            tx.commit().await?;
            Ok(removed)
        }))
    }

    fn push_runs(&self) -> StoreFuture<'_, Vec<String>> {
        Box::pin(async move {
            let client = self.client().await?;
            all(&client, sql::CONFIGURED_RUNS, &[], |r| r.text("run_id")).await
        })
    }

    fn push_configs_possible(&self) -> bool {
        self.inner
            .push_configured
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    fn push_enqueue(
        &self,
        run_id: &str,
        state: &str,
        body: &str,
        last: bool,
        observed_seq: i64,
        now_ms: i64,
    ) -> StoreFuture<'_, usize> {
        let (run_id, state, body) = (run_id.to_owned(), state.to_owned(), body.to_owned());
        Box::pin(self.noted(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            // Every replica's watcher sees the same change; the update's row locks make
            // a state enqueued once however many replicas observe it.
            let targets = all(
                &tx,
                sql::MARK_PUSHED,
                &[&run_id, &state, &last, &observed_seq],
                |r| r.text("config_id"),
            )
            .await?;
            for config_id in &targets {
                exec(
                    &tx,
                    sql::ENQUEUE,
                    &[
                        &format!("pd-{}", crate::ids::mint_opaque()),
                        &run_id,
                        config_id,
                        &state,
                        &body,
                        &now_ms,
                        &last,
                    ],
                )
                .await?;
            }
            tx.commit().await?;
            Ok(targets.len())
        }))
    }

    fn push_due(&self, now_ms: i64, limit: usize) -> StoreFuture<'_, Vec<Delivery>> {
        Box::pin(self.noted(async move {
            let client = self.client().await?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let claimed_until = now_ms.saturating_add(CLAIM_MS);
            // Only a configuration's oldest delivery is offered, and a claimed one is not
            // due, so a receiver never has two of its pushes in flight at once. The
            // `o.next_ms` test sits on the locked row: a replica that waited for another's
            // claim re-reads it and skips the row.
            const CLAIM_DUE: &str = concat!(
                "WITH heads AS (
                     SELECT DISTINCT ON (run_id, config_id) seq
                     FROM push_outbox ORDER BY run_id, config_id, seq
                 ), picked AS (
                     SELECT o.seq FROM push_outbox o JOIN heads h ON h.seq = o.seq
                     WHERE o.next_ms <= $1
                     ORDER BY o.next_ms, o.seq LIMIT $2
                     FOR UPDATE OF o SKIP LOCKED
                 ), claimed AS (
                     UPDATE push_outbox SET next_ms = $3 FROM picked WHERE push_outbox.seq = picked.seq
                     RETURNING push_outbox.*
                 )
                 SELECT seq, ",
                sql::delivery_cols!(),
                " FROM claimed ORDER BY seq"
            );
            all(
                &client,
                CLAIM_DUE,
                &[&now_ms, &limit, &claimed_until],
                sql::delivery,
            )
            .await
        }))
    }

    fn push_next_due_ms(&self) -> StoreFuture<'_, Option<i64>> {
        Box::pin(async move {
            let client = self.client().await?;
            Ok(one(&client, sql::NEXT_DUE, &[], |r| r.opt_int("next_ms"))
                .await?
                .flatten())
        })
    }

    fn push_secret(&self, run_id: &str, config_id: &str) -> StoreFuture<'_, Option<Secret>> {
        let (run_id, config_id) = (run_id.to_owned(), config_id.to_owned());
        Box::pin(async move {
            let client = self.client().await?;
            one(
                &client,
                sql::PUSH_SECRET,
                &[&run_id, &config_id],
                sql::secret,
            )
            .await
        })
    }

    fn push_retry_later(&self, delivery_id: &str, n: u32, next_ms: i64) -> StoreFuture<'_, ()> {
        let delivery_id = delivery_id.to_owned();
        Box::pin(self.noted(async move {
            let client = self.client().await?;
            exec(
                &client,
                sql::RETRY_LATER,
                &[&delivery_id, &attempts(n), &next_ms],
            )
            .await?;
            Ok(())
        }))
    }

    fn push_delivered(&self, delivery: &Delivery) -> StoreFuture<'_, ()> {
        let d = delivery.clone();
        Box::pin(self.noted(async move { self.settle(&d, None).await }))
    }

    fn push_dead_letter(
        &self,
        delivery: &Delivery,
        n: u32,
        reason: &str,
        now_ms: i64,
    ) -> StoreFuture<'_, ()> {
        let (d, reason) = (delivery.clone(), reason.to_owned());
        Box::pin(self.noted(async move { self.settle(&d, Some((n, &reason, now_ms))).await }))
    }

    fn push_dead_letters(&self) -> StoreFuture<'_, Vec<DeadLetter>> {
        Box::pin(async move {
            let client = self.client().await?;
            all(&client, sql::DEAD_LETTERS, &[], sql::dead_letter).await
        })
    }

    fn open_session(
        &self,
        id: &str,
        principal_digest: &str,
        version: &str,
        expires_ms: i64,
    ) -> StoreFuture<'_, ()> {
        let (id, principal_digest, version) = (
            id.to_owned(),
            principal_digest.to_owned(),
            version.to_owned(),
        );
        Box::pin(self.noted(async move {
            let client = self.client().await?;
            exec(&client, sql::SWEEP_SESSIONS, &[&now_ms()]).await?;
            exec(
                &client,
                sql::INSERT_SESSION,
                &[&id, &principal_digest, &version, &expires_ms],
            )
            .await?;
            Ok(())
        }))
    }

    fn session(&self, id: &str) -> StoreFuture<'_, Option<SessionRecord>> {
        let id = id.to_owned();
        Box::pin(async move {
            let client = self.client().await?;
            one(&client, sql::LIVE_SESSION, &[&id, &now_ms()], sql::session).await
        })
    }

    fn touch_session(&self, id: &str, expires_ms: i64) -> StoreFuture<'_, bool> {
        let id = id.to_owned();
        Box::pin(self.noted(async move {
            let client = self.client().await?;
            Ok(exec(&client, sql::TOUCH_SESSION, &[&id, &expires_ms, &now_ms()]).await? == 1)
        }))
    }

    fn close_session(&self, id: &str, principal_digest: &str) -> StoreFuture<'_, bool> {
        let (id, principal_digest) = (id.to_owned(), principal_digest.to_owned());
        Box::pin(self.noted(async move {
            let client = self.client().await?;
            Ok(exec(
                &client,
                sql::CLOSE_SESSION,
                &[&id, &principal_digest, &now_ms()],
            )
            .await?
                == 1)
        }))
    }

    fn claim_once(&self, scope: &str, key: &str, expires_ms: i64) -> StoreFuture<'_, bool> {
        let (scope, key) = (scope.to_owned(), key.to_owned());
        Box::pin(self.noted(async move {
            let client = self.client().await?;
            exec(&client, sql::PURGE_CLAIMS, &[&scope, &now_ms()]).await?;
            Ok(exec(&client, sql::CLAIM, &[&scope, &key, &expires_ms]).await? == 1)
        }))
    }
}
