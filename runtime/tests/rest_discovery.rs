//! Discovery, the OpenWOP-Version rules and the generic error surfaces.

mod support;
use serde_json::Value;
use support::rest::*;
use support::*;

#[tokio::test(flavor = "multi_thread")]
async fn discovery_is_unauthenticated_closed_v2_root() {
    let h = start().await;
    let r = h
        .http
        .get(format!("{}/.well-known/openwop", h.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["openwop-version"], "2.0");
    let etag = r.headers()["etag"].to_str().unwrap().to_owned();
    assert!(etag.starts_with('"'), "strong ETag: {etag}");
    let doc: Value = r.json().await.unwrap();
    assert_eq!(doc["protocolVersions"], serde_json::json!(["2.0"]));
    assert_eq!(doc["preferredVersion"], "2.0");
    assert_eq!(doc["eventLogSchemaVersion"], 3);
    for family in [
        "auth",
        "interrupt",
        "runList",
        "hostEvents",
        "eventLog",
        "idempotency",
    ] {
        for k in ["status", "since", "witness"] {
            assert!(doc[family][k].is_string(), "{family}.{k}");
        }
    }
    assert!(
        doc["hostEvents"]["types"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["type"] == "negotiation.decided" && t["delivery"] == "durable")
    );
    let findings = openwop_generated::validators::validate_discovery(&doc, &Default::default());
    assert!(findings.is_empty(), "{findings:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn discovery_if_none_match_gives_304_with_version_header() {
    let h = start().await;
    let url = format!("{}/.well-known/openwop", h.base);
    let etag = h.http.get(&url).send().await.unwrap().headers()["etag"].clone();
    let r = h
        .http
        .get(&url)
        .header("if-none-match", etag.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 304);
    assert_eq!(r.headers()["openwop-version"], "2.0");
    assert_eq!(r.headers()["etag"], etag);
    let r = h
        .http
        .get(&url)
        .header("if-none-match", "\"other\"")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn version_header_accepts_major_2_forms() {
    let h = start().await;
    for v in ["2", "2.0", "2.x"] {
        let r = h
            .get("/runs", KEY_A)
            .header("openwop-version", v)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{v}");
        assert_eq!(r.headers()["openwop-version"], "2.0");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn version_header_unlisted_major_is_406_protocol_version_unsupported() {
    let h = start().await;
    for v in ["1", "1.11", "3.0", "banana"] {
        let r = h
            .http
            .get(format!("{}/.well-known/openwop", h.base))
            .header("openwop-version", v)
            .send()
            .await
            .unwrap();
        let (status, body) = envelope(r).await;
        assert_eq!(status, 406, "{v}");
        assert_eq!(body["error"], "protocol_version_unsupported");
        assert_eq!(
            body["details"]["protocolVersions"],
            serde_json::json!(["2.0"])
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_route_is_404_envelope() {
    let h = start().await;
    let (status, body) = envelope(h.get("/nope", KEY_A).send().await.unwrap()).await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (404, "not_found")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn wrong_method_is_405_envelope() {
    let h = start().await;
    let r = h
        .http
        .delete(format!("{}/runs", h.base))
        .bearer_auth(KEY_A)
        .send()
        .await
        .unwrap();
    let (status, body) = envelope(r).await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (405, "method_not_allowed")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_or_unknown_key_is_401_with_bearer_challenge() {
    let h = start().await;
    let r = h.http.get(format!("{}/runs", h.base)).send().await.unwrap();
    assert_eq!(r.headers()["www-authenticate"], "Bearer");
    let (status, body) = envelope(r).await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (401, "unauthenticated")
    );
    let r = h.get("/runs", "not-a-key-at-all-000").send().await.unwrap();
    assert_eq!(r.headers()["www-authenticate"], "Bearer");
    assert_eq!(envelope(r).await.0, 401);
}

#[tokio::test(flavor = "multi_thread")]
async fn oversized_body_is_413_payload_too_large() {
    let h = start().await;
    let big = "x".repeat(openwop::edge::rest::BODY_LIMIT + 10);
    let r = h
        .post(
            "/runs",
            KEY_A,
            serde_json::json!({"workflowId": "echo", "inputs": {"big": big}}),
        )
        .send()
        .await
        .unwrap();
    let (status, body) = envelope(r).await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (413, "payload_too_large")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_json_and_wrong_media_type_are_client_errors() {
    let h = start().await;
    let r = h
        .http
        .post(format!("{}/runs", h.base))
        .bearer_auth(KEY_A)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    let (status, body) = envelope(r).await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (400, "validation_error")
    );
    let r = h
        .http
        .post(format!("{}/runs", h.base))
        .bearer_auth(KEY_A)
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    let (status, body) = envelope(r).await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (415, "unsupported_media_type")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn undecodable_query_string_is_400_envelope() {
    let h = start().await;
    let (status, body) = envelope(h.get("/runs?limit=%ZZ", KEY_A).send().await.unwrap()).await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (400, "validation_error")
    );
}
