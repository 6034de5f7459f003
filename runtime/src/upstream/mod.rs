//! The live refresh SLA (interop.md "The refresh SLA"): the versions upstream publishes
//! are data (the corpus's `spec/v2/upstream-versions.json`, compiled in, or a registry
//! of the same schema the operator names: a file or a URL), and the host re-evaluates its
//! advertisement against the registry it has on a schedule well inside the window.
//!
//! Each evaluation rebuilds the discovery document (so its strong ETag changes with it),
//! withdraws what upstream retired, advertises `refreshedAt` as the honest date of the
//! check, and says loudly (log, `/metrics`, `/readyz`) when the window is running out or a
//! re-read failed. A retired version stops being advertised at once; the edges keep
//! answering a peer that negotiated it until restart (a private, non-advertised
//! behaviour, which interop.md allows), and `/readyz` says a restart is due.

pub mod evaluate;
pub mod http;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openwop_generated::versions::{Registry, SCHEMA_URI};
use serde_json::{Value, json};

use crate::clock::{Clock, parse_date};
use crate::discovery::{Discovery, Live};
use evaluate::{Effective, Origin, Standing, Verdict};

/// How often the registry is re-read (and the advertisement re-evaluated) by default:
/// daily, so a 90-day window sees ninety chances.
pub const DEFAULT_EVERY: Duration = Duration::from_secs(24 * 3600);
/// The longest schedule an operator may set: a week, well inside any window.
pub const MAX_EVERY: Duration = Duration::from_secs(7 * 24 * 3600);

/// Where the operator's registry is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    File(PathBuf),
    /// Fetched through the egress guard, like every outbound call.
    Url(String),
}

impl Source {
    /// An `http(s)://` URL, else a file path.
    pub fn parse(raw: &str) -> Source {
        if raw.starts_with("https://") || raw.starts_with("http://") {
            Source::Url(raw.to_owned())
        } else {
            Source::File(PathBuf::from(raw))
        }
    }

    fn describe(&self) -> String {
        match self {
            Source::File(p) => p.display().to_string(),
            Source::Url(u) => u.clone(),
        }
    }
}

/// The SLA's settings (config `upstreamRegistry`, `upstreamRegistryRefreshHours`).
#[derive(Debug, Clone)]
pub struct SlaConfig {
    /// The operator's registry; `None`: the built-in one only.
    pub source: Option<Source>,
    /// How often the source is re-read and the advertisement re-evaluated.
    pub every: Duration,
}

impl Default for SlaConfig {
    fn default() -> Self {
        Self {
            source: None,
            every: DEFAULT_EVERY,
        }
    }
}

/// A registry document, checked against its schema and for real dates.
pub fn parse_registry(text: &[u8]) -> Result<Registry, String> {
    let value: Value =
        serde_json::from_slice(text).map_err(|e| format!("the registry is not JSON: {e}"))?;
    let validator = openwop_generated::validators::compile_schema(&json!({ "$ref": SCHEMA_URI }))?;
    if let Some(e) = validator.iter_errors(&value).next() {
        return Err(format!(
            "the registry does not match {SCHEMA_URI} at `{}`: {e}",
            e.instance_path()
        ));
    }
    let registry: Registry =
        serde_json::from_value(value).map_err(|e| format!("the registry: {e}"))?;
    for (name, p) in &registry.protocols {
        let dates = std::iter::once(&p.checked_at)
            .chain(p.versions.iter().filter_map(|v| v.retired.as_ref()));
        if let Some(bad) = dates.into_iter().find(|d| parse_date(d).is_none()) {
            return Err(format!(
                "the registry's `{name}` entry has `{bad}`, not a date"
            ));
        }
    }
    Ok(registry)
}

/// The compiled-in registry (empty when the corpus had none).
pub fn built_in() -> Registry {
    Registry::built_in().unwrap_or(Registry {
        schema: None,
        protocols: Default::default(),
    })
}

pub use crate::discovery::built_in_checked_at;

/// What the SLA knows now.
#[derive(Debug, Default)]
struct State {
    /// The operator's registry as last read, and when (ms).
    operator: Option<(Registry, i64)>,
    last_error: Option<String>,
    last_attempt_ms: Option<i64>,
    read_failures: u64,
    verdicts: Vec<Verdict>,
    evaluated_ms: i64,
    /// A version withdrawn while the process runs: the edges still speak it.
    restart_due: Vec<String>,
}

/// The refresh SLA of one host.
pub struct Sla {
    /// The document as configured, before any evaluation.
    base: Value,
    config: SlaConfig,
    egress: crate::egress::Egress,
    clock: Clock,
    live: Arc<Live>,
    state: Mutex<State>,
    /// What the process started advertising (a later withdrawal needs a restart to stop
    /// being spoken).
    started_with: Mutex<Option<Vec<String>>>,
}

