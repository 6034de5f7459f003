//! A finished run's answer as its workflow declares it (`answer` in the workflow
//! definition): artifacts of text, file and data parts, rendered from the run's inputs and
//! outputs. One rendering, read by both edges that shape answers: A2A (task artifacts, or a
//! Message) and MCP (`CallToolResult.content`).

use serde_json::{Value, json};

use super::Ops;
use crate::engine::definition::AnswerPart;
use crate::store::RunRecord;

/// One rendered artifact.
#[derive(Debug, Clone, PartialEq)]
pub struct Artifact {
    pub name: Option<String>,
    pub description: Option<String>,
    pub parts: Vec<Part>,
}

/// One rendered part.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(String),
    /// A file by URL or by base64 content (exactly one, as the definition was checked).
    File {
        url: Option<String>,
        bytes: Option<String>,
        media_type: String,
        filename: Option<String>,
    },
    Data(Value),
}

/// The declared answer of a completed run.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub artifacts: Vec<Artifact>,
    /// A2A: answer a run that completed within `SendMessage` with a Message.
    pub as_message: bool,
}

impl Ops {
    /// The run's declared answer, rendered; `None` when the run is not completed or its
    /// workflow declares none (or is gone from this host): the caller then shows the
    /// outputs as it always has.
    pub fn answer(&self, run: &RunRecord) -> Option<Answer> {
        if run.status != crate::status::RunStatus::Completed {
            return None;
        }
        let workflow = self.engine.registry().get(&run.workflow_id)?;
        let declared = workflow.definition.answer.as_ref()?;
        let ctx = json!({
            "inputs": run.inputs,
            "outputs": run.outputs.clone().unwrap_or_else(|| json!({})),
            "run": {"id": run.run_id, "workflowId": run.workflow_id},
        });
        let text = |template: &str| -> String {
            match crate::engine::template::render(&json!(template), &ctx) {
                Value::String(s) => s,
                Value::Null => String::new(),
                other => other.to_string(),
            }
        };
        let artifacts = declared
            .artifacts
            .iter()
            .map(|a| Artifact {
                name: a.name.as_ref().map(|n| n.to_string()),
                description: a.description.clone(),
                parts: a
                    .parts
                    .iter()
                    .map(|p| match p {
                        AnswerPart::Text { text: t } => Part::Text(text(t)),
                        AnswerPart::File {
                            url,
                            bytes,
                            media_type,
                            filename,
                        } => Part::File {
                            url: url.as_ref().map(|u| text(u)),
                            bytes: bytes.as_ref().map(|b| text(b)),
                            media_type: media_type.to_string(),
                            filename: filename.as_ref().map(|f| text(f)),
                        },
                        AnswerPart::Data { data } => {
                            Part::Data(crate::engine::template::render(data, &ctx))
                        }
                    })
                    .collect(),
            })
            .collect();
        Some(Answer {
            artifacts,
            as_message: declared.as_message.unwrap_or(false),
        })
    }
}
