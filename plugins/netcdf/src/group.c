/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_netcdf: a netCDF group's variables as the table model's arrays
 * (ncf.h: ncf_read_group). Called with the lock held. */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attrs.h"
#include "ncf.h"
#include "qlink/lib/status.h"

void ncf_vars_free(struct ncf_var *vars, int64_t n) {
  for (int64_t i = 0; vars && i < n; i++) {
    free(vars[i].varids);
    free(vars[i].rebase);
  }
  free(vars);
}

/* The model's element type of netCDF type `t`; 0 (and a name) when not
 * served. */
static int map_type(nc_type t, struct zr_dtype *d, const char **what) {
  memset(d, 0, sizeof(*d));
  static const struct {
    nc_type nc;
    int32_t type, size;
  } map[] = {{NC_BYTE, ZR_INT, 1},   {NC_UBYTE, ZR_UINT, 1},  {NC_SHORT, ZR_INT, 2},   {NC_USHORT, ZR_UINT, 2},
             {NC_INT, ZR_INT, 4},    {NC_UINT, ZR_UINT, 4},   {NC_INT64, ZR_INT, 8},   {NC_UINT64, ZR_UINT, 8},
             {NC_FLOAT, ZR_FLOAT, 4}, {NC_DOUBLE, ZR_FLOAT, 8}, {NC_CHAR, ZR_BYTES, 1}, {NC_STRING, ZR_VLEN, 16}};
  for (size_t k = 0; k < sizeof(map) / sizeof(map[0]); k++) {
    if (map[k].nc == t) {
      d->type = map[k].type;
      d->size = map[k].size;
      d->swap_unit = map[k].type == ZR_VLEN ? 1 : map[k].size;
      return 1;
    }
  }
  *what = "a user-defined type (compound, variable-length, opaque or enum)";
  return 0;
}

/* The array of variable `varid`: dtype, dimensions, shape, HDF5 chunks (0
 * where the variable is contiguous: set by slab_chunks), attributes. A char
 * variable's last dimension is folded into its dtype (xarray's
 * CharacterArrayCoder: fixed-width strings over the other dimensions). */
static int read_var(const struct ncf_file *f, int varid, struct zr_array *a, struct ncf_var *v,
                    struct ql_error *error) {
  char name[NC_MAX_NAME + 1];
  nc_type type;
  int ndims = 0, dimids[NC_MAX_VAR_DIMS];
  int st = nc_inq_var(f->gid, varid, name, &type, &ndims, NULL, NULL);
  if (st != NC_NOERR) return ql_error_set(error, QL_EDATA, "netcdf file %s: variable %d: %s", f->label, varid, nc_strerror(st));
  if (!(a->name = strdup(name))) return ql_error_set(error, QL_ENOMEM, "out of memory");
  const char *what = NULL;
  if (!map_type(type, &a->dtype, &what)) {
    return ql_error_set(error, QL_ENOTSUP, "netcdf file %s: variable '%s' has %s, which is not served", f->label, name,
                        what);
  }
  if (ndims > ZR_MAX_DIMS) {
    return ql_error_set(error, QL_ENOTSUP, "netcdf file %s: variable '%s' has %d dimensions (at most %d)", f->label, name,
                        ndims, ZR_MAX_DIMS);
  }
  st = nc_inq_vardimid(f->gid, varid, dimids);
  int storage = NC_CONTIGUOUS;
  size_t chunks[NC_MAX_VAR_DIMS];
  if (st == NC_NOERR && ndims > 0) st = nc_inq_var_chunking(f->gid, varid, &storage, chunks);
  if (st != NC_NOERR) return ql_error_set(error, QL_EDATA, "netcdf file %s: variable '%s': %s", f->label, name, nc_strerror(st));
  v->nc_type = type;
  v->nc_ndim = ndims;
  v->rec_axis = -1;
  a->zarr_format = 3;
  a->key_sep = '/';
  a->ndim = ndims;
  for (int i = 0; i < ndims; i++) {
    char dname[NC_MAX_NAME + 1];
    size_t len = 0;
    st = nc_inq_dim(f->gid, dimids[i], dname, &len);
    if (st != NC_NOERR) return ql_error_set(error, QL_EDATA, "netcdf file %s: variable '%s': %s", f->label, name, nc_strerror(st));
    if (!(a->dims[i] = strdup(dname))) return ql_error_set(error, QL_ENOMEM, "out of memory");
    a->shape[i] = (int64_t)len;
    a->chunks[i] = storage == NC_CHUNKED ? (int64_t)chunks[i] : 0;
  }
  if (type == NC_CHAR && ndims >= 1 && a->shape[ndims - 1] >= 1 && a->shape[ndims - 1] <= INT32_MAX) {
    a->ndim = ndims - 1;
    a->dtype.size = (int32_t)a->shape[ndims - 1];
    free(a->dims[ndims - 1]);
    a->dims[ndims - 1] = NULL;
    a->shape[ndims - 1] = a->chunks[ndims - 1] = 0;
  }
  a->fill = calloc(1, (size_t)a->dtype.size + 1);
  a->fill_is_null = 1;
  if (!a->fill) return ql_error_set(error, QL_ENOMEM, "out of memory");
  int rc = ncf_attrs_json(f->gid, varid, &a->attrs, error);
  if (rc != QL_OK) return ql_error_prefix(error, "netcdf file %s: variable '%s'", f->label, name);
  return QL_OK;
}

