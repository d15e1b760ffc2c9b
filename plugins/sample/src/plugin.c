/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_sample: the plugin descriptor and its one exported entry point.
 *
 * A template to copy. A plugin takes four steps:
 *   1. list what it offers in a static catalogue (k_items below), with the
 *      options each table provider accepts;
 *   2. implement each object as a struct of function pointers with
 *      private_data and a release that sets release to NULL (series.c, grid.c,
 *      functions.c, planners.c);
 *   3. route each *_open member of the descriptor to the object by name,
 *      answering QL_ENOTFOUND for names it does not list;
 *   4. export qlink_plugin_init with QL_PLUGIN_EXPORT, answering
 *      QL_EVERSION for every ABI version it was not built for.
 *
 * Executor hooks: this plugin needs no runtime of its own, but declares
 * enter/leave hooks that count calls per thread so tests can check a host
 * brackets every call. The token enter returns points at the calling
 * thread's struct smp_hook_counts (plugins/sample/qlink_sample.h).
 */
#include <string.h>

#include "qlink/lib/options.h"
#include "qlink/lib/status.h"
#include "qlink_sample.h"
#include "sample_internal.h"

static const struct ql_item_info k_items[] = {
    {QL_ITEM_TABLE_PROVIDER, 4, "series", "integers start, start+step, ... below stop, with square and parity",
     smp_series_options},
    {QL_ITEM_TABLE_PROVIDER, 4, "grid",
     "in-memory ny x nx grid (y float64, x int64, v float64), built at open; scans share its buffers",
     smp_grid_options},
    {QL_ITEM_SCALAR_FUNCTION, 0, "add_one", "add_one(int64) -> int64: x + 1, NULL in NULL out", NULL},
    {QL_ITEM_AGGREGATE_FUNCTION, 0, "sum_sq", "sum_sq(int64) -> int64: sum of squares of the non-NULL values", NULL},
    {QL_ITEM_WINDOW_FUNCTION, 0, "running_count", "running_count() -> int64: row number within the partition", NULL},
    {QL_ITEM_TABLE_FUNCTION, 0, "sample_range",
     "sample_range(start, stop[, step]): the table of int64 `value` start, start+step, ... below stop", NULL},
    {QL_ITEM_PLANNER, 0, "decline_all", "declines every plan (costs one call)", NULL},
    {QL_ITEM_PLANNER, 0, "drop_true_filters", "rewrites Filter(TRUE) over X into X", NULL},
};

/* ------------------------------------------------------ executor hooks */

static _Thread_local struct smp_hook_counts t_counts;

static void *sample_enter(const struct ql_plugin *self) {
  (void)self;
  t_counts.enters++;
  t_counts.depth++;
  return &t_counts;
}

static void sample_leave(const struct ql_plugin *self, void *token) {
  (void)self;
  /* A leave on another thread than its enter, or without one, is a host bug. */
  if (token != &t_counts || t_counts.depth <= 0) {
    t_counts.mismatches++;
    return;
  }
  t_counts.leaves++;
  t_counts.depth--;
}

/* ------------------------------------------------------------ routing */

static int open_table_provider(const struct ql_plugin *self, const char *name, const struct ql_options *options,
                               const struct ql_session *session, struct ql_table_provider *out,
                               struct ql_error *error) {
  (void)self;
  (void)session;
  if (out == NULL) return ql_error_set(error, QL_EINVAL, "qlink_sample: table_provider_open: out is NULL");
  if (name != NULL && strcmp(name, "series") == 0) return smp_series_open(options, out, error);
  if (name != NULL && strcmp(name, "grid") == 0) return smp_grid_open(options, out, error);
  return ql_error_set(error, QL_ENOTFOUND, "qlink_sample has no table provider '%s'", name ? name : "(null)");
}

