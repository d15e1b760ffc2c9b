/* SPDX-License-Identifier: Apache-2.0 */
/* One table provider as a DuckDB table function, the engine-side work
 * both builds share (scan.h): opening a provider from its spec, mapping
 * its schema, planning a scan and walking its partitions. No DuckDB call:
 * v1/scan.c and v2/scan.c wrap these. */
#include "common/scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/access.h"
#include "common/types.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/host.h"
#include "qlink/lib/ir.h"
#include "qlink/lib/status.h"

/* ---- bind */

struct qd_bind *qd_bind_new(struct qd_db *db, const char *spec) {
  struct qd_bind *b = calloc(1, sizeof(*b));
  size_t label_cap = strlen(spec) + 16;
  if (b) b->label = malloc(label_cap);
  if (!b || !b->label) {
    free(b);
    return NULL;
  }
  b->db = db;
  snprintf(b->label, label_cap, "qlink_scan('%s')", spec);
  return b;
}

void qd_bind_free(void *data) {
  struct qd_bind *b = data;
  if (!b) return;
  if (b->provider.release) {
    void *tok = ql_plugin_enter(b->plugin);
    b->provider.release(&b->provider);
    ql_plugin_leave(b->plugin, tok);
  }
  ql_ir_builder_free(b->filters);
  ql_schema_release(&b->schema);
  free(b->types);
  free(b->label);
  free(b);
}

int qd_bind_open(struct qd_bind *b, const char *spec, size_t len, const char *table, struct ql_error *err) {
  struct qd_db *db = b->db;
  struct ql_table_spec ts = {0};
  int rc = ql_table_spec_parse_n(spec, len, &ts, err);
  if (rc == QL_OK) rc = qd_check_options(db, &ts.options, err);
  if (rc == QL_OK) rc = qd_plugin_get(db, ts.plugin, &b->plugin, err);
  if (rc == QL_OK && table) {
    /* qlink_scan('PLUGIN/SCHEMA_PROVIDER?...', table := 'NAME'): one table of a schema provider (qlink_attach's views). */
    if (!b->plugin->schema_provider_open) {
      rc = ql_error_set(err, QL_ENOTFOUND, "plugin %s has no schema provider '%s'", b->plugin->name, ts.provider);
    } else {
      struct ql_schema_provider sp = {0};
      void *tok = ql_plugin_enter(b->plugin);
      rc = b->plugin->schema_provider_open(b->plugin, ts.provider, &ts.options, ql_ref_host_session(db->host), &sp,
                                           err);
      if (rc == QL_OK) {
        rc = sp.table(&sp, table, &b->provider, err);
        sp.release(&sp);
      }
      ql_plugin_leave(b->plugin, tok);
    }
  } else if (rc == QL_OK) {
    if (!b->plugin->table_provider_open) {
      rc = ql_error_set(err, QL_ENOTFOUND, "plugin %s has no table provider '%s'", b->plugin->name, ts.provider);
    } else {
      void *tok = ql_plugin_enter(b->plugin);
      rc = b->plugin->table_provider_open(b->plugin, ts.provider, &ts.options, ql_ref_host_session(db->host),
                                           &b->provider, err);
      ql_plugin_leave(b->plugin, tok);
    }
  }
  ql_table_spec_free(&ts);
  return rc;
}

int qd_bind_schema(struct qd_bind *b, int64_t *rows, int *exact, struct ql_error *err) {
  *rows = -1;
  *exact = 0;
  void *tok = ql_plugin_enter(b->plugin);
  int rc = b->provider.get_schema(&b->provider, &b->schema, err);
  ql_plugin_leave(b->plugin, tok);
  if (rc == QL_OK) {
    b->n_columns = b->schema.n_children;
    b->types = calloc((size_t)(b->n_columns ? b->n_columns : 1), sizeof(*b->types));
    if (!b->types) rc = ql_error_set(err, QL_ENOMEM, "out of memory");
  }
  for (int64_t i = 0; rc == QL_OK && i < b->n_columns; i++) {
    char why[256];
    const struct ArrowSchema *c = b->schema.children[i];
    if (qd_type_parse(c->format, &b->types[i], why, sizeof(why)) != 0) {
      rc = ql_error_set(err, QL_ENOTSUP, "column '%s': %s", c->name, why);
    }
  }
  if (rc == QL_OK && b->provider.get_statistics) {
    struct ql_statistics st = {0};
    st.struct_size = sizeof(st);
    tok = ql_plugin_enter(b->plugin);
    if (b->provider.get_statistics(&b->provider, &st, NULL) == QL_OK) {
      if (st.num_rows_precision != QL_PRECISION_ABSENT && st.num_rows >= 0) {
        *rows = st.num_rows;
        *exact = st.num_rows_precision == QL_PRECISION_EXACT;
      }
      if (st.release) st.release(&st);
    }
    ql_plugin_leave(b->plugin, tok);
  }
  return rc;
}

/* ---- one scan */

static int qd_is_cancelled(const struct ql_task_context *self) {
  struct qd_global *g = self->private_data;
  return atomic_load(&g->cancelled);
}

void qd_global_free(void *data) {
  struct qd_global *g = data;
  if (!g) return;
  atomic_store(&g->cancelled, 1);
  if (g->plan.release) {
    void *tok = ql_plugin_enter(g->bind->plugin);
    g->plan.release(&g->plan);
    ql_plugin_leave(g->bind->plugin, tok);
  }
  free(g->out_source);
  free(g->out_col);
  free(g);
}

