/* SPDX-License-Identifier: Apache-2.0 */
/* The DuckDB host: plugin functions, the part both builds share (see
 * plugin_fns.h). DuckDB is reached only through vectors.h. */
#include "common/plugin_fns.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/access.h"
#include "common/rows.h"
#include "common/vectors.h"
#include "qlink/lib/args.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/host.h"
#include "qlink/lib/loader.h"
#include "qlink/lib/status.h"

void qd_fn_free(void *p) {
  struct qd_fn *f = p;
  if (!f) return;
  void *tok = ql_plugin_enter(f->plugin);
  if (f->scalar.release) f->scalar.release(&f->scalar);
  if (f->aggregate.release) f->aggregate.release(&f->aggregate);
  ql_plugin_leave(f->plugin, tok);
  ql_schema_release(&f->args_schema);
  free(f->label);
  free(f);
}

char *qd_fn_message(const struct qd_fn *f, struct ql_error *err) {
  char *msg = qd_printf("%s: %s", f->label, ql_error_message(err));
  ql_error_release(err);
  return msg;
}

/* DuckDB's name of the type a format maps to ("BIGINT"). */
static const char *duckdb_name_of(const char *format) {
  struct qd_type t;
  char why[128];
  return qd_type_parse(format, &t, why, sizeof(why)) == 0 ? qd_type_name(t.duckdb) : format;
}

int qd_fn_check_arg(const struct qd_fn *f, int32_t a, int32_t type, char **msg) {
  int kind = qd_cell_kind_of(type);
  if (a < f->n_args && kind >= 0 && ql_args_kind_fits(kind, f->formats[a])) return 0;
  if (a >= f->n_args) {
    *msg = qd_printf("%s: %d arguments, the function takes %d", f->label, (int)a + 1, (int)f->n_args);
  } else {
    *msg = qd_printf("%s: argument %d is %s, the function takes %s (Arrow '%s')", f->label, (int)a + 1,
                     qd_type_name(type), duckdb_name_of(f->formats[a]), f->formats[a]);
  }
  return -1;
}

int qd_fn_open(const struct ql_plugin *p, const struct ql_item_info *it, struct qd_fn **out, struct ql_error *err) {
  struct qd_fn *f = calloc(1, sizeof(*f));
  if (!f) return ql_error_set(err, QL_ENOMEM, "out of memory");
  f->plugin = p;
  f->kind = it->kind;
  if (!(f->label = qd_printf("%s.%s", p->name, it->name))) {
    free(f);
    return ql_error_set(err, QL_ENOMEM, "out of memory");
  }
  void *tok = ql_plugin_enter(p);
  int rc = it->kind == QL_ITEM_SCALAR_FUNCTION ? p->scalar_function_open(p, it->name, &f->scalar, err)
                                               : p->aggregate_function_open(p, it->name, &f->aggregate, err);
  ql_plugin_leave(p, tok);
  const struct ql_signature *sig = it->kind == QL_ITEM_SCALAR_FUNCTION ? &f->scalar.signature : &f->aggregate.signature;
  if (rc == QL_OK && (sig->n_args < 0 || !sig->arg_formats)) {
    rc = ql_error_set(err, QL_ENOTSUP,
                      "it declares no argument types, and DuckDB's C API fixes a function's parameter and return "
                      "types when it is registered");
  }
  if (rc == QL_OK && sig->n_args > QD_MAX_ARGS) {
    rc = ql_error_set(err, QL_ENOTSUP, "%d arguments (qlink passes at most %d)", sig->n_args, QD_MAX_ARGS);
  }
  for (int32_t a = 0; rc == QL_OK && a < sig->n_args; a++) {
    f->formats[a] = sig->arg_formats[a];
    if (!ql_args_format_supported(f->formats[a])) {
      rc = ql_error_set(err, QL_ENOTSUP,
                        "argument %d has Arrow type '%s', which qlink cannot fill from DuckDB values (integers, "
                        "floats, booleans, utf8 and binary)",
                        a + 1, f->formats[a] ? f->formats[a] : "(null)");
    }
  }
  if (rc == QL_OK) {
    f->n_args = sig->n_args;
    f->volatile_ = sig->volatility == QL_VOLATILE;
    rc = ql_schema_init_struct(&f->args_schema, "", f->n_args, err);
  }
  for (int32_t a = 0; rc == QL_OK && a < f->n_args; a++) {
    char name[16];
    snprintf(name, sizeof(name), "arg%d", a);
    rc = ql_schema_init(f->args_schema.children[a], f->formats[a], name, ARROW_FLAG_NULLABLE, err);
  }
  if (rc == QL_OK) {
    struct ArrowSchema ret = {0};
    tok = ql_plugin_enter(p);
    rc = it->kind == QL_ITEM_SCALAR_FUNCTION ? f->scalar.return_type(&f->scalar, &f->args_schema, &ret, err)
                                             : f->aggregate.return_type(&f->aggregate, &f->args_schema, &ret, err);
    ql_plugin_leave(p, tok);
    char why[256];
    if (rc == QL_OK && qd_type_parse(ret.format, &f->ret, why, sizeof(why)) != 0) {
      rc = ql_error_set(err, QL_ENOTSUP, "return type: %s", why);
    }
    if (ret.release) {
      tok = ql_plugin_enter(p);
      ret.release(&ret);
      ql_plugin_leave(p, tok);
    }
  }
  if (rc != QL_OK) {
    qd_fn_free(f);
    return rc;
  }
  *out = f;
  return QL_OK;
}

