// SPDX-License-Identifier: Apache-2.0
//! `#[repr(C)]` mirrors of the datafusion-ffi 55.2.0 structs whose fields
//! that crate keeps private, so this library can fill them with its own entry
//! points.
//!
//! Every mirror lists the real struct's fields in the real order with the real
//! field types (datafusion-ffi's public `WrappedSchema`, `FFI_Option`,
//! `FFI_Result`, `FFI_ExecutionPlan`..., stabby's `Vec`, async-ffi's
//! `FfiFuture`): only the order could be wrong, and the `const` assertions
//! below pin size, alignment and the offset of every public field against the
//! real type, so a datafusion-ffi upgrade that moves anything fails to compile.
//! `FFI_SessionRef` is `pub(crate)` upstream and cannot be named; its mirror
//! is pinned by its parts (every member is pointer-sized or a public struct)
//! and by the round-trip tests, where a wrong size would shift the scan
//! arguments that follow it (projection, filters, limit) and break them.

use std::ffi::c_void;
use std::mem::{align_of, offset_of, size_of};

use async_ffi::FfiFuture;
use datafusion_ffi::arrow_wrappers::WrappedSchema;
use datafusion_ffi::execution::FFI_TaskContextProvider;
use datafusion_ffi::execution_plan::FFI_ExecutionPlan;
use datafusion_ffi::insert_op::FFI_InsertOp;
use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::proto::physical_extension_codec::FFI_PhysicalExtensionCodec;
use datafusion_ffi::table_provider::FFI_TableProvider;
use datafusion_ffi::table_source::{FFI_TableProviderFilterPushDown, FFI_TableType};
use datafusion_ffi::util::{FFI_Option, FFI_Result};
use stabby::str::Str as SStr;
use stabby::vec::Vec as SVec;

/// Identifies the objects this library exported (tables, execution plans).
/// Never equal to datafusion-ffi's own marker, in this library or any
/// other, so every consumer (a test in this very library included) takes
/// the foreign path through our function pointers instead of reading
/// `private_data` as datafusion-ffi's.
static CAPSULE_MARKER: u8 = 0;

pub extern "C" fn capsule_marker_id() -> usize {
    &CAPSULE_MARKER as *const u8 as usize
}

/// Mirror of `FFI_TableProvider` (datafusion-ffi 55.2.0, table_provider.rs).
#[repr(C)]
pub struct TableProviderMirror {
    pub schema: unsafe extern "C" fn(provider: &Self) -> WrappedSchema,
    pub scan: unsafe extern "C" fn(
        provider: &Self,
        session: SessionRefMirror,
        projections: FFI_Option<SVec<usize>>,
        filters_serialized: SVec<u8>,
        limit: FFI_Option<usize>,
    ) -> FfiFuture<FFI_Result<FFI_ExecutionPlan>>,
    pub table_type: unsafe extern "C" fn(provider: &Self) -> FFI_TableType,
    pub supports_filters_pushdown:
        Option<unsafe extern "C" fn(provider: &Self, filters_serialized: SVec<u8>) -> FFI_Result<SVec<FFI_TableProviderFilterPushDown>>>,
    pub insert_into: unsafe extern "C" fn(
        provider: &Self,
        session: SessionRefMirror,
        input: &FFI_ExecutionPlan,
        insert_op: FFI_InsertOp,
    ) -> FfiFuture<FFI_Result<FFI_ExecutionPlan>>,
    pub statistics: unsafe extern "C" fn(provider: &Self) -> FFI_Option<SVec<u8>>,
    pub logical_codec: FFI_LogicalExtensionCodec,
    pub clone: unsafe extern "C" fn(provider: &Self) -> Self,
    pub release: unsafe extern "C" fn(provider: &mut Self),
    pub version: unsafe extern "C" fn() -> u64,
    pub private_data: *mut c_void,
    pub library_marker_id: extern "C" fn() -> usize,
}

impl TableProviderMirror {
    /// The real struct, whose `Drop` calls our `release` (and drops the codec).
    pub fn into_ffi(self) -> FFI_TableProvider {
        // SAFETY: identical layout (asserted below); every field is moved.
        unsafe { std::mem::transmute::<TableProviderMirror, FFI_TableProvider>(self) }
    }
}

/// Mirror of the `pub(crate)` `FFI_SessionRef` (datafusion-ffi 55.2.0,
/// session/mod.rs). The session services this library never calls are kept
/// as opaque pointer-sized slots; the two codecs are owned members and are
/// dropped (released) with the mirror.
#[repr(C)]
pub struct SessionRefMirror {
    pub session_id: unsafe extern "C" fn(session: &Self) -> SStr<'_>,
    /// config, catalog_list, query_planner, optimize, create_physical_plan,
    /// create_physical_expr, scalar_functions, aggregate_functions,
    /// window_functions, table_options, default_table_options, task_ctx,
    /// physical_optimizers: never called here (each would rebuild part of
    /// the consumer's session, the per-scan cost this route avoids).
    _services: [*const c_void; 13],
    pub logical_codec: FFI_LogicalExtensionCodec,
    pub physical_codec: FFI_PhysicalExtensionCodec,
    pub clone: unsafe extern "C" fn(session: &Self) -> Self,
    pub release: unsafe extern "C" fn(session: &mut Self),
    pub version: unsafe extern "C" fn() -> u64,
    pub private_data: *mut c_void,
    pub library_marker_id: extern "C" fn() -> usize,
}

