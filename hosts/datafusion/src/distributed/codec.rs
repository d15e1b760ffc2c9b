// SPDX-License-Identifier: Apache-2.0
//! The physical extension codec of qlink scans, installed on the
//! coordinator (encode) and on every worker (decode), and the worker's
//! plugin loader.
//!
//! Encoding a scan writes its recipe (recipe.rs); decoding opens the same
//! provider with the worker's copy of the plugin, seeing the worker's own
//! task context (its object stores, memory pool and temporary files), and
//! plans the same scan. The rebuilt scan must have the coordinator's
//! partition count, or the query fails with an error saying both.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::from_proto::parse_exprs;
use datafusion_proto::logical_plan::to_proto::serialize_exprs;
use datafusion_proto::logical_plan::DefaultLogicalExtensionCodec;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use prost::Message;

use crate::distributed::plugin_identity::PluginIdentity;
use crate::distributed::recipe::ScanProto;
use crate::distributed::task_scan::TaskScanExec;
use crate::exec::QlinkExec;
use crate::functions::{open_functions, PluginFunction, QlinkTableFunction};
use crate::plugin::Plugin;
use crate::recipe::{ScanRecipe, TableOrigin};
use crate::schema::OpenSchema;
use crate::services::SessionSource;
use crate::table::QlinkTableProvider;

/// Where a worker finds the plugins the coordinator names: in its own
/// plugin directory, by the file name the coordinator loaded (the same
/// layout on every machine), never at a path a request names. A worker
/// without a directory loads no plugin. The file is checked to be the
/// coordinator's build (its digest) before anything in it runs; each file
/// is loaded once.
#[derive(Debug, Default)]
pub struct PluginLoader {
    dir: Option<PathBuf>,
    loaded: Mutex<HashMap<PathBuf, Arc<Plugin>>>,
    functions: Mutex<HashMap<String, Arc<Vec<PluginFunction>>>>,
}

impl PluginLoader {
    /// A loader over `dir` (None: one that refuses every plugin, for a
    /// coordinator, which never loads what a worker names).
    pub fn new(dir: Option<PathBuf>) -> PluginLoader {
        PluginLoader { dir, loaded: Mutex::new(HashMap::new()), functions: Mutex::new(HashMap::new()) }
    }

    /// The functions of the worker's copy of `want` (plugin_for's checks
    /// and errors), opened once per plugin file.
    pub fn functions_for(&self, want: &PluginIdentity) -> Result<Arc<Vec<PluginFunction>>> {
        let plugin = self.plugin_for(want)?;
        let mut cache = self.functions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = cache.get(plugin.path()) {
            return Ok(Arc::clone(f));
        }
        let f = Arc::new(open_functions(&plugin)?);
        cache.insert(plugin.path().to_string(), Arc::clone(&f));
        Ok(f)
    }

    /// The file in the plugin directory that `want` names by its file
    /// name: a plain name (no directory part, no `..`), resolving (symlinks
    /// followed) to a regular file inside the directory.
    fn file_for(&self, want: &PluginIdentity, coordinator: &str) -> Result<PathBuf> {
        let Some(dir) = &self.dir else {
            return Err(DataFusionError::Plan(format!(
                "this worker loads no plugins: start qlink-worker with --plugin-dir DIR holding {} ({coordinator})",
                want.name
            )));
        };
        let name = Path::new(&want.path).file_name().and_then(|n| n.to_str()).filter(|n| !n.is_empty() && *n != "..");
        let Some(name) = name else {
            return Err(DataFusionError::Plan(format!("the coordinator named no plugin file ({coordinator})")));
        };
        let path = dir.join(name);
        let missing = || DataFusionError::Plan(format!("this worker has no plugin file {} ({coordinator})", path.display()));
        let real = std::fs::canonicalize(&path).map_err(|_| missing())?;
        let real_dir = std::fs::canonicalize(dir)
            .map_err(|e| DataFusionError::Plan(format!("this worker's plugin directory {}: {e}", dir.display())))?;
        if !real.starts_with(&real_dir) {
            return Err(DataFusionError::Plan(format!(
                "plugin file {} resolves to {}, outside this worker's plugin directory {}",
                path.display(),
                real.display(),
                real_dir.display()
            )));
        }
        if !real.is_file() {
            return Err(missing());
        }
        Ok(real)
    }

    /// The worker's copy of the plugin `want` names, checked to be the
    /// same build: its file's digest before it is loaded, then its name,
    /// version and ABI version. Errors name both sides: a missing file, or
    /// a different name, version, ABI version or file digest.
    pub fn plugin_for(&self, want: &PluginIdentity) -> Result<Arc<Plugin>> {
        let coordinator = format!(
            "the coordinator's is {} {} (ABI {:#x}, digest {:016x}) from {}",
            want.name, want.version, want.abi_version, want.digest, want.path
        );
        let path = self.file_for(want, &coordinator)?;
        let plugin = {
            let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
            match loaded.get(&path) {
                Some(p) => Arc::clone(p),
                None => {
                    let p = Plugin::load_if_digest(&path, want.digest).map_err(|e| match e {
                        crate::plugin::LoadRefused::Digest(mine) => DataFusionError::Plan(format!(
                            "this worker's plugin file {} has digest {mine:016x}, {coordinator}: install the same build on every worker",
                            path.display()
                        )),
                        crate::plugin::LoadRefused::Error(e) => e,
                    })?;
                    loaded.insert(path.clone(), Arc::clone(&p));
                    p
                }
            }
        };
        let mine = PluginIdentity::of(&plugin)?;
        if mine.name != want.name || mine.version != want.version || mine.abi_version != want.abi_version || mine.digest != want.digest {
            return Err(DataFusionError::Plan(format!(
                "this worker's plugin is {} {} (ABI {:#x}, digest {:016x}) from {}, {coordinator}: install the same build on every worker",
                mine.name,
                mine.version,
                mine.abi_version,
                mine.digest,
                path.display()
            )));
        }
        Ok(plugin)
    }
}

