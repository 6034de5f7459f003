//! Baselines: adopt the gate on a repository that already has findings, and let their
//! number only go down.
//!
//! `--write-baseline FILE` records today's findings keyed by path, rule and pointer, with
//! how many share the key (a rule may fire several times on one value, once per missing
//! feature, say). `--baseline FILE` then reports only findings beyond those, and lists the
//! entries that no longer occur so they can be removed; `--strict-baseline` fails on those.
//! Input findings (unreadable, not JSON) are never recorded nor hidden. The file is sorted
//! JSON with one entry per key, so it diffs cleanly under review.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

// `Stale` lives with the report that lists it; it stays nameable from here.
pub use crate::report::Stale;
use crate::report::{Document, Entry};
use crate::rules;

/// The file's format version; a file of another version is refused, not misread.
const VERSION: u32 = 1;

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: u32,
    findings: Vec<Record>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    path: String,
    rule: String,
    pointer: String,
    count: usize,
}

type Key = (String, String, String);

fn key(e: &Entry) -> Key {
    (e.path.clone(), e.rule.clone(), e.pointer.clone())
}

/// A baseline read from a file.
#[derive(Debug, Default)]
pub struct Baseline {
    counts: BTreeMap<Key, usize>,
}

impl Baseline {
    pub fn read(path: &Path) -> Result<Baseline, String> {
        let text = std::fs::read(path)
            .map_err(|e| format!("cannot read the baseline {}: {e}", path.display()))?;
        let file: File = serde_json::from_slice(&text)
            .map_err(|e| format!("the baseline {} is not one: {e}", path.display()))?;
        if file.version != VERSION {
            return Err(format!(
                "the baseline {} has version {}; this openwop-validate reads version {VERSION}",
                path.display(),
                file.version
            ));
        }
        let mut counts = BTreeMap::new();
        for r in file.findings {
            *counts.entry((r.path, r.rule, r.pointer)).or_insert(0) += r.count;
        }
        Ok(Baseline { counts })
    }

    /// Removes the findings the baseline knows from `documents`; returns how many were
    /// removed and the entries not found. Only the paths checked in this run can have stale
    /// entries: a hook that checks the changed files alone says nothing about the others.
    pub fn apply(&self, documents: &mut [Document]) -> (usize, Vec<Stale>) {
        let mut left = self.counts.clone();
        let mut known = 0;
        for doc in documents.iter_mut() {
            doc.entries.retain(|e| {
                if rules::is_input(&e.rule) {
                    return true;
                }
                match left.get_mut(&key(e)) {
                    Some(n) if *n > 0 => {
                        *n -= 1;
                        known += 1;
                        false
                    }
                    _ => true,
                }
            });
        }
        let checked: BTreeSet<&str> = documents.iter().map(|d| d.path.as_str()).collect();
        let stale = left
            .into_iter()
            .filter(|((path, _, _), n)| *n > 0 && checked.contains(path.as_str()))
            .map(|((path, rule, pointer), count)| Stale {
                path,
                rule,
                pointer,
                count,
            })
            .collect();
        (known, stale)
    }
}

/// The baseline of `documents`' findings as the file's text.
pub fn render<'a>(entries: impl Iterator<Item = &'a Entry>) -> String {
    let mut counts: BTreeMap<Key, usize> = BTreeMap::new();
    for e in entries.filter(|e| !rules::is_input(&e.rule)) {
        *counts.entry(key(e)).or_insert(0) += 1;
    }
    let file = File {
        version: VERSION,
        findings: counts
            .into_iter()
            .map(|((path, rule, pointer), count)| Record {
                path,
                rule,
                pointer,
                count,
            })
            .collect(),
    };
    let mut text = serde_json::to_string_pretty(&file).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Severity;

    fn entry(path: &str, rule: &str, pointer: &str) -> Entry {
        Entry {
            path: path.into(),
            line: 1,
            column: 1,
            severity: Severity::Error,
            rule: rule.into(),
            pointer: pointer.into(),
            message: "m".into(),
            docs: String::new(),
        }
    }

    fn doc(path: &str, entries: Vec<Entry>) -> Document {
        Document {
            path: path.into(),
            entries,
        }
    }

    #[test]
    fn round_trip_hides_known_findings_and_names_the_gone_ones() {
        let today = [
            entry("a.json", "r", "/x"),
            entry("a.json", "r", "/x"),
            entry("a.json", "s", ""),
            entry("b.json", "r", "/y"),
            entry("c.json", rules::INPUT_UNREADABLE, ""),
        ];
        let text = render(today.iter());
        // Sorted, counted, input findings left out, and the same text every time.
        assert_eq!(text, render(today.iter().rev()));
        assert!(!text.contains("input."), "{text}");
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("baseline.json");
        std::fs::write(&path, &text).expect("write");
        let baseline = Baseline::read(&path).expect("read");

        // Tomorrow: one /x finding fixed, s fixed, a new one, c.json still unreadable,
        // b.json not checked in this run.
        let mut docs = vec![
            doc(
                "a.json",
                vec![entry("a.json", "r", "/x"), entry("a.json", "t", "/new")],
            ),
            doc("c.json", vec![entry("c.json", rules::INPUT_UNREADABLE, "")]),
        ];
        let (known, stale) = baseline.apply(&mut docs);
        assert_eq!(known, 1);
        let left: Vec<&str> = docs
            .iter()
            .flat_map(|d| d.entries.iter().map(|e| e.rule.as_str()))
            .collect();
        assert_eq!(left, ["t", rules::INPUT_UNREADABLE]);
        let gone: Vec<(&str, &str, usize)> = stale
            .iter()
            .map(|s| (s.rule.as_str(), s.pointer.as_str(), s.count))
            .collect();
        assert_eq!(gone, [("r", "/x", 1), ("s", "", 1)]);
    }

    #[test]
    fn a_file_of_another_shape_or_version_is_refused() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("b.json");
        for (text, says) in [
            ("[]", "is not one"),
            (r#"{"version": 2, "findings": []}"#, "version 2"),
            (
                r#"{"version": 1, "findings": [{"path": "a", "rule": "r"}]}"#,
                "missing field",
            ),
        ] {
            std::fs::write(&path, text).expect("write");
            let err = Baseline::read(&path).err().unwrap_or_default();
            assert!(err.contains(says), "{text}: {err}");
        }
        assert!(
            Baseline::read(&dir.path().join("none.json"))
                .err()
                .unwrap_or_default()
                .contains("cannot read the baseline")
        );
    }
}
