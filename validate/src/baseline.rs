//! Baselines: adopt the gate on a repository that already has findings, and let their
//! number only go down.
//!
//! `--write-baseline FILE` records today's findings keyed by path, rule, pointer and
//! message, with how many share the key. `--baseline FILE` then reports only findings
//! beyond those, and lists the entries that no longer occur so they can be removed;
//! `--strict-baseline` fails on those. The message is part of the key because a place can
//! hold several findings of one rule (the features a profile lacks, the members a schema
//! requires): without it, fixing one and breaking another would keep the count and hide
//! the new one. Every message depends on the document alone (none on today's date), so a
//! recorded finding stays known until the document or the rule's wording changes. Input
//! findings (unreadable, not JSON) are never recorded nor hidden. A document that could
//! not be read or parsed has findings nobody knows today: its entries are not stale, and
//! a baseline rewritten meanwhile keeps them, as it keeps those of a file the rewrite did
//! not check (unless it is gone). The file is sorted JSON with one entry per
//! key, so it diffs cleanly under review.
//!
//! Version 1 files (no messages) are still read, matching by path, rule and pointer as
//! they did; the command says to rewrite them.
//!
//! A path in the file is relative to the baseline file's directory, so the same baseline
//! matches from whichever directory the command runs (a config file's `baseline:` found
//! from a subdirectory). Files written before that were relative to the working
//! directory they were written from: a path that names no file from the baseline's
//! directory but one from the working directory is read that way, so such a file still
//! matches where it did. Inside a run every path is keyed absolute (lexically: `.`, `..`
//! and repeated `/` resolved, symbolic links not), and shown as findings name it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

// `Stale` lives with the report that lists it; it stays nameable from here.
use crate::load::{absolute_lexically as absolute, is_no_file, path_key};
pub use crate::report::Stale;
use crate::report::{Document, Entry};
use crate::rules;

/// The version written; a file of a version this build does not know is refused, not
/// misread.
const VERSION: u32 = 2;
/// The first version, keyed without messages.
const VERSION_1: u32 = 1;

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
    /// Absent in version 1 files: such an entry matches any message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    count: usize,
}

/// Path, rule, pointer and message (`None`: any message, a version 1 entry).
type Key = (String, String, String, Option<String>);

fn key(e: &Entry) -> Key {
    (
        file_key(&e.path),
        e.rule.clone(),
        e.pointer.clone(),
        Some(e.message.clone()),
    )
}

/// A baseline read from a file.
#[derive(Debug, Default)]
pub struct Baseline {
    counts: BTreeMap<Key, usize>,
    /// The file's version: 1 matches without messages.
    pub version: u32,
}

