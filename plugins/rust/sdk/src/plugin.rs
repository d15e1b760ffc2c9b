// SPDX-License-Identifier: Apache-2.0
//! What a plugin offers ([`Plugin`], built once by the author's function),
//! and the descriptor (`struct ql_plugin`, qlink/plugin.h) the export macro
//! fills from it.
//!
//! The catalogue and every string the descriptor points at live in a
//! process-lifetime [`Registered`], so descriptors filled by repeated
//! `qlink_plugin_init` calls are independent and cost nothing to release.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};
use std::sync::{Arc, OnceLock};

use datafusion::catalog::{SchemaProvider, TableFunctionImpl, TableProvider};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::{AggregateUDF, ScalarUDF, WindowUDF};
use datafusion::prelude::SessionContext;
use qlink_sys::*;

use crate::error::{fill, guard, Error, Result};
use crate::planner::Planner;
use crate::services::object_store::with_registry;
use crate::session::{host_stores, Library};

/// Options a table was opened with (`path=...`), validated against what the
/// table declared: every key is a declared option, every required one is
/// present.
#[derive(Debug, Default, Clone)]
pub struct Options(HashMap<String, String>);

impl Options {
    /// The value of `key`, if given.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }
    /// The value of `key`; QL_EINVAL naming it when absent.
    pub fn require(&self, key: &str) -> Result<&str> {
        self.get(key).ok_or_else(|| Error::invalid(format!("option '{key}' is required")))
    }
}

/// One option a table accepts (for validation, help and `qlink-check`).
#[derive(Debug, Clone)]
pub struct OptionSpec {
    name: String,
    description: String,
    default: Option<String>,
    required: bool,
}

/// An option named `name`, optional, without a default.
pub fn option(name: &str, description: &str) -> OptionSpec {
    OptionSpec { name: name.into(), description: description.into(), default: None, required: false }
}

impl OptionSpec {
    /// The table cannot be opened without it.
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }
    /// Shown as its default in help; the factory applies it.
    pub fn default_value(mut self, v: &str) -> Self {
        self.default = Some(v.into());
        self
    }
}

/// Makes a table from its options, in the plugin's DataFusion session for
/// the host session that opens it. Called on a host thread with the
/// plugin's runtime entered: use [`crate::block_on`] for async work.
pub type TableFactory = Factory<dyn TableProvider>;

/// Makes a provider of kind `P` (a table or a schema) from its options.
pub type Factory<P> = dyn Fn(&Options, &SessionState) -> Result<Arc<P>> + Send + Sync;

/// Makes a schema (a set of tables found at once) from its options, as a
/// [`TableFactory`] makes a table: called when a host attaches it, in the
/// plugin's DataFusion session for that host session, with the host's
/// object stores.
pub type SchemaFactory = Factory<dyn SchemaProvider>;

/// Makes a planner from its options, when a host installs it.
pub type PlannerFactory = dyn Fn(&Options) -> Result<Arc<dyn Planner>> + Send + Sync;

/// A table or schema the plugin offers: its catalogue entry and factory.
struct Item<F: ?Sized> {
    name: String,
    description: String,
    options: Vec<OptionSpec>,
    factory: Box<F>,
}

/// What a plugin offers, built once by the function given to
/// [`export_plugin!`](crate::export_plugin).
pub struct Plugin {
    name: String,
    version: String,
    description: String,
    tables: Vec<Item<TableFactory>>,
    schemas: Vec<Item<SchemaFactory>>,
    planners: Vec<Item<PlannerFactory>>,
    scalars: Vec<Arc<ScalarUDF>>,
    aggregates: Vec<Arc<AggregateUDF>>,
    windows: Vec<Arc<WindowUDF>>,
    table_functions: Vec<(String, String, Arc<dyn TableFunctionImpl>)>,
    error: Option<Error>,
}

