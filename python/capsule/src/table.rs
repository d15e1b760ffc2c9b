// SPDX-License-Identifier: Apache-2.0
//! A qlink table provider exported as datafusion-ffi 55.2.0's
//! `FFI_TableProvider`, filled with this library's own entry points.
//!
//! What datafusion-ffi's own wrappers pay per scan and this export does not:
//! - no `ForeignSession` (the consumer's config replayed, every function and
//!   the catalog list wrapped): the scan plans against a session state this
//!   library built once per exported provider;
//! - no `TaskContext` rebuilt from the codec's provider to decode filters:
//!   they decode against a context built once per provider (see `filters`);
//! - no `TaskContext` converted per `execute` (every consumer function
//!   wrapped again, a fresh `RuntimeEnv`): the plan's `execute` ignores the
//!   incoming context and uses the provider's (see `exec`).
//!
//! The consumer's memory pool and object stores do not cross this boundary
//! in datafusion-ffi 55 (gap G5): plugins use this provider's own runtime
//! environment.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use async_ffi::{FfiFuture, FutureExt};
use datafusion::catalog::{Session, TableProvider};
use datafusion::error::DataFusionError;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::Expr;
use datafusion_ffi::arrow_wrappers::WrappedSchema;
use datafusion_ffi::execution_plan::FFI_ExecutionPlan;
use datafusion_ffi::insert_op::FFI_InsertOp;
use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::table_provider::FFI_TableProvider;
use datafusion_ffi::table_source::{FFI_TableProviderFilterPushDown, FFI_TableType};
use datafusion_ffi::util::{FFI_Option, FFI_Result};
use stabby::vec::Vec as SVec;
use tokio::runtime::Handle;

use crate::exec::export_scan_plan;
use crate::filters::{decode_filters, OnDemandCodec};
use crate::mirror::{capsule_marker_id, SessionRefMirror, TableProviderMirror};
use qlink_datafusion::error::{error_message, Result};
use qlink_datafusion::table::QlinkTableProvider;

/// The qlink table behind `provider` when this library exported it (its
/// marker is ours), else None. The table is shared, not copied.
pub fn table_of(provider: &FFI_TableProvider) -> Option<Arc<QlinkTableProvider>> {
    if (provider.library_marker_id)() != capsule_marker_id() {
        return None;
    }
    // SAFETY: our marker means `mirror` built it: a TableProviderMirror (same
    // layout, asserted in `mirror`) whose private data is a ProviderState.
    let mirror = unsafe { &*(provider as *const FFI_TableProvider as *const TableProviderMirror) };
    Some(Arc::clone(&unsafe { state_of(mirror) }.table))
}

/// Everything a scan needs, built once per exported provider and shared by
/// its clones.
struct ProviderState {
    table: Arc<QlinkTableProvider>,
    /// What the provider's `scan` sees as its session (DataFusion's built-in
    /// functions of this library, its own runtime environment).
    session: SessionState,
    /// Filter decoding and plan execution context.
    task: Arc<TaskContext>,
    codec: OnDemandCodec,
    runtime: Option<Handle>,
}

impl ProviderState {
    fn filters(&self, bytes: &[u8]) -> Result<Vec<Expr>> {
        decode_filters(bytes, &self.task, &self.codec)
    }

    fn scan(&self, projection: Option<Vec<usize>>, filters: &[u8], limit: Option<usize>) -> Result<FFI_ExecutionPlan> {
        let filters = self.filters(filters)?;
        let session: &dyn Session = &self.session;
        // The qlink scan does its work synchronously (plugin calls); its
        // future completes on the first poll.
        let plan = qlink_datafusion::blocking::block_on(self.table.scan(session, projection.as_ref(), &filters, limit))?;
        Ok(export_scan_plan(plan, Arc::clone(&self.task), self.runtime.clone()))
    }

    fn pushdown(&self, filters: &[u8]) -> Result<SVec<FFI_TableProviderFilterPushDown>> {
        let filters = self.filters(filters)?;
        let refs: Vec<&Expr> = filters.iter().collect();
        Ok(self.table.supports_filters_pushdown(&refs)?.iter().map(FFI_TableProviderFilterPushDown::from).collect())
    }
}

/// Options of [`export_table`].
pub struct ExportOptions {
    /// Tokio runtime entered while scanning and executing (the host's), so
    /// plugin streams run the way they do in the embedded host.
    pub runtime: Option<Handle>,
    /// Runtime environment the plugins see (memory pool, object stores);
    /// DataFusion's default if None.
    pub runtime_env: Option<Arc<RuntimeEnv>>,
}

