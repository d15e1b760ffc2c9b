//! Host services handed to plugins (design 3.6, gaps G4, G5, G6, G8): the
//! session view, the runtime environment (DataFusion's memory pool,
//! object-store registry and disk manager), the executor, and the task
//! context. Each view is one allocation of a few pointers; nothing is
//! enumerated or converted until a plugin asks.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use datafusion::catalog::{Session, TableProvider};
use datafusion::common::config::{ConfigField, ConfigOptions, Visit};
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryLimit, MemoryReservation};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{AggregateUDF, ScalarUDF, WindowUDF};
use futures::StreamExt;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt};

use crate::error::{cstr, error_message, guard_status, guard_value, set_df_error, set_error};
use crate::ffi::*;
use crate::identity;
use crate::plugin::Plugin;

// ------------------------------------------------------------ io runtime

/// A small runtime of its own for object-store futures a plugin waits on
/// synchronously: `Handle::block_on` is not allowed on DataFusion's worker
/// threads, and stores such as the local file system need a reactor.
fn io_runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("qlink-io")
            .enable_all()
            .build()
            .expect("qlink io runtime")
    })
}

struct ThreadWaker(std::thread::Thread);
impl std::task::Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Poll a future to completion on this thread, parking between polls.
/// Unlike futures' block_on it may nest (a planner's plan_physical inside
/// another's), which planning a chain of plugin answers needs.
pub fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let waker = std::task::Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    loop {
        if let std::task::Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

/// Run `fut` to completion from any thread, sync.
pub fn block_on_io<T: Send + 'static>(fut: impl std::future::Future<Output = T> + Send + 'static) -> T {
    let handle = io_runtime().spawn(fut);
    block_on(handle).expect("qlink io task panicked")
}

// ----------------------------------------------------------- memory pool

struct Reservation {
    inner: MemoryReservation,
}

unsafe extern "C" fn reservation_try_grow(self_: *mut ql_memory_reservation, bytes: i64, error: *mut ql_error) -> c_int {
    guard_status(error, "memory reservation try_grow", || {
        if bytes < 0 {
            return set_error(error, QL_EINVAL, &format!("try_grow: negative size {bytes}"));
        }
        let r = &*((*self_).private_data as *const Reservation);
        match r.inner.try_grow(bytes as usize) {
            Ok(()) => QL_OK,
            Err(e) => set_error(error, QL_ERESOURCES, &error_message(&e)),
        }
    })
}

unsafe extern "C" fn reservation_shrink(self_: *mut ql_memory_reservation, bytes: i64) {
    guard_value((), || {
        let r = &*((*self_).private_data as *const Reservation);
        let n = (bytes.max(0) as usize).min(r.inner.size());
        r.inner.shrink(n);
    })
}

unsafe extern "C" fn reservation_size(self_: *const ql_memory_reservation) -> i64 {
    guard_value(0, || (*((*self_).private_data as *const Reservation)).inner.size() as i64)
}

unsafe extern "C" fn reservation_release(self_: *mut ql_memory_reservation) {
    guard_value((), || {
        if (*self_).private_data.is_null() {
            return;
        }
        // Dropping the reservation frees its bytes and unregisters the consumer.
        drop(Box::from_raw((*self_).private_data as *mut Reservation));
        (*self_).private_data = std::ptr::null_mut();
        (*self_).release = None;
    })
}

unsafe extern "C" fn pool_reservation_new(
    self_: *const ql_memory_pool,
    name: *const c_char,
    flags: i32,
    out: *mut ql_memory_reservation,
    error: *mut ql_error,
) -> c_int {
    guard_status(error, "memory pool reservation_new", || {
        let env = &*((*self_).private_data as *const EnvState);
        let consumer = MemoryConsumer::new(cstr(name)).with_can_spill(flags & 1 != 0);
        let reservation = consumer.register(&env.runtime.memory_pool);
        *out = ql_memory_reservation {
            struct_size: std::mem::size_of::<ql_memory_reservation>() as u32,
            try_grow: Some(reservation_try_grow),
            shrink: Some(reservation_shrink),
            size: Some(reservation_size),
            release: Some(reservation_release),
            private_data: Box::into_raw(Box::new(Reservation { inner: reservation })) as *mut c_void,
        };
        QL_OK
    })
}