impl Sla {
    /// Reads the operator's registry (a configured source that cannot be read is a start
    /// error: a typo should not wait a day to show), evaluates, and returns the SLA with
    /// the document to serve.
    pub async fn start(
        base: Value,
        config: SlaConfig,
        egress: crate::egress::Egress,
        clock: Clock,
    ) -> Result<Arc<Sla>, String> {
        if config.every.is_zero() || config.every > MAX_EVERY {
            return Err(format!(
                "upstreamRegistryRefreshHours must be between 1 and {} hours",
                MAX_EVERY.as_secs() / 3600
            ));
        }
        let sla = Arc::new(Sla {
            live: Arc::new(Live::new(Discovery::new(base.clone()))),
            base,
            config,
            egress,
            clock,
            state: Mutex::default(),
            started_with: Mutex::default(),
        });
        if sla.config.source.is_some() {
            sla.reread().await?;
        }
        sla.reevaluate()?;
        Ok(sla)
    }

    /// The document every edge reads.
    pub fn live(&self) -> Arc<Live> {
        self.live.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn fetch(&self, source: &Source) -> Result<Vec<u8>, String> {
        match source {
            Source::File(path) => tokio::fs::read(path)
                .await
                .map_err(|e| format!("cannot read {}: {e}", path.display())),
            Source::Url(url) => {
                let response = self
                    .egress
                    .request(reqwest::Method::GET, url, Default::default(), None, None)
                    .await
                    .map_err(|e| format!("cannot fetch {url}: {e}"))?;
                if !response.is_success() {
                    return Err(format!("{url} answered HTTP {}", response.status));
                }
                Ok(response.body)
            }
        }
    }

    /// Re-reads the operator's registry. A failure keeps the last good registry (its
    /// date still bounds the window) and is logged and counted.
    pub async fn reread(&self) -> Result<(), String> {
        let Some(source) = self.config.source.clone() else {
            return Ok(());
        };
        let now = self.clock.now_ms();
        let read = match self.fetch(&source).await {
            Ok(bytes) => parse_registry(&bytes),
            Err(e) => Err(e),
        };
        let mut state = self.lock();
        state.last_attempt_ms = Some(now);
        match read {
            Ok(registry) => {
                tracing::info!(source = %source.describe(), "upstream version registry read");
                state.operator = Some((registry, now));
                state.last_error = None;
                Ok(())
            }
            Err(e) => {
                state.read_failures += 1;
                tracing::error!(source = %source.describe(), error = %e, "the upstream version registry could not be re-read; the last good one stays in force");
                state.last_error = Some(e.clone());
                Err(e)
            }
        }
    }

    /// The registry in force: the operator's entries over the built-in ones.
    fn effective(&self) -> Effective {
        let mut out: Effective = built_in()
            .protocols
            .into_iter()
            .map(|(k, v)| (k, (v, Origin::BuiltIn)))
            .collect();
        if let Some((registry, _)) = &self.lock().operator {
            for (k, v) in &registry.protocols {
                out.insert(k.clone(), (v.clone(), Origin::Operator));
            }
        }
        out
    }

    /// Evaluates the advertisement now and serves the result. A document the generated
    /// validator refuses (other than for its date) is not served: the last good one stays.
    pub fn reevaluate(&self) -> Result<(), String> {
        let today = self.clock.today();
        let (doc, verdicts) = evaluate::evaluate(&self.base, &self.effective(), today);
        let findings = crate::discovery::self_check_on(&doc, today);
        if !findings.is_empty() {
            let e = format!(
                "the re-evaluated discovery document is invalid; the last good one stays:\n{}",
                findings.join("\n")
            );
            tracing::error!("{e}");
            return Err(e);
        }
        let withdrawn: Vec<String> = verdicts
            .iter()
            .flat_map(|v| v.withdrawn.iter().map(|w| format!("{} {w}", v.protocol)))
            .collect();
        {
            let mut started = self.started_with.lock().unwrap_or_else(|e| e.into_inner());
            let first = started.get_or_insert_with(|| withdrawn.clone());
            let newly: Vec<String> = withdrawn
                .iter()
                .filter(|w| !first.contains(w))
                .cloned()
                .collect();
            let mut state = self.lock();
            state.restart_due = newly;
        }
        for v in &verdicts {
            let fields = (
                v.protocol.as_str(),
                v.refreshed_at.as_str(),
                v.window_ends.as_str(),
                v.days_left,
            );
            match v.standing {
                Standing::Overdue => tracing::error!(
                    protocol = fields.0,
                    refreshed_at = fields.1,
                    window_ended = fields.2,
                    "the {} advertisement is past its refresh window: it is non-conformant until the upstream version registry is re-checked (update spec/v2/upstream-versions.json, or point upstreamRegistry at a current one)",
                    fields.0
                ),
                Standing::Expiring => tracing::warn!(
                    protocol = fields.0,
                    refreshed_at = fields.1,
                    window_ends = fields.2,
                    days_left = fields.3,
                    "the {} refresh window ends in {} days: re-check upstream's versions and update the registry before then",
                    fields.0,
                    fields.3
                ),
                Standing::Ok => {}
            }
            if !v.withdrawn.is_empty() {
                tracing::warn!(protocol = %v.protocol, withdrawn = ?v.withdrawn, "upstream retired versions this host offers; they are no longer advertised");
            }
            if v.family_withdrawn {
                tracing::error!(protocol = %v.protocol, "upstream retired every version this host offers: the family is no longer advertised");
            }
        }
        self.live.set(Discovery::new(doc));
        let mut state = self.lock();
        state.verdicts = verdicts;
        state.evaluated_ms = self.clock.now_ms();
        Ok(())
    }

    /// One scheduled round: re-read (when a source is configured), then re-evaluate
    /// (also without a source: the calendar moves).
    pub async fn tick(&self) {
        let _ = self.reread().await;
        let _ = self.reevaluate();
    }

    /// Runs [`Sla::tick`] every `every` until shutdown.
    pub fn spawn(self: &Arc<Self>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
        let sla = self.clone();
        tokio::spawn(async move {
            let mut interval = tokio::time::interval(sla.config.every);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            interval.tick().await; // the first tick is now: start-up just evaluated
            loop {
                tokio::select! {
                    _ = interval.tick() => sla.tick().await,
                    _ = async { let _ = shutdown.wait_for(|v| *v).await; } => break,
                }
            }
        });
    }

    /// What `/readyz` says about the SLA, and whether any of it needs a human.
    pub fn detail(&self) -> (Value, bool) {
        let state = self.lock();
        let attention = state.last_error.is_some()
            || !state.restart_due.is_empty()
            || state
                .verdicts
                .iter()
                .any(|v| v.standing != Standing::Ok || v.family_withdrawn);
        let registry = json!({
            "source": self.config.source.as_ref().map_or_else(|| "built-in".to_owned(), Source::describe),
            "rereadEverySeconds": self.config.every.as_secs(),
            "lastReadAt": state.operator.as_ref().map(|(_, ms)| crate::clock::rfc3339(*ms)),
            "lastAttemptAt": state.last_attempt_ms.map(crate::clock::rfc3339),
            "lastError": state.last_error,
            "readFailures": state.read_failures,
        });
        let detail = json!({
            "status": if attention { "attention" } else { "ok" },
            "evaluatedAt": crate::clock::rfc3339(state.evaluated_ms),
            "registry": registry,
            "protocols": state.verdicts,
            "restartDue": state.restart_due,
        });
        (detail, attention)
    }

    /// The SLA's Prometheus series.
    pub fn metrics_text(&self) -> String {
        let state = self.lock();
        let mut out = String::new();
        out.push_str("# HELP openwop_interop_refresh_days_left Days until the protocol family's refresh window ends (negative: overdue).\n# TYPE openwop_interop_refresh_days_left gauge\n");
        for v in &state.verdicts {
            out.push_str(&format!(
                "openwop_interop_refresh_days_left{{protocol=\"{}\"}} {}\n",
                v.protocol, v.days_left
            ));
        }
        out.push_str("# HELP openwop_upstream_registry_read_failures_total Failed re-reads of the operator's upstream version registry.\n# TYPE openwop_upstream_registry_read_failures_total counter\n");
        out.push_str(&format!(
            "openwop_upstream_registry_read_failures_total {}\n",
            state.read_failures
        ));
        out.push_str("# HELP openwop_upstream_registry_read_ok 1 when the last re-read of the operator's registry succeeded (or none is configured), else 0.\n# TYPE openwop_upstream_registry_read_ok gauge\n");
        out.push_str(&format!(
            "openwop_upstream_registry_read_ok {}\n",
            u8::from(state.last_error.is_none())
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_registry_parses_with_the_operator_path() {
        let text = openwop_generated::versions::BUILT_IN.expect("the corpus has one");
        let registry = parse_registry(text.as_bytes()).expect("valid");
        assert_eq!(registry, built_in());
        assert_eq!(
            built_in_checked_at("a2a"),
            registry.protocols["a2a"].checked_at
        );
    }

    #[test]
    fn a_registry_off_its_schema_is_refused_with_the_place() {
        for (text, says) in [
            (
                r#"{"protocols": {"a2a": {"source": "https://x", "checkedAt": "2026-11-20"}}}"#,
                "versions",
            ),
            (
                r#"{"protocols": {"grpc": {"source": "https://x", "checkedAt": "2026-11-20", "versions": [{"version": "1"}]}}}"#,
                "grpc",
            ),
            (
                r#"{"protocols": {"a2a": {"source": "https://x", "checkedAt": "2026-02-30", "versions": [{"version": "1.0"}]}}}"#,
                "2026-02-30",
            ),
            ("not json", "not JSON"),
        ] {
            let e = parse_registry(text.as_bytes()).expect_err(text);
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn sources_are_urls_or_files() {
        assert_eq!(
            Source::parse("https://h/r.json"),
            Source::Url("https://h/r.json".into())
        );
        assert_eq!(
            Source::parse("/etc/r.json"),
            Source::File("/etc/r.json".into())
        );
    }
}