impl Plugin {
    /// A plugin named `name` (its library name in function identities,
    /// e.g. "qlink_json"), at its own `version`.
    pub fn new(name: &str, version: &str) -> Self {
        Plugin {
            name: name.into(),
            version: version.into(),
            description: String::new(),
            tables: Vec::new(),
            schemas: Vec::new(),
            planners: Vec::new(),
            scalars: Vec::new(),
            aggregates: Vec::new(),
            table_functions: Vec::new(),
            windows: Vec::new(),
            error: None,
        }
    }

    /// One line describing the plugin.
    pub fn description(mut self, d: &str) -> Self {
        self.description = d.into();
        self
    }

    /// A table that takes no options: the same provider for every open.
    pub fn table(self, name: &str, description: &str, provider: Arc<dyn TableProvider>) -> Self {
        self.table_with_options(name, description, Vec::new(), move |_, _| Ok(provider.clone()))
    }

    /// A table made per open from its options (`path=...`).
    pub fn table_with_options(
        mut self,
        name: &str,
        description: &str,
        options: Vec<OptionSpec>,
        factory: impl Fn(&Options, &SessionState) -> Result<Arc<dyn TableProvider>> + Send + Sync + 'static,
    ) -> Self {
        self.tables.push(Item { name: name.into(), description: description.into(), options, factory: Box::new(factory) });
        self
    }

    /// A schema provider that takes no options: the same provider (its
    /// tables as they are when a host attaches it) for every attach.
    pub fn schema(self, name: &str, description: &str, provider: Arc<dyn SchemaProvider>) -> Self {
        self.schema_with_options(name, description, Vec::new(), move |_, _| Ok(provider.clone()))
    }

    /// A schema provider made per attach from its options (`path=...`):
    /// DataFusion's `ListingSchemaProvider` over a folder, say, refreshed in
    /// the factory. Hosts list its tables when they attach it and open each
    /// by name (`SELECT * FROM schema.table`).
    pub fn schema_with_options(
        mut self,
        name: &str,
        description: &str,
        options: Vec<OptionSpec>,
        factory: impl Fn(&Options, &SessionState) -> Result<Arc<dyn SchemaProvider>> + Send + Sync + 'static,
    ) -> Self {
        self.schemas.push(Item { name: name.into(), description: description.into(), options, factory: Box::new(factory) });
        self
    }

    /// A planner that takes no options: the same planner for every install.
    pub fn planner(self, name: &str, description: &str, planner: Arc<dyn Planner>) -> Self {
        self.planner_with_options(name, description, Vec::new(), move |_| Ok(planner.clone()))
    }

    /// A planner made per install from its options. Hosts that plan
    /// (DataFusion, datafusion-python, the `qlink` CLI) install it
    /// (`--planner plugin/name`, `plugin.planner(name)`); it is then asked
    /// about every query's plan ([`crate::planner`]).
    pub fn planner_with_options(
        mut self,
        name: &str,
        description: &str,
        options: Vec<OptionSpec>,
        factory: impl Fn(&Options) -> Result<Arc<dyn Planner>> + Send + Sync + 'static,
    ) -> Self {
        self.planners.push(Item { name: name.into(), description: description.into(), options, factory: Box::new(factory) });
        self
    }

    /// A scalar function, under its name and each of its aliases.
    pub fn scalar_udf(mut self, udf: impl Into<Arc<ScalarUDF>>) -> Self {
        self.scalars.push(udf.into());
        self
    }

    /// Several scalar functions (a crate's `all_functions()`, say).
    pub fn scalar_udfs(mut self, udfs: impl IntoIterator<Item = Arc<ScalarUDF>>) -> Self {
        self.scalars.extend(udfs);
        self
    }

    /// An aggregate function (UDAF), under its name and each of its aliases:
    /// one `Accumulator` per group (see `udaf.rs` for what is not offered).
    pub fn aggregate_udf(mut self, udaf: impl Into<Arc<AggregateUDF>>) -> Self {
        self.aggregates.push(udaf.into());
        self
    }

