//! Constrained strings without a regex engine on the hot path.
//!
//! typify checks every `pattern` with `regress` (a backtracking ECMAScript engine) on each
//! conversion, and a host converts ids, tenants and versions on every request: a tenth of a
//! run GET's instructions went there. Most corpus patterns are an anchored run of
//! character classes (`^[A-Za-z0-9._~-]{1,128}$`, `^[0-9]{4}-[0-9]{2}-[0-9]{2}$`), which a
//! single left-to-right pass decides when each step with a range of counts is followed by a
//! step that cannot take the same character. `compile` recognises exactly those (and a
//! leading optional literal, `^(anon:)?…`); anything else keeps the regex.
//! `pattern_runtime.rs` is the matcher, emitted into the models as it is.

use std::collections::BTreeMap;

use proc_macro2::TokenStream;
use quote::quote;
use syn::visit_mut::VisitMut;

/// One step: the ASCII bytes it takes, whether it takes any non-ASCII character too, and
/// how many it takes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Step {
    pub(crate) set: u128,
    pub(crate) non_ascii: bool,
    pub(crate) min: u32,
    pub(crate) max: u32,
    /// The group `(0|[1-9][0-9]*)`: a run of digits without a leading zero (the corpus's
    /// `major.minor`). Greedy is still the regex's answer where what follows takes no digit.
    pub(crate) canonical: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Program {
    pub(crate) optional: Vec<u8>,
    pub(crate) steps: Vec<Step>,
    pub(crate) end: bool,
}

impl Program {
    pub(crate) fn non_ascii(&self) -> bool {
        self.steps.iter().any(|s| s.non_ascii)
    }
}

fn bits(bytes: impl IntoIterator<Item = u8>) -> u128 {
    bytes.into_iter().fold(0, |set, b| set | 1 << b)
}

/// `\d`, `\w`, `\s` and their complements as (ASCII set, takes non-ASCII).
fn class_escape(c: char) -> Option<(u128, bool)> {
    let digit = bits(b'0'..=b'9');
    let word = digit | bits(b'a'..=b'z') | bits(b'A'..=b'Z') | bits([b'_']);
    // ECMAScript's WhiteSpace and LineTerminator: the ASCII ones, and a dozen beyond.
    let space = bits([b'\t', b'\n', 0x0b, 0x0c, b'\r', b' ']);
    Some(match c {
        'd' => (digit, false),
        'w' => (word, false),
        's' => (space, true),
        'D' => (!digit & ASCII, true),
        'W' => (!word & ASCII, true),
        'S' => (!space & ASCII, true),
        _ => return None,
    })
}

const ASCII: u128 = u128::MAX;

/// An escaped literal: ECMAScript's identity escapes of syntax characters, and the control
/// escapes. `None` for anything whose meaning depends on flags or context (`\b`, `\1`, `\u`).
fn literal_escape(c: char) -> Option<u8> {
    match c {
        't' => Some(b'\t'),
        'n' => Some(b'\n'),
        'r' => Some(b'\r'),
        'f' => Some(0x0c),
        'v' => Some(0x0b),
        '^' | '$' | '\\' | '.' | '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|'
        | '/' | '-' => Some(c as u8),
        _ => None,
    }
}

