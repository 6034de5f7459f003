//! One test suite for every store backend: each test below is written once against
//! `Arc<dyn RunStore>` and run on SQLite and on PostgreSQL (a fresh schema per test); the
//! interop side has its own (`interop_suite.rs`) on the same [`Backend`].
//! PostgreSQL being unreachable fails its tests unless `OPENWOP_SKIP_POSTGRES=1`.

use super::scratch::ScratchSchema;
use super::*;
use crate::clock::now_ms;
use crate::status::RunStatus;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// A backend under test (both of its stores) and what it takes to open it again.
pub struct Backend {
    pub runs: Arc<dyn RunStore>,
    pub interop: Arc<dyn InteropStore>,
    pub dir: Option<tempfile::TempDir>,
    pub schema: Option<ScratchSchema>,
}

impl Backend {
    pub fn sqlite() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let stores = Stores::of(SqliteStore::open(dir.path()).expect("open sqlite"));
        Self {
            runs: stores.runs,
            interop: stores.interop,
            dir: Some(dir),
            schema: None,
        }
    }

    pub async fn postgres() -> Self {
        let schema = ScratchSchema::create()
            .await
            .expect("PostgreSQL for the store suite");
        let stores = Stores::of(
            PgStore::connect(&schema.url())
                .await
                .expect("connect PostgreSQL"),
        );
        Self {
            runs: stores.runs,
            interop: stores.interop,
            dir: None,
            schema: Some(schema),
        }
    }

    /// Another store on the same data: a restarted host, or a second replica.
    pub async fn open_again(&self) -> Stores {
        match (&self.dir, &self.schema) {
            (Some(dir), _) => Stores::of(SqliteStore::open(dir.path()).expect("reopen")),
            (_, Some(schema)) => {
                Stores::of(PgStore::connect(&schema.url()).await.expect("reconnect"))
            }
            _ => unreachable!("a backend has a dir or a schema"),
        }
    }

    /// Runs `sql` over a connection of the test's own (to set up what no store call does).
    pub async fn execute(&self, sql: &str) {
        match (&self.dir, &self.schema) {
            (Some(dir), _) => {
                rusqlite::Connection::open(dir.path().join(sqlite::FILE))
                    .expect("open")
                    .execute_batch(sql)
                    .expect("execute");
            }
            (_, Some(schema)) => {
                let (client, conn) = tokio_postgres::connect(&schema.url(), tokio_postgres::NoTls)
                    .await
                    .expect("connect");
                tokio::spawn(conn);
                client.batch_execute(sql).await.expect("execute");
            }
            _ => unreachable!("a backend has a dir or a schema"),
        }
    }

    /// Rows of `table`, counted over a connection of the test's own.
    pub async fn rows(&self, table: &str) -> i64 {
        let sql = format!("SELECT COUNT(*) FROM {table}");
        match (&self.dir, &self.schema) {
            (Some(dir), _) => rusqlite::Connection::open(dir.path().join(sqlite::FILE))
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

macro_rules! store_suite {
    ($($name:ident),* $(,)?) => {
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
                    if crate::store::scratch::skip_postgres(concat!("on_postgres::", stringify!($name))) {
                        return;
                    }
                    super::$name(super::Backend::postgres().await).await;
                }
            )*
        }
    };
}

store_suite!(
    concurrent_appends_get_contiguous_sequences,
    guard_refuses_and_leaves_the_log_unchanged,
    data_survives_reopening,
    a_run_keeps_what_its_creator_attached,
    idempotency_replays_the_same_body_and_refuses_another,
    concurrent_creates_with_one_key_make_one_run,
    concurrent_plain_creations_are_each_written_once_and_a_bad_one_fails_alone,
    a_creation_writes_its_a2a_task_and_host_events_in_its_transaction,
    a_creation_applies_its_first_step_in_its_transaction,
    concurrent_writes_that_fail_midway_leave_nothing_and_others_stand,
    concurrent_resolves_exactly_one_wins,
    list_runs_newest_first_with_filters_and_cursor,
    run_queries_filter_by_status_workflow_context_time_and_interrupt,
    run_queries_page_by_update_with_a_stable_cursor_and_a_total,
    unfinished_runs_skip_finished_ones,
    host_events_keep_order_and_ephemeral_ones_are_only_published,
    a_host_event_wakes_its_tenant_on_every_replica_and_no_other,
    advance_wakes_subscribers,
    a_commit_on_one_run_does_not_wake_the_subscribers_of_another,
    a_lease_is_exclusive_until_released_or_expired,
    a_write_under_a_lost_lease_changes_nothing,
    a_shared_secret_is_the_first_one_stored,
    host_events_are_pruned_by_count_and_age_never_past_a_floor,
    store_gauges_and_schema_version_read_the_database,
    a_run_detail_reads_the_run_its_open_interrupt_and_its_context,
    hot_run_listings_read_one_index_range_in_order,
    the_driver_sweeps_read_live_runs_through_runs_live,
    host_event_retention_reads_by_index_not_the_whole_log,
    run_details_read_a_page_in_the_order_asked,
    run_totals_follow_creates_status_changes_and_deletes,
    concurrent_creates_on_two_replicas_lose_no_count,
    run_totals_read_a_few_counter_rows,
    a_detail_stamp_moves_with_each_write_of_its_run_before_its_answer,
);

/// A connection to `schema` with sequential scans, bitmap scans and sorts priced out, so a
/// plan shows whether an ordered index path exists at all (on a near-empty table the
/// planner would rightly prefer a scan).
async fn priced_out(schema: &ScratchSchema) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(&schema.url(), tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    client
        .batch_execute(
            "SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off",
        )
        .await
        .expect("set");
    client
}

/// The plan of a fixed statement on `b` (no filter shapes), one line per step; PostgreSQL
/// priced as in [`plan`].
async fn plan_of(b: &Backend, pg: &'static str, text: &[&str], int: &[i64]) -> String {
    match (&b.dir, &b.schema) {
        (Some(dir), _) => {
            let conn = rusqlite::Connection::open(dir.path().join(sqlite::FILE)).expect("open");
            let lite = super::migrate::to_sqlite(pg);
            let mut stmt = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {lite}"))
                .expect("prepare");
            let mut values: Vec<rusqlite::types::Value> = text
                .iter()
                .map(|t| rusqlite::types::Value::Text(t.to_string()))
                .collect();
            values.extend(int.iter().map(|i| rusqlite::types::Value::Integer(*i)));
            let rows = stmt
                .query_map(rusqlite::params_from_iter(values), |r| {
                    r.get::<_, String>(3)
                })
                .expect("plan");
            rows.map(|r| r.expect("row")).collect::<Vec<_>>().join("\n")
        }
        (_, Some(schema)) => {
            let client = priced_out(schema).await;
            let texts: Vec<String> = text.iter().map(|t| t.to_string()).collect();
            let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = Vec::new();
            for t in &texts {
                params.push(t);
            }
            for i in int {
                params.push(i);
            }
            let rows = client
                .query(&format!("EXPLAIN {pg}"), &params)
                .await
                .expect("plan");
            rows.iter()
                .map(|r| r.get::<_, String>(0))
                .collect::<Vec<_>>()
                .join("\n")
        }
        _ => unreachable!("a backend has a dir or a schema"),
    }
}

/// Issue #33: host-event retention runs at start-up and every minute; its look-ups read
/// `host_events_by_tenant` a key at a time (the tenants one index probe each, the age cut
/// from the old end), never the whole host log.
async fn host_event_retention_reads_by_index_not_the_whole_log(b: Backend) {
    let sqlite = b.dir.is_some();
    for (name, statement, text, int) in [
        ("tenants", sql::HOST_EVENT_TENANTS, &[][..], &[][..]),
        ("age cut", sql::HOST_EVENT_AGE_CUT, &["t"][..], &[1_000][..]),
    ] {
        let plan = plan_of(&b, statement, text, int).await;
        assert!(
            plan.contains("host_events_by_tenant"),
            "{name}: not through host_events_by_tenant:\n{plan}"
        );
        if sqlite {
            assert!(
                !plan.contains("SCAN host_events") && !plan.contains("TEMP B-TREE"),
                "{name}: reads the host log:\n{plan}"
            );
        } else {
            assert!(
                ![
                    "Seq Scan",
                    "Sort",
                    "Unique",
                    "HashAggregate",
                    "GroupAggregate"
                ]
                .iter()
                .any(|step| plan.contains(step)),
                "{name}: reads the host log:\n{plan}"
            );
        }
    }
}

