//! A store that fails now and then (a dropped connection, a locked database) must never
//! fail a run: the engine retries the step it was on. Only a definition the engine cannot
//! execute fails a run. The engine runs over the real SQLite store behind a wrapper that
//! injects failures for one run.

use openwop::engine::{Engine, Registry, Suspended};
use openwop::status::RunStatus;
use openwop::store::{
    Advanced, CreateWith, Created, EventRecord, Guard, HostEventRecord, IdempotencyClaim,
    InterruptRecord, NewEvent, NewRun, OnResolve, RunDetail, RunPage, RunPatch, RunQuery,
    RunRecord, RunStore, SqliteStore, StoreError, StoreFuture, Subscription, Topic,
};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// What the next call of a faulty method does.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    Pass,
    /// Fails without touching the database (the connection dropped before the call).
    Before,
    /// Commits, then fails (the connection dropped before the answer came back).
    After,
}

use Fault::{After, Before, Pass};

/// The real store, with scripted failures of `advance` and `get_run` for one run.
struct Flaky {
    inner: Arc<dyn RunStore>,
    target: Mutex<Option<String>>,
    advance_plan: Mutex<VecDeque<Fault>>,
    get_run_plan: Mutex<VecDeque<Fault>>,
    /// The run's last sequence at each `Before` fault of `advance`, paired with the first
    /// sequence the next successful `advance` appended.
    gaps: Mutex<Vec<(i64, i64)>>,
    pending_gap: Mutex<Option<i64>>,
    advance_calls: Mutex<usize>,
    injected: Mutex<usize>,
    /// Every `advance` of the run fails (a database that stays away).
    down: AtomicBool,
    /// Claims to be shared by several replicas, so the engine leases runs.
    pretend_shared: bool,
    /// Another replica holds the run's lease.
    lease_taken: AtomicBool,
}

impl Flaky {
    fn new(inner: Arc<dyn RunStore>, pretend_shared: bool) -> Arc<Self> {
        Arc::new(Self {
            down: AtomicBool::new(false),
            pretend_shared,
            lease_taken: AtomicBool::new(false),
            inner,
            target: Mutex::new(None),
            advance_plan: Mutex::new(VecDeque::new()),
            get_run_plan: Mutex::new(VecDeque::new()),
            gaps: Mutex::new(Vec::new()),
            pending_gap: Mutex::new(None),
            advance_calls: Mutex::new(0),
            injected: Mutex::new(0),
        })
    }

    fn aim(&self, run_id: &str, advance: &[Fault], get_run: &[Fault]) {
        *self.target.lock().unwrap() = Some(run_id.to_owned());
        *self.advance_plan.lock().unwrap() = advance.iter().copied().collect();
        *self.get_run_plan.lock().unwrap() = get_run.iter().copied().collect();
    }

    fn next_fault(&self, run_id: &str, plan: &Mutex<VecDeque<Fault>>) -> Fault {
        if self.target.lock().unwrap().as_deref() != Some(run_id) {
            return Pass;
        }
        let scripted = plan.lock().unwrap().pop_front().unwrap_or(Pass);
        let fault = if std::ptr::eq(plan, &self.advance_plan) && self.down.load(SeqCst) {
            Before
        } else {
            scripted
        };
        if fault != Pass {
            *self.injected.lock().unwrap() += 1;
        }
        fault
    }

    fn lost() -> StoreError {
        StoreError::Database("connection reset by peer (injected)".into())
    }
}

