/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_dftest: the plugin the DataFusion adapter's tests and benchmark load.
 *
 * Objects:
 *  - table provider "grid?rows=65&cols=16&batch_rows=0": float64 columns
 *    c0..c{cols-1}, value row * cols + col. The data is made once at open and
 *    held in reference-counted buffers; every batch a stream hands out
 *    points into them (no copy), so a scan costs what crossing the ABI costs.
 *    Exact statistics (row count, per-column min/max/nulls).
 *  - table provider "probe?url=&reserve=&spawn=&temp=&fail=": one row that
 *    reports what the host's services did for the plugin during get_next:
 *    bytes read from `url` through the object-store registry, a memory
 *    reservation of `reserve` bytes against the host's pool, `spawn` jobs run
 *    on the host's executor, a temp file from the host's disk manager, and
 *    whether the call was bracketed by the executor hooks. `fail=1` makes the
 *    stream fail after its first batch.
 *  - planner "decline": interested in every plan, always declines, reads
 *    nothing (so it takes the lazy plan view: QL_PLANNER_LAZY_VIEW);
 *    "decline_eager" is the same without the flag (the host builds the
 *    complete view for it).
 *
 * Only the ABI headers are used, so the plugin also documents the ABI by
 * example. Thread-safe: the provider's data is immutable after open; the
 * reference counts are atomic.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/qlink.h"

/* ------------------------------------------------------------ small helpers */

static int set_err(struct ql_error *error, int status, const char *msg);

static void err_release(struct ql_error *e) {
  free(e->message);
  e->message = NULL;
  e->release = NULL;
}

static int set_err(struct ql_error *error, int status, const char *msg) {
  if (error == NULL) return status;
  if (error->release) error->release(error);
  memset(error, 0, sizeof *error);
  error->struct_size = sizeof *error;
  error->status = status;
  const char *state = status == QL_ERESOURCES ? "53000" : status == QL_EINVAL ? "22023" : "XX000";
  memcpy(error->sqlstate, state, 6);
  error->message = strdup(msg);
  error->release = err_release;
  return status;
}

static const char *opt(const struct ql_options *o, const char *key, const char *fallback) {
  for (int64_t i = 0; o && i < o->count; i++) {
    if (strcmp(o->keys[i], key) == 0) return o->values[i];
  }
  return fallback;
}

/* QL_EINVAL naming the first option not in `known` (n names). */
static int check_options(const struct ql_options *o, const char *const *known, int n, const char *what,
                         struct ql_error *error) {
  for (int64_t i = 0; o && i < o->count; i++) {
    int ok = 0;
    for (int k = 0; k < n; k++) ok |= strcmp(o->keys[i], known[k]) == 0;
    if (!ok) {
      char msg[256];
      snprintf(msg, sizeof msg, "unknown option '%s' for qlink_dftest/%s", o->keys[i], what);
      return set_err(error, QL_EINVAL, msg);
    }
  }
  return QL_OK;
}

/* A leaf schema with static strings; release frees only the struct's own allocation. */
static void leaf_release(struct ArrowSchema *s) { s->release = NULL; }

static void struct_schema_release(struct ArrowSchema *s) {
  for (int64_t i = 0; i < s->n_children; i++) {
    struct ArrowSchema *c = s->children[i];
    if (c->release) c->release(c);
    free((void *)c->name);
    free(c);
  }
  free(s->children);
  s->release = NULL;
}

/* A struct schema of n columns named by names[i] (copied) with formats fmts[i] (static). */
static int make_schema(struct ArrowSchema *out, int64_t n, char **names, const char **fmts) {
  memset(out, 0, sizeof *out);
  out->format = "+s";
  out->name = "";
  out->n_children = n;
  out->children = calloc((size_t)(n > 0 ? n : 1), sizeof *out->children);
  if (!out->children) return QL_ENOMEM;
  for (int64_t i = 0; i < n; i++) {
    struct ArrowSchema *c = calloc(1, sizeof *c);
    if (!c) return QL_ENOMEM;
    c->format = fmts[i];
    c->name = strdup(names[i]);
    c->flags = ARROW_FLAG_NULLABLE;
    c->release = leaf_release;
    out->children[i] = c;
  }
  out->release = struct_schema_release;
  return QL_OK;
}

