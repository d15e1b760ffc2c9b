// SPDX-License-Identifier: Apache-2.0
//! Volatility and argument signatures between function.h and DataFusion.

use datafusion::logical_expr::{Signature, TypeSignature, Volatility};

use crate::convert::data_type_of_format;
use crate::error::cstr;
use crate::ffi::*;

pub fn volatility_of(v: Volatility) -> i32 {
    match v {
        Volatility::Immutable => QL_IMMUTABLE,
        Volatility::Stable => QL_STABLE,
        Volatility::Volatile => QL_VOLATILE,
    }
}

fn df_volatility(v: i32) -> Volatility {
    match v {
        QL_STABLE => Volatility::Stable,
        QL_VOLATILE => Volatility::Volatile,
        _ => Volatility::Immutable,
    }
}

pub(super) fn signature_of(s: &ql_signature) -> Signature {
    let vol = df_volatility(s.volatility);
    if s.n_args < 0 {
        return Signature::variadic_any(vol);
    }
    if s.n_args == 0 {
        return Signature::new(TypeSignature::Nullary, vol);
    }
    if s.arg_formats.is_null() {
        return Signature::any(s.n_args as usize, vol);
    }
    let mut types = Vec::new();
    for i in 0..s.n_args as usize {
        // SAFETY: n_args format strings.
        let f = cstr(unsafe { *s.arg_formats.add(i) });
        match data_type_of_format(&f) {
            Some(t) => types.push(t),
            None => return Signature::any(s.n_args as usize, vol),
        }
    }
    if types.is_empty() {
        return Signature::new(TypeSignature::Nullary, vol);
    }
    Signature::exact(types, vol)
}
