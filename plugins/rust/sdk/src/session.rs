// SPDX-License-Identifier: Apache-2.0
//! The DataFusion session a plugin's objects plan and run in, one per host
//! session (`ql_session`): built on first use and reused for every scan of
//! that session while the two settings it takes (batch size, target
//! partitions) stay the same, never per scan. It is not keyed on the host
//! session's generation: nothing else of the host session goes into it, and
//! a host may compute a generation by walking every function and option.
//!
//! It takes the host session's batch size and target partitions
//! (QL_CONFIG_BATCH_SIZE, QL_CONFIG_TARGET_PARTITIONS), reads Parquet
//! strings as Utf8 rather than Utf8View (any host reads Utf8; a host older
//! than view support would refuse Utf8View), keeps each
//! partition to its own files (no work stealing between file streams: hosts
//! may run partitions in different processes), registers the
//! plugin's own functions (so pushed-down filters naming them convert), and
//! reaches files only through the host's object stores
//! ([`crate::services::object_store`]). Each partition's execution gets a
//! `TaskContext` whose memory pool is the host's ([`task_context`]).

use std::collections::VecDeque;
use std::ffi::CString;
use std::sync::{Arc, Mutex};

use datafusion::execution::context::SessionState;
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::execution::FunctionRegistry;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::SessionConfig;
use qlink_sys::*;

use crate::error::{Error, Result};
use crate::services::memory_pool::HostPool;
use crate::services::object_store::HostStores;

/// What every object one plugin exports shares: the plugin's name (its
/// functions' library in `ql_function_id`) and its DataFusion sessions, in
/// each of which the plugin's scalar functions are registered. Lives for
/// the process (inside the plugin's registration). Thread-safe.
pub struct Library {
    pub name: CString,
    functions: Vec<Arc<ScalarUDF>>,
    sessions: Sessions,
}

impl Library {
    pub fn new(name: CString, functions: Vec<Arc<ScalarUDF>>) -> Library {
        Library { name, functions, sessions: Sessions::default() }
    }

    /// The plugin's session for `host` (null: the default session).
    pub fn session(&self, host: *const ql_session) -> Result<Arc<PluginSession>> {
        self.sessions.get(host, &self.functions)
    }

    /// The plugin's name as text, for messages and labels.
    pub fn label(&self) -> std::borrow::Cow<'_, str> {
        self.name.to_string_lossy()
    }
}

/// A host session as DataFusion sees it inside the plugin. Thread-safe.
pub struct PluginSession {
    pub state: SessionState,
    pub stores: Arc<HostStores>,
}

/// At most this many host sessions' DataFusion sessions are kept per
/// plugin; the oldest is dropped first (a later call rebuilds it).
const KEPT: usize = 32;

/// The host settings a plugin session is built with: batch size and target
/// partitions, when the host gives them.
type Settings = (Option<usize>, Option<usize>);

/// The sessions of one plugin, by host session id and settings.
#[derive(Default)]
pub struct Sessions {
    kept: Mutex<VecDeque<(String, Settings, Arc<PluginSession>)>>,
    default: std::sync::OnceLock<Arc<PluginSession>>,
}

fn config_get(host: &ql_session, key: &str) -> Option<String> {
    let get = host.config_get?;
    let k = CString::new(key).ok()?;
    let mut buf = [0u8; 64];
    let mut len = 0usize;
    // SAFETY: a session borrowed for this call; buf holds cap bytes.
    let rc = unsafe { get(host, k.as_ptr(), buf.as_mut_ptr() as *mut _, buf.len(), &mut len, std::ptr::null_mut()) };
    if rc != QL_OK || len >= buf.len() {
        return None;
    }
    std::str::from_utf8(&buf[..len]).ok().map(str::to_string)
}

/// A positive integer setting of the host session.
fn config_count(host: &ql_session, key: &str) -> Option<usize> {
    config_get(host, key).and_then(|v| v.parse::<usize>().ok()).filter(|n| *n > 0)
}

fn settings(host: &ql_session) -> Settings {
    (config_count(host, "qlink.execution.batch_size"), config_count(host, "qlink.execution.target_partitions"))
}

