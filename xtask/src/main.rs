//! Workspace tasks: `cargo xtask codegen [--check] [--strict]` and `cargo xtask upstream-check`.
//!
//! Every path comes from the run, never from where the binary was compiled: the checkout is
//! the one holding the working directory (see `workspace`), and flags override its parts.

mod api_diff;
mod codegen;
mod upstream;
mod workspace;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// The exit statuses, for `--help` (the same text for the task and each subcommand).
macro_rules! exit_status {
    () => {
        "Exit status:
  0  done (under --check: the crate is fresh)
  1  an error: stale files under --check, a corpus the generator refuses, a warning under
     --strict, a failed write (one `error: ...` line with its causes)
  2  a usage error (an unknown flag or subcommand, a bad value)"
    };
}
const EXIT_STATUS: &str = exit_status!();

#[derive(Parser)]
#[command(
    name = "xtask",
    bin_name = "cargo xtask",
    about = "OpenWOP workspace tasks",
    after_help = EXIT_STATUS
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Generate the openwop-sdk crate (generated/) from the spec corpus of the checkout
    /// holding the working directory, and report what the regeneration changed in the
    /// crate's public API.
    #[command(after_help = concat!("Examples:
  cargo xtask codegen                      regenerate generated/ and print the API diff
  cargo xtask codegen --check --strict     write nothing; fail listing stale files (CI)
  cargo xtask codegen --api-diff=off       regenerate without the API diff
  cargo xtask codegen --force              regenerate, discarding hand edits in generated/
  (cd ../other-checkout && cargo xtask codegen --check)   check another checkout
  cargo xtask codegen --spec-root ../shared/upstream/openwop --out /tmp/up-generated

", exit_status!()))]
    Codegen {
        /// Write nothing; fail listing every stale file.
        #[arg(long)]
        check: bool,
        /// Fail, listing them, on any warning (an untypable construct, a missing file).
        #[arg(long)]
        strict: bool,
        /// Overwrite or remove files of the generated crate that were edited by hand since
        /// the last run wrote them, or never written by it (CODEGEN.sha256 records what it
        /// wrote). Without it such files stop the run, named, before anything is written.
        #[arg(long, conflicts_with = "check")]
        force: bool,
        /// The corpus root (holds spec/, schemas/, api/). Default: the checkout holding the
        /// working directory.
        #[arg(long, value_name = "DIR")]
        spec_root: Option<PathBuf>,
        /// Where the crate goes. Default: generated/ of the checkout holding the working
        /// directory.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Report the public-API change of a regeneration with cargo-public-api: `auto`
        /// (when installed, else say how to install it), `require` (fail without it) or
        /// `off`. `--check` never runs it.
        #[arg(long, value_name = "WHEN", default_value = "auto")]
        api_diff: api_diff::Policy,
    },
    /// Generate upstream's corpus into target/upstream-generated and `cargo check` it.
    UpstreamCheck {
        /// Upstream's corpus root. Default: ../shared/upstream/openwop beside the checkout
        /// holding the working directory.
        #[arg(long, value_name = "DIR")]
        spec_root: Option<PathBuf>,
    },
}

/// Refuses to run generator code other than the checkout's own
/// (`openwop_codegen::source_digest` says why): the generator library and this binary,
/// each by the digest its own build embedded.
fn built_from(root: &std::path::Path) -> anyhow::Result<()> {
    check_built_from(
        root,
        openwop_codegen::BUILT_FROM,
        env!("OPENWOP_XTASK_SOURCES"),
    )
}

fn check_built_from(root: &std::path::Path, codegen: &str, xtask: &str) -> anyhow::Result<()> {
    use openwop_codegen::source_digest::{CODEGEN, XTASK, digest};
    for (part, sources, built) in [
        ("the generator library (codegen/)", &CODEGEN, codegen),
        ("the task runner (xtask/)", &XTASK, xtask),
    ] {
        let here = digest(root, sources).map_err(|e| {
            anyhow::anyhow!("reading the generator's sources in {}: {e}", root.display())
        })?;
        if here != built {
            anyhow::bail!(
                "this xtask binary's {part} was built from other sources than {}'s: cargo \
                 reused a build of another checkout that shares this CARGO_TARGET_DIR, and \
                 its code would write this checkout's generated/. Nothing was written. \
                 Rebuild it from this checkout: `cargo clean -p xtask -p openwop-codegen`, \
                 then run the task again (or give each checkout its own target directory)",
                root.display()
            );
        }
    }
    Ok(())
}