/// The recognised subset, or `None` (the pattern keeps its regex).
pub(crate) fn compile(pattern: &str) -> Option<Program> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut at = 0;
    if chars.first() != Some(&'^') {
        return None;
    }
    at += 1;
    let mut optional = Vec::new();
    if chars.get(at) == Some(&'(') && canonical_group(&chars, at).is_none() {
        let close = chars[at..].iter().position(|&c| c == ')')? + at;
        if chars.get(close + 1) != Some(&'?') || chars.get(close + 2) == Some(&'?') {
            return None;
        }
        let mut i = at + 1;
        while i < close {
            let c = chars[i];
            let b = match c {
                '\\' => {
                    i += 1;
                    literal_escape(*chars.get(i)?)?
                }
                c if c.is_ascii() && !"^$.*+?()[]{}|".contains(c) => c as u8,
                _ => return None,
            };
            optional.push(b);
            i += 1;
        }
        if optional.is_empty() {
            return None;
        }
        at = close + 2;
    }
    let mut steps: Vec<Step> = Vec::new();
    let mut end = false;
    while at < chars.len() {
        if let Some(next) = canonical_group(&chars, at) {
            at = next;
            steps.push(Step {
                set: bits(b'0'..=b'9'),
                non_ascii: false,
                min: 1,
                max: u32::MAX,
                canonical: true,
            });
            continue;
        }
        let (set, non_ascii) = match chars[at] {
            '$' if at + 1 == chars.len() => {
                end = true;
                at += 1;
                continue;
            }
            '[' => {
                let (set, non_ascii, next) = class(&chars, at + 1)?;
                at = next;
                (set, non_ascii)
            }
            '\\' => {
                let c = *chars.get(at + 1)?;
                at += 2;
                match class_escape(c) {
                    Some(found) => found,
                    None => (bits([literal_escape(c)?]), false),
                }
            }
            '.' => {
                at += 1;
                (ASCII & !bits([b'\n', b'\r']), true)
            }
            c if c.is_ascii() && !"^$*+?()[]{}|".contains(c) => {
                at += 1;
                (bits([c as u8]), false)
            }
            _ => return None,
        };
        let (min, max, next) = quantifier(&chars, at)?;
        at = next;
        steps.push(Step {
            set,
            non_ascii,
            min,
            max,
            canonical: false,
        });
    }
    // Greedy is the regex's answer only where a step with a range of counts cannot take
    // the character that starts what follows it.
    for (i, step) in steps.iter().enumerate() {
        if step.min == step.max {
            continue;
        }
        if let Some(next) = steps.get(i + 1)
            && (next.min == 0 || next.set & step.set != 0 || (next.non_ascii && step.non_ascii))
        {
            return None;
        }
    }
    Some(Program {
        optional,
        steps,
        end,
    })
}

/// The index after a canonical-integer group at `at` (`(0|[1-9][0-9]*)` or
/// `(0|[1-9]\d*)`, not quantified), or `None`.
fn canonical_group(chars: &[char], at: usize) -> Option<usize> {
    ["(0|[1-9][0-9]*)", "(0|[1-9]\\d*)"]
        .iter()
        .find_map(|spelling| {
            let len = spelling.chars().count();
            let here: String = chars.get(at..at + len)?.iter().collect();
            let next = at + len;
            (here == *spelling && !matches!(chars.get(next), Some('?' | '*' | '+' | '{')))
                .then_some(next)
        })
}

/// A class body from after `[` to its `]`: (set, takes non-ASCII, index after `]`).
fn class(chars: &[char], mut at: usize) -> Option<(u128, bool, usize)> {
    let negated = chars.get(at) == Some(&'^');
    if negated {
        at += 1;
    }
    let (mut set, mut non_ascii) = (0u128, false);
    let mut first = true;
    loop {
        let c = *chars.get(at)?;
        if c == ']' && !first {
            at += 1;
            break;
        }
        first = false;
        // One member: an escape (which may be a whole class) or a character.
        let lo = match c {
            '\\' => {
                let e = *chars.get(at + 1)?;
                at += 2;
                if let Some((s, n)) = class_escape(e) {
                    set |= s;
                    non_ascii |= n;
                    continue;
                }
                match e {
                    'b' => 0x08,
                    e => literal_escape(e)?,
                }
            }
            ']' => return None,
            c if c.is_ascii() => {
                at += 1;
                c as u8
            }
            _ => return None,
        };
        if chars.get(at) == Some(&'-') && chars.get(at + 1).is_some_and(|&c| c != ']') {
            let hi = match chars[at + 1] {
                '\\' => {
                    let e = *chars.get(at + 2)?;
                    at += 3;
                    literal_escape(e)?
                }
                c if c.is_ascii() => {
                    at += 2;
                    c as u8
                }
                _ => return None,
            };
            if hi < lo {
                return None;
            }
            set |= bits(lo..=hi);
        } else {
            set |= bits([lo]);
        }
    }
    if negated {
        Some((!set, true, at))
    } else {
        Some((set, non_ascii, at))
    }
}

