// SPDX-License-Identifier: Apache-2.0
//! The host's object stores (`ql_object_store_registry`, qlink/services.h)
//! as DataFusion's `ObjectStoreRegistry` and object_store's `ObjectStore`.
//!
//! A plugin built on DataFusion never opens a file or a URL itself: every
//! store it reads through is the host's, chosen by scheme and authority, so
//! the host's path gates and its engine's sandbox settings (DuckDB's
//! `enable_external_access`, SQLite's authorizer) hold for Rust plugins as
//! for C ones. Stores are read-only here: writes are refused.
//!
//! The host's registry is only valid during a call that received it (a
//! session or a task context), so the entry points make it current for
//! their thread ([`with_registry`]). A store is asked of the host each time
//! DataFusion asks for one, and released when DataFusion drops it (at the
//! end of the call, or when a partition's stream is released): nothing of
//! the host's outlives the call or stream it came with, since a host's store
//! may end with its database.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::CString;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use datafusion::error::DataFusionError;
use datafusion::execution::object_store::ObjectStoreRegistry;
use futures::stream::{self, BoxStream, StreamExt};
use object_store::path::Path;
use object_store::{
    Attributes, CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use qlink_sys::*;
use url::Url;

use crate::error::take_error;

thread_local! {
    static CURRENT: Cell<*const ql_object_store_registry> = const { Cell::new(std::ptr::null()) };
}

/// Run `f` with `registry` (may be NULL) as this thread's host registry.
pub fn with_registry<T>(registry: *const ql_object_store_registry, f: impl FnOnce() -> T) -> T {
    let saved = CURRENT.with(|c| c.replace(registry));
    struct Restore(*const ql_object_store_registry);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(saved);
    f()
}

/// The key a store is registered under: scheme and authority.
fn store_key(url: &Url) -> String {
    format!("{}://{}", url.scheme(), &url[url::Position::BeforeHost..url::Position::AfterPort])
}

/// DataFusion's object-store registry over the host's. Thread-safe. Holds
/// only stores registered on it explicitly (none, unless a plugin does).
#[derive(Default)]
pub struct HostStores {
    stores: Mutex<HashMap<String, Arc<dyn ObjectStore>>>,
}

impl fmt::Debug for HostStores {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HostStores")
    }
}

impl ObjectStoreRegistry for HostStores {
    fn register_store(&self, url: &Url, store: Arc<dyn ObjectStore>) -> Option<Arc<dyn ObjectStore>> {
        self.stores.lock().unwrap_or_else(|p| p.into_inner()).insert(store_key(url), store)
    }

    fn get_store(&self, url: &Url) -> datafusion::error::Result<Arc<dyn ObjectStore>> {
        let key = store_key(url);
        if let Some(s) = self.stores.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(s.clone());
        }
        let registry = CURRENT.with(|c| c.get());
        if registry.is_null() {
            return Err(DataFusionError::Execution(format!("no object store for {key}: the host gave this call none")));
        }
        let curl = CString::new(format!("{key}/")).map_err(|_| DataFusionError::Plan(format!("object store URL {key:?} holds a NUL")))?;
        let mut out: ql_object_store = zeroed();
        let mut err = ql_error::new();
        // SAFETY: the registry is valid during this call (with_registry).
        let rc = unsafe {
            match (*registry).get_store {
                Some(get) => get(registry, curl.as_ptr(), &mut out, &mut err),
                None => QL_ENOTSUP,
            }
        };
        if rc != QL_OK {
            return Err(take_error(rc, &mut err).into());
        }
        Ok(Arc::new(HostStore { store: out, name: key }))
    }
}

/// One host store, owned (released on drop). The ABI makes every member
/// thread-safe.
struct HostStore {
    store: ql_object_store,
    name: String,
}

// SAFETY: the ABI requires object stores to be thread-safe.
unsafe impl Send for HostStore {}
unsafe impl Sync for HostStore {}

impl Drop for HostStore {
    fn drop(&mut self) {
        if let Some(r) = self.store.release {
            // SAFETY: owned; released once.
            unsafe { r(&mut self.store) };
        }
    }
}

impl fmt::Display for HostStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HostStore({})", self.name)
    }
}

impl fmt::Debug for HostStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

fn store_error(path: &str, status: i32, err: &mut ql_error) -> object_store::Error {
    let e = take_error(status, err);
    if status == QL_ENOTFOUND {
        object_store::Error::NotFound { path: path.to_string(), source: Box::new(e) }
    } else {
        object_store::Error::Generic { store: "qlink host", source: Box::new(e) }
    }
}

fn read_only(what: &str) -> object_store::Error {
    object_store::Error::NotSupported { source: format!("the host's object stores are read-only for plugins ({what})").into() }
}

fn time_of(ns: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_nanos(ns)
}

impl HostStore {
    fn cpath(path: &Path) -> object_store::Result<CString> {
        CString::new(path.as_ref())
            .map_err(|_| object_store::Error::InvalidPath { source: object_store::path::Error::InvalidPath { path: path.as_ref().into() } })
    }

    fn head_sync(&self, path: &Path) -> object_store::Result<ObjectMeta> {
        let c = Self::cpath(path)?;
        let mut meta = ql_object_meta { path: c.as_ptr(), size: 0, last_modified_ns: 0 };
        let mut err = ql_error::new();
        let head = self.store.head.ok_or_else(|| read_only("head"))?;
        // SAFETY: a thread-safe member of an owned store.
        let rc = unsafe { head(&self.store, c.as_ptr(), &mut meta, &mut err) };
        if rc != QL_OK {
            return Err(store_error(path.as_ref(), rc, &mut err));
        }
        Ok(ObjectMeta {
            location: path.clone(),
            last_modified: time_of(meta.last_modified_ns),
            size: meta.size.max(0) as u64,
            e_tag: None,
            version: None,
        })
    }

