// SPDX-License-Identifier: Apache-2.0
//! `ql_session` (gap G6): a lazy view of the session; functions and options
//! are looked up by name only when a plugin asks.

use std::collections::HashMap;
use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};

use datafusion::catalog::{Session, TableProvider};
use datafusion::common::config::{ConfigField, ConfigOptions, Visit};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{AggregateUDF, ScalarUDF, WindowUDF};

#[allow(unused_imports)]
use super::*;
use crate::blocking::block_on;
use crate::error::{cstr, guard_status, guard_value, set_df_error, set_error};
use crate::ffi::*;
use crate::identity;

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

/// A lazy session view (gap G6). Boxed; `raw` is what plugins see.
pub struct SessionView<'a> {
    pub raw: ql_session,
    source: SessionSource<'a>,
    env: Box<EnvState>,
    id: OnceLock<CString>,
    generation: OnceLock<u64>,
    /// Tables handed out by table_lookup, kept alive as long as the view
    /// (boxed: the plugin holds pointers to them as the list grows).
    #[allow(clippy::vec_box)]
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
            crate::metrics::ENUMERATIONS.fetch_add(1, Ordering::Relaxed);
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
        "qlink.execution.batch_size" | "datafusion.execution.batch_size" => return Some(opts.execution.batch_size.to_string()),
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
            QL_FUNCTION_SCALAR => v
                .source
                .scalar()
                .get(&n)
                .or_else(|| v.source.scalar().get(&n.to_lowercase()))
                .map(|f| (identity::scalar_identity(f), crate::functions::volatility_of(f.signature().volatility))),
            QL_FUNCTION_AGGREGATE => v
                .source
                .aggregate()
                .get(&n)
                .or_else(|| v.source.aggregate().get(&n.to_lowercase()))
                .map(|f| (identity::aggregate_identity(f), crate::functions::volatility_of(f.signature().volatility))),
            QL_FUNCTION_WINDOW => v
                .source
                .window()
                .get(&n)
                .or_else(|| v.source.window().get(&n.to_lowercase()))
                .map(|f| (identity::window_identity(f), crate::functions::volatility_of(f.signature().volatility))),
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
        let provider = sess.catalog_list().catalog(&resolved.catalog).and_then(|c| c.schema(&resolved.schema)).map(|schema| {
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
