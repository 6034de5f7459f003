//! The validate command: checks discovery documents and agent cards, for people and for CI.
//! The same arguments as `openwop-validate` and as the host's `openwop validate`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, FromArgMatches, Parser};
use openwop_generated::validators::Options;

use crate::baseline::Baseline;
use crate::config::{Config, FailOn, Level, MaxWarnings, parse_rule_setting};
use crate::format::{self, Spec};
use crate::load::{LoadError, STDIN_LABEL, load_named};
use crate::position::Position;
use crate::report::{self, Document, Report};
use crate::rules::{self, Docs, Severity};
use crate::{Kind, explain, parse_today, validate};

/// `{bin}` is replaced by how the command is invoked (`openwop-validate`, `openwop validate`).
const EXAMPLES: &str = "\
Examples:
  {bin} discovery.json
  {bin} https://host.example            # fetches /.well-known/openwop
  curl -s https://host.example/.well-known/openwop | {bin} -
  git show :public/.well-known/openwop | {bin} --stdin-filename public/.well-known/openwop -
  {bin} --kind agent-card --discovery discovery.json agent-card.json
  {bin} public/.well-known/agent-card.json   # without --kind, a card by its name

  # CI: the log, SARIF for code scanning and JUnit, from one run. --now pins today: the
  # job never starts failing on a date alone (refresh-overdue cannot fire), but a refreshedAt
  # later than the pinned date reads as in the future: bump --now when you refresh
  {bin} --now 2026-12-01 --format human --format sarif=validate.sarif \\
      --format junit=validate.xml public/.well-known/openwop
  # GitHub Actions: annotations on the lines, and a table in the job summary
  {bin} --format github public/.well-known/openwop

  # Adopt the gate on a repository that has findings today: record them, then fail only
  # on new ones (and, with --strict-baseline, on entries that no longer occur)
  {bin} --write-baseline .openwop-validate-baseline.json 'docs/**/*.json'
  {bin} --baseline .openwop-validate-baseline.json --strict-baseline 'docs/**/*.json'

  # Quoted patterns are expanded here (** crosses directories) whatever the shell does;
  # one that matches nothing fails the run instead of checking nothing

  # Thresholds and rule levels (or put them in .openwop-validate.yaml)
  {bin} --fail-on warning --max-warnings 5 --rule discovery.refresh-overdue=warning doc.json

  {bin} --list-rules                    # every rule, its severity and summary
  {bin} --explain discovery.no-grpc     # one rule: sentence, section, example, page

Findings: `PATH:LINE:COL: SEVERITY: RULE: sentence` in human output; every format carries the line and
column of the value the rule is about, the rule's severity and a link to its page. A file
that cannot be read or is not JSON is a finding too (input.unreadable, input.malformed).

Settings come from the command line, else from .openwop-validate.yaml (or .yml) in the
working directory or the nearest directory above it (fail-on, max-warnings, baseline,
docs-url, ignore: [PATTERN], rules: {ID: off|warning|error}).

Exit status: 0 nothing fails the threshold, 1 a finding fails it (--fail-on, default
error; more warnings than --max-warnings; a stale entry under --strict-baseline),
2 usage error, or a document could not be read, fetched or parsed.";

