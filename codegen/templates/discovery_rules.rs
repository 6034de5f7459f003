//! Discovery-document rules that a JSON Schema cannot state (interop.md).
//!
//! This file is a template: the generator copies it verbatim into
//! `generated/src/validators/`, so it may only use `serde_json`, its sibling modules and
//! the corpus-driven tables in `crate::dispatch`.
//!
//! Each finding carries a stable rule id (`discovery.*`). Three rules restate a schema
//! failure (`no-supported-transports`, `no-grpc`, `no-legacy-profile`) and a few restate a
//! schema bound (`required-field`, `mrtr-max-rounds`, `refresh-window-range`,
//! `invalid-date`): the validator returns them beside the `schema` finding (interop.md
//! requires such a document to fail the schema itself), and `openwop validate` reports the
//! rule's alone, whose sentence says what to change where the schema's only says what it
//! expected (`validate/src/report.rs`, `RESTATE_SCHEMA`). Every rule tolerates a document
//! the schema rejects (wrong types are skipped, never a panic).

use serde_json::{Map, Value};

use super::{Finding, Options};
use crate::dispatch::MCP_FEATURES;

/// The longest refresh window a host may declare, and the default when it declares none.
pub(super) const MAX_REFRESH_WINDOW_DAYS: i64 = 90;
/// How many days after today (UTC) a `refreshedAt` may be: a date written in a timezone
/// east of UTC is a day ahead of UTC for part of the day.
const REFRESHED_AT_SLACK_DAYS: i64 = 1;
/// `mcp.mrtr.maxRounds` bounds (interop.md, "The MCP round ceiling").
const MRTR_MIN_ROUNDS: i64 = 1;
const MRTR_MAX_ROUNDS: i64 = 16;
/// The members the capabilities schema requires at the root, with what each one holds.
const ROOT_REQUIRED: &[(&str, &str)] = &[
    ("protocolVersions", "the OpenWOP versions this host serves, e.g. [\"2.0\"]"),
    ("preferredVersion", "the version served when a request carries no OpenWOP-Version"),
];
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
    // The root's own required members are the schema's bound too, restated here so that a
    // run with the `schema` rule off still fails a document that is not one (`{}`, a
    // string); the CLI reports this finding in place of the schema's.
    let Some(root) = doc.as_object() else {
        push(
            &mut out,
            String::new(),
            "discovery.required-field",
            "the discovery document must be a JSON object with `protocolVersions` and `preferredVersion`".into(),
        );
        return out;
    };
    for (key, what) in ROOT_REQUIRED {
        if !root.contains_key(*key) {
            push(&mut out, format!("/{key}"), "discovery.required-field", format!("add `{key}` to the document ({what})"));
        }
    }
    let today = today(opts);
    let [supported_transports, grpc, a2a, mcp, agents, host_events, auth] =
        fields(root, ["supportedTransports", "grpc", "a2a", "mcp", "agents", "hostEvents", "auth"]);
    check_root_versions(root, &mut out);

    if supported_transports.is_some() {
        push(
            &mut out,
            "/supportedTransports".into(),
            "discovery.no-supported-transports",
            "remove `supportedTransports`: REST is the only wire, and A2A and MCP are advertised by their own `a2a` and `mcp` facets".into(),
        );
    }
    if grpc.is_some() {
        push(
            &mut out,
            "/grpc".into(),
            "discovery.no-grpc",
            "remove the `grpc` block: gRPC is not part of the core wire and a host must not advertise it".into(),
        );
    }

    for (facet, record) in [(&A2A, a2a), (&MCP, mcp)] {
        if let Some(record) = record.and_then(Value::as_object) {
            check_facet(facet, record, today, &mut out);
        }
    }
    if let Some(auth) = auth.and_then(Value::as_object) {
        check_auth_lanes(auth, &mut out);
    }
    if let Some(mcp) = mcp.and_then(Value::as_object) {
        check_mcp_features(mcp, &mut out);
        check_mrtr(mcp, &mut out);
    }
    if let Some(a2a) = a2a.and_then(Value::as_object) {
        check_agent_cards(a2a, agents, &mut out);
    }
    check_negotiation_event(a2a.is_some(), mcp.is_some(), host_events, &mut out);
    out
}

/// The values of `keys` in `record`, read in one pass over its entries. The rules run on
/// every document validated and read most keys of a record, several of them more than once
/// before: one scan of a small object reads each key once and hashes none (serde_json's
/// ordered map hashes every key it is asked for with SipHash; issue #17, validation
/// throughput).
fn fields<'a, const N: usize>(record: &'a Map<String, Value>, keys: [&str; N]) -> [Option<&'a Value>; N] {
    let mut found = [None; N];
    for (key, value) in record {
        if let Some(i) = keys.iter().position(|k| *k == key.as_str()) {
            found[i] = Some(value);
        }
    }
    found
}