impl Baseline {
    pub fn read(path: &Path) -> Result<Baseline, String> {
        let text = std::fs::read(path).map_err(|e| {
            let hint = match e.kind() {
                std::io::ErrorKind::NotFound => {
                    format!("; write it first with --write-baseline {}", path.display())
                }
                _ => String::new(),
            };
            format!("cannot read the baseline {}: {e}{hint}", path.display())
        })?;
        // A byte order mark is skipped, as in documents and the config file (an editor on
        // Windows writes one when the file is saved by hand).
        let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&text);
        let file: File = serde_json::from_slice(text)
            .map_err(|e| format!("the baseline {} is not one: {e}", path.display()))?;
        if file.version != VERSION && file.version != VERSION_1 {
            return Err(format!(
                "the baseline {} has version {}; this openwop-validate reads versions {VERSION_1} and {VERSION}",
                path.display(),
                file.version
            ));
        }
        let dir = directory_of(path);
        let mut counts = BTreeMap::new();
        for r in file.findings {
            let message = match (file.version, r.message) {
                (VERSION_1, _) => None,
                (_, Some(m)) => Some(m),
                (_, None) => {
                    return Err(format!(
                        "the baseline {} is not one: an entry of {} ({} at \"{}\") has no message",
                        path.display(),
                        r.path,
                        r.rule,
                        r.pointer
                    ));
                }
            };
            *counts
                .entry((recorded_key(&r.path, &dir), r.rule, r.pointer, message))
                .or_insert(0) += r.count;
        }
        Ok(Baseline {
            counts,
            version: file.version,
        })
    }

    /// The baseline `render` would write for these findings, as if read back.
    pub fn of<'a>(entries: impl Iterator<Item = &'a Entry>) -> Baseline {
        Baseline {
            counts: counts(entries),
            version: VERSION,
        }
    }

    /// Adds the entries of `old` this run could not have found again, so a rewritten
    /// baseline forgets only what was checked and is fixed: those of a file this run did
    /// not check (a rewrite over some of the files, as a read is scoped to them) unless the
    /// file is gone, of a document that could not be read or parsed, of a rule `is_on`
    /// says is off, and, for each of `partly` (`(path, rule)`: the `--discovery` document
    /// of a card run), of the rules other than the one it was checked for. A version 1
    /// entry (no message) cannot be written in this version's file: that is an error
    /// rather than an entry dropped.
    pub fn keep(
        &mut self,
        old: &Baseline,
        documents: &[Document],
        partly: &[(String, String)],
        is_on: impl Fn(&str) -> bool,
    ) -> Result<(), String> {
        let scope = Scope::of(documents, partly);
        for (key, count) in &old.counts {
            let (path, rule) = (&key.0, &key.1);
            let unreadable = scope.unreadable.contains(path);
            let unchecked = !scope.checked(path, rule) && !unreadable && !is_gone(path);
            if !unreadable && !unchecked && is_on(rule) {
                continue;
            }
            if key.3.is_none() {
                let why = if unreadable {
                    format!("{} could not be read", shown(path))
                } else if unchecked {
                    format!("{} was not checked in this run", shown(path))
                } else {
                    format!("the rule {rule} is off")
                };
                return Err(format!(
                    "{why}, and its entries in the version 1 baseline cannot be carried into a version {VERSION} one; check every file of the baseline with the rule on, or fix the document first"
                ));
            }
            *self.counts.entry(key.clone()).or_insert(0) += count;
        }
        Ok(())
    }

    /// The baseline as the text of the file `file`: its paths relative to that file's
    /// directory.
    pub fn render(&self, file: &Path) -> String {
        let dir = directory_of(file);
        let file = File {
            version: VERSION,
            findings: self
                .counts
                .iter()
                .map(|((path, rule, pointer, message), count)| Record {
                    path: relative_to(path, &dir),
                    rule: rule.clone(),
                    pointer: pointer.clone(),
                    message: message.clone(),
                    count: *count,
                })
                .collect(),
        };
        let mut file = file;
        file.findings.sort();
        let mut text = serde_json::to_string_pretty(&file).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Removes the findings the baseline knows from `documents`; returns how many were
    /// removed and the entries not found. Only the paths checked in this run, by rules
    /// `is_on` says are on, can have stale entries: a hook that checks the changed files
    /// alone says nothing about the others, a document that could not be read or parsed
    /// was not checked either, and a rule turned off (`--rule R=off`) looked for nothing,
    /// so its entries are kept for when it is on again. An entry of a finding a document
    /// holds but does not report ([`Document::restated`]) is neither known nor stale.
    pub fn apply(
        &self,
        documents: &mut [Document],
        is_on: impl Fn(&str) -> bool,
    ) -> (usize, Vec<Stale>) {
        self.apply_with(documents, is_on, &[])
    }

    /// [`apply`](Baseline::apply), where each of `partly` is a document checked for one
    /// rule alone, `(path, rule)`: the `--discovery` document of a card run, which the cards'
    /// `agent-card.discovery-has-a2a` is about. Only that rule's entries of that path can be
    /// stale, whether or not `documents` holds a document of that path (it does when the
    /// rule found something there).
    pub fn apply_with(
        &self,
        documents: &mut [Document],
        is_on: impl Fn(&str) -> bool,
        partly: &[(String, String)],
    ) -> (usize, Vec<Stale>) {
        let mut left = self.counts.clone();
        let mut known = 0;
        // Takes one of `e`'s entries (its message's, else a version 1 entry's) from `left`.
        let take = |e: &Entry, left: &mut BTreeMap<Key, usize>| {
            let exact = key(e);
            let any_message = (exact.0.clone(), exact.1.clone(), exact.2.clone(), None);
            [exact, any_message]
                .into_iter()
                .any(|k| match left.get_mut(&k) {
                    Some(n) if *n > 0 => {
                        *n -= 1;
                        true
                    }
                    _ => false,
                })
        };
        for doc in documents.iter_mut() {
            doc.entries.retain(|e| {
                if rules::is_input(&e.rule) || !take(e, &mut left) {
                    return true;
                }
                known += 1;
                false
            });
            for e in &doc.restated {
                take(e, &mut left);
            }
        }
        let scope = Scope::of(documents, partly);
        let stale = left
            .into_iter()
            .filter(|((path, rule, _, _), n)| {
                *n > 0
                    && is_on(rule)
                    && (scope.checked(path, rule) || (!scope.named.contains(path) && is_gone(path)))
            })
            .map(|((path, rule, pointer, message), count)| Stale {
                path: shown(&path),
                rule,
                pointer,
                message,
                count,
            })
            .collect();
        (known, stale)
    }
}

