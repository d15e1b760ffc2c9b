/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: a dataset's tables as qlink table providers and its schema
 * provider (provider.h), whatever the dataset's chunk source. */
#include "qlink_zarr/provider.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"
#include "scan.h"

/* ------------------------------------------------------- table provider */

struct zr_provider {
  struct zr_dataset *ds;
  int32_t table;
};

static struct zr_provider *provider_of(const struct ql_table_provider *self) { return self->private_data; }

static int tp_get_schema(const struct ql_table_provider *self, struct ArrowSchema *out, struct ql_error *error) {
  struct zr_provider *p = provider_of(self);
  return zr_table_schema(p->ds, &p->ds->tables[p->table], out, error);
}

static int tp_get_statistics(const struct ql_table_provider *self, struct ql_statistics *out, struct ql_error *error) {
  struct zr_provider *p = provider_of(self);
  return zr_statistics(p->ds, &p->ds->tables[p->table], NULL, NULL, -1, -1, out, error);
}

static int tp_supports_filters(const struct ql_table_provider *self, const struct ql_expr_list *filters,
                               int32_t *answers, struct ql_error *error) {
  (void)error;
  struct zr_provider *p = provider_of(self);
  for (int32_t i = 0; i < filters->n_exprs; i++) {
    answers[i] = filters->view && zr_filter_supported(p->ds, &p->ds->tables[p->table], filters->view, filters->exprs[i])
                     ? QL_PUSHDOWN_EXACT
                     : QL_PUSHDOWN_UNSUPPORTED;
  }
  return QL_OK;
}

/* The session's target partition count; 0 when the host does not say. */
int64_t zr_target_partitions(const struct ql_session *session) {
  if (!session || !session->config_get) return 0;
  char buf[32];
  size_t len = 0;
  struct ql_error err;
  memset(&err, 0, sizeof(err));
  int rc = session->config_get(session, QL_CONFIG_TARGET_PARTITIONS, buf, sizeof(buf), &len, &err);
  ql_error_release(&err);
  if (rc != QL_OK || len >= sizeof(buf)) return 0;
  char *end = NULL;
  long long n = strtoll(buf, &end, 10);
  return end != buf && *end == '\0' && n > 0 ? (int64_t)n : 0;
}

static int tp_scan(const struct ql_table_provider *self, const struct ql_session *session,
                   const struct ql_scan_args *args, struct ql_execution_plan *out, struct ql_error *error) {
  struct zr_provider *p = provider_of(self);
  return zr_scan_plan_new(p->ds, p->table, args, zr_target_partitions(session), out, error);
}

static void tp_release(struct ql_table_provider *self) {
  if (!self->release) return;
  struct zr_provider *p = provider_of(self);
  zr_dataset_unref(p->ds);
  free(p);
  self->release = NULL;
  self->private_data = NULL;
}

int zr_table_provider_new(struct zr_dataset *ds, int32_t table, struct ql_table_provider *out, struct ql_error *error) {
  struct zr_provider *p = calloc(1, sizeof(*p));
  if (!p) return ql_error_set(error, QL_ENOMEM, "out of memory");
  p->ds = zr_dataset_ref(ds);
  p->table = table;
  memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  out->table_type = QL_TABLE_BASE;
  out->get_schema = tp_get_schema;
  out->get_statistics = tp_get_statistics;
  out->supports_filters = tp_supports_filters;
  out->scan = tp_scan;
  out->release = tp_release;
  out->private_data = p;
  return QL_OK;
}

/* ------------------------------------------------------ schema provider */

static struct zr_dataset *sp_ds(const struct ql_schema_provider *self) { return self->private_data; }

static int64_t sp_table_count(const struct ql_schema_provider *self) { return sp_ds(self)->n_tables; }

static const char *sp_table_name(const struct ql_schema_provider *self, int64_t i) {
  struct zr_dataset *ds = sp_ds(self);
  return i >= 0 && i < ds->n_tables ? ds->tables[i].name : NULL;
}

static int sp_table(const struct ql_schema_provider *self, const char *name, struct ql_table_provider *out,
                    struct ql_error *error) {
  struct zr_dataset *ds = sp_ds(self);
  int32_t t = name ? zr_dataset_find_table(ds, name) : -1;
  if (t < 0) {
    char list[1024];
    return ql_error_set(error, QL_ENOTFOUND, "%s has no table '%s' (tables: %s)", ds->label,
                        name ? name : "", zr_dataset_table_list(ds, list, sizeof(list)));
  }
  return zr_table_provider_new(ds, t, out, error);
}

static void sp_release(struct ql_schema_provider *self) {
  if (!self->release) return;
  zr_dataset_unref(sp_ds(self));
  self->release = NULL;
  self->private_data = NULL;
}

void zr_schema_provider_new(struct zr_dataset *ds, struct ql_schema_provider *out) {
  memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  out->table_count = sp_table_count;
  out->table_name = sp_table_name;
  out->table = sp_table;
  out->release = sp_release;
  out->private_data = ds;
}

