//! One test suite for both push stores: each test is written once against
//! `Arc<dyn PushStore>` and run on SQLite and on PostgreSQL (a fresh schema per test).
//! PostgreSQL being unreachable fails its tests unless `OPENWOP_SKIP_POSTGRES=1`.

use std::sync::Arc;

use super::pg_store::{CLAIM_MS, PgPushStore};
use super::store::{PushStore, Secret, SqlitePushStore, StoredConfig};
use crate::store::PgStore;
use crate::store::scratch::ScratchSchema;

/// A push store under test, and where its rows can be read behind its back.
struct Backend {
    store: Arc<dyn PushStore>,
    dir: Option<tempfile::TempDir>,
    schema: Option<ScratchSchema>,
}

impl Backend {
    fn sqlite() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let store =
            Arc::new(SqlitePushStore::open(&dir.path().join("a2a.sqlite")).expect("open sqlite"));
        Self {
            store,
            dir: Some(dir),
            schema: None,
        }
    }

    async fn postgres() -> Self {
        let schema = ScratchSchema::create()
            .await
            .expect("PostgreSQL for the push store suite");
        let store = Arc::new(Self::replica_on(&schema).await);
        Self {
            store,
            dir: None,
            schema: Some(schema),
        }
    }

    /// Another replica's push store on the same schema (its own pool and connections).
    async fn replica_on(schema: &ScratchSchema) -> PgPushStore {
        let runs = PgStore::connect(&schema.url())
            .await
            .expect("connect PostgreSQL");
        PgPushStore::new(runs.pool())
    }

    /// Rows of `table`, counted over a connection of the test's own.
    async fn rows(&self, table: &str) -> i64 {
        let sql = format!("SELECT COUNT(*) FROM {table}");
        match (&self.dir, &self.schema) {
            (Some(dir), _) => rusqlite::Connection::open(dir.path().join("a2a.sqlite"))
                .expect("open")
                .query_row(&sql, [], |r| r.get(0))
                .expect("count"),
            (_, Some(schema)) => {
                let (client, conn) = tokio_postgres::connect(&schema.url(), tokio_postgres::NoTls)
                    .await
                    .expect("connect");
                tokio::spawn(conn);
                client.query_one(&sql, &[]).await.expect("count").get(0)
            }
            _ => unreachable!("a backend has a dir or a schema"),
        }
    }
}

macro_rules! push_suite {
    (both: [$($name:ident),* $(,)?], postgres_only: [$($pg:ident),* $(,)?]) => {
        mod on_sqlite {
            $(
                #[tokio::test(flavor = "multi_thread")]
                async fn $name() {
                    super::$name(super::Backend::sqlite()).await;
                }
            )*
        }
        mod on_postgres {
            $(
                #[tokio::test(flavor = "multi_thread")]
                async fn $name() {
                    if crate::store::scratch::skip_postgres(concat!("push on_postgres::", stringify!($name))) {
                        return;
                    }
                    super::$name(super::Backend::postgres().await).await;
                }
            )*
            $(
                #[tokio::test(flavor = "multi_thread")]
                async fn $pg() {
                    if crate::store::scratch::skip_postgres(concat!("push on_postgres::", stringify!($pg))) {
                        return;
                    }
                    super::$pg(super::Backend::postgres().await).await;
                }
            )*
        }
    };
}

push_suite!(
    both: [
        configs_are_scoped_to_their_task_and_deletes_take_the_secret,
        a_state_is_enqueued_once_and_deliveries_come_in_order_per_config,
        a_stale_reading_never_follows_a_newer_one,
    ],
    postgres_only: [
        a_change_seen_by_two_replicas_is_enqueued_once,
        a_claimed_delivery_goes_to_one_replica_until_its_claim_runs_out,
    ]
);

fn config(run: &str, id: &str) -> StoredConfig {
    StoredConfig {
        run_id: run.into(),
        config_id: id.into(),
        url: "https://r.test/h".into(),
        scheme: Some("Bearer".into()),
        created_ms: 1,
    }
}

