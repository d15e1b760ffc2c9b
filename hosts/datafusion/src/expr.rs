// SPDX-License-Identifier: Apache-2.0
//! DataFusion expressions → qlink expression arena (qlink/plan.h), built with
//! libqlink's IR builder: no protobuf, no serialization (design 3.5). What
//! the IR has no kind for becomes QL_EXPR_OTHER with DataFusion's display,
//! which plugins leave alone (and a table provider answers "unsupported").

use std::os::raw::c_char;
use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::{Column, TableReference};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::expr::{AggregateFunction, ScalarFunction, WindowFunctionDefinition};
use datafusion::logical_expr::{Expr, Operator};

use crate::convert::{format_of, scalar_to_ql, static_format, CStrings};
use crate::error::{ErrorSlot, Result};
use crate::ffi::*;
use crate::identity::{self};

/// An owned `ql_plan_view` (released on drop).
pub struct OwnedView(pub ql_plan_view);

// SAFETY: views are immutable once finished (plan.h).
unsafe impl Send for OwnedView {}
unsafe impl Sync for OwnedView {}

impl Drop for OwnedView {
    fn drop(&mut self) {
        if let Some(r) = self.0.release {
            // SAFETY: the builder's release frees the arena.
            unsafe { r(&mut self.0) };
        }
    }
}

/// libqlink's arena builder.
pub struct IrBuilder {
    b: *mut ql_ir_builder,
}

impl Drop for IrBuilder {
    fn drop(&mut self) {
        // SAFETY: made by ql_ir_builder_new.
        unsafe { ql_ir_builder_free(self.b) };
    }
}

impl IrBuilder {
    pub fn new() -> Result<IrBuilder> {
        let mut b = std::ptr::null_mut();
        let mut err = ErrorSlot::new();
        // SAFETY: out pointers valid.
        let st = unsafe { ql_ir_builder_new(&mut b, err.ptr()) };
        err.check(st, "creating an IR builder")?;
        Ok(IrBuilder { b })
    }

    pub fn expr(&mut self, e: &ql_expr) -> ql_expr_id {
        // SAFETY: the builder copies everything `e` points to.
        unsafe { ql_ir_expr(self.b, e) }
    }

    pub fn node(&mut self, n: &ql_plan_node) -> ql_node_id {
        // SAFETY: as above.
        unsafe { ql_ir_node(self.b, n) }
    }

    /// `n` string slots owned by the view-to-be (null after a builder
    /// failure); nodes given the same slots share them.
    pub fn string_array(&mut self, n: usize) -> *mut *const c_char {
        // SAFETY: the builder checks n.
        unsafe { ql_ir_string_array(self.b, n as i64) }
    }

    /// A flat struct schema owned by the view-to-be, shared by every node
    /// given it (null after a builder failure). Slices have one entry per
    /// field; names need no NUL.
    pub fn struct_schema(&mut self, formats: &[*const c_char], names: &[&str], flags: &[i64]) -> *const ArrowSchema {
        let ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr() as *const c_char).collect();
        let lens: Vec<usize> = names.iter().map(|n| n.len()).collect();
        // SAFETY: four arrays of formats.len() entries; the builder copies them.
        unsafe { ql_ir_struct_schema(self.b, formats.len() as i64, formats.as_ptr(), ptrs.as_ptr(), lens.as_ptr(), flags.as_ptr()) }
    }

    /// Fill skeleton node `id` with the payload members of `n` (lazy views).
    pub fn node_expand(&mut self, id: ql_node_id, n: &ql_plan_node) -> Result<()> {
        // SAFETY: the builder copies everything `n` points to.
        let st = unsafe { ql_ir_node_expand(self.b, id, n) };
        if st == QL_OK {
            return Ok(());
        }
        let mut err = ErrorSlot::new();
        // SAFETY: out pointer valid.
        let st = unsafe { ql_ir_builder_status(self.b, err.ptr()) };
        err.check(st, "expanding a plan node")
    }

    /// Point `view` at the builder's current nodes and expressions (a
    /// borrowed view: valid until the builder changes or is dropped).
    pub fn peek(&self, root: ql_node_id, view: &mut ql_plan_view) -> Result<()> {
        let mut err = ErrorSlot::new();
        // SAFETY: out pointers valid.
        let st = unsafe { ql_ir_builder_peek(self.b, root, view, err.ptr()) };
        err.check(st, "building a plan view")
    }

    pub fn finish(&mut self, root: ql_node_id) -> Result<OwnedView> {
        let mut view: ql_plan_view = zeroed();
        let mut err = ErrorSlot::new();
        // SAFETY: out pointers valid.
        let st = unsafe { ql_ir_builder_finish(self.b, root, &mut view, err.ptr()) };
        err.check(st, "building a plan view")?;
        Ok(OwnedView(view))
    }
}

