// SPDX-License-Identifier: Apache-2.0
//! How a scan was made: the provider's origin and the scan's arguments,
//! which the table provider records and the execution plan carries, so
//! another process with the same plugin can make the same scan.

use std::sync::Arc;

use datafusion::logical_expr::Expr;

use crate::plugin::Plugin;

/// How a table provider was opened, so that another process holding the
/// same plugin can open the same provider (distributed execution).
#[derive(Clone, Debug, PartialEq)]
pub enum TableOrigin {
    /// `PLUGIN/PROVIDER?options`: a table provider.
    Table { provider: String, options: Vec<(String, String)> },
    /// Table `table` of the schema provider `provider` opened with `options`.
    SchemaTable { provider: String, options: Vec<(String, String)>, table: String },
    /// What the plugin's table function `function` returned when called
    /// with `args` (constant expressions, as the SQL wrote them).
    Function { function: String, args: Vec<Expr> },
}

/// Everything a scan was made from: the plugin, the provider's origin and
/// the scan's arguments (projection as column indices of the provider's
/// schema, filters as DataFusion expressions over it, limit). Rebuilding
/// the scan from it in a process with the same plugin gives the same plan.
#[derive(Clone, Debug)]
pub struct ScanRecipe {
    pub plugin: Arc<Plugin>,
    pub origin: TableOrigin,
    pub projection: Option<Vec<usize>>,
    pub filters: Vec<Expr>,
    pub limit: Option<usize>,
}