impl Drop for SessionRefMirror {
    fn drop(&mut self) {
        // SAFETY: the owner's release frees its private data; the codec members
        // are released by their own Drop right after, as upstream does.
        unsafe { (self.release)(self) }
    }
}

/// Mirror of `FFI_LogicalExtensionCodec` (datafusion-ffi 55.2.0,
/// proto/logical_extension_codec.rs), only to read its `pub(crate)`
/// `task_ctx_provider`: the consumer's functions are fetched through it on
/// demand, when a filter names a function this library does not have.
#[repr(C)]
pub struct LogicalCodecMirror {
    /// try_decode/encode_table_provider, try_decode/encode_udf,
    /// try_decode/encode_udaf, try_decode/encode_udwf: called only through
    /// the real type's own wrappers.
    _callbacks: [*const c_void; 8],
    pub task_ctx_provider: FFI_TaskContextProvider,
    pub clone: unsafe extern "C" fn(codec: &Self) -> Self,
    pub release: unsafe extern "C" fn(codec: &mut Self),
    pub version: unsafe extern "C" fn() -> u64,
    pub private_data: *mut c_void,
    pub library_marker_id: extern "C" fn() -> usize,
}

impl LogicalCodecMirror {
    /// The task-context provider of a codec (borrowed).
    pub fn task_ctx_provider_of(codec: &FFI_LogicalExtensionCodec) -> &FFI_TaskContextProvider {
        // SAFETY: identical layout (asserted below); a shared borrow of one member.
        unsafe { &(*(codec as *const FFI_LogicalExtensionCodec as *const LogicalCodecMirror)).task_ctx_provider }
    }
}

const PTR: usize = size_of::<*const c_void>();

// ---- FFI_TableProvider
const _: () = assert!(size_of::<TableProviderMirror>() == size_of::<FFI_TableProvider>());
const _: () = assert!(align_of::<TableProviderMirror>() == align_of::<FFI_TableProvider>());
const _: () = assert!(offset_of!(TableProviderMirror, statistics) == offset_of!(FFI_TableProvider, statistics));
const _: () = assert!(offset_of!(TableProviderMirror, logical_codec) == offset_of!(FFI_TableProvider, logical_codec));
const _: () = assert!(offset_of!(TableProviderMirror, version) == offset_of!(FFI_TableProvider, version));
const _: () = assert!(offset_of!(TableProviderMirror, library_marker_id) == offset_of!(FFI_TableProvider, library_marker_id));
// Five function pointers precede `statistics`; clone and release follow the codec.
const _: () = assert!(offset_of!(TableProviderMirror, statistics) == 5 * PTR);
const _: () = assert!(
    offset_of!(TableProviderMirror, version)
        == offset_of!(TableProviderMirror, logical_codec) + size_of::<FFI_LogicalExtensionCodec>() + 2 * PTR
);

// ---- FFI_LogicalExtensionCodec
const _: () = assert!(size_of::<LogicalCodecMirror>() == size_of::<FFI_LogicalExtensionCodec>());
const _: () = assert!(align_of::<LogicalCodecMirror>() == align_of::<FFI_LogicalExtensionCodec>());
const _: () = assert!(offset_of!(LogicalCodecMirror, clone) == offset_of!(FFI_LogicalExtensionCodec, clone));
const _: () = assert!(offset_of!(LogicalCodecMirror, release) == offset_of!(FFI_LogicalExtensionCodec, release));
const _: () = assert!(offset_of!(LogicalCodecMirror, version) == offset_of!(FFI_LogicalExtensionCodec, version));
const _: () = assert!(offset_of!(LogicalCodecMirror, private_data) == offset_of!(FFI_LogicalExtensionCodec, private_data));
const _: () = assert!(offset_of!(LogicalCodecMirror, library_marker_id) == offset_of!(FFI_LogicalExtensionCodec, library_marker_id));
// task_ctx_provider sits right before clone, after the eight callbacks.
const _: () = assert!(offset_of!(FFI_LogicalExtensionCodec, clone) == 8 * PTR + size_of::<FFI_TaskContextProvider>());

// ---- FFI_SessionRef (by its parts: 14 service pointers, two codecs, five members)
const _: () = assert!(
    size_of::<SessionRefMirror>() == 14 * PTR + size_of::<FFI_LogicalExtensionCodec>() + size_of::<FFI_PhysicalExtensionCodec>() + 5 * PTR
);
const _: () = assert!(align_of::<SessionRefMirror>() == PTR);
