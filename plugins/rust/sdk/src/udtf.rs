// SPDX-License-Identifier: Apache-2.0
//! A DataFusion `TableFunctionImpl` as a `ql_table_function`
//! (qlink/function.h): `SELECT * FROM f(1, 'x')` in any host. Arguments are
//! the host's literals, converted to DataFusion `Expr`s; the provider the
//! function returns is exported like any table.

use std::ffi::CString;
use std::os::raw::c_int;
use std::sync::Arc;

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl};
use qlink_sys::*;

use crate::error::{guard, guard_value, Error};
use crate::filters::exprs_of;
use crate::services::object_store::with_registry;
use crate::session::{host_stores, Library};
use crate::table::export_table;

struct UdtfState {
    function: Arc<dyn TableFunctionImpl>,
    plugin: &'static Library,
    name: CString,
}

fn state(f: *const ql_table_function) -> &'static UdtfState {
    // SAFETY: private_data is the UdtfState this module boxed.
    unsafe { crate::private::borrow((*f).private_data) }
}

/// `function` as a `ql_table_function` the caller owns.
pub fn export_udtf(function: Arc<dyn TableFunctionImpl>, name: &str, plugin: &'static Library, uid: u64) -> ql_table_function {
    let st = Box::new(UdtfState { function, plugin, name: CString::new(name).unwrap_or_default() });
    let mut out: ql_table_function = zeroed();
    out.struct_size = std::mem::size_of::<ql_table_function>() as u32;
    out.id = ql_function_id { origin: QL_ORIGIN_USER, kind: QL_FUNCTION_TABLE, name: st.name.as_ptr(), library: plugin.name.as_ptr(), uid };
    out.call = Some(udtf_call);
    out.release = Some(udtf_release);
    out.private_data = crate::private::into_private(st);
    out
}

unsafe extern "C" fn udtf_call(
    f: *const ql_table_function,
    session: *const ql_session,
    args: *const ql_expr_list,
    out: *mut ql_table_provider,
    error: *mut ql_error,
) -> c_int {
    guard(error, "table function call", || {
        let st = state(f);
        let name = st.name.to_string_lossy().into_owned();
        let ps = st.plugin.session(session)?;
        let mut exprs = Vec::new();
        if !args.is_null() {
            for (i, e) in exprs_of(&*args, None, &ps.state).into_iter().enumerate() {
                exprs.push(e.ok_or_else(|| Error::invalid(format!("{name}: argument {} is not a literal this plugin can read", i + 1)))?);
            }
        }
        let provider = with_registry(host_stores(session), || st.function.call_with_args(TableFunctionArgs::new(&exprs, &ps.state)))?;
        std::ptr::write(out, export_table(provider, st.plugin, format!("{}.{name}", st.plugin.label())));
        Ok(())
    })
}

unsafe extern "C" fn udtf_release(f: *mut ql_table_function) {
    guard_value((), || {
        crate::private::drop_box::<UdtfState>(&mut (*f).private_data);
        (*f).release = None;
    })
}
