// SPDX-License-Identifier: Apache-2.0
//! The `#[repr(C)]` mirrors of `include/qlink/*.h` and the libqlink
//! functions hosts call. Every struct, union and constant here is declared
//! through `abi_struct!`, `abi_union!` or `abi_const!` (src/check.rs), which
//! assert at compile time that its size, member offsets or value equal what
//! the C compiler makes of the headers (bindgen's reading of them, generated
//! by build.rs): the declarations are the one list, and a header change that
//! is not mirrored here fails the build.

use std::os::raw::{c_char, c_int, c_void};

pub use arrow::ffi::{FFI_ArrowArray as ArrowArray, FFI_ArrowSchema as ArrowSchema};
pub use arrow::ffi_stream::FFI_ArrowArrayStream as ArrowArrayStream;

// ---------------------------------------------------------------- error.h
abi_const!(QL_OK: c_int = 0);
abi_const!(QL_EINVAL: c_int = 1);
abi_const!(QL_ENOTFOUND: c_int = 2);
abi_const!(QL_ENOTSUP: c_int = 3);
abi_const!(QL_ENOMEM: c_int = 4);
abi_const!(QL_ERESOURCES: c_int = 5);
abi_const!(QL_EIO: c_int = 6);
abi_const!(QL_EDATA: c_int = 7);
abi_const!(QL_EVERSION: c_int = 8);
abi_const!(QL_ECANCELLED: c_int = 9);
abi_const!(QL_ESTATE: c_int = 10);
abi_const!(QL_EINTERNAL: c_int = 11);
abi_const!(QL_EOVERFLOW: c_int = 12);

abi_struct! {
    pub struct ql_error {
        pub struct_size: u32,
        pub status: i32,
        pub sqlstate: [c_char; 6],
        pub reserved_: [c_char; 2],
        pub message: *mut c_char,
        pub release: Option<unsafe extern "C" fn(*mut ql_error)>,
        pub private_data: *mut c_void,
    }
}

// ---------------------------------------------------------------- types.h
// A function-like macro in C: compared through wrapper.h's enum constant.
pub const QL_ABI_VERSION_0_1: u32 = 1;
const _: () = assert!(crate::c::QL_ABI_VERSION_0_1_VALUE as i128 == QL_ABI_VERSION_0_1 as i128);

abi_struct! {
    pub struct ql_options {
        pub count: i64,
        pub keys: *const *const c_char,
        pub values: *const *const c_char,
    }
}

abi_struct! {
    pub struct ql_option_info {
        pub name: *const c_char,
        pub description: *const c_char,
        pub default_value: *const c_char,
        pub required: i32,
        pub reserved_: i32,
    }
}

// Anonymous in C (struct ql_scalar's `value`): checked through ql_scalar.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ql_scalar_bytes {
    pub data: *const c_char,
    pub size: i64,
}

// Anonymous in C (struct ql_scalar's `value`): checked through ql_scalar.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ql_scalar_dec128 {
    pub lo: u64,
    pub hi: i64,
}

// Anonymous in C (struct ql_scalar's `value`): checked through ql_scalar.
#[repr(C)]
#[derive(Clone, Copy)]
pub union ql_scalar_value {
    pub i64_: i64,
    pub u64_: u64,
    pub f64_: f64,
    pub bytes: ql_scalar_bytes,
    pub dec128: ql_scalar_dec128,
}

abi_struct! {
    #[derive(Clone, Copy)]
    pub struct ql_scalar {
        pub format: *const c_char,
        pub is_null: i32,
        pub reserved_: i32,
        pub value: ql_scalar_value,
        pub schema: *const ArrowSchema,
        pub array: *const ArrowArray,
    }
}

abi_const!(QL_FUNCTION_SCALAR: i32 = 1);
abi_const!(QL_FUNCTION_AGGREGATE: i32 = 2);
abi_const!(QL_FUNCTION_WINDOW: i32 = 3);
abi_const!(QL_FUNCTION_TABLE: i32 = 4);

abi_const!(QL_ORIGIN_UNKNOWN: i32 = 0);
abi_const!(QL_ORIGIN_BUILTIN: i32 = 1);
abi_const!(QL_ORIGIN_USER: i32 = 2);

abi_struct! {
    #[derive(Clone, Copy)]
    pub struct ql_function_id {
        pub origin: i32,
        pub kind: i32,
        pub name: *const c_char,
        pub library: *const c_char,
        pub uid: u64,
    }
}

abi_const!(QL_PRECISION_ABSENT: i32 = 0);
abi_const!(QL_PRECISION_INEXACT: i32 = 1);
abi_const!(QL_PRECISION_EXACT: i32 = 2);

abi_struct! {
    pub struct ql_column_statistics {
        pub null_count_precision: i32,
        pub min_max_precision: i32,
        pub null_count: i64,
        pub min: ql_scalar,
        pub max: ql_scalar,
        pub distinct_count_precision: i32,
        pub reserved_: i32,
        pub distinct_count: i64,
    }
}