    /// A window function (UDWF), under its name and each of its aliases:
    /// one `PartitionEvaluator` per window partition, evaluated whole (see
    /// `udwf.rs` for what is refused).
    pub fn window_udf(mut self, udwf: impl Into<Arc<WindowUDF>>) -> Self {
        self.windows.push(udwf.into());
        self
    }

    /// Everything a crate's own registration function adds to a DataFusion
    /// `SessionContext` (its `register_all(ctx)`, say): each scalar,
    /// aggregate, window and table function it registers beyond
    /// DataFusion's defaults, so the plugin never lists them. An error
    /// from `register` makes the plugin fail to load with its message.
    pub fn registered_by(mut self, register: impl FnOnce(&SessionContext) -> datafusion::error::Result<()>) -> Self {
        let ctx = SessionContext::new();
        let before = ctx.state();
        if let Err(e) = register(&ctx) {
            self.error = Some(Error::from(e));
            return self;
        }
        let after = ctx.state();
        let mut seen: Vec<*const ScalarUDF> = self.scalars.iter().map(Arc::as_ptr).collect();
        let mut names: Vec<_> = after.scalar_functions().keys().filter(|k| !before.scalar_functions().contains_key(*k)).cloned().collect();
        names.sort();
        for n in names {
            let f = after.scalar_functions()[&n].clone();
            if !seen.contains(&Arc::as_ptr(&f)) {
                seen.push(Arc::as_ptr(&f));
                self.scalars.push(f);
            }
        }
        let mut tfs: Vec<_> = after.table_functions().iter().filter(|(k, _)| !before.table_functions().contains_key(*k)).collect();
        tfs.sort_by(|a, b| a.0.cmp(b.0));
        for (n, f) in tfs {
            self.table_functions.push((n.clone(), String::new(), f.function().clone()));
        }
        let mut seen: Vec<*const AggregateUDF> = self.aggregates.iter().map(Arc::as_ptr).collect();
        let mut names: Vec<_> =
            after.aggregate_functions().keys().filter(|k| !before.aggregate_functions().contains_key(*k)).cloned().collect();
        names.sort();
        for n in names {
            let f = after.aggregate_functions()[&n].clone();
            if !seen.contains(&Arc::as_ptr(&f)) {
                seen.push(Arc::as_ptr(&f));
                self.aggregates.push(f);
            }
        }
        let mut seen: Vec<*const WindowUDF> = self.windows.iter().map(Arc::as_ptr).collect();
        let mut names: Vec<_> = after.window_functions().keys().filter(|k| !before.window_functions().contains_key(*k)).cloned().collect();
        names.sort();
        for n in names {
            let f = after.window_functions()[&n].clone();
            if !seen.contains(&Arc::as_ptr(&f)) {
                seen.push(Arc::as_ptr(&f));
                self.windows.push(f);
            }
        }
        self
    }

    /// A table function: `SELECT * FROM name(...)`.
    pub fn table_function(mut self, name: &str, description: &str, f: Arc<dyn TableFunctionImpl>) -> Self {
        self.table_functions.push((name.into(), description.into(), f));
        self
    }
}

/// A plugin as registered: its catalogue in C form, its objects, and the
/// DataFusion sessions of the host sessions that use it. Lives for the
/// process.
pub struct Registered {
    /// The name, the functions and the sessions every exported object shares.
    pub library: Library,
    version: CString,
    description: CString,
    items: Vec<ql_item_info>,
    _strings: Vec<CString>,
    _options: Vec<Vec<ql_option_info>>,
    tables: Vec<Item<TableFactory>>,
    schemas: Vec<Item<SchemaFactory>>,
    planners: Vec<Item<PlannerFactory>>,
    /// Scalar functions by registered name (aliases included), in
    /// catalogue order; the uid of entry i is i + 1.
    scalars: Vec<(String, Arc<ScalarUDF>)>,
    /// Aggregate functions by registered name, likewise.
    aggregates: Vec<(String, Arc<AggregateUDF>)>,
    /// Window functions by registered name, likewise.
    windows: Vec<(String, Arc<WindowUDF>)>,
    table_functions: Vec<(String, Arc<dyn TableFunctionImpl>)>,
}

