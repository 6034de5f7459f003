//! LISTEN side of cross-replica wake-ups. One dedicated connection per store; when it
//! drops, subscribers get [`Wake::Resync`] every half second until it is back (the poll
//! fallback), and once more after, for whatever was announced while nobody listened.

use super::{HostEventRecord, StoreError, Value, Wake, WakeHub, host_event_json};
use futures::StreamExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, NoTls};

/// NOTIFY payloads must stay under 8000 bytes.
const MAX_PAYLOAD: usize = 7900;

const RETRY: Duration = Duration::from_millis(500);

/// The channel of one schema: replicas on the same tables share it.
pub(super) fn channel_for(schema: &str) -> String {
    let clean: String = schema
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    let mut channel = format!("openwop_{clean}");
    channel.truncate(63);
    channel
}

pub(super) fn run_payload(run_id: &str) -> String {
    format!("r{run_id}")
}

/// A push configuration was registered (for this run): from now on push watchers must
/// look at the configurations of a run on its commits.
pub(super) fn push_payload(run_id: &str) -> String {
    format!("p{run_id}")
}

/// Whether the database holds a push configuration that may still push.
const ANY_PUSH_CONFIG: &str = "SELECT EXISTS (SELECT 1 FROM push_configs WHERE NOT closed)";

pub(super) fn host_payload(ev: &HostEventRecord) -> Option<String> {
    let text = format!("h{}", host_event_json(ev));
    (text.len() <= MAX_PAYLOAD).then_some(text)
}

fn decode(payload: &str) -> Option<Wake> {
    if let Some(run_id) = payload.strip_prefix('r') {
        return Some(Wake::Run(run_id.to_owned()));
    }
    let v: Value = serde_json::from_str(payload.strip_prefix('h')?).ok()?;
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    Some(Wake::Host(Box::new(HostEventRecord {
        seq: v.get("seq")?.as_i64()?,
        tenant: text("tenant")?,
        event_id: text("eventId")?,
        event_type: text("type")?,
        delivery: text("delivery")?,
        workspace_id: text("workspaceId"),
        payload: v.get("payload")?.clone(),
        timestamp_ms: v.get("ts")?.as_i64()?,
    })))
}

/// Listens until the store is dropped (which aborts this task); `ready` fires once the
/// first LISTEN is in place, or the first attempt failed.
pub(super) async fn run(
    config: tokio_postgres::Config,
    tls: super::tls::PgTls,
    channel: String,
    wakes: WakeHub,
    pool: deadpool_postgres::Pool,
    push_configured: Arc<AtomicBool>,
    ready: tokio::sync::oneshot::Sender<()>,
) {
    let mut ready = Some(ready);
    let heard = Heard {
        channel: &channel,
        wakes: &wakes,
        pool: &pool,
        push_configured: &push_configured,
    };
    loop {
        let listened = match &tls {
            super::tls::PgTls::Plain => listen_once(&config, NoTls, &heard, &mut ready).await,
            super::tls::PgTls::Rustls(make) => {
                listen_once(&config, make.clone(), &heard, &mut ready).await
            }
        };
        if let Err(e) = listened {
            if let Some(r) = ready.take() {
                let _ = r.send(());
            }
            tracing::warn!(error = %e, "lost the LISTEN connection; polling until it is back");
        }
        wakes.publish(Wake::Resync);
        tokio::time::sleep(RETRY).await;
    }
}

/// Where what the LISTEN connection hears goes.
struct Heard<'a> {
    channel: &'a str,
    wakes: &'a WakeHub,
    /// For the one look at the push configurations after each LISTEN (on a pooled
    /// connection: the listener's own keeps `LISTEN` as what it last ran).
    pool: &'a deadpool_postgres::Pool,
    push_configured: &'a AtomicBool,
}

