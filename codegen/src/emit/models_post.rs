//! What the generator does to typify's items before they are written, and the typed
//! payload views it adds:
//!
//! - **field order**: typify sorts struct fields by name; they are put back in schema order
//!   so a decoded value serialises to the bytes it came from (a host writes in schema order);
//! - **openness**: a struct reachable from an OpenAPI request body keeps `deny_unknown_fields`
//!   where its schema is closed; every other struct (answers, documents, events) drops it.
//!   A type reachable from both is a request type (closed): a host must refuse what a request
//!   schema refuses, and it is the host, not the client, that decodes requests. A struct that
//!   is a branch of an untagged union also stays closed, since closedness is how serde tells
//!   the branches apart;
//! - **absent is not empty**: an optional free-form object (`serde_json::Map`, which typify
//!   makes `#[serde(default)]` and skips when empty) becomes `Option<Map>`, so `{}` and an
//!   absent member stay apart in both directions (a snapshot's `outputs: {}` on a completed
//!   run says something an absent `outputs` does not);
//! - **`Default`** for a request body whose fields are all optional;
//! - **string newtypes** (`WorkflowId`, `TenantId`) print and compare as the string they hold:
//!   `Display` (`format!("{id}")`) and `==` against `str`, `&str` and `String` both ways;
//! - **typed payloads** for tag → payload bindings ([`crate::bundle::Discriminator`]).

use std::collections::{BTreeMap, BTreeSet};

use heck::ToUpperCamelCase;
use proc_macro2::TokenStream;
use quote::quote;
use serde_json::Value;
use syn::punctuated::Punctuated;
use syn::{Attribute, Fields, Item, Meta, Token, Type};

use crate::bundle::Discriminator;
use crate::format::ident;
use crate::format::unique_name;

/// The JSON name of a field: its `#[serde(rename = "…")]`, else the identifier.
pub(crate) fn json_name(field: &syn::Field) -> String {
    for attr in &field.attrs {
        if !attr.path().is_ident("serde") {
            continue;
        }
        if let Ok(list) = attr.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated) {
            for meta in list {
                if let Meta::NameValue(nv) = meta
                    && nv.path.is_ident("rename")
                    && let syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    }) = &nv.value
                {
                    return s.value();
                }
            }
        }
    }
    field
        .ident
        .as_ref()
        .map(|i| i.to_string().trim_start_matches("r#").to_owned())
        .unwrap_or_default()
}

/// True when the field may be absent on the wire (`Option`, or `#[serde(default)]`).
pub(crate) fn is_optional(field: &syn::Field) -> bool {
    if outer(&field.ty).is_some_and(|(name, _)| name == "Option") {
        return true;
    }
    field.attrs.iter().any(|attr| {
        attr.path().is_ident("serde")
            && attr
                .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                .is_ok_and(|list| list.iter().any(|m| m.path().is_ident("default")))
    })
}