/* Enter/leave hooks: a per-thread depth, so get_next can report whether the
 * host bracketed it (gap G4). */
static _Thread_local int hook_depth;
static void *hook_enter(const struct ql_plugin *self) {
  (void)self;
  hook_depth++;
  return (void *)&hook_depth;
}
static void hook_leave(const struct ql_plugin *self, void *token) {
  (void)self;
  if (token == (void *)&hook_depth) hook_depth--;
}

/* -------------------------------------------------------------------- grid */

struct grid_data {
  atomic_long refs;
  int64_t rows, cols, batch_rows;
  double **columns; /* cols arrays of rows doubles */
};

static void grid_data_unref(struct grid_data *g) {
  if (atomic_fetch_sub(&g->refs, 1) != 1) return;
  for (int64_t c = 0; c < g->cols; c++) free(g->columns[c]);
  free(g->columns);
  free(g);
}

/* One exported batch: a struct array whose children point into grid_data. */
struct batch_private {
  struct grid_data *data;
  struct ArrowArray **children;
  const void **buffers; /* 2 per child + 1 for the parent */
  int64_t n_children;
};

static void child_release(struct ArrowArray *a) { a->release = NULL; }

static void batch_release(struct ArrowArray *a) {
  struct batch_private *p = a->private_data;
  for (int64_t i = 0; i < p->n_children; i++) free(p->children[i]);
  free(p->children);
  free(p->buffers);
  grid_data_unref(p->data);
  free(p);
  a->release = NULL;
}

static int grid_batch(struct grid_data *g, const int32_t *proj, int64_t n_proj, int64_t offset, int64_t length,
                      struct ArrowArray *out) {
  struct batch_private *p = calloc(1, sizeof *p);
  if (!p) return QL_ENOMEM;
  p->children = calloc((size_t)(n_proj > 0 ? n_proj : 1), sizeof *p->children);
  p->buffers = calloc((size_t)(2 * n_proj + 1), sizeof *p->buffers);
  if (!p->children || !p->buffers) {
    free(p->children);
    free(p->buffers);
    free(p);
    return QL_ENOMEM;
  }
  p->n_children = n_proj;
  for (int64_t i = 0; i < n_proj; i++) {
    struct ArrowArray *c = calloc(1, sizeof *c);
    if (!c) return QL_ENOMEM; /* leaks on OOM only */
    c->length = length;
    c->offset = offset;
    c->n_buffers = 2;
    c->buffers = &p->buffers[1 + 2 * i];
    p->buffers[1 + 2 * i] = NULL;
    p->buffers[2 + 2 * i] = g->columns[proj[i]];
    c->release = child_release;
    p->children[i] = c;
  }
  atomic_fetch_add(&g->refs, 1);
  p->data = g;
  memset(out, 0, sizeof *out);
  out->length = length;
  out->n_buffers = 1;
  out->buffers = p->buffers;
  out->n_children = n_proj;
  out->children = p->children;
  out->release = batch_release;
  out->private_data = p;
  return QL_OK;
}

struct grid_stream {
  struct grid_data *data;
  int32_t *proj;
  int64_t n_proj;
  int64_t next_row;
};

static int grid_stream_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
  struct grid_stream *gs = s->private_data;
  char **names = calloc((size_t)(gs->n_proj > 0 ? gs->n_proj : 1), sizeof *names);
  const char **fmts = calloc((size_t)(gs->n_proj > 0 ? gs->n_proj : 1), sizeof *fmts);
  char buf[32];
  int rc = QL_ENOMEM;
  if (names && fmts) {
    for (int64_t i = 0; i < gs->n_proj; i++) {
      snprintf(buf, sizeof buf, "c%d", gs->proj[i]);
      names[i] = strdup(buf);
      fmts[i] = "g";
    }
    rc = make_schema(out, gs->n_proj, names, fmts);
    for (int64_t i = 0; i < gs->n_proj; i++) free(names[i]);
  }
  free(names);
  free(fmts);
  return rc == QL_OK ? 0 : 12 /* ENOMEM */;
}