async fn listen_once<T>(
    config: &tokio_postgres::Config,
    tls: T,
    heard: &Heard<'_>,
    ready: &mut Option<tokio::sync::oneshot::Sender<()>>,
) -> Result<(), StoreError>
where
    T: tokio_postgres::tls::MakeTlsConnect<tokio_postgres::Socket>,
    T::Stream: Send + 'static,
{
    let (client, mut connection) = config.connect(tls).await?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    // The connection must be polled for the LISTEN below to complete and for
    // notifications to arrive; it ends when `client` is dropped.
    let driver = tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(m) = messages.next().await {
            match m {
                Ok(AsyncMessage::Notification(n)) => {
                    if tx.send(n).is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "LISTEN connection failed");
                    return;
                }
            }
        }
    });
    client
        .batch_execute(&format!("LISTEN \"{}\"", heard.channel))
        .await?;
    // Registrations committed before the LISTEN were not announced to it: look once.
    // Later ones are announced before the wake-ups of every commit after them
    // (notifications arrive in commit order), so a watcher that skipped a commit's look
    // because none was known yet hears of that commit again after the flag is set.
    let any: bool = heard
        .pool
        .get()
        .await?
        .query_one(ANY_PUSH_CONFIG, &[])
        .await?
        .try_get(0)?;
    if any {
        heard.push_configured.store(true, Ordering::SeqCst);
    }
    heard.wakes.publish(Wake::Resync);
    if let Some(r) = ready.take() {
        let _ = r.send(());
    }
    while let Some(n) = rx.recv().await {
        if n.payload().starts_with('p') {
            heard.push_configured.store(true, Ordering::SeqCst);
        } else if let Some(w) = decode(n.payload()) {
            heard.wakes.publish(w);
        }
    }
    driver.abort();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::scratch::{ScratchSchema, skip_postgres};
    use crate::store::{
        InteropStore, NewRun, PgStore, RunPatch, RunStatus, RunStore, Secret, StoredConfig,
        Subscription, Topic,
    };
    use serde_json::json;

    async fn wait_for(rx: &mut Subscription, what: &str, pick: impl Fn(&Wake) -> bool) {
        tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                if pick(&rx.recv().await) {
                    return;
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no {what} within 5 s"));
    }

    /// The push watcher skips its look at a task's configurations while its store says
    /// none may exist; that is only safe if a registration on any replica is known to
    /// every other before the wake-up of any commit that follows it.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_push_registration_is_heard_before_the_wake_ups_of_later_commits() {
        if skip_postgres("a_push_registration_is_heard_before_the_wake_ups_of_later_commits") {
            return;
        }
        let schema = ScratchSchema::create()
            .await
            .expect("PostgreSQL for the listener test");
        let a = PgStore::connect(&schema.url()).await.expect("a");
        let b = PgStore::connect(&schema.url()).await.expect("b");
        assert!(!a.push_configs_possible() && !b.push_configs_possible());
        a.create_run(crate::store::suite::new_run("t/p"), None)
            .await
            .expect("create");
        let mut on_b = b.subscribe(&[Topic::AllRuns]);
        let config = StoredConfig {
            run_id: "t/p".into(),
            config_id: "c".into(),
            url: "https://r.test/h".into(),
            scheme: None,
            created_ms: 1,
        };
        let secret = Secret {
            token: Some("tok".into()),
            credentials: None,
        };
        a.push_put(config, secret).await.expect("register");
        a.advance(
            "t/p",
            crate::store::Guard::StatusIn(&[RunStatus::Running]),
            RunPatch::default(),
            vec![],
        )
        .await
        .expect("advance");
        wait_for(&mut on_b, "the later commit's wake-up", |w| {
            *w == Wake::Run("t/p".into())
        })
        .await;
        assert!(
            b.push_configs_possible(),
            "heard before the commit after it"
        );
        // A replica that starts later finds the registration when it starts listening.
        let c = PgStore::connect(&schema.url()).await.expect("c");
        assert!(c.push_configs_possible());
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_lost_listen_connection_polls_then_listens_again() {
        if skip_postgres("a_lost_listen_connection_polls_then_listens_again") {
            return;
        }
        let schema = ScratchSchema::create()
            .await
            .expect("PostgreSQL for the listener test");
        let watcher = PgStore::connect(&schema.url()).await.expect("watcher");
        let writer = PgStore::connect(&schema.url()).await.expect("writer");
        let run = NewRun {
            run_id: "t/r".into(),
            tenant: "t".into(),
            workflow_id: "w".into(),
            status: RunStatus::Running,
            owner: json!({}),
            transport: "rest".into(),
            inputs: json!({}),
            state: json!({}),
            annotations: Default::default(),
        };
        writer.create_run(run, None).await.expect("create");
        let mut rx = watcher.subscribe(&[Topic::Run("t/r".into())]);

        // Cut the watcher's LISTEN connection from the server side.
        let (admin, conn) = tokio_postgres::connect(&schema.base_url, NoTls)
            .await
            .expect("admin");
        tokio::spawn(conn);
        let listen = format!("LISTEN \"{}\"", channel_for(&schema.schema));
        let killed = admin
            .query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1",
                &[&listen],
            )
            .await
            .expect("terminate");
        assert_eq!(killed.len(), 2, "the watcher's and the writer's listeners");

        // Waiters are told to re-read while nobody listens, and once more after.
        wait_for(&mut rx, "Resync", |w| matches!(w, Wake::Resync)).await;
        // Back on LISTEN: another replica's commit reaches the watcher again.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            writer
                .advance(
                    "t/r",
                    crate::store::Guard::StatusIn(&[RunStatus::Running]),
                    RunPatch::default(),
                    vec![],
                )
                .await
                .expect("advance");
            let got = tokio::time::timeout(Duration::from_millis(300), async {
                loop {
                    if rx.recv().await == Wake::Run("t/r".into()) {
                        return;
                    }
                }
            })
            .await;
            if got.is_ok() {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the listener never came back"
            );
        }
    }
}
