//! `openwop backup`: a live SQLite data dir copied under write load restores into a host
//! that serves every run acknowledged before the backup began.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::json;
use support::KEY_A;
use support::rest::{Rest as _, start};

use support::process::BIN;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_under_write_load_restores_every_acknowledged_run() {
    let host = Arc::new(start().await);
    // Writers keep creating runs through the REST edge for the whole backup.
    let acknowledged = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..4 {
        let (host, acknowledged, stop) = (host.clone(), acknowledged.clone(), stop.clone());
        writers.push(tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let id = host.create(KEY_A, "echo", json!({"w": w, "i": i})).await;
                acknowledged.lock().unwrap().push(id);
                i += 1;
            }
        }));
    }
    // Let some runs exist first.
    while acknowledged.lock().unwrap().len() < 50 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let before: Vec<String> = acknowledged.lock().unwrap().clone();
    let backup_dir = tempfile::tempdir().expect("temp dir");
    let dest = backup_dir.path().join("copy");
    let source = host.data_dir().to_path_buf();
    let written = tokio::task::spawn_blocking({
        let dest = dest.clone();
        move || openwop::store::backup_sqlite(&source, &dest)
    })
    .await
    .expect("backup thread")
    .expect("backup");
    assert!(written.database_bytes > 0);
    // The writers went on during the backup: it did not stop the host.
    let during = acknowledged.lock().unwrap().len();
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.expect("writer");
    }
    assert!(during >= before.len());

    // A host on the copy serves every run acknowledged before the backup began.
    let restored = support::host()
        .data_dir(&dest)
        .try_start()
        .await
        .expect("a host starts on the backup");
    for id in &before {
        let r = restored
            .http
            .get(format!(
                "{}/runs/{}",
                restored.base,
                openwop::ids::project(id)
            ))
            .bearer_auth(KEY_A)
            .send()
            .await
            .expect("get");
        assert_eq!(r.status(), 200, "run {id} acknowledged before the backup");
    }
    let _ = restored.stopper.send(true);
    // The secrets beside the database came along (the routing secret the host wrote).
    assert!(
        written
            .files
            .iter()
            .any(|f| f.ends_with("agent-routing-secret")),
        "{:?}",
        written.files
    );
}

#[test]
fn backup_refuses_a_non_empty_destination_and_a_dir_without_a_database() {
    let dir = tempfile::tempdir().expect("temp dir");
    let full = dir.path().join("full");
    std::fs::create_dir_all(&full).unwrap();
    std::fs::write(full.join("x"), "x").unwrap();
    let out = std::process::Command::new(BIN)
        .args(["backup", "--data-dir"])
        .arg(dir.path())
        .arg(&full)
        .output()
        .expect("run openwop backup");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not an openwop SQLite data dir"), "{err}");

    let empty_source = dir.path().join("source");
    std::fs::create_dir_all(&empty_source).unwrap();
    std::fs::write(empty_source.join("openwop.sqlite3"), "").unwrap();
    let out = std::process::Command::new(BIN)
        .args(["backup", "--data-dir"])
        .arg(&empty_source)
        .arg(&full)
        .output()
        .expect("run openwop backup");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not empty"), "{err}");
}

/// PostgreSQL stores are backed up with `pg_dump` and restored with `pg_restore` (what
/// `openwop backup --help` says): a dump of a store, restored after the store was dropped,
/// serves the same runs.
#[tokio::test]
async fn a_postgresql_store_restores_from_pg_dump() {
    use openwop::store::scratch::{ScratchSchema, skip_postgres};
    if skip_postgres("a_postgresql_store_restores_from_pg_dump") {
        return;
    }
    let scratch = ScratchSchema::create().await.expect("scratch schema");
    let url = scratch.url();
    let mut ids = Vec::new();
    {
        let host = support::rest::start_with(|c| c.database = Some(url.clone())).await;
        for i in 0..5 {
            ids.push(host.create(KEY_A, "echo", json!({"i": i})).await);
        }
    }
    let dump_dir = tempfile::tempdir().expect("temp dir");
    let dump = dump_dir.path().join("openwop.dump");
    let status = std::process::Command::new("pg_dump")
        .args(["--format=custom", "--schema", &scratch.schema, "--file"])
        .arg(&dump)
        .arg(&scratch.base_url)
        .status()
        .expect("pg_dump (PostgreSQL's client tools) on PATH");
    assert!(status.success(), "pg_dump");
    // Lose the store, then restore it from the dump.
    let (client, conn) = tokio_postgres::connect(&scratch.base_url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    client
        .batch_execute(&format!("DROP SCHEMA \"{}\" CASCADE", scratch.schema))
        .await
        .expect("drop the store");
    let status = std::process::Command::new("pg_restore")
        .args(["--dbname", &scratch.base_url])
        .arg(&dump)
        .status()
        .expect("pg_restore");
    assert!(status.success(), "pg_restore");
    let host = support::rest::start_with(|c| c.database = Some(url.clone())).await;
    for id in &ids {
        let snap = host.snapshot(KEY_A, id).await;
        assert_eq!(snap["runId"], id.as_str());
    }
}
