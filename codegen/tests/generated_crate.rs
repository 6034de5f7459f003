//! The committed `generated/` crate behaves as the corpus says.

use std::fs;
use std::path::Path;
use std::str::FromStr;

use openwop_generated::dispatch::{
    RunStatus, a2a_operations, a2a_task_state, mcp_required_features, mcp_task_status,
};
use openwop_generated::errors::{A2aError, ErrorCode};
use openwop_generated::validators::{self, Options};
use serde_json::json;

#[test]
fn error_codes_round_trip() {
    for code in ErrorCode::ALL {
        assert_eq!(ErrorCode::from_str(code.as_str()), Ok(*code));
        let wire = serde_json::to_value(code).expect("serialize");
        assert_eq!(wire, json!(code.as_str()));
        assert_eq!(
            serde_json::from_value::<ErrorCode>(wire).expect("deserialize"),
            *code
        );
    }
    assert_eq!(ErrorCode::NotFound.http_status(), 404);
    assert!(ErrorCode::from_str("acme.custom").is_err());
}

#[test]
fn a2a_errors_and_projections() {
    let row = A2aError::TaskNotFound.row();
    assert_eq!(row.jsonrpc_code, -32001);
    assert_eq!(row.client_projection, Some(ErrorCode::NotFound));
    assert_eq!(
        A2aError::from_name("TaskNotFoundError"),
        Some(A2aError::TaskNotFound)
    );
    assert_eq!(
        A2aError::from_name("(invalid parameters)").or(Some(A2aError::InvalidParams)),
        Some(A2aError::InvalidParams)
    );
}

#[test]
fn task_states_prefer_the_override_row() {
    assert_eq!(
        a2a_task_state(RunStatus::WaitingInput, None).wire,
        "TASK_STATE_INPUT_REQUIRED"
    );
    assert_eq!(
        a2a_task_state(RunStatus::WaitingInput, Some("credential")).wire,
        "TASK_STATE_AUTH_REQUIRED"
    );
    assert_eq!(
        a2a_task_state(RunStatus::WaitingInput, Some("approval")).wire,
        "TASK_STATE_INPUT_REQUIRED"
    );
    for status in RunStatus::ALL {
        assert_eq!(a2a_task_state(*status, None).run_status, *status);
        assert!(!mcp_task_status(*status).is_empty());
    }
}

#[test]
fn dispatch_tables() {
    assert!(a2a_operations("SendMessage").count() > 1);
    assert!(a2a_operations("SubscribeToTask").all(|op| op.requires.contains(&"a2a.streaming")));
    assert!(mcp_required_features("mcp-2026-07-28").contains(&"mrtr"));
}

/// The method enums cover every row of the map and lead back to their rows.
#[test]
fn method_enums_cover_the_map() {
    use openwop_generated::dispatch::{A2A_OPERATIONS, A2aMethod, MCP_METHODS, McpMethod};
    for row in A2A_OPERATIONS {
        let m = A2aMethod::from_method(row.method)
            .unwrap_or_else(|| panic!("{} has no variant", row.method));
        assert_eq!(m.as_str(), row.method);
        assert!(m.rows().any(|r| std::ptr::eq(r, row)));
        assert_eq!(m.row().method, row.method);
        assert_eq!(m.rows().count(), a2a_operations(row.method).count());
    }
    assert!(A2aMethod::ALL.contains(&A2aMethod::SendMessage));
    assert_eq!(A2aMethod::from_method("NoSuchMethod"), None);
    for row in MCP_METHODS {
        let m: McpMethod = row.method.parse().expect("every MCP row has a variant");
        assert_eq!((m.as_str(), m.row().method), (row.method, row.method));
        assert_eq!(m.to_string(), row.method);
    }
    assert_eq!(
        McpMethod::from_method("tools/call"),
        Some(McpMethod::ToolsCall)
    );
    assert!("ping".parse::<McpMethod>().is_err());
    // Exhaustive dispatch compiles: a new map method is a compile error here, not a 404.
    let served = |m: McpMethod| match m {
        McpMethod::ServerDiscover
        | McpMethod::ToolsList
        | McpMethod::ToolsCall
        | McpMethod::NotificationsCancelled
        | McpMethod::SubscriptionsListen
        | McpMethod::Initialize
        | McpMethod::TasksGet
        | McpMethod::TasksUpdate
        | McpMethod::TasksCancel
        | McpMethod::NotificationsTasks => true,
    };
    assert!(McpMethod::ALL.iter().all(|m| served(*m)));
}

