//! Workflow definitions: the generated model of `schemas/v2/workflow-definition.schema.json`
//! is the engine's vocabulary; this module loads a document into it and adds the checks a
//! schema cannot express (unique node ids, a usable input schema).
//!
//! A document is held to the corpus schema first (the generated validator, so an author
//! sees the JSON pointer of every mistake, and closed shapes stay closed even though the
//! generated models tolerate unknown members), then read into the model.

use openwop_generated::validators;
use serde_json::Value;

pub use openwop_generated::models::{
    AnswerPart, Node, NodeInterrupt, NodeInterruptKind as InterruptKind,
    NodeOnToolError as OnToolError, WaitAmount, WorkflowDefinition as Definition,
};

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

/// Parses JSON (when the text starts with `{`) or YAML, then checks it.
pub fn parse(source_name: &str, text: &str) -> Result<Definition, DefinitionError> {
    parse_document(source_name, text).map(|(def, _)| def)
}

/// [`parse`], also returning the document as JSON (what `getWorkflow` answers: the
/// definition as its author wrote it, whichever syntax they used).
pub fn parse_document(
    source_name: &str,
    text: &str,
) -> Result<(Definition, Value), DefinitionError> {
    let parse_err = |message: String| DefinitionError::Parse {
        source_name: source_name.to_owned(),
        message,
    };
    let invalid = |message: String| DefinitionError::Invalid {
        source_name: source_name.to_owned(),
        message,
    };
    let document = crate::definition_files::parse_value(text).map_err(parse_err)?;
    let findings = validators::validate_workflow_definition(&document);
    if !findings.is_empty() {
        let lines: Vec<String> = findings
            .iter()
            .map(|f| {
                let at = crate::definition_files::shown_pointer(&f.pointer);
                format!("at {at}: {}", f.message)
            })
            .collect();
        return Err(invalid(lines.join("; ")));
    }
    // The schema held, so this only fails where the model and the schema disagree (a
    // generator defect), still reported as the document's problem, never a panic.
    let def: Definition =
        serde_json::from_value(document.clone()).map_err(|e| parse_err(e.to_string()))?;
    check(&def).map_err(invalid)?;
    Ok((def, document))
}

/// The node's id, whatever its kind.
pub fn node_id(node: &Node) -> &str {
    match node {
        Node::Transform { id, .. }
        | Node::Wait { id, .. }
        | Node::Fail { id, .. }
        | Node::Interrupt { id, .. }
        | Node::A2a { id, .. }
        | Node::Mcp { id, .. }
        | Node::Http { id, .. }
        | Node::McpClient { id, .. }
        | Node::Repeat { id, .. } => id,
    }
}

/// The node's `when` template, if it has one.
pub fn when_of(node: &Node) -> Option<&Value> {
    match node {
        Node::Transform { when, .. }
        | Node::Wait { when, .. }
        | Node::Fail { when, .. }
        | Node::Interrupt { when, .. }
        | Node::A2a { when, .. }
        | Node::Mcp { when, .. }
        | Node::Http { when, .. }
        | Node::McpClient { when, .. }
        | Node::Repeat { when, .. } => when.as_ref().map(|w| &w.0),
    }
}

/// Which peer a calling node names, and of what kind.
pub fn peer_of(node: &Node) -> Option<(&str, crate::peers::PeerKind)> {
    use crate::peers::PeerKind;
    match node {
        Node::A2a { peer, .. } => Some((peer, PeerKind::A2a)),
        Node::Mcp { peer, .. } => Some((peer, PeerKind::Mcp)),
        Node::Http { peer, .. } => Some((peer, PeerKind::Http)),
        _ => None,
    }
}

/// Every node of the definition, those inside `repeat` blocks included, in order.
pub fn all_nodes(nodes: &[Node]) -> Vec<&Node> {
    let mut out = Vec::new();
    for node in nodes {
        out.push(node);
        if let Node::Repeat { nodes, .. } = node {
            out.extend(all_nodes(nodes));
        }
    }
    out
}

/// One step of a compiled workflow. A run's `node_index` points into this flat list,
/// so a block (`repeat`) is a pair of markers around its nodes rather than a nested
/// position, and a workflow without blocks compiles to its node list unchanged (stored
/// runs keep their position).
#[derive(Debug, Clone)]
#[allow(
    clippy::large_enum_variant,
    reason = "nodes are most of a program and are read in place; boxing them would add a hop"
)]
pub enum Instr {
    Node(Node),
    /// Enters a `repeat` block (unless its `when` is falsy: then past `end`).
    LoopStart {
        id: String,
        when: Option<Value>,
        end: usize,
    },
    /// Ends one pass: back to `start + 1`, or on once `until` holds or `max` passes ran.
    LoopEnd {
        id: String,
        start: usize,
        max: u64,
        until: Option<Value>,
    },
}