static int grid_stream_get_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
  struct grid_stream *gs = s->private_data;
  struct grid_data *g = gs->data;
  if (gs->next_row >= g->rows) {
    memset(out, 0, sizeof *out);
    return 0;
  }
  int64_t n = g->batch_rows > 0 ? g->batch_rows : g->rows;
  if (n > g->rows - gs->next_row) n = g->rows - gs->next_row;
  if (grid_batch(g, gs->proj, gs->n_proj, gs->next_row, n, out) != QL_OK) return 12;
  gs->next_row += n;
  return 0;
}

static const char *grid_stream_last_error(struct ArrowArrayStream *s) {
  (void)s;
  return "out of memory";
}

static void grid_stream_release(struct ArrowArrayStream *s) {
  struct grid_stream *gs = s->private_data;
  grid_data_unref(gs->data);
  free(gs->proj);
  free(gs);
  s->release = NULL;
}

/* The scan's execution plan: one partition. */
struct grid_plan {
  struct grid_data *data;
  int32_t *proj;
  int64_t n_proj;
};

static const char *grid_plan_name(const struct ql_execution_plan *self) {
  (void)self;
  return "GridScanExec";
}
static const char *grid_plan_display(const struct ql_execution_plan *self) {
  (void)self;
  return "in-memory grid";
}

static int grid_plan_schema(const struct ql_execution_plan *self, struct ArrowSchema *out, struct ql_error *error) {
  struct grid_plan *gp = self->private_data;
  struct grid_stream tmp = {gp->data, gp->proj, gp->n_proj, 0};
  struct ArrowArrayStream s = {0};
  s.private_data = &tmp;
  if (grid_stream_get_schema(&s, out) != 0) return set_err(error, QL_ENOMEM, "grid: out of memory");
  return QL_OK;
}

static int grid_plan_props(const struct ql_execution_plan *self, struct ql_plan_properties *out,
                           struct ql_error *error) {
  (void)self;
  (void)error;
  out->struct_size = sizeof *out;
  out->boundedness = QL_BOUNDED;
  out->partition_count = 1;
  out->n_ordering = 0;
  out->ordering = NULL;
  return QL_OK;
}

static int64_t no_children(const struct ql_execution_plan *self) {
  (void)self;
  return 0;
}

static int grid_plan_execute(const struct ql_execution_plan *self, int64_t partition, const struct ql_task_context *ctx,
                             struct ArrowArrayStream *out, struct ql_error *error) {
  (void)ctx;
  struct grid_plan *gp = self->private_data;
  if (partition != 0) return set_err(error, QL_EINVAL, "grid: partition out of range");
  struct grid_stream *gs = calloc(1, sizeof *gs);
  if (!gs) return set_err(error, QL_ENOMEM, "grid: out of memory");
  gs->proj = malloc(sizeof(int32_t) * (size_t)(gp->n_proj > 0 ? gp->n_proj : 1));
  if (!gs->proj) {
    free(gs);
    return set_err(error, QL_ENOMEM, "grid: out of memory");
  }
  memcpy(gs->proj, gp->proj, sizeof(int32_t) * (size_t)gp->n_proj);
  gs->n_proj = gp->n_proj;
  gs->data = gp->data;
  atomic_fetch_add(&gp->data->refs, 1);
  out->get_schema = grid_stream_get_schema;
  out->get_next = grid_stream_get_next;
  out->get_last_error = grid_stream_last_error;
  out->release = grid_stream_release;
  out->private_data = gs;
  return QL_OK;
}

static void grid_plan_release(struct ql_execution_plan *self) {
  struct grid_plan *gp = self->private_data;
  grid_data_unref(gp->data);
  free(gp->proj);
  free(gp);
  self->release = NULL;
}

