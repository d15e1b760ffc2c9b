/* The DuckDB host: a plugin's functions as DuckDB functions.
 *
 *   CALL qlink_load('PLUGIN');                   -- every function DuckDB can express
 *   CALL qlink_load('PLUGIN', name := 'NAME');   -- one; an error if DuckDB cannot express it
 *
 * One row per catalogue function: (name, kind, status), status "loaded",
 * "already loaded" or "refused: <why>" (the whole-plugin form lists what it
 * refused; the one-name form fails with that reason instead).
 *
 * Scalar functions: a DuckDB scalar function of the plugin's name with ANY
 * parameters and the return type the plugin's return_type gives for its
 * declared argument formats. Bind checks each argument's DuckDB type
 * against the declared format (an error names the function, the argument
 * and both types); each call reads DuckDB's vectors into libqlink cells,
 * builds the argument struct array with ql_args_build (the coercion the
 * SQLite host shares) and copies the result array into DuckDB's vector.
 * NULLs reach the plugin (DuckDB's special NULL handling), which decides.
 *
 * Aggregates: a DuckDB aggregate whose parameters are the declared formats'
 * DuckDB types (DuckDB casts to them; the aggregate C API has no bind), one
 * ql_accumulator per DuckDB state: update feeds each state its rows,
 * combine merges state arrays, finalize evaluates.
 *
 * Table functions: DuckDB's C API gives a table function one fixed list of
 * parameters and one name, and a plugin table function's arity is not in
 * the ABI. So qlink registers qlink_table_function_0 .. _8 (plugin, name
 * and 0..8 ANY arguments), whose bind calls ql_table_function.call with the
 * arguments as literals and binds the returned provider exactly as
 * qlink_scan does (ext.c, which also runs its scans), and qlink_load
 * creates a table macro NAME with one overload per arity 0..8 over them
 * (in the database's main schema, on the extension's own connection).
 *
 * Refused: functions that declare no argument formats (DuckDB fixes the
 * return type at registration), formats DuckDB values cannot fill, window
 * functions and planners (the C API has neither), object stores.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ext_internal.h"
#include "qlink/lib/args.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/host.h"
#include "qlink/lib/ir.h"
#include "qlink/lib/loader.h"
#include "qlink/lib/status.h"
#include "types.h"
#include "vectors.h"

#define QD_MAX_ARGS 64
#define QD_TF_MAX_ARGS 8

struct qd_fn {
  const struct ql_plugin *plugin;
  char label[256]; /* "PLUGIN.NAME" */
  int32_t kind;    /* QL_ITEM_SCALAR_FUNCTION or QL_ITEM_AGGREGATE_FUNCTION */
  int32_t n_args;
  const char *formats[QD_MAX_ARGS]; /* the signature's, owned by the function object */
  struct ql_scalar_function scalar;
  struct ql_aggregate_function aggregate;
  struct ArrowSchema args_schema; /* struct of the declared formats */
  struct qd_type ret;
};

static void fn_free(void *p) {
  struct qd_fn *f = p;
  if (!f) return;
  void *tok = ql_plugin_enter(f->plugin);
  if (f->scalar.release) f->scalar.release(&f->scalar);
  if (f->aggregate.release) f->aggregate.release(&f->aggregate);
  ql_plugin_leave(f->plugin, tok);
  ql_schema_release(&f->args_schema);
  free(f);
}

static void fn_message(const struct qd_fn *f, struct ql_error *err, char *msg, size_t cap) {
  snprintf(msg, cap, "%s: %s", f->label, ql_error_message(err));
  ql_error_release(err);
}

/* DuckDB's name of the type a format maps to ("BIGINT"). */
static const char *duckdb_name_of(const char *format) {
  struct qd_type t;
  char why[128];
  return qd_type_parse(format, &t, why, sizeof(why)) == 0 ? qd_type_name(t.duckdb) : format;
}

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

