/* SPDX-License-Identifier: Apache-2.0 */
/* Conformance checks of table providers, their execution plans and streams.
 *
 * Order per provider: open (with the spec's options), unknown option, unknown
 * name, schema stability, moved struct, statistics, scan, bad partitions,
 * sequential execution with stream semantics, statistics against the rows,
 * concurrent execution against sequential, stream errors, release of every
 * object, and the memory pool back to zero.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "checker.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/ir.h"

#define QLC_MAX_PARTITIONS 4096

struct partition_result {
  int ok;
  int64_t rows;
  uint64_t hash;
};

static void note_error(struct ql_checker *ck, const char *rule, const char *what, int rc, struct ql_error *err) {
  ql_check_violation(ck, rule, "%s returned %s: %s", what, ql_status_name(rc),
                     err->release && err->message ? err->message : "(no message)");
}


/* --------------------------------------------------------------- opening */

static int open_provider(struct ql_checker *ck, const char *name, const struct ql_options *options,
                         struct ql_table_provider *out, struct ql_error *err) {
  int rc;
  memset(out, 0, sizeof *out);
  QLC_CALL(ck, rc,
           ck->plugin->table_provider_open(ck->plugin, name, options, ql_ref_host_session(ck->host), out, err));
  return rc;
}

/* Release a provider; a NULL release is reported once, by table_provider.members. */
static void release_provider(struct ql_checker *ck, struct ql_table_provider *p, const char *name) {
  if (p->release == NULL) return;
  QLC_DO(ck, p->release(p));
  if (p->release != NULL) {
    ql_check_violation(ck, "release.table_provider", "'%s': release left release set", name);
    p->release = NULL; /* never call it twice */
  }
}

/* An unknown option is the caller's mistake: QL_EINVAL naming it. */
static void check_unknown_option(struct ql_checker *ck, const char *name, const struct ql_options *options) {
  static const char *const k_bad = "qlink_check_no_such_option";
  int64_t n = options->count + 1;
  const char **keys = calloc((size_t)n, sizeof *keys), **values = calloc((size_t)n, sizeof *values);
  if (!keys || !values) {
    free(keys);
    free(values);
    return;
  }
  for (int64_t i = 0; i < options->count; i++) {
    keys[i] = options->keys[i];
    values[i] = options->values[i];
  }
  keys[n - 1] = k_bad;
  values[n - 1] = "1";
  struct ql_options bad = {n, keys, values};
  struct ql_table_provider p;
  struct ql_error err = {0};
  int rc = open_provider(ck, name, &bad, &p, &err);
  if (rc == QL_OK) {
    ql_check_violation(ck, "options.unknown", "'%s' opened with unknown option '%s'; expected QL_EINVAL", name, k_bad);
    release_provider(ck, &p, name);
  } else if (rc != QL_EINVAL) {
    note_error(ck, "options.unknown", "open with an unknown option", rc, &err);
  } else if (err.release == NULL || err.message == NULL || strstr(err.message, k_bad) == NULL) {
    ql_check_violation(ck, "options.unknown", "'%s': the QL_EINVAL for an unknown option does not name '%s'", name,
                       k_bad);
  }
  ql_check_error(ck, &err, rc, "table_provider_open");
  free(keys);
  free(values);
}

static void check_unknown_name(struct ql_checker *ck) {
  struct ql_table_provider p;
  struct ql_error err = {0};
  int rc = open_provider(ck, "qlink_check_no_such_table", NULL, &p, &err);
  if (rc == QL_OK) {
    ql_check_violation(ck, "open.unknown_name", "a table provider not in the catalogue opened");
    release_provider(ck, &p, "qlink_check_no_such_table");
  } else if (rc != QL_ENOTFOUND) {
    note_error(ck, "open.unknown_name", "opening a table provider not in the catalogue", rc, &err);
  }
  ql_check_error(ck, &err, rc, "table_provider_open");
}

/* ------------------------------------------------------------ schema */

static int provider_schema(struct ql_checker *ck, const struct ql_table_provider *p, struct ArrowSchema *out) {
  struct ql_error err = {0};
  int rc;
  memset(out, 0, sizeof *out);
  QLC_CALL(ck, rc, p->get_schema(p, out, &err));
  if (rc != QL_OK) note_error(ck, "schema.get", "get_schema", rc, &err);
  ql_check_error(ck, &err, rc, "get_schema");
  if (rc == QL_OK && (out->format == NULL || strcmp(out->format, "+s") != 0)) {
    ql_check_violation(ck, "schema.struct", "the table schema has format '%s', expected a struct '+s'",
                       out->format ? out->format : "(null)");
    QLC_DO(ck, ql_schema_release(out));
    return QL_EDATA;
  }
  return rc;
}

static void check_statistics_shape(struct ql_checker *ck, struct ql_statistics *st, int64_t n_columns,
                                   const char *what) {
  if (st->n_columns != n_columns || (n_columns > 0 && st->columns == NULL)) {
    ql_check_violation(ck, "statistics.shape", "%s statistics have %" PRId64 " columns, the schema %" PRId64, what,
                       st->n_columns, n_columns);
  }
  if (st->release == NULL) {
    ql_check_violation(ck, "statistics.release", "%s statistics without release", what);
    return;
  }
  QLC_DO(ck, st->release(st));
  if (st->release != NULL) ql_check_violation(ck, "release.statistics", "%s statistics release left release set", what);
}

/* ------------------------------------------------------------ streams */

/* A stream may fail (R6): an errno code with get_last_error's message is
 * the plugin reporting its own error (a corrupt chunk, a lost connection),
 * not a broken rule. A failure without a message, or a code that is no
 * errno value, is a violation. */
