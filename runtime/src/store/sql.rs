//! The SQL both backends run and the one mapping of rows to records, so a column is
//! added in one place: its migration, its column list here, its mapper here.
//!
//! Statements are written in PostgreSQL's dialect with `$N` parameters and kept to SQL
//! SQLite also reads; the SQLite backend runs them through `migrate::to_sqlite` (once per
//! statement, see `sqlite::lite`). What only one engine can say (row locks, `SKIP LOCKED`,
//! advisory locks, NOTIFY, array parameters) stays in that backend, built from the column
//! lists below.
//!
//! A set of values (statuses, interrupt kinds) travels as one text parameter, the values
//! between commas (`",running,pending,"`, see [`list`]), tested with
//! `strpos($N, ',' || col || ',') > 0`; the empty string means "no filter".

use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

use serde_json::Value;

use super::{
    DeadLetter, Delivery, EventRecord, HostEventRecord, InterruptRecord, OpenInterrupt,
    RunAnnotations, RunOrder, RunPatch, RunQuery, RunRecord, RunStatus, Secret, SessionRecord,
    StoreError, StoredConfig, parse_status,
};

/// A row of either engine. Each engine reads a column by position; by name is a lookup
/// first (a scan of the statement's column names), which the hot mappers (runs, events,
/// interrupts) avoid by reading their columns in list order through [`Cols`].
pub(crate) trait Row {
    /// The position of the column named `col`.
    fn index(&self, col: &str) -> Result<usize, StoreError>;
    /// The name of the column at `at` (checks [`Cols`] in debug builds).
    fn name_at(&self, at: usize) -> Option<&str>;
    fn text_at(&self, at: usize) -> Result<String, StoreError>;
    fn opt_text_at(&self, at: usize) -> Result<Option<String>, StoreError>;
    fn int_at(&self, at: usize) -> Result<i64, StoreError>;
    fn opt_int_at(&self, at: usize) -> Result<Option<i64>, StoreError>;
    fn flag_at(&self, at: usize) -> Result<bool, StoreError>;
    fn bytes_at(&self, at: usize) -> Result<Vec<u8>, StoreError>;

    fn text(&self, col: &str) -> Result<String, StoreError> {
        self.text_at(self.index(col)?)
    }
    fn opt_text(&self, col: &str) -> Result<Option<String>, StoreError> {
        self.opt_text_at(self.index(col)?)
    }
    fn int(&self, col: &str) -> Result<i64, StoreError> {
        self.int_at(self.index(col)?)
    }
    fn opt_int(&self, col: &str) -> Result<Option<i64>, StoreError> {
        self.opt_int_at(self.index(col)?)
    }
    fn flag(&self, col: &str) -> Result<bool, StoreError> {
        self.flag_at(self.index(col)?)
    }
    fn bytes(&self, col: &str) -> Result<Vec<u8>, StoreError> {
        self.bytes_at(self.index(col)?)
    }

    /// A JSON column: kept as text, byte for byte what the host wrote.
    fn json(&self, col: &str) -> Result<Value, StoreError> {
        parse_json(col, &self.text(col)?)
    }
}

fn parse_json(col: &str, text: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text)
        .map_err(|e| StoreError::Database(format!("column {col} is not JSON: {e}")))
}

/// Reads a row's columns one after another, in the order of its statement's column list:
/// by position, so no name is looked up. Each read names the column it expects; debug
/// builds (every test) check that name against the statement's, so a mapper that drifts
/// from its column list fails the tests instead of reading the wrong column.
pub(crate) struct Cols<'r> {
    row: &'r dyn Row,
    next: usize,
}

impl<'r> Cols<'r> {
    pub(crate) fn new(row: &'r dyn Row) -> Self {
        Cols { row, next: 0 }
    }

    fn at(&mut self, col: &str) -> usize {
        let at = self.next;
        debug_assert_eq!(
            self.row.name_at(at),
            Some(col),
            "column {at} of the statement is not `{col}`"
        );
        self.next += 1;
        at
    }

    pub(crate) fn text(&mut self, col: &str) -> Result<String, StoreError> {
        let at = self.at(col);
        self.row.text_at(at)
    }
    pub(crate) fn opt_text(&mut self, col: &str) -> Result<Option<String>, StoreError> {
        let at = self.at(col);
        self.row.opt_text_at(at)
    }
    pub(crate) fn int(&mut self, col: &str) -> Result<i64, StoreError> {
        let at = self.at(col);
        self.row.int_at(at)
    }
    pub(crate) fn opt_int(&mut self, col: &str) -> Result<Option<i64>, StoreError> {
        let at = self.at(col);
        self.row.opt_int_at(at)
    }
    pub(crate) fn json(&mut self, col: &str) -> Result<Value, StoreError> {
        parse_json(col, &self.text(col)?)
    }
    /// Whether the next column is NULL (it is not read).
    fn next_is_null(&self) -> Result<bool, StoreError> {
        Ok(self.row.opt_text_at(self.next)?.is_none())
    }
    /// Passes over `n` columns without reading them.
    fn skip(&mut self, n: usize) {
        self.next += n;
    }
    pub(crate) fn opt_json(&mut self, col: &str) -> Result<Option<Value>, StoreError> {
        self.opt_text(col)?.map(|t| parse_json(col, &t)).transpose()
    }
}

