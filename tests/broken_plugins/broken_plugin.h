/* SPDX-License-Identifier: Apache-2.0 */
/* A minimal, otherwise conforming plugin that each broken_*.c here
 * includes after defining one BROKEN_* macro, which breaks exactly one rule
 * qlink-check must catch:
 *
 *   BROKEN_NO_ENTRY              no qlink_plugin_init
 *   BROKEN_MAGIC                 descriptor magic is wrong
 *   BROKEN_VERSION               init accepts any ABI version
 *   BROKEN_RELEASE               the table provider's release leaves release set
 *   BROKEN_STREAM_END            get_next after the end starts over
 *   BROKEN_LEAK_RESERVATION      a memory reservation outlives every object
 *   BROKEN_UNKNOWN_OPTION_OK     unknown options are ignored
 *   BROKEN_EXPORTS_EXTRA_SYMBOL  a second symbol is exported
 *   BROKEN_CONCURRENT            streams read a global written by execute
 *   BROKEN_STATS                 exact num_rows is off by one
 *   BROKEN_PUSHDOWN              answers EXACT to every filter, applies none
 *   BROKEN_CRASH                 scan dereferences NULL (crashes its host)
 *   BROKEN_FUNCTION_OPEN         opening add_one fails (the kit must print why)
 *   BROKEN_SCHEMA_PROVIDER_MEMBERS  the schema provider has no table_count
 *   BROKEN_PLAN_MEMBERS          the execution plan has no get_schema
 *   BROKEN_TABLE_FUNCTION_MEMBERS   the table function has no call
 *   BROKEN_PLANNER_RELEASE_NULL  the planner has no release
 *   BROKEN_NULL_COUNT            x is float64, its exact null count says 1 (no NULLs)
 *   BROKEN_PLANNER_OPTION_MESSAGE   an unknown planner option's error does not name it
 *   BROKEN_PLANNER_UNKNOWN_NAME  planner_open opens any name
 *   BROKEN_SCHEMA_UNKNOWN_NAME   schema_provider_open opens any name
 *   BROKEN_SCHEMA_UNKNOWN_TABLE  the schema provider's table() opens any name
 *   BROKEN_ERROR_STATUS          an error's status field differs from the status returned
 *   BROKEN_ERROR_RELEASE         an error's release leaves release set
 *   BROKEN_STREAM_MEMBERS        the stream has no get_next
 *   BROKEN_TABLE_PROVIDER_MEMBERS   the table provider has no scan
 *   BROKEN_ORDERING              the plan says x DESC within each partition (it ascends)
 *   BROKEN_ABI_MAJOR             serves ABI 1.0 only (another major than the hosts')
 *   BROKEN_THIRD_BATCH           the scan's 3rd batch (partition 2) fails with EIO
 *
 * It offers a table provider, `numbers?n=N` (default 100): one int64 column
 * x = 0..N-1 in 4 partitions of contiguous ranges, one batch each, each
 * declared sorted by x (ascending, true); a schema
 * provider `tables` listing `numbers`; a scalar function `add_one` (int64);
 * a table function `numbers_fn` (the numbers table of 10 rows); and a
 * planner `decline` that declines every plan.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/function.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/options.h"
#include "qlink/lib/status.h"
#include "qlink/planner.h"
#include "qlink/plugin.h"

#define QLB_PARTITIONS 4

#ifdef BROKEN_NO_ENTRY
#define QLB_ENTRY qlb_init_not_exported
#define QLB_EXPORT
#else
#define QLB_ENTRY qlink_plugin_init
#define QLB_EXPORT QL_PLUGIN_EXPORT
#endif

static const struct ql_option_info k_qlb_options[] = {{"n", "number of rows", "100", 0, 0}};
static const struct ql_item_info k_qlb_items[] = {
    {QL_ITEM_TABLE_PROVIDER, 1, "numbers", "x = 0..n-1", k_qlb_options},
    {QL_ITEM_SCHEMA_PROVIDER, 0, "tables", "the table numbers", NULL},
    {QL_ITEM_SCALAR_FUNCTION, 0, "add_one", "x + 1 for int64 x", NULL},
    {QL_ITEM_TABLE_FUNCTION, 0, "numbers_fn", "numbers with n = 10", NULL},
    {QL_ITEM_PLANNER, 0, "decline", "declines every plan", NULL},
};
#define QLB_N_ITEMS ((int32_t)(sizeof k_qlb_items / sizeof k_qlb_items[0]))

/* The column's type: int64, or float64 for BROKEN_NULL_COUNT. */
#ifdef BROKEN_NULL_COUNT
typedef double qlb_value;
#define QLB_FORMAT "g"
#else
typedef int64_t qlb_value;
#define QLB_FORMAT "l"
#endif

