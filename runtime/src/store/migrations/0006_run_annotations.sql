-- What createRun's caller attaches to a run and gets back on its snapshot (the corpus's
-- runSnapshot agentId, tags and metadata; tags and metadata also on run.started): the
-- agent id as text, tags as a JSON array and metadata as a JSON object, NULL when the
-- request had none. The first migration that is not idempotent: it runs once, recorded in
-- schema_migrations, on a database that migrations 1-5 (or the adoption of a database made
-- before the history, which never had these columns) brought to version 5.
ALTER TABLE runs ADD COLUMN agent_id TEXT;
ALTER TABLE runs ADD COLUMN tags TEXT;
ALTER TABLE runs ADD COLUMN metadata TEXT;
