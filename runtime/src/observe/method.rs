//! The HTTP method as a label, shared by the metrics and access log ([`super`]) and the
//! exported spans ([`super::otel`]); in a file of its own so the exporter does not import
//! the metrics module, which reads the operations for `/readyz`.

/// The method as a metric label and log field: one of the methods HTTP defines, or
/// `other` (hyper accepts any token as a method, and each would be a series).
pub fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::OPTIONS => "OPTIONS",
        Method::TRACE => "TRACE",
        Method::CONNECT => "CONNECT",
        _ => "other",
    }
}
