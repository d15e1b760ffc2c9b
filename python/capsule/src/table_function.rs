// SPDX-License-Identifier: Apache-2.0
//! A plugin's table function as datafusion-ffi 55.2.0's `FFI_TableFunction`.
//! Each call's table is exported as this library's capsule table (`table`),
//! so its scans take qlink's own path and qlink's codec can carry it by
//! reference, as a registered table's.

use std::any::Any;
use std::sync::Arc;

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::error::DataFusionError;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::table_provider::ForeignTableProvider;
use datafusion_ffi::udtf::FFI_TableFunction;
use tokio::runtime::Handle;

use crate::table::{export_table, ExportOptions};
use qlink_datafusion::error::Result;
use qlink_datafusion::functions::QlinkTableFunction;
use qlink_datafusion::table::QlinkTableProvider;

#[derive(Debug)]
struct CapsuleTableFunction {
    inner: QlinkTableFunction,
    codec: FFI_LogicalExtensionCodec,
    runtime: Option<Handle>,
    runtime_env: Option<Arc<RuntimeEnv>>,
}

impl TableFunctionImpl for CapsuleTableFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let table: Arc<dyn Any + Send + Sync> = self.inner.call_with_args(args)?;
        let table = table
            .downcast::<QlinkTableProvider>()
            .map_err(|_| DataFusionError::Internal("a qlink table function returned another kind of table".into()))?;
        let options = ExportOptions { runtime: self.runtime.clone(), runtime_env: self.runtime_env.clone() };
        // A foreign table of ours: datafusion-ffi's wrapper hands its struct
        // over as it is, instead of wrapping the table again.
        Ok(Arc::new(ForeignTableProvider(export_table(table, &self.codec, options))))
    }
}

/// Table function `func` for a consumer whose logical codec is `codec`; the
/// tables it returns scan with `options`. The consumer owns the struct.
pub fn export_table_function(func: QlinkTableFunction, codec: FFI_LogicalExtensionCodec, options: ExportOptions) -> FFI_TableFunction {
    let runtime = options.runtime.clone();
    let f = CapsuleTableFunction { inner: func, codec: codec.clone(), runtime: options.runtime, runtime_env: options.runtime_env };
    FFI_TableFunction::new_with_ffi_codec(Arc::new(f), runtime, codec)
}
