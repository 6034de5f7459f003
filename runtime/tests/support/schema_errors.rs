//! jsonschema's errors as the generated validators report them, restated independently
//! for the tests that hold the validators to jsonschema: a member the schema does not
//! allow (`additionalProperties` / `unevaluatedProperties: false`) is one finding per
//! member, at that member, with jsonschema's sentence for one member; an object or array
//! the sentence is about is named ("the object"), not quoted. Included by path
//! (`#[path]`) where it is needed, apart from the host-building support module.

/// `(pointer, message)` per finding, in jsonschema's order.
pub fn as_findings(
    validator: &jsonschema::Validator,
    doc: &serde_json::Value,
) -> Vec<(String, String)> {
    use jsonschema::error::ValidationErrorKind as K;
    let mut out = Vec::new();
    for e in validator.iter_errors(doc) {
        let path = e.instance_path().to_string();
        let (what, members) = match e.kind() {
            K::AdditionalProperties { unexpected } => ("Additional", unexpected),
            K::UnevaluatedProperties { unexpected } => ("Unevaluated", unexpected),
            _ => {
                let message = match &**e.instance() {
                    serde_json::Value::Object(_) => e.masked_with("the object").to_string(),
                    serde_json::Value::Array(_) => e.masked_with("the array").to_string(),
                    _ => e.to_string(),
                };
                out.push((path, message));
                continue;
            }
        };
        for name in members {
            out.push((
                format!("{path}/{}", name.replace('~', "~0").replace('/', "~1")),
                format!("{what} properties are not allowed ('{name}' was unexpected)"),
            ));
        }
    }
    out
}