/// `listRuns` reads its page's snapshots in one store call: each detail as `run_detail`
/// gives it (the open interrupt included), in the order asked, a missing id left out.
async fn run_details_read_a_page_in_the_order_asked(b: Backend) {
    for id in ["t/d1", "t/d2", "t/d3"] {
        b.runs.create_run(new_run(id), None).await.expect("create");
    }
    suspend(&b.runs, "t/d2").await;
    let asked: Vec<String> = ["t/d3", "t/none", "t/d1", "t/d2"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let got = b.runs.run_details(asked).await.expect("details");
    let mut want = Vec::new();
    for id in ["t/d3", "t/d1", "t/d2"] {
        want.push(
            b.runs
                .run_detail(id)
                .await
                .expect("detail")
                .expect("exists"),
        );
    }
    assert_eq!(got, want);
    assert!(got[2].open_interrupt.is_some(), "{got:?}");
    assert!(
        b.runs
            .run_details(Vec::new())
            .await
            .expect("none")
            .is_empty()
    );
}

/// The plan of a run query's statement on `b`, one line per step. PostgreSQL is asked with
/// sequential scans, bitmap scans and sorts priced out, so the plan shows whether an
/// ordered index path exists at all (on a near-empty table it would rightly prefer a scan).
async fn plan(b: &Backend, statement: sql::RunStatement, q: &RunQuery) -> String {
    let f = sql::filter(q);
    let text = sql::run_statement(statement, q, &f);
    let (before, after_ms, after_id): (Option<i64>, Option<i64>, Option<&str>) = match &q.order {
        RunOrder::Created { before } => (*before, None, None),
        RunOrder::Updated { after } => (
            None,
            after.as_ref().map(|c| c.updated_ms),
            after.as_ref().map(|c| c.run_id.as_str()),
        ),
    };
    let limit = 20_i64;
    match (&b.dir, &b.schema) {
        (Some(dir), _) => {
            let conn = rusqlite::Connection::open(dir.path().join(sqlite::FILE)).expect("open");
            let lite = super::migrate::to_sqlite(text);
            let mut stmt = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {lite}"))
                .expect("prepare");
            let mut values: Vec<Box<dyn rusqlite::ToSql>> = vec![
                Box::new(q.tenant.clone()),
                Box::new(f.statuses.clone()),
                Box::new(q.workflow_id.clone()),
                Box::new(q.context_id.clone()),
                Box::new(q.updated_since_ms),
                Box::new(f.with_kinds.clone()),
                Box::new(f.without_kinds.clone()),
            ];
            match statement {
                sql::RunStatement::ByCreation => {
                    values.push(Box::new(before));
                    values.push(Box::new(limit));
                }
                sql::RunStatement::ByUpdate => {
                    values.push(Box::new(after_ms));
                    values.push(Box::new(after_id.map(str::to_owned)));
                    values.push(Box::new(limit));
                }
                sql::RunStatement::Count => {}
            }
            let params: Vec<&dyn rusqlite::ToSql> = values.iter().map(|v| v.as_ref()).collect();
            let rows = stmt
                .query_map(params.as_slice(), |r| r.get::<_, String>(3))
                .expect("plan");
            rows.map(|r| r.expect("row")).collect::<Vec<_>>().join("\n")
        }
        (_, Some(schema)) => {
            let client = priced_out(schema).await;
            let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![
                &q.tenant,
                &f.statuses,
                &q.workflow_id,
                &q.context_id,
                &q.updated_since_ms,
                &f.with_kinds,
                &f.without_kinds,
            ];
            match statement {
                sql::RunStatement::ByCreation => {
                    params.push(&before);
                    params.push(&limit);
                }
                sql::RunStatement::ByUpdate => {
                    params.push(&after_ms);
                    params.push(&after_id);
                    params.push(&limit);
                }
                sql::RunStatement::Count => {}
            }
            let rows = client
                .query(&format!("EXPLAIN {text}"), &params)
                .await
                .expect("plan");
            rows.iter()
                .map(|r| r.get::<_, String>(0))
                .collect::<Vec<_>>()
                .join("\n")
        }
        _ => unreachable!("a backend has a dir or a schema"),
    }
}

/// Issue #33: a page of runs filtered by workflow or status (the filters an operator's
/// dashboard and A2A `ListTasks` use), and a page deep by cursor, read one index range in
/// the page's order: no scan of the tenant's runs, no sort of what matched.
async fn hot_run_listings_read_one_index_range_in_order(b: Backend) {
    b.runs
        .create_run(new_run("t/plan"), None)
        .await
        .expect("create");
    let sqlite = b.dir.is_some();
    let base = RunQuery::newest_first("t", 20);
    let by_workflow = RunQuery {
        workflow_id: Some("w".into()),
        ..base.clone()
    };
    let by_status = RunQuery {
        statuses: vec![RunStatus::Failed],
        ..base.clone()
    };
    let deep = RunQuery {
        order: RunOrder::Created {
            before: Some(1_000),
        },
        ..by_workflow.clone()
    };
    let updated = RunQuery {
        order: RunOrder::Updated { after: None },
        ..base.clone()
    };
    // A2A ListTasks (and MCP's task listing) by a state: one status, newest status change
    // first, on the first page and after a cursor.
    let by_status_updated = RunQuery {
        statuses: vec![RunStatus::Failed],
        ..updated.clone()
    };
    let by_status_updated_deep = RunQuery {
        order: RunOrder::Updated {
            after: Some(UpdatedCursor {
                updated_ms: 1_000,
                run_id: "t/plan".into(),
            }),
        },
        ..by_status_updated.clone()
    };
    // A2A ListTasks by contextId: the context's few runs, read by key and then sorted.
    let by_context = RunQuery {
        context_id: Some("ctx".into()),
        ..updated.clone()
    };
    let plan_text = plan(&b, sql::RunStatement::ByUpdate, &by_context).await;
    assert!(
        plan_text.contains("a2a_tasks_by_context"),
        "by context: not through a2a_tasks_by_context:\n{plan_text}"
    );
    if sqlite {
        assert!(
            !plan_text.contains("SCAN runs") && !plan_text.contains("CORRELATED"),
            "by context: reads the tenant's runs:\n{plan_text}"
        );
    } else {
        assert!(
            !plan_text.contains("Seq Scan") && !plan_text.contains("SubPlan"),
            "by context: reads the tenant's runs:\n{plan_text}"
        );
    }
    for (name, statement, q, index) in [
        (
            "every run",
            sql::RunStatement::ByCreation,
            &base,
            "runs_by_tenant",
        ),
        (
            "by workflow",
            sql::RunStatement::ByCreation,
            &by_workflow,
            "runs_by_workflow",
        ),
        (
            "by status",
            sql::RunStatement::ByCreation,
            &by_status,
            "runs_by_tenant_status",
        ),
        (
            "by workflow, deep",
            sql::RunStatement::ByCreation,
            &deep,
            "runs_by_workflow",
        ),
        (
            "by update",
            sql::RunStatement::ByUpdate,
            &updated,
            "runs_by_update",
        ),
        (
            "count by status",
            sql::RunStatement::Count,
            &by_status,
            // Either index holds the status's runs as one range.
            "runs_by_tenant_status|runs_by_status_update",
        ),
        (
            "by status, by update",
            sql::RunStatement::ByUpdate,
            &by_status_updated,
            "runs_by_status_update",
        ),
        (
            "by status, by update, deep",
            sql::RunStatement::ByUpdate,
            &by_status_updated_deep,
            "runs_by_status_update",
        ),
    ] {
        let plan = plan(&b, statement, q).await;
        assert!(
            index.split('|').any(|i| plan.contains(i)),
            "{name}: not through {index}:\n{plan}"
        );
        if sqlite {
            assert!(!plan.contains("TEMP B-TREE"), "{name}: sorts:\n{plan}");
        } else {
            assert!(!plan.contains("Sort"), "{name}: sorts:\n{plan}");
            assert!(!plan.contains("Seq Scan"), "{name}: scans:\n{plan}");
        }
    }
}

/// Issue #33: the look for runs to drive (every unfinished run at start-up; on PostgreSQL
/// also the sweep for runs no replica drives, every half lease) reads the partial index
/// of live runs in order, however many finished runs the table holds: an ordered index
/// path exists (sequential scans and sorts priced out, as in [`plan`]).
async fn the_driver_sweeps_read_live_runs_through_runs_live(b: Backend) {
    b.runs
        .create_run(new_run("t/sweep"), None)
        .await
        .expect("create");
    let mut plans = vec![(
        "unfinished runs",
        plan_of(&b, sql::UNFINISHED_RUNS, &[], &[]).await,
    )];
    match (&b.dir, &b.schema) {
        (Some(dir), _) => {
            let conn = rusqlite::Connection::open(dir.path().join(sqlite::FILE)).expect("open");
            let lite = super::migrate::to_sqlite(sql::RUN_IDS_IN);
            let mut stmt = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {lite}"))
                .expect("prepare");
            let rows = stmt
                .query_map([",running,pending,"], |r| r.get::<_, String>(3))
                .expect("plan");
            plans.push((
                "run ids by status",
                rows.map(|r| r.expect("row")).collect::<Vec<_>>().join("\n"),
            ));
        }
        (_, Some(schema)) => {
            let client = priced_out(schema).await;
            let statuses = vec!["running", "pending"];
            let rows = client
                .query(&format!("EXPLAIN {}", postgres::UNLEASED), &[&statuses])
                .await
                .expect("plan");
            plans.push((
                "unleased runs",
                rows.iter()
                    .map(|r| r.get::<_, String>(0))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ));
        }
        _ => unreachable!("a backend has a dir or a schema"),
    }
    for (name, plan) in plans {
        assert!(
            plan.contains("runs_live"),
            "{name}: not through runs_live:\n{plan}"
        );
        if b.dir.is_some() {
            // `SCAN runs USING INDEX runs_live` walks the partial index in order: only
            // the live runs. A bare `SCAN runs` would be the table.
            assert!(
                !plan
                    .lines()
                    .any(|l| l.trim() == "SCAN runs" || l.contains("TEMP B-TREE")),
                "{name}: scans or sorts:\n{plan}"
            );
        } else {
            assert!(
                !plan.contains("Seq Scan") && !plan.contains("Sort"),
                "{name}: scans or sorts:\n{plan}"
            );
        }
    }
}

async fn host_events_are_pruned_by_count_and_age_never_past_a_floor(b: Backend) {
    let s = b.runs.clone();
    let mut seqs = Vec::new();
    for n in 0..10 {
        seqs.push(
            s.append_host_event(host_event("t", "durable", n))
                .await
                .expect("append")
                .seq,
        );
    }
    let mut old = host_event("u", "durable", 0);
    old.timestamp_ms = 1_000;
    s.append_host_event(old).await.expect("old");
    s.append_host_event(host_event("u", "durable", 1))
        .await
        .expect("new");
    // A stream of `t` has read up to the third event: nothing after it goes.
    let floors = std::collections::HashMap::from([("t".to_owned(), seqs[2])]);
    let dropped = s.prune_host_events(4, 2_000, floors).await.expect("prune");
    assert_eq!(dropped, 3 + 1, "t through its floor, u's old one");
    let left = s.host_events("t", -1, 100).await.expect("t");
    assert_eq!(left.first().map(|e| e.seq), Some(seqs[3]));
    assert_eq!(s.host_events("u", -1, 100).await.expect("u").len(), 1);
    // Without a stream the count bound applies in full; the newest are kept.
    s.prune_host_events(4, 2_000, Default::default())
        .await
        .expect("prune");
    let left: Vec<i64> = s
        .host_events("t", -1, 100)
        .await
        .expect("t")
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(left, seqs[6..]);
    // New events still get higher positions than any ever handed out.
    let next = s
        .append_host_event(host_event("t", "durable", 99))
        .await
        .expect("append");
    assert!(next.seq > seqs[9]);
}

async fn store_gauges_and_schema_version_read_the_database(b: Backend) {
    let s = b.runs.clone();
    assert_eq!(
        s.schema_version().await.expect("version"),
        crate::store::latest_migration()
    );
    s.create_run(new_run(RUN), None).await.expect("create");
    let g = s.gauges().await.expect("gauges");
    assert_eq!(g.runs_by_status, [(RunStatus::Running, 1)]);
    assert_eq!((g.push_pending, g.push_dead_letters), (0, 0));
}

async fn a_run_detail_reads_the_run_its_open_interrupt_and_its_context(b: Backend) {
    let s = b.runs.clone();
    assert_eq!(s.run_detail("t/none").await.unwrap(), None);
    s.create_run(new_run("t/d"), None).await.unwrap();
    // The whole run but its state, which a detail does not read.
    let stateless = |mut run: RunRecord| {
        assert_ne!(run.state, Value::Null);
        run.state = Value::Null;
        run
    };
    let plain = s.run_detail("t/d").await.unwrap().expect("detail");
    assert_eq!(
        Some(plain.run),
        s.get_run("t/d").await.unwrap().map(stateless)
    );
    assert_eq!((plain.open_interrupt, plain.context_id), (None, None));

    // Suspended, with a resolved interrupt at another node beside the open one.
    suspend(&s, "t/d").await;
    s.resolve_interrupt("t/d", "approve", json!("ok"), resume_running())
        .await
        .unwrap();
    let patch = RunPatch {
        status: Some(RunStatus::WaitingInput),
        open_interrupt: Some(NewInterrupt {
            node_id: "ask".into(),
            interrupt_id: "t/d-ask".into(),
            kind: "clarification".into(),
            data: json!({"q": 1}),
        }),
        ..Default::default()
    };
    s.advance("t/d", running(), patch, vec![ev()])
        .await
        .unwrap();
    b.interop.a2a_bind_context("t/d", "ctx-d").await.unwrap();
    let detail = s.run_detail("t/d").await.unwrap().expect("detail");
    assert_eq!(
        Some(&detail.run),
        s.get_run("t/d").await.unwrap().map(stateless).as_ref()
    );
    assert_eq!(detail.run.status, RunStatus::WaitingInput);
    assert_eq!(
        detail.open_interrupt,
        s.open_interrupt("t/d").await.unwrap()
    );
    let open = detail.open_interrupt.expect("open interrupt");
    assert_eq!(
        (open.node_id.as_str(), open.state.as_str(), &open.data),
        ("ask", "open", &json!({"q": 1}))
    );
    assert_eq!(detail.context_id.as_deref(), Some("ctx-d"));
}

/// A resolution that puts the run back to running.
fn resume_running() -> OnResolve {
    Box::new(|_, _| {
        let patch = RunPatch {
            status: Some(RunStatus::Running),
            ..Default::default()
        };
        (patch, vec![ev()])
    })
}

const RUN: &str = "t/0123456789abcdef";

/// A plain new run of tenant `t` (also used by the backends' own tests).
pub(crate) fn new_run(id: &str) -> NewRun {
    NewRun {
        run_id: id.into(),
        tenant: "t".into(),
        workflow_id: "w".into(),
        status: RunStatus::Running,
        owner: json!({}),
        transport: "rest".into(),
        inputs: json!({}),
        state: json!({}),
        annotations: Default::default(),
    }
}

fn ev() -> NewEvent {
    NewEvent {
        event_type: "node.started".into(),
        node_id: None,
        payload: json!({}),
    }
}

fn running() -> Guard {
    Guard::StatusIn(&[RunStatus::Running])
}

fn claim(key: &str, body: &str) -> IdempotencyClaim {
    IdempotencyClaim {
        tenant: "t".into(),
        principal: "p".into(),
        key: key.into(),
        body_hash: body.into(),
        any_body: false,
    }
}

async fn suspend(store: &Arc<dyn RunStore>, run_id: &str) {
    let patch = RunPatch {
        status: Some(RunStatus::WaitingApproval),
        open_interrupt: Some(NewInterrupt {
            node_id: "approve".into(),
            interrupt_id: format!("{run_id}-i"),
            kind: "approval".into(),
            data: json!({}),
        }),
        ..Default::default()
    };
    store
        .advance(run_id, running(), patch, vec![ev()])
        .await
        .unwrap();
}

fn resolve_with(value: &'static str) -> OnResolve {
    Box::new(move |_, _| {
        let patch = RunPatch {
            status: Some(RunStatus::Running),
            state: Some(json!({"by": value})),
            ..Default::default()
        };
        (
            patch,
            vec![NewEvent {
                event_type: "interrupt.resolved".into(),
                node_id: None,
                payload: json!({"by": value}),
            }],
        )
    })
}

async fn concurrent_appends_get_contiguous_sequences(b: Backend) {
    let store = b.runs.clone();
    store.create_run(new_run(RUN), None).await.unwrap();
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let s = store.clone();
            tokio::spawn(async move {
                s.advance(RUN, running(), RunPatch::default(), vec![ev(), ev()])
                    .await
                    .unwrap()
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let events = store.events_since(RUN, -1, 1000).await.unwrap();
    let seqs: Vec<i64> = events.iter().map(|e| e.sequence).collect();
    assert_eq!(seqs, (0..32).collect::<Vec<_>>());
    assert_eq!(store.get_run(RUN).await.unwrap().unwrap().last_sequence, 31);
}

async fn guard_refuses_and_leaves_the_log_unchanged(b: Backend) {
    let store = b.runs.clone();
    store.create_run(new_run(RUN), None).await.unwrap();
    let r = store
        .advance(
            RUN,
            Guard::StatusNotIn(&[RunStatus::Running]),
            RunPatch::default(),
            vec![ev()],
        )
        .await;
    assert!(matches!(r, Err(StoreError::Guard { status }) if status == RunStatus::Running));
    assert!(store.events_since(RUN, -1, 10).await.unwrap().is_empty());
    let missing = store
        .advance("t/nope", running(), RunPatch::default(), vec![ev()])
        .await;
    assert!(matches!(missing, Err(StoreError::RunNotFound(_))));
}

async fn data_survives_reopening(b: Backend) {
    b.runs.create_run(new_run(RUN), None).await.unwrap();
    b.runs
        .advance(RUN, running(), RunPatch::default(), vec![ev()])
        .await
        .unwrap();
    let again = b.open_again().await.runs;
    assert_eq!(again.events_since(RUN, -1, 10).await.unwrap().len(), 1);
    assert_eq!(again.get_run(RUN).await.unwrap().unwrap().last_sequence, 0);
}

async fn a_run_keeps_what_its_creator_attached(b: Backend) {
    let annotations = crate::store::RunAnnotations {
        agent_id: Some("approvals-desk".into()),
        tags: Some(json!(["a", "b"])),
        metadata: Some(json!({"order": 42, "nested": {"k": [1, 2]}})),
    };
    let created = b
        .runs
        .create_run(
            NewRun {
                annotations: annotations.clone(),
                ..new_run(RUN)
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(created.run.annotations, annotations);
    b.runs
        .advance(RUN, running(), RunPatch::default(), vec![ev()])
        .await
        .unwrap();
    let again = b.open_again().await.runs;
    assert_eq!(
        again.get_run(RUN).await.unwrap().unwrap().annotations,
        annotations
    );
    // A run created with none has none.
    b.runs.create_run(new_run("t/b"), None).await.unwrap();
    let plain = b.runs.get_run("t/b").await.unwrap().unwrap();
    assert_eq!(plain.annotations, crate::store::RunAnnotations::default());
}

async fn idempotency_replays_the_same_body_and_refuses_another(b: Backend) {
    let store = b.runs.clone();
    let first = store
        .create_run(new_run("t/a"), Some(claim("k", "h1")))
        .await
        .unwrap();
    assert!(!first.replay);
    let again = store
        .create_run(new_run("t/b"), Some(claim("k", "h1")))
        .await
        .unwrap();
    assert!(again.replay);
    assert_eq!(again.run.run_id, "t/a");
    let other = store
        .create_run(new_run("t/c"), Some(claim("k", "h2")))
        .await;
    assert!(matches!(other, Err(StoreError::IdempotencyMismatch)));
    assert!(store.get_run("t/b").await.unwrap().is_none());
    assert!(store.get_run("t/c").await.unwrap().is_none());
    // A claim that binds no body (an A2A messageId): the first run, whatever the body,
    // also for a key claimed with a body before.
    let first_wins = IdempotencyClaim {
        any_body: true,
        ..claim("k", "h3")
    };
    let replayed = store
        .create_run(new_run("t/d"), Some(first_wins))
        .await
        .unwrap();
    assert!(replayed.replay);
    assert_eq!(replayed.run.run_id, "t/a");
    assert!(store.get_run("t/d").await.unwrap().is_none());
}

async fn concurrent_creates_with_one_key_make_one_run(b: Backend) {
    // Two stores on one database: for PostgreSQL, two replicas.
    let stores = [b.runs.clone(), b.open_again().await.runs];
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let s = stores[i % 2].clone();
            tokio::spawn(async move {
                s.create_run(new_run(&format!("t/run{i}")), Some(claim("same", "h")))
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut ids = Vec::new();
    for t in tasks {
        ids.push(t.await.unwrap().run.run_id);
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "every request got the one run: {ids:?}");
    let listed = b
        .runs
        .query_runs(RunQuery::newest_first("t", 50))
        .await
        .unwrap();
    assert_eq!(listed.runs.len(), 1);
}

fn a2a_start(context: &str, message_id: &str) -> CreateWith {
    let message_id = message_id.to_owned();
    CreateWith {
        a2a: Some(A2aStart {
            context_id: context.into(),
            message_id: message_id.clone(),
            message: Box::new(
                move |run, ctx| json!({"messageId": message_id, "taskId": run, "contextId": ctx}),
            ),
        }),
        host_events: vec![
            host_event("t", "durable", 1),
            host_event("t", "ephemeral", 2),
        ],
        ..CreateWith::default()
    }
}

async fn a_creation_writes_its_a2a_task_and_host_events_in_its_transaction(b: Backend) {
    let store = b.runs.clone();
    let mut tenant = store.subscribe(&[Topic::Tenant("t".into())]);
    let created = store
        .create_run_with(
            new_run("t/a"),
            Some(claim("k", "h")),
            a2a_start("ctx-1", "m1"),
        )
        .await
        .unwrap();
    assert!(!created.replay);
    assert_eq!(created.context_id.as_deref(), Some("ctx-1"));
    assert_eq!(
        b.interop.a2a_history("t/a").await.unwrap(),
        [json!({"messageId": "m1", "taskId": "t/a", "contextId": "ctx-1"})]
    );
    let stored = store.host_events("t", 0, 10).await.unwrap();
    assert_eq!(
        stored.len(),
        1,
        "the durable event is stored, the ephemeral one is not"
    );
    assert_eq!(created.host_events[0].seq, stored[0].seq);
    next_wake(&mut tenant, |w| match w {
        Wake::Host(e) if e.delivery == "ephemeral" => Some(()),
        _ => None,
    })
    .await;

    // A replay keeps the first binding and history, and records its own host events.
    let mut with = a2a_start("ctx-2", "m1");
    with.host_events[0].event_id = "t-durable-again".into();
    let again = store
        .create_run_with(new_run("t/b"), Some(claim("k", "h")), with)
        .await
        .unwrap();
    assert!(again.replay);
    assert_eq!(again.run.run_id, "t/a");
    assert_eq!(again.context_id.as_deref(), Some("ctx-1"));
    assert_eq!(b.interop.a2a_history("t/a").await.unwrap().len(), 1);
    assert_eq!(store.host_events("t", 0, 10).await.unwrap().len(), 2);

    // A refused creation writes nothing of what came with it.
    let mut with = a2a_start("ctx-3", "m3");
    with.host_events[0].event_id = "t-durable-refused".into();
    let refused = store
        .create_run_with(new_run("t/c"), Some(claim("k", "other")), with)
        .await;
    assert!(matches!(refused, Err(StoreError::IdempotencyMismatch)));
    assert_eq!(store.host_events("t", 0, 10).await.unwrap().len(), 2);
    assert_eq!(b.interop.a2a_context_of("t/c").await.unwrap(), None);

    // Without a key, the task side comes along just the same.
    let mut with = a2a_start("ctx-4", "");
    with.host_events.clear();
    let plain = store
        .create_run_with(new_run("t/d"), None, with)
        .await
        .unwrap();
    assert_eq!(plain.context_id.as_deref(), Some("ctx-4"));
    assert_eq!(b.interop.a2a_history("t/d").await.unwrap().len(), 1);

    // The task side in one call reads what the three separate reads do.
    suspend(&store, "t/a").await;
    let task = b.interop.a2a_task("t/a").await.unwrap();
    assert_eq!(task.context_id.as_deref(), Some("ctx-1"));
    assert_eq!(task.history, b.interop.a2a_history("t/a").await.unwrap());
    assert_eq!(
        task.open_interrupt,
        store.open_interrupt("t/a").await.unwrap()
    );
    assert!(task.open_interrupt.is_some());
    assert_eq!(
        b.interop.a2a_task("t/none").await.unwrap(),
        A2aTask::default()
    );
}

async fn a_creation_applies_its_first_step_in_its_transaction(b: Backend) {
    let store = b.runs.clone();
    let mut rx = store.subscribe(&[Topic::Run("t/f".into())]);
    let with = CreateWith {
        first_step: Some(Box::new(|run: &RunRecord| {
            assert_eq!(run.last_sequence, -1, "planned from the run as inserted");
            let patch = RunPatch {
                status: Some(RunStatus::Completed),
                outputs: Some(json!({"x": 1})),
                close_interrupts: true,
                ..Default::default()
            };
            Some((patch, vec![ev(), ev()]))
        })),
        ..CreateWith::default()
    };
    let created = store
        .create_run_with(new_run("t/f"), Some(claim("kf", "h")), with)
        .await
        .unwrap();
    assert_eq!(created.run.status, RunStatus::Completed);
    assert_eq!(created.run.last_sequence, 1);
    assert_eq!(created.run.outputs, Some(json!({"x": 1})));
    next_wake(&mut rx, |w| {
        matches!(w, Wake::Run(id) if id == "t/f").then_some(())
    })
    .await;
    assert_eq!(
        store.get_run("t/f").await.unwrap(),
        Some(created.run.clone())
    );
    let events = store.events_since("t/f", -1, 10).await.unwrap();
    assert_eq!(
        events.iter().map(|e| e.sequence).collect::<Vec<_>>(),
        [0, 1]
    );

    // A replay returns the run as it stands and applies nothing of its plan.
    let with = CreateWith {
        first_step: Some(Box::new(|_: &RunRecord| {
            let patch = RunPatch {
                status: Some(RunStatus::Failed),
                ..Default::default()
            };
            Some((patch, vec![ev()]))
        })),
        ..CreateWith::default()
    };
    let again = store
        .create_run_with(new_run("t/g"), Some(claim("kf", "h")), with)
        .await
        .unwrap();
    assert!(again.replay);
    assert_eq!(again.run, created.run);
    assert_eq!(store.events_since("t/f", -1, 10).await.unwrap().len(), 2);

    // Nothing planned: the run as inserted.
    let with = CreateWith {
        first_step: Some(Box::new(|_: &RunRecord| None)),
        ..CreateWith::default()
    };
    let plain = store
        .create_run_with(new_run("t/h"), None, with)
        .await
        .unwrap();
    assert_eq!(plain.run.last_sequence, -1);
    assert_eq!(plain.run.status, RunStatus::Running);

    // A first step that waits and suspends: every field the change sets is written with
    // the run, and its interrupt is open.
    let with = CreateWith {
        first_step: Some(Box::new(|_: &RunRecord| {
            let patch = RunPatch {
                status: Some(RunStatus::WaitingApproval),
                node_index: Some(2),
                wait_until: Some(Some(77)),
                state: Some(json!({"s": 1})),
                error: Some(json!({"e": 1})),
                open_interrupt: Some(NewInterrupt {
                    node_id: "approve".into(),
                    interrupt_id: "t/s-i".into(),
                    kind: "approval".into(),
                    data: json!({"d": 1}),
                }),
                ..Default::default()
            };
            Some((patch, vec![ev()]))
        })),
        ..CreateWith::default()
    };
    let suspended = store
        .create_run_with(new_run("t/s"), None, with)
        .await
        .unwrap();
    let run = &suspended.run;
    assert_eq!(run.status, RunStatus::WaitingApproval);
    assert_eq!(
        (run.node_index, run.wait_until, run.last_sequence),
        (2, Some(77), 0)
    );
    assert_eq!(
        (&run.state, &run.error),
        (&json!({"s": 1}), &Some(json!({"e": 1})))
    );
    assert_eq!(store.get_run("t/s").await.unwrap().as_ref(), Some(run));
    let open = store.open_interrupt("t/s").await.unwrap().expect("open");
    assert_eq!(
        (
            open.node_id.as_str(),
            open.interrupt_id.as_str(),
            &open.data
        ),
        ("approve", "t/s-i", &json!({"d": 1}))
    );
    assert_eq!(store.events_since("t/s", -1, 10).await.unwrap().len(), 1);
}

async fn concurrent_writes_that_fail_midway_leave_nothing_and_others_stand(b: Backend) {
    // Writes that arrive together may share one commit (SQLite's group commit): one that
    // fails after writing (here a first step that panics after the run and its key are
    // inserted) is rolled back alone.
    let calls: Vec<_> = (0..16)
        .map(|i| {
            let store = b.runs.clone();
            tokio::spawn(async move {
                let with = CreateWith {
                    first_step: Some(Box::new(move |_: &RunRecord| {
                        assert!(i % 2 == 0, "a write failing midway");
                        None
                    })),
                    ..CreateWith::default()
                };
                let key = claim(&format!("k{i}"), "h");
                store
                    .create_run_with(new_run(&format!("t/g{i}")), Some(key), with)
                    .await
            })
        })
        .collect();
    for (i, call) in calls.into_iter().enumerate() {
        let ok = matches!(call.await, Ok(Ok(_)));
        assert_eq!(ok, i % 2 == 0, "write {i}");
        let stored = b.runs.get_run(&format!("t/g{i}")).await.unwrap();
        assert_eq!(stored.is_some(), i % 2 == 0, "run {i}");
    }
    // The failed writes' keys were rolled back with them: free to claim again.
    let again = b
        .runs
        .create_run(new_run("t/g1-again"), Some(claim("k1", "h")))
        .await
        .unwrap();
    assert!(!again.replay);
}

async fn concurrent_resolves_exactly_one_wins(b: Backend) {
    let stores = [b.runs.clone(), b.open_again().await.runs];
    for round in 0..5 {
        let run_id = format!("t/resolve{round}");
        b.runs.create_run(new_run(&run_id), None).await.unwrap();
        suspend(&b.runs, &run_id).await;
        let (s1, s2) = (stores[0].clone(), stores[1].clone());
        let (r1, r2) = (run_id.clone(), run_id.clone());
        let a = tokio::spawn(async move {
            s1.resolve_interrupt(&r1, "approve", json!("a"), resolve_with("a"))
                .await
        });
        let c = tokio::spawn(async move {
            s2.resolve_interrupt(&r2, "approve", json!("b"), resolve_with("b"))
                .await
        });
        let results = [a.await.unwrap(), c.await.unwrap()];
        let wins: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(wins.len(), 1, "exactly one resolve wins");
        assert!(
            results
                .iter()
                .any(|r| matches!(r, Err(StoreError::InterruptAlreadyResolved)))
        );
        let events = b.runs.events_since(&run_id, -1, 10).await.unwrap();
        assert_eq!(
            events
                .iter()
                .filter(|e| e.event_type == "interrupt.resolved")
                .count(),
            1
        );
        let winner = wins[0].run.state["by"].clone();
        assert_eq!(
            b.runs.get_run(&run_id).await.unwrap().unwrap().state["by"],
            winner
        );
    }
    let none = b
        .runs
        .resolve_interrupt("t/resolve0", "other", json!(1), resolve_with("x"))
        .await;
    assert!(matches!(none, Err(StoreError::NoOpenInterrupt)));
    let missing = b
        .runs
        .resolve_interrupt("t/missing", "approve", json!(1), resolve_with("x"))
        .await;
    assert!(matches!(missing, Err(StoreError::NoOpenInterrupt)));
}

fn ids(page: &RunPage) -> Vec<&str> {
    page.runs.iter().map(|r| r.run_id.as_str()).collect()
}

async fn list_runs_newest_first_with_filters_and_cursor(b: Backend) {
    let store = b.runs.clone();
    for i in 0..5 {
        let mut r = new_run(&format!("t/r{i}"));
        r.workflow_id = if i % 2 == 0 {
            "even".into()
        } else {
            "odd".into()
        };
        store.create_run(r, None).await.unwrap();
    }
    let mut other = new_run("u/r9");
    other.tenant = "u".into();
    store.create_run(other, None).await.unwrap();
    let q = |workflow_id: Option<&str>, before: Option<i64>, limit| RunQuery {
        workflow_id: workflow_id.map(str::to_owned),
        order: RunOrder::Created { before },
        ..RunQuery::newest_first("t", limit)
    };
    let all = store.query_runs(q(None, None, 10)).await.unwrap();
    assert_eq!(ids(&all), ["t/r4", "t/r3", "t/r2", "t/r1", "t/r0"]);
    assert_eq!(all.total, None, "counted only when asked");
    let even = store.query_runs(q(Some("even"), None, 10)).await.unwrap();
    assert_eq!(even.runs.len(), 3);
    let page = store
        .query_runs(q(None, Some(all.runs[1].list_order), 2))
        .await
        .unwrap();
    assert_eq!(ids(&page), ["t/r2", "t/r1"]);
}

async fn run_queries_filter_by_status_workflow_context_time_and_interrupt(b: Backend) {
    let store = b.runs.clone();
    // t/a: waiting on a credential interrupt, bound to ctx-1; t/b: waiting on an
    // approval, bound to ctx-1; t/c: running, no binding (its own context); t/d: done.
    for (id, workflow) in [("t/a", "w1"), ("t/b", "w1"), ("t/c", "w2"), ("t/d", "w2")] {
        let mut r = new_run(id);
        r.workflow_id = workflow.into();
        store.create_run(r, None).await.unwrap();
    }
    for (id, status, kind) in [
        ("t/a", RunStatus::WaitingInput, "credential"),
        ("t/b", RunStatus::WaitingApproval, "approval"),
    ] {
        let patch = RunPatch {
            status: Some(status),
            open_interrupt: Some(NewInterrupt {
                node_id: "n".into(),
                interrupt_id: format!("{id}-i"),
                kind: kind.into(),
                data: json!({}),
            }),
            ..Default::default()
        };
        store
            .advance(id, running(), patch, vec![ev()])
            .await
            .unwrap();
    }
    let done = RunPatch {
        status: Some(RunStatus::Completed),
        ..Default::default()
    };
    store.advance("t/d", running(), done, vec![]).await.unwrap();
    b.interop.a2a_bind_context("t/a", "ctx-1").await.unwrap();
    b.interop.a2a_bind_context("t/b", "ctx-1").await.unwrap();
    let mut foreign = new_run("u/a");
    foreign.tenant = "u".into();
    store.create_run(foreign, None).await.unwrap();
    b.interop.a2a_bind_context("u/a", "ctx-1").await.unwrap();

    let query = |f: &dyn Fn(&mut RunQuery)| {
        let mut q = RunQuery::newest_first("t", 10);
        q.count_total = true;
        f(&mut q);
        let store = store.clone();
        async move {
            let page = store.query_runs(q).await.unwrap();
            let mut got: Vec<String> = page.runs.iter().map(|r| r.run_id.clone()).collect();
            got.sort();
            assert_eq!(
                page.total,
                Some(got.len() as u64),
                "the total counts the same filter"
            );
            got
        }
    };
    assert_eq!(query(&|_| {}).await, ["t/a", "t/b", "t/c", "t/d"]);
    let waiting = [
        RunStatus::WaitingApproval,
        RunStatus::WaitingInput,
        RunStatus::WaitingExternal,
    ];
    assert_eq!(
        query(&|q| q.statuses = waiting.to_vec()).await,
        ["t/a", "t/b"]
    );
    assert_eq!(
        query(&|q| q.statuses = vec![RunStatus::Running, RunStatus::Completed]).await,
        ["t/c", "t/d"]
    );
    assert_eq!(
        query(&|q| q.workflow_id = Some("w2".into())).await,
        ["t/c", "t/d"]
    );
    // The bound context, else the run id; never another tenant's run.
    assert_eq!(
        query(&|q| q.context_id = Some("ctx-1".into())).await,
        ["t/a", "t/b"]
    );
    assert_eq!(query(&|q| q.context_id = Some("t/c".into())).await, ["t/c"]);
    assert!(
        query(&|q| q.context_id = Some("t/a".into()))
            .await
            .is_empty()
    );
    // auth-required and input-required: waiting on a credential, or on anything else.
    let credential = || vec!["credential".to_owned()];
    assert_eq!(
        query(&|q| {
            q.statuses = waiting.to_vec();
            q.open_interrupt = Some(OpenInterrupt::OfKind(credential()));
        })
        .await,
        ["t/a"]
    );
    assert_eq!(
        query(&|q| {
            q.statuses = waiting.to_vec();
            q.open_interrupt = Some(OpenInterrupt::NotOfKind(credential()));
        })
        .await,
        ["t/b"]
    );
    // Updated at or after: t/c was last touched by its creation, before the others.
    let c = store.get_run("t/c").await.unwrap().unwrap();
    let d = store.get_run("t/d").await.unwrap().unwrap();
    b.execute(&format!(
        "UPDATE runs SET updated_ms = {} WHERE run_id = 't/c'",
        d.updated_ms - 1_000
    ))
    .await;
    assert!(c.updated_ms <= d.updated_ms);
    assert_eq!(
        query(&|q| q.updated_since_ms = Some(d.updated_ms - 500)).await,
        ["t/a", "t/b", "t/d"]
    );
}

async fn run_queries_page_by_update_with_a_stable_cursor_and_a_total(b: Backend) {
    let store = b.runs.clone();
    let ids_made: Vec<String> = (0..7).map(|i| format!("t/u{i}")).collect();
    for id in &ids_made {
        store.create_run(new_run(id), None).await.unwrap();
    }
    // Ties on updated_ms are broken by the run id, descending in byte order.
    b.execute("UPDATE runs SET updated_ms = 5000 WHERE run_id IN ('t/u0', 't/u3', 't/u5')")
        .await;
    b.execute("UPDATE runs SET updated_ms = 9000 WHERE run_id IN ('t/u1', 't/u6')")
        .await;
    b.execute("UPDATE runs SET updated_ms = 1000 WHERE run_id IN ('t/u2', 't/u4')")
        .await;
    let want = ["t/u6", "t/u1", "t/u5", "t/u3", "t/u0", "t/u4", "t/u2"];
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .query_runs(RunQuery {
                order: RunOrder::Updated {
                    after: after.clone(),
                },
                count_total: true,
                ..RunQuery::newest_first("t", 3)
            })
            .await
            .unwrap();
        assert_eq!(page.total, Some(7), "the total ignores the cursor");
        seen.extend(page.runs.iter().map(|r| r.run_id.clone()));
        match page.runs.last() {
            Some(last) if page.runs.len() == 3 => after = Some(UpdatedCursor::after(last)),
            _ => break,
        }
    }
    assert_eq!(seen, want, "every run once, in order");
    // A run updated meanwhile moves to the front; the next page just goes on after the
    // cursor (no run repeated, none skipped).
    b.execute("UPDATE runs SET updated_ms = 20000 WHERE run_id = 't/u2'")
        .await;
    let page = store
        .query_runs(RunQuery {
            order: RunOrder::Updated {
                after: Some(UpdatedCursor {
                    updated_ms: 5000,
                    run_id: "t/u3".into(),
                }),
            },
            ..RunQuery::newest_first("t", 10)
        })
        .await
        .unwrap();
    assert_eq!(ids(&page), ["t/u0", "t/u4"]);
}

async fn unfinished_runs_skip_finished_ones(b: Backend) {
    let store = b.runs.clone();
    store.create_run(new_run("t/live"), None).await.unwrap();
    store.create_run(new_run("t/done"), None).await.unwrap();
    let done = RunPatch {
        status: Some(RunStatus::Completed),
        outputs: Some(json!({"x": 1})),
        ..Default::default()
    };
    store
        .advance("t/done", running(), done, vec![])
        .await
        .unwrap();
    let ids: Vec<_> = store
        .unfinished_runs()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.run_id)
        .collect();
    assert_eq!(ids, ["t/live"]);
    assert_eq!(
        store.get_run("t/done").await.unwrap().unwrap().outputs,
        Some(json!({"x": 1}))
    );
}

fn host_event(tenant: &str, delivery: &str, n: i64) -> HostEventRecord {
    HostEventRecord {
        seq: 0,
        tenant: tenant.into(),
        event_id: format!("{tenant}-{delivery}-{n}"),
        event_type: "negotiation.decided".into(),
        delivery: delivery.into(),
        workspace_id: None,
        payload: json!({"n": n}),
        timestamp_ms: now_ms(),
    }
}

/// Waits for a wake-up matching `pick`, failing after a few seconds.
async fn next_wake<T>(rx: &mut Subscription, pick: impl Fn(&Wake) -> Option<T>) -> T {
    tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let Some(t) = pick(&rx.recv().await) {
                return t;
            }
        }
    })
    .await
    .expect("the wake-up arrives")
}

async fn host_events_keep_order_and_ephemeral_ones_are_only_published(b: Backend) {
    let store = b.runs.clone();
    let mut rx = store.subscribe(&[Topic::Tenant("t".into())]);
    for n in 0..3 {
        store
            .append_host_event(host_event("t", "durable", n))
            .await
            .unwrap();
    }
    store
        .append_host_event(host_event("u", "durable", 9))
        .await
        .unwrap();
    let eph = store
        .append_host_event(host_event("t", "ephemeral", 7))
        .await
        .unwrap();
    assert_eq!(eph.seq, 0);
    let stored = store.host_events("t", 0, 10).await.unwrap();
    let ns: Vec<_> = stored.iter().map(|e| e.payload["n"].clone()).collect();
    assert_eq!(ns, [json!(0), json!(1), json!(2)]);
    assert!(stored.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(
        store
            .host_events("t", stored[0].seq, 10)
            .await
            .unwrap()
            .len(),
        2
    );
    let got = next_wake(&mut rx, |w| match w {
        Wake::Host(e) if e.delivery == "ephemeral" => Some((**e).clone()),
        _ => None,
    })
    .await;
    assert_eq!(got, eph);
}

async fn a_host_event_wakes_its_tenant_on_every_replica_and_no_other(b: Backend) {
    let other = b.open_again().await.runs;
    let watchers = if b.runs.shared() {
        vec![b.runs.clone(), other.clone()]
    } else {
        vec![b.runs.clone()]
    };
    let mut on_t: Vec<_> = watchers
        .iter()
        .map(|s| s.subscribe(&[Topic::Tenant("t".into())]))
        .collect();
    let mut on_u: Vec<_> = watchers
        .iter()
        .map(|s| s.subscribe(&[Topic::Tenant("u".into())]))
        .collect();
    let mut ev = host_event("t", "durable", 4);
    ev.payload = json!({"nested": {"b": [1, 2], "a": "x"}, "n": 4});
    let stored = b.runs.append_host_event(ev).await.unwrap();
    assert!(stored.seq > 0);
    // Every replica hears of it, the whole record as stored.
    for rx in &mut on_t {
        let got = next_wake(rx, |w| match w {
            Wake::Host(e) => Some((**e).clone()),
            _ => None,
        })
        .await;
        assert_eq!(got, stored);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    for rx in &mut on_u {
        assert_eq!(rx.try_recv(), None, "another tenant's subscriber was woken");
    }
}

async fn advance_wakes_subscribers(b: Backend) {
    b.runs.create_run(new_run(RUN), None).await.unwrap();
    // A subscriber on another store on the same data: for PostgreSQL a second replica,
    // which only hears of the change through the database.
    let other = b.open_again().await.runs;
    let watchers = if b.runs.shared() {
        vec![b.runs.clone(), other.clone()]
    } else {
        vec![b.runs.clone()]
    };
    let mut rxs: Vec<_> = watchers
        .iter()
        .map(|s| s.subscribe(&[Topic::Run(RUN.into())]))
        .collect();
    b.runs
        .advance(RUN, running(), RunPatch::default(), vec![ev()])
        .await
        .unwrap();
    for rx in &mut rxs {
        next_wake(rx, |w| {
            matches!(w, Wake::Run(id) if id == RUN).then_some(())
        })
        .await;
    }
}

async fn a_commit_on_one_run_does_not_wake_the_subscribers_of_another(b: Backend) {
    const OTHER: &str = "t/fedcba9876543210";
    b.runs.create_run(new_run(RUN), None).await.unwrap();
    b.runs.create_run(new_run(OTHER), None).await.unwrap();
    // On PostgreSQL the second store is another replica, woken only through the database.
    let other = b.open_again().await.runs;
    let watchers = if b.runs.shared() {
        vec![b.runs.clone(), other.clone()]
    } else {
        vec![b.runs.clone()]
    };
    let mut on_other: Vec<_> = watchers
        .iter()
        .map(|s| s.subscribe(&[Topic::Run(OTHER.into())]))
        .collect();
    let mut on_run: Vec<_> = watchers
        .iter()
        .map(|s| s.subscribe(&[Topic::Run(RUN.into())]))
        .collect();
    for _ in 0..3 {
        b.runs
            .advance(RUN, running(), RunPatch::default(), vec![ev()])
            .await
            .unwrap();
    }
    // The commits reached the run's subscribers on every store...
    for rx in &mut on_run {
        next_wake(rx, |w| (*w == Wake::Run(RUN.into())).then_some(())).await;
    }
    // ...and, given as long again, none of the other run's.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for rx in &mut on_other {
        assert_eq!(
            rx.try_recv(),
            None,
            "a commit on {RUN} woke a subscriber of {OTHER}"
        );
    }
    // Theirs still come through.
    b.runs
        .advance(OTHER, running(), RunPatch::default(), vec![ev()])
        .await
        .unwrap();
    for rx in &mut on_other {
        next_wake(rx, |w| (*w == Wake::Run(OTHER.into())).then_some(())).await;
    }
}

async fn a_lease_is_exclusive_until_released_or_expired(b: Backend) {
    let store = b.runs.clone();
    store.create_run(new_run(RUN), None).await.unwrap();
    assert!(store.acquire_lease(RUN, "a", 60_000).await.unwrap());
    assert!(
        store.acquire_lease(RUN, "a", 60_000).await.unwrap(),
        "the holder renews"
    );
    if !store.shared() {
        // One process: every caller is the same host and always wins.
        assert!(store.acquire_lease(RUN, "b", 60_000).await.unwrap());
        return;
    }
    assert!(
        !store.acquire_lease(RUN, "b", 60_000).await.unwrap(),
        "a live lease is exclusive"
    );
    assert!(
        store
            .unleased_runs(&[RunStatus::Running])
            .await
            .unwrap()
            .is_empty()
    );
    store.release_lease(RUN, "b").await.unwrap();
    assert!(
        !store.acquire_lease(RUN, "b", 60_000).await.unwrap(),
        "only the holder releases"
    );
    store.release_lease(RUN, "a").await.unwrap();
    assert_eq!(
        store.unleased_runs(&[RunStatus::Running]).await.unwrap(),
        [RUN]
    );
    assert!(store.acquire_lease(RUN, "b", 1).await.unwrap());
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(
        store.unleased_runs(&[RunStatus::Running]).await.unwrap(),
        [RUN],
        "an expired lease is up for takeover"
    );
    assert!(
        store.acquire_lease(RUN, "a", 60_000).await.unwrap(),
        "a dead holder's lease is taken over"
    );
    assert!(
        store
            .unleased_runs(&[RunStatus::Pending])
            .await
            .unwrap()
            .is_empty()
    );
}

async fn a_write_under_a_lost_lease_changes_nothing(b: Backend) {
    let store = b.runs.clone();
    store.create_run(new_run(RUN), None).await.unwrap();
    assert!(store.acquire_lease(RUN, "a", 60_000).await.unwrap());
    let as_a = RunPatch {
        lease_owner: Some("a".into()),
        ..Default::default()
    };
    store
        .advance(RUN, running(), as_a, vec![ev()])
        .await
        .unwrap();
    let as_b = RunPatch {
        lease_owner: Some("b".into()),
        node_index: Some(5),
        ..Default::default()
    };
    let r = store.advance(RUN, running(), as_b, vec![ev()]).await;
    if store.shared() {
        assert!(matches!(r, Err(StoreError::LeaseLost)));
        assert_eq!(store.events_since(RUN, -1, 10).await.unwrap().len(), 1);
        assert_eq!(store.get_run(RUN).await.unwrap().unwrap().node_index, 0);
    } else {
        assert!(
            r.is_ok(),
            "a single-process store has no one to lose the lease to"
        );
    }
}

async fn a_shared_secret_is_the_first_one_stored(b: Backend) {
    let first = b.runs.shared_secret("k", vec![1, 2, 3]).await.unwrap();
    assert_eq!(first, [1, 2, 3]);
    let again = b.open_again().await.runs;
    assert_eq!(again.shared_secret("k", vec![9]).await.unwrap(), [1, 2, 3]);
    assert_eq!(again.shared_secret("other", vec![9]).await.unwrap(), [9]);
}

/// The total of a tenant's runs (A2A `totalSize`), unfiltered and by statuses, as the
/// store serves it (from `run_counts`, migration 11).
async fn total(store: &Arc<dyn RunStore>, tenant: &str, statuses: &[RunStatus]) -> u64 {
    let mut q = RunQuery::newest_first(tenant, 1);
    q.statuses = statuses.to_vec();
    q.count_total = true;
    store
        .query_runs(q)
        .await
        .expect("query")
        .total
        .expect("counted")
}

/// Spawns the plain creation of run `id` (tenant before the `/`), its first step
/// finishing it (completed for even `i`, failed for odd) with two events.
fn spawn_plain(
    s: &Arc<dyn RunStore>,
    i: usize,
    id: String,
) -> tokio::task::JoinHandle<(String, Result<Created, StoreError>)> {
    let s = s.clone();
    tokio::spawn(async move {
        let mut run = new_run(&id);
        run.tenant = id.split('/').next().unwrap_or_default().into();
        run.annotations.tags = i.is_multiple_of(2).then(|| json!([i]));
        let with = CreateWith {
            first_step: Some(Box::new(move |_: &RunRecord| {
                let status = [RunStatus::Completed, RunStatus::Failed][i % 2];
                let patch = RunPatch {
                    status: Some(status),
                    outputs: Some(json!({ "i": i })),
                    ..Default::default()
                };
                Some((patch, vec![ev(), ev()]))
            })),
            ..CreateWith::default()
        };
        let created = s.create_run_with(run, None, with).await;
        (id, created)
    })
}

/// Issue #33: creations with nothing beside the run and its events, many at once (what
/// PostgreSQL writes several to a statement): each is stored once, as its answer says,
/// with its first step's events and its count; one that cannot be written (its id is
/// taken) fails alone and the others stand.
async fn concurrent_plain_creations_are_each_written_once_and_a_bad_one_fails_alone(b: Backend) {
    let s = b.runs.clone();
    let tasks: Vec<_> = (0..48)
        .map(|i| spawn_plain(&s, i, format!("{}/n{i}", ["a", "b", "c"][i % 3])))
        .collect();
    let mut orders = std::collections::HashSet::new();
    for t in tasks {
        let (id, created) = t.await.expect("task");
        let created = created.expect("create").run;
        assert_eq!(
            s.get_run(&id).await.unwrap().as_ref(),
            Some(&created),
            "as answered"
        );
        assert_eq!(created.last_sequence, 1);
        assert!(orders.insert(created.list_order), "one list_order each");
        let events = s.events_since(&id, -1, 10).await.unwrap();
        assert_eq!(
            events.iter().map(|e| e.sequence).collect::<Vec<_>>(),
            [0, 1]
        );
        assert!(events.iter().all(|e| e.timestamp_ms == created.created_ms));
    }
    assert_eq!(b.rows("events").await, 96);
    for tenant in ["a", "b", "c"] {
        assert_eq!(total(&s, tenant, &[]).await, 16);
    }
    assert_eq!(
        total(&s, "b", &[RunStatus::Completed]).await
            + total(&s, "c", &[RunStatus::Completed]).await,
        16
    );
    if b.schema.is_some() {
        // Written together: fewer transactions than runs.
        let transactions = b
            .rows("(SELECT DISTINCT xmin::text FROM runs) AS written")
            .await;
        assert!(transactions < 48, "{transactions} transactions for 48 runs");
    }

    // Among others at once, a creation whose id is taken fails alone.
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let id = if i == 7 {
                "a/n0".to_string()
            } else {
                format!("d/m{i}")
            };
            spawn_plain(&s, i, id)
        })
        .collect();
    for t in tasks {
        match t.await.expect("task") {
            (id, Err(e)) => {
                assert_eq!(id, "a/n0");
                assert!(matches!(e, StoreError::Database(_)), "{e:?}");
            }
            (id, Ok(created)) => assert_eq!(s.get_run(&id).await.unwrap(), Some(created.run)),
        }
    }
    assert_eq!(total(&s, "d", &[]).await, 15);
    assert_eq!(total(&s, "a", &[]).await, 16);
    assert_eq!(
        b.rows("events").await,
        96 + 30,
        "the failed one wrote no event"
    );
}

/// Issue #33: the counts `totalSize` reads follow every write that adds a run, changes
/// its status or removes it (a purge, or a DELETE by hand), tenant by tenant, and agree
/// with a count over the runs.
async fn run_totals_follow_creates_status_changes_and_deletes(b: Backend) {
    let s = b.runs.clone();
    assert_eq!(total(&s, "t", &[]).await, 0);
    for i in 0..5 {
        s.create_run(new_run(&format!("t/c{i}")), None)
            .await
            .expect("create");
    }
    let mut other = new_run("u/c0");
    other.tenant = "u".into();
    s.create_run(other, None).await.expect("create");
    assert_eq!(total(&s, "t", &[]).await, 5);
    assert_eq!(total(&s, "u", &[]).await, 1);
    assert_eq!(total(&s, "t", &[RunStatus::Running]).await, 5);

    suspend(&s, "t/c1").await;
    suspend(&s, "t/c2").await;
    let cancel = RunPatch {
        status: Some(RunStatus::Cancelled),
        ..Default::default()
    };
    s.advance("t/c3", running(), cancel, vec![])
        .await
        .expect("cancel");
    // A step that keeps the status moves no count.
    s.advance("t/c4", running(), RunPatch::default(), vec![ev()])
        .await
        .expect("step");
    assert_eq!(total(&s, "t", &[]).await, 5);
    assert_eq!(total(&s, "t", &[RunStatus::Running]).await, 2);
    assert_eq!(total(&s, "t", &[RunStatus::WaitingApproval]).await, 2);
    assert_eq!(
        total(&s, "t", &[RunStatus::Cancelled, RunStatus::WaitingApproval]).await,
        3
    );
    assert_eq!(total(&s, "t", &[RunStatus::Failed]).await, 0);

    // A purge (none is offered yet; a DELETE stands for it): the counts follow.
    b.execute("DELETE FROM runs WHERE run_id IN ('t/c0', 't/c1')")
        .await;
    assert_eq!(total(&s, "t", &[]).await, 3);
    assert_eq!(total(&s, "t", &[RunStatus::WaitingApproval]).await, 1);
    assert_eq!(total(&s, "t", &[RunStatus::Running]).await, 1);
    assert_eq!(total(&s, "u", &[]).await, 1);

    // The same totals as a count over the runs (a filter the counts do not serve).
    let mut by_workflow = RunQuery::newest_first("t", 1);
    by_workflow.workflow_id = Some("w".into());
    by_workflow.count_total = true;
    let counted = s.query_runs(by_workflow).await.expect("query").total;
    assert_eq!(counted, Some(3));
    let g = s.gauges().await.expect("gauges");
    let mut by_status = g.runs_by_status.clone();
    by_status.sort();
    let mut want = vec![
        (RunStatus::Cancelled, 1),
        (RunStatus::Running, 2),
        (RunStatus::WaitingApproval, 1),
    ];
    want.sort();
    assert_eq!(by_status, want, "no status of count 0");
}

/// Creators on two stores at once (two replicas on PostgreSQL, each with its pool of
/// connections) lose no count: each addition is one atomic upsert in the creation's
/// transaction.
async fn concurrent_creates_on_two_replicas_lose_no_count(b: Backend) {
    let stores = [b.runs.clone(), b.open_again().await.runs];
    let tasks: Vec<_> = (0..40)
        .map(|i| {
            let s = stores[i % 2].clone();
            tokio::spawn(async move {
                s.create_run(new_run(&format!("t/p{i}")), None)
                    .await
                    .expect("create");
                if i % 4 == 0 {
                    suspend(&s, &format!("t/p{i}")).await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("task");
    }
    assert_eq!(total(&b.runs, "t", &[]).await, 40);
    assert_eq!(total(&b.runs, "t", &[RunStatus::WaitingApproval]).await, 10);
    assert_eq!(total(&b.runs, "t", &[RunStatus::Running]).await, 30);
}

/// Issue #33: the total A2A `ListTasks` answers reads one index range of `run_counts`
/// (its key), not the runs.
async fn run_totals_read_a_few_counter_rows(b: Backend) {
    let sqlite = b.dir.is_some();
    for statuses in ["", ",failed,"] {
        let plan = plan_of(&b, sql::RUN_TOTAL, &["t", statuses], &[]).await;
        if sqlite {
            assert!(
                plan.contains("SEARCH run_counts") && !plan.contains("runs USING"),
                "total ({statuses:?}): not by run_counts' key:\n{plan}"
            );
        } else {
            assert!(
                plan.contains("run_counts_pkey") && !plan.contains("Seq Scan"),
                "total ({statuses:?}): not by run_counts' key:\n{plan}"
            );
        }
    }
    let plan = plan_of(&b, sql::RUN_COUNTS, &[], &[]).await;
    assert!(
        plan.contains("run_counts") && !plan.contains("SCAN runs") && !plan.contains("on runs"),
        "gauges read the runs:\n{plan}"
    );
}

/// Issue #33: what a reader keeps of a run's detail is trusted while the run's stamp is the
/// same, so the stamp must move with every write that changes the detail (the run, its
/// interrupt, its A2A context), before that write is answered, and not with writes of
/// other runs or of nothing a detail shows. PostgreSQL (replicas write beside this
/// process) gives no stamp, so nothing is kept.
async fn a_detail_stamp_moves_with_each_write_of_its_run_before_its_answer(b: Backend) {
    let s = b.runs.clone();
    if b.dir.is_none() {
        s.create_run(new_run("t/a"), None).await.unwrap();
        assert_eq!(s.detail_stamp("t/a"), None);
        return;
    }
    let stamp = |id: &str| s.detail_stamp(id).expect("SQLite stamps its runs");
    let (a0, b0) = (stamp("t/a"), stamp("t/b"));
    s.create_run(new_run("t/a"), None).await.unwrap();
    let a1 = stamp("t/a");
    assert_ne!(a1, a0, "a creation");
    assert_eq!(stamp("t/b"), b0);
    s.create_run(new_run("t/b"), None).await.unwrap();
    let b1 = stamp("t/b");
    assert_ne!(b1, b0);
    assert_eq!(stamp("t/a"), a1, "another run's creation");

    s.advance("t/a", running(), RunPatch::default(), vec![ev()])
        .await
        .unwrap();
    let a2 = stamp("t/a");
    assert_ne!(a2, a1, "an advance");
    assert_eq!(stamp("t/b"), b1, "another run's advance");

    suspend(&s, "t/b").await;
    let b2 = stamp("t/b");
    assert_ne!(b2, b1, "an interrupt opened");
    s.resolve_interrupt("t/b", "approve", json!(true), resume_running())
        .await
        .unwrap();
    let b3 = stamp("t/b");
    assert_ne!(b3, b2, "an interrupt resolved");
    assert_eq!(stamp("t/a"), a2);

    b.interop.a2a_bind_context("t/a", "ctx-a").await.unwrap();
    let a3 = stamp("t/a");
    assert_ne!(a3, a2, "a context bound after the creation");
    assert_eq!(stamp("t/b"), b3);

    // Writes that change nothing a detail shows move no stamp.
    s.append_host_event(host_event("t", "durable", 1))
        .await
        .unwrap();
    s.shared_secret("k", vec![1; 32]).await.unwrap();
    let refused = s
        .advance(
            "t/a",
            Guard::StatusIn(&[RunStatus::Failed]),
            RunPatch::default(),
            vec![],
        )
        .await;
    assert!(refused.is_err());
    assert_eq!((stamp("t/a"), stamp("t/b")), (a3, b3));

    // Writes of many runs at once (one group commit) move each one's stamp.
    let ids: Vec<String> = (0..20).map(|i| format!("t/g{i}")).collect();
    let before: Vec<u64> = ids.iter().map(|id| stamp(id)).collect();
    let writes: Vec<_> = ids
        .iter()
        .map(|id| {
            let (s, id) = (s.clone(), id.clone());
            tokio::spawn(async move { s.create_run(new_run(&id), None).await.unwrap() })
        })
        .collect();
    for w in writes {
        w.await.unwrap();
    }
    for (id, was) in ids.iter().zip(before) {
        assert_ne!(stamp(id), was, "{id}");
    }
    assert_eq!(stamp("t/a"), a3);
}
