//! `generated/src/versions.rs`: the upstream version registry
//! (`spec/v2/upstream-versions.json`) as code. A host advertises `refreshedAt` from it and
//! refuses to advertise a version it says upstream retired; an operator may replace it at
//! run time with a document of the same schema, which the runtime reads into the same
//! types. The file is optional: a corpus without it (upstream's) generates a module
//! whose [`BUILT_IN`] is `None`.

use std::collections::BTreeSet;

use proc_macro2::{Literal, TokenStream};
use quote::quote;
use serde_json::Value;

use crate::error::Result;
use crate::load::{At, UPSTREAM_VERSIONS};

/// The protocols a registry may speak for: the discovery families with a refresh window.
const PROTOCOLS: [&str; 2] = ["a2a", "mcp"];

/// Whether `s` is a real calendar date written `YYYY-MM-DD`.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = s.get(r)?;
        part.chars()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())
            .flatten()
    };
    let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// One `(protocol, version, retired)` row of the corpus's registry.
struct Row {
    protocol: String,
    version: String,
    retired: Option<String>,
}

/// Each protocol and the date its versions were last checked.
type CheckDates = Vec<(String, String)>;

/// Checks what the schema cannot say (real dates, no version listed twice, a retirement
/// not after the check that saw it) and returns the rows and each protocol's check date.
fn rows(doc: &Value) -> Result<(Vec<Row>, CheckDates)> {
    let at = At {
        file: UPSTREAM_VERSIONS,
    };
    let protocols = doc
        .get("protocols")
        .and_then(Value::as_object)
        .ok_or_else(|| at.shape("/protocols", "expected an object here"))?;
    if protocols.is_empty() {
        return Err(at.shape("/protocols", "names no protocol"));
    }
    let mut rows = Vec::new();
    let mut checked = Vec::new();
    for (name, entry) in protocols {
        let base = format!("/protocols/{name}");
        if !PROTOCOLS.contains(&name.as_str()) {
            return Err(at.shape(&base, format!("unknown protocol `{name}` (a2a or mcp)")));
        }
        at.str(entry, "/source")
            .map_err(|_| at.shape(&format!("{base}/source"), "expected a string here"))?;
        let checked_at = at
            .str(entry, "/checkedAt")
            .map_err(|_| at.shape(&format!("{base}/checkedAt"), "expected a date here"))?;
        if !is_date(checked_at) {
            return Err(at.shape(
                &format!("{base}/checkedAt"),
                format!("`{checked_at}` is not a YYYY-MM-DD date"),
            ));
        }
        let versions = at
            .array(entry, "/versions")
            .map_err(|_| at.shape(&format!("{base}/versions"), "expected an array here"))?;
        if versions.is_empty() {
            return Err(at.shape(&format!("{base}/versions"), "lists no version"));
        }
        let mut seen = BTreeSet::new();
        for (i, v) in versions.iter().enumerate() {
            let here = format!("{base}/versions/{i}");
            let version = at
                .str(v, "/version")
                .map_err(|_| at.shape(&format!("{here}/version"), "expected a string here"))?;
            if !seen.insert(version) {
                return Err(at.shape(
                    &format!("{here}/version"),
                    format!("`{version}` is listed twice"),
                ));
            }
            let retired = at
                .opt_str(v, "/retired")
                .map_err(|_| at.shape(&format!("{here}/retired"), "expected a date here"))?;
            if let Some(r) = retired
                && !is_date(r)
            {
                return Err(at.shape(
                    &format!("{here}/retired"),
                    format!("`{r}` is not a YYYY-MM-DD date"),
                ));
            }
            rows.push(Row {
                protocol: name.clone(),
                version: version.to_owned(),
                retired: retired.map(str::to_owned),
            });
        }
        checked.push((name.clone(), checked_at.to_owned()));
    }
    Ok((rows, checked))
}