impl Row for rusqlite::Row<'_> {
    fn index(&self, col: &str) -> Result<usize, StoreError> {
        Ok(self.as_ref().column_index(col)?)
    }
    fn name_at(&self, at: usize) -> Option<&str> {
        self.as_ref().column_name(at).ok()
    }
    fn text_at(&self, at: usize) -> Result<String, StoreError> {
        Ok(self.get(at)?)
    }
    fn opt_text_at(&self, at: usize) -> Result<Option<String>, StoreError> {
        Ok(self.get(at)?)
    }
    fn int_at(&self, at: usize) -> Result<i64, StoreError> {
        Ok(self.get(at)?)
    }
    fn opt_int_at(&self, at: usize) -> Result<Option<i64>, StoreError> {
        Ok(self.get(at)?)
    }
    fn flag_at(&self, at: usize) -> Result<bool, StoreError> {
        Ok(self.get(at)?)
    }
    fn bytes_at(&self, at: usize) -> Result<Vec<u8>, StoreError> {
        Ok(self.get(at)?)
    }
}

impl Row for tokio_postgres::Row {
    fn index(&self, col: &str) -> Result<usize, StoreError> {
        self.columns()
            .iter()
            .position(|c| c.name() == col)
            .ok_or_else(|| StoreError::Database(format!("no column {col} in the row")))
    }
    fn name_at(&self, at: usize) -> Option<&str> {
        self.columns().get(at).map(|c| c.name())
    }
    fn text_at(&self, at: usize) -> Result<String, StoreError> {
        Ok(self.try_get(at)?)
    }
    fn opt_text_at(&self, at: usize) -> Result<Option<String>, StoreError> {
        Ok(self.try_get(at)?)
    }
    // Most integer columns are BIGINT; the push attempt counters of migration 3 are INTEGER.
    fn int_at(&self, at: usize) -> Result<i64, StoreError> {
        match self.try_get::<_, i64>(at) {
            Ok(v) => Ok(v),
            Err(_) => Ok(i64::from(self.try_get::<_, i32>(at)?)),
        }
    }
    fn opt_int_at(&self, at: usize) -> Result<Option<i64>, StoreError> {
        match self.try_get::<_, Option<i64>>(at) {
            Ok(v) => Ok(v),
            Err(_) => Ok(self.try_get::<_, Option<i32>>(at)?.map(i64::from)),
        }
    }
    fn flag_at(&self, at: usize) -> Result<bool, StoreError> {
        Ok(self.try_get(at)?)
    }
    fn bytes_at(&self, at: usize) -> Result<Vec<u8>, StoreError> {
        Ok(self.try_get(at)?)
    }
}

/// The values [`APPLY_PATCH`] binds as $2..$8, in order.
pub(crate) struct PatchColumns {
    pub status: Option<&'static str>,
    pub node_index: Option<i64>,
    pub set_wait: bool,
    pub wait_until: Option<i64>,
    pub state: Option<String>,
    pub outputs: Option<String>,
    pub error: Option<String>,
}

pub(crate) fn patch(p: &RunPatch) -> PatchColumns {
    PatchColumns {
        status: p.status.map(RunStatus::as_str),
        node_index: p.node_index,
        set_wait: p.wait_until.is_some(),
        wait_until: p.wait_until.flatten(),
        state: p.state.as_ref().map(Value::to_string),
        outputs: p.outputs.as_ref().map(Value::to_string),
        error: p.error.as_ref().map(Value::to_string),
    }
}

/// A set of values as one parameter: `",a,b,"`; empty for "no filter".
pub(crate) fn list<'a>(values: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for v in values {
        if out.is_empty() {
            out.push(',');
        }
        out.push_str(v);
        out.push(',');
    }
    out
}

/// Statuses as a [`list`].
pub(crate) fn statuses(statuses: &[RunStatus]) -> String {
    list(statuses.iter().map(|s| s.as_str()))
}

// ---- column lists ---------------------------------------------------------------------

/// Columns of `runs` read into a [`RunRecord`] (`run`).
macro_rules! run_cols {
    () => {
        "list_order, run_id, tenant, workflow_id, status, owner, transport, inputs, state, outputs, error, node_index, wait_until, created_ms, updated_ms, last_sequence, agent_id, tags, metadata"
    };
}
/// Columns of `events`, written and read ([`event`]).
macro_rules! event_cols {
    () => {
        "run_id, sequence, event_id, type, node_id, payload, ts_ms"
    };
}
/// Columns of `interrupts` read into an [`InterruptRecord`] ([`interrupt`]).
macro_rules! interrupt_cols {
    () => {
        "run_id, node_id, interrupt_id, kind, data, state, resume_value"
    };
}
/// Columns of `host_events` written (the store assigns `seq`).
macro_rules! host_event_cols {
    () => {
        "tenant, event_id, type, delivery, workspace_id, payload, ts_ms"
    };
}
/// Columns of `push_configs` read into a [`StoredConfig`] ([`push_config`]).
macro_rules! config_cols {
    () => {
        "run_id, config_id, url, scheme, created_ms"
    };
}
/// Columns of `push_outbox` read into a [`Delivery`] ([`delivery`]).
macro_rules! delivery_cols {
    () => {
        "delivery_id, run_id, config_id, state, body, attempts, last"
    };
}
/// Columns of `push_dead_letters`, written and read ([`dead_letter`]).
macro_rules! dead_letter_cols {
    () => {
        "delivery_id, run_id, config_id, state, attempts, reason, at_ms"
    };
}
/// Columns of `mcp_sessions` read into a [`SessionRecord`] ([`session`]).
macro_rules! session_cols {
    () => {
        "principal_digest, version, expires_ms"
    };
}
/// Columns a new run is inserted with.
macro_rules! new_run_cols {
    () => {
        "run_id, tenant, workflow_id, status, owner, transport, inputs, state, node_index, created_ms, updated_ms, last_sequence, agent_id, tags, metadata"
    };
}
/// Columns of `idempotency`.
macro_rules! key_cols {
    () => {
        "tenant, principal, key, body_hash, run_id, created_ms"
    };
}
/// Columns of `a2a_messages`.
macro_rules! message_cols {
    () => {
        "run_id, seq, message_id, message"
    };
}
/// Columns of `a2a_tasks`.
macro_rules! task_cols {
    () => {
        "run_id, context_id"
    };
}
pub(crate) use {
    delivery_cols, event_cols, host_event_cols, interrupt_cols, key_cols, message_cols,
    new_run_cols, run_cols, task_cols,
};

