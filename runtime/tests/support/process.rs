//! The real `openwop` binary as a child process: the one place that knows how to start
//! it and how a started host announces itself.

use std::path::Path;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::keys;

/// The binary cargo built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_openwop");

/// `openwop serve` on an ephemeral loopback port with its data in `data_dir`, stdout
/// piped (for [`listening`]), `RUST_LOG=warn`, killed when the child drops, no API keys.
/// Add flags, then [`spawn`].
pub fn serve(data_dir: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// [`serve`] with both tenants' keys (`--api-key`).
pub fn serve_keyed(data_dir: &Path) -> Command {
    let mut cmd = serve(data_dir);
    cmd.args(keys::api_key_args());
    cmd
}

/// `openwop serve` with both tenants' keys on `data_dir`, started: the child (killed when
/// it drops) and its base URL.
pub async fn start(data_dir: &Path) -> (Child, String) {
    spawn(&mut serve_keyed(data_dir)).await
}

/// Spawns `cmd` (stdout piped) and waits until it listens: the child and its base URL.
pub async fn spawn(cmd: &mut Command) -> (Child, String) {
    listening(cmd.spawn().expect("spawn openwop")).await
}

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
