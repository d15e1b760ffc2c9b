//! A plugin's functions and planners as datafusion-ffi 55.2.0 structs, made
//! with datafusion-ffi's standard constructors around the host's own qlink
//! wrappers: function calls cross as Arrow arrays, with no session rebuilt
//! (the standard function structs carry none). The planner route is
//! datafusion-ffi's: the logical plan arrives as protobuf and the physical
//! plan leaves as protobuf, a per-query cost inherent to that protocol (gaps
//! G1/G3); `qlink.Session`'s planners are the by-reference alternative.

use std::sync::Arc;

use datafusion::execution::TaskContextProvider;
use datafusion_ffi::execution::FFI_TaskContextProvider;
use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::proto::physical_extension_codec::FFI_PhysicalExtensionCodec;
use datafusion_ffi::query_planner::FFI_QueryPlanner;
use datafusion_ffi::udaf::FFI_AggregateUDF;
use datafusion_ffi::udf::FFI_ScalarUDF;
use datafusion_ffi::udwf::FFI_WindowUDF;
use datafusion_proto::logical_plan::DefaultLogicalExtensionCodec;
use datafusion_proto::physical_plan::DefaultPhysicalExtensionCodec;
use tokio::runtime::Handle;

use crate::error::Result;
use crate::functions::{QlinkAggregateUdf, QlinkScalarUdf, QlinkWindowUdf};
use crate::planner::{InstalledPlanner, QlinkQueryPlanner};
use crate::plugin::Plugin;

/// Scalar function `name` of `plugin`.
pub fn export_scalar_udf(plugin: &Arc<Plugin>, name: &str) -> Result<FFI_ScalarUDF> {
    Ok(FFI_ScalarUDF::from(Arc::new(QlinkScalarUdf::open(plugin, name)?)))
}

/// Aggregate function `name` of `plugin`.
pub fn export_aggregate_udf(plugin: &Arc<Plugin>, name: &str) -> Result<FFI_AggregateUDF> {
    Ok(FFI_AggregateUDF::from(Arc::new(QlinkAggregateUdf::open(plugin, name)?)))
}

/// Window function `name` of `plugin`.
pub fn export_window_udf(plugin: &Arc<Plugin>, name: &str) -> Result<FFI_WindowUDF> {
    Ok(FFI_WindowUDF::from(Arc::new(QlinkWindowUdf::open(plugin, name)?)))
}

/// `planners` (offered each plan in order, then DataFusion's default
/// physical planner of this library) for a consumer session whose codecs are
/// `logical` and `physical` (from that session, so its tables and functions
/// decode against it).
pub fn export_planner(
    planners: Vec<Arc<InstalledPlanner>>,
    logical: FFI_LogicalExtensionCodec,
    physical: FFI_PhysicalExtensionCodec,
) -> FFI_QueryPlanner {
    FFI_QueryPlanner::new_with_ffi_codecs(Arc::new(QlinkQueryPlanner::new(planners)), logical, physical)
}

/// Same as [`export_planner`] with DataFusion's default codecs bound to
/// `tasks` (a session in this library; for tests and Rust hosts).
pub fn export_planner_for(
    planners: Vec<Arc<InstalledPlanner>>,
    tasks: &Arc<dyn TaskContextProvider>,
    runtime: Option<Handle>,
) -> FFI_QueryPlanner {
    FFI_QueryPlanner::new(
        Arc::new(QlinkQueryPlanner::new(planners)),
        runtime,
        FFI_TaskContextProvider::from(tasks),
        Arc::new(DefaultLogicalExtensionCodec {}),
        Arc::new(DefaultPhysicalExtensionCodec {}),
    )
}
