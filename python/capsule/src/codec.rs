// SPDX-License-Identifier: Apache-2.0
//! qlink's logical and physical extension codecs for datafusion-ffi 55
//! consumers (datafusion-python 55 installs them through
//! `__datafusion_logical_extension_codec__` /
//! `__datafusion_physical_extension_codec__`, composed with other libraries'
//! codecs by `__datafusion_codec_id__`).
//!
//! They encode by reference within the process (`registry`):
//! - logical: a qlink table (one this library exported as a capsule, or a
//!   native qlink table a codec of ours decoded earlier). Decoding gives the
//!   native table back, so a qlink planner plans qlink scans natively. Any
//!   other table (datafusion-python's own, as datafusion-ffi's
//!   ForeignTableProvider) is held by reference until decoded, and scanned
//!   through its provider;
//! - physical: the whole plan a qlink planner made, which crosses back to the
//!   consumer as one leaf (`exec::CapsuleScanExec`) however deep it is, and
//!   runs in this library with the task context it was planned with.
//!
//! Anything else (logical extension nodes, other libraries' plan nodes) is
//! refused with an error, so a consumer that composes codecs offers it to
//! the next one.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::TableProvider;
use datafusion::common::TableReference;
use datafusion::error::DataFusionError;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Extension, LogicalPlan};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_ffi::execution::FFI_TaskContextProvider;
use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::proto::physical_extension_codec::FFI_PhysicalExtensionCodec;
use datafusion_ffi::table_provider::ForeignTableProvider;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use tokio::runtime::Handle;

use crate::exec::{export_planned, CapsuleScanExec};
use crate::registry;
use crate::table::table_of;
use qlink_datafusion::error::Result;
use qlink_datafusion::table::QlinkTableProvider;

/// The id qlink's codecs carry in a consumer that composes codecs
/// (datafusion-python's `__datafusion_codec_id__`): payloads tagged with it
/// are handed back to these codecs only.
pub const CODEC_ID: &str = "qlink.v1";

/// Encodes qlink tables by reference (module documentation).
#[derive(Debug, Default)]
pub struct QlinkLogicalCodec;

fn not_ours(what: &str) -> DataFusionError {
    DataFusionError::NotImplemented(format!("qlink's codec encodes qlink tables and plans only, not {what}"))
}

/// The qlink table `node` is, if it is one.
fn qlink_table(node: &Arc<dyn TableProvider>) -> Option<Arc<dyn TableProvider>> {
    if let Some(foreign) = node.downcast_ref::<ForeignTableProvider>() {
        return table_of(&foreign.0).map(|t| t as Arc<dyn TableProvider>);
    }
    node.is::<QlinkTableProvider>().then(|| Arc::clone(node))
}

impl LogicalExtensionCodec for QlinkLogicalCodec {
    fn try_decode(&self, _buf: &[u8], _inputs: &[LogicalPlan], _ctx: &TaskContext) -> Result<Extension> {
        Err(not_ours("logical extension nodes"))
    }

    fn try_encode(&self, _node: &Extension, _buf: &mut Vec<u8>) -> Result<()> {
        Err(not_ours("logical extension nodes"))
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        _ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
        let table = registry::decode_table(buf)?;
        if table.schema().fields() != schema.fields() {
            return Err(DataFusionError::Plan(format!("qlink table {table_ref}: the plan's schema differs from the registered table's")));
        }
        Ok(table)
    }

    fn try_encode_table_provider(&self, table_ref: &TableReference, node: Arc<dyn TableProvider>, buf: &mut Vec<u8>) -> Result<()> {
        match qlink_table(&node) {
            Some(table) => registry::encode_table(&table, &table_ref.to_string(), buf),
            // Any other table (datafusion-python's in-memory batches, its
            // Parquet) crosses by reference too, so a session with a qlink
            // planner runs every query, not only those over qlink tables.
            None => registry::hold_table(node, &table_ref.to_string(), buf),
        }
        Ok(())
    }
}

/// Encodes the plans qlink planners make by reference (module documentation).
#[derive(Debug, Default)]
pub struct QlinkPhysicalCodec {
    /// Entered while the decoded plan executes (the library's runtime).
    runtime: Option<Handle>,
}

impl PhysicalExtensionCodec for QlinkPhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        _ctx: &TaskContext,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !inputs.is_empty() {
            return Err(DataFusionError::Plan(format!("a qlink plan is a leaf, but {} inputs came with it", inputs.len())));
        }
        let plan = registry::decode_plan(buf)?;
        // Exported with qlink's execute (the planned task context, none
        // converted per call), then seen as the consumer will see it.
        let ffi = export_planned(plan, self.runtime.clone())?;
        Arc::<dyn ExecutionPlan>::try_from(&ffi)
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        if node.downcast_ref::<CapsuleScanExec>().is_none() {
            return Err(not_ours(&format!("plan node {}", node.name())));
        }
        let label = node.name().to_string();
        registry::encode_plan(node, &label, buf);
        Ok(())
    }
}

/// qlink's logical codec for a consumer session whose task context provider
/// is `tasks` (datafusion-python's `__datafusion_task_context_provider__`).
/// The consumer owns the returned struct and releases it.
pub fn export_logical_codec(tasks: FFI_TaskContextProvider, runtime: Option<Handle>) -> FFI_LogicalExtensionCodec {
    FFI_LogicalExtensionCodec::new(Arc::new(QlinkLogicalCodec), runtime, tasks)
}

/// qlink's physical codec (as [`export_logical_codec`]).
pub fn export_physical_codec(tasks: FFI_TaskContextProvider, runtime: Option<Handle>) -> FFI_PhysicalExtensionCodec {
    FFI_PhysicalExtensionCodec::new(Arc::new(QlinkPhysicalCodec { runtime: runtime.clone() }), runtime, tasks)
}