static void report_stream_failure(struct ql_checker *ck, int64_t partition, int code, const char *msg) {
  if (code < 0) {
    ql_check_violation(ck, "stream.get_next", "partition %" PRId64 ": get_next returned %d, not an errno value",
                       partition, code);
  } else if (msg == NULL || msg[0] == '\0') {
    ql_check_violation(ck, "stream.last_error", "partition %" PRId64 ": get_next failed (%s) but get_last_error gave "
                       "no message", partition, strerror(code));
  } else {
    ql_check_plugin_error(ck, msg, "%s, partition %" PRId64 ": get_next failed (%s): %s", ck->scan_label, partition,
                          strerror(code), msg);
  }
}

/* Execute one partition, move the stream (bitwise copy, source marked
 * released) and read the moved copy to its end, checking the end rules. */
static int run_partition(struct ql_checker *ck, const struct ql_execution_plan *plan, int64_t partition,
                         const struct ArrowSchema *plan_schema, struct ql_batches *out) {
  struct ql_task_context ctx;
  ql_ref_host_task_context(ck->host, partition, &ctx);
  struct ArrowArrayStream original = {0}, stream;
  struct ql_error err = {0};
  int rc;
  QLC_CALL(ck, rc, plan->execute(plan, partition, &ctx, &original, &err));
  if (rc != QL_OK) {
    note_error(ck, "execute", "execute", rc, &err);
    ql_check_error(ck, &err, rc, "execute");
    return rc;
  }
  stream = original;
  original.release = NULL;
  if (stream.get_schema == NULL || stream.get_next == NULL || stream.release == NULL) {
    ql_check_violation(ck, "stream.members", "partition %" PRId64 ": the stream lacks required members; NULL:%s%s%s",
                       partition, stream.get_schema ? "" : " get_schema", stream.get_next ? "" : " get_next",
                       stream.release ? "" : " release");
    if (stream.release) QLC_DO(ck, stream.release(&stream));
    return QL_EINVAL;
  }
  struct ArrowSchema schema = {0};
  int code;
  QLC_CALL(ck, code, stream.get_schema(&stream, &schema));
  if (code != 0) {
    ql_check_violation(ck, "stream.schema", "partition %" PRId64 ": get_schema failed with %d", partition, code);
  } else {
    if (!ql_check_schema_equal(&schema, plan_schema)) {
      ql_check_violation(ck, "stream.schema", "partition %" PRId64 ": the stream's schema differs from the plan's",
                         partition);
    }
    if (out->schema.release == NULL) {
      ql_schema_move(&schema, &out->schema);
    } else {
      QLC_DO(ck, ql_schema_release(&schema));
    }
  }
  int ended = 0;
  while (code == 0) {
    struct ArrowArray batch = {0};
    QLC_CALL(ck, code, stream.get_next(&stream, &batch));
    if (code != 0) {
      const char *msg;
      QLC_CALL(ck, msg, stream.get_last_error ? stream.get_last_error(&stream) : NULL);
      report_stream_failure(ck, partition, code, msg);
      break;
    }
    if (batch.release == NULL) {
      ended = 1;
      break;
    }
    if (batch.n_children != plan_schema->n_children || batch.length < 0) {
      ql_check_violation(ck, "stream.batch_shape", "partition %" PRId64 ": a batch of %" PRId64
                         " columns, the schema has %" PRId64, partition, batch.n_children, plan_schema->n_children);
      QLC_DO(ck, ql_array_release(&batch));
      code = -1;
      break;
    }
    struct ql_error perr = {0};
    if (ql_check_batches_push(out, &batch, &perr) != QL_OK) {
      ql_error_release(&perr);
      QLC_DO(ck, ql_array_release(&batch));
      code = -1;
    }
  }
  for (int again = 0; ended && again < 2; again++) {
    struct ArrowArray batch = {0};
    QLC_CALL(ck, code, stream.get_next(&stream, &batch));
    if (code != 0 || batch.release != NULL) {
      ql_check_violation(ck, "stream.end", "partition %" PRId64 ": get_next after the end returned %d%s, expected "
                         "0 with a released array", partition, code, batch.release ? " and a batch" : "");
      if (batch.release) QLC_DO(ck, batch.release(&batch));
      break;
    }
  }
  QLC_DO(ck, stream.release(&stream));
  if (stream.release != NULL) {
    ql_check_violation(ck, "release.stream", "partition %" PRId64 ": stream release left release set", partition);
  }
  return ended ? QL_OK : QL_EDATA;
}

/* ------------------------------------------------------- concurrency */

/* Every worker waits here until all have executed their partitions. Unlike
 * a pthread barrier, the count can drop if a thread could not be started. */
struct gate {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  int arrived, expected;
};

static void gate_wait(struct gate *g) {
  pthread_mutex_lock(&g->mutex);
  g->arrived++;
  pthread_cond_broadcast(&g->cond);
  while (g->arrived < g->expected) pthread_cond_wait(&g->cond, &g->mutex);
  pthread_mutex_unlock(&g->mutex);
}

static void gate_expect(struct gate *g, int expected) {
  pthread_mutex_lock(&g->mutex);
  g->expected = expected;
  pthread_cond_broadcast(&g->cond);
  pthread_mutex_unlock(&g->mutex);
}

struct worker {
  struct ql_checker *ck;
  const struct ql_execution_plan *plan;
  struct gate *gate;
  int index, threads;
  int64_t partitions;
  struct partition_result *results;
};

/* Workers check their errors one at a time: the report is not thread-safe. */
static pthread_mutex_t g_report_lock = PTHREAD_MUTEX_INITIALIZER;

