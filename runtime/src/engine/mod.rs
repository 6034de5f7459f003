//! The workflow engine: definitions, templates, and the executor that moves runs along,
//! appending events, and picks unfinished runs up again after a restart.

pub mod artifacts;
mod call_failure;
mod calls;
pub mod definition;
pub mod events;
mod executor;
pub mod registry;
mod retry;
pub mod status;
pub mod template;

pub use executor::{DEFAULT_LEASE_TTL, Engine, EngineError, FirstStep, SuspendHook, Suspended};
pub use registry::{InputProblem, Registry, Workflow};
