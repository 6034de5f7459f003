//! Fills a store through the host's own store layer, for `bench/scale/run.sh` (issue #33):
//! runs spread over 100 tenants (the benchmark's tenant `acme` holds half of them), each
//! with the four events of a one-node run and a terminal status (2% failed; 1% of the runs
//! are of the workflow `approval`, the rest `echo`; the same shares in every tenant), one
//! host event per 100 runs, and one run of `--big-run-events` events. Adds runs until the
//! store holds `--runs` of them, so a run can grow a store size by size; prints its
//! progress on standard error and one JSON line when done.
//!
//! ```text
//! cargo run --release --example scale_fill -- --data-dir DIR --runs 100000 --owner-from RUN_ID
//! cargo run --release --example scale_fill -- --database-url postgres://… --runs 100000 --owner-from RUN_ID
//! ```
//!
//! `--owner-from` names a run created over REST by the benchmark's key: its owner (tenant
//! and Subject) is copied onto every run of `acme`, so the host serves them to that key.

use std::time::Instant;

use futures::StreamExt;
use openwop::status::RunStatus;
use openwop::store::{
    CreateWith, Guard, HostEventRecord, NewEvent, NewRun, PgStore, RunPatch, RunStore, SqliteStore,
    Stores,
};
use serde_json::{Value, json};

struct Args {
    data_dir: Option<String>,
    database_url: Option<String>,
    runs: i64,
    owner_from: String,
    big_run_events: i64,
}

fn args() -> Result<Args, String> {
    let mut out = Args {
        data_dir: None,
        database_url: None,
        runs: 1000,
        owner_from: String::new(),
        big_run_events: 100_000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--data-dir" => out.data_dir = Some(value()?),
            "--database-url" => out.database_url = Some(value()?),
            "--runs" => out.runs = value()?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--owner-from" => out.owner_from = value()?,
            "--big-run-events" => {
                out.big_run_events = value()?
                    .parse()
                    .map_err(|e| format!("--big-run-events: {e}"))?
            }
            _ => return Err(format!("unknown argument {flag}")),
        }
    }
    if out.owner_from.is_empty() {
        return Err("--owner-from RUN_ID is required".into());
    }
    Ok(out)
}

fn events(run: i64, failed: bool) -> Vec<NewEvent> {
    let ev = |t: &str, node: Option<&str>, payload: Value| NewEvent {
        event_type: t.into(),
        node_id: node.map(str::to_owned),
        payload,
    };
    let last = if failed {
        ev(
            "run.failed",
            None,
            json!({"error": {"code": "node_failed", "message": "scale fill"}}),
        )
    } else {
        ev("run.completed", None, json!({"outputs": {"echo": run}}))
    };
    vec![
        ev("run.started", None, json!({"transport": "rest"})),
        ev("node.started", Some("echo"), json!({})),
        ev(
            "node.completed",
            Some("echo"),
            json!({"outputs": {"echo": run}}),
        ),
        last,
    ]
}

/// How many runs the fill writes at once.
const FILL_IN_FLIGHT: usize = 16;