async fn configs_are_scoped_to_their_task_and_deletes_take_the_secret(b: Backend) {
    let s = b.store.clone();
    let secret = Secret {
        token: Some("tok".into()),
        credentials: Some("cred".into()),
    };
    s.put(config("t/a", "c1"), secret.clone())
        .await
        .expect("put");
    assert_eq!(
        s.get("t/a", "c1").await.expect("get"),
        Some(config("t/a", "c1"))
    );
    // Another task's id and an id that never existed read the same: nothing.
    assert_eq!(s.get("t/b", "c1").await.expect("get"), None);
    assert_eq!(s.get("t/a", "c9").await.expect("get"), None);
    assert_eq!(s.secret("t/a", "c1").await.expect("secret"), Some(secret));
    assert_eq!(s.secret("t/b", "c1").await.expect("secret"), None);
    assert!(!s.delete("t/b", "c1").await.expect("foreign delete"));
    assert!(s.get("t/a", "c1").await.expect("get").is_some());
    // Re-registering one id replaces its secret rather than adding another.
    s.put(
        config("t/a", "c1"),
        Secret {
            token: Some("tok2".into()),
            credentials: None,
        },
    )
    .await
    .expect("replace");
    assert_eq!(b.rows("push_secrets").await, 1);
    assert!(s.delete("t/a", "c1").await.expect("delete"));
    assert!(!s.delete("t/a", "c1").await.expect("again"));
    assert_eq!(s.secret("t/a", "c1").await.expect("secret"), None);
    assert_eq!(b.rows("push_secrets").await, 0);
}

async fn a_state_is_enqueued_once_and_deliveries_come_in_order_per_config(b: Backend) {
    let s = b.store.clone();
    s.put(
        config("t/a", "c1"),
        Secret {
            token: Some("tok".into()),
            credentials: None,
        },
    )
    .await
    .expect("put");
    assert_eq!(
        s.enqueue_change("t/a", "W", "{}", false, 1, 0)
            .await
            .expect("enqueue"),
        1
    );
    assert_eq!(
        s.enqueue_change("t/a", "W", "{}", false, 1, 0)
            .await
            .expect("enqueue"),
        0
    );
    assert_eq!(
        s.enqueue_change("t/a", "C", "{}", true, 1, 0)
            .await
            .expect("enqueue"),
        1
    );
    assert_eq!(
        s.enqueue_change("t/a", "X", "{}", false, 1, 0)
            .await
            .expect("closed"),
        0
    );
    let due = s.due(0, 10).await.expect("due");
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].state, "W");
    s.delivered(&due[0]).await.expect("settle");
    let due = s.due(0, 10).await.expect("due");
    assert_eq!(due[0].state, "C");
    s.dead_letter(&due[0], 3, "receiver answered 500", 5)
        .await
        .expect("dead");
    let dead = s.dead_letters().await.expect("dl");
    assert_eq!(dead.len(), 1);
    assert_eq!((dead[0].state.as_str(), dead[0].attempts), ("C", 3));
    // The last push settles the configuration, and its secret, away.
    assert_eq!(s.get("t/a", "c1").await.expect("get"), None);
    assert!(s.runs_with_configs().await.expect("runs").is_empty());
    assert_eq!(b.rows("push_secrets").await, 0);
    assert_eq!(b.rows("push_outbox").await, 0);
}

async fn a_change_seen_by_two_replicas_is_enqueued_once(b: Backend) {
    let other = Backend::replica_on(b.schema.as_ref().expect("postgres")).await;
    for i in 0..5 {
        b.store
            .put(config("t/a", &format!("c{i}")), Secret::default())
            .await
            .expect("put");
    }
    // Registered through one replica, known to the other.
    assert_eq!(other.list("t/a").await.expect("list").len(), 5);
    let (x, y) = tokio::join!(
        b.store.enqueue_change("t/a", "W", "{}", false, 1, 0),
        other.enqueue_change("t/a", "W", "{}", false, 1, 0)
    );
    assert_eq!(
        x.expect("a") + y.expect("b"),
        5,
        "one push per config, from either replica"
    );
    assert_eq!(b.rows("push_outbox").await, 5);
}

