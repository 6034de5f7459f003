//! Discovery-document rules that a JSON Schema cannot state (interop.md).
//!
//! This file is a template: the generator copies it verbatim into
//! `generated/src/validators/`, so it may only use `serde_json`, its sibling modules and
//! the corpus-driven tables in `crate::dispatch`.
//!
//! Each finding carries a stable rule id (`discovery.*`). Three rules restate a schema
//! failure (`no-supported-transports`, `no-grpc`, `no-legacy-profile`) and a few restate a
//! schema bound (`required-field`, `mrtr-max-rounds`, `invalid-date`): they are reported in
//! addition to the `schema` finding, because the rule's sentence says what to change while
//! the schema's only says what it expected. Every rule tolerates a document the schema
//! rejects (wrong types are skipped, never a panic).

use serde_json::{Map, Value};

use super::{Finding, Options};
use crate::dispatch::mcp_required_features;

/// The longest refresh window a host may declare, and the default when it declares none.
pub(super) const MAX_REFRESH_WINDOW_DAYS: i64 = 90;
/// `mcp.mrtr.maxRounds` bounds (interop.md, "The MCP round ceiling").
const MRTR_MIN_ROUNDS: i64 = 1;
const MRTR_MAX_ROUNDS: i64 = 16;
/// The MCP feature that says the host serves the tasks extension.
const EXTENSIONS_FEATURE: &str = "extensions";
/// The profile per-agent cards are defined for (interop.md, "Per-agent cards").
pub(super) const A2A_1_0_PROFILE: &str = "a2a-1.0";
const NEGOTIATION_EVENT: &str = "negotiation.decided";

/// How a facet spells its offered versions.
#[derive(Clone, Copy)]
enum VersionGrammar {
    /// `M.m`, compared numerically.
    MajorMinor,
    /// `YYYY-MM-DD`, compared as calendar dates.
    Date,
}

/// The facts of one protocol facet the version rules need.
struct Facet {
    name: &'static str,
    offered: &'static str,
    floor: &'static str,
    profile_prefix: &'static str,
    grammar: VersionGrammar,
    example: &'static str,
}

const A2A: Facet = Facet {
    name: "a2a",
    offered: "versions",
    floor: "minimumVersion",
    profile_prefix: "a2a-",
    grammar: VersionGrammar::MajorMinor,
    example: "1.0",
};

const MCP: Facet = Facet {
    name: "mcp",
    offered: "revisions",
    floor: "minimumRevision",
    profile_prefix: "mcp-",
    grammar: VersionGrammar::Date,
    example: "2026-07-28",
};

/// Checks the rules of interop.md a schema cannot state; `doc` is a whole discovery document.
pub fn check(doc: &Value, opts: &Options) -> Vec<Finding> {
    let mut out = Vec::new();
    // A non-object document is the schema's to report; there is nothing more to say.
    let Some(root) = doc.as_object() else {
        return out;
    };
    let today = today(opts);

    if root.contains_key("supportedTransports") {
        push(
            &mut out,
            "/supportedTransports".into(),
            "discovery.no-supported-transports",
            "remove `supportedTransports`: REST is the only wire, and A2A and MCP are advertised by their own `a2a` and `mcp` facets".into(),
        );
    }
    if root.contains_key("grpc") {
        push(
            &mut out,
            "/grpc".into(),
            "discovery.no-grpc",
            "remove the `grpc` block: gRPC is not part of the core wire and a host must not advertise it".into(),
        );
    }

    for facet in [&A2A, &MCP] {
        if let Some(record) = root.get(facet.name).and_then(Value::as_object) {
            check_facet(facet, record, today, &mut out);
        }
    }
    if let Some(mcp) = root.get("mcp").and_then(Value::as_object) {
        check_mcp_features(mcp, &mut out);
        check_mrtr(mcp, &mut out);
    }
    check_agent_cards(root, &mut out);
    check_negotiation_event(root, &mut out);
    out
}

fn push(out: &mut Vec<Finding>, pointer: String, rule: &str, message: String) {
    out.push(Finding {
        pointer,
        rule: rule.to_owned(),
        message,
    });
}

/// Escapes one reference token of a JSON pointer (RFC 6901).
pub(super) fn token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The strings of an array field, with their indexes; non-strings are the schema's concern.
pub(super) fn strings<'a>(record: &'a Map<String, Value>, key: &str) -> Vec<(usize, &'a str)> {
    record
        .get(key)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.as_str().map(|s| (i, s)))
                .collect()
        })
        .unwrap_or_default()
}

