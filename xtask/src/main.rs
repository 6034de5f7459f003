//! Workspace tasks: `cargo xtask codegen [--check] [--strict]` and `cargo xtask upstream-check`.

mod codegen;
mod upstream;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "xtask", about = "OpenWOP workspace tasks")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Generate the openwop-generated crate from the spec corpus.
    Codegen {
        /// Write nothing; fail listing every stale file.
        #[arg(long)]
        check: bool,
        /// Fail, listing them, on any warning (an untypable construct, a missing file).
        #[arg(long)]
        strict: bool,
        /// The corpus root (holds spec/, schemas/, api/).
        #[arg(long, value_name = "DIR")]
        spec_root: Option<PathBuf>,
        /// Where the crate goes.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Generate upstream's corpus into target/upstream-generated and `cargo check` it.
    UpstreamCheck {
        /// Upstream's corpus root.
        #[arg(long, value_name = "DIR")]
        spec_root: Option<PathBuf>,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().cmd {
        Cmd::Codegen {
            check,
            strict,
            spec_root,
            out,
        } => {
            let root = codegen::workspace_root();
            let spec_root = spec_root.unwrap_or_else(|| root.clone());
            let out = out.unwrap_or_else(|| root.join("generated"));
            let mode = if check {
                codegen::Mode::Check
            } else {
                codegen::Mode::Write
            };
            codegen::run(&spec_root, &out, mode, strict)
        }
        Cmd::UpstreamCheck { spec_root } => upstream::run(spec_root),
    }
}
