//! The standalone `openwop-validate` binary: the same command as the host's
//! `openwop validate`, without the host.

fn main() -> std::process::ExitCode {
    openwop_validate::cli::main("openwop-validate")
}