impl RunStore for Flaky {
    fn create_run_with(
        &self,
        run: NewRun,
        idempotency: Option<IdempotencyClaim>,
        with: CreateWith,
    ) -> StoreFuture<'_, Created> {
        self.inner.create_run_with(run, idempotency, with)
    }

    fn get_run(&self, run_id: &str) -> StoreFuture<'_, Option<RunRecord>> {
        let fault = self.next_fault(run_id, &self.get_run_plan);
        let run_id = run_id.to_owned();
        Box::pin(async move {
            if fault == Before {
                return Err(Self::lost());
            }
            let out = self.inner.get_run(&run_id).await;
            if fault == After {
                return Err(Self::lost());
            }
            out
        })
    }

    fn query_runs(&self, query: RunQuery) -> StoreFuture<'_, RunPage> {
        self.inner.query_runs(query)
    }

    fn unfinished_runs(&self) -> StoreFuture<'_, Vec<RunRecord>> {
        self.inner.unfinished_runs()
    }

    fn advance(
        &self,
        run_id: &str,
        guard: Guard,
        patch: RunPatch,
        events: Vec<NewEvent>,
    ) -> StoreFuture<'_, Advanced> {
        let fault = self.next_fault(run_id, &self.advance_plan);
        let run_id = run_id.to_owned();
        Box::pin(async move {
            if self.target.lock().unwrap().as_deref() == Some(run_id.as_str()) {
                *self.advance_calls.lock().unwrap() += 1;
            }
            if fault == Before {
                let last = self.inner.get_run(&run_id).await?.unwrap().last_sequence;
                self.pending_gap.lock().unwrap().get_or_insert(last);
                return Err(Self::lost());
            }
            let out = self.inner.advance(&run_id, guard, patch, events).await;
            if let Ok(advanced) = &out
                && let Some(before) = self.pending_gap.lock().unwrap().take()
            {
                let first = advanced.events.first().map_or(-1, |e| e.sequence);
                self.gaps.lock().unwrap().push((before, first));
            }
            if fault == After {
                return Err(Self::lost());
            }
            out
        })
    }

    fn resolve_interrupt(
        &self,
        run_id: &str,
        node_id: &str,
        resume_value: Value,
        on_resolve: OnResolve,
    ) -> StoreFuture<'_, Advanced> {
        self.inner
            .resolve_interrupt(run_id, node_id, resume_value, on_resolve)
    }

    fn open_interrupt(&self, run_id: &str) -> StoreFuture<'_, Option<InterruptRecord>> {
        self.inner.open_interrupt(run_id)
    }

    fn events_since(
        &self,
        run_id: &str,
        after: i64,
        limit: usize,
    ) -> StoreFuture<'_, Vec<EventRecord>> {
        self.inner.events_since(run_id, after, limit)
    }

    fn append_host_event(&self, event: HostEventRecord) -> StoreFuture<'_, HostEventRecord> {
        self.inner.append_host_event(event)
    }

    fn host_events(
        &self,
        tenant: &str,
        after: i64,
        limit: usize,
    ) -> StoreFuture<'_, Vec<HostEventRecord>> {
        self.inner.host_events(tenant, after, limit)
    }

    fn run_detail(&self, run_id: &str) -> StoreFuture<'_, Option<RunDetail>> {
        self.inner.run_detail(run_id)
    }

    fn host_event_seq(&self, tenant: &str, event_id: &str) -> StoreFuture<'_, Option<i64>> {
        self.inner.host_event_seq(tenant, event_id)
    }

    fn subscribe(&self, topics: &[Topic]) -> Subscription {
        self.inner.subscribe(topics)
    }

    fn shared(&self) -> bool {
        self.pretend_shared || self.inner.shared()
    }

    fn acquire_lease(&self, run_id: &str, owner: &str, ttl_ms: i64) -> StoreFuture<'_, bool> {
        if self.lease_taken.load(SeqCst) && self.target.lock().unwrap().as_deref() == Some(run_id) {
            return Box::pin(async { Ok(false) });
        }
        self.inner.acquire_lease(run_id, owner, ttl_ms)
    }

    fn release_lease(&self, run_id: &str, owner: &str) -> StoreFuture<'_, ()> {
        self.inner.release_lease(run_id, owner)
    }

    fn unleased_runs(&self, statuses: &'static [RunStatus]) -> StoreFuture<'_, Vec<String>> {
        self.inner.unleased_runs(statuses)
    }

    fn shared_secret(&self, name: &str, candidate: Vec<u8>) -> StoreFuture<'_, Vec<u8>> {
        self.inner.shared_secret(name, candidate)
    }

    fn schema_version(&self) -> StoreFuture<'_, i64> {
        self.inner.schema_version()
    }

    fn prune_host_events(
        &self,
        keep: i64,
        before_ms: i64,
        floors: std::collections::HashMap<String, i64>,
    ) -> StoreFuture<'_, u64> {
        self.inner.prune_host_events(keep, before_ms, floors)
    }

    fn gauges(&self) -> StoreFuture<'_, openwop::store::StoreGauges> {
        self.inner.gauges()
    }
}

