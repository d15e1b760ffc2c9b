/* SPDX-License-Identifier: Apache-2.0 */
/* qlink-host-c: a C test host over libqlink's reference host.
 *
 *   qlink-host-c list PLUGIN.so
 *   qlink-host-c scan PLUGIN.so 'provider?key=value&...' [--columns a,b]
 *                [--where 'column op literal']... [--limit N] [--format csv|jsonl]
 *   qlink-host-c plan PLUGIN.so PLANNER
 *   qlink-host-c call PLUGIN.so FUNCTION [VALUE|NULL]...
 *
 * scan runs the pushdown handshake (supports_filters), plans the scan with
 * the projection, the filters and (when every filter is EXACT) the limit,
 * executes every partition and prints the rows; filters the plugin does not
 * apply exactly are applied here, as an engine would. plan builds a small
 * logical plan, runs the planner hook on it and prints its answer. call
 * runs a scalar, aggregate or window function over one int64 argument
 * column holding the values (for a function of no argument, over as many
 * rows) and prints its output, one value a line.
 * Every call into the plugin is bracketed by its executor hooks.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "host_filters.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/host.h"
#include "qlink/lib/loader.h"
#include "qlink/lib/status.h"

#define QL_HOST_MAX_FILTERS 32

static int usage(void) {
  fprintf(stderr,
          "usage: qlink-host-c list PLUGIN.so\n"
          "       qlink-host-c scan PLUGIN.so 'provider?key=value&...' [--columns a,b] [--where 'col op literal']...\n"
          "                    [--limit N] [--format csv|jsonl]\n"
          "       qlink-host-c plan PLUGIN.so PLANNER\n"
          "       qlink-host-c call PLUGIN.so FUNCTION [VALUE|NULL]...\n");
  return 2;
}

static int fail(struct ql_error *err, const char *what) {
  fprintf(stderr, "qlink-host-c: %s: %s\n", what, ql_error_message(err));
  ql_error_release(err);
  return 1;
}

static const char *kind_name(int32_t kind) {
  static const char *const names[] = {"?", "table_provider", "schema_provider", "scalar_function",
                                      "aggregate_function", "window_function", "table_function", "planner",
                                      "object_store"};
  return kind >= 1 && kind <= 8 ? names[kind] : "?";
}

/* ------------------------------------------------------------------ list */

static int cmd_list(struct ql_loaded_plugin *lp) {
  const struct ql_plugin *p = &lp->plugin;
  printf("plugin %s %s (ABI %u.%u): %s\n", p->name, p->version, QL_ABI_VERSION_MAJOR(lp->abi_version),
         QL_ABI_VERSION_MINOR(lp->abi_version), p->description ? p->description : "");
  for (int32_t i = 0; i < p->n_items; i++) {
    const struct ql_item_info *it = &p->items[i];
    printf("  %-18s %-18s %s\n", kind_name(it->kind), it->name, it->description ? it->description : "");
    for (int32_t j = 0; j < it->n_options; j++) {
      const struct ql_option_info *o = &it->options[j];
      printf("      option %-12s %s%s%s%s\n", o->name, o->description ? o->description : "",
             o->required ? " (required)" : "", o->default_value ? "; default " : "",
             o->default_value ? o->default_value : "");
    }
  }
  return 0;
}

/* ------------------------------------------------------------------ scan */

struct scan_request {
  const char *spec;
  const char *columns; /* comma-separated, or NULL for all */
  const char *wheres[QL_HOST_MAX_FILTERS];
  int n_wheres;
  int64_t limit;
  const char *format;
};

static int projection_from(const char *columns, const struct ArrowSchema *schema, int32_t *out, int32_t *n,
                           struct ql_error *error) {
  *n = 0;
  char *copy = strdup(columns), *save = NULL;
  if (!copy) return ql_error_set(error, QL_ENOMEM, "out of memory");
  for (char *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
    int64_t i = ql_schema_find(schema, name);
    if (i < 0 || *n >= 64) {
      int rc = ql_error_set(error, QL_EINVAL, "--columns: the table has no column '%s'", name);
      free(copy);
      return rc;
    }
    out[(*n)++] = (int32_t)i;
  }
  free(copy);
  return QL_OK;
}

