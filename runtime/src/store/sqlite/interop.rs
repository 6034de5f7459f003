//! [`InteropStore`] on the SQLite file: the same file and connections as the runs.

use rusqlite::{Connection, params};
use serde_json::Value;

use super::{SqliteStore, Tx, all, exec, one};
use crate::clock::now_ms;
use crate::store::sql;
use crate::store::{
    A2aStart, A2aTask, DeadLetter, Delivery, InteropStore, Secret, SessionRecord, StoreError,
    StoreFuture, StoredConfig,
};

/// Binds a task's context and appends its first message (inside a creation's
/// transaction); the contextId bound.
pub(super) fn start_task(
    tx: &Connection,
    run_id: &str,
    a2a: A2aStart,
) -> Result<String, StoreError> {
    exec(tx, sql::BIND_CONTEXT, params![run_id, a2a.context_id])?;
    let context = one(tx, sql::CONTEXT_OF, [run_id], |r| r.text("context_id"))?
        .ok_or_else(|| StoreError::Database("a bound context vanished".into()))?;
    let message = (a2a.message)(run_id, &context);
    let message_id = (!a2a.message_id.is_empty()).then_some(a2a.message_id);
    exec(
        tx,
        sql::APPEND_MESSAGE,
        params![run_id, message_id, message.to_string()],
    )?;
    Ok(context)
}

/// Removes a configuration with its secret and its pending deliveries.
fn discard(tx: &Connection, run_id: &str, config_id: &str) -> Result<bool, StoreError> {
    exec(tx, sql::DISCARD_SECRET, params![run_id, config_id])?;
    exec(tx, sql::DISCARD_DELIVERIES, params![run_id, config_id])?;
    Ok(exec(tx, sql::DISCARD_CONFIG, params![run_id, config_id])? > 0)
}

/// Settles a delivery: removes it, files it as a dead letter if asked, and discards its
/// configuration when it was the task's last push.
fn settle(
    conn: &mut Connection,
    d: &Delivery,
    dead: Option<(u32, &str, i64)>,
) -> Result<(), StoreError> {
    let tx = Tx::write(conn)?;
    exec(&tx, sql::SETTLE, [&d.delivery_id])?;
    if let Some((attempts, reason, now_ms)) = dead {
        exec(
            &tx,
            sql::DEAD_LETTER,
            params![
                d.delivery_id,
                d.run_id,
                d.config_id,
                d.state,
                attempts,
                reason,
                now_ms
            ],
        )?;
    }
    if d.last {
        discard(&tx, &d.run_id, &d.config_id)?;
    }
    tx.commit()?;
    Ok(())
}

