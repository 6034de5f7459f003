//! The OpenWOP spec-corpus generator: loads a corpus, cross-checks it and renders the
//! `openwop-sdk` crate as a set of files. `cargo xtask codegen` is a thin CLI over
//! [`generate`], [`write`] and [`stale`].

mod bundle;
mod check;
mod closed;
mod emit;
mod error;
mod format;
mod fresh;
mod load;
mod map;
mod openapi;
mod project;
mod prose;
mod registry;
mod rules;
mod shapes;
pub mod source_digest;
mod split;
mod templates;
mod uris;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

pub use error::{Error, HandEdit, Result, hand_edit_advice};

/// The digest of the sources this library was built from ([`source_digest::CODEGEN`]):
/// `cargo xtask` compares it with the checkout's before it runs the generator.
pub const BUILT_FROM: &str = env!("OPENWOP_CODEGEN_SOURCES");
pub use fresh::{
    HandEdits, MANIFEST_FILE, Stale, StaleKind, existing_files, hand_edited, is_generated_crate,
    stale, write,
};

/// Everything one generation run produced.
#[derive(Debug, Clone, Default)]
pub struct Output {
    /// Output files keyed by path relative to the output directory (forward slashes).
    pub files: BTreeMap<String, String>,
    /// Things the generator worked around (missing referenced files, untypable schemas).
    pub warnings: Vec<String>,
}

impl Output {
    /// `Err(Error::Strict)` listing every warning, when there is one: for `--strict`, which
    /// refuses a corpus the generator had to work around (an untypable construct, a missing
    /// referenced file, a typify fallback).
    pub fn strict(&self) -> Result<()> {
        if self.warnings.is_empty() {
            Ok(())
        } else {
            Err(Error::Strict {
                warnings: self.warnings.clone(),
            })
        }
    }
}

/// What to generate from.
#[derive(Debug, Clone)]
pub struct Config {
    /// The corpus root (holds `spec/`, `schemas/`, `api/`).
    pub spec_root: PathBuf,
    /// The rule-module templates (`codegen/templates/` by default).
    pub templates_dir: PathBuf,
}

impl Config {
    /// The given corpus with this crate's own templates.
    pub fn new(spec_root: impl Into<PathBuf>) -> Self {
        Self {
            spec_root: spec_root.into(),
            templates_dir: Path::new(env!("CARGO_MANIFEST_DIR")).join("templates"),
        }
    }
}

/// [`generate_with`] the crate's own templates.
pub fn generate(spec_root: &Path, progress: &mut dyn FnMut(&str)) -> Result<Output> {
    generate_with(&Config::new(spec_root), progress)
}

