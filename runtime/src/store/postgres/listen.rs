//! LISTEN side of cross-replica wake-ups. One dedicated connection per store; when it
//! drops, subscribers get [`Wake::Resync`] every half second until it is back (the poll
//! fallback), and once more after, for whatever was announced while nobody listened.

use super::{HostEventRecord, Value, Wake, WakeHub, host_event_json};
use futures::StreamExt;
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
    ready: tokio::sync::oneshot::Sender<()>,
) {
    let mut ready = Some(ready);
    loop {
        let listened = match &tls {
            super::tls::PgTls::Plain => {
                listen_once(&config, NoTls, &channel, &wakes, &mut ready).await
            }
            super::tls::PgTls::Rustls(make) => {
                listen_once(&config, make.clone(), &channel, &wakes, &mut ready).await
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

async fn listen_once<T>(
    config: &tokio_postgres::Config,
    tls: T,
    channel: &str,
    wakes: &WakeHub,
    ready: &mut Option<tokio::sync::oneshot::Sender<()>>,
) -> Result<(), tokio_postgres::Error>
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
        .batch_execute(&format!("LISTEN \"{channel}\""))
        .await?;
    wakes.publish(Wake::Resync);
    if let Some(r) = ready.take() {
        let _ = r.send(());
    }
    while let Some(n) = rx.recv().await {
        if let Some(w) = decode(n.payload()) {
            wakes.publish(w);
        }
    }
    driver.abort();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::scratch::{ScratchSchema, skip_postgres};
    use crate::store::{NewRun, PgStore, RunPatch, RunStatus, RunStore, Subscription, Topic};
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