// ---- row mappers ----------------------------------------------------------------------

/// A row of `run_cols!`, read in that order.
pub(crate) fn run(r: &dyn Row) -> Result<RunRecord, StoreError> {
    read_run(&mut Cols::new(r))
}

/// The `run_cols!` columns at the cursor, in that order.
pub(crate) fn read_run(c: &mut Cols<'_>) -> Result<RunRecord, StoreError> {
    let list_order = c.int("list_order")?;
    let run_id = c.text("run_id")?;
    let tenant = c.text("tenant")?;
    let workflow_id = c.text("workflow_id")?;
    let status = parse_status(&run_id, &c.text("status")?)?;
    Ok(RunRecord {
        list_order,
        tenant,
        workflow_id,
        status,
        owner: c.json("owner")?,
        transport: c.text("transport")?,
        inputs: c.json("inputs")?,
        state: c.json("state")?,
        outputs: c.opt_json("outputs")?,
        error: c.opt_json("error")?,
        node_index: c.int("node_index")?,
        wait_until: c.opt_int("wait_until")?,
        created_ms: c.int("created_ms")?,
        updated_ms: c.int("updated_ms")?,
        last_sequence: c.int("last_sequence")?,
        annotations: RunAnnotations {
            agent_id: c.opt_text("agent_id")?,
            tags: c.opt_json("tags")?,
            metadata: c.opt_json("metadata")?,
        },
        run_id,
    })
}

/// A row of [`RUN_DETAIL_BY_ID`]: the run (its `state` null) and its A2A contextId.
pub(crate) fn run_and_context(r: &dyn Row) -> Result<(RunRecord, Option<String>), StoreError> {
    Ok((run(r)?, r.opt_text("context_id")?))
}

/// A row of `event_cols!`, read in that order.
pub(crate) fn event(r: &dyn Row) -> Result<EventRecord, StoreError> {
    let mut c = Cols::new(r);
    Ok(EventRecord {
        run_id: c.text("run_id")?,
        sequence: c.int("sequence")?,
        event_id: c.text("event_id")?,
        event_type: c.text("type")?,
        node_id: c.opt_text("node_id")?,
        payload: c.json("payload")?,
        timestamp_ms: c.int("ts_ms")?,
    })
}

/// A row of `interrupt_cols!`, read in that order.
pub(crate) fn interrupt(r: &dyn Row) -> Result<InterruptRecord, StoreError> {
    read_interrupt(&mut Cols::new(r))
}

/// The `interrupt_cols!` columns at the cursor, in that order, or `None` when they are
/// NULL (an outer join that found no interrupt).
pub(crate) fn read_opt_interrupt(c: &mut Cols<'_>) -> Result<Option<InterruptRecord>, StoreError> {
    if c.next_is_null()? {
        c.skip(INTERRUPT_COLUMNS);
        return Ok(None);
    }
    read_interrupt(c).map(Some)
}

/// How many columns `interrupt_cols!` names.
const INTERRUPT_COLUMNS: usize = 7;

fn read_interrupt(c: &mut Cols<'_>) -> Result<InterruptRecord, StoreError> {
    Ok(InterruptRecord {
        run_id: c.text("run_id")?,
        node_id: c.text("node_id")?,
        interrupt_id: c.text("interrupt_id")?,
        kind: c.text("kind")?,
        data: c.json("data")?,
        state: c.text("state")?,
        resume_value: c.opt_json("resume_value")?,
    })
}

pub(crate) fn host_event(r: &dyn Row) -> Result<HostEventRecord, StoreError> {
    Ok(HostEventRecord {
        seq: r.int("seq")?,
        tenant: r.text("tenant")?,
        event_id: r.text("event_id")?,
        event_type: r.text("type")?,
        delivery: r.text("delivery")?,
        workspace_id: r.opt_text("workspace_id")?,
        payload: r.json("payload")?,
        timestamp_ms: r.int("ts_ms")?,
    })
}

pub(crate) fn session(r: &dyn Row) -> Result<SessionRecord, StoreError> {
    Ok(SessionRecord {
        principal_digest: r.text("principal_digest")?,
        version: r.text("version")?,
        expires_ms: r.int("expires_ms")?,
    })
}

pub(crate) fn push_config(r: &dyn Row) -> Result<StoredConfig, StoreError> {
    Ok(StoredConfig {
        run_id: r.text("run_id")?,
        config_id: r.text("config_id")?,
        url: r.text("url")?,
        scheme: r.opt_text("scheme")?,
        created_ms: r.int("created_ms")?,
    })
}

fn attempts(r: &dyn Row) -> Result<u32, StoreError> {
    Ok(u32::try_from(r.int("attempts")?.max(0)).unwrap_or(u32::MAX))
}

pub(crate) fn delivery(r: &dyn Row) -> Result<Delivery, StoreError> {
    Ok(Delivery {
        delivery_id: r.text("delivery_id")?,
        run_id: r.text("run_id")?,
        config_id: r.text("config_id")?,
        state: r.text("state")?,
        body: r.text("body")?,
        attempts: attempts(r)?,
        last: r.flag("last")?,
    })
}

pub(crate) fn dead_letter(r: &dyn Row) -> Result<DeadLetter, StoreError> {
    Ok(DeadLetter {
        delivery_id: r.text("delivery_id")?,
        run_id: r.text("run_id")?,
        config_id: r.text("config_id")?,
        state: r.text("state")?,
        attempts: attempts(r)?,
        reason: r.text("reason")?,
        at_ms: r.int("at_ms")?,
    })
}