/// Strings copied straight into the view-to-be: the builder shares them
/// instead of copying them again (null after a builder failure).
impl CStrings for IrBuilder {
    fn add(&mut self, s: &str) -> *const c_char {
        // SAFETY: `s` is len bytes; the builder copies them.
        unsafe { ql_ir_string(self.b, s.as_ptr() as *const c_char, s.len()) }
    }
}

fn binary_op(op: &Operator) -> i32 {
    qlink_convert::ops::op_to_ql(op)
}

/// Which schema a lowered column's `column_index` indexes.
pub enum Resolve {
    /// A table's full schema (scan filters, pushdown questions).
    Table(arrow::datatypes::SchemaRef),
    /// A plan node's inputs' schemas, concatenated (a join's left then right).
    Inputs(Vec<datafusion::common::DFSchemaRef>),
}

impl Resolve {
    fn index(&self, c: &Column) -> i32 {
        match self {
            Resolve::Table(s) => s.index_of(&c.name).map(|i| i as i32).unwrap_or(-1),
            Resolve::Inputs(schemas) => {
                let mut offset = 0usize;
                for s in schemas {
                    // maybe_: a miss (a join's right-side column looked up
                    // on the left) must not build an error message.
                    if let Some(i) = s.maybe_index_of_column(c) {
                        return (offset + i) as i32;
                    }
                    offset += s.fields().len();
                }
                -1
            }
        }
    }
}

/// Lowers DataFusion expressions into an IR builder. `resolve` maps a column
/// to its index in whatever schema the receiving node's columns index.
pub struct Lowering {
    /// Strings go straight into the builder's arena (CStrings).
    pub b: IrBuilder,
    pub resolve: Resolve,
    /// Qualifiers already written to `strings` (a plan names few relations,
    /// each on many columns and fields: a short list beats hashing).
    qualifiers: Vec<(TableReference, *const c_char)>,
}

impl Lowering {
    pub fn new(resolve: Resolve) -> Result<Self> {
        Ok(Lowering { b: IrBuilder::new()?, resolve, qualifiers: Vec::new() })
    }

    /// `r` as a C string owned by the view-to-be (written once per relation).
    pub fn qualifier(&mut self, r: &TableReference) -> *const c_char {
        // Most references are clones of the schema's own (one Arc<str>):
        // compare addresses before text.
        let same_text = |q: &TableReference| {
            let (a, b) = (q.table(), r.table());
            a.as_ptr() == b.as_ptr() && a.len() == b.len() && q.schema() == r.schema() && q.catalog() == r.catalog()
        };
        if let Some((_, p)) = self.qualifiers.iter().find(|(q, _)| same_text(q)) {
            return *p;
        }
        if let Some((_, p)) = self.qualifiers.iter().find(|(q, _)| q == r) {
            return *p;
        }
        let p = self.b.add(&r.to_string());
        self.qualifiers.push((r.clone(), p));
        p
    }

    fn other(&mut self, e: &Expr) -> ql_expr_id {
        let mut x = ql_expr::empty(QL_EXPR_OTHER);
        x.name = self.b.add(&e.to_string());
        self.b.expr(&x)
    }

    fn with_args(&mut self, mut x: ql_expr, args: &[ql_expr_id]) -> ql_expr_id {
        x.n_args = args.len() as i32;
        x.args = if args.is_empty() { std::ptr::null() } else { args.as_ptr() };
        self.b.expr(&x)
    }

    fn many(&mut self, es: &[Expr]) -> Vec<ql_expr_id> {
        es.iter().map(|e| self.lower(e)).collect()
    }

