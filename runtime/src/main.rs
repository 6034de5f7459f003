//! The `openwop` command: serve the host, validate discovery documents.

use clap::{Parser, Subcommand};

/// mimalloc instead of the system allocator: a request allocates and frees a few hundred
/// small objects (headers, JSON values, the snapshot model), and glibc's malloc and free
/// were a fifth of a run GET's instructions (callgrind, `bench/instructions`). Only the
/// binary chooses; the library leaves the choice to whoever embeds it. Built without
/// transparent huge pages (`no_thp`): with them, 10,000 idle SSE streams held 248 MiB
/// instead of 161 (`bench/sse-memory`; glibc's malloc: 182).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The OpenWOP v2 interop host and its tools.
#[derive(Debug, Parser)]
#[command(name = "openwop", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the host: REST + SSE, A2A 1.0 and MCP on one port.
    Serve(openwop::serve_cmd::ServeArgs),
    /// Check discovery documents and agent cards against the spec corpus.
    Validate(openwop::validate_cmd::ValidateArgs),
    /// Serve MCP on stdin/stdout (api key from OPENWOP_API_KEY).
    McpStdio(openwop::mcp_stdio_cmd::McpStdioArgs),
    /// Copy a live SQLite data dir into a new directory (consistent, online).
    Backup(openwop::backup_cmd::BackupArgs),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => openwop::serve_cmd::run(args),
        Command::Validate(args) => openwop::validate_cmd::run(args),
        Command::McpStdio(args) => openwop::mcp_stdio_cmd::run(args),
        Command::Backup(args) => openwop::backup_cmd::run(args),
    }
}