fn counts<'a>(entries: impl Iterator<Item = &'a Entry>) -> BTreeMap<Key, usize> {
    let mut counts: BTreeMap<Key, usize> = BTreeMap::new();
    for e in entries.filter(|e| !rules::is_input(&e.rule)) {
        *counts.entry(key(e)).or_insert(0) += 1;
    }
    counts
}

/// The baseline of these findings as the text of the file `file`.
pub fn render<'a>(entries: impl Iterator<Item = &'a Entry>, file: &Path) -> String {
    Baseline::of(entries).render(file)
}

/// What a run checked, as baselines key paths.
struct Scope {
    /// Documents read and checked by every rule.
    fully: BTreeSet<String>,
    /// Documents checked for one rule alone: `(path, rule)`.
    partly: BTreeSet<(String, String)>,
    /// Documents that could not be read or parsed.
    unreadable: BTreeSet<String>,
    /// Every document the run names.
    named: BTreeSet<String>,
}

impl Scope {
    fn of(documents: &[Document], partly: &[(String, String)]) -> Scope {
        let partly: BTreeSet<(String, String)> = partly
            .iter()
            .map(|(path, rule)| (file_key(path), rule.clone()))
            .collect();
        let fully = documents
            .iter()
            .filter(|d| !d.unreadable())
            .map(|d| file_key(&d.path))
            .filter(|path| !partly.iter().any(|(p, _)| p == path))
            .collect();
        Scope {
            fully,
            unreadable: unreadable_paths(documents),
            named: documents.iter().map(|d| file_key(&d.path)).collect(),
            partly,
        }
    }

    /// Whether this run looked for `rule`'s findings in the document at `path`.
    fn checked(&self, path: &str, rule: &str) -> bool {
        self.fully.contains(path) || self.partly.contains(&(path.to_owned(), rule.to_owned()))
    }
}

/// The paths (as baselines key them) of the documents that could not be read or parsed.
pub fn unreadable_paths(documents: &[Document]) -> BTreeSet<String> {
    documents
        .iter()
        .filter(|d| d.unreadable())
        .map(|d| file_key(&d.path))
        .collect()
}

/// The working directory, as [`path_key`] names paths relative to it.
fn cwd() -> PathBuf {
    std::env::current_dir().unwrap_or_default()
}

/// The absolute directory of the file `file` (named under `$PWD` or not, as documents are).
fn directory_of(file: &Path) -> PathBuf {
    let file = match file.to_str() {
        Some(name) => cwd().join(path_key(name)),
        None => cwd().join(file),
    };
    file.parent().map(Path::to_path_buf).unwrap_or(file)
}

/// A document's path as a baseline keys it inside a run: absolute and lexically normal
/// (`.`, `..` and repeated `/` resolved). A URL, `-` or `<stdin>` is itself.
fn file_key(path: &str) -> String {
    // `path_key` first: a path under `$PWD` reached through a symbolic link is made
    // relative to the working directory, as findings name it.
    let path = path_key(path);
    if is_no_file(&path) {
        return path;
    }
    absolute(&cwd(), &path)
}

/// A path recorded in the baseline file in `dir`, keyed as [`file_key`] keys documents:
/// relative to `dir`, or, for a file written relative to the working directory (before
/// paths were relative to the baseline's directory), relative to that when only that
/// names a file.
fn recorded_key(path: &str, dir: &Path) -> String {
    if is_no_file(path) {
        return path.to_owned();
    }
    let by_baseline = absolute(dir, path);
    if path.starts_with('/') || Path::new(&by_baseline).exists() {
        return by_baseline;
    }
    let by_cwd = absolute(&cwd(), path);
    if Path::new(&by_cwd).exists() {
        by_cwd
    } else {
        by_baseline
    }
}

/// `key` (absolute) relative to the absolute directory `dir`, climbing with `..` where it
/// must; absolute when the two share nothing but the root. A URL or `-` is itself.
fn relative_to(key: &str, dir: &Path) -> String {
    if !key.starts_with('/') {
        return key.to_owned();
    }
    let dir = absolute(Path::new("/"), &dir.display().to_string());
    let base: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    let parts: Vec<&str> = key.split('/').filter(|p| !p.is_empty()).collect();
    let common = base.iter().zip(&parts).take_while(|(a, b)| a == b).count();
    if common == 0 {
        return key.to_owned();
    }
    let mut out: Vec<&str> = vec![".."; base.len() - common];
    out.extend(&parts[common..]);
    out.join("/")
}