    /// The id of `e` in the arena (-1 after a builder failure, which
    /// `finish` reports).
    pub fn lower(&mut self, e: &Expr) -> ql_expr_id {
        match e {
            Expr::Column(c) => {
                let mut x = ql_expr::empty(QL_EXPR_COLUMN);
                x.name = self.b.add(&c.name);
                if let Some(r) = &c.relation {
                    x.qualifier = self.qualifier(r);
                }
                x.column_index = self.resolve.index(c);
                self.b.expr(&x)
            }
            Expr::Literal(v, _) => match scalar_to_ql(v, &mut self.b) {
                Some(s) => {
                    let mut x = ql_expr::empty(QL_EXPR_LITERAL);
                    x.literal = s;
                    x.type_format = s.format;
                    self.b.expr(&x)
                }
                None => self.other(e),
            },
            Expr::BinaryExpr(be) => {
                let op = binary_op(&be.op);
                if op == QL_OP_OTHER {
                    return self.other(e);
                }
                let l = self.lower(&be.left);
                let r = self.lower(&be.right);
                let mut x = ql_expr::empty(QL_EXPR_BINARY);
                x.op = op;
                self.with_args(x, &[l, r])
            }
            Expr::Not(a) => self.unary(QL_EXPR_NOT, a),
            Expr::Negative(a) => self.unary(QL_EXPR_NEGATIVE, a),
            Expr::IsNull(a) => self.unary(QL_EXPR_IS_NULL, a),
            Expr::IsNotNull(a) => self.unary(QL_EXPR_IS_NOT_NULL, a),
            Expr::Cast(c) => self.cast(QL_EXPR_CAST, &c.expr, c.field.data_type()),
            Expr::TryCast(c) => self.cast(QL_EXPR_TRY_CAST, &c.expr, c.field.data_type()),
            Expr::Alias(a) => {
                let arg = self.lower(&a.expr);
                let mut x = ql_expr::empty(QL_EXPR_ALIAS);
                x.name = self.b.add(&a.name);
                self.with_args(x, &[arg])
            }
            Expr::Between(bt) => {
                let args = [self.lower(&bt.expr), self.lower(&bt.low), self.lower(&bt.high)];
                let mut x = ql_expr::empty(QL_EXPR_BETWEEN);
                x.flags = if bt.negated { QL_EXPR_NEGATED } else { 0 };
                self.with_args(x, &args)
            }
            Expr::InList(il) => {
                let mut args = vec![self.lower(&il.expr)];
                args.extend(self.many(&il.list));
                let mut x = ql_expr::empty(QL_EXPR_IN_LIST);
                x.flags = if il.negated { QL_EXPR_NEGATED } else { 0 };
                self.with_args(x, &args)
            }
            Expr::Like(l) if l.escape_char.is_none() => {
                let args = [self.lower(&l.expr), self.lower(&l.pattern)];
                let mut x = ql_expr::empty(QL_EXPR_LIKE);
                x.flags = (if l.negated { QL_EXPR_NEGATED } else { 0 }) | (if l.case_insensitive { QL_EXPR_CASE_INSENSITIVE } else { 0 });
                self.with_args(x, &args)
            }
            Expr::Case(c) => {
                let mut args = Vec::new();
                let mut flags = 0;
                if let Some(op) = &c.expr {
                    args.push(self.lower(op));
                    flags |= QL_CASE_HAS_OPERAND;
                }
                for (w, t) in &c.when_then_expr {
                    args.push(self.lower(w));
                    args.push(self.lower(t));
                }
                if let Some(el) = &c.else_expr {
                    args.push(self.lower(el));
                    flags |= QL_CASE_HAS_ELSE;
                }
                let mut x = ql_expr::empty(QL_EXPR_CASE);
                x.flags = flags;
                self.with_args(x, &args)
            }
            Expr::ScalarFunction(ScalarFunction { func, args }) => {
                let ids = self.many(args);
                let mut x = ql_expr::empty(QL_EXPR_SCALAR_FUNCTION);
                x.name = self.b.add(func.name());
                x.function = identity::scalar_identity(func).raw();
                self.with_args(x, &ids)
            }
            Expr::AggregateFunction(AggregateFunction { func, params }) => {
                if !params.order_by.is_empty() {
                    return self.other(e);
                }
                let ids = self.many(&params.args);
                let mut x = ql_expr::empty(QL_EXPR_AGGREGATE_FUNCTION);
                x.name = self.b.add(func.name());
                x.function = identity::aggregate_identity(func).raw();
                x.flags = if params.distinct { QL_EXPR_DISTINCT } else { 0 };
                x.filter = match &params.filter {
                    Some(f) => self.lower(f),
                    None => -1,
                };
                self.with_args(x, &ids)
            }
            Expr::WindowFunction(w) => {
                let mut ids = self.many(&w.params.args);
                let n_func_args = ids.len() as i32;
                let parts = self.many(&w.params.partition_by);
                let n_partition_by = parts.len() as i32;
                ids.extend(parts);
                for s in &w.params.order_by {
                    let a = self.lower(&s.expr);
                    let mut flags = if s.asc { 0 } else { QL_SORT_DESC };
                    if s.nulls_first {
                        flags |= QL_SORT_NULLS_FIRST;
                    }
                    let mut x = ql_expr::empty(QL_EXPR_SORT);
                    x.flags = flags;
                    ids.push(self.with_args(x, &[a]));
                }
                let mut x = ql_expr::empty(QL_EXPR_WINDOW_FUNCTION);
                let (name, id) = match &w.fun {
                    WindowFunctionDefinition::AggregateUDF(f) => (f.name().to_string(), identity::aggregate_identity(f)),
                    WindowFunctionDefinition::WindowUDF(f) => (f.name().to_string(), identity::window_identity(f)),
                };
                x.name = self.b.add(&name);
                x.function = id.raw();
                x.n_func_args = n_func_args;
                x.n_partition_by = n_partition_by;
                self.with_args(x, &ids)
            }
            _ => self.other(e),
        }
    }