// SAFETY: the raw pointers point into the strings this value owns and never
// changes after it is built; every object in it is Send + Sync.
unsafe impl Send for Registered {}
unsafe impl Sync for Registered {}

/// The ABI's item names: `[a-z0-9_]+`.
fn item_name(name: &str, what: &str) -> Result<String> {
    let n = name.to_lowercase();
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') {
        return Err(Error::invalid(format!("{what} name {name:?} is not [a-z0-9_]+")));
    }
    Ok(n)
}

fn c(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

impl Registered {
    fn new(mut p: Plugin) -> Result<Self> {
        if let Some(e) = p.error.take() {
            return Err(e);
        }
        let mut strings = Vec::new();
        let mut options = Vec::new();
        let mut items = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut add = |kind: i32, name: &str, description: &str, opts: &[OptionSpec], strings: &mut Vec<CString>| -> Result<()> {
            if !seen.insert((kind, name.to_string())) {
                return Err(Error::invalid(format!("two items named '{name}' of one kind")));
            }
            let mut keep = |s: &str| {
                let cs = c(s);
                let ptr = cs.as_ptr();
                strings.push(cs);
                ptr
            };
            let o: Vec<ql_option_info> = opts
                .iter()
                .map(|o| ql_option_info {
                    name: keep(&o.name),
                    description: keep(&o.description),
                    default_value: o.default.as_deref().map_or(std::ptr::null(), &mut keep),
                    required: o.required as i32,
                    reserved_: 0,
                })
                .collect();
            items.push(ql_item_info {
                kind,
                n_options: o.len() as i32,
                name: keep(name),
                description: keep(description),
                options: if o.is_empty() { std::ptr::null() } else { o.as_ptr() },
            });
            options.push(o);
            Ok(())
        };
        for t in &p.tables {
            let n = item_name(&t.name, "table")?;
            add(QL_ITEM_TABLE_PROVIDER, &n, &t.description, &t.options, &mut strings)?;
        }
        for t in &p.schemas {
            let n = item_name(&t.name, "schema")?;
            add(QL_ITEM_SCHEMA_PROVIDER, &n, &t.description, &t.options, &mut strings)?;
        }
        for t in &p.planners {
            let n = item_name(&t.name, "planner")?;
            add(QL_ITEM_PLANNER, &n, &t.description, &t.options, &mut strings)?;
        }
        let mut scalars = Vec::new();
        for (n, doc, f) in by_sql_name(&p.scalars) {
            add(QL_ITEM_SCALAR_FUNCTION, &n, &doc, &[], &mut strings)?;
            scalars.push((n, f));
        }
        let mut aggregates = Vec::new();
        for (n, doc, f) in by_sql_name(&p.aggregates) {
            add(QL_ITEM_AGGREGATE_FUNCTION, &n, &doc, &[], &mut strings)?;
            aggregates.push((n, f));
        }
        let mut windows = Vec::new();
        for (n, doc, f) in by_sql_name(&p.windows) {
            add(QL_ITEM_WINDOW_FUNCTION, &n, &doc, &[], &mut strings)?;
            windows.push((n, f));
        }
        let mut table_functions = Vec::new();
        for (name, description, f) in &p.table_functions {
            let n = item_name(name, "table function")?;
            add(QL_ITEM_TABLE_FUNCTION, &n, description, &[], &mut strings)?;
            table_functions.push((n, f.clone()));
        }
        Ok(Registered {
            library: Library::new(c(&item_name(&p.name, "plugin")?), p.scalars),
            version: c(&p.version),
            description: c(&p.description),
            items,
            _strings: strings,
            _options: options,
            tables: p.tables,
            schemas: p.schemas,
            planners: p.planners,
            scalars,
            aggregates,
            windows,
            table_functions,
        })
    }
}

/// What the catalogue needs of a scalar, aggregate or window function.
trait Named {
    fn sql_name(&self) -> &str;
    fn sql_aliases(&self) -> &[String];
    /// The first line of its documentation ("" without one).
    fn summary(&self) -> String;
}

macro_rules! named {
    ($t:ty) => {
        impl Named for $t {
            fn sql_name(&self) -> &str {
                self.name()
            }
            fn sql_aliases(&self) -> &[String] {
                self.aliases()
            }
            fn summary(&self) -> String {
                self.documentation().and_then(|d| d.description.lines().next().map(str::to_string)).unwrap_or_default()
            }
        }
    };
}
named!(ScalarUDF);
named!(AggregateUDF);
named!(WindowUDF);

/// Each function under its name and each alias, as (SQL name, summary,
/// function): names lowered; an alias that is an operator ("->") has no
/// SQL name and is skipped; the first function of a name keeps it.
fn by_sql_name<T: Named>(functions: &[Arc<T>]) -> Vec<(String, String, Arc<T>)> {
    let mut out: Vec<(String, String, Arc<T>)> = Vec::new();
    for f in functions {
        for n in std::iter::once(f.sql_name()).chain(f.sql_aliases().iter().map(String::as_str)) {
            let Ok(n) = item_name(n, "function") else { continue };
            if !out.iter().any(|(s, _, _)| *s == n) {
                out.push((n, f.summary(), f.clone()));
            }
        }
    }
    out
}

fn registered(p: *const ql_plugin) -> &'static Registered {
    // SAFETY: private_data is the process-lifetime Registered.
    unsafe { &*((*p).private_data as *const Registered) }
}