fn build(settings: Settings, functions: &[Arc<ScalarUDF>]) -> Result<PluginSession> {
    let mut config = SessionConfig::new();
    // Strings and binaries cross as Utf8 and Binary, which every host reads
    // (hosts before view support refuse view types): DataFusion 55's
    // Parquet reader would produce Utf8View.
    config.options_mut().execution.parquet.schema_force_view_types = false;
    // A partition is a unit of its own: a host may run partitions of one
    // plan in different processes (datafusion-distributed's tasks), so file
    // streams must not steal files from their siblings' groups.
    config.options_mut().execution.enable_file_stream_work_stealing = false;
    if let Some(n) = settings.0 {
        config = config.with_batch_size(n);
    }
    if let Some(n) = settings.1 {
        config = config.with_target_partitions(n);
    }
    let stores = Arc::new(HostStores::default());
    let runtime = RuntimeEnvBuilder::new().with_object_store_registry(stores.clone()).build_arc()?;
    let mut state = SessionStateBuilder::new().with_config(config).with_runtime_env(runtime).with_default_features().build();
    for f in functions {
        state.register_udf(f.clone())?;
    }
    Ok(PluginSession { state, stores })
}

impl Sessions {
    /// The DataFusion session for `host` (NULL: one session of defaults,
    /// kept, for calls that get no host session).
    pub fn get(&self, host: *const ql_session, functions: &[Arc<ScalarUDF>]) -> Result<Arc<PluginSession>> {
        if host.is_null() {
            if let Some(s) = self.default.get() {
                return Ok(s.clone());
            }
            let s = Arc::new(build((None, None), functions)?);
            return Ok(self.default.get_or_init(|| s).clone());
        }
        // SAFETY: borrowed for the call that received it.
        let h = unsafe { &*host };
        let id = h.id.map(|f| qlink_convert::cstr(unsafe { f(h) })).unwrap_or_default();
        let settings = settings(h);
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, _, s)) = kept.iter().find(|(i, g, _)| *i == id && *g == settings) {
            return Ok(s.clone());
        }
        let s = Arc::new(build(settings, functions)?);
        kept.retain(|(i, _, _)| *i != id);
        if kept.len() >= KEPT {
            kept.pop_front();
        }
        kept.push_back((id, settings, s.clone()));
        Ok(s)
    }
}

/// The host's object-store registry of a session (NULL if it has none).
pub fn host_stores(host: *const ql_session) -> *const ql_object_store_registry {
    if host.is_null() {
        return std::ptr::null();
    }
    // SAFETY: borrowed for the call.
    unsafe {
        match (*host).runtime_env {
            Some(rt) => {
                let env = rt(host);
                if env.is_null() {
                    std::ptr::null()
                } else {
                    (*env).object_stores
                }
            }
            None => std::ptr::null(),
        }
    }
}

/// A TaskContext for one partition: the plugin session's config and
/// functions, the host task's batch size, and a memory pool over the
/// host's (released when the returned pool is closed).
pub fn task_context(session: &PluginSession, ctx: *const ql_task_context, name: &str) -> Result<(Arc<TaskContext>, Arc<HostPool>)> {
    let (pool_ptr, batch) = if ctx.is_null() {
        (std::ptr::null(), 0)
    } else {
        // SAFETY: valid until the stream made with it is released.
        let c = unsafe { &*ctx };
        let pool = if c.runtime_env.is_null() { std::ptr::null() } else { unsafe { (*c.runtime_env).memory_pool } };
        (pool, c.batch_size)
    };
    let pool = Arc::new(HostPool::new(pool_ptr, name));
    // The session's runtime with the host's pool in place of its own: the
    // same disk manager, caches and object stores (no per-partition rebuild).
    let base = session.state.runtime_env();
    let runtime = Arc::new(RuntimeEnv {
        memory_pool: pool.clone(),
        disk_manager: base.disk_manager.clone(),
        cache_manager: base.cache_manager.clone(),
        object_store_registry: base.object_store_registry.clone(),
    });
    let mut config = session.state.config().clone();
    if batch > 0 {
        config = config.with_batch_size(batch as usize);
    }
    // The host's task, for the host plans a planner's answer runs over.
    config = config.with_extension(Arc::new(crate::host_exec::HostTask(ctx)));
    // A physical plan holds its functions itself: the task's registries stay
    // empty rather than copying the session's hundreds of entries per call.
    let task = TaskContext::new(
        None,
        session.state.session_id().to_string(),
        config,
        Default::default(),
        Default::default(),
        Default::default(),
        Default::default(),
        runtime,
    );
    Ok((Arc::new(task), pool))
}

impl From<std::ffi::NulError> for Error {
    fn from(_: std::ffi::NulError) -> Self {
        Error::invalid("a string holds a NUL byte")
    }
}
