// SPDX-License-Identifier: Apache-2.0
//! Shared subplans: a subquery the statement uses more than once (a CTE
//! referenced from several places, as ML-in-SQL writes every step of a
//! model) is planned once and run once, its result kept for every reference,
//! as PostgreSQL materializes such a CTE. DataFusion 55 inlines a CTE at
//! each reference, so a statement whose steps refer to earlier steps grows
//! with every step (a one-layer GPT forward pass becomes 2,822 scans) and
//! each copy is optimized, planned and run on its own.
//!
//! - [`share_repeated_subplans`] (find.rs) finds each subquery (a
//!   `SubqueryAlias`'s input) that occurs at least twice in the plan,
//!   counting each distinct enclosing subquery once, and replaces every
//!   occurrence by one [`SharedSubplanNode`] (node.rs), a logical leaf that
//!   holds the subquery's plan. Subqueries that are not worth keeping (only
//!   scans, filters and projections) or not safe to keep (volatile
//!   functions, outer references, placeholders, recursive queries,
//!   subquery expressions) stay inlined.
//! - [`ShareRepeatedSubplans`] (rule.rs) is that rewrite as the last
//!   analyzer rule, before the logical optimizer, which then optimizes each
//!   shared subquery once instead of at every reference.
//! - qlink's query planner plans each shared subquery once into one
//!   [`SharedSubplanExec`] (exec.rs) that every reference runs: the first
//!   partition asked for runs the subquery's plan, all partitions at once,
//!   and keeps the batches (held against the memory pool) until the plan is
//!   dropped or reset, as DataFusion's hash join keeps its build side.
//!
//! Sessions built by `qlink_session::builder::session_context` (the `qlink`
//! tool, `qlink serve`, `qlink.Session`) have the rule, except when they
//! distribute queries to workers; datafusion-python sessions with a qlink
//! planner get the rewrite of the optimized plan they hand to it.

mod exec;
mod find;
mod node;
mod rule;

pub use exec::SharedSubplanExec;
pub use find::share_repeated_subplans;
pub use node::{SharedBody, SharedSubplanNode};
pub use rule::ShareRepeatedSubplans;