#ifdef BROKEN_CONCURRENT
/* The defect: the partition a stream reads is whatever execute ran last. */
static _Atomic int64_t g_qlb_partition;
#endif

#ifdef BROKEN_LEAK_RESERVATION
/* The defect: a reservation held by the plugin, not by any object; it is
 * only released with the descriptor, after every object is gone. */
static struct ql_memory_reservation g_qlb_reservation;
#endif

struct qlb_stream {
  int64_t n, partition;
  int done;
};

static int qlb_schema(struct ArrowSchema *out, struct ql_error *error) {
  QL_RETURN_NOT_OK(ql_schema_init_struct(out, "", 1, error));
  int rc = ql_schema_init(out->children[0], QLB_FORMAT, "x", 0, error);
  if (rc != QL_OK) ql_schema_release(out);
  return rc;
}

static void qlb_range(int64_t n, int64_t p, int64_t *lo, int64_t *hi) {
  *lo = n * p / QLB_PARTITIONS;
  *hi = n * (p + 1) / QLB_PARTITIONS;
}

static int qlb_get_schema(struct ArrowArrayStream *self, struct ArrowSchema *out) {
  (void)self;
  return qlb_schema(out, NULL) == QL_OK ? 0 : 12;
}

static int qlb_get_next(struct ArrowArrayStream *self, struct ArrowArray *out) {
  struct qlb_stream *st = self->private_data;
  memset(out, 0, sizeof *out);
  if (st->done) {
#ifdef BROKEN_STREAM_END
    st->done = 0; /* the defect: the stream starts over after its end */
#endif
    return 0;
  }
  int64_t p = st->partition;
#ifdef BROKEN_THIRD_BATCH
  if (p == 2) return 5; /* EIO: the defect */
#endif
#ifdef BROKEN_CONCURRENT
  p = atomic_load(&g_qlb_partition);
#endif
  int64_t lo, hi;
  qlb_range(st->n, p, &lo, &hi);
  qlb_value *data = malloc((size_t)(hi - lo + 1) * sizeof *data);
  if (!data) return 12;
  for (int64_t i = lo; i < hi; i++) data[i - lo] = (qlb_value)i;
  if (ql_array_init_struct(out, hi - lo, 1, NULL) != QL_OK) {
    free(data);
    return 12;
  }
  if (ql_array_init_fixed(out->children[0], hi - lo, 0, NULL, data, NULL) != QL_OK) {
    ql_array_release(out);
    return 12;
  }
  st->done = 1;
  return 0;
}

static const char *qlb_last_error(struct ArrowArrayStream *self) {
  (void)self;
#ifdef BROKEN_THIRD_BATCH
  return "numbers: reading batch 3 failed (deliberately)";
#endif
  return "out of memory";
}

static void qlb_stream_release(struct ArrowArrayStream *self) {
  free(self->private_data);
  self->private_data = NULL;
  self->release = NULL;
}

/* ------------------------------------------------------------ the plan */

static const char *qlb_plan_name(const struct ql_execution_plan *self) {
  (void)self;
  return "NumbersExec";
}

static int qlb_plan_schema(const struct ql_execution_plan *self, struct ArrowSchema *out, struct ql_error *error) {
  (void)self;
  return qlb_schema(out, error);
}

static int qlb_plan_properties(const struct ql_execution_plan *self, struct ql_plan_properties *out,
                               struct ql_error *error) {
  (void)self;
  (void)error;
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->partition_count = QLB_PARTITIONS;
#ifdef BROKEN_ORDERING
  static const struct ql_sort_key k_order = {0, QL_SORT_DESC}; /* the defect: x ascends */
#else
  static const struct ql_sort_key k_order = {0, 0};
#endif
  out->n_ordering = 1;
  out->ordering = &k_order;
  return QL_OK;
}