/// Runs the task; an error is one `error: …` line with its causes, and exit status 1 (a
/// stale crate under `--check` is an ordinary outcome, not a crash: no backtrace, even
/// with `RUST_BACKTRACE` set).
fn main() -> std::process::ExitCode {
    match run(Cli::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    // The checkout holding the working directory, found once: every task works in it,
    // and only with the generator built from its sources.
    let root = workspace::current()?;
    built_from(&root)?;
    match cli.cmd {
        Cmd::Codegen {
            check,
            strict,
            force,
            spec_root,
            out,
            api_diff,
        } => {
            eprintln!(
                "codegen: checkout {} (found from the working directory)",
                root.display()
            );
            let paths = workspace::Paths {
                spec_root: spec_root.unwrap_or_else(|| root.clone()),
                out: out.unwrap_or_else(|| root.join("generated")),
                templates: root.join("codegen/templates"),
                target: workspace::target_dir(&root),
                workspace: root,
            };
            let mode = match (check, force) {
                (true, _) => codegen::Mode::Check,
                (false, true) => codegen::Mode::Write(openwop_codegen::HandEdits::Discard),
                (false, false) => codegen::Mode::Write(openwop_codegen::HandEdits::Refuse),
            };
            codegen::run(&paths, mode, strict, api_diff)
        }
        Cmd::UpstreamCheck { spec_root } => upstream::run(&root, spec_root),
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::Cli;

    /// `--help` names the crate the task writes (`openwop-sdk`), the command as it is typed
    /// (`cargo xtask codegen`) and the exit statuses.
    #[test]
    fn help_names_the_crate_the_command_and_the_exit_statuses() {
        let mut cli = Cli::command();
        // Usage lines are named as they are when run (`bin_name` reaches subcommands then).
        cli.build();
        let help = cli
            .find_subcommand_mut("codegen")
            .expect("a codegen subcommand")
            .render_long_help()
            .to_string();
        assert!(help.contains("openwop-sdk"), "{help}");
        assert!(!help.contains("openwop-generated"), "{help}");
        assert!(help.contains("Usage: cargo xtask codegen"), "{help}");
        assert!(help.contains("Exit status:"), "{help}");
        assert!(help.contains("2  a usage error"), "{help}");
        let top = Cli::command().render_long_help().to_string();
        assert!(top.contains("Usage: cargo xtask"), "{top}");
        assert!(top.contains("Exit status:"), "{top}");
    }

    /// A library or binary built from other sources than the checkout's is refused, naming
    /// which: the library is reused or rebuilt on its own, so each carries its own digest
    /// (a binary rebuilt in one checkout once linked another checkout's library, and ran).
    #[test]
    fn a_library_or_binary_of_other_sources_is_refused_naming_which() {
        let root = crate::codegen::this_checkout();
        let codegen = openwop_codegen::BUILT_FROM;
        let xtask = env!("OPENWOP_XTASK_SOURCES");
        assert!(super::check_built_from(&root, codegen, xtask).is_ok());
        let err = super::check_built_from(&root, "0000", xtask)
            .expect_err("another library")
            .to_string();
        assert!(err.contains("the generator library (codegen/)"), "{err}");
        let err = super::check_built_from(&root, codegen, "0000")
            .expect_err("another binary")
            .to_string();
        assert!(err.contains("the task runner (xtask/)"), "{err}");
    }

    /// A usage error exits with 2, an error of the task with 1.
    #[test]
    fn a_usage_error_is_status_2() {
        let e = Cli::try_parse_from(["xtask", "codegen", "--no-such-flag"])
            .err()
            .expect("a usage error");
        assert_eq!(e.exit_code(), 2);
    }
}
