/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_netcdf: the plugin descriptor, the `table` table provider and the
 * `store` schema provider over netCDF files (README.md). The only exported
 * symbol is qlink_plugin_init. */
#include <stdlib.h>
#include <string.h>

#include "ncf.h"
#include "qlink/lib/options.h"
#include "qlink/lib/status.h"
#include "qlink/qlink.h"
#include "qlink_zarr/provider.h"

#define NCF_VERSION "0.1.0"

#define PATH_DOC                                                                                                  \
  "netCDF file: a local path or a URL the session's object stores serve; a folder (its *.nc files) or a glob in " \
  "the last component (DIR/*.nc): the files concatenated along their record dimension, sorted by name"
#define GROUP_DOC "the group whose variables are served, by full path (/forecast); default: the root group"
#define CONCAT_DOC "several files: the dimension they are concatenated along (default: the unlimited dimension)"
#define TABLES_DOC "rename tables: OLD=NEW,OLD2=NEW2 with OLD a default name (dimension names joined by '_')"
#define BLOCK_DOC "rows a partition block holds at least (blocks of small chunks grow; 1: a block per chunk)"
#define NAN_DOC                                                                                                       \
  "NaN cells: 'null' (NULL in a float variable whose fill value is NaN), 'nan' (NaN, as xarray holds them) or " \
  "'all' (every NaN is NULL)"

static const struct ql_option_info table_options[] = {
    {"path", PATH_DOC, NULL, 1, 0},
    {"table", "which table (a dimension group, by default or new name); default: the only or largest one", NULL, 0, 0},
    {"tables", TABLES_DOC, NULL, 0, 0},
    {"block_rows", BLOCK_DOC, "65536", 0, 0},
    {"nan_fill", NAN_DOC, "null", 0, 0},
    {"group", GROUP_DOC, "/", 0, 0},
    {"concat_dim", CONCAT_DOC, NULL, 0, 0}};

static const struct ql_option_info store_options[] = {
    {"path", PATH_DOC, NULL, 1, 0},          {"tables", TABLES_DOC, NULL, 0, 0}, {"block_rows", BLOCK_DOC, "65536", 0, 0},
    {"nan_fill", NAN_DOC, "null", 0, 0},      {"group", GROUP_DOC, "/", 0, 0},   {"concat_dim", CONCAT_DOC, NULL, 0, 0}};

#define N_TABLE_OPTIONS ((int32_t)(sizeof(table_options) / sizeof(table_options[0])))
#define N_STORE_OPTIONS ((int32_t)(sizeof(store_options) / sizeof(store_options[0])))

static const struct ql_item_info items[] = {
    {QL_ITEM_TABLE_PROVIDER, N_TABLE_OPTIONS, "table",
     "one table (a dimension group, or 'scalars': the 0-d variables) of netCDF-3 / netCDF-4 files", table_options},
    {QL_ITEM_SCHEMA_PROVIDER, N_STORE_OPTIONS, "store",
     "every table (each dimension group, and 'scalars' for the 0-d variables) of netCDF-3 / netCDF-4 files",
     store_options}};

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
  int64_t block_rows;
  QL_RETURN_NOT_OK(zr_parse_block_rows(ql_options_get(options, "block_rows", NULL), what, &block_rows, error));
  int32_t fill;
  QL_RETURN_NOT_OK(zr_parse_nan_fill(ql_options_get(options, "nan_fill", NULL), what, ZR_NAN_FILL_NULL,
                                     ZR_NAN_FILL_NULL, 1, "'null', 'nan' or 'all'", &fill, error));
  return ncf_dataset_open(env->object_stores, path, ql_options_get(options, "group", NULL),
                          ql_options_get(options, "concat_dim", NULL), ql_options_get(options, "tables", NULL),
                          block_rows, fill, out, error);
}

static int plugin_table_provider_open(const struct ql_plugin *self, const char *name, const struct ql_options *options,
                                      const struct ql_session *session, struct ql_table_provider *out,
                                      struct ql_error *error) {
  (void)self;
  if (!name || strcmp(name, "table") != 0) {
    return ql_error_set(error, QL_ENOTFOUND, "qlink_netcdf has no table provider '%s' (it has 'table')",
                        name ? name : "");
  }
  struct zr_dataset *ds = NULL;
  QL_RETURN_NOT_OK(open_dataset(options, session, table_options, N_TABLE_OPTIONS, "qlink_netcdf/table", &ds, error));
  int rc = zr_table_provider_find(ds, ql_options_get(options, "table", NULL), out, error);
  zr_dataset_unref(ds);
  return rc;
}

static int plugin_schema_provider_open(const struct ql_plugin *self, const char *name, const struct ql_options *options,
                                       const struct ql_session *session, struct ql_schema_provider *out,
                                       struct ql_error *error) {
  (void)self;
  if (!name || strcmp(name, "store") != 0) {
    return ql_error_set(error, QL_ENOTFOUND, "qlink_netcdf has no schema provider '%s' (it has 'store')",
                        name ? name : "");
  }
  struct zr_dataset *ds = NULL;
  QL_RETURN_NOT_OK(open_dataset(options, session, store_options, N_STORE_OPTIONS, "qlink_netcdf/store", &ds, error));
  zr_schema_provider_new(ds, out);
  return QL_OK;
}

QL_PLUGIN_EXPORT int qlink_plugin_init(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error);

QL_PLUGIN_EXPORT int qlink_plugin_init(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error) {
  static const struct ql_plugin own = {
      .n_items = (int32_t)(sizeof(items) / sizeof(items[0])),
      .name = "qlink_netcdf",
      .version = NCF_VERSION,
      .description = "netCDF-3 and netCDF-4 files (xarray Datasets) as SQL tables: one table per dimension group",
      .items = items,
      .table_provider_open = plugin_table_provider_open,
      .schema_provider_open = plugin_schema_provider_open};
  return zr_plugin_fill(abi_version, &own, out, error);
}