static int64_t qlb_child_count(const struct ql_execution_plan *self) {
  (void)self;
  return 0;
}

static int qlb_execute(const struct ql_execution_plan *self, int64_t partition, const struct ql_task_context *ctx,
                       struct ArrowArrayStream *out, struct ql_error *error) {
  (void)ctx;
  if (partition < 0 || partition >= QLB_PARTITIONS) {
    return ql_error_set(error, QL_EINVAL, "NumbersExec: partition %" PRId64 " out of range", partition);
  }
  struct qlb_stream *st = calloc(1, sizeof *st);
  if (!st) return ql_error_set(error, QL_ENOMEM, "out of memory");
  st->n = *(const int64_t *)self->private_data;
  st->partition = partition;
#ifdef BROKEN_CONCURRENT
  atomic_store(&g_qlb_partition, partition);
#endif
  memset(out, 0, sizeof *out);
  out->get_schema = qlb_get_schema;
  out->get_next = qlb_get_next;
#ifdef BROKEN_STREAM_MEMBERS
  out->get_next = NULL; /* the defect */
#endif
  out->get_last_error = qlb_last_error;
  out->release = qlb_stream_release;
  out->private_data = st;
  return QL_OK;
}

static void qlb_statistics_release(struct ql_statistics *st) {
  free(st->columns);
  st->release = NULL;
}

static int qlb_statistics(int64_t lo, int64_t hi, struct ql_statistics *out, struct ql_error *error) {
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->columns = calloc(1, sizeof *out->columns);
  if (!out->columns) return ql_error_set(error, QL_ENOMEM, "out of memory");
  out->n_columns = 1;
  out->num_rows_precision = QL_PRECISION_EXACT;
  out->num_rows = hi - lo;
#ifdef BROKEN_STATS
  out->num_rows += 1; /* the defect */
#endif
  out->columns[0].null_count_precision = QL_PRECISION_EXACT;
#ifdef BROKEN_NULL_COUNT
  out->columns[0].null_count = 1; /* the defect: x has no NULLs */
#endif
  out->release = qlb_statistics_release;
  return QL_OK;
}

static int qlb_plan_statistics(const struct ql_execution_plan *self, int64_t partition, struct ql_statistics *out,
                               struct ql_error *error) {
  int64_t n = *(const int64_t *)self->private_data, lo = 0, hi = n;
  if (partition >= QLB_PARTITIONS) return ql_error_set(error, QL_EINVAL, "partition out of range");
  if (partition >= 0) qlb_range(n, partition, &lo, &hi);
  return qlb_statistics(lo, hi, out, error);
}

static void qlb_plan_release(struct ql_execution_plan *self) {
  free(self->private_data);
  self->release = NULL;
}

/* ------------------------------------------------------ the provider */

static int qlb_provider_schema(const struct ql_table_provider *self, struct ArrowSchema *out, struct ql_error *error) {
  (void)self;
  return qlb_schema(out, error);
}

#ifdef BROKEN_CRASH
static int *volatile g_qlb_null; /* the defect: scan writes through it */
#endif

static int qlb_provider_statistics(const struct ql_table_provider *self, struct ql_statistics *out,
                                   struct ql_error *error) {
  return qlb_statistics(0, *(const int64_t *)self->private_data, out, error);
}

static int qlb_scan(const struct ql_table_provider *self, const struct ql_session *session,
                    const struct ql_scan_args *args, struct ql_execution_plan *out, struct ql_error *error) {
  (void)session;
#ifdef BROKEN_CRASH
  *g_qlb_null = 1;
#endif
  for (int32_t i = 0; i < args->n_projection; i++) {
    if (args->projection[i] != 0) return ql_error_set(error, QL_EINVAL, "numbers: no column %d", args->projection[i]);
  }
  int64_t *n = malloc(sizeof *n);
  if (!n) return ql_error_set(error, QL_ENOMEM, "out of memory");
  *n = *(const int64_t *)self->private_data;
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->name = qlb_plan_name;
  out->display = qlb_plan_name;
  out->get_schema = qlb_plan_schema;
#ifdef BROKEN_PLAN_MEMBERS
  out->get_schema = NULL; /* the defect */
#endif
  out->get_properties = qlb_plan_properties;
  out->child_count = qlb_child_count;
  out->execute = qlb_execute;
  out->get_statistics = qlb_plan_statistics;
  out->release = qlb_plan_release;
  out->private_data = n;
  return QL_OK;
}

