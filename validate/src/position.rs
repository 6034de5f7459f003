//! Where a JSON pointer's value sits in the text a document was read from.
//!
//! `serde_json::Value` keeps no positions, so the text is parsed a second time, only for
//! documents that have findings, with `jsonc-parser` (dprint's parser: no dependencies,
//! byte ranges on every node). The document already parsed as strict JSON, so the looser
//! syntax that parser also accepts never comes into play.

use std::collections::HashMap;

use jsonc_parser::ast::{ObjectPropName, Value};
use jsonc_parser::common::Ranged;
use jsonc_parser::{CollectOptions, ParseOptions, parse_to_ast};

/// A 1-based line and column; the column counts characters (Unicode scalar values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

impl Position {
    /// The start of a text: where findings about a whole unreadable input point.
    pub const START: Position = Position { line: 1, column: 1 };
}

/// A parsed text that answers "where is this pointer?".
///
/// Built once per document, so that each answer costs about the same however large the
/// document: a document with tens of thousands of members can have as many findings, and
/// an answer that scanned the text or an object from its start for each would take time
/// in the square of its size.
pub struct Locator<'a> {
    text: &'a str,
    root: Option<Value<'a>>,
    /// The byte offset each line starts at, in order.
    line_starts: Vec<usize>,
    /// `chars_at[k]`: how many characters the text holds before byte `k * CHAR_STRIDE`.
    chars_at: Vec<usize>,
    /// For each object of more than [`INDEXED_MEMBERS`] members, by the byte offset it
    /// starts at: each member name's last index among its properties.
    members: HashMap<usize, HashMap<String, usize>>,
}

/// How far apart the character counts of [`Locator::chars_at`] are, in bytes: a column
/// is counted from the nearest one, not from the start of its line (a minified document
/// is one line).
const CHAR_STRIDE: usize = 1024;

/// Objects up to this size are searched member by member (as fast as a lookup, and no
/// index to build).
const INDEXED_MEMBERS: usize = 32;

impl<'a> Locator<'a> {
    /// Parses `text`; a text that does not parse locates every pointer at its start.
    pub fn new(text: &'a str) -> Self {
        let root = parse_to_ast(text, &CollectOptions::default(), &ParseOptions::default())
            .ok()
            .and_then(|parsed| parsed.value);
        let bytes = text.as_bytes();
        let line_starts = line_starts(bytes);
        let mut chars_at = vec![0];
        for chunk in bytes.chunks(CHAR_STRIDE) {
            let last = chars_at.last().copied().unwrap_or(0);
            chars_at.push(last + char_starts(chunk));
        }
        let mut members = HashMap::new();
        if let Some(root) = &root {
            index_members(root, &mut members);
        }
        Locator {
            text,
            root,
            line_starts,
            chars_at,
            members,
        }
    }

    /// The position of the value `pointer` names; of its nearest existing ancestor when the
    /// value is absent (a missing member is reported on the object that lacks it). Of two
    /// members with the same name the last counts, as it does for `serde_json`.
    pub fn locate(&self, pointer: &str) -> Position {
        let Some(mut node) = self.root.as_ref() else {
            return Position::START;
        };
        let tokens = pointer.split('/').skip(1).map(unescape);
        for token in tokens {
            let next = match node {
                Value::Object(object) => match self.members.get(&object.range.start) {
                    Some(index) => index.get(token.as_ref()).map(|i| &object.properties[*i]),
                    None => object
                        .properties
                        .iter()
                        .rev()
                        .find(|p| name(&p.name) == token),
                }
                .map(|p| &p.value),
                Value::Array(array) => token
                    .parse::<usize>()
                    .ok()
                    .filter(|_| token == "0" || !token.starts_with('0'))
                    .and_then(|i| array.elements.get(i)),
                _ => None,
            };
            match next {
                Some(child) => node = child,
                None => break,
            }
        }
        self.position_of(node.range().start)
    }

