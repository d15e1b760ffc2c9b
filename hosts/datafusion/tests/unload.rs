// SPDX-License-Identifier: Apache-2.0
//! Batches a plugin produced outlive every plan, table, session and plugin
//! handle that made them, yet their release callbacks are plugin code: the
//! library stays loaded until the last such array is released, then it is
//! unloaded. (Its own test binary: no other test holds the library open.)
use datafusion::arrow::array::{Array, Float64Array};
use datafusion::prelude::SessionContext;
use qlink_datafusion::QlinkSession;

const DFTEST: &str = qlink_sys::plugins::DFTEST;

fn mapped() -> bool {
    std::fs::read_to_string("/proc/self/maps").unwrap().lines().any(|l| l.ends_with(DFTEST))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_keep_their_plugin_loaded_until_released() {
    assert!(!mapped(), "nothing loaded the plugin yet");
    let batches = {
        let mut s = QlinkSession::new(SessionContext::new());
        s.register_table("g", &format!("{DFTEST}/grid?rows=100&cols=2&batch_rows=30")).unwrap();
        assert!(mapped());
        s.ctx.sql("SELECT c1 FROM g").await.unwrap().collect().await.unwrap()
        // the session, its table provider, plans and the plugin handle go here
    };
    assert!(mapped(), "the batches keep the library loaded");
    // The data is still readable (it points into the plugin's buffers) ...
    let sum: f64 = batches
        .iter()
        .map(|b| {
            let c = b.column(0).as_any().downcast_ref::<Float64Array>().unwrap();
            (0..c.len()).map(|i| c.value(i)).sum::<f64>()
        })
        .sum();
    assert_eq!(batches.len(), 4);
    assert_eq!(sum, (0..100).map(|r| (r * 2 + 1) as f64).sum::<f64>());
    // ... and releasing the last batch unloads the library, without a crash.
    drop(batches);
    assert!(!mapped(), "the last batch released the plugin");
}