#ifdef BROKEN_PUSHDOWN
/* The defect: every filter answered EXACT, though scan ignores them all. */
static int qlb_supports_filters(const struct ql_table_provider *self, const struct ql_expr_list *filters,
                                int32_t *answers, struct ql_error *error) {
  (void)self;
  (void)error;
  for (int32_t i = 0; i < filters->n_exprs; i++) answers[i] = QL_PUSHDOWN_EXACT;
  return QL_OK;
}
#endif

static void qlb_provider_release(struct ql_table_provider *self) {
  free(self->private_data);
  self->private_data = NULL;
#ifndef BROKEN_RELEASE
  self->release = NULL;
#endif
}

#ifdef BROKEN_ERROR_RELEASE
/* The defect: the error's release frees it but leaves release set. */
static void (*g_qlb_error_release)(struct ql_error *);
static void qlb_error_release_keeps(struct ql_error *e) {
  g_qlb_error_release(e);
  e->release = qlb_error_release_keeps;
}
#endif

static int qlb_not_found(const char *what, const char *name, struct ql_error *error) {
#ifdef BROKEN_ERROR_STATUS
  ql_error_set(error, QL_EINVAL, "no %s '%s'", what, name); /* the defect: status field EINVAL */
  return QL_ENOTFOUND;
#else
  int rc = ql_error_set(error, QL_ENOTFOUND, "no %s '%s'", what, name);
#ifdef BROKEN_ERROR_RELEASE
  if (error && error->release) {
    g_qlb_error_release = error->release;
    error->release = qlb_error_release_keeps;
  }
#endif
  return rc;
#endif
}

static int qlb_provider_new(int64_t n, struct ql_table_provider *out, struct ql_error *error);

static int qlb_open(const struct ql_plugin *self, const char *name, const struct ql_options *options,
                    const struct ql_session *session, struct ql_table_provider *out, struct ql_error *error) {
  (void)self;
  (void)session;
  if (name == NULL || strcmp(name, "numbers") != 0) return qlb_not_found("table", name, error);
#ifndef BROKEN_UNKNOWN_OPTION_OK
  QL_RETURN_NOT_OK(ql_options_check(options, k_qlb_options, 1, "numbers", error));
#endif
  int64_t n;
  QL_RETURN_NOT_OK(ql_options_get_i64(options, "n", 100, &n, error));
  if (n < 0 || n > 1000000) return ql_error_set(error, QL_EINVAL, "option 'n' must be in 0..1000000");
#ifdef BROKEN_LEAK_RESERVATION
  const struct ql_memory_pool *pool = session ? session->runtime_env(session)->memory_pool : NULL;
  if (pool && g_qlb_reservation.release == NULL) pool->reservation_new(pool, "leaky", 0, &g_qlb_reservation, NULL);
  if (g_qlb_reservation.release) g_qlb_reservation.try_grow(&g_qlb_reservation, 1024, NULL);
#endif
  return qlb_provider_new(n, out, error);
}

static int qlb_provider_new(int64_t n, struct ql_table_provider *out, struct ql_error *error) {
  int64_t *state = malloc(sizeof *state);
  if (!state) return ql_error_set(error, QL_ENOMEM, "out of memory");
  *state = n;
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->table_type = QL_TABLE_BASE;
  out->get_schema = qlb_provider_schema;
  out->get_statistics = qlb_provider_statistics;
  out->scan = qlb_scan;
#ifdef BROKEN_TABLE_PROVIDER_MEMBERS
  out->scan = NULL; /* the defect */
#endif
#ifdef BROKEN_PUSHDOWN
  out->supports_filters = qlb_supports_filters;
#endif
  out->release = qlb_provider_release;
  out->private_data = state;
  return QL_OK;
}

/* ------------------------------------------------ the schema provider */

static int64_t qlb_sp_count(const struct ql_schema_provider *self) {
  (void)self;
  return 1;
}