static void worker_error(struct worker *w, struct ql_error *err, int rc, const char *call) {
  pthread_mutex_lock(&g_report_lock);
  ql_check_error(w->ck, err, rc, call);
  pthread_mutex_unlock(&g_report_lock);
}

/* Execute every partition of this worker, wait until all workers did, then
 * read them: streams of different partitions must not share state. */
static void *worker_main(void *arg) {
  struct worker *w = arg;
  int64_t mine = 0;
  for (int64_t p = w->index; p < w->partitions; p += w->threads) mine++;
  struct ArrowArrayStream *streams = calloc((size_t)(mine > 0 ? mine : 1), sizeof *streams);
  struct ql_task_context *ctxs = calloc((size_t)(mine > 0 ? mine : 1), sizeof *ctxs);
  int64_t i = 0;
  for (int64_t p = w->index; streams && ctxs && p < w->partitions; p += w->threads, i++) {
    ql_ref_host_task_context(w->ck->host, p, &ctxs[i]);
    struct ql_error err = {0};
    int rc;
    QLC_CALL(w->ck, rc, w->plan->execute(w->plan, p, &ctxs[i], &streams[i], &err));
    if (rc != QL_OK) streams[i].release = NULL;
    worker_error(w, &err, rc, "execute");
  }
  gate_wait(w->gate);
  i = 0;
  for (int64_t p = w->index; streams && ctxs && p < w->partitions; p += w->threads, i++) {
    if (streams[i].release == NULL) continue;
    struct ql_batches b = {0};
    struct ql_error err = {0};
    int rc = ql_batches_collect(w->ck->plugin, &streams[i], &b, &err);
    if (rc == QL_OK) {
      w->results[p].ok = 1;
      w->results[p].rows = b.n_rows;
      w->results[p].hash = ql_check_batches_hash(&b);
    }
    worker_error(w, &err, rc, "a stream");
    QLC_DO(w->ck, ql_batches_free(&b));
  }
  free(streams);
  free(ctxs);
  return NULL;
}

static void check_concurrent(struct ql_checker *ck, const struct ql_execution_plan *plan, int64_t partitions,
                             const struct partition_result *sequential) {
  int threads = ck->threads;
  struct partition_result *results = calloc((size_t)partitions, sizeof *results);
  struct worker *workers = calloc((size_t)threads, sizeof *workers);
  pthread_t *ids = calloc((size_t)threads, sizeof *ids);
  struct gate gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, threads};
  if (!results || !workers || !ids) {
    ql_check_violation(ck, "check.internal", "cannot set up %d threads", threads);
    free(results);
    free(workers);
    free(ids);
    return;
  }
  int started = 0;
  for (int t = 0; t < threads; t++) {
    workers[t] = (struct worker){ck, plan, &gate, t, threads, partitions, results};
    if (pthread_create(&ids[t], NULL, worker_main, &workers[t]) != 0) break;
    started++;
  }
  if (started < threads) {
    /* Fewer threads than asked: their partitions are not compared. */
    ql_check_violation(ck, "check.internal", "started %d of %d threads", started, threads);
    gate_expect(&gate, started);
  }
  for (int t = 0; t < started; t++) pthread_join(ids[t], NULL);
  pthread_mutex_destroy(&gate.mutex);
  pthread_cond_destroy(&gate.cond);
  for (int64_t p = 0; p < partitions; p++) {
    if (!sequential[p].ok || p % threads >= started) continue;
    if (!results[p].ok) {
      ql_check_violation(ck, "concurrency.results", "%s, partition %" PRId64 " failed when run concurrently",
                         ck->scan_label, p);
    } else if (results[p].rows != sequential[p].rows || results[p].hash != sequential[p].hash) {
      ql_check_violation(ck, "concurrency.results", "%s, partition %" PRId64 " gave %" PRId64
                         " rows (hash %016" PRIx64 ") concurrently, %" PRId64 " rows (hash %016" PRIx64
                         ") sequentially", ck->scan_label, p, results[p].rows, results[p].hash, sequential[p].rows,
                         sequential[p].hash);
    }
  }
  free(results);
  free(workers);
  free(ids);
}

/* ---------------------------------------------------- statistics vs rows */

/* Null cells of column `c` over every batch, read from the validity
 * bitmaps whatever the column's type (a null-type column is all NULL), or -1
 * for unions and run-end encoded columns, which have no validity bitmap. */
static int64_t count_nulls(const struct ql_batches *b, int64_t c) {
  const char *f = b->schema.children[c]->format;
  if (strcmp(f, "n") == 0) return b->n_rows;
  if (strncmp(f, "+u", 2) == 0 || strcmp(f, "+r") == 0) return -1;
  int64_t nulls = 0;
  for (int64_t i = 0; i < b->n_batches; i++) {
    const struct ArrowArray *batch = &b->batches[i];
    const struct ArrowArray *child = batch->children[c];
    for (int64_t r = 0; r < batch->length; r++) nulls += !ql_array_is_valid(child, batch->offset + r);
  }
  return nulls;
}