unsafe extern "C" fn pool_reserved(self_: *const ql_memory_pool) -> i64 {
    guard_value(0, || { let env = &*((*self_).private_data as *const EnvState); env.runtime.memory_pool.reserved() as i64 })
}

unsafe extern "C" fn pool_limit(self_: *const ql_memory_pool) -> i64 {
    guard_value(-1, || match { let env = &*((*self_).private_data as *const EnvState); env.runtime.memory_pool.memory_limit() } {
        MemoryLimit::Finite(n) => n as i64,
        _ => -1,
    })
}

// ---------------------------------------------------------- object store

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
    set_error(error, status, &e.to_string())
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
            let opts = object_store::GetOptions {
                range: Some(object_store::GetRange::Bounded(offset..offset + length)),
                ..Default::default()
            };
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
                let paths: Vec<CString> =
                    metas.iter().map(|m| CString::new(m.location.as_ref()).unwrap_or_default()).collect();
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

unsafe extern "C" fn registry_get_store(
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

// ------------------------------------------------------------ temp files

struct TempFile {
    _file: Arc<dyn datafusion::execution::spill_file::SpillFile>,
    path: CString,
}

unsafe extern "C" fn temp_file_release(t: *mut ql_temp_file) {
    guard_value((), || {
        if !(*t).private_data.is_null() {
            drop(Box::from_raw((*t).private_data as *mut TempFile));
        }
        (*t).private_data = std::ptr::null_mut();
        (*t).release = None;
    })
}

unsafe extern "C" fn temp_files_create(
    self_: *const ql_temp_files,
    purpose: *const c_char,
    out: *mut ql_temp_file,
    error: *mut ql_error,
) -> c_int {
    guard_status(error, "temp file create", || {
        let env = &*((*self_).private_data as *const EnvState);
        if !env.runtime.disk_manager.tmp_files_enabled() {
            return set_error(error, QL_ENOTSUP, "the session's disk manager is disabled");
        }
        match env.runtime.disk_manager.create_tmp_file(&cstr(purpose)) {
            Ok(file) => {
                let Some(path) = file.path().map(|p| p.to_string_lossy().into_owned()) else {
                    return set_error(error, QL_ENOTSUP, "the session's temp files are not local files");
                };
                let tf = Box::new(TempFile { _file: file, path: CString::new(path).unwrap_or_default() });
                *out = ql_temp_file {
                    path: tf.path.as_ptr(),
                    release: Some(temp_file_release),
                    private_data: Box::into_raw(tf) as *mut c_void,
                };
                QL_OK
            }
            Err(e) => set_df_error(error, &e),
        }
    })
}

// ---------------------------------------------------- runtime environment

/// The runtime environment view: DataFusion's own services behind the ABI.
/// Boxed so the self-pointers stay valid; built per scan/execute in O(1).
pub struct EnvState {
    pub runtime: Arc<RuntimeEnv>,
    pub env: ql_runtime_env,
    pool: ql_memory_pool,
    stores: ql_object_store_registry,
    temp: ql_temp_files,
}

impl EnvState {
    pub fn new(runtime: Arc<RuntimeEnv>) -> Box<EnvState> {
        let mut b = Box::new(EnvState {
            runtime,
            env: zeroed(),
            pool: ql_memory_pool {
                struct_size: std::mem::size_of::<ql_memory_pool>() as u32,
                reservation_new: Some(pool_reservation_new),
                reserved: Some(pool_reserved),
                limit: Some(pool_limit),
                private_data: std::ptr::null_mut(),
            },
            stores: ql_object_store_registry {
                struct_size: std::mem::size_of::<ql_object_store_registry>() as u32,
                get_store: Some(registry_get_store),
                private_data: std::ptr::null_mut(),
            },
            temp: ql_temp_files {
                struct_size: std::mem::size_of::<ql_temp_files>() as u32,
                create: Some(temp_files_create),
                private_data: std::ptr::null_mut(),
            },
        });
        let me = &mut *b as *mut EnvState as *mut c_void;
        b.pool.private_data = me;
        b.stores.private_data = me;
        b.temp.private_data = me;
        b.env = ql_runtime_env {
            struct_size: std::mem::size_of::<ql_runtime_env>() as u32,
            memory_pool: &b.pool,
            object_stores: &b.stores,
            temp_files: &b.temp,
            private_data: me,
        };
        b
    }
}

// -------------------------------------------------------------- executor

struct JobState {
    handle: Option<tokio::task::JoinHandle<(c_int, String)>>,
}

struct SendPtr(*mut c_void);
// SAFETY: the plugin hands `arg` to its job on purpose; the ABI says fn may run on any thread.
unsafe impl Send for SendPtr {}

unsafe extern "C" fn job_wait(job: *mut ql_job, error: *mut ql_error) -> c_int {
    guard_status(error, "job wait", || {
        let state = &mut *((*job).private_data as *mut JobState);
        let Some(handle) = state.handle.take() else {
            return set_error(error, QL_ESTATE, "job already waited for");
        };
        match block_on(handle) {
            Ok((QL_OK, _)) => QL_OK,
            Ok((status, msg)) => set_error(error, status, &msg),
            Err(e) => set_error(error, QL_EINTERNAL, &format!("spawned job failed: {e}")),
        }
    })
}

unsafe extern "C" fn job_release(job: *mut ql_job) {
    guard_value((), || {
        if !(*job).private_data.is_null() {
            // Dropping a JoinHandle detaches the job; it still runs to completion.
            drop(Box::from_raw((*job).private_data as *mut JobState));
        }
        (*job).private_data = std::ptr::null_mut();
        (*job).release = None;
    })
}

pub struct ExecutorState {
    pub raw: ql_executor,
    handle: tokio::runtime::Handle,
    plugin: Option<Arc<Plugin>>,
}

unsafe extern "C" fn executor_spawn(
    self_: *const ql_executor,
    f: Option<ql_job_fn>,
    arg: *mut c_void,
    out: *mut ql_job,
    error: *mut ql_error,
) -> c_int {
    guard_status(error, "executor spawn", || {
        let Some(f) = f else { return set_error(error, QL_EINVAL, "spawn: fn is NULL") };
        let ex = &*((*self_).private_data as *const ExecutorState);
        let plugin = ex.plugin.clone();
        let arg = SendPtr(arg);
        let handle = ex.handle.spawn_blocking(move || {
            let arg = arg;
            let _g = plugin.as_ref().map(|p| p.enter());
            let mut err = crate::error::ErrorSlot::new();
            let status = f(arg.0, err.ptr());
            (status, err.message())
        });
        *out = ql_job {
            wait: Some(job_wait),
            release: Some(job_release),
            private_data: Box::into_raw(Box::new(JobState { handle: Some(handle) })) as *mut c_void,
        };
        QL_OK
    })
}

unsafe extern "C" fn executor_parallelism(_self: *const ql_executor) -> i32 {
    guard_value(1, || std::thread::available_parallelism().map(|n| n.get() as i32).unwrap_or(1))
}

impl ExecutorState {
    /// The executor offered to plugins: runs spawned work on DataFusion's
    /// Tokio runtime (its blocking pool), bracketed by the plugin's hooks.
    pub fn new(plugin: Option<Arc<Plugin>>) -> Box<ExecutorState> {
        let handle = tokio::runtime::Handle::try_current().unwrap_or_else(|_| io_runtime().handle().clone());
        let mut b = Box::new(ExecutorState {
            raw: ql_executor {
                struct_size: std::mem::size_of::<ql_executor>() as u32,
                spawn: Some(executor_spawn),
                parallelism: Some(executor_parallelism),
                private_data: std::ptr::null_mut(),
            },
            handle,
            plugin,
        });
        b.raw.private_data = &mut *b as *mut ExecutorState as *mut c_void;
        b
    }
}

// --------------------------------------------------------------- session

/// Where a session view reads from: the planning-time `Session`, or the
/// execution-time `TaskContext` (which carries the same registries).
pub enum SessionSource<'a> {
    Session(&'a dyn Session),
    Task(Arc<TaskContext>),
}

impl SessionSource<'_> {
    fn session_id(&self) -> String {
        match self {
            SessionSource::Session(s) => s.session_id().to_string(),
            SessionSource::Task(t) => t.session_id(),
        }
    }
    fn config(&self) -> &ConfigOptions {
        match self {
            SessionSource::Session(s) => s.config_options(),
            SessionSource::Task(t) => t.session_config().options(),
        }
    }
    fn scalar(&self) -> &HashMap<String, Arc<ScalarUDF>> {
        match self {
            SessionSource::Session(s) => s.scalar_functions(),
            SessionSource::Task(t) => t.scalar_functions(),
        }
    }
    fn aggregate(&self) -> &HashMap<String, Arc<AggregateUDF>> {
        match self {
            SessionSource::Session(s) => s.aggregate_functions(),
            SessionSource::Task(t) => t.aggregate_functions(),
        }
    }
    fn window(&self) -> &HashMap<String, Arc<WindowUDF>> {
        match self {
            SessionSource::Session(s) => s.window_functions(),
            SessionSource::Task(t) => t.window_functions(),
        }
    }
    pub fn runtime_env(&self) -> Arc<RuntimeEnv> {
        match self {
            SessionSource::Session(s) => Arc::clone(s.runtime_env()),
            SessionSource::Task(t) => t.runtime_env(),
        }
    }
}

