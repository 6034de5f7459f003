-- Migration 11 as SQLite reads it: see 0011_run_counts.sql for why. One writer at a time
-- on SQLite, so one slot (0) per count; the back-fill and the triggers are made in the
-- migration's one transaction, which no other write can enter.
CREATE TABLE IF NOT EXISTS run_counts (
    tenant TEXT NOT NULL,
    status TEXT NOT NULL,
    slot INTEGER NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (tenant, status, slot)
);

INSERT INTO run_counts (tenant, status, slot, n)
    SELECT tenant, status, 0, COUNT(*) FROM runs GROUP BY tenant, status;

CREATE TRIGGER runs_counted_on_insert AFTER INSERT ON runs
BEGIN
    INSERT INTO run_counts (tenant, status, slot, n) VALUES (NEW.tenant, NEW.status, 0, 1)
        ON CONFLICT (tenant, status, slot) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER runs_counted_on_status AFTER UPDATE OF status, tenant ON runs
    WHEN OLD.status IS NOT NEW.status OR OLD.tenant IS NOT NEW.tenant
BEGIN
    INSERT INTO run_counts (tenant, status, slot, n) VALUES (OLD.tenant, OLD.status, 0, -1)
        ON CONFLICT (tenant, status, slot) DO UPDATE SET n = n - 1;
    INSERT INTO run_counts (tenant, status, slot, n) VALUES (NEW.tenant, NEW.status, 0, 1)
        ON CONFLICT (tenant, status, slot) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER runs_counted_on_delete AFTER DELETE ON runs
BEGIN
    INSERT INTO run_counts (tenant, status, slot, n) VALUES (OLD.tenant, OLD.status, 0, -1)
        ON CONFLICT (tenant, status, slot) DO UPDATE SET n = n - 1;
END;