fn vectors(kind: &str, validity: &str) -> Vec<(String, serde_json::Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/vectors")
        .join(kind)
        .join(validity);
    let Ok(entries) = fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "json") {
            let text = fs::read_to_string(&path).expect("read vector");
            let value = serde_json::from_str(&text).expect("vector is JSON");
            out.push((path.display().to_string(), value));
        }
    }
    out
}

#[test]
fn the_schema_rejects_a_document_the_rules_do_not_look_at() {
    let findings = validators::validate_error_envelope(&json!({"error": 7}));
    assert!(findings.iter().any(|f| f.rule == "schema"), "{findings:?}");
    assert!(
        findings.iter().all(|f| f.rule != "schema.compile"),
        "{findings:?}"
    );
}

#[test]
fn every_validator_compiles() {
    let empty = json!({});
    let all = [
        validators::validate_discovery(&empty, &Options::default()),
        validators::validate_run_snapshot(&empty),
        validators::validate_run_event(&empty),
        validators::validate_host_event(&empty),
        validators::validate_error_envelope(&empty),
    ];
    for findings in all {
        assert!(
            findings.iter().all(|f| f.rule != "schema.compile"),
            "{findings:?}"
        );
        assert!(!findings.is_empty());
    }
}

#[test]
fn discovery_vectors() {
    let opts = Options {
        today: Some((2026, 12, 1)),
    };
    for (name, doc) in vectors("discovery", "valid") {
        let findings = validators::validate_discovery(&doc, &opts);
        assert!(findings.is_empty(), "{name}: {findings:?}");
    }
    for (name, doc) in vectors("discovery", "invalid") {
        assert!(
            !validators::validate_discovery(&doc, &opts).is_empty(),
            "{name} passed"
        );
    }
}

/// The projection must never make a model reject a document the schema accepts.
#[test]
fn valid_discovery_documents_deserialize_into_the_model() {
    for (name, doc) in vectors("discovery", "valid") {
        if let Err(e) =
            serde_json::from_value::<openwop_generated::models::Capabilities>(doc.clone())
        {
            panic!("{name}: {e}");
        }
    }
}

/// Answers are validated against the schema the OpenAPI document gives the operation and
/// status (exact code, then its range, then `default`); the standalone document resolves.
#[test]
fn answers_validate_against_the_openapi_document() {
    use openwop_generated::validators::validate_response;
    use serde_json::json;
    let doc: serde_json::Value =
        serde_json::from_str(openwop_generated::schemas::OPENAPI).expect("OpenAPI is JSON");
    assert_eq!(doc["openapi"].as_str().map(|v| &v[..2]), Some("3."));
    assert!(
        !openwop_generated::schemas::OPENAPI.contains("../../schemas/"),
        "relative file references are rewritten to the files' URIs"
    );
    let created = json!({
        "runId": "acme/r-0123456789abcdef0123456789abcdef",
        "status": "pending",
        "eventsUrl": "/runs/acme~2Fr-0123456789abcdef0123456789abcdef/events",
        "statusUrl": "/runs/acme~2Fr-0123456789abcdef0123456789abcdef",
    });
    assert_eq!(validate_response("createRun", 201, &created), vec![]);
    let mut wrong = created.clone();
    wrong["status"] = json!("sleeping");
    assert!(
        validate_response("createRun", 201, &wrong)
            .iter()
            .any(|f| f.pointer == "/status"),
        "a wrong status is found at its pointer"
    );
    let envelope = json!({"error": "not_found", "message": "no run"});
    assert_eq!(validate_response("getRun", 404, &envelope), vec![]);
    assert!(!validate_response("getRun", 404, &json!({"oops": 1})).is_empty());
    for (findings, rule) in [
        (
            validate_response("getRun", 304, &json!({})),
            "response.undocumented",
        ),
        (
            validate_response("noSuchOperation", 200, &json!({})),
            "response.unknown-operation",
        ),
    ] {
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].rule, rule);
    }
}