static int grid_get_schema(const struct ql_table_provider *self, struct ArrowSchema *out, struct ql_error *error) {
  struct grid_data *g = self->private_data;
  struct grid_plan tmp = {g, NULL, g->cols};
  int32_t *proj = malloc(sizeof(int32_t) * (size_t)g->cols);
  if (!proj) return set_err(error, QL_ENOMEM, "grid: out of memory");
  for (int64_t i = 0; i < g->cols; i++) proj[i] = (int32_t)i;
  tmp.proj = proj;
  struct ql_execution_plan p = {0};
  p.private_data = &tmp;
  int rc = grid_plan_schema(&p, out, error);
  free(proj);
  return rc;
}

static void stats_release(struct ql_statistics *s) {
  free(s->columns);
  s->release = NULL;
}

static int grid_statistics(const struct ql_table_provider *self, struct ql_statistics *out, struct ql_error *error) {
  struct grid_data *g = self->private_data;
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->num_rows_precision = QL_PRECISION_EXACT;
  out->num_rows = g->rows;
  out->n_columns = g->cols;
  out->columns = calloc((size_t)g->cols, sizeof *out->columns);
  if (!out->columns) return set_err(error, QL_ENOMEM, "grid: out of memory");
  for (int64_t c = 0; c < g->cols; c++) {
    struct ql_column_statistics *cs = &out->columns[c];
    cs->null_count_precision = QL_PRECISION_EXACT;
    cs->null_count = 0;
    cs->min_max_precision = g->rows > 0 ? QL_PRECISION_EXACT : QL_PRECISION_ABSENT;
    cs->min.format = "g";
    cs->min.value.f64 = (double)c;
    cs->max.format = "g";
    cs->max.value.f64 = (double)((g->rows - 1) * g->cols + c);
  }
  out->release = stats_release;
  return QL_OK;
}

static int grid_scan(const struct ql_table_provider *self, const struct ql_session *session,
                     const struct ql_scan_args *args, struct ql_execution_plan *out, struct ql_error *error) {
  (void)session;
  struct grid_data *g = self->private_data;
  struct grid_plan *gp = calloc(1, sizeof *gp);
  if (!gp) return set_err(error, QL_ENOMEM, "grid: out of memory");
  int64_t n = args->n_projection < 0 ? g->cols : args->n_projection;
  gp->proj = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
  if (!gp->proj) {
    free(gp);
    return set_err(error, QL_ENOMEM, "grid: out of memory");
  }
  for (int64_t i = 0; i < n; i++) {
    int32_t c = args->n_projection < 0 ? (int32_t)i : args->projection[i];
    if (c < 0 || c >= g->cols) {
      free(gp->proj);
      free(gp);
      return set_err(error, QL_EINVAL, "grid: projection index out of range");
    }
    gp->proj[i] = c;
  }
  gp->n_proj = n;
  gp->data = g;
  atomic_fetch_add(&g->refs, 1);
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->name = grid_plan_name;
  out->display = grid_plan_display;
  out->get_schema = grid_plan_schema;
  out->get_properties = grid_plan_props;
  out->child_count = no_children;
  out->execute = grid_plan_execute;
  out->release = grid_plan_release;
  out->private_data = gp;
  return QL_OK;
}

static void grid_release(struct ql_table_provider *self) {
  grid_data_unref(self->private_data);
  self->release = NULL;
}

static int grid_open(const struct ql_options *options, struct ql_table_provider *out, struct ql_error *error) {
  static const char *const known[] = {"rows", "cols", "batch_rows"};
  if (check_options(options, known, 3, "grid", error) != QL_OK) return QL_EINVAL;
  int64_t rows = atoll(opt(options, "rows", "65"));
  int64_t cols = atoll(opt(options, "cols", "16"));
  int64_t batch_rows = atoll(opt(options, "batch_rows", "0"));
  if (rows < 0 || cols <= 0 || cols > 100000) return set_err(error, QL_EINVAL, "grid: bad rows or cols option");
  struct grid_data *g = calloc(1, sizeof *g);
  if (!g) return set_err(error, QL_ENOMEM, "grid: out of memory");
  atomic_init(&g->refs, 1);
  g->rows = rows;
  g->cols = cols;
  g->batch_rows = batch_rows;
  g->columns = calloc((size_t)cols, sizeof *g->columns);
  if (!g->columns) {
    free(g);
    return set_err(error, QL_ENOMEM, "grid: out of memory");
  }
  for (int64_t c = 0; c < cols; c++) {
    g->columns[c] = malloc(sizeof(double) * (size_t)(rows > 0 ? rows : 1));
    if (!g->columns[c]) {
      grid_data_unref(g);
      return set_err(error, QL_ENOMEM, "grid: out of memory");
    }
    for (int64_t r = 0; r < rows; r++) g->columns[c][r] = (double)(r * cols + c);
  }
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->table_type = QL_TABLE_BASE;
  out->get_schema = grid_get_schema;
  out->get_statistics = grid_statistics;
  out->scan = grid_scan;
  out->release = grid_release;
  out->private_data = g;
  return QL_OK;
}