/// A greedy quantifier at `at` (none: exactly one): (min, max, index after it).
fn quantifier(chars: &[char], at: usize) -> Option<(u32, u32, usize)> {
    let (min, max, next) = match chars.get(at) {
        Some('?') => (0, 1, at + 1),
        Some('*') => (0, u32::MAX, at + 1),
        Some('+') => (1, u32::MAX, at + 1),
        Some('{') => {
            let close = chars[at..].iter().position(|&c| c == '}')? + at;
            let body: String = chars[at + 1..close].iter().collect();
            let number = |s: &str| {
                (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| s.parse::<u32>().ok())
                    .flatten()
            };
            let (min, max) = match body.split_once(',') {
                None => {
                    let n = number(&body)?;
                    (n, n)
                }
                Some((lo, "")) => (number(lo)?, u32::MAX),
                Some((lo, hi)) => (number(lo)?, number(hi)?),
            };
            if max < min {
                return None;
            }
            (min, max, close + 1)
        }
        _ => return Some((1, 1, at)),
    };
    // A lazy quantifier (`+?`) matches the same strings here, but keep the subset plain.
    if chars.get(next) == Some(&'?') {
        return None;
    }
    Some((min, max, next))
}

/// The matcher's source, for the models' `mod pattern`.
pub(crate) fn runtime() -> TokenStream {
    include_str!("pattern_runtime.rs")
        .parse()
        .expect("pattern_runtime.rs is Rust")
}

