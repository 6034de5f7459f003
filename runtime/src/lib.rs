//! The OpenWOP v2 interop host as a library: the `openwop` binary is a thin shell over it.

pub mod serve_cmd;
pub mod validate_cmd;