static void print_row(const struct ql_batches *b, int64_t r, const int32_t *cols, int32_t n, int json) {
  for (int32_t c = 0; c < n; c++) {
    const char *name = b->schema.children[cols[c]]->name;
    const char *format = b->schema.children[cols[c]]->format;
    int64_t v;
    double d;
    const char *s;
    int64_t len;
    if (json) printf("%s\"%s\":", c ? "," : "{", name);
    if (c && !json) putchar(',');
    int temporal = format[0] == 't';
    if (((strchr("csilCSILb", format[0]) && format[1] == '\0') || temporal) && ql_batches_i64(b, cols[c], r, &v)) {
      printf("%" PRId64, v);
    } else if (ql_batches_str(b, cols[c], r, &s, &len)) {
      printf(json ? "\"%.*s\"" : "%.*s", (int)len, s);
    } else if (ql_batches_f64(b, cols[c], r, &d)) {
      printf("%.17g", d);
    } else if (json) {
      printf("null");
    }
  }
  printf(json ? "}\n" : "\n");
}

/* Print the rows passing every filter the plugin did not apply exactly. */
static void print_rows(const struct ql_batches *b, const struct ql_host_filter *filters, int n_filters,
                       const int32_t *proj, int32_t n_proj, int full_scan, int64_t limit, int json) {
  int32_t cols[64];
  for (int32_t c = 0; c < n_proj; c++) cols[c] = full_scan ? proj[c] : c;
  if (!json) {
    for (int32_t c = 0; c < n_proj; c++) printf("%s%s", c ? "," : "", b->schema.children[cols[c]]->name);
    printf("\n");
  }
  int64_t printed = 0;
  for (int64_t r = 0; r < b->n_rows && (limit < 0 || printed < limit); r++) {
    int pass = 1;
    for (int i = 0; full_scan && pass && i < n_filters; i++) {
      if (filters[i].answer != QL_PUSHDOWN_EXACT) pass = ql_host_filter_eval(&filters[i], b, filters[i].column, r);
    }
    if (!pass) continue;
    print_row(b, r, cols, n_proj, json);
    printed++;
  }
  fflush(stdout); /* keep the rows ahead of the summary when both go to one pipe */
  fprintf(stderr, "qlink-host-c: %" PRId64 " row(s)\n", printed);
}

static const char *answer_name(int32_t a) {
  return a == QL_PUSHDOWN_EXACT ? "EXACT" : a == QL_PUSHDOWN_INEXACT ? "INEXACT" : "UNSUPPORTED";
}

