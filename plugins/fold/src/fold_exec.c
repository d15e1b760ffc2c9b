/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_fold: FoldExec (see fold_exec.h). */
#include "fold_exec.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fold_internal.h"
#include "fold_mem.h"
#include "fold_xsum.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/status.h"

/* ------------------------------------------------------------ shared plan */

static void fd_shared_unref(struct fd_shared *s) {
  if (atomic_fetch_sub(&s->refs, 1) != 1) return;
  for (int k = 0; k < 2; k++)
    if (s->children[k].release) s->children[k].release(&s->children[k]);
  ql_schema_release(&s->schema);
  free(s);
}

static int64_t fd_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Read both inputs, then the dense kernel when the data suit it, else the
 * hash path. The inputs are freed before emitting. */
static int fd_run_all(struct fd_run *run, struct ql_error *error) {
  int64_t t0 = fd_now_ns();
  int rc = fd_read_inputs(run, error);
  atomic_fetch_add(&run->plan->read_ns, fd_now_ns() - t0);
  if (rc == QL_OK) {
    atomic_fetch_add(&run->plan->build_rows, run->in[run->build_side].rows_read);
    atomic_fetch_add(&run->plan->probe_rows, run->in[1 - run->build_side].rows_read);
    rc = fd_run_gemm(run, error);
    if (rc == FD_FALLBACK) rc = fd_run_hash(run, error);
  }
  fd_inputs_destroy(run);
  atomic_fetch_add(&run->plan->elapsed_ns, fd_now_ns() - t0);
  if (rc == QL_OK) atomic_fetch_add(&run->plan->groups, run->dense.active ? run->dense.count : run->result.gmap.count);
  return rc;
}

/* ------------------------------------------------------------------- emit */

static int fd_emit_key(const struct fd_run *run, const struct fd_groups *g, int32_t i, int64_t from,
                            int64_t n, struct ArrowArray *out, struct ql_error *error) {
  int64_t width = ql_format_byte_width(run->plan->spec.groups[i].format);
  uint8_t *data = calloc((size_t)(n ? n : 1), (size_t)width);
  uint8_t *validity = NULL;
  int64_t nulls = 0;
  if (!data) return ql_error_set(error, QL_ENOMEM, "qlink_fold: out of memory emitting");
  for (int64_t r = 0; r < n; r++) {
    int64_t v = g->gmap.values[(from + r) * g->gmap.width + i];
    if ((g->gmap.nulls[from + r] >> i) & 1u) {
      if (!validity) {
        validity = malloc((size_t)(n / 8 + 1));
        if (!validity) {
          free(data);
          return ql_error_set(error, QL_ENOMEM, "qlink_fold: out of memory emitting");
        }
        memset(validity, 0xff, (size_t)(n / 8 + 1));
      }
      validity[r >> 3] &= (uint8_t) ~(1u << (r & 7));
      nulls++;
      continue;
    }
    /* Little-endian: the low `width` bytes of the int64 are the value. */
    memcpy(data + r * width, &v, (size_t)width);
  }
  return ql_array_init_fixed(out, n, nulls, validity, data, error);
}

static int fd_emit_sum_column(const struct fd_run *run, const struct fd_groups *g, int64_t from,
                                   int64_t n, int empty_row, struct ArrowArray *out, struct ql_error *error) {
  int is_decimal = run->plan->spec.value_type == FD_DECIMAL128;
  size_t width = is_decimal ? 16 : 8;
  uint8_t *data = calloc((size_t)(n ? n : 1), width);
  uint8_t *validity = calloc((size_t)(n / 8 + 1), 1);
  if (!data || !validity) {
    free(data);
    free(validity);
    return ql_error_set(error, QL_ENOMEM, "qlink_fold: out of memory emitting");
  }
  int64_t nulls = 0;
  for (int64_t r = 0; r < n; r++) {
    if (empty_row || !g->has[from + r]) {
      nulls++;
      continue;
    }
    validity[r >> 3] |= (uint8_t)(1u << (r & 7));
    if (g->is_float) {
      double d = g->final_f ? g->final_f[from + r] : fd_xsum_value(&g->acc_f[from + r]);
      memcpy(data + r * 8, &d, 8);
    } else if (is_decimal) {
      memcpy(data + r * 16, &g->acc_i[from + r], 16); /* little-endian two's complement */
    } else {
      uint64_t v = (uint64_t)g->acc_i[from + r]; /* the int64 sum: low 64 bits */
      memcpy(data + r * 8, &v, 8);
    }
  }
  if (nulls == 0) {
    free(validity);
    validity = NULL;
  }
  return ql_array_init_fixed(out, n, nulls, validity, data, error);
}