    /// Every member named more than once in its object: its pointer (where [`locate`]
    /// finds the last one), its name and the positions of all of them, in document order. JSON
    /// leaves such a document's meaning to the reader; `serde_json` keeps the last.
    ///
    /// [`locate`]: Locator::locate
    pub fn duplicate_members(&self) -> Vec<(String, String, Vec<Position>)> {
        let mut found = Vec::new();
        if let Some(root) = &self.root {
            self.duplicates_in(root, &mut String::new(), &mut found);
        }
        found
    }

    fn duplicates_in(
        &self,
        node: &Value<'a>,
        pointer: &mut String,
        found: &mut Vec<(String, String, Vec<Position>)>,
    ) {
        let len = pointer.len();
        match node {
            Value::Object(object) => {
                // Each name once, in the order of its first member, with where each of its
                // members starts; the map finds a name's entry without a scan.
                let mut names: Vec<(&str, Vec<usize>)> = Vec::new();
                let mut slot: HashMap<&str, usize> = HashMap::new();
                for p in &object.properties {
                    let n = name(&p.name);
                    match slot.get(n) {
                        Some(i) => names[*i].1.push(p.range().start),
                        None => {
                            slot.insert(n, names.len());
                            names.push((n, vec![p.range().start]));
                        }
                    }
                }
                for (n, at) in names.into_iter().filter(|(_, at)| at.len() > 1) {
                    let member = format!("{pointer}/{}", escape(n));
                    let at = at.into_iter().map(|o| self.position_of(o)).collect();
                    found.push((member, n.to_owned(), at));
                }
                for p in &object.properties {
                    pointer.push('/');
                    pointer.push_str(&escape(name(&p.name)));
                    self.duplicates_in(&p.value, pointer, found);
                    pointer.truncate(len);
                }
            }
            Value::Array(array) => {
                for (i, item) in array.elements.iter().enumerate() {
                    pointer.push_str(&format!("/{i}"));
                    self.duplicates_in(item, pointer, found);
                    pointer.truncate(len);
                }
            }
            _ => {}
        }
    }

    /// Line and column of a byte offset.
    fn position_of(&self, offset: usize) -> Position {
        let offset = offset.min(self.text.len());
        // The lines that start at or before `offset`; the last of them holds it.
        let line = self.line_starts.partition_point(|start| *start <= offset);
        let line_start = self.line_starts[line.saturating_sub(1)];
        Position {
            line,
            column: self.chars_before(offset) - self.chars_before(line_start) + 1,
        }
    }

    /// How many characters the text holds before byte `offset`.
    fn chars_before(&self, offset: usize) -> usize {
        let k = offset / CHAR_STRIDE;
        let from = k * CHAR_STRIDE;
        self.chars_at[k] + char_starts(&self.text.as_bytes()[from..offset])
    }
}

/// The byte offset each line of `text` starts at, in order: 0, then the byte after each
/// line end. A line ends at CR, LF or CRLF (one end, not two), as editors count lines: a
/// file saved with CR alone (old Mac line ends) is still many lines, not one. SARIF's
/// default `newlineSequences` counts CRLF and LF only, so a SARIF log of these positions
/// has to name CR as well. `text` need not be UTF-8: a text that failed to parse is
/// located too.
fn line_starts(text: &[u8]) -> Vec<usize> {
    let mut starts = vec![0];
    for (i, b) in text.iter().enumerate() {
        let ends = match b {
            b'\n' => true,
            b'\r' => text.get(i + 1) != Some(&b'\n'),
            _ => false,
        };
        if ends {
            starts.push(i + 1);
        }
    }
    starts
}

