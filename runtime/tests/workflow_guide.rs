//! The worked example of runtime/WORKFLOWS.md behaves as the guide says: a rejected
//! draft is asked about again, an accepted one completes with the number of rounds, and
//! three rejections fail the run with the workflow's vendor code.

mod support;

use serde_json::{Value, json};
use support::rest::Rest as _;
use support::{KEY_A, TestHost};

async fn host() -> TestHost {
    support::rest::start_with(|c| {
        c.workflows_dir = Some(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/workflows").into());
    })
    .await
}

async fn answer(h: &TestHost, run: &str, action: &str) {
    let path = format!("/runs/{}/interrupts/decide", openwop::ids::project(run));
    let r = h
        .post(&path, KEY_A, json!({"resumeValue": {"action": action}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{action}: {}", r.text().await.unwrap());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rejected_draft_is_asked_again_and_an_accepted_one_completes() {
    let h = host().await;
    let run = h
        .create(KEY_A, "review", json!({"title": "Q4 plan", "urgent": true}))
        .await;
    h.wait_status(KEY_A, &run, "waiting-approval").await;
    answer(&h, &run, "reject").await;
    h.wait_status(KEY_A, &run, "waiting-approval").await;
    answer(&h, &run, "accept").await;
    let done: Value = h.wait_status(KEY_A, &run, "completed").await;
    assert_eq!(
        done["outputs"],
        json!({"title": "Q4 plan", "verdict": {"action": "accept"}, "rounds": 2}),
        "{done}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn three_rejections_fail_the_run_with_the_vendor_code() {
    let h = host().await;
    let run = h.create(KEY_A, "review", json!({"title": "Q5"})).await;
    for _ in 0..3 {
        h.wait_status(KEY_A, &run, "waiting-approval").await;
        answer(&h, &run, "reject").await;
    }
    let failed = h.wait_status(KEY_A, &run, "failed").await;
    assert_eq!(failed["error"]["code"], "example.rejected", "{failed}");
    assert_eq!(
        failed["error"]["message"], "Q5 was rejected three times",
        "{failed}"
    );
}