impl Instr {
    /// The id of the node this step belongs to.
    pub fn id(&self) -> &str {
        match self {
            Instr::Node(n) => node_id(n),
            Instr::LoopStart { id, .. } | Instr::LoopEnd { id, .. } => id,
        }
    }
}

/// Flattens the node tree into the steps a run walks.
pub fn compile(nodes: &[Node]) -> Vec<Instr> {
    let mut out = Vec::new();
    compile_into(nodes, &mut out);
    out
}

fn compile_into(nodes: &[Node], out: &mut Vec<Instr>) {
    for node in nodes {
        match node {
            Node::Repeat {
                id,
                max,
                nodes,
                until,
                when,
            } => {
                let start = out.len();
                out.push(Instr::LoopStart {
                    id: id.to_string(),
                    when: when.as_ref().map(|w| w.0.clone()),
                    end: 0,
                });
                compile_into(nodes, out);
                let end = out.len();
                out.push(Instr::LoopEnd {
                    id: id.to_string(),
                    start,
                    max: max.get(),
                    until: until.clone(),
                });
                if let Some(Instr::LoopStart { end: e, .. }) = out.get_mut(start) {
                    *e = end;
                }
            }
            other => out.push(Instr::Node(other.clone())),
        }
    }
}

/// A wait node's amount as the engine reads it: the literal or `${...}` reference, and the
/// milliseconds one unit stands for. `None` for any other node, or a wait that names both
/// or neither (the schema's member count refuses those).
pub fn wait_amount(node: &Node) -> Option<(Value, u64)> {
    let Node::Wait { ms, seconds, .. } = node else {
        return None;
    };
    let (amount, unit_ms) = match (ms, seconds) {
        (Some(ms), None) => (ms, 1),
        (None, Some(s)) => (s, 1000),
        _ => return None,
    };
    let amount = match amount {
        WaitAmount::Integer(n) => Value::from(*n),
        WaitAmount::String(reference) => Value::String(reference.to_string()),
    };
    Some((amount, unit_ms))
}

/// The wire spelling of an interrupt kind (the generated enum's serde name), borrowed for
/// as long as the program runs, as the interrupt rows and projections want it.
pub fn kind_str(kind: InterruptKind) -> &'static str {
    match kind {
        InterruptKind::Approval => "approval",
        InterruptKind::Clarification => "clarification",
        InterruptKind::Credential => "credential",
        InterruptKind::ExternalEvent => "external-event",
    }
}

