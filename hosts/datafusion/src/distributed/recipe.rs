// SPDX-License-Identifier: Apache-2.0
//! The wire form of a scan recipe (protobuf through prost). Filters and a
//! table function's arguments travel as DataFusion's own
//! `LogicalExprNode`s (datafusion-proto): this is DataFusion's wire between
//! its own processes, not qlink's ABI.

use datafusion::error::DataFusionError;
use datafusion::execution::TaskContext;
use datafusion_proto::logical_plan::from_proto::parse_exprs;
use datafusion_proto::logical_plan::to_proto::serialize_exprs;
use datafusion_proto::logical_plan::DefaultLogicalExtensionCodec;
use datafusion_proto::protobuf::LogicalExprNode;

use crate::distributed::plugin_identity::PluginIdentity;
use crate::table::TableOrigin;

/// One `key=value` option of a provider.
#[derive(Clone, PartialEq, prost::Message)]
pub struct OptionProto {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

/// A qlink table scan as a worker receives it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ScanProto {
    /// The plugin's descriptor name, e.g. "qlink_zarr".
    #[prost(string, tag = "1")]
    pub plugin_name: String,
    /// The plugin's own version, e.g. "0.1.0".
    #[prost(string, tag = "2")]
    pub plugin_version: String,
    /// The ABI version its descriptor was filled for.
    #[prost(uint32, tag = "3")]
    pub abi_version: u32,
    /// The path the coordinator loaded it from.
    #[prost(string, tag = "4")]
    pub plugin_path: String,
    /// FNV-1a 64 of the coordinator's plugin file.
    #[prost(fixed64, tag = "5")]
    pub plugin_digest: u64,
    /// The table (or schema) provider's name.
    #[prost(string, tag = "6")]
    pub provider: String,
    #[prost(message, repeated, tag = "7")]
    pub options: Vec<OptionProto>,
    /// Set for a table of a schema provider: the table's name.
    #[prost(string, optional, tag = "8")]
    pub schema_table: Option<String>,
    #[prost(bool, tag = "9")]
    pub has_projection: bool,
    /// Column indices of the provider's schema.
    #[prost(uint64, repeated, tag = "10")]
    pub projection: Vec<u64>,
    #[prost(message, repeated, tag = "11")]
    pub filters: Vec<LogicalExprNode>,
    #[prost(uint64, optional, tag = "12")]
    pub limit: Option<u64>,
    /// The scan's partition count on the coordinator; a worker's rebuilt
    /// scan must have the same.
    #[prost(uint64, tag = "13")]
    pub partitions: u64,
    /// How many tasks share the partitions (1: one task runs them all).
    #[prost(uint64, tag = "14")]
    pub tasks: u64,
    /// Set for a table function's provider: the function's name (then
    /// `provider` is empty) ...
    #[prost(string, optional, tag = "15")]
    pub function: Option<String>,
    /// ... and its arguments.
    #[prost(message, repeated, tag = "16")]
    pub function_args: Vec<LogicalExprNode>,
}

impl ScanProto {
    /// The plugin build the coordinator scanned with.
    pub fn identity(&self) -> PluginIdentity {
        PluginIdentity {
            name: self.plugin_name.clone(),
            version: self.plugin_version.clone(),
            abi_version: self.abi_version,
            path: self.plugin_path.clone(),
            digest: self.plugin_digest,
        }
    }

    /// Fill the plugin fields.
    pub fn set_identity(&mut self, id: &PluginIdentity) {
        self.plugin_name = id.name.clone();
        self.plugin_version = id.version.clone();
        self.abi_version = id.abi_version;
        self.plugin_path = id.path.clone();
        self.plugin_digest = id.digest;
    }

    /// The provider's origin (a table function's arguments decoded with
    /// `registry`'s functions).
    pub fn origin(&self, registry: &TaskContext) -> Result<TableOrigin, DataFusionError> {
        if let Some(function) = &self.function {
            let args = parse_exprs(&self.function_args, registry, &DefaultLogicalExtensionCodec {})
                .map_err(|e| DataFusionError::Plan(format!("decoding the arguments of {}.{function}: {e}", self.plugin_name)))?;
            return Ok(TableOrigin::Function { function: function.clone(), args });
        }
        let options = self.options.iter().map(|o| (o.key.clone(), o.value.clone())).collect();
        Ok(match &self.schema_table {
            Some(table) => TableOrigin::SchemaTable { provider: self.provider.clone(), options, table: table.clone() },
            None => TableOrigin::Table { provider: self.provider.clone(), options },
        })
    }

    /// Fill the origin fields.
    pub fn set_origin(&mut self, origin: &TableOrigin) -> Result<(), DataFusionError> {
        let (provider, options, table) = match origin {
            TableOrigin::Table { provider, options } => (provider, options, None),
            TableOrigin::SchemaTable { provider, options, table } => (provider, options, Some(table.clone())),
            TableOrigin::Function { function, args } => {
                self.function = Some(function.clone());
                self.function_args = serialize_exprs(args, &DefaultLogicalExtensionCodec {}).map_err(|e| {
                    DataFusionError::Plan(format!("{}.{function}: an argument cannot be sent to a worker: {e}", self.plugin_name))
                })?;
                return Ok(());
            }
        };
        self.provider = provider.clone();
        self.options = options.iter().map(|(k, v)| OptionProto { key: k.clone(), value: v.clone() }).collect();
        self.schema_table = table;
        Ok(())
    }

    /// The projection as indices, checked to fit in usize.
    pub fn projection(&self) -> Result<Option<Vec<usize>>, DataFusionError> {
        if !self.has_projection {
            return Ok(None);
        }
        self.projection
            .iter()
            .map(|&i| usize::try_from(i).map_err(|_| DataFusionError::Plan(format!("qlink scan: projection index {i} too large"))))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
}