/// Writes run `n` as the host would have: created running, then finished with its events.
async fn fill_one(store: &dyn RunStore, n: i64, acme: &str, acme_owner: &Value) {
    let (tenant, owner) = if n % 2 == 0 {
        (acme.to_owned(), acme_owner.clone())
    } else {
        let t = format!("t{:02}", n % 99);
        (t.clone(), json!({"tenant": t}))
    };
    // Counted in the tenant's own runs (n / 2): `n % 50 == 7` chose odd numbers only, so
    // the benchmark's tenant (the even ones) had no failed run and no `approval` run of
    // its own, and its filtered listings read empty or only the runs the measurement made.
    let failed = (n / 2) % 50 == 7;
    let workflow = if (n / 2) % 100 == 3 {
        "approval"
    } else {
        "echo"
    };
    let run_id = format!("{tenant}/scale-run-{n:010}");
    let run = NewRun {
        run_id: run_id.clone(),
        tenant: tenant.clone(),
        workflow_id: workflow.into(),
        status: RunStatus::Running,
        owner,
        transport: "rest".into(),
        inputs: json!({"n": n}),
        state: json!({}),
        annotations: Default::default(),
    };
    let mut with = CreateWith::default();
    if n % 100 == 0 {
        with.host_events.push(HostEventRecord {
            seq: 0,
            tenant: tenant.clone(),
            event_id: format!("scale-host-{n:09}"),
            event_type: "negotiation.decided".into(),
            delivery: "durable".into(),
            workspace_id: None,
            payload: json!({"protocol": "a2a", "outcome": "accepted"}),
            timestamp_ms: openwop::clock::now_ms(),
        });
    }
    store
        .create_run_with(run, None, with)
        .await
        .expect("create");
    let patch = RunPatch {
        status: Some(if failed {
            RunStatus::Failed
        } else {
            RunStatus::Completed
        }),
        ..Default::default()
    };
    store
        .advance(&run_id, Guard::StatusNotIn(&[]), patch, events(n, failed))
        .await
        .expect("advance");
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("scale_fill: {e}");
            std::process::exit(2);
        }
    };
    let stores = match (&args.data_dir, &args.database_url) {
        (Some(dir), None) => Stores::of(SqliteStore::open(dir.as_ref()).expect("open SQLite")),
        (None, Some(url)) => Stores::of(PgStore::connect(url).await.expect("connect PostgreSQL")),
        _ => {
            eprintln!("scale_fill: give one of --data-dir and --database-url");
            std::process::exit(2);
        }
    };
    let store = stores.runs;
    let template = store
        .get_run(&args.owner_from)
        .await
        .expect("read the owner run")
        .unwrap_or_else(|| panic!("no run {}", args.owner_from));
    let acme_owner = template.owner.clone();
    let acme = template.tenant.clone();
    let have: i64 = store
        .gauges()
        .await
        .expect("gauges")
        .runs_by_status
        .iter()
        .map(|(_, n)| n)
        .sum();
    let started = Instant::now();
    // Runs are numbered from the count already stored, so a second call continues. They
    // are written FILL_IN_FLIGHT at a time: one after another, each run's two commits
    // waited for a flush of their own (131 runs/s on PostgreSQL on a busy machine); in
    // flight together they share flushes (PostgreSQL's group commit, the SQLite writer's
    // groups). Runs are stored in about the order of their numbers (within the window),
    // which is all the measurement relies on.
    let made = futures::stream::iter(have..args.runs)
        .map(|n| fill_one(&*store, n, &acme, &acme_owner))
        .buffer_unordered(FILL_IN_FLIGHT)
        .fold(0_i64, |made, ()| async move {
            let made = made + 1;
            if made % 20_000 == 0 {
                let rate = made as f64 / started.elapsed().as_secs_f64();
                eprintln!(
                    "scale_fill: {} of {} runs ({rate:.0} runs/s)",
                    have + made,
                    args.runs
                );
            }
            made
        })
        .await;
    let big = format!("{acme}/scale-big-run-0001");
    let mut big_events = 0;
    if store.get_run(&big).await.expect("read").is_none() && args.big_run_events > 0 {
        let run = NewRun {
            run_id: big.clone(),
            tenant: acme.clone(),
            workflow_id: "echo".into(),
            status: RunStatus::Running,
            owner: acme_owner.clone(),
            transport: "rest".into(),
            inputs: json!({}),
            state: json!({}),
            annotations: Default::default(),
        };
        store
            .create_run(run, None)
            .await
            .expect("create the big run");
        while big_events < args.big_run_events {
            let batch = (args.big_run_events - big_events).min(1000);
            let events = (0..batch)
                .map(|i| NewEvent {
                    event_type: "scale.appended".into(),
                    node_id: Some("echo".into()),
                    payload: json!({"line": big_events + i}),
                })
                .collect();
            store
                .advance(&big, Guard::StatusNotIn(&[]), RunPatch::default(), events)
                .await
                .expect("append");
            big_events += batch;
        }
        let done = RunPatch {
            status: Some(RunStatus::Completed),
            ..Default::default()
        };
        store
            .advance(&big, Guard::StatusNotIn(&[]), done, Vec::new())
            .await
            .expect("complete the big run");
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{}",
        json!({"runs": have + made, "added": made, "big_run_events": big_events, "seconds": seconds})
    );
}