/// The last segment of a path type and its generic type arguments: `Option<T>` → ("Option", [T]).
pub(crate) fn outer(ty: &Type) -> Option<(String, Vec<&Type>)> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    let args = match &last.arguments {
        syn::PathArguments::AngleBracketed(a) => a
            .args
            .iter()
            .filter_map(|g| match g {
                syn::GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    Some((last.ident.to_string(), args))
}

/// The item a type names when it is a bare single-segment path (`RunId`), else `None`.
fn local_name(ty: &Type) -> Option<String> {
    let Type::Path(p) = ty else { return None };
    (p.qself.is_none() && p.path.leading_colon.is_none() && p.path.segments.len() == 1)
        .then(|| p.path.segments[0].ident.to_string())
}

fn item_name(item: &Item) -> Option<String> {
    match item {
        Item::Struct(s) => Some(s.ident.to_string()),
        Item::Enum(e) => Some(e.ident.to_string()),
        Item::Type(t) => Some(t.ident.to_string()),
        _ => None,
    }
}

// ---------------------------------------------------------------- field order

/// Property names of a schema in order: its own `properties`, then those `allOf` adds.
fn property_order(
    schema: &Value,
    defs: &BTreeMap<String, Value>,
    depth: usize,
    out: &mut Vec<String>,
) {
    if depth > 8 {
        return;
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for k in props.keys() {
            if !out.contains(k) {
                out.push(k.clone());
            }
        }
    }
    if let Some(target) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .and_then(|n| defs.get(n))
    {
        property_order(target, defs, depth + 1, out);
    }
    if let Some(items) = schema.get("allOf").and_then(Value::as_array) {
        for item in items {
            property_order(item, defs, depth + 1, out);
        }
    }
}

/// The schema of property `name` of `schema`, looking through `allOf` and `$ref`.
fn property_schema<'a>(
    schema: &'a Value,
    name: &str,
    defs: &'a BTreeMap<String, Value>,
    depth: usize,
) -> Option<&'a Value> {
    if depth > 8 {
        return None;
    }
    if let Some(s) = schema.get("properties").and_then(|p| p.get(name)) {
        return Some(s);
    }
    if let Some(target) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .and_then(|n| defs.get(n))
    {
        return property_schema(target, name, defs, depth + 1);
    }
    schema
        .get("allOf")
        .and_then(Value::as_array)?
        .iter()
        .find_map(|item| property_schema(item, name, defs, depth + 1))
}

/// Puts every struct's fields back in the order of its schema's properties (typify sorts
/// them by name). Definitions are matched by name; inline structs through the field that
/// holds them. Fields the schema does not list (a flattened map) keep their place at the end.
pub(crate) fn order_fields(file: &mut syn::File, defs: &BTreeMap<String, Value>) {
    let structs: BTreeMap<String, usize> = file
        .items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| match item {
            Item::Struct(s) if matches!(s.fields, Fields::Named(_)) => {
                Some((s.ident.to_string(), i))
            }
            _ => None,
        })
        .collect();
    let mut schema_of: BTreeMap<String, Value> = BTreeMap::new();
    let mut queue: Vec<String> = Vec::new();
    for name in structs.keys() {
        if let Some(schema) = defs.get(name) {
            schema_of.insert(name.clone(), schema.clone());
            queue.push(name.clone());
        }
    }
    while let Some(name) = queue.pop() {
        let (Some(&index), Some(schema)) = (structs.get(&name), schema_of.get(&name).cloned())
        else {
            continue;
        };
        let Item::Struct(s) = &file.items[index] else {
            continue;
        };
        for field in &s.fields {
            let Some(mut sub) = property_schema(&schema, &json_name(field), defs, 0) else {
                continue;
            };
            let mut ty = &field.ty;
            loop {
                match outer(ty) {
                    Some((w, args)) if (w == "Option" || w == "Box") && args.len() == 1 => {
                        ty = args[0]
                    }
                    Some((w, args)) if w == "Vec" && args.len() == 1 => {
                        let Some(items) = sub.get("items") else { break };
                        sub = items;
                        ty = args[0];
                    }
                    Some((w, args))
                        if (w == "Map" || w == "HashMap" || w == "BTreeMap") && args.len() == 2 =>
                    {
                        let Some(values) = sub.get("additionalProperties") else {
                            break;
                        };
                        sub = values;
                        ty = args[1];
                    }
                    _ => break,
                }
            }
            if let Some(child) = local_name(ty)
                && structs.contains_key(&child)
                && !schema_of.contains_key(&child)
                && sub.get("$ref").is_none()
            {
                schema_of.insert(child.clone(), sub.clone());
                queue.push(child);
            }
        }
    }
    for (name, schema) in &schema_of {
        let mut order = Vec::new();
        property_order(schema, defs, 0, &mut order);
        let Some(&index) = structs.get(name) else {
            continue;
        };
        let Item::Struct(s) = &mut file.items[index] else {
            continue;
        };
        let Fields::Named(named) = &mut s.fields else {
            continue;
        };
        let mut fields: Vec<syn::Field> = std::mem::take(&mut named.named).into_iter().collect();
        fields.sort_by_key(|f| {
            let json = json_name(f);
            order.iter().position(|p| *p == json).unwrap_or(usize::MAX)
        });
        named.named = fields.into_iter().collect();
    }
}