static int scan_with(struct ql_loaded_plugin *lp, struct ql_ref_host *host, const struct ql_table_provider *tp,
                     const struct scan_request *req) {
  const struct ql_plugin *p = &lp->plugin;
  struct ql_error err = {0};
  struct ArrowSchema schema = {0};
  void *tok = ql_plugin_enter(p);
  int rc = tp->get_schema(tp, &schema, &err);
  ql_plugin_leave(p, tok);
  if (rc != QL_OK) return fail(&err, "get_schema");
  int32_t proj[64], n_proj = (int32_t)(schema.n_children < 64 ? schema.n_children : 64);
  for (int32_t i = 0; i < n_proj; i++) proj[i] = i;
  struct ql_host_filter filters[QL_HOST_MAX_FILTERS];
  ql_expr_id roots[QL_HOST_MAX_FILTERS];
  int32_t answers[QL_HOST_MAX_FILTERS];
  int n_filters = 0, all_exact = 1;
  struct ql_plan_view view = {0};
  struct ql_ir_builder *b = NULL;
  struct ql_batches rows = {0};
  if (req->columns) rc = projection_from(req->columns, &schema, proj, &n_proj, &err);
  if (rc == QL_OK) rc = ql_ir_builder_new(&b, &err);
  for (int i = 0; rc == QL_OK && i < req->n_wheres; i++) {
    rc = ql_host_filter_parse(req->wheres[i], &schema, b, &filters[i], &err);
    if (rc == QL_OK) roots[n_filters++] = filters[i].expr;
  }
  if (rc == QL_OK) rc = ql_ir_builder_finish(b, -1, &view, &err);
  struct ql_expr_list list = {&view, n_filters, 0, roots};
  if (rc == QL_OK && n_filters > 0) {
    for (int i = 0; i < n_filters; i++) answers[i] = QL_PUSHDOWN_UNSUPPORTED;
    tok = ql_plugin_enter(p);
    rc = tp->supports_filters ? tp->supports_filters(tp, &list, answers, &err) : QL_OK;
    ql_plugin_leave(p, tok);
    for (int i = 0; rc == QL_OK && i < n_filters; i++) {
      filters[i].answer = answers[i];
      all_exact &= answers[i] == QL_PUSHDOWN_EXACT;
      fprintf(stderr, "qlink-host-c: filter '%s': %s\n", req->wheres[i], answer_name(answers[i]));
    }
  }
  /* With a filter the host must re-check, the scan gets every column and no
   * limit; the host filters, projects and limits. */
  int full_scan = !all_exact;
  struct ql_scan_args args = {sizeof args, full_scan ? -1 : n_proj, full_scan ? NULL : proj, list,
                              full_scan ? -1 : req->limit};
  if (rc == QL_OK) rc = ql_batches_scan(p, tp, host, &args, &rows, &err);
  if (rc == QL_OK) print_rows(&rows, filters, n_filters, proj, n_proj, full_scan, req->limit, strcmp(req->format, "jsonl") == 0);
  ql_batches_free(&rows);
  for (int i = 0; i < n_filters; i++) ql_host_filter_free(&filters[i]);
  if (view.release) view.release(&view);
  ql_ir_builder_free(b);
  ql_schema_release(&schema);
  return rc == QL_OK ? 0 : fail(&err, "scan");
}

static int cmd_scan(struct ql_loaded_plugin *lp, struct ql_ref_host *host, const struct scan_request *req) {
  size_t n = strlen(req->spec) + 8;
  char *full = malloc(n);
  if (!full) return 1;
  snprintf(full, n, "plugin/%s", req->spec);
  struct ql_table_spec spec = {0};
  struct ql_error err = {0};
  int rc = ql_table_spec_parse(full, &spec, &err);
  free(full);
  if (rc != QL_OK) return fail(&err, "table spec");
  struct ql_table_provider tp = {0};
  const struct ql_plugin *p = &lp->plugin;
  void *tok = ql_plugin_enter(p);
  rc = p->table_provider_open(p, spec.provider, &spec.options, ql_ref_host_session(host), &tp, &err);
  ql_plugin_leave(p, tok);
  ql_table_spec_free(&spec);
  if (rc != QL_OK) return fail(&err, "open");
  int status = scan_with(lp, host, &tp, req);
  tok = ql_plugin_enter(p);
  tp.release(&tp);
  ql_plugin_leave(p, tok);
  return status;
}

/* ------------------------------------------------------------------ plan */