impl InteropStore for SqliteStore {
    fn a2a_bind_context(&self, run_id: &str, context_id: &str) -> StoreFuture<'_, String> {
        let (run_id, context_id) = (run_id.to_owned(), context_id.to_owned());
        self.write_run(run_id.clone(), move |conn| {
            exec(conn, sql::BIND_CONTEXT, params![run_id, context_id])?;
            one(conn, sql::CONTEXT_OF, [run_id], |r| r.text("context_id"))?
                .ok_or_else(|| StoreError::Database("a bound context vanished".into()))
        })
    }

    fn a2a_context_of(&self, run_id: &str) -> StoreFuture<'_, Option<String>> {
        let run_id = run_id.to_owned();
        self.read_here(move |conn| one(conn, sql::CONTEXT_OF, [run_id], |r| r.text("context_id")))
    }

    fn a2a_append_message(
        &self,
        run_id: &str,
        message_id: &str,
        message: Value,
    ) -> StoreFuture<'_, bool> {
        let run_id = run_id.to_owned();
        let message_id = (!message_id.is_empty()).then(|| message_id.to_owned());
        self.write(move |conn| {
            Ok(exec(
                conn,
                sql::APPEND_MESSAGE,
                params![run_id, message_id, message.to_string()],
            )? == 1)
        })
    }

    fn a2a_history(&self, run_id: &str) -> StoreFuture<'_, Vec<Value>> {
        let run_id = run_id.to_owned();
        self.read_here(move |conn| all(conn, sql::HISTORY, [run_id], |r| r.json("message")))
    }

    fn a2a_task(&self, run_id: &str) -> StoreFuture<'_, A2aTask> {
        let run_id = run_id.to_owned();
        self.read_here(move |conn| {
            // One snapshot for the three reads.
            let tx = Tx::read(conn)?;
            let task = A2aTask {
                open_interrupt: one(&tx, sql::OPEN_INTERRUPT_OF, [&run_id], sql::interrupt)?,
                context_id: one(&tx, sql::CONTEXT_OF, [&run_id], |r| r.text("context_id"))?,
                history: all(&tx, sql::HISTORY, [&run_id], |r| r.json("message"))?,
            };
            tx.commit()?;
            Ok(task)
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
        self.write(move |conn| {
            let tx = Tx::write(conn)?;
            let others = one(
                &tx,
                sql::OTHER_CONFIGS,
                params![config.run_id, config.config_id],
                |r| r.int("n"),
            )?
            .unwrap_or(0);
            if usize::try_from(others).unwrap_or(usize::MAX) >= max {
                return Ok(false);
            }
            discard(&tx, &config.run_id, &config.config_id)?;
            let secret_ref = format!("sec-{}", crate::ids::mint_opaque());
            exec(
                &tx,
                sql::INSERT_PUSH_SECRET,
                params![secret_ref, secret.token, secret.credentials],
            )?;
            exec(
                &tx,
                sql::INSERT_CONFIG,
                params![
                    config.run_id,
                    config.config_id,
                    config.url,
                    config.scheme,
                    config.created_ms,
                    secret_ref
                ],
            )?;
            tx.commit()?;
            Ok(true)
        })
    }

    fn push_get(&self, run_id: &str, config_id: &str) -> StoreFuture<'_, Option<StoredConfig>> {
        let (run_id, config_id) = (run_id.to_owned(), config_id.to_owned());
        self.read(move |conn| {
            one(
                conn,
                sql::CONFIG,
                params![run_id, config_id],
                sql::push_config,
            )
        })
    }

    fn push_list(&self, run_id: &str) -> StoreFuture<'_, Vec<StoredConfig>> {
        let run_id = run_id.to_owned();
        self.read_here(move |conn| all(conn, sql::CONFIGS_OF, [run_id], sql::push_config))
    }

    fn push_delete(&self, run_id: &str, config_id: &str) -> StoreFuture<'_, bool> {
        let (run_id, config_id) = (run_id.to_owned(), config_id.to_owned());
        self.write(move |conn| {
            let tx = Tx::write(conn)?;
            let removed = discard(&tx, &run_id, &config_id)?;
            tx.commit()?;
            Ok(removed)
        })
    }

    fn push_runs(&self) -> StoreFuture<'_, Vec<String>> {
        self.read(|conn| all(conn, sql::CONFIGURED_RUNS, [], |r| r.text("run_id")))
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
        self.write(move |conn| {
            let tx = Tx::write(conn)?;
            let targets = all(
                &tx,
                sql::MARK_PUSHED,
                params![run_id, state, last, observed_seq],
                |r| r.text("config_id"),
            )?;
            for config_id in &targets {
                exec(
                    &tx,
                    sql::ENQUEUE,
                    params![
                        format!("pd-{}", crate::ids::mint_opaque()),
                        run_id,
                        config_id,
                        state,
                        body,
                        now_ms,
                        last
                    ],
                )?;
            }
            tx.commit()?;
            Ok(targets.len())
        })
    }

    fn push_due(&self, now_ms: i64, limit: usize) -> StoreFuture<'_, Vec<Delivery>> {
        // Claimed as on PostgreSQL: a delivery handed out is not due again until it is
        // settled, rescheduled or its claim runs out, so an attempt still in flight (a
        // receiver that never answers) never sits at the head of the next batch.
        self.write(move |conn| {
            let tx = Tx::write(conn)?;
            let due = all(&tx, sql::DUE, params![now_ms, limit as i64], sql::delivery)?;
            let until = now_ms.saturating_add(sql::PUSH_CLAIM_MS);
            for d in &due {
                exec(&tx, sql::CLAIM_DELIVERY, params![d.delivery_id, until])?;
            }
            tx.commit()?;
            Ok(due)
        })
    }

    fn push_next_due_ms(&self) -> StoreFuture<'_, Option<i64>> {
        self.read(|conn| Ok(one(conn, sql::NEXT_DUE, [], |r| r.opt_int("next_ms"))?.flatten()))
    }

    fn push_secret(&self, run_id: &str, config_id: &str) -> StoreFuture<'_, Option<Secret>> {
        let (run_id, config_id) = (run_id.to_owned(), config_id.to_owned());
        self.read(move |conn| {
            one(
                conn,
                sql::PUSH_SECRET,
                params![run_id, config_id],
                sql::secret,
            )
        })
    }

    fn push_retry_later(
        &self,
        delivery_id: &str,
        attempts: u32,
        next_ms: i64,
    ) -> StoreFuture<'_, ()> {
        let delivery_id = delivery_id.to_owned();
        self.write(move |conn| {
            exec(
                conn,
                sql::RETRY_LATER,
                params![delivery_id, attempts, next_ms],
            )?;
            Ok(())
        })
    }

    fn push_delivered(&self, delivery: &Delivery) -> StoreFuture<'_, ()> {
        let d = delivery.clone();
        self.write(move |conn| settle(conn, &d, None))
    }

    fn push_dead_letter(
        &self,
        delivery: &Delivery,
        attempts: u32,
        reason: &str,
        now_ms: i64,
    ) -> StoreFuture<'_, ()> {
        let (d, reason) = (delivery.clone(), reason.to_owned());
        self.write(move |conn| settle(conn, &d, Some((attempts, &reason, now_ms))))
    }

    fn push_dead_letters(&self) -> StoreFuture<'_, Vec<DeadLetter>> {
        self.read(|conn| all(conn, sql::DEAD_LETTERS, [], sql::dead_letter))
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
        self.write(move |conn| {
            let tx = Tx::write(conn)?;
            exec(&tx, sql::SWEEP_SESSIONS, [now_ms()])?;
            exec(
                &tx,
                sql::INSERT_SESSION,
                params![id, principal_digest, version, expires_ms],
            )?;
            tx.commit()?;
            Ok(())
        })
    }

    fn session(&self, id: &str) -> StoreFuture<'_, Option<SessionRecord>> {
        let id = id.to_owned();
        self.read_here(move |conn| {
            one(conn, sql::LIVE_SESSION, params![id, now_ms()], sql::session)
        })
    }

    fn touch_session(&self, id: &str, expires_ms: i64) -> StoreFuture<'_, bool> {
        let id = id.to_owned();
        self.write(move |conn| {
            Ok(exec(conn, sql::TOUCH_SESSION, params![id, expires_ms, now_ms()])? == 1)
        })
    }

    fn close_session(&self, id: &str, principal_digest: &str) -> StoreFuture<'_, bool> {
        let (id, principal_digest) = (id.to_owned(), principal_digest.to_owned());
        self.write(move |conn| {
            Ok(exec(
                conn,
                sql::CLOSE_SESSION,
                params![id, principal_digest, now_ms()],
            )? == 1)
        })
    }

    fn claim_once(&self, scope: &str, key: &str, expires_ms: i64) -> StoreFuture<'_, bool> {
        let (scope, key) = (scope.to_owned(), key.to_owned());
        self.write(move |conn| {
            let tx = Tx::write(conn)?;
            exec(&tx, sql::PURGE_CLAIMS, params![scope, now_ms()])?;
            let n = exec(&tx, sql::CLAIM, params![scope, key, expires_ms])?;
            tx.commit()?;
            Ok(n == 1)
        })
    }
}
