/* SPDX-License-Identifier: Apache-2.0 */
/* The V2 build's table functions that return their bind's struct qd_rows
 * (rows.h): computed at bind, returned from one thread. */
#include "v2/rows.h"

#include <stdlib.h>
#include <string.h>

#include "common/rows.h"
#include "common/vectors.h"
#include "v2/bind.h"

void qd_rows_init_v2(duckdb_v2_table_function_init_global_info_handle info, duckdb_v2_context_handle context,
                     duckdb_v2_error_info_handle *err) {
  (void)context, (void)err;
  duckdb_v2_table_function_init_global_set_max_threads(info, 1, NULL);
}

void qd_rows_emit_v2(duckdb_v2_table_function_exec_info_handle info, duckdb_v2_context_handle context,
                     duckdb_v2_error_info_handle *err) {
  (void)context;
  struct qd_rows *r = NULL;
  duckdb_v2_data_chunk_handle out = NULL;
  idx_t cap = 0, n = 0;
  duckdb_v2_table_function_exec_get_bind_data(info, (void **)&r, NULL);
  duckdb_v2_table_function_exec_get_output_chunk(info, &out, NULL);
  if (!r || !out || duckdb_v2_data_chunk_get_capacity(out, &cap, NULL) != DUCKDB_V2_ERROR_NONE)
    return qd_v2_fail(err, "qlink: DuckDB gave no rows or output chunk");
  struct qd_type varchar = {.kind = QD_STRING};
  for (int32_t c = 0; c < r->n_cols; c++) {
    /* column c of the rows left, as one Arrow utf8 array */
    int64_t start = r->next, count = r->n_rows - start < (int64_t)cap ? r->n_rows - start : (int64_t)cap;
    int32_t *offsets = malloc(sizeof(int32_t) * (size_t)(count + 1));
    size_t total = 0;
    for (int64_t i = 0; i < count; i++) total += strlen(r->cells[(start + i) * r->n_cols + c]);
    char *bytes = malloc(total ? total : 1);
    duckdb_v2_vector_handle v = NULL;
    duckdb_v2_data_chunk_get_vector(out, (idx_t)c, &v, NULL);
    int rc = offsets && bytes && v ? 0 : -1;
    if (rc == 0) {
      offsets[0] = 0;
      for (int64_t i = 0; i < count; i++) {
        const char *s = r->cells[(start + i) * r->n_cols + c];
        size_t len = strlen(s);
        memcpy(bytes + offsets[i], s, len);
        offsets[i + 1] = offsets[i] + (int32_t)len;
      }
      const void *buffers[3] = {NULL, offsets, bytes};
      struct ArrowArray a = {.length = count, .n_buffers = 3, .buffers = buffers};
      rc = qd_copy(&varchar, &a, 0, (idx_t)count, v, 0);
    }
    free(offsets);
    free(bytes);
    if (rc != 0) return qd_v2_fail(err, "qlink: out of memory");
    n = (idx_t)count;
  }
  r->next += (int64_t)n;
  duckdb_v2_vector_handle first = NULL;
  duckdb_v2_data_chunk_get_vector(out, 0, &first, NULL);
  if (first) duckdb_v2_vector_set_size(first, n, NULL);
}
