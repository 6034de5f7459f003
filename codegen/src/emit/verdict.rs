//! Schema verdicts as generated Rust: one `fn(&Value) -> bool` per schema node.
//!
//! `openwop validate` runs in CI on every push, and per document most of its time went to
//! jsonschema's verdict (`is_valid`): an interpreter walking compiled keyword nodes, a
//! virtual call and a property-map lookup per keyword, a regex engine per `pattern`
//! (issue #29: slower than ajv, which compiles each schema to code). The generator knows
//! the schemas, so it writes the verdict out as code instead: each node a function of
//! plain `match`es and comparisons, `$ref` a direct call, `pattern` the one-pass matcher of
//! `patterns` where the pattern is in its subset.
//!
//! Only the verdict is generated. Errors, which are the product's output and must read as
//! jsonschema's, are still collected by jsonschema, and only under what the verdict
//! rejects (`split`'s per-property pass). A node with a keyword outside the subset written
//! here (a `format` other than `date`, a `pattern` that needs backtracking, `multipleOf`,
//! `propertyNames`, …) is not guessed at: its function asks jsonschema for that node's
//! verdict (`{"$ref": "<uri>#<pointer>"}`, compiled once, on first use). The closed records
//! of `closed` are read as the registry registers them (`additionalProperties: false` over
//! their declared names). `runtime/tests/validate_differential.rs` holds every generated
//! verdict to jsonschema's on every vector, single mistake and pair of mistakes.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use serde_json::{Map, Value};

use crate::closed::Closed;
use crate::emit::patterns;
use crate::load::Corpus;
use crate::uris::{SchemaUris, join, pointer_token as token};

/// Keywords that never change a verdict.
const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$comment",
    "$defs",
    "definitions",
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentMediaType",
    "contentEncoding",
];

/// Where a node's schema comes from.
enum Source {
    /// A node of a corpus file: its URI and JSON pointer.
    Corpus { uri: String, pointer: String },
    /// A schema the generator made (a split root), read against `base`.
    Inline { base: String, schema: Value },
}

/// The generated verdict functions of one crate.
pub(crate) struct Verdicts<'a> {
    corpus: &'a Corpus,
    by_uri: BTreeMap<String, String>,
    closed: BTreeMap<(String, String), BTreeSet<String>>,
    /// `uri#pointer` → function index.
    index: BTreeMap<String, usize>,
    sources: Vec<Source>,
    bodies: Vec<Option<TokenStream>>,
    /// `uri#pointer` of the nodes jsonschema decides, by slot.
    deferred: Vec<String>,
    /// Pattern source → its program's slot.
    programs: BTreeMap<String, usize>,
    program_list: Vec<patterns::Program>,
}

impl<'a> Verdicts<'a> {
    pub(crate) fn new(corpus: &'a Corpus, uris: &SchemaUris, closed: &[Closed]) -> Self {
        Verdicts {
            corpus,
            by_uri: uris
                .by_file
                .iter()
                .map(|(rel, uri)| (uri.clone(), rel.clone()))
                .collect(),
            closed: closed
                .iter()
                .map(|c| ((c.uri.clone(), c.pointer.clone()), c.names.clone()))
                .collect(),
            index: BTreeMap::new(),
            sources: Vec::new(),
            bodies: Vec::new(),
            deferred: Vec::new(),
            programs: BTreeMap::new(),
            program_list: Vec::new(),
        }
    }

    /// The function deciding the schema at `uri#pointer`.
    pub(crate) fn node(&mut self, uri: &str, pointer: &str) -> syn::Ident {
        let key = format!("{uri}#{pointer}");
        let i = match self.index.get(&key) {
            Some(i) => *i,
            None => {
                let i = self.sources.len();
                self.index.insert(key, i);
                self.sources.push(Source::Corpus {
                    uri: uri.to_owned(),
                    pointer: pointer.to_owned(),
                });
                self.bodies.push(None);
                i
            }
        };
        format_ident!("v{i}")
    }

    /// The function deciding `schema`, a schema the generator made, read against `base`.
    pub(crate) fn inline(&mut self, base: &str, schema: Value) -> syn::Ident {
        let i = self.sources.len();
        self.sources.push(Source::Inline {
            base: base.to_owned(),
            schema,
        });
        self.bodies.push(None);
        format_ident!("v{i}")
    }

