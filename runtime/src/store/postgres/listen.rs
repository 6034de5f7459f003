//! LISTEN side of cross-replica wake-ups. One dedicated connection per store; when it
//! drops, subscribers get [`Wake::Resync`] every half second until it is back (the poll
//! fallback), and once more after, for whatever was announced while nobody listened.

use super::{HostEventRecord, Value, Wake, host_event_json};
use futures::StreamExt;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};
use tokio_postgres::{AsyncMessage, NoTls};

/// NOTIFY payloads must stay under 8000 bytes.
const MAX_PAYLOAD: usize = 7900;

const RETRY: Duration = Duration::from_millis(500);

/// The channel of one schema: replicas on the same tables share it.
pub(super) fn channel_for(schema: &str) -> String {
    let clean: String = schema.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
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
    channel: String,
    wakes: broadcast::Sender<Wake>,
    ready: tokio::sync::oneshot::Sender<()>,
) {
    let mut ready = Some(ready);
    loop {
        if let Err(e) = listen_once(&config, &channel, &wakes, &mut ready).await {
            if let Some(r) = ready.take() {
                let _ = r.send(());
            }
            tracing::warn!(error = %e, "lost the LISTEN connection; polling until it is back");
        }
        let _ = wakes.send(Wake::Resync);
        tokio::time::sleep(RETRY).await;
    }
}

async fn listen_once(
    config: &tokio_postgres::Config,
    channel: &str,
    wakes: &broadcast::Sender<Wake>,
    ready: &mut Option<tokio::sync::oneshot::Sender<()>>,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = config.connect(NoTls).await?;
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
    client.batch_execute(&format!("LISTEN \"{channel}\"")).await?;
    if let Some(r) = ready.take() {
        let _ = r.send(());
    }
    let _ = wakes.send(Wake::Resync);
    while let Some(n) = rx.recv().await {
        if let Some(w) = decode(n.payload()) {
            let _ = wakes.send(w);
        }
    }
    driver.abort();
    Ok(())
}