int qd_fn_find(struct qd_db *db, const char *plugin, const char *name, int32_t kind, struct qd_fn **out,
               struct ql_error *err) {
  const struct ql_plugin *p = NULL;
  int rc = qd_plugin_get(db, plugin, &p, err);
  if (rc != QL_OK) return rc;
  const struct ql_item_info *it = ql_plugin_find_item(p, kind, name);
  if (!it) {
    return ql_error_set(err, QL_ENOTFOUND, "plugin %s has no %s function '%s'", p->name,
                        kind == QL_ITEM_SCALAR_FUNCTION ? "scalar" : "aggregate", name);
  }
  return qd_fn_open(p, it, out, err);
}

/* The rows of the argument vectors as cells, row-major (f->n_args wide). */
static int read_cells(const struct qd_fn *f, const qd_vector *args, idx_t n, struct ql_cell *cells,
                      struct ql_error *err) {
  for (int32_t a = 0; a < f->n_args; a++) {
    int32_t type = 0;
    if (qd_vector_cells(args[a], n, cells + a, f->n_args, &type) != 0) {
      return ql_error_set(err, QL_EINVAL, "argument %d: DuckDB type %s cannot be passed to a plugin function", a + 1,
                          qd_type_name(type));
    }
  }
  return QL_OK;
}

/* ---------------------------------------------------------------- scalars */

/* A function's result rows into DuckDB's vector `result` from row `to`. */
static int copy_result(const struct qd_type *ret, const struct ArrowArray *out, idx_t n, qd_vector result, idx_t to,
                       struct ql_error *err) {
  int rc = qd_copy(ret, out, 0, n, result, to);
  if (rc == QD_MALFORMED) return ql_error_set(err, QL_EDATA, "the result's string views name bytes it does not have");
  if (rc != 0) return ql_error_set(err, QL_ENOMEM, "DuckDB refused memory for the result");
  return QL_OK;
}

