//! The protocol state `ops` keeps beside runs (the interop store): the A2A side of a task
//! (its contextId and the messages exchanged on it), MCP 2025-11-25 sessions, and the
//! single use of MCP requestStates. Edges reach it only through these operations; every
//! one that names a run takes a [`RunRecord`] the caller was already allowed to read.

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{OpError, Ops};
use crate::clock::now_ms;
use crate::store::RunRecord;

/// An MCP session lives this long after its last use.
pub const SESSION_IDLE_MS: i64 = 60 * 60 * 1000;

/// A session used again within this long of its last refresh is not written again, so a
/// busy client costs one write a minute rather than one per request.
const SESSION_REFRESH_EVERY_MS: i64 = 60 * 1000;

/// The claim scope of spent requestState nonces.
const SPENT_REQUEST_STATES: &str = "mcp.requestState";

/// A 2025-11-25 MCP session as its owner sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The protocol revision `initialize` settled on.
    pub version: String,
}

/// The stored form of `issuer#subjectId`: the table holds no identity in the clear.
fn principal_digest(principal: &str) -> String {
    hex::encode(Sha256::digest(
        [
            b"openwop mcp session principal\n".as_slice(),
            principal.as_bytes(),
        ]
        .concat(),
    ))
}

impl Ops {
    /// The task's A2A contextId: the one bound when it was started over A2A, else the run
    /// id (runs started over REST or MCP).
    pub async fn a2a_context(&self, run: &RunRecord) -> Result<String, OpError> {
        Ok(self
            .interop
            .a2a_context_of(&run.run_id)
            .await?
            .unwrap_or_else(|| run.run_id.clone()))
    }

    /// What the task's projection shows beside the run (its open interrupt, contextId
    /// and history), read in one store call.
    pub async fn a2a_task(&self, run: &RunRecord) -> Result<crate::store::A2aTask, OpError> {
        Ok(self.interop.a2a_task(&run.run_id).await?)
    }

    /// The A2A messages exchanged on the task, oldest first.
    pub async fn a2a_history(&self, run: &RunRecord) -> Result<Vec<Value>, OpError> {
        Ok(self.interop.a2a_history(&run.run_id).await?)
    }

    /// Appends a message to the task's history unless one with the same messageId is there
    /// already (a replayed SendMessage must not grow the history), on any replica.
    pub async fn a2a_append_message(
        &self,
        run: &RunRecord,
        message: Value,
    ) -> Result<bool, OpError> {
        let message_id = message
            .get("messageId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        Ok(self
            .interop
            .a2a_append_message(&run.run_id, &message_id, message)
            .await?)
    }

    /// Opens an MCP session for `principal`; its id is 128 random bits followed by `tag`
    /// (what the edge wants to read back from the id itself; the whole id is what the
    /// store knows, so a client cannot change the tag and keep the session).
    pub async fn open_mcp_session(
        &self,
        principal: &str,
        version: &str,
        tag: &str,
    ) -> Result<String, OpError> {
        let id = format!("{}{tag}", crate::ids::mint_opaque());
        self.interop
            .open_session(
                &id,
                &principal_digest(principal),
                version,
                now_ms() + SESSION_IDLE_MS,
            )
            .await?;
        Ok(id)
    }

    /// The live session `id` if `principal` opened it (refreshing its idle expiry). Any
    /// other principal gets `None`, exactly as for an id that never existed.
    pub async fn mcp_session(&self, id: &str, principal: &str) -> Result<Option<Session>, OpError> {
        let Some(record) = self.interop.session(id).await? else {
            return Ok(None);
        };
        if record.principal_digest != principal_digest(principal) {
            return Ok(None);
        }
        let now = now_ms();
        if record.expires_ms - now < SESSION_IDLE_MS - SESSION_REFRESH_EVERY_MS {
            self.interop
                .touch_session(id, now + SESSION_IDLE_MS)
                .await?;
        }
        Ok(Some(Session {
            version: record.version,
        }))
    }

    /// Ends the session `id` if `principal` opened it; false when there was none.
    pub async fn close_mcp_session(&self, id: &str, principal: &str) -> Result<bool, OpError> {
        Ok(self
            .interop
            .close_session(id, &principal_digest(principal))
            .await?)
    }

    /// Spends an MCP requestState nonce: true the first time on any replica, false for
    /// every later use. The record outlives the state's own expiry `expires_ms`.
    pub async fn spend_request_state(&self, nonce: &str, expires_ms: i64) -> Result<bool, OpError> {
        Ok(self
            .interop
            .claim_once(SPENT_REQUEST_STATES, nonce, expires_ms)
            .await?)
    }
}
