// SPDX-License-Identifier: Apache-2.0
//! Object stores for `http://` and `https://` URLs, created on first use.
//!
//! [`RemoteStoreRegistry`] is the object store registry of the sessions the
//! `qlink` command line and the Python package build. It behaves as
//! DataFusion's `DefaultObjectStoreRegistry` (a local path and `file://` are
//! the local file system; a store registered for a URL serves it), and when
//! a URL names an `http`/`https` server nothing is registered for, it
//! registers an [`HttpStore`] for that server (`scheme://host[:port]`, as
//! DataFusion keys stores) and returns it. So a plugin given
//! `path=https://host/data/era5.zarr` reads the store with HTTP `HEAD` and
//! ranged `GET` requests (object_store's `HttpStore`) with no set-up step, as
//! `datafusion-cli` does for the URLs of a query.
//!
//! Public cloud buckets are read the same way, anonymously, through their
//! HTTPS endpoints: `gs://BUCKET/...` (or `gcs://`) is
//! `https://storage.googleapis.com/BUCKET/...` and `s3://BUCKET/...` is
//! `https://BUCKET.s3.amazonaws.com/...` ([`http_origin`]). A
//! private bucket answers 403, which the error shows; credentials are the
//! embedder's business (register an `object_store` store for the bucket).
//!
//! Plain HTTP servers cannot list a directory (object_store lists with
//! WebDAV `PROPFIND`), so a store read over HTTP must not need listing:
//! Zarr stores with consolidated metadata (what xarray writes by default)
//! do not. Errors from the server (status, connection) reach the caller as
//! object_store errors naming the URL.
//!
//! Redirects are followed within the store's origin only (scheme, host and
//! port): a server answering 302 to another host would otherwise receive
//! every metadata and chunk request meant for the first. A refused redirect
//! is an error naming both origins; `QLINK_FOLLOW_REDIRECTS=1` in the
//! environment follows any (at most 10 hops).
//!
//! An embedder of DataFusion keeps its own registry and registers its own
//! stores; this type is only a convenience for the sessions qlink builds.

use std::sync::Arc;
use std::time::Duration;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::{DefaultObjectStoreRegistry, ObjectStoreRegistry};
use object_store::client::{HttpClient, HttpConnector};
use object_store::http::{HttpBuilder, HttpStore};
use object_store::{ClientOptions, ObjectStore, RetryConfig};
use url::Url;

use crate::no_range::RangeMemo;

/// DataFusion's default registry plus HTTP(S) stores made on first use.
/// Thread-safe (`Send + Sync`): stores are kept in the inner registry's
/// concurrent map; two threads asking for a new server at once may each
/// build a store, and the second registered replaces the first (both work).
#[derive(Debug, Default)]
pub struct RemoteStoreRegistry {
    inner: DefaultObjectStoreRegistry,
}

impl RemoteStoreRegistry {
    pub fn new() -> Self {
        Self::default()
    }
}

/// The base URL of the HTTP store that serves `url`: `scheme://host[:port]`
/// for `http`/`https`; a public bucket's HTTPS endpoint for `gs://B`,
/// `gcs://B` (`https://storage.googleapis.com/B`) and `s3://B`
/// (`https://B.s3.amazonaws.com`); None for any other scheme. An error
/// names a URL of those schemes that names no server or no bucket.
pub fn http_origin(url: &Url) -> Result<Option<String>> {
    let (scheme, host) = (url.scheme(), url.host_str().unwrap_or(""));
    let bad = |what: String| Err(DataFusionError::Plan(format!("bad object store URL {url}: {what}")));
    match (scheme, host.is_empty()) {
        ("http" | "https", false) => Ok(Some(format!("{scheme}://{}", &url[url::Position::BeforeHost..url::Position::AfterPort]))),
        ("gs" | "gcs", false) => Ok(Some(format!("https://storage.googleapis.com/{host}"))),
        ("s3", false) => Ok(Some(format!("https://{host}.s3.amazonaws.com"))),
        ("http" | "https", true) => bad("it names no server".to_string()),
        ("gs" | "gcs" | "s3", true) => bad(format!("it names no bucket (write {scheme}://BUCKET/...)")),
        _ => Ok(None),
    }
}

/// An [`HttpStore`] serving every path of `url`'s server (or bucket); an
/// error for a URL [`http_origin`] does not serve.
///
/// Retries are few and short (2 retries within 10 s): a wrong host or a
/// server that is down gives an error in seconds instead of object_store's
/// default of minutes of back-off. `http://` is allowed because the user
/// typed it.
pub fn http_store(url: &Url) -> Result<HttpStore> {
    let Some(origin) = http_origin(url)? else {
        return Err(DataFusionError::Plan(format!("{url} is not an http(s), gs, gcs or s3 URL")));
    };
    let retry = RetryConfig { max_retries: 2, retry_timeout: Duration::from_secs(10), ..RetryConfig::default() };
    let follow_any = std::env::var_os(FOLLOW_REDIRECTS_ENV).is_some_and(|v| v == "1");
    HttpBuilder::new()
        .with_url(origin.clone())
        .with_client_options(ClientOptions::new().with_allow_http(true))
        .with_http_connector(RedirectPolicy { follow_any })
        .with_retry(retry)
        .build()
        .map_err(|e| DataFusionError::External(format!("cannot make an HTTP object store for {origin}: {e}").into()))
}