/* Exact min/max of an int64 column must be those of its non-null rows. */
static void check_column_minmax(struct ql_checker *ck, const struct ql_batches *b, int64_t c,
                                const struct ql_column_statistics *cs, const char *what) {
  const char *f = b->schema.children[c]->format;
  if (cs->min_max_precision != QL_PRECISION_EXACT || strcmp(f, "l") != 0 || b->n_rows == 0) return;
  if (cs->min.format == NULL || strcmp(cs->min.format, "l") != 0 || cs->max.format == NULL ||
      strcmp(cs->max.format, "l") != 0) {
    ql_check_violation(ck, "statistics.min_max", "%s: column %" PRId64 " min/max not int64 scalars", what, c);
    return;
  }
  int64_t lo = INT64_MAX, hi = INT64_MIN, valid = 0, v;
  for (int64_t r = 0; r < b->n_rows; r++) {
    if (!ql_batches_i64(b, c, r, &v)) continue;
    valid++;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (valid > 0 && (cs->min.value.i64 != lo || cs->max.value.i64 != hi)) {
    ql_check_violation(ck, "statistics.min_max", "%s: column '%s' claims exact min %" PRId64 " max %" PRId64
                       ", the rows have %" PRId64 "..%" PRId64, what, b->schema.children[c]->name,
                       cs->min.value.i64, cs->max.value.i64, lo, hi);
  }
}

/* Exact statistics of one column against the rows: the null count for every
 * type, min/max where the kit can compare them exactly. */
static void check_column_stats(struct ql_checker *ck, const struct ql_batches *b, int64_t c,
                               const struct ql_column_statistics *cs, const char *what) {
  check_column_minmax(ck, b, c, cs, what);
  if (cs->null_count_precision != QL_PRECISION_EXACT) return;
  int64_t nulls = count_nulls(b, c);
  if (nulls >= 0 && cs->null_count != nulls) {
    ql_check_violation(ck, "statistics.null_count", "%s: column '%s' claims exactly %" PRId64 " nulls, the rows have %"
                       PRId64, what, b->schema.children[c]->name, cs->null_count, nulls);
  }
}

/* Exact statistics of the plan (partition -1) or of one partition must match its rows. */
static void check_stats_rows(struct ql_checker *ck, const struct ql_execution_plan *plan, int64_t partition,
                             const struct ql_batches *b) {
  if (plan->get_statistics == NULL) return;
  struct ql_statistics st = {0};
  struct ql_error err = {0};
  int rc;
  char what[128];
  if (partition < 0) {
    snprintf(what, sizeof what, "%s", ck->scan_label);
  } else {
    snprintf(what, sizeof what, "%s, partition %" PRId64, ck->scan_label, partition);
  }
  QLC_CALL(ck, rc, plan->get_statistics(plan, partition, &st, &err));
  if (rc != QL_OK) {
    note_error(ck, "statistics.get", "execution plan get_statistics", rc, &err);
    ql_check_error(ck, &err, rc, "get_statistics");
    return;
  }
  if (st.num_rows_precision == QL_PRECISION_EXACT && st.num_rows != b->n_rows) {
    ql_check_violation(ck, "statistics.num_rows", "%s claims exactly %" PRId64 " rows but returned %" PRId64, what,
                       st.num_rows, b->n_rows);
  }
  if (st.n_columns == b->schema.n_children && st.columns) {
    for (int64_t c = 0; c < st.n_columns; c++) check_column_stats(ck, b, c, &st.columns[c], what);
  }
  check_statistics_shape(ck, &st, b->schema.n_children, what);
}

/* ------------------------------------------------------ ordering vs rows */

/* Rows r and r + 1 under one sort key, as the host orders them: -1 in
 * order (strictly), 0 tied, 1 out of order; 2 when the column's type is not
 * one compared here. NULLs go first or last as `flags` says, whatever the
 * direction; NaN sorts above every number (DataFusion's float order). */
static int key_order(const struct ql_batches *b, int64_t c, int64_t r, int32_t flags) {
  const char *f = b->schema.children[c]->format;
  int is_str = strcmp(f, "u") == 0 || strcmp(f, "z") == 0;
  int is_float = strcmp(f, "f") == 0 || strcmp(f, "g") == 0;
  int is_int = f[0] != '\0' && f[1] == '\0' && strchr("csilCSILb", f[0]) != NULL;
  int is_time = f[0] == 't' && f[1] != '\0' && strchr("dtsD", f[1]) != NULL;
  if (!is_str && !is_float && !is_int && !is_time) return 2;
  const char *xs = NULL, *ys = NULL;
  int64_t nx = 0, ny = 0, xi = 0, yi = 0;
  double xf = 0, yf = 0;
  int vx, vy;
  if (is_str) {
    vx = ql_batches_str(b, c, r, &xs, &nx);
    vy = ql_batches_str(b, c, r + 1, &ys, &ny);
  } else if (is_float) {
    vx = ql_batches_f64(b, c, r, &xf);
    vy = ql_batches_f64(b, c, r + 1, &yf);
  } else {
    vx = ql_batches_i64(b, c, r, &xi);
    vy = ql_batches_i64(b, c, r + 1, &yi);
  }
  if (!vx || !vy) {
    if (vx == vy) return 0;
    int null_before = !vx; /* the NULL is the earlier row */
    return null_before == ((flags & QL_SORT_NULLS_FIRST) != 0) ? -1 : 1;
  }
  int cmp;
  if (is_str) {
    int m = memcmp(xs, ys, (size_t)(nx < ny ? nx : ny));
    cmp = m != 0 ? (m > 0) - (m < 0) : (nx > ny) - (nx < ny);
  } else if (is_float) {
    cmp = (xf != xf || yf != yf) ? (xf != xf) - (yf != yf) : (xf > yf) - (xf < yf);
  } else if (f[0] == 'L') {
    cmp = ((uint64_t)xi > (uint64_t)yi) - ((uint64_t)xi < (uint64_t)yi);
  } else {
    cmp = (xi > yi) - (xi < yi);
  }
  return flags & QL_SORT_DESC ? -cmp : cmp;
}

/* A partition's rows must be in the order its plan declares (R10: the
 * host merges instead of sorting on the strength of it, so a false claim
 * is a wrong answer, not a slow one). Keys of types not compared here end
 * the check at that key. */
static void check_ordering(struct ql_checker *ck, const struct ql_plan_properties *props, int64_t partition,
                           const struct ql_batches *b) {
  for (int64_t k = 0; k < props->n_ordering; k++) {
    int32_t c = props->ordering[k].column;
    if (c < 0 || c >= b->schema.n_children) {
      ql_check_violation(ck, "plan.ordering", "ordering key %" PRId64 " names column %d; the schema has %" PRId64,
                         k, c, b->schema.n_children);
      return;
    }
  }
  for (int64_t r = 0; r + 1 < b->n_rows; r++) {
    for (int64_t k = 0; k < props->n_ordering; k++) {
      int32_t c = props->ordering[k].column, flags = props->ordering[k].flags;
      int cmp = key_order(b, c, r, flags);
      if (cmp == 2) return;
      if (cmp < 0) break; /* strictly in order at this key: the later keys are free */
      if (cmp > 0) {
        ql_check_violation(ck, "plan.ordering", "%s, partition %" PRId64 ": rows %" PRId64 " and %" PRId64
                           " are out of the declared order (key %" PRId64 ", column '%s'%s)",
                           ck->scan_label, partition, r, r + 1, k, b->schema.children[c]->name,
                           flags & QL_SORT_DESC ? " DESC" : "");
        return;
      }
    }
  }
}

/* ------------------------------------------------------------- the plan */

static void check_bad_partition(struct ql_checker *ck, const struct ql_execution_plan *plan, int64_t partition) {
  struct ql_task_context ctx;
  ql_ref_host_task_context(ck->host, 0, &ctx);
  struct ArrowArrayStream stream = {0};
  struct ql_error err = {0};
  int rc;
  QLC_CALL(ck, rc, plan->execute(plan, partition, &ctx, &stream, &err));
  if (rc == QL_OK) {
    ql_check_violation(ck, "execute.bad_partition", "execute(partition %" PRId64 ") succeeded; expected an error",
                       partition);
    if (stream.release) QLC_DO(ck, stream.release(&stream));
  }
  ql_check_error(ck, &err, rc, "execute");
}

/* Run every partition sequentially, then check statistics and concurrency. */
static void check_execution(struct ql_checker *ck, const struct ql_execution_plan *plan) {
  struct ql_plan_properties props = {0};
  struct ArrowSchema schema = {0};
  struct ql_error err = {0};
  int rc;
  QLC_CALL(ck, rc, plan->get_properties(plan, &props, &err));
  if (rc != QL_OK || props.partition_count < 0 || props.partition_count > QLC_MAX_PARTITIONS) {
    ql_check_violation(ck, "plan.properties", "get_properties: %s, partition_count %" PRId64, ql_status_name(rc),
                       props.partition_count);
    ql_check_error(ck, &err, rc, "get_properties");
    return;
  }
  QLC_CALL(ck, rc, plan->get_schema(plan, &schema, &err));
  if (rc != QL_OK) {
    note_error(ck, "plan.schema", "execution plan get_schema", rc, &err);
    ql_check_error(ck, &err, rc, "get_schema");
    return;
  }
  check_bad_partition(ck, plan, -1);
  check_bad_partition(ck, plan, props.partition_count);
  int64_t n = props.partition_count, failed = 0;
  struct partition_result *seq = calloc((size_t)(n > 0 ? n : 1), sizeof *seq);
  struct ql_batches all = {0};
  for (int64_t p = 0; seq && p < n; p++) {
    struct ql_batches b = {0};
    int partition_rc = run_partition(ck, plan, p, &schema, &b);
    failed += partition_rc != QL_OK;
    if (partition_rc == QL_OK) {
      seq[p] = (struct partition_result){1, b.n_rows, ql_check_batches_hash(&b)};
      check_stats_rows(ck, plan, p, &b);
      check_ordering(ck, &props, p, &b);
      if (all.schema.release == NULL && b.schema.release != NULL) ql_schema_copy(&b.schema, &all.schema, NULL);
      for (int64_t i = 0; i < b.n_batches; i++) {
        struct ql_error perr = {0};
        if (ql_check_batches_push(&all, &b.batches[i], &perr) != QL_OK) ql_error_release(&perr);
      }
      b.n_batches = 0;
    }
    QLC_DO(ck, ql_batches_free(&b));
  }
  if (all.schema.release == NULL) ql_schema_copy(&schema, &all.schema, NULL);
  /* The whole plan's rows are known only when every partition was read. */
  if (seq && failed == 0) check_stats_rows(ck, plan, -1, &all);
  QLC_DO(ck, ql_batches_free(&all));
  if (seq && n > 0) check_concurrent(ck, plan, n, seq);
  if (plan->get_metrics) {
    struct ql_metrics m = {0};
    QLC_CALL(ck, rc, plan->get_metrics(plan, &m, &err));
    if (rc != QL_OK) {
      note_error(ck, "plan.metrics", "get_metrics", rc, &err);
    } else if (m.release == NULL || (m.count > 0 && m.items == NULL)) {
      ql_check_violation(ck, "plan.metrics", "metrics of %" PRId64 " items without items or release", m.count);
    } else {
      QLC_DO(ck, m.release(&m));
      if (m.release != NULL) ql_check_violation(ck, "release.metrics", "metrics release left release set");
    }
    ql_check_error(ck, &err, rc, "get_metrics");
  }
  free(seq);
  QLC_DO(ck, ql_schema_release(&schema));
}

/* With the cancellation flag set, a stream either ignores it or fails with a
 * message from get_last_error. */
static void check_stream_error(struct ql_checker *ck, const struct ql_execution_plan *plan) {
  struct ql_task_context ctx;
  ql_ref_host_task_context(ck->host, 0, &ctx);
  struct ArrowArrayStream stream = {0};
  struct ql_error err = {0};
  int rc;
  ql_ref_host_cancel(ck->host, 1);
  QLC_CALL(ck, rc, plan->execute(plan, 0, &ctx, &stream, &err));
  if (rc == QL_OK && (stream.get_next == NULL || stream.release == NULL)) {
    if (stream.release) QLC_DO(ck, stream.release(&stream)); /* reported as stream.members */
  } else if (rc == QL_OK) {
    struct ArrowArray batch = {0};
    int code;
    QLC_CALL(ck, code, stream.get_next(&stream, &batch));
    if (code != 0) {
      const char *msg;
      QLC_CALL(ck, msg, stream.get_last_error ? stream.get_last_error(&stream) : NULL);
      if (msg == NULL) ql_check_violation(ck, "stream.last_error", "get_next failed with %d but get_last_error is NULL", code);
    } else if (batch.release) {
      QLC_DO(ck, batch.release(&batch));
    }
    QLC_DO(ck, stream.release(&stream));
  } else if (err.release == NULL) {
    ql_check_violation(ck, "error.message", "execute of a cancelled task returned %s without an error",
                       ql_status_name(rc));
  }
  ql_check_error(ck, &err, rc, "execute");
  ql_ref_host_cancel(ck->host, 0);
}

static int scan(struct ql_checker *ck, const struct ql_table_provider *p, const struct ql_scan_args *args,
                struct ql_execution_plan *out, struct ql_error *err) {
  int rc;
  memset(out, 0, sizeof *out);
  QLC_CALL(ck, rc, p->scan(p, ql_ref_host_session(ck->host), args, out, err));
  return rc;
}

/* A plan's members the kit calls; without one it is not driven at all. */
static int plan_members_ok(const struct ql_execution_plan *plan) {
  return plan->get_schema && plan->get_properties && plan->execute && plan->release;
}

static int check_plan_members(struct ql_checker *ck, const struct ql_execution_plan *plan) {
  if (plan_members_ok(plan)) return 1;
  ql_check_violation(ck, "plan.members", "the plan of a scan lacks required members; NULL:%s%s%s%s",
                     plan->get_schema ? "" : " get_schema", plan->get_properties ? "" : " get_properties",
                     plan->execute ? "" : " execute", plan->release ? "" : " release");
  return 0;
}

/* Release a plan; a NULL release was reported by check_plan_members. */
static void release_plan(struct ql_checker *ck, struct ql_execution_plan *plan) {
  if (plan->release == NULL) return;
  QLC_DO(ck, plan->release(plan));
  if (plan->release != NULL) {
    ql_check_violation(ck, "release.execution_plan", "execution plan release left release set");
    plan->release = NULL;
  }
}

/* A leaf plan given its (no) children again is a copy of itself, or says
 * QL_ENOTSUP; the copy has the same schema and releases itself. */
static void check_new_children(struct ql_checker *ck, const struct ql_execution_plan *plan,
                               const struct ArrowSchema *schema) {
  int64_t n;
  QLC_CALL(ck, n, plan->child_count ? plan->child_count(plan) : 0);
  if (n != 0 || plan->with_new_children == NULL) return;
  struct ql_execution_plan copy = {0};
  struct ql_error err = {0};
  int rc;
  QLC_CALL(ck, rc, plan->with_new_children(plan, NULL, 0, &copy, &err));
  if (rc == QL_OK && copy.get_schema == NULL) {
    ql_check_violation(ck, "plan.with_new_children", "the copy of a leaf plan has no get_schema");
    release_plan(ck, &copy);
  } else if (rc == QL_OK) {
    struct ArrowSchema cs = {0};
    QLC_CALL(ck, rc, copy.get_schema(&copy, &cs, &err));
    if (rc != QL_OK || !ql_check_schema_equal(&cs, schema)) {
      ql_check_violation(ck, "plan.with_new_children", "the copy of a leaf plan has another schema");
    }
    if (rc == QL_OK) QLC_DO(ck, ql_schema_release(&cs));
    release_plan(ck, &copy);
  } else if (rc != QL_ENOTSUP) {
    note_error(ck, "plan.with_new_children", "with_new_children of a leaf plan with no children", rc, &err);
  }
  ql_check_error(ck, &err, rc, "with_new_children");
}

static void check_scans(struct ql_checker *ck, const struct ql_table_provider *p, const struct ArrowSchema *schema) {
  struct ql_scan_args all = {sizeof all, -1, NULL, {NULL, 0, 0, NULL}, -1};
  struct ql_execution_plan original, plan;
  struct ql_error err = {0};
  int rc = scan(ck, p, &all, &original, &err);
  if (rc != QL_OK) {
    note_error(ck, "scan", "scan of every column", rc, &err);
    ql_check_error(ck, &err, rc, "scan");
    return;
  }
  plan = original; /* a bitwise move: the copy must work, the source is released */
  original.release = NULL;
  if (!check_plan_members(ck, &plan)) {
    release_plan(ck, &plan);
    return;
  }
  const char *name, *display;
  QLC_CALL(ck, name, plan.name ? plan.name(&plan) : NULL);
  QLC_CALL(ck, display, plan.display ? plan.display(&plan) : NULL);
  if (name == NULL || display == NULL) ql_check_violation(ck, "plan.display", "name or display returned NULL");
  struct ArrowSchema ps = {0};
  QLC_CALL(ck, rc, plan.get_schema(&plan, &ps, &err));
  if (rc == QL_OK && !ql_check_schema_equal(&ps, schema)) {
    ql_check_violation(ck, "scan.schema", "a scan of every column has a schema other than the table's");
  }
  if (rc == QL_OK) QLC_DO(ck, ql_schema_release(&ps));
  ql_check_error(ck, &err, rc, "get_schema");
  check_new_children(ck, &plan, schema);
  ck->scan_label = "scan of every column";
  check_execution(ck, &plan);
  check_stream_error(ck, &plan);
  release_plan(ck, &plan);

  /* Projection of the last column only. */
  if (schema->n_children > 0) {
    int32_t last = (int32_t)schema->n_children - 1;
    struct ql_scan_args one = {sizeof one, 1, &last, {NULL, 0, 0, NULL}, -1};
    rc = scan(ck, p, &one, &plan, &err);
    if (rc != QL_OK) {
      note_error(ck, "scan.projection", "scan with a projection", rc, &err);
    } else if (!plan_members_ok(&plan)) {
      release_plan(ck, &plan); /* reported for the first scan */
    } else {
      memset(&ps, 0, sizeof ps);
      QLC_CALL(ck, rc, plan.get_schema(&plan, &ps, &err));
      if (rc != QL_OK || ps.n_children != 1 || strcmp(ps.children[0]->name, schema->children[last]->name) != 0) {
        ql_check_violation(ck, "scan.projection", "a scan of column %d does not have exactly that column", last);
      }
      if (rc == QL_OK) QLC_DO(ck, ql_schema_release(&ps));
      ck->scan_label = "scan of the last column";
      check_execution(ck, &plan);
      release_plan(ck, &plan);
    }
    ql_check_error(ck, &err, rc, "scan");
    int32_t bad = (int32_t)schema->n_children;
    struct ql_scan_args wrong = {sizeof wrong, 1, &bad, {NULL, 0, 0, NULL}, -1};
    rc = scan(ck, p, &wrong, &plan, &err);
    if (rc == QL_OK) {
      ql_check_violation(ck, "scan.bad_projection", "a scan of column %d (past the schema) succeeded", bad);
      release_plan(ck, &plan);
    }
    ql_check_error(ck, &err, rc, "scan");
  }
}

/* ------------------------------------------------------- filter pushdown */

static int passes(int32_t op, int64_t x, int64_t v) {
  switch (op) {
    case QL_OP_GE: return x >= v;
    case QL_OP_LT: return x < v;
    default: return x == v;
  }
}

/* A filter answered EXACT must be applied exactly: the scan returns exactly
 * the rows of the unfiltered scan that pass it. */
static void check_exact_filter(struct ql_checker *ck, const struct ql_table_provider *p, const struct ql_batches *all,
                               int64_t column, int32_t op, int64_t v, const struct ql_expr_list *one) {
  struct ql_scan_args args = {sizeof args, -1, NULL, *one, -1};
  struct ql_batches got = {0};
  struct ql_error err = {0};
  int rc = ql_batches_scan(ck->plugin, p, ck->host, &args, &got, &err);
  if (rc != QL_OK) {
    note_error(ck, "pushdown.exact", "a scan with a filter it answered EXACT", rc, &err);
    ql_check_error(ck, &err, rc, "scan");
    return;
  }
  int64_t want = 0, x, wrong = 0;
  for (int64_t r = 0; r < all->n_rows; r++) want += ql_batches_i64(all, column, r, &x) && passes(op, x, v);
  for (int64_t r = 0; r < got.n_rows; r++) wrong += !(ql_batches_i64(&got, column, r, &x) && passes(op, x, v));
  if (got.n_rows != want || wrong != 0) {
    ql_check_violation(ck, "pushdown.exact", "filter %s %s %" PRId64 " was answered EXACT but the scan returned %"
                       PRId64 " rows (%" PRId64 " failing it); %" PRId64 " rows pass it",
                       all->schema.children[column]->name, op == QL_OP_GE ? ">=" : op == QL_OP_LT ? "<" : "=", v,
                       got.n_rows, wrong, want);
  }
  QLC_DO(ck, ql_batches_free(&got));
}

/* Ask about `column >= v`, `column < v` and `column = v` for the value v of
 * the middle row, and verify the scan of each filter answered EXACT. */
static void check_pushdown_column(struct ql_checker *ck, const struct ql_table_provider *p,
                                  const struct ql_batches *all, int64_t column) {
  int64_t v;
  if (all->n_rows == 0 || !ql_batches_i64(all, column, all->n_rows / 2, &v)) return;
  static const int32_t ops[3] = {QL_OP_GE, QL_OP_LT, QL_OP_EQ};
  struct ql_ir_builder *b = NULL;
  struct ql_plan_view view = {0};
  struct ql_error err = {0};
  ql_expr_id roots[3];
  if (ql_ir_builder_new(&b, &err) != QL_OK) {
    ql_error_release(&err);
    return;
  }
  for (int i = 0; i < 3; i++) {
    roots[i] = ql_ir_binary(b, ops[i], ql_ir_column(b, all->schema.children[column]->name, NULL, (int32_t)column),
                            ql_ir_literal_i64(b, v));
  }
  int rc = ql_ir_builder_finish(b, -1, &view, &err);
  ql_ir_builder_free(b);
  if (rc != QL_OK) {
    ql_error_release(&err);
    return;
  }
  int32_t answers[3] = {-1, -1, -1};
  struct ql_expr_list list = {&view, 3, 0, roots};
  QLC_CALL(ck, rc, p->supports_filters(p, &list, answers, &err));
  if (rc != QL_OK) note_error(ck, "pushdown.answer", "supports_filters", rc, &err);
  ql_check_error(ck, &err, rc, "supports_filters");
  for (int i = 0; rc == QL_OK && i < 3; i++) {
    if (answers[i] < QL_PUSHDOWN_UNSUPPORTED || answers[i] > QL_PUSHDOWN_EXACT) {
      ql_check_violation(ck, "pushdown.answer", "supports_filters answered %d, not an enum ql_filter_pushdown",
                         answers[i]);
    } else if (answers[i] == QL_PUSHDOWN_EXACT) {
      struct ql_expr_list one = {&view, 1, 0, &roots[i]};
      check_exact_filter(ck, p, all, column, ops[i], v, &one);
    }
  }
  view.release(&view);
}

/* Exact table statistics must be true of the table's rows. */
static void check_table_statistics(struct ql_checker *ck, const struct ql_table_provider *p,
                                   const struct ql_batches *all) {
  if (p->get_statistics == NULL) return;
  struct ql_statistics st = {0};
  struct ql_error err = {0};
  int rc;
  QLC_CALL(ck, rc, p->get_statistics(p, &st, &err));
  ql_check_error(ck, &err, rc, "get_statistics");
  if (rc != QL_OK) return; /* reported by the shape check */
  if (st.num_rows_precision == QL_PRECISION_EXACT && st.num_rows != all->n_rows) {
    ql_check_violation(ck, "statistics.num_rows", "the table claims exactly %" PRId64 " rows, a scan returned %" PRId64,
                       st.num_rows, all->n_rows);
  }
  if (st.n_columns == all->schema.n_children && st.columns) {
    for (int64_t c = 0; c < st.n_columns; c++) check_column_stats(ck, all, c, &st.columns[c], "the table");
  }
  if (st.release) QLC_DO(ck, st.release(&st));
}

/* Checks against the rows of a full scan: table statistics, then filter
 * pushdown on integer columns (their comparisons are exact in every engine). */
static void check_against_rows(struct ql_checker *ck, const struct ql_table_provider *p) {
  struct ql_batches all = {0};
  struct ql_error err = {0};
  int rc = ql_batches_scan(ck->plugin, p, ck->host, NULL, &all, &err);
  ql_check_error(ck, &err, rc, "scan");
  if (rc == QL_OK) check_table_statistics(ck, p, &all);
  for (int64_t c = 0; rc == QL_OK && p->supports_filters && c < all.schema.n_children && c < 8; c++) {
    if (strcmp(all.schema.children[c]->format, "l") == 0) check_pushdown_column(ck, p, &all, c);
  }
  QLC_DO(ck, ql_batches_free(&all));
}

static void check_pool_empty(struct ql_checker *ck, const char *what) {
  const struct ql_memory_pool *pool = ql_ref_host_runtime_env(ck->host)->memory_pool;
  int64_t reserved = pool ? pool->reserved(pool) : 0;
  if (reserved != 0) {
    ql_check_violation(ck, "memory.reservations", "%" PRId64 " bytes still reserved after releasing every object of %s",
                       reserved, what);
  }
}

/* The provider's members, or a violation naming the missing ones (then the
 * provider is released). */
static int provider_members_ok(struct ql_checker *ck, const char *name, struct ql_table_provider *p) {
  if (p->get_schema != NULL && p->scan != NULL && p->release != NULL) return 1;
  ql_check_violation(ck, "table_provider.members", "'%s' lacks required members; NULL:%s%s%s", name,
                     p->get_schema ? "" : " get_schema", p->scan ? "" : " scan", p->release ? "" : " release");
  release_provider(ck, p, name);
  return 0;
}

/* Schema stability, statistics, scans and rows of an open provider with
 * its members, then release it. */
static void check_provider_object(struct ql_checker *ck, const char *name, struct ql_table_provider *p) {
  struct ql_error err = {0};
  int rc;
  struct ArrowSchema s1, s2;
  if (provider_schema(ck, p, &s1) == QL_OK) {
    if (provider_schema(ck, p, &s2) == QL_OK) {
      if (!ql_check_schema_equal(&s1, &s2)) ql_check_violation(ck, "schema.stable", "'%s': two get_schema calls differ", name);
      QLC_DO(ck, ql_schema_release(&s2));
    }
    if (p->get_statistics) {
      struct ql_statistics st = {0};
      QLC_CALL(ck, rc, p->get_statistics(p, &st, &err));
      if (rc == QL_OK) {
        check_statistics_shape(ck, &st, s1.n_children, "table");
      } else {
        note_error(ck, "statistics.get", "table get_statistics", rc, &err);
      }
      ql_check_error(ck, &err, rc, "get_statistics");
    }
    check_scans(ck, p, &s1);
    check_against_rows(ck, p);
    QLC_DO(ck, ql_schema_release(&s1));
  }
  release_provider(ck, p, name);
}

void ql_check_table_provider(struct ql_checker *ck, const struct ql_item_info *item) {
  ql_check_note(ck, "table provider '%s'", item->name);
  struct ql_table_spec spec = {0};
  if (ql_check_spec_options(ck, item->name, &spec) != QL_OK) return;
  struct ql_table_provider original, p;
  struct ql_error err = {0};
  int rc = open_provider(ck, item->name, &spec.options, &original, &err);
  if (rc != QL_OK) {
    note_error(ck, "open.table_provider", item->name, rc, &err);
    ql_check_error(ck, &err, rc, "table_provider_open");
    ql_table_spec_free(&spec);
    return;
  }
  p = original;
  original.release = NULL;
  if (!provider_members_ok(ck, item->name, &p)) {
    ql_table_spec_free(&spec);
    return;
  }
  check_unknown_option(ck, item->name, &spec.options);
  check_unknown_name(ck);
  check_provider_object(ck, item->name, &p);
  ql_table_spec_free(&spec);
  check_pool_empty(ck, item->name);
}

void ql_check_provider_of_call(struct ql_checker *ck, const char *name, struct ql_table_provider *p) {
  if (!provider_members_ok(ck, name, p)) return;
  check_provider_object(ck, name, p);
  check_pool_empty(ck, name);
}
