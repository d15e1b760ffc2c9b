/* SPDX-License-Identifier: Apache-2.0 */
/* The V2 build's vectors (common/vectors.h, v2/vectors.h): C API V2
 * reaches a vector's memory through its mutable data and validity, gives
 * DuckDB's 16-byte string layout to fill (from the vector's arena), and
 * names types by its own ids, mapped here onto types.h's (V1's). */
#include "v2/vectors.h"

#include <stdio.h>
#include <string.h>

#include "common/vectors.h"

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

int qd_copy(const struct qd_type *t, const struct ArrowArray *a, int64_t from, idx_t n, qd_vector v, idx_t to) {
  uint64_t *mask = NULL;
  void *data = NULL;
  if (qd_arrow_validity(a) &&
      (duckdb_v2_vector_flat_get_validity_mutable(v, &mask, NULL) != DUCKDB_V2_ERROR_NONE || !mask))
    return -1;
  if (duckdb_v2_vector_get_data_mutable(v, &data, NULL) != DUCKDB_V2_ERROR_NONE || !data) return -1;
  qd_copy_values(t, a, from, n, mask, data, to);
  if (t->kind != QD_STRING) return 0;
  duckdb_v2_arena_handle arena = NULL;
  if (duckdb_v2_vector_get_arena(v, &arena, NULL) != DUCKDB_V2_ERROR_NONE) return -1;
  for (idx_t r = 0; r < n; r++) {
    const char *s;
    idx_t len;
    int got = qd_string_at(t, a, from + (int64_t)r, &s, &len);
    if (got < 0) return QD_MALFORMED;
    if (got && qd_set_bytes(arena, (duckdb_v2_bytes *)data + to + r, s, len) != 0) return -1;
  }
  return 0;
}
