// SPDX-License-Identifier: Apache-2.0
//! Registering a plugin's objects on a DataFusion `SessionContext`: tables
//! from "PLUGIN/PROVIDER?key=value" specs, every table of a schema provider,
//! the plugin's functions, and its planners.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::catalog::{MemorySchemaProvider, SchemaProvider};
use datafusion::error::DataFusionError;
use datafusion::prelude::SessionContext;

use crate::distributed::ShippedPlugins;
use crate::error::Result;
use crate::functions::{open_functions, PluginFunction};
use crate::plugin::{Plugin, TableSpec};
use crate::schema::OpenSchema;
use crate::services::SessionSource;
use crate::table::QlinkTableProvider;

/// A `SessionContext` plus the plugins loaded into it, by name and path.
pub struct QlinkSession {
    pub ctx: SessionContext,
    plugins: HashMap<String, Arc<Plugin>>,
}

impl QlinkSession {
    pub fn new(ctx: SessionContext) -> QlinkSession {
        QlinkSession { ctx, plugins: HashMap::new() }
    }

    /// Make an already loaded plugin known by its name and path.
    pub fn insert_plugin(&mut self, p: Arc<Plugin>) {
        self.plugins.insert(p.path().to_string(), Arc::clone(&p));
        self.plugins.entry(p.name().to_string()).or_insert(p);
    }

    /// Load a plugin from `path` (once; later calls return the same one).
    pub fn load_plugin(&mut self, path: &str) -> Result<Arc<Plugin>> {
        if let Some(p) = self.plugins.get(path) {
            return Ok(Arc::clone(p));
        }
        let p = Plugin::load(path)?;
        self.plugins.insert(path.to_string(), Arc::clone(&p));
        self.plugins.entry(p.name().to_string()).or_insert_with(|| Arc::clone(&p));
        Ok(p)
    }

    /// A plugin by the name it reports or the path it was loaded from; a
    /// path not loaded yet is loaded.
    pub fn plugin(&mut self, name_or_path: &str) -> Result<Arc<Plugin>> {
        if let Some(p) = self.plugins.get(name_or_path) {
            return Ok(Arc::clone(p));
        }
        if name_or_path.contains('/') || name_or_path.ends_with(".so") {
            return self.load_plugin(name_or_path);
        }
        Err(DataFusionError::Plan(format!("no plugin named '{name_or_path}' is loaded (load it with --plugin PATH, or give its path)")))
    }

    /// Split "PLUGIN/PROVIDER?k=v" where PLUGIN may itself be a path with
    /// slashes: the provider is the last path segment before '?'.
    /// libqlink's parse of `spec`: the plugin (a path or a loaded plugin's
    /// name), provider, keys and values each percent-decoded, as every
    /// host reads a spec.
    fn split_spec(spec: &str) -> Result<TableSpec> {
        TableSpec::parse(spec)
    }

    /// Open a table provider and register it as `name`.
    pub fn register_table(&mut self, name: &str, spec: &str) -> Result<Arc<QlinkTableProvider>> {
        let s = Self::split_spec(spec)?;
        let plugin = self.plugin(&s.plugin)?;
        let state = self.ctx.state();
        let table = Arc::new(QlinkTableProvider::open(&plugin, &s.provider, &s.options, &state)?);
        self.ctx.register_table(name, Arc::clone(&table) as _)?;
        Ok(table)
    }

    /// Open a schema provider and register each of its tables as NAME.table.
    pub fn register_schema(&mut self, name: &str, spec: &str) -> Result<Vec<String>> {
        let s = Self::split_spec(spec)?;
        let plugin = self.plugin(&s.plugin)?;
        let state = self.ctx.state();
        let open = OpenSchema::open(&plugin, &s.provider, &s.options, SessionSource::Session(&state))?;
        let schema = Arc::new(MemorySchemaProvider::new());
        let mut names = Vec::new();
        for tname in open.table_names() {
            schema.register_table(tname.clone(), Arc::new(open.table(&tname)?))?;
            names.push(format!("{name}.{tname}"));
        }
        let catalog_name = state.config_options().catalog.default_catalog.clone();
        let catalog = self.ctx.catalog(&catalog_name).ok_or_else(|| DataFusionError::Plan(format!("no catalog {catalog_name}")))?;
        catalog.register_schema(name, schema)?;
        Ok(names)
    }

    /// Register every function the plugin's catalogue lists. On a
    /// coordinator (a session with workers) the plugin is also named in
    /// the functions workers must register ([`ShippedPlugins`]).
    pub fn register_functions(&mut self, plugin: &Arc<Plugin>) -> Result<Vec<String>> {
        let functions = open_functions(plugin)?;
        let names: Vec<String> = functions.iter().map(|f| f.name().to_string()).collect();
        ShippedPlugins::note(&self.ctx, plugin, &functions)?;
        for f in functions {
            match f {
                PluginFunction::Scalar(u) => self.ctx.register_udf(u),
                PluginFunction::Aggregate(u) => self.ctx.register_udaf(u),
                PluginFunction::Window(u) => self.ctx.register_udwf(u),
                PluginFunction::Table(name, t) => self.ctx.register_udtf(&name, t),
            }
        }
        Ok(names)
    }
}
