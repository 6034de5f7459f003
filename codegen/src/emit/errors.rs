//! `generated/src/errors.rs`: the `ErrorCode` enum from the registry and the A2A error table
//! from the map.

use std::collections::BTreeMap;

use heck::ToUpperCamelCase;
use proc_macro2::{Literal, TokenStream};
use quote::quote;

use crate::error::{Error, Result};
use crate::format::{ident, opt_str};
use crate::load::{ERRORS, INTEROP_MAP};
use crate::map::InteropMap;
use crate::registry::{ErrorRow, is_vendor_code};

/// The variant name of each registry code that gets one, checking that no two codes fold
/// onto the same name.
pub(crate) fn variants(errors: &[ErrorRow]) -> Result<BTreeMap<String, String>> {
    let mut by_variant: BTreeMap<String, &ErrorRow> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for row in errors.iter().filter(|r| !is_vendor_code(&r.code)) {
        let variant = row.code.to_upper_camel_case();
        if let Some(first) = by_variant.insert(variant.clone(), row) {
            return Err(Error::Shape {
                file: ERRORS.to_owned(),
                pointer: format!("{}/code", row.pointer),
                message: format!(
                    "`{}` and `{}` ({}) both become ErrorCode::{variant}",
                    row.code, first.code, first.pointer
                ),
            });
        }
        out.insert(row.code.clone(), variant);
    }
    Ok(out)
}

pub(crate) fn emit(errors: &[ErrorRow], map: &InteropMap) -> Result<TokenStream> {
    let names = variants(errors)?;
    let rows: Vec<&ErrorRow> = errors.iter().filter(|r| !is_vendor_code(&r.code)).collect();
    let idents: Vec<_> = rows.iter().map(|r| ident(&names[&r.code])).collect();
    let codes: Vec<&str> = rows.iter().map(|r| r.code.as_str()).collect();
    let statuses: Vec<Literal> = rows
        .iter()
        .map(|r| Literal::u16_unsuffixed(r.http_status))
        .collect();
    let retriable: Vec<bool> = rows.iter().map(|r| r.retriable).collect();
    let docs: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                " `{}` (HTTP {}){}",
                r.code,
                r.http_status,
                r.summary
                    .as_deref()
                    .map(|s| format!(": {}", crate::prose::lines(s).join("\n ")))
                    .unwrap_or_default()
            )
        })
        .collect();

    let a2a = a2a_errors(map, &names)?;

    Ok(quote! {
        //! Error codes of the registry and the A2A error table.

        use std::fmt;
        use std::str::FromStr;

        /// A code of the error registry. Vendor-shaped codes (`vendor.code`) are not variants.
        /// `#[non_exhaustive]`: a code the registry adds later is a new variant, and a
        /// `match` outside this crate keeps a wildcard arm for it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum ErrorCode {
            #( #[doc = #docs] #idents, )*
        }

        impl ErrorCode {
            /// Every registry code, in registry order.
            pub const ALL: &'static [ErrorCode] = &[ #( ErrorCode::#idents ),* ];

            /// The code as it appears on the wire.
            pub const fn as_str(self) -> &'static str {
                match self { #( ErrorCode::#idents => #codes, )* }
            }

            /// The HTTP status the registry assigns to the code.
            pub const fn http_status(self) -> u16 {
                match self { #( ErrorCode::#idents => #statuses, )* }
            }

            /// Whether a client may retry the same request unchanged.
            pub const fn retriable(self) -> bool {
                match self { #( ErrorCode::#idents => #retriable, )* }
            }
        }

        /// A string that is not a registry code.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct UnknownErrorCode(pub String);

        impl fmt::Display for UnknownErrorCode {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "unknown error code `{}`", self.0)
            }
        }

        impl std::error::Error for UnknownErrorCode {}

        impl FromStr for ErrorCode {
            type Err = UnknownErrorCode;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    #( #codes => Ok(ErrorCode::#idents), )*
                    _ => Err(UnknownErrorCode(s.to_owned())),
                }
            }
        }

        impl fmt::Display for ErrorCode {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for ErrorCode {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for ErrorCode {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }

        #a2a
    })
}

