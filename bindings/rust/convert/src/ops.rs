// SPDX-License-Identifier: Apache-2.0
//! DataFusion's binary operators and `enum ql_binary_op` (qlink/plan.h).

use datafusion::logical_expr::Operator;
use qlink_sys::*;

/// Every operator the ABI names, with its DataFusion operator.
const OPS: &[(i32, Operator)] = &[
    (QL_OP_EQ, Operator::Eq),
    (QL_OP_NE, Operator::NotEq),
    (QL_OP_LT, Operator::Lt),
    (QL_OP_LE, Operator::LtEq),
    (QL_OP_GT, Operator::Gt),
    (QL_OP_GE, Operator::GtEq),
    (QL_OP_AND, Operator::And),
    (QL_OP_OR, Operator::Or),
    (QL_OP_PLUS, Operator::Plus),
    (QL_OP_MINUS, Operator::Minus),
    (QL_OP_MULTIPLY, Operator::Multiply),
    (QL_OP_DIVIDE, Operator::Divide),
    (QL_OP_MODULO, Operator::Modulo),
    (QL_OP_IS_DISTINCT_FROM, Operator::IsDistinctFrom),
    (QL_OP_IS_NOT_DISTINCT_FROM, Operator::IsNotDistinctFrom),
    (QL_OP_STRING_CONCAT, Operator::StringConcat),
];

/// The `ql_binary_op` of a DataFusion operator; QL_OP_OTHER for one the ABI
/// does not name.
pub fn op_to_ql(op: &Operator) -> i32 {
    OPS.iter().find(|(_, o)| o == op).map_or(QL_OP_OTHER, |(q, _)| *q)
}

/// The DataFusion operator of a `ql_binary_op`; None for QL_OP_OTHER or an
/// unknown value.
pub fn op_from_ql(op: i32) -> Option<Operator> {
    OPS.iter().find(|(q, _)| *q == op).map(|(_, o)| *o)
}
