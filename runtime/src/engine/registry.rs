//! The workflows a host can run: the bundled examples plus a directory of definitions.

use super::definition::{self, Definition, DefinitionError};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

const BUNDLED: &[(&str, &str)] = &[
    ("echo.json", include_str!("../../workflows/echo.json")),
    ("slow.yaml", include_str!("../../workflows/slow.yaml")),
    (
        "approval.yaml",
        include_str!("../../workflows/approval.yaml"),
    ),
    ("clarify.yaml", include_str!("../../workflows/clarify.yaml")),
    (
        "credential.yaml",
        include_str!("../../workflows/credential.yaml"),
    ),
    (
        "external.yaml",
        include_str!("../../workflows/external.yaml"),
    ),
    ("fail.yaml", include_str!("../../workflows/fail.yaml")),
];

/// A definition with its compiled input schema.
pub struct Workflow {
    pub definition: Definition,
    /// The nodes as the steps a run walks (`repeat` blocks flattened).
    pub program: Vec<definition::Instr>,
    /// The definition document as loaded, as JSON.
    pub document: Value,
    input_validator: jsonschema::Validator,
}

/// One input problem, for `details` of a `validation_error`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct InputProblem {
    pub pointer: String,
    pub message: String,
}

impl Workflow {
    fn new(definition: Definition, document: Value) -> Result<Self, DefinitionError> {
        let input_validator = jsonschema::validator_for(&Value::Object(
            definition.input_schema.clone(),
        ))
        .map_err(|e| DefinitionError::Invalid {
            source_name: definition.id.to_string(),
            message: format!("inputSchema: {e}"),
        })?;
        Ok(Self {
            program: definition::compile(&definition.nodes),
            definition,
            document,
            input_validator,
        })
    }

    /// Checks `inputs` against the input schema.
    pub fn check_inputs(&self, inputs: &Value) -> Vec<InputProblem> {
        self.input_validator
            .iter_errors(inputs)
            .map(|e| InputProblem {
                pointer: e.instance_path().to_string(),
                message: e.to_string(),
            })
            .collect()
    }
}

/// Errors loading `--workflows DIR`.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("cannot read workflows from {path}: {message}")]
    Io { path: String, message: String },
    #[error(transparent)]
    Definition(#[from] DefinitionError),
}

/// Workflows by id.
#[derive(Clone, Default)]
pub struct Registry {
    workflows: BTreeMap<String, Arc<Workflow>>,
}

impl Registry {
    /// The bundled examples.
    pub fn bundled() -> Result<Self, RegistryError> {
        let mut reg = Registry::default();
        for (name, text) in BUNDLED {
            reg.insert(definition::parse_document(name, text)?)?;
        }
        Ok(reg)
    }

    /// Adds embedded definitions (`(file name, text)`), replacing any with the same id.
    /// Idempotent: seeding the same files again leaves the registry as it was.
    pub fn seed(&mut self, files: &[(&str, &str)]) -> Result<(), RegistryError> {
        for (name, text) in files {
            self.insert(definition::parse_document(name, text)?)?;
        }
        Ok(())
    }

    fn insert(&mut self, (def, document): (Definition, Value)) -> Result<(), RegistryError> {
        let wf = Workflow::new(def, document)?;
        self.workflows
            .insert(wf.definition.id.to_string(), Arc::new(wf));
        Ok(())
    }

    /// Adds every `*.json`, `*.yaml` and `*.yml` file of `dir`; an id already present is
    /// replaced, so a directory can override a bundled example.
    pub fn load_dir(&mut self, dir: &Path) -> Result<(), RegistryError> {
        let files = crate::definition_files::read(dir).map_err(|u| RegistryError::Io {
            path: u.path,
            message: u.message,
        })?;
        for (path, text) in files {
            self.insert(definition::parse_document(&path, &text)?)?;
        }
        Ok(())
    }

    pub fn get(&self, id: &str) -> Option<Arc<Workflow>> {
        self.workflows.get(id).cloned()
    }

    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.workflows.keys().map(String::as_str)
    }

    /// Every peer a workflow names that `peers` does not have (with that kind), as
    /// start-up errors: a workflow must not find out at run time that its peer is missing.
    pub fn unknown_peers(&self, peers: &crate::peers::Peers) -> Vec<String> {
        let mut out = Vec::new();
        for wf in self.workflows.values() {
            for node in definition::all_nodes(&wf.definition.nodes) {
                if let Some((peer, kind)) = definition::peer_of(node)
                    && !peers.has(peer, kind)
                {
                    out.push(format!(
                        "workflow `{}` node `{}` calls {} peer `{peer}`, which `peers` does not configure",
                        wf.definition.id,
                        definition::node_id(node),
                        kind.as_str()
                    ));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bundled_examples_load_and_check_inputs() {
        let reg = Registry::bundled().unwrap();
        for id in ["echo", "slow", "approval", "clarify", "credential", "fail"] {
            assert!(reg.get(id).is_some(), "{id} missing");
        }
        let slow = reg.get("slow").unwrap();
        assert!(slow.check_inputs(&json!({"ms": 5})).is_empty());
        assert!(!slow.check_inputs(&json!({"ms": "soon"})).is_empty());
        assert!(
            !reg.get("echo")
                .unwrap()
                .check_inputs(&json!([1]))
                .is_empty()
        );
    }

    #[test]
    fn duplicate_node_ids_are_refused() {
        let text = r#"{"id":"d","inputSchema":{},"nodes":[{"id":"a","kind":"fail","code":"x.y","message":"m"},{"id":"a","kind":"fail","code":"x.y","message":"m"}]}"#;
        assert!(definition::parse("d.json", text).is_err());
    }
}
