//! Workflow definitions: the document shape (`schemas/v2/workflow-definition.schema.json`)
//! and the checks a schema cannot express (unique node ids, well-formed templates).

use serde::Deserialize;
use serde_json::Value;

/// A workflow definition as loaded from JSON or YAML.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Definition {
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// JSON Schema the run's `inputs` must satisfy.
    pub input_schema: Value,
    pub nodes: Vec<Node>,
    /// Template of the run's outputs; `{}` when absent.
    #[serde(default)]
    pub outputs: Option<Value>,
}

/// One step.
#[derive(Debug, Clone, Deserialize)]
#[serde(from = "RawNode")]
pub struct Node {
    pub id: String,
    pub action: Action,
}

/// What a node does.
#[derive(Debug, Clone)]
pub enum Action {
    /// Computes a value from a template; the value becomes `nodes.<id>`.
    Transform { value: Value },
    /// Waits `amount` times `unit_ms` milliseconds: a number or a `${...}` reference
    /// resolving to one.
    Wait { amount: Value, unit_ms: u64 },
    /// Ends the run as failed.
    Fail { code: String, message: String },
    /// Suspends until someone resolves the interrupt; the resume value becomes `nodes.<id>`.
    Interrupt { interrupt: InterruptSpec },
}

/// The document form of a node: closed per kind (serde cannot combine `flatten` with
/// `deny_unknown_fields`, so the id repeats in every variant).
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
enum RawNode {
    Transform {
        id: String,
        value: Value,
    },
    Wait {
        id: String,
        #[serde(default)]
        ms: Option<Value>,
        #[serde(default)]
        seconds: Option<Value>,
    },
    Fail {
        id: String,
        code: String,
        message: String,
    },
    Interrupt {
        id: String,
        interrupt: InterruptSpec,
    },
}

impl From<RawNode> for Node {
    fn from(raw: RawNode) -> Self {
        match raw {
            RawNode::Transform { id, value } => Node {
                id,
                action: Action::Transform { value },
            },
            // Both or neither is refused by `check` (the amount is then null).
            RawNode::Wait { id, ms, seconds } => {
                let (amount, unit_ms) = match (ms, seconds) {
                    (Some(ms), None) => (ms, 1),
                    (None, Some(s)) => (s, 1000),
                    _ => (Value::Null, 0),
                };
                Node {
                    id,
                    action: Action::Wait { amount, unit_ms },
                }
            }
            RawNode::Fail { id, code, message } => Node {
                id,
                action: Action::Fail { code, message },
            },
            RawNode::Interrupt { id, interrupt } => Node {
                id,
                action: Action::Interrupt { interrupt },
            },
        }
    }
}

/// The interrupt a node raises.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InterruptSpec {
    pub kind: InterruptKind,
    /// Per-kind data (a template).
    #[serde(default = "empty_object")]
    pub data: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// The interrupt kinds our engine raises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InterruptKind {
    Approval,
    Clarification,
    Credential,
    ExternalEvent,
}

impl InterruptKind {
    pub fn as_str(self) -> &'static str {
        match self {
            InterruptKind::Approval => "approval",
            InterruptKind::Clarification => "clarification",
            InterruptKind::Credential => "credential",
            InterruptKind::ExternalEvent => "external-event",
        }
    }
}

/// Why a definition was refused.
#[derive(Debug, thiserror::Error)]
pub enum DefinitionError {
    #[error("{source_name}: not a workflow definition: {message}")]
    Parse {
        source_name: String,
        message: String,
    },
    #[error("{source_name}: {message}")]
    Invalid {
        source_name: String,
        message: String,
    },
}

impl Definition {
    /// Parses JSON (when the text starts with `{`) or YAML, then checks it.
    pub fn parse(source_name: &str, text: &str) -> Result<Self, DefinitionError> {
        Self::parse_document(source_name, text).map(|(def, _)| def)
    }

    /// [`Definition::parse`], also returning the document as JSON (what `getWorkflow`
    /// answers: the definition as its author wrote it, whichever syntax they used).
    pub fn parse_document(source_name: &str, text: &str) -> Result<(Self, Value), DefinitionError> {
        let parse_err = |message: String| DefinitionError::Parse {
            source_name: source_name.to_owned(),
            message,
        };
        let document: Value = if text.trim_start().starts_with('{') {
            serde_json::from_str(text).map_err(|e| parse_err(e.to_string()))?
        } else {
            yaml_serde::from_str(text).map_err(|e| parse_err(e.to_string()))?
        };
        let def: Definition =
            serde_json::from_value(document.clone()).map_err(|e| parse_err(e.to_string()))?;
        def.check().map_err(|message| DefinitionError::Invalid {
            source_name: source_name.to_owned(),
            message,
        })?;
        Ok((def, document))
    }

    fn check(&self) -> Result<(), String> {
        if !crate::ids::is_author_id(&self.id) {
            return Err(format!(
                "workflow id `{}` does not match ^[A-Za-z0-9._~:-]{{1,128}}$",
                self.id
            ));
        }
        jsonschema::validator_for(&self.input_schema)
            .map_err(|e| format!("inputSchema is not a usable JSON Schema: {e}"))?;
        let mut seen = std::collections::HashSet::new();
        for node in &self.nodes {
            if !crate::ids::is_author_id(&node.id) {
                return Err(format!(
                    "node id `{}` does not match ^[A-Za-z0-9._~:-]{{1,128}}$",
                    node.id
                ));
            }
            if !seen.insert(node.id.as_str()) {
                return Err(format!("node id `{}` appears twice", node.id));
            }
            if let Action::Wait { amount, unit_ms } = &node.action {
                if *unit_ms == 0 {
                    return Err(format!(
                        "node `{}`: a wait takes exactly one of `ms` and `seconds`",
                        node.id
                    ));
                }
                let ok = amount.as_u64().is_some()
                    || amount.as_str().is_some_and(super::template::is_reference);
                if !ok {
                    return Err(format!(
                        "node `{}`: the wait time must be a non-negative integer or a `${{...}}` reference",
                        node.id
                    ));
                }
            }
        }
        Ok(())
    }
}
