//! interop.md "The refresh SLA", live: the advertisement is re-evaluated against the
//! upstream version registry the host has (built in, or the operator's file or URL), on
//! a clock the tests move; discovery's `refreshedAt`, its strong ETag, `/readyz` and
//! `/metrics` follow.

mod support;

use std::sync::Arc;
use std::time::Duration;

use openwop::clock::{Clock, date_of_day, parse_date};
use openwop::host::HostConfig;
use openwop::upstream::{Sla, SlaConfig, Source};
use serde_json::{Value, json};

/// A host with the clock and SLA handles the tests drive.
struct Served {
    base: String,
    sla: Arc<Sla>,
    clock: Clock,
    _host: support::TestHost,
}

async fn build(adjust: impl FnOnce(&mut HostConfig)) -> Result<Served, String> {
    let mut clock = None;
    let host = support::host()
        .with(|c| {
            adjust(c);
            clock = Some(c.clock.clone());
        })
        .try_start()
        .await?;
    Ok(Served {
        base: host.base.clone(),
        sla: host.sla.clone(),
        clock: clock.expect("the configured clock"),
        _host: host,
    })
}

impl Served {
    async fn get(&self, path: &str) -> (reqwest::header::HeaderMap, String) {
        let r = reqwest::get(format!("{}{path}", self.base)).await.unwrap();
        let headers = r.headers().clone();
        (headers, r.text().await.unwrap())
    }

    /// The discovery document and its ETag.
    async fn discovery(&self) -> (Value, String) {
        let (h, body) = self.get("/.well-known/openwop").await;
        let etag = h["etag"].to_str().unwrap().to_owned();
        (serde_json::from_str(&body).unwrap(), etag)
    }

    async fn readyz(&self) -> Value {
        serde_json::from_str(&self.get("/readyz").await.1).unwrap()
    }

    /// Sets the clock to `day` and runs one scheduled round.
    async fn at(&self, day: i64) {
        self.clock.set_day(day);
        self.sla.tick().await;
    }
}

fn built_in_checked(protocol: &str) -> i64 {
    parse_date(&openwop::upstream::built_in_checked_at(protocol)).unwrap()
}

fn registry(a2a_checked: i64, mcp_checked: i64, mcp_retired: Option<(&str, i64)>) -> String {
    let mut mcp_versions = vec![
        json!({"version": "2025-11-25"}),
        json!({"version": "2026-07-28"}),
    ];
    if let Some((v, day)) = mcp_retired {
        for entry in &mut mcp_versions {
            if entry["version"] == v {
                entry["retired"] = json!(date_of_day(day));
            }
        }
    }
    json!({"protocols": {
        "a2a": {"source": "https://a2a.example/spec", "checkedAt": date_of_day(a2a_checked), "versions": [{"version": "1.0"}]},
        "mcp": {"source": "https://mcp.example/spec", "checkedAt": date_of_day(mcp_checked), "versions": mcp_versions},
    }})
    .to_string()
}

/// With only the built-in registry, `refreshedAt` is the registry's check date whatever
/// day it is; the host says so weeks before the window ends and once it has.
#[tokio::test]
async fn refresh_sla_built_in_registry_dates_the_advertisement_and_warns_before_the_window_ends() {
    let h = build(|_| {}).await.expect("host");
    let a2a_checked = built_in_checked("a2a");
    // The day of the newer check (the suite may run on any date).
    h.at(a2a_checked.max(built_in_checked("mcp"))).await;
    let (doc, etag) = h.discovery().await;
    assert_eq!(doc["a2a"]["refreshedAt"], json!(date_of_day(a2a_checked)));
    assert_eq!(
        doc["mcp"]["refreshedAt"],
        json!(date_of_day(built_in_checked("mcp")))
    );
    let ready = h.readyz().await;
    assert_eq!(ready["interop"]["status"], "ok", "{ready}");
    // 65 days after the check: fewer than 30 days left, loudly.
    h.at(a2a_checked + 65).await;
    let ready = h.readyz().await;
    assert_eq!(
        ready["status"], "ready",
        "a date never takes the host out: {ready}"
    );
    assert_eq!(ready["interop"]["status"], "attention", "{ready}");
    let a2a = &ready["interop"]["protocols"][0];
    assert_eq!(a2a["protocol"], "a2a");
    assert_eq!(a2a["standing"], "expiring");
    assert_eq!(a2a["daysLeft"], 25);
    assert_eq!(a2a["windowEnds"], json!(date_of_day(a2a_checked + 90)));
    let metrics = h.get("/metrics").await.1;
    assert!(
        metrics.contains("openwop_interop_refresh_days_left{protocol=\"a2a\"} 25"),
        "{metrics}"
    );
    // The date did not change, so neither did the document or its ETag.
    assert_eq!(h.discovery().await.1, etag);
    // Past the window: overdue, still served, still honest.
    h.at(a2a_checked + 91).await;
    let ready = h.readyz().await;
    assert_eq!(ready["interop"]["protocols"][0]["standing"], "overdue");
    assert_eq!(
        h.discovery().await.0["a2a"]["refreshedAt"],
        json!(date_of_day(a2a_checked))
    );
}

