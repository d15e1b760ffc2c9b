/* SPDX-License-Identifier: Apache-2.0 */
/* The DuckDB host: Arrow arrays into DuckDB vectors (scan results, function
 * results) and DuckDB vectors as libqlink cells (function arguments). The
 * type rules are types.h's.
 *
 * qd_copy and qd_vector_cells reach a vector's memory, which each C API
 * reaches its own way: each build defines them (v1/vectors.c,
 * v2/vectors.c) over the helpers below (vectors.c), which touch memory
 * only. */
#ifndef QLINK_DUCKDB_VECTORS_H
#define QLINK_DUCKDB_VECTORS_H

#include <stdint.h>

#include "capi.h"
#include "common/types.h"
#include "qlink/lib/args.h"

/* Copy rows [from, from + n) of `a` (an array of type `t`, offset
 * honoured) into rows [to, to + n) of `v`, validity included. 0, -1
 * when DuckDB refused the vector's memory (V2: out of memory), or
 * QD_MALFORMED when a string view names bytes `a` does not have (the
 * plugin's array is wrong; nothing is read outside it). Each build's. */
#define QD_MALFORMED (-2)
int qd_copy(const struct qd_type *t, const struct ArrowArray *a, int64_t from, idx_t n, qd_vector v, idx_t to);

/* Read the first `n` rows of `v` into cells[r * stride] (strings borrow the
 * vector's memory; a DECIMAL is the double nearest its value). -1 when the
 * vector's type has no cell kind (qd_cell_kind_of) or is a DECIMAL wider
 * than 18 digits, with its type id (types.h's, V1's ids) in *type. Each
 * build's. */
int qd_vector_cells(qd_vector v, idx_t n, struct ql_cell *cells, int64_t stride, int32_t *type);

/* ---- the memory side, shared (vectors.c) */

/* The validity bitmap of `a` when it has nulls to copy, else NULL. */
const uint8_t *qd_arrow_validity(const struct ArrowArray *a);
/* qd_copy's work on plain memory: the nulls of rows [from, from + n) of
 * `a` cleared in DuckDB's validity `mask` (non-NULL whenever
 * qd_arrow_validity(a) is), and their values written into `data` (the
 * vector's data, row 0) from row `to` on, for every kind but QD_STRING
 * (qd_string_at gives those, each build stores them). */
void qd_copy_values(const struct qd_type *t, const struct ArrowArray *a, int64_t from, idx_t n, uint64_t *mask,
                    uint8_t *data, idx_t to);
/* Row i of string array `a` (utf8 or binary, large, not, or views): 1
 * with its bytes in *s and *len, 0 when it is null, -1 when a view names
 * bytes the array does not have (ql_array_view_at). */
int qd_string_at(const struct qd_type *t, const struct ArrowArray *a, int64_t i, const char **s, idx_t *len);
/* Element i of a flat vector's `data` of type `id` (QD_T_*, the stable C
 * API's duckdb_type values) into `c`, whose kind is already set: numbers
 * and booleans (a DECIMAL as its integer of type `storage`, SMALLINT,
 * INTEGER or BIGINT, over `div`). 1 when read, 0 for a string type (the
 * caller reads its own string struct). */
int qd_number_cell(int32_t id, int32_t storage, double div, const void *data, idx_t i, struct ql_cell *c);

#endif /* QLINK_DUCKDB_VECTORS_H */