fn name_of(p: *const c_char) -> String {
    qlink_convert::cstr(p)
}

fn options_of(o: *const ql_options, declared: &[OptionSpec], kind: &str, table: &str) -> Result<Options> {
    let mut map = HashMap::new();
    if !o.is_null() {
        // SAFETY: borrowed for the call: count keys and values.
        let o = unsafe { &*o };
        if o.count > 0 && (o.keys.is_null() || o.values.is_null()) {
            return Err(Error::invalid(format!("{kind} '{table}': {} options but no keys or values", o.count)));
        }
        for i in 0..o.count.max(0) as usize {
            let (k, v) = unsafe { (name_of(*o.keys.add(i)), name_of(*o.values.add(i))) };
            if !declared.iter().any(|d| d.name == k) {
                let known: Vec<_> = declared.iter().map(|d| d.name.as_str()).collect();
                return Err(Error::invalid(format!("{kind} '{table}' has no option '{k}' (it takes: {})", known.join(", "))));
            }
            map.insert(k, v);
        }
    }
    if let Some(d) = declared.iter().find(|d| d.required && !map.contains_key(&d.name)) {
        return Err(Error::invalid(format!("{kind} '{table}' needs option '{}'", d.name)));
    }
    Ok(Options(map))
}

unsafe extern "C" fn open_table(
    p: *const ql_plugin,
    name: *const c_char,
    options: *const ql_options,
    session: *const ql_session,
    out: *mut ql_table_provider,
    error: *mut ql_error,
) -> c_int {
    guard(error, "table_provider_open", || {
        let r = registered(p);
        let (n, provider) = made(r, &r.tables, "table", name, options, session)?;
        std::ptr::write(out, crate::table::export_table(provider, &r.library, format!("{}.{n}", r.library.label())));
        Ok(())
    })
}