/// An operator's registry, re-read on schedule: `refreshedAt` is the day of the
/// evaluation, a retired revision is withdrawn, and the ETag changes with the document.
#[tokio::test]
async fn refresh_sla_an_operator_registry_is_reread_and_a_retired_version_is_not_advertised() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("registry.json");
    let today = Clock::system().today();
    std::fs::write(&file, registry(today, today, None)).unwrap();
    let source = file.clone();
    let h = build(move |c| {
        c.upstream = SlaConfig {
            source: Some(Source::File(source)),
            ..SlaConfig::default()
        };
    })
    .await
    .expect("host");
    let (doc, first) = h.discovery().await;
    assert_eq!(doc["a2a"]["refreshedAt"], json!(date_of_day(today)));
    assert_eq!(doc["mcp"]["revisions"], json!(["2026-07-28", "2025-11-25"]));
    // Ten days on, upstream has retired 2025-11-25 (the floor) as of yesterday.
    h.clock.advance(Duration::from_secs(10 * 86_400));
    std::fs::write(
        &file,
        registry(today + 10, today + 10, Some(("2025-11-25", today + 9))),
    )
    .unwrap();
    h.sla.tick().await;
    let (doc, second) = h.discovery().await;
    assert_eq!(doc["mcp"]["revisions"], json!(["2026-07-28"]));
    assert_eq!(doc["mcp"]["minimumRevision"], "2026-07-28");
    assert_eq!(doc["a2a"]["refreshedAt"], json!(date_of_day(today + 10)));
    assert_ne!(first, second, "the strong ETag follows the advertisement");
    let findings = openwop::generated::validators::validate_discovery(
        &doc,
        &openwop::generated::validators::Options {
            today: Some(ymd(today + 10)),
        },
    );
    assert!(findings.is_empty(), "{findings:?}");
    let ready = h.readyz().await;
    assert_eq!(
        ready["interop"]["protocols"][1]["withdrawn"],
        json!(["2025-11-25"])
    );
    assert_eq!(ready["interop"]["restartDue"], json!(["mcp 2025-11-25"]));
    // A 304 for the old tag is no longer given.
    let r = reqwest::Client::new()
        .get(format!("{}/.well-known/openwop", h.base))
        .header("if-none-match", &first)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

fn ymd(day: i64) -> (i32, u32, u32) {
    let d = date_of_day(day);
    (
        d[0..4].parse().unwrap(),
        d[5..7].parse().unwrap(),
        d[8..10].parse().unwrap(),
    )
}

/// A re-read that fails keeps the last good registry, and says so on every channel.
#[tokio::test]
async fn refresh_sla_a_failed_reread_is_loud_and_keeps_the_last_good_registry() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("registry.json");
    let today = Clock::system().today();
    std::fs::write(&file, registry(today, today, None)).unwrap();
    let source = file.clone();
    let h = build(move |c| {
        c.upstream.source = Some(Source::File(source));
    })
    .await
    .expect("host");
    std::fs::write(
        &file,
        r#"{"protocols": {"a2a": {"checkedAt": "yesterday"}}}"#,
    )
    .unwrap();
    h.at(today + 3).await;
    let ready = h.readyz().await;
    assert_eq!(ready["interop"]["status"], "attention");
    assert_eq!(ready["interop"]["registry"]["readFailures"], 1);
    let error = ready["interop"]["registry"]["lastError"].as_str().unwrap();
    assert!(error.contains("upstream-versions.schema.json"), "{error}");
    let metrics = h.get("/metrics").await.1;
    assert!(metrics.contains("openwop_upstream_registry_read_failures_total 1"));
    assert!(metrics.contains("openwop_upstream_registry_read_ok 0"));
    // The last good registry still stands: re-evaluated today against it.
    assert_eq!(
        h.discovery().await.0["a2a"]["refreshedAt"],
        json!(date_of_day(today + 3))
    );
}

/// A configured registry the host cannot read stops it at start, with the reason; a URL
/// goes through the egress guard (loopback is refused unless opened for tests).
#[tokio::test]
async fn refresh_sla_an_unreadable_registry_is_a_start_error_and_urls_pass_the_egress_guard() {
    let e = build(|c| {
        c.upstream.source = Some(Source::File("/nonexistent/registry.json".into()));
    })
    .await
    .err()
    .expect("refused");
    assert!(e.contains("/nonexistent/registry.json"), "{e}");
    let e = build(|c| {
        c.upstream.source = Some(Source::Url("http://127.0.0.1:9/registry.json".into()));
    })
    .await
    .err()
    .expect("refused");
    assert!(e.contains("egress") || e.contains("loopback"), "{e}");
    let e = build(|c| c.upstream.every = Duration::from_secs(30 * 86_400))
        .await
        .err()
        .expect("a schedule beyond a week is refused");
    assert!(e.contains("RefreshHours"), "{e}");
}

/// The registry served over HTTP is fetched and used.
#[tokio::test]
async fn refresh_sla_a_registry_url_is_fetched() {
    let today = Clock::system().today();
    let body = registry(today, today, None);
    let app = axum::Router::new().route(
        "/registry.json",
        axum::routing::get(move || {
            let body = body.clone();
            async move { body }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/registry.json", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let h = build(move |c| {
        c.egress_allow_loopback = true;
        c.upstream.source = Some(Source::Url(url));
    })
    .await
    .expect("host");
    let ready = h.readyz().await;
    assert!(
        ready["interop"]["registry"]["lastReadAt"].is_string(),
        "{ready}"
    );
    assert_eq!(ready["interop"]["protocols"][0]["origin"], "operator");
}