/// Reads the corpus, cross-checks it and renders every output file. `progress` receives one
/// human-readable line per step.
pub fn generate_with(config: &Config, progress: &mut dyn FnMut(&str)) -> Result<Output> {
    let started = Instant::now();
    let spec_root = config.spec_root.as_path();
    let corpus = load::Corpus::load(spec_root)?;
    progress(&format!(
        "loaded {} corpus files from {}",
        corpus.files.len(),
        spec_root.display()
    ));

    let errors = registry::load(&corpus)?;
    progress(&format!("{}: {} error codes", load::ERRORS, errors.len()));
    let map = map::load(&corpus)?;
    progress(&format!(
        "{}: {} A2A operations, {} A2A errors, {} task states, {} MCP methods",
        load::INTEROP_MAP,
        map.a2a_operations.len(),
        map.a2a_errors.len(),
        map.task_states.len(),
        map.mcp_methods.len()
    ));
    let ops = openapi::load(&corpus)?;
    progress(&format!("{}: {} operations", load::OPENAPI, ops.len()));

    let (statuses, check_warnings) = check::run(&corpus, &errors, &map, &ops)?;
    progress("cross-checks passed");

    let mut out = Output {
        warnings: check_warnings,
        ..Output::default()
    };
    let errors_in = [load::ERRORS, load::INTEROP_MAP];
    out.files.insert(
        "src/errors.rs".to_owned(),
        format::rust(
            "src/errors.rs",
            &corpus.provenance(&errors_in),
            emit::errors::emit(&errors, &map)?,
        )?,
    );
    let dispatch_in = [
        load::INTEROP_MAP,
        load::OPENAPI,
        "schemas/v2/run-snapshot.schema.json",
    ];
    out.files.insert(
        "src/dispatch.rs".to_owned(),
        format::rust(
            "src/dispatch.rs",
            &corpus.provenance(&dispatch_in),
            emit::dispatch::emit(&statuses, &map, &ops),
        )?,
    );

    let uris = uris::resolve(&corpus);
    for (uri, referrer) in &uris.missing {
        out.warnings.push(format!("{referrer} references {uri}, which is not in the corpus; validators accept anything there and models type it as serde_json::Value"));
    }
    // The OpenAPI document's references into files: a dangling pointer is an error, a file
    // the corpus lacks a warning (one per file, naming its first referrer).
    let api_missing = openapi::file_refs(&corpus, &|uri| {
        uris.by_file
            .iter()
            .find(|(_, u)| u.as_str() == uri)
            .map(|(rel, _)| rel.clone())
    })?;
    let mut missing_files: std::collections::BTreeSet<String> =
        uris.missing.keys().cloned().collect();
    let mut api_missing_by_file: BTreeMap<&str, Vec<&openapi::MissingFile>> = BTreeMap::new();
    for m in &api_missing {
        api_missing_by_file.entry(&m.file).or_default().push(m);
    }
    for (file, refs) in &api_missing_by_file {
        missing_files.insert(uris::uri_of(&uris, file));
        let first = refs[0];
        let more = match refs.len() {
            1 => String::new(),
            n => format!(" (and {} more references)", n - 1),
        };
        out.warnings.push(format!(
            "{}: `$ref` {} names {file}, which is not in the corpus{more}; the client types it loosely (serde_json::Value, a parameter as a string)",
            first.referrer, first.reference
        ));
    }
    let schema_in: Vec<&str> = corpus.schema_files.iter().map(String::as_str).collect();
    out.files.insert(
        "src/schemas.rs".to_owned(),
        format::rust(
            "src/schemas.rs",
            &corpus.provenance(&schema_in),
            emit::schemas::emit(&corpus, &uris),
        )?,
    );
    progress(&format!(
        "embedded {} schema files ({} referenced files missing)",
        schema_in.len(),
        missing_files.len()
    ));

    let templates = templates::load(&config.templates_dir)?;
    let names: Vec<String> = templates
        .validators
        .iter()
        .map(|t| t.name.clone())
        .collect();
    for t in &templates.validators {
        out.files
            .insert(format!("src/validators/{}.rs", t.name), t.rendered.clone());
    }
    let rules = rules::load(&corpus, spec_root)?;
    if let Some(rules) = &rules {
        rules::cross_check(rules, &templates.validators, emit::validators::EMITTED)?;
    }
    let mut validators_in = schema_in.clone();
    if corpus.has(load::RULES) {
        validators_in.push(load::RULES);
    }
    out.files.insert(
        "src/validators/mod.rs".to_owned(),
        format::rust(
            "src/validators/mod.rs",
            &corpus.provenance(&validators_in),
            emit::validators::emit(
                &corpus,
                &uris,
                &names,
                &ops,
                &emit::rules::emit(rules.as_deref().unwrap_or_default()),
                &closed::find(&corpus, &uris),
            ),
        )?,
    );
    out.files.insert(
        emit::rules::RULES_FILE.to_owned(),
        emit::rules::page(
            &format!(
                "<!-- @generated by cargo xtask codegen from {} — do not edit -->\n\n",
                corpus.provenance(&[load::RULES])
            ),
            rules.as_deref(),
        ),
    );
    if let Some(page) = emit::config_doc::page(
        &corpus,
        &format!(
            "<!-- @generated by cargo xtask codegen from {} — do not edit -->\n\n",
            corpus.provenance(&[
                emit::config_doc::CONFIG_SCHEMA,
                emit::config_doc::AGENT_DEFINITION_SCHEMA
            ])
        ),
    ) {
        out.files
            .insert(emit::config_doc::CONFIG_DOC_FILE.to_owned(), page);
    }
    progress(&format!(
        "validators with {} rule modules, {} catalogued rules",
        names.len(),
        rules.as_ref().map_or(0, Vec::len)
    ));

    let mut bundled = bundle::bundle(&corpus, &uris)?;
    out.warnings.extend(bundled.warnings.iter().cloned());
    let open_enums = shapes::open_enums(&mut bundled);
    let unions = shapes::closed_unions(&mut bundled);
    progress(&format!(
        "{} closed unions typed as tagged enums",
        unions.len()
    ));
    let mut request_roots: std::collections::BTreeSet<String> = ops
        .iter()
        .filter_map(|op| op.body.as_ref())
        .filter_map(|body| bundled.named_in_openapi(&corpus, &uris, body))
        .collect();
    // Documents the host reads from its operator (the config file, agent definitions) are
    // refused as request bodies are when they hold a key their schema does not.
    let host_reads: std::collections::BTreeSet<String> =
        host_read_types(&corpus, &bundled).into_iter().collect();
    request_roots.extend(host_reads.iter().cloned());
    let registry_codes: Vec<String> = errors
        .iter()
        .filter(|e| !e.code.contains('.'))
        .map(|e| e.code.clone())
        .collect();
    // The definition `dispatch::RunStatus` is made from: the run-snapshot file's string
    // enum with exactly the dispatch statuses (the cross-checks made them one set).
    let run_status = bundled
        .defs
        .iter()
        .find(|(name, schema)| {
            bundled
                .origin
                .get(*name)
                .is_some_and(|o| o.starts_with(&format!("{}#", check::RUN_SNAPSHOT)))
                && schema.get("type").and_then(serde_json::Value::as_str) == Some("string")
                && schema
                    .get("enum")
                    .and_then(serde_json::Value::as_array)
                    .is_some_and(|values| {
                        let values: std::collections::BTreeSet<&str> = values
                            .iter()
                            .filter_map(serde_json::Value::as_str)
                            .collect();
                        values.len() == statuses.len()
                            && statuses.iter().all(|s| values.contains(s.as_str()))
                    })
        })
        .map(|(name, _)| name.clone());
    let models = emit::models::emit(
        &bundled,
        &emit::models::Inputs {
            open_enums: &open_enums,
            request_roots: &request_roots,
            registry_codes: &registry_codes,
            run_status: run_status.as_deref(),
            host_reads: &host_reads,
        },
    )?;
    out.warnings.extend(models.warnings.iter().cloned());
    let mut model_in = schema_in.clone();
    model_in.push(load::OPENAPI);
    out.files.insert(
        "src/models.rs".to_owned(),
        format::rust(
            "src/models.rs",
            &corpus.provenance(&model_in),
            models.tokens.clone(),
        )?,
    );
    progress(&format!(
        "models: {} types, {} aliases, {} open enums, {} typed payloads",
        models.count,
        bundled.aliases.len(),
        open_enums.len(),
        bundled.discriminators.len()
    ));

    let named = |schema: &serde_json::Value| {
        let name = bundled.named_in_openapi(&corpus, &uris, schema)?;
        let name = models.renames.get(&name).cloned().unwrap_or(name);
        models.type_names.contains(&name).then_some(name)
    };
    // The items of an event stream: `itemSchema` (OpenAPI 3.2), the schema's
    // `contentSchema`, else the `*.schema.json` file its description names.
    let stream_item = |op: &openapi::Operation| {
        let media = op.stream_media.as_ref()?;
        let schema = media.get("schema");
        let explicit = [
            media.get("itemSchema"),
            schema.and_then(|s| s.get("contentSchema")),
        ];
        if let Some(found) = explicit.into_iter().flatten().find_map(&named) {
            return Some(found);
        }
        let description = schema?.get("description")?.as_str()?;
        let file = description
            .split(|c: char| c.is_whitespace() || "()[],;`'\"".contains(c))
            .find(|w| w.ends_with(".schema.json"))?;
        let rel = corpus
            .schema_files
            .iter()
            .find(|r| r.rsplit('/').next() == Some(file))?;
        named(&serde_json::json!({ "$ref": uris.by_file.get(rel)? }))
    };
    let has_op = |id: &str| ops.iter().any(|o| o.operation_id == id);
    let has_model = |name: &str| models.type_names.contains(name);
    // The whole models module (typify's items, the open enums and the typed views).
    let members = model_members(
        &syn::parse2::<syn::File>(models.tokens.clone()).unwrap_or_else(|_| models.items.clone()),
    );
    // The model an operation's answer (an event stream's items) or body is typed as.
    let op_named = |id: &str, answer: bool| -> Option<String> {
        let op = ops.iter().find(|o| o.operation_id == id)?;
        match answer {
            true if op.streams => stream_item(op),
            true => op.response.as_ref().and_then(&named),
            false => op.body.as_ref().and_then(&named),
        }
    };
    // What a list of requirements names and the corpus lacks (an unknown kind of
    // requirement is never met). A field or variant requirement counts here only when its
    // model is missing; a model that is there without the member is `broken` (below).
    // `answer <operationId> <Model>` / `body <operationId> <Model>`: the client types that
    // answer (an event stream's items) or body as that model (another corpus may leave it
    // `serde_json::Value`). `template <name>` (the client template, `convenience`) is
    // checked by `missing_of` below.
    let base_missing = |requires: &[(String, String)]| -> Vec<String> {
        requires
            .iter()
            .filter(|(kind, name)| match kind.as_str() {
                "operation" => !has_op(name),
                "model" => !has_model(name),
                "field" | "variant" => {
                    member_owner(kind, name).is_none_or(|(owner, _)| !has_model(owner))
                }
                "answer" | "body" => name.split_once(' ').is_none_or(|(op, model)| {
                    op_named(op, kind == "answer").as_deref() != Some(model.trim())
                }),
                "template" => false,
                _ => true,
            })
            .map(|(kind, name)| format!("{kind} {name}"))
            .collect()
    };
    let client_kept: std::collections::BTreeSet<&str> = templates
        .client
        .iter()
        .filter(|t| base_missing(&t.requires).is_empty())
        .map(|t| t.name.as_str())
        .collect();
    let missing_of = |requires: &[(String, String)]| -> Vec<String> {
        let mut missing = base_missing(requires);
        missing.extend(
            requires
                .iter()
                .filter(|(kind, name)| kind == "template" && !client_kept.contains(name.as_str()))
                .map(|(kind, name)| format!("{kind} {name}")),
        );
        missing
    };
    // A member a template (or a section of one) the corpus otherwise supports names and its
    // model lacks: a corpus edit (a renamed property, a dropped payload binding) broke the
    // template. Said before anything is written, naming the template, the member and the
    // schema, rather than left for rustc to report in generated code.
    let broken = |label: &str, requires: &[(String, String)]| -> Result<()> {
        for (kind, name) in requires {
            let Some((owner, member)) = member_owner(kind, name) else {
                continue;
            };
            let emitted = members.get(owner);
            if emitted.is_some_and(|m| m.contains(member)) {
                continue;
            }
            let source = models
                .renames
                .iter()
                .find(|(_, to)| to.as_str() == owner)
                .map_or(owner, |(from, _)| from.as_str());
            let schema = bundled
                .origin
                .get(source)
                .map_or_else(|| "the OpenAPI document".to_owned(), Clone::clone);
            let has = match emitted {
                Some(m) if m.is_empty() => format!("it has no {kind}s"),
                Some(m) => format!(
                    "its {kind}s are {}",
                    m.iter().cloned().collect::<Vec<_>>().join(", ")
                ),
                None => "it is not a struct or enum".to_owned(),
            };
            return Err(Error::TemplateMember {
                template: label.to_owned(),
                member: format!("{kind} {name}"),
                why: format!(
                    "models::{owner} (from {schema}) has no {kind} `{member}`; {has}. Restore it in the corpus, or change the template and its `requires {kind}` line"
                ),
            });
        }
        Ok(())
    };
    let missing = |t: &templates::Template| missing_of(&t.requires);
    let satisfied = |t: &templates::Template| missing(t).is_empty();
    for t in templates.client.iter().chain(&templates.files) {
        if satisfied(t) {
            broken(&t.label, &t.requires)?;
        }
    }
    // Sections of a Markdown template (`<!-- openwop-codegen: section requires … -->` …
    // `<!-- openwop-codegen: end section -->`) are kept or left out the same way.
    let mut sectioned = Vec::new();
    for t in templates.files.iter().filter(|t| satisfied(t)) {
        let Some(text) = templates::sections(&t.rendered, &mut |n, requires| {
            // A member its model lacks leaves a section out too (a section is prose and
            // its doctests, and another corpus's model of that name may be another shape:
            // upstream's `RunEventPayload` is a JSON value), where a whole template fails.
            let mut missing = missing_of(requires);
            missing.extend(
                requires
                    .iter()
                    .filter(|(kind, name)| {
                        member_owner(kind, name).is_some_and(|(owner, member)| {
                            has_model(owner)
                                && !members.get(owner).is_some_and(|m| m.contains(member))
                        })
                    })
                    .map(|(kind, name)| format!("{kind} {name}")),
            );
            if missing.is_empty() {
                return true;
            }
            progress(&format!(
                "left out section {n} of template {}: the corpus has no {}",
                t.name,
                missing.join(", ")
            ));
            false
        }) else {
            continue;
        };
        sectioned.push((t.name.clone(), text));
    }
    // A template whose operation or model the corpus lacks is left out (a corpus may be
    // smaller than ours: upstream's); said, so that renaming an operation does not drop
    // `run_to_end` or a test suite unnoticed.
    for t in templates.client.iter().chain(&templates.files) {
        let missing = missing(t);
        if !missing.is_empty() {
            progress(&format!(
                "left out template {}: the corpus has no {}",
                t.name,
                missing.join(", ")
            ));
        }
    }
    let helpers: Vec<&templates::Template> =
        templates.client.iter().filter(|t| satisfied(t)).collect();
    let helper_names: Vec<String> = helpers.iter().map(|t| t.name.clone()).collect();
    for t in &helpers {
        out.files
            .insert(format!("src/client/{}.rs", t.name), t.rendered.clone());
    }
    let headers = openapi::response_headers(&corpus);
    let (shared_headers, header_warnings) = emit::client::shared_headers(&ops);
    out.warnings.extend(header_warnings);
    // An inline request or answer schema gets an untyped client (`body(impl
    // Into<serde_json::Value>)`, `ResponseValue<serde_json::Value>`): said, with the way to
    // a typed one.
    for op in &ops {
        let at = format!(
            "api/v2/openapi.yaml#/paths/{}/{}",
            uris::pointer_token(&op.path),
            op.method.to_ascii_lowercase()
        );
        let component = heck::ToUpperCamelCase::to_upper_camel_case(op.operation_id.as_str());
        let parts = [
            (op.body.as_ref(), "requestBody", "request body", "Body"),
            // An event stream's items are typed from its media type (`stream_item`).
            (
                op.response.as_ref().filter(|_| !op.streams),
                "responses",
                "answer",
                "Response",
            ),
        ];
        for (schema, place, what, suffix) in parts {
            let Some(schema) = schema else { continue };
            if named(schema).is_some() || !untyped_inline(schema) {
                continue;
            }
            out.warnings.push(format!(
                "{at}/{place}: operation {}: the {what} schema is inline, so the client types it as serde_json::Value; name it as a component (`#/components/schemas/{component}{suffix}`) and `$ref` it for a typed model",
                op.operation_id
            ));
        }
    }
    // A body field setter renamed for a parameter that holds its name keeps compiling under
    // the old name with another meaning (`.workflow_id(..)` now sets the query): said.
    for op in &ops {
        for (field, setter) in
            emit::client_ops::renamed_body_setters(op, &named, &models.items, &shared_headers)
        {
            out.warnings.push(format!(
                "api/v2/openapi.yaml#/paths/{}/{}: operation {}: the body field `{field}` has the setter `{setter}`, because a parameter of the operation takes the name `{}`; code that called `.{}(..)` for the body now sets the parameter. Rename the parameter (or the field)",
                uris::pointer_token(&op.path),
                op.method.to_ascii_lowercase(),
                op.operation_id,
                heck::ToSnakeCase::to_snake_case(field.as_str()),
                heck::ToSnakeCase::to_snake_case(field.as_str()),
            ));
        }
    }
    out.files.insert(
        "src/client/mod.rs".to_owned(),
        format::rust(
            "src/client/mod.rs",
            &corpus.provenance(&model_in),
            emit::client::emit(&emit::client::Inputs {
                corpus: &corpus,
                ops: &ops,
                named: &named,
                stream_item: &stream_item,
                models: &models.items,
                open_enums: &models.open_enums,
                reexported_enums: &models.reexported_enums,
                headers: &headers,
                shared_headers: &shared_headers,
                helper_modules: &helper_names,
            }),
        )?,
    );
    client_methods_once(&out.files)?;
    progress(&format!(
        "client: {} operations, {} helper modules",
        ops.len(),
        helper_names.len()
    ));

    let mut examples = Vec::new();
    let mut tests = Vec::new();
    for t in templates.files.iter().filter(|t| satisfied(t)) {
        if let Some(example) = t
            .name
            .strip_prefix("examples/")
            .and_then(|n| n.strip_suffix(".rs"))
        {
            examples.push(example.to_owned());
        }
        if let Some(test) = t
            .name
            .strip_prefix("tests/")
            .and_then(|n| n.strip_suffix(".rs"))
        {
            tests.push(test.to_owned());
        }
        let text = sectioned
            .iter()
            .find(|(name, _)| *name == t.name)
            .map_or(&t.rendered, |(_, text)| text);
        out.files.insert(t.name.clone(), text.clone());
    }

    // The upstream version registry (optional in the corpus).
    let versions = corpus
        .files
        .get(load::UPSTREAM_VERSIONS)
        .map(|f| (&f.value, f.text.as_str()));
    out.files.insert(
        "src/versions.rs".to_owned(),
        format::rust(
            "src/versions.rs",
            &corpus.provenance(&[load::UPSTREAM_VERSIONS]),
            emit::versions::emit(versions)?,
        )?,
    );
    let all: Vec<&str> = corpus.files.keys().map(String::as_str).collect();
    let provenance = corpus.provenance(&all);
    out.files.insert(
        "src/corpus.rs".to_owned(),
        format::rust(
            "src/corpus.rs",
            &provenance,
            emit::corpus::emit(&emit::corpus::Inputs {
                sha256: &corpus.sha256(),
                files: corpus.files.len(),
            }),
        )?,
    );

    let modules = [
        ("client", Some("client")),
        ("corpus", None),
        ("dispatch", None),
        ("errors", None),
        ("models", Some("models")),
        ("schemas", None),
        ("validators", Some("validators")),
        ("versions", None),
    ];
    out.files.insert(
        "src/lib.rs".to_owned(),
        format::rust(
            "src/lib.rs",
            &provenance,
            emit::lib_rs::emit(
                &modules,
                out.files.contains_key("README.md"),
                &emit::lib_rs::api_version(&corpus),
            ),
        )?,
    );
    out.files.insert(
        "Cargo.toml".to_owned(),
        emit::cargo_toml::emit(&provenance, &examples, &tests),
    );
    // Last: it lists the hash of every other file.
    out.files
        .insert(fresh::MANIFEST_FILE.to_owned(), fresh::manifest(&out.files));

    progress(&format!(
        "rendered {} files in {:.2?}",
        out.files.len(),
        started.elapsed()
    ));
    Ok(out)
}