/// The line and column of byte `offset` of `text`, lines ending as [`line_starts`] says,
/// the column counting characters: for one position in a text not otherwise located (a
/// syntax error), where building a [`Locator`] would be wasted.
pub fn position_at(text: &[u8], offset: usize) -> Position {
    let offset = offset.min(text.len());
    // The whole text's line ends: whether a CR just before `offset` ends a line depends on
    // the byte at `offset`.
    let starts = line_starts(text);
    let line = starts.partition_point(|start| *start <= offset);
    let line_start = starts[line.saturating_sub(1)];
    Position {
        line,
        column: char_starts(&text[line_start..offset]) + 1,
    }
}

/// How many characters start in `bytes`: all bytes but UTF-8 continuation bytes.
fn char_starts(bytes: &[u8]) -> usize {
    bytes.iter().filter(|b| (**b & 0xC0) != 0x80).count()
}

/// Adds to `index` the member index of every object under `node` with more than
/// [`INDEXED_MEMBERS`] members.
fn index_members(node: &Value<'_>, index: &mut HashMap<usize, HashMap<String, usize>>) {
    match node {
        Value::Object(object) => {
            if object.properties.len() > INDEXED_MEMBERS {
                // Later members overwrite earlier ones: the last of a name counts.
                let names = object
                    .properties
                    .iter()
                    .enumerate()
                    .map(|(i, p)| (name(&p.name).to_owned(), i))
                    .collect();
                index.insert(object.range.start, names);
            }
            for p in &object.properties {
                index_members(&p.value, index);
            }
        }
        Value::Array(array) => {
            for item in &array.elements {
                index_members(item, index);
            }
        }
        _ => {}
    }
}

fn name<'b>(name: &'b ObjectPropName<'_>) -> &'b str {
    match name {
        ObjectPropName::String(lit) => lit.value.as_ref(),
        ObjectPropName::Word(lit) => lit.value,
    }
}

/// A member name as a pointer token (RFC 6901).
pub(crate) fn escape(name: &str) -> std::borrow::Cow<'_, str> {
    if name.contains(['~', '/']) {
        name.replace('~', "~0").replace('/', "~1").into()
    } else {
        name.into()
    }
}

