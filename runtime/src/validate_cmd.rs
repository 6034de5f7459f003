//! `openwop validate`.

/// Arguments of `openwop validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {}

/// Validates the documents and returns 0 (valid), 1 (invalid) or 2 (usage or I/O error).
pub fn run(_args: ValidateArgs) -> std::process::ExitCode {
    std::process::ExitCode::from(2)
}