/* Open a scalar or aggregate function and settle its DuckDB types. */
static int fn_open(const struct ql_plugin *p, const struct ql_item_info *it, struct qd_fn **out, struct ql_error *err) {
  struct qd_fn *f = calloc(1, sizeof(*f));
  if (!f) return ql_error_set(err, QL_ENOMEM, "out of memory");
  f->plugin = p;
  f->kind = it->kind;
  snprintf(f->label, sizeof(f->label), "%s.%s", p->name, it->name);
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
    fn_free(f);
    return rc;
  }
  *out = f;
  return QL_OK;
}

/* The argument vectors of `input` as a struct array in the declared formats. */
static int read_args(const struct qd_fn *f, duckdb_data_chunk input, idx_t n, struct ArrowSchema *schema,
                     struct ArrowArray *args, struct ql_error *err) {
  struct ql_cell *cells = malloc(sizeof(*cells) * (size_t)(n * (idx_t)f->n_args + 1));
  if (!cells) return ql_error_set(err, QL_ENOMEM, "out of memory for %llu argument rows", (unsigned long long)n);
  for (int32_t a = 0; a < f->n_args; a++) {
    int32_t type = 0;
    if (qd_vector_cells(duckdb_data_chunk_get_vector(input, (idx_t)a), n, cells + a, f->n_args, &type) != 0) {
      free(cells);
      return ql_error_set(err, QL_EINVAL, "argument %d: DuckDB type %s cannot be passed to a plugin function", a + 1,
                          qd_type_name(type));
    }
  }
  int rc = ql_args_build(f->formats, f->n_args, cells, (int64_t)n, schema, args, err);
  free(cells);
  return rc;
}

/* ---------------------------------------------------------------- scalars */

static void scalar_bind(duckdb_bind_info info) {
  struct qd_fn *f = duckdb_scalar_function_bind_get_extra_info(info);
  idx_t n = duckdb_scalar_function_bind_get_argument_count(info);
  for (idx_t a = 0; a < n && a < (idx_t)f->n_args; a++) {
    duckdb_expression e = duckdb_scalar_function_bind_get_argument(info, a);
    duckdb_logical_type lt = e ? duckdb_expression_return_type(e) : NULL;
    int32_t id = lt ? (int32_t)duckdb_get_type_id(lt) : 0;
    if (lt) duckdb_destroy_logical_type(&lt);
    if (e) duckdb_destroy_expression(&e);
    int kind = qd_cell_kind_of(id);
    if (kind < 0 || !ql_args_kind_fits(kind, f->formats[a])) {
      char msg[512];
      snprintf(msg, sizeof(msg), "%s: argument %d is %s, the function takes %s (Arrow '%s')", f->label, (int)a + 1,
               qd_type_name(id), duckdb_name_of(f->formats[a]), f->formats[a]);
      duckdb_scalar_function_bind_set_error(info, msg);
      return;
    }
  }
}

static void scalar_call(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output) {
  struct qd_fn *f = duckdb_scalar_function_get_extra_info(info);
  idx_t n = duckdb_data_chunk_get_size(input);
  struct ArrowSchema schema = {0};
  struct ArrowArray args = {0}, out = {0};
  struct ql_error err = {0};
  int rc = read_args(f, input, n, &schema, &args, &err);
  if (rc == QL_OK) {
    void *tok = ql_plugin_enter(f->plugin);
    rc = f->scalar.invoke(&f->scalar, &schema, &args, (int64_t)n, &out, &err);
    ql_plugin_leave(f->plugin, tok);
  }
  if (rc == QL_OK && out.length != (int64_t)n) {
    rc = ql_error_set(&err, QL_EINTERNAL, "the function returned %lld rows for %llu", (long long)out.length,
                      (unsigned long long)n);
  }
  if (rc == QL_OK) qd_copy(&f->ret, &out, 0, n, output, 0);
  if (out.release) {
    void *tok = ql_plugin_enter(f->plugin);
    out.release(&out);
    ql_plugin_leave(f->plugin, tok);
  }
  ql_schema_release(&schema);
  ql_array_release(&args);
  if (rc != QL_OK) {
    char msg[1024];
    fn_message(f, &err, msg, sizeof(msg));
    duckdb_scalar_function_set_error(info, msg);
  }
}