// ---------------------------------------------------------------- openness

fn type_idents(ty: &Type, out: &mut BTreeSet<String>) {
    match ty {
        Type::Path(p) => {
            for seg in &p.path.segments {
                out.insert(seg.ident.to_string());
                if let syn::PathArguments::AngleBracketed(a) = &seg.arguments {
                    for g in &a.args {
                        if let syn::GenericArgument::Type(t) = g {
                            type_idents(t, out);
                        }
                    }
                }
            }
        }
        Type::Reference(r) => type_idents(&r.elem, out),
        Type::Array(a) => type_idents(&a.elem, out),
        Type::Slice(s) => type_idents(&s.elem, out),
        Type::Tuple(t) => t.elems.iter().for_each(|e| type_idents(e, out)),
        Type::Paren(p) => type_idents(&p.elem, out),
        Type::Group(g) => type_idents(&g.elem, out),
        _ => {}
    }
}

fn fields_of(fields: &Fields) -> impl Iterator<Item = &syn::Field> {
    fields.iter()
}

/// Every item name → the item names its fields mention.
fn graph(file: &syn::File, aliases: &[(String, String)]) -> BTreeMap<String, BTreeSet<String>> {
    let names: BTreeSet<String> = file.items.iter().filter_map(item_name).collect();
    let mut out = BTreeMap::new();
    for item in &file.items {
        let mut refs = BTreeSet::new();
        match item {
            Item::Struct(s) => fields_of(&s.fields).for_each(|f| type_idents(&f.ty, &mut refs)),
            Item::Enum(e) => {
                for v in &e.variants {
                    fields_of(&v.fields).for_each(|f| type_idents(&f.ty, &mut refs));
                }
            }
            Item::Type(t) => type_idents(&t.ty, &mut refs),
            _ => continue,
        }
        if let Some(name) = item_name(item) {
            refs.retain(|r| names.contains(r) && *r != name);
            out.insert(name, refs);
        }
    }
    for (alias, target) in aliases {
        out.entry(alias.clone()).or_default().insert(target.clone());
    }
    out
}

fn has_serde_flag(attrs: &[Attribute], flag: &str) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("serde")
            && attr
                .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                .is_ok_and(|list| list.iter().any(|m| m.path().is_ident(flag)))
    })
}

/// Removes `deny_unknown_fields` from a `#[serde(…)]` list, dropping an emptied attribute.
fn open_attrs(attrs: &mut Vec<Attribute>) {
    attrs.retain_mut(|attr| {
        if !attr.path().is_ident("serde") {
            return true;
        }
        let Ok(list) = attr.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated) else {
            return true;
        };
        if !list
            .iter()
            .any(|m| m.path().is_ident("deny_unknown_fields"))
        {
            return true;
        }
        let kept: Punctuated<Meta, Token![,]> = list
            .into_iter()
            .filter(|m| !m.path().is_ident("deny_unknown_fields"))
            .collect();
        if kept.is_empty() {
            return false;
        }
        *attr = syn::parse_quote!(#[serde(#kept)]);
        true
    });
}