int qd_fn_scalar(const struct qd_fn *f, const qd_vector *argv, idx_t n, qd_vector result, struct ql_error *err) {
  struct ArrowSchema schema = {0};
  struct ArrowArray args = {0}, out = {0};
  struct ql_cell *cells = malloc(sizeof(*cells) * (size_t)(n * (idx_t)f->n_args + 1));
  int rc = cells ? read_cells(f, argv, n, cells, err)
                 : ql_error_set(err, QL_ENOMEM, "out of memory for %llu argument rows", (unsigned long long)n);
  if (rc == QL_OK) rc = ql_args_build(f->formats, f->n_args, cells, (int64_t)n, &schema, &args, err);
  free(cells);
  if (rc == QL_OK) {
    struct ql_scalar_function *sf = (struct ql_scalar_function *)&f->scalar;
    void *tok = ql_plugin_enter(f->plugin);
    rc = sf->invoke(sf, &schema, &args, (int64_t)n, &out, err);
    ql_plugin_leave(f->plugin, tok);
  }
  if (rc == QL_OK && out.length != (int64_t)n) {
    rc = ql_error_set(err, QL_EINTERNAL, "the function returned %lld rows for %llu", (long long)out.length,
                      (unsigned long long)n);
  }
  if (rc == QL_OK) rc = copy_result(&f->ret, &out, n, result, 0, err);
  if (out.release) {
    void *tok = ql_plugin_enter(f->plugin);
    out.release(&out);
    ql_plugin_leave(f->plugin, tok);
  }
  ql_schema_release(&schema);
  ql_array_release(&args);
  return rc;
}

/* ------------------------------------------------------------- aggregates */

struct agg_state {
  const struct qd_fn *f;
  int started;
  struct ql_accumulator acc;
};

size_t qd_agg_state_size(void) { return sizeof(struct agg_state); }

void qd_agg_init(void *state, const struct qd_fn *f) {
  struct agg_state *s = state;
  memset(s, 0, sizeof(*s));
  s->f = f;
}

static int agg_start(struct agg_state *s, struct ql_error *err) {
  if (s->started) return QL_OK;
  struct ql_aggregate_function *af = (struct ql_aggregate_function *)&s->f->aggregate;
  void *tok = ql_plugin_enter(s->f->plugin);
  int rc = af->accumulator_new(af, &s->f->args_schema, &s->acc, err);
  ql_plugin_leave(s->f->plugin, tok);
  s->started = rc == QL_OK;
  return rc;
}

static int by_state(const void *a, const void *b) {
  const uintptr_t *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : (x[1] < y[1] ? -1 : x[1] > y[1]);
}

/* Feed `s` rows pairs[2r + 1] (r < k) of the cells (row-major, f->n_args wide). */
static int agg_feed(struct agg_state *s, const struct ql_cell *cells, const uintptr_t *pairs, idx_t k,
                    struct ql_cell *gathered, struct ql_error *err) {
  const struct qd_fn *f = s->f;
  for (idx_t r = 0; r < k; r++) {
    memcpy(gathered + r * (idx_t)f->n_args, cells + pairs[2 * r + 1] * (idx_t)f->n_args,
           sizeof(*cells) * (size_t)f->n_args);
  }
  struct ArrowSchema schema;
  struct ArrowArray args;
  int rc = agg_start(s, err);
  if (rc == QL_OK) rc = ql_args_build(f->formats, f->n_args, gathered, (int64_t)k, &schema, &args, err);
  if (rc != QL_OK) return rc;
  void *tok = ql_plugin_enter(f->plugin);
  rc = s->acc.update(&s->acc, &args, err);
  ql_plugin_leave(f->plugin, tok);
  ql_schema_release(&schema);
  ql_array_release(&args);
  return rc;
}

