// SPDX-License-Identifier: Apache-2.0
//! A loaded plugin: libqlink's loader does the loading and version
//! negotiation (`ql_plugin_load`); this module keeps the library alive for as
//! long as any object opened from it, and brackets every call into the plugin
//! with its executor enter/leave hooks (gap G4).

use std::ffi::CString;
use std::os::raw::c_void;
use std::path::Path;
use std::sync::Arc;

use datafusion::error::DataFusionError;

use crate::error::{cstr, error_message, ErrorSlot, Result};
use crate::ffi::*;

pub struct Plugin {
    raw: *mut ql_loaded_plugin,
    name: String,
    path: String,
    digest: std::sync::OnceLock<u64>,
}

// SAFETY: the descriptor's members are thread-safe per the ABI (plugin.h).
unsafe impl Send for Plugin {}
unsafe impl Sync for Plugin {}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Plugin({} from {})", self.name, self.path)
    }
}

/// Why [`Plugin::load_if_digest`] loaded nothing.
#[derive(Debug)]
pub enum LoadRefused {
    /// The file's digest, which is not the one asked for.
    Digest(u64),
    /// The file could not be read or loaded.
    Error(DataFusionError),
}

/// The 64-bit FNV-1a digest of `bytes`.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3))
}

/// Calls the plugin's executor_leave when dropped (same thread as enter).
pub struct EnterGuard<'a> {
    plugin: &'a ql_plugin,
    token: *mut c_void,
}

impl Drop for EnterGuard<'_> {
    fn drop(&mut self) {
        if let Some(leave) = self.plugin.executor_leave {
            // SAFETY: enter/leave are paired on one thread as plugin.h requires.
            unsafe { leave(self.plugin, self.token) };
        }
    }
}

/// One entry of a plugin's catalogue.
#[derive(Debug, Clone)]
pub struct Item {
    pub kind: i32,
    pub name: String,
    pub description: String,
}

impl Plugin {
    /// Load the plugin at `path` (ql_plugin_load: dlopen, version
    /// negotiation, descriptor checks).
    pub fn load(path: &str) -> Result<Arc<Plugin>> {
        let cpath = CString::new(path).map_err(|_| DataFusionError::Plan(format!("bad plugin path {path:?}")))?;
        let mut raw: *mut ql_loaded_plugin = std::ptr::null_mut();
        let mut err = ErrorSlot::new();
        // SAFETY: valid C string and out pointers.
        let status = unsafe { ql_plugin_load(cpath.as_ptr(), &mut raw, err.ptr()) };
        err.check_with(status, || format!("loading plugin {path}"))?;
        // SAFETY: on QL_OK `raw` is a loaded plugin with a checked descriptor.
        let name = cstr(unsafe { (*raw).plugin.name });
        Ok(Arc::new(Plugin { raw, name, path: path.to_string(), digest: std::sync::OnceLock::new() }))
    }

    /// Load the plugin file at `path` only when its contents have the
    /// 64-bit FNV-1a digest `digest` (file_digest's): the file is opened
    /// once, hashed from that descriptor, and the same descriptor is loaded
    /// (`/proc/self/fd/N`), so nothing of a file with another digest runs,
    /// and a file swapped after the check is not the one loaded.
    pub fn load_if_digest(path: &Path, digest: u64) -> std::result::Result<Arc<Plugin>, LoadRefused> {
        use std::io::Read;
        use std::os::unix::io::AsRawFd;
        let shown = path.display();
        let mut file = std::fs::File::open(path)
            .map_err(|e| LoadRefused::Error(DataFusionError::Plan(format!("opening plugin file {shown}: {e}"))))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(|e| LoadRefused::Error(DataFusionError::Plan(format!("reading plugin file {shown}: {e}"))))?;
        let mine = fnv1a64(&bytes);
        if mine != digest {
            return Err(LoadRefused::Digest(mine));
        }
        let by_fd = format!("/proc/self/fd/{}", file.as_raw_fd());
        let loaded = Plugin::load(&by_fd)
            .map_err(|e| LoadRefused::Error(DataFusionError::Plan(error_message(&e).replace(&by_fd, &shown.to_string()))))?;
        // The descriptor stays open for the life of the process: the dynamic
        // loader knows the library by the name `/proc/self/fd/N` and answers
        // a later dlopen of that same name with it, even when N has since
        // become another file (a library may stay loaded after dlclose, e.g.
        // one linked with -z nodelete). One descriptor per plugin file a
        // process loads this way (a worker caches its loads by file).
        std::mem::forget(file);
        let mut plugin =
            Arc::try_unwrap(loaded).map_err(|_| LoadRefused::Error(DataFusionError::Internal("a plugin just loaded is shared".into())))?;
        plugin.path = path.to_string_lossy().into_owned();
        plugin.digest = std::sync::OnceLock::from(mine);
        Ok(Arc::new(plugin))
    }

