/* The DuckDB host: Arrow arrays into DuckDB vectors and DuckDB vectors as
 * libqlink cells (vectors.h). qd_copy serves both builds: the few calls
 * that reach a vector's memory differ between C API V1 and V2. */
#include "vectors.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Element i of a flat vector's `data` of type `id` (QD_T_*, the stable C
 * API's duckdb_type values) into `c`, whose kind is already set: numbers
 * and booleans (a DECIMAL as its integer of type `storage`, SMALLINT,
 * INTEGER or BIGINT, over `div`). 1 when read, 0 for a string type (the
 * caller reads its own string struct). */
static int qd_number_cell(int32_t id, int32_t storage, double div, const void *data, idx_t i, struct ql_cell *c) {
  switch (id) {
    case QD_T_DECIMAL: { /* a REAL: the scaled integer over 10^scale */
      int64_t x = storage == QD_T_SMALLINT  ? ((const int16_t *)data)[i]
                  : storage == QD_T_INTEGER ? ((const int32_t *)data)[i]
                                            : ((const int64_t *)data)[i];
      c->f = (double)x / div;
      return 1;
    }
    case QD_T_BOOLEAN: c->i = ((const bool *)data)[i]; return 1;
    case QD_T_TINYINT: c->i = ((const int8_t *)data)[i]; return 1;
    case QD_T_SMALLINT: c->i = ((const int16_t *)data)[i]; return 1;
    case QD_T_INTEGER: c->i = ((const int32_t *)data)[i]; return 1;
    case QD_T_BIGINT: c->i = ((const int64_t *)data)[i]; return 1;
    case QD_T_UTINYINT: c->i = ((const uint8_t *)data)[i]; return 1;
    case QD_T_USMALLINT: c->i = ((const uint16_t *)data)[i]; return 1;
    case QD_T_UINTEGER: c->i = ((const uint32_t *)data)[i]; return 1;
    case QD_T_UBIGINT: {
      uint64_t u = ((const uint64_t *)data)[i];
      if (u > (uint64_t)INT64_MAX) c->kind = QL_CELL_REAL, c->f = (double)u; /* reported as out of range */
      else c->i = (int64_t)u;
      return 1;
    }
    case QD_T_FLOAT: c->f = ((const float *)data)[i]; return 1;
    case QD_T_DOUBLE: c->f = ((const double *)data)[i]; return 1;
    default: return 0; /* VARCHAR, BLOB */
  }
}

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

int32_t qd_v2_type_id(duckdb_v2_logical_type_handle t, uint8_t *width, uint8_t *scale) {
  DUCKDB_V2_LOGICAL_TYPE_ID id = DUCKDB_V2_LOGICAL_TYPE_ID_INVALID;
  if (duckdb_v2_logical_type_get_id(t, &id, NULL) != DUCKDB_V2_ERROR_NONE) return -1;
  switch (id) {
    case DUCKDB_V2_LOGICAL_TYPE_ID_SQLNULL: return QD_T_SQLNULL;
    case DUCKDB_V2_LOGICAL_TYPE_ID_ANY:
    case DUCKDB_V2_LOGICAL_TYPE_ID_UNKNOWN: return QD_T_ANY; /* not known yet */
    case DUCKDB_V2_LOGICAL_TYPE_ID_BOOLEAN: return QD_T_BOOLEAN;
    case DUCKDB_V2_LOGICAL_TYPE_ID_TINYINT: return QD_T_TINYINT;
    case DUCKDB_V2_LOGICAL_TYPE_ID_SMALLINT: return QD_T_SMALLINT;
    case DUCKDB_V2_LOGICAL_TYPE_ID_INTEGER: return QD_T_INTEGER;
    case DUCKDB_V2_LOGICAL_TYPE_ID_BIGINT: return QD_T_BIGINT;
    case DUCKDB_V2_LOGICAL_TYPE_ID_UTINYINT: return QD_T_UTINYINT;
    case DUCKDB_V2_LOGICAL_TYPE_ID_USMALLINT: return QD_T_USMALLINT;
    case DUCKDB_V2_LOGICAL_TYPE_ID_UINTEGER: return QD_T_UINTEGER;
    case DUCKDB_V2_LOGICAL_TYPE_ID_UBIGINT: return QD_T_UBIGINT;
    case DUCKDB_V2_LOGICAL_TYPE_ID_HUGEINT: return QD_T_HUGEINT;
    case DUCKDB_V2_LOGICAL_TYPE_ID_UHUGEINT: return QD_T_UHUGEINT;
    case DUCKDB_V2_LOGICAL_TYPE_ID_FLOAT: return QD_T_FLOAT;
    case DUCKDB_V2_LOGICAL_TYPE_ID_DOUBLE: return QD_T_DOUBLE;
    case DUCKDB_V2_LOGICAL_TYPE_ID_DATE: return QD_T_DATE;
    case DUCKDB_V2_LOGICAL_TYPE_ID_TIME: return QD_T_TIME;
    case DUCKDB_V2_LOGICAL_TYPE_ID_TIME_TZ: return QD_T_TIME_TZ;
    case DUCKDB_V2_LOGICAL_TYPE_ID_TIMESTAMP_SEC: return QD_T_TIMESTAMP_S;
    case DUCKDB_V2_LOGICAL_TYPE_ID_TIMESTAMP_MS: return QD_T_TIMESTAMP_MS;
    case DUCKDB_V2_LOGICAL_TYPE_ID_TIMESTAMP: return QD_T_TIMESTAMP;
    case DUCKDB_V2_LOGICAL_TYPE_ID_TIMESTAMP_NS: return QD_T_TIMESTAMP_NS;
    case DUCKDB_V2_LOGICAL_TYPE_ID_TIMESTAMP_TZ: return QD_T_TIMESTAMP_TZ;
    case DUCKDB_V2_LOGICAL_TYPE_ID_INTERVAL: return QD_T_INTERVAL;
    case DUCKDB_V2_LOGICAL_TYPE_ID_VARCHAR: return QD_T_VARCHAR;
    case DUCKDB_V2_LOGICAL_TYPE_ID_BLOB: return QD_T_BLOB;
    case DUCKDB_V2_LOGICAL_TYPE_ID_BIT: return QD_T_BIT;
    case DUCKDB_V2_LOGICAL_TYPE_ID_BIGNUM: return QD_T_BIGNUM;
    case DUCKDB_V2_LOGICAL_TYPE_ID_UUID: return QD_T_UUID;
    case DUCKDB_V2_LOGICAL_TYPE_ID_ENUM: return QD_T_ENUM;
    case DUCKDB_V2_LOGICAL_TYPE_ID_LIST: return QD_T_LIST;
    case DUCKDB_V2_LOGICAL_TYPE_ID_STRUCT: return QD_T_STRUCT;
    case DUCKDB_V2_LOGICAL_TYPE_ID_MAP: return QD_T_MAP;
    case DUCKDB_V2_LOGICAL_TYPE_ID_UNION: return QD_T_UNION;
    case DUCKDB_V2_LOGICAL_TYPE_ID_ARRAY: return QD_T_ARRAY;
    case DUCKDB_V2_LOGICAL_TYPE_ID_DECIMAL: {
      uint8_t p[2] = {0, 0};
      for (idx_t i = 0; i < 2 && scale; i++) { /* width, then scale, as UTINYINT values */
        duckdb_v2_identifier_t pname;
        duckdb_v2_value_handle v = NULL;
        if (duckdb_v2_logical_type_get_param(t, i, &pname, &v, NULL) == DUCKDB_V2_ERROR_NONE) {
          duckdb_v2_value_get_utinyint(v, &p[i], NULL);
          duckdb_v2_value_destroy(&v);
        }
      }
      if (width) *width = p[0];
      if (scale) *scale = p[1];
      return QD_T_DECIMAL;
    }
    default: return -1;
  }
}