int qd_agg_update(const struct qd_fn *f, const qd_vector *args, idx_t n, void *const *states, struct ql_error *err) {
  if (n == 0) return QL_OK;
  size_t width = (size_t)(f->n_args ? f->n_args : 1);
  struct ql_cell *cells = malloc(sizeof(*cells) * n * width), *gathered = malloc(sizeof(*cells) * n * width);
  uintptr_t *pairs = malloc(sizeof(*pairs) * 2 * n); /* (state, row), sorted: each state's rows in order */
  int rc = cells && gathered && pairs ? read_cells(f, args, n, cells, err)
                                      : ql_error_set(err, QL_ENOMEM, "out of memory");
  for (idx_t r = 0; rc == QL_OK && r < n; r++) pairs[2 * r] = (uintptr_t)states[r], pairs[2 * r + 1] = r;
  if (rc == QL_OK) qsort(pairs, n, 2 * sizeof(*pairs), by_state);
  for (idx_t at = 0; rc == QL_OK && at < n;) {
    idx_t end = at + 1;
    while (end < n && pairs[2 * end] == pairs[2 * at]) end++;
    rc = agg_feed((struct agg_state *)pairs[2 * at], cells, pairs + 2 * at, end - at, gathered, err);
    at = end;
  }
  free(cells);
  free(gathered);
  free(pairs);
  return rc;
}

int qd_agg_combine(const struct qd_fn *f, void *const *sources, void *const *targets, idx_t count,
                   struct ql_error *err) {
  int rc = QL_OK;
  for (idx_t i = 0; rc == QL_OK && i < count; i++) {
    struct agg_state *src = sources[i], *dst = targets[i];
    if (!src->started) continue;
    if (!dst->f) dst->f = f;
    rc = agg_start(dst, err);
    struct ArrowArray state = {0};
    void *tok = ql_plugin_enter(f->plugin);
    if (rc == QL_OK) rc = src->acc.state(&src->acc, &state, err);
    if (rc == QL_OK) rc = dst->acc.merge(&dst->acc, &state, err);
    if (state.release) state.release(&state);
    ql_plugin_leave(f->plugin, tok);
  }
  return rc;
}

int qd_agg_finalize(const struct qd_fn *f, void *const *states, idx_t count, qd_vector result, idx_t offset,
                    struct ql_error *err) {
  int rc = QL_OK;
  for (idx_t i = 0; rc == QL_OK && i < count; i++) {
    struct agg_state *s = states[i];
    struct ArrowArray out = {0};
    if (!s->f) s->f = f;
    rc = agg_start(s, err);
    void *tok = ql_plugin_enter(f->plugin);
    if (rc == QL_OK) rc = s->acc.evaluate(&s->acc, &out, err);
    ql_plugin_leave(f->plugin, tok);
    if (rc == QL_OK && out.length != 1) {
      rc = ql_error_set(err, QL_EINTERNAL, "evaluate returned %lld rows for 1", (long long)out.length);
    }
    if (rc == QL_OK) rc = copy_result(&f->ret, &out, 1, result, offset + i, err);
    tok = ql_plugin_enter(f->plugin);
    if (out.release) out.release(&out);
    ql_plugin_leave(f->plugin, tok);
  }
  return rc;
}

void qd_agg_destroy(void *const *states, idx_t count) {
  for (idx_t i = 0; i < count; i++) {
    struct agg_state *s = states[i];
    if (!s->started || !s->acc.release) continue;
    void *tok = ql_plugin_enter(s->f->plugin);
    s->acc.release(&s->acc);
    ql_plugin_leave(s->f->plugin, tok);
    s->started = 0;
  }
}

/* -------------------------------------------------------- table functions */

/* A constant as a literal of `b`, or -1 with a reason. */
static ql_expr_id literal_of(struct ql_ir_builder *b, const struct qd_const *v, char *why, size_t cap) {
  if (v->is_null) return ql_ir_literal_null(b, "n");
  struct ql_scalar s = {0};
  switch (qd_cell_kind_of(v->type)) {
    case QL_CELL_INTEGER:
      if (v->type == QD_T_BOOLEAN) {
        s.format = "b";
        s.value.i64 = v->i != 0;
        return ql_ir_literal(b, &s);
      }
      if (v->type == QD_T_UBIGINT) {
        s.format = "L";
        s.value.u64 = v->u;
        return ql_ir_literal(b, &s);
      }
      return ql_ir_literal_i64(b, v->i);
    case QL_CELL_REAL: return ql_ir_literal_f64(b, v->f);
    case QL_CELL_TEXT: return ql_ir_literal_utf8(b, v->text ? v->text : "");
    default:
      snprintf(why, cap, "DuckDB type %s cannot be passed to a plugin table function", qd_type_name(v->type));
      return -1;
  }
}

