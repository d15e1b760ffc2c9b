// SPDX-License-Identifier: Apache-2.0
//! qlink_geo: geodatafusion (datafusion-contrib), unmodified, as a qlink
//! plugin: `ST_Area`, `ST_Distance`, `ST_GeomFromText`, ... over GeoArrow
//! types, whose extension-type metadata crosses every host with the
//! values.
//!
//! The functions are taken from the crate's own `register`, its one
//! aggregate (`ST_Extent`) included.

use qlink_plugin::{export_plugin, Plugin};

fn plugin() -> Plugin {
    Plugin::new("qlink_geo", env!("CARGO_PKG_VERSION")).description("Spatial functions from geodatafusion 0.6").registered_by(|ctx| {
        geodatafusion::register(ctx);
        Ok(())
    })
}

export_plugin!(plugin);