unsafe extern "C" fn open_schema(
    p: *const ql_plugin,
    name: *const c_char,
    options: *const ql_options,
    session: *const ql_session,
    out: *mut ql_schema_provider,
    error: *mut ql_error,
) -> c_int {
    guard(error, "schema_provider_open", || {
        let r = registered(p);
        let (n, provider) = made(r, &r.schemas, "schema", name, options, session)?;
        std::ptr::write(out, crate::schema::export_schema_provider(provider, &r.library, format!("{}.{n}", r.library.label())));
        Ok(())
    })
}

unsafe extern "C" fn open_planner(
    p: *const ql_plugin,
    name: *const c_char,
    options: *const ql_options,
    out: *mut ql_planner,
    error: *mut ql_error,
) -> c_int {
    guard(error, "planner_open", || {
        let r = registered(p);
        let n = name_of(name);
        let t = r
            .planners
            .iter()
            .find(|t| t.name == n)
            .ok_or_else(|| Error::not_found(format!("no planner '{n}' in {}", r.library.label())))?;
        let opts = options_of(options, &t.options, "planner", &n)?;
        let planner = (t.factory)(&opts)?;
        std::ptr::write(out, crate::planner::export_planner(planner, &r.library, format!("{}.{n}", r.library.label())));
        Ok(())
    })
}

/// The table or schema `name` of `items` made from `options` (checked
/// against what it declares first) in the plugin's session for `session`,
/// with the host's object stores; its name and the provider.
fn made<P: ?Sized>(
    r: &Registered,
    items: &[Item<Factory<P>>],
    kind: &str,
    name: *const c_char,
    options: *const ql_options,
    session: *const ql_session,
) -> Result<(String, Arc<P>)> {
    let n = name_of(name);
    let t = items.iter().find(|t| t.name == n).ok_or_else(|| Error::not_found(format!("no {kind} '{n}' in {}", r.library.label())))?;
    let opts = options_of(options, &t.options, kind, &n)?;
    let ps = r.library.session(session)?;
    let provider = with_registry(host_stores(session), || (t.factory)(&opts, &ps.state))?;
    Ok((n, provider))
}

unsafe extern "C" fn open_scalar(p: *const ql_plugin, name: *const c_char, out: *mut ql_scalar_function, error: *mut ql_error) -> c_int {
    guard(error, "scalar_function_open", || {
        let r = registered(p);
        let n = name_of(name);
        let (uid, udf) = find_item(&r.scalars, &n, "scalar function", r)?;
        std::ptr::write(out, crate::udf::export_udf(udf.clone(), &n, lib_name(r), uid));
        Ok(())
    })
}

unsafe extern "C" fn open_aggregate(
    p: *const ql_plugin,
    name: *const c_char,
    out: *mut ql_aggregate_function,
    error: *mut ql_error,
) -> c_int {
    guard(error, "aggregate_function_open", || {
        let r = registered(p);
        let n = name_of(name);
        let (uid, udaf) = find_item(&r.aggregates, &n, "aggregate function", r)?;
        std::ptr::write(out, crate::udaf::export_udaf(udaf.clone(), &n, lib_name(r), uid));
        Ok(())
    })
}

unsafe extern "C" fn open_window(p: *const ql_plugin, name: *const c_char, out: *mut ql_window_function, error: *mut ql_error) -> c_int {
    guard(error, "window_function_open", || {
        let r = registered(p);
        let n = name_of(name);
        let (uid, udwf) = find_item(&r.windows, &n, "window function", r)?;
        std::ptr::write(out, crate::udwf::export_udwf(udwf.clone(), &n, lib_name(r), uid));
        Ok(())
    })
}

unsafe extern "C" fn open_table_function(
    p: *const ql_plugin,
    name: *const c_char,
    out: *mut ql_table_function,
    error: *mut ql_error,
) -> c_int {
    guard(error, "table_function_open", || {
        let r = registered(p);
        let n = name_of(name);
        let (uid, f) = find_item(&r.table_functions, &n, "table function", r)?;
        std::ptr::write(out, crate::udtf::export_udtf(f.clone(), &n, &r.library, uid));
        Ok(())
    })
}