/* The next batch into `out` (released at the end). */
static int fd_emit(struct fd_run *run, struct ArrowArray *out, struct ql_error *error) {
  const struct fd_spec *s = &run->plan->spec;
  int64_t total = run->dense.active ? run->dense.count : run->result.gmap.count;
  int empty_row = 0;
  if (s->n_groups == 0 && total == 0) {
    /* No GROUP BY: one row, NULL without joined rows. */
    total = 1;
    empty_row = 1;
  }
  memset(out, 0, sizeof(*out));
  if (run->emitted >= total) return QL_OK;
  int64_t batch = run->ctx.batch_size > 0 ? run->ctx.batch_size : 8192;
  int64_t n = total - run->emitted < batch ? total - run->emitted : batch;
  if (run->dense.active && !empty_row) {
    /* Straight from C. */
    QL_RETURN_NOT_OK(fd_dense_emit(run, n, out, error));
    run->emitted += n;
    atomic_fetch_add(&run->plan->output_rows, n);
    return QL_OK;
  }
  const struct fd_groups *g = &run->result;
  int64_t from = run->emitted;
  QL_RETURN_NOT_OK(ql_array_init_struct(out, n, s->n_groups + 1, error));
  int rc = QL_OK;
  for (int32_t i = 0; i < s->n_groups && rc == QL_OK; i++) rc = fd_emit_key(run, g, i, from, n, out->children[i], error);
  if (rc == QL_OK) rc = fd_emit_sum_column(run, g, from, n, empty_row, out->children[s->n_groups], error);
  if (rc != QL_OK) {
    ql_array_release(out);
    return rc;
  }
  run->emitted += n;
  atomic_fetch_add(&run->plan->output_rows, n);
  return QL_OK;
}

/* ----------------------------------------------------------------- stream */

static void fd_run_free(struct fd_run *run) {
  fd_inputs_destroy(run);
  fd_dense_destroy(run);
  fd_groups_destroy(&run->result, &run->mem);
  fd_mem_destroy(&run->mem);
  fd_shared_unref(run->plan);
  free(run);
}

static int fd_stream_get_schema(struct ArrowArrayStream *stream, struct ArrowSchema *out) {
  struct fd_run *run = stream->private_data;
  struct ql_error error;
  memset(&error, 0, sizeof(error));
  int rc = ql_schema_copy(&run->plan->schema, out, &error);
  if (rc != QL_OK) snprintf(run->message, sizeof(run->message), "%s", ql_error_message(&error));
  ql_error_release(&error);
  return rc == QL_OK ? 0 : ql_status_to_errno(rc);
}

static int fd_stream_get_next(struct ArrowArrayStream *stream, struct ArrowArray *out) {
  struct fd_run *run = stream->private_data;
  if (run->status != QL_OK) return ql_status_to_errno(run->status);
  struct ql_error error;
  memset(&error, 0, sizeof(error));
  int rc = QL_OK;
  if (!run->done) {
    rc = fd_run_all(run, &error);
    run->done = 1;
  }
  if (rc == QL_OK) rc = fd_emit(run, out, &error);
  if (rc != QL_OK) {
    run->status = rc;
    snprintf(run->message, sizeof(run->message), "%s", ql_error_message(&error));
    /* Give the memory back at once: the stream is dead. */
    fd_groups_destroy(&run->result, &run->mem);
    fd_dense_destroy(run);
  }
  ql_error_release(&error);
  return rc == QL_OK ? 0 : ql_status_to_errno(rc);
}

static const char *fd_stream_get_last_error(struct ArrowArrayStream *stream) {
  struct fd_run *run = stream->private_data;
  return run->message[0] ? run->message : NULL;
}

static void fd_stream_release(struct ArrowArrayStream *stream) {
  if (!stream->release) return;
  fd_run_free(stream->private_data);
  stream->release = NULL;
}

/* ------------------------------------------------------------------- plan */

static struct fd_shared *fd_of(const struct ql_execution_plan *self) { return self->private_data; }

static const char *fd_name(const struct ql_execution_plan *self) {
  (void)self;
  return "FoldExec";
}

static const char *fd_display(const struct ql_execution_plan *self) { return fd_of(self)->display; }

static int fd_get_schema(const struct ql_execution_plan *self, struct ArrowSchema *out, struct ql_error *error) {
  return ql_schema_copy(&fd_of(self)->schema, out, error);
}

