/* SPDX-License-Identifier: Apache-2.0 */
/* The V1 build's vectors (common/vectors.h, v1/vectors.h): DuckDB's stable
 * C API reaches a vector's memory through duckdb_vector_get_data and
 * duckdb_vector_get_validity, and stores strings with
 * duckdb_vector_assign_string_element_len. */
#include "v1/vectors.h"

#include <string.h>

#include "common/vectors.h"

duckdb_logical_type qd_logical_type(const struct qd_type *t) {
  if (t->kind == QD_DECIMAL) return duckdb_create_decimal_type(t->precision, t->scale);
  return duckdb_create_logical_type((duckdb_type)t->duckdb);
}

int qd_copy(const struct qd_type *t, const struct ArrowArray *a, int64_t from, idx_t n, qd_vector v, idx_t to) {
  uint64_t *mask = NULL;
  if (qd_arrow_validity(a)) {
    duckdb_vector_ensure_validity_writable(v);
    if (!(mask = duckdb_vector_get_validity(v))) return -1;
  }
  uint8_t *data = duckdb_vector_get_data(v);
  if (!data) return -1;
  qd_copy_values(t, a, from, n, mask, data, to);
  for (idx_t r = 0; t->kind == QD_STRING && r < n; r++) {
    const char *s;
    idx_t len;
    int got = qd_string_at(t, a, from + (int64_t)r, &s, &len);
    if (got < 0) return QD_MALFORMED;
    if (got) duckdb_vector_assign_string_element_len(v, to + r, s, len);
  }
  return 0;
}

int qd_vector_cells(qd_vector v, idx_t n, struct ql_cell *cells, int64_t stride, int32_t *type) {
  duckdb_logical_type lt = duckdb_vector_get_column_type(v);
  int32_t id = (int32_t)duckdb_get_type_id(lt);
  int32_t storage = id == DUCKDB_TYPE_DECIMAL ? (int32_t)duckdb_decimal_internal_type(lt) : id;
  double scale = 1;
  for (int s = id == DUCKDB_TYPE_DECIMAL ? duckdb_decimal_scale(lt) : 0; s > 0; s--) scale *= 10;
  duckdb_destroy_logical_type(&lt);
  *type = id;
  int kind = qd_cell_kind_of(id);
  if (kind < 0 || (id == DUCKDB_TYPE_DECIMAL && storage == DUCKDB_TYPE_HUGEINT)) return -1;
  const void *data = duckdb_vector_get_data(v);
  uint64_t *valid = duckdb_vector_get_validity(v);
  for (idx_t r = 0; r < n; r++) {
    struct ql_cell *c = &cells[(int64_t)r * stride];
    memset(c, 0, sizeof(*c));
    if (kind == QL_CELL_NULL || (valid && !duckdb_validity_row_is_valid(valid, r))) continue;
    c->kind = kind;
    if (qd_number_cell(id, storage, scale, data, r, c)) continue;
    duckdb_string_t *str = (duckdb_string_t *)data + r; /* VARCHAR, BLOB */
    c->data = duckdb_string_t_data(str);
    c->size = duckdb_string_t_length(*str);
  }
  return 0;
}