const STEPS: &str = r#"
id: steps
inputSchema: { type: object }
nodes:
  - id: a
    kind: transform
    value: { seen: "${inputs.x}" }
  - id: pause
    kind: wait
    ms: 20
  - id: b
    kind: transform
    value: "${nodes.a.seen}"
outputs:
  a: "${nodes.a}"
  b: "${nodes.b}"
"#;

const BREAKS: &str = r#"
id: breaks
inputSchema: { type: object }
nodes:
  - id: bad
    kind: wait
    ms: "${inputs.missing}"
"#;

/// An engine over the flaky store, built the way `Host::build` builds one.
struct Bed {
    _dir: tempfile::TempDir,
    store: Arc<Flaky>,
    engine: Arc<Engine>,
    _shutdown: watch::Sender<bool>,
}

fn bed() -> Bed {
    bed_with(false)
}

fn bed_with(pretend_shared: bool) -> Bed {
    let dir = tempfile::tempdir().unwrap();
    let workflows = dir.path().join("workflows");
    std::fs::create_dir_all(&workflows).unwrap();
    std::fs::write(workflows.join("steps.yaml"), STEPS).unwrap();
    std::fs::write(workflows.join("breaks.yaml"), BREAKS).unwrap();
    let mut registry = Registry::bundled().unwrap();
    registry.load_dir(&workflows).unwrap();
    let sqlite = SqliteStore::open(&dir.path().join("data")).unwrap();
    let store = Flaky::new(Arc::new(sqlite), pretend_shared);
    let (shutdown, shutdown_rx) = watch::channel(false);
    // The shortest lease, so a lost one is noticed within a renewal (a third of it).
    let engine = Engine::with_lease_ttl(
        store.clone(),
        registry,
        shutdown_rx,
        Duration::from_millis(300),
    );
    Bed {
        _dir: dir,
        store,
        engine,
        _shutdown: shutdown,
    }
}

impl Bed {
    async fn create(&self, workflow_id: &str, inputs: Value) -> String {
        let run_id = openwop::ids::mint_bound("acme").as_bound();
        let run = NewRun {
            run_id: run_id.clone(),
            tenant: "acme".into(),
            workflow_id: workflow_id.into(),
            status: RunStatus::Pending,
            // The owner block of the snapshot and run.started, as the corpus shapes it.
            owner: json!({"tenant": "acme", "subject": {
                "issuer": "openwop:api-key", "subjectId": "tester", "tenant": "acme",
                "lane": "api-key", "kind": "user"
            }}),
            transport: "rest".into(),
            inputs,
            state: json!({}),
            annotations: Default::default(),
        };
        self.store.inner.create_run(run, None).await.unwrap();
        run_id
    }

