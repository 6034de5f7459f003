-- Run listings filtered by workflow or by status, served in order from an index.
--
-- Listing runs newest first with `workflowId` or `status` scanned every run of the tenant
-- (runs_by_tenant) to find the few that match: 31 ms at 100,000 runs for a workflow few
-- runs have, linear in the store (issue #33). With the tenant and the filtered column
-- ahead of list_order, the page is the first rows of one index range whatever the store's
-- size. The statements are written per filter shape (store/sql.rs, `run_statement`) so
-- both planners see the column.
--
-- The cost is on writes: runs_by_workflow is written once, when the run is created;
-- runs_by_tenant_status again at each status change (two or three in a run's life, most of them
-- in the transaction that creates it).
CREATE INDEX IF NOT EXISTS runs_by_workflow ON runs (tenant, workflow_id, list_order DESC);
CREATE INDEX IF NOT EXISTS runs_by_tenant_status ON runs (tenant, status, list_order DESC);