pub(crate) fn secret(r: &dyn Row) -> Result<Secret, StoreError> {
    Ok(Secret {
        token: r.opt_text("token")?,
        credentials: r.opt_text("credentials")?,
    })
}

// ---- runs -----------------------------------------------------------------------------

pub(crate) const RUN_BY_ID: &str = concat!("SELECT ", run_cols!(), " FROM runs WHERE run_id = $1");

/// The columns of `run_cols!` with `state` read as JSON null, for the run detail (a
/// snapshot): no view shows the state, and parsing it made the cost of every GET grow
/// with the size of the run's working state (a test checks the two lists agree).
macro_rules! run_detail_cols {
    () => {
        "list_order, run_id, tenant, workflow_id, status, owner, transport, inputs, 'null' AS state, outputs, error, node_index, wait_until, created_ms, updated_ms, last_sequence, agent_id, tags, metadata"
    };
}
pub(crate) use run_detail_cols;

/// A run as its snapshot shows it ([`run_and_context`]), with the A2A contextId bound to it
/// in the same statement (SQLite's detail; PostgreSQL's also joins the open interrupt).
pub(crate) const RUN_DETAIL_BY_ID: &str = concat!(
    "SELECT ",
    run_detail_cols!(),
    ", (SELECT context_id FROM a2a_tasks t WHERE t.run_id = runs.run_id) AS context_id \
     FROM runs WHERE run_id = $1"
);

/// A new run's whole row but `list_order` (the database's), already changed by its first
/// step when it had one (SQLite; PostgreSQL's creation is one statement of its own):
/// $1 run_id, $2 tenant, $3 workflow_id, $4 status, $5 owner, $6 transport, $7 inputs,
/// $8 state, $9 outputs, $10 error, $11 node_index, $12 wait_until, $13 created_ms,
/// $14 updated_ms, $15 last_sequence, $16 agent_id, $17 tags, $18 metadata.
pub(crate) const INSERT_RUN: &str = "INSERT INTO runs (run_id, tenant, workflow_id, status, owner, transport, inputs, state, outputs, error, node_index, wait_until, created_ms, updated_ms, last_sequence, agent_id, tags, metadata) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)";

/// The condition of the `runs_live` partial index (migration 8), spelled as the index
/// spells it so both planners can use the index: a run not in a terminal status.
macro_rules! live {
    () => {
        "status NOT IN ('completed', 'failed', 'cancelled')"
    };
}
pub(crate) use live;

/// The ids of every live run whose status is in the [`list`] $1, oldest first.
pub(crate) const RUN_IDS_IN: &str = concat!(
    "SELECT run_id FROM runs WHERE ",
    live!(),
    " AND strpos($1, ',' || status || ',') > 0 ORDER BY list_order"
);

/// Every live run (not in a terminal status), oldest first.
pub(crate) const UNFINISHED_RUNS: &str = concat!(
    "SELECT ",
    run_cols!(),
    " FROM runs WHERE ",
    live!(),
    " ORDER BY list_order"
);

/// Which statement of a run query: a page in one of the two orders, or the count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum RunStatement {
    /// Newest created first: the filters, $8 `list_order` bound (exclusive) or NULL, $9
    /// limit.
    ByCreation,
    /// Last updated first, the run id (byte order) breaking ties: the filters, $8/$9 the
    /// `updated_ms` and run id of the cursor (exclusive) or NULL, $10 limit.
    ByUpdate,
    /// How many runs the filters admit.
    Count,
}

/// The shape of a run query: which filters it sets (the statuses themselves, which are
/// written into the statement), and which statement.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Shape {
    statement: RunStatement,
    statuses: String,
    workflow: bool,
    context: bool,
    updated_since: bool,
    with_kinds: bool,
    without_kinds: bool,
    /// A page after the first: the keyset cursor bounds the index scan.
    cursor: bool,
}

/// The statement of a run query, written for the filters it sets. Parameters, the same in
/// every shape: $1 tenant; $2 statuses ([`list`], empty: any); $3 workflow id or NULL; $4
/// A2A contextId or NULL (the bound one, else the run id); $5 updated at or after (ms) or
/// NULL; $6 kinds of which an interrupt is open ([`list`], empty: no condition); $7 kinds of
/// which none is open (likewise); then the order's own ([`RunStatement`]).
///
/// One statement for every query (`$3 IS NULL OR workflow_id = $3`) hides each column's
/// index from both planners: the plan must serve any binding, so a selective filter scanned
/// every run of the tenant (31 ms at 100,000 runs, issue #33). A filter a query does not set
/// is still named, as a condition on its parameter alone, so the binding code is the same
/// for every shape; a set status filter is written as literals (the statuses are a closed
/// set), which lets `runs_by_tenant_status` serve it in order. Shapes are few (statement × status
/// set × five flags) and each is written once per process, for SQLite's statement cache
/// and PostgreSQL's prepared statements alike.
pub(crate) fn run_statement(
    statement: RunStatement,
    q: &RunQuery,
    f: &QueryFilter,
) -> &'static str {
    static WRITTEN: OnceLock<RwLock<HashMap<Shape, &'static str>>> = OnceLock::new();
    let shape = Shape {
        statement,
        statuses: f.statuses.clone(),
        workflow: q.workflow_id.is_some(),
        context: q.context_id.is_some(),
        updated_since: q.updated_since_ms.is_some(),
        with_kinds: !f.with_kinds.is_empty(),
        without_kinds: !f.without_kinds.is_empty(),
        cursor: match &q.order {
            RunOrder::Created { before } => before.is_some(),
            RunOrder::Updated { after } => after.is_some(),
        },
    };
    let map = WRITTEN.get_or_init(Default::default);
    if let Some(s) = map.read().ok().and_then(|m| m.get(&shape).copied()) {
        return s;
    }
    let written: &'static str = Box::leak(write_run_statement(&shape).into_boxed_str());
    match map.write() {
        Ok(mut m) => m.entry(shape).or_insert(written),
        Err(_) => written,
    }
}