abi_struct! {
    pub struct ql_statistics {
        pub struct_size: u32,
        pub num_rows_precision: i32,
        pub num_rows: i64,
        pub total_bytes_precision: i32,
        pub reserved_: i32,
        pub total_bytes: i64,
        pub n_columns: i64,
        pub columns: *mut ql_column_statistics,
        pub release: Option<unsafe extern "C" fn(*mut ql_statistics)>,
        pub private_data: *mut c_void,
    }
}

abi_struct! {
    pub struct ql_bytes {
        pub data: *const u8,
        pub size: i64,
        pub release: Option<unsafe extern "C" fn(*mut ql_bytes)>,
        pub private_data: *mut c_void,
    }
}

// ------------------------------------------------------------- services.h
abi_struct! {
    pub struct ql_memory_reservation {
        pub struct_size: u32,
        pub try_grow: Option<unsafe extern "C" fn(*mut ql_memory_reservation, i64, *mut ql_error) -> c_int>,
        pub shrink: Option<unsafe extern "C" fn(*mut ql_memory_reservation, i64)>,
        pub size: Option<unsafe extern "C" fn(*const ql_memory_reservation) -> i64>,
        pub release: Option<unsafe extern "C" fn(*mut ql_memory_reservation)>,
        pub private_data: *mut c_void,
    }
}

abi_struct! {
    pub struct ql_memory_pool {
        pub struct_size: u32,
        pub reservation_new: Option<
            unsafe extern "C" fn(*const ql_memory_pool, *const c_char, i32, *mut ql_memory_reservation, *mut ql_error) -> c_int,
        >,
        pub reserved: Option<unsafe extern "C" fn(*const ql_memory_pool) -> i64>,
        pub limit: Option<unsafe extern "C" fn(*const ql_memory_pool) -> i64>,
        pub private_data: *mut c_void,
    }
}

abi_struct! {
    pub struct ql_object_meta {
        pub path: *const c_char,
        pub size: i64,
        pub last_modified_ns: i64,
    }
}

abi_struct! {
    pub struct ql_object_list {
        pub count: i64,
        pub items: *mut ql_object_meta,
        pub release: Option<unsafe extern "C" fn(*mut ql_object_list)>,
        pub private_data: *mut c_void,
    }
}

abi_struct! {
    pub struct ql_object_store {
        pub struct_size: u32,
        pub head: Option<unsafe extern "C" fn(*const ql_object_store, *const c_char, *mut ql_object_meta, *mut ql_error) -> c_int>,
        pub get_range:
            Option<unsafe extern "C" fn(*const ql_object_store, *const c_char, i64, i64, *mut ql_bytes, *mut ql_error) -> c_int>,
        pub read_into:
            Option<unsafe extern "C" fn(*const ql_object_store, *const c_char, i64, i64, *mut u8, *mut i64, *mut ql_error) -> c_int>,
        pub list: Option<unsafe extern "C" fn(*const ql_object_store, *const c_char, *mut ql_object_list, *mut ql_error) -> c_int>,
        pub release: Option<unsafe extern "C" fn(*mut ql_object_store)>,
        pub private_data: *mut c_void,
    }
}

abi_struct! {
    pub struct ql_object_store_registry {
        pub struct_size: u32,
        pub get_store: Option<
            unsafe extern "C" fn(*const ql_object_store_registry, *const c_char, *mut ql_object_store, *mut ql_error) -> c_int,
        >,
        pub private_data: *mut c_void,
    }
}

abi_struct! {
    pub struct ql_temp_file {
        pub path: *const c_char,
        pub release: Option<unsafe extern "C" fn(*mut ql_temp_file)>,
        pub private_data: *mut c_void,
    }
}

abi_struct! {
    pub struct ql_temp_files {
        pub struct_size: u32,
        pub create: Option<unsafe extern "C" fn(*const ql_temp_files, *const c_char, *mut ql_temp_file, *mut ql_error) -> c_int>,
        pub private_data: *mut c_void,
    }
}

pub type ql_job_fn = unsafe extern "C" fn(*mut c_void, *mut ql_error) -> c_int;

abi_struct! {
    pub struct ql_job {
        pub wait: Option<unsafe extern "C" fn(*mut ql_job, *mut ql_error) -> c_int>,
        pub release: Option<unsafe extern "C" fn(*mut ql_job)>,
        pub private_data: *mut c_void,
    }
}

abi_struct! {
    pub struct ql_executor {
        pub struct_size: u32,
        pub spawn: Option<
            unsafe extern "C" fn(*const ql_executor, Option<ql_job_fn>, *mut c_void, *mut ql_job, *mut ql_error) -> c_int,
        >,
        pub parallelism: Option<unsafe extern "C" fn(*const ql_executor) -> i32>,
        pub private_data: *mut c_void,
    }
}

abi_struct! {
    pub struct ql_runtime_env {
        pub struct_size: u32,
        pub memory_pool: *const ql_memory_pool,
        pub object_stores: *const ql_object_store_registry,
        pub temp_files: *const ql_temp_files,
        pub private_data: *mut c_void,
    }
}

abi_struct! {
    pub struct ql_function_info {
        pub id: ql_function_id,
        pub volatility: i32,
        pub reserved_: i32,
    }
}