static int register_scalar(struct qd_db *db, const char *name, struct qd_fn *f, struct ql_error *err) {
  duckdb_scalar_function sf = duckdb_create_scalar_function();
  duckdb_scalar_function_set_name(sf, name);
  duckdb_logical_type any = duckdb_create_logical_type(DUCKDB_TYPE_ANY);
  for (int32_t a = 0; a < f->n_args; a++) duckdb_scalar_function_add_parameter(sf, any);
  duckdb_destroy_logical_type(&any);
  duckdb_logical_type ret = qd_logical_type(&f->ret);
  duckdb_scalar_function_set_return_type(sf, ret);
  duckdb_destroy_logical_type(&ret);
  if (f->scalar.signature.volatility == QL_VOLATILE) duckdb_scalar_function_set_volatile(sf);
  duckdb_scalar_function_set_special_handling(sf);
  duckdb_scalar_function_set_extra_info(sf, f, fn_free); /* DuckDB owns f from here */
  duckdb_scalar_function_set_bind(sf, scalar_bind);
  duckdb_scalar_function_set_function(sf, scalar_call);
  pthread_mutex_lock(&db->ddl_mutex);
  duckdb_state st = duckdb_register_scalar_function(db->ddl, sf);
  pthread_mutex_unlock(&db->ddl_mutex);
  duckdb_destroy_scalar_function(&sf);
  if (st != DuckDBSuccess) return ql_error_set(err, QL_EINTERNAL, "DuckDB refused to register scalar function %s", name);
  return QL_OK;
}

/* ------------------------------------------------------------- aggregates */

struct agg_state {
  struct qd_fn *f;
  int started;
  struct ql_accumulator acc;
};

static idx_t agg_size(duckdb_function_info info) {
  (void)info;
  return sizeof(struct agg_state);
}

static void agg_init(duckdb_function_info info, duckdb_aggregate_state state) {
  struct agg_state *s = (struct agg_state *)state;
  memset(s, 0, sizeof(*s));
  s->f = duckdb_aggregate_function_get_extra_info(info);
}

static int agg_start(struct agg_state *s, struct ql_error *err) {
  if (s->started) return QL_OK;
  void *tok = ql_plugin_enter(s->f->plugin);
  int rc = s->f->aggregate.accumulator_new(&s->f->aggregate, &s->f->args_schema, &s->acc, err);
  ql_plugin_leave(s->f->plugin, tok);
  s->started = rc == QL_OK;
  return rc;
}

static void agg_fail(duckdb_function_info info, struct qd_fn *f, struct ql_error *err) {
  char msg[1024];
  fn_message(f, err, msg, sizeof(msg));
  duckdb_aggregate_function_set_error(info, msg);
}

static int by_state(const void *a, const void *b) {
  const uintptr_t *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : (x[1] < y[1] ? -1 : x[1] > y[1]);
}

/* Feed `s` rows rows[0..k) of the cells (row-major, f->n_args wide). */
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

static void agg_update(duckdb_function_info info, duckdb_data_chunk input, duckdb_aggregate_state *states) {
  struct qd_fn *f = duckdb_aggregate_function_get_extra_info(info);
  idx_t n = duckdb_data_chunk_get_size(input);
  struct ql_error err = {0};
  if (n == 0) return;
  size_t width = (size_t)(f->n_args ? f->n_args : 1);
  struct ql_cell *cells = malloc(sizeof(*cells) * n * width), *gathered = malloc(sizeof(*cells) * n * width);
  uintptr_t *pairs = malloc(sizeof(*pairs) * 2 * n); /* (state, row), sorted: each state's rows in order */
  int rc = cells && gathered && pairs ? QL_OK : ql_error_set(&err, QL_ENOMEM, "out of memory");
  for (int32_t a = 0; rc == QL_OK && a < f->n_args; a++) {
    int32_t type = 0;
    if (qd_vector_cells(duckdb_data_chunk_get_vector(input, (idx_t)a), n, cells + a, f->n_args, &type) != 0) {
      rc = ql_error_set(&err, QL_EINVAL, "argument %d: DuckDB type %s cannot be passed to a plugin function", a + 1,
                        qd_type_name(type));
    }
  }
  for (idx_t r = 0; rc == QL_OK && r < n; r++) pairs[2 * r] = (uintptr_t)states[r], pairs[2 * r + 1] = r;
  if (rc == QL_OK) qsort(pairs, n, 2 * sizeof(*pairs), by_state);
  for (idx_t at = 0; rc == QL_OK && at < n;) {
    idx_t end = at + 1;
    while (end < n && pairs[2 * end] == pairs[2 * at]) end++;
    rc = agg_feed((struct agg_state *)pairs[2 * at], cells, pairs + 2 * at, end - at, gathered, &err);
    at = end;
  }
  free(cells);
  free(gathered);
  free(pairs);
  if (rc != QL_OK) agg_fail(info, f, &err);
}

