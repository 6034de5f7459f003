//! `use openwop_sdk::{client::*, models::*}` compiles without a warning: no name is in both
//! (the webhook delivery schema is `models::WebhookRetryPolicy`, the client's policy
//! `client::RetryPolicy`). An ambiguous glob import is denied here, so a clash fails the
//! build of this test.
// openwop-codegen: requires model WebhookRetryPolicy
#![deny(ambiguous_glob_imports, warnings)]

use openwop_sdk::{client::*, models::*};

#[test]
fn client_and_model_globs_do_not_clash() {
    let policy = RetryPolicy::default().max_attempts(2);
    assert_eq!(policy.attempts(), 2);
    let webhook: Option<WebhookRetryPolicy> = None;
    assert!(webhook.is_none());
    let _ = Client::new("http://127.0.0.1:8080");
}
