/* qlink_zarr: the plugin descriptor, the `table` table provider and the
 * `store` schema provider. The only exported symbol is qlink_plugin_init. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "qlink/lib/options.h"
#include "qlink/lib/status.h"
#include "qlink/qlink.h"
#include "scan.h"

#define ZR_VERSION "0.1.0"

static const struct ql_option_info table_options[] = {
    {"path", "Zarr store: a local path or a URL the session's object stores serve (file:///x.zarr, memory:///x.zarr)",
     NULL, 1, 0},
    {"table", "which table (a dimension group, by default or new name); default: the only or largest one", NULL, 0, 0},
    {"tables", "rename tables: OLD=NEW,OLD2=NEW2 with OLD a default name (dimension names joined by '_', README: Table names)", NULL, 0, 0},
    {"block_rows", "rows a partition block holds at least (blocks of tiny chunks grow; 1: a block per chunk)", "65536", 0,
     0}};

static const struct ql_option_info store_options[] = {
    {"path", "Zarr store: a local path or a URL the session's object stores serve (file:///x.zarr, memory:///x.zarr)",
     NULL, 1, 0},
    {"tables", "rename tables: OLD=NEW,OLD2=NEW2 with OLD a default name (dimension names joined by '_', README: Table names)", NULL, 0, 0},
    {"block_rows", "rows a partition block holds at least (blocks of tiny chunks grow; 1: a block per chunk)", "65536", 0,
     0}};

static const struct ql_item_info items[] = {
    {QL_ITEM_TABLE_PROVIDER, 4, "table",
     "one table (a dimension group, or 'scalars': the 0-d variables) of a Zarr v2/v3 store", table_options},
    {QL_ITEM_SCHEMA_PROVIDER, 3, "store",
     "every table (each dimension group, and 'scalars' for the 0-d variables) of a Zarr v2/v3 store", store_options}};

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
static int64_t target_partitions(const struct ql_session *session) {
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
  return zr_scan_plan_new(p->ds, p->table, args, target_partitions(session), out, error);
}

static void tp_release(struct ql_table_provider *self) {
  if (!self->release) return;
  struct zr_provider *p = provider_of(self);
  zr_dataset_unref(p->ds);
  free(p);
  self->release = NULL;
  self->private_data = NULL;
}

static int provider_new(struct zr_dataset *ds, int32_t table, struct ql_table_provider *out, struct ql_error *error) {
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

static int open_dataset(const struct ql_options *options, const struct ql_session *session,
                        const struct ql_option_info *known, int32_t n_known, const char *what,
                        struct zr_dataset **out, struct ql_error *error) {
  QL_RETURN_NOT_OK(ql_options_check(options, known, n_known, what, error));
  const char *path = ql_options_get(options, "path", NULL);
  if (!path || !path[0]) return ql_error_set(error, QL_EINVAL, "%s: option 'path' is required", what);
  const struct ql_runtime_env *env = session && session->runtime_env ? session->runtime_env(session) : NULL;
  if (!env || !env->object_stores) {
    return ql_error_set(error, QL_ENOTSUP, "%s: the host offers no object-store registry to read %s", what, path);
  }
  int64_t block_rows = ZR_DEFAULT_BLOCK_ROWS;
  const char *text = ql_options_get(options, "block_rows", NULL);
  if (text) {
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
    block_rows = (int64_t)v;
  }
  return zr_dataset_open(env->object_stores, path, ql_options_get(options, "tables", NULL), block_rows, out, error);
}

static int plugin_table_provider_open(const struct ql_plugin *self, const char *name, const struct ql_options *options,
                                      const struct ql_session *session, struct ql_table_provider *out,
                                      struct ql_error *error) {
  (void)self;
  if (!name || strcmp(name, "table") != 0) {
    return ql_error_set(error, QL_ENOTFOUND, "qlink_zarr has no table provider '%s' (it has 'table')", name ? name : "");
  }
  struct zr_dataset *ds = NULL;
  QL_RETURN_NOT_OK(open_dataset(options, session, table_options, 4, "qlink_zarr/table", &ds, error));
  const char *want = ql_options_get(options, "table", NULL);
  int32_t t = zr_dataset_find_table(ds, want);
  int rc;
  if (t < 0) {
    char list[1024];
    rc = ql_error_set(error, QL_ENOTFOUND, "zarr store %s has no table '%s' (tables: %s)", ds->store.url,
                      want ? want : "", zr_dataset_table_list(ds, list, sizeof(list)));
  } else {
    rc = provider_new(ds, t, out, error);
  }
  zr_dataset_unref(ds);
  return rc;
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
    return ql_error_set(error, QL_ENOTFOUND, "zarr store %s has no table '%s' (tables: %s)", ds->store.url,
                        name ? name : "", zr_dataset_table_list(ds, list, sizeof(list)));
  }
  return provider_new(ds, t, out, error);
}

static void sp_release(struct ql_schema_provider *self) {
  if (!self->release) return;
  zr_dataset_unref(sp_ds(self));
  self->release = NULL;
  self->private_data = NULL;
}

static int plugin_schema_provider_open(const struct ql_plugin *self, const char *name, const struct ql_options *options,
                                       const struct ql_session *session, struct ql_schema_provider *out,
                                       struct ql_error *error) {
  (void)self;
  if (!name || strcmp(name, "store") != 0) {
    return ql_error_set(error, QL_ENOTFOUND, "qlink_zarr has no schema provider '%s' (it has 'store')", name ? name : "");
  }
  struct zr_dataset *ds = NULL;
  QL_RETURN_NOT_OK(open_dataset(options, session, store_options, 3, "qlink_zarr/store", &ds, error));
  memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  out->table_count = sp_table_count;
  out->table_name = sp_table_name;
  out->table = sp_table;
  out->release = sp_release;
  out->private_data = ds;
  return QL_OK;
}

/* ------------------------------------------------------------- plugin */

