// SPDX-License-Identifier: Apache-2.0
//! A scan crosses to a worker as its recipe (QlinkCodec): encoded in one
//! session, decoded in another (as a worker does, with its own task
//! context), the rebuilt scan yields exactly the rows of the original, for a
//! spec table and a table function's provider (schema providers' tables:
//! tests/engines' distributed route, over qlink_zarr stores).
use std::sync::Arc;

use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::physical_plan::{collect, ExecutionPlan};
use datafusion::prelude::SessionContext;
use datafusion_proto::physical_plan::{DefaultPhysicalProtoConverter, PhysicalExtensionCodec};
use qlink_datafusion::distributed::{PluginLoader, QlinkCodec};
use qlink_datafusion::exec::QlinkExec;
use qlink_datafusion::QlinkSession;

const SAMPLE: &str = qlink_sys::plugins::SAMPLE;

fn scan_of(plan: &Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
    let mut found = None;
    plan.apply(|node| {
        if node.downcast_ref::<QlinkExec>().is_some() {
            found = Some(Arc::clone(node));
            return Ok(TreeNodeRecursion::Stop);
        }
        Ok(TreeNodeRecursion::Continue)
    })
    .unwrap();
    found.expect("a qlink scan in the plan")
}

/// The scan of `sql`'s plan, and the same scan rebuilt from its recipe in
/// a fresh session: both collected, as text.
async fn original_and_rebuilt(s: &QlinkSession, sql: &str) -> (String, String) {
    let plan = s.ctx.sql(sql).await.unwrap().create_physical_plan().await.unwrap();
    let scan = scan_of(&plan);
    // A worker loads from its own plugin directory, by the coordinator's file name.
    let dir = std::path::Path::new(SAMPLE).parent().unwrap().to_path_buf();
    let codec = QlinkCodec::new(Arc::new(PluginLoader::new(Some(dir))));
    let mut buf = Vec::new();
    codec.try_encode(Arc::clone(&scan), &mut buf, &DefaultPhysicalProtoConverter {}).unwrap();
    let worker = SessionContext::new();
    let rebuilt = codec.try_decode(&buf, &[], &worker.task_ctx(), &DefaultPhysicalProtoConverter {}).unwrap();
    assert_eq!(rebuilt.properties().partitioning.partition_count(), scan.properties().partitioning.partition_count());
    let a = collect(scan, s.ctx.task_ctx()).await.unwrap();
    let b = collect(rebuilt, worker.task_ctx()).await.unwrap();
    (pretty_format_batches(&a).unwrap().to_string(), pretty_format_batches(&b).unwrap().to_string())
}

#[tokio::test]
async fn every_kind_of_provider_rebuilds_from_its_recipe() {
    let mut s = QlinkSession::new(SessionContext::new());
    let p = s.load_plugin(SAMPLE).unwrap();
    s.register_functions(&p).unwrap();
    s.register_table("t", &format!("{SAMPLE}/series?stop=20&partitions=2")).unwrap();
    let (a, b) = original_and_rebuilt(&s, "SELECT value, square FROM t WHERE value >= 17").await;
    assert_eq!(a, b);
    assert_eq!(
        a,
        "+-------+--------+\n| value | square |\n+-------+--------+\n| 17    | 289    |\n| 18    | 324    |\n| 19    | 361    |\n+-------+--------+"
    );
    // A table function's provider: the call (name and literal arguments)
    // is the recipe.
    let (a, b) = original_and_rebuilt(&s, "SELECT value FROM sample_range(-6, 40, 9) WHERE value > 0").await;
    assert_eq!(a, b);
    assert_eq!(a, "+-------+\n| value |\n+-------+\n| 3     |\n| 12    |\n| 21    |\n| 30    |\n| 39    |\n+-------+");
}

/// Plugins loaded by digest one after another are each the file asked for:
/// the loader reaches each through `/proc/self/fd/N`, and a descriptor
/// number reused by a later load must not answer with the earlier library
/// (the dynamic loader matches a library by that name).
#[test]
fn loads_by_digest_are_each_their_own_file() {
    use qlink_datafusion::Plugin;
    let paths = [SAMPLE, qlink_sys::plugins::FOLD, SAMPLE, qlink_sys::plugins::FOLD];
    for path in paths {
        let digest = Plugin::load(path).unwrap().file_digest().unwrap();
        let loaded = Plugin::load_if_digest(std::path::Path::new(path), digest).unwrap_or_else(|_| panic!("{path}"));
        let want = if path == SAMPLE { "qlink_sample" } else { "qlink_fold" };
        assert_eq!(loaded.name(), want, "loading {path} by digest");
    }
}