fn write_run_statement(shape: &Shape) -> String {
    let mut s = String::with_capacity(1024);
    s.push_str(match shape.statement {
        RunStatement::Count => "SELECT COUNT(*) AS total",
        _ => concat!("SELECT ", run_cols!()),
    });
    s.push_str(" FROM runs WHERE tenant = $1");
    let statuses: Vec<&str> = shape
        .statuses
        .split(',')
        .filter(|v| !v.is_empty())
        .collect();
    match statuses.as_slice() {
        [] => s.push_str(" AND $2 = ''"),
        [one] => s.push_str(&format!(" AND $2 <> '' AND status = '{}'", literal(one))),
        many => {
            let quoted: Vec<String> = many.iter().map(|v| format!("'{}'", literal(v))).collect();
            s.push_str(&format!(
                " AND $2 <> '' AND status IN ({})",
                quoted.join(", ")
            ));
        }
    }
    s.push_str(if shape.workflow {
        " AND workflow_id = $3"
    } else {
        " AND CAST($3 AS TEXT) IS NULL"
    });
    // A run's context is the one bound to its task, else its own id. Written as the set of
    // runs the context can name (its tasks, by `a2a_tasks_by_context`, and the run of that
    // id when no task binds it), so both planners read a handful of runs by key instead of
    // asking every run of the tenant for its context (a per-row subquery, issue #33).
    s.push_str(if shape.context {
        " AND runs.run_id IN (SELECT t.run_id FROM a2a_tasks t WHERE t.context_id = $4 \
         UNION ALL SELECT CAST($4 AS TEXT) WHERE NOT EXISTS (SELECT 1 FROM a2a_tasks u WHERE u.run_id = $4))"
    } else {
        " AND CAST($4 AS TEXT) IS NULL"
    });
    s.push_str(if shape.updated_since {
        " AND updated_ms >= $5"
    } else {
        " AND CAST($5 AS BIGINT) IS NULL"
    });
    s.push_str(if shape.with_kinds {
        " AND EXISTS (SELECT 1 FROM interrupts i WHERE i.run_id = runs.run_id AND i.state = 'open' AND strpos($6, ',' || i.kind || ',') > 0)"
    } else {
        " AND $6 = ''"
    });
    s.push_str(if shape.without_kinds {
        " AND NOT EXISTS (SELECT 1 FROM interrupts i WHERE i.run_id = runs.run_id AND i.state = 'open' AND strpos($7, ',' || i.kind || ',') > 0)"
    } else {
        " AND $7 = ''"
    });
    s.push_str(match (shape.statement, shape.cursor) {
        (RunStatement::ByCreation, true) => " AND list_order < $8 ORDER BY list_order DESC LIMIT $9",
        (RunStatement::ByCreation, false) => {
            " AND CAST($8 AS BIGINT) IS NULL ORDER BY list_order DESC LIMIT $9"
        }
        // A row-value comparison would say it shorter; this form is the one both
        // planners turn into an index range on (updated_ms, run_id).
        (RunStatement::ByUpdate, true) => {
            " AND updated_ms <= $8 AND (updated_ms < $8 OR run_id COLLATE \"C\" < $9) ORDER BY updated_ms DESC, run_id COLLATE \"C\" DESC LIMIT $10"
        }
        (RunStatement::ByUpdate, false) => {
            " AND CAST($8 AS BIGINT) IS NULL AND CAST($9 AS TEXT) IS NULL ORDER BY updated_ms DESC, run_id COLLATE \"C\" DESC LIMIT $10"
        }
        (RunStatement::Count, _) => "",
    });
    s
}

/// How many runs tenant $1 has in the statuses $2 ([`list`]; empty: any), from the counts
/// migration 11's triggers keep in every write's transaction: the sum of a few rows of one
/// index range (`run_counts`' key), where `COUNT(*)` over the runs grew with the tenant
/// (A2A `totalSize`, issue #33). Serves a query only when [`counted`] says so.
pub(crate) const RUN_TOTAL: &str = "SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) AS total FROM run_counts WHERE tenant = $1 AND ($2 = '' OR strpos($2, ',' || status || ',') > 0)";

/// Whether [`RUN_TOTAL`] counts what `q` admits: it filters by nothing but its tenant and
/// its statuses. Any other filter is counted over the runs (`RunStatement::Count`).
pub(crate) fn counted(q: &RunQuery, f: &QueryFilter) -> bool {
    q.workflow_id.is_none()
        && q.context_id.is_none()
        && q.updated_since_ms.is_none()
        && f.with_kinds.is_empty()
        && f.without_kinds.is_empty()
}

/// A status written into a statement: the statuses are a closed set of lowercase words
/// and hyphens; anything else would be a bug, and is written as no status at all rather
/// than as SQL.
fn literal(status: &str) -> &str {
    if status.bytes().all(|b| b.is_ascii_lowercase() || b == b'-') {
        status
    } else {
        ""
    }
}

/// The filter parameters of a query ($2, $4..$7 as bound; $1 and $3 are its fields).
pub(crate) struct QueryFilter {
    pub statuses: String,
    pub with_kinds: String,
    pub without_kinds: String,
}

pub(crate) fn filter(q: &RunQuery) -> QueryFilter {
    let kinds = |k: &[String]| list(k.iter().map(String::as_str));
    let (with_kinds, without_kinds) = match &q.open_interrupt {
        None => (String::new(), String::new()),
        Some(OpenInterrupt::OfKind(k)) => (kinds(k), String::new()),
        Some(OpenInterrupt::NotOfKind(k)) => (String::new(), kinds(k)),
    };
    QueryFilter {
        statuses: statuses(&q.statuses),
        with_kinds,
        without_kinds,
    }
}