abi_struct! {
    pub struct ql_session {
        pub struct_size: u32,
        pub id: Option<unsafe extern "C" fn(*const ql_session) -> *const c_char>,
        pub generation: Option<unsafe extern "C" fn(*const ql_session) -> u64>,
        pub config_get: Option<
            unsafe extern "C" fn(*const ql_session, *const c_char, *mut c_char, usize, *mut usize, *mut ql_error) -> c_int,
        >,
        pub function_lookup:
            Option<unsafe extern "C" fn(*const ql_session, *const c_char, i32, *mut ql_function_info, *mut ql_error) -> c_int>,
        pub table_lookup:
            Option<unsafe extern "C" fn(*const ql_session, *const c_char, *mut ql_table_ref, *mut ql_error) -> c_int>,
        pub runtime_env: Option<unsafe extern "C" fn(*const ql_session) -> *const ql_runtime_env>,
        pub private_data: *mut c_void,
    }
}

abi_struct! {
    pub struct ql_task_context {
        pub struct_size: u32,
        pub reserved_: i32,
        pub partition: i64,
        pub batch_size: i64,
        pub session: *const ql_session,
        pub runtime_env: *const ql_runtime_env,
        pub executor: *const ql_executor,
        pub is_cancelled: Option<unsafe extern "C" fn(*const ql_task_context) -> c_int>,
        pub private_data: *mut c_void,
    }
}

// ----------------------------------------------------------------- plan.h
pub type ql_expr_id = i32;
pub type ql_node_id = i32;

abi_const!(QL_EXPR_COLUMN: i32 = 1);
abi_const!(QL_EXPR_LITERAL: i32 = 2);
abi_const!(QL_EXPR_BINARY: i32 = 3);
abi_const!(QL_EXPR_NOT: i32 = 4);
abi_const!(QL_EXPR_NEGATIVE: i32 = 5);
abi_const!(QL_EXPR_IS_NULL: i32 = 6);
abi_const!(QL_EXPR_IS_NOT_NULL: i32 = 7);
abi_const!(QL_EXPR_CAST: i32 = 8);
abi_const!(QL_EXPR_TRY_CAST: i32 = 9);
abi_const!(QL_EXPR_CASE: i32 = 10);
abi_const!(QL_EXPR_ALIAS: i32 = 11);
abi_const!(QL_EXPR_SCALAR_FUNCTION: i32 = 12);
abi_const!(QL_EXPR_AGGREGATE_FUNCTION: i32 = 13);
abi_const!(QL_EXPR_WINDOW_FUNCTION: i32 = 14);
abi_const!(QL_EXPR_IN_LIST: i32 = 15);
abi_const!(QL_EXPR_BETWEEN: i32 = 16);
abi_const!(QL_EXPR_LIKE: i32 = 17);
abi_const!(QL_EXPR_SORT: i32 = 18);
abi_const!(QL_EXPR_OTHER: i32 = 19);

abi_const!(QL_OP_EQ: i32 = 1);
abi_const!(QL_OP_NE: i32 = 2);
abi_const!(QL_OP_LT: i32 = 3);
abi_const!(QL_OP_LE: i32 = 4);
abi_const!(QL_OP_GT: i32 = 5);
abi_const!(QL_OP_GE: i32 = 6);
abi_const!(QL_OP_AND: i32 = 7);
abi_const!(QL_OP_OR: i32 = 8);
abi_const!(QL_OP_PLUS: i32 = 9);
abi_const!(QL_OP_MINUS: i32 = 10);
abi_const!(QL_OP_MULTIPLY: i32 = 11);
abi_const!(QL_OP_DIVIDE: i32 = 12);
abi_const!(QL_OP_MODULO: i32 = 13);
abi_const!(QL_OP_IS_DISTINCT_FROM: i32 = 14);
abi_const!(QL_OP_IS_NOT_DISTINCT_FROM: i32 = 15);
abi_const!(QL_OP_STRING_CONCAT: i32 = 16);
abi_const!(QL_OP_OTHER: i32 = 17);

abi_const!(QL_EXPR_NEGATED: i32 = 1);
abi_const!(QL_EXPR_CASE_INSENSITIVE: i32 = 2);
abi_const!(QL_EXPR_DISTINCT: i32 = 4);
abi_const!(QL_CASE_HAS_OPERAND: i32 = 8);
abi_const!(QL_CASE_HAS_ELSE: i32 = 16);
abi_const!(QL_SORT_DESC: i32 = 32);
abi_const!(QL_SORT_NULLS_FIRST: i32 = 64);

abi_struct! {
    #[derive(Clone, Copy)]
    pub struct ql_expr {
        pub kind: i32,
        pub op: i32,
        pub flags: i32,
        pub n_args: i32,
        pub args: *const ql_expr_id,
        pub name: *const c_char,
        pub qualifier: *const c_char,
        pub column_index: i32,
        pub n_func_args: i32,
        pub n_partition_by: i32,
        pub filter: ql_expr_id,
        pub function: ql_function_id,
        pub literal: ql_scalar,
        pub type_format: *const c_char,
    }
}

