// SPDX-License-Identifier: Apache-2.0
//! Function identity (gap G2): a DataFusion function is a built-in when its
//! implementation is the very object DataFusion's own registry holds (the
//! built-ins are process-wide singletons), never by name. A session UDF named
//! `sum` has another implementation object, so it is user-defined. qlink
//! functions wrapped by this adapter carry their plugin's identity: the
//! wrappers in `functions` [`remember`] it by the address of their
//! implementation object when they are made and [`forget`] it when that
//! object is dropped, so no lookup needs to know their types.

use std::collections::HashMap;
use std::ffi::CStr;
use std::sync::{Arc, OnceLock, RwLock};

use datafusion::logical_expr::{AggregateUDF, ScalarUDF, WindowUDF};

use crate::ffi::*;

pub use qlink_convert::intern;

/// An identity with interned strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    pub origin: i32,
    pub kind: i32,
    pub name: &'static CStr,
    pub library: Option<&'static CStr>,
    pub uid: u64,
}

impl Identity {
    pub fn raw(&self) -> ql_function_id {
        ql_function_id {
            origin: self.origin,
            kind: self.kind,
            name: self.name.as_ptr(),
            library: self.library.map(|l| l.as_ptr()).unwrap_or(std::ptr::null()),
            uid: self.uid,
        }
    }
}

/// The built-ins by implementation address, with their interned names (a
/// lookup costs one hash of an address: plan views convert every call).
struct Builtins {
    scalar: HashMap<usize, &'static CStr>,
    aggregate: HashMap<usize, &'static CStr>,
    window: HashMap<usize, &'static CStr>,
}

fn impl_ptr<T: ?Sized>(a: &Arc<T>) -> usize {
    Arc::as_ptr(a) as *const () as usize
}

fn builtins() -> &'static Builtins {
    static B: OnceLock<Builtins> = OnceLock::new();
    B.get_or_init(|| {
        let leak = intern;
        let mut scalar = HashMap::new();
        for f in
            datafusion::functions::all_default_functions().into_iter().chain(datafusion::functions_nested::all_default_nested_functions())
        {
            scalar.insert(impl_ptr(f.inner()), leak(f.name()));
        }
        let mut aggregate = HashMap::new();
        for f in datafusion::functions_aggregate::all_default_aggregate_functions() {
            aggregate.insert(impl_ptr(f.inner()), leak(f.name()));
        }
        let mut window = HashMap::new();
        for f in datafusion::functions_window::all_default_window_functions() {
            window.insert(impl_ptr(f.inner()), leak(f.name()));
        }
        Builtins { scalar, aggregate, window }
    })
}

/// The identity of function `name` of the plugin named `library`.
pub fn plugin_function(kind: i32, name: &str, library: &str, uid: u64) -> Identity {
    Identity { origin: QL_ORIGIN_USER, kind, name: intern(name), library: Some(intern(library)), uid }
}

/// Plugin functions' identities by the address of their implementation.
fn wrapped() -> &'static RwLock<HashMap<usize, Identity>> {
    static W: OnceLock<RwLock<HashMap<usize, Identity>>> = OnceLock::new();
    W.get_or_init(Default::default)
}

/// Attach `id` to the implementation object `implementation` points at
/// (a plugin function's, just wrapped into a DataFusion function). The
/// object must call [`forget`] when it is dropped.
pub fn remember<T: ?Sized>(implementation: &Arc<T>, id: Identity) {
    wrapped().write().unwrap_or_else(|e| e.into_inner()).insert(impl_ptr(implementation), id);
}

/// Detach the identity of `implementation` (from its `Drop`, before its
/// address can be reused).
pub fn forget<T>(implementation: &T) {
    let ptr = implementation as *const T as *const () as usize;
    wrapped().write().unwrap_or_else(|e| e.into_inner()).remove(&ptr);
}

fn remembered(ptr: usize) -> Option<Identity> {
    wrapped().read().unwrap_or_else(|e| e.into_inner()).get(&ptr).copied()
}

fn user(kind: i32, name: &str, ptr: usize) -> Identity {
    Identity { origin: QL_ORIGIN_USER, kind, name: intern(name), library: Some(intern("host")), uid: ptr as u64 }
}

pub fn scalar_identity(f: &ScalarUDF) -> Identity {
    let ptr = impl_ptr(f.inner());
    if let Some(&name) = builtins().scalar.get(&ptr) {
        return Identity { origin: QL_ORIGIN_BUILTIN, kind: QL_FUNCTION_SCALAR, name, library: None, uid: 0 };
    }
    if let Some(id) = remembered(ptr) {
        return id;
    }
    user(QL_FUNCTION_SCALAR, f.name(), ptr)
}

pub fn aggregate_identity(f: &AggregateUDF) -> Identity {
    let ptr = impl_ptr(f.inner());
    if let Some(&name) = builtins().aggregate.get(&ptr) {
        return Identity { origin: QL_ORIGIN_BUILTIN, kind: QL_FUNCTION_AGGREGATE, name, library: None, uid: 0 };
    }
    if let Some(id) = remembered(ptr) {
        return id;
    }
    user(QL_FUNCTION_AGGREGATE, f.name(), ptr)
}

pub fn window_identity(f: &WindowUDF) -> Identity {
    let ptr = impl_ptr(f.inner());
    if let Some(&name) = builtins().window.get(&ptr) {
        return Identity { origin: QL_ORIGIN_BUILTIN, kind: QL_FUNCTION_WINDOW, name, library: None, uid: 0 };
    }
    if let Some(id) = remembered(ptr) {
        return id;
    }
    user(QL_FUNCTION_WINDOW, f.name(), ptr)
}
