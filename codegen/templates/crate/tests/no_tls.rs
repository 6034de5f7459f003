//! A build without a TLS feature (`default-features = false, features = ["client"]`):
//! reqwest would refuse every https request as a transport error, which reads as worth
//! retrying, so `build()` refuses an https base URL up front, saying which feature to
//! enable. Compiled only without `rustls` and `native-tls`; `.ci/run` runs it so.
#![cfg(not(any(feature = "rustls", feature = "native-tls")))]

use openwop_sdk::client::{Client, Error};

#[test]
fn an_https_base_url_without_tls_is_refused_at_build_saying_which_feature() {
    let err = match Client::builder("https://host.invalid").build() {
        Ok(_) => panic!("an https client was built without TLS"),
        Err(e) => e,
    };
    let Error::InvalidRequest(message) = &err else {
        panic!("not InvalidRequest: {err:?}");
    };
    assert!(message.contains("has no TLS"), "{message}");
    assert!(message.contains("`rustls`"), "{message}");
}

#[test]
fn an_http_base_url_builds_without_tls() {
    assert!(Client::builder("http://127.0.0.1:1").build().is_ok());
}
