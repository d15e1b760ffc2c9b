//! The qlink tool's integration tests: the binary, object-store reads, --timing.
//! (One test binary: each links DataFusion, so one link per crate, not one per file.)

mod commands;
mod read_into;
mod timing;
