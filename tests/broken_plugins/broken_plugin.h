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
 *
 * It offers one table provider, `numbers?n=N` (default 100): one int64
 * column x = 0..N-1 in 4 partitions of contiguous ranges, one batch each.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/arrow.h"
#include "qlink/lib/options.h"
#include "qlink/lib/status.h"
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
};

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
  int rc = ql_schema_init(out->children[0], "l", "x", 0, error);
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
#ifdef BROKEN_CONCURRENT
  p = atomic_load(&g_qlb_partition);
#endif
  int64_t lo, hi;
  qlb_range(st->n, p, &lo, &hi);
  int64_t *data = malloc((size_t)(hi - lo + 1) * sizeof *data);
  if (!data) return 12;
  for (int64_t i = lo; i < hi; i++) data[i - lo] = i;
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

static int qlb_open(const struct ql_plugin *self, const char *name, const struct ql_options *options,
                    const struct ql_session *session, struct ql_table_provider *out, struct ql_error *error) {
  (void)self;
  (void)session;
  if (name == NULL || strcmp(name, "numbers") != 0) return ql_error_set(error, QL_ENOTFOUND, "no table '%s'", name);
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
  int64_t *state = malloc(sizeof *state);
  if (!state) return ql_error_set(error, QL_ENOMEM, "out of memory");
  *state = n;
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->table_type = QL_TABLE_BASE;
  out->get_schema = qlb_provider_schema;
  out->get_statistics = qlb_provider_statistics;
  out->scan = qlb_scan;
#ifdef BROKEN_PUSHDOWN
  out->supports_filters = qlb_supports_filters;
#endif
  out->release = qlb_provider_release;
  out->private_data = state;
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
#ifndef BROKEN_VERSION
  if (abi_version != QL_ABI_VERSION) return ql_error_set(error, QL_EVERSION, "serves ABI 0.1 only");
#endif
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->magic = QL_PLUGIN_MAGIC;
#ifdef BROKEN_MAGIC
  out->magic = 0x12345678u; /* the defect */
#endif
  out->abi_version = abi_version;
  out->n_items = 1;
  out->name = "broken";
  out->version = "0.0.1";
  out->description = "a plugin breaking one rule on purpose";
  out->items = k_qlb_items;
  out->table_provider_open = qlb_open;
  out->release = qlb_release;
  return QL_OK;
}