/// Counts calls that enumerate a session's functions or options, so tests
/// can prove that scan and execute never do (gap G6).
pub static ENUMERATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A lazy session view (gap G6). Boxed; `raw` is what plugins see.
pub struct SessionView<'a> {
    pub raw: ql_session,
    source: SessionSource<'a>,
    env: Box<EnvState>,
    id: OnceLock<CString>,
    generation: OnceLock<u64>,
    /// Tables handed out by table_lookup, kept alive as long as the view.
    tables: Mutex<Vec<Box<TableRefHolder>>>,
}

struct TableRefHolder {
    name: CString,
    schema: Box<ArrowSchema>,
    provider: Arc<dyn TableProvider>,
}

impl<'a> SessionView<'a> {
    pub fn new(source: SessionSource<'a>) -> Box<SessionView<'a>> {
        let env = EnvState::new(source.runtime_env());
        let mut b = Box::new(SessionView {
            raw: ql_session {
                struct_size: std::mem::size_of::<ql_session>() as u32,
                id: Some(session_id),
                generation: Some(session_generation),
                config_get: Some(session_config_get),
                function_lookup: Some(session_function_lookup),
                table_lookup: Some(session_table_lookup),
                runtime_env: Some(session_runtime_env),
                private_data: std::ptr::null_mut(),
            },
            source,
            env,
            id: OnceLock::new(),
            generation: OnceLock::new(),
            tables: Mutex::new(Vec::new()),
        });
        b.raw.private_data = &mut *b as *mut SessionView as *mut c_void;
        b
    }

    pub fn env(&self) -> &ql_runtime_env {
        &self.env.env
    }
}

unsafe fn view<'a>(s: *const ql_session) -> &'a SessionView<'a> {
    &*((*s).private_data as *const SessionView)
}