fn check_facet(facet: &Facet, record: &Map<String, Value>, today: i64, out: &mut Vec<Finding>) {
    let at = |key: &str| format!("/{}/{}", facet.name, token(key));

    for key in [facet.offered, "preferredVersion", facet.floor, "refreshedAt"] {
        if !record.contains_key(key) {
            let what = match key {
                k if k == facet.offered => format!("the {} this host offers, e.g. [\"{}\"]", facet.offered, facet.example),
                "preferredVersion" => "the version served when a peer asks for none".to_owned(),
                "refreshedAt" => "the date this advertisement was last checked against upstream, YYYY-MM-DD".to_owned(),
                _ => "the lowest version this host will negotiate".to_owned(),
            };
            push(
                out,
                at(key),
                "discovery.required-field",
                format!("add `{key}` to the `{}` facet ({what}); every host that speaks {} must advertise it", facet.name, facet.name),
            );
        }
    }

    // Offered versions, parsed once; a malformed entry is reported and left out.
    let mut offered: Vec<(&str, (i64, i64))> = Vec::new();
    for (i, raw) in strings(record, facet.offered) {
        match parse_version(facet.grammar, raw) {
            Some(v) => offered.push((raw, v)),
            None => bad_version(facet, &format!("{}/{i}", at(facet.offered)), raw, out),
        }
    }
    let offered_list = offered.iter().map(|(raw, _)| format!("\"{raw}\"")).collect::<Vec<_>>().join(", ");
    let is_offered = |v: (i64, i64)| offered.iter().any(|(_, o)| *o == v);
    let have_offered = record.get(facet.offered).and_then(Value::as_array).is_some();

    let preferred = version_field(facet, record, "preferredVersion", &at, out);
    if let Some((raw, v)) = preferred
        && have_offered
        && !is_offered(v)
    {
        push(
            out,
            at("preferredVersion"),
            "discovery.preferred-version-offered",
            format!("`preferredVersion` \"{raw}\" is not one of the offered {} [{offered_list}]; choose one of them or add it to `{}`", facet.offered, facet.offered),
        );
    }

    let floor = version_field(facet, record, facet.floor, &at, out);
    if let Some((raw, v)) = floor {
        if have_offered && !is_offered(v) {
            push(
                out,
                at(facet.floor),
                "discovery.minimum-version-offered",
                format!("`{}` \"{raw}\" is not one of the offered {} [{offered_list}]; set it to the lowest version you offer", facet.floor, facet.offered),
            );
        }
        if let Some((praw, p)) = preferred
            && v > p
        {
            push(
                out,
                at(facet.floor),
                "discovery.minimum-above-preferred",
                format!("`{}` \"{raw}\" is above `preferredVersion` \"{praw}\"; lower the floor or raise the preferred version so the floor is at or below it", facet.floor),
            );
        }
    }

    for (i, profile) in strings(record, "profiles") {
        let pointer = format!("{}/{i}", at("profiles"));
        if profile.ends_with("-legacy") {
            push(
                out,
                pointer,
                "discovery.no-legacy-profile",
                format!("remove the profile \"{profile}\": legacy profiles are never advertised (a host may still speak them privately)"),
            );
            continue;
        }
        // A profile of another shape is the schema's to report.
        let Some(version) = profile.strip_prefix(facet.profile_prefix) else {
            continue;
        };
        let Some(v) = parse_version(facet.grammar, version) else {
            continue;
        };
        if have_offered && !is_offered(v) {
            push(
                out,
                pointer,
                "discovery.profile-version-offered",
                format!("the profile \"{profile}\" names {version}, which `{}` does not offer; add \"{version}\" to `{}` or drop the profile", facet.offered, facet.offered),
            );
        }
    }

    check_refresh(facet, record, today, &at, out);
}

/// Reads a single version field, reporting one that does not parse.
fn version_field<'a>(
    facet: &Facet,
    record: &'a Map<String, Value>,
    key: &str,
    at: &dyn Fn(&str) -> String,
    out: &mut Vec<Finding>,
) -> Option<(&'a str, (i64, i64))> {
    let raw = record.get(key)?.as_str()?;
    match parse_version(facet.grammar, raw) {
        Some(v) => Some((raw, v)),
        None => {
            bad_version(facet, &at(key), raw, out);
            None
        }
    }
}

/// Only dates get a rule of their own: a malformed `M.m` fails the schema's pattern, but
/// the schema's `format: date` does not catch an impossible day such as 2026-02-30.
fn bad_version(facet: &Facet, pointer: &str, raw: &str, out: &mut Vec<Finding>) {
    if let VersionGrammar::Date = facet.grammar {
        invalid_date(pointer, raw, out);
    }
}

fn invalid_date(pointer: &str, raw: &str, out: &mut Vec<Finding>) {
    push(
        out,
        pointer.to_owned(),
        "discovery.invalid-date",
        format!("\"{raw}\" is not a calendar date; write it as YYYY-MM-DD with a real month and day"),
    );
}

fn parse_version(grammar: VersionGrammar, raw: &str) -> Option<(i64, i64)> {
    match grammar {
        VersionGrammar::MajorMinor => {
            let (major, minor) = raw.split_once('.')?;
            Some((parse_digits(major)?, parse_digits(minor)?))
        }
        VersionGrammar::Date => parse_date(raw).map(|day| (day, 0)),
    }
}

fn parse_digits(raw: &str) -> Option<i64> {
    if raw.is_empty() || raw.len() > 9 || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    raw.parse().ok()
}

/// Parses `YYYY-MM-DD` into a day number (days since 1970-01-01), rejecting impossible dates.
pub(super) fn parse_date(raw: &str) -> Option<i64> {
    let bytes = raw.as_bytes();
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return None;
    }
    let year = parse_digits(raw.get(0..4)?)?;
    let month = parse_digits(raw.get(5..7)?)?;
    let day = parse_digits(raw.get(8..10)?)?;
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    Some(days_from_civil(year, month, day))
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
pub(super) fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Today's day number: fixed by the options (reproducible CI), else the system clock (UTC).
pub(super) fn today(opts: &Options) -> i64 {
    if let Some((y, m, d)) = opts.today {
        return days_from_civil(i64::from(y), i64::from(m), i64::from(d));
    }
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    i64::try_from(secs / 86_400).unwrap_or(0)
}

fn check_refresh(
    facet: &Facet,
    record: &Map<String, Value>,
    today: i64,
    at: &dyn Fn(&str) -> String,
    out: &mut Vec<Finding>,
) {
    let mut window = MAX_REFRESH_WINDOW_DAYS;
    if let Some(raw) = record.get("refreshWindowDays") {
        match raw.as_i64() {
            Some(days) if (1..=MAX_REFRESH_WINDOW_DAYS).contains(&days) => window = days,
            _ => push(
                out,
                at("refreshWindowDays"),
                "discovery.refresh-window-range",
                format!("`refreshWindowDays` is {raw}; it must be a whole number of days from 1 to {MAX_REFRESH_WINDOW_DAYS} (leave it out for {MAX_REFRESH_WINDOW_DAYS})"),
            ),
        }
    }
    let Some(raw) = record.get("refreshedAt").and_then(Value::as_str) else {
        return;
    };
    let Some(refreshed) = parse_date(raw) else {
        invalid_date(&at("refreshedAt"), raw, out);
        return;
    };
    if refreshed > today {
        push(
            out,
            at("refreshedAt"),
            "discovery.refreshed-in-future",
            format!("`refreshedAt` {raw} is in the future; set it to the date you last checked the {} against upstream", facet.offered),
        );
    } else if today - refreshed > window {
        push(
            out,
            at("refreshedAt"),
            "discovery.refresh-overdue",
            format!(
                "`refreshedAt` {raw} is {} days old, beyond the {window}-day refresh window; re-check the {} against upstream and update `refreshedAt`",
                today - refreshed,
                facet.offered
            ),
        );
    }
}

fn check_mcp_features(mcp: &Map<String, Value>, out: &mut Vec<Finding>) {
    let features: Vec<&str> = strings(mcp, "features").into_iter().map(|(_, f)| f).collect();
    let features_at = if mcp.contains_key("features") { "/mcp/features" } else { "/mcp" };
    for (_, profile) in strings(mcp, "profiles") {
        for required in mcp_required_features(profile) {
            if !features.contains(&required) {
                push(
                    out,
                    features_at.to_owned(),
                    "discovery.profile-missing-feature",
                    format!("the profile \"{profile}\" requires the feature \"{required}\"; add it to `mcp.features`"),
                );
            }
        }
    }

    // The tasks extension is served on the server mount, so listing `extensions` without a
    // mount advertises something that cannot be served. The converse ("served but not
    // listed") is only visible in server/discover, not in this document.
    if let Some(i) = features.iter().position(|f| *f == EXTENSIONS_FEATURE)
        && !mcp.contains_key("serverMount")
    {
        push(
            out,
            format!("/mcp/features/{i}"),
            "discovery.mcp-extensions-feature",
            "`mcp.features` lists \"extensions\" but the host has no `mcp.serverMount` to serve the tasks extension on; add the server mount or drop the feature".into(),
        );
    }
}

