/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_netcdf: a dataset over one or several netCDF files (ncf.h:
 * ncf_dataset_open): the files opened through the host's gate, the first
 * file's variables as the model's arrays, the others checked against it
 * and concatenated along the record dimension. */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncf.h"
#include "qlink/lib/status.h"

static void ncf_release(struct zr_dataset *ds) {
  struct ncf_source *src = ds->source.ctx;
  if (!src) return;
  ncf_lock();
  for (int32_t i = 0; i < src->n_files; i++) ncf_file_close(&src->files[i]);
  ncf_unlock();
  free(src->files);
  ncf_vars_free(src->vars, src->n_vars);
  free(src);
  ds->source.ctx = NULL;
}

/* The record dimension's name: `concat_dim`, else the first file's (first)
 * unlimited dimension. */
static int record_dim(const struct ncf_file *f, const char *concat_dim, const char *spec, char *out,
                      struct ql_error *error) {
  if (concat_dim && concat_dim[0]) {
    if (strlen(concat_dim) > NC_MAX_NAME) return ql_error_set(error, QL_EINVAL, "netcdf files %s: concat_dim is too long", spec);
    strcpy(out, concat_dim);
    return QL_OK;
  }
  int n = 0, ids[NC_MAX_DIMS];
  int st = nc_inq_unlimdims(f->gid, &n, ids);
  if (st == NC_NOERR && n == 0 && f->gid != f->ncid) st = nc_inq_unlimdims(f->ncid, &n, ids);
  if (st != NC_NOERR || n < 1) {
    return ql_error_set(error, QL_EINVAL,
                        "netcdf files %s: several files, but %s has no unlimited dimension to concatenate them along "
                        "(name one with concat_dim=)",
                        spec, f->label);
  }
  st = nc_inq_dimname(f->gid, ids[0], out);
  return st == NC_NOERR ? QL_OK : ql_error_set(error, QL_EDATA, "netcdf file %s: %s", f->label, nc_strerror(st));
}

static int64_t find_array(const struct zr_group *g, const char *name) {
  for (int64_t k = 0; k < g->n_arrays; k++) {
    if (strcmp(g->arrays[k].name, name) == 0) return k;
  }
  return -1;
}

/* File k's arrays (g, vars) against the first file's (ds->group): the same
 * variables, types and dimensions, every extent equal but the record
 * dimension's. */
static int check_same(const struct zr_dataset *ds, const struct ncf_source *src, int32_t k, const struct zr_group *g,
                      const struct ncf_var *vars, const char *rec, const char *spec, struct ql_error *error) {
  const char *first = src->files[0].label, *this = src->files[k].label;
  for (int64_t j = 0; j < g->n_arrays; j++) {
    if (find_array(&ds->group, g->arrays[j].name) < 0) {
      return ql_error_set(error, QL_EINVAL, "netcdf files %s: %s has variable '%s', %s has not", spec, this,
                          g->arrays[j].name, first);
    }
  }
  for (int64_t j = 0; j < ds->group.n_arrays; j++) {
    const struct zr_array *a = &ds->group.arrays[j];
    int64_t m = find_array(g, a->name);
    if (m < 0) return ql_error_set(error, QL_EINVAL, "netcdf files %s: %s has no variable '%s' (%s has)", spec, this, a->name, first);
    const struct zr_array *b = &g->arrays[m];
    int same = vars[m].nc_type == src->vars[j].nc_type && b->ndim == a->ndim && b->dtype.size == a->dtype.size;
    for (int32_t i = 0; same && i < a->ndim; i++) {
      same = strcmp(a->dims[i], b->dims[i]) == 0 && (strcmp(a->dims[i], rec) == 0 || a->shape[i] == b->shape[i]);
    }
    if (!same) {
      return ql_error_set(error, QL_EINVAL,
                          "netcdf files %s: variable '%s' differs between %s and %s (type, dimensions, or an extent "
                          "other than the record dimension '%s')",
                          spec, a->name, first, this, rec);
    }
    src->vars[j].varids[k] = vars[m].varids[0];
    int on_record = 0;
    for (int32_t i = 0; i < a->ndim; i++) on_record |= strcmp(a->dims[i], rec) == 0;
    /* variables along the record dimension must decode alike; the others are the first file's */
    if (on_record && ncf_rebase_plan(a, b, &src->vars[j], k, src->n_files, error) != QL_OK) {
      return ql_error_prefix(error, "netcdf files %s: %s", spec, this);
    }
  }
  return QL_OK;
}

/* Records of file `f` along `rec`. */
static int record_len(const struct ncf_file *f, const char *rec, int64_t *out, struct ql_error *error) {
  int dimid;
  size_t len = 0;
  int st = nc_inq_dimid(f->gid, rec, &dimid);
  if (st == NC_NOERR) st = nc_inq_dimlen(f->gid, dimid, &len);
  if (st != NC_NOERR) {
    return ql_error_set(error, QL_EINVAL, "netcdf file %s: no record dimension '%s' (%s)", f->label, rec, nc_strerror(st));
  }
  *out = (int64_t)len;
  return QL_OK;
}

