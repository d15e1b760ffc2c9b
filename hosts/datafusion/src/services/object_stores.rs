// SPDX-License-Identifier: Apache-2.0
//! `ql_object_store` and `ql_object_store_registry` over object_store and
//! the session's registry (gap G5): a plugin reads what the session reads.

use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::Arc;

use futures::StreamExt;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt};

#[allow(unused_imports)]
use super::*;
use crate::blocking::block_on_io;
use crate::error::{cstr, error_message, guard_status, guard_value, set_error};
use crate::ffi::*;

struct StoreHandle {
    store: Arc<dyn ObjectStore>,
}

fn store_of(self_: *const ql_object_store) -> Arc<dyn ObjectStore> {
    // SAFETY: private_data of a store we made.
    unsafe { Arc::clone(&(*((*self_).private_data as *const StoreHandle)).store) }
}

fn store_path(path: *const c_char) -> StorePath {
    object_path(cstr(path).trim_start_matches('/'))
}

/// A qlink object path (a plain '/'-separated string, not percent-encoded)
/// as an object_store `Path`. `Path::parse` keeps each segment as written;
/// `Path::from` would percent-encode non-ASCII bytes and '%', which the local
/// file store then encodes a second time (a directory named `pü` or `a%b`
/// would not be found). Paths `parse` refuses (control characters, "." or
/// ".." segments) go through `from`, which escapes them.
fn object_path(path: &str) -> StorePath {
    StorePath::parse(path).unwrap_or_else(|_| StorePath::from(path))
}

fn store_error(error: *mut ql_error, e: object_store::Error) -> c_int {
    let status = match e {
        object_store::Error::NotFound { .. } => QL_ENOTFOUND,
        _ => QL_EIO,
    };
    set_error(error, status, &with_causes(&e))
}

/// An error's text followed by each cause its own text does not already
/// say (an HTTP client's "error following redirect" then says why).
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let more = c.to_string();
        if !more.is_empty() && !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = c.source();
    }
    text
}

unsafe extern "C" fn store_head(
    self_: *const ql_object_store,
    path: *const c_char,
    out: *mut ql_object_meta,
    error: *mut ql_error,
) -> c_int {
    guard_status(error, "object store head", || {
        let store = store_of(self_);
        let p = store_path(path);
        match block_on_io(async move { store.head(&p).await }) {
            Ok(meta) => {
                (*out).path = path;
                (*out).size = meta.size as i64;
                (*out).last_modified_ns = meta.last_modified.timestamp_nanos_opt().unwrap_or(0);
                QL_OK
            }
            Err(e) => store_error(error, e),
        }
    })
}

unsafe extern "C" fn bytes_release(b: *mut ql_bytes) {
    guard_value((), || {
        if !(*b).private_data.is_null() {
            drop(Box::from_raw((*b).private_data as *mut bytes::Bytes));
        }
        (*b).private_data = std::ptr::null_mut();
        (*b).release = None;
    })
}