static const char *qlb_sp_name(const struct ql_schema_provider *self, int64_t i) {
  (void)self;
  return i == 0 ? "numbers" : NULL;
}

static int qlb_sp_table(const struct ql_schema_provider *self, const char *name, struct ql_table_provider *out,
                        struct ql_error *error) {
  (void)self;
#ifndef BROKEN_SCHEMA_UNKNOWN_TABLE
  if (name == NULL || strcmp(name, "numbers") != 0) return qlb_not_found("table", name, error);
#else
  (void)name; /* the defect: any name opens numbers */
#endif
  return qlb_provider_new(100, out, error);
}

static void qlb_sp_release(struct ql_schema_provider *self) { self->release = NULL; }

static int qlb_sp_open(const struct ql_plugin *self, const char *name, const struct ql_options *options,
                       const struct ql_session *session, struct ql_schema_provider *out, struct ql_error *error) {
  (void)self;
  (void)session;
#ifndef BROKEN_SCHEMA_UNKNOWN_NAME
  if (name == NULL || strcmp(name, "tables") != 0) return qlb_not_found("schema provider", name, error);
#else
  (void)name; /* the defect: any name opens the schema provider */
#endif
  QL_RETURN_NOT_OK(ql_options_check(options, NULL, 0, "tables", error));
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->table_count = qlb_sp_count;
#ifdef BROKEN_SCHEMA_PROVIDER_MEMBERS
  out->table_count = NULL; /* the defect */
#endif
  out->table_name = qlb_sp_name;
  out->table = qlb_sp_table;
  out->release = qlb_sp_release;
  return QL_OK;
}

/* ------------------------------------------------------- the functions */

static const char *const k_qlb_add_one_args[] = {"l"};

static int qlb_add_one_type(const struct ql_scalar_function *self, const struct ArrowSchema *args,
                            struct ArrowSchema *out, struct ql_error *error) {
  (void)self;
  if (args->n_children != 1 || strcmp(args->children[0]->format, "l") != 0) {
    return ql_error_set(error, QL_EINVAL, "add_one takes one int64 argument");
  }
  return ql_schema_init(out, "l", "add_one", ARROW_FLAG_NULLABLE, error);
}

/* x + 1 for arguments without NULLs (this plugin only exercises the kit). */
static int qlb_add_one(const struct ql_scalar_function *self, const struct ArrowSchema *args_schema,
                       const struct ArrowArray *args, int64_t num_rows, struct ArrowArray *out,
                       struct ql_error *error) {
  (void)self;
  (void)args_schema;
  const struct ArrowArray *x = args->children[0];
  if (x->null_count != 0) return ql_error_set(error, QL_ENOTSUP, "add_one: NULL arguments are not supported");
  int64_t *data = malloc((size_t)(num_rows + 1) * sizeof *data);
  if (!data) return ql_error_set(error, QL_ENOMEM, "out of memory");
  const int64_t *in = x->buffers[1];
  for (int64_t i = 0; i < num_rows; i++) {
    if (in[x->offset + i] == INT64_MAX) {
      free(data);
      return ql_error_set(error, QL_EINVAL, "add_one: %" PRId64 " + 1 overflows int64", in[x->offset + i]);
    }
    data[i] = in[x->offset + i] + 1;
  }
  return ql_array_init_fixed(out, num_rows, 0, NULL, data, error);
}

static void qlb_scalar_release(struct ql_scalar_function *self) { self->release = NULL; }

static int qlb_scalar_open(const struct ql_plugin *self, const char *name, struct ql_scalar_function *out,
                           struct ql_error *error) {
  (void)self;
  if (name == NULL || strcmp(name, "add_one") != 0) return qlb_not_found("scalar function", name, error);
#ifdef BROKEN_FUNCTION_OPEN
  /* The defect. (volatile: the rest stays compiled and reachable to the compiler.) */
  static volatile int fail = 1;
  if (fail) return ql_error_set(error, QL_EINVAL, "add_one: the deliberate cause of this failure");
#endif
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->id = (struct ql_function_id){QL_ORIGIN_USER, QL_FUNCTION_SCALAR, "add_one", "broken", 1};
  out->signature = (struct ql_signature){1, QL_IMMUTABLE, k_qlb_add_one_args};
  out->return_type = qlb_add_one_type;
  out->invoke = qlb_add_one;
  out->release = qlb_scalar_release;
  return QL_OK;
}

