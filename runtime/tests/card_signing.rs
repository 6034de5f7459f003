//! Signed agent cards (A2A 1.0 `signatures[]`): the host signs every card it serves with
//! the key it minted (or the operator's) and publishes the key at its `jku`; its A2A
//! client verifies a peer's signed card and refuses one that does not verify.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use openwop::card_sign::{CardSigner, peer};
use openwop::peers::{CredentialSource, PeerFileConfig, PeerKind};
use serde_json::{Value, json};
use support::a2a::*;
use support::{KEY_A, KEY_B, TestHost};

async fn get_json(url: &str) -> (reqwest::header::HeaderMap, Value) {
    let r = reqwest::get(url).await.expect("get");
    let headers = r.headers().clone();
    (headers, r.json().await.expect("json"))
}

/// The key sets a card names, fetched as our client would.
async fn key_sets(card: &Value, card_url: &str) -> BTreeMap<String, Value> {
    let mut sets = BTreeMap::new();
    for jku in peer::key_sets_to_fetch(card, card_url).expect("same-origin jku") {
        let (_, set) = get_json(&jku).await;
        sets.insert(jku, set);
    }
    sets
}

async fn extended(host: &TestHost, tenant: Option<&str>) -> Value {
    let mut params = json!({});
    if let Some(t) = tenant {
        params["tenant"] = json!(t);
    }
    let r: Value = host
        .http
        .post(format!("{}/a2a/jsonrpc", host.base))
        .bearer_auth(KEY_A)
        .header("A2A-Version", "1.0")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard", "params": params}),
        )
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    r["result"].clone()
}

/// interop.md / A2A 1.0 "Agent Card Signing": the public card, the caller's extended
/// card and an agent's card are each signed, and verify with the key at their `jku`.
#[tokio::test]
async fn signed_cards_every_served_card_verifies_with_the_published_key() {
    let dir = tempfile::tempdir().unwrap();
    let h = start_configured(dir.path().to_path_buf(), 0, |_| {}).await;
    let card_url = format!("{}/.well-known/agent-card.json", h.base);
    let (headers, card) = get_json(&card_url).await;
    let sig = &card["signatures"][0];
    assert!(
        sig["protected"].is_string() && sig["signature"].is_string(),
        "{card}"
    );
    let sets = key_sets(&card, &card_url).await;
    assert_eq!(
        sets.keys().next().map(String::as_str),
        Some(format!("{}/.well-known/jwks.json", h.base).as_str())
    );
    let kid = peer::check(&card, &sets)
        .expect("verifies")
        .expect("signed");
    assert_eq!(sets.values().next().unwrap()["keys"][0]["kid"], json!(kid));
    // Deterministic: the same card is the same bytes, so the strong ETag holds.
    let (again, _) = get_json(&card_url).await;
    assert_eq!(headers["etag"], again["etag"]);
    // The caller's extended card and an agent's card (reached with its R).
    let own = extended(&h, None).await;
    assert_eq!(peer::check(&own, &sets), Ok(Some(kid.clone())));
    let agents: Value = h
        .http
        .get(format!("{}/agents", h.base))
        .bearer_auth(KEY_A)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let r = agents["agents"][0]["a2aTenant"].as_str().expect("an agent");
    let agent = extended(&h, Some(r)).await;
    assert_eq!(agent["supportedInterfaces"][0]["tenant"], json!(r));
    assert_eq!(peer::check(&agent, &sets), Ok(Some(kid.clone())));
    // The key survives a restart on the same store: peers keep trusting it.
    drop(h);
    let h = start_configured(dir.path().to_path_buf(), 0, |_| {}).await;
    let card_url = format!("{}/.well-known/agent-card.json", h.base);
    let (_, card) = get_json(&card_url).await;
    let sets = key_sets(&card, &card_url).await;
    assert_eq!(peer::check(&card, &sets), Ok(Some(kid)));
}

/// A stand-in for a remote agent: serves `card` (a card of host B, re-signed here with
/// this server's own key and `jku`, then changed by `tamper`) and its key set; the
/// interfaces still point at B, so a card that is accepted leads to a working call.
async fn fake_peer(b: &TestHost, tamper: fn(&mut Value)) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let (_, mut card) = get_json(&format!("{}/.well-known/agent-card.json", b.base)).await;
    let signer = CardSigner::from_pkcs8(&CardSigner::mint()).unwrap();
    signer
        .sign(&mut card, &format!("{origin}/.well-known/jwks.json"))
        .unwrap();
    tamper(&mut card);
    let (card, jwks) = (Arc::new(card), Arc::new(signer.jwks()));
    let app = axum::Router::new()
        .route(
            "/.well-known/agent-card.json",
            axum::routing::get(move || {
                let card = card.clone();
                async move { axum::Json((*card).clone()) }
            }),
        )
        .route(
            "/.well-known/jwks.json",
            axum::routing::get(move || {
                let jwks = jwks.clone();
                async move { axum::Json((*jwks).clone()) }
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    origin
}

const DELEGATE: &str = r#"
id: delegate
inputSchema: {type: object}
nodes:
  - id: ask
    kind: a2a
    peer: b
    parts: [{kind: data, data: {greeting: "hi"}}]
    metadata: {openwop: {skill: echo}}
outputs: {state: "${nodes.ask.state}"}
"#;

/// Host A calls the fake peer's card through an `a2a` node; returns the run's end.
async fn delegate_through(origin: String) -> Value {
    let config = tempfile::tempdir().unwrap();
    let workflows = config.path().join("workflows");
    std::fs::create_dir(&workflows).unwrap();
    std::fs::write(workflows.join("delegate.yaml"), DELEGATE).unwrap();
    let secret = config.path().join("b.key");
    std::fs::write(&secret, KEY_B).unwrap();
    let a_dir = tempfile::tempdir().unwrap();
    let a = start_configured(a_dir.path().to_path_buf(), 0, move |c| {
        c.workflows_dir = Some(workflows);
        c.egress_allow_loopback = true;
        c.peers = vec![PeerFileConfig {
            id: "b".into(),
            kind: PeerKind::A2a,
            url: origin,
            credential: Some(CredentialSource {
                env: None,
                file: Some(secret),
            }),
            tenants: None,
            timeout_secs: Some(30),
        }];
    })
    .await;
    let created: Value = a
        .http
        .post(format!("{}/runs", a.base))
        .bearer_auth(KEY_A)
        .json(&json!({"workflowId": "delegate", "inputs": {}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let run = created["runId"].as_str().expect("runId").to_owned();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (_, snap) = a.get_run(KEY_A, &run).await;
        if matches!(snap["status"].as_str(), Some("completed" | "failed")) {
            return snap;
        }
        assert!(tokio::time::Instant::now() < deadline, "{snap}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The client side: a peer's signed card that verifies is used; the same card changed
/// after signing is refused, and the run fails saying why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_cards_a_tampered_peer_card_is_refused_by_our_client() {
    let b_dir = tempfile::tempdir().unwrap();
    let b = start_configured(b_dir.path().to_path_buf(), 0, |_| {}).await;
    let honest = fake_peer(&b, |_| {}).await;
    let snap = delegate_through(honest).await;
    assert_eq!(snap["status"], "completed", "{snap}");
    let tampered = fake_peer(&b, |card| {
        card["description"] = json!("a description the signer never saw");
    })
    .await;
    let snap = delegate_through(tampered).await;
    assert_eq!(snap["status"], "failed", "{snap}");
    assert!(
        snap.to_string().contains("signature does not verify"),
        "{snap}"
    );
}