unsafe extern "C" fn store_get_range(
    self_: *const ql_object_store,
    path: *const c_char,
    offset: i64,
    length: i64,
    out: *mut ql_bytes,
    error: *mut ql_error,
) -> c_int {
    guard_status(error, "object store get_range", || {
        if offset < 0 || length < -1 {
            return set_error(error, QL_EINVAL, &format!("get_range: bad range offset={offset} length={length}"));
        }
        let store = store_of(self_);
        let p = store_path(path);
        let name = cstr(path);
        let result = block_on_io(async move {
            // One request where the range is sure to be valid for any object
            // (a whole object, or a non-empty range from 0): no `head` round
            // trip first. Anything else, or a failure other than "not found"
            // (e.g. a range past the end), takes the exact path below.
            if offset == 0 && length != 0 {
                let mut opts = object_store::GetOptions::default();
                if length > 0 {
                    opts.range = Some(object_store::GetRange::Bounded(0..length as u64));
                }
                match store.get_opts(&p, opts).await {
                    Ok(r) => return r.bytes().await.map(Ok),
                    Err(e @ object_store::Error::NotFound { .. }) => return Err(e),
                    Err(_) => {}
                }
            }
            let size = store.head(&p).await?.size;
            if offset as u64 > size {
                return Ok(Err(size));
            }
            let end = if length < 0 { size } else { (offset as u64 + length as u64).min(size) };
            if end == offset as u64 {
                return Ok(Ok(bytes::Bytes::new()));
            }
            match store.get_range(&p, offset as u64..end).await {
                Err(object_store::Error::NotSupported { .. }) => {
                    let all = get_whole(&store, &p).await?;
                    let len = all.len() as u64;
                    Ok(Ok(all.slice((offset as u64).min(len) as usize..end.min(len) as usize)))
                }
                r => r.map(Ok),
            }
        });
        match result {
            Ok(Ok(data)) => {
                let boxed = Box::new(data);
                *out = ql_bytes {
                    data: boxed.as_ptr(),
                    size: boxed.len() as i64,
                    release: Some(bytes_release),
                    private_data: Box::into_raw(boxed) as *mut c_void,
                };
                QL_OK
            }
            Ok(Err(size)) => set_error(error, QL_EINVAL, &format!("get_range: offset {offset} is past the end of {name} ({size} bytes)")),
            Err(e) => store_error(error, e),
        }
    })
}

/// The caller's buffer of a `read_into`, handed to the io runtime when the
/// payload is a stream. The caller blocks until that task has finished, so
/// the memory outlives every write.
struct ReadDst(*mut u8, usize);
// SAFETY: see above; only the one task writes through it.
unsafe impl Send for ReadDst {}

/// Why a `read_into` range could not be read, beyond object_store's errors.
enum ReadFail {
    Store(object_store::Error),
    PastEnd(u64),
    Io(String),
}

impl From<object_store::Error> for ReadFail {
    fn from(e: object_store::Error) -> Self {
        ReadFail::Store(e)
    }
}

/// Copy a streamed payload into `dst` (at most `dst.1` bytes); returns the
/// bytes written.
async fn copy_stream(payload: object_store::GetResultPayload, dst: ReadDst) -> Result<usize, ReadFail> {
    let object_store::GetResultPayload::Stream(mut s) = payload else {
        return Err(ReadFail::Io("read_into: unexpected payload".into()));
    };
    let mut n = 0usize;
    while let Some(chunk) = s.next().await {
        let chunk = chunk?;
        if chunk.len() > dst.1 - n {
            return Err(ReadFail::Io(format!("read_into: the store returned more than the {} bytes asked for", dst.1)));
        }
        // SAFETY: dst.0 holds dst.1 bytes (the caller's contract), n + len <= dst.1.
        unsafe { std::ptr::copy_nonoverlapping(chunk.as_ptr(), dst.0.add(n), chunk.len()) };
        n += chunk.len();
    }
    Ok(n)
}

/// The whole of object `p` from a server that refuses range requests
/// (object_store's `NotSupported`: a plain web server such as
/// `python -m http.server`); callers take their slice. Zarr reads a chunk
/// whole, so this costs nothing extra there.
async fn get_whole(store: &Arc<dyn ObjectStore>, p: &StorePath) -> object_store::Result<bytes::Bytes> {
    store.get(p).await?.bytes().await
}

