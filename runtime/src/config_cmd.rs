//! `openwop config check FILE`: checks a config file without starting a host.

use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `openwop config`.
#[derive(Debug, clap::Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    command: ConfigCommand,
}

#[derive(Debug, clap::Subcommand)]
enum ConfigCommand {
    /// Check a config file against its schema and the host's start-up checks.
    Check(CheckArgs),
}

/// Arguments of `openwop config check`.
#[derive(Debug, clap::Args)]
#[command(after_help = "What is checked, without starting anything:
  - the schema (schemas/v2/config.schema.json; reference: generated/CONFIG.md): unknown
    keys, types, ranges;
  - what `openwop serve` checks at start: api keys (TENANT:KEY, keys of at least 16
    characters, a key naming one tenant), the api key and database URL files readable,
    the mcp section (revisions this host speaks, the floor among them, origins), peers
    (kinds, ids, URLs, one credential source, readable secrets, no id twice), publicUrl,
    tlsCert with tlsKey;
  - against the host the file describes: the workflows and agents directories load,
    agents route workflows that exist, every peer a workflow calls is configured, every
    name under tenants exists, a2a.defaultSkill is a workflow.
Relative paths are taken from the current directory, as `serve` takes them. Flags and
OPENWOP_* variables are not read: the file alone is checked.

One line per finding on stdout: `FILE: POINTER: message` (POINTER is a JSON pointer into the
file, `/` for the whole file).

Exit status: 0 valid, 1 invalid (findings printed), 2 the file cannot be read or is not
JSON/YAML at all.

Examples:
  openwop config check openwop.yaml
      openwop.yaml: valid

  openwop config check openwop.yaml      (holding `listn: 0.0.0.0:8080`)
      openwop.yaml: /listn: unknown key `listn`: the schema (generated/CONFIG.md) has no such key here

  openwop config check openwop.yaml      (holding `apiKeys: [acme:short]` and
                                          `tenants: {acme: {workflows: [ecko]}}`)
      openwop.yaml: /apiKeys/0: the key for tenant `acme` is shorter than 16 characters
      openwop.yaml: /tenants/acme/workflows/0: tenants.acme.workflows: no workflow `ecko`

  openwop config check /etc/openwop/config.yaml && systemctl reload openwop
      Check before a reload (SIGHUP): a file `config check` refuses is refused by the
      reload too, and the host keeps the configuration it has.")]
pub struct CheckArgs {
    /// The config file (JSON or YAML, as `openwop serve --config` reads it).
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

pub fn run(args: ConfigArgs) -> ExitCode {
    match args.command {
        ConfigCommand::Check(args) => check(&args),
    }
}

fn check(args: &CheckArgs) -> ExitCode {
    let name = args.file.display();
    let value = match crate::config_file::read_value(&args.file) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("openwop config check: {e}");
            return ExitCode::from(2);
        }
    };
    let findings = crate::config_file::check_all(&value);
    if findings.is_empty() {
        println!("{name}: valid");
        return ExitCode::SUCCESS;
    }
    for f in &findings {
        println!("{name}: {f}");
    }
    ExitCode::from(1)
}
