use super::*;

fn a2a(versions: &[&str], preferred: &str, floor: &str) -> Offer {
    Offer::new(Protocol::A2a, versions, preferred, floor).expect("valid offer")
}

#[test]
fn no_requested_version_gets_preferred_version() {
    let offer = a2a(&["1.0", "1.1"], "1.1", "1.0");
    for requested in [None, Some(""), Some("   ")] {
        let d = decide(Protocol::A2a, requested, false, &offer);
        assert_eq!(d.outcome, Outcome::Accepted);
        assert_eq!(d.version.as_deref(), Some("1.1"));
        assert_eq!(d.requested, None);
        assert_eq!(d.reason, Reason::Ok);
    }
}

#[test]
fn unauthenticated_exchange_never_lands_below_preferred_version() {
    let offer = a2a(&["1.0", "1.1"], "1.1", "1.0");
    let d = decide(Protocol::A2a, Some("1.0"), false, &offer);
    assert_eq!(d.outcome, Outcome::Refused);
    assert_eq!(d.version, None);
    assert_eq!(d.reason, Reason::Unauthenticated);
}

#[test]
fn authenticated_downgrade_between_floor_and_preferred_is_reported_as_downgraded() {
    let offer = a2a(&["1.0", "1.1", "1.2"], "1.1", "1.0");
    let d = decide(Protocol::A2a, Some("1.0"), true, &offer);
    assert_eq!(d.outcome, Outcome::Downgraded);
    assert_eq!(d.version.as_deref(), Some("1.0"));
    assert!(d.is_accepted());
    assert_eq!(
        d.payload("2026-12-02T18:00:00.000Z")["outcome"],
        "downgraded"
    );
    // Above preferredVersion is no downgrade.
    let d = decide(Protocol::A2a, Some("1.2"), true, &offer);
    assert_eq!(d.outcome, Outcome::Accepted);
}

#[test]
fn below_floor_fails_closed_even_when_authenticated() {
    // 0.3 is offered (a private legacy path) but sits below the floor: the floor wins.
    let offer = a2a(&["0.3", "1.0"], "1.0", "1.0");
    for authenticated in [false, true] {
        let d = decide(Protocol::A2a, Some("0.3"), authenticated, &offer);
        assert_eq!(d.outcome, Outcome::Refused);
        assert_eq!(d.reason, Reason::BelowFloor);
        assert_eq!(d.requested.as_deref(), Some("0.3"));
    }
}

#[test]
fn unoffered_or_malformed_versions_are_refused_as_unsupported() {
    let offer = a2a(&["1.0"], "1.0", "1.0");
    for asked in ["99.0", "1.5", "latest"] {
        let d = decide(Protocol::A2a, Some(asked), true, &offer);
        assert_eq!(
            (d.outcome, d.reason),
            (Outcome::Refused, Reason::Unsupported),
            "{asked}"
        );
    }
}

#[test]
fn a2a_patch_in_request_is_ignored() {
    let offer = a2a(&["1.0"], "1.0", "1.0");
    let d = decide(Protocol::A2a, Some("1.0.1"), false, &offer);
    assert_eq!(d.version.as_deref(), Some("1.0"));
    assert_eq!(d.requested.as_deref(), Some("1.0.1"));
}

#[test]
fn mcp_revisions_negotiate_as_dates() {
    let offer = Offer::new(
        Protocol::Mcp,
        &["2025-11-25", "2026-07-28"],
        "2026-07-28",
        "2025-11-25",
    )
    .expect("offer");
    assert!(decide(Protocol::Mcp, Some("2025-11-25"), true, &offer).is_accepted());
    let below = decide(Protocol::Mcp, Some("2025-06-18"), true, &offer);
    assert_eq!(below.reason, Reason::BelowFloor);
    let unauth = decide(Protocol::Mcp, Some("2025-11-25"), false, &offer);
    assert_eq!(unauth.reason, Reason::Unauthenticated);
}

#[test]
fn offers_read_from_facets_and_reject_inconsistent_ones() {
    let facet = serde_json::json!({"versions": ["1.0"], "preferredVersion": "1.0", "minimumVersion": "1.0", "refreshedAt": "2026-11-01"});
    let offer = Offer::from_facet(Protocol::A2a, &facet).expect("offer");
    assert_eq!(offer.served(), vec!["1.0"]);
    let mcp = serde_json::json!({"revisions": ["2026-07-28"], "preferredVersion": "2026-07-28", "minimumRevision": "2026-07-28"});
    assert!(Offer::from_facet(Protocol::Mcp, &mcp).is_ok());
    assert!(matches!(
        Offer::from_facet(Protocol::A2a, &mcp),
        Err(OfferError::Missing { .. })
    ));
    assert!(matches!(
        Offer::new(Protocol::A2a, &["1.0"], "1.1", "1.0"),
        Err(OfferError::PreferredNotOffered(_))
    ));
    assert!(matches!(
        Offer::new(Protocol::A2a, &["1.0", "1.1"], "1.0", "1.1"),
        Err(OfferError::FloorAbovePreferred { .. })
    ));
}

