/* SPDX-License-Identifier: Apache-2.0 */
/* What the V1 build adds to common/vectors.h (v1/vectors.c). */
#ifndef QLINK_DUCKDB_V1_VECTORS_H
#define QLINK_DUCKDB_V1_VECTORS_H

#include "capi.h"
#include "common/types.h"

/* The DuckDB logical type of `t`; the caller destroys it. */
duckdb_logical_type qd_logical_type(const struct qd_type *t);

#endif /* QLINK_DUCKDB_V1_VECTORS_H */