fn check_mrtr(mcp: &Map<String, Value>, out: &mut Vec<Finding>) {
    let Some(mrtr) = mcp.get("mrtr").and_then(Value::as_object) else {
        return;
    };
    let sentence = match mrtr.get("maxRounds") {
        None => format!("add `maxRounds` to `mcp.mrtr`: the ceiling on input rounds, from {MRTR_MIN_ROUNDS} to {MRTR_MAX_ROUNDS}"),
        Some(v) => match v.as_i64() {
            Some(n) if (MRTR_MIN_ROUNDS..=MRTR_MAX_ROUNDS).contains(&n) => return,
            _ => format!("`mcp.mrtr.maxRounds` is {v}; set a whole number from {MRTR_MIN_ROUNDS} to {MRTR_MAX_ROUNDS}"),
        },
    };
    push(out, "/mcp/mrtr/maxRounds".into(), "discovery.mrtr-max-rounds", sentence);
}

fn check_agent_cards(root: &Map<String, Value>, out: &mut Vec<Finding>) {
    let Some(a2a) = root.get("a2a").and_then(Value::as_object) else {
        return;
    };
    // `agentCards` is `true` or absent; any other value is the schema's to report.
    if a2a.get("agentCards") != Some(&Value::Bool(true)) {
        return;
    }
    if !strings(a2a, "profiles").iter().any(|(_, p)| *p == A2A_1_0_PROFILE) {
        push(
            out,
            "/a2a/agentCards".into(),
            "discovery.agent-cards-need-a2a-profile",
            format!("`a2a.agentCards` needs the \"{A2A_1_0_PROFILE}\" profile; add it to `a2a.profiles` or drop `agentCards`"),
        );
    }
    let runtime = root
        .get("agents")
        .and_then(Value::as_object)
        .and_then(|agents| agents.get("manifestRuntime"));
    if matches!(runtime, None | Some(Value::Null | Value::Bool(false))) {
        push(
            out,
            "/a2a/agentCards".into(),
            "discovery.agent-cards-need-manifest-runtime",
            "`a2a.agentCards` publishes the agent inventory, which needs `agents.manifestRuntime`; advertise it or drop `agentCards`".into(),
        );
    }
}

fn check_negotiation_event(root: &Map<String, Value>, out: &mut Vec<Finding>) {
    let speaks: Vec<&str> = ["a2a", "mcp"].into_iter().filter(|f| root.contains_key(*f)).collect();
    if speaks.is_empty() {
        return;
    }
    let rule = "discovery.negotiation-event-advertised";
    let because = format!("a host advertising {} records every version negotiation as a durable host event", speaks.join(" and "));
    let wanted = format!("{{\"type\": \"{NEGOTIATION_EVENT}\", \"delivery\": \"durable\"}}");
    let Some(host_events) = root.get("hostEvents").and_then(Value::as_object) else {
        push(out, "/hostEvents".into(), rule, format!("add `hostEvents` with `types` listing {wanted}: {because}"));
        return;
    };
    let types = host_events.get("types").and_then(Value::as_array);
    let entry = types.into_iter().flatten().enumerate().find(|(_, t)| {
        t.get("type").and_then(Value::as_str) == Some(NEGOTIATION_EVENT)
    });
    match entry {
        None => push(
            out,
            "/hostEvents/types".into(),
            rule,
            format!("add {wanted} to `hostEvents.types`: {because}"),
        ),
        Some((i, t)) if t.get("delivery").and_then(Value::as_str) != Some("durable") => push(
            out,
            format!("/hostEvents/types/{i}/delivery"),
            rule,
            format!("set the delivery of \"{NEGOTIATION_EVENT}\" to \"durable\": {because}"),
        ),
        Some(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_numbers_match_the_calendar() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(parse_date("2026-12-01").map(|d| d - days_from_civil(2026, 9, 2)), Some(90));
        assert_eq!(parse_date("2028-02-29").map(|d| d - days_from_civil(2028, 2, 28)), Some(1));
        for bad in ["2026-02-29", "2026-13-01", "2026-00-10", "2026-04-31", "26-01-01", "2026/01/01", "２026-01-01"] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn versions_compare_numerically() {
        let v = |s| parse_version(VersionGrammar::MajorMinor, s);
        assert!(v("1.10") > v("1.2"));
        assert!(v("2.0") > v("1.99"));
        assert_eq!(v("1"), None);
        assert_eq!(v("1.x"), None);
    }

    #[test]
    fn a_non_object_document_has_no_rule_finding() {
        let opts = Options { today: Some((2026, 12, 1)) };
        assert!(check(&Value::Array(vec![]), &opts).is_empty());
        assert!(check(&Value::String("a2a".into()), &opts).is_empty());
    }
}
