//! Quickstart: runs `echo` and `approval` on an OpenWOP host and prints what happens.
//!
//! ```sh
//! OPENWOP_URL=http://127.0.0.1:8080 OPENWOP_API_KEY=owdev_… cargo run -p openwop-sdk --example quickstart
//! ```
//!
//! Exits 0 when both runs complete as expected, 1 on any failure (with the reason).
// openwop-codegen: requires operation getCapabilities
// openwop-codegen: requires operation createRun
// openwop-codegen: requires operation pollRunEvents
// openwop-codegen: requires operation listRuns
// openwop-codegen: requires model RunEventPayload
// openwop-codegen: requires model InterruptPayloadData

use openwop_sdk::client::{Client, Error, RaisedInterrupt};
use openwop_sdk::models::{InterruptPayloadData, RunEvent, RunEventPayload, RunStatus};
use serde_json::json;

type Failure = Box<dyn std::error::Error>;

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("quickstart failed: {e}");
        std::process::exit(1);
    }
    println!("quickstart: all good");
}

fn print_event(event: &RunEvent) {
    let node = event
        .node_id
        .as_deref()
        .map(|n| format!(" @{n}"))
        .unwrap_or_default();
    println!("  #{} {}{node}", event.sequence, event.type_);
}

async fn run() -> Result<(), Failure> {
    let base = std::env::var("OPENWOP_URL").unwrap_or_else(|_| "http://127.0.0.1:8080".to_owned());
    let key = std::env::var("OPENWOP_API_KEY")
        .map_err(|_| "set OPENWOP_API_KEY (openwop serve prints a dev key)")?;
    // Timeouts, retries (with one Idempotency-Key per createRun) and the version headers are
    // on by default; `Client::new(base).with_api_key(key)?` is the same client.
    let client = Client::builder(base).api_key(key).build()?;
    println!(
        "OpenWOP API {} through openwop-sdk {}",
        openwop_sdk::API_VERSION,
        openwop_sdk::SDK_VERSION
    );

    // Discovery needs no key; the ETag makes the next read cheap.
    let discovery = client.get_capabilities().send().await?;
    println!(
        "host prefers OpenWOP {}",
        discovery.preferred_version.as_str()
    );
    // A conditional read (`if_none_match`) may answer `NotModified`; a plain one cannot.
    if let Some(etag) = discovery.etag() {
        let again = client.get_capabilities().if_none_match(etag).send().await?;
        println!(
            "discovery again: not modified = {}",
            again.is_not_modified()
        );
    }

    // 1. echo: completes at once, its outputs are its inputs.
    let created = client
        .create_run()
        .workflow_id("echo")
        .inputs(json!({"hello": "world"}))
        .idempotency_key(format!("quickstart-echo-{}", std::process::id()))
        .send()
        .await?;
    println!(
        "echo run {} ({}), status at {:?}",
        created.run_id.as_str(),
        created.status,
        created.location()
    );
    let mut events = client.stream_run_events(&created.run_id).send().await?;
    while let Some(event) = events.next().await {
        let event = event?;
        print_event(&event);
        if let RunEventPayload::RunCompleted(done) = event.typed_payload()? {
            println!(
                "  outputs: {}",
                serde_json::Value::Object(done.outputs.clone())
            );
        }
    }
    // The same log, long-polled: every event decodes as the models type it.
    let page = client
        .poll_run_events(&created.run_id)
        .query_timeout(1)
        .send()
        .await?;
    println!(
        "  poll: {} events, terminal = {}",
        page.events.len(),
        page.is_terminal
    );
    let echo = client.run_snapshot(&created.run_id).await?;
    let hello = echo.outputs.as_ref().and_then(|o| o.get("hello"));
    if echo.status != RunStatus::Completed || hello != Some(&json!("world")) {
        return Err(format!("echo ended {} with outputs {:?}", echo.status, echo.outputs).into());
    }

    // 2. approval: suspends on an approval interrupt; we accept it and it completes.
    let created = client.create_run().workflow_id("approval").send().await?;
    println!("approval run {}", created.run_id.as_str());
    let mut answered = 0;
    let done = client
        .run_to_end(
            &created.run_id,
            |raised: &RaisedInterrupt| {
                if let Ok(InterruptPayloadData::Approval(approval)) = raised.payload.typed_data() {
                    println!(
                        "  approving \"{}\" at {}",
                        approval.title.as_str(),
                        raised.node_id
                    );
                }
                answered += 1;
                json!({"action": "accept"})
            },
            print_event,
        )
        .await?;
    // A snapshot's `outputs` is absent until the run completes (then `{}` at least).
    println!(
        "approval ended {} with outputs {}",
        done.status,
        serde_json::Value::Object(done.outputs.clone().unwrap_or_default())
    );
    if done.status != RunStatus::Completed || answered != 1 {
        return Err(format!("approval ended {} after {answered} answers", done.status).into());
    }

    // 3. Paging: every run of this tenant, page after page (`nextCursor` is followed).
    let mut runs = client.list_runs().limit(1).stream();
    let mut listed = 0;
    while let Some(run) = runs.next().await {
        let run = run?;
        listed += 1;
        println!("  listed {} {}", run.run_id.as_str(), run.status);
    }
    if listed < 2 {
        return Err(format!("listRuns paged through {listed} runs, expected at least 2").into());
    }

    // 4. Errors are typed, and read as the host wrote them.
    match client.get_run("dev/no-such-run-0123456789").send().await {
        Err(e @ Error::Api { .. }) => {
            println!("unknown run: {e}");
            if let Error::Api { status, code, .. } = &e {
                println!(
                    "  status {status}, code {code}, retryable {}",
                    e.is_retryable()
                );
            }
        }
        other => return Err(format!("an unknown run answered {other:?}").into()),
    }
    Ok(())
}
