// SPDX-License-Identifier: Apache-2.0
//! Worker addresses for distributed queries (`--workers`,
//! `qlink.Session(workers=...)`): parsed, and checked reachable before the
//! first query so a wrong address is one clear error at start.

use std::net::TcpStream;
use std::time::Duration;

use url::Url;

/// How long a worker may take to accept a connection at start.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// `http://h1:50051,http://h2:50051` as URLs. Errors name the entry: not a
/// URL, not http(s), or no port.
pub fn parse_workers(text: &str) -> Result<Vec<Url>, String> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        out.push(parse_worker(item)?);
    }
    if out.is_empty() {
        return Err(format!("--workers wants URL[,URL...] (e.g. http://h1:50051), got '{text}'"));
    }
    Ok(out)
}

/// One worker address, `http://HOST:PORT`.
pub fn parse_worker(item: &str) -> Result<Url, String> {
    let url = Url::parse(item).map_err(|e| format!("worker '{item}' is not a URL ({e}); write http://HOST:PORT"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!("worker '{item}' must be http://HOST:PORT or https://HOST:PORT"));
    }
    if url.port().is_none() {
        return Err(format!("worker '{item}' has no port; write http://HOST:PORT (qlink-worker --port N)"));
    }
    Ok(url)
}

/// Every worker accepts a TCP connection within 3 s. Errors name the first
/// worker that does not, and why.
pub fn check_reachable(workers: &[Url]) -> Result<(), String> {
    for w in workers {
        let addrs = w.socket_addrs(|| None).map_err(|e| format!("worker {w} cannot be resolved: {e}"))?;
        let mut last = None;
        let ok = addrs.iter().any(|a| match TcpStream::connect_timeout(a, CONNECT_TIMEOUT) {
            Ok(_) => true,
            Err(e) => {
                last = Some(e);
                false
            }
        });
        if !ok {
            let why = last.map(|e| e.to_string()).unwrap_or_else(|| "no address".into());
            return Err(format!("worker {w} is unreachable: {why} (is qlink-worker running there?)"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_and_names_bad_entries() {
        let w = parse_workers("http://a:1, http://b:2").unwrap();
        assert_eq!(w.iter().map(|u| u.as_str()).collect::<Vec<_>>(), ["http://a:1/", "http://b:2/"]);
        assert_eq!(parse_workers(" , ").unwrap_err(), "--workers wants URL[,URL...] (e.g. http://h1:50051), got ' , '");
        assert_eq!(parse_workers("http://a").unwrap_err(), "worker 'http://a' has no port; write http://HOST:PORT (qlink-worker --port N)");
        assert_eq!(parse_workers("ftp://a:1").unwrap_err(), "worker 'ftp://a:1' must be http://HOST:PORT or https://HOST:PORT");
        assert!(parse_workers("a:b:c").unwrap_err().starts_with("worker 'a:b:c' "));
    }

    #[test]
    fn a_closed_port_is_unreachable() {
        // Bind then drop: the port is free and nothing listens on it.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let w = parse_workers(&format!("http://127.0.0.1:{port}")).unwrap();
        let e = check_reachable(&w).unwrap_err();
        assert!(e.starts_with(&format!("worker http://127.0.0.1:{port}/ is unreachable: ")), "{e}");
    }
}