    fn range_sync(&self, path: &Path, range: Range<u64>) -> object_store::Result<Bytes> {
        let c = Self::cpath(path)?;
        let len = range.end.saturating_sub(range.start);
        let mut err = ql_error::new();
        if let Some(read_into) = self.store.read_into {
            let mut buf = vec![0u8; len as usize];
            let mut got = 0i64;
            // SAFETY: dst holds len bytes.
            let rc = unsafe { read_into(&self.store, c.as_ptr(), range.start as i64, len as i64, buf.as_mut_ptr(), &mut got, &mut err) };
            if rc != QL_OK {
                return Err(store_error(path.as_ref(), rc, &mut err));
            }
            buf.truncate(got.max(0) as usize);
            return Ok(Bytes::from(buf));
        }
        let get = self.store.get_range.ok_or_else(|| read_only("get_range"))?;
        let mut out = ql_bytes { data: std::ptr::null(), size: 0, release: None, private_data: std::ptr::null_mut() };
        // SAFETY: a thread-safe member of an owned store.
        let rc = unsafe { get(&self.store, c.as_ptr(), range.start as i64, len as i64, &mut out, &mut err) };
        if rc != QL_OK {
            return Err(store_error(path.as_ref(), rc, &mut err));
        }
        // SAFETY: out holds size bytes until released.
        let bytes = if out.data.is_null() {
            Bytes::new()
        } else {
            Bytes::copy_from_slice(unsafe { std::slice::from_raw_parts(out.data, out.size.max(0) as usize) })
        };
        if let Some(r) = out.release {
            unsafe { r(&mut out) };
        }
        Ok(bytes)
    }

    fn list_sync(&self, prefix: Option<&Path>) -> object_store::Result<Vec<ObjectMeta>> {
        let list = self.store.list.ok_or_else(|| read_only("list"))?;
        let c = Self::cpath(prefix.unwrap_or(&Path::default()))?;
        let mut out = ql_object_list { count: 0, items: std::ptr::null_mut(), release: None, private_data: std::ptr::null_mut() };
        let mut err = ql_error::new();
        // SAFETY: a thread-safe member of an owned store.
        let rc = unsafe { list(&self.store, c.as_ptr(), &mut out, &mut err) };
        if rc != QL_OK {
            return Err(store_error(prefix.map_or("", |p| p.as_ref()), rc, &mut err));
        }
        let mut metas = Vec::with_capacity(out.count.max(0) as usize);
        for i in 0..out.count.max(0) as usize {
            // SAFETY: count items.
            let m = unsafe { &*out.items.add(i) };
            let p = qlink_convert::cstr(m.path);
            match Path::parse(&p) {
                Ok(location) => metas.push(ObjectMeta {
                    location,
                    last_modified: time_of(m.last_modified_ns),
                    size: m.size.max(0) as u64,
                    e_tag: None,
                    version: None,
                }),
                Err(_) => continue, // a name object_store cannot express (".." segments): never listed
            }
        }
        if let Some(r) = out.release {
            unsafe { r(&mut out) };
        }
        Ok(metas)
    }
}

#[async_trait]
impl ObjectStore for HostStore {
    async fn put_opts(&self, _: &Path, _: PutPayload, _: PutOptions) -> object_store::Result<PutResult> {
        Err(read_only("put"))
    }

    async fn put_multipart_opts(&self, _: &Path, _: PutMultipartOptions) -> object_store::Result<Box<dyn MultipartUpload>> {
        Err(read_only("multipart put"))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> object_store::Result<GetResult> {
        let meta = self.head_sync(location)?;
        options.check_preconditions(&meta)?;
        let range = match &options.range {
            None => 0..meta.size,
            Some(r) => r.as_range(meta.size).map_err(|e| object_store::Error::Generic { store: "qlink host", source: Box::new(e) })?,
        };
        let bytes = if options.head { Bytes::new() } else { self.range_sync(location, range.clone())? };
        let payload = GetResultPayload::Stream(stream::once(async move { Ok(bytes) }).boxed());
        Ok(GetResult { payload, meta, range, attributes: Attributes::default() })
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> object_store::Result<Vec<Bytes>> {
        ranges.iter().map(|r| self.range_sync(location, r.clone())).collect()
    }

    fn delete_stream(&self, locations: BoxStream<'static, object_store::Result<Path>>) -> BoxStream<'static, object_store::Result<Path>> {
        locations.map(|_| Err(read_only("delete"))).boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        match self.list_sync(prefix) {
            Ok(v) => stream::iter(v.into_iter().map(Ok)).boxed(),
            Err(e) => stream::once(async move { Err(e) }).boxed(),
        }
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        let base = prefix.map(|p| p.parts().count()).unwrap_or(0);
        let mut objects = Vec::new();
        let mut dirs = std::collections::BTreeSet::new();
        for m in self.list_sync(prefix)? {
            let parts: Vec<_> = m.location.parts().collect();
            if parts.len() == base + 1 {
                objects.push(m);
            } else if parts.len() > base + 1 {
                dirs.insert(Path::from_iter(parts[..base + 1].iter().cloned()));
            }
        }
        Ok(ListResult { common_prefixes: dirs.into_iter().collect(), objects })
    }

    async fn copy_opts(&self, _: &Path, _: &Path, _: CopyOptions) -> object_store::Result<()> {
        Err(read_only("copy"))
    }
}