/// The range read of `read_into`: one `get_opts` request (no `head` first).
/// A local file comes back as an open file, read here with a positioned
/// read straight into `dst` on the calling thread; any other payload is a
/// stream, copied into `dst` as its chunks arrive. Ranges object_store
/// refuses (empty, or starting at or past the end) take a `head` to tell
/// "past the end" (QL_EINVAL, as get_range) from "at the end" (0 bytes).
fn read_range_into(store: Arc<dyn ObjectStore>, p: StorePath, offset: u64, dst: ReadDst) -> Result<usize, ReadFail> {
    let length = dst.1 as u64;
    let got = if length == 0 {
        None
    } else {
        let (st, path) = (Arc::clone(&store), p.clone());
        let opened = block_on_io(async move {
            let opts =
                object_store::GetOptions { range: Some(object_store::GetRange::Bounded(offset..offset + length)), ..Default::default() };
            st.get_opts(&path, opts).await
        });
        match opened {
            Ok(r) => Some(r),
            Err(e @ object_store::Error::NotFound { .. }) => return Err(e.into()),
            Err(object_store::Error::NotSupported { .. }) => {
                let (st, path) = (Arc::clone(&store), p.clone());
                let all = block_on_io(async move { get_whole(&st, &path).await })?;
                let len = all.len() as u64;
                if offset > len {
                    return Err(ReadFail::PastEnd(len));
                }
                let part = &all[offset as usize..(offset + length).min(len) as usize];
                // SAFETY: dst.0 holds dst.1 == length >= part.len() bytes (the caller's contract).
                unsafe { std::ptr::copy_nonoverlapping(part.as_ptr(), dst.0, part.len()) };
                return Ok(part.len());
            }
            Err(e) => {
                // Tell a range past the end from a failure of the store.
                let (st, path) = (Arc::clone(&store), p.clone());
                let size = block_on_io(async move { st.head(&path).await })?.size;
                if offset > size {
                    return Err(ReadFail::PastEnd(size));
                }
                if offset == size {
                    return Ok(0);
                }
                return Err(e.into());
            }
        }
    };
    let Some(r) = got else {
        let size = block_on_io(async move { store.head(&p).await })?.size;
        return if offset > size { Err(ReadFail::PastEnd(size)) } else { Ok(0) };
    };
    let n = (r.range.end - r.range.start) as usize;
    if r.range.start != offset || n > dst.1 {
        return Err(ReadFail::Io(format!(
            "read_into: the store answered range {}..{} for {}..{}",
            r.range.start,
            r.range.end,
            offset,
            offset + length
        )));
    }
    match r.payload {
        object_store::GetResultPayload::File(file, _) => {
            use std::os::unix::fs::FileExt;
            // SAFETY: dst.0 holds dst.1 >= n bytes (the caller's contract).
            let buf = unsafe { std::slice::from_raw_parts_mut(dst.0, n) };
            file.read_exact_at(buf, offset).map_err(|e| ReadFail::Io(format!("read_into: {e}")))?;
            Ok(n)
        }
        payload => block_on_io(copy_stream(payload, dst)),
    }
}

unsafe extern "C" fn store_read_into(
    self_: *const ql_object_store,
    path: *const c_char,
    offset: i64,
    length: i64,
    dst: *mut u8,
    out_len: *mut i64,
    error: *mut ql_error,
) -> c_int {
    guard_status(error, "object store read_into", || {
        if !out_len.is_null() {
            *out_len = 0;
        }
        if offset < 0 || length < 0 || out_len.is_null() || (dst.is_null() && length > 0) {
            return set_error(
                error,
                QL_EINVAL,
                &format!("read_into: bad arguments offset={offset} length={length} dst={dst:?} out_len={out_len:?}"),
            );
        }
        let name = cstr(path);
        let dst = ReadDst(dst, length as usize);
        match read_range_into(store_of(self_), store_path(path), offset as u64, dst) {
            Ok(n) => {
                *out_len = n as i64;
                QL_OK
            }
            Err(ReadFail::PastEnd(size)) => {
                set_error(error, QL_EINVAL, &format!("read_into: offset {offset} is past the end of {name} ({size} bytes)"))
            }
            Err(ReadFail::Store(e)) => store_error(error, e),
            Err(ReadFail::Io(m)) => set_error(error, QL_EIO, &format!("{m} ({name})")),
        }
    })
}

struct ObjectList {
    _paths: Vec<CString>,
    items: Vec<ql_object_meta>,
}