/// The keyword a schema file's root carries when the host reads such documents from its
/// operator (`schemas/v2/config.schema.json`, `agent-definition.schema.json`): every type of
/// the file keeps its schema's closedness, as a request body's does.
pub(crate) const HOST_READS: &str = "x-openwop-host-reads";

/// The bundled types that come from a schema file marked [`HOST_READS`].
fn host_read_types(corpus: &load::Corpus, bundled: &bundle::Bundle) -> Vec<String> {
    let files: Vec<&String> = corpus
        .schema_files
        .iter()
        .filter(|rel| corpus.value(rel).get(HOST_READS) == Some(&serde_json::Value::Bool(true)))
        .collect();
    bundled
        .origin
        .iter()
        .filter(|(_, origin)| {
            files.iter().any(|f| {
                origin
                    .strip_prefix(f.as_str())
                    .is_some_and(|r| r.starts_with('#'))
            })
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// Every method of `Client`, generated (one per operation) or hand-written (the helper
/// templates), has its own name: two operationIds that snake-case alike, or one named like a
/// helper (`runSnapshot`), would otherwise give a crate that does not compile, found only
/// by whoever builds it.
fn client_methods_once(files: &BTreeMap<String, String>) -> Result<()> {
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for (rel, text) in files
        .iter()
        .filter(|(rel, _)| rel.starts_with("src/client/"))
    {
        let Ok(file) = syn::parse_file(text) else {
            continue;
        };
        for item in &file.items {
            let syn::Item::Impl(block) = item else {
                continue;
            };
            let is_client = block.trait_.is_none()
                && matches!(&*block.self_ty, syn::Type::Path(p)
                    if p.path.segments.last().is_some_and(|s| s.ident == "Client"));
            if !is_client {
                continue;
            }
            for member in &block.items {
                let syn::ImplItem::Fn(f) = member else {
                    continue;
                };
                let name = f.sig.ident.to_string();
                if let Some(first) = seen.insert(name.clone(), rel.clone()) {
                    return Err(Error::Collision {
                        name: format!("Client::{name}"),
                        first,
                        second: format!(
                            "{rel} (an operationId that names a method twice, or one named like a helper's)"
                        ),
                    });
                }
            }
        }
    }
    Ok(())
}

/// `("field", "RunEvent.node_id")` → `("RunEvent", "node_id")`;
/// `("variant", "RunEventPayload::InterruptRequested")` → `("RunEventPayload", "InterruptRequested")`.
fn member_owner<'a>(kind: &str, name: &'a str) -> Option<(&'a str, &'a str)> {
    match kind {
        "field" => name.split_once('.'),
        "variant" => name.split_once("::"),
        _ => None,
    }
}

/// Each emitted struct's field names and each enum's variant names (raw identifiers without
/// `r#`), by type name; an alias (`pub type A = B;`) and a newtype (`A(pub B)`, which derefs
/// to `B`) also have their target's.
fn model_members(
    items: &syn::File,
) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let unraw = |i: &syn::Ident| i.to_string().trim_start_matches("r#").to_owned();
    let mut out: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        std::collections::BTreeMap::new();
    let mut aliases = Vec::new();
    for item in &items.items {
        match item {
            syn::Item::Struct(s) => {
                let fields = s.fields.iter().filter_map(|f| f.ident.as_ref()).map(unraw);
                out.insert(s.ident.to_string(), fields.collect());
                // A newtype (`InterruptRequested(pub InterruptPayload)`) derefs to its
                // inner type: its fields are reached through it.
                if let syn::Fields::Unnamed(one) = &s.fields
                    && one.unnamed.len() == 1
                    && let syn::Type::Path(p) = &one.unnamed[0].ty
                    && let Some(last) = p.path.segments.last()
                {
                    aliases.push((s.ident.to_string(), last.ident.to_string()));
                }
            }
            syn::Item::Enum(e) => {
                let variants = e.variants.iter().map(|v| unraw(&v.ident));
                out.insert(e.ident.to_string(), variants.collect());
            }
            syn::Item::Type(t) => {
                if let syn::Type::Path(p) = &*t.ty
                    && let Some(last) = p.path.segments.last()
                {
                    aliases.push((t.ident.to_string(), last.ident.to_string()));
                }
            }
            _ => {}
        }
    }
    for (alias, target) in aliases {
        if let Some(m) = out.get(&target).cloned() {
            out.entry(alias).or_default().extend(m);
        }
    }
    out
}

/// An inline schema that would have been a model had it been named: an object with
/// properties (a free-form object or a bare `true` is `serde_json::Value` by design).
fn untyped_inline(schema: &serde_json::Value) -> bool {
    schema.get("$ref").is_none()
        && schema
            .get("properties")
            .and_then(serde_json::Value::as_object)
            .is_some_and(|p| !p.is_empty())
}