/// A run change, the one place a `RunPatch` is applied: $1 run_id; $2 status, $3
/// node_index, $5 wait_until (when $4), $6 state, $7 outputs, $8 error — NULL keeps the
/// stored value; $9 events appended; $10 now. (`apply_patch!` is the statement without
/// its `RETURNING`, for PostgreSQL's compositions.)
macro_rules! apply_patch {
    () => {
        "UPDATE runs SET status = COALESCE($2, status), node_index = COALESCE($3, node_index),
        wait_until = CASE WHEN $4 THEN $5 ELSE wait_until END, state = COALESCE($6, state),
        outputs = COALESCE($7, outputs), error = COALESCE($8, error),
        last_sequence = last_sequence + $9, updated_ms = $10
     WHERE run_id = $1"
    };
}
pub(crate) use apply_patch;

pub(crate) const APPLY_PATCH: &str = apply_patch!();

pub(crate) const INSERT_EVENT: &str = concat!(
    "INSERT INTO events (",
    event_cols!(),
    ") VALUES ($1, $2, $3, $4, $5, $6, $7)"
);

pub(crate) const EVENTS_SINCE: &str = concat!(
    "SELECT ",
    event_cols!(),
    " FROM events WHERE run_id = $1 AND sequence > $2 ORDER BY sequence LIMIT $3"
);

pub(crate) const CLOSE_INTERRUPTS: &str =
    "UPDATE interrupts SET state = 'closed' WHERE run_id = $1 AND state = 'open'";

/// Opens an interrupt at $1/$2. A node keeps one row: asking again at a node whose earlier
/// interrupt is settled (a question inside a `repeat` block, a remote agent's second
/// question) replaces that row, whose story stays in the event log; a node whose interrupt
/// is still open is not touched (no row changes, which the caller treats as a conflict).
pub(crate) const OPEN_INTERRUPT: &str = concat!(
    "INSERT INTO interrupts (run_id, node_id, interrupt_id, kind, data, state) VALUES ($1, $2, $3, $4, $5, 'open')",
    " ON CONFLICT (run_id, node_id) DO UPDATE SET interrupt_id = excluded.interrupt_id, kind = excluded.kind,",
    " data = excluded.data, state = 'open', resume_value = NULL WHERE interrupts.state <> 'open'"
);

/// Resolves the open interrupt at $1/$2 with resume value $3: the interrupt as resolved,
/// or no row when none is open there.
pub(crate) const RESOLVE_INTERRUPT: &str = concat!(
    "UPDATE interrupts SET state = 'resolved', resume_value = $3 WHERE run_id = $1 AND node_id = $2 AND state = 'open' RETURNING ",
    interrupt_cols!()
);

pub(crate) const INTERRUPT_AT: &str = concat!(
    "SELECT ",
    interrupt_cols!(),
    " FROM interrupts WHERE run_id = $1 AND node_id = $2"
);

pub(crate) const OPEN_INTERRUPT_OF: &str = concat!(
    "SELECT ",
    interrupt_cols!(),
    " FROM interrupts WHERE run_id = $1 AND state = 'open'"
);

/// $1 tenant, $2 principal, $3 key, $4 body hash, $5 run id, $6 now.
pub(crate) const CLAIM_KEY: &str = concat!(
    "INSERT INTO idempotency (",
    key_cols!(),
    ") VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING"
);

pub(crate) const KEY_HELD: &str =
    "SELECT body_hash, run_id FROM idempotency WHERE tenant = $1 AND principal = $2 AND key = $3";

macro_rules! insert_host_event {
    () => {
        concat!(
            "INSERT INTO host_events (",
            host_event_cols!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7)"
        )
    };
}

pub(crate) const INSERT_HOST_EVENT: &str = concat!(insert_host_event!(), " RETURNING seq");

/// [`INSERT_HOST_EVENT`] without `RETURNING`, for SQLite, where `seq` is the rowid
/// (`last_insert_rowid`): its `RETURNING` cost a tenth of a durable A2A request's writes.
pub(crate) const INSERT_HOST_EVENT_ROW: &str = insert_host_event!();

pub(crate) const HOST_EVENTS_SINCE: &str = concat!(
    "SELECT seq, ",
    host_event_cols!(),
    " FROM host_events WHERE tenant = $1 AND seq > $2 ORDER BY seq LIMIT $3"
);

/// A durable host event's position, by its id (unique, so one index lookup).
pub(crate) const HOST_EVENT_SEQ: &str =
    "SELECT seq FROM host_events WHERE event_id = $1 AND tenant = $2";

pub(crate) const OFFER_SECRET: &str =
    "INSERT INTO secrets (name, value) VALUES ($1, $2) ON CONFLICT DO NOTHING";

pub(crate) const SECRET_BY_NAME: &str = "SELECT value FROM secrets WHERE name = $1";

// ---- interop: claims, A2A task side, MCP sessions --------------------------------------

pub(crate) const PURGE_CLAIMS: &str = "DELETE FROM claims WHERE scope = $1 AND expires_ms < $2";

pub(crate) const CLAIM: &str =
    "INSERT INTO claims (scope, key, expires_ms) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING";

pub(crate) const BIND_CONTEXT: &str = concat!(
    "INSERT INTO a2a_tasks (",
    task_cols!(),
    ") VALUES ($1, $2) ON CONFLICT DO NOTHING"
);

pub(crate) const CONTEXT_OF: &str = "SELECT context_id FROM a2a_tasks WHERE run_id = $1";

