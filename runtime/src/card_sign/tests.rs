use std::collections::BTreeMap;

use super::*;

fn signer() -> CardSigner {
    CardSigner::from_pkcs8(&CardSigner::mint()).expect("a minted key loads")
}

fn card() -> Value {
    json!({
        "name": "openwop", "description": "host", "version": "0.1.0",
        "supportedInterfaces": [{"url": "https://h.example/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": true, "pushNotifications": false},
        "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
        "defaultInputModes": ["application/json"], "defaultOutputModes": ["application/json"],
        "skills": [{"id": "echo", "name": "Echo", "description": "Echoes — back", "tags": ["workflow"]}]
    })
}

const JKU: &str = "https://h.example/.well-known/jwks.json";

fn sets(s: &CardSigner) -> BTreeMap<String, Value> {
    BTreeMap::from([(JKU.to_owned(), s.jwks())])
}

#[test]
fn the_canonical_form_drops_unset_fields_and_signatures_then_follows_rfc_8785() {
    let v = json!({"z": 1, "a": [1.0, "\u{20ac}", ""], "e": false, "n": null, "o": {"p": [], "q": {}},
                   "signatures": [{"protected": "x", "signature": "y"}]});
    assert_eq!(
        String::from_utf8(canonical(&v).unwrap()).unwrap(),
        "{\"a\":[1,\"\u{20ac}\"],\"e\":false,\"z\":1}"
    );
    assert_eq!(
        String::from_utf8(canonical_plain(&v).unwrap()).unwrap(),
        "{\"a\":[1,\"\u{20ac}\",\"\"],\"e\":false,\"n\":null,\"o\":{\"p\":[],\"q\":{}},\"z\":1}"
    );
}

#[test]
fn a_signed_card_verifies_with_the_published_key_set() {
    let s = signer();
    let mut c = card();
    s.sign(&mut c, JKU).unwrap();
    let sig = &c["signatures"][0];
    let (header, _) = header_of(sig, 0).unwrap();
    assert_eq!(header.alg, "EdDSA");
    assert_eq!(header.kid.as_deref(), Some(s.kid()));
    assert_eq!(header.jku.as_deref(), Some(JKU));
    assert_eq!(
        peer::check(&c, &sets(&s)).unwrap().as_deref(),
        Some(s.kid())
    );
    // Signing is deterministic (Ed25519), so the card's strong ETag stays meaningful.
    let mut again = card();
    s.sign(&mut again, JKU).unwrap();
    assert_eq!(c, again);
    // Re-signing replaces, never stacks.
    s.sign(&mut c, JKU).unwrap();
    assert_eq!(c["signatures"].as_array().unwrap().len(), 1);
}

#[test]
fn a_tampered_card_is_refused() {
    let s = signer();
    let mut c = card();
    s.sign(&mut c, JKU).unwrap();
    let tampers: [fn(&mut Value); 3] = [
        |c: &mut Value| c["skills"][0]["name"] = json!("Evil"),
        |c: &mut Value| c["supportedInterfaces"][0]["url"] = json!("https://evil.example/a2a"),
        |c: &mut Value| c["capabilities"]["pushNotifications"] = json!(true),
    ];
    for tamper in tampers {
        let mut t = c.clone();
        tamper(&mut t);
        let e = peer::check(&t, &sets(&s)).expect_err("tampered");
        assert!(e.contains("does not verify"), "{e}");
    }
    // A key set without the signing key refuses too.
    let other = signer();
    assert!(peer::check(&c, &sets(&other)).is_err());
}

#[test]
fn unsigned_cards_pass_and_unacceptable_headers_are_refused() {
    assert_eq!(peer::check(&card(), &BTreeMap::new()), Ok(None));
    let s = signer();
    let mut c = card();
    s.sign(&mut c, JKU).unwrap();
    // `alg: none` / HS256 with the same signature bytes: refused, never "verified".
    for alg in ["none", "HS256"] {
        let mut t = c.clone();
        let header = json!({"alg": alg, "kid": s.kid(), "jku": JKU});
        t["signatures"][0]["protected"] = json!(B64.encode(header.to_string()));
        assert!(peer::check(&t, &sets(&s)).is_err(), "{alg}");
    }
    // A key set on another origin than the card's is refused before anything is fetched.
    let e = peer::key_sets_to_fetch(&c, "https://other.example/.well-known/agent-card.json")
        .expect_err("foreign jku");
    assert!(e.contains("origin"), "{e}");
    assert_eq!(
        peer::key_sets_to_fetch(&c, "https://h.example/.well-known/agent-card.json").unwrap(),
        vec![JKU.to_owned()]
    );
}

#[test]
fn an_es256_signature_with_an_embedded_jwk_verifies() {
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
    let rng = SystemRandom::new();
    let der = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der.as_ref()).unwrap();
    let point = key.public_key().as_ref();
    let jwk = json!({"kty": "EC", "crv": "P-256", "x": B64.encode(&point[1..33]), "y": B64.encode(&point[33..65])});
    let mut c = card();
    let protected = B64.encode(json!({"alg": "ES256", "jwk": jwk}).to_string());
    let input = format!("{protected}.{}", B64.encode(canonical(&c).unwrap()));
    let sig = key.sign(&rng, input.as_bytes()).unwrap();
    c["signatures"] = json!([{"protected": protected, "signature": B64.encode(sig.as_ref())}]);
    assert_eq!(peer::check(&c, &BTreeMap::new()), Ok(Some(String::new())));
    c["name"] = json!("changed");
    assert!(peer::check(&c, &BTreeMap::new()).is_err());
}

#[test]
fn an_operator_key_loads_from_pem_and_previous_keys_are_published_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("card-key.pem");
    let der = CardSigner::mint();
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        base64::engine::general_purpose::STANDARD.encode(&der)
    );
    std::fs::write(&path, pem).unwrap();
    let s = CardSigner::from_pem_file(&path).unwrap();
    assert_eq!(s.kid(), CardSigner::from_pkcs8(&der).unwrap().kid());
    let old = signer().public_jwk().clone();
    let s = s.with_also_published(vec![old.clone()]).unwrap();
    assert_eq!(s.jwks()["keys"][1], old);
    let mut private = old;
    private["d"] = json!("secret");
    assert!(signer().with_also_published(vec![private]).is_err());
    std::fs::write(&path, "not a key").unwrap();
    assert!(CardSigner::from_pem_file(&path).is_err());
}