/// The module; `doc` is the corpus's registry, when it has one.
pub(crate) fn emit(doc: Option<(&Value, &str)>) -> Result<TokenStream> {
    let types = quote! {
        /// The URI of the registry's schema (`spec/v2/upstream-versions.schema.json`), which
        /// a registry read at run time is validated against.
        pub const SCHEMA_URI: &str = "https://openwop.dev/spec/v2/upstream-versions.schema.json";

        /// A registry document: per protocol (`a2a`, `mcp`), what upstream publishes.
        #[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        pub struct Registry {
            #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
            pub schema: Option<String>,
            pub protocols: std::collections::BTreeMap<String, Protocol>,
        }

        /// One protocol's entry.
        #[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        pub struct Protocol {
            /// Where upstream publishes its versions.
            pub source: String,
            /// When the versions were last checked against upstream (`YYYY-MM-DD`).
            pub checked_at: String,
            /// Every version or revision upstream publishes, oldest first.
            pub versions: Vec<Version>,
        }

        /// One published version or revision.
        #[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        pub struct Version {
            pub version: String,
            /// When upstream retired it (`YYYY-MM-DD`), if it has.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub retired: Option<String>,
        }

        /// One row of the built-in registry, as constants.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct Known {
            pub protocol: &'static str,
            pub version: &'static str,
            pub retired: Option<&'static str>,
        }

        impl Registry {
            /// The registry this crate was generated with, parsed; `None` when the corpus
            /// had none.
            pub fn built_in() -> Option<Registry> {
                BUILT_IN.and_then(|text| serde_json::from_str(text).ok())
            }
        }
    };
    let Some((doc, text)) = doc else {
        return Ok(quote! {
            #types
            /// The corpus had no `spec/v2/upstream-versions.json`.
            pub const BUILT_IN: Option<&str> = None;
            /// Each protocol's check date: none without a registry.
            pub static CHECKED_AT: &[(&str, &str)] = &[];
            /// Every published version: none without a registry.
            pub static KNOWN: &[Known] = &[];
        });
    };
    let (rows, checked) = rows(doc)?;
    let text = Literal::string(text);
    let checked = checked.iter().map(|(p, d)| quote!((#p, #d)));
    let known = rows.iter().map(|r| {
        let (p, v) = (&r.protocol, &r.version);
        let retired = match &r.retired {
            Some(d) => quote!(Some(#d)),
            None => quote!(None),
        };
        quote!(Known { protocol: #p, version: #v, retired: #retired })
    });
    Ok(quote! {
        #types
        /// `spec/v2/upstream-versions.json` as the corpus had it.
        pub const BUILT_IN: Option<&str> = Some(#text);
        /// Each protocol's `checkedAt` in the built-in registry.
        pub static CHECKED_AT: &[(&str, &str)] = &[#(#checked),*];
        /// Every version the built-in registry lists.
        pub static KNOWN: &[Known] = &[#(#known),*];
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dates_are_real_calendar_days() {
        assert!(is_date("2026-11-20"));
        assert!(is_date("2028-02-29"));
        assert!(!is_date("2026-02-29"));
        assert!(!is_date("2026-13-01"));
        assert!(!is_date("2026-1-01"));
        assert!(!is_date("20261120xx"));
    }

    #[test]
    fn a_registry_without_the_schemas_rules_is_refused() {
        let ok = json!({"protocols": {"a2a": {"source": "https://x", "checkedAt": "2026-11-20",
            "versions": [{"version": "0.3", "retired": "2026-10-01"}, {"version": "1.0"}]}}});
        let (found, checked) = rows(&ok).expect("valid");
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].retired.as_deref(), Some("2026-10-01"));
        assert_eq!(checked, vec![("a2a".to_owned(), "2026-11-20".to_owned())]);
        for bad in [
            json!({"protocols": {}}),
            json!({"protocols": {"grpc": {"source": "x", "checkedAt": "2026-11-20", "versions": [{"version": "1"}]}}}),
            json!({"protocols": {"a2a": {"source": "x", "checkedAt": "2026-02-30", "versions": [{"version": "1.0"}]}}}),
            json!({"protocols": {"a2a": {"source": "x", "checkedAt": "2026-11-20", "versions": []}}}),
            json!({"protocols": {"a2a": {"source": "x", "checkedAt": "2026-11-20", "versions": [{"version": "1.0"}, {"version": "1.0"}]}}}),
            json!({"protocols": {"a2a": {"source": "x", "checkedAt": "2026-11-20", "versions": [{"version": "1.0", "retired": "soon"}]}}}),
        ] {
            assert!(rows(&bad).is_err(), "{bad}");
        }
    }
}
