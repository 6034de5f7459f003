//! What a host is set up with that more than one layer reads: the discovery document
//! advertises from these settings and the edges serve by them.

use std::time::Duration;

/// How the mount is set up.
#[derive(Debug, Clone)]
pub struct McpConfig {
    /// Serve the tasks extension (and advertise it in server/discover).
    pub tasks: bool,
    /// How long a call without tasks waits for its run to finish or ask for input.
    pub call_timeout: Duration,
    /// How long a call with tasks waits before answering CreateTaskResult.
    pub task_answer_within: Duration,
    /// `mcp.mrtr.maxRounds` advertised (and enforced) when discovery carries no `mcp` family.
    pub max_rounds: u32,
    /// While a call waits with a `progressToken`, how long it stays silent at most: a
    /// `notifications/progress` is sent at least this often.
    pub progress_every: Duration,
}

impl Default for McpConfig {
    fn default() -> McpConfig {
        McpConfig {
            tasks: true,
            call_timeout: Duration::from_secs(30),
            task_answer_within: Duration::from_millis(200),
            max_rounds: 4,
            progress_every: Duration::from_secs(5),
        }
    }
}
