-- Run listings pushed down to the store: by last update (A2A ListTasks: updated_ms
-- descending, then the run id in byte order, so a keyset cursor is stable), and the A2A
-- contextId filter. Listing by creation uses runs_by_tenant (migration 1).
CREATE INDEX IF NOT EXISTS runs_by_update ON runs (tenant, updated_ms DESC, run_id COLLATE "C" DESC);
CREATE INDEX IF NOT EXISTS a2a_tasks_by_context ON a2a_tasks (context_id);
