// SPDX-License-Identifier: Apache-2.0
//! Finding the subqueries a plan uses more than once, and replacing each
//! occurrence by a [`SharedSubplanNode`].
//!
//! Three passes over the plan as it is (a CTE inlined at every reference,
//! so the tree can hold thousands of copies):
//! 1. a 128-bit fingerprint of every node (its own line of EXPLAIN and its
//!    children's fingerprints), with whether its subtree is worth keeping
//!    (a join, aggregate, window, sort, distinct, union or unnest) and
//!    whether it may be kept (no volatile function, outer reference,
//!    placeholder or subquery expression). DataFusion's common
//!    subexpression elimination names each common expression
//!    `__common_expr_N`, numbered across the whole plan, so two copies of
//!    one CTE differ in those numbers alone: the fingerprint reads each such
//!    name as the expression it stands for;
//! 2. the references to each subquery, counted once per distinct enclosing
//!    subquery (an inner CTE used once by an outer CTE used twice is used
//!    once);
//! 3. the rewrite, from the root down: an occurrence of a subquery used at
//!    least twice, with the fingerprint of the first one found, becomes a
//!    reference to the same [`SharedBody`]. Where a node's EXPLAIN line does
//!    not say all it does (`Values` of more than 5 rows, extension nodes),
//!    the two occurrences must also be equal (`==`).
//!
//! Every pass visits each node once: linear in the size of the plan.

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::logical_expr::{Expr, Extension, LogicalPlan, SubqueryAlias};

use super::node::{SharedBody, SharedSubplanNode};
use crate::error::Result;

/// `plan` with every subquery it uses at least twice replaced by a shared
/// reference ([`SharedSubplanNode`]); `optimized` says whether `plan` is
/// past the logical optimizer (each shared subquery is then planned as it
/// is) or not (each is optimized once when it is planned). Unchanged
/// (`Transformed::no`) when nothing is shared, and always for a plan with a
/// recursive query. Errors only where DataFusion refuses to rebuild a node.
pub fn share_repeated_subplans(plan: LogicalPlan, optimized: bool) -> Result<Transformed<LogicalPlan>> {
    let mut f = Finder { optimized, ..Finder::default() };
    f.info(&plan);
    if f.recursive || f.aliases < 2 {
        return Ok(Transformed::no(plan));
    }
    f.count(&plan);
    if !f.counts.values().any(|&c| c >= 2) {
        return Ok(Transformed::no(plan));
    }
    match f.rewrite(&plan)? {
        Some(new) => Ok(Transformed::yes(new)),
        None => Ok(Transformed::no(plan)),
    }
}

/// What pass 1 learns of a node's subtree.
#[derive(Clone, Copy)]
struct Info {
    fingerprint: u128,
    /// Holds a node whose EXPLAIN line leaves something out.
    lossy: bool,
    /// Holds work worth keeping rather than repeating.
    heavy: bool,
    /// Holds something whose result may differ between references.
    unsafe_: bool,
}

/// The passes' state. Nodes are keyed by address: the plan is borrowed, and
/// not changed, for as long as the keys are used.
#[derive(Default)]
struct Finder {
    optimized: bool,
    info: HashMap<*const LogicalPlan, Info>,
    aliases: usize,
    recursive: bool,
    counts: HashMap<u128, usize>,
    counted: HashSet<u128>,
    /// `__common_expr_N` names and the (normalized) expressions they stand for.
    common: HashMap<String, String>,
    /// Per fingerprint, the subqueries kept: the first occurrence and its
    /// shared body (equal fingerprints of unequal plans keep two).
    bodies: HashMap<u128, Vec<(LogicalPlan, Arc<SharedBody>)>>,
}

/// The prefix of the names DataFusion's common subexpression elimination
/// gives the expressions it computes once.
const COMMON: &str = "__common_expr_";