    /// Waits (on the real store, past the faults) until the run is terminal.
    async fn finished(&self, run_id: &str) -> RunRecord {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let run = self.store.inner.get_run(run_id).await.unwrap().unwrap();
            if run.status.is_terminal() {
                return run;
            }
            assert!(Instant::now() < deadline, "run stuck as {:?}", run.status);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn log(&self, run_id: &str) -> Vec<EventRecord> {
        let events = self
            .store
            .inner
            .events_since(run_id, -1, 1000)
            .await
            .unwrap();
        let sequences: Vec<i64> = events.iter().map(|e| e.sequence).collect();
        let contiguous: Vec<i64> = (0..events.len() as i64).collect();
        assert_eq!(sequences, contiguous, "the event log has a gap or a repeat");
        events
    }
}

fn shape(events: &[EventRecord]) -> Vec<(String, Option<String>)> {
    events
        .iter()
        .map(|e| (e.event_type.clone(), e.node_id.clone()))
        .collect()
}

fn step(event_type: &str, node: Option<&str>) -> (String, Option<String>) {
    (event_type.to_owned(), node.map(str::to_owned))
}

#[tokio::test]
async fn store_failures_during_steps_are_retried_and_the_run_completes_once() {
    let bed = bed();
    let run_id = bed.create("steps", json!({"x": 7})).await;
    // The run takes two commits: everything up to the wait's deadline, then the wait's
    // completion through the end. Failures before the call (nothing written) and after a
    // commit (the answer lost), on the writes and on the reads a driver starts from.
    bed.store.aim(
        &run_id,
        &[
            Before, Before, Pass, // run.started, node a, the wait's deadline
            Before, After, // the completion through run.completed: lands, answer lost
        ],
        &[Pass, Before, Pass, Pass, Before, Pass],
    );
    bed.engine.start(&run_id);
    let run = bed.finished(&run_id).await;

    assert_eq!(run.status, RunStatus::Completed, "error: {:?}", run.error);
    assert_eq!(
        run.outputs,
        Some(json!({"a": {"seen": 7}, "b": 7})),
        "outputs"
    );
    assert!(
        bed.store.advance_plan.lock().unwrap().is_empty(),
        "every fault was met"
    );
    assert!(
        bed.store.get_run_plan.lock().unwrap().is_empty(),
        "every fault was met: {:?}",
        bed.store.get_run_plan.lock().unwrap()
    );
    assert_eq!(*bed.store.injected.lock().unwrap(), 6);
    let events = bed.log(&run_id).await;
    assert_eq!(
        shape(&events),
        vec![
            step("run.started", None),
            step("node.started", Some("a")),
            step("node.completed", Some("a")),
            step("node.started", Some("pause")),
            step("node.completed", Some("pause")),
            step("node.started", Some("b")),
            step("node.completed", Some("b")),
            step("run.completed", None),
        ],
        "every step appears once, in order"
    );
    // While the store failed, nothing reached the log: each step that finally went
    // through appended right after what was there when its first attempt failed.
    let gaps = bed.store.gaps.lock().unwrap().clone();
    assert!(!gaps.is_empty());
    for (before, first) in gaps {
        assert_eq!(
            first,
            before + 1,
            "something was appended while the store failed"
        );
    }
}

#[tokio::test]
async fn a_wait_that_does_not_resolve_fails_the_run_at_once() {
    let bed = bed();
    let run_id = bed.create("breaks", json!({})).await;
    bed.store.aim(&run_id, &[], &[]);
    bed.engine.start(&run_id);
    let run = bed.finished(&run_id).await;

    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(run.error.as_ref().unwrap()["code"], "validation_error");
    assert!(
        bed.engine.failed_by_host(&run),
        "a definition error is the host's"
    );
    // run.started and run.failed in one commit: one attempt, no retry.
    assert_eq!(*bed.store.advance_calls.lock().unwrap(), 1);
    let events = bed.log(&run_id).await;
    assert_eq!(
        shape(&events),
        vec![step("run.started", None), step("run.failed", Some("bad"))]
    );
    assert_eq!(events[1].payload["failedNodeId"], "bad");
}

#[tokio::test]
async fn a_missing_workflow_fails_the_run_even_when_the_failing_write_must_be_retried() {
    let bed = bed();
    let run_id = bed.create("gone", json!({})).await;
    // The write that fails it (the run's start and its failure) meets a dropped
    // connection first.
    bed.store.aim(&run_id, &[Before, Pass], &[]);
    bed.engine.start(&run_id);
    let run = bed.finished(&run_id).await;

    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(run.error.as_ref().unwrap()["code"], "internal_error");
    assert!(bed.engine.failed_by_host(&run));
    let events = bed.log(&run_id).await;
    assert_eq!(
        shape(&events),
        vec![step("run.started", None), step("run.failed", None)]
    );
}

#[tokio::test]
async fn a_workflow_that_fails_itself_is_not_the_hosts_failure() {
    let bed = bed();
    let run_id = bed.create("fail", json!({})).await;
    bed.store.aim(&run_id, &[Before, Pass, Before], &[Before]);
    bed.engine.start(&run_id);
    let run = bed.finished(&run_id).await;

    assert_eq!(run.status, RunStatus::Failed);
    assert!(!bed.engine.failed_by_host(&run), "{:?}", run.error);
    let events = bed.log(&run_id).await;
    assert_eq!(events.last().unwrap().event_type, "run.failed");
    assert_eq!(
        events
            .iter()
            .filter(|e| e.event_type == "run.failed")
            .count(),
        1
    );
}

#[tokio::test]
async fn a_driver_that_loses_the_lease_while_retrying_stops_and_the_next_one_finishes() {
    let bed = bed_with(true);
    let run_id = bed.create("steps", json!({"x": 1})).await;
    bed.store.aim(&run_id, &[], &[]);
    bed.store.down.store(true, SeqCst);
    bed.engine.start(&run_id);
    let calls = || *bed.store.advance_calls.lock().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while calls() < 2 {
        assert!(Instant::now() < deadline, "the engine never retried");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Another replica takes the run over while the database is still away for this one.
    bed.store.lease_taken.store(true, SeqCst);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after_loss = calls();
    // Retrying on would have tried again within this (the backoff is still below 2 s).
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        calls(),
        after_loss,
        "the engine kept retrying without the lease"
    );
    let run = bed.store.inner.get_run(&run_id).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Pending, "the run is left as it was");
    assert_eq!(run.last_sequence, -1);