/// qlink's [`PhysicalExtensionCodec`]: [`QlinkExec`] table scans with a
/// recipe and [`TaskScanExec`]s. Anything else is refused with an error
/// naming the node (the planner keeps such plans on the coordinator).
#[derive(Debug)]
pub struct QlinkCodec {
    loader: Arc<PluginLoader>,
}

impl QlinkCodec {
    pub fn new(loader: Arc<PluginLoader>) -> QlinkCodec {
        QlinkCodec { loader }
    }
}

fn encode_recipe(recipe: &ScanRecipe, partitions: usize, tasks: usize) -> Result<ScanProto> {
    let plugin = &recipe.plugin;
    let filters = serialize_exprs(&recipe.filters, &DefaultLogicalExtensionCodec {})
        .map_err(|e| DataFusionError::Plan(format!("qlink scan of {}: a filter cannot be sent to a worker: {e}", plugin.name())))?;
    let mut p = ScanProto {
        has_projection: recipe.projection.is_some(),
        projection: recipe.projection.iter().flatten().map(|&i| i as u64).collect(),
        filters,
        limit: recipe.limit.map(|l| l as u64),
        partitions: partitions as u64,
        tasks: tasks as u64,
        ..Default::default()
    };
    p.set_identity(&PluginIdentity::of(plugin)?);
    p.set_origin(&recipe.origin)?;
    Ok(p)
}

/// A task context of the worker's own (the decoder gets a borrowed one).
fn own_task_context(ctx: &TaskContext) -> Arc<TaskContext> {
    Arc::new(TaskContext::new(
        ctx.task_id(),
        ctx.session_id(),
        ctx.session_config().clone(),
        ctx.scalar_functions().clone(),
        ctx.higher_order_functions().clone(),
        ctx.aggregate_functions().clone(),
        ctx.window_functions().clone(),
        ctx.runtime_env(),
    ))
}

impl PhysicalExtensionCodec for QlinkCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !inputs.is_empty() {
            return Err(DataFusionError::Internal(format!("a qlink scan has no inputs, got {}", inputs.len())));
        }
        let scan = ScanProto::decode(buf).map_err(|e| DataFusionError::Plan(format!("decoding a qlink scan: {e}")))?;
        let plugin = self.loader.plugin_for(&scan.identity())?;
        let task = own_task_context(ctx);
        let source = || SessionSource::Task(Arc::clone(&task));
        let (provider, what) = match scan.origin(&task)? {
            TableOrigin::Table { provider, options } => (QlinkTableProvider::open_in(&plugin, &provider, &options, source())?, provider),
            TableOrigin::SchemaTable { provider, options, table } => {
                (OpenSchema::open(&plugin, &provider, &options, source())?.table(&table)?, provider)
            }
            TableOrigin::Function { function, args } => (QlinkTableFunction::open(&plugin, &function)?.call_in(&args, source())?, function),
        };
        let filters = parse_exprs(&scan.filters, &task, &DefaultLogicalExtensionCodec {})
            .map_err(|e| DataFusionError::Plan(format!("decoding the filters of a scan of {}: {e}", plugin.name())))?;
        let projection = scan.projection()?;
        let limit = scan.limit.map(|l| l as usize);
        let exec = provider.scan_in(SessionSource::Task(task), projection.as_ref(), &filters, limit)?;
        let partitions = exec.properties().partitioning.partition_count() as u64;
        if partitions != scan.partitions {
            return Err(DataFusionError::Plan(format!(
                "the scan of {}/{what} has {partitions} partitions on this worker and {} on the coordinator (does the worker see the same data?)",
                plugin.name(),
                scan.partitions
            )));
        }
        let exec: Arc<dyn ExecutionPlan> = Arc::new(exec);
        if scan.tasks > 1 {
            return Ok(Arc::new(TaskScanExec::try_new(exec, scan.tasks as usize)?));
        }
        Ok(exec)
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        _proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        let (scan, tasks) = match node.downcast_ref::<TaskScanExec>() {
            Some(t) => (Arc::clone(t.scan()), t.tasks()),
            None => (Arc::clone(&node), 1),
        };
        let Some(q) = scan.downcast_ref::<QlinkExec>() else {
            return Err(DataFusionError::NotImplemented(format!("{} cannot be sent to a worker", node.name())));
        };
        let Some(recipe) = q.recipe() else {
            return Err(DataFusionError::NotImplemented(format!(
                "{} cannot be sent to a worker: only scans of tables opened from a spec can be rebuilt there",
                q.name()
            )));
        };
        let proto = encode_recipe(recipe, scan.properties().partitioning.partition_count(), tasks)?;
        proto.encode(buf).map_err(|e| DataFusionError::Internal(format!("encoding a qlink scan: {e}")))
    }
}