impl Finder {
    /// Pass 1: the node's [`Info`], its children's first.
    fn info(&mut self, p: &LogicalPlan) -> Info {
        let key = p as *const LogicalPlan;
        if let Some(i) = self.info.get(&key) {
            return *i;
        }
        let children: Vec<Info> = p.inputs().into_iter().map(|c| self.info(c)).collect();
        if let LogicalPlan::Projection(proj) = p {
            for e in &proj.expr {
                if let Expr::Alias(a) = e {
                    if a.name.starts_with(COMMON) {
                        let def = self.normalize(&a.expr.to_string());
                        self.common.insert(a.name.clone(), def);
                    }
                }
            }
        }
        let line = self.normalize(&p.display().to_string());
        let (mut h1, mut h2) = (DefaultHasher::new(), DefaultHasher::new());
        1u8.hash(&mut h1);
        2u8.hash(&mut h2);
        line.hash(&mut h1);
        line.hash(&mut h2);
        if let LogicalPlan::Join(j) = p {
            // Not on the join's EXPLAIN line.
            let extra = format!("{:?} {:?}", j.null_equality, j.join_constraint);
            extra.hash(&mut h1);
            extra.hash(&mut h2);
        }
        let mut heavy = matches!(
            p,
            LogicalPlan::Join(_)
                | LogicalPlan::Aggregate(_)
                | LogicalPlan::Window(_)
                | LogicalPlan::Sort(_)
                | LogicalPlan::Distinct(_)
                | LogicalPlan::Union(_)
                | LogicalPlan::Unnest(_)
                | LogicalPlan::Extension(_)
        );
        let mut unsafe_ = !matches!(
            p,
            LogicalPlan::Projection(_)
                | LogicalPlan::Filter(_)
                | LogicalPlan::Window(_)
                | LogicalPlan::Aggregate(_)
                | LogicalPlan::Sort(_)
                | LogicalPlan::Join(_)
                | LogicalPlan::Repartition(_)
                | LogicalPlan::Union(_)
                | LogicalPlan::TableScan(_)
                | LogicalPlan::EmptyRelation(_)
                | LogicalPlan::SubqueryAlias(_)
                | LogicalPlan::Limit(_)
                | LogicalPlan::Values(_)
                | LogicalPlan::Distinct(_)
                | LogicalPlan::Unnest(_)
                | LogicalPlan::Extension(_)
                | LogicalPlan::Explain(_)
                | LogicalPlan::Analyze(_)
        ) || varies(p);
        let mut lossy = match p {
            LogicalPlan::Values(v) => v.values.len() > 5,
            LogicalPlan::Extension(_) => true,
            _ => false,
        };
        match p {
            LogicalPlan::RecursiveQuery(_) => self.recursive = true,
            LogicalPlan::SubqueryAlias(_) => self.aliases += 1,
            _ => {}
        }
        for ci in children {
            ci.fingerprint.hash(&mut h1);
            ci.fingerprint.hash(&mut h2);
            heavy |= ci.heavy;
            unsafe_ |= ci.unsafe_;
            lossy |= ci.lossy;
        }
        let fingerprint = ((h1.finish() as u128) << 64) | h2.finish() as u128;
        let i = Info { fingerprint, lossy, heavy, unsafe_ };
        self.info.insert(key, i);
        i
    }

    /// `text` with each `__common_expr_N` it names replaced by the
    /// expression it stands for (names not defined below are kept).
    fn normalize(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(COMMON) {
            out.push_str(&rest[..at]);
            let tail = &rest[at + COMMON.len()..];
            let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
            let name = &rest[at..at + COMMON.len() + digits];
            match self.common.get(name) {
                Some(def) if digits > 0 => {
                    out.push('(');
                    out.push_str(def);
                    out.push(')');
                }
                _ => out.push_str(name),
            }
            rest = &tail[digits..];
        }
        out.push_str(rest);
        out
    }

    fn info_of(&self, p: &LogicalPlan) -> Info {
        self.info[&(p as *const LogicalPlan)]
    }