    pub fn descriptor(&self) -> &ql_plugin {
        // SAFETY: raw lives until drop.
        unsafe { &(*self.raw).plugin }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// The plugin's own version (its descriptor's `version`, e.g. "0.1.0").
    pub fn version(&self) -> String {
        cstr(self.descriptor().version)
    }

    /// A 64-bit FNV-1a digest of the plugin's file, read on the first call
    /// and kept: two processes holding files with equal digests hold the
    /// same build (a change detector, not a signature). Errors: the file
    /// cannot be read.
    pub fn file_digest(&self) -> Result<u64> {
        if let Some(d) = self.digest.get() {
            return Ok(*d);
        }
        let bytes = std::fs::read(&self.path).map_err(|e| DataFusionError::Execution(format!("reading plugin file {}: {e}", self.path)))?;
        Ok(*self.digest.get_or_init(|| fnv1a64(&bytes)))
    }

    /// Bracket a call into the plugin (gap G4).
    pub fn enter(&self) -> EnterGuard<'_> {
        let p = self.descriptor();
        let token = match p.executor_enter {
            // SAFETY: the hook of a checked descriptor.
            Some(enter) => unsafe { enter(p) },
            None => std::ptr::null_mut(),
        };
        EnterGuard { plugin: p, token }
    }

    pub fn items(&self) -> Vec<Item> {
        let p = self.descriptor();
        (0..p.n_items.max(0) as usize)
            .map(|i| {
                // SAFETY: items has n_items entries.
                let it = unsafe { &*p.items.add(i) };
                Item { kind: it.kind, name: cstr(it.name), description: cstr(it.description) }
            })
            .collect()
    }

    pub fn has_item(&self, kind: i32, name: &str) -> bool {
        self.items().iter().any(|i| i.kind == kind && i.name == name)
    }
}

impl Drop for Plugin {
    fn drop(&mut self) {
        // SAFETY: every object opened from the plugin holds an Arc<Plugin>,
        // and so does every array it produced (`keep_loaded`), so they are
        // all released by now.
        unsafe { ql_plugin_unload(self.raw) };
    }
}

/// The Arrow C Data Interface's ArrowArray with public members (arrow-rs
/// keeps FFI_ArrowArray's private); same layout.
#[repr(C)]
struct RawArray {
    length: i64,
    null_count: i64,
    offset: i64,
    n_buffers: i64,
    n_children: i64,
    buffers: *mut *const c_void,
    children: *mut *mut RawArray,
    dictionary: *mut RawArray,
    release: Option<unsafe extern "C" fn(*mut RawArray)>,
    private_data: *mut c_void,
}

/// What `keep_loaded` puts between an array and its producer's release.
struct KeptArray {
    release: Option<unsafe extern "C" fn(*mut RawArray)>,
    private_data: *mut c_void,
    plugin: Arc<Plugin>,
}