static int fd_get_properties(const struct ql_execution_plan *self, struct ql_plan_properties *out,
                                  struct ql_error *error) {
  (void)self;
  (void)error;
  out->struct_size = sizeof(*out);
  out->boundedness = QL_BOUNDED;
  out->partition_count = 1;
  out->n_ordering = 0;
  out->ordering = NULL;
  return QL_OK;
}

static int64_t fd_child_count(const struct ql_execution_plan *self) {
  (void)self;
  return 2;
}

static const struct ql_execution_plan *fd_child(const struct ql_execution_plan *self, int64_t i) {
  return (i == 0 || i == 1) ? &fd_of(self)->children[i] : NULL;
}

static int fd_with_new_children(const struct ql_execution_plan *self, struct ql_execution_plan *children,
                                     int64_t n_children, struct ql_execution_plan *out, struct ql_error *error) {
  struct fd_shared *s = fd_of(self);
  if (n_children != 2) {
    for (int64_t i = 0; i < n_children; i++)
      if (children[i].release) children[i].release(&children[i]);
    return ql_error_set(error, QL_EINVAL, "FoldExec takes 2 children, got %lld", (long long)n_children);
  }
  /* New children must still have the columns the fold reads. */
  for (int k = 0; k < 2; k++) {
    int rc = fd_check_child(&s->spec, k, &children[k], error);
    if (rc != QL_OK) {
      for (int j = 0; j < 2; j++)
        if (children[j].release) children[j].release(&children[j]);
      return rc;
    }
  }
  return fd_exec_new(&s->spec, &s->schema, children, out, error);
}

static int fd_execute(const struct ql_execution_plan *self, int64_t partition, const struct ql_task_context *ctx,
                           struct ArrowArrayStream *out, struct ql_error *error) {
  struct fd_shared *s = fd_of(self);
  if (partition != 0) return ql_error_set(error, QL_EINVAL, "FoldExec has 1 partition, asked for %lld", (long long)partition);
  if (!ctx) return ql_error_set(error, QL_EINVAL, "FoldExec: no task context");
  struct fd_run *run = calloc(1, sizeof(*run));
  if (!run) return ql_error_set(error, QL_ENOMEM, "FoldExec: out of memory");
  run->ctx = *ctx;
  if (ctx->struct_size < sizeof(*ctx)) {
    /* An older, smaller context: keep only what it has. */
    memset((char *)&run->ctx + ctx->struct_size, 0, sizeof(*ctx) - ctx->struct_size);
  }
  const struct ql_memory_pool *pool = ctx->runtime_env ? ctx->runtime_env->memory_pool : NULL;
  int rc = fd_mem_init(&run->mem, pool, "FoldExec", error);
  if (rc != QL_OK) {
    free(run);
    return rc;
  }
  atomic_fetch_add(&s->refs, 1);
  run->plan = s;
  fd_groups_init(&run->result, s->spec.n_groups, 0, s->spec.value_type == FD_FLOAT64);
  memset(out, 0, sizeof(*out));
  out->get_schema = fd_stream_get_schema;
  out->get_next = fd_stream_get_next;
  out->get_last_error = fd_stream_get_last_error;
  out->release = fd_stream_release;
  out->private_data = run;
  return QL_OK;
}

static int fd_get_metrics(const struct ql_execution_plan *self, struct ql_metrics *out, struct ql_error *error);

static void fd_release(struct ql_execution_plan *self) {
  if (!self->release) return;
  fd_shared_unref(self->private_data);
  self->release = NULL;
}

static void fd_metrics_release(struct ql_metrics *m) {
  free(m->items);
  m->release = NULL;
}

static int fd_get_metrics(const struct ql_execution_plan *self, struct ql_metrics *out, struct ql_error *error) {
  struct fd_shared *s = fd_of(self);
  enum { N = 9 };
  struct ql_metric *items = calloc(N, sizeof(*items));
  if (!items) return ql_error_set(error, QL_ENOMEM, "FoldExec: out of memory");
  /* dense_kernel_runs: executions that ran the dense kernel (the others
   * ran the hash path); dense_key_index_runs: hash-path executions whose
   * build keys were indexed densely; elapsed_read: the part of
   * elapsed_compute spent reading the inputs (the children's own work
   * included); dense_range_misses: dense fills sized by the ranges of a
   * sample of the rows that found a row outside them (and were redone
   * with exact ranges). */
  const char *names[N] = {"output_rows",     "build_rows",        "probe_rows",           "groups",
                          "elapsed_compute", "dense_kernel_runs", "dense_key_index_runs", "elapsed_read",
                          "dense_range_misses"};
  int32_t kinds[N] = {QL_METRIC_COUNT,   QL_METRIC_COUNT, QL_METRIC_COUNT,   QL_METRIC_COUNT, QL_METRIC_TIME_NS,
                      QL_METRIC_COUNT,   QL_METRIC_COUNT, QL_METRIC_TIME_NS, QL_METRIC_COUNT};
  int64_t values[N] = {atomic_load(&s->output_rows), atomic_load(&s->build_rows), atomic_load(&s->probe_rows),
                       atomic_load(&s->groups),      atomic_load(&s->elapsed_ns), atomic_load(&s->dense_runs),
                       atomic_load(&s->dense_index_runs), atomic_load(&s->read_ns), atomic_load(&s->range_misses)};
  for (int i = 0; i < N; i++) {
    items[i].name = names[i];
    items[i].kind = kinds[i];
    items[i].partition = -1;
    items[i].value = values[i];
  }
  out->count = N;
  out->items = items;
  out->release = fd_metrics_release;
  out->private_data = NULL;
  return QL_OK;
}

