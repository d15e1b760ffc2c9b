/* The DuckDB host: Arrow arrays into DuckDB vectors and DuckDB vectors as
 * libqlink cells (vectors.h). */
#include "vectors.h"

#include <string.h>

duckdb_logical_type qd_logical_type(const struct qd_type *t) {
  if (t->kind == QD_DECIMAL) return duckdb_create_decimal_type(t->precision, t->scale);
  return duckdb_create_logical_type((duckdb_type)t->duckdb);
}

void qd_copy(const struct qd_type *t, const struct ArrowArray *a, int64_t from, idx_t n, duckdb_vector v, idx_t to) {
  int64_t off = a->offset + from;
  const uint8_t *valid = a->null_count != 0 ? a->buffers[0] : NULL;
  if (valid) {
    duckdb_vector_ensure_validity_writable(v);
    uint64_t *mask = duckdb_vector_get_validity(v);
    for (idx_t r = 0; r < n; r++) {
      int64_t i = off + (int64_t)r;
      if (!(valid[i >> 3] & (1u << (i & 7)))) duckdb_validity_set_row_invalid(mask, to + r);
    }
  }
  uint8_t *dst = (uint8_t *)duckdb_vector_get_data(v) + to * (idx_t)(t->kind == QD_STRING ? 0 : t->width);
  const uint8_t *src = a->n_buffers > 1 ? a->buffers[1] : NULL;
  switch (t->kind) {
    case QD_FIXED:
    case QD_TIMESTAMP:
      memcpy(dst, src + off * t->width, n * (size_t)t->width);
      break;
    case QD_BOOL:
      for (idx_t r = 0; r < n; r++) {
        int64_t i = off + (int64_t)r;
        dst[r] = (src[i >> 3] >> (i & 7)) & 1;
      }
      break;
    case QD_DATE64:
      for (idx_t r = 0; r < n; r++) {
        int64_t ms = ((const int64_t *)src)[off + (int64_t)r];
        int64_t d = ms / 86400000 - (ms % 86400000 < 0);
        ((int32_t *)dst)[r] = (int32_t)d;
      }
      break;
    case QD_TIMESTAMPTZ:
      for (idx_t r = 0; r < n; r++) {
        int64_t x = ((const int64_t *)src)[off + (int64_t)r];
        ((int64_t *)dst)[r] = t->unit_den > 1 ? (x - ((x % t->unit_den + t->unit_den) % t->unit_den)) / t->unit_den
                                              : x * t->unit_num;
      }
      break;
    case QD_DURATION:
      for (idx_t r = 0; r < n; r++) {
        int64_t x = ((const int64_t *)src)[off + (int64_t)r];
        duckdb_interval iv = {0, 0, t->unit_den > 1 ? x / t->unit_den : x * t->unit_num};
        memcpy(dst + r * sizeof(iv), &iv, sizeof(iv));
      }
      break;
    case QD_DECIMAL:
      for (idx_t r = 0; r < n; r++) {
        const uint8_t *x = src + (off + (int64_t)r) * 16;
        int64_t lo;
        memcpy(&lo, x, 8);
        if (t->width == 16) memcpy(dst + r * 16, x, 16);
        else if (t->width == 8) ((int64_t *)dst)[r] = lo;
        else if (t->width == 4) ((int32_t *)dst)[r] = (int32_t)lo;
        else ((int16_t *)dst)[r] = (int16_t)lo;
      }
      break;
    case QD_STRING:
      for (idx_t r = 0; r < n; r++) {
        int64_t i = off + (int64_t)r, s, e;
        if (t->large) {
          s = ((const int64_t *)a->buffers[1])[i], e = ((const int64_t *)a->buffers[1])[i + 1];
        } else {
          s = ((const int32_t *)a->buffers[1])[i], e = ((const int32_t *)a->buffers[1])[i + 1];
        }
        if (valid && !(valid[i >> 3] & (1u << (i & 7)))) continue;
        duckdb_vector_assign_string_element_len(v, to + r, (const char *)a->buffers[2] + s, (idx_t)(e - s));
      }
      break;
    default:
      break;
  }
}


int qd_vector_cells(duckdb_vector v, idx_t n, struct ql_cell *cells, int64_t stride, int32_t *type) {
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
    if (id == DUCKDB_TYPE_DECIMAL) { /* a REAL: the scaled integer over 10^scale */
      int64_t x = storage == DUCKDB_TYPE_SMALLINT ? ((const int16_t *)data)[r]
                : storage == DUCKDB_TYPE_INTEGER  ? ((const int32_t *)data)[r]
                                                  : ((const int64_t *)data)[r];
      c->f = (double)x / scale;
      continue;
    }
    switch (id) {
      case DUCKDB_TYPE_BOOLEAN: c->i = ((const bool *)data)[r]; break;
      case DUCKDB_TYPE_TINYINT: c->i = ((const int8_t *)data)[r]; break;
      case DUCKDB_TYPE_SMALLINT: c->i = ((const int16_t *)data)[r]; break;
      case DUCKDB_TYPE_INTEGER: c->i = ((const int32_t *)data)[r]; break;
      case DUCKDB_TYPE_BIGINT: c->i = ((const int64_t *)data)[r]; break;
      case DUCKDB_TYPE_UTINYINT: c->i = ((const uint8_t *)data)[r]; break;
      case DUCKDB_TYPE_USMALLINT: c->i = ((const uint16_t *)data)[r]; break;
      case DUCKDB_TYPE_UINTEGER: c->i = ((const uint32_t *)data)[r]; break;
      case DUCKDB_TYPE_UBIGINT: {
        uint64_t u = ((const uint64_t *)data)[r];
        if (u > (uint64_t)INT64_MAX) c->kind = QL_CELL_REAL, c->f = (double)u; /* reported as out of range */
        else c->i = (int64_t)u;
        break;
      }
      case DUCKDB_TYPE_FLOAT: c->f = ((const float *)data)[r]; break;
      case DUCKDB_TYPE_DOUBLE: c->f = ((const double *)data)[r]; break;
      default: { /* VARCHAR, BLOB */
        duckdb_string_t *s = (duckdb_string_t *)data + r;
        c->data = duckdb_string_t_data(s);
        c->size = duckdb_string_t_length(*s);
        break;
      }
    }
  }
  return 0;
}