duckdb_v2_logical_type_handle qd_v2_logical_type(duckdb_v2_factory_handle factory, const struct qd_type *t) {
  char text[64];
  if (t->kind == QD_DECIMAL) snprintf(text, sizeof(text), "DECIMAL(%u,%u)", t->precision, t->scale);
  else snprintf(text, sizeof(text), "%s", qd_type_name(t->duckdb));
  duckdb_v2_str ts = {text, strlen(text)};
  duckdb_v2_logical_type_handle lt = NULL;
  return duckdb_v2_factory_create_type_from_text(factory, &ts, &lt, NULL) == DUCKDB_V2_ERROR_NONE ? lt : NULL;
}

int qd_vector_cells(qd_vector v, idx_t n, struct ql_cell *cells, int64_t stride, int32_t *type) {
  duckdb_v2_logical_type_handle lt = NULL;
  uint8_t width = 0, scale = 0;
  int32_t id = -1;
  if (duckdb_v2_vector_get_logical_type(v, &lt, NULL) == DUCKDB_V2_ERROR_NONE) {
    id = qd_v2_type_id(lt, &width, &scale);
    duckdb_v2_logical_type_destroy(&lt);
  }
  *type = id;
  int kind = qd_cell_kind_of(id);
  if (kind < 0 || (id == QD_T_DECIMAL && width > 18)) return -1;
  double div = 1;
  for (int s = id == QD_T_DECIMAL ? scale : 0; s > 0; s--) div *= 10;
  int32_t storage = width <= 4 ? QD_T_SMALLINT : width <= 9 ? QD_T_INTEGER : QD_T_BIGINT;
  DUCKDB_V2_VECTOR_TYPE vt = DUCKDB_V2_VECTOR_TYPE_OTHER;
  duckdb_v2_vector_get_vector_type(v, &vt, NULL);
  if (vt == DUCKDB_V2_VECTOR_TYPE_OTHER && duckdb_v2_vector_flatten(v, NULL) != DUCKDB_V2_ERROR_NONE) return -1;
  duckdb_v2_vector_view view;
  memset(&view, 0, sizeof(view));
  if (duckdb_v2_vector_get_view(v, &view, NULL) != DUCKDB_V2_ERROR_NONE) return -1;
  const void *data = view.data;
  for (idx_t r = 0; r < n; r++) {
    struct ql_cell *c = &cells[(int64_t)r * stride];
    memset(c, 0, sizeof(*c));
    idx_t i = vt == DUCKDB_V2_VECTOR_TYPE_CONSTANT ? 0 : view.sel ? view.sel[r] : r;
    if (kind == QL_CELL_NULL || (view.validity && !(view.validity[i >> 6] & ((uint64_t)1 << (i & 63))))) continue;
    c->kind = kind;
    if (qd_number_cell(id, storage, div, data, i, c)) continue;
    const duckdb_v2_bytes *b = (const duckdb_v2_bytes *)data + i; /* VARCHAR, BLOB */
    c->size = b->value.inlined.length;
    c->data = c->size <= DUCKDB_V2_BYTES_INLINE_LENGTH ? b->value.inlined.inlined : b->value.pointer.ptr;
  }
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
#endif