unsafe extern "C" fn list_release(l: *mut ql_object_list) {
    guard_value((), || {
        if !(*l).private_data.is_null() {
            drop(Box::from_raw((*l).private_data as *mut ObjectList));
        }
        (*l).private_data = std::ptr::null_mut();
        (*l).release = None;
    })
}

unsafe extern "C" fn store_list(
    self_: *const ql_object_store,
    prefix: *const c_char,
    out: *mut ql_object_list,
    error: *mut ql_error,
) -> c_int {
    guard_status(error, "object store list", || {
        let store = store_of(self_);
        let prefix = cstr(prefix);
        let metas = block_on_io(async move {
            let p = if prefix.is_empty() { None } else { Some(object_path(prefix.trim_start_matches('/'))) };
            let mut s = store.list(p.as_ref());
            let mut v = Vec::new();
            while let Some(m) = s.next().await {
                v.push(m?);
            }
            Ok::<_, object_store::Error>(v)
        });
        match metas {
            Ok(metas) => {
                let paths: Vec<CString> = metas.iter().map(|m| CString::new(m.location.as_ref()).unwrap_or_default()).collect();
                let items = metas
                    .iter()
                    .zip(&paths)
                    .map(|(m, p)| ql_object_meta {
                        path: p.as_ptr(),
                        size: m.size as i64,
                        last_modified_ns: m.last_modified.timestamp_nanos_opt().unwrap_or(0),
                    })
                    .collect();
                let mut list = Box::new(ObjectList { _paths: paths, items });
                *out = ql_object_list {
                    count: list.items.len() as i64,
                    items: list.items.as_mut_ptr(),
                    release: Some(list_release),
                    private_data: Box::into_raw(list) as *mut c_void,
                };
                QL_OK
            }
            Err(e) => store_error(error, e),
        }
    })
}

unsafe extern "C" fn store_release(s: *mut ql_object_store) {
    guard_value((), || {
        if !(*s).private_data.is_null() {
            drop(Box::from_raw((*s).private_data as *mut StoreHandle));
        }
        (*s).private_data = std::ptr::null_mut();
        (*s).release = None;
    })
}

/// Export a DataFusion object store as a qlink store (owned by the caller).
pub fn export_store(store: Arc<dyn ObjectStore>) -> ql_object_store {
    ql_object_store {
        struct_size: std::mem::size_of::<ql_object_store>() as u32,
        head: Some(store_head),
        get_range: Some(store_get_range),
        list: Some(store_list),
        release: Some(store_release),
        private_data: Box::into_raw(Box::new(StoreHandle { store })) as *mut c_void,
        read_into: Some(store_read_into),
    }
}

pub(crate) unsafe extern "C" fn registry_get_store(
    self_: *const ql_object_store_registry,
    url: *const c_char,
    out: *mut ql_object_store,
    error: *mut ql_error,
) -> c_int {
    guard_status(error, "object store registry get_store", || {
        let env = &*((*self_).private_data as *const EnvState);
        let text = cstr(url);
        let parsed = match url::Url::parse(&text) {
            Ok(u) => u,
            Err(e) => return set_error(error, QL_EINVAL, &format!("bad object store URL {text:?}: {e}")),
        };
        let key = format!("{}://{}", parsed.scheme(), &parsed[url::Position::BeforeHost..url::Position::AfterPort]);
        let store_url = match datafusion::execution::object_store::ObjectStoreUrl::parse(&key) {
            Ok(u) => u,
            Err(e) => return set_error(error, QL_EINVAL, &format!("bad object store URL {text:?}: {}", error_message(&e))),
        };
        match env.runtime.object_store(&store_url) {
            Ok(store) => {
                *out = export_store(store);
                QL_OK
            }
            Err(e) => set_error(error, QL_ENOTFOUND, &format!("no object store registered for {text}: {}", error_message(&e))),
        }
    })
}
