// SPDX-License-Identifier: Apache-2.0
//! Cross-component tests through real DataFusion: the fold planner vs stock.
//! (One test binary: each links DataFusion, so one link per crate, not one per file.)

mod declines;
mod explain;
mod generated;
mod groups;
mod memory;