    /// Every function, their helpers and the deferred nodes' table, as one module's items.
    pub(crate) fn emit(mut self) -> TokenStream {
        // Generating a body may reach new nodes: until none is left.
        while let Some(i) = self.bodies.iter().position(Option::is_none) {
            let body = self.body(i);
            self.bodies[i] = Some(body);
        }
        let keys: BTreeMap<usize, String> =
            self.index.iter().map(|(k, i)| (*i, k.clone())).collect();
        let fns = self.bodies.iter().enumerate().map(|(i, body)| {
            let name = format_ident!("v{i}");
            let doc = match keys.get(&i) {
                Some(key) => format!(" `{key}`"),
                None => " A schema the generator made (see `split`).".to_owned(),
            };
            quote! {
                #[doc = #doc]
                pub(super) fn #name(v: &Value) -> bool { #body }
            }
        });
        let deferred_count = self.deferred.len();
        let deferred = self.deferred.iter();
        let programs = self.program_list.iter().enumerate().map(|(slot, p)| {
            let name = format_ident!("p{slot}");
            let source = self
                .programs
                .iter()
                .find(|(_, s)| **s == slot)
                .map_or("", |(k, _)| k.as_str());
            let doc = format!(" `{source}`");
            let body = program_fn(p);
            quote! {
                #[doc = #doc]
                fn #name(s: &str) -> bool { #body }
            }
        });
        quote! {
            use serde_json::Value;
            use std::sync::OnceLock;
            /// The nodes jsonschema decides, by slot: `uri#pointer`.
            static DEFERRED: [&str; #deferred_count] = [#(#deferred),*];
            static COMPILED: [OnceLock<Option<jsonschema::Validator>>; #deferred_count] =
                [const { OnceLock::new() }; #deferred_count];
            /// jsonschema's verdict on a node outside the generated subset (compiled on first
            /// use). A node that does not compile rejects everything: the caller then
            /// collects jsonschema's errors, which report why.
            fn deferred(slot: usize, v: &Value) -> bool {
                COMPILED[slot]
                    .get_or_init(|| {
                        let mut reference = serde_json::Map::new();
                        reference.insert("$ref".to_owned(), Value::String(DEFERRED[slot].to_owned()));
                        super::compile_schema(&Value::Object(reference)).ok()
                    })
                    .as_ref()
                    .is_some_and(|validator| validator.is_valid(v))
            }
            // The patterns decided in one pass (the codegen's `patterns`), written out.
            #(#programs)*
            /// JSON Schema's equality: numbers by value (`1` equals `1.0`), objects by
            /// members whatever their order.
            fn equal(a: &Value, b: &Value) -> bool {
                match (a, b) {
                    (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
                        (Some(x), Some(y)) => x == y,
                        _ => match (x.as_u64(), y.as_u64()) {
                            (Some(x), Some(y)) => x == y,
                            _ => x.as_f64() == y.as_f64(),
                        },
                    },
                    (Value::Array(x), Value::Array(y)) => {
                        x.len() == y.len() && x.iter().zip(y).all(|(a, b)| equal(a, b))
                    }
                    (Value::Object(x), Value::Object(y)) => {
                        x.len() == y.len()
                            && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| equal(a, b)))
                    }
                    _ => a == b,
                }
            }
            fn unique(items: &[Value]) -> bool {
                items
                    .iter()
                    .enumerate()
                    .all(|(i, a)| items[i + 1..].iter().all(|b| !equal(a, b)))
            }
            /// `type: integer`: a number with no fractional part (`1.0` is one).
            fn integer(v: &Value) -> bool {
                match v {
                    Value::Number(n) => {
                        n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
                    }
                    _ => false,
                }
            }
            /// A number's value for `minimum`/`maximum` (every limit the subset takes is
            /// an integer, exact as `f64` and as `i128`).
            fn below(n: &serde_json::Number, limit: i64) -> bool {
                match (n.as_i64(), n.as_u64()) {
                    (Some(x), _) => x < limit,
                    (None, Some(_)) => false,
                    _ => n.as_f64().is_some_and(|f| f < limit as f64),
                }
            }
            fn above(n: &serde_json::Number, limit: i64) -> bool {
                match (n.as_i64(), n.as_u64()) {
                    (Some(x), _) => x > limit,
                    (None, Some(_)) => true,
                    _ => n.as_f64().is_some_and(|f| f > limit as f64),
                }
            }
            /// `format: date` as jsonschema checks it: `YYYY-MM-DD`, a real month and day.
            fn date(s: &str) -> bool {
                let b = s.as_bytes();
                if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
                    return false;
                }
                let digits = |r: std::ops::Range<usize>| {
                    b[r].iter().try_fold(0u32, |n, d| d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0')))
                };
                let (Some(year), Some(month), Some(day)) = (digits(0..4), digits(5..7), digits(8..10)) else {
                    return false;
                };
                let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
                let last = match month {
                    1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
                    4 | 6 | 9 | 11 => 30,
                    2 if leap => 29,
                    2 => 28,
                    _ => return false,
                };
                (1..=last).contains(&day)
            }
            #(#fns)*
        }
    }

    /// The body of function `i`.
    fn body(&mut self, i: usize) -> TokenStream {
        let (base, pointer, schema) = match &self.sources[i] {
            Source::Corpus { uri, pointer } => {
                let schema = self
                    .by_uri
                    .get(uri)
                    .and_then(|rel| self.corpus.value(rel).pointer(pointer))
                    .cloned();
                (uri.clone(), Some(pointer.clone()), schema)
            }
            Source::Inline { base, schema } => (base.clone(), None, Some(schema.clone())),
        };
        let closed = pointer
            .as_ref()
            .and_then(|p| self.closed.get(&(base.clone(), p.clone())))
            .cloned();
        let generated = schema
            .as_ref()
            .and_then(|schema| self.schema(&base, pointer.as_deref(), schema, closed.as_ref()));
        match (generated, pointer) {
            (Some(body), _) => body,
            (None, Some(pointer)) => {
                let slot = self.deferred.len();
                self.deferred.push(format!("{base}#{pointer}"));
                quote!(deferred(#slot, v))
            }
            // A made-up schema outside the subset: the generator's own mistake.
            (None, None) => panic!("a schema the generator made is outside the verdict subset"),
        }
    }

    /// The checks of `schema` (at `base#pointer`), or `None` when a keyword is outside the
    /// subset. `closed`: the record's declared names, when the registry closes it.
    fn schema(
        &mut self,
        base: &str,
        pointer: Option<&str>,
        schema: &Value,
        closed: Option<&BTreeSet<String>>,
    ) -> Option<TokenStream> {
        let obj = match schema {
            Value::Bool(true) => return Some(quote!(true)),
            Value::Bool(false) => return Some(quote!(false)),
            Value::Object(obj) => obj,
            _ => return None,
        };
        // A nested `$id` moves the base; anchors and dynamic references are the
        // registry's business.
        if pointer.is_some_and(|p| !p.is_empty()) && obj.contains_key("$id") {
            return None;
        }
        let sub = |key: &str| pointer.map(|p| format!("{p}/{}", token(key)));
        let mut checks: Vec<TokenStream> = Vec::new();
        let mut object: Vec<TokenStream> = Vec::new();
        let mut string: Vec<TokenStream> = Vec::new();
        let mut array: Vec<TokenStream> = Vec::new();
        let mut number: Vec<TokenStream> = Vec::new();
        let mut members: Option<TokenStream> = None;
        let mut required: Vec<String> = Vec::new();
        for (key, value) in obj {
            let key = key.as_str();
            match key {
                "$id" | "properties" | "additionalProperties" | "patternProperties" => {}
                "unevaluatedProperties" if closed.is_some() => {}
                _ if ANNOTATIONS.contains(&key) || key.starts_with("x-") => {}
                "type" => checks.push(type_check(value)?),
                "enum" => {
                    let options = value.as_array()?;
                    let strings: Option<Vec<&str>> = options.iter().map(Value::as_str).collect();
                    let strings = strings?;
                    checks.push(quote!(if !matches!(v.as_str(), Some(#(#strings)|*)) {
                        return false;
                    }));
                }
                "const" => match value {
                    Value::String(s) => {
                        checks.push(quote!(if v.as_str() != Some(#s) { return false; }))
                    }
                    Value::Bool(b) => {
                        checks.push(quote!(if v.as_bool() != Some(#b) { return false; }))
                    }
                    Value::Null => checks.push(quote!(if !v.is_null() {
                        return false;
                    })),
                    _ => return None,
                },
                "required" => {
                    // Read in the one pass over the members below: `contains_key` hashes
                    // each name with SipHash, which cost more than the rest of a record.
                    for name in value.as_array()? {
                        let name = name.as_str()?.to_owned();
                        if !required.contains(&name) {
                            required.push(name);
                        }
                    }
                    if required.len() > 64 {
                        return None;
                    }
                }
                "minProperties" => {
                    let n = count(value)?;
                    object.push(quote!(if o.len() < #n { return false; }));
                }
                "maxProperties" => {
                    let n = count(value)?;
                    object.push(quote!(if o.len() > #n { return false; }));
                }
                "minItems" => {
                    let n = count(value)?;
                    array.push(quote!(if a.len() < #n { return false; }));
                }
                "maxItems" => {
                    let n = count(value)?;
                    array.push(quote!(if a.len() > #n { return false; }));
                }
                "uniqueItems" => {
                    if value.as_bool()? {
                        array.push(quote!(if !unique(a) {
                            return false;
                        }));
                    }
                }
                "items" => {
                    let f = self.child(base, sub("items"), value)?;
                    array.push(quote!(if !a.iter().all(#f) { return false; }));
                }
                "contains" => {
                    if obj.contains_key("minContains") || obj.contains_key("maxContains") {
                        return None;
                    }
                    let f = self.child(base, sub("contains"), value)?;
                    array.push(quote!(if !a.iter().any(#f) { return false; }));
                }
                "minLength" => {
                    let n = count(value)?;
                    string.push(quote!(if s.chars().count() < #n { return false; }));
                }
                "maxLength" => {
                    let n = count(value)?;
                    string.push(quote!(if s.chars().count() > #n { return false; }));
                }
                "pattern" => {
                    let slot = self.program(value.as_str()?)?;
                    let matcher = format_ident!("p{slot}");
                    string.push(quote!(if !#matcher(s) { return false; }));
                }
                "format" => match value.as_str()? {
                    "date" => string.push(quote!(if !date(s) {
                        return false;
                    })),
                    _ => return None,
                },
                "minimum" => {
                    let n = value.as_i64()?;
                    number.push(quote!(if below(n, #n) { return false; }));
                }
                "maximum" => {
                    let n = value.as_i64()?;
                    number.push(quote!(if above(n, #n) { return false; }));
                }
                "allOf" | "anyOf" | "oneOf" => {
                    let mut fs = Vec::new();
                    for (j, branch) in value.as_array()?.iter().enumerate() {
                        let at = sub(key).map(|p| format!("{p}/{j}"));
                        fs.push(self.child(base, at, branch)?);
                    }
                    checks.push(match key {
                        "allOf" => quote!(#(if !#fs(v) { return false; })*),
                        "anyOf" => quote!(if !(#(#fs(v))||*) { return false; }),
                        _ => quote!(if [#(#fs(v)),*].iter().filter(|ok| **ok).count() != 1 { return false; }),
                    });
                }
                "not" => {
                    let f = self.child(base, sub("not"), value)?;
                    checks.push(quote!(if #f(v) { return false; }));
                }
                "if" => {
                    let f = self.child(base, sub("if"), value)?;
                    let then = match obj.get("then") {
                        Some(t) => {
                            let g = self.child(base, sub("then"), t)?;
                            quote!(#g(v))
                        }
                        None => quote!(true),
                    };
                    let otherwise = match obj.get("else") {
                        Some(e) => {
                            let g = self.child(base, sub("else"), e)?;
                            quote!(#g(v))
                        }
                        None => quote!(true),
                    };
                    checks.push(
                        quote!(if !(if #f(v) { #then } else { #otherwise }) { return false; }),
                    );
                }
                // Without `if`, `then` and `else` are ignored.
                "then" | "else" => {}
                "$ref" => {
                    let reference = value.as_str()?;
                    let (path, fragment) = reference.split_once('#').unwrap_or((reference, ""));
                    if !(fragment.is_empty() || fragment.starts_with('/')) {
                        return None;
                    }
                    let uri = if path.is_empty() {
                        base.to_owned()
                    } else {
                        join(base, path)
                    };
                    if !self.by_uri.contains_key(&uri) {
                        return None;
                    }
                    let f = self.node(&uri, &unescape_fragment(fragment)?);
                    checks.push(quote!(if !#f(v) { return false; }));
                }
                _ => return None,
            }
        }
        // The object's members: declared ones against their schemas, the rest against
        // `patternProperties` and `additionalProperties` (or the closed record's names).
        let declared = match obj.get("properties") {
            Some(Value::Object(p)) => p.clone(),
            Some(_) => return None,
            None => Map::new(),
        };
        // Bit `i` of `seen`: the `i`th required name is present.
        let bit = |name: &str| {
            required.iter().position(|r| r == name).map(|i| {
                let bit = 1u64 << i;
                quote!(seen |= #bit;)
            })
        };
        let mut arms = Vec::new();
        for (name, schema) in &declared {
            let at = sub("properties").map(|p| format!("{p}/{}", token(name)));
            let f = self.child(base, at, schema)?;
            let seen = bit(name);
            arms.push(quote!(#name => { #seen if !#f(x) { return false; } }));
        }
        let undeclared: Vec<TokenStream> = required
            .iter()
            .filter(|r| !declared.contains_key(*r))
            .map(|r| {
                let seen = bit(r);
                quote!(#r => { #seen })
            })
            .collect();
        let mark =
            (!undeclared.is_empty()).then(|| quote!(match k.as_str() { #(#undeclared)* _ => {} }));
        let mut rest: Vec<TokenStream> = Vec::new();
        let mut takes_rest = false;
        if let Some(patterns) = obj.get("patternProperties") {
            // A declared name a pattern also matches is checked by both: left to jsonschema.
            if !declared.is_empty() {
                return None;
            }
            for (source, schema) in patterns.as_object()? {
                let slot = self.program(source)?;
                let at = sub("patternProperties").map(|p| format!("{p}/{}", token(source)));
                let f = self.child(base, at, schema)?;
                let matcher = format_ident!("p{slot}");
                rest.push(quote! {
                    if #matcher(k) {
                        matched = true;
                        if !#f(x) { return false; }
                    }
                });
            }
        }
        let additional = if let Some(names) = closed {
            let names: Vec<&String> = names
                .iter()
                .filter(|n| !declared.contains_key(*n))
                .collect();
            takes_rest = true;
            if names.is_empty() {
                quote!(if !matched {
                    return false;
                })
            } else {
                quote!(if !matched && !matches!(k.as_str(), #(#names)|*) {
                    return false;
                })
            }
        } else {
            match obj.get("additionalProperties") {
                None | Some(Value::Bool(true)) => quote!(),
                Some(Value::Bool(false)) => {
                    takes_rest = true;
                    quote!(if !matched {
                        return false;
                    })
                }
                Some(schema) => {
                    let f = self.child(base, sub("additionalProperties"), schema)?;
                    takes_rest = true;
                    quote!(if !matched && !#f(x) { return false; })
                }
            }
        };
        if !arms.is_empty() || !rest.is_empty() || takes_rest || !required.is_empty() {
            let fallback = if rest.is_empty() && !takes_rest {
                quote!(_ => { #mark })
            } else {
                // A closed record with no pattern: `matched` is never set.
                quote!(_ => {
                    #mark
                    let mut matched = false;
                    #(#rest)*
                    #additional
                })
            };
            let all = if required.len() == 64 {
                u64::MAX
            } else {
                (1u64 << required.len()) - 1
            };
            let check = (!required.is_empty()).then(|| quote!(if seen != #all { return false; }));
            members = Some(quote! {
                let mut seen = 0u64;
                for (k, x) in o {
                    match k.as_str() {
                        #(#arms)*
                        #fallback
                    }
                }
                #check
            });
        }
        let members = members.into_iter();
        let object = (!object.is_empty() || members.len() > 0)
            .then(|| quote!(if let Some(o) = v.as_object() { #(#object)* #(#members)* }));
        let string =
            (!string.is_empty()).then(|| quote!(if let Some(s) = v.as_str() { #(#string)* }));
        let array =
            (!array.is_empty()).then(|| quote!(if let Some(a) = v.as_array() { #(#array)* }));
        let number =
            (!number.is_empty()).then(|| quote!(if let Value::Number(n) = v { #(#number)* }));
        Some(quote!(#(#checks)* #object #string #array #number true))
    }

    /// A subschema at `pointer` (under `base`) as a callable: `true`/`false` schemas inline,
    /// anything else a function of its own. `None` for any other subschema of a schema the
    /// generator made (it has no pointer to call it by).
    fn child(
        &mut self,
        base: &str,
        pointer: Option<String>,
        schema: &Value,
    ) -> Option<TokenStream> {
        Some(match schema {
            Value::Bool(true) => quote!((|_: &Value| true)),
            Value::Bool(false) => quote!((|_: &Value| false)),
            _ => {
                let f = self.node(base, &pointer?);
                quote!(#f)
            }
        })
    }

    /// The slot of `source`'s one-pass program, when it has one that needs no regex.
    fn program(&mut self, source: &str) -> Option<usize> {
        if let Some(slot) = self.programs.get(source) {
            return Some(*slot);
        }
        let program = patterns::compile(source)?;
        if program.non_ascii() {
            return None;
        }
        let slot = self.program_list.len();
        self.program_list.push(program);
        self.programs.insert(source.to_owned(), slot);
        Some(slot)
    }
}

/// A pattern's one-pass program as straight-line code over the string's bytes: each step a
/// loop over a byte class (`patterns` proves greedy is the regex's answer).
fn program_fn(p: &patterns::Program) -> TokenStream {
    let steps = p.steps.iter().map(|step| {
        let class = byte_class(step.set);
        let bounded = (step.max != u32::MAX).then(|| {
            let max = step.max as usize;
            quote!(at - start < #max &&)
        });
        let min = (step.min > 0).then(|| {
            let min = step.min as usize;
            quote!(if at - start < #min { return false; })
        });
        let canonical = step.canonical.then(|| {
            quote!(if at - start > 1 && b[start] == b'0' {
                return false;
            })
        });
        quote! {
            let start = at;
            while #bounded at < b.len() && matches!(b[at], #class) { at += 1; }
            #min
            #canonical
        }
    });
    let end = if p.end {
        quote!(at == b.len())
    } else {
        quote!(true)
    };
    let optional = (!p.optional.is_empty()).then(|| {
        let literal = proc_macro2::Literal::byte_string(&p.optional);
        quote!(if let Some(rest) = s.as_bytes().strip_prefix(#literal) { if steps(rest) { return true; } })
    });
    quote! {
        #[allow(unused_variables, unused_mut)]
        fn steps(b: &[u8]) -> bool {
            let mut at = 0usize;
            #(#steps)*
            #end
        }
        #optional
        steps(s.as_bytes())
    }
}

/// A byte pattern for the ASCII bytes of `set` (`b'0'..=b'9' | b'-'`).
fn byte_class(set: u128) -> TokenStream {
    let mut parts = Vec::new();
    let mut b = 0u32;
    while b < 128 {
        if set >> b & 1 == 0 {
            b += 1;
            continue;
        }
        let lo = b;
        while b + 1 < 128 && set >> (b + 1) & 1 == 1 {
            b += 1;
        }
        let (l, h) = (
            proc_macro2::Literal::byte_character(lo as u8),
            proc_macro2::Literal::byte_character(b as u8),
        );
        parts.push(if lo == b { quote!(#l) } else { quote!(#l..=#h) });
        b += 1;
    }
    if parts.is_empty() {
        // A class of no ASCII byte takes nothing.
        return quote!(_ if false);
    }
    quote!(#(#parts)|*)
}

/// `type`: one name or a list.
fn type_check(value: &Value) -> Option<TokenStream> {
    let names: Vec<&str> = match value {
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) => items.iter().map(Value::as_str).collect::<Option<_>>()?,
        _ => return None,
    };
    let tests: Option<Vec<TokenStream>> = names
        .iter()
        .map(|name| {
            Some(match *name {
                "object" => quote!(v.is_object()),
                "array" => quote!(v.is_array()),
                "string" => quote!(v.is_string()),
                "number" => quote!(v.is_number()),
                "integer" => quote!(integer(v)),
                "boolean" => quote!(v.is_boolean()),
                "null" => quote!(v.is_null()),
                _ => return None,
            })
        })
        .collect();
    let tests = tests?;
    Some(quote!(if !(#(#tests)||*) { return false; }))
}

/// A non-negative integer keyword value (`minItems`, `minLength`, …).
fn count(value: &Value) -> Option<usize> {
    usize::try_from(value.as_u64()?).ok()
}

/// A URI fragment's JSON pointer, percent-decoded (`%25` and friends); `None` when it is
/// not one the generator can read back.
fn unescape_fragment(fragment: &str) -> Option<String> {
    if !fragment.contains('%') {
        return Some(fragment.to_owned());
    }
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}
