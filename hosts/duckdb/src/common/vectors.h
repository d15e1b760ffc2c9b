/* The DuckDB host: Arrow arrays into DuckDB vectors (scan results, function
 * results) and DuckDB vectors as libqlink cells (function arguments). Uses
 * DuckDB's extension API; the type rules are types.h's. */
#ifndef QLINK_DUCKDB_VECTORS_H
#define QLINK_DUCKDB_VECTORS_H

#include "ext_internal.h"
#include "qlink/lib/args.h"
#include "types.h"

/* Copy rows [from, from + n) of `a` (an array of type `t`, offset
 * honoured) into rows [to, to + n) of `v`, validity included. 0, or -1
 * when DuckDB refused the vector's memory (V2: out of memory). */
int qd_copy(const struct qd_type *t, const struct ArrowArray *a, int64_t from, idx_t n, qd_vector v, idx_t to);

/* Read the first `n` rows of `v` into cells[r * stride] (strings borrow the
 * vector's memory; a DECIMAL is the double nearest its value). -1 when the
 * vector's type has no cell kind (qd_cell_kind_of) or is a DECIMAL wider
 * than 18 digits, with its type id (types.h's, V1's ids) in *type. */
int qd_vector_cells(qd_vector v, idx_t n, struct ql_cell *cells, int64_t stride, int32_t *type);

#ifdef QD_CAPI_V2
/* The V1 type id (types.h) of a V2 logical type; -1 for a type V1 has no
 * id for, QD_T_ANY for ANY and for a type not known yet (UNKNOWN). With `scale` non-NULL and a DECIMAL: its width and scale. */
int32_t qd_v2_type_id(duckdb_v2_logical_type_handle t, uint8_t *width, uint8_t *scale);
/* DuckDB's type of `t`, made through `factory`; NULL if DuckDB refused
 * it. The caller destroys it. */
duckdb_v2_logical_type_handle qd_v2_logical_type(duckdb_v2_factory_handle factory, const struct qd_type *t);
#else
/* The DuckDB logical type of `t`; the caller destroys it. */
duckdb_logical_type qd_logical_type(const struct qd_type *t);
#endif

#endif /* QLINK_DUCKDB_VECTORS_H */