/// A pointer token as the member name it stands for (RFC 6901: `~1` is `/`, `~0` is `~`).
pub(crate) fn unescape(token: &str) -> std::borrow::Cow<'_, str> {
    if token.contains('~') {
        token.replace("~1", "/").replace("~0", "~").into()
    } else {
        token.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str, pointer: &str) -> (usize, usize) {
        let p = Locator::new(text).locate(pointer);
        (p.line, p.column)
    }

    const DOC: &str = "{\n  \"a2a\": {\n    \"profiles\": [\"x\", {\"é\": 1}],\n    \"a/b~c\": true\n  },\n  \"dup\": 1, \"dup\": [null]\n}\n";

    #[test]
    fn members_items_and_escaped_names() {
        assert_eq!(at(DOC, ""), (1, 1));
        assert_eq!(at(DOC, "/a2a"), (2, 10));
        assert_eq!(at(DOC, "/a2a/profiles"), (3, 17));
        assert_eq!(at(DOC, "/a2a/profiles/0"), (3, 18));
        assert_eq!(at(DOC, "/a2a/profiles/1"), (3, 23));
        // Columns count characters: "é" is two bytes, one column.
        assert_eq!(at(DOC, "/a2a/profiles/1/é"), (3, 29));
        assert_eq!(at(DOC, "/a2a/a~1b~0c"), (4, 14));
    }

    #[test]
    fn the_last_duplicate_member_counts() {
        assert_eq!(at(DOC, "/dup"), (6, 20));
        assert_eq!(at(DOC, "/dup/0"), (6, 21));
    }

    #[test]
    fn a_missing_value_points_at_its_nearest_ancestor() {
        assert_eq!(at(DOC, "/a2a/refreshedAt"), (2, 10));
        assert_eq!(at(DOC, "/a2a/profiles/7"), (3, 17));
        assert_eq!(at(DOC, "/a2a/profiles/01"), (3, 17));
        assert_eq!(at(DOC, "/nope/deeper"), (1, 1));
    }

    #[test]
    fn duplicate_members_at_every_depth() {
        let text = "{\n  \"a\": 1,\n  \"a\": 2,\n  \"l\": [{\"x/y\": 1, \"x/y\": 2, \"x/y\": 3}],\n  \"b\": {\"c\": 1}\n}";
        let dups = Locator::new(text).duplicate_members();
        let summary: Vec<(&str, Vec<(usize, usize)>)> = dups
            .iter()
            .map(|(p, _, at)| (p.as_str(), at.iter().map(|a| (a.line, a.column)).collect()))
            .collect();
        assert_eq!(
            summary,
            [
                ("/a", vec![(2, 3), (3, 3)]),
                ("/l/0/x~1y", vec![(4, 10), (4, 20), (4, 30)]),
            ]
        );
        assert!(
            Locator::new(DOC)
                .duplicate_members()
                .iter()
                .any(|(p, n, _)| p == "/dup" && n == "dup")
        );
        assert!(
            Locator::new("{\"a\": {\"a\": 1}}")
                .duplicate_members()
                .is_empty()
        );
    }

    #[test]
    fn crlf_and_unparsable_text() {
        assert_eq!(at("{\r\n  \"x\": 1\r\n}", "/x"), (2, 8));
        assert_eq!(at("{ not json", "/x"), (1, 1));
        assert_eq!(at("", ""), (1, 1));
    }

    /// CR, LF and CRLF each end one line, as editors count them (the audit's file of lone
    /// CRs read as one line: 1:70 for 4:8); a position at the LF of a CRLF is on the CR's line.
    #[test]
    fn a_lone_cr_ends_a_line_as_lf_and_crlf_do() {
        let text = "{\r  \"a\": 1,\r\n  \"b\": {\n    \"c\": 2\r  }\r}";
        assert_eq!(at(text, "/a"), (2, 8));
        assert_eq!(at(text, "/b"), (3, 8));
        assert_eq!(at(text, "/b/c"), (4, 10));
        let p = |offset| {
            let p = position_at(b"a\r\nb\rc", offset);
            (p.line, p.column)
        };
        assert_eq!([p(2), p(3), p(5), p(99)], [(1, 3), (2, 1), (3, 1), (3, 2)]);
    }

    /// A large document (the audit's: an object of 40,000 members, each a finding, some
    /// named twice; long lines, with characters of several bytes) is located as a small one
    /// is: every position as counted from the start, duplicates found once each.
    #[test]
    fn a_large_document_is_located_exactly() {
        let n = 40_000;
        let mut text = String::from("{\"é\": {");
        for i in 0..n {
            text.push_str(&format!("\"m{i}\": \"ü{i}\", "));
            if i % 1_000 == 999 {
                text.push('\n');
            }
        }
        text.push_str("\"m7\": 1, \"m9\": 2}}");
        let locator = Locator::new(&text);
        // Counted naively, for a sample of members.
        let naive = |marker: &str| {
            let at = text.rfind(marker).expect("marker") + marker.len();
            let before = &text[..at];
            let line_start = before.rfind('\n').map_or(0, |i| i + 1);
            (
                before.matches('\n').count() + 1,
                before[line_start..].chars().count() + 1,
            )
        };
        for i in [0, 1, 7, 9, 1_234, 39_999] {
            let p = locator.locate(&format!("/é/m{i}"));
            assert_eq!((p.line, p.column), naive(&format!("\"m{i}\": ")), "m{i}");
        }
        let p = locator.locate("/é/none");
        assert_eq!((p.line, p.column), naive("\"é\": "));
        let dups: Vec<String> = locator
            .duplicate_members()
            .into_iter()
            .map(|(pointer, _, at)| format!("{pointer} {}", at.len()))
            .collect();
        assert_eq!(dups, ["/é/m7 2", "/é/m9 2"]);
    }
}