unsafe extern "C" fn session_id(s: *const ql_session) -> *const c_char {
    guard_value(c"".as_ptr(), || {
        let v = view(s);
        v.id.get_or_init(|| CString::new(v.source.session_id()).unwrap_or_default()).as_ptr()
    })
}

/// A fingerprint of the session's functions and options. Computed on the
/// first request within a view (it walks the registries, so it is only paid
/// by plugins that ask); equal fingerprints mean nothing changed.
unsafe extern "C" fn session_generation(s: *const ql_session) -> u64 {
    guard_value(0, || {
        let v = view(s);
        *v.generation.get_or_init(|| {
            use std::hash::{Hash, Hasher};
            ENUMERATIONS.fetch_add(1, Ordering::Relaxed);
            let mut acc: u64 = 0;
            let mix = |name: &str, ptr: usize| {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                name.hash(&mut h);
                ptr.hash(&mut h);
                h.finish()
            };
            // Order-independent sum over (name, identity of the implementation).
            for (n, f) in v.source.scalar() {
                acc = acc.wrapping_add(mix(n, Arc::as_ptr(f.inner()) as *const () as usize));
            }
            for (n, f) in v.source.aggregate() {
                acc = acc.wrapping_add(mix(n, Arc::as_ptr(f.inner()) as *const () as usize));
            }
            for (n, f) in v.source.window() {
                acc = acc.wrapping_add(mix(n, Arc::as_ptr(f.inner()) as *const () as usize));
            }
            let mut h = std::collections::hash_map::DefaultHasher::new();
            for e in v.source.config().entries() {
                e.key.hash(&mut h);
                e.value.hash(&mut h);
            }
            acc.wrapping_add(h.finish())
        })
    })
}

