-- A2A push notifications, shared by replicas: a configuration registered through one
-- replica is known to all, and any replica may deliver a pending push. Secrets sit in
-- their own table, named by reference from the configuration.
CREATE TABLE IF NOT EXISTS push_configs (
    run_id TEXT NOT NULL,
    config_id TEXT NOT NULL,
    url TEXT NOT NULL,
    scheme TEXT,
    secret_ref TEXT NOT NULL,
    last_state TEXT,
    -- The run's event sequence when last_state was read: an older reading never
    -- follows a newer one.
    last_seq BIGINT,
    closed BOOLEAN NOT NULL DEFAULT FALSE,
    created_ms BIGINT NOT NULL,
    PRIMARY KEY (run_id, config_id)
);

CREATE TABLE IF NOT EXISTS push_secrets (
    secret_ref TEXT PRIMARY KEY,
    token TEXT,
    credentials TEXT
);

-- next_ms doubles as the claim: a replica taking a delivery moves it past the attempt's
-- longest duration, so a replica that dies mid-attempt leaves it due again for another.
CREATE TABLE IF NOT EXISTS push_outbox (
    seq BIGSERIAL PRIMARY KEY,
    delivery_id TEXT NOT NULL UNIQUE,
    run_id TEXT NOT NULL,
    config_id TEXT NOT NULL,
    state TEXT NOT NULL,
    body TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_ms BIGINT NOT NULL,
    last BOOLEAN NOT NULL
);

CREATE INDEX IF NOT EXISTS push_outbox_by_config ON push_outbox (run_id, config_id, seq);

CREATE TABLE IF NOT EXISTS push_dead_letters (
    delivery_id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    config_id TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    reason TEXT NOT NULL,
    at_ms BIGINT NOT NULL
);