static void agg_combine(duckdb_function_info info, duckdb_aggregate_state *source, duckdb_aggregate_state *target,
                        idx_t count) {
  struct qd_fn *f = duckdb_aggregate_function_get_extra_info(info);
  struct ql_error err = {0};
  int rc = QL_OK;
  for (idx_t i = 0; rc == QL_OK && i < count; i++) {
    struct agg_state *src = (struct agg_state *)source[i], *dst = (struct agg_state *)target[i];
    if (!src->started) continue;
    rc = agg_start(dst, &err);
    struct ArrowArray state = {0};
    void *tok = ql_plugin_enter(f->plugin);
    if (rc == QL_OK) rc = src->acc.state(&src->acc, &state, &err);
    if (rc == QL_OK) rc = dst->acc.merge(&dst->acc, &state, &err);
    if (state.release) state.release(&state);
    ql_plugin_leave(f->plugin, tok);
  }
  if (rc != QL_OK) agg_fail(info, f, &err);
}

static void agg_finalize(duckdb_function_info info, duckdb_aggregate_state *source, duckdb_vector result,
                         idx_t count, idx_t offset) {
  struct qd_fn *f = duckdb_aggregate_function_get_extra_info(info);
  struct ql_error err = {0};
  int rc = QL_OK;
  for (idx_t i = 0; rc == QL_OK && i < count; i++) {
    struct agg_state *s = (struct agg_state *)source[i];
    struct ArrowArray out = {0};
    rc = agg_start(s, &err);
    void *tok = ql_plugin_enter(f->plugin);
    if (rc == QL_OK) rc = s->acc.evaluate(&s->acc, &out, &err);
    ql_plugin_leave(f->plugin, tok);
    if (rc == QL_OK && out.length != 1) {
      rc = ql_error_set(&err, QL_EINTERNAL, "evaluate returned %lld rows for 1", (long long)out.length);
    }
    if (rc == QL_OK) qd_copy(&f->ret, &out, 0, 1, result, offset + i);
    tok = ql_plugin_enter(f->plugin);
    if (out.release) out.release(&out);
    ql_plugin_leave(f->plugin, tok);
  }
  if (rc != QL_OK) agg_fail(info, f, &err);
}

static void agg_destroy(duckdb_aggregate_state *states, idx_t count) {
  for (idx_t i = 0; i < count; i++) {
    struct agg_state *s = (struct agg_state *)states[i];
    if (!s->started || !s->acc.release) continue;
    void *tok = ql_plugin_enter(s->f->plugin);
    s->acc.release(&s->acc);
    ql_plugin_leave(s->f->plugin, tok);
    s->started = 0;
  }
}

static int register_aggregate(struct qd_db *db, const char *name, struct qd_fn *f, struct ql_error *err) {
  duckdb_aggregate_function af = duckdb_create_aggregate_function();
  duckdb_aggregate_function_set_name(af, name);
  for (int32_t a = 0; a < f->n_args; a++) {
    struct qd_type t;
    char why[128];
    qd_type_parse(f->formats[a], &t, why, sizeof(why)); /* a supported format: always maps */
    duckdb_logical_type lt = qd_logical_type(&t);
    duckdb_aggregate_function_add_parameter(af, lt);
    duckdb_destroy_logical_type(&lt);
  }
  duckdb_logical_type ret = qd_logical_type(&f->ret);
  duckdb_aggregate_function_set_return_type(af, ret);
  duckdb_destroy_logical_type(&ret);
  duckdb_aggregate_function_set_functions(af, agg_size, agg_init, agg_update, agg_combine, agg_finalize);
  duckdb_aggregate_function_set_destructor(af, agg_destroy);
  duckdb_aggregate_function_set_special_handling(af);
  duckdb_aggregate_function_set_extra_info(af, f, fn_free); /* DuckDB owns f from here */
  pthread_mutex_lock(&db->ddl_mutex);
  duckdb_state st = duckdb_register_aggregate_function(db->ddl, af);
  pthread_mutex_unlock(&db->ddl_mutex);
  duckdb_destroy_aggregate_function(&af);
  if (st != DuckDBSuccess) {
    return ql_error_set(err, QL_EINTERNAL, "DuckDB refused to register aggregate function %s", name);
  }
  return QL_OK;
}