struct FindKey<'k> {
    key: &'k str,
    found: Option<Option<String>>,
}

impl Visit for FindKey<'_> {
    fn some<V: std::fmt::Display>(&mut self, key: &str, value: V, _d: &'static str) {
        if key == self.key {
            self.found = Some(Some(value.to_string()));
        }
    }
    fn none(&mut self, key: &str, _d: &'static str) {
        if key == self.key {
            self.found = Some(None);
        }
    }
}

/// The value of one config option by key.
pub fn config_value(opts: &ConfigOptions, key: &str) -> Option<String> {
    // The engine-neutral keys every host fills (docs/abi.md R8), then the
    // DataFusion names of the same settings, without a walk.
    match key {
        "qlink.execution.batch_size" | "datafusion.execution.batch_size" => {
            return Some(opts.execution.batch_size.to_string())
        }
        "qlink.execution.target_partitions" | "datafusion.execution.target_partitions" => {
            return Some(opts.execution.target_partitions.to_string())
        }
        _ => {}
    }
    let mut v = FindKey { key, found: None };
    if key.starts_with("datafusion.") {
        opts.visit(&mut v, "datafusion", "");
    }
    v.found.map(|o| o.unwrap_or_default())
}

unsafe extern "C" fn session_config_get(
    s: *const ql_session,
    key: *const c_char,
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
    error: *mut ql_error,
) -> c_int {
    guard_status(error, "session config_get", || {
        let v = view(s);
        let k = cstr(key);
        let Some(value) = config_value(v.source.config(), &k) else {
            return set_error(error, QL_ENOTFOUND, &format!("unknown config option '{k}'"));
        };
        if !len.is_null() {
            *len = value.len();
        }
        if !buf.is_null() && cap > 0 {
            let n = value.len().min(cap - 1);
            std::ptr::copy_nonoverlapping(value.as_ptr() as *const c_char, buf, n);
            *buf.add(n) = 0;
        }
        QL_OK
    })
}

unsafe extern "C" fn session_function_lookup(
    s: *const ql_session,
    name: *const c_char,
    kind: i32,
    out: *mut ql_function_info,
    error: *mut ql_error,
) -> c_int {
    guard_status(error, "session function_lookup", || {
        let v = view(s);
        let n = cstr(name);
        let found = match kind {
            QL_FUNCTION_SCALAR => v.source.scalar().get(&n).or_else(|| v.source.scalar().get(&n.to_lowercase())).map(|f| {
                (identity::scalar_identity(f), crate::functions::volatility_of(f.signature().volatility))
            }),
            QL_FUNCTION_AGGREGATE => v.source.aggregate().get(&n).or_else(|| v.source.aggregate().get(&n.to_lowercase())).map(|f| {
                (identity::aggregate_identity(f), crate::functions::volatility_of(f.signature().volatility))
            }),
            QL_FUNCTION_WINDOW => v.source.window().get(&n).or_else(|| v.source.window().get(&n.to_lowercase())).map(|f| {
                (identity::window_identity(f), crate::functions::volatility_of(f.signature().volatility))
            }),
            _ => None,
        };
        match found {
            Some((id, vol)) => {
                *out = ql_function_info { id: id.raw(), volatility: vol, reserved_: 0 };
                QL_OK
            }
            None => set_error(error, QL_ENOTFOUND, &format!("no function '{n}' of kind {kind} in the session")),
        }
    })
}