/// Appends at the next `seq` of the run; a repeated non-NULL message id appends nothing
/// (NULLs never collide, so messages without an id always append).
pub(crate) const APPEND_MESSAGE: &str =
    "INSERT INTO a2a_messages (run_id, seq, message_id, message)
     VALUES ($1, (SELECT COALESCE(MAX(seq), -1) + 1 FROM a2a_messages WHERE run_id = $1), $2, $3)
     ON CONFLICT DO NOTHING";

pub(crate) const HISTORY: &str = "SELECT message FROM a2a_messages WHERE run_id = $1 ORDER BY seq";

pub(crate) const SWEEP_SESSIONS: &str = "DELETE FROM mcp_sessions WHERE expires_ms < $1";

pub(crate) const INSERT_SESSION: &str =
    "INSERT INTO mcp_sessions (id, principal_digest, version, expires_ms) VALUES ($1, $2, $3, $4)";

pub(crate) const LIVE_SESSION: &str = concat!(
    "SELECT ",
    session_cols!(),
    " FROM mcp_sessions WHERE id = $1 AND expires_ms >= $2"
);

pub(crate) const TOUCH_SESSION: &str = "UPDATE mcp_sessions SET expires_ms = GREATEST(expires_ms, $2) WHERE id = $1 AND expires_ms >= $3";

pub(crate) const CLOSE_SESSION: &str =
    "DELETE FROM mcp_sessions WHERE id = $1 AND principal_digest = $2 AND expires_ms >= $3";

// ---- interop: A2A push ------------------------------------------------------------------

pub(crate) const DISCARD_SECRET: &str = "DELETE FROM push_secrets WHERE secret_ref IN (SELECT secret_ref FROM push_configs WHERE run_id = $1 AND config_id = $2)";
pub(crate) const DISCARD_DELIVERIES: &str =
    "DELETE FROM push_outbox WHERE run_id = $1 AND config_id = $2";
pub(crate) const DISCARD_CONFIG: &str =
    "DELETE FROM push_configs WHERE run_id = $1 AND config_id = $2";

pub(crate) const INSERT_PUSH_SECRET: &str =
    "INSERT INTO push_secrets (secret_ref, token, credentials) VALUES ($1, $2, $3)";

/// $1..$5 as [`config_cols`], $6 the secret's reference.
pub(crate) const INSERT_CONFIG: &str = concat!(
    "INSERT INTO push_configs (",
    config_cols!(),
    ", secret_ref) VALUES ($1, $2, $3, $4, $5, $6)"
);

pub(crate) const CONFIG: &str = concat!(
    "SELECT ",
    config_cols!(),
    " FROM push_configs WHERE run_id = $1 AND config_id = $2"
);

pub(crate) const CONFIGS_OF: &str = concat!(
    "SELECT ",
    config_cols!(),
    " FROM push_configs WHERE run_id = $1 ORDER BY created_ms, config_id"
);

pub(crate) const CONFIGURED_RUNS: &str =
    "SELECT DISTINCT run_id FROM push_configs WHERE NOT closed ORDER BY run_id";

/// Marks the run's open configurations that have not pushed state $2, and saw no later
/// reading than $4, as pushing it ($3: the last push closes them); returns their ids. The
/// update takes the rows' locks, so on PostgreSQL a replica that waited re-checks the
/// condition on the committed row and a state is enqueued once.
pub(crate) const MARK_PUSHED: &str =
    "UPDATE push_configs SET last_state = $2, closed = $3, last_seq = $4
     WHERE run_id = $1 AND NOT closed AND last_state IS DISTINCT FROM $2
       AND (last_seq IS NULL OR last_seq <= $4)
     RETURNING config_id";

/// $1 delivery id, $2 run, $3 config, $4 state, $5 body, $6 due at, $7 last.
pub(crate) const ENQUEUE: &str = "INSERT INTO push_outbox (delivery_id, run_id, config_id, state, body, next_ms, last) VALUES ($1, $2, $3, $4, $5, $6, $7)";

/// Due deliveries, each configuration's oldest only ($1 now, $2 limit). PostgreSQL claims
/// them instead (its own statement, with `SKIP LOCKED`).
pub(crate) const DUE: &str = concat!(
    "SELECT ",
    delivery_cols!(),
    " FROM push_outbox o
     WHERE next_ms <= $1
       AND seq = (SELECT MIN(seq) FROM push_outbox p WHERE p.run_id = o.run_id AND p.config_id = o.config_id)
     ORDER BY next_ms, seq LIMIT $2"
);

/// How long a delivery handed out by `push_due` stays with whoever took it. Longer than an
/// attempt can take (the egress timeout, 15 s, plus two reads), so a live sender is never
/// overtaken.
pub(crate) const PUSH_CLAIM_MS: i64 = 60_000;

/// Claims a due delivery ($1 delivery id, $2 claimed until).
pub(crate) const CLAIM_DELIVERY: &str =
    "UPDATE push_outbox SET next_ms = $2 WHERE delivery_id = $1";

pub(crate) const NEXT_DUE: &str = "SELECT MIN(next_ms) AS next_ms FROM push_outbox";

pub(crate) const PUSH_SECRET: &str = "SELECT s.token, s.credentials FROM push_configs p JOIN push_secrets s ON s.secret_ref = p.secret_ref
     WHERE p.run_id = $1 AND p.config_id = $2";

pub(crate) const RETRY_LATER: &str =
    "UPDATE push_outbox SET attempts = $2, next_ms = $3 WHERE delivery_id = $1";

pub(crate) const SETTLE: &str = "DELETE FROM push_outbox WHERE delivery_id = $1";

pub(crate) const DEAD_LETTER: &str = concat!(
    "INSERT INTO push_dead_letters (",
    dead_letter_cols!(),
    ") VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (delivery_id) DO UPDATE SET attempts = EXCLUDED.attempts, reason = EXCLUDED.reason, at_ms = EXCLUDED.at_ms"
);