abi_const!(QL_NODE_TABLE_SCAN: i32 = 1);
abi_const!(QL_NODE_PROJECTION: i32 = 2);
abi_const!(QL_NODE_FILTER: i32 = 3);
abi_const!(QL_NODE_AGGREGATE: i32 = 4);
abi_const!(QL_NODE_JOIN: i32 = 5);
abi_const!(QL_NODE_SORT: i32 = 6);
abi_const!(QL_NODE_LIMIT: i32 = 7);
abi_const!(QL_NODE_UNION: i32 = 8);
abi_const!(QL_NODE_SUBQUERY_ALIAS: i32 = 9);
abi_const!(QL_NODE_VALUES: i32 = 10);
abi_const!(QL_NODE_EMPTY_RELATION: i32 = 11);
abi_const!(QL_NODE_WINDOW: i32 = 12);
abi_const!(QL_NODE_DISTINCT: i32 = 13);
abi_const!(QL_NODE_OTHER: i32 = 14);

abi_const!(QL_JOIN_INNER: i32 = 1);
abi_const!(QL_JOIN_LEFT: i32 = 2);
abi_const!(QL_JOIN_RIGHT: i32 = 3);
abi_const!(QL_JOIN_FULL: i32 = 4);
abi_const!(QL_JOIN_LEFT_SEMI: i32 = 5);
abi_const!(QL_JOIN_RIGHT_SEMI: i32 = 6);
abi_const!(QL_JOIN_LEFT_ANTI: i32 = 7);
abi_const!(QL_JOIN_RIGHT_ANTI: i32 = 8);
abi_const!(QL_JOIN_LEFT_MARK: i32 = 9);
abi_const!(QL_JOIN_OTHER: i32 = 10);

abi_const!(QL_NODE_UNION_DISTINCT: i32 = 1);
abi_const!(QL_NODE_PRODUCE_ONE_ROW: i32 = 2);
abi_const!(QL_NODE_NULL_EQUALS_NULL: i32 = 4);
abi_const!(QL_NODE_UNEXPANDED: i32 = 8);

abi_struct! {
    pub struct ql_table_ref {
        pub name: *const c_char,
        pub schema: *const ArrowSchema,
        pub host_handle: *const c_void,
        pub provider: *const ql_table_provider,
    }
}

abi_struct! {
    pub struct ql_plan_node {
        pub kind: i32,
        pub flags: i32,
        pub n_inputs: i32,
        pub join_type: i32,
        pub inputs: *const ql_node_id,
        pub schema: *const ArrowSchema,
        pub field_qualifiers: *const *const c_char,
        pub n_exprs: i32,
        pub n_exprs2: i32,
        pub exprs: *const ql_expr_id,
        pub exprs2: *const ql_expr_id,
        pub condition: ql_expr_id,
        pub n_projection: i32,
        pub projection: *const i32,
        pub skip: i64,
        pub fetch: i64,
        pub n_rows: i64,
        pub name: *const c_char,
        pub table: *const ql_table_ref,
    }
}

abi_struct! {
    pub struct ql_plan_view {
        pub struct_size: u32,
        pub n_nodes: i32,
        pub n_exprs: i32,
        pub root: ql_node_id,
        pub nodes: *const ql_plan_node,
        pub exprs: *const ql_expr,
        pub expand: Option<unsafe extern "C" fn(*const ql_plan_view, ql_node_id, *mut ql_error) -> c_int>,
        pub release: Option<unsafe extern "C" fn(*mut ql_plan_view)>,
        pub private_data: *mut c_void,
    }
}

abi_struct! {
    pub struct ql_expr_list {
        pub view: *const ql_plan_view,
        pub n_exprs: i32,
        pub reserved_: i32,
        pub exprs: *const ql_expr_id,
    }
}

// ---------------------------------------------------------------- table.h
abi_const!(QL_BOUNDED: i32 = 0);
abi_const!(QL_UNBOUNDED: i32 = 1);

abi_struct! {
    #[derive(Clone, Copy)]
    pub struct ql_sort_key {
        pub column: i32,
        pub flags: i32,
    }
}

abi_struct! {
    pub struct ql_plan_properties {
        pub struct_size: u32,
        pub boundedness: i32,
        pub partition_count: i64,
        pub n_ordering: i64,
        pub ordering: *const ql_sort_key,
    }
}

abi_const!(QL_METRIC_COUNT: i32 = 1);
abi_const!(QL_METRIC_TIME_NS: i32 = 2);
abi_const!(QL_METRIC_BYTES: i32 = 3);
abi_const!(QL_METRIC_GAUGE: i32 = 4);

abi_struct! {
    pub struct ql_metric {
        pub name: *const c_char,
        pub kind: i32,
        pub reserved_: i32,
        pub partition: i64,
        pub value: i64,
    }
}

abi_struct! {
    pub struct ql_metrics {
        pub count: i64,
        pub items: *mut ql_metric,
        pub release: Option<unsafe extern "C" fn(*mut ql_metrics)>,
        pub private_data: *mut c_void,
    }
}

