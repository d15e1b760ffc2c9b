// SPDX-License-Identifier: Apache-2.0
//! A plugin's functions as DataFusion functions, one file per kind:
//! `ScalarUDF` (scalar.rs), `AggregateUDF` with a row accumulator
//! (aggregate.rs), `WindowUDF` evaluating a whole partition (window.rs) and
//! table functions (table.rs). Arguments cross as one Arrow struct array
//! (function.h, args.rs); the function's identity (plugin name + uid) stays
//! attached (gap G2, identity.rs).

use std::sync::Arc;

use datafusion::logical_expr::{AggregateUDF, ScalarUDF, WindowUDF};

use crate::error::Result;
use crate::ffi::*;
use crate::plugin::Plugin;

mod aggregate;
mod args;
mod scalar;
mod signature;
mod table;
mod window;

pub use aggregate::{QlinkAggregateUdf, RawAggregate};
pub use scalar::QlinkScalarUdf;
pub use signature::volatility_of;
pub use table::QlinkTableFunction;
pub use window::{QlinkWindowUdf, RawWindow};

/// One function of a plugin's catalogue, opened for a DataFusion session.
#[derive(Debug)]
pub enum PluginFunction {
    Scalar(ScalarUDF),
    Aggregate(AggregateUDF),
    Window(WindowUDF),
    Table(String, Arc<QlinkTableFunction>),
}

impl PluginFunction {
    /// The name it is registered (and called) by: the catalogue's.
    pub fn name(&self) -> &str {
        match self {
            PluginFunction::Scalar(f) => f.name(),
            PluginFunction::Aggregate(f) => f.name(),
            PluginFunction::Window(f) => f.name(),
            PluginFunction::Table(name, _) => name,
        }
    }
}

/// Every function the plugin's catalogue lists, opened, in catalogue
/// order. The first that fails to open is the error (naming it).
pub fn open_functions(plugin: &Arc<Plugin>) -> Result<Vec<PluginFunction>> {
    let mut out = Vec::new();
    for item in plugin.items() {
        out.push(match item.kind {
            QL_ITEM_SCALAR_FUNCTION => PluginFunction::Scalar(QlinkScalarUdf::open(plugin, &item.name)?),
            QL_ITEM_AGGREGATE_FUNCTION => PluginFunction::Aggregate(QlinkAggregateUdf::open(plugin, &item.name)?),
            QL_ITEM_WINDOW_FUNCTION => PluginFunction::Window(QlinkWindowUdf::open(plugin, &item.name)?),
            QL_ITEM_TABLE_FUNCTION => PluginFunction::Table(item.name.clone(), Arc::new(QlinkTableFunction::open(plugin, &item.name)?)),
            _ => continue,
        });
    }
    Ok(out)
}