/// Arguments of the validate command.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Output format: human, json, sarif, github, junit or markdown; `FMT=FILE` writes it
    /// to FILE. Repeatable: one run can print the log and write SARIF and JUnit. Default:
    /// human on standard output.
    #[arg(long = "format", value_name = "FMT[=FILE]", value_parser = |s: &str| s.parse::<Spec>())]
    pub formats: Vec<Spec>,
    /// Treat this date (YYYY-MM-DD) as today for the refresh-window rules; default: the
    /// system clock, in UTC. `refreshedAt` may be one day after it (a date written east of
    /// UTC). A pinned date never makes a document overdue, and a `refreshedAt` more than a
    /// day after it fails: bump it when you refresh.
    #[arg(long, value_name = "YYYY-MM-DD", value_parser = parse_today)]
    pub now: Option<(i32, u32, u32)>,
    /// What the documents are. Without it, each PATH's well-known name decides: a file
    /// named agent-card.json or a URL ending /.well-known/agent-card.json is an agent card,
    /// anything else a discovery document. A document whose members clearly are the other
    /// kind's gets a note saying which --kind to pass. Named twice, the last counts (a
    /// pre-commit hook's entry names it, and its `args` may too).
    #[arg(long, value_enum, overrides_with = "kind")]
    pub kind: Option<Kind>,
    /// The host's discovery document (file, `-` or URL), to check agent cards against its
    /// `a2a` facet; only with `--kind agent-card`.
    #[arg(long, value_name = "FILE")]
    pub discovery: Option<String>,
    /// Which findings fail the run (exit 1) [config: fail-on; default: error].
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub fail_on: Option<FailOn>,
    /// Fail when there are more than N warnings; -1: no limit, also over the config file's
    /// [config: max-warnings].
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = |s: &str| s.parse::<MaxWarnings>())]
    pub max_warnings: Option<MaxWarnings>,
    /// Set a rule's level: off, warning or error. Repeatable; over the config file's
    /// `rules`.
    #[arg(long = "rule", value_name = "ID=LEVEL", value_parser = parse_rule_setting)]
    pub rules: Vec<(String, Level)>,
    /// Read settings from FILE instead of the nearest .openwop-validate.yaml (or .yml).
    #[arg(long, value_name = "FILE", conflicts_with = "no_config")]
    pub config: Option<PathBuf>,
    /// Ignore any .openwop-validate.yaml (or .yml).
    #[arg(long)]
    pub no_config: bool,
    /// Report only findings the baseline FILE does not list [config: baseline].
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Fail when a baseline entry no longer occurs, so the baseline only shrinks.
    #[arg(long)]
    pub strict_baseline: bool,
    /// Write today's findings to FILE as a baseline (keyed by path, rule, pointer and
    /// message) and apply it: the run passes unless an input cannot be read.
    #[arg(long, value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,
    /// Where the rule pages are: the URL the repository's files are under, e.g.
    /// https://github.com/OWNER/REPO/blob/main/ [config: docs-url; default: the source
    /// tree this binary was built from].
    #[arg(long, value_name = "URL", env = "OPENWOP_VALIDATE_DOCS_URL")]
    pub docs_url: Option<String>,
    /// List every rule with its severity and summary (`--format json` for JSON); checks
    /// no documents.
    #[arg(long, conflicts_with_all = ["explain", "paths"])]
    pub list_rules: bool,
    /// Explain one rule: its sentence, severity, section, an example and its page
    /// (`--format json` for JSON); checks no documents.
    #[arg(long, value_name = "RULE", conflicts_with = "paths")]
    pub explain: Option<String>,
    /// Leave out the files a quoted PATH pattern matches that PATTERN matches (or that are
    /// under a directory it matches), relative to the working directory. Repeatable; added
    /// to the config file's `ignore:` (relative to that file). A pattern's walk never
    /// enters .git or node_modules; a file named as it is is always checked.
    #[arg(long = "ignore", value_name = "PATTERN")]
    pub ignore: Vec<String>,
    /// Name standard input (`-`) NAME in findings, baselines and SARIF, as the file whose
    /// content is piped in (an editor's buffer, a staged version).
    #[arg(long, value_name = "NAME")]
    pub stdin_filename: Option<String>,
    /// Documents to check: a file, a quoted pattern (`'public/**/*.json'`, expanded here,
    /// sorted; one that matches nothing fails the run), `-` for standard input, or an
    /// http(s) URL (a bare origin fetches the kind's well-known path). Each is read up to
    /// 10 MiB; a FIFO or a device is refused.
    #[arg(value_name = "PATH", required_unless_present_any = ["list_rules", "explain"])]
    pub paths: Vec<String>,
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

/// The run's settings, the command line over the config file.
struct Settings {
    fail_on: FailOn,
    max_warnings: Option<usize>,
    baseline: Option<PathBuf>,
    docs: Docs,
    config: Config,
}

impl Settings {
    /// The level of `rule`: `--rule`, else the config file, else the catalogue.
    fn level(&self, args: &ValidateArgs, rule: &str) -> Option<Severity> {
        let set = args
            .rules
            .iter()
            .rev()
            .find(|(id, _)| id == rule)
            .map(|(_, level)| *level)
            .or_else(|| self.config.file.rules.get(rule).copied());
        match set {
            Some(Level::Off) => None,
            Some(Level::On(severity)) => Some(severity),
            None => Some(rules::default_severity(rule)),
        }
    }
}