abi_struct! {
    pub struct ql_execution_plan {
        pub struct_size: u32,
        pub name: Option<unsafe extern "C" fn(*const ql_execution_plan) -> *const c_char>,
        pub display: Option<unsafe extern "C" fn(*const ql_execution_plan) -> *const c_char>,
        pub get_schema: Option<unsafe extern "C" fn(*const ql_execution_plan, *mut ArrowSchema, *mut ql_error) -> c_int>,
        pub get_properties:
            Option<unsafe extern "C" fn(*const ql_execution_plan, *mut ql_plan_properties, *mut ql_error) -> c_int>,
        pub child_count: Option<unsafe extern "C" fn(*const ql_execution_plan) -> i64>,
        pub child: Option<unsafe extern "C" fn(*const ql_execution_plan, i64) -> *const ql_execution_plan>,
        pub with_new_children: Option<
            unsafe extern "C" fn(*const ql_execution_plan, *mut ql_execution_plan, i64, *mut ql_execution_plan, *mut ql_error) -> c_int,
        >,
        pub execute: Option<
            unsafe extern "C" fn(*const ql_execution_plan, i64, *const ql_task_context, *mut ArrowArrayStream, *mut ql_error) -> c_int,
        >,
        pub get_statistics:
            Option<unsafe extern "C" fn(*const ql_execution_plan, i64, *mut ql_statistics, *mut ql_error) -> c_int>,
        pub get_metrics: Option<unsafe extern "C" fn(*const ql_execution_plan, *mut ql_metrics, *mut ql_error) -> c_int>,
        pub release: Option<unsafe extern "C" fn(*mut ql_execution_plan)>,
        pub private_data: *mut c_void,
    }
}

abi_const!(QL_TABLE_BASE: i32 = 1);
abi_const!(QL_TABLE_VIEW: i32 = 2);
abi_const!(QL_TABLE_TEMPORARY: i32 = 3);

abi_const!(QL_PUSHDOWN_UNSUPPORTED: i32 = 0);
abi_const!(QL_PUSHDOWN_INEXACT: i32 = 1);
abi_const!(QL_PUSHDOWN_EXACT: i32 = 2);

abi_struct! {
    pub struct ql_scan_args {
        pub struct_size: u32,
        pub n_projection: i32,
        pub projection: *const i32,
        pub filters: ql_expr_list,
        pub limit: i64,
    }
}

abi_struct! {
    pub struct ql_table_provider {
        pub struct_size: u32,
        pub table_type: i32,
        pub reserved_: i32,
        pub get_schema: Option<unsafe extern "C" fn(*const ql_table_provider, *mut ArrowSchema, *mut ql_error) -> c_int>,
        pub get_statistics: Option<unsafe extern "C" fn(*const ql_table_provider, *mut ql_statistics, *mut ql_error) -> c_int>,
        pub supports_filters:
            Option<unsafe extern "C" fn(*const ql_table_provider, *const ql_expr_list, *mut i32, *mut ql_error) -> c_int>,
        pub scan: Option<
            unsafe extern "C" fn(
                *const ql_table_provider,
                *const ql_session,
                *const ql_scan_args,
                *mut ql_execution_plan,
                *mut ql_error,
            ) -> c_int,
        >,
        pub release: Option<unsafe extern "C" fn(*mut ql_table_provider)>,
        pub private_data: *mut c_void,
    }
}

abi_struct! {
    pub struct ql_schema_provider {
        pub struct_size: u32,
        pub reserved_: i32,
        pub table_count: Option<unsafe extern "C" fn(*const ql_schema_provider) -> i64>,
        pub table_name: Option<unsafe extern "C" fn(*const ql_schema_provider, i64) -> *const c_char>,
        pub table:
            Option<unsafe extern "C" fn(*const ql_schema_provider, *const c_char, *mut ql_table_provider, *mut ql_error) -> c_int>,
        pub release: Option<unsafe extern "C" fn(*mut ql_schema_provider)>,
        pub private_data: *mut c_void,
    }
}

// ------------------------------------------------------------- function.h
abi_const!(QL_IMMUTABLE: i32 = 1);
abi_const!(QL_STABLE: i32 = 2);
abi_const!(QL_VOLATILE: i32 = 3);

abi_struct! {
    pub struct ql_signature {
        pub n_args: i32,
        pub volatility: i32,
        pub arg_formats: *const *const c_char,
    }
}

abi_struct! {
    pub struct ql_scalar_function {
        pub struct_size: u32,
        pub reserved_: i32,
        pub id: ql_function_id,
        pub signature: ql_signature,
        pub return_type:
            Option<unsafe extern "C" fn(*const ql_scalar_function, *const ArrowSchema, *mut ArrowSchema, *mut ql_error) -> c_int>,
        pub invoke: Option<
            unsafe extern "C" fn(
                *const ql_scalar_function,
                *const ArrowSchema,
                *const ArrowArray,
                i64,
                *mut ArrowArray,
                *mut ql_error,
            ) -> c_int,
        >,
        pub release: Option<unsafe extern "C" fn(*mut ql_scalar_function)>,
        pub private_data: *mut c_void,
    }
}

