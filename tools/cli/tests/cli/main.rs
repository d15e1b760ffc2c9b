// SPDX-License-Identifier: Apache-2.0
//! The qlink tool's integration tests: the binary, object-store reads, --timing,
//! distributed queries over qlink-worker processes.
//! (One test binary: each links DataFusion, so one link per crate, not one per file.)

mod commands;
mod distributed;
mod read_into;
mod timing;
