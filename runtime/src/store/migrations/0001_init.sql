-- Runs, their event logs, interrupts, idempotency keys and host events. JSON is kept as
-- text, byte for byte what the host wrote (jsonb would reorder keys).
CREATE TABLE IF NOT EXISTS runs (
    list_order BIGSERIAL PRIMARY KEY,
    run_id TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    workflow_id TEXT NOT NULL,
    status TEXT NOT NULL,
    owner TEXT NOT NULL,
    transport TEXT NOT NULL,
    inputs TEXT NOT NULL,
    state TEXT NOT NULL,
    outputs TEXT,
    error TEXT,
    node_index BIGINT NOT NULL,
    wait_until BIGINT,
    created_ms BIGINT NOT NULL,
    updated_ms BIGINT NOT NULL,
    last_sequence BIGINT NOT NULL,
    lease_owner TEXT,
    lease_expires_ms BIGINT
);
CREATE INDEX IF NOT EXISTS runs_by_tenant ON runs (tenant, list_order DESC);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status);

CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL,
    sequence BIGINT NOT NULL,
    event_id TEXT NOT NULL UNIQUE,
    type TEXT NOT NULL,
    node_id TEXT,
    payload TEXT NOT NULL,
    ts_ms BIGINT NOT NULL,
    PRIMARY KEY (run_id, sequence)
);

CREATE TABLE IF NOT EXISTS interrupts (
    run_id TEXT NOT NULL,
    node_id TEXT NOT NULL,
    interrupt_id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    state TEXT NOT NULL,
    resume_value TEXT,
    PRIMARY KEY (run_id, node_id)
);

CREATE TABLE IF NOT EXISTS idempotency (
    tenant TEXT NOT NULL,
    principal TEXT NOT NULL,
    key TEXT NOT NULL,
    body_hash TEXT NOT NULL,
    run_id TEXT NOT NULL,
    created_ms BIGINT NOT NULL,
    PRIMARY KEY (tenant, principal, key)
);

CREATE TABLE IF NOT EXISTS host_events (
    seq BIGSERIAL PRIMARY KEY,
    tenant TEXT NOT NULL,
    event_id TEXT NOT NULL UNIQUE,
    type TEXT NOT NULL,
    delivery TEXT NOT NULL,
    workspace_id TEXT,
    payload TEXT NOT NULL,
    ts_ms BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS host_events_by_tenant ON host_events (tenant, seq);