unsafe extern "C" fn kept_release(a: *mut RawArray) {
    crate::error::guard_value((), || {
        let kept = Box::from_raw((*a).private_data as *mut KeptArray);
        (*a).private_data = kept.private_data;
        (*a).release = kept.release;
        if let Some(r) = kept.release {
            let _g = kept.plugin.enter();
            r(a);
        }
        (*a).release = None;
        // `kept` (and with it possibly the last reference to the plugin,
        // which unloads it) goes only after the plugin's release returned.
        drop(kept);
    })
}

/// Make `array` (filled by `plugin`, not yet imported) keep the plugin
/// loaded until Arrow releases it: its release callback is plugin code, and
/// batches routinely outlive every plan, table and session that made them.
/// The plugin's release then runs inside its enter/leave hooks. A released
/// (end-of-stream) array is left alone. Moving the struct stays allowed.
pub fn keep_loaded(array: &mut ArrowArray, plugin: &Arc<Plugin>) {
    // SAFETY: FFI_ArrowArray is #[repr(C)] with the C interface's layout.
    let raw = unsafe { &mut *(array as *mut ArrowArray as *mut RawArray) };
    if raw.release.is_none() {
        return;
    }
    let kept = Box::new(KeptArray { release: raw.release, private_data: raw.private_data, plugin: Arc::clone(plugin) });
    raw.private_data = Box::into_raw(kept) as *mut c_void;
    raw.release = Some(kept_release);
}

/// Key/value options as the ABI passes them; owns the C strings.
pub struct Options {
    _keys: Vec<CString>,
    _values: Vec<CString>,
    key_ptrs: Vec<*const std::os::raw::c_char>,
    value_ptrs: Vec<*const std::os::raw::c_char>,
}

impl Options {
    pub fn new(pairs: &[(String, String)]) -> Result<Options> {
        let bad = |s: &str| DataFusionError::Plan(format!("option {s:?} contains a NUL byte"));
        let keys: Vec<CString> = pairs.iter().map(|(k, _)| CString::new(k.as_str()).map_err(|_| bad(k))).collect::<Result<_>>()?;
        let values: Vec<CString> = pairs.iter().map(|(_, v)| CString::new(v.as_str()).map_err(|_| bad(v))).collect::<Result<_>>()?;
        let key_ptrs = keys.iter().map(|k| k.as_ptr()).collect();
        let value_ptrs = values.iter().map(|v| v.as_ptr()).collect();
        Ok(Options { _keys: keys, _values: values, key_ptrs, value_ptrs })
    }
    pub fn raw(&self) -> ql_options {
        ql_options { count: self.key_ptrs.len() as i64, keys: self.key_ptrs.as_ptr(), values: self.value_ptrs.as_ptr() }
    }
}

/// A parsed "PLUGIN/PROVIDER?key=value&..." spec (libqlink's parser).
#[derive(Debug, Clone)]
pub struct TableSpec {
    pub plugin: String,
    pub provider: String,
    pub options: Vec<(String, String)>,
}

impl TableSpec {
    pub fn parse(spec: &str) -> Result<TableSpec> {
        let c = CString::new(spec).map_err(|_| DataFusionError::Plan(format!("bad table spec {spec:?}")))?;
        let mut out: ql_table_spec = zeroed();
        let mut err = ErrorSlot::new();
        // SAFETY: valid input and out pointers; freed below.
        let status = unsafe { ql_table_spec_parse(c.as_ptr(), &mut out, err.ptr()) };
        err.check_with(status, || format!("parsing table spec {spec:?}"))?;
        let mut options = Vec::new();
        for i in 0..out.options.count.max(0) as usize {
            // SAFETY: count entries in keys and values.
            unsafe { options.push((cstr(*out.options.keys.add(i)), cstr(*out.options.values.add(i)))) };
        }
        let parsed = TableSpec { plugin: cstr(out.plugin), provider: cstr(out.provider), options };
        // SAFETY: filled by ql_table_spec_parse.
        unsafe { ql_table_spec_free(&mut out) };
        Ok(parsed)
    }
}