int qd_tf_open(struct qd_db *db, const char *plugin, const char *name, const struct qd_const *argv, idx_t n,
               struct qd_bind **out, struct ql_error *err) {
  struct qd_bind *b = calloc(1, sizeof(*b));
  *out = b;
  int rc = b && plugin && name ? QL_OK : ql_error_set(err, QL_ENOMEM, "out of memory");
  size_t cap = plugin && name ? strlen(plugin) + strlen(name) + 2 : 1;
  if (rc == QL_OK && !(b->label = malloc(cap))) rc = ql_error_set(err, QL_ENOMEM, "out of memory");
  if (rc != QL_OK) return rc;
  snprintf(b->label, cap, "%s.%s", plugin, name);
  b->db = db;
  rc = qd_plugin_get(db, plugin, &b->plugin, err);
  if (rc == QL_OK && !ql_plugin_find_item(b->plugin, QL_ITEM_TABLE_FUNCTION, name)) {
    rc = ql_error_set(err, QL_ENOTFOUND, "plugin %s has no table function '%s'", b->plugin->name, name);
  }
  struct ql_table_function tf = {0};
  if (rc == QL_OK) {
    void *tok = ql_plugin_enter(b->plugin);
    rc = b->plugin->table_function_open(b->plugin, name, &tf, err);
    ql_plugin_leave(b->plugin, tok);
  }
  struct ql_ir_builder *ir = NULL;
  if (rc == QL_OK) rc = ql_ir_builder_new(&ir, err);
  ql_expr_id roots[QD_TF_MAX_ARGS];
  for (idx_t i = 0; rc == QL_OK && i < n && i < QD_TF_MAX_ARGS; i++) {
    char why[256];
    roots[i] = literal_of(ir, &argv[i], why, sizeof(why));
    if (roots[i] < 0 && ql_ir_builder_status(ir, err) == QL_OK) {
      rc = ql_error_set(err, QL_EINVAL, "argument %d: %s", (int)i + 1, why);
    } else if (roots[i] < 0) {
      rc = err->status;
    }
  }
  struct ql_plan_view view = {0};
  if (rc == QL_OK) rc = ql_ir_builder_finish(ir, -1, &view, err);
  ql_ir_builder_free(ir);
  if (rc == QL_OK) {
    struct ql_expr_list args = {&view, (int32_t)n, 0, roots};
    void *tok = ql_plugin_enter(b->plugin);
    rc = tf.call(&tf, ql_ref_host_session(db->host), &args, &b->provider, err);
    ql_plugin_leave(b->plugin, tok);
  }
  if (view.release) view.release(&view);
  if (tf.release) {
    void *tok = ql_plugin_enter(b->plugin);
    tf.release(&tf);
    ql_plugin_leave(b->plugin, tok);
  }
  return rc;
}

/* ------------------------------------------------------------ qlink_load */

/* The reason DuckDB cannot host catalogue item `kind`, or NULL. */
static const char *why_not(int32_t kind) {
  switch (kind) {
    case QL_ITEM_WINDOW_FUNCTION:
      return "a window function is a partition evaluator (evaluate_all), and DuckDB's C API cannot express window "
             "functions";
    case QL_ITEM_PLANNER: return "DuckDB's C API cannot express planners (it has no optimizer hook)";
    case QL_ITEM_OBJECT_STORE: return "DuckDB's C API has no object-store registry";
    default: return NULL;
  }
}