static int not_found_fn(const char *kind, const char *name, struct ql_error *error) {
  return ql_error_set(error, QL_ENOTFOUND, "qlink_zarr has no %s '%s'", kind, name ? name : "");
}

static int plugin_scalar_open(const struct ql_plugin *self, const char *name, struct ql_scalar_function *out,
                              struct ql_error *error) {
  (void)self;
  (void)out;
  return not_found_fn("scalar function", name, error);
}
static int plugin_aggregate_open(const struct ql_plugin *self, const char *name, struct ql_aggregate_function *out,
                                 struct ql_error *error) {
  (void)self;
  (void)out;
  return not_found_fn("aggregate function", name, error);
}
static int plugin_window_open(const struct ql_plugin *self, const char *name, struct ql_window_function *out,
                              struct ql_error *error) {
  (void)self;
  (void)out;
  return not_found_fn("window function", name, error);
}
static int plugin_table_function_open(const struct ql_plugin *self, const char *name, struct ql_table_function *out,
                                      struct ql_error *error) {
  (void)self;
  (void)out;
  return not_found_fn("table function", name, error);
}
static int plugin_planner_open(const struct ql_plugin *self, const char *name, const struct ql_options *options,
                               struct ql_planner *out, struct ql_error *error) {
  (void)self;
  (void)options;
  (void)out;
  return not_found_fn("planner", name, error);
}
static int plugin_object_store_open(const struct ql_plugin *self, const char *name, const char *url,
                                    const struct ql_options *options, struct ql_object_store *out,
                                    struct ql_error *error) {
  (void)self;
  (void)url;
  (void)options;
  (void)out;
  return not_found_fn("object store", name, error);
}

static void plugin_release(struct ql_plugin *self) { self->release = NULL; }

QL_PLUGIN_EXPORT int qlink_plugin_init(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error);

QL_PLUGIN_EXPORT int qlink_plugin_init(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error) {
  if (abi_version != QL_ABI_VERSION_0_1) {
    return ql_error_set(error, QL_EVERSION, "qlink_zarr serves ABI 0.1 only; asked for %u.%u",
                        QL_ABI_VERSION_MAJOR(abi_version), QL_ABI_VERSION_MINOR(abi_version));
  }
  if (!out) return ql_error_set(error, QL_EINVAL, "qlink_plugin_init: out is NULL");
  memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  out->magic = QL_PLUGIN_MAGIC;
  out->abi_version = abi_version;
  out->n_items = (int32_t)(sizeof(items) / sizeof(items[0]));
  out->name = "qlink_zarr";
  out->version = ZR_VERSION;
  out->description = "Zarr v2 and v3 stores (xarray Datasets) as SQL tables: one table per dimension group";
  out->items = items;
  out->table_provider_open = plugin_table_provider_open;
  out->schema_provider_open = plugin_schema_provider_open;
  out->scalar_function_open = plugin_scalar_open;
  out->aggregate_function_open = plugin_aggregate_open;
  out->window_function_open = plugin_window_open;
  out->table_function_open = plugin_table_function_open;
  out->planner_open = plugin_planner_open;
  out->object_store_open = plugin_object_store_open;
  out->release = plugin_release;
  return QL_OK;
}