/* ------------------------------------------------------------ construction */

int fd_check_child(const struct fd_spec *spec, int side, const struct ql_execution_plan *child,
                        struct ql_error *error) {
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof(schema));
  QL_RETURN_NOT_OK(child->get_schema(child, &schema, error));
  const struct fd_operand *ops[FD_MAX_KEYS + FD_MAX_GROUPS + 1];
  int n = 0;
  for (int32_t i = 0; i < spec->n_keys; i++) ops[n++] = &spec->keys[side][i];
  for (int32_t i = 0; i < spec->n_groups; i++)
    if (spec->groups[i].side == side) ops[n++] = &spec->groups[i];
  ops[n++] = &spec->values[side];
  int rc = QL_OK;
  for (int i = 0; i < n && rc == QL_OK; i++) {
    const struct fd_operand *op = ops[i];
    if (op->column >= schema.n_children || !schema.children[op->column]->format ||
        schema.children[op->column]->dictionary ||
        fd_format_storage(schema.children[op->column]->format) != op->storage)
      rc = ql_error_set(error, QL_EINVAL, "qlink_fold: input %d column %d (%s) is not of the planned type", side,
                        op->column, op->name);
  }
  ql_schema_release(&schema);
  return rc;
}

static void fd_append(char *buf, size_t cap, const char *fmt, const char *a, const char *b) {
  size_t len = strlen(buf);
  if (len < cap) snprintf(buf + len, cap - len, fmt, a, b);
}

static void fd_describe(struct fd_shared *s) {
  const struct fd_spec *p = &s->spec;
  char *d = s->display;
  size_t cap = sizeof(s->display);
  d[0] = 0;
  fd_append(d, cap, "%s%s", "on=[", "");
  for (int32_t i = 0; i < p->n_keys; i++) {
    fd_append(d, cap, "%s%s", i ? ", " : "", p->keys[0][i].name);
    fd_append(d, cap, "%s%s", " = ", p->keys[1][i].name);
  }
  fd_append(d, cap, "%s%s", "], by=[", "");
  for (int32_t i = 0; i < p->n_groups; i++) fd_append(d, cap, "%s%s", i ? ", " : "", p->groups[i].name);
  fd_append(d, cap, "], sum=%s * %s", p->values[0].name, p->values[1].name);
}

int fd_exec_new(const struct fd_spec *spec, const struct ArrowSchema *schema,
                     struct ql_execution_plan *children, struct ql_execution_plan *out, struct ql_error *error) {
  struct fd_shared *s = calloc(1, sizeof(*s));
  int rc = QL_OK;
  if (!s) rc = ql_error_set(error, QL_ENOMEM, "qlink_fold: out of memory");
  if (rc == QL_OK) {
    atomic_init(&s->refs, 1);
    s->spec = *spec;
    for (int k = 0; k < 2; k++) {
      s->children[k] = children[k];
      children[k].release = NULL;
    }
    rc = ql_schema_copy(schema, &s->schema, error);
    if (rc != QL_OK) fd_shared_unref(s);
  } else {
    for (int k = 0; k < 2; k++)
      if (children[k].release) children[k].release(&children[k]);
  }
  if (rc != QL_OK) return rc;
  fd_describe(s);
  memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  out->name = fd_name;
  out->display = fd_display;
  out->get_schema = fd_get_schema;
  out->get_properties = fd_get_properties;
  out->child_count = fd_child_count;
  out->child = fd_child;
  out->with_new_children = fd_with_new_children;
  out->execute = fd_execute;
  out->get_statistics = NULL;
  out->get_metrics = fd_get_metrics;
  out->release = fd_release;
  out->private_data = s;
  return QL_OK;
}