/// Validates the documents; exits 0 (nothing fails the threshold), 1 (something does) or
/// 2 (usage error, or an input could not be checked).
pub fn run(args: ValidateArgs) -> ExitCode {
    match try_run(&args) {
        Ok(code) => code,
        Err(problem) => {
            say(&format!("error: {problem}"));
            ExitCode::from(2)
        }
    }
}

/// Writes a line to standard error, kept to one line as findings are ([`format::one_line`]:
/// it can name a path or quote a document). What goes there (notes, warnings, why the run
/// fails) only adds to the exit status, so an error writing it (a closed pipe:
/// `2>&1 | head`) is ignored: `eprintln!` would panic, and the run would exit 101 instead
/// of its status.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{}", format::one_line(line));
}

fn try_run(args: &ValidateArgs) -> Result<ExitCode, String> {
    let settings = settings(args)?;
    let formats = outputs(args)?;
    if args.strict_baseline && settings.baseline.is_none() {
        return Err("--strict-baseline needs a baseline (--baseline FILE or `baseline:` in the config file)".into());
    }
    if args.list_rules || args.explain.is_some() {
        return catalogue(args, &formats, &settings.docs);
    }
    check_usage(args)?;
    let paths = crate::load::expand_ignoring(&args.paths, &ignore(args, &settings)?);
    check_outputs(args, &formats, &settings, &paths)?;
    // The note is said once, before the first card.
    let mut said_no_discovery = false;

    let opts = Options { today: args.now };
    let mut report = Report {
        fail_on: settings.fail_on,
        max_warnings: settings.max_warnings,
        strict_baseline: args.strict_baseline,
        ..Report::default()
    };
    // Named as a file argument would be (`./public/doc.json` is `public/doc.json`).
    let stdin_label = args
        .stdin_filename
        .as_deref()
        .map_or_else(|| STDIN_LABEL.to_owned(), crate::load::path_key);
    let load = |path: &str, kind| load_named(path, kind, &stdin_label);
    let discovery = match args.discovery.as_deref().map(|p| load(p, Kind::Discovery)) {
        None => None,
        // Anything but an object is no discovery document: said as such, not as a card
        // finding about a facet it lacks.
        Some(Ok(doc)) if !doc.value.is_object() => {
            let e = LoadError::Nothing {
                reason: format!(
                    "the --discovery input is not a JSON object (it is {}), so it is no discovery document and the cards were not checked against it",
                    json_type(&doc.value)
                ),
                label: doc.label,
            };
            report.documents.push(unreadable(&e, &settings.docs));
            None
        }
        Some(Ok(doc)) => {
            // The cards are held to the document as it is; a document the schema rejects (a
            // `versions` that is a string, say) makes those checks speak of what is not
            // there. Said once, with how to see why, rather than checked here: the card
            // run reports cards. The schema's verdict alone first (no rules, no errors
            // collected): findings are counted only for a document it rejects.
            if !openwop_generated::validators::is_valid_discovery(&doc.value) {
                let schema = validate(Kind::Discovery, &doc.value, None, &opts)
                    .iter()
                    .filter(|f| f.rule == "schema")
                    .count();
                say(&format!(
                    "warning: the --discovery document {} fails its schema ({schema} finding{}); the cards are checked against it as it is: run openwop-validate {} to see why",
                    doc.label,
                    if schema == 1 { "" } else { "s" },
                    doc.label
                ));
            }
            Some(doc)
        }
        Some(Err(e)) => {
            report.documents.push(unreadable(&e, &settings.docs));
            None
        }
    };
    let level = |rule: &str| settings.level(args, rule);
    // The findings the cards' rules make about the discovery document itself (it has no
    // `a2a` facet): the same for every card, reported once, in that document.
    let mut about_discovery = Vec::new();
    let mut cards_checked = false;
    for path in paths {
        // `--kind`, else the name: the stdin's as --stdin-filename gives it.
        let kind = |path: &str| {
            args.kind
                .unwrap_or_else(|| Kind::of_path(if path == "-" { &stdin_label } else { path }))
        };
        let loaded = path.and_then(|path| {
            let kind = kind(&path);
            load(&path, kind).map(|doc| (doc, kind))
        });
        let doc = match loaded {
            Ok((doc, kind)) => {
                if kind == Kind::AgentCard && args.discovery.is_none() && !said_no_discovery {
                    said_no_discovery = true;
                    say(
                        "note: without --discovery, the rules that hold an agent card to its host's discovery document are not checked",
                    );
                }
                let findings = validate(
                    kind,
                    &doc.value,
                    discovery.as_ref().map(|d| &d.value),
                    &opts,
                );
                let (theirs, findings): (Vec<_>, Vec<_>) = findings
                    .into_iter()
                    .partition(|f| f.rule == rules::DISCOVERY_HAS_A2A);
                if about_discovery.is_empty() {
                    about_discovery = theirs;
                }
                cards_checked = true;
                // Checked as the wrong kind, a document gets a dozen findings that say
                // nothing of why: one note says which --kind it needs.
                if let Some(shape) = Kind::of_shape(&doc.value)
                    && shape != kind
                    && !findings.is_empty()
                {
                    say(&format!(
                        "note: {} looks like {} (it {}), but was checked as {}{}; pass --kind {}",
                        doc.label,
                        shape.described(),
                        match shape {
                            Kind::AgentCard =>
                                "has `supportedInterfaces` or `skills` and no `protocolVersions`",
                            Kind::Discovery => "has `protocolVersions`",
                        },
                        kind.described(),
                        if args.kind.is_some() {
                            " as --kind says"
                        } else {
                            ""
                        },
                        shape.flag()
                    ));
                }
                report::document(&doc.label, &doc.text, findings, level, &settings.docs)
            }
            Err(e) => unreadable(&e, &settings.docs),
        };
        report.documents.push(doc);
    }
    // Placed where the user fixes it: in the discovery document, at its `a2a` member or on
    // the document itself when it has none (as a missing member's finding is), before the
    // cards, as an unreadable --discovery input is.
    let mut partly_checked = Vec::new();
    if let (Some(doc), true) = (&discovery, cards_checked) {
        partly_checked.push((doc.label.clone(), rules::DISCOVERY_HAS_A2A.to_owned()));
        let found = report::companion(
            &doc.label,
            &doc.text,
            about_discovery,
            level,
            &settings.docs,
        );
        // Counted as a document whether or not it has findings (the summary counted it
        // only when it had).
        report.documents.insert(0, found);
    }

    let is_on = |rule: &str| settings.level(args, rule).is_some();
    // A baseline just written is applied at once: the run that adopts the gate passes,
    // and says how many findings it recorded.
    let baseline = match (&args.write_baseline, &settings.baseline) {
        (Some(file), configured) => {
            let mut written = Baseline::of(report.entries());
            // What this run could not have found again is kept from the previous baseline
            // (the one configured, else the file being rewritten): the entries of the files
            // it did not check (a rewrite over some of the files) unless they are gone, of
            // a document that could not be read (its findings nobody knows today), and of
            // a rule turned off for this run.
            // Neither need exist yet: adopting the gate writes the configured one first.
            let previous = [configured.as_ref(), Some(file)]
                .into_iter()
                .flatten()
                .find(|f| f.exists());
            if let Some(previous) = previous {
                let old = Baseline::read(previous)?;
                written
                    .keep(&old, &report.documents, &partly_checked, |rule| is_on(rule))
                    .map_err(|e| format!("{e}; the baseline {} was not written", file.display()))?;
            }
            write_file(file, &written.render(file))
                .map_err(|e| format!("{e}; the baseline was not written"))?;
            Some(written)
        }
        (None, Some(file)) => {
            let baseline = Baseline::read(file)?;
            if baseline.version == 1 {
                say(&format!(
                    "warning: the baseline {} is a version 1 file, which matches findings without their messages: a new finding where a known one is would pass unseen; rewrite it with --write-baseline",
                    file.display()
                ));
            }
            Some(baseline)
        }
        (None, None) => None,
    };
    if let Some(baseline) = baseline {
        let (known, stale) = baseline.apply_with(&mut report.documents, is_on, &partly_checked);
        report.known = known;
        report.stale = stale;
    }

    for spec in &formats {
        emit(spec, &format::render(spec.kind, &report, &settings.docs))?;
        if spec.kind == format::Kind::Github {
            append_step_summary(&report);
        }
    }
    // Said on standard error unless the human log on standard output said it already (a CI
    // log that shows both streams would read it twice): a `--format json` run that fails
    // with no finding printed says why there, as JSON carries findings only.
    let log_says_it = formats
        .iter()
        .any(|s| s.file.is_none() && s.kind == format::Kind::Human);
    if !log_says_it {
        for why in report.run_failures() {
            say(&format!("failing: {why}"));
        }
    }
    Ok(ExitCode::from(report.exit_code()))
}