/// Export `table` for a datafusion-ffi 55 consumer whose logical codec is
/// `codec` (cloned; from the consumer's session). The returned struct owns
/// everything; dropping it (or the consumer releasing it) frees it.
pub fn export_table(table: Arc<QlinkTableProvider>, codec: &FFI_LogicalExtensionCodec, options: ExportOptions) -> FFI_TableProvider {
    let mut builder = SessionStateBuilder::new().with_default_features();
    if let Some(env) = options.runtime_env {
        builder = builder.with_runtime_env(env);
    }
    let session = builder.build();
    let task = Arc::new(TaskContext::from(&session));
    let state = Arc::new(ProviderState { table, session, task, codec: OnDemandCodec::new(codec), runtime: options.runtime });
    mirror(state, codec.clone()).into_ffi()
}

fn mirror(state: Arc<ProviderState>, logical_codec: FFI_LogicalExtensionCodec) -> TableProviderMirror {
    TableProviderMirror {
        schema: schema_fn,
        scan: scan_fn,
        table_type: table_type_fn,
        supports_filters_pushdown: Some(supports_filters_pushdown_fn),
        insert_into: insert_into_fn,
        statistics: statistics_fn,
        logical_codec,
        clone: clone_fn,
        release: release_fn,
        version: datafusion_ffi::version,
        private_data: Arc::into_raw(state) as *mut c_void,
        library_marker_id: capsule_marker_id,
    }
}

/// # Safety
/// `provider` is one of ours (its private data is an `Arc<ProviderState>`).
unsafe fn state_of(provider: &TableProviderMirror) -> &ProviderState {
    &*(provider.private_data as *const ProviderState)
}

/// Run `f`, turning an error or a panic into the message the consumer shows.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> FFI_Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => FFI_Result::Ok(v),
        Ok(Err(e)) => FFI_Result::Err(error_message(&e).as_str().into()),
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            FFI_Result::Err(format!("{what}: panic: {msg}").as_str().into())
        }
    }
}

unsafe extern "C" fn schema_fn(provider: &TableProviderMirror) -> WrappedSchema {
    WrappedSchema::from(state_of(provider).table.schema())
}

unsafe extern "C" fn table_type_fn(provider: &TableProviderMirror) -> FFI_TableType {
    state_of(provider).table.table_type().into()
}

unsafe extern "C" fn scan_fn(
    provider: &TableProviderMirror,
    session: SessionRefMirror,
    projections: FFI_Option<SVec<usize>>,
    filters_serialized: SVec<u8>,
    limit: FFI_Option<usize>,
) -> FfiFuture<FFI_Result<FFI_ExecutionPlan>> {
    // The consumer's session is not read: the scan plans against this
    // provider's own state. Released here, on the consumer's thread.
    drop(session);
    let state = state_of(provider);
    let result = guarded("qlink scan", || {
        let _rt = state.runtime.as_ref().map(|h| h.enter());
        let projection = projections.into_option().map(|p| p.iter().copied().collect());
        state.scan(projection, filters_serialized.as_slice(), limit.into())
    });
    async move { result }.into_ffi()
}

unsafe extern "C" fn supports_filters_pushdown_fn(
    provider: &TableProviderMirror,
    filters_serialized: SVec<u8>,
) -> FFI_Result<SVec<FFI_TableProviderFilterPushDown>> {
    let state = state_of(provider);
    guarded("qlink supports_filters_pushdown", || state.pushdown(filters_serialized.as_slice()))
}

unsafe extern "C" fn insert_into_fn(
    provider: &TableProviderMirror,
    session: SessionRefMirror,
    _input: &FFI_ExecutionPlan,
    _insert_op: FFI_InsertOp,
) -> FfiFuture<FFI_Result<FFI_ExecutionPlan>> {
    drop(session);
    let name = format!("{:?}", state_of(provider).table);
    let err: Result<FFI_ExecutionPlan> =
        Err(DataFusionError::NotImplemented(format!("{name} is read-only: qlink table providers take no INSERT")));
    let result = guarded("qlink insert_into", || err);
    async move { result }.into_ffi()
}

/// Statistics do not cross: their encoding lives in datafusion-proto-common,
/// which this crate does not link. DataFusion then scans for `COUNT(*)`.
unsafe extern "C" fn statistics_fn(_provider: &TableProviderMirror) -> FFI_Option<SVec<u8>> {
    FFI_Option::None
}

unsafe extern "C" fn clone_fn(provider: &TableProviderMirror) -> TableProviderMirror {
    let raw = provider.private_data as *const ProviderState;
    Arc::increment_strong_count(raw);
    mirror(Arc::from_raw(raw), provider.logical_codec.clone())
}

unsafe extern "C" fn release_fn(provider: &mut TableProviderMirror) {
    if !provider.private_data.is_null() {
        drop(Arc::from_raw(provider.private_data as *const ProviderState));
        provider.private_data = std::ptr::null_mut();
    }
}