/* Limit(fetch 5) <- Filter(TRUE) <- Filter(value > 3) <- TableScan t(value int64). */
static int demo_plan(struct ql_plan_view *out, struct ql_error *error) {
  struct ArrowSchema schema = {0};
  QL_RETURN_NOT_OK(ql_schema_init_struct(&schema, "", 1, error));
  int rc = ql_schema_init(schema.children[0], "l", "value", 0, error);
  struct ql_ir_builder *b = NULL;
  if (rc == QL_OK) rc = ql_ir_builder_new(&b, error);
  if (rc == QL_OK) {
    struct ql_table_ref table = {"t", &schema, NULL, NULL};
    struct ql_plan_node n;
    memset(&n, 0, sizeof n);
    n.kind = QL_NODE_TABLE_SCAN;
    n.schema = &schema;
    n.condition = -1;
    n.n_projection = -1;
    n.fetch = -1;
    n.name = "t";
    n.table = &table;
    ql_node_id scan = ql_ir_node(b, &n);
    ql_expr_id gt = ql_ir_binary(b, QL_OP_GT, ql_ir_column(b, "value", "t", 0), ql_ir_literal_i64(b, 3));
    struct ql_scalar t = {"b", 0, 0, {.i64 = 1}, NULL, NULL};
    ql_expr_id truth = ql_ir_literal(b, &t);
    memset(&n, 0, sizeof n);
    n.kind = QL_NODE_FILTER;
    n.schema = &schema;
    n.condition = -1;
    n.n_projection = -1;
    n.fetch = -1;
    n.n_inputs = 1;
    n.inputs = &scan;
    n.n_exprs = 1;
    n.exprs = &gt;
    ql_node_id filter = ql_ir_node(b, &n);
    n.inputs = &filter;
    n.exprs = &truth;
    ql_node_id true_filter = ql_ir_node(b, &n);
    memset(&n, 0, sizeof n);
    n.kind = QL_NODE_LIMIT;
    n.schema = &schema;
    n.condition = -1;
    n.n_projection = -1;
    n.fetch = 5;
    n.n_inputs = 1;
    n.inputs = &true_filter;
    ql_node_id limit = ql_ir_node(b, &n);
    rc = ql_ir_builder_finish(b, limit, out, error);
  }
  ql_ir_builder_free(b);
  ql_schema_release(&schema);
  return rc;
}

static int no_physical(const struct ql_planner_context *self, ql_node_id node, struct ql_execution_plan *out,
                       struct ql_error *error) {
  (void)self;
  (void)out;
  return ql_error_set(error, QL_ENOTSUP, "qlink-host-c does not plan subtrees physically (node %d)", (int)node);
}

static void print_plan(const char *title, const struct ql_plan_view *v, ql_node_id root) {
  char *text = NULL;
  if (ql_ir_plan_to_string(v, root, &text, NULL) == QL_OK) printf("%s\n%s", title, text);
  free(text);
}

/* Copy subtree `id` of `v` into `b`; the node `replace` of `v` becomes the
 * root of `with` (another view) instead. -1 on failure (the builder holds why). */
static ql_expr_id copy_expr(struct ql_ir_builder *b, const struct ql_plan_view *v, ql_expr_id id) {
  if (id < 0) return -1;
  const struct ql_expr *e = &v->exprs[id];
  ql_expr_id args[64];
  if (e->n_args > 64) return -1;
  for (int32_t i = 0; i < e->n_args; i++) {
    if ((args[i] = copy_expr(b, v, e->args[i])) < 0) return -1;
  }
  struct ql_expr copy = *e;
  copy.args = args;
  copy.filter = copy_expr(b, v, e->filter);
  if (e->filter >= 0 && copy.filter < 0) return -1;
  return ql_ir_expr(b, &copy);
}

static int copy_exprs(struct ql_ir_builder *b, const struct ql_plan_view *v, const ql_expr_id *src, int32_t n,
                      ql_expr_id *dst) {
  for (int32_t i = 0; i < n; i++) {
    if ((dst[i] = copy_expr(b, v, src[i])) < 0) return 0;
  }
  return 1;
}