abi_struct! {
    pub struct ql_accumulator {
        pub struct_size: u32,
        pub update: Option<unsafe extern "C" fn(*mut ql_accumulator, *const ArrowArray, *mut ql_error) -> c_int>,
        pub merge: Option<unsafe extern "C" fn(*mut ql_accumulator, *const ArrowArray, *mut ql_error) -> c_int>,
        pub state: Option<unsafe extern "C" fn(*mut ql_accumulator, *mut ArrowArray, *mut ql_error) -> c_int>,
        pub evaluate: Option<unsafe extern "C" fn(*mut ql_accumulator, *mut ArrowArray, *mut ql_error) -> c_int>,
        pub size: Option<unsafe extern "C" fn(*const ql_accumulator) -> i64>,
        pub release: Option<unsafe extern "C" fn(*mut ql_accumulator)>,
        pub private_data: *mut c_void,
    }
}

abi_struct! {
    pub struct ql_groups_accumulator {
        pub struct_size: u32,
        pub update:
            Option<unsafe extern "C" fn(*mut ql_groups_accumulator, *const ArrowArray, *const u32, i64, *mut ql_error) -> c_int>,
        pub merge:
            Option<unsafe extern "C" fn(*mut ql_groups_accumulator, *const ArrowArray, *const u32, i64, *mut ql_error) -> c_int>,
        pub state: Option<unsafe extern "C" fn(*mut ql_groups_accumulator, *mut ArrowArray, *mut ql_error) -> c_int>,
        pub evaluate: Option<unsafe extern "C" fn(*mut ql_groups_accumulator, *mut ArrowArray, *mut ql_error) -> c_int>,
        pub size: Option<unsafe extern "C" fn(*const ql_groups_accumulator) -> i64>,
        pub release: Option<unsafe extern "C" fn(*mut ql_groups_accumulator)>,
        pub private_data: *mut c_void,
    }
}

abi_struct! {
    pub struct ql_aggregate_function {
        pub struct_size: u32,
        pub reserved_: i32,
        pub id: ql_function_id,
        pub signature: ql_signature,
        pub return_type: Option<
            unsafe extern "C" fn(*const ql_aggregate_function, *const ArrowSchema, *mut ArrowSchema, *mut ql_error) -> c_int,
        >,
        pub state_schema: Option<
            unsafe extern "C" fn(*const ql_aggregate_function, *const ArrowSchema, *mut ArrowSchema, *mut ql_error) -> c_int,
        >,
        pub accumulator_new: Option<
            unsafe extern "C" fn(*const ql_aggregate_function, *const ArrowSchema, *mut ql_accumulator, *mut ql_error) -> c_int,
        >,
        pub groups_accumulator_new: Option<
            unsafe extern "C" fn(*const ql_aggregate_function, *const ArrowSchema, *mut ql_groups_accumulator, *mut ql_error) -> c_int,
        >,
        pub release: Option<unsafe extern "C" fn(*mut ql_aggregate_function)>,
        pub private_data: *mut c_void,
    }
}

abi_struct! {
    pub struct ql_partition_evaluator {
        pub struct_size: u32,
        pub evaluate_all:
            Option<unsafe extern "C" fn(*mut ql_partition_evaluator, *const ArrowArray, i64, *mut ArrowArray, *mut ql_error) -> c_int>,
        pub release: Option<unsafe extern "C" fn(*mut ql_partition_evaluator)>,
        pub private_data: *mut c_void,
    }
}

abi_struct! {
    pub struct ql_window_function {
        pub struct_size: u32,
        pub reserved_: i32,
        pub id: ql_function_id,
        pub signature: ql_signature,
        pub return_type:
            Option<unsafe extern "C" fn(*const ql_window_function, *const ArrowSchema, *mut ArrowSchema, *mut ql_error) -> c_int>,
        pub evaluator_new: Option<
            unsafe extern "C" fn(*const ql_window_function, *const ArrowSchema, *mut ql_partition_evaluator, *mut ql_error) -> c_int,
        >,
        pub release: Option<unsafe extern "C" fn(*mut ql_window_function)>,
        pub private_data: *mut c_void,
    }
}

abi_struct! {
    pub struct ql_table_function {
        pub struct_size: u32,
        pub reserved_: i32,
        pub id: ql_function_id,
        pub call: Option<
            unsafe extern "C" fn(
                *const ql_table_function,
                *const ql_session,
                *const ql_expr_list,
                *mut ql_table_provider,
                *mut ql_error,
            ) -> c_int,
        >,
        pub release: Option<unsafe extern "C" fn(*mut ql_table_function)>,
        pub private_data: *mut c_void,
    }
}

// -------------------------------------------------------------- planner.h
abi_const!(QL_PLANNER_DECLINE: i32 = 0);
abi_const!(QL_PLANNER_REWRITE: i32 = 1);
abi_const!(QL_PLANNER_PHYSICAL: i32 = 2);

