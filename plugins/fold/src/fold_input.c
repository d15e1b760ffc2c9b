/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_fold: reading the children: partitions, batches, workers (see fold_internal.h, fold_exec.h). */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold_internal.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/status.h"

void fd_side_init(const struct fd_spec *spec, int side, struct fd_side *out) {
  memset(out, 0, sizeof(*out));
  out->n_keys = spec->n_keys;
  for (int32_t i = 0; i < spec->n_keys; i++) out->keys[i] = &spec->keys[side][i];
  for (int32_t i = 0; i < spec->n_groups; i++)
    if (spec->groups[i].side == side) out->groups[out->n_groups++] = &spec->groups[i];
  out->value = &spec->values[side];
}

static int fd_cancelled(const struct ql_task_context *ctx) {
  return ctx->is_cancelled && ctx->is_cancelled(ctx);
}

/* Drain partition p of child `side`, calling fn on each batch. */
int fd_drain(struct fd_run *run, int side, int64_t p,
                         int (*fn)(struct fd_run *run, void *arg, struct ArrowArray *batch,
                                   struct ql_error *error),
                         void *arg, struct ql_error *error) {
  const struct ql_execution_plan *child = &run->plan->children[side];
  struct ql_task_context ctx = run->ctx;
  ctx.partition = p;
  struct ArrowArrayStream stream;
  memset(&stream, 0, sizeof(stream));
  int rc = child->execute(child, p, &ctx, &stream, error);
  if (rc != QL_OK) return ql_error_prefix(error, "qlink_fold: input %d partition %lld", side, (long long)p);
  for (;;) {
    if (fd_cancelled(&run->ctx)) {
      rc = ql_error_set(error, QL_ECANCELLED, "qlink_fold: query cancelled");
      break;
    }
    struct ArrowArray batch;
    memset(&batch, 0, sizeof(batch));
    int e = stream.get_next(&stream, &batch);
    if (e != 0) {
      const char *msg = stream.get_last_error ? stream.get_last_error(&stream) : NULL;
      rc = ql_error_set(error, ql_status_from_errno(e), "qlink_fold: input %d partition %lld: %s", side,
                        (long long)p, msg ? msg : strerror(e));
      break;
    }
    if (!batch.release) break;
    rc = fn(run, arg, &batch, error);
    if (batch.release) batch.release(&batch);
    if (rc != QL_OK) break;
  }
  stream.release(&stream);
  return rc;
}

/* A batch from a child must have the columns the fold reads, each a
 * fixed-width array with a data buffer: a malformed batch is an error, never
 * a crash. */
int fd_check_batch(const struct fd_run *run, int side, const struct ArrowArray *batch,
                               struct ql_error *error) {
  const struct fd_spec *s = &run->plan->spec;
  const struct fd_operand *ops[FD_MAX_KEYS + FD_MAX_GROUPS + 1];
  int n = 0;
  for (int32_t i = 0; i < s->n_keys; i++) ops[n++] = &s->keys[side][i];
  for (int32_t i = 0; i < s->n_groups; i++)
    if (s->groups[i].side == side) ops[n++] = &s->groups[i];
  ops[n++] = &s->values[side];
  if (batch->length < 0 || batch->offset < 0)
    return ql_error_set(error, QL_EDATA, "qlink_fold: input %d batch has a negative length or offset", side);
  for (int i = 0; i < n; i++) {
    int32_t col = ops[i]->column;
    const struct ArrowArray *c = col < batch->n_children && batch->children ? batch->children[col] : NULL;
    if (!c || c->n_buffers < 2 || c->offset < 0 || c->length < batch->offset + batch->length ||
        (c->length > 0 && !c->buffers[1]))
      return ql_error_set(error, QL_EDATA, "qlink_fold: input %d batch column %d (%s) is missing or malformed", side,
                          col, ops[i]->name);
  }
  return QL_OK;
}

int64_t fd_partition_count(const struct ql_execution_plan *child, struct ql_error *error) {
  struct ql_plan_properties props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  if (child->get_properties(child, &props, error) != QL_OK) return -1;
  return props.partition_count;
}

/* Run fn(arg) on this thread and up to parallelism - 1 executor workers. */
int fd_parallel(const struct ql_task_context *ctx, int64_t max_workers, int (*fn)(void *, struct ql_error *),
                            void *arg, struct ql_error *error) {
  const struct ql_executor *ex = ctx->executor;
  int64_t want = ex && ex->spawn ? (ex->parallelism ? ex->parallelism(ex) : 1) : 1;
  if (want > max_workers) want = max_workers;
  if (want > 64) want = 64;
  struct ql_job jobs[64];
  int32_t n_jobs = 0;
  for (int64_t j = 1; j < want; j++) {
    struct ql_error e;
    memset(&e, 0, sizeof(e));
    if (ex->spawn(ex, fn, arg, &jobs[n_jobs], &e) != QL_OK) {
      ql_error_release(&e);
      break; /* fewer workers is fine */
    }
    n_jobs++;
  }
  int rc = fn(arg, error);
  for (int32_t j = 0; j < n_jobs; j++) {
    struct ql_error e;
    memset(&e, 0, sizeof(e));
    int jrc = jobs[j].wait(&jobs[j], &e);
    if (jobs[j].release) jobs[j].release(&jobs[j]);
    if (jrc != QL_OK && rc == QL_OK) {
      rc = jrc;
      ql_error_move(error, &e);
    }
    ql_error_release(&e);
  }
  return rc;
}