static ql_node_id splice(struct ql_ir_builder *b, const struct ql_plan_view *v, ql_node_id id, ql_node_id replace,
                         const struct ql_plan_view *with) {
  if (id == replace) return splice(b, with, with->root, -1, NULL);
  const struct ql_plan_node *n = &v->nodes[id];
  ql_node_id inputs[64];
  ql_expr_id exprs[64], exprs2[64];
  if (n->n_inputs > 64 || n->n_exprs > 64 || n->n_exprs2 > 64) return -1;
  for (int32_t i = 0; i < n->n_inputs; i++) {
    if ((inputs[i] = splice(b, v, n->inputs[i], replace, with)) < 0) return -1;
  }
  if (!copy_exprs(b, v, n->exprs, n->n_exprs, exprs) || !copy_exprs(b, v, n->exprs2, n->n_exprs2, exprs2)) return -1;
  struct ql_plan_node copy = *n;
  copy.inputs = inputs;
  copy.exprs = exprs;
  copy.exprs2 = exprs2;
  copy.condition = copy_expr(b, v, n->condition);
  if (n->condition >= 0 && copy.condition < 0) return -1;
  return ql_ir_node(b, &copy);
}

/* Print the plan as the host would run it: `view` with the rewritten subtree in place. */
static int print_rewritten(const struct ql_plan_view *view, const struct ql_planner_result *r, struct ql_error *err) {
  struct ql_ir_builder *b;
  QL_RETURN_NOT_OK(ql_ir_builder_new(&b, err));
  struct ql_plan_view out = {0};
  ql_node_id root = splice(b, view, view->root, r->node, &r->rewrite);
  int rc = ql_ir_builder_status(b, err);
  if (rc == QL_OK && root < 0) rc = ql_error_set(err, QL_EINVAL, "the rewrite is too wide to splice");
  if (rc == QL_OK) rc = ql_ir_builder_finish(b, root, &out, err);
  ql_ir_builder_free(b);
  if (rc == QL_OK) {
    print_plan("plan after the rewrite:", &out, out.root);
    out.release(&out);
  }
  return rc;
}

static int cmd_plan(struct ql_loaded_plugin *lp, struct ql_ref_host *host, const char *name) {
  const struct ql_plugin *p = &lp->plugin;
  struct ql_error err = {0};
  struct ql_planner planner = {0};
  struct ql_plan_view view = {0};
  void *tok = ql_plugin_enter(p);
  int rc = p->planner_open(p, name, NULL, &planner, &err);
  ql_plugin_leave(p, tok);
  if (rc != QL_OK) return fail(&err, "planner_open");
  rc = demo_plan(&view, &err);
  if (rc == QL_OK) {
    print_plan("plan:", &view, view.root);
    struct ql_planner_context ctx = {sizeof ctx, 0, ql_ref_host_session(host), &view, no_physical, NULL};
    struct ql_planner_result result;
    memset(&result, 0, sizeof result);
    result.struct_size = sizeof result;
    tok = ql_plugin_enter(p);
    rc = planner.plan(&planner, &ctx, &result, &err);
    ql_plugin_leave(p, tok);
    if (rc == QL_OK && result.action == QL_PLANNER_DECLINE) printf("planner %s: DECLINE\n", name);
    if (rc == QL_OK && result.action == QL_PLANNER_REWRITE) {
      printf("planner %s: REWRITE node %d\n", name, (int)result.node);
      print_plan("rewritten subtree:", &result.rewrite, result.rewrite.root);
      if (ql_ir_validate(&result.rewrite, &err) != QL_OK) rc = ql_error_prefix(&err, "the rewrite is not valid");
      if (rc == QL_OK && (result.node < 0 || result.node >= view.n_nodes)) {
        rc = ql_error_set(&err, QL_EINVAL, "the planner replaced node %d of a %d-node plan", (int)result.node,
                          (int)view.n_nodes);
      }
      if (rc == QL_OK) rc = print_rewritten(&view, &result, &err);
      result.rewrite.release(&result.rewrite);
    }
    if (rc == QL_OK && result.action == QL_PLANNER_PHYSICAL) {
      printf("planner %s: PHYSICAL node %d\n", name, (int)result.node);
      result.physical.release(&result.physical);
    }
    view.release(&view);
  }
  tok = ql_plugin_enter(p);
  planner.release(&planner);
  ql_plugin_leave(p, tok);
  return rc == QL_OK ? 0 : fail(&err, "plan");
}

