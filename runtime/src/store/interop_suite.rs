//! One test suite for the interop side of both backends (A2A task side, push, MCP
//! sessions, claims): each test is written once against `Arc<dyn InteropStore>` and run on
//! SQLite and on PostgreSQL (a fresh schema per test), on the run suite's [`Backend`].

use super::postgres::CLAIM_MS;
use super::suite::Backend;
use super::*;
use crate::clock::now_ms;
use serde_json::json;

macro_rules! interop_suite {
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
                    if crate::store::scratch::skip_postgres(concat!("interop on_postgres::", stringify!($name))) {
                        return;
                    }
                    super::$name(super::Backend::postgres().await).await;
                }
            )*
            $(
                #[tokio::test(flavor = "multi_thread")]
                async fn $pg() {
                    if crate::store::scratch::skip_postgres(concat!("interop on_postgres::", stringify!($pg))) {
                        return;
                    }
                    super::$pg(super::Backend::postgres().await).await;
                }
            )*
        }
    };
}

interop_suite!(
    both: [
        claims_are_single_use_per_scope,
        a2a_context_binds_once_and_history_dedupes_by_message_id,
        mcp_sessions_open_expire_close_and_stay_with_their_principal,
        configs_are_scoped_to_their_task_and_deletes_take_the_secret,
        a_state_is_enqueued_once_and_deliveries_come_in_order_per_config,
        a_stale_reading_never_follows_a_newer_one,
        a_claimed_delivery_goes_to_one_replica_until_its_claim_runs_out,
        concurrent_registrations_never_pass_the_bound_on_configs_per_task,
    ],
    postgres_only: [
        a_change_seen_by_two_replicas_is_enqueued_once,
    ]
);

async fn claims_are_single_use_per_scope(b: Backend) {
    let store = b.interop.clone();
    let later = now_ms() + 60_000;
    assert!(store.claim_once("mcp", "n1", later).await.unwrap());
    assert!(!store.claim_once("mcp", "n1", later).await.unwrap());
    assert!(store.claim_once("other", "n1", later).await.unwrap());
    // Expired claims are forgotten; their tokens are refused for expiry before this.
    assert!(store.claim_once("old", "n2", now_ms() - 1).await.unwrap());
    assert!(store.claim_once("old", "n3", later).await.unwrap());
    assert!(store.claim_once("old", "n2", later).await.unwrap());
    let stores = [store.clone(), store.clone()];
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let s = stores[i % 2].clone();
            tokio::spawn(async move { s.claim_once("race", "n", later).await.unwrap() })
        })
        .collect();
    let mut won = 0;
    for t in tasks {
        won += usize::from(t.await.unwrap());
    }
    assert_eq!(won, 1);
}