abi_struct! {
    pub struct ql_planner_context {
        pub struct_size: u32,
        pub reserved_: i32,
        pub session: *const ql_session,
        pub plan: *const ql_plan_view,
        pub plan_physical: Option<
            unsafe extern "C" fn(*const ql_planner_context, ql_node_id, *mut ql_execution_plan, *mut ql_error) -> c_int,
        >,
        pub private_data: *mut c_void,
    }
}

abi_struct! {
    pub struct ql_planner_result {
        pub struct_size: u32,
        pub action: i32,
        pub node: ql_node_id,
        pub reserved_: i32,
        pub rewrite: ql_plan_view,
        pub physical: ql_execution_plan,
    }
}

abi_struct! {
    pub struct ql_planner {
        pub struct_size: u32,
        pub interest: u32,
        pub flags: u32,
        pub reserved_: i32,
        pub plan: Option<
            unsafe extern "C" fn(*const ql_planner, *const ql_planner_context, *mut ql_planner_result, *mut ql_error) -> c_int,
        >,
        pub release: Option<unsafe extern "C" fn(*mut ql_planner)>,
        pub private_data: *mut c_void,
    }
}

abi_const!(QL_PLANNER_LAZY_VIEW: u32 = 1);
abi_const!(QL_PLANNER_INPUTS_UNOPTIMIZED: u32 = 2);

// --------------------------------------------------------------- plugin.h
abi_const!(QL_PLUGIN_MAGIC: u32 = 0x4B4E_4C51);

abi_const!(QL_ITEM_TABLE_PROVIDER: i32 = 1);
abi_const!(QL_ITEM_SCHEMA_PROVIDER: i32 = 2);
abi_const!(QL_ITEM_SCALAR_FUNCTION: i32 = 3);
abi_const!(QL_ITEM_AGGREGATE_FUNCTION: i32 = 4);
abi_const!(QL_ITEM_WINDOW_FUNCTION: i32 = 5);
abi_const!(QL_ITEM_TABLE_FUNCTION: i32 = 6);
abi_const!(QL_ITEM_PLANNER: i32 = 7);
abi_const!(QL_ITEM_OBJECT_STORE: i32 = 8);

abi_struct! {
    pub struct ql_item_info {
        pub kind: i32,
        pub n_options: i32,
        pub name: *const c_char,
        pub description: *const c_char,
        pub options: *const ql_option_info,
    }
}

abi_struct! {
    pub struct ql_plugin {
        pub struct_size: u32,
        pub magic: u32,
        pub abi_version: u32,
        pub n_items: i32,
        pub name: *const c_char,
        pub version: *const c_char,
        pub description: *const c_char,
        pub items: *const ql_item_info,
        pub executor_enter: Option<unsafe extern "C" fn(*const ql_plugin) -> *mut c_void>,
        pub executor_leave: Option<unsafe extern "C" fn(*const ql_plugin, *mut c_void)>,
        pub table_provider_open: Option<
            unsafe extern "C" fn(
                *const ql_plugin,
                *const c_char,
                *const ql_options,
                *const ql_session,
                *mut ql_table_provider,
                *mut ql_error,
            ) -> c_int,
        >,
        pub schema_provider_open: Option<
            unsafe extern "C" fn(
                *const ql_plugin,
                *const c_char,
                *const ql_options,
                *const ql_session,
                *mut ql_schema_provider,
                *mut ql_error,
            ) -> c_int,
        >,
        pub scalar_function_open:
            Option<unsafe extern "C" fn(*const ql_plugin, *const c_char, *mut ql_scalar_function, *mut ql_error) -> c_int>,
        pub aggregate_function_open:
            Option<unsafe extern "C" fn(*const ql_plugin, *const c_char, *mut ql_aggregate_function, *mut ql_error) -> c_int>,
        pub window_function_open:
            Option<unsafe extern "C" fn(*const ql_plugin, *const c_char, *mut ql_window_function, *mut ql_error) -> c_int>,
        pub table_function_open:
            Option<unsafe extern "C" fn(*const ql_plugin, *const c_char, *mut ql_table_function, *mut ql_error) -> c_int>,
        pub planner_open: Option<
            unsafe extern "C" fn(*const ql_plugin, *const c_char, *const ql_options, *mut ql_planner, *mut ql_error) -> c_int,
        >,
        pub object_store_open: Option<
            unsafe extern "C" fn(
                *const ql_plugin,
                *const c_char,
                *const c_char,
                *const ql_options,
                *mut ql_object_store,
                *mut ql_error,
            ) -> c_int,
        >,
        pub release: Option<unsafe extern "C" fn(*mut ql_plugin)>,
        pub private_data: *mut c_void,
    }
}

// ------------------------------------------------------ libqlink (lib/*.h)
abi_struct! {
    pub struct ql_loaded_plugin {
        pub plugin: ql_plugin,
        pub abi_version: u32,
        pub path: *mut c_char,
        pub dl_handle: *mut c_void,
    }
}

abi_struct! {
    pub struct ql_table_spec {
        pub plugin: *mut c_char,
        pub provider: *mut c_char,
        pub options: ql_options,
    }
}

