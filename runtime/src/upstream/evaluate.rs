//! Re-evaluates the advertised `a2a` / `mcp` families against an upstream version
//! registry (interop.md "The refresh SLA"): drop what upstream retired, set `refreshedAt`
//! to the honest date of the check, and say how long the window has left. Pure: the
//! caller gives the registry and today, so a test moves time by passing another day.

use std::collections::BTreeMap;

use openwop_generated::versions::Protocol;
use serde::Serialize;
use serde_json::{Value, json};

use crate::clock::{date_of_day, parse_date};

/// Where a protocol's registry entry came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// The corpus's registry, compiled in (`spec/v2/upstream-versions.json`).
    BuiltIn,
    /// The registry the operator configured (a file or a URL), as last read.
    Operator,
}

/// How the window stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Standing {
    Ok,
    /// Fewer than [`WARN_DAYS`] days left: someone must re-check upstream soon.
    Expiring,
    /// The window has ended: the advertisement is non-conformant.
    Overdue,
}

/// Warn this many days before the window ends: weeks, so a human has time to act.
pub const WARN_DAYS: i64 = 30;

/// Each protocol's registry entry and where it came from.
pub type Effective = BTreeMap<String, (Protocol, Origin)>;

/// The outcome for one protocol family.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    pub protocol: String,
    pub origin: Origin,
    /// The registry's own check date.
    pub registry_checked_at: String,
    /// What the family now advertises as `refreshedAt`.
    pub refreshed_at: String,
    pub window_days: i64,
    /// The last day the advertisement is conformant (`refreshedAt` + window).
    pub window_ends: String,
    pub days_left: i64,
    pub standing: Standing,
    /// Versions this host is configured to offer that the registry says upstream retired
    /// (no longer advertised).
    pub withdrawn: Vec<String>,
    /// Versions offered that the registry does not list (advertised; a warning).
    pub unlisted: Vec<String>,
    /// Every offered version was retired: the family is no longer advertised.
    pub family_withdrawn: bool,
}

/// The keys of one family.
struct Family {
    name: &'static str,
    list: &'static str,
    floor: &'static str,
    profile_prefix: &'static str,
}