async fn a2a_context_binds_once_and_history_dedupes_by_message_id(b: Backend) {
    let store = b.interop.clone();
    assert_eq!(
        store.a2a_bind_context("t/r", "ctx-1").await.unwrap(),
        "ctx-1"
    );
    assert_eq!(
        store.a2a_bind_context("t/r", "ctx-2").await.unwrap(),
        "ctx-1"
    );
    assert_eq!(
        store.a2a_context_of("t/r").await.unwrap().as_deref(),
        Some("ctx-1")
    );
    assert_eq!(store.a2a_context_of("t/other").await.unwrap(), None);
    let m1 = json!({"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "a"}]});
    let m2 = json!({"messageId": "m2", "role": "ROLE_USER", "parts": [{"text": "b"}]});
    assert!(
        store
            .a2a_append_message("t/r", "m1", m1.clone())
            .await
            .unwrap()
    );
    assert!(
        !store
            .a2a_append_message("t/r", "m1", m1.clone())
            .await
            .unwrap()
    );
    assert!(
        store
            .a2a_append_message("t/r", "m2", m2.clone())
            .await
            .unwrap()
    );
    assert!(
        store
            .a2a_append_message("t/other", "m1", m1.clone())
            .await
            .unwrap()
    );
    assert_eq!(store.a2a_history("t/r").await.unwrap(), vec![m1, m2]);
    let again = b.open_again().await.interop;
    assert_eq!(
        again.a2a_context_of("t/r").await.unwrap().as_deref(),
        Some("ctx-1")
    );
    assert_eq!(again.a2a_history("t/r").await.unwrap().len(), 2);
}

async fn mcp_sessions_open_expire_close_and_stay_with_their_principal(b: Backend) {
    let store = b.interop.clone();
    let later = now_ms() + 60_000;
    assert_eq!(store.session("s1").await.unwrap(), None);
    store
        .open_session("s1", "alice", "2025-11-25", later)
        .await
        .unwrap();
    let want = SessionRecord {
        principal_digest: "alice".into(),
        version: "2025-11-25".into(),
        expires_ms: later,
    };
    assert_eq!(store.session("s1").await.unwrap(), Some(want.clone()));
    // Another replica (or the host after a restart) sees the same session.
    let again = b.open_again().await.interop;
    assert_eq!(again.session("s1").await.unwrap(), Some(want));

    // Touching moves the expiry forward, never back.
    assert!(store.touch_session("s1", later + 1_000).await.unwrap());
    assert!(store.touch_session("s1", later - 5_000).await.unwrap());
    assert_eq!(
        store.session("s1").await.unwrap().unwrap().expires_ms,
        later + 1_000
    );
    assert!(!store.touch_session("nope", later).await.unwrap());

    // Only the principal that opened it closes it; closing is then final.
    assert!(!store.close_session("s1", "mallory").await.unwrap());
    assert!(store.session("s1").await.unwrap().is_some());
    assert!(again.close_session("s1", "alice").await.unwrap());
    assert_eq!(store.session("s1").await.unwrap(), None);
    assert!(!store.close_session("s1", "alice").await.unwrap());
    assert!(!store.touch_session("s1", later).await.unwrap());

    // An expired session is dead to every call, and the next open sweeps it away.
    store
        .open_session("old", "alice", "2025-11-25", now_ms() - 1)
        .await
        .unwrap();
    assert_eq!(store.session("old").await.unwrap(), None);
    assert!(!store.touch_session("old", later).await.unwrap());
    assert!(!store.close_session("old", "alice").await.unwrap());
    store
        .open_session("s2", "bob", "2025-11-25", later)
        .await
        .unwrap();
    store
        .open_session("old", "carol", "2025-11-25", later)
        .await
        .unwrap();
    assert_eq!(
        store
            .session("old")
            .await
            .unwrap()
            .unwrap()
            .principal_digest,
        "carol"
    );
}

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
    let s = b.interop.clone();
    let secret = Secret {
        token: Some("tok".into()),
        credentials: Some("cred".into()),
    };
    s.push_put(config("t/a", "c1"), secret.clone())
        .await
        .expect("put");
    assert_eq!(
        s.push_get("t/a", "c1").await.expect("get"),
        Some(config("t/a", "c1"))
    );
    // Another task's id and an id that never existed read the same: nothing.
    assert_eq!(s.push_get("t/b", "c1").await.expect("get"), None);
    assert_eq!(s.push_get("t/a", "c9").await.expect("get"), None);
    assert_eq!(
        s.push_secret("t/a", "c1").await.expect("secret"),
        Some(secret)
    );
    assert_eq!(s.push_secret("t/b", "c1").await.expect("secret"), None);
    assert!(!s.push_delete("t/b", "c1").await.expect("foreign delete"));
    assert!(s.push_get("t/a", "c1").await.expect("get").is_some());
    // Re-registering one id replaces its secret rather than adding another.
    s.push_put(
        config("t/a", "c1"),
        Secret {
            token: Some("tok2".into()),
            credentials: None,
        },
    )
    .await
    .expect("replace");
    assert_eq!(b.rows("push_secrets").await, 1);
    assert!(s.push_delete("t/a", "c1").await.expect("delete"));
    assert!(!s.push_delete("t/a", "c1").await.expect("again"));
    assert_eq!(s.push_secret("t/a", "c1").await.expect("secret"), None);
    assert_eq!(b.rows("push_secrets").await, 0);
}

async fn a_state_is_enqueued_once_and_deliveries_come_in_order_per_config(b: Backend) {
    let s = b.interop.clone();
    s.push_put(
        config("t/a", "c1"),
        Secret {
            token: Some("tok".into()),
            credentials: None,
        },
    )
    .await
    .expect("put");
    assert_eq!(
        s.push_enqueue("t/a", "W", "{}", false, 1, 0)
            .await
            .expect("enqueue"),
        1
    );
    assert_eq!(
        s.push_enqueue("t/a", "W", "{}", false, 1, 0)
            .await
            .expect("enqueue"),
        0
    );
    assert_eq!(
        s.push_enqueue("t/a", "C", "{}", true, 1, 0)
            .await
            .expect("enqueue"),
        1
    );
    assert_eq!(
        s.push_enqueue("t/a", "X", "{}", false, 1, 0)
            .await
            .expect("closed"),
        0
    );
    let due = s.push_due(0, 10).await.expect("due");
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].state, "W");
    s.push_delivered(&due[0]).await.expect("settle");
    let due = s.push_due(0, 10).await.expect("due");
    assert_eq!(due[0].state, "C");
    s.push_dead_letter(&due[0], 3, "receiver answered 500", 5)
        .await
        .expect("dead");
    let dead = s.push_dead_letters().await.expect("dl");
    assert_eq!(dead.len(), 1);
    assert_eq!((dead[0].state.as_str(), dead[0].attempts), ("C", 3));
    // The last push settles the configuration, and its secret, away.
    assert_eq!(s.push_get("t/a", "c1").await.expect("get"), None);
    assert!(s.push_runs().await.expect("runs").is_empty());
    assert_eq!(b.rows("push_secrets").await, 0);
    assert_eq!(b.rows("push_outbox").await, 0);
}