/* -------------------------------------------------------- table functions */

/* A DuckDB constant as a literal of `b`, or -1 with a reason. */
static ql_expr_id literal_of(struct ql_ir_builder *b, duckdb_value v, char *why, size_t cap) {
  if (duckdb_is_null_value(v)) return ql_ir_literal_null(b, "n");
  duckdb_logical_type lt = duckdb_get_value_type(v);
  int32_t id = (int32_t)duckdb_get_type_id(lt);
  switch (qd_cell_kind_of(id)) {
    case QL_CELL_INTEGER:
      if (id == DUCKDB_TYPE_BOOLEAN) {
        struct ql_scalar s = {0};
        s.format = "b";
        s.value.i64 = duckdb_get_bool(v);
        return ql_ir_literal(b, &s);
      }
      if (id == DUCKDB_TYPE_UBIGINT) {
        struct ql_scalar s = {0};
        s.format = "L";
        s.value.u64 = duckdb_get_uint64(v);
        return ql_ir_literal(b, &s);
      }
      return ql_ir_literal_i64(b, duckdb_get_int64(v));
    case QL_CELL_REAL: return ql_ir_literal_f64(b, duckdb_get_double(v));
    case QL_CELL_TEXT: {
      char *text = duckdb_get_varchar(v);
      ql_expr_id e = ql_ir_literal_utf8(b, text ? text : "");
      duckdb_free(text);
      return e;
    }
    default:
      snprintf(why, cap, "DuckDB type %s cannot be passed to a plugin table function", qd_type_name(id));
      return -1;
  }
}

static char *param_text(duckdb_bind_info info, idx_t i) {
  duckdb_value v = duckdb_bind_get_parameter(info, i);
  char *s = v ? duckdb_get_varchar(v) : NULL;
  if (v) duckdb_destroy_value(&v);
  return s;
}