static const char *kind_name(int32_t kind) {
  switch (kind) {
    case QL_ITEM_SCALAR_FUNCTION: return "scalar";
    case QL_ITEM_AGGREGATE_FUNCTION: return "aggregate";
    case QL_ITEM_WINDOW_FUNCTION: return "window";
    case QL_ITEM_TABLE_FUNCTION: return "table";
    case QL_ITEM_PLANNER: return "planner";
    default: return "object store";
  }
}

/* Was PLUGIN.NAME loaded before? With `mark`, marks it loaded when not
 * (under db->mutex). */
static int seen_before(struct qd_db *db, const char *label, int mark) {
  pthread_mutex_lock(&db->mutex);
  for (struct qd_loaded_fn *l = db->functions; l; l = l->next) {
    if (strcmp(l->label, label) == 0) {
      pthread_mutex_unlock(&db->mutex);
      return 1;
    }
  }
  struct qd_loaded_fn *l = mark ? calloc(1, sizeof(*l)) : NULL;
  if (l && (l->label = strdup(label))) {
    l->next = db->functions;
    db->functions = l;
  } else {
    free(l);
  }
  pthread_mutex_unlock(&db->mutex);
  return 0;
}

static void forget(struct qd_db *db, const char *label) {
  pthread_mutex_lock(&db->mutex);
  for (struct qd_loaded_fn **at = &db->functions; *at; at = &(*at)->next) {
    if (strcmp((*at)->label, label) == 0) {
      struct qd_loaded_fn *gone = *at;
      *at = gone->next;
      free(gone->label);
      free(gone);
      break;
    }
  }
  pthread_mutex_unlock(&db->mutex);
}

void qd_load_mark(struct qd_db *db, const char *label) { (void)seen_before(db, label, 1); }

int qd_load_plugin(struct qd_db *db, const char *plugin, const char *only, int mark, qd_load_fn load, void *ctx,
                   struct qd_rows *r, struct ql_error *err) {
  const struct ql_plugin *p = NULL;
  int rc = qd_plugin_get(db, plugin, &p, err);
  int found = 0;
  for (int32_t i = 0; rc == QL_OK && i < p->n_items; i++) {
    const struct ql_item_info *it = &p->items[i];
    if (it->kind == QL_ITEM_TABLE_PROVIDER || it->kind == QL_ITEM_SCHEMA_PROVIDER) continue;
    if (only && strcmp(only, it->name) != 0) continue;
    found = 1;
    char *label = qd_printf("%s.%s", p->name, it->name), *status = NULL;
    const char *why = why_not(it->kind);
    if (!label) {
      rc = ql_error_set(err, QL_ENOMEM, "out of memory");
    } else if (why && only) {
      rc = ql_error_set(err, QL_ENOTSUP, "%s cannot be loaded into DuckDB: %s", label, why);
    } else if (why) {
      status = qd_printf("refused: %s", why);
    } else if (seen_before(db, label, mark)) {
      status = qd_printf("already loaded");
    } else {
      struct ql_error one = {0};
      if (load(ctx, db, p, it, &one) == QL_OK) {
        status = qd_printf("loaded");
      } else {
        if (mark) forget(db, label);
        if (only) {
          rc = ql_error_set(err, one.status, "%s cannot be loaded into DuckDB: %s", label, ql_error_message(&one));
        } else {
          status = qd_printf("refused: %s", ql_error_message(&one));
        }
        ql_error_release(&one);
      }
    }
    const char *cells[3] = {it->name, kind_name(it->kind), status};
    if (rc == QL_OK && (!status || qd_rows_add(r, cells) != 0)) rc = ql_error_set(err, QL_ENOMEM, "out of memory");
    free(label);
    free(status);
    if (rc != QL_OK) break;
  }
  if (rc == QL_OK && only && !found) rc = ql_error_set(err, QL_ENOTFOUND, "plugin %s has no function '%s'", p->name, only);
  return rc;
}