fn a2a_errors(map: &InteropMap, codes: &BTreeMap<String, String>) -> Result<TokenStream> {
    let mut seen = BTreeMap::new();
    for (i, row) in map.a2a_errors.iter().enumerate() {
        if let Some(first) = seen.insert(row.variant.clone(), i) {
            return Err(Error::Shape {
                file: INTEROP_MAP.to_owned(),
                pointer: format!("/a2a/errors/{i}"),
                message: format!(
                    "`{}` and /a2a/errors/{first} both become A2aError::{}",
                    row.name, row.variant
                ),
            });
        }
    }
    let idents: Vec<_> = map.a2a_errors.iter().map(|r| ident(&r.variant)).collect();
    let indices: Vec<Literal> = (0..idents.len()).map(Literal::usize_unsuffixed).collect();
    let names: Vec<&str> = map.a2a_errors.iter().map(|r| r.name.as_str()).collect();
    let variant_strs: Vec<&str> = map.a2a_errors.iter().map(|r| r.variant.as_str()).collect();
    let docs: Vec<String> = map
        .a2a_errors
        .iter()
        .map(|r| {
            format!(
                " `{}`: JSON-RPC {}, HTTP {}, gRPC {}",
                r.name, r.jsonrpc_code, r.http_status, r.grpc_status
            )
        })
        .collect();
    let rows = map.a2a_errors.iter().map(|r| {
        let name = &r.name;
        let jsonrpc = Literal::i64_unsuffixed(r.jsonrpc_code);
        let http = Literal::u16_unsuffixed(r.http_status);
        let grpc = &r.grpc_status;
        let reason = opt_str(r.reason.as_deref());
        // The cross-check has already proved the projection is a registry code.
        let projection = match r.client_projection.as_ref().and_then(|c| codes.get(c)) {
            Some(v) => {
                let v = ident(v);
                quote!(Some(ErrorCode::#v))
            }
            None => quote!(None),
        };
        quote! {
            A2aErrorRow {
                name: #name,
                jsonrpc_code: #jsonrpc,
                http_status: #http,
                grpc_status: #grpc,
                reason: #reason,
                client_projection: #projection,
            }
        }
    });
    Ok(quote! {
        /// One row of the A2A error table.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct A2aErrorRow {
            /// The A2A error name, e.g. `TaskNotFoundError`.
            pub name: &'static str,
            /// The JSON-RPC error code.
            pub jsonrpc_code: i64,
            /// The HTTP status on the HTTP+JSON binding.
            pub http_status: u16,
            /// The gRPC status name, e.g. `NOT_FOUND`.
            pub grpc_status: &'static str,
            /// The `google.rpc.ErrorInfo` reason, when the map gives one.
            pub reason: Option<&'static str>,
            /// The registry code a client reports when it receives this error.
            pub client_projection: Option<ErrorCode>,
        }

        /// Every A2A error row, in map order.
        pub static A2A_ERRORS: &[A2aErrorRow] = &[ #(#rows),* ];

        /// An A2A error of the map.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum A2aError {
            #( #[doc = #docs] #idents, )*
        }

        impl A2aError {
            /// Every A2A error, in map order.
            pub const ALL: &'static [A2aError] = &[ #( A2aError::#idents ),* ];

            /// The table row of this error.
            pub fn row(self) -> &'static A2aErrorRow {
                match self { #( A2aError::#idents => &A2A_ERRORS[#indices], )* }
            }

            /// Looks an error up by its A2A name (`TaskNotFoundError`) or variant name (`TaskNotFound`).
            pub fn from_name(name: &str) -> Option<Self> {
                match name {
                    #( #names | #variant_strs => Some(A2aError::#idents), )*
                    _ => None,
                }
            }
        }
    })
}