static void table_function_bind(duckdb_bind_info info) {
  struct qd_db *db = duckdb_bind_get_extra_info(info);
  struct qd_bind *b = calloc(1, sizeof(*b));
  char *plugin = param_text(info, 0), *name = param_text(info, 1);
  idx_t n = duckdb_bind_get_parameter_count(info) - 2;
  struct ql_error err = {0};
  int rc = b && plugin && name ? QL_OK : ql_error_set(&err, QL_ENOMEM, "out of memory");
  size_t cap = plugin && name ? strlen(plugin) + strlen(name) + 2 : 1;
  if (rc == QL_OK && !(b->label = malloc(cap))) rc = ql_error_set(&err, QL_ENOMEM, "out of memory");
  if (rc == QL_OK) {
    snprintf(b->label, cap, "%s.%s", plugin, name);
    b->db = db;
    duckdb_client_context ctx = NULL;
    duckdb_table_function_get_client_context(info, &ctx);
    qd_follow_settings(db, ctx);
    if (ctx) duckdb_destroy_client_context(&ctx);
    rc = qd_plugin_get(db, plugin, &b->plugin, &err);
  }
  if (rc == QL_OK && !ql_plugin_find_item(b->plugin, QL_ITEM_TABLE_FUNCTION, name)) {
    rc = ql_error_set(&err, QL_ENOTFOUND, "plugin %s has no table function '%s'", b->plugin->name, name);
  }
  struct ql_table_function tf = {0};
  if (rc == QL_OK) {
    void *tok = ql_plugin_enter(b->plugin);
    rc = b->plugin->table_function_open(b->plugin, name, &tf, &err);
    ql_plugin_leave(b->plugin, tok);
  }
  struct ql_ir_builder *ir = NULL;
  if (rc == QL_OK) rc = ql_ir_builder_new(&ir, &err);
  ql_expr_id roots[QD_TF_MAX_ARGS];
  for (idx_t i = 0; rc == QL_OK && i < n; i++) {
    char why[256];
    duckdb_value v = duckdb_bind_get_parameter(info, i + 2);
    roots[i] = literal_of(ir, v, why, sizeof(why));
    duckdb_destroy_value(&v);
    if (roots[i] < 0 && ql_ir_builder_status(ir, &err) == QL_OK) {
      rc = ql_error_set(&err, QL_EINVAL, "argument %d: %s", (int)i + 1, why);
    } else if (roots[i] < 0) {
      rc = err.status;
    }
  }
  struct ql_plan_view view = {0};
  if (rc == QL_OK) rc = ql_ir_builder_finish(ir, -1, &view, &err);
  ql_ir_builder_free(ir);
  if (rc == QL_OK) {
    struct ql_expr_list args = {&view, (int32_t)n, 0, roots};
    void *tok = ql_plugin_enter(b->plugin);
    rc = tf.call(&tf, ql_ref_host_session(db->host), &args, &b->provider, &err);
    ql_plugin_leave(b->plugin, tok);
  }
  if (view.release) view.release(&view);
  if (tf.release) {
    void *tok = ql_plugin_enter(b->plugin);
    tf.release(&tf);
    ql_plugin_leave(b->plugin, tok);
  }
  if (rc == QL_OK) rc = qd_bind_provider(info, b, &err);
  duckdb_free(plugin);
  duckdb_free(name);
  if (rc != QL_OK) {
    char msg[1024];
    snprintf(msg, sizeof(msg), "%s: %s", b && b->label ? b->label : "qlink table function", ql_error_message(&err));
    ql_error_release(&err);
    duckdb_bind_set_error(info, msg);
    qd_bind_free(b);
    return;
  }
  duckdb_bind_set_bind_data(info, b, qd_bind_free);
}

/* The statement creating macro NAME with overloads for arities first..QD_TF_MAX_ARGS. */
static void macro_sql(char *sql, size_t cap, const char *plugin, const char *name, int first) {
  char qname[300], qplugin[300], qfn[300];
  qd_quote(qname, sizeof(qname), name, '"');
  qd_quote(qplugin, sizeof(qplugin), plugin, '\'');
  qd_quote(qfn, sizeof(qfn), name, '\'');
  int at = snprintf(sql, cap, "CREATE OR REPLACE MACRO %s", qname);
  for (int k = first; k <= QD_TF_MAX_ARGS; k++) {
    at += snprintf(sql + at, cap - (size_t)at, "%s(", k > first ? ", " : "");
    for (int i = 0; i < k; i++) at += snprintf(sql + at, cap - (size_t)at, "%sa%d", i ? ", " : "", i + 1);
    at += snprintf(sql + at, cap - (size_t)at, ") AS TABLE (SELECT * FROM qlink_table_function_%d(%s, %s", k,
                   qplugin, qfn);
    for (int i = 0; i < k; i++) at += snprintf(sql + at, cap - (size_t)at, ", a%d", i + 1);
    at += snprintf(sql + at, cap - (size_t)at, "))");
  }
}

/* A table macro NAME with one overload per arity over qlink_table_function_N.
 * DuckDB binds a macro without parameters when it is created, so the
 * 0-argument overload is kept only when the function accepts no arguments
 * (then `NAME()` is DuckDB's no-matching-overload error, not the plugin's). */
