//! One accepted api key as the reloadable snapshot holds it (see [`crate::reload::live`]):
//! in a file of its own, below both the key ring and the snapshot, so neither imports the
//! other's module.

use openwop_generated::models::Subject;

/// A key's tag (a keyed SipHash of it, see `identity::tag`; the key itself is never kept)
/// and the subject it names.
#[derive(Clone)]
pub(crate) struct Entry {
    pub(super) tag: [u8; 16],
    pub(super) subject: Subject,
}
