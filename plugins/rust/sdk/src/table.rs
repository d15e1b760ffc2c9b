// SPDX-License-Identifier: Apache-2.0
//! A DataFusion `TableProvider` as a `ql_table_provider` (qlink/table.h):
//! schema, statistics, the filter-pushdown handshake, and `scan` with
//! projection, filters and limit handed to the provider's own `scan`.

use std::os::raw::c_int;
use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::datasource::TableType;
use datafusion::logical_expr::TableProviderFilterPushDown;
use qlink_sys::*;

use crate::error::{guard, guard_value, Error};
use crate::filters::exprs_of;
use crate::plan::{export_plan, export_schema};
use crate::services::object_store::with_registry;
use crate::session::{host_stores, Library};

struct TableState {
    provider: Arc<dyn TableProvider>,
    plugin: &'static Library,
    /// Names the table's memory reservations and errors: "<plugin>.<table>".
    label: String,
}

fn state(t: *const ql_table_provider) -> &'static TableState {
    // SAFETY: private_data is the TableState this module boxed.
    unsafe { crate::private::borrow((*t).private_data) }
}

/// `provider` as a `ql_table_provider` the caller owns.
pub fn export_table(provider: Arc<dyn TableProvider>, plugin: &'static Library, label: String) -> ql_table_provider {
    let mut out: ql_table_provider = zeroed();
    out.struct_size = std::mem::size_of::<ql_table_provider>() as u32;
    out.table_type = match provider.table_type() {
        TableType::Base => QL_TABLE_BASE,
        TableType::View => QL_TABLE_VIEW,
        TableType::Temporary => QL_TABLE_TEMPORARY,
    };
    out.get_schema = Some(table_schema);
    out.get_statistics = Some(table_statistics);
    out.supports_filters = Some(table_supports_filters);
    out.scan = Some(table_scan);
    out.release = Some(table_release);
    out.private_data = crate::private::into_private(Box::new(TableState { provider, plugin, label }));
    out
}

unsafe extern "C" fn table_schema(t: *const ql_table_provider, out: *mut ArrowSchema, error: *mut ql_error) -> c_int {
    guard(error, "table schema", || export_schema(state(t).provider.schema().as_ref(), out))
}

unsafe extern "C" fn table_statistics(t: *const ql_table_provider, out: *mut ql_statistics, error: *mut ql_error) -> c_int {
    guard(error, "table statistics", || {
        let st = state(t);
        let stats = st.provider.statistics().unwrap_or_else(|| datafusion::common::Statistics::new_unknown(st.provider.schema().as_ref()));
        std::ptr::write(out, qlink_convert::stats::from_statistics(&stats));
        Ok(())
    })
}

unsafe extern "C" fn table_supports_filters(
    t: *const ql_table_provider,
    filters: *const ql_expr_list,
    answers: *mut i32,
    error: *mut ql_error,
) -> c_int {
    guard(error, "filter pushdown", || {
        let st = state(t);
        if filters.is_null() {
            return Err(Error::invalid("supports_filters: filters is NULL"));
        }
        let list = &*filters;
        let n = list.n_exprs.max(0) as usize;
        if n == 0 {
            return Ok(());
        }
        if answers.is_null() {
            return Err(Error::invalid("supports_filters: answers is NULL"));
        }
        let answers = std::slice::from_raw_parts_mut(answers, n);
        answers.fill(QL_PUSHDOWN_UNSUPPORTED);
        let session = st.plugin.session(std::ptr::null())?;
        let schema = st.provider.schema();
        let exprs = exprs_of(list, Some(schema.as_ref()), &session.state);
        let (idx, known): (Vec<usize>, Vec<_>) = exprs.iter().enumerate().filter_map(|(i, e)| e.as_ref().map(|e| (i, e))).unzip();
        if known.is_empty() {
            return Ok(());
        }
        let said = st.provider.supports_filters_pushdown(&known)?;
        if said.len() != known.len() {
            return Err(Error::new(QL_EINTERNAL, format!("{}: the provider answered {} of {} filters", st.label, said.len(), known.len())));
        }
        for (i, a) in idx.into_iter().zip(said) {
            answers[i] = match a {
                TableProviderFilterPushDown::Exact => QL_PUSHDOWN_EXACT,
                TableProviderFilterPushDown::Inexact => QL_PUSHDOWN_INEXACT,
                TableProviderFilterPushDown::Unsupported => QL_PUSHDOWN_UNSUPPORTED,
            };
        }
        Ok(())
    })
}

unsafe extern "C" fn table_scan(
    t: *const ql_table_provider,
    session: *const ql_session,
    args: *const ql_scan_args,
    out: *mut ql_execution_plan,
    error: *mut ql_error,
) -> c_int {
    guard(error, "scan", || {
        let st = state(t);
        if args.is_null() || out.is_null() {
            return Err(Error::invalid("scan: args or out is NULL"));
        }
        let a = &*args;
        let schema = st.provider.schema();
        let width = schema.fields().len();
        let projection: Option<Vec<usize>> = if a.n_projection < 0 {
            None
        } else if a.n_projection > 0 && a.projection.is_null() {
            return Err(Error::invalid(format!("{}: {} projected columns but no projection", st.label, a.n_projection)));
        } else {
            let p: Vec<usize> = (0..a.n_projection as usize).map(|i| *a.projection.add(i) as usize).collect();
            if let Some(bad) = p.iter().find(|&&c| c >= width) {
                return Err(Error::invalid(format!("{}: projection names column {bad} of {width}", st.label)));
            }
            Some(p)
        };
        let ps = st.plugin.session(session)?;
        let filters: Vec<_> = exprs_of(&a.filters, Some(schema.as_ref()), &ps.state).into_iter().flatten().collect();
        let limit = if a.limit < 0 { None } else { Some(a.limit as usize) };
        let plan = with_registry(host_stores(session), || {
            crate::runtime::block_on(st.provider.scan(&ps.state, projection.as_ref(), &filters, limit))
        })?;
        std::ptr::write(out, export_plan(plan, ps, st.label.clone()));
        Ok(())
    })
}

unsafe extern "C" fn table_release(t: *mut ql_table_provider) {
    guard_value((), || {
        crate::private::drop_box::<TableState>(&mut (*t).private_data);
        (*t).release = None;
    })
}
