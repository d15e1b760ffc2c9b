/* SPDX-License-Identifier: Apache-2.0 */
/* What the V2 build adds to common/vectors.h (v2/vectors.c): its type ids
 * and logical types. */
#ifndef QLINK_DUCKDB_V2_VECTORS_H
#define QLINK_DUCKDB_V2_VECTORS_H

#include "capi.h"
#include "common/types.h"

/* The V1 type id (types.h) of a V2 logical type; -1 for a type V1 has no
 * id for, QD_T_ANY for ANY and for a type not known yet (UNKNOWN). With `scale` non-NULL and a DECIMAL: its width and scale. */
int32_t qd_v2_type_id(duckdb_v2_logical_type_handle t, uint8_t *width, uint8_t *scale);
/* DuckDB's type of `t`, made through `factory`; NULL if DuckDB refused
 * it. The caller destroys it. */
duckdb_v2_logical_type_handle qd_v2_logical_type(duckdb_v2_factory_handle factory, const struct qd_type *t);

#endif /* QLINK_DUCKDB_V2_VECTORS_H */
