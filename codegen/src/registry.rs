//! The error registry (`spec/v2/errors.json`).
//!
//! Ours is `{rows: [{code, httpStatus, retriable, since, summary}]}`; upstream's rows carry
//! `details`/`source` instead of `summary`. A bare top-level array of rows is accepted too.

use serde_json::Value;

use crate::error::Result;
use crate::load::{At, Corpus, ERRORS};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ErrorRow {
    pub code: String,
    pub http_status: u16,
    pub retriable: bool,
    pub summary: Option<String>,
    /// Pointer of the row inside errors.json, for cross-check messages.
    pub pointer: String,
}

pub(crate) fn load(corpus: &Corpus) -> Result<Vec<ErrorRow>> {
    let at = At { file: ERRORS };
    let doc = corpus.value(ERRORS);
    let (rows, base) = match doc {
        Value::Array(rows) => (rows.as_slice(), String::new()),
        _ => (at.array(doc, "/rows")?, "/rows".to_owned()),
    };
    let mut out = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let p = format!("{base}/{i}");
        let status = at.i64(row, "/httpStatus").map_err(|_| {
            at.shape(
                &format!("{p}/httpStatus"),
                "expected an integer HTTP status",
            )
        })?;
        let http_status = u16::try_from(status)
            .ok()
            .filter(|s| (100..=599).contains(s))
            .ok_or_else(|| {
                at.shape(
                    &format!("{p}/httpStatus"),
                    format!("{status} is not an HTTP status"),
                )
            })?;
        out.push(ErrorRow {
            code: at
                .str(row, "/code")
                .map_err(|_| at.shape(&format!("{p}/code"), "expected a string code"))?
                .to_owned(),
            http_status,
            retriable: at
                .bool(row, "/retriable")
                .map_err(|_| at.shape(&format!("{p}/retriable"), "expected a boolean"))?,
            summary: row
                .get("summary")
                .and_then(Value::as_str)
                .map(str::to_owned),
            pointer: p,
        });
    }
    Ok(out)
}

/// Vendor-shaped codes (`acme.thing`) are legal on the wire but are not enum variants.
pub(crate) fn is_vendor_code(code: &str) -> bool {
    code.contains('.')
}