/// `record[key]` by a scan of its entries: the rules' records hold a handful of members,
/// and `Map::get` hashes the key with SipHash before it looks (issue #29: a twentieth of an
/// invalid document's instructions went to hashing).
fn member<'a>(record: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    record.iter().find_map(|(k, v)| (k == key).then_some(v))
}

/// [`member`] of a value that may not be an object.
fn value_member<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    member(value.as_object()?, key)
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
/// An iterator, not a collection: the rules run on every document validated, and a document
/// without findings should cost no allocation (issue #17, validation throughput).
pub(super) fn strings<'a>(record: &'a Map<String, Value>, key: &str) -> impl Iterator<Item = (usize, &'a str)> {
    items(member(record, key))
}

/// The strings of an array value, with their indexes (nothing when it is not an array).
fn items(value: Option<&Value>) -> impl Iterator<Item = (usize, &str)> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, v)| v.as_str().map(|s| (i, s)))
}

/// The root's `preferredVersion` and `protocolVersion` are versions the host serves: the
/// capabilities schema's descriptions say "one of protocolVersions" and "the version of this
/// representation", which a schema cannot state. Values that are not `M.m` are the schema's.
fn check_root_versions(root: &Map<String, Value>, out: &mut Vec<Finding>) {
    let [offered, preferred, current] = fields(root, ["protocolVersions", "preferredVersion", "protocolVersion"]);
    if offered.and_then(Value::as_array).is_none() {
        return;
    }
    let parse = |raw: &str| parse_version(VersionGrammar::MajorMinor, raw);
    let parsed = Versions::read(VersionGrammar::MajorMinor, offered);
    let is_offered = |v: (i64, i64)| parsed.has(v);
    let listed = || items(offered).map(|(_, o)| format!("\"{o}\"")).collect::<Vec<_>>().join(", ");
    for (key, value, rule, what) in [
        ("preferredVersion", preferred, "discovery.preferred-protocol-version-offered", "the version served when a request carries no OpenWOP-Version"),
        ("protocolVersion", current, "discovery.protocol-version-offered", "the version this document is written in"),
    ] {
        let Some(raw) = value.and_then(Value::as_str) else { continue };
        if let Some(v) = parse(raw)
            && !is_offered(v)
        {
            push(
                out,
                format!("/{key}"),
                rule,
                format!("`{key}` \"{raw}\" is not one of `protocolVersions` [{}]: it is {what}, so the host must serve it; choose one of them or add it there", listed()),
            );
        }
    }
}

/// Lanes whose revocation takes effect on the very next request (auth facet, `revocation`).
const NEXT_REQUEST_LANES: &[&str] = &["api-key", "session"];

/// The auth facet's prose rules: api-key and session lanes revoke on the next request, and
/// `revocationWindowSeconds` belongs to `exp-only` lanes. Wrong types are the schema's.
fn check_auth_lanes(auth: &Map<String, Value>, out: &mut Vec<Finding>) {
    let lanes = member(auth, "lanes").and_then(Value::as_array).into_iter().flatten();
    for (i, lane) in lanes.enumerate() {
        let Some(lane) = lane.as_object() else { continue };
        let [name, revocation, window] = fields(lane, ["lane", "revocation", "revocationWindowSeconds"]);
        let (name, revocation) = (name.and_then(Value::as_str), revocation.and_then(Value::as_str));
        if let (Some(name), Some(revocation)) = (name, revocation)
            && NEXT_REQUEST_LANES.contains(&name)
            && revocation != "next-request"
        {
            push(
                out,
                format!("/auth/lanes/{i}/revocation"),
                "discovery.auth-lane-revocation",
                format!("set `revocation` to \"next-request\" on the {name} lane (it is \"{revocation}\"): a revoked {name} credential must be refused on the very next request"),
            );
        }
        if let (Some(_), Some(revocation)) = (window, revocation)
            && revocation != "exp-only"
        {
            push(
                out,
                format!("/auth/lanes/{i}/revocationWindowSeconds"),
                "discovery.auth-revocation-window",
                format!("remove `revocationWindowSeconds` or set `revocation` to \"exp-only\": the window is the longest token lifetime an exp-only lane accepts and means nothing with \"{revocation}\""),
            );
        }
    }
}

