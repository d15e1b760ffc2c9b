/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_ndarray: the plugin descriptor and its `dataset` table and schema
 * providers over registered datasets (qlink_ndarray.h). Exported:
 * qlink_plugin_init only; the registration API is its descriptor's
 * private_data. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "nd_internal.h"
#include "qlink/lib/options.h"
#include "qlink/lib/status.h"
#include "qlink/qlink.h"
#include "qlink_zarr/provider.h"

#define ND_VERSION "0.1.0"

#define NAN_FILL_DOC                                                                                         \
  "NaN cells of float variables: 'null' (SQL NULL: a Dataset's missing values are NaN, and xarray-sql and pandas " \
  "take them as missing) or 'nan' (NaN, a value, as the buffer holds it)"

#define ID_DOC                                                                                                 \
  "the dataset's handle: the 32 hex digits registration (nd_api register_dataset; qlink.xarray.register) wrote; " \
  "it names the dataset in this process only, until unregistered"

static const struct ql_option_info table_options[] = {
    {"id", ID_DOC, NULL, 1, 0},
    {"table", "which table (a dimension group, by default or new name); default: the only or largest one", NULL, 0, 0},
    {"tables", "rename tables: OLD=NEW,OLD2=NEW2 with OLD a default name (dimension names joined by '_')", NULL, 0, 0},
    {"block_rows", "rows a partition block holds at least (blocks of small chunks grow; 1: a block per chunk)",
     "65536", 0, 0},
    {"nan_fill", NAN_FILL_DOC, "null", 0, 0}};

static const struct ql_option_info dataset_options[] = {
    {"id", ID_DOC, NULL, 1, 0},
    {"tables", "rename tables: OLD=NEW,OLD2=NEW2 with OLD a default name (dimension names joined by '_')", NULL, 0, 0},
    {"block_rows", "rows a partition block holds at least (blocks of small chunks grow; 1: a block per chunk)",
     "65536", 0, 0},
    {"nan_fill", NAN_FILL_DOC, "null", 0, 0}};

static const struct ql_item_info items[] = {
    {QL_ITEM_TABLE_PROVIDER, 5, "dataset",
     "one table (a dimension group, or 'scalars': the 0-d variables) of a registered dataset", table_options},
    {QL_ITEM_SCHEMA_PROVIDER, 4, "dataset",
     "every table (each dimension group, and 'scalars' for the 0-d variables) of a registered dataset",
     dataset_options}};

static int open_dataset(const struct ql_options *options, const struct ql_option_info *known, int32_t n_known,
                        const char *what, struct zr_dataset **out, struct ql_error *error) {
  QL_RETURN_NOT_OK(ql_options_check(options, known, n_known, what, error));
  const char *text = ql_options_get(options, "id", NULL);
  if (!text || !text[0]) return ql_error_set(error, QL_EINVAL, "%s: option 'id' is required", what);
  int64_t block_rows;
  QL_RETURN_NOT_OK(zr_parse_block_rows(ql_options_get(options, "block_rows", NULL), what, &block_rows, error));
  int32_t nan_fill;
  QL_RETURN_NOT_OK(zr_parse_nan_fill(ql_options_get(options, "nan_fill", NULL), what, ZR_NAN_FILL_ALL,
                                     ZR_NAN_FILL_ALL, 0, "'null' or 'nan'", &nan_fill, error));
  struct nd_registration *r = nd_lookup(text);
  if (!r) {
    /* the same answer for a malformed, guessed, stale or foreign handle; the text is not echoed (it may be
     * another connection's secret, and logs keep error messages) */
    return ql_error_set(error, QL_ENOTFOUND,
                        "%s: no registered Dataset with this handle (option 'id': the %d hex digits registration "
                        "returned, valid in the registering process until unregistered; %s)",
                        what, ND_HANDLE_HEX,
                        strlen(text) == ND_HANDLE_HEX ? "this one is unknown or released" : "this one is malformed");
  }
  int rc = nd_dataset_open(r, ql_options_get(options, "tables", NULL), block_rows, nan_fill, out, error);
  nd_registration_unref(r);
  return rc;
}