#[test]
fn served_versions_put_preferred_first_and_skip_those_below_floor() {
    let offer = a2a(&["0.3", "1.0", "1.1", "1.2"], "1.1", "1.0");
    assert_eq!(offer.served(), vec!["1.1", "1.2", "1.0"]);
    assert_eq!(offer.supported_versions_joined(), "1.1,1.2,1.0");
    assert_eq!(offer.offered(), vec!["1.1", "1.2", "1.0", "0.3"]);
}

#[test]
fn peer_is_a_keyed_digest_never_the_identity_nor_its_plain_hash() {
    use sha2::Digest;
    let offer = a2a(&["1.0"], "1.0", "1.0");
    let key = PeerKey::new(b"host secret of this store".to_vec());
    let d = decide(Protocol::A2a, None, true, &offer).with_peer(key.origin("https://peer.example"));
    let digest = d.peer.clone().expect("digest");
    assert_eq!(digest.len(), 64);
    assert!(
        digest
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    let payload = d.payload("2026-12-02T18:00:00.000Z");
    assert_eq!(payload["peer"], digest.as_str());
    assert!(!payload.to_string().contains("peer.example"));
    // Whoever guesses the origin cannot confirm it from the log without the key.
    let plain = hex::encode(sha2::Sha256::digest(b"https://peer.example"));
    assert_ne!(digest, plain);
    // Same key, same peer: same digest (every replica of one store agrees); another key or
    // another peer differs, and a subject never digests like an origin.
    assert_eq!(digest, key.origin("https://peer.example"));
    assert_ne!(
        digest,
        PeerKey::new(b"another".to_vec()).origin("https://peer.example")
    );
    assert_ne!(digest, key.origin("https://other.example"));
    assert_ne!(key.subject("iss", "sub"), key.origin("iss#sub"));
}

#[test]
fn requested_value_is_bounded_and_printable() {
    let offer = a2a(&["1.0"], "1.0", "1.0");
    let long = format!("1.0{}", "x\u{7}".repeat(100));
    let d = decide(Protocol::A2a, Some(&long), true, &offer);
    let kept = d.requested.expect("kept");
    assert!(kept.len() <= 32 && kept.chars().all(|c| c.is_ascii_graphic()));
}

/// Every payload we build must satisfy `$defs/negotiationDecided` of our corpus: closed
/// object, required keys, enums and the digest pattern. Checked against the schema file
/// itself so a corpus change breaks this test rather than the wire.
#[test]
fn negotiation_decided_payload_matches_the_corpus_schema() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../schemas/v2/run-event-payloads.schema.json"
    );
    let text = std::fs::read_to_string(path).expect("corpus schema");
    let schema: Value = serde_json::from_str(&text).expect("schema json");
    let def = &schema["$defs"]["negotiationDecided"];
    let props = def["properties"].as_object().expect("properties");
    assert_eq!(def["additionalProperties"], Value::Bool(false));

    let offer = a2a(&["0.3", "1.0", "1.1"], "1.1", "1.0");
    let cases = [
        decide(Protocol::A2a, None, false, &offer),
        decide(Protocol::A2a, Some("1.0"), true, &offer)
            .with_peer(PeerKey::new(vec![1]).origin("o")),
        decide(Protocol::A2a, Some("1.0"), false, &offer),
        decide(Protocol::A2a, Some("0.3"), true, &offer),
        decide(Protocol::A2a, Some("nope"), true, &offer),
    ];
    for d in cases {
        let payload = d.payload("2026-12-02T18:00:00.000Z");
        let obj = payload.as_object().expect("object");
        for required in def["required"].as_array().expect("required") {
            assert!(
                obj.contains_key(required.as_str().expect("str")),
                "missing {required}"
            );
        }
        for (key, value) in obj {
            let prop = props
                .get(key)
                .unwrap_or_else(|| panic!("{key} is not in the schema"));
            if let Some(allowed) = prop.get("enum").and_then(Value::as_array) {
                assert!(allowed.contains(value), "{key}={value} not in {allowed:?}");
            }
            if prop.get("minLength").is_some() && !value.is_null() {
                assert!(!value.as_str().expect("string").is_empty());
            }
        }
        if let Some(digest) = obj.get("peer").and_then(Value::as_str) {
            assert!(
                digest.len() == 64
                    && digest
                        .bytes()
                        .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            );
        }
        assert_eq!(
            !obj["negotiated"].is_null(),
            d.is_accepted(),
            "negotiated is a version iff one was decided, else null"
        );
    }
}