async fn a_change_seen_by_two_replicas_is_enqueued_once(b: Backend) {
    let other = b.open_again().await.interop;
    for i in 0..5 {
        b.interop
            .push_put(config("t/a", &format!("c{i}")), Secret::default())
            .await
            .expect("put");
    }
    // Registered through one replica, known to the other.
    assert_eq!(other.push_list("t/a").await.expect("list").len(), 5);
    let (x, y) = tokio::join!(
        b.interop.push_enqueue("t/a", "W", "{}", false, 1, 0),
        other.push_enqueue("t/a", "W", "{}", false, 1, 0)
    );
    assert_eq!(
        x.expect("a") + y.expect("b"),
        5,
        "one push per config, from either replica"
    );
    assert_eq!(b.rows("push_outbox").await, 5);
}

async fn a_claimed_delivery_goes_to_one_replica_until_its_claim_runs_out(b: Backend) {
    let other = b.open_again().await.interop;
    for i in 0..20 {
        let run = format!("t/{i}");
        b.interop
            .push_put(config(&run, "c"), Secret::default())
            .await
            .expect("put");
        b.interop
            .push_enqueue(&run, "W", "{}", false, 1, 0)
            .await
            .expect("enqueue");
    }
    let (x, y) = tokio::join!(b.interop.push_due(0, 32), other.push_due(0, 32));
    let (x, y) = (x.expect("a"), y.expect("b"));
    let mut ids: Vec<String> = x.iter().chain(&y).map(|d| d.delivery_id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(x.len() + y.len(), 20, "every delivery handed out once");
    assert_eq!(ids.len(), 20, "no delivery handed to both replicas");
    // While claimed, nobody else gets them.
    assert!(
        other
            .push_due(CLAIM_MS - 1, 32)
            .await
            .expect("due")
            .is_empty()
    );
    // The claimant died: once the claim runs out, another replica takes the rows over,
    // with no attempt counted for the one that never finished.
    let again = other.push_due(CLAIM_MS, 32).await.expect("due");
    assert_eq!(again.len(), 20);
    assert!(again.iter().all(|d| d.attempts == 0));
    // A settled one is gone for everyone.
    other.push_delivered(&again[0]).await.expect("settle");
    assert_eq!(
        b.interop
            .push_due(3 * CLAIM_MS, 32)
            .await
            .expect("due")
            .len(),
        19
    );
}

async fn a_stale_reading_never_follows_a_newer_one(b: Backend) {
    let s = b.interop.clone();
    s.push_put(config("t/a", "c1"), Secret::default())
        .await
        .expect("put");
    assert_eq!(
        s.push_enqueue("t/a", "W", "{}", false, 3, 0)
            .await
            .expect("at 3"),
        1
    );
    assert_eq!(
        s.push_enqueue("t/a", "I", "{}", false, 5, 0)
            .await
            .expect("at 5"),
        1
    );
    // A replica that read the run at 4, before the change at 5, comes late.
    assert_eq!(
        s.push_enqueue("t/a", "W", "{}", false, 4, 0)
            .await
            .expect("stale"),
        0
    );
    // A real change back is pushed.
    assert_eq!(
        s.push_enqueue("t/a", "W", "{}", false, 6, 0)
            .await
            .expect("at 6"),
        1
    );
    // A configuration registered later gets the current state, whatever came before.
    s.push_put(config("t/a", "c2"), Secret::default())
        .await
        .expect("put");
    assert_eq!(
        s.push_enqueue("t/a", "W", "{}", false, 6, 0)
            .await
            .expect("new config"),
        1
    );
    let mut states = Vec::new();
    for _ in 0..4 {
        for d in s.push_due(i64::MAX / 2, 10).await.expect("due") {
            states.push((d.config_id.clone(), d.state.clone()));
            s.push_delivered(&d).await.expect("settle");
        }
    }
    states.sort();
    let want: Vec<(String, String)> = [("c1", "I"), ("c1", "W"), ("c1", "W"), ("c2", "W")]
        .iter()
        .map(|(c, st)| (c.to_string(), st.to_string()))
        .collect();
    assert_eq!(states, want);
}

/// A data dir of the release that kept push state in `a2a.sqlite` (here one from before
/// `last_seq` existed): its rows move into the main file once, the old file is retired
/// and keeps no secret.
#[tokio::test]
async fn an_older_push_side_file_is_taken_in_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let old = dir.path().join("a2a.sqlite");
    rusqlite::Connection::open(&old)
        .expect("open")
        .execute_batch(
            "CREATE TABLE push_configs (run_id TEXT NOT NULL, config_id TEXT NOT NULL, url TEXT NOT NULL, scheme TEXT,
                 secret_ref TEXT NOT NULL, last_state TEXT, closed INTEGER NOT NULL DEFAULT 0, created_ms INTEGER NOT NULL,
                 PRIMARY KEY (run_id, config_id));
             CREATE TABLE push_secrets (secret_ref TEXT PRIMARY KEY, token TEXT, credentials TEXT);
             CREATE TABLE push_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, delivery_id TEXT NOT NULL UNIQUE,
                 run_id TEXT NOT NULL, config_id TEXT NOT NULL, state TEXT NOT NULL, body TEXT NOT NULL,
                 attempts INTEGER NOT NULL DEFAULT 0, next_ms INTEGER NOT NULL, last INTEGER NOT NULL);
             INSERT INTO push_configs VALUES ('t/a', 'c1', 'https://r.test/h', 'Basic', 'sec-1', 'W', 0, 1);
             INSERT INTO push_secrets VALUES ('sec-1', NULL, 'old-credential');
             INSERT INTO push_outbox (delivery_id, run_id, config_id, state, body, attempts, next_ms, last)
                 VALUES ('pd-1', 't/a', 'c1', 'W', '{}', 2, 5, 0);",
        )
        .expect("old schema");
    let store = SqliteStore::open(dir.path()).expect("open a data dir with an old side file");
    assert_eq!(
        store.push_list("t/a").await.expect("list"),
        [config_basic()]
    );
    assert_eq!(
        store.push_secret("t/a", "c1").await.expect("secret"),
        Some(Secret {
            token: None,
            credentials: Some("old-credential".into())
        })
    );
    let due = store.push_due(10, 10).await.expect("due");
    assert_eq!(
        (due.len(), due[0].delivery_id.as_str(), due[0].attempts),
        (1, "pd-1", 2)
    );
    // The old reading (no sequence) never blocks a new state.
    assert_eq!(
        store
            .push_enqueue("t/a", "I", "{}", false, 7, 0)
            .await
            .expect("enqueue"),
        1
    );
    assert!(!old.exists(), "the side file is never read again");
    let retired = dir.path().join("a2a.sqlite.imported");
    let secrets: i64 = rusqlite::Connection::open(&retired)
        .expect("retired file")
        .query_row("SELECT COUNT(*) FROM push_secrets", [], |r| r.get(0))
        .expect("count");
    assert_eq!(secrets, 0, "no secret is left outside the main file");
    drop(store);
    // A restart finds nothing more to take in and keeps what it has.
    let again = SqliteStore::open(dir.path()).expect("reopen");
    assert_eq!(again.push_list("t/a").await.expect("list").len(), 1);
}