static int open_schema_provider(const struct ql_plugin *self, const char *name, const struct ql_options *options,
                                const struct ql_session *session, struct ql_schema_provider *out,
                                struct ql_error *error) {
  (void)self;
  (void)options;
  (void)session;
  (void)out;
  return ql_error_set(error, QL_ENOTFOUND, "qlink_sample has no schema provider '%s'", name ? name : "(null)");
}

static int open_scalar(const struct ql_plugin *self, const char *name, struct ql_scalar_function *out,
                       struct ql_error *error) {
  (void)self;
  if (out == NULL) return ql_error_set(error, QL_EINVAL, "qlink_sample: scalar_function_open: out is NULL");
  return smp_scalar_open(name, out, error);
}

static int open_aggregate(const struct ql_plugin *self, const char *name, struct ql_aggregate_function *out,
                          struct ql_error *error) {
  (void)self;
  if (out == NULL) return ql_error_set(error, QL_EINVAL, "qlink_sample: aggregate_function_open: out is NULL");
  return smp_aggregate_open(name, out, error);
}

static int open_window(const struct ql_plugin *self, const char *name, struct ql_window_function *out,
                       struct ql_error *error) {
  (void)self;
  if (out == NULL) return ql_error_set(error, QL_EINVAL, "qlink_sample: window_function_open: out is NULL");
  return smp_window_open(name, out, error);
}

static int open_table_function(const struct ql_plugin *self, const char *name, struct ql_table_function *out,
                               struct ql_error *error) {
  (void)self;
  if (out == NULL) return ql_error_set(error, QL_EINVAL, "qlink_sample: table_function_open: out is NULL");
  return smp_table_function_open(name, out, error);
}

static int open_planner(const struct ql_plugin *self, const char *name, const struct ql_options *options,
                        struct ql_planner *out, struct ql_error *error) {
  (void)self;
  if (out == NULL) return ql_error_set(error, QL_EINVAL, "qlink_sample: planner_open: out is NULL");
  return smp_planner_open(name, options, out, error);
}

static int open_object_store(const struct ql_plugin *self, const char *name, const char *url,
                             const struct ql_options *options, struct ql_object_store *out, struct ql_error *error) {
  (void)self;
  (void)url;
  (void)options;
  (void)out;
  return ql_error_set(error, QL_ENOTFOUND, "qlink_sample has no object store '%s'", name ? name : "(null)");
}

static void sample_release(struct ql_plugin *self) { self->release = NULL; }

QL_PLUGIN_EXPORT int qlink_plugin_init(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error);

QL_PLUGIN_EXPORT int qlink_plugin_init(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error) {
  if (abi_version != QL_ABI_VERSION) {
    return ql_error_set(error, QL_EVERSION, "qlink_sample %s serves ABI %u.%u only, asked for %u.%u",
                        SMP_VERSION, QL_ABI_VERSION_MAJOR(QL_ABI_VERSION), QL_ABI_VERSION_MINOR(QL_ABI_VERSION),
                        QL_ABI_VERSION_MAJOR(abi_version), QL_ABI_VERSION_MINOR(abi_version));
  }
  if (out == NULL) return ql_error_set(error, QL_EINVAL, "qlink_plugin_init: out is NULL");
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->magic = QL_PLUGIN_MAGIC;
  out->abi_version = abi_version;
  out->n_items = (int32_t)(sizeof k_items / sizeof k_items[0]);
  out->name = SMP_NAME;
  out->version = SMP_VERSION;
  out->description = "qlink's sample plugin: a series table, an in-memory grid table, four functions and two planners";
  out->items = k_items;
  out->executor_enter = sample_enter;
  out->executor_leave = sample_leave;
  out->table_provider_open = open_table_provider;
  out->schema_provider_open = open_schema_provider;
  out->scalar_function_open = open_scalar;
  out->aggregate_function_open = open_aggregate;
  out->window_function_open = open_window;
  out->table_function_open = open_table_function;
  out->planner_open = open_planner;
  out->object_store_open = open_object_store;
  out->release = sample_release;
  return QL_OK;
}