int zr_table_provider_find(struct zr_dataset *ds, const char *want, struct ql_table_provider *out,
                           struct ql_error *error) {
  int32_t t = zr_dataset_find_table(ds, want);
  if (t < 0) {
    char list[1024];
    return ql_error_set(error, QL_ENOTFOUND, "%s has no table '%s' (tables: %s)", ds->label, want ? want : "",
                        zr_dataset_table_list(ds, list, sizeof(list)));
  }
  return zr_table_provider_new(ds, t, out, error);
}

int zr_parse_block_rows(const char *text, const char *what, int64_t *out, struct ql_error *error) {
  *out = ZR_DEFAULT_BLOCK_ROWS;
  if (!text) return QL_OK;
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (end == text || *end != '\0' || v < 1) {
    return ql_error_set(error, QL_EINVAL, "%s: option 'block_rows' must be a positive integer (got '%s')", what, text);
  }
  /* strtoll clamps an overflow to LLONG_MAX and says so only in errno */
  if (errno == ERANGE || v > ZR_MAX_BLOCK_ROWS) {
    return ql_error_set(error, QL_EINVAL, "%s: option 'block_rows' is out of range (1 .. %lld, got '%s')", what,
                        (long long)ZR_MAX_BLOCK_ROWS, text);
  }
  *out = (int64_t)v;
  return QL_OK;
}

int zr_parse_nan_fill(const char *text, const char *what, int32_t dflt, int32_t null_is, int allow_all,
                      const char *accepted, int32_t *out, struct ql_error *error) {
  *out = dflt;
  if (!text) return QL_OK;
  if (strcmp(text, "null") == 0) {
    *out = null_is;
  } else if (strcmp(text, "nan") == 0) {
    *out = ZR_NAN_FILL_NAN;
  } else if (allow_all && strcmp(text, "all") == 0) {
    *out = ZR_NAN_FILL_ALL;
  } else {
    return ql_error_set(error, QL_EINVAL, "%s: option 'nan_fill' must be %s (got '%s')", what, accepted, text);
  }
  return QL_OK;
}

/* ---------------------------------------------- items these plugins lack */

static int not_found(const struct ql_plugin *self, const char *kind, const char *name, struct ql_error *error) {
  return ql_error_set(error, QL_ENOTFOUND, "%s has no %s '%s'", self->name, kind, name ? name : "");
}

static int no_scalar(const struct ql_plugin *self, const char *name, struct ql_scalar_function *out,
                     struct ql_error *error) {
  (void)out;
  return not_found(self, "scalar function", name, error);
}
static int no_aggregate(const struct ql_plugin *self, const char *name, struct ql_aggregate_function *out,
                        struct ql_error *error) {
  (void)out;
  return not_found(self, "aggregate function", name, error);
}
static int no_window(const struct ql_plugin *self, const char *name, struct ql_window_function *out,
                     struct ql_error *error) {
  (void)out;
  return not_found(self, "window function", name, error);
}
static int no_table_function(const struct ql_plugin *self, const char *name, struct ql_table_function *out,
                             struct ql_error *error) {
  (void)out;
  return not_found(self, "table function", name, error);
}
static int no_planner(const struct ql_plugin *self, const char *name, const struct ql_options *options,
                      struct ql_planner *out, struct ql_error *error) {
  (void)options;
  (void)out;
  return not_found(self, "planner", name, error);
}
static int no_object_store(const struct ql_plugin *self, const char *name, const char *url,
                           const struct ql_options *options, struct ql_object_store *out, struct ql_error *error) {
  (void)url;
  (void)options;
  (void)out;
  return not_found(self, "object store", name, error);
}

static void plugin_release(struct ql_plugin *self) { self->release = NULL; }

int zr_plugin_fill(uint32_t abi_version, const struct ql_plugin *own, struct ql_plugin *out, struct ql_error *error) {
  if (abi_version != QL_ABI_VERSION_0_1) {
    return ql_error_set(error, QL_EVERSION, "%s serves ABI 0.1 only; asked for %u.%u", own->name,
                        QL_ABI_VERSION_MAJOR(abi_version), QL_ABI_VERSION_MINOR(abi_version));
  }
  if (!out) return ql_error_set(error, QL_EINVAL, "qlink_plugin_init: out is NULL");
  memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  out->magic = QL_PLUGIN_MAGIC;
  out->abi_version = abi_version;
  out->n_items = own->n_items;
  out->name = own->name;
  out->version = own->version;
  out->description = own->description;
  out->items = own->items;
  out->table_provider_open = own->table_provider_open;
  out->schema_provider_open = own->schema_provider_open;
  out->scalar_function_open = no_scalar;
  out->aggregate_function_open = no_aggregate;
  out->window_function_open = no_window;
  out->table_function_open = no_table_function;
  out->planner_open = no_planner;
  out->object_store_open = no_object_store;
  out->release = plugin_release;
  out->private_data = own->private_data;
  return QL_OK;
}