/// A key as findings name the file: relative to the working directory.
fn shown(key: &str) -> String {
    relative_to(key, &cwd())
}

/// Whether the file `key` names is gone (deleted or renamed): its entries are stale even
/// when the run did not name it. A URL or standard input is never gone.
fn is_gone(key: &str) -> bool {
    key.starts_with('/') && !Path::new(key).exists()
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
            ..Document::default()
        }
    }

    #[test]
    fn round_trip_hides_known_findings_and_names_the_gone_ones() {
        let dir = tempfile::tempdir().expect("dir");
        let at = |name: &str| dir.path().join(name).display().to_string();
        // b.json is there, not checked in this run: its entries are not stale.
        std::fs::write(at("b.json"), "{}").expect("write");
        let (a, b, c) = (at("a.json"), at("b.json"), at("c.json"));
        let today = [
            entry(&a, "r", "/x"),
            entry(&a, "r", "/x"),
            entry(&a, "s", ""),
            entry(&b, "r", "/y"),
            entry(&c, rules::INPUT_UNREADABLE, ""),
        ];
        let path = dir.path().join("baseline.json");
        let text = render(today.iter(), &path);
        // Sorted, counted, input findings left out, relative to the baseline's directory,
        // and the same text every time.
        assert_eq!(text, render(today.iter().rev(), &path));
        assert!(!text.contains("input."), "{text}");
        assert!(text.contains("\"path\": \"a.json\""), "{text}");
        std::fs::write(&path, &text).expect("write");
        let baseline = Baseline::read(&path).expect("read");

        // Tomorrow: one /x finding fixed, s fixed, a new one, c.json still unreadable,
        // b.json not checked in this run.
        let mut docs = vec![
            doc(&a, vec![entry(&a, "r", "/x"), entry(&a, "t", "/new")]),
            doc(&c, vec![entry(&c, rules::INPUT_UNREADABLE, "")]),
        ];
        let (known, stale) = baseline.apply(&mut docs, |_| true);
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

        // b.json deleted (or renamed): its entries are stale though it was not named.
        std::fs::remove_file(&b).expect("remove");
        let mut docs = vec![doc(&a, vec![entry(&a, "r", "/x"), entry(&a, "r", "/x")])];
        let (_, stale) = baseline.apply(&mut docs, |_| true);
        let gone: Vec<(&str, &str)> = stale
            .iter()
            .map(|s| (s.rule.as_str(), s.pointer.as_str()))
            .collect();
        assert_eq!(gone, [("s", ""), ("r", "/y")]);
        // Shown relative to the working directory (as findings name files), wherever the
        // checkout and the temporary directory are.
        assert_eq!(absolute(&cwd(), &stale[1].path), b);
    }

    /// Paths in the file are relative to its directory, whichever directory reads it; a
    /// file written relative to the working directory still matches where that names the
    /// file and the baseline's directory does not.
    #[test]
    fn paths_are_relative_to_the_baselines_directory() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::create_dir(dir.path().join("docs")).expect("mkdir");
        let doc_path = dir.path().join("docs/a.json");
        std::fs::write(&doc_path, "{}").expect("write");
        let a = doc_path.display().to_string();
        let file = dir.path().join("ci/base.json");
        let text = render([entry(&a, "r", "/x")].iter(), &file);
        assert!(text.contains("\"path\": \"../docs/a.json\""), "{text}");
        assert_eq!(relative_to(&a, dir.path()), "docs/a.json");
        assert_eq!(absolute(dir.path(), "./ci/../docs//a.json"), a);
        std::fs::create_dir(dir.path().join("ci")).expect("mkdir");
        std::fs::write(&file, &text).expect("write");
        let baseline = Baseline::read(&file).expect("read");
        let mut docs = vec![doc(&a, vec![entry(&a, "r", "/x")])];
        assert_eq!(baseline.apply(&mut docs, |_| true), (1, vec![]));
        // A key that names no file from the baseline's directory but one from the
        // working directory (an earlier release's) is read from there.
        let here = cwd().join("Cargo.toml").display().to_string();
        assert_eq!(recorded_key("Cargo.toml", &dir.path().join("ci")), here);
        assert_eq!(recorded_key("docs/a.json", dir.path()), a);
    }

    #[test]
    fn a_file_of_another_shape_or_version_is_refused() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("b.json");
        for (text, says) in [
            ("[]", "is not one"),
            (r#"{"version": 3, "findings": []}"#, "version 3"),
            (
                r#"{"version": 2, "findings": [{"path": "a", "rule": "r"}]}"#,
                "missing field",
            ),
            (
                r#"{"version": 2, "findings": [{"path": "a", "rule": "r", "pointer": "", "count": 1}]}"#,
                "has no message",
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

    fn said(path: &str, rule: &str, pointer: &str, message: &str) -> Entry {
        Entry {
            message: message.into(),
            ..entry(path, rule, pointer)
        }
    }

    /// The audit's case: a place with several findings of one rule. Fixing one and
    /// breaking another keeps the count; the new one must still be reported, and the
    /// fixed one named as gone.
    #[test]
    fn a_new_finding_at_a_known_place_is_not_taken_for_a_known_one() {
        let today = [
            said("a.json", "schema", "", "'url' is a required property"),
            said(
                "./a.json",
                "schema",
                "/bogus",
                "Additional properties are not allowed ('bogus' was unexpected)",
            ),
        ];
        let baseline = Baseline::of(today.iter());
        let mut docs = vec![doc(
            "a.json",
            vec![
                said("a.json", "schema", "", "'name' is a required property"),
                said(
                    "a.json",
                    "schema",
                    "/bogus",
                    "Additional properties are not allowed ('bogus' was unexpected)",
                ),
            ],
        )];
        let (known, stale) = baseline.apply(&mut docs, |_| true);
        assert_eq!(known, 1, "./a.json and a.json are one file");
        let left: Vec<&str> = docs[0].entries.iter().map(|e| e.message.as_str()).collect();
        assert_eq!(left, ["'name' is a required property"]);
        assert_eq!(stale.len(), 1);
        assert_eq!(
            stale[0].message.as_deref(),
            Some("'url' is a required property")
        );
        assert!(
            stale[0]
                .sentence()
                .contains("('url' is a required property)")
        );
    }

    /// A version 1 file (no messages) still hides what it did, by path, rule and pointer.
    #[test]
    fn a_version_1_file_still_matches_by_place() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("b.json");
        std::fs::write(
            &path,
            r#"{"version": 1, "findings": [{"path": "a.json", "rule": "r", "pointer": "/x", "count": 1}]}"#,
        )
        .expect("write");
        let baseline = Baseline::read(&path).expect("read");
        assert_eq!(baseline.version, 1);
        let a = dir.path().join("a.json").display().to_string();
        let mut docs = vec![doc(
            &a,
            vec![
                said(&a, "r", "/x", "anything"),
                said(&a, "r", "/x", "again"),
            ],
        )];
        let (known, stale) = baseline.apply(&mut docs, |_| true);
        assert_eq!((known, stale.len(), docs[0].entries.len()), (1, 0, 1));
    }

    /// A document that cannot be read or parsed today was not checked: its entries are
    /// neither stale nor forgotten by a baseline written meanwhile.
    #[test]
    fn an_unreadable_documents_entries_are_not_stale_and_are_kept() {
        let old = Baseline::of(
            [
                said("a.json", "r", "/x", "one"),
                said("c.json", "r", "/y", "two"),
                said("c.json", "s", "", "three"),
            ]
            .iter(),
        );
        let broken = || doc("c.json", vec![entry("c.json", rules::INPUT_MALFORMED, "")]);
        let mut docs = vec![doc("a.json", vec![]), broken()];
        let (known, stale) = old.apply(&mut docs, |_| true);
        let stale: Vec<&str> = stale.iter().map(|s| s.path.as_str()).collect();
        assert_eq!((known, stale), (0, vec!["a.json"]));

        // Rewritten while c.json is broken: a.json's entry goes (it is fixed), c.json's stay.
        let docs = [doc("a.json", vec![]), broken()];
        let unreadable = unreadable_paths(&docs);
        assert_eq!(unreadable, BTreeSet::from([file_key("c.json")]));
        let mut written = Baseline::of(docs.iter().flat_map(|d| d.entries.iter()));
        written
            .keep(&old, &docs, &[], |_| true)
            .expect("version 2 entries");
        let text = written.render(Path::new("base.json"));
        assert!(!text.contains("a.json"), "{text}");
        assert_eq!(text.matches("\"c.json\"").count(), 2, "{text}");
        assert!(!text.contains("input."), "{text}");
    }
}