    /// Pass 2: count each subquery once per distinct enclosing subquery.
    fn count(&mut self, p: &LogicalPlan) {
        if let Some(a) = reference(p) {
            let f = self.info_of(&a.input).fingerprint;
            *self.counts.entry(f).or_default() += 1;
            if self.counted.insert(f) {
                self.count(&a.input);
            }
            return;
        }
        for c in p.inputs() {
            self.count(c);
        }
    }

    /// Pass 3: `p` with shared subqueries replaced; None when unchanged.
    fn rewrite(&mut self, p: &LogicalPlan) -> Result<Option<LogicalPlan>> {
        if let LogicalPlan::SubqueryAlias(outer) = p {
            // `FROM cte AS a`: the leaf goes under `a` alone (the CTE's own
            // alias only named the columns `a` renames).
            if let Some(a) = reference(p).or_else(|| reference(&outer.input)) {
                if let Some(leaf) = self.shared(&a.input, &a.alias.to_string())? {
                    return Ok(Some(LogicalPlan::SubqueryAlias(SubqueryAlias::try_new(Arc::new(leaf), outer.alias.clone())?)));
                }
            }
        }
        let inputs = p.inputs();
        let mut changed = false;
        let mut new = Vec::with_capacity(inputs.len());
        for c in inputs {
            match self.rewrite(c)? {
                Some(n) => {
                    changed = true;
                    new.push(n);
                }
                None => new.push(c.clone()),
            }
        }
        if !changed {
            return Ok(None);
        }
        Ok(Some(p.with_new_exprs(p.expressions(), new)?))
    }

    /// The shared reference standing for subquery `input` (found under
    /// `alias`), or None when it stays inlined.
    fn shared(&mut self, input: &LogicalPlan, alias: &str) -> Result<Option<LogicalPlan>> {
        let info = self.info_of(input);
        let references = self.counts.get(&info.fingerprint).copied().unwrap_or(0);
        if references < 2 || !info.heavy || info.unsafe_ {
            return Ok(None);
        }
        let kept = self.bodies.get(&info.fingerprint).and_then(|v| v.iter().find(|(first, _)| !info.lossy || first == input));
        let body = match kept {
            Some((_, body)) => Arc::clone(body),
            None => {
                let name = alias.to_string();
                let plan = self.rewrite(input)?.unwrap_or_else(|| input.clone());
                let body = Arc::new(SharedBody::new(name, plan, self.optimized, references));
                self.bodies.entry(info.fingerprint).or_default().push((input.clone(), Arc::clone(&body)));
                body
            }
        };
        Ok(Some(LogicalPlan::Extension(Extension { node: Arc::new(SharedSubplanNode::new(body)) })))
    }
}

/// The alias whose input is a subquery: `FROM cte AS a` is an alias over
/// the CTE's own alias, and the subquery is the inner one's input, whether
/// the reference names an alias or not.
fn reference(p: &LogicalPlan) -> Option<&SubqueryAlias> {
    match p {
        LogicalPlan::SubqueryAlias(a) if !matches!(*a.input, LogicalPlan::SubqueryAlias(_)) => Some(a),
        _ => None,
    }
}

/// Whether one of `p`'s own expressions may give each reference a different
/// answer, or depends on where the subquery sits: a volatile function, an
/// outer reference, a placeholder, or a subquery expression.
fn varies(p: &LogicalPlan) -> bool {
    let mut found = false;
    let _ = p.apply_expressions(|e| {
        found = e
            .exists(|x| {
                Ok(x.is_volatile_node()
                    || matches!(
                        x,
                        Expr::OuterReferenceColumn(..)
                            | Expr::Placeholder(_)
                            | Expr::ScalarSubquery(_)
                            | Expr::Exists(_)
                            | Expr::InSubquery(_)
                            | Expr::SetComparison(_)
                    ))
            })
            .unwrap_or(true);
        Ok(if found { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
    });
    found
}