fn check(def: &Definition) -> Result<(), String> {
    jsonschema::validator_for(&Value::Object(def.input_schema.clone()))
        .map_err(|e| format!("inputSchema is not a usable JSON Schema: {e}"))?;
    if let Some(schema) = def.tool.as_ref().and_then(|t| t.output_schema.as_ref()) {
        jsonschema::validator_for(&Value::Object(schema.clone()))
            .map_err(|e| format!("tool.outputSchema is not a usable JSON Schema: {e}"))?;
    }
    for (i, artifact) in def
        .answer
        .iter()
        .flat_map(|a| a.artifacts.iter())
        .enumerate()
    {
        for (j, part) in artifact.parts.iter().enumerate() {
            if let AnswerPart::File { url, bytes, .. } = part
                && url.is_some() == bytes.is_some()
            {
                return Err(format!(
                    "answer.artifacts[{i}].parts[{j}]: a file part takes exactly one of `url` and `bytes`"
                ));
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    for node in all_nodes(&def.nodes) {
        let id = node_id(node);
        if !seen.insert(id) {
            return Err(format!("node id `{id}` appears twice"));
        }
        if matches!(node, Node::Wait { .. }) && wait_amount(node).is_none() {
            return Err(format!(
                "node `{id}`: a wait takes exactly one of `ms` and `seconds`"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_is_held_to_the_corpus_schema_with_pointers() {
        let unknown_member = r#"{"id":"w","inputSchema":{},"nodes":[{"id":"a","kind":"transform","value":1,"extra":2}]}"#;
        let err = parse("w.json", unknown_member).unwrap_err().to_string();
        assert!(err.contains("/nodes/0"), "{err}");
        let both_waits =
            "id: w\ninputSchema: {}\nnodes:\n  - {id: a, kind: wait, ms: 1, seconds: 1}\n";
        assert!(parse("w.yaml", both_waits).is_err());
        let bad_id = r#"{"id":"has space","inputSchema":{},"nodes":[]}"#;
        let err = parse("w.json", bad_id).unwrap_err().to_string();
        assert!(err.contains("at /id"), "{err}");
    }

    #[test]
    fn a_file_part_names_exactly_one_source() {
        let doc = |part: &str| {
            format!(
                r#"{{"id":"w","inputSchema":{{}},"nodes":[],"answer":{{"artifacts":[{{"parts":[{part}]}}]}}}}"#
            )
        };
        let both = doc(
            r#"{"kind":"file","mediaType":"text/plain","url":"https://x.example/a","bytes":"aGk="}"#,
        );
        let err = parse("w.json", &both).unwrap_err().to_string();
        assert!(err.contains("exactly one of `url` and `bytes`"), "{err}");
        let neither = doc(r#"{"kind":"file","mediaType":"text/plain"}"#);
        assert!(parse("w.json", &neither).is_err());
        let one = doc(r#"{"kind":"file","mediaType":"image/png","bytes":"${outputs.png}"}"#);
        assert!(parse("w.json", &one).is_ok());
    }

    #[test]
    fn a_repeat_block_compiles_to_markers_around_its_nodes_and_ids_stay_unique_inside() {
        let def = parse(
            "w.yaml",
            "id: w\ninputSchema: {}\nnodes:\n  - {id: a, kind: transform, value: 1}\n  - id: r\n    kind: repeat\n    max: 2\n    until: true\n    nodes:\n      - {id: b, kind: transform, value: 2}\n      - {id: c, kind: wait, ms: 1}\n  - {id: d, kind: transform, value: 3}\n",
        )
        .unwrap();
        let program = compile(&def.nodes);
        let ids: Vec<&str> = program.iter().map(Instr::id).collect();
        assert_eq!(ids, ["a", "r", "b", "c", "r", "d"]);
        assert!(matches!(program[1], Instr::LoopStart { end: 4, .. }));
        assert!(matches!(
            program[4],
            Instr::LoopEnd {
                start: 1,
                max: 2,
                ..
            }
        ));
        // A workflow without blocks compiles to its node list, index for index.
        assert_eq!(compile(&def.nodes[..1]).len(), 1);
        let nested_twice = "id: w\ninputSchema: {}\nnodes:\n  - {id: a, kind: transform, value: 1}\n  - {id: r, kind: repeat, max: 1, nodes: [{id: a, kind: transform, value: 2}]}\n";
        let err = parse("w.yaml", nested_twice).unwrap_err().to_string();
        assert!(err.contains("appears twice"), "{err}");
        let zero = "id: w\ninputSchema: {}\nnodes:\n  - {id: r, kind: repeat, max: 0, nodes: [{id: a, kind: transform, value: 2}]}\n";
        assert!(parse("w.yaml", zero).is_err());
    }

    #[test]
    fn calling_nodes_name_a_peer_and_close_their_shapes() {
        let ok = "id: w\ninputSchema: {}\nnodes:\n  - {id: a, kind: a2a, peer: p, parts: [{kind: text, text: hi}]}\n  - {id: b, kind: mcp, peer: q, tool: t, onToolError: value}\n  - {id: c, kind: http, peer: r, method: POST, path: /x, body: {a: 1}}\n";
        let def = parse("w.yaml", ok).unwrap();
        let peers: Vec<_> = def.nodes.iter().filter_map(peer_of).collect();
        assert_eq!(peers.len(), 3);
        let no_parts =
            "id: w\ninputSchema: {}\nnodes:\n  - {id: a, kind: a2a, peer: p, parts: []}\n";
        assert!(parse("w.yaml", no_parts).is_err());
        let relative = "id: w\ninputSchema: {}\nnodes:\n  - {id: c, kind: http, peer: r, method: GET, path: x}\n";
        assert!(parse("w.yaml", relative).is_err());
        let url_in_workflow = "id: w\ninputSchema: {}\nnodes:\n  - {id: c, kind: http, peer: r, method: GET, path: /x, url: \"https://elsewhere.example\"}\n";
        assert!(parse("w.yaml", url_in_workflow).is_err());
    }

    #[test]
    fn node_ids_are_unique_and_waits_read_their_unit() {
        let twice = r#"{"id":"w","inputSchema":{},"nodes":[{"id":"a","kind":"transform","value":1},{"id":"a","kind":"wait","ms":1}]}"#;
        let err = parse("w.json", twice).unwrap_err().to_string();
        assert!(err.contains("appears twice"), "{err}");
        let def = parse(
            "w.yaml",
            "id: w\ninputSchema: {}\nnodes:\n  - {id: a, kind: wait, seconds: \"${inputs.s}\"}\n  - {id: b, kind: wait, ms: 5}\n",
        )
        .unwrap();
        assert_eq!(
            wait_amount(&def.nodes[0]),
            Some((Value::from("${inputs.s}"), 1000))
        );
        assert_eq!(wait_amount(&def.nodes[1]), Some((Value::from(5), 1)));
        assert_eq!(node_id(&def.nodes[1]), "b");
    }
}