unsafe extern "C" fn session_table_lookup(
    s: *const ql_session,
    name: *const c_char,
    out: *mut ql_table_ref,
    error: *mut ql_error,
) -> c_int {
    guard_status(error, "session table_lookup", || {
        let v = view(s);
        let SessionSource::Session(sess) = &v.source else {
            return set_error(error, QL_ENOTSUP, "table_lookup is not available during execution");
        };
        let n = cstr(name);
        let reference = datafusion::common::TableReference::from(n.as_str());
        let opts = &sess.config_options().catalog;
        let resolved = reference.resolve(&opts.default_catalog, &opts.default_schema);
        let provider = sess
            .catalog_list()
            .catalog(&resolved.catalog)
            .and_then(|c| c.schema(&resolved.schema))
            .map(|schema| {
                let t = resolved.table.to_string();
                block_on(async move { schema.table(&t).await })
            });
        let provider = match provider {
            Some(Ok(Some(p))) => p,
            Some(Err(e)) => return set_df_error(error, &e),
            _ => return set_error(error, QL_ENOTFOUND, &format!("no table '{n}' in the session")),
        };
        let schema = match ArrowSchema::try_from(provider.schema().as_ref()) {
            Ok(s) => Box::new(s),
            Err(e) => return set_error(error, QL_EINTERNAL, &e.to_string()),
        };
        let holder = Box::new(TableRefHolder { name: CString::new(n).unwrap_or_default(), schema, provider });
        *out = ql_table_ref {
            name: holder.name.as_ptr(),
            schema: &*holder.schema,
            host_handle: crate::planner::table_handle(&holder.provider),
            provider: crate::table::qlink_provider_of(&holder.provider),
        };
        v.tables.lock().unwrap().push(holder);
        QL_OK
    })
}

unsafe extern "C" fn session_runtime_env(s: *const ql_session) -> *const ql_runtime_env {
    guard_value(std::ptr::null(), || view(s).env())
}

// ---------------------------------------------------------- task context

/// One partition's task context (gap G8): a struct of pointers into a box
/// the stream keeps alive. Building it copies no function or option.
pub struct TaskView {
    pub raw: ql_task_context,
    pub task: Arc<TaskContext>,
    _session: Box<SessionView<'static>>,
    _executor: Box<ExecutorState>,
    pub cancelled: Arc<AtomicBool>,
}

// SAFETY: every member is thread-safe per services.h; the raw pointers point into the box itself.
unsafe impl Send for TaskView {}
unsafe impl Sync for TaskView {}
unsafe impl Send for SessionView<'_> {}
unsafe impl Sync for SessionView<'_> {}
unsafe impl Send for EnvState {}
unsafe impl Sync for EnvState {}
unsafe impl Send for ExecutorState {}
unsafe impl Sync for ExecutorState {}

unsafe extern "C" fn task_is_cancelled(t: *const ql_task_context) -> c_int {
    guard_value(0, || (*((*t).private_data as *const TaskView)).cancelled.load(Ordering::Relaxed) as c_int)
}

impl TaskView {
    pub fn new(task: Arc<TaskContext>, partition: usize, plugin: Option<Arc<Plugin>>) -> Box<TaskView> {
        let batch_size = task.session_config().batch_size() as i64;
        let session = SessionView::new(SessionSource::Task(Arc::clone(&task)));
        let executor = ExecutorState::new(plugin);
        let mut b = Box::new(TaskView {
            raw: ql_task_context {
                struct_size: std::mem::size_of::<ql_task_context>() as u32,
                reserved_: 0,
                partition: partition as i64,
                batch_size,
                session: &session.raw,
                runtime_env: session.env(),
                executor: &executor.raw,
                is_cancelled: Some(task_is_cancelled),
                private_data: std::ptr::null_mut(),
            },
            task,
            _session: session,
            _executor: executor,
            cancelled: Arc::new(AtomicBool::new(false)),
        });
        b.raw.private_data = &mut *b as *mut TaskView as *mut c_void;
        crate::error::mark_ours(b.raw.private_data);
        b
    }
}

impl Drop for TaskView {
    fn drop(&mut self) {
        crate::error::unmark_ours(self.raw.private_data);
    }
}

/// The DataFusion TaskContext behind a task context this adapter made
/// (recognised by its callback), or None for anyone else's.
pub fn task_context_of(ctx: *const ql_task_context) -> Option<Arc<TaskContext>> {
    if ctx.is_null() {
        return None;
    }
    // SAFETY: reading members of a task context the caller passed us.
    unsafe {
        if crate::error::ours((*ctx).private_data) {
            return Some(Arc::clone(&(*((*ctx).private_data as *const TaskView)).task));
        }
    }
    None
}

/// A C string of a plugin, for messages.
pub fn c_text(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: NUL-terminated per the ABI.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}