/// `--list-rules` and `--explain RULE`: the catalogue, as a table or text (`human`, the
/// default) or JSON (`json`), on standard output or to `FMT=FILE`. They check no
/// documents (clap refuses PATH arguments beside them) and have no other format: a
/// `--format sarif` asked for and not given would go unnoticed.
fn catalogue(args: &ValidateArgs, formats: &[Spec], docs: &Docs) -> Result<ExitCode, String> {
    let what = if args.list_rules {
        "--list-rules"
    } else {
        "--explain"
    };
    if let Some(spec) = formats
        .iter()
        .find(|s| !matches!(s.kind, format::Kind::Human | format::Kind::Json))
    {
        return Err(format!(
            "{what} prints human or json, not {}: use --format human or --format json",
            spec.kind.name()
        ));
    }
    let rule = match &args.explain {
        Some(id) => {
            Some(rules::lookup(id).ok_or_else(|| crate::config::known_rule(id).unwrap_err())?)
        }
        None => None,
    };
    let text = |json: bool| match rule {
        Some(rule) => explain::explain(rule, json, docs),
        None => explain::list(json, docs),
    };
    if formats.is_empty() {
        print(&text(false))?;
    }
    for spec in formats {
        emit(spec, &text(spec.kind == format::Kind::Json))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes one `--format`'s text where it goes: its file (its directory made when missing,
/// as ESLint's `-o` does), else standard output.
fn emit(spec: &Spec, text: &str) -> Result<(), String> {
    match &spec.file {
        Some(file) => write_file(file, text),
        None => print(text),
    }
}

/// Writes `text` to `file`, making its directory first when it is missing.
fn write_file(file: &std::path::Path, text: &str) -> Result<(), String> {
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot make the directory {}: {e}", dir.display()))?;
    }
    std::fs::write(file, text).map_err(|e| format!("cannot write {}: {e}", file.display()))
}

/// Refuses, before anything is read or written, a run whose outputs collide: two
/// `--format FMT=FILE` (or one and `--write-baseline`) writing one file would keep only the
/// last, and an output that is one of the inputs (a document, `--discovery`, the baseline
/// read) would overwrite it.
fn check_outputs(
    args: &ValidateArgs,
    formats: &[Spec],
    settings: &Settings,
    paths: &[Result<String, LoadError>],
) -> Result<(), String> {
    let key = |path: &std::path::Path| -> Option<String> {
        let name = path.to_str()?;
        let cwd = std::env::current_dir().ok()?;
        // Through symbolic links when the file is there; lexically when it is not yet.
        Some(match std::fs::canonicalize(path) {
            Ok(real) => real.to_str()?.to_owned(),
            Err(_) => crate::load::absolute_lexically(&cwd, name),
        })
    };
    let mut outputs: Vec<(String, String)> = formats
        .iter()
        .filter_map(|s| {
            let file = s.file.as_deref()?;
            Some((
                format!("--format {}={}", s.kind.name(), file.display()),
                key(file)?,
            ))
        })
        .collect();
    if let Some(file) = &args.write_baseline
        && let Some(k) = key(file)
    {
        outputs.push((format!("--write-baseline {}", file.display()), k));
    }
    for (i, (what, k)) in outputs.iter().enumerate() {
        if let Some((other, _)) = outputs[..i].iter().find(|(_, o)| o == k) {
            return Err(format!(
                "{other} and {what} write the same file; give each its own"
            ));
        }
    }
    let mut inputs: Vec<(String, std::path::PathBuf)> = paths
        .iter()
        .flatten()
        .chain(args.discovery.iter())
        .filter(|p| *p != "-" && !crate::load::is_url(p))
        .map(|p| (format!("the input {p}"), p.into()))
        .collect();
    if let Some(file) = &settings.baseline {
        inputs.push((format!("the baseline {}", file.display()), file.clone()));
    }
    for (input, path) in &inputs {
        let Some(k) = key(path) else { continue };
        // Rewriting the baseline read is what --write-baseline is for.
        let rewrites =
            |what: &str| what.starts_with("--write-baseline") && input.starts_with("the baseline");
        if let Some((what, _)) = outputs.iter().find(|(what, o)| *o == k && !rewrites(what)) {
            return Err(format!(
                "{what} would overwrite {input}; write it to another file"
            ));
        }
    }
    Ok(())
}

/// `a JSON array` and the like, for a message about a value of the wrong type.
fn json_type(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

fn settings(args: &ValidateArgs) -> Result<Settings, String> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let config = if args.no_config {
        Config::default()
    } else {
        Config::load(args.config.as_deref(), &cwd)?
    };
    for (id, _) in &args.rules {
        crate::config::settable_rule(id).map_err(|e| format!("--rule: {e}"))?;
    }
    Ok(Settings {
        fail_on: args.fail_on.or(config.file.fail_on).unwrap_or_default(),
        max_warnings: args
            .max_warnings
            .or(config.file.max_warnings)
            .and_then(|m| m.0),
        baseline: args.baseline.clone().or(config.file.baseline.clone()),
        // An empty value (an unset variable in a CI file) means "not set", so the config
        // file's value still applies beneath it.
        docs: Docs::new(
            args.docs_url
                .as_deref()
                .filter(|url| !url.trim().is_empty())
                .or(config.file.docs_url.as_deref())
                .filter(|url| !url.trim().is_empty()),
        ),
        config,
    })
}

/// `--ignore`, relative to the working directory, and the config file's `ignore:`,
/// relative to its directory.
fn ignore(args: &ValidateArgs, settings: &Settings) -> Result<crate::load::Ignore, String> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut ignore = crate::load::Ignore::default();
    for pattern in &args.ignore {
        ignore
            .add(pattern, &cwd)
            .map_err(|e| format!("--ignore: {e}"))?;
    }
    if let Some(file) = &settings.config.path {
        let dir = cwd.join(file.parent().unwrap_or(std::path::Path::new("")));
        for pattern in &settings.config.file.ignore {
            ignore
                .add(pattern, &dir)
                .map_err(|e| format!("the config file {}: ignore: {e}", file.display()))?;
        }
    }
    Ok(ignore)
}

