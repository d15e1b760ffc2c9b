// SPDX-License-Identifier: Apache-2.0
//! The DataFusion host's integration tests through real DataFusion sessions.
//! (One test binary: each links DataFusion, so one link per crate, not one per file.)

mod lazy_view;
mod recipe;
mod rewrite;
mod smoke;
mod stats;