abi_struct! {
    pub struct ql_check_options {
        pub n_specs: i32,
        pub specs: *const *const c_char,
        pub threads: i32,
        pub verbose: i32,
        pub out: *mut c_void, // FILE *
        pub isolate: i32,
    }
}

#[repr(C)]
pub struct ql_ir_builder {
    _opaque: [u8; 0],
}

extern "C" {
    // status.h
    pub fn ql_error_set(error: *mut ql_error, status: c_int, fmt: *const c_char, ...) -> c_int;
    pub fn ql_error_release(error: *mut ql_error);
    pub fn ql_status_name(status: c_int) -> *const c_char;
    pub fn ql_status_to_errno(status: c_int) -> c_int;
    pub fn ql_status_from_errno(code: c_int) -> c_int;

    // loader.h
    pub fn ql_plugin_load(path: *const c_char, out: *mut *mut ql_loaded_plugin, error: *mut ql_error) -> c_int;
    pub fn ql_plugin_unload(plugin: *mut ql_loaded_plugin);
    pub fn ql_plugin_find_item(plugin: *const ql_plugin, kind: i32, name: *const c_char) -> *const ql_item_info;
    pub fn ql_table_spec_parse(spec: *const c_char, out: *mut ql_table_spec, error: *mut ql_error) -> c_int;
    pub fn ql_table_spec_free(spec: *mut ql_table_spec);

    // check.h
    pub fn ql_check_plugin(path: *const c_char, options: *const ql_check_options) -> c_int;

    // ir.h
    pub fn ql_ir_builder_new(out: *mut *mut ql_ir_builder, error: *mut ql_error) -> c_int;
    pub fn ql_ir_builder_free(builder: *mut ql_ir_builder);
    pub fn ql_ir_builder_status(builder: *const ql_ir_builder, error: *mut ql_error) -> c_int;
    pub fn ql_ir_expr(b: *mut ql_ir_builder, e: *const ql_expr) -> ql_expr_id;
    pub fn ql_ir_node(b: *mut ql_ir_builder, n: *const ql_plan_node) -> ql_node_id;
    pub fn ql_ir_node_expand(b: *mut ql_ir_builder, id: ql_node_id, n: *const ql_plan_node) -> c_int;
    pub fn ql_ir_builder_peek(b: *const ql_ir_builder, root: ql_node_id, out: *mut ql_plan_view, error: *mut ql_error) -> c_int;
    pub fn ql_plan_expand(view: *const ql_plan_view, node: ql_node_id, error: *mut ql_error) -> c_int;
    pub fn ql_plan_expand_all(view: *const ql_plan_view, error: *mut ql_error) -> c_int;
    pub fn ql_ir_string(b: *mut ql_ir_builder, s: *const c_char, length: usize) -> *const c_char;
    pub fn ql_ir_string_array(b: *mut ql_ir_builder, n: i64) -> *mut *const c_char;
    pub fn ql_ir_struct_schema(
        b: *mut ql_ir_builder,
        n_fields: i64,
        formats: *const *const c_char,
        names: *const *const c_char,
        name_lengths: *const usize,
        flags: *const i64,
    ) -> *const ArrowSchema;
    pub fn ql_ir_builder_finish(b: *mut ql_ir_builder, root: ql_node_id, out: *mut ql_plan_view, error: *mut ql_error) -> c_int;
    pub fn ql_ir_validate(view: *const ql_plan_view, error: *mut ql_error) -> c_int;
    pub fn ql_ir_expr_to_string(view: *const ql_plan_view, expr: ql_expr_id, out: *mut *mut c_char, error: *mut ql_error) -> c_int;
    pub fn ql_ir_plan_to_string(view: *const ql_plan_view, node: ql_node_id, out: *mut *mut c_char, error: *mut ql_error) -> c_int;

}

impl ql_error {
    pub fn new() -> Self {
        ql_error {
            struct_size: std::mem::size_of::<ql_error>() as u32,
            status: 0,
            sqlstate: [0; 6],
            reserved_: [0; 2],
            message: std::ptr::null_mut(),
            release: None,
            private_data: std::ptr::null_mut(),
        }
    }
}

impl Default for ql_error {
    fn default() -> Self {
        Self::new()
    }
}

/// Zero-initialised value of an ABI struct (all its members are integers,
/// pointers, optional function pointers or unions of those, for which zero is
/// the "unset" value the ABI documents).
pub fn zeroed<T>() -> T {
    // SAFETY: only used for the #[repr(C)] structs above, where all-zero is valid.
    unsafe { std::mem::zeroed() }
}

impl ql_expr {
    /// An expression with every member "unused" (zero / NULL / -1).
    pub fn empty(kind: i32) -> Self {
        let mut e: ql_expr = zeroed();
        e.kind = kind;
        e.column_index = -1;
        e.filter = -1;
        e
    }
}

impl ql_plan_node {
    pub fn empty(kind: i32) -> Self {
        let mut n: ql_plan_node = zeroed();
        n.kind = kind;
        n.condition = -1;
        n.n_projection = -1;
        n.fetch = -1;
        n
    }
}
