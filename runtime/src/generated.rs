//! The generated crate, under the names this crate uses: every spec question (error
//! codes and statuses, run statuses, document validity) is answered there.

pub use openwop_generated::{dispatch, errors, models, schemas, validators};
