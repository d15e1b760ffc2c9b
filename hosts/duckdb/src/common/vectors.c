/* SPDX-License-Identifier: Apache-2.0 */
/* The DuckDB host: the memory side of vectors.h, shared by both builds:
 * Arrow values into a vector's data and validity, numbers out of a
 * vector's data. No DuckDB call: each build's qd_copy and qd_vector_cells
 * (v1/vectors.c, v2/vectors.c) get the memory and call these. */
#include "common/vectors.h"

#include <stdbool.h>
#include <string.h>

#include "qlink/lib/arrow.h"
#include "qlink/lib/status.h"

int qd_number_cell(int32_t id, int32_t storage, double div, const void *data, idx_t i, struct ql_cell *c) {
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

const uint8_t *qd_arrow_validity(const struct ArrowArray *a) { return a->null_count != 0 ? a->buffers[0] : NULL; }

void qd_copy_values(const struct qd_type *t, const struct ArrowArray *a, int64_t from, idx_t n, uint64_t *mask,
                    uint8_t *data, idx_t to) {
  int64_t off = a->offset + from;
  const uint8_t *valid = qd_arrow_validity(a);
  if (valid) {
    for (idx_t r = 0; r < n; r++) {
      int64_t i = off + (int64_t)r;
      if (!(valid[i >> 3] & (1u << (i & 7)))) mask[(to + r) >> 6] &= ~((uint64_t)1 << ((to + r) & 63));
    }
  }
  uint8_t *dst = data + to * (idx_t)(t->kind == QD_STRING ? 0 : t->width);
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
        qd_interval iv = {0, 0, t->unit_den > 1 ? x / t->unit_den : x * t->unit_num};
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
    default: /* QD_STRING: each build's qd_copy, through qd_string_at */
      break;
  }
}

int qd_string_at(const struct qd_type *t, const struct ArrowArray *a, int64_t i, const char **s, idx_t *len) {
  const uint8_t *valid = qd_arrow_validity(a);
  if (valid && !(valid[(a->offset + i) >> 3] & (1u << ((a->offset + i) & 7)))) return 0;
  if (t->view) {
    struct ql_error error = {0};
    const uint8_t *bytes;
    int64_t n;
    if (ql_array_view_at(a, i, &bytes, &n, &error) != QL_OK) {
      ql_error_release(&error);
      return -1;
    }
    *s = (const char *)bytes;
    *len = (idx_t)n;
    return 1;
  }
  i += a->offset;
  int64_t start, end;
  if (t->large) {
    start = ((const int64_t *)a->buffers[1])[i], end = ((const int64_t *)a->buffers[1])[i + 1];
  } else {
    start = ((const int32_t *)a->buffers[1])[i], end = ((const int32_t *)a->buffers[1])[i + 1];
  }
  *s = (const char *)a->buffers[2] + start;
  *len = (idx_t)(end - start);
  return 1;
}