static int register_table_macro(struct qd_db *db, const char *plugin, const char *name, struct ql_error *err) {
  char sql[8192];
  duckdb_result res;
  macro_sql(sql, sizeof(sql), plugin, name, 0);
  pthread_mutex_lock(&db->ddl_mutex);
  duckdb_state st = duckdb_query(db->ddl, sql, &res);
  if (st != DuckDBSuccess) {
    duckdb_destroy_result(&res);
    macro_sql(sql, sizeof(sql), plugin, name, 1);
    st = duckdb_query(db->ddl, sql, &res);
  }
  pthread_mutex_unlock(&db->ddl_mutex);
  int rc = st == DuckDBSuccess ? QL_OK
                               : ql_error_set(err, QL_EINTERNAL, "creating the table macro %s: %s", name,
                                              duckdb_result_error(&res));
  duckdb_destroy_result(&res);
  return rc;
}

/* ------------------------------------------------------------ qlink_load */

struct load_rows {
  int64_t n, cap;
  char **cells; /* n x 3: name, kind, status */
  int64_t next;
};

static void load_rows_free(void *data) {
  struct load_rows *r = data;
  if (!r) return;
  for (int64_t i = 0; i < r->n * 3; i++) free(r->cells[i]);
  free(r->cells);
  free(r);
}