/* ------------------------------------------------------------------- probe */

#define PROBE_COLS 6
struct probe_config {
  int32_t proj[PROBE_COLS]; /* projected columns, in order */
  int32_t n_proj;
  char *url;
  int64_t reserve;
  int64_t spawn;
  int temp;
  int fail;
};

static char *probe_names[PROBE_COLS] = {"bytes_read", "first_byte", "reserved", "spawned_sum", "temp_ok", "in_hook"};
static const char *probe_fmts[PROBE_COLS] = {"l", "l", "l", "l", "l", "l"};

struct probe_stream {
  struct probe_config cfg;
  const struct ql_task_context *ctx;
  int64_t batches;
  char last_error[512];
};

struct job_arg {
  int64_t i;
  int64_t result;
};

static int job_fn(void *arg, struct ql_error *error) {
  (void)error;
  struct job_arg *a = arg;
  a->result = (a->i + 1) * 10 + hook_depth; /* hook_depth 1: the host bracketed the job */
  return QL_OK;
}

struct i64_array {
  int64_t *values;
};

static void i64_release(struct ArrowArray *a) {
  free(a->private_data);
  free(a->buffers);
  a->release = NULL;
}

static void probe_batch_release(struct ArrowArray *a) {
  for (int64_t i = 0; i < a->n_children; i++) {
    if (a->children[i]->release) a->children[i]->release(a->children[i]);
    free(a->children[i]);
  }
  free(a->children);
  free(a->buffers);
  a->release = NULL;
}

static int probe_row(const struct probe_config *cfg, const int64_t *all, struct ArrowArray *out) {
  int64_t values[PROBE_COLS];
  for (int i = 0; i < cfg->n_proj; i++) values[i] = all[cfg->proj[i]];
  memset(out, 0, sizeof *out);
  out->length = 1;
  out->n_buffers = 1;
  out->buffers = calloc(1, sizeof(void *));
  out->n_children = cfg->n_proj;
  out->children = calloc(PROBE_COLS, sizeof *out->children);
  if (!out->buffers || !out->children) return QL_ENOMEM;
  for (int i = 0; i < cfg->n_proj; i++) {
    struct ArrowArray *c = calloc(1, sizeof *c);
    int64_t *v = malloc(sizeof *v);
    const void **bufs = calloc(2, sizeof(void *));
    if (!c || !v || !bufs) return QL_ENOMEM;
    *v = values[i];
    bufs[1] = v;
    c->length = 1;
    c->n_buffers = 2;
    c->buffers = bufs;
    c->private_data = v;
    c->release = i64_release;
    out->children[i] = c;
  }
  out->release = probe_batch_release;
  return QL_OK;
}

static int probe_fail(struct probe_stream *ps, struct ql_error *err, const char *what) {
  snprintf(ps->last_error, sizeof ps->last_error, "probe: %s: %s", what,
           err->release && err->message ? err->message : "failed");
  int status = err->status;
  if (err->release) err->release(err);
  /* errno-style codes for an Arrow stream */
  return status == QL_ERESOURCES ? ENOSPC : status == QL_ENOTFOUND ? ENOENT : EIO;
}