/// The `--format` arguments, at most one of them on standard output.
fn outputs(args: &ValidateArgs) -> Result<Vec<Spec>, String> {
    let mut formats = args.formats.clone();
    if formats.iter().all(|s| s.file.is_some()) && !(args.list_rules || args.explain.is_some()) {
        // Files only: the log still goes to the terminal.
        formats.insert(
            0,
            Spec {
                kind: format::Kind::Human,
                file: None,
            },
        );
    }
    if formats.iter().filter(|s| s.file.is_none()).count() > 1 {
        return Err(
            "only one --format can go to standard output; write the others to files (FMT=FILE)"
                .into(),
        );
    }
    Ok(formats)
}

/// The finding that stands for an input that could not be checked.
fn unreadable(e: &LoadError, docs: &Docs) -> Document {
    let (rule, at) = match e {
        LoadError::Json { line, column, .. } => (
            rules::INPUT_MALFORMED,
            // serde_json says column 0 for an error before the first character.
            Position {
                line: (*line).max(1),
                column: (*column).max(1),
            },
        ),
        _ => (rules::INPUT_UNREADABLE, Position::START),
    };
    Document {
        path: e.label().to_owned(),
        entries: vec![report::input_entry(e.label(), rule, at, e.reason(), docs)],
        ..Document::default()
    }
}

/// With `--format github` on GitHub Actions, the markdown table goes to the job's summary
/// page too.
fn append_step_summary(report: &Report) {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else {
        return;
    };
    let appended = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .and_then(|mut f| f.write_all(format::step_summary(report).as_bytes()));
    if let Err(e) = appended {
        say(&format!(
            "warning: cannot append to GITHUB_STEP_SUMMARY: {e}"
        ));
    }
}

/// Writes `text` to standard output. A reader that stopped reading (`| head`: a broken
/// pipe) wanted no more, and is no error; any other failure (a full disk behind
/// `> report.sarif`) is, or the run would pass with its report lost.
fn print(text: &str) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(format!("cannot write to standard output: {e}"))
        }
        _ => Ok(()),
    }
}

fn check_usage(args: &ValidateArgs) -> Result<(), String> {
    if args.discovery.is_some() && args.kind != Some(Kind::AgentCard) {
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
    if args.stdin_filename.is_some() && stdin_uses == 0 {
        return Err("--stdin-filename names standard input, which only `-` reads".into());
    }
    Ok(())
}