/// The function registered as `name` in `items` and its uid (its place in
/// the catalogue's list of that kind, from 1); QL_ENOTFOUND naming it.
fn find_item<'a, T>(items: &'a [(String, T)], name: &str, kind: &str, r: &Registered) -> Result<(u64, &'a T)> {
    items
        .iter()
        .enumerate()
        .find(|(_, (s, _))| s == name)
        .map(|(i, (_, item))| (i as u64 + 1, item))
        .ok_or_else(|| Error::not_found(format!("no {kind} '{name}' in {}", r.library.label())))
}

fn lib_name(r: &'static Registered) -> &'static CStr {
    r.library.name.as_c_str()
}

unsafe extern "C" fn release_plugin(p: *mut ql_plugin) {
    // Everything it points at is process-lifetime: nothing to free.
    (*p).release = None;
}

/// The ABI versions this SDK serves.
pub const SERVED: &[u32] = &[QL_ABI_VERSION_0_1];

/// `qlink_plugin_init`'s body (see [`export_plugin!`](crate::export_plugin)).
///
/// # Safety
/// `out` and `error` as qlink/plugin.h specifies.
pub unsafe fn init(
    abi_version: u32,
    out: *mut ql_plugin,
    error: *mut ql_error,
    cell: &'static OnceLock<std::result::Result<Registered, Error>>,
    build: fn() -> Plugin,
) -> c_int {
    if !SERVED.contains(&abi_version) {
        let msg = format!("this plugin serves qlink ABI 0.1 only, not {}.{}", abi_version >> 16, abi_version & 0xFFFF);
        return fill(error, &Error::new(QL_EVERSION, msg));
    }
    if out.is_null() {
        return fill(error, &Error::invalid("qlink_plugin_init: out is NULL"));
    }
    guard(error, "qlink_plugin_init", || {
        crate::runtime::pin_library();
        let r = cell
            .get_or_init(|| {
                std::panic::catch_unwind(|| Registered::new(build()))
                    .unwrap_or_else(|_| Err(Error::new(QL_EINTERNAL, "panic while building the plugin")))
            })
            .as_ref()
            .map_err(Clone::clone)?;
        let has = |k: i32| r.items.iter().any(|i| i.kind == k);
        let mut d: ql_plugin = zeroed();
        d.struct_size = std::mem::size_of::<ql_plugin>() as u32;
        d.magic = QL_PLUGIN_MAGIC;
        d.abi_version = abi_version;
        d.n_items = r.items.len() as i32;
        d.name = r.library.name.as_ptr();
        d.version = r.version.as_ptr();
        d.description = r.description.as_ptr();
        d.items = if r.items.is_empty() { std::ptr::null() } else { r.items.as_ptr() };
        d.table_provider_open = if has(QL_ITEM_TABLE_PROVIDER) { Some(open_table) } else { None };
        d.schema_provider_open = if has(QL_ITEM_SCHEMA_PROVIDER) { Some(open_schema) } else { None };
        d.scalar_function_open = if has(QL_ITEM_SCALAR_FUNCTION) { Some(open_scalar) } else { None };
        d.aggregate_function_open = if has(QL_ITEM_AGGREGATE_FUNCTION) { Some(open_aggregate) } else { None };
        d.window_function_open = if has(QL_ITEM_WINDOW_FUNCTION) { Some(open_window) } else { None };
        d.table_function_open = if has(QL_ITEM_TABLE_FUNCTION) { Some(open_table_function) } else { None };
        d.planner_open = if has(QL_ITEM_PLANNER) { Some(open_planner) } else { None };
        d.release = Some(release_plugin);
        d.private_data = r as *const Registered as *mut _;
        std::ptr::write(out, d);
        Ok(())
    })
}
