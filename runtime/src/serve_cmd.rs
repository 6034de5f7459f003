//! `openwop serve`.

/// Arguments of `openwop serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {}

/// Runs the host until SIGINT or SIGTERM.
pub fn run(_args: ServeArgs) -> std::process::ExitCode {
    std::process::ExitCode::FAILURE
}