/// Applies the openness rule (module docs); returns the names that stay closed.
pub(crate) fn apply_openness(
    file: &mut syn::File,
    request_roots: &BTreeSet<String>,
    aliases: &[(String, String)],
) -> BTreeSet<String> {
    let g = graph(file, aliases);
    let mut closed: BTreeSet<String> = BTreeSet::new();
    let mut todo: Vec<String> = request_roots.iter().cloned().collect();
    while let Some(n) = todo.pop() {
        if closed.insert(n.clone())
            && let Some(next) = g.get(&n)
        {
            todo.extend(next.iter().cloned());
        }
    }
    // Branches of an untagged union are told apart by their closedness.
    for item in &file.items {
        if let Item::Enum(e) = item
            && has_serde_flag(&e.attrs, "untagged")
        {
            for v in &e.variants {
                if let Fields::Unnamed(one) = &v.fields
                    && one.unnamed.len() == 1
                    && let Some(n) = local_name(&one.unnamed[0].ty)
                {
                    closed.insert(n);
                }
            }
        }
    }
    for item in &mut file.items {
        match item {
            Item::Struct(s) if !closed.contains(&s.ident.to_string()) => open_attrs(&mut s.attrs),
            Item::Enum(e) if !closed.contains(&e.ident.to_string()) => open_attrs(&mut e.attrs),
            _ => {}
        }
    }
    closed
}

/// `impl Default` for a request body struct whose every field may be absent, unless typify
/// already gave it one.
/// Optional free-form objects keep absence apart from `{}`: typify writes such a member
/// as `#[serde(default, skip_serializing_if = "::serde_json::Map::is_empty")] Map<…>`,
/// which reads an absent member and `{}` alike and never writes `{}`. It becomes
/// `Option<Map<…>>`, skipped only when `None`, so a value decoded from the wire is written
/// back as it came and a writer can send `{}`.
pub(crate) fn optional_objects(file: &mut syn::File) {
    optional_when_empty(file, "Map", "::serde_json::Map::is_empty", |_| true);
}

/// In a document the host reads from its operator (`crate::HOST_READS`), an optional list
/// likewise becomes `Option<Vec<…>>`: there an absent list and `[]` say different things (a
/// tenant without `workflows` sees every workflow; with `workflows: []`, none).
pub(crate) fn optional_lists(file: &mut syn::File, host_reads: &BTreeSet<String>) {
    optional_when_empty(file, "Vec", "::std::vec::Vec::is_empty", |name| {
        host_reads.contains(name)
    });
}

/// Fields of type `container` that typify skips when empty (`skip_serializing_if =
/// skip`) become `Option<container>`, skipped only when `None`, in the structs `owner`
/// accepts.
fn optional_when_empty(
    file: &mut syn::File,
    container: &str,
    skip: &str,
    owner: impl Fn(&str) -> bool,
) {
    let wanted = format!("skip_serializing_if=\"{skip}\"");
    let skip_empty = |attr: &Attribute| {
        attr.path().is_ident("serde") && {
            let text = quote!(#attr).to_string().replace(' ', "");
            text.contains(&wanted)
        }
    };
    for item in &mut file.items {
        let Item::Struct(s) = item else { continue };
        if !owner(&s.ident.to_string()) {
            continue;
        }
        let Fields::Named(named) = &mut s.fields else {
            continue;
        };
        for field in named.named.iter_mut() {
            if outer(&field.ty).is_none_or(|(name, _)| name != container)
                || !field.attrs.iter().any(skip_empty)
            {
                continue;
            }
            let ty = field.ty.clone();
            field.ty = syn::parse_quote!(::std::option::Option<#ty>);
            for attr in field
                .attrs
                .iter_mut()
                .filter(|a| a.path().is_ident("serde"))
            {
                let Ok(list) =
                    attr.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                else {
                    continue;
                };
                let kept: Vec<Meta> = list
                    .into_iter()
                    .filter(|m| {
                        !m.path().is_ident("default") && !m.path().is_ident("skip_serializing_if")
                    })
                    .collect();
                *attr = syn::parse_quote!(
                    #[serde(#(#kept,)* skip_serializing_if = "::std::option::Option::is_none")]
                );
            }
        }
    }
}

/// `Display` and string comparisons for every `struct X(String)` typify emitted (its
/// constrained strings have `Deref<Target = String>` but neither).
pub(crate) fn string_newtype_impls(file: &mut syn::File) {
    let displayed: BTreeSet<String> = file
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Impl(i)
                if i.trait_
                    .as_ref()
                    .and_then(|t| t.0.segments.last())
                    .is_some_and(|seg| seg.ident == "Display") =>
            {
                local_name(&i.self_ty)
            }
            _ => None,
        })
        .collect();
    let newtypes: Vec<syn::Ident> = file
        .items
        .iter()
        .filter_map(|item| {
            let Item::Struct(s) = item else { return None };
            let Fields::Unnamed(fields) = &s.fields else {
                return None;
            };
            let [field] = fields.unnamed.iter().collect::<Vec<_>>()[..] else {
                return None;
            };
            let is_string =
                outer(&field.ty).is_some_and(|(name, args)| name == "String" && args.is_empty());
            (is_string && !displayed.contains(&s.ident.to_string())).then(|| s.ident.clone())
        })
        .collect();
    for name in newtypes {
        file.items.push(syn::parse_quote! {
            impl ::std::fmt::Display for #name {
                fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                    f.write_str(&self.0)
                }
            }
        });
        for other in [quote!(str), quote!(&str), quote!(::std::string::String)] {
            file.items.push(syn::parse_quote! {
                impl ::std::cmp::PartialEq<#other> for #name {
                    fn eq(&self, other: &#other) -> bool {
                        self.0 == *other
                    }
                }
            });
            file.items.push(syn::parse_quote! {
                impl ::std::cmp::PartialEq<#name> for #other {
                    fn eq(&self, other: &#name) -> bool {
                        *self == other.0
                    }
                }
            });
        }
    }
}

