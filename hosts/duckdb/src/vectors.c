/* The DuckDB host: Arrow arrays into DuckDB vectors and DuckDB vectors as
 * libqlink cells (vectors.h). qd_copy serves both builds: the few calls
 * that reach a vector's memory differ between C API V1 and V2. */
#include "vectors.h"

#include <string.h>

#ifdef QD_CAPI_V2
static uint64_t *qd_vector_validity(qd_vector v) {
  uint64_t *mask = NULL;
  return duckdb_v2_vector_flat_get_validity_mutable(v, &mask, NULL) == DUCKDB_V2_ERROR_NONE ? mask : NULL;
}

static void *qd_vector_data(qd_vector v) {
  void *data = NULL;
  return duckdb_v2_vector_get_data_mutable(v, &data, NULL) == DUCKDB_V2_ERROR_NONE ? data : NULL;
}

/* A string or blob value in DuckDB's 16-byte layout: inline up to 12
 * bytes, else in the vector's arena with a 4-byte prefix. */
static int qd_set_bytes(duckdb_v2_arena_handle arena, duckdb_v2_bytes *out, const char *s, idx_t len) {
  memset(out, 0, sizeof(*out));
  out->value.inlined.length = (uint32_t)len;
  if (len <= DUCKDB_V2_BYTES_INLINE_LENGTH) {
    if (len) memcpy(out->value.inlined.inlined, s, len);
    return 0;
  }
  uint8_t *copy = NULL;
  if (duckdb_v2_arena_allocate(arena, len, &copy, NULL) != DUCKDB_V2_ERROR_NONE || !copy) return -1;
  memcpy(copy, s, len);
  memcpy(out->value.pointer.prefix, s, 4);
  out->value.pointer.ptr = (char *)copy;
  return 0;
}
#else
duckdb_logical_type qd_logical_type(const struct qd_type *t) {
  if (t->kind == QD_DECIMAL) return duckdb_create_decimal_type(t->precision, t->scale);
  return duckdb_create_logical_type((duckdb_type)t->duckdb);
}

static uint64_t *qd_vector_validity(qd_vector v) {
  duckdb_vector_ensure_validity_writable(v);
  return duckdb_vector_get_validity(v);
}

static void *qd_vector_data(qd_vector v) { return duckdb_vector_get_data(v); }
#endif

int qd_copy(const struct qd_type *t, const struct ArrowArray *a, int64_t from, idx_t n, qd_vector v, idx_t to) {
  int64_t off = a->offset + from;
  const uint8_t *valid = a->null_count != 0 ? a->buffers[0] : NULL;
  if (valid) {
    uint64_t *mask = qd_vector_validity(v);
    if (!mask) return -1;
    for (idx_t r = 0; r < n; r++) {
      int64_t i = off + (int64_t)r;
      if (!(valid[i >> 3] & (1u << (i & 7)))) mask[(to + r) >> 6] &= ~((uint64_t)1 << ((to + r) & 63));
    }
  }
  uint8_t *dst = qd_vector_data(v);
  if (!dst) return -1;
  dst += to * (idx_t)(t->kind == QD_STRING ? 0 : t->width);
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
#ifdef QD_CAPI_V2
        duckdb_v2_interval_t iv = {0, 0, t->unit_den > 1 ? x / t->unit_den : x * t->unit_num};
#else
        duckdb_interval iv = {0, 0, t->unit_den > 1 ? x / t->unit_den : x * t->unit_num};
#endif
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
    case QD_STRING: {
#ifdef QD_CAPI_V2
      duckdb_v2_arena_handle arena = NULL;
      if (duckdb_v2_vector_get_arena(v, &arena, NULL) != DUCKDB_V2_ERROR_NONE) return -1;
#endif
      for (idx_t r = 0; r < n; r++) {
        int64_t i = off + (int64_t)r, s, e;
        if (t->large) {
          s = ((const int64_t *)a->buffers[1])[i], e = ((const int64_t *)a->buffers[1])[i + 1];
        } else {
          s = ((const int32_t *)a->buffers[1])[i], e = ((const int32_t *)a->buffers[1])[i + 1];
        }
        if (valid && !(valid[i >> 3] & (1u << (i & 7)))) continue;
#ifdef QD_CAPI_V2
        if (qd_set_bytes(arena, (duckdb_v2_bytes *)dst + to + r, (const char *)a->buffers[2] + s, (idx_t)(e - s)) != 0)
          return -1;
#else
        duckdb_vector_assign_string_element_len(v, to + r, (const char *)a->buffers[2] + s, (idx_t)(e - s));
#endif
      }
      break;
    }
    default:
      break;
  }
  return 0;
}

#ifndef QD_CAPI_V2

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
#endif