fn program_tokens(p: &Program) -> TokenStream {
    let optional = proc_macro2::Literal::byte_string(&p.optional);
    let steps = p.steps.iter().map(|s| {
        // Hex, so a reader can see which bytes a set holds.
        let set = syn::LitInt::new(&format!("0x{:032x}", s.set), proc_macro2::Span::call_site());
        let min = proc_macro2::Literal::u32_unsuffixed(s.min);
        let max = if s.max == u32::MAX {
            quote!(u32::MAX)
        } else {
            let max = proc_macro2::Literal::u32_unsuffixed(s.max);
            quote!(#max)
        };
        let canonical = s.canonical;
        quote!(Step { set: #set, min: #min, max: #max, canonical: #canonical })
    });
    let (end, non_ascii) = (p.end, p.non_ascii());
    quote! {
        Ascii { optional: #optional, steps: &[#(#steps),*], end: #end, non_ascii: #non_ascii }
    }
}

/// Rewrites typify's `if PATTERN.find(value).is_none()` to consult a compiled program
/// (`pattern::P<n>`, one per distinct pattern) first, wherever the pattern compiles; the
/// regex stays for what the program leaves to it.
pub(crate) fn rewrite(file: &mut syn::File) {
    let mut visitor = Rewrite {
        compiled: BTreeMap::new(),
        order: Vec::new(),
    };
    visitor.visit_file_mut(file);
    if visitor.order.is_empty() {
        return;
    }
    let runtime = runtime();
    let statics = visitor
        .order
        .iter()
        .enumerate()
        .map(|(n, (source, program))| {
            let name = quote::format_ident!("P{n}");
            let doc = format!(" `{source}`");
            let program = program_tokens(program);
            quote!(#[doc = #doc] pub static #name: Ascii = #program;)
        });
    file.items.push(syn::parse_quote! {
        /// Anchored patterns decided in one pass (see the codegen's `patterns`).
        mod pattern {
            #runtime
            #(#statics)*
        }
    });
}

struct Rewrite {
    /// Pattern → its index in `order`, or `None` when it keeps the regex alone.
    compiled: BTreeMap<String, Option<usize>>,
    order: Vec<(String, Program)>,
}

/// The pattern of a `static PATTERN: LazyLock<regress::Regex> = …Regex::new("…")…` item.
fn regex_source(item: &syn::ItemStatic) -> Option<String> {
    if item.ident != "PATTERN" || !quote!(#item).to_string().contains("regress") {
        return None;
    }
    struct Lit(Option<String>);
    impl syn::visit::Visit<'_> for Lit {
        fn visit_lit_str(&mut self, lit: &syn::LitStr) {
            self.0.get_or_insert_with(|| lit.value());
        }
    }
    let mut found = Lit(None);
    syn::visit::Visit::visit_item_static(&mut found, item);
    found.0
}

impl VisitMut for Rewrite {
    fn visit_block_mut(&mut self, block: &mut syn::Block) {
        syn::visit_mut::visit_block_mut(self, block);
        let Some(source) = block.stmts.iter().find_map(|stmt| match stmt {
            syn::Stmt::Item(syn::Item::Static(s)) => regex_source(s),
            _ => None,
        }) else {
            return;
        };
        let index = match self.compiled.get(&source) {
            Some(known) => *known,
            None => {
                let index = compile(&source).map(|program| {
                    self.order.push((source.clone(), program));
                    self.order.len() - 1
                });
                self.compiled.insert(source, index);
                index
            }
        };
        let Some(index) = index else { return };
        let name = quote::format_ident!("P{index}");
        let regex_check = quote!(PATTERN.find(value).is_none()).to_string();
        for stmt in &mut block.stmts {
            if let syn::Stmt::Expr(syn::Expr::If(test), _) = stmt {
                let cond = &test.cond;
                if quote!(#cond).to_string() == regex_check {
                    *test.cond = syn::parse_quote! {
                        !pattern::#name.is_match(value, |v| PATTERN.find(v).is_some())
                    };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    mod pattern {
        include!("pattern_runtime.rs");
    }

    use super::*;

    fn fast(p: &Program) -> pattern::Ascii {
        let steps: Vec<pattern::Step> = p
            .steps
            .iter()
            .map(|s| pattern::Step {
                set: s.set,
                min: s.min,
                max: s.max,
                canonical: s.canonical,
            })
            .collect();
        pattern::Ascii {
            optional: p.optional.clone().leak(),
            steps: steps.leak(),
            end: p.end,
            non_ascii: p.non_ascii(),
        }
    }

    /// Every `pattern` in a corpus directory tree.
    fn corpus_patterns(root: &std::path::Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(root) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                corpus_patterns(&path, out);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let value: Option<serde_json::Value> = match path.extension().and_then(|e| e.to_str()) {
                Some("json") => serde_json::from_str(&text).ok(),
                Some("yaml" | "yml") => yaml_serde::from_str(&text).ok(),
                _ => None,
            };
            if let Some(v) = value {
                collect(&v, out);
            }
        }
    }

    fn collect(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(map) => {
                for (k, child) in map {
                    if k == "pattern"
                        && let Some(p) = child.as_str()
                    {
                        out.push(p.to_owned());
                    }
                    collect(child, out);
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|c| collect(c, out)),
            _ => {}
        }
    }

    /// A small deterministic generator (no `rand` in the workspace's codegen).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % n.max(1)
        }
    }

    /// Strings near the pattern: built from its own steps (so many match), then mutated
    /// with characters from its classes, from just outside them, and non-ASCII ones.
    fn probes(p: &Program, rng: &mut Lcg) -> Vec<String> {
        let members = |set: u128| -> Vec<char> {
            (0u8..128)
                .filter(|b| set >> b & 1 == 1)
                .map(char::from)
                .collect()
        };
        let extra: Vec<char> = "aZ09._~-:/ {}$\t\nxé😀\u{a0}\u{feff}".chars().collect();
        let mut out = vec![String::new()];
        for _ in 0..400 {
            let mut s = String::new();
            let noisy = rng.next(2) == 0;
            if !p.optional.is_empty() && rng.next(2) == 0 {
                s.push_str(std::str::from_utf8(&p.optional).unwrap());
            }
            for step in &p.steps {
                let pool = members(step.set);
                let span = (step.max.min(step.min + 4) - step.min) as usize;
                let mut count = step.min as usize + rng.next(span + 1 + usize::from(noisy));
                if noisy && count > 0 && rng.next(6) == 0 {
                    count -= 1;
                }
                for _ in 0..count {
                    if pool.is_empty() || (noisy && rng.next(8) == 0) {
                        s.push(extra[rng.next(extra.len())]);
                    } else {
                        s.push(pool[rng.next(pool.len())]);
                    }
                }
            }
            if noisy && rng.next(3) == 0 {
                s.push(extra[rng.next(extra.len())]);
            }
            out.push(s);
        }
        out
    }

    #[test]
    fn every_compiled_corpus_pattern_agrees_with_regress() {
        let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut patterns = Vec::new();
        for dir in ["schemas", "spec", "api", "../shared/upstream/openwop"] {
            corpus_patterns(&here.join(dir), &mut patterns);
        }
        patterns.extend(
            [
                "^(anon:)?[A-Za-z0-9._~-]{1,128}/[A-Za-z0-9._~-]{16,128}$",
                "^[^\\s/]{1,256}$",
                "^\\S+$",
                "^https://",
                "^[a-z][a-z0-9-]*$",
                "^a.c$",
                "^[\\d\\w]{2,}x?$",
                "^x{3}y{0,2}$",
                "^(0|[1-9][0-9]*)$",
                "^v(0|[1-9]\\d*)-[a-z]+$",
            ]
            .map(str::to_owned),
        );
        patterns.sort();
        patterns.dedup();
        let mut rng = Lcg(17);
        let mut compiled = 0;
        for source in &patterns {
            let Some(program) = compile(source) else {
                continue;
            };
            compiled += 1;
            let regex = regress::Regex::new(source).unwrap();
            let matcher = fast(&program);
            let mut matched = 0;
            for probe in probes(&program, &mut rng) {
                let want = regex.find(&probe).is_some();
                let got = matcher.is_match(&probe, |v| regex.find(v).is_some());
                assert_eq!(got, want, "{source} on {probe:?}");
                matched += usize::from(want);
            }
            assert!(
                matched > 0,
                "{source}: no probe matched, the test shows nothing"
            );
        }
        assert!(
            compiled >= 20,
            "only {compiled} of {} compiled",
            patterns.len()
        );
    }

    #[test]
    fn what_needs_backtracking_keeps_the_regex() {
        for source in [
            "^[a-z]*[a-z0-9]$",              // the run could end anywhere
            "^[a-z]+a?b$",                   // what follows may take nothing
            "^(a|b)c$",                      // alternation
            "^(?!openwop\\.)[a-z]+$",        // lookahead
            "^[a-z]+?$",                     // lazy
            "^[a-z][a-z0-9]*(_[a-z0-9]+)*$", // a repeated group
            "[a-z]+",                        // unanchored
            "^é$",                           // a non-ASCII literal
            "^(0|[1-9][0-9]*)[0-9]$",        // a digit may follow the integer
            "^(0|[1-9][0-9]*)?x$",           // a quantified integer group
        ] {
            assert_eq!(compile(source), None, "{source}");
        }
        let ids = compile("^(anon:)?[A-Za-z0-9._~-]{1,128}$").unwrap();
        assert_eq!(ids.optional, b"anon:");
        assert_eq!(
            (ids.steps[0].min, ids.steps[0].max, ids.end),
            (1, 128, true)
        );
    }
}