/* Concatenate the files along the record dimension (lock held). */
static int merge_files(struct zr_dataset *ds, const char *concat_dim, const char *spec, struct ql_error *error) {
  struct ncf_source *src = ds->source.ctx;
  char rec[NC_MAX_NAME + 1];
  QL_RETURN_NOT_OK(record_dim(&src->files[0], concat_dim, spec, rec, error));
  int64_t total = 0;
  for (int32_t k = 0; k < src->n_files; k++) {
    struct ncf_file *f = &src->files[k];
    QL_RETURN_NOT_OK(record_len(f, rec, &f->rec_len, error));
    f->rec_start = total;
    total += f->rec_len;
    if (k == 0) continue;
    struct zr_group g;
    struct ncf_var *vars = NULL;
    int rc = ncf_read_group(f, 1, &g, &vars, error);
    if (rc == QL_OK) rc = check_same(ds, src, k, &g, vars, rec, spec, error);
    ncf_vars_free(vars, g.n_arrays);
    zr_group_free(&g);
    QL_RETURN_NOT_OK(rc);
  }
  for (int64_t j = 0; j < ds->group.n_arrays; j++) {
    struct zr_array *a = &ds->group.arrays[j];
    for (int32_t i = 0; i < a->ndim && src->vars[j].rec_axis < 0; i++) {
      if (strcmp(a->dims[i], rec) != 0) continue;
      src->vars[j].rec_axis = i;
      a->shape[i] = total;
    }
  }
  return QL_OK;
}

/* Open every input and read the group (lock held). */
static int open_files(struct zr_dataset *ds, struct ncf_input *inputs, int32_t n, const char *group,
                      const char *concat_dim, const char *spec, struct ql_error *error) {
  struct ncf_source *src = ds->source.ctx;
  src->files = calloc((size_t)n, sizeof(*src->files));
  if (!src->files) return ql_error_set(error, QL_ENOMEM, "out of memory");
  for (int32_t i = 0; i < n; i++) {
    src->n_files = i + 1;
    QL_RETURN_NOT_OK(ncf_file_open(&inputs[i], group, &src->files[i], error));
  }
  int rc = ncf_read_group(&src->files[0], n, &ds->group, &src->vars, error);
  src->n_vars = ds->group.n_arrays;
  QL_RETURN_NOT_OK(rc);
  return n > 1 ? merge_files(ds, concat_dim, spec, error) : QL_OK;
}

static int label_dataset(struct zr_dataset *ds, const char *spec, int32_t n_files, const char *group) {
  size_t len = strlen(spec) + (group ? strlen(group) : 0) + 64;
  ds->label = malloc(len);
  ds->origin = malloc(len);
  if (!ds->label || !ds->origin) return QL_ENOMEM;
  int grouped = group && group[0] && strcmp(group, "/") != 0;
  if (n_files > 1) snprintf(ds->label, len, "netcdf files %s (%d files)", spec, (int)n_files);
  else snprintf(ds->label, len, "netcdf file %s", spec);
  if (grouped) snprintf(ds->label + strlen(ds->label), len - strlen(ds->label), " group %s", group);
  snprintf(ds->origin, len, "path=%s%s%s", spec, grouped ? " group=" : "", grouped ? group : "");
  return QL_OK;
}

int ncf_dataset_open(const struct ql_object_store_registry *registry, const char *path, const char *group,
                     const char *concat_dim, const char *renames, int64_t min_block_rows, int32_t nan_fill,
                     struct zr_dataset **out, struct ql_error *error) {
  *out = NULL;
  struct ncf_input *inputs = NULL;
  int32_t n = 0;
  QL_RETURN_NOT_OK(ncf_inputs_resolve(registry, path, &inputs, &n, error));
  struct zr_dataset *ds = zr_dataset_alloc(min_block_rows);
  struct ncf_source *src = ds ? calloc(1, sizeof(*src)) : NULL;
  if (!src) {
    if (ds) zr_dataset_unref(ds);
    ncf_inputs_free(inputs, n);
    return ql_error_set(error, QL_ENOMEM, "out of memory");
  }
  ds->source.ctx = src;
  ds->source.read_box = ncf_read_box;
  ds->source.release = ncf_release;
  ds->nan_fill = nan_fill;
  ds->plan_name = "NetcdfScanExec";
  int rc = label_dataset(ds, path, n, group) == QL_OK ? QL_OK : ql_error_set(error, QL_ENOMEM, "out of memory");
  if (rc == QL_OK) {
    ncf_lock();
    rc = open_files(ds, inputs, n, group, concat_dim, path, error);
    ncf_unlock();
  }
  ncf_inputs_free(inputs, n);
  if (rc == QL_OK) rc = zr_dataset_build(ds, renames, error);
  if (rc == QL_OK && ds->n_tables == 0) {
    rc = ql_error_set(error, QL_ENOTFOUND, "%s has no variables%s%s%s", ds->label,
                      ds->group.subgroups ? " (its groups: " : "", ds->group.subgroups ? ds->group.subgroups : "",
                      ds->group.subgroups ? "; serve one with the option group=/NAME)" : "");
  }
  if (rc != QL_OK) {
    zr_dataset_unref(ds);
    return rc;
  }
  *out = ds;
  return QL_OK;
}