static int probe_get_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
  struct probe_stream *ps = s->private_data;
  struct ql_error err = {0};
  err.struct_size = sizeof err;
  if (ps->batches == 1 && ps->cfg.fail) {
    snprintf(ps->last_error, sizeof ps->last_error, "probe: injected failure after the first batch");
    return 5;
  }
  if (ps->batches >= (ps->cfg.fail ? 2 : 1)) {
    memset(out, 0, sizeof *out);
    return 0;
  }
  int64_t values[PROBE_COLS] = {0, -1, 0, 0, 0, hook_depth > 0};
  const struct ql_runtime_env *env = ps->ctx->runtime_env;
  if (ps->cfg.url && ps->cfg.url[0]) {
    if (!env || !env->object_stores) return 5;
    struct ql_object_store store = {0};
    /* url is "scheme://authority/path": the store is looked up by the whole URL. */
    if (env->object_stores->get_store(env->object_stores, ps->cfg.url, &store, &err) != QL_OK)
      return probe_fail(ps, &err, "get_store");
    const char *path = strstr(ps->cfg.url, "://");
    path = path ? strchr(path + 3, '/') : NULL;
    path = path ? path + 1 : "";
    struct ql_bytes bytes = {0};
    int rc = store.get_range(&store, path, 0, -1, &bytes, &err);
    store.release(&store);
    if (rc != QL_OK) return probe_fail(ps, &err, "get_range");
    values[0] = bytes.size;
    values[1] = bytes.size > 0 ? bytes.data[0] : -1;
    bytes.release(&bytes);
  }
  if (ps->cfg.reserve > 0) {
    struct ql_memory_reservation r = {0};
    if (env->memory_pool->reservation_new(env->memory_pool, "probe", 0, &r, &err) != QL_OK)
      return probe_fail(ps, &err, "reservation_new");
    int rc = r.try_grow(&r, ps->cfg.reserve, &err);
    values[2] = r.size(&r);
    r.release(&r);
    if (rc != QL_OK) return probe_fail(ps, &err, "try_grow");
  }
  if (ps->cfg.spawn > 0) {
    const struct ql_executor *ex = ps->ctx->executor;
    if (!ex) return 5;
    struct job_arg *args = calloc((size_t)ps->cfg.spawn, sizeof *args);
    struct ql_job *jobs = calloc((size_t)ps->cfg.spawn, sizeof *jobs);
    if (!args || !jobs) return 12;
    for (int64_t i = 0; i < ps->cfg.spawn; i++) {
      args[i].i = i;
      if (ex->spawn(ex, job_fn, &args[i], &jobs[i], &err) != QL_OK) return probe_fail(ps, &err, "spawn");
    }
    for (int64_t i = 0; i < ps->cfg.spawn; i++) {
      if (jobs[i].wait(&jobs[i], &err) != QL_OK) return probe_fail(ps, &err, "wait");
      jobs[i].release(&jobs[i]);
      values[3] += args[i].result;
    }
    free(args);
    free(jobs);
  }
  if (ps->cfg.temp) {
    struct ql_temp_file tf = {0};
    if (env->temp_files->create(env->temp_files, "probe", &tf, &err) != QL_OK) return probe_fail(ps, &err, "temp");
    FILE *f = fopen(tf.path, "wb");
    values[4] = f != NULL && fputs("qlink", f) >= 0;
    if (f) fclose(f);
    tf.release(&tf);
  }
  ps->batches++;
  return probe_row(&ps->cfg, values, out) == QL_OK ? 0 : 12;
}

static int probe_schema(const struct probe_config *cfg, struct ArrowSchema *out) {
  char *names[PROBE_COLS];
  for (int i = 0; i < cfg->n_proj; i++) names[i] = probe_names[cfg->proj[i]];
  return make_schema(out, cfg->n_proj, names, probe_fmts);
}

static int probe_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
  return probe_schema(&((struct probe_stream *)s->private_data)->cfg, out) == QL_OK ? 0 : 12;
}

static const char *probe_last_error(struct ArrowArrayStream *s) {
  return ((struct probe_stream *)s->private_data)->last_error;
}

static void probe_stream_release(struct ArrowArrayStream *s) {
  struct probe_stream *ps = s->private_data;
  free(ps->cfg.url);
  free(ps);
  s->release = NULL;
}