fn config_basic() -> StoredConfig {
    StoredConfig {
        scheme: Some("Basic".into()),
        ..config("t/a", "c1")
    }
}

async fn concurrent_registrations_never_pass_the_bound_on_configs_per_task(b: Backend) {
    let other = b.open_again().await.interop;
    let puts: Vec<_> = (0..12)
        .map(|i| {
            let store = if i % 2 == 0 {
                b.interop.clone()
            } else {
                other.clone()
            };
            tokio::spawn(async move {
                store
                    .push_put_within(config("t/a", &format!("c{i}")), Secret::default(), 5)
                    .await
                    .expect("put")
            })
        })
        .collect();
    let mut accepted = 0;
    for p in puts {
        accepted += usize::from(p.await.expect("join"));
    }
    assert_eq!(accepted, 5, "exactly the bound, whoever raced");
    assert_eq!(b.interop.push_list("t/a").await.expect("list").len(), 5);
    // Replacing a held one by its id passes at the bound; another task has its own.
    let held = b.interop.push_list("t/a").await.expect("list")[0]
        .config_id
        .clone();
    assert!(
        b.interop
            .push_put_within(config("t/a", &held), Secret::default(), 5)
            .await
            .expect("replace")
    );
    assert!(
        b.interop
            .push_put_within(config("t/b", "c0"), Secret::default(), 5)
            .await
            .expect("other task")
    );
    assert_eq!(
        b.rows("push_secrets").await,
        6,
        "no secret left behind by a refusal"
    );
}