/* ------------------------------------------------------------------ call */

/* The values as a struct array of one int64 column ("NULL" is NULL), or of
 * no column with as many rows when the function takes no argument. */
static int call_args(char **values, int n, int n_args, struct ArrowSchema *schema, struct ArrowArray *array,
                     struct ql_error *error) {
  QL_RETURN_NOT_OK(ql_schema_init_struct(schema, "", n_args, error));
  int rc = n_args ? ql_schema_init(schema->children[0], "l", "x", ARROW_FLAG_NULLABLE, error) : QL_OK;
  if (rc == QL_OK) rc = ql_array_init_struct(array, n, n_args, error);
  if (rc != QL_OK || n_args == 0) return rc;
  int64_t *data = calloc((size_t)n + 1, sizeof *data);
  uint8_t *bits = calloc((size_t)n / 8 + 1, 1);
  if (!data || !bits) {
    free(data);
    free(bits);
    return ql_error_set(error, QL_ENOMEM, "out of memory");
  }
  for (int i = 0; i < n; i++) {
    if (strcmp(values[i], "NULL") == 0) continue;
    char *end;
    data[i] = strtoll(values[i], &end, 10);
    if (*values[i] == '\0' || *end != '\0') {
      free(data);
      free(bits);
      return ql_error_set(error, QL_EINVAL, "'%s' is not an int64 or NULL", values[i]);
    }
    bits[i / 8] |= (uint8_t)(1u << (i % 8));
  }
  return ql_array_init_fixed(array->children[0], n, -1, bits, data, error);
}

static void print_i64_array(const struct ArrowArray *a) {
  for (int64_t i = 0; i < a->length; i++) {
    if (ql_array_is_valid(a, i)) {
      printf("%" PRId64 "\n", ((const int64_t *)a->buffers[1])[a->offset + i]);
    } else {
      printf("NULL\n");
    }
  }
}

static int call_function(const struct ql_plugin *p, const struct ql_item_info *item, char **values, int n,
                         struct ql_error *err) {
  struct ArrowSchema schema = {0};
  struct ArrowArray args = {0}, out = {0};
  int rc = QL_OK;
  void *tok = ql_plugin_enter(p);
  if (item->kind == QL_ITEM_SCALAR_FUNCTION) {
    struct ql_scalar_function f = {0};
    rc = p->scalar_function_open(p, item->name, &f, err);
    if (rc == QL_OK) {
      rc = call_args(values, n, f.signature.n_args == 0 ? 0 : 1, &schema, &args, err);
      if (rc == QL_OK) rc = f.invoke(&f, &schema, &args, n, &out, err);
      f.release(&f);
    }
  } else if (item->kind == QL_ITEM_AGGREGATE_FUNCTION) {
    struct ql_aggregate_function f = {0};
    struct ql_accumulator acc = {0};
    rc = p->aggregate_function_open(p, item->name, &f, err);
    if (rc == QL_OK) {
      rc = call_args(values, n, f.signature.n_args == 0 ? 0 : 1, &schema, &args, err);
      if (rc == QL_OK) rc = f.accumulator_new(&f, &schema, &acc, err);
      if (rc == QL_OK) rc = acc.update(&acc, &args, err);
      if (rc == QL_OK) rc = acc.evaluate(&acc, &out, err);
      if (acc.release) acc.release(&acc);
      f.release(&f);
    }
  } else if (item->kind == QL_ITEM_WINDOW_FUNCTION) {
    struct ql_window_function f = {0};
    struct ql_partition_evaluator ev = {0};
    rc = p->window_function_open(p, item->name, &f, err);
    if (rc == QL_OK) {
      rc = call_args(values, n, f.signature.n_args == 0 ? 0 : 1, &schema, &args, err);
      if (rc == QL_OK) rc = f.evaluator_new(&f, &schema, &ev, err);
      if (rc == QL_OK) rc = ev.evaluate_all(&ev, &args, n, &out, err);
      if (ev.release) ev.release(&ev);
      f.release(&f);
    }
  } else {
    rc = ql_error_set(err, QL_EINVAL, "'%s' is not a scalar, aggregate or window function", item->name);
  }
  ql_plugin_leave(p, tok);
  if (rc == QL_OK) print_i64_array(&out);
  ql_array_release(&out);
  ql_array_release(&args);
  ql_schema_release(&schema);
  return rc;
}

