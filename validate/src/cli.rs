//! The validate command: checks discovery documents and agent cards, for people and for CI.
//! The same arguments as `openwop-validate` and as the host's `openwop validate`.

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, CommandFactory, FromArgMatches, Parser};
use openwop_generated::validators::Options;

use crate::load::load;
use crate::report::{Format, Report};
use crate::{Kind, parse_today, validate};

/// `{bin}` is replaced by how the command is invoked (`openwop-validate`, `openwop validate`).
const EXAMPLES: &str = "\
Examples:
  {bin} discovery.json
  {bin} --now 2026-12-01 --format json tests/vectors/discovery/valid/*.json
  curl -s https://host.example/.well-known/openwop | {bin} -
  {bin} https://host.example            # fetches /.well-known/openwop
  {bin} --kind agent-card --discovery discovery.json agent-card.json

Human output is one line per finding, PATH:POINTER: RULE: sentence, then a summary.
JSON output is an array of {path, pointer, rule, message}. A specific rule (such as
discovery.no-supported-transports) is listed before the generic `schema` finding it restates.

Exit status: 0 every document is valid, 1 a document is invalid,
2 usage error or a document could not be read, fetched or parsed.";

/// Arguments of the validate command.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Treat this date (YYYY-MM-DD) as today for the refresh-window rules; default: the
    /// system clock, in UTC.
    #[arg(long, value_name = "YYYY-MM-DD", value_parser = parse_today)]
    pub now: Option<(i32, u32, u32)>,
    /// What the documents are.
    #[arg(long, value_enum, default_value_t = Kind::Discovery)]
    pub kind: Kind,
    /// The host's discovery document (file, `-` or URL), to check agent cards against its
    /// `a2a` facet; only with `--kind agent-card`.
    #[arg(long, value_name = "FILE")]
    pub discovery: Option<String>,
    /// Documents to check: a file, `-` for standard input, or an http(s) URL (a bare
    /// origin fetches the kind's well-known path).
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<String>,
}

/// Validates the documents and returns 0 (valid), 1 (invalid) or 2 (usage or I/O error).
pub fn run(args: ValidateArgs) -> ExitCode {
    if let Err(problem) = check_usage(&args) {
        eprintln!("error: {problem}");
        return ExitCode::from(2);
    }
    let opts = Options { today: args.now };
    let discovery = match args.discovery.as_deref().map(|p| load(p, Kind::Discovery)) {
        None => None,
        Some(Ok(doc)) => Some(doc.value),
        Some(Err(e)) => {
            eprintln!("error: {e} (the --discovery document)");
            return ExitCode::from(2);
        }
    };

    let mut report = Report::default();
    let mut unreadable = false;
    for path in &args.paths {
        match load(path, args.kind) {
            Ok(doc) => report.add(
                &doc.label,
                validate(args.kind, &doc.value, discovery.as_ref(), &opts),
            ),
            Err(e) => {
                eprintln!("error: {e}");
                report.add_unreadable();
                unreadable = true;
            }
        }
    }
    // A closed pipe (`| head`) is not an error worth a panic.
    let _ = std::io::stdout().write_all(report.render(args.format).as_bytes());

    if unreadable {
        ExitCode::from(2)
    } else if report.has_findings() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The standalone binary's command line: the validate arguments at the top level.
#[derive(Debug, Parser)]
#[command(
    name = "openwop-validate",
    version,
    about = "Check OpenWOP v2 discovery documents and A2A agent cards against the spec corpus"
)]
struct Standalone {
    #[command(flatten)]
    args: ValidateArgs,
}

/// Gives a clap command of these arguments its examples, written as `invocation` is typed.
pub fn with_examples(command: clap::Command, invocation: &str) -> clap::Command {
    command.after_help(EXAMPLES.replace("{bin}", invocation))
}

/// The `openwop-validate` binary: parses the command line and runs.
pub fn main(invocation: &str) -> ExitCode {
    let matches = with_examples(Standalone::command(), invocation).get_matches();
    match Standalone::from_arg_matches(&matches) {
        Ok(cli) => run(cli.args),
        Err(e) => e.exit(),
    }
}

fn check_usage(args: &ValidateArgs) -> Result<(), String> {
    if args.discovery.is_some() && args.kind != Kind::AgentCard {
        return Err("--discovery only applies to --kind agent-card".into());
    }
    let stdin_uses = args
        .paths
        .iter()
        .chain(args.discovery.iter())
        .filter(|p| *p == "-")
        .count();
    if stdin_uses > 1 {
        return Err("standard input (`-`) can be read only once".into());
    }
    Ok(())
}
