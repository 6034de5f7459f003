//! The workflow engine: definitions, templates, and the executor that moves runs along,
//! appending events, and picks unfinished runs up again after a restart.

pub mod artifacts;
mod call_failure;
mod call_state;
mod calls;
pub mod definition;
mod drive;
pub mod events;
mod executor;
mod plan;
pub mod registry;
mod retry;
pub mod status;
pub mod template;

pub use drive::FirstStep;
pub use executor::{DEFAULT_LEASE_TTL, Engine, EngineError, SuspendHook, Suspended};
pub use registry::{InputProblem, Registry, Workflow};
