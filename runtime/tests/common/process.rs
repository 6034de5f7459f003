//! The real `openwop` binary as a child process: the one place that knows how a started
//! host announces itself. Used by the process tests and the replica benchmark (by path).

use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

/// Waits (up to 30 s) for a child started with piped stdout to print
/// `openwop listening on URL`, and returns it with that URL. Its stdout keeps being
/// drained, so the child never blocks on a full pipe.
pub async fn listening(mut child: Child) -> (Child, String) {
    let mut lines = BufReader::new(child.stdout.take().expect("stdout is piped")).lines();
    let base = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(url) = line.strip_prefix("openwop listening on ") {
                return url.trim().to_owned();
            }
        }
        panic!("openwop exited before listening");
    })
    .await
    .expect("openwop starts");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, base)
}
