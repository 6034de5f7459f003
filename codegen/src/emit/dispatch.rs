//! `generated/src/dispatch.rs`: the routing tables of the interop map and the OpenAPI
//! document, as static data the runtime routes through.

use heck::ToUpperCamelCase;
use proc_macro2::TokenStream;
use quote::quote;

use crate::format::{ident, opt_str, str_slice};
use crate::map::InteropMap;
use crate::openapi::Operation;

pub(crate) fn emit(statuses: &[String], map: &InteropMap, ops: &[Operation]) -> TokenStream {
    let status_idents: Vec<_> = statuses
        .iter()
        .map(|s| ident(&s.to_upper_camel_case()))
        .collect();
    let status_docs: Vec<String> = statuses.iter().map(|s| format!(" `{s}`")).collect();
    // The statuses after which nothing happens to a run, by their wire names.
    let terminal_idents: Vec<_> = statuses
        .iter()
        .zip(&status_idents)
        .filter(|(s, _)| matches!(s.as_str(), "completed" | "failed" | "cancelled"))
        .map(|(_, ident)| ident.clone())
        .collect();
    // A corpus without those statuses has no terminal one (and no empty pattern).
    let is_terminal = if terminal_idents.is_empty() {
        quote!(false)
    } else {
        quote!(matches!(self, #( RunStatus::#terminal_idents )|*))
    };
    let status_of = |s: &str| {
        let v = ident(&s.to_upper_camel_case());
        quote!(RunStatus::#v)
    };

    let rest = ops.iter().map(|o| {
        let (id, method, path) = (&o.operation_id, &o.method, &o.path);
        quote!(RestOperation { operation_id: #id, method: #method, path: #path })
    });

    let a2a_ops = map.a2a_operations.iter().map(|o| {
        let (method, http_method, http_path) = (&o.method, &o.http_method, &o.http_path);
        let when = opt_str(o.when.as_deref());
        let v2 = opt_str(o.v2_operation.as_deref());
        let requires = str_slice(&o.requires);
        let refusal = match o.refusal.as_deref().and_then(|r| {
            map.a2a_errors
                .iter()
                .find(|e| e.name == r || e.variant == r)
        }) {
            Some(e) => {
                let v = ident(&e.variant);
                quote!(Some(A2aError::#v))
            }
            None => quote!(None),
        };
        quote! {
            A2aOperation {
                method: #method,
                http_method: #http_method,
                http_path: #http_path,
                when: #when,
                v2_operation: #v2,
                requires: #requires,
                refusal: #refusal,
            }
        }
    });

    let task_rows = map.task_states.iter().map(|r| {
        let status = status_of(&r.run_status);
        let kind = opt_str(r.interrupt_kind.as_deref());
        let (stored, wire) = (&r.stored, &r.wire);
        quote!(TaskStateRow { run_status: #status, interrupt_kind: #kind, stored: #stored, wire: #wire })
    });
    let reverse_rows = map.task_state_reverse.iter().map(|r| {
        let status = status_of(&r.run_status);
        let wire = &r.wire;
        quote!(TaskStateReverseRow { wire: #wire, run_status: #status })
    });
    // The plain row of each status, by index into A2A_TASK_STATES; the cross-check
    // guarantees exactly one per status.
    let plain_arms = statuses.iter().map(|s| {
        let index = map
            .task_states
            .iter()
            .position(|r| &r.run_status == s && r.interrupt_kind.is_none())
            .unwrap_or_default();
        let status = status_of(s);
        let index = proc_macro2::Literal::usize_unsuffixed(index);
        quote!(#status => &A2A_TASK_STATES[#index])
    });

    let mcp_methods = map.mcp_methods.iter().map(|m| {
        let method = &m.method;
        let v2 = opt_str(m.v2_operation.as_deref());
        let requires = str_slice(&m.requires);
        let extension = opt_str(m.extension.as_deref());
        quote!(McpMethodRow { method: #method, v2_operation: #v2, requires: #requires, extension: #extension })
    });

    // Without task-status rows every status projects to `working`, MCP's neutral state.
    let mcp_arms = statuses.iter().map(|s| {
        let status = status_of(s);
        let task = map
            .mcp_task_statuses
            .iter()
            .find(|r| &r.run_status == s)
            .map_or("working", |r| r.task_status.as_str());
        quote!(#status => #task)
    });

    // One variant per distinct JSON-RPC method, in map order, with the index of its rows.
    let a2a_methods = distinct(map.a2a_operations.iter().map(|o| o.method.as_str()));
    let mcp_method_names = distinct(map.mcp_methods.iter().map(|m| m.method.as_str()));
    let a2a_enum = method_enum(
        "A2aMethod",
        " An A2A JSON-RPC method of the interop map, for an exhaustive `match`.",
        &a2a_methods,
        &map.a2a_operations
            .iter()
            .map(|o| o.method.clone())
            .collect::<Vec<_>>(),
        quote!(A2aOperation),
        quote!(A2A_OPERATIONS),
    );
    let mcp_enum = method_enum(
        "McpMethod",
        " An MCP method of the interop map (core and tasks-extension rows), for an exhaustive `match`.",
        &mcp_method_names,
        &map.mcp_methods
            .iter()
            .map(|m| m.method.clone())
            .collect::<Vec<_>>(),
        quote!(McpMethodRow),
        quote!(MCP_METHODS),
    );

    let features = map.mcp_features.iter().map(|f| {
        let id = &f.id;
        let required_for = str_slice(&f.required_for);
        quote!(McpFeature { id: #id, required_for: #required_for })
    });

    quote! {
        //! Routing tables: REST operations, A2A operations and task states, MCP methods,
        //! features and task statuses.

        use std::fmt;
        use std::str::FromStr;

        use crate::errors::A2aError;

        /// A run's lifecycle status, in the order of the map's task-state rows.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum RunStatus {
            #( #[doc = #status_docs] #status_idents, )*
        }

        impl RunStatus {
            /// Every run status.
            pub const ALL: &'static [RunStatus] = &[ #( RunStatus::#status_idents ),* ];

            /// Whether a run in this status is finished: `completed`, `failed` or
            /// `cancelled` (nothing follows; `cancelling` is not yet).
            pub fn is_terminal(self) -> bool {
                #is_terminal
            }

            /// The status as it appears on the wire.
            pub const fn as_str(self) -> &'static str {
                match self { #( RunStatus::#status_idents => #statuses, )* }
            }
        }

        /// A string that is not a run status.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct UnknownRunStatus(pub String);

        impl fmt::Display for UnknownRunStatus {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "unknown run status `{}`", self.0)
            }
        }

        impl std::error::Error for UnknownRunStatus {}

        impl FromStr for RunStatus {
            type Err = UnknownRunStatus;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    #( #statuses => Ok(RunStatus::#status_idents), )*
                    _ => Err(UnknownRunStatus(s.to_owned())),
                }
            }
        }

        impl fmt::Display for RunStatus {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for RunStatus {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for RunStatus {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }

        /// One REST operation of the OpenAPI document.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct RestOperation {
            /// The `operationId`.
            pub operation_id: &'static str,
            /// The HTTP method, upper case.
            pub method: &'static str,
            /// The path template, e.g. `/runs/{runId}`.
            pub path: &'static str,
        }

        /// Every REST operation, in document order.
        pub static REST_OPERATIONS: &[RestOperation] = &[ #(#rest),* ];

        /// One A2A operation row: a JSON-RPC method, its HTTP+JSON binding and what serves it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct A2aOperation {
            /// The JSON-RPC method, e.g. `SendMessage`.
            pub method: &'static str,
            /// The HTTP+JSON binding's method.
            pub http_method: &'static str,
            /// The HTTP+JSON binding's path.
            pub http_path: &'static str,
            /// The condition that selects this row among rows of the same method.
            pub when: Option<&'static str>,
            /// The v2 operation that serves the row, if any.
            pub v2_operation: Option<&'static str>,
            /// Facets (`family.field`) that must be advertised for the row to be served.
            pub requires: &'static [&'static str],
            /// The error answered when a required facet is not advertised.
            pub refusal: Option<A2aError>,
        }

        /// Every A2A operation row, one per method.
        pub static A2A_OPERATIONS: &[A2aOperation] = &[ #(#a2a_ops),* ];

        /// The rows of one JSON-RPC method, in map order.
        pub fn a2a_operations(method: &str) -> impl Iterator<Item = &'static A2aOperation> + '_ {
            A2A_OPERATIONS.iter().filter(move |op| op.method == method)
        }

        /// How a run status projects to an A2A task state.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct TaskStateRow {
            /// The run status.
            pub run_status: RunStatus,
            /// Set on an override row: the interrupt kind that selects it.
            pub interrupt_kind: Option<&'static str>,
            /// The stored (lower-case) task state.
            pub stored: &'static str,
            /// The wire enum name, e.g. `TASK_STATE_WORKING`.
            pub wire: &'static str,
        }

        /// Every task-state row, plain rows and override rows, in map order.
        pub static A2A_TASK_STATES: &[TaskStateRow] = &[ #(#task_rows),* ];

        /// The task state of a run; a row naming the open interrupt's kind wins over the plain row.
        pub fn a2a_task_state(status: RunStatus, interrupt_kind: Option<&str>) -> &'static TaskStateRow {
            if let Some(kind) = interrupt_kind {
                if let Some(row) = A2A_TASK_STATES
                    .iter()
                    .find(|r| r.run_status == status && r.interrupt_kind == Some(kind))
                {
                    return row;
                }
            }
            match status { #(#plain_arms,)* }
        }

        /// How a remote agent's task state reads as a run status (the client direction).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct TaskStateReverseRow {
            /// The wire enum name, e.g. `TASK_STATE_INPUT_REQUIRED`.
            pub wire: &'static str,
            /// The run status it reads as.
            pub run_status: RunStatus,
        }

        /// Every reverse row, in map order (`a2a.taskStateReverse`).
        pub static A2A_TASK_STATE_REVERSE: &[TaskStateReverseRow] = &[ #(#reverse_rows),* ];

        /// The run status a remote task state reads as; `None` for a state the map does not name.
        pub fn a2a_task_state_reverse(wire: &str) -> Option<RunStatus> {
            A2A_TASK_STATE_REVERSE.iter().find(|r| r.wire == wire).map(|r| r.run_status)
        }

        /// One MCP method row.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct McpMethodRow {
            /// The JSON-RPC method, e.g. `tools/call`.
            pub method: &'static str,
            /// The v2 operation that serves it, if any.
            pub v2_operation: Option<&'static str>,
            /// Facets that must be advertised for it to be served.
            pub requires: &'static [&'static str],
            /// The MCP extension the method belongs to, if any.
            pub extension: Option<&'static str>,
        }

        /// Every MCP method, core rows then tasks-extension rows.
        pub static MCP_METHODS: &[McpMethodRow] = &[ #(#mcp_methods),* ];

        /// A JSON-RPC method name that is not a row of the map.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct UnknownMethod(pub String);

        impl fmt::Display for UnknownMethod {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "`{}` is not a method of the interop map", self.0)
            }
        }

        impl std::error::Error for UnknownMethod {}

        #a2a_enum

        #mcp_enum

        /// The MCP task status of a run.
        pub fn mcp_task_status(status: RunStatus) -> &'static str {
            match status { #(#mcp_arms,)* }
        }

        /// An MCP feature and the profiles that require it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct McpFeature {
            /// The feature id, e.g. `mrtr`.
            pub id: &'static str,
            /// Profiles whose claim requires the feature.
            pub required_for: &'static [&'static str],
        }

        /// Every MCP feature.
        pub static MCP_FEATURES: &[McpFeature] = &[ #(#features),* ];

        /// The features a profile requires, in map order.
        pub fn mcp_required_features(profile: &str) -> Vec<&'static str> {
            MCP_FEATURES
                .iter()
                .filter(|f| f.required_for.contains(&profile))
                .map(|f| f.id)
                .collect()
        }
    }
}

fn distinct<'a>(items: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        if !out.iter().any(|o| o == item) {
            out.push(item.to_owned());
        }
    }
    out
}

/// `enum <name>`: one variant per method, `ALL`, `as_str`, `from_method`, `rows`, `row`,
/// `FromStr`, `Display`. `row_methods` is the method of each row of `table`, in order.
fn method_enum(
    name: &str,
    doc: &str,
    methods: &[String],
    row_methods: &[String],
    row_ty: TokenStream,
    table: TokenStream,
) -> TokenStream {
    let name = ident(name);
    let mut variants: Vec<String> = Vec::new();
    for m in methods {
        let v = crate::format::unique_name(&crate::format::variant_name(m), |n| {
            variants.iter().any(|v| v == n)
        });
        variants.push(v);
    }
    let vids: Vec<_> = variants.iter().map(|v| ident(v)).collect();
    let docs: Vec<String> = methods.iter().map(|m| format!(" `{m}`")).collect();
    let first_rows: Vec<_> = methods
        .iter()
        .map(|m| {
            let i = row_methods.iter().position(|r| r == m).unwrap_or_default();
            proc_macro2::Literal::usize_unsuffixed(i)
        })
        .collect();
    if methods.is_empty() {
        return quote! {
            #[doc = #doc]
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
            pub enum #name {}
        };
    }
    quote! {
        #[doc = #doc]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum #name {
            #( #[doc = #docs] #vids, )*
        }

        impl #name {
            /// Every method, in map order.
            pub const ALL: &'static [#name] = &[ #( #name::#vids ),* ];

            /// The method as JSON-RPC names it.
            pub const fn as_str(self) -> &'static str {
                match self { #( #name::#vids => #methods, )* }
            }

            /// The method a JSON-RPC `method` names, if the map has a row for it.
            pub fn from_method(method: &str) -> Option<Self> {
                match method {
                    #( #methods => Some(#name::#vids), )*
                    _ => None,
                }
            }

            /// The method's rows, in map order (a method may have several, told apart by `when`).
            pub fn rows(self) -> impl Iterator<Item = &'static #row_ty> {
                #table.iter().filter(move |row| row.method == self.as_str())
            }

            /// The method's first row.
            pub fn row(self) -> &'static #row_ty {
                match self { #( #name::#vids => &#table[#first_rows], )* }
            }
        }

        impl FromStr for #name {
            type Err = UnknownMethod;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                #name::from_method(s).ok_or_else(|| UnknownMethod(s.to_owned()))
            }
        }

        impl fmt::Display for #name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    }
}