async fn a_claimed_delivery_goes_to_one_replica_until_its_claim_runs_out(b: Backend) {
    let other = Backend::replica_on(b.schema.as_ref().expect("postgres")).await;
    for i in 0..20 {
        let run = format!("t/{i}");
        b.store
            .put(config(&run, "c"), Secret::default())
            .await
            .expect("put");
        b.store
            .enqueue_change(&run, "W", "{}", false, 1, 0)
            .await
            .expect("enqueue");
    }
    let (x, y) = tokio::join!(b.store.due(0, 32), other.due(0, 32));
    let (x, y) = (x.expect("a"), y.expect("b"));
    let mut ids: Vec<String> = x.iter().chain(&y).map(|d| d.delivery_id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(x.len() + y.len(), 20, "every delivery handed out once");
    assert_eq!(ids.len(), 20, "no delivery handed to both replicas");
    // While claimed, nobody else gets them.
    assert!(other.due(CLAIM_MS - 1, 32).await.expect("due").is_empty());
    // The claimant died: once the claim runs out, another replica takes the rows over,
    // with no attempt counted for the one that never finished.
    let again = other.due(CLAIM_MS, 32).await.expect("due");
    assert_eq!(again.len(), 20);
    assert!(again.iter().all(|d| d.attempts == 0));
    // A settled one is gone for everyone.
    other.delivered(&again[0]).await.expect("settle");
    assert_eq!(b.store.due(3 * CLAIM_MS, 32).await.expect("due").len(), 19);
}

async fn a_stale_reading_never_follows_a_newer_one(b: Backend) {
    let s = b.store.clone();
    s.put(config("t/a", "c1"), Secret::default())
        .await
        .expect("put");
    assert_eq!(
        s.enqueue_change("t/a", "W", "{}", false, 3, 0)
            .await
            .expect("at 3"),
        1
    );
    assert_eq!(
        s.enqueue_change("t/a", "I", "{}", false, 5, 0)
            .await
            .expect("at 5"),
        1
    );
    // A replica that read the run at 4, before the change at 5, comes late.
    assert_eq!(
        s.enqueue_change("t/a", "W", "{}", false, 4, 0)
            .await
            .expect("stale"),
        0
    );
    // A real change back is pushed.
    assert_eq!(
        s.enqueue_change("t/a", "W", "{}", false, 6, 0)
            .await
            .expect("at 6"),
        1
    );
    // A configuration registered later gets the current state, whatever came before.
    s.put(config("t/a", "c2"), Secret::default())
        .await
        .expect("put");
    assert_eq!(
        s.enqueue_change("t/a", "W", "{}", false, 6, 0)
            .await
            .expect("new config"),
        1
    );
    let mut states = Vec::new();
    for _ in 0..4 {
        for d in s.due(i64::MAX / 2, 10).await.expect("due") {
            states.push((d.config_id.clone(), d.state.clone()));
            s.delivered(&d).await.expect("settle");
        }
    }
    states.sort();
    let want: Vec<(String, String)> = [("c1", "I"), ("c1", "W"), ("c1", "W"), ("c2", "W")]
        .iter()
        .map(|(c, st)| (c.to_string(), st.to_string()))
        .collect();
    assert_eq!(states, want);
}

/// An `a2a.sqlite` written before `last_seq` existed opens and keeps its configs.
#[tokio::test]
async fn an_older_sqlite_side_file_gains_the_sequence_column() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("a2a.sqlite");
    rusqlite::Connection::open(&path)
        .expect("open")
        .execute_batch(
            "CREATE TABLE push_configs (run_id TEXT NOT NULL, config_id TEXT NOT NULL, url TEXT NOT NULL, scheme TEXT,
                 secret_ref TEXT NOT NULL, last_state TEXT, closed INTEGER NOT NULL DEFAULT 0, created_ms INTEGER NOT NULL,
                 PRIMARY KEY (run_id, config_id));
             INSERT INTO push_configs VALUES ('t/a', 'c1', 'https://r.test/h', NULL, 'sec-1', 'W', 0, 1);",
        )
        .expect("old schema");
    let s = SqlitePushStore::open(&path).expect("open old file");
    assert_eq!(s.list("t/a").await.expect("list").len(), 1);
    assert_eq!(
        s.enqueue_change("t/a", "I", "{}", false, 7, 0)
            .await
            .expect("enqueue"),
        1
    );
    drop(s);
    SqlitePushStore::open(&path).expect("reopen once migrated");
}
