//! The generated crate, under the names this crate uses: every spec question (error
//! codes and statuses, run statuses, document validity) is answered there.

pub use openwop_generated::{dispatch, errors, validators};

/// Findings of the generated discovery validator, one line each.
pub fn validate_discovery(doc: &serde_json::Value) -> Vec<String> {
    validators::validate_discovery(doc, &validators::Options::default())
        .into_iter()
        .map(|f| format!("{} [{}]: {}", if f.pointer.is_empty() { "/" } else { &f.pointer }, f.rule, f.message))
        .collect()
}
