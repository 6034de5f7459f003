//! 2025-11-25 sessions opened by `initialize`. INTERIM: held in process memory, so a
//! legacy client re-initializes after a host restart (which that era's clients do on 404).
//! 2026-07-28 requests never touch this.

use std::collections::HashMap;
use std::sync::Mutex;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub version: String,
    /// `issuer#subjectId`: a session is only usable by whoever opened it.
    pub principal: String,
}

#[derive(Default)]
pub struct Sessions {
    map: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    pub fn open(&self, session: Session) -> String {
        let id = crate::ids::mint_opaque();
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), session);
        id
    }

    /// The session `id` if `principal` opened it.
    pub fn get(&self, id: &str, principal: &str) -> Option<Session> {
        let map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.get(id).filter(|s| s.principal == principal).cloned()
    }

    pub fn close(&self, id: &str, principal: &str) -> bool {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if map.get(id).is_some_and(|s| s.principal == principal) {
            map.remove(id);
            return true;
        }
        false
    }
}
