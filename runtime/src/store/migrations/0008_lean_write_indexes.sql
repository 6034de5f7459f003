-- Two indexes every run creation paid for and no query needs.
--
-- `events.event_id` was UNIQUE: an index keyed by a random id, so every event insert
-- landed on a random leaf page and each commit dirtied (and wrote to the WAL) pages all
-- over it, while no statement reads a run event by its id (events are read by run and
-- sequence, the primary key; `host_events` keeps its own event_id index, which is read).
-- Ids are minted with 80 random bits after the millisecond, so uniqueness holds without
-- the index. SQLite cannot drop a column's UNIQUE in place, so the table is rebuilt, the
-- same way on both engines; its rows are copied as they are.
--
-- `runs_by_status` indexed every run by status for the sweeps that look for live runs;
-- a partial index holds only those (a run born finished, like most A2A and MCP calls,
-- never enters it), and the sweeps name its condition so both planners can use it.
CREATE TABLE events_rebuilt (
    run_id TEXT NOT NULL,
    sequence BIGINT NOT NULL,
    event_id TEXT NOT NULL,
    type TEXT NOT NULL,
    node_id TEXT,
    payload TEXT NOT NULL,
    ts_ms BIGINT NOT NULL,
    PRIMARY KEY (run_id, sequence)
);
INSERT INTO events_rebuilt (run_id, sequence, event_id, type, node_id, payload, ts_ms)
    SELECT run_id, sequence, event_id, type, node_id, payload, ts_ms FROM events;
DROP TABLE events;
ALTER TABLE events_rebuilt RENAME TO events;

DROP INDEX IF EXISTS runs_by_status;
CREATE INDEX runs_live ON runs (list_order)
    WHERE status NOT IN ('completed', 'failed', 'cancelled');