/// The environment variable that lets redirects leave a store's origin.
pub const FOLLOW_REDIRECTS_ENV: &str = "QLINK_FOLLOW_REDIRECTS";

/// How many redirects one request may follow.
const MAX_REDIRECTS: usize = 10;

/// object_store's HTTP client (reqwest, with object_store's default
/// timeouts) whose redirects stay within the first request's origin
/// unless `follow_any`.
#[derive(Debug)]
struct RedirectPolicy {
    follow_any: bool,
}

impl HttpConnector for RedirectPolicy {
    fn connect(&self, _options: &ClientOptions) -> object_store::Result<HttpClient> {
        let follow_any = self.follow_any;
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() > MAX_REDIRECTS {
                return attempt.error(format!("more than {MAX_REDIRECTS} HTTP redirects"));
            }
            let first = attempt.previous().first().map(|u| u.origin().ascii_serialization()).unwrap_or_default();
            let to = attempt.url().origin().ascii_serialization();
            if follow_any || first == to {
                attempt.follow()
            } else {
                attempt.error(format!(
                    "HTTP redirect from {first} to {to} refused: redirects are followed within one origin only \
                     (set {FOLLOW_REDIRECTS_ENV}=1 to follow them anywhere)"
                ))
            }
        });
        let client = reqwest::Client::builder()
            .redirect(policy)
            .user_agent(concat!("qlink/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| object_store::Error::Generic { store: "HTTP", source: Box::new(e) })?;
        Ok(HttpClient::new(client))
    }
}

impl ObjectStoreRegistry for RemoteStoreRegistry {
    fn register_store(&self, url: &Url, store: Arc<dyn ObjectStore>) -> Option<Arc<dyn ObjectStore>> {
        self.inner.register_store(url, store)
    }

    fn deregister_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        self.inner.deregister_store(url)
    }

    fn get_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        let missing = match self.inner.get_store(url) {
            Ok(store) => return Ok(store),
            Err(e) => e,
        };
        if http_origin(url)?.is_none() {
            return Err(missing);
        }
        // A server that refuses ranges is remembered per store: one GET per read.
        let store: Arc<dyn ObjectStore> = Arc::new(RangeMemo::new(Arc::new(http_store(url)?)));
        self.inner.register_store(url, Arc::clone(&store));
        Ok(store)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn local_files_as_datafusion_default() {
        let r = RemoteStoreRegistry::new();
        assert!(r.get_store(&url("file:///tmp/x.zarr")).is_ok());
    }

    #[test]
    fn http_store_made_once_per_server() {
        let r = RemoteStoreRegistry::new();
        let a = r.get_store(&url("https://data.example.org/a/era5.zarr")).unwrap();
        let b = r.get_store(&url("https://data.example.org/b/other.zarr")).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "one store per scheme://host[:port]");
        let c = r.get_store(&url("https://data.example.org:8443/a")).unwrap();
        assert!(!Arc::ptr_eq(&a, &c), "another port is another server");
        let d = r.get_store(&url("http://data.example.org/a")).unwrap();
        assert!(!Arc::ptr_eq(&a, &d), "another scheme is another server");
        assert!(format!("{a:?}").contains("data.example.org"), "{a:?}");
    }

    #[test]
    fn registered_store_wins_and_other_schemes_are_not_made() {
        let r = RemoteStoreRegistry::new();
        let mem: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        r.register_store(&url("https://mirror.example.org"), Arc::clone(&mem));
        assert!(Arc::ptr_eq(&r.get_store(&url("https://mirror.example.org/x")).unwrap(), &mem));
        for bad in ["s3://", "gs:///x.zarr", "gcs://"] {
            let err = r.get_store(&url(bad)).unwrap_err().to_string();
            assert!(err.contains("it names no bucket"), "{bad}: {err}");
        }
        let err = r.get_store(&url("az://container/x")).unwrap_err().to_string();
        assert!(err.contains("No suitable object store found for az://container/x"), "{err}");
    }

    #[test]
    fn public_buckets_map_to_https_endpoints() {
        let e = |s: &str| http_origin(&url(s)).unwrap();
        assert_eq!(
            e("gs://gcp-public-data-arco-era5/ar/x.zarr").as_deref(),
            Some("https://storage.googleapis.com/gcp-public-data-arco-era5")
        );
        assert_eq!(e("gcs://b/k").as_deref(), Some("https://storage.googleapis.com/b"));
        assert_eq!(e("s3://noaa-goes16/x").as_deref(), Some("https://noaa-goes16.s3.amazonaws.com"));
        assert_eq!(e("https://example.org:8443/x").as_deref(), Some("https://example.org:8443"));
        assert_eq!(e("file:///tmp/x"), None);
        let r = RemoteStoreRegistry::new();
        let s = r.get_store(&url("gs://bucket-a/x.zarr")).unwrap();
        let dbg = format!("{s:?}");
        assert!(dbg.contains("storage.googleapis.com") && dbg.contains("bucket-a"), "{dbg}");
    }
}
