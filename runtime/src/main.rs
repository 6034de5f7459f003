//! The `openwop` command: serve the host, validate discovery documents.

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

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
#[command(
    name = "openwop",
    version,
    about,
    long_about = None,
    after_help = "Examples:
  openwop serve                                  the host on 127.0.0.1:8080, SQLite under
                                                 ./openwop-data, a dev API key printed at start
  openwop serve --config /etc/openwop/config.yaml
  openwop validate --format sarif openwop.json   a discovery document, for code scanning
  openwop validate --kind agent-card card.json   an A2A agent card
  openwop config check /etc/openwop/config.yaml  before a start or a reload (SIGHUP)
  openwop backup --data-dir ./openwop-data ./backup-2026-12-07
  openwop probe                                  exit 0 when the host on :8080 is ready

`openwop <COMMAND> --help` teaches each command with its own examples."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
#[allow(
    clippy::large_enum_variant,
    reason = "parsed once at start; clap's derive wants the arguments inline"
)]
enum Command {
    /// Run the host: REST + SSE, A2A 1.0 and MCP on one port.
    Serve(openwop::serve_cmd::ServeArgs),
    /// Check discovery documents and agent cards against the spec corpus.
    Validate(openwop_validate::cli::ValidateArgs),
    /// Serve MCP on stdin/stdout (api key from OPENWOP_API_KEY).
    McpStdio(openwop::mcp_stdio_cmd::McpStdioArgs),
    /// Copy a live SQLite data dir into a new directory (consistent, online).
    Backup(openwop::backup_cmd::BackupArgs),
    /// GET the host's /readyz: exit 0 when it is ready (a health check without curl).
    Probe(openwop::probe_cmd::ProbeArgs),
    /// Check a config file (`openwop config check FILE`) without starting a host.
    Config(openwop::config_cmd::ConfigArgs),
}

fn main() -> std::process::ExitCode {
    // The validate command's help shows its examples as typed here.
    let matches = Cli::command()
        .mut_subcommand("validate", |c| {
            openwop_validate::cli::with_examples(c, "openwop validate")
        })
        .get_matches();
    if let Some(("mcp-stdio", m)) = matches.subcommand()
        && let Err(e) = openwop::mcp_stdio_cmd::check_connect_alone(m)
    {
        eprintln!("error: {e}");
        return std::process::ExitCode::from(2);
    }
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    match cli.command {
        Command::Serve(args) => openwop::serve_cmd::run(args),
        Command::Validate(args) => openwop_validate::cli::run(args),
        Command::McpStdio(args) => openwop::mcp_stdio_cmd::run(args),
        Command::Backup(args) => openwop::backup_cmd::run(args),
        Command::Probe(args) => openwop::probe_cmd::run(args),
        Command::Config(args) => openwop::config_cmd::run(args),
    }
}
