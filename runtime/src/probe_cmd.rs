//! `openwop probe`: is the host on this machine ready? A health check for places with
//! no shell and no curl (the container image's HEALTHCHECK): one GET of `/readyz`,
//! exit 0 on a 2xx answer, 1 on anything else.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

/// GET the host's /readyz and exit 0 when it is ready, 1 otherwise.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  openwop probe
      Ask the host this environment configures (OPENWOP_LISTEN, OPENWOP_CONFIG's listen,
      else 127.0.0.1:8080; a 0.0.0.0 or [::] listener is asked on loopback) whether it is
      ready. With OPENWOP_TLS_CERT (or tlsCert) set it asks over https and does not check
      the certificate: the question goes to this machine and carries no credential.

  openwop probe http://127.0.0.1:9000/readyz
      Ask that URL (its certificate is checked as any client's would be).

Exit status: 0 when the answer is 2xx, 1 otherwise (refused, timed out, 503 while the
store is away or the host shuts down); one line on stdout or stderr says which.")]
pub struct ProbeArgs {
    /// The URL to GET; without it, /readyz of the host the environment configures.
    #[arg(value_name = "URL")]
    url: Option<String>,
    /// The address `openwop serve` listens on (as its --listen).
    #[arg(long, value_name = "ADDR", env = "OPENWOP_LISTEN")]
    listen: Option<String>,
    /// The config file `openwop serve` reads (its listen and tlsCert are used).
    #[arg(long, value_name = "FILE", env = "OPENWOP_CONFIG")]
    config: Option<PathBuf>,
    /// The host serves HTTPS (as serve's --tls-cert; only whether it is set matters).
    #[arg(long, value_name = "FILE", env = "OPENWOP_TLS_CERT")]
    tls_cert: Option<PathBuf>,
    /// Seconds to wait for the answer.
    #[arg(long, value_name = "SECS", default_value_t = 5)]
    timeout_secs: u64,
}

pub fn run(args: ProbeArgs) -> ExitCode {
    match probe(args) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(line) => {
            eprintln!("openwop probe: {line}");
            ExitCode::FAILURE
        }
    }
}

/// Where a listener on `listen` is reached from this machine: an unspecified address
/// (`0.0.0.0`, `[::]`) is asked on its loopback; anything else as written.
pub fn local_origin(listen: &str, https: bool) -> String {
    let scheme = if https { "https" } else { "http" };
    let authority = match listen.parse::<std::net::SocketAddr>() {
        Ok(std::net::SocketAddr::V4(a)) if a.ip().is_unspecified() => {
            format!("127.0.0.1:{}", a.port())
        }
        Ok(std::net::SocketAddr::V6(a)) if a.ip().is_unspecified() => {
            format!("[::1]:{}", a.port())
        }
        _ => listen.to_owned(),
    };
    format!("{scheme}://{authority}")
}

fn probe(args: ProbeArgs) -> Result<String, String> {
    let (url, own_host) = match args.url {
        Some(url) => (url, false),
        None => {
            let file = match &args.config {
                Some(p) => crate::serve_cmd::read_config(p)?,
                None => crate::config_file::defaults(),
            };
            let listen = args.listen.unwrap_or(file.listen);
            let https = args
                .tls_cert
                .or(crate::config_file::path(&file.tls_cert))
                .is_some();
            (format!("{}/readyz", local_origin(&listen, https)), true)
        }
    };
    // The host's own certificate names its public name, not loopback; the probe sends
    // nothing secret and only reads a status. (A configuration handed to reqwest would
    // ignore `danger_accept_invalid_certs`, so the own-host probe keeps reqwest's.)
    let builder = if own_host {
        reqwest::Client::builder().danger_accept_invalid_certs(true)
    } else {
        crate::trust::http_client()
    };
    let client = builder
        .timeout(Duration::from_secs(args.timeout_secs.max(1)))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    rt.block_on(async {
        let answer = client
            .get(&url)
            .send()
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        let status = answer.status();
        let body = answer.text().await.unwrap_or_default();
        let body = body.trim();
        let line = format!("{url}: {status} {body}");
        if status.is_success() {
            Ok(line)
        } else {
            Err(line)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::local_origin;

    #[test]
    fn an_unspecified_listener_is_asked_on_loopback() {
        assert_eq!(local_origin("0.0.0.0:8080", false), "http://127.0.0.1:8080");
        assert_eq!(local_origin("[::]:9000", true), "https://[::1]:9000");
        assert_eq!(local_origin("127.0.0.2:81", false), "http://127.0.0.2:81");
        assert_eq!(
            local_origin("localhost:8080", false),
            "http://localhost:8080"
        );
    }
}