static int load_rows_add(struct load_rows *r, const char *name, const char *kind, const char *status) {
  if (r->n == r->cap) {
    int64_t cap = r->cap ? r->cap * 2 : 8;
    char **grown = realloc(r->cells, sizeof(*grown) * (size_t)(cap * 3));
    if (!grown) return QL_ENOMEM;
    r->cells = grown;
    r->cap = cap;
  }
  const char *v[3] = {name, kind, status};
  for (int c = 0; c < 3; c++) r->cells[r->n * 3 + c] = strdup(v[c]);
  r->n++;
  return QL_OK;
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

/* Was PLUGIN.NAME loaded before? Marks it loaded when not (under db->mutex). */
static int seen_before(struct qd_db *db, const char *label) {
  pthread_mutex_lock(&db->mutex);
  for (struct qd_loaded_fn *l = db->functions; l; l = l->next) {
    if (strcmp(l->label, label) == 0) {
      pthread_mutex_unlock(&db->mutex);
      return 1;
    }
  }
  struct qd_loaded_fn *l = calloc(1, sizeof(*l));
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

static int load_one(struct qd_db *db, const struct ql_plugin *p, const struct ql_item_info *it, struct ql_error *err) {
  if (it->kind == QL_ITEM_TABLE_FUNCTION) return register_table_macro(db, p->name, it->name, err);
  struct qd_fn *f = NULL;
  int rc = fn_open(p, it, &f, err);
  if (rc != QL_OK) return rc;
  return it->kind == QL_ITEM_SCALAR_FUNCTION ? register_scalar(db, it->name, f, err)
                                             : register_aggregate(db, it->name, f, err);
}

static void load_bind(duckdb_bind_info info) {
  struct qd_db *db = duckdb_bind_get_extra_info(info);
  static const char *const cols[] = {"name", "kind", "status"};
  duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
  for (int c = 0; c < 3; c++) duckdb_bind_add_result_column(info, cols[c], varchar);
  duckdb_destroy_logical_type(&varchar);
  struct load_rows *r = calloc(1, sizeof(*r));
  char *plugin = param_text(info, 0);
  duckdb_value nv = duckdb_bind_get_named_parameter(info, "name");
  char *only = nv ? duckdb_get_varchar(nv) : NULL;
  if (nv) duckdb_destroy_value(&nv);
  struct ql_error err = {0};
  const struct ql_plugin *p = NULL;
  int rc = r && plugin ? qd_plugin_get(db, plugin, &p, &err) : ql_error_set(&err, QL_ENOMEM, "out of memory");
  int found = 0;
  for (int32_t i = 0; rc == QL_OK && i < p->n_items; i++) {
    const struct ql_item_info *it = &p->items[i];
    if (it->kind == QL_ITEM_TABLE_PROVIDER || it->kind == QL_ITEM_SCHEMA_PROVIDER) continue;
    if (only && strcmp(only, it->name) != 0) continue;
    found = 1;
    char label[300], status[768];
    snprintf(label, sizeof(label), "%s.%s", p->name, it->name);
    const char *why = why_not(it->kind);
    if (why && only) {
      rc = ql_error_set(&err, QL_ENOTSUP, "%s cannot be loaded into DuckDB: %s", label, why);
      break;
    }
    if (why) {
      snprintf(status, sizeof(status), "refused: %s", why);
    } else if (seen_before(db, label)) {
      snprintf(status, sizeof(status), "already loaded");
    } else {
      struct ql_error one = {0};
      if (load_one(db, p, it, &one) == QL_OK) {
        snprintf(status, sizeof(status), "loaded");
      } else {
        forget(db, label);
        if (only) {
          rc = ql_error_set(&err, one.status, "%s cannot be loaded into DuckDB: %s", label, ql_error_message(&one));
          ql_error_release(&one);
          break;
        }
        snprintf(status, sizeof(status), "refused: %s", ql_error_message(&one));
        ql_error_release(&one);
      }
    }
    if (load_rows_add(r, it->name, kind_name(it->kind), status) != QL_OK) {
      rc = ql_error_set(&err, QL_ENOMEM, "out of memory");
    }
  }
  if (rc == QL_OK && only && !found) rc = ql_error_set(&err, QL_ENOTFOUND, "plugin %s has no function '%s'", p->name, only);
  if (rc != QL_OK) {
    char msg[1024];
    snprintf(msg, sizeof(msg), "qlink_load('%s'): %s", plugin ? plugin : "", ql_error_message(&err));
    ql_error_release(&err);
    duckdb_bind_set_error(info, msg);
    load_rows_free(r);
  } else {
    duckdb_bind_set_bind_data(info, r, load_rows_free);
  }
  duckdb_free(plugin);
  duckdb_free(only);
}

static void load_init(duckdb_init_info info) { duckdb_init_set_max_threads(info, 1); }

static void load_emit(duckdb_function_info info, duckdb_data_chunk out) {
  struct load_rows *r = duckdb_function_get_bind_data(info);
  idx_t n = 0, cap = duckdb_vector_size();
  for (; r->next < r->n && n < cap; r->next++, n++) {
    for (int c = 0; c < 3; c++) {
      const char *s = r->cells[r->next * 3 + c] ? r->cells[r->next * 3 + c] : "";
      duckdb_vector_assign_string_element_len(duckdb_data_chunk_get_vector(out, (idx_t)c), n, s, strlen(s));
    }
  }
  duckdb_data_chunk_set_size(out, n);
}

int qd_register_functions(duckdb_connection con, struct qd_db *db) {
  duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
  duckdb_logical_type any = duckdb_create_logical_type(DUCKDB_TYPE_ANY);
  duckdb_table_function f = duckdb_create_table_function();
  duckdb_table_function_set_name(f, "qlink_load");
  duckdb_table_function_add_parameter(f, varchar);
  duckdb_table_function_add_named_parameter(f, "name", varchar);
  duckdb_table_function_set_extra_info(f, db, NULL);
  duckdb_table_function_set_bind(f, load_bind);
  duckdb_table_function_set_init(f, load_init);
  duckdb_table_function_set_function(f, load_emit);
  int failed = duckdb_register_table_function(con, f) != DuckDBSuccess;
  duckdb_destroy_table_function(&f);
  for (int k = 0; !failed && k <= QD_TF_MAX_ARGS; k++) {
    char name[64];
    snprintf(name, sizeof(name), "qlink_table_function_%d", k);
    f = duckdb_create_table_function();
    duckdb_table_function_set_name(f, name);
    duckdb_table_function_add_parameter(f, varchar);
    duckdb_table_function_add_parameter(f, varchar);
    for (int i = 0; i < k; i++) duckdb_table_function_add_parameter(f, any);
    duckdb_table_function_set_extra_info(f, db, NULL);
    duckdb_table_function_set_bind(f, table_function_bind);
    duckdb_table_function_set_init(f, qd_scan_init);
    duckdb_table_function_set_local_init(f, qd_scan_local_init);
    duckdb_table_function_set_function(f, qd_scan);
    duckdb_table_function_supports_projection_pushdown(f, true);
    failed = duckdb_register_table_function(con, f) != DuckDBSuccess;
    duckdb_destroy_table_function(&f);
  }
  duckdb_destroy_logical_type(&varchar);
  duckdb_destroy_logical_type(&any);
  return failed ? -1 : 0;
}