static int plugin_table_provider_open(const struct ql_plugin *self, const char *name, const struct ql_options *options,
                                      const struct ql_session *session, struct ql_table_provider *out,
                                      struct ql_error *error) {
  (void)self;
  (void)session;
  if (!name || strcmp(name, "dataset") != 0) {
    return ql_error_set(error, QL_ENOTFOUND, "qlink_ndarray has no table provider '%s' (it has 'dataset')",
                        name ? name : "");
  }
  struct zr_dataset *ds = NULL;
  QL_RETURN_NOT_OK(open_dataset(options, table_options, 5, "qlink_ndarray/dataset", &ds, error));
  int rc = zr_table_provider_find(ds, ql_options_get(options, "table", NULL), out, error);
  zr_dataset_unref(ds);
  return rc;
}

static int plugin_schema_provider_open(const struct ql_plugin *self, const char *name, const struct ql_options *options,
                                       const struct ql_session *session, struct ql_schema_provider *out,
                                       struct ql_error *error) {
  (void)self;
  (void)session;
  if (!name || strcmp(name, "dataset") != 0) {
    return ql_error_set(error, QL_ENOTFOUND, "qlink_ndarray has no schema provider '%s' (it has 'dataset')",
                        name ? name : "");
  }
  struct zr_dataset *ds = NULL;
  QL_RETURN_NOT_OK(open_dataset(options, dataset_options, 4, "qlink_ndarray/dataset", &ds, error));
  zr_schema_provider_new(ds, out);
  return QL_OK;
}

#define ND_STRUCT(T) {#T, NULL, 0, (uint32_t)sizeof(struct T)}
#define ND_MEMBER(T, m) {#T, #m, (uint32_t)offsetof(struct T, m), (uint32_t)sizeof(((struct T *)0)->m)}

/* Every member of the structs of qlink_ndarray.h, for mirrors to check
 * their layout against (nd_api's `layout`). */
static const struct nd_layout_entry layout[] = {
    ND_STRUCT(nd_variable),
    ND_MEMBER(nd_variable, name),
    ND_MEMBER(nd_variable, ndim),
    ND_MEMBER(nd_variable, is_coord),
    ND_MEMBER(nd_variable, dims),
    ND_MEMBER(nd_variable, shape),
    ND_MEMBER(nd_variable, dtype),
    ND_MEMBER(nd_variable, data),
    ND_MEMBER(nd_variable, strides),
    ND_MEMBER(nd_variable, chunks),
    ND_MEMBER(nd_variable, attrs_json),
    ND_MEMBER(nd_variable, load),
    ND_MEMBER(nd_variable, load_ctx),
    ND_MEMBER(nd_variable, null_cell),
    ND_STRUCT(nd_api),
    ND_MEMBER(nd_api, struct_size),
    ND_MEMBER(nd_api, magic),
    ND_MEMBER(nd_api, register_dataset),
    ND_MEMBER(nd_api, unregister_dataset),
    ND_MEMBER(nd_api, live_count),
    ND_MEMBER(nd_api, layout),
    ND_STRUCT(nd_layout_entry),
    ND_MEMBER(nd_layout_entry, type),
    ND_MEMBER(nd_layout_entry, member),
    ND_MEMBER(nd_layout_entry, offset),
    ND_MEMBER(nd_layout_entry, size),
    {NULL, NULL, 0, 0}};

static const struct nd_api api = {sizeof(struct nd_api), ND_API_MAGIC, nd_register, nd_unregister, nd_live_count,
                                  layout};

QL_PLUGIN_EXPORT int qlink_plugin_init(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error);

QL_PLUGIN_EXPORT int qlink_plugin_init(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error) {
  static const struct ql_plugin own = {
      .n_items = (int32_t)(sizeof(items) / sizeof(items[0])),
      .name = "qlink_ndarray",
      .version = ND_VERSION,
      .description = "N-dimensional arrays in memory (an xarray Dataset's variables) as SQL tables in the XQL model",
      .items = items,
      .table_provider_open = plugin_table_provider_open,
      .schema_provider_open = plugin_schema_provider_open,
      .private_data = (void *)&api}; /* the registration API (qlink_ndarray.h) */
  return zr_plugin_fill(abi_version, &own, out, error);
}
