//! The bundled workflows are valid against our corpus schema for workflow definitions,
//! and the schema refuses what the loader refuses.

use serde_json::Value;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// The workflow-definition schema with its `ids.schema.json` references inlined, so it
/// compiles without a registry.
fn schema() -> jsonschema::Validator {
    let read = |p: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(format!("{ROOT}/{p}")).unwrap()).unwrap()
    };
    let ids = read("schemas/v2/ids.schema.json");
    fn inline(v: &mut Value, ids: &Value) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref")
                    && let Some(name) = r.strip_prefix("ids.schema.json#/$defs/")
                {
                    *v = ids["$defs"][name].clone();
                    return;
                }
                m.values_mut().for_each(|x| inline(x, ids));
            }
            Value::Array(a) => a.iter_mut().for_each(|x| inline(x, ids)),
            _ => {}
        }
    }
    let mut s = read("schemas/v2/workflow-definition.schema.json");
    inline(&mut s, &ids);
    jsonschema::validator_for(&s).expect("schema compiles")
}

fn load(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    if path.extension().is_some_and(|e| e == "json") {
        serde_json::from_str(&text).unwrap()
    } else {
        yaml_serde::from_str(&text).unwrap()
    }
}

#[test]
fn bundled_workflows_match_the_workflow_definition_schema() {
    let v = schema();
    let mut n = 0;
    // The bundled examples and, one level down, conformance mode's fixtures.
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(format!("{ROOT}/runtime/workflows")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            for inner in std::fs::read_dir(&path).unwrap() {
                paths.push(inner.unwrap().path());
            }
        } else {
            paths.push(path);
        }
    }
    for path in paths {
        let doc = load(&path);
        let errors: Vec<String> = v
            .iter_errors(&doc)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", path.display());
        n += 1;
    }
    assert!(n >= 6);
}

#[test]
fn the_mcp_conformance_fixture_pack_matches_the_schema_and_loads() {
    let v = schema();
    let mut n = 0;
    for entry in std::fs::read_dir(format!("{ROOT}/tests/fixtures/mcp-conformance")).unwrap() {
        let path = entry.unwrap().path();
        if !path.extension().is_some_and(|e| e == "json" || e == "yaml") {
            continue;
        }
        let doc = load(&path);
        let errors: Vec<String> = v
            .iter_errors(&doc)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", path.display());
        let text = std::fs::read_to_string(&path).unwrap();
        openwop::engine::definition::parse(&path.display().to_string(), &text).unwrap();
        n += 1;
    }
    assert!(n >= 10);
}

#[test]
fn schema_refuses_unknown_fields_and_kinds() {
    let v = schema();
    let bad = [
        serde_json::json!({"id": "x", "inputSchema": {}, "nodes": [], "extra": 1}),
        serde_json::json!({"id": "x", "inputSchema": {}, "nodes": [{"id": "a", "kind": "eval", "code": "1+1"}]}),
        serde_json::json!({"id": "x", "inputSchema": {}, "nodes": [{"id": "a", "kind": "wait", "ms": -1}]}),
        serde_json::json!({"id": "x", "inputSchema": {}, "nodes": [{"id": "a", "kind": "wait", "ms": 5, "also": 1}]}),
        serde_json::json!({"id": "bad id", "inputSchema": {}, "nodes": []}),
        serde_json::json!({"id": "x", "inputSchema": {}, "nodes": [{"id": "a", "kind": "wait"}]}),
        serde_json::json!({"id": "x", "inputSchema": {}, "nodes": [{"id": "a", "kind": "wait", "ms": 5, "seconds": 1}]}),
        serde_json::json!({"id": "x", "inputSchema": {}, "nodes": [{"id": "a", "kind": "wait", "seconds": "soon"}]}),
    ];
    for doc in bad {
        assert!(!v.is_valid(&doc), "{doc}");
        // The loader refuses the same documents.
        assert!(
            openwop::engine::definition::parse("t.json", &doc.to_string()).is_err(),
            "{doc}"
        );
    }
}

/// The example runtime/WORKFLOWS.md walks through is a valid definition the loader takes.
#[test]
fn the_authoring_guides_example_matches_the_schema_and_loads() {
    let v = schema();
    let path = std::path::PathBuf::from(format!("{ROOT}/runtime/examples/workflows/review.yaml"));
    let doc = load(&path);
    let errors: Vec<String> = v
        .iter_errors(&doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{}: {errors:?}", path.display());
    let text = std::fs::read_to_string(&path).unwrap();
    openwop::engine::definition::parse(&path.display().to_string(), &text).unwrap();
}
