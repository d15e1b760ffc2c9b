// SPDX-License-Identifier: Apache-2.0
//! qlink_json: datafusion-functions-json (datafusion-contrib), unmodified,
//! as a qlink plugin: `json_get_str(doc, 'key')`, `json_contains`,
//! `json_length`, ... in DataFusion, DuckDB, SQLite and datafusion-python.
//!
//! The functions are taken from the crate's own `register_all`, so this
//! file never lists them. Its SQL operator rewrites (`->`, `->>`, `?`) are
//! DataFusion-parser features, not functions, and stay in DataFusion.

use qlink_plugin::{export_plugin, Plugin};

fn plugin() -> Plugin {
    Plugin::new("qlink_json", env!("CARGO_PKG_VERSION"))
        .description("JSON functions from datafusion-functions-json 0.55")
        .registered_by(|ctx| datafusion_functions_json::register_all(&mut *ctx.state_ref().write()))
}

export_plugin!(plugin);
