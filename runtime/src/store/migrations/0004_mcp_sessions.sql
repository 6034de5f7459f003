-- 2025-11-25 MCP sessions, shared by replicas: a session opened through one replica is
-- usable through every other and outlives a restart. Rows past expires_ms are dead
-- (never read) and swept when a new session is opened.
CREATE TABLE IF NOT EXISTS mcp_sessions (
    id TEXT PRIMARY KEY,
    principal_digest TEXT NOT NULL,
    version TEXT NOT NULL,
    expires_ms BIGINT NOT NULL
);

CREATE INDEX IF NOT EXISTS mcp_sessions_by_expiry ON mcp_sessions (expires_ms);
