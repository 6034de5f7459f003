-- Single-use claims (MCP requestState), host secrets every replica must agree on, and the
-- A2A side of a task, shared by replicas.
CREATE TABLE IF NOT EXISTS claims (
    scope TEXT NOT NULL,
    key TEXT NOT NULL,
    expires_ms BIGINT NOT NULL,
    PRIMARY KEY (scope, key)
);

CREATE TABLE IF NOT EXISTS a2a_tasks (
    run_id TEXT PRIMARY KEY,
    context_id TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS a2a_messages (
    run_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    message_id TEXT,
    message TEXT NOT NULL,
    PRIMARY KEY (run_id, seq),
    UNIQUE (run_id, message_id)
);

CREATE TABLE IF NOT EXISTS secrets (
    name TEXT PRIMARY KEY,
    value BYTEA NOT NULL
);