static int qlb_numbers_fn(const struct ql_table_function *self, const struct ql_session *session,
                          const struct ql_expr_list *args, struct ql_table_provider *out, struct ql_error *error) {
  (void)self;
  (void)session;
  if (args && args->n_exprs != 0) return ql_error_set(error, QL_EINVAL, "numbers_fn takes no arguments");
  return qlb_provider_new(10, out, error);
}

static void qlb_table_fn_release(struct ql_table_function *self) { self->release = NULL; }

static int qlb_table_fn_open(const struct ql_plugin *self, const char *name, struct ql_table_function *out,
                             struct ql_error *error) {
  (void)self;
  if (name == NULL || strcmp(name, "numbers_fn") != 0) return qlb_not_found("table function", name, error);
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->id = (struct ql_function_id){QL_ORIGIN_USER, QL_FUNCTION_TABLE, "numbers_fn", "broken", 2};
  out->call = qlb_numbers_fn;
#ifdef BROKEN_TABLE_FUNCTION_MEMBERS
  out->call = NULL; /* the defect */
#endif
  out->release = qlb_table_fn_release;
  return QL_OK;
}

/* --------------------------------------------------------- the planner */

static int qlb_decline(const struct ql_planner *self, const struct ql_planner_context *ctx,
                       struct ql_planner_result *out, struct ql_error *error) {
  (void)self;
  (void)ctx;
  (void)error;
  out->action = QL_PLANNER_DECLINE;
  return QL_OK;
}

static void qlb_planner_release(struct ql_planner *self) { self->release = NULL; }

static int qlb_planner_open(const struct ql_plugin *self, const char *name, const struct ql_options *options,
                            struct ql_planner *out, struct ql_error *error) {
  (void)self;
#ifndef BROKEN_PLANNER_UNKNOWN_NAME
  if (name == NULL || strcmp(name, "decline") != 0) return qlb_not_found("planner", name, error);
#else
  (void)name; /* the defect: any name opens the planner */
#endif
#ifdef BROKEN_PLANNER_OPTION_MESSAGE
  /* The defect: the error does not say which option is wrong. */
  if (options && options->count > 0) return ql_error_set(error, QL_EINVAL, "bad option");
#else
  QL_RETURN_NOT_OK(ql_options_check(options, NULL, 0, "decline", error));
#endif
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->plan = qlb_decline;
  out->release = qlb_planner_release;
#ifdef BROKEN_PLANNER_RELEASE_NULL
  out->release = NULL; /* the defect */
#endif
  return QL_OK;
}

static void qlb_release(struct ql_plugin *self) {
#ifdef BROKEN_LEAK_RESERVATION
  if (g_qlb_reservation.release) g_qlb_reservation.release(&g_qlb_reservation);
#endif
  self->release = NULL;
}

QLB_EXPORT int QLB_ENTRY(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error);

QLB_EXPORT int QLB_ENTRY(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error) {
(void)error;
#if defined(BROKEN_ABI_MAJOR)
  if (abi_version != QL_ABI_VERSION_MAKE(1, 0)) return ql_error_set(error, QL_EVERSION, "serves ABI 1.0 only");
#elif !defined(BROKEN_VERSION)
  if (abi_version != QL_ABI_VERSION) return ql_error_set(error, QL_EVERSION, "serves ABI 0.1 only");
#endif
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->magic = QL_PLUGIN_MAGIC;
#ifdef BROKEN_MAGIC
  out->magic = 0x12345678u; /* the defect */
#endif
  out->abi_version = abi_version;
  out->n_items = QLB_N_ITEMS;
  out->name = "broken";
  out->version = "0.0.1";
  out->description = "a plugin breaking one rule on purpose";
  out->items = k_qlb_items;
  out->table_provider_open = qlb_open;
  out->schema_provider_open = qlb_sp_open;
  out->scalar_function_open = qlb_scalar_open;
  out->table_function_open = qlb_table_fn_open;
  out->planner_open = qlb_planner_open;
  out->release = qlb_release;
  return QL_OK;
}