    // The lease comes free and the database back: whoever picks the run up (here the
    // sweep's call) drives it to the end.
    bed.store.lease_taken.store(false, SeqCst);
    bed.store.down.store(false, SeqCst);
    bed.engine.start(&run_id);
    let run = bed.finished(&run_id).await;
    assert_eq!(run.status, RunStatus::Completed, "error: {:?}", run.error);
    assert_eq!(run.outputs, Some(json!({"a": {"seen": 1}, "b": 1})));
    assert_eq!(bed.log(&run_id).await.len(), 8);
}

#[tokio::test]
async fn a_suspend_whose_answer_was_lost_still_notifies_once() {
    let bed = bed();
    let notices: Arc<Mutex<Vec<Suspended>>> = Arc::default();
    let seen = notices.clone();
    bed.engine
        .set_on_suspend(Arc::new(move |s| seen.lock().unwrap().push(s)));
    let run_id = bed.create("approval", json!({})).await;
    // The suspending write commits, but its answer is lost: the retry finds the run
    // suspended on the interrupt that write opened.
    bed.store.aim(&run_id, &[Pass, After], &[]);
    bed.engine.start(&run_id);
    let deadline = Instant::now() + Duration::from_secs(10);
    while notices.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "no suspend notice");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Time for a second (wrong) notice to show up.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let open = bed
        .store
        .inner
        .open_interrupt(&run_id)
        .await
        .unwrap()
        .unwrap();
    let notices = notices.lock().unwrap().clone();
    assert_eq!(notices.len(), 1, "exactly one notice");
    assert_eq!(notices[0].interrupt_id, open.interrupt_id);
    assert_eq!(notices[0].node_id, "approve");
    let run = bed.store.inner.get_run(&run_id).await.unwrap().unwrap();
    assert_eq!(notices[0].run.status, run.status);
    assert_ne!(run.status, RunStatus::Running);
    assert_eq!(
        shape(&bed.log(&run_id).await),
        vec![
            step("run.started", None),
            step("node.started", Some("approve")),
            step("interrupt.requested", Some("approve")),
            step("node.suspended", Some("approve")),
        ]
    );
}