    /// A sort expression (SORT kind) over `e`.
    pub fn sort(&mut self, e: &Expr, asc: bool, nulls_first: bool) -> ql_expr_id {
        let a = self.lower(e);
        let mut x = ql_expr::empty(QL_EXPR_SORT);
        x.flags = (if asc { 0 } else { QL_SORT_DESC }) | (if nulls_first { QL_SORT_NULLS_FIRST } else { 0 });
        self.with_args(x, &[a])
    }

    fn unary(&mut self, kind: i32, a: &Expr) -> ql_expr_id {
        let arg = self.lower(a);
        self.with_args(ql_expr::empty(kind), &[arg])
    }

    fn cast(&mut self, kind: i32, a: &Expr, dt: &DataType) -> ql_expr_id {
        let arg = self.lower(a);
        let mut x = ql_expr::empty(kind);
        x.type_format = match static_format(dt) {
            Some(f) => f.as_ptr(),
            None => self.b.add(&format_of(dt)),
        };
        self.with_args(x, &[arg])
    }
}

/// Filters over a table (columns index its full schema) as an expression
/// arena, with the roots in `ids`.
pub struct FilterList {
    pub view: OwnedView,
    pub ids: Vec<ql_expr_id>,
}

impl FilterList {
    pub fn new(schema: &arrow::datatypes::SchemaRef, filters: &[&Expr]) -> Result<FilterList> {
        if filters.is_empty() {
            // No expressions: an empty borrowed view, no builder round trip.
            let mut view: ql_plan_view = zeroed();
            view.struct_size = std::mem::size_of::<ql_plan_view>() as u32;
            view.root = -1;
            return Ok(FilterList { view: OwnedView(view), ids: Vec::new() });
        }
        let mut low = Lowering::new(Resolve::Table(Arc::clone(schema)))?;
        let ids: Vec<ql_expr_id> = filters.iter().map(|f| low.lower(f)).collect();
        let view = low.b.finish(-1)?;
        if ids.iter().any(|&i| i < 0) {
            return Err(DataFusionError::Internal("building the filter arena failed".into()));
        }
        Ok(FilterList { view, ids })
    }

    pub fn raw(&self) -> ql_expr_list {
        ql_expr_list {
            view: &self.view.0,
            n_exprs: self.ids.len() as i32,
            reserved_: 0,
            exprs: if self.ids.is_empty() { std::ptr::null() } else { self.ids.as_ptr() },
        }
    }
}