pub(crate) fn default_for_bodies(file: &mut syn::File, request_roots: &BTreeSet<String>) {
    let has_default: BTreeSet<String> = file
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Impl(i)
                if i.trait_
                    .as_ref()
                    .is_some_and(|t| t.0.segments.last().is_some_and(|s| s.ident == "Default")) =>
            {
                local_name(&i.self_ty)
            }
            Item::Struct(s)
                if s.attrs.iter().any(|a| {
                    a.path().is_ident("derive") && quote!(#a).to_string().contains("Default")
                }) =>
            {
                Some(s.ident.to_string())
            }
            _ => None,
        })
        .collect();
    let mut added = Vec::new();
    for item in &file.items {
        if let Item::Struct(s) = item
            && request_roots.contains(&s.ident.to_string())
            && !has_default.contains(&s.ident.to_string())
            && matches!(s.fields, Fields::Named(_))
            && s.fields.iter().all(is_optional)
        {
            let name = &s.ident;
            let inits = s
                .fields
                .iter()
                .filter_map(|f| f.ident.as_ref())
                .map(|f| quote!(#f: Default::default()));
            added.push(syn::parse_quote! {
                impl ::std::default::Default for #name {
                    fn default() -> Self {
                        Self { #(#inits),* }
                    }
                }
            });
        }
    }
    file.items.extend(added);
}

// ---------------------------------------------------------------- typed payloads

/// How the payload field holds its value.
enum Holder {
    Map,
    Value,
    OptionMap,
    OptionValue,
}

fn holder(ty: &Type) -> Option<Holder> {
    let (name, args) = outer(ty)?;
    match name.as_str() {
        "Map" => Some(Holder::Map),
        "Value" => Some(Holder::Value),
        "Option" if args.len() == 1 => match outer(args[0])?.0.as_str() {
            "Map" => Some(Holder::OptionMap),
            "Value" => Some(Holder::OptionValue),
            _ => None,
        },
        _ => None,
    }
}

/// The typed view of one binding: an enum with one variant per tag value and `Other`, and
/// `typed_<payload>()` / `set_typed_<payload>()` on the owner. Returns the enum's name.
/// The name a typed view wants: `<Owner><Payload>` (`RunEventPayload`); when a definition
/// already holds it the view is `<Owner><Payload>Typed`, and the generator says so.
pub(crate) fn view_name(owner: &str, d: &Discriminator) -> String {
    format!("{owner}{}", d.payload.to_upper_camel_case())
}

pub(crate) fn typed_payload(
    file: &syn::File,
    owner: &str,
    d: &Discriminator,
    open_enums: &BTreeSet<String>,
    type_names: &BTreeSet<String>,
) -> Result<(String, TokenStream), String> {
    let Some(Item::Struct(s)) = file
        .items
        .iter()
        .find(|i| matches!(i, Item::Struct(s) if s.ident == owner))
    else {
        return Err(format!("{owner} is not a struct in the models"));
    };
    let find = |json: &str| s.fields.iter().find(|f| json_name(f) == json);
    let (Some(tag_field), Some(payload_field)) = (find(&d.tag), find(&d.payload)) else {
        return Err(format!(
            "{owner} has no `{}` or `{}` field",
            d.tag, d.payload
        ));
    };
    let Some(hold) = holder(&payload_field.ty) else {
        return Err(format!(
            "its `{}` field is typed as something other than an object or free JSON (a map, \
             `serde_json::Value`, or an `Option` of either), so there is no untyped payload to \
             view as a typed one; give `{}` an object schema (`type: object`) or none",
            d.payload, d.payload
        ));
    };
    let (Some(tag_ident), Some(payload_ident)) = (&tag_field.ident, &payload_field.ident) else {
        return Err("unnamed fields".to_owned());
    };

    let wanted = view_name(owner, d);
    let taken = |n: &str| type_names.contains(n) || open_enums.contains(n);
    let enum_name = if taken(&wanted) {
        unique_name(&format!("{wanted}Typed"), taken)
    } else {
        wanted
    };
    let name = ident(&enum_name);
    let owner_ident = ident(owner);

    let variants: Vec<&(String, String)> = d
        .variants
        .iter()
        .filter(|(_, target)| type_names.contains(target))
        .collect();
    if variants.is_empty() {
        return Err("no bound payload is a model type".to_owned());
    }
    let values: Vec<&String> = variants.iter().map(|(v, _)| v).collect();
    let names: Vec<String> = {
        let mut out: Vec<String> = Vec::new();
        for (v, _) in &variants {
            let mut n = crate::format::variant_name(v);
            if n == "Other" {
                n = "OtherValue".to_owned();
            }
            let n = unique_name(&n, |x| out.iter().any(|o| o == x));
            out.push(n);
        }
        out
    };
    let vids: Vec<_> = names.iter().map(|n| ident(n)).collect();
    let types: Vec<_> = variants.iter().map(|(_, t)| ident(t)).collect();
    let docs: Vec<String> = variants
        .iter()
        .map(|(v, t)| format!(" `{}` = `{v}`: [`{t}`].", d.tag))
        .collect();
    // One `From` per payload type that only one tag uses.
    let froms = variants
        .iter()
        .zip(&vids)
        .filter(|((_, t), _)| variants.iter().filter(|(_, other)| other == t).count() == 1)
        .map(|((_, t), v)| {
            let ty = ident(t);
            quote! {
                impl From<#ty> for #name {
                    fn from(payload: #ty) -> Self {
                        #name::#v(payload)
                    }
                }
            }
        });

    let (other_ty, as_value, from_value, wire_ty) = match hold {
        Holder::Map | Holder::OptionMap => (
            quote!(::serde_json::Map<::std::string::String, ::serde_json::Value>),
            quote!(::serde_json::Value::Object(payload.clone())),
            quote! {
                match value {
                    ::serde_json::Value::Object(map) => Ok(map),
                    _ => Err(<::serde_json::Error as ::serde::ser::Error>::custom("the payload does not serialise to a JSON object")),
                }
            },
            quote!(::serde_json::Map<::std::string::String, ::serde_json::Value>),
        ),
        Holder::Value | Holder::OptionValue => (
            quote!(::serde_json::Value),
            quote!(payload.clone()),
            quote!(Ok(value)),
            quote!(::serde_json::Value),
        ),
    };
    let (read_payload, write_payload) = match hold {
        Holder::Map | Holder::Value => (
            quote!(&self.#payload_ident),
            quote!(self.#payload_ident = wire;),
        ),
        Holder::OptionMap => (
            quote!(&self.#payload_ident.clone().unwrap_or_default()),
            quote!(self.#payload_ident = Some(wire);),
        ),
        Holder::OptionValue => (
            quote!(&self.#payload_ident.clone().unwrap_or(::serde_json::Value::Null)),
            quote!(self.#payload_ident = Some(wire);),
        ),
    };
    let tag_is_open = local_name(&tag_field.ty).is_some_and(|n| open_enums.contains(&n));
    let read_tag = if tag_is_open {
        quote!(let tag = self.#tag_ident.as_str();)
    } else {
        quote! {
            let tag = ::serde_json::to_value(&self.#tag_ident)?;
            let tag = tag.as_str().unwrap_or_default();
        }
    };
    let typed_fn = quote::format_ident!(
        "typed_{}",
        payload_ident.to_string().trim_start_matches("r#")
    );
    let set_fn = quote::format_ident!(
        "set_typed_{}",
        payload_ident.to_string().trim_start_matches("r#")
    );
    let (tag_json, payload_json) = (&d.tag, &d.payload);
    let enum_doc = format!(
        " The `{payload_json}` of a [`{owner}`], typed by its `{tag_json}`: the schema binds each listed `{tag_json}` to one payload schema (`if`/`then`). Any other `{tag_json}` is [`Self::Other`], as sent. `#[non_exhaustive]`: a type the corpus binds later gets a variant of its own, which a `match` with a wildcard arm keeps compiling through."
    );
    let typed_doc = format!(
        " `{payload_json}` decoded as the schema its `{tag_json}` binds it to; a `{tag_json}` without one gives [`{enum_name}::Other`]. A listed `{tag_json}` whose payload does not match its schema is an error."
    );
    let set_doc = format!(
        " Sets `{payload_json}` from a typed payload, and `{tag_json}` to the payload's own value when it has one."
    );
    let tokens = quote! {
        #[doc = #enum_doc]
        #[derive(Clone, Debug)]
        #[non_exhaustive]
        pub enum #name {
            #( #[doc = #docs] #vids(#types), )*
            /// A payload whose tag the corpus binds no schema to (a vendor type, or one newer than this crate).
            Other(#other_ty),
        }

        impl #name {
            /// Every tag value with a payload schema, in schema order.
            pub const TAGS: &'static [&'static str] = &[ #(#values),* ];

            /// The tag value this payload is bound to; `None` for [`Self::Other`].
            pub fn tag(&self) -> Option<&'static str> {
                match self {
                    #( #name::#vids(_) => Some(#values), )*
                    #name::Other(_) => None,
                }
            }

            /// Decodes a payload as the schema `tag` binds to it; any other tag gives `Other`.
            pub fn decode(tag: &str, payload: &#wire_ty) -> Result<Self, ::serde_json::Error> {
                match tag {
                    #( #values => ::serde_json::from_value(#as_value).map(#name::#vids), )*
                    _ => Ok(#name::Other(payload.clone())),
                }
            }

            /// The payload as the envelope carries it.
            pub fn to_wire(&self) -> Result<#wire_ty, ::serde_json::Error> {
                let value = match self {
                    #( #name::#vids(payload) => ::serde_json::to_value(payload)?, )*
                    #name::Other(payload) => return Ok(payload.clone()),
                };
                #from_value
            }
        }

        #(#froms)*

        impl #owner_ident {
            #[doc = #typed_doc]
            pub fn #typed_fn(&self) -> Result<#name, ::serde_json::Error> {
                #read_tag
                #name::decode(tag, #read_payload)
            }

            #[doc = #set_doc]
            pub fn #set_fn(&mut self, payload: impl Into<#name>) -> Result<(), ::serde_json::Error> {
                let payload = payload.into();
                let wire = payload.to_wire()?;
                if let Some(tag) = payload.tag() {
                    self.#tag_ident = ::serde_json::from_value(::serde_json::Value::String(tag.to_owned()))?;
                }
                #write_payload
                Ok(())
            }
        }
    };
    Ok((enum_name, tokens))
}
