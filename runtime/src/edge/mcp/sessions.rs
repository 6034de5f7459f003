//! 2025-11-25 sessions opened by `initialize`, kept in the interop store so that every replica
//! on one database knows them and they outlive a restart. 2026-07-28 requests never touch
//! this.

use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::clock::now_ms;
use crate::store::{InteropStore, StoreError};

/// A session lives this long after its last use.
pub const IDLE_MS: i64 = 60 * 60 * 1000;

/// A session used again within this long of its last refresh is not written again, so a
/// busy client costs one write a minute rather than one per request.
const REFRESH_EVERY_MS: i64 = 60 * 1000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub version: String,
}

pub struct Sessions {
    store: Arc<dyn InteropStore>,
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

impl Sessions {
    pub fn new(store: Arc<dyn InteropStore>) -> Sessions {
        Sessions { store }
    }

    /// Opens a session for `principal`; its id is 128 random bits.
    pub async fn open(&self, principal: &str, version: &str) -> Result<String, StoreError> {
        let id = crate::ids::mint_opaque();
        self.store
            .open_session(
                &id,
                &principal_digest(principal),
                version,
                now_ms() + IDLE_MS,
            )
            .await?;
        Ok(id)
    }

    /// The live session `id` if `principal` opened it (refreshing its idle expiry). Any
    /// other principal gets `None`, exactly as for an id that never existed.
    pub async fn get(&self, id: &str, principal: &str) -> Result<Option<Session>, StoreError> {
        let Some(record) = self.store.session(id).await? else {
            return Ok(None);
        };
        if record.principal_digest != principal_digest(principal) {
            return Ok(None);
        }
        let now = now_ms();
        if record.expires_ms - now < IDLE_MS - REFRESH_EVERY_MS {
            self.store.touch_session(id, now + IDLE_MS).await?;
        }
        Ok(Some(Session {
            version: record.version,
        }))
    }

    pub async fn close(&self, id: &str, principal: &str) -> Result<bool, StoreError> {
        self.store
            .close_session(id, &principal_digest(principal))
            .await
    }
}