static int cmd_call(struct ql_loaded_plugin *lp, const char *name, char **values, int n) {
  const struct ql_plugin *p = &lp->plugin;
  const struct ql_item_info *item = NULL;
  static const int32_t kinds[3] = {QL_ITEM_SCALAR_FUNCTION, QL_ITEM_AGGREGATE_FUNCTION, QL_ITEM_WINDOW_FUNCTION};
  for (int k = 0; k < 3 && item == NULL; k++) item = ql_plugin_find_item(p, kinds[k], name);
  struct ql_error err = {0};
  if (item == NULL) {
    ql_error_set(&err, QL_ENOTFOUND, "%s offers no function '%s'", p->name, name);
    return fail(&err, "call");
  }
  return call_function(p, item, values, n, &err) == QL_OK ? 0 : fail(&err, "call");
}

/* ------------------------------------------------------------------ main */

static int parse_scan(int argc, char **argv, struct scan_request *req) {
  memset(req, 0, sizeof *req);
  req->limit = -1;
  req->format = "csv";
  if (argc < 4) return 0;
  req->spec = argv[3];
  for (int i = 4; i < argc; i++) {
    if (i + 1 >= argc) return 0;
    if (strcmp(argv[i], "--columns") == 0) {
      req->columns = argv[++i];
    } else if (strcmp(argv[i], "--where") == 0 && req->n_wheres < QL_HOST_MAX_FILTERS) {
      req->wheres[req->n_wheres++] = argv[++i];
    } else if (strcmp(argv[i], "--limit") == 0) {
      req->limit = strtoll(argv[++i], NULL, 10);
    } else if (strcmp(argv[i], "--format") == 0) {
      req->format = argv[++i];
      if (strcmp(req->format, "csv") != 0 && strcmp(req->format, "jsonl") != 0) return 0;
    } else {
      return 0;
    }
  }
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 3) return usage();
  const char *cmd = argv[1];
  struct scan_request req;
  if (strcmp(cmd, "scan") == 0 && !parse_scan(argc, argv, &req)) return usage();
  if (strcmp(cmd, "plan") == 0 && argc != 4) return usage();
  if (strcmp(cmd, "list") == 0 && argc != 3) return usage();
  if (strcmp(cmd, "call") == 0 && argc < 4) return usage();
  if (strcmp(cmd, "scan") != 0 && strcmp(cmd, "plan") != 0 && strcmp(cmd, "list") != 0 && strcmp(cmd, "call") != 0) {
    return usage();
  }
  struct ql_error err = {0};
  struct ql_loaded_plugin *lp = NULL;
  if (ql_plugin_load(argv[2], &lp, &err) != QL_OK) return fail(&err, "load");
  struct ql_ref_host_options ho = {-1, 0, 0};
  struct ql_ref_host *host = NULL;
  if (ql_ref_host_new(&ho, &host, &err) != QL_OK) {
    ql_plugin_unload(lp);
    return fail(&err, "host");
  }
  int status;
  if (strcmp(cmd, "list") == 0) {
    status = cmd_list(lp);
  } else if (strcmp(cmd, "scan") == 0) {
    status = cmd_scan(lp, host, &req);
  } else if (strcmp(cmd, "call") == 0) {
    status = cmd_call(lp, argv[3], argv + 4, argc - 4);
  } else {
    status = cmd_plan(lp, host, argv[3]);
  }
  ql_plugin_unload(lp);
  if (ql_ref_host_free(host, &err) != QL_OK) status = fail(&err, "host");
  return status;
}