/* Contiguous variables (every netCDF-3 variable) read in record slabs:
 * along their first dimension as many rows as the chunked variables of that
 * dimension chunk it by (the smallest), or else about NCF_SLAB_ELEMENTS
 * elements of the widest variable along it; their other axes whole. One
 * extent per dimension, so a table's variables share their blocks. */
static void slab_chunks(struct zr_group *g) {
  for (int64_t k = 0; k < g->n_arrays; k++) {
    struct zr_array *a = &g->arrays[k];
    if (a->ndim == 0 || a->chunks[0] > 0) continue;
    const char *dim = a->dims[0];
    int64_t chunked = 0, widest = 1;
    for (int64_t j = 0; j < g->n_arrays; j++) {
      const struct zr_array *b = &g->arrays[j];
      for (int32_t ax = 0; ax < b->ndim; ax++) {
        if (strcmp(b->dims[ax], dim) != 0) continue;
        if (b->chunks[ax] > 0 && (chunked == 0 || b->chunks[ax] < chunked)) chunked = b->chunks[ax];
        if (ax == 0 && b->chunks[0] == 0) {
          int64_t row = 1;
          for (int32_t i = 1; i < b->ndim; i++) row *= b->shape[i] > 0 ? b->shape[i] : 1;
          if (row > widest) widest = row;
        }
      }
    }
    int64_t slab = chunked > 0 ? chunked : NCF_SLAB_ELEMENTS / widest;
    a->chunks[0] = slab < 1 ? 1 : slab;
  }
  for (int64_t k = 0; k < g->n_arrays; k++) {
    struct zr_array *a = &g->arrays[k];
    for (int32_t i = 0; i < a->ndim; i++) {
      if (a->chunks[i] <= 0) a->chunks[i] = a->shape[i] > 0 ? a->shape[i] : 1;
      if (a->chunks[i] > a->shape[i] && a->shape[i] > 0) a->chunks[i] = a->shape[i];
    }
  }
}

/* The names of the group's child groups, noted for messages. */
static void note_subgroups(const struct ncf_file *f, struct zr_group *g) {
  int n = 0;
  if (nc_inq_grps(f->gid, &n, NULL) != NC_NOERR || n <= 0) return;
  int *ids = calloc((size_t)n, sizeof(*ids));
  if (!ids || nc_inq_grps(f->gid, &n, ids) != NC_NOERR) {
    free(ids);
    return;
  }
  size_t cap = 256, len = 0;
  char *text = calloc(cap, 1);
  for (int i = 0; text && i < n; i++) {
    char name[NC_MAX_NAME + 1];
    if (nc_inq_grpname(ids[i], name) != NC_NOERR) continue;
    if (len + strlen(name) + 8 >= cap) {
      strcpy(text + len, len ? ", ..." : "...");
      break;
    }
    len += (size_t)snprintf(text + len, cap - len, "%s%s", len ? ", " : "", name);
  }
  free(ids);
  g->subgroups = text;
  g->n_subgroups = n;
}

/* Arrays in name order, as qlink_zarr's stores list them (the model keeps
 * the group's order within each kind of column). */
static void sort_by_name(struct zr_group *g, struct ncf_var *vars) {
  for (int64_t i = 1; i < g->n_arrays; i++) {
    for (int64_t j = i; j > 0 && strcmp(g->arrays[j - 1].name, g->arrays[j].name) > 0; j--) {
      struct zr_array a = g->arrays[j];
      g->arrays[j] = g->arrays[j - 1];
      g->arrays[j - 1] = a;
      struct ncf_var v = vars[j];
      vars[j] = vars[j - 1];
      vars[j - 1] = v;
    }
  }
}

int ncf_read_group(const struct ncf_file *f, int32_t n_files, struct zr_group *g, struct ncf_var **vars,
                   struct ql_error *error) {
  memset(g, 0, sizeof(*g));
  *vars = NULL;
  g->zarr_format = 3;
  int nvars = 0;
  int st = nc_inq_nvars(f->gid, &nvars);
  if (st != NC_NOERR) return ql_error_set(error, QL_EDATA, "netcdf file %s: %s", f->label, nc_strerror(st));
  g->arrays = calloc((size_t)nvars + 1, sizeof(*g->arrays));
  *vars = calloc((size_t)nvars + 1, sizeof(**vars));
  if (!g->arrays || !*vars) return ql_error_set(error, QL_ENOMEM, "out of memory");
  int rc = ncf_attrs_json(f->gid, NC_GLOBAL, &g->attrs, error);
  if (rc != QL_OK) return ql_error_prefix(error, "netcdf file %s: global attributes", f->label);
  note_subgroups(f, g);
  for (int k = 0; k < nvars; k++) {
    g->n_arrays = k + 1;
    (*vars)[k].varids = calloc((size_t)n_files, sizeof(int));
    if (!(*vars)[k].varids) return ql_error_set(error, QL_ENOMEM, "out of memory");
    (*vars)[k].varids[0] = k;
    QL_RETURN_NOT_OK(read_var(f, k, &g->arrays[k], &(*vars)[k], error));
  }
  sort_by_name(g, *vars);
  slab_chunks(g);
  return QL_OK;
}