struct qd_global *qd_global_new(struct qd_bind *b, idx_t n, const idx_t *cols, char **msg) {
  struct qd_global *g = calloc(1, sizeof(*g));
  int32_t *proj = calloc(n ? n : 1, sizeof(*proj));
  if (g) g->out_source = calloc(n ? n : 1, sizeof(*g->out_source));
  if (g) g->out_col = calloc(n ? n : 1, sizeof(*g->out_col));
  if (!g || !proj || !g->out_source || !g->out_col) {
    *msg = qd_printf("%s: out of memory", b->label);
    free(proj);
    if (g) free(g->out_source), free(g->out_col);
    free(g);
    return NULL;
  }
  g->bind = b;
  atomic_init(&g->next, 0);
  atomic_init(&g->cancelled, 0);
  int32_t n_proj = 0;
  for (idx_t i = 0; i < n; i++) {
    if (cols[i] < (idx_t)b->n_columns) {
      g->out_col[i] = (int32_t)cols[i];
      g->out_source[i] = n_proj;
      proj[n_proj++] = (int32_t)cols[i];
    } else {
      g->out_source[i] = -1; /* DuckDB's row id: count(*) needs rows, not values */
    }
  }
  g->n_out = (int32_t)n;
  if (n_proj == 0 && b->n_columns > 0) proj[n_proj++] = 0; /* rows still need one column */
  struct ql_error err = {0};
  struct ql_plan_view view = {0};
  view.struct_size = sizeof(view); /* ql_ir_builder_peek leaves it to the host */
  struct ql_scan_args args = {sizeof(args), n_proj, proj, {0}, -1};
  int rc = QL_OK;
  if (b->n_filters > 0) {
    /* every filter the provider uses: EXACT ones DuckDB no longer checks, the others prune */
    rc = ql_ir_builder_peek(b->filters, -1, &view, &err);
    args.filters = (struct ql_expr_list){&view, 0, 0, NULL};
    ql_expr_id *used = rc == QL_OK ? malloc(sizeof(ql_expr_id) * (size_t)b->n_filters) : NULL;
    if (rc == QL_OK && !used) rc = ql_error_set(&err, QL_ENOMEM, "out of memory");
    for (int32_t i = 0; rc == QL_OK && i < b->n_filters; i++) {
      if (b->answers[i] != QL_PUSHDOWN_UNSUPPORTED) used[args.filters.n_exprs++] = b->roots[i];
    }
    args.filters.exprs = used;
  }
  struct ql_plan_properties props = {0};
  props.struct_size = sizeof(props);
  if (rc == QL_OK) {
    void *tok = ql_plugin_enter(b->plugin);
    rc = b->provider.scan(&b->provider, ql_ref_host_session(b->db->host), &args, &g->plan, &err);
    if (rc == QL_OK) rc = g->plan.get_properties(&g->plan, &props, &err);
    ql_plugin_leave(b->plugin, tok);
  }
  free((void *)args.filters.exprs);
  free(proj);
  if (rc != QL_OK) {
    *msg = qd_printf("%s: %s", b->label, ql_error_message(&err));
    ql_error_release(&err);
    qd_global_free(g);
    return NULL;
  }
  g->partitions = props.partition_count;
  return g;
}

static void qd_local_close(struct qd_local *l) {
  if (!l->g) return;
  const struct ql_plugin *p = l->g->bind->plugin;
  void *tok = ql_plugin_enter(p);
  if (l->batch.release) l->batch.release(&l->batch);
  if (l->stream.release) l->stream.release(&l->stream);
  ql_plugin_leave(p, tok);
}

void qd_local_free(void *data) {
  struct qd_local *l = data;
  if (!l) return;
  qd_local_close(l);
  free(l);
}

static int qd_local_fail(struct qd_local *l, const char *what, char **msg) {
  atomic_store(&l->g->cancelled, 1);
  *msg = qd_printf("%s: %s", l->g->bind->label, what);
  return -1;
}

int qd_local_next(struct qd_local *l, char **msg) {
  if (l->batch.release && l->offset < l->batch.length) return 1;
  struct qd_global *g = l->g;
  const struct qd_bind *b = g->bind;
  const struct ql_plugin *p = b->plugin;
  void *tok = ql_plugin_enter(p);
  if (l->batch.release) l->batch.release(&l->batch);
  l->offset = 0;
  while (!l->batch.release) {
    if (!l->stream.release) {
      long long part = atomic_fetch_add(&g->next, 1);
      if (part >= g->partitions || atomic_load(&g->cancelled)) break;
      struct ql_error err = {0};
      ql_ref_host_task_context(b->db->host, part, &l->ctx);
      l->ctx.is_cancelled = qd_is_cancelled;
      l->ctx.private_data = g;
      if (g->plan.execute(&g->plan, part, &l->ctx, &l->stream, &err) != QL_OK) {
        ql_plugin_leave(p, tok);
        int rc = qd_local_fail(l, ql_error_message(&err), msg);
        ql_error_release(&err);
        return rc;
      }
    }
    int code = l->stream.get_next(&l->stream, &l->batch);
    if (code != 0) {
      const char *m = l->stream.get_last_error ? l->stream.get_last_error(&l->stream) : NULL;
      int rc = qd_local_fail(l, m ? m : strerror(code), msg); /* before leave: m is the stream's */
      ql_plugin_leave(p, tok);
      return rc;
    }
    if (!l->batch.release) l->stream.release(&l->stream); /* end of this partition */
    else if (l->batch.length == 0) l->batch.release(&l->batch);
  }
  ql_plugin_leave(p, tok);
  return l->batch.release ? 1 : 0;
}
