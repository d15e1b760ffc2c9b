// SPDX-License-Identifier: Apache-2.0
//! A plugin plan's metrics snapshot as DataFusion metrics (EXPLAIN
//! ANALYZE).

use std::sync::Arc;

use datafusion::physical_plan::metrics::{Count, Gauge, Metric, MetricValue, MetricsSet, Time};

use crate::error::cstr;
use crate::ffi::*;

pub(super) fn convert_metrics(m: &ql_metrics, out: &mut MetricsSet) {
    for i in 0..m.count.max(0) as usize {
        // SAFETY: count items owned by the snapshot.
        let it = unsafe { &*m.items.add(i) };
        let raw_name = cstr(it.name);
        // The host counts output rows and its own compute time itself; a
        // plugin's figures of the same name would be summed into them.
        let name: std::borrow::Cow<'static, str> = match raw_name.as_str() {
            "output_rows" | "output_batches" => continue,
            "elapsed_compute" => "plugin_elapsed_compute".into(),
            _ => raw_name.into(),
        };
        let partition = if it.partition < 0 { None } else { Some(it.partition as usize) };
        let v = it.value.max(0) as usize;
        let value = match it.kind {
            QL_METRIC_TIME_NS => {
                let t = Time::new();
                t.add_duration(std::time::Duration::from_nanos(v as u64));
                MetricValue::Time { name, time: t }
            }
            QL_METRIC_GAUGE => {
                let g = Gauge::new();
                g.set(v);
                MetricValue::Gauge { name, gauge: g }
            }
            _ => {
                let c = Count::new();
                c.add(v);
                MetricValue::Count { name, count: c }
            }
        };
        out.push(Arc::new(Metric::new(value, partition)));
    }
}