fn check_facet(facet: &Facet, record: &Map<String, Value>, today: i64, out: &mut Vec<Finding>) {
    let at = |key: &str| format!("/{}/{}", facet.name, token(key));
    let [offered_value, preferred_value, floor_value, refreshed_at, window, profiles] =
        fields(record, [facet.offered, "preferredVersion", facet.floor, "refreshedAt", "refreshWindowDays", "profiles"]);

    for (key, value) in [(facet.offered, offered_value), ("preferredVersion", preferred_value), (facet.floor, floor_value), ("refreshedAt", refreshed_at)] {
        if value.is_none() {
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

    // A malformed offered version is reported here and counts as not offered below. Each
    // offered version is parsed once: the preferred version, the floor and every profile are
    // looked up in them (issue #29: re-parsing the list per lookup was a tenth of the time
    // spent on an invalid document).
    let parsed = Versions::read(facet.grammar, offered_value);
    for (i, raw) in items(offered_value) {
        if !parsed.parses(i) {
            bad_version(facet, &format!("{}/{i}", at(facet.offered)), raw, out);
        }
    }
    let offered_list = || items(offered_value).filter(|(i, _)| parsed.parses(*i)).map(|(_, raw)| format!("\"{raw}\"")).collect::<Vec<_>>().join(", ");
    let is_offered = |v: (i64, i64)| parsed.has(v);
    let have_offered = offered_value.and_then(Value::as_array).is_some();

    let preferred = version_field(facet, preferred_value, "preferredVersion", &at, out);
    if let Some((raw, v)) = preferred
        && have_offered
        && !is_offered(v)
    {
        push(
            out,
            at("preferredVersion"),
            "discovery.preferred-version-offered",
            format!("`preferredVersion` \"{raw}\" is not one of the offered {} [{}]; choose one of them or add it to `{}`", facet.offered, offered_list(), facet.offered),
        );
    }

    let floor = version_field(facet, floor_value, facet.floor, &at, out);
    if let Some((raw, v)) = floor {
        if have_offered && !is_offered(v) {
            push(
                out,
                at(facet.floor),
                "discovery.minimum-version-offered",
                format!("`{}` \"{raw}\" is not one of the offered {} [{}]; set it to the lowest version you offer", facet.floor, facet.offered, offered_list()),
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

    for (i, profile) in items(profiles) {
        let pointer = || format!("{}/{i}", at("profiles"));
        if profile.ends_with("-legacy") {
            push(
                out,
                pointer(),
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
                pointer(),
                "discovery.profile-version-offered",
                format!("the profile \"{profile}\" names {version}, which `{}` does not offer; add \"{version}\" to `{}` or drop the profile", facet.offered, facet.offered),
            );
        }
    }

    check_refresh(facet, window, refreshed_at, today, &at, out);
}

/// Reads a single version field, reporting one that does not parse.
fn version_field<'a>(
    facet: &Facet,
    value: Option<&'a Value>,
    key: &str,
    at: &dyn Fn(&str) -> String,
    out: &mut Vec<Finding>,
) -> Option<(&'a str, (i64, i64))> {
    let raw = value?.as_str()?;
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

/// The versions of an offered list, each parsed once, by the list's index: `None` where an
/// item is not a string or does not parse. Collected only when the list has an item; a
/// facet's list is a handful of entries.
struct Versions(Vec<Option<(i64, i64)>>);

impl Versions {
    fn read(grammar: VersionGrammar, list: Option<&Value>) -> Versions {
        let list = list.and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        Versions(list.iter().map(|v| parse_version(grammar, v.as_str()?)).collect())
    }

    fn has(&self, version: (i64, i64)) -> bool {
        self.0.contains(&Some(version))
    }

    fn parses(&self, index: usize) -> bool {
        matches!(self.0.get(index), Some(Some(_)))
    }
}

fn parse_version(grammar: VersionGrammar, raw: &str) -> Option<(i64, i64)> {
    match grammar {
        VersionGrammar::MajorMinor => {
            let dot = raw.bytes().position(|b| b == b'.')?;
            Some((parse_digits(&raw[..dot])?, parse_digits(&raw[dot + 1..])?))
        }
        VersionGrammar::Date => parse_date(raw).map(|day| (day, 0)),
    }
}

/// One to nine ASCII digits as a number (no sign, no spaces): accumulated by hand, as
/// `str::parse` checks again what was checked here.
fn parse_digits(raw: &str) -> Option<i64> {
    if raw.is_empty() || raw.len() > 9 {
        return None;
    }
    raw.bytes()
        .try_fold(0i64, |n, b| b.is_ascii_digit().then(|| n * 10 + i64::from(b - b'0')))
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
    window_value: Option<&Value>,
    refreshed_at: Option<&Value>,
    today: i64,
    at: &dyn Fn(&str) -> String,
    out: &mut Vec<Finding>,
) {
    let mut window = MAX_REFRESH_WINDOW_DAYS;
    if let Some(raw) = window_value {
        match raw.as_i64() {
            Some(days) if (1..=MAX_REFRESH_WINDOW_DAYS).contains(&days) => window = days,
            _ => {
                let sentence = match zero_fraction(raw) {
                    Some(days) if (1..=MAX_REFRESH_WINDOW_DAYS).contains(&days) => {
                        window = days;
                        format!("write `refreshWindowDays` as {days}, not {raw}: {INTEGER_READERS}")
                    }
                    _ => format!("`refreshWindowDays` is {raw}; it must be a whole number of days from 1 to {MAX_REFRESH_WINDOW_DAYS} (leave it out for {MAX_REFRESH_WINDOW_DAYS})"),
                };
                push(out, at("refreshWindowDays"), "discovery.refresh-window-range", sentence);
            }
        }
    }
    let Some(raw) = refreshed_at.and_then(Value::as_str) else {
        return;
    };
    let Some(refreshed) = parse_date(raw) else {
        invalid_date(&at("refreshedAt"), raw, out);
        return;
    };
    // One day of slack: a team east of UTC that writes its own today is a day ahead of UTC
    // for part of the day, and must not fail CI for it.
    if refreshed > today + REFRESHED_AT_SLACK_DAYS {
        push(
            out,
            at("refreshedAt"),
            "discovery.refreshed-in-future",
            format!("`refreshedAt` {raw} is more than a day after today (UTC); set it to the date you last checked the {} against upstream", facet.offered),
        );
    } else if today - refreshed > window {
        push(
            out,
            at("refreshedAt"),
            "discovery.refresh-overdue",
            // The sentence depends on the document alone, not on today's date, so a CI
            // baseline that recorded it still knows it tomorrow.
            format!(
                "`refreshedAt` {raw} is older than the {window}-day refresh window allows; re-check the {} against upstream and update `refreshedAt`",
                facet.offered
            ),
        );
    }
}

/// A number written with a fraction part of zero (`90.0`), as the integer it is. JSON
/// Schema's `integer` accepts it; the rules do not, saying why ([`INTEGER_READERS`]).
fn zero_fraction(value: &Value) -> Option<i64> {
    if value.is_i64() || value.is_u64() {
        return None;
    }
    let n = value.as_f64()?;
    // Beyond i64 no day count or round ceiling is in range anyway: the cast saturates.
    (n.fract() == 0.0).then_some(n as i64)
}

/// Why `90.0` is refused where the schema's `integer` accepts it.
const INTEGER_READERS: &str = "readers that map the member to an integer type (the openwop-sdk crate's models, serde's u64, Go's int) refuse a number written with a fraction part";

fn check_mcp_features(mcp: &Map<String, Value>, out: &mut Vec<Finding>) {
    let [features_value, profiles, server_mount] = fields(mcp, ["features", "profiles", "serverMount"]);
    let features = || items(features_value).map(|(_, f)| f);
    let features_at = if features_value.is_some() { "/mcp/features" } else { "/mcp" };
    for (i, feature) in items(features_value) {
        // A string that is not shaped like a feature id is the schema's to report.
        let shaped = feature.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
            && feature.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if shaped && !MCP_FEATURES.iter().any(|f| f.id == feature) {
            let known = || MCP_FEATURES.iter().map(|f| format!("\"{}\"", f.id)).collect::<Vec<_>>().join(", ");
            push(
                out,
                format!("/mcp/features/{i}"),
                "discovery.mcp-feature-known",
                format!("remove the feature \"{feature}\": `mcp.features` lists ids of the interop map's MCP feature rows [{}], and a client cannot rely on any other", known()),
            );
        }
    }
    for (_, profile) in items(profiles) {
        // The table itself rather than `mcp_required_features`, which collects into a Vec.
        let required_features = MCP_FEATURES.iter().filter(|f| f.required_for.contains(&profile)).map(|f| f.id);
        for required in required_features {
            if !features().any(|f| f == required) {
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
    // listed") is only visible in server/discover, not in this document. The index counts
    // the string entries only (a non-string entry is the schema's to report).
    if let Some(i) = features().position(|f| f == EXTENSIONS_FEATURE)
        && server_mount.is_none()
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
    let Some(mrtr) = member(mcp, "mrtr").and_then(Value::as_object) else {
        return;
    };
    let sentence = match member(mrtr, "maxRounds") {
        None => format!("add `maxRounds` to `mcp.mrtr`: the ceiling on input rounds, from {MRTR_MIN_ROUNDS} to {MRTR_MAX_ROUNDS}"),
        Some(v) => match (v.as_i64(), zero_fraction(v)) {
            (Some(n), _) if (MRTR_MIN_ROUNDS..=MRTR_MAX_ROUNDS).contains(&n) => return,
            (_, Some(n)) if (MRTR_MIN_ROUNDS..=MRTR_MAX_ROUNDS).contains(&n) => {
                format!("write `mcp.mrtr.maxRounds` as {n}, not {v}: {INTEGER_READERS}")
            }
            _ => format!("`mcp.mrtr.maxRounds` is {v}; set a whole number from {MRTR_MIN_ROUNDS} to {MRTR_MAX_ROUNDS}"),
        },
    };
    push(out, "/mcp/mrtr/maxRounds".into(), "discovery.mrtr-max-rounds", sentence);
}

/// `agents` is the root's `agents` value.
fn check_agent_cards(a2a: &Map<String, Value>, agents: Option<&Value>, out: &mut Vec<Finding>) {
    // `agentCards` is `true` or absent; any other value is the schema's to report.
    if member(a2a, "agentCards") != Some(&Value::Bool(true)) {
        return;
    }
    if !strings(a2a, "profiles").any(|(_, p)| p == A2A_1_0_PROFILE) {
        push(
            out,
            "/a2a/agentCards".into(),
            "discovery.agent-cards-need-a2a-profile",
            format!("`a2a.agentCards` needs the \"{A2A_1_0_PROFILE}\" profile; add it to `a2a.profiles` or drop `agentCards`"),
        );
    }
    let runtime = agents
        .and_then(Value::as_object)
        .and_then(|agents| member(agents, "manifestRuntime"));
    if matches!(runtime, None | Some(Value::Null | Value::Bool(false))) {
        push(
            out,
            "/a2a/agentCards".into(),
            "discovery.agent-cards-need-manifest-runtime",
            "`a2a.agentCards` publishes the agent inventory, which needs `agents.manifestRuntime`; advertise it or drop `agentCards`".into(),
        );
    }
}

/// `host_events` is the root's `hostEvents` value; `a2a` and `mcp` say whether the root has
/// those keys.
fn check_negotiation_event(a2a: bool, mcp: bool, host_events: Option<&Value>, out: &mut Vec<Finding>) {
    let speaks = match (a2a, mcp) {
        (false, false) => return,
        (true, false) => "a2a",
        (false, true) => "mcp",
        (true, true) => "a2a and mcp",
    };
    let rule = "discovery.negotiation-event-advertised";
    // The sentences are written only when a finding is pushed (no allocation otherwise).
    let because = || format!("a host advertising {speaks} records every version negotiation as a durable host event");
    let wanted = || format!("{{\"type\": \"{NEGOTIATION_EVENT}\", \"delivery\": \"durable\"}}");
    let Some(host_events) = host_events.and_then(Value::as_object) else {
        push(out, "/hostEvents".into(), rule, format!("add `hostEvents` with `types` listing {}: {}", wanted(), because()));
        return;
    };
    let types = member(host_events, "types").and_then(Value::as_array);
    let entry = types.into_iter().flatten().enumerate().find(|(_, t)| {
        value_member(t, "type").and_then(Value::as_str) == Some(NEGOTIATION_EVENT)
    });
    match entry {
        None => push(
            out,
            "/hostEvents/types".into(),
            rule,
            format!("add {} to `hostEvents.types`: {}", wanted(), because()),
        ),
        Some((i, t)) if value_member(t, "delivery").and_then(Value::as_str) != Some("durable") => push(
            out,
            format!("/hostEvents/types/{i}/delivery"),
            rule,
            format!("set the delivery of \"{NEGOTIATION_EVENT}\" to \"durable\": {}", because()),
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
    fn a_document_that_is_not_one_is_a_required_field_finding() {
        let opts = Options { today: Some((2026, 12, 1)) };
        let rules = |doc: Value| check(&doc, &opts).into_iter().map(|f| (f.pointer, f.rule)).collect::<Vec<_>>();
        let root = vec![(String::new(), "discovery.required-field".to_owned())];
        assert_eq!(rules(Value::Array(vec![])), root);
        assert_eq!(rules(Value::String("a2a".into())), root);
        assert_eq!(
            rules(Value::Object(Map::new())),
            [("/protocolVersions".to_owned(), "discovery.required-field".to_owned()), ("/preferredVersion".to_owned(), "discovery.required-field".to_owned())]
        );
    }
}