static const char *probe_plan_name(const struct ql_execution_plan *self) {
  (void)self;
  return "ProbeExec";
}

static int probe_plan_schema(const struct ql_execution_plan *self, struct ArrowSchema *out, struct ql_error *error) {
  if (probe_schema(self->private_data, out) != QL_OK) return set_err(error, QL_ENOMEM, "oom");
  return QL_OK;
}

static int probe_plan_execute(const struct ql_execution_plan *self, int64_t partition, const struct ql_task_context *ctx,
                              struct ArrowArrayStream *out, struct ql_error *error) {
  struct probe_config *cfg = self->private_data;
  if (partition != 0) return set_err(error, QL_EINVAL, "probe: partition out of range");
  struct probe_stream *ps = calloc(1, sizeof *ps);
  if (!ps) return set_err(error, QL_ENOMEM, "oom");
  ps->cfg = *cfg;
  ps->cfg.url = cfg->url ? strdup(cfg->url) : NULL;
  ps->ctx = ctx;
  out->get_schema = probe_get_schema;
  out->get_next = probe_get_next;
  out->get_last_error = probe_last_error;
  out->release = probe_stream_release;
  out->private_data = ps;
  return QL_OK;
}

static void probe_config_free(struct probe_config *c) {
  free(c->url);
  free(c);
}

static void probe_plan_release(struct ql_execution_plan *self) {
  probe_config_free(self->private_data);
  self->release = NULL;
}

static int probe_get_table_schema(const struct ql_table_provider *self, struct ArrowSchema *out,
                                  struct ql_error *error) {
  if (probe_schema(self->private_data, out) != QL_OK) return set_err(error, QL_ENOMEM, "oom");
  return QL_OK;
}

static struct probe_config *probe_config_copy(const struct probe_config *c) {
  struct probe_config *d = malloc(sizeof *d);
  if (!d) return NULL;
  *d = *c;
  d->url = c->url ? strdup(c->url) : NULL;
  return d;
}

static int probe_scan(const struct ql_table_provider *self, const struct ql_session *session,
                      const struct ql_scan_args *args, struct ql_execution_plan *out, struct ql_error *error) {
  (void)session;
  if (args->n_projection > PROBE_COLS) return set_err(error, QL_EINVAL, "probe: projection too long");
  for (int32_t i = 0; i < args->n_projection; i++) {
    if (args->projection[i] < 0 || args->projection[i] >= PROBE_COLS)
      return set_err(error, QL_EINVAL, "probe: projection index out of range");
  }
  struct probe_config *cfg = probe_config_copy(self->private_data);
  if (!cfg) return set_err(error, QL_ENOMEM, "oom");
  if (args->n_projection >= 0) {
    cfg->n_proj = args->n_projection;
    for (int32_t i = 0; i < args->n_projection; i++) cfg->proj[i] = args->projection[i];
  }
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->name = probe_plan_name;
  out->display = grid_plan_display;
  out->get_schema = probe_plan_schema;
  out->get_properties = grid_plan_props;
  out->child_count = no_children;
  out->execute = probe_plan_execute;
  out->release = probe_plan_release;
  out->private_data = cfg;
  return QL_OK;
}

static void probe_release(struct ql_table_provider *self) {
  probe_config_free(self->private_data);
  self->release = NULL;
}

static int probe_open(const struct ql_options *options, struct ql_table_provider *out, struct ql_error *error) {
  static const char *const known[] = {"url", "reserve", "spawn", "temp", "fail"};
  if (check_options(options, known, 5, "probe", error) != QL_OK) return QL_EINVAL;
  struct probe_config *c = calloc(1, sizeof *c);
  if (!c) return set_err(error, QL_ENOMEM, "oom");
  const char *url = opt(options, "url", NULL);
  c->url = url ? strdup(url) : NULL;
  c->reserve = atoll(opt(options, "reserve", "0"));
  c->spawn = atoll(opt(options, "spawn", "0"));
  c->temp = atoi(opt(options, "temp", "0"));
  c->fail = atoi(opt(options, "fail", "0"));
  c->n_proj = PROBE_COLS;
  for (int i = 0; i < PROBE_COLS; i++) c->proj[i] = i;
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->table_type = QL_TABLE_BASE;
  out->get_schema = probe_get_table_schema;
  out->scan = probe_scan;
  out->release = probe_release;
  out->private_data = c;
  return QL_OK;
}