pub(crate) const DEAD_LETTERS: &str = concat!(
    "SELECT ",
    dead_letter_cols!(),
    " FROM push_dead_letters ORDER BY at_ms, delivery_id"
);

/// The newest migration applied (`/readyz`).
pub(crate) const SCHEMA_VERSION: &str =
    "SELECT COALESCE(MAX(version), 0) AS version FROM schema_migrations";
/// Runs by status (`/metrics`), from the counts migration 11's triggers keep: a few rows
/// per tenant, where counting the runs read every run on every scrape.
pub(crate) const RUN_COUNTS: &str =
    "SELECT status, CAST(SUM(n) AS BIGINT) AS n FROM run_counts GROUP BY status HAVING SUM(n) <> 0";
/// The push outbox depth and the dead letters (`/metrics`).
pub(crate) const PUSH_COUNTS: &str = "SELECT (SELECT COUNT(*) FROM push_outbox) AS pending, (SELECT COUNT(*) FROM push_dead_letters) AS dead";

/// [`RunStore::gauges`] from the rows of [`RUN_COUNTS`] and [`PUSH_COUNTS`].
pub(crate) fn gauges(
    runs: Vec<(String, i64)>,
    push: (i64, i64),
) -> Result<super::StoreGauges, StoreError> {
    let mut runs_by_status = Vec::with_capacity(runs.len());
    for (status, n) in runs {
        runs_by_status.push((super::parse_status("(count)", &status)?, n));
    }
    Ok(super::StoreGauges {
        runs_by_status,
        push_pending: push.0,
        push_dead_letters: push.1,
    })
}

// ---- host events retention ----------------------------------------------------------

/// Tenants with durable host events: one index probe per tenant (`host_events_by_tenant`,
/// the next tenant after the last), where `SELECT DISTINCT tenant` read every event of the
/// host log at each retention pass, start-up's first among them (issue #33).
pub(crate) const HOST_EVENT_TENANTS: &str = "WITH RECURSIVE t(tenant) AS (\
     SELECT MIN(tenant) FROM host_events \
     UNION ALL SELECT (SELECT MIN(h.tenant) FROM host_events h WHERE h.tenant > t.tenant) FROM t WHERE t.tenant IS NOT NULL\
     ) SELECT tenant FROM t WHERE tenant IS NOT NULL";
/// The newest seq past a tenant's count bound ($1 tenant, $2 events kept).
pub(crate) const HOST_EVENT_COUNT_CUT: &str =
    "SELECT seq FROM host_events WHERE tenant = $1 ORDER BY seq DESC LIMIT 1 OFFSET $2";
/// Where a tenant's age bound cuts ($1 tenant, $2 oldest timestamp kept): just before its
/// oldest event (by seq) inside the window, or through its newest when none is. Read from
/// the old end of `host_events_by_tenant`, it stops at the first event young enough, so a
/// pass costs the events it drops; `MAX(seq) … WHERE ts_ms < $2` walked the tenant's whole
/// log from the new end when nothing was old (every pass, start-up's first among them:
/// issue #33). An event stamped late (another replica's clock) keeps the younger ones
/// after it rather than going with them.
pub(crate) const HOST_EVENT_AGE_CUT: &str = "SELECT COALESCE(\
     (SELECT seq FROM host_events WHERE tenant = $1 AND ts_ms >= $2 ORDER BY seq LIMIT 1) - 1, \
     (SELECT MAX(seq) FROM host_events WHERE tenant = $1)) AS seq";
/// Drops a tenant's host events through a seq ($1 tenant, $2 seq).
pub(crate) const PRUNE_HOST_EVENTS: &str =
    "DELETE FROM host_events WHERE tenant = $1 AND seq <= $2";

/// Where a tenant's host log is cut: past the count or the age bound, whichever reaches
/// further, but never past `floor` (what a connected stream has read).
pub(crate) fn host_event_cut(
    count_cut: Option<i64>,
    age_cut: Option<i64>,
    floor: Option<i64>,
) -> Option<i64> {
    let cut = count_cut.max(age_cut)?;
    Some(floor.map_or(cut, |f| cut.min(f)))
}

/// Configurations of a task other than one ($1 run id, $2 config id): the bound on
/// configurations per task.
pub(crate) const OTHER_CONFIGS: &str =
    "SELECT COUNT(*) AS n FROM push_configs WHERE run_id = $1 AND config_id <> $2";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_put_every_value_between_commas() {
        assert_eq!(list([]), "");
        assert_eq!(list(["a"]), ",a,");
        assert_eq!(
            statuses(&[RunStatus::Running, RunStatus::WaitingInput]),
            ",running,waiting-input,"
        );
    }

    #[test]
    fn the_live_condition_is_the_terminal_statuses_and_the_index_spells_it_alike() {
        let named: Vec<String> = crate::status::TERMINAL
            .iter()
            .map(|s| format!("'{}'", s.as_str()))
            .collect();
        assert_eq!(
            live!(),
            format!("status NOT IN ({})", named.join(", ")),
            "runs_live and the sweeps must name exactly the terminal statuses"
        );
        let migration = include_str!("migrations/0008_lean_write_indexes.sql");
        assert!(
            migration.contains(concat!("WHERE ", live!(), ";")),
            "the partial index's condition must be spelled as the queries spell it"
        );
    }

    #[test]
    fn interrupt_columns_counts_the_interrupt_column_list() {
        assert_eq!(interrupt_cols!().split(", ").count(), INTERRUPT_COLUMNS);
    }

    #[test]
    fn the_detail_read_is_the_run_columns_with_state_null() {
        assert_eq!(
            run_detail_cols!(),
            run_cols!().replace(" state,", " 'null' AS state,")
        );
    }
}
