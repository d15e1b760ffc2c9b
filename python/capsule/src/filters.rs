// SPDX-License-Identifier: Apache-2.0
//! Decoding the filters a datafusion-ffi consumer sends to `scan` and
//! `supports_filters_pushdown` (a protobuf `LogicalExprList`).
//!
//! Function names resolve first against a task context this library builds
//! once per exported provider, holding DataFusion's built-in functions *of
//! this library* (gap G2: a built-in `abs` in a filter becomes our own `abs`,
//! not a wrapper calling back into the consumer). datafusion-proto asks the
//! codec for any name that context lacks; [`OnDemandCodec`] answers by
//! fetching the consumer's task context through the codec's task-context
//! provider then, and only then: a scan whose filters use built-ins never
//! enumerates the consumer's functions.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use datafusion::catalog::TableProvider;
use datafusion::common::TableReference;
use datafusion::error::DataFusionError;
use datafusion::execution::registry::FunctionRegistry;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{AggregateUDF, Extension, LogicalPlan, ScalarUDF, WindowUDF};
use datafusion_ffi::execution::FFI_TaskContextProvider;
use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_proto::logical_plan::from_proto::parse_exprs;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::protobuf::LogicalExprList;
use prost::Message;

use crate::mirror::LogicalCodecMirror;
use qlink_datafusion::error::Result;

/// How many times a consumer's task context was fetched to resolve a
/// function (process-wide): tests prove the per-scan path does not.
pub static CONSUMER_LOOKUPS: AtomicU64 = AtomicU64::new(0);

/// The consumer's logical codec, plus on-demand lookups of the consumer's
/// functions for names this library does not know.
#[derive(Debug)]
pub struct OnDemandCodec {
    consumer: Arc<dyn LogicalExtensionCodec>,
    tasks: FFI_TaskContextProvider,
}

impl OnDemandCodec {
    /// Wrap a codec handed over by the consumer (its clone is kept).
    pub fn new(codec: &FFI_LogicalExtensionCodec) -> OnDemandCodec {
        OnDemandCodec { consumer: codec.into(), tasks: LogicalCodecMirror::task_ctx_provider_of(codec).clone() }
    }

    fn consumer_context(&self, what: &str) -> Result<Arc<TaskContext>> {
        CONSUMER_LOOKUPS.fetch_add(1, Ordering::Relaxed);
        <Arc<TaskContext>>::try_from(&self.tasks)
            .map_err(|e| DataFusionError::Plan(format!("looking up {what} in the calling session: {e}")))
    }
}

impl LogicalExtensionCodec for OnDemandCodec {
    fn try_decode(&self, buf: &[u8], inputs: &[LogicalPlan], ctx: &TaskContext) -> Result<Extension> {
        self.consumer.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> Result<()> {
        self.consumer.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
        self.consumer.try_decode_table_provider(buf, table_ref, schema, ctx)
    }

    fn try_encode_table_provider(&self, table_ref: &TableReference, node: Arc<dyn TableProvider>, buf: &mut Vec<u8>) -> Result<()> {
        self.consumer.try_encode_table_provider(table_ref, node, buf)
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> Result<Arc<ScalarUDF>> {
        if !buf.is_empty() {
            return self.consumer.try_decode_udf(name, buf);
        }
        self.consumer_context(&format!("scalar function {name}"))?.udf(name)
    }

    fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> Result<Arc<AggregateUDF>> {
        if !buf.is_empty() {
            return self.consumer.try_decode_udaf(name, buf);
        }
        self.consumer_context(&format!("aggregate function {name}"))?.udaf(name)
    }

    fn try_decode_udwf(&self, name: &str, buf: &[u8]) -> Result<Arc<WindowUDF>> {
        if !buf.is_empty() {
            return self.consumer.try_decode_udwf(name, buf);
        }
        self.consumer_context(&format!("window function {name}"))?.udwf(name)
    }
}

/// Decode serialized filters against `local` (built-ins) and `codec`.
pub fn decode_filters(bytes: &[u8], local: &TaskContext, codec: &dyn LogicalExtensionCodec) -> Result<Vec<datafusion::logical_expr::Expr>> {
    if bytes.is_empty() {
        return Ok(vec![]);
    }
    let list = LogicalExprList::decode(bytes).map_err(|e| DataFusionError::Plan(format!("decoding the scan's filters: {e}")))?;
    parse_exprs(list.expr.iter(), local, codec).map_err(|e| DataFusionError::Plan(format!("decoding the scan's filters: {e}")))
}