/* ----------------------------------------------------------------- planner */

static atomic_long planner_calls;

static int decline_plan(const struct ql_planner *self, const struct ql_planner_context *ctx,
                        struct ql_planner_result *out, struct ql_error *error) {
  (void)self;
  (void)ctx;
  (void)error;
  atomic_fetch_add(&planner_calls, 1);
  out->action = QL_PLANNER_DECLINE;
  return QL_OK;
}

static void planner_release(struct ql_planner *self) { self->release = NULL; }

/* ------------------------------------------------------------------ plugin */

static const struct ql_option_info grid_options[] = {
    {"rows", "number of rows", "65", 0, 0},
    {"cols", "number of float64 columns", "16", 0, 0},
    {"batch_rows", "rows per batch (0: one batch)", "0", 0, 0},
};
static const struct ql_option_info probe_options[] = {
    {"url", "object to read through the host's object-store registry", NULL, 0, 0},
    {"reserve", "bytes to reserve from the host's memory pool", "0", 0, 0},
    {"spawn", "jobs to run on the host's executor", "0", 0, 0},
    {"temp", "1: create a temp file through the host's disk manager", "0", 0, 0},
    {"fail", "1: fail the stream after its first batch", "0", 0, 0},
};
static const struct ql_item_info items[] = {
    {QL_ITEM_TABLE_PROVIDER, 3, "grid", "float64 grid held in memory, streamed without copying", grid_options},
    {QL_ITEM_TABLE_PROVIDER, 5, "probe", "one row reporting what the host's services did", probe_options},
    {QL_ITEM_PLANNER, 0, "decline", "interested in every plan; always declines (lazy plan view)", NULL},
    {QL_ITEM_PLANNER, 0, "decline_eager", "interested in every plan; always declines (complete plan view)", NULL},
};

static int table_open(const struct ql_plugin *self, const char *name, const struct ql_options *options,
                      const struct ql_session *session, struct ql_table_provider *out, struct ql_error *error) {
  (void)self;
  (void)session;
  if (strcmp(name, "grid") == 0) return grid_open(options, out, error);
  if (strcmp(name, "probe") == 0) return probe_open(options, out, error);
  return set_err(error, QL_ENOTFOUND, "qlink_dftest: no such table provider");
}

static int planner_open(const struct ql_plugin *self, const char *name, const struct ql_options *options,
                        struct ql_planner *out, struct ql_error *error) {
  (void)self;
  if (options && options->count > 0) return set_err(error, QL_EINVAL, "planner qlink_dftest/decline takes no options");
  int lazy = strcmp(name, "decline") == 0;
  if (!lazy && strcmp(name, "decline_eager") != 0) return set_err(error, QL_ENOTFOUND, "qlink_dftest: no such planner");
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->interest = 0;
  out->flags = lazy ? QL_PLANNER_LAZY_VIEW : 0;
  out->plan = decline_plan;
  out->release = planner_release;
  return QL_OK;
}

static void plugin_release(struct ql_plugin *self) { self->release = NULL; }

QL_PLUGIN_EXPORT int qlink_plugin_init(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error);

QL_PLUGIN_EXPORT int qlink_plugin_init(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error) {
  if (abi_version != QL_ABI_VERSION_0_1) return set_err(error, QL_EVERSION, "qlink_dftest serves ABI 0.1 only");
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->magic = QL_PLUGIN_MAGIC;
  out->abi_version = abi_version;
  out->n_items = (int32_t)(sizeof items / sizeof items[0]);
  out->name = "qlink_dftest";
  out->version = "0.1.0";
  out->description = "test and benchmark plugin of the DataFusion adapter";
  out->items = items;
  out->executor_enter = hook_enter;
  out->executor_leave = hook_leave;
  out->table_provider_open = table_open;
  out->planner_open = planner_open;
  out->release = plugin_release;
  return QL_OK;
}