const FAMILIES: [Family; 2] = [
    Family {
        name: "a2a",
        list: "versions",
        floor: "minimumVersion",
        profile_prefix: "a2a-",
    },
    Family {
        name: "mcp",
        list: "revisions",
        floor: "minimumRevision",
        profile_prefix: "mcp-",
    },
];

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// `base` (the document as configured) re-evaluated on day `today` against `registry`.
/// A family the registry has no entry for is left as it is and gets no verdict.
pub fn evaluate(base: &Value, registry: &Effective, today: i64) -> (Value, Vec<Verdict>) {
    let mut doc = base.clone();
    let mut verdicts = Vec::new();
    for family in &FAMILIES {
        let Some((entry, origin)) = registry.get(family.name) else {
            continue;
        };
        let Some(fam) = doc.get_mut(family.name).and_then(Value::as_object_mut) else {
            continue;
        };
        let retired: Vec<&str> = entry
            .versions
            .iter()
            .filter(|v| {
                v.retired
                    .as_deref()
                    .and_then(parse_date)
                    .is_some_and(|d| d <= today)
            })
            .map(|v| v.version.as_str())
            .collect();
        let offered = strings(fam.get(family.list));
        let (kept, withdrawn): (Vec<String>, Vec<String>) = offered
            .into_iter()
            .partition(|v| !retired.contains(&v.as_str()));
        let unlisted: Vec<String> = kept
            .iter()
            .filter(|v| !entry.versions.iter().any(|k| &k.version == *v))
            .cloned()
            .collect();
        let checked = parse_date(&entry.checked_at).unwrap_or(0);
        let window_days = fam
            .get("refreshWindowDays")
            .and_then(Value::as_i64)
            .unwrap_or(90);
        // The honest date: the check the built-in registry records; an operator's
        // registry read today is today's evaluation, unless the registry itself was last
        // checked so long ago that re-reading it proves nothing (then its own date).
        let refreshed = match origin {
            Origin::BuiltIn => checked,
            Origin::Operator if today - checked <= window_days => today,
            Origin::Operator => checked,
        };
        let ends = refreshed + window_days;
        let days_left = ends - today;
        let standing = if days_left < 0 {
            Standing::Overdue
        } else if days_left <= WARN_DAYS {
            Standing::Expiring
        } else {
            Standing::Ok
        };
        let family_withdrawn = kept.is_empty();
        if !withdrawn.is_empty() && !family_withdrawn {
            fam.insert(family.list.into(), json!(kept));
            let newest = kept.iter().max().cloned().unwrap_or_default();
            let oldest = kept.iter().min().cloned().unwrap_or_default();
            if fam
                .get("preferredVersion")
                .and_then(Value::as_str)
                .is_none_or(|p| withdrawn.iter().any(|w| w == p))
            {
                fam.insert("preferredVersion".into(), json!(newest));
            }
            if fam
                .get(family.floor)
                .and_then(Value::as_str)
                .is_none_or(|f| withdrawn.iter().any(|w| w == f) || !kept.iter().any(|k| k == f))
            {
                fam.insert(family.floor.into(), json!(oldest));
            }
            if let Some(profiles) = fam.get_mut("profiles").and_then(Value::as_array_mut) {
                profiles.retain(|p| {
                    p.as_str()
                        .and_then(|p| p.strip_prefix(family.profile_prefix))
                        .is_none_or(|v| !withdrawn.iter().any(|w| w == v))
                });
            }
        }
        fam.insert("refreshedAt".into(), json!(date_of_day(refreshed)));
        if family_withdrawn && let Some(root) = doc.as_object_mut() {
            root.remove(family.name);
        }
        verdicts.push(Verdict {
            protocol: family.name.to_owned(),
            origin: *origin,
            registry_checked_at: entry.checked_at.clone(),
            refreshed_at: date_of_day(refreshed),
            window_days,
            window_ends: date_of_day(ends),
            days_left,
            standing,
            withdrawn,
            unlisted,
            family_withdrawn,
        });
    }
    (doc, verdicts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use openwop_generated::versions::{Registry, Version};

    fn day(s: &str) -> i64 {
        parse_date(s).unwrap()
    }

    fn built_in() -> Effective {
        Registry::built_in()
            .expect("the corpus has a registry")
            .protocols
            .into_iter()
            .map(|(k, v)| (k, (v, Origin::BuiltIn)))
            .collect()
    }

    fn base() -> Value {
        crate::discovery::document(100, &Default::default())
    }

    #[test]
    fn refreshed_at_is_the_registrys_check_date_with_only_the_built_in_one() {
        let registry = built_in();
        let checked = registry["a2a"].0.checked_at.clone();
        let (doc, verdicts) = evaluate(&base(), &registry, day(&checked) + 10);
        assert_eq!(doc["a2a"]["refreshedAt"], json!(checked));
        assert_eq!(verdicts[0].days_left, 80);
        assert_eq!(verdicts[0].standing, Standing::Ok);
    }

    #[test]
    fn the_window_running_out_is_expiring_weeks_before_and_overdue_after() {
        let registry = built_in();
        let checked = day(&registry["mcp"].0.checked_at);
        let at = |d| evaluate(&base(), &registry, d).1[1].clone();
        assert_eq!(at(checked + 59).standing, Standing::Ok);
        assert_eq!(at(checked + 60).standing, Standing::Expiring);
        assert_eq!(at(checked + 90).standing, Standing::Expiring);
        assert_eq!(at(checked + 91).standing, Standing::Overdue);
    }

    #[test]
    fn a_retired_version_is_not_advertised_and_preferred_and_floor_follow() {
        let mut registry = built_in();
        let mcp = &mut registry.get_mut("mcp").unwrap().0;
        for v in &mut mcp.versions {
            if v.version == "2025-11-25" {
                v.retired = Some("2026-12-01".into());
            }
        }
        let (doc, verdicts) = evaluate(&base(), &registry, day("2026-12-05"));
        assert_eq!(doc["mcp"]["revisions"], json!(["2026-07-28"]));
        assert_eq!(doc["mcp"]["minimumRevision"], "2026-07-28");
        assert_eq!(doc["mcp"]["preferredVersion"], "2026-07-28");
        assert_eq!(verdicts[1].withdrawn, vec!["2025-11-25".to_owned()]);
        assert!(crate::discovery::self_check(&doc).is_empty());
        // Not yet retired the day before: still advertised.
        let (doc, _) = evaluate(&base(), &registry, day("2026-11-30"));
        assert_eq!(doc["mcp"]["revisions"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn every_version_retired_withdraws_the_family() {
        let mut registry = built_in();
        registry.get_mut("a2a").unwrap().0.versions = vec![Version {
            version: "1.0".into(),
            retired: Some("2026-01-01".into()),
        }];
        let (doc, verdicts) = evaluate(&base(), &registry, day("2026-12-05"));
        assert!(doc.get("a2a").is_none());
        assert!(verdicts[0].family_withdrawn);
    }

    #[test]
    fn an_operator_registry_read_today_is_todays_evaluation_unless_itself_stale() {
        let mut registry = built_in();
        registry.get_mut("a2a").unwrap().1 = Origin::Operator;
        let checked = day(&registry["a2a"].0.checked_at);
        let (doc, _) = evaluate(&base(), &registry, checked + 40);
        assert_eq!(doc["a2a"]["refreshedAt"], json!(date_of_day(checked + 40)));
        let (doc, v) = evaluate(&base(), &registry, checked + 120);
        assert_eq!(doc["a2a"]["refreshedAt"], json!(date_of_day(checked)));
        assert_eq!(v[0].standing, Standing::Overdue);
    }
}
