/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: a plugin's functions as SQLite functions.
 *
 *   SELECT qlink_load('PLUGIN');          -- every function SQLite can express
 *   SELECT qlink_load('PLUGIN', 'NAME');  -- one function; an error if SQLite cannot express it
 *
 * Scalar functions become sqlite3_create_function_v2 functions (one row per
 * call: SQLite calls scalars row at a time), deterministic when the plugin
 * says immutable, SQLITE_DIRECTONLY unless the connection trusts its schema
 * (qlink_trust_schema). Aggregates buffer their argument rows and hand them to
 * the accumulator 1024 rows at a time (xStep / xFinal). Window functions
 * are partition evaluators (evaluate_all over a whole window partition),
 * which SQLite's aggregate-style window API (xStep/xInverse/xValue) cannot
 * express: refused by name and skipped by the whole-plugin form, as are
 * planners and object stores. Table functions need no registration: a
 * table function's schema depends on its arguments, so SQLite reaches it
 * through `CREATE VIRTUAL TABLE t USING qlink_call('PLUGIN', 'NAME', ...)`
 * (call.c), which the result names. The result is a line naming what was
 * registered, the table functions, and what was skipped and why.
 */
#include "functions.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cells.h"
#include "common.h"
#include "conn.h"
#include "qlink/lib/args.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/status.h"
#include "values.h"

#define QLS_AGG_BATCH 1024

struct qls_fn {
  struct qls_plugin *plugin;
  char *label; /* "PLUGIN.NAME" for messages */
  int32_t kind;
  struct ql_scalar_function scalar;
  struct ql_aggregate_function aggregate;
};

static const struct ql_plugin *fn_plugin(const struct qls_fn *f) { return &f->plugin->loaded->plugin; }

static void fn_free(void *p) {
  struct qls_fn *f = p;
  void *tok = ql_plugin_enter(fn_plugin(f));
  if (f->scalar.release) f->scalar.release(&f->scalar);
  if (f->aggregate.release) f->aggregate.release(&f->aggregate);
  ql_plugin_leave(fn_plugin(f), tok);
  qls_plugin_release(f->plugin);
  free(f->label);
  free(f);
}

static void fn_error(sqlite3_context *ctx, const struct qls_fn *f, struct ql_error *err) {
  char *m = sqlite3_mprintf("qlink: %s: %s", f->label, ql_error_message(err));
  sqlite3_result_error(ctx, m ? m : "qlink: out of memory", -1);
  if (err->status == QL_ENOMEM) sqlite3_result_error_nomem(ctx);
  sqlite3_free(m);
  ql_error_release(err);
}

/* The argument formats: the signature's, or those of the values given. */
static void arg_formats(const struct ql_signature *sig, int argc, sqlite3_value **first_row, const char **out) {
  for (int a = 0; a < argc; a++) {
    out[a] = ql_signature_arg_format(sig, argc, a, first_row ? qls_format_of_value(first_row[a]) : "l");
  }
}

/* The result's first row as the SQLite result. */
static void result_from(sqlite3_context *ctx, const struct qls_fn *f, const struct ArrowSchema *type,
                        const struct ArrowArray *out) {
  struct qls_buf scratch = {0};
  struct qls_cell cell;
  struct ql_error err = {0};
  if (out->length < 1) {
    ql_error_set(&err, QL_EINTERNAL, "the function returned %lld rows for 1", (long long)out->length);
    fn_error(ctx, f, &err);
  } else if (qls_cell_read(type, out, 0, &cell, &scratch, &err) != QL_OK) {
    fn_error(ctx, f, &err);
  } else {
    qls_result_cell(ctx, &cell);
  }
  qls_buf_free(&scratch);
}

static void scalar_call(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  struct qls_fn *f = sqlite3_user_data(ctx);
  const struct ql_plugin *p = fn_plugin(f);
  const char *formats[64];
  if (argc > 64) {
    sqlite3_result_error(ctx, "qlink: more than 64 arguments", -1);
    return;
  }
  arg_formats(&f->scalar.signature, argc, argv, formats);
  struct ArrowSchema schema, type;
  struct ArrowArray args, out;
  memset(&type, 0, sizeof type);
  memset(&out, 0, sizeof out);
  struct ql_error err = {0};
  int rc = qls_build_args(formats, argc, argv, 1, &schema, &args, &err);
  if (rc != QL_OK) {
    fn_error(ctx, f, &err);
    return;
  }
  void *tok = ql_plugin_enter(p);
  rc = f->scalar.return_type(&f->scalar, &schema, &type, &err);
  if (rc == QL_OK) rc = f->scalar.invoke(&f->scalar, &schema, &args, 1, &out, &err);
  ql_plugin_leave(p, tok);
  if (rc == QL_OK) result_from(ctx, f, &type, &out);
  else fn_error(ctx, f, &err);
  tok = ql_plugin_enter(p);
  if (out.release) out.release(&out);
  if (type.release) type.release(&type);
  ql_plugin_leave(p, tok);
  ql_schema_release(&schema);
  ql_array_release(&args);
}

/* ------------------------------------------------------------ aggregates */

struct agg_state {
  int started, failed;
  int argc;
  const char *formats[64];
  struct ArrowSchema schema;
  struct ql_accumulator acc;
  int64_t n;
  sqlite3_value **rows; /* QLS_AGG_BATCH x argc, sqlite3_value_dup'd */
};

static int agg_flush(struct agg_state *s, const struct qls_fn *f, struct ql_error *err) {
  if (s->n == 0) return QL_OK;
  struct ArrowSchema schema;
  struct ArrowArray args;
  int rc = qls_build_args(s->formats, s->argc, s->rows, s->n, &schema, &args, err);
  for (int64_t i = 0; i < s->n * s->argc; i++) sqlite3_value_free(s->rows[i]);
  s->n = 0;
  if (rc != QL_OK) return rc;
  void *tok = ql_plugin_enter(fn_plugin(f));
  rc = s->acc.update(&s->acc, &args, err);
  ql_plugin_leave(fn_plugin(f), tok);
  ql_schema_release(&schema);
  ql_array_release(&args);
  return rc;
}

static int agg_start(struct agg_state *s, const struct qls_fn *f, int argc, sqlite3_value **argv,
                     struct ql_error *err) {
  s->started = 1;
  s->argc = argc;
  arg_formats(&f->aggregate.signature, argc, argv, s->formats);
  s->rows = calloc((size_t)(QLS_AGG_BATCH * (argc ? argc : 1)), sizeof *s->rows);
  if (!s->rows) return ql_error_set(err, QL_ENOMEM, "out of memory");
  int rc = ql_schema_init_struct(&s->schema, "", argc, err);
  for (int a = 0; rc == QL_OK && a < argc; a++) {
    char name[16];
    snprintf(name, sizeof name, "arg%d", a);
    rc = ql_schema_init(s->schema.children[a], s->formats[a], name, ARROW_FLAG_NULLABLE, err);
  }
  if (rc != QL_OK) return rc;
  void *tok = ql_plugin_enter(fn_plugin(f));
  rc = f->aggregate.accumulator_new(&f->aggregate, &s->schema, &s->acc, err);
  ql_plugin_leave(fn_plugin(f), tok);
  return rc;
}

static void agg_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  struct qls_fn *f = sqlite3_user_data(ctx);
  struct agg_state *s = sqlite3_aggregate_context(ctx, sizeof *s);
  if (!s) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (s->failed) return;
  struct ql_error err = {0};
  if (argc > 64) {
    sqlite3_result_error(ctx, "qlink: more than 64 arguments", -1);
    s->failed = 1;
    return;
  }
  int rc = s->started ? QL_OK : agg_start(s, f, argc, argv, &err);
  for (int a = 0; rc == QL_OK && a < argc; a++) {
    s->rows[s->n * argc + a] = sqlite3_value_dup(argv[a]);
    if (!s->rows[s->n * argc + a]) rc = ql_error_set(&err, QL_ENOMEM, "out of memory");
  }
  if (rc == QL_OK) s->n++;
  if (rc == QL_OK && s->n == QLS_AGG_BATCH) rc = agg_flush(s, f, &err);
  if (rc != QL_OK) {
    s->failed = 1;
    fn_error(ctx, f, &err);
  }
}

static void agg_final(sqlite3_context *ctx) {
  struct qls_fn *f = sqlite3_user_data(ctx);
  struct agg_state *s = sqlite3_aggregate_context(ctx, sizeof *s);
  if (!s) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  struct ql_error err = {0};
  int rc = QL_OK;
  if (!s->failed) {
    if (!s->started) rc = agg_start(s, f, f->aggregate.signature.n_args > 0 ? f->aggregate.signature.n_args : 0, NULL, &err);
    if (rc == QL_OK) rc = agg_flush(s, f, &err);
    struct ArrowSchema type;
    struct ArrowArray out;
    memset(&type, 0, sizeof type);
    memset(&out, 0, sizeof out);
    void *tok = ql_plugin_enter(fn_plugin(f));
    if (rc == QL_OK) rc = f->aggregate.return_type(&f->aggregate, &s->schema, &type, &err);
    if (rc == QL_OK) rc = s->acc.evaluate(&s->acc, &out, &err);
    ql_plugin_leave(fn_plugin(f), tok);
    if (rc == QL_OK) result_from(ctx, f, &type, &out);
    else fn_error(ctx, f, &err);
    tok = ql_plugin_enter(fn_plugin(f));
    if (out.release) out.release(&out);
    if (type.release) type.release(&type);
    ql_plugin_leave(fn_plugin(f), tok);
  }
  for (int64_t i = 0; i < s->n * s->argc; i++) sqlite3_value_free(s->rows[i]);
  free(s->rows);
  void *tok = ql_plugin_enter(fn_plugin(f));
  if (s->acc.release) s->acc.release(&s->acc);
  ql_plugin_leave(fn_plugin(f), tok);
  ql_schema_release(&s->schema);
}

/* ------------------------------------------------------------ qlink_load */

static const char *why_not(int32_t kind) {
  switch (kind) {
    case QL_ITEM_WINDOW_FUNCTION:
      return "a window function is a partition evaluator (evaluate_all), which SQLite's aggregate-style window API "
             "cannot express";
    case QL_ITEM_PLANNER: return "SQLite has no planner hook";
    case QL_ITEM_OBJECT_STORE: return "SQLite has no object-store registry";
    default: return NULL;
  }
}

static int register_one(struct qls_conn *c, struct qls_plugin *plugin, const struct ql_item_info *item,
                        struct ql_error *err) {
  const struct ql_plugin *p = &plugin->loaded->plugin;
  struct qls_fn *f = calloc(1, sizeof *f);
  if (!f) return ql_error_set(err, QL_ENOMEM, "out of memory");
  f->plugin = plugin;
  qls_plugin_ref(plugin);
  f->kind = item->kind;
  size_t n = strlen(p->name) + strlen(item->name) + 2;
  f->label = malloc(n);
  if (f->label) snprintf(f->label, n, "%s.%s", p->name, item->name);
  void *tok = ql_plugin_enter(p);
  int rc = item->kind == QL_ITEM_SCALAR_FUNCTION ? p->scalar_function_open(p, item->name, &f->scalar, err)
                                                 : p->aggregate_function_open(p, item->name, &f->aggregate, err);
  ql_plugin_leave(p, tok);
  if (rc != QL_OK || !f->label) {
    if (rc == QL_OK) rc = ql_error_set(err, QL_ENOMEM, "out of memory");
    fn_free(f);
    return rc;
  }
  const struct ql_signature *sig = item->kind == QL_ITEM_SCALAR_FUNCTION ? &f->scalar.signature : &f->aggregate.signature;
  /* A plugin function runs native code with its arguments: direct-only
   * unless the connection trusts its schema, so that no view or trigger of
   * a database file calls it. */
  int flags = SQLITE_UTF8 | (sig->volatility == QL_IMMUTABLE ? SQLITE_DETERMINISTIC : 0) |
              (c->trust_schema ? 0 : SQLITE_DIRECTONLY);
  int nargs = sig->n_args < 0 ? -1 : sig->n_args;
  int src = item->kind == QL_ITEM_SCALAR_FUNCTION
                ? sqlite3_create_function_v2(c->db, item->name, nargs, flags, f, scalar_call, NULL, NULL, fn_free)
                : sqlite3_create_function_v2(c->db, item->name, nargs, flags, f, NULL, agg_step, agg_final, fn_free);
  if (src != SQLITE_OK) return ql_error_set(err, QL_EINTERNAL, "registering %s: %s", item->name, sqlite3_errmsg(c->db));
  return QL_OK;
}

static void fn_load(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  struct qls_conn *c = sqlite3_user_data(ctx);
  const char *name = NULL, *only = NULL;
  int len = 0;
  if (qls_text_arg(ctx, "qlink_load", argv, 0, "the plugin", &name, &len) != 0) return;
  if (argc > 1 && qls_text_arg(ctx, "qlink_load", argv, 1, "the function", &only, &len) != 0) return;
  struct ql_error err = {0};
  struct qls_plugin *plugin = NULL;
  if (qls_conn_plugin(c, name, &plugin, &err) != QL_OK) {
    char *m = sqlite3_mprintf("qlink_load: %s", ql_error_message(&err));
    ql_error_release(&err);
    sqlite3_result_error(ctx, m ? m : "qlink_load: out of memory", -1);
    sqlite3_free(m);
    return;
  }
  const struct ql_plugin *p = &plugin->loaded->plugin;
  sqlite3_str *loaded = sqlite3_str_new(NULL), *skipped = sqlite3_str_new(NULL), *tables = sqlite3_str_new(NULL);
  int n_loaded = 0, n_skipped = 0, n_tables = 0, found = 0, rc = QL_OK;
  for (int32_t i = 0; rc == QL_OK && i < p->n_items; i++) {
    const struct ql_item_info *it = &p->items[i];
    if (it->kind == QL_ITEM_TABLE_PROVIDER || it->kind == QL_ITEM_SCHEMA_PROVIDER) continue;
    if (only && strcmp(only, it->name) != 0) continue;
    found = 1;
    const char *why = why_not(it->kind);
    if (it->kind == QL_ITEM_TABLE_FUNCTION) {
      sqlite3_str_appendf(tables, "%s%s", n_tables++ ? ", " : "", it->name);
    } else if (why && only) {
      rc = ql_error_set(&err, QL_ENOTSUP, "%s.%s cannot be loaded into SQLite: %s", p->name, it->name, why);
    } else if (why) {
      sqlite3_str_appendf(skipped, "%s%s (%s)", n_skipped++ ? "; " : "", it->name, why);
    } else {
      rc = register_one(c, plugin, it, &err);
      if (rc == QL_OK)
        sqlite3_str_appendf(loaded, "%s%s %s", n_loaded++ ? ", " : "",
                            it->kind == QL_ITEM_SCALAR_FUNCTION ? "scalar" : "aggregate", it->name);
    }
  }
  if (rc == QL_OK && only && !found) rc = ql_error_set(&err, QL_ENOTFOUND, "plugin %s has no function '%s'", p->name, only);
  char *l = sqlite3_str_finish(loaded), *s = sqlite3_str_finish(skipped), *t = sqlite3_str_finish(tables);
  if (rc != QL_OK) {
    char *m = sqlite3_mprintf("qlink_load: %s", ql_error_message(&err));
    ql_error_release(&err);
    sqlite3_result_error(ctx, m ? m : "qlink_load: out of memory", -1);
    sqlite3_free(m);
  } else {
    /* table functions: how to call them (PLUGIN as the caller named it) */
    char *calls = n_tables ? sqlite3_mprintf("; table function%s %s through CREATE VIRTUAL TABLE t USING "
                                             "qlink_call(%Q, 'NAME', argument, ...)",
                                             n_tables > 1 ? "s" : "", t, name)
                           : NULL;
    char *m = sqlite3_mprintf("%s: loaded %s%s%s%s", p->name, n_loaded ? l : "nothing", calls ? calls : "",
                              n_skipped ? "; skipped " : "", n_skipped ? s : "");
    sqlite3_result_text(ctx, m ? m : "", -1, sqlite3_free);
    sqlite3_free(calls);
  }
  sqlite3_free(l);
  sqlite3_free(s);
  sqlite3_free(t);
  qls_plugin_release(plugin);
}

int qls_register_functions(struct qls_conn *c) {
  for (int nargs = 1; nargs <= 2; nargs++) {
    qls_conn_ref(c);
    int rc = sqlite3_create_function_v2(c->db, "qlink_load", nargs, SQLITE_UTF8 | SQLITE_DIRECTONLY, c, fn_load, NULL,
                                        NULL, qls_conn_unref);
    if (rc != SQLITE_OK) return rc;
  }
  return SQLITE_OK;
}
