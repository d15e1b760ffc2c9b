/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: a netCDF file's bytes (any format libnetcdf reads),
 * served from a memory:// store as qlink_netcdf serves such files: opened
 * with nc_open_mem, the model built (every coordinate read), then every
 * array of every table read whole and its first cells decoded. Must never
 * crash, leak or read out of bounds; a bad file is an error. Inputs whose
 * variables hold over 2^16 cells are skipped (the harness's bound on
 * memory, not the plugin's), and so are HDF5 files (netCDF-4; README:
 * Limits): the classic formats, libnetcdf's own parser, are the subject. */
#include <netcdf.h>
#include <netcdf_mem.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ncf.h"
#include "qlink/lib/object_store.h"
#include "qlink/lib/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__asan_default_options(void);

/* A file declaring huge dimensions, or very many variables, would make the
 * harness allocate and read for a long time: such inputs are not this
 * target's subject (parsing them is, and nc_open_mem above does it). */
static int small_enough(const uint8_t *data, size_t size) {
  int ncid, ok = 1, ndims = 0;
  /* HDF5 files: HDF5 1.10's parser leaks on some corrupt files (README: Limits); the classic formats
   * are libnetcdf's own parser, fuzzed here with the plugin */
  if (size >= 4 && memcmp(data, "\x89HDF", 4) == 0) return 0;
  /* the plugin's own check comes first on every route into libnetcdf */
  struct ql_error err = {0};
  if (ncf_header_check(-1, data, size, "fuzz", &err) != QL_OK) {
    ql_error_release(&err);
    return 1; /* the plugin's open gives the same error */
  }
  ncf_lock();
  if (nc_open_mem("fuzz", NC_NOWRITE, size, (void *)data, &ncid) != NC_NOERR) {
    ncf_unlock();
    return 1; /* the plugin's own open gives the error */
  }
  if (nc_inq_ndims(ncid, &ndims) != NC_NOERR) ndims = 0;
  int nvars = 0;
  if (nc_inq_nvars(ncid, &nvars) != NC_NOERR) nvars = 0;
  /* Bounded work per input (a few hundred ms): at most 256 variables and
   * 64 dimensions of at most 2^16 cells each, 2^18 in all. */
  if (nvars > 256 || ndims > 64) ok = 0;
  double total = 0;
  for (int v = 0; ok && v < nvars; v++) {
    int nd = 0, dimids[NC_MAX_VAR_DIMS];
    if (nc_inq_var(ncid, v, NULL, NULL, &nd, dimids, NULL) != NC_NOERR) continue;
    double cells = 1;
    for (int d = 0; d < nd; d++) {
      size_t len = 0;
      if (nc_inq_dimlen(ncid, dimids[d], &len) == NC_NOERR) cells *= (double)(len ? len : 1);
    }
    total += cells;
    ok = cells <= (double)(1 << 16) && total <= (double)(1 << 18);
  }
  nc_close(ncid);
  ncf_unlock();
  return ok;
}

static void read_tables(const struct zr_dataset *ds) {
  for (int32_t t = 0; t < ds->n_tables; t++) {
    const struct zr_table *tb = &ds->tables[t];
    for (int32_t c = 0; c < tb->n_columns; c++) {
      const struct zr_column *col = &tb->columns[c];
      if (col->array < 0) continue;
      const struct zr_array *a = &ds->group.arrays[col->array];
      int64_t lo[ZR_MAX_DIMS] = {0}, n = 1;
      for (int32_t i = 0; i < a->ndim; i++) n *= a->shape[i];
      if (n <= 0 || n > (1 << 20)) continue;
      uint8_t *out = malloc((size_t)(n * a->dtype.size));
      struct zr_heap heap = {0};
      struct ql_error err = {0};
      int64_t chunks = 0, bytes = 0;
      if (out && zr_dataset_read_box(ds, col->array, lo, a->shape, out, &heap, NULL, &chunks, &bytes, &err) == QL_OK &&
          a->dtype.type != ZR_VLEN) {
        for (int64_t k = 0; k < n && k < 16; k++) {
          struct zr_value v;
          zr_decode_value(&col->dec, out + k * a->dtype.size, &v);
        }
      }
      ql_error_release(&err);
      zr_heap_free(&heap);
      free(out);
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!small_enough(data, size)) return 0;
  struct ql_ref_store_registry *reg = NULL;
  struct ql_error err = {0};
  if (ql_ref_store_registry_new(&reg, &err) != QL_OK) abort();
  const struct ql_object_store_registry *view = ql_ref_store_registry_view(reg);
  struct ql_object_store mem;
  memset(&mem, 0, sizeof(mem));
  if (ql_memory_store_new(&mem, &err) != QL_OK ||
      ql_ref_store_registry_register(reg, "memory://", &mem, &err) != QL_OK ||
      view->get_store(view, "memory://", &mem, &err) != QL_OK) {
    abort();
  }
  if (ql_memory_store_put(&mem, "f.nc", size ? data : (const uint8_t *)"", (int64_t)size, &err) != QL_OK) abort();
  mem.release(&mem);
  struct zr_dataset *ds = NULL;
  if (ncf_dataset_open(view, "memory:///f.nc", NULL, NULL, NULL, 1, ZR_NAN_FILL_NULL, &ds, &err) == QL_OK) {
    read_tables(ds);
    for (int32_t t = 0; t < ds->n_tables; t++) {
      struct ArrowSchema schema;
      struct ql_error e2 = {0};
      if (zr_table_schema(ds, &ds->tables[t], &schema, &e2) == QL_OK && schema.release) schema.release(&schema);
      ql_error_release(&e2);
    }
    zr_dataset_unref(ds);
  }
  ql_error_release(&err);
  ql_ref_store_registry_free(reg);
  return 0;
}

/* Allocation failures are errors the plugin reports, not crashes. */
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }
