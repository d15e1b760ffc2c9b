/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: the `qlink` virtual-table module.
 *
 *   CREATE VIRTUAL TABLE t USING qlink('PLUGIN/PROVIDER?key=value&...');
 *   CREATE VIRTUAL TABLE s.t USING qlink('PLUGIN/SCHEMA?...', 'TABLE');  -- what qlink_attach makes
 *
 * xBestIndex runs the pushdown handshake (pushdown.h) and keeps its choice
 * in the table's plan list (idxNum); idxStr describes it for EXPLAIN.
 * xFilter plans the scan (projection from colUsed, the filters, the limit)
 * and reads the partitions in order through their Arrow streams; xColumn
 * answers from the current record batch. Every call into the plugin is
 * bracketed by its executor hooks; the task context's cancellation flag is
 * the connection's sqlite3_interrupt.
 */
#include "vtab.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "cells.h"
#include "conn.h"
#include "pushdown.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/status.h"
#include "values.h"

struct qls_vtab {
  sqlite3_vtab base;
  struct qls_conn *conn;
  struct qls_plugin *plugin; /* a reference */
  char *spec;                /* as written, for messages */
  char *key;                 /* qls_table_key (sqlite3_malloc'd): forgotten when the table is dropped */
  struct ql_table_provider tp;
  struct ArrowSchema schema;
  double rows;   /* estimated table rows (statistics, else 1e6) */
  double *ndv;   /* per column distinct count, 0 when unknown */
  uint8_t *no_nulls; /* per column: the statistics say exactly 0 nulls */
  struct qls_plan *plans;
  int n_plans, cap_plans;
};

struct qls_cursor {
  sqlite3_vtab_cursor base;
  struct qls_vtab *vt;
  struct ql_execution_plan plan;
  int64_t n_partitions, partition;
  struct ql_task_context ctx;
  struct ArrowArrayStream stream;
  struct ArrowSchema batch_schema;
  struct ArrowArray batch;
  int64_t row;   /* within batch */
  int64_t rowid; /* rows produced so far */
  int64_t skip;  /* OFFSET rows SQLite will skip: only counted in the limit */
  int eof;
  int32_t *col_map; /* SQLite column -> child of the batch, -1 if not projected */
  int8_t *fast;     /* per batch child: enum fast_kind, from the stream's schema */
  struct qls_ts_memo *memo; /* per batch child: its last timestamp's text (FAST_TS) */
  struct qls_buf scratch;
};

static const struct ql_plugin *vt_plugin(const struct qls_vtab *vt) { return &vt->plugin->loaded->plugin; }

static int vt_error(struct qls_vtab *vt, struct ql_error *err) {
  sqlite3_free(vt->base.zErrMsg);
  vt->base.zErrMsg = qls_errmsg(vt_plugin(vt)->name, vt->spec, err);
  int status = err->status;
  ql_error_release(err);
  return status == QL_ECANCELLED ? SQLITE_INTERRUPT : status == QL_ENOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
}

/* 'text' or "text" as written in the module arguments, unquoted. */
static char *unquote(const char *a) {
  size_t n = strlen(a);
  while (n && (*a == ' ')) a++, n--;
  while (n && a[n - 1] == ' ') n--;
  char q = n >= 2 ? a[0] : 0;
  if ((q == '\'' || q == '"') && a[n - 1] == q) {
    char *out = malloc(n), *o = out;
    if (!out) return NULL;
    for (size_t i = 1; i + 1 < n; i++) {
      *o++ = a[i];
      if (a[i] == q && a[i + 1] == q) i++;
    }
    *o = '\0';
    return out;
  }
  return strndup(a, n);
}

static void vt_free(struct qls_vtab *vt) {
  if (vt->tp.release) {
    void *tok = ql_plugin_enter(vt_plugin(vt));
    vt->tp.release(&vt->tp);
    ql_plugin_leave(vt_plugin(vt), tok);
  }
  ql_schema_release(&vt->schema);
  qls_plugin_release(vt->plugin);
  qls_conn_unref(vt->conn);
  free(vt->spec);
  sqlite3_free(vt->key);
  free(vt->ndv);
  free(vt->no_nulls);
  free(vt->plans);
  sqlite3_free(vt->base.zErrMsg);
  free(vt);
}

static void read_statistics(struct qls_vtab *vt) {
  vt->rows = 1e6;
  vt->ndv = calloc((size_t)vt->schema.n_children + 1, sizeof *vt->ndv);
  vt->no_nulls = calloc((size_t)vt->schema.n_children + 1, 1);
  if (!vt->tp.get_statistics) return;
  struct ql_statistics st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  struct ql_error err = {0};
  void *tok = ql_plugin_enter(vt_plugin(vt));
  int rc = vt->tp.get_statistics(&vt->tp, &st, &err);
  ql_plugin_leave(vt_plugin(vt), tok);
  ql_error_release(&err);
  if (rc != QL_OK) return;
  if (st.num_rows_precision != QL_PRECISION_ABSENT && st.num_rows >= 0) vt->rows = (double)st.num_rows;
  for (int64_t c = 0; vt->ndv && c < st.n_columns && c < vt->schema.n_children; c++) {
    if (st.columns[c].distinct_count_precision != QL_PRECISION_ABSENT && st.columns[c].distinct_count > 0)
      vt->ndv[c] = (double)st.columns[c].distinct_count;
    if (vt->no_nulls && st.columns[c].null_count_precision == QL_PRECISION_EXACT && st.columns[c].null_count == 0)
      vt->no_nulls[c] = 1;
  }
  tok = ql_plugin_enter(vt_plugin(vt));
  if (st.release) st.release(&st);
  ql_plugin_leave(vt_plugin(vt), tok);
}

/* The CREATE TABLE text for the schema; NULL with *why set for a column
 * whose type has no mapping. */
static char *declare_text(const struct ArrowSchema *schema, char **why) {
  sqlite3_str *s = sqlite3_str_new(NULL);
  sqlite3_str_appendall(s, "CREATE TABLE x(");
  for (int64_t i = 0; i < schema->n_children; i++) {
    const struct ArrowSchema *f = schema->children[i];
    const char *t = qls_decltype(f);
    if (!t) {
      *why = sqlite3_mprintf("column '%s' has Arrow type '%s', which has no SQLite mapping", f->name, f->format);
      sqlite3_free(sqlite3_str_finish(s));
      return NULL;
    }
    sqlite3_str_appendf(s, "%s\"%w\" %s", i ? ", " : "", f->name ? f->name : "", t);
  }
  sqlite3_str_appendall(s, ")");
  return sqlite3_str_finish(s);
}

/* The table provider of `USING qlink('SPEC')` or, from qlink_attach,
 * `USING qlink('SCHEMA SPEC', 'TABLE')` (a qls_provider_open_fn). */
static int open_spec(struct qls_conn *c, int argc, const char *const *argv, char **label, struct qls_plugin **plugin,
                     struct ql_table_provider *tp, struct ql_error *err) {
  if (argc != 1 && argc != 2)
    return ql_error_set(err, QL_EINVAL,
                        "USING qlink('PLUGIN/PROVIDER?key=value&...') takes one spec "
                        "(or a schema provider's spec and a table name), got %d arguments",
                        argc);
  char *spec = *label = unquote(argv[0]);
  char *table = argc == 2 ? unquote(argv[1]) : NULL;
  if (!spec || (argc == 2 && !table)) {
    free(table);
    return ql_error_set(err, QL_ENOMEM, "out of memory");
  }
  int rc;
  if (table) {
    struct qls_schema *sch = NULL;
    rc = qls_schema_get(c, spec, &sch, err);
    if (rc == QL_OK) {
      *plugin = sch->plugin;
      qls_plugin_ref(*plugin);
      const struct ql_plugin *p = &(*plugin)->loaded->plugin;
      void *tok = ql_plugin_enter(p);
      rc = sch->provider.table(&sch->provider, table, tp, err);
      ql_plugin_leave(p, tok);
    }
    free(table);
    return rc;
  }
  struct ql_table_spec parsed = {0};
  int32_t kind = 0;
  rc = qls_spec_open(c, spec, strlen(spec), 0, &parsed, plugin, &kind, err);
  if (rc == QL_OK && kind == QL_ITEM_SCHEMA_PROVIDER) {
    rc = ql_error_set(err, QL_EINVAL,
                      "'%s' is a schema provider: SELECT qlink_attach('NAME', '%s') makes its tables NAME.<table>",
                      parsed.provider, spec);
  } else if (rc == QL_OK) {
    const struct ql_plugin *p = &(*plugin)->loaded->plugin;
    void *tok = ql_plugin_enter(p);
    rc = p->table_provider_open(p, parsed.provider, &parsed.options, ql_ref_host_session(c->host), tp, err);
    ql_plugin_leave(p, tok);
  }
  ql_table_spec_free(&parsed);
  return rc;
}

/* Why `argv` (xConnect's) may not connect: NULL when it may. A table
 * SQLite connects from a database's schema that this connection did not
 * create (a database file written elsewhere) names plugins and paths
 * nobody on this connection chose; it connects only when the connection
 * trusts its schema. */
static char *refuse_connect(struct qls_conn *c, int create, int argc, const char *const *argv, const char *key) {
  if (create || c->trust_schema || qls_created_has(c, key)) return NULL;
  sqlite3_str *s = sqlite3_str_new(NULL);
  sqlite3_str_appendf(s, "qlink: %s.%s comes from the database's schema (USING %s(", argv[1], argv[2], argv[0]);
  for (int i = 3; i < argc; i++) sqlite3_str_appendf(s, "%s%s", i > 3 ? ", " : "", argv[i]);
  sqlite3_str_appendall(s, ")), which this connection did not create: a database file can name any plugin or path "
                           "there, so qlink connects it only when the connection trusts the schema; run SELECT "
                           "qlink_trust_schema(1) first if you trust this database");
  return sqlite3_str_finish(s);
}

/* xCreate/xConnect of every module: `open` gets the table provider from
 * the module arguments; the rest (schema, declaration, statistics) is the
 * same for all. `create`: xCreate (the table is being created by SQL on
 * this connection, which remembers it) rather than xConnect. Every table is
 * SQLITE_VTAB_DIRECTONLY unless the connection trusts its schema. */
static int connect_with(qls_provider_open_fn open, int create, sqlite3 *db, void *aux, int argc,
                        const char *const *argv, sqlite3_vtab **out, char **pz) {
  struct qls_conn *c = aux;
  char *key = qls_table_key(argc, argv);
  if (!key) return SQLITE_NOMEM;
  char *refusal = refuse_connect(c, create, argc, argv, key);
  if (refusal) {
    *pz = refusal;
    sqlite3_free(key);
    return SQLITE_ERROR;
  }
  if (!c->trust_schema) {
    int vrc = sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
    if (vrc != SQLITE_OK) {
      *pz = sqlite3_mprintf("qlink: %s.%s: marking the table direct-only failed: %s", argv[1], argv[2],
                            sqlite3_errstr(vrc));
      sqlite3_free(key);
      return vrc;
    }
  }
  struct qls_vtab *vt = calloc(1, sizeof *vt);
  if (!vt) {
    sqlite3_free(key);
    return SQLITE_NOMEM;
  }
  vt->conn = c;
  vt->key = key;
  qls_conn_ref(c);
  struct ql_error err = {0};
  int rc = open(c, argc - 3, argv + 3, &vt->spec, &vt->plugin, &vt->tp, &err);
  if (rc == QL_OK) {
    void *tok = ql_plugin_enter(vt_plugin(vt));
    rc = vt->tp.get_schema(&vt->tp, &vt->schema, &err);
    ql_plugin_leave(vt_plugin(vt), tok);
  }
  char *decl = NULL;
  if (rc == QL_OK) {
    char *why = NULL;
    decl = declare_text(&vt->schema, &why);
    if (!decl) {
      rc = ql_error_set(&err, QL_ENOTSUP, "%s", why ? why : "out of memory");
      sqlite3_free(why);
    }
  }
  if (rc == QL_OK && create && qls_created_add(c, key) != QL_OK) rc = ql_error_set(&err, QL_ENOMEM, "out of memory");
  if (rc != QL_OK) {
    *pz = vt->plugin ? qls_errmsg(vt_plugin(vt)->name, vt->spec ? vt->spec : "", &err)
          : vt->spec ? sqlite3_mprintf("qlink: %s: %s", vt->spec, ql_error_message(&err))
                     : sqlite3_mprintf("qlink: %s", ql_error_message(&err));
    ql_error_release(&err);
    sqlite3_free(decl);
    vt_free(vt);
    return rc == QL_ENOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
  }
  read_statistics(vt);
  int src = sqlite3_declare_vtab(db, decl);
  sqlite3_free(decl);
  if (src != SQLITE_OK) {
    *pz = sqlite3_mprintf("qlink: %s: %s", vt->spec, sqlite3_errmsg(db));
    if (create) qls_created_remove(c, key);
    vt_free(vt);
    return src;
  }
  *out = &vt->base;
  return SQLITE_OK;
}

static int vt_create(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out, char **pz) {
  return connect_with(open_spec, 1, db, aux, argc, argv, out, pz);
}

static int vt_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out, char **pz) {
  return connect_with(open_spec, 0, db, aux, argc, argv, out, pz);
}

static int call_create(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out, char **pz) {
  return connect_with(qls_call_open, 1, db, aux, argc, argv, out, pz);
}

static int call_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out, char **pz) {
  return connect_with(qls_call_open, 0, db, aux, argc, argv, out, pz);
}

static int vt_disconnect(sqlite3_vtab *base) {
  vt_free((struct qls_vtab *)base);
  return SQLITE_OK;
}

/* DROP TABLE: the table is no longer one this connection created. */
static int vt_destroy(sqlite3_vtab *base) {
  struct qls_vtab *vt = (struct qls_vtab *)base;
  qls_created_remove(vt->conn, vt->key);
  vt_free(vt);
  return SQLITE_OK;
}

/* ------------------------------------------------------------ xBestIndex */

static int ask(struct qls_vtab *vt, const struct ql_plan_view *view, const ql_expr_id *roots, int32_t n,
               int32_t *answers, struct ql_error *err) {
  for (int32_t i = 0; i < n; i++) answers[i] = QL_PUSHDOWN_UNSUPPORTED;
  if (n == 0 || !vt->tp.supports_filters) return QL_OK;
  struct ql_expr_list list = {view, n, 0, roots};
  void *tok = ql_plugin_enter(vt_plugin(vt));
  int rc = vt->tp.supports_filters(&vt->tp, &list, answers, err);
  ql_plugin_leave(vt_plugin(vt), tok);
  return rc;
}

static int plan_same(const struct qls_plan *a, const struct qls_plan *b) {
  if (a->col_used != b->col_used || a->n_terms != b->n_terms || a->limit_argv != b->limit_argv ||
      a->offset_argv != b->offset_argv || a->ordered != b->ordered)
    return 0;
  for (int32_t i = 0; i < a->n_terms; i++) {
    const struct qls_term *x = &a->terms[i], *y = &b->terms[i];
    if (x->column != y->column || x->op != y->op || x->rhs != y->rhs || x->omit != y->omit || x->argv != y->argv)
      return 0;
  }
  return 1;
}

static int plan_keep(struct qls_vtab *vt, const struct qls_plan *p) {
  for (int i = 0; i < vt->n_plans; i++) {
    if (plan_same(&vt->plans[i], p)) return i;
  }
  if (vt->n_plans == vt->cap_plans) {
    int cap = vt->cap_plans ? vt->cap_plans * 2 : 8;
    struct qls_plan *np = realloc(vt->plans, sizeof *np * (size_t)cap);
    if (!np) return -1;
    vt->plans = np;
    vt->cap_plans = cap;
  }
  vt->plans[vt->n_plans] = *p;
  return vt->n_plans++;
}

/* Does a one-partition scan's declared ordering give SQLite's ORDER BY?
 * Sort keys index the scan's output (the projection, in table order);
 * SQLite puts NULLs first ascending and last descending, so the key's
 * nulls flag must agree unless the column has no NULL. */
static int ordering_serves(const struct qls_vtab *vt, const struct ql_plan_properties *props, const int32_t *proj,
                           int32_t n_proj, const sqlite3_index_info *info) {
  if (props->partition_count > 1 || props->n_ordering < info->nOrderBy || !props->ordering) return 0;
  for (int i = 0; i < info->nOrderBy; i++) {
    const struct ql_sort_key *k = &props->ordering[i];
    if (k->column < 0 || k->column >= n_proj || proj[k->column] != info->aOrderBy[i].iColumn) return 0;
    int desc = (k->flags & QL_SORT_DESC) != 0, nulls_first = (k->flags & QL_SORT_NULLS_FIRST) != 0;
    if (desc != (info->aOrderBy[i].desc != 0)) return 0;
    if (nulls_first != !desc && !(vt->no_nulls && vt->no_nulls[proj[k->column]])) return 0;
  }
  return 1;
}

/* Plan the scan SQLite would get (projection only) and read its
 * properties: 1 when its order is SQLite's ORDER BY. */
static int order_consumed(struct qls_vtab *vt, const sqlite3_index_info *info, uint64_t col_used) {
  if (info->nOrderBy <= 0) return 0;
  for (int i = 0; i < info->nOrderBy; i++) {
    if (info->aOrderBy[i].iColumn < 0) return 0;
  }
  int32_t proj[4096], n_proj = 0;
  for (int64_t c = 0; c < vt->schema.n_children && n_proj < 4096; c++) {
    if ((col_used >> (c < 63 ? c : 63)) & 1) proj[n_proj++] = (int32_t)c;
  }
  struct ql_scan_args args = {sizeof args, n_proj, proj, {NULL, 0, 0, NULL}, -1};
  struct ql_execution_plan plan;
  memset(&plan, 0, sizeof plan);
  struct ql_plan_properties props;
  memset(&props, 0, sizeof props);
  props.struct_size = sizeof props;
  struct ql_error err = {0};
  const struct ql_plugin *p = vt_plugin(vt);
  void *tok = ql_plugin_enter(p);
  int rc = vt->tp.scan(&vt->tp, ql_ref_host_session(vt->conn->host), &args, &plan, &err);
  if (rc == QL_OK) rc = plan.get_properties(&plan, &props, &err);
  int ok = rc == QL_OK && ordering_serves(vt, &props, proj, n_proj, info);
  if (plan.release) plan.release(&plan);
  ql_plugin_leave(p, tok);
  ql_error_release(&err);
  return ok;
}

/* Share of the table's rows below which no filtered plan is estimated
 * (vt_best_index). */
#define QLS_FILTERED_FLOOR 0.6

static int vt_best_index(sqlite3_vtab *base, sqlite3_index_info *info) {
  struct qls_vtab *vt = (struct qls_vtab *)base;
  struct qls_plan plan;
  memset(&plan, 0, sizeof plan);
  plan.col_used = (uint64_t)info->colUsed;
  plan.limit_argv = plan.offset_argv = -1;
  int cons[QLS_MAX_TERMS], known[QLS_MAX_TERMS];
  ql_expr_id roots[QLS_MAX_TERMS];
  int32_t answers[QLS_MAX_TERMS];
  int limit_c = -1, offset_c = -1, n_other = 0;
  struct ql_ir_builder *b = NULL;
  struct ql_error err = {0};
  if (ql_ir_builder_new(&b, &err) != QL_OK) return vt_error(vt, &err);
  for (int i = 0; i < info->nConstraint; i++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[i];
    if (c->op == SQLITE_INDEX_CONSTRAINT_LIMIT || c->op == SQLITE_INDEX_CONSTRAINT_OFFSET) {
      if (c->usable) *(c->op == SQLITE_INDEX_CONSTRAINT_LIMIT ? &limit_c : &offset_c) = i;
      continue;
    }
    n_other++;
    if (!c->usable || c->iColumn < 0 || c->iColumn >= vt->schema.n_children || plan.n_terms >= QLS_MAX_TERMS) continue;
    const struct ArrowSchema *f = vt->schema.children[c->iColumn];
    int32_t klass = qls_col_class(f->format);
    if (!qls_op_pushable(klass, c->op)) continue;
    struct qls_term t = {c->iColumn, c->op, QLS_RHS_VALUE, 0, -1};
    ql_expr_id lit = -1;
    int is_known = 0, rhs_null = 0;
    if (c->op == SQLITE_INDEX_CONSTRAINT_ISNULL || c->op == SQLITE_INDEX_CONSTRAINT_ISNOTNULL) {
      t.rhs = QLS_RHS_NONE;
      is_known = 1;
    } else if (c->op == SQLITE_INDEX_CONSTRAINT_EQ && sqlite3_vtab_in(info, i, -1)) {
      if (klass == QLS_C_TIMESTAMP || klass == QLS_C_DATE) continue; /* IN over ISO text: no widened form */
      t.rhs = QLS_RHS_IN;
      is_known = 1; /* every value is converted in xFilter; one that does not convert cannot match */
      lit = qls_placeholder(b, f->format);
    } else {
      sqlite3_value *v = NULL;
      if (sqlite3_vtab_rhs_value(info, i, &v) == SQLITE_OK && v) {
        if (sqlite3_value_type(v) == SQLITE_NULL) {
          if (c->op != SQLITE_INDEX_CONSTRAINT_IS && c->op != SQLITE_INDEX_CONSTRAINT_ISNOT) continue;
          if (klass == QLS_C_FLOAT) continue;
          rhs_null = 1;
        } else if (qls_literal(b, f->format, v, &lit) != QL_OK) {
          continue; /* the value does not convert: SQLite compares */
        }
        is_known = 1;
      } else {
        if (c->op == SQLITE_INDEX_CONSTRAINT_IS || c->op == SQLITE_INDEX_CONSTRAINT_ISNOT) continue;
        lit = qls_placeholder(b, f->format);
      }
    }
    roots[plan.n_terms] = qls_term_expr(b, f->name, c->iColumn, klass, c->op, &lit, lit >= 0 ? 1 : 0, rhs_null);
    cons[plan.n_terms] = i;
    known[plan.n_terms] = is_known;
    plan.terms[plan.n_terms++] = t;
  }
  struct ql_plan_view view;
  memset(&view, 0, sizeof view);
  int rc = ql_ir_builder_finish(b, -1, &view, &err);
  ql_ir_builder_free(b);
  if (rc == QL_OK) rc = ask(vt, &view, roots, plan.n_terms, answers, &err);
  if (view.release) view.release(&view);
  if (rc != QL_OK) return vt_error(vt, &err);

  /* Keep the terms the plugin uses, in argv order. */
  struct qls_plan used = plan;
  used.n_terms = 0;
  int32_t used_answers[QLS_MAX_TERMS];
  int argv = 0, omitted = 0;
  double rows = vt->rows;
  for (int32_t k = 0; k < plan.n_terms; k++) {
    if (answers[k] != QL_PUSHDOWN_EXACT && answers[k] != QL_PUSHDOWN_INEXACT) continue;
    struct qls_term t = plan.terms[k];
    int32_t klass = qls_col_class(vt->schema.children[t.column]->format);
    t.omit = answers[k] == QL_PUSHDOWN_EXACT && known[k] && qls_op_omittable(klass, t.op);
    /* Every used term gets an argv slot (SQLite honours omit only then);
     * IS NULL / IS NOT NULL ignore theirs. */
    t.argv = argv;
    if (t.rhs == QLS_RHS_IN) sqlite3_vtab_in(info, cons[k], 1);
    info->aConstraintUsage[cons[k]].argvIndex = ++argv;
    info->aConstraintUsage[cons[k]].omit = (unsigned char)t.omit;
    omitted += t.omit;
    double ndv = vt->ndv ? vt->ndv[t.column] : 0;
    switch (t.op) {
      case SQLITE_INDEX_CONSTRAINT_EQ:
      case SQLITE_INDEX_CONSTRAINT_IS: rows /= t.rhs == QLS_RHS_IN ? 3.0 : (ndv > 1 ? ndv : 10.0); break;
      case SQLITE_INDEX_CONSTRAINT_NE:
      case SQLITE_INDEX_CONSTRAINT_ISNOT:
      case SQLITE_INDEX_CONSTRAINT_ISNOTNULL: rows *= 0.9; break;
      case SQLITE_INDEX_CONSTRAINT_ISNULL: rows /= 10.0; break;
      default: rows /= 3.0;
    }
    used_answers[used.n_terms] = answers[k];
    used.terms[used.n_terms++] = t;
  }
  /* SQLite's multi-index OR runs one scan per OR term and skips a row
   * whose rowid an earlier term's scan returned. A qlink rowid is the row's
   * ordinal in its own scan (the ABI has no row identity), so the rowids of
   * two differently filtered scans collide and the union loses rows. A
   * filtered plan therefore never costs, nor returns, less than
   * QLS_FILTERED_FLOOR of the whole table: two terms' scans then cost and
   * return more than the one scan SQLite weighs them against, so it never
   * chooses that plan (an OR of equalities on one column becomes IN). */
  if (used.n_terms > 0 && rows < QLS_FILTERED_FLOOR * vt->rows) rows = QLS_FILTERED_FLOOR * vt->rows;
  used.ordered = order_consumed(vt, info, used.col_used);
  if (limit_c >= 0 && omitted == n_other && (info->nOrderBy == 0 || used.ordered) && sqlite3_vtab_distinct(info) == 0) {
    used.limit_argv = argv;
    info->aConstraintUsage[limit_c].argvIndex = ++argv;
    sqlite3_value *v = NULL;
    if (sqlite3_vtab_rhs_value(info, limit_c, &v) == SQLITE_OK && v && sqlite3_value_type(v) == SQLITE_INTEGER &&
        sqlite3_value_int64(v) >= 0 && (double)sqlite3_value_int64(v) < rows)
      rows = (double)sqlite3_value_int64(v);
    if (offset_c >= 0) {
      used.offset_argv = argv;
      info->aConstraintUsage[offset_c].argvIndex = ++argv;
    }
  }
  if (rows < 1) rows = 1;
  int n_cols = 0;
  for (int64_t c = 0; c < vt->schema.n_children; c++) n_cols += (used.col_used >> (c < 63 ? c : 63)) & 1;
  info->estimatedRows = (sqlite3_int64)rows;
  info->estimatedCost = rows * (1.0 + n_cols / 4.0);
  info->orderByConsumed = used.ordered;
  int idx = plan_keep(vt, &used);
  if (idx < 0) return SQLITE_NOMEM;
  info->idxNum = idx;
  info->idxStr = qls_plan_describe(&used, &vt->schema, used_answers);
  info->needToFreeIdxStr = 1;
  return SQLITE_OK;
}

/* ---------------------------------------------------------------- cursor */

/* Columns xColumn reads without going through cells.c's general mapping
 * (the same answers: cells_test.c checks the general path, host_test.c
 * both). */
enum fast_kind { FAST_NONE = 0, FAST_I64 = 1, FAST_F64 = 2, FAST_UTF8 = 3, FAST_F32 = 4, FAST_TS = 5 };

/* A timestamp column's last value and its TEXT: a dimension column repeats
 * each value over the inner dimensions' rows (an hourly time axis over a
 * 181 x 360 grid: 65,160 rows a value), and formatting was most of a scan
 * that reads it. */
struct qls_ts_memo {
  int64_t value;
  int32_t len; /* -1: nothing memoised */
  char text[60];
};

static void fast_kinds(struct qls_cursor *cur) {
  for (int64_t k = 0; k < cur->batch_schema.n_children; k++) {
    const struct ArrowSchema *f = cur->batch_schema.children[k];
    cur->fast[k] = f->dictionary                                        ? FAST_NONE
                   : strcmp(f->format, "l") == 0                        ? FAST_I64
                   : strcmp(f->format, "g") == 0                        ? FAST_F64
                   : strcmp(f->format, "u") == 0                        ? FAST_UTF8
                   : strcmp(f->format, "f") == 0                        ? FAST_F32
                   : strncmp(f->format, "ts", 2) == 0 && f->format[2] && strchr("smun", f->format[2]) &&
                           f->format[3] == ':'                          ? FAST_TS
                                                                        : FAST_NONE;
    cur->memo[k].len = -1;
  }
}

static int cur_open(sqlite3_vtab *base, sqlite3_vtab_cursor **out) {
  struct qls_vtab *vt = (struct qls_vtab *)base;
  struct qls_cursor *cur = calloc(1, sizeof *cur);
  if (!cur) return SQLITE_NOMEM;
  cur->vt = vt;
  cur->col_map = malloc(sizeof *cur->col_map * (size_t)(vt->schema.n_children + 1));
  cur->fast = calloc((size_t)(vt->schema.n_children + 1), 1);
  cur->memo = calloc((size_t)(vt->schema.n_children + 1), sizeof *cur->memo);
  if (!cur->col_map || !cur->fast || !cur->memo) {
    free(cur->col_map);
    free(cur->fast);
    free(cur->memo);
    free(cur);
    return SQLITE_NOMEM;
  }
  cur->eof = 1;
  *out = &cur->base;
  return SQLITE_OK;
}

static void cur_reset(struct qls_cursor *cur) {
  const struct ql_plugin *p = vt_plugin(cur->vt);
  void *tok = ql_plugin_enter(p);
  if (cur->batch.release) cur->batch.release(&cur->batch);
  if (cur->batch_schema.release) cur->batch_schema.release(&cur->batch_schema);
  if (cur->stream.release) cur->stream.release(&cur->stream);
  if (cur->plan.release) cur->plan.release(&cur->plan);
  ql_plugin_leave(p, tok);
  memset(&cur->batch, 0, sizeof cur->batch);
  cur->eof = 1;
}

static int cur_close(sqlite3_vtab_cursor *base) {
  struct qls_cursor *cur = (struct qls_cursor *)base;
  cur_reset(cur);
  qls_buf_free(&cur->scratch);
  free(cur->col_map);
  free(cur->fast);
  free(cur->memo);
  free(cur);
  return SQLITE_OK;
}

static int task_is_cancelled(const struct ql_task_context *ctx) {
  const struct qls_cursor *cur = ctx->private_data;
  return qls_interrupted(cur->vt->conn->db);
}

/* Move to the next non-empty batch, across partitions; eof at the end. */
static int next_batch(struct qls_cursor *cur) {
  struct qls_vtab *vt = cur->vt;
  const struct ql_plugin *p = vt_plugin(vt);
  struct ql_error err = {0};
  for (;;) {
    void *tok = ql_plugin_enter(p);
    if (cur->batch.release) cur->batch.release(&cur->batch);
    ql_plugin_leave(p, tok);
    memset(&cur->batch, 0, sizeof cur->batch);
    cur->row = 0;
    if (!cur->stream.release) {
      if (cur->partition >= cur->n_partitions) {
        cur->eof = 1;
        return SQLITE_OK;
      }
      ql_ref_host_task_context(vt->conn->host, cur->partition, &cur->ctx);
      cur->ctx.is_cancelled = task_is_cancelled;
      cur->ctx.private_data = cur;
      tok = ql_plugin_enter(p);
      int rc = cur->plan.execute(&cur->plan, cur->partition, &cur->ctx, &cur->stream, &err);
      ql_plugin_leave(p, tok);
      if (rc != QL_OK) return vt_error(vt, &err);
      cur->partition++;
      if (!cur->batch_schema.release) {
        tok = ql_plugin_enter(p);
        int src = cur->stream.get_schema(&cur->stream, &cur->batch_schema);
        ql_plugin_leave(p, tok);
        if (src != 0) {
          ql_error_set(&err, ql_status_from_errno(src), "stream get_schema failed: %s",
                       cur->stream.get_last_error ? cur->stream.get_last_error(&cur->stream) : "");
          return vt_error(vt, &err);
        }
        if (cur->batch_schema.n_children > vt->schema.n_children) {
          ql_error_set(&err, QL_EINTERNAL, "the stream has %lld columns for a projection of at most %lld",
                       (long long)cur->batch_schema.n_children, (long long)vt->schema.n_children);
          return vt_error(vt, &err);
        }
        fast_kinds(cur);
      }
    }
    tok = ql_plugin_enter(p);
    int code = cur->stream.get_next(&cur->stream, &cur->batch);
    const char *msg = code && cur->stream.get_last_error ? cur->stream.get_last_error(&cur->stream) : NULL;
    if (code) ql_error_set(&err, ql_status_from_errno(code), "%s", msg ? msg : "stream failed");
    ql_plugin_leave(p, tok);
    if (code) return vt_error(vt, &err);
    if (!cur->batch.release) { /* this partition is done */
      tok = ql_plugin_enter(p);
      cur->stream.release(&cur->stream);
      ql_plugin_leave(p, tok);
      memset(&cur->stream, 0, sizeof cur->stream);
      continue;
    }
    if (cur->batch.length > 0) return SQLITE_OK;
  }
}

static int cur_filter(sqlite3_vtab_cursor *base, int idx, const char *idx_str, int argc, sqlite3_value **argv) {
  (void)idx_str;
  struct qls_cursor *cur = (struct qls_cursor *)base;
  struct qls_vtab *vt = cur->vt;
  const struct ql_plugin *p = vt_plugin(vt);
  cur_reset(cur);
  cur->rowid = 0;
  cur->partition = cur->n_partitions = 0;
  if (idx < 0 || idx >= vt->n_plans) return SQLITE_INTERNAL;
  const struct qls_plan *plan = &vt->plans[idx];
  struct ql_error err = {0};
  struct ql_ir_builder *b = NULL;
  if (ql_ir_builder_new(&b, &err) != QL_OK) return vt_error(vt, &err);
  ql_expr_id roots[QLS_MAX_TERMS];
  int32_t which[QLS_MAX_TERMS], n = 0, empty = 0;
  for (int32_t k = 0; k < plan->n_terms; k++) {
    const struct qls_term *t = &plan->terms[k];
    const struct ArrowSchema *f = vt->schema.children[t->column];
    int32_t klass = qls_col_class(f->format);
    ql_expr_id lits[4096];
    int32_t n_lits = 0;
    int rhs_null = 0;
    if (t->rhs == QLS_RHS_VALUE && t->argv < argc) {
      if (sqlite3_value_type(argv[t->argv]) == SQLITE_NULL) {
        if (t->op != SQLITE_INDEX_CONSTRAINT_IS && t->op != SQLITE_INDEX_CONSTRAINT_ISNOT) {
          empty = 1; /* a comparison with NULL is never true */
          continue;
        }
        rhs_null = 1;
      } else if (qls_literal(b, f->format, argv[t->argv], &lits[0]) == QL_OK) {
        n_lits = 1;
      } else if (t->omit) {
        ql_ir_builder_free(b);
        ql_error_set(&err, QL_EINTERNAL, "the value for column '%s' no longer converts to %s", f->name, f->format);
        return vt_error(vt, &err);
      } else {
        continue; /* SQLite re-checks it */
      }
    } else if (t->rhs == QLS_RHS_IN && t->argv < argc) {
      sqlite3_value *v = NULL;
      for (int rc = sqlite3_vtab_in_first(argv[t->argv], &v); rc == SQLITE_OK && v;
           rc = sqlite3_vtab_in_next(argv[t->argv], &v)) {
        if (n_lits >= 4096) {
          ql_ir_builder_free(b);
          ql_error_set(&err, QL_ENOTSUP, "IN lists over 4096 values on column '%s' are not pushed down", f->name);
          return vt_error(vt, &err);
        }
        if (qls_literal(b, f->format, v, &lits[n_lits]) == QL_OK) n_lits++;
      }
      if (n_lits == 0) {
        empty = 1; /* no value can match */
        continue;
      }
    }
    roots[n] = qls_term_expr(b, f->name, t->column, klass, t->op, lits, n_lits, rhs_null);
    which[n++] = k;
  }
  struct ql_plan_view view;
  memset(&view, 0, sizeof view);
  int rc = ql_ir_builder_finish(b, -1, &view, &err);
  ql_ir_builder_free(b);
  if (rc != QL_OK) return vt_error(vt, &err);
  if (empty) {
    view.release(&view);
    return SQLITE_OK; /* eof */
  }
  int32_t answers[QLS_MAX_TERMS];
  rc = ask(vt, &view, roots, n, answers, &err);
  ql_expr_id pushed[QLS_MAX_TERMS];
  int32_t n_pushed = 0, all_exact = 1;
  for (int32_t i = 0; rc == QL_OK && i < n; i++) {
    const struct qls_term *t = &plan->terms[which[i]];
    if (t->omit && answers[i] != QL_PUSHDOWN_EXACT) {
      rc = ql_error_set(&err, QL_EINTERNAL,
                        "the provider answered EXACT for a filter on '%s' when planning and %s when scanning",
                        vt->schema.children[t->column]->name,
                        answers[i] == QL_PUSHDOWN_INEXACT ? "INEXACT" : "UNSUPPORTED");
    }
    if (answers[i] != QL_PUSHDOWN_UNSUPPORTED) pushed[n_pushed++] = roots[i];
    all_exact &= answers[i] == QL_PUSHDOWN_EXACT;
  }
  int64_t limit = -1;
  if (rc == QL_OK && plan->limit_argv >= 0 && plan->limit_argv < argc && all_exact && n == plan->n_terms) {
    int64_t l = sqlite3_value_int64(argv[plan->limit_argv]);
    int64_t o = plan->offset_argv >= 0 && plan->offset_argv < argc ? sqlite3_value_int64(argv[plan->offset_argv]) : 0;
    if (l >= 0) limit = l + (o > 0 ? o : 0);
  }
  /* projection: the columns SQLite uses, in table order */
  int32_t *proj = malloc(sizeof *proj * (size_t)(vt->schema.n_children + 1));
  int32_t n_proj = 0;
  if (!proj && rc == QL_OK) rc = ql_error_set(&err, QL_ENOMEM, "out of memory");
  for (int64_t c = 0; proj && c < vt->schema.n_children; c++) {
    cur->col_map[c] = -1;
    if ((plan->col_used >> (c < 63 ? c : 63)) & 1) {
      cur->col_map[c] = n_proj;
      proj[n_proj++] = (int32_t)c;
    }
  }
  if (rc == QL_OK) {
    struct ql_scan_args args = {sizeof args, n_proj, proj, {&view, n_pushed, 0, pushed}, limit};
    void *tok = ql_plugin_enter(p);
    rc = vt->tp.scan(&vt->tp, ql_ref_host_session(vt->conn->host), &args, &cur->plan, &err);
    if (rc == QL_OK) {
      struct ql_plan_properties props;
      memset(&props, 0, sizeof props);
      props.struct_size = sizeof props;
      rc = cur->plan.get_properties(&cur->plan, &props, &err);
      cur->n_partitions = props.partition_count;
      if (rc == QL_OK && plan->ordered && props.partition_count > 1)
        rc = ql_error_set(&err, QL_EINTERNAL,
                          "the scan promised one ordered partition when planning and has %lld when scanning",
                          (long long)props.partition_count);
    }
    ql_plugin_leave(p, tok);
  }
  free(proj); /* the scan arguments are borrowed for the call only */
  view.release(&view);
  if (rc != QL_OK) return vt_error(vt, &err);
  cur->eof = 0;
  int src = next_batch(cur);
  if (src != SQLITE_OK) cur->eof = 1;
  return src;
}

static int cur_next(sqlite3_vtab_cursor *base) {
  struct qls_cursor *cur = (struct qls_cursor *)base;
  cur->rowid++;
  if (++cur->row < cur->batch.length) return SQLITE_OK;
  int rc = next_batch(cur);
  if (rc != SQLITE_OK) cur->eof = 1;
  return rc;
}

static int cur_eof(sqlite3_vtab_cursor *base) { return ((struct qls_cursor *)base)->eof; }

static int cur_rowid(sqlite3_vtab_cursor *base, sqlite3_int64 *out) {
  *out = ((struct qls_cursor *)base)->rowid;
  return SQLITE_OK;
}

static int cur_column(sqlite3_vtab_cursor *base, sqlite3_context *ctx, int col) {
  struct qls_cursor *cur = (struct qls_cursor *)base;
  int32_t k = col >= 0 && col < cur->vt->schema.n_children ? cur->col_map[col] : -1;
  if (k < 0 || k >= cur->batch.n_children || k >= cur->batch_schema.n_children) {
    sqlite3_result_null(ctx);
    return SQLITE_OK;
  }
  const struct ArrowArray *a = cur->batch.children[k];
  if (cur->fast[k] != FAST_NONE) {
    int64_t j = a->offset + cur->batch.offset + cur->row;
    if (a->null_count != 0 && a->buffers[0] && !((((const uint8_t *)a->buffers[0])[j >> 3] >> (j & 7)) & 1)) {
      sqlite3_result_null(ctx);
    } else if (cur->fast[k] == FAST_I64) {
      sqlite3_result_int64(ctx, ((const int64_t *)a->buffers[1])[j]);
    } else if (cur->fast[k] == FAST_F64) {
      double d = ((const double *)a->buffers[1])[j];
      if (isnan(d)) sqlite3_result_null(ctx);
      else sqlite3_result_double(ctx, d);
    } else if (cur->fast[k] == FAST_F32) {
      float x = ((const float *)a->buffers[1])[j];
      if (isnan(x)) sqlite3_result_null(ctx);
      else sqlite3_result_double(ctx, (double)x);
    } else if (cur->fast[k] == FAST_TS) {
      int64_t v = ((const int64_t *)a->buffers[1])[j];
      struct qls_ts_memo *m = &cur->memo[k];
      if (m->len < 0 || m->value != v) {
        cur->scratch.len = 0;
        if (qls_format_timestamp(v, cur->batch_schema.children[k]->format[2], &cur->scratch) != QL_OK) {
          sqlite3_result_error_nomem(ctx);
          return SQLITE_OK;
        }
        if (cur->scratch.len >= (int64_t)sizeof m->text) { /* not memoised: cannot happen for int64 values */
          sqlite3_result_text(ctx, cur->scratch.data, (int)cur->scratch.len, SQLITE_TRANSIENT);
          return SQLITE_OK;
        }
        memcpy(m->text, cur->scratch.data, (size_t)cur->scratch.len);
        m->len = (int32_t)cur->scratch.len;
        m->value = v;
      }
      sqlite3_result_text(ctx, m->text, m->len, SQLITE_TRANSIENT);
    } else {
      const int32_t *off = a->buffers[1];
      sqlite3_result_text(ctx, (const char *)a->buffers[2] + off[j], off[j + 1] - off[j], SQLITE_TRANSIENT);
    }
    return SQLITE_OK;
  }
  struct qls_cell cell;
  struct ql_error err = {0};
  if (qls_cell_read(cur->batch_schema.children[k], a, cur->batch.offset + cur->row, &cell,
                    &cur->scratch, &err) != QL_OK) {
    char *m = qls_errmsg(vt_plugin(cur->vt)->name, cur->vt->spec, &err);
    ql_error_release(&err);
    sqlite3_result_error(ctx, m ? m : "qlink: out of memory", -1);
    sqlite3_free(m);
    return SQLITE_OK;
  }
  qls_result_cell(ctx, &cell);
  return SQLITE_OK;
}

/* What every module shares: the scan of a table provider. */
#define QLS_SCAN_METHODS                                                                                    \
  .xBestIndex = vt_best_index, .xDisconnect = vt_disconnect, .xDestroy = vt_destroy, .xOpen = cur_open,    \
  .xClose = cur_close, .xFilter = cur_filter, .xNext = cur_next, .xEof = cur_eof, .xColumn = cur_column,    \
  .xRowid = cur_rowid

static sqlite3_module k_module = {.iVersion = 0, .xCreate = vt_create, .xConnect = vt_connect, QLS_SCAN_METHODS};
static sqlite3_module k_call_module = {
    .iVersion = 0, .xCreate = call_create, .xConnect = call_connect, QLS_SCAN_METHODS};

int qls_register_vtab(struct qls_conn *c) {
  qls_conn_ref(c);
  int rc = sqlite3_create_module_v2(c->db, "qlink", &k_module, c, qls_conn_unref);
  if (rc != SQLITE_OK) return rc;
  qls_conn_ref(c);
  return sqlite3_create_module_v2(c->db, "qlink_call", &k_call_module, c, qls_conn_unref);
}
