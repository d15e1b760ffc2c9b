/* SPDX-License-Identifier: Apache-2.0 */
/* Conformance checks of functions, planners and schema providers. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "checker.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/ir.h"

static void report(struct ql_checker *ck, const char *rule, const char *what, int rc, struct ql_error *err) {
  ql_check_violation(ck, rule, "%s returned %s: %s", what, ql_status_name(rc),
                     err->release && err->message ? err->message : "(no message)");
}

/* The string a probe with an unknown name or option uses, for messages. */
#define QLC_NO_SUCH_OPTION "qlink_check_no_such_option"

/* The unknown-name probe: an opener given a name its catalogue does not
 * list must refuse it with QL_ENOTFOUND. */
static void check_unknown_name(struct ql_checker *ck, const char *what, const char *probe, int rc,
                               struct ql_error *err) {
  if (rc != QL_ENOTFOUND) {
    ql_check_violation(ck, "open.unknown_name", "%s('%s'), a name not in the catalogue, returned %s: %s; expected "
                       "QL_ENOTFOUND", what, probe, ql_status_name(rc),
                       err->release && err->message ? err->message : "(no message)");
  }
  ql_check_error(ck, err, rc, what);
}

/* A schema a call returned with QL_OK must be live; release it. */
static void release_schema_out(struct ql_checker *ck, struct ArrowSchema *out, const char *rule, const char *name) {
  if (out->release == NULL) {
    ql_check_violation(ck, rule, "'%s': returned QL_OK with a released schema", name);
    return;
  }
  QLC_DO(ck, out->release(out));
}

/* A function's identity names this plugin as its library (gap G2). */
static void check_identity(struct ql_checker *ck, const struct ql_item_info *item, const struct ql_function_id *id,
                           int32_t kind) {
  if (id->origin != QL_ORIGIN_USER || id->kind != kind || id->library == NULL ||
      strcmp(id->library, ck->plugin->name) != 0 || id->name == NULL) {
    ql_check_violation(ck, "function.identity", "'%s': identity must be origin USER, kind %d, library '%s', a name",
                       item->name, kind, ck->plugin->name);
  }
}

/* Release an object the kit opened: a NULL release breaks `members_rule`,
 * a release that leaves release set breaks `rule`. */
#define QLC_RELEASED(ck, obj, rule, members_rule, name)                                               \
  do {                                                                                                \
    if ((obj).release == NULL) {                                                                      \
      ql_check_violation(ck, members_rule, "'%s': release is NULL", name);                            \
      break;                                                                                          \
    }                                                                                                 \
    QLC_DO(ck, (obj).release(&(obj)));                                                                \
    if ((obj).release != NULL) ql_check_violation(ck, rule, "'%s': release left release set", name);  \
  } while (0)

/* The argument struct schema a signature asks for, when it names its types. */
static int signature_args(const struct ql_signature *sig, struct ArrowSchema *out) {
  if (sig->n_args < 0 || (sig->n_args > 0 && sig->arg_formats == NULL)) return QL_ENOTSUP;
  QL_RETURN_NOT_OK(ql_schema_init_struct(out, "", sig->n_args, NULL));
  for (int32_t i = 0; i < sig->n_args; i++) {
    char name[16];
    snprintf(name, sizeof name, "arg%d", i);
    int rc = ql_schema_init(out->children[i], sig->arg_formats[i], name, ARROW_FLAG_NULLABLE, NULL);
    if (rc != QL_OK) {
      ql_schema_release(out);
      return rc;
    }
  }
  return QL_OK;
}

/* For the signature's own argument types: return_type succeeds, and every
 * object the function creates (accumulators, evaluators) releases itself. */
static void check_aggregate_objects(struct ql_checker *ck, const char *name, const struct ql_aggregate_function *f) {
  struct ArrowSchema args, rt = {0};
  if (signature_args(&f->signature, &args) != QL_OK) return;
  struct ql_error err = {0};
  int rc;
  QLC_CALL(ck, rc, f->return_type(f, &args, &rt, &err));
  if (rc != QL_OK) report(ck, "function.return_type", name, rc, &err);
  ql_check_error(ck, &err, rc, "return_type");
  if (rc == QL_OK) release_schema_out(ck, &rt, "function.return_type", name);
  struct ql_accumulator acc = {0};
  QLC_CALL(ck, rc, f->accumulator_new(f, &args, &acc, &err));
  if (rc != QL_OK) report(ck, "function.accumulator", name, rc, &err);
  ql_check_error(ck, &err, rc, "accumulator_new");
  if (rc == QL_OK) QLC_RELEASED(ck, acc, "release.accumulator", "function.members", name);
  if (f->groups_accumulator_new) {
    struct ql_groups_accumulator g = {0};
    QLC_CALL(ck, rc, f->groups_accumulator_new(f, &args, &g, &err));
    /* QL_ENOTSUP: none for these types; the host uses accumulator_new. */
    if (rc != QL_OK && rc != QL_ENOTSUP) report(ck, "function.accumulator", name, rc, &err);
    ql_check_error(ck, &err, rc, "groups_accumulator_new");
    if (rc == QL_OK) QLC_RELEASED(ck, g, "release.groups_accumulator", "function.members", name);
  }
  ql_schema_release(&args);
}

static void check_window_objects(struct ql_checker *ck, const char *name, const struct ql_window_function *f) {
  struct ArrowSchema args, rt = {0};
  if (signature_args(&f->signature, &args) != QL_OK) return;
  struct ql_error err = {0};
  int rc;
  QLC_CALL(ck, rc, f->return_type(f, &args, &rt, &err));
  if (rc != QL_OK) report(ck, "function.return_type", name, rc, &err);
  ql_check_error(ck, &err, rc, "return_type");
  if (rc == QL_OK) release_schema_out(ck, &rt, "function.return_type", name);
  struct ql_partition_evaluator ev = {0};
  QLC_CALL(ck, rc, f->evaluator_new(f, &args, &ev, &err));
  if (rc != QL_OK) report(ck, "function.evaluator", name, rc, &err);
  ql_check_error(ck, &err, rc, "evaluator_new");
  if (rc == QL_OK) QLC_RELEASED(ck, ev, "release.partition_evaluator", "function.members", name);
  ql_schema_release(&args);
}

static void check_scalar_objects(struct ql_checker *ck, const char *name, const struct ql_scalar_function *f) {
  struct ArrowSchema args, rt = {0};
  if (signature_args(&f->signature, &args) != QL_OK) return;
  struct ql_error err = {0};
  int rc;
  QLC_CALL(ck, rc, f->return_type(f, &args, &rt, &err));
  if (rc != QL_OK) report(ck, "function.return_type", name, rc, &err);
  ql_check_error(ck, &err, rc, "return_type");
  if (rc == QL_OK) release_schema_out(ck, &rt, "function.return_type", name);
  ql_schema_release(&args);
}

#define QLC_NO_SUCH_FUNCTION "qlink_check_no_such_function"

/* Each kind: open the item (a failure is reported with the plugin's own
 * message before that error is released), check the function's required
 * members and objects, release it, then probe a name not in the catalogue. */
static void check_scalar(struct ql_checker *ck, const struct ql_item_info *item) {
  const struct ql_plugin *pl = ck->plugin;
  struct ql_scalar_function f = {0}, g = {0};
  struct ql_error err = {0};
  int rc;
  QLC_CALL(ck, rc, pl->scalar_function_open(pl, item->name, &f, &err));
  if (rc != QL_OK) report(ck, "open.function", item->name, rc, &err);
  ql_check_error(ck, &err, rc, "scalar_function_open");
  if (rc == QL_OK) {
    check_identity(ck, item, &f.id, QL_FUNCTION_SCALAR);
    if (f.return_type == NULL || f.invoke == NULL) {
      ql_check_violation(ck, "function.members", "'%s': return_type and invoke are required", item->name);
    } else {
      check_scalar_objects(ck, item->name, &f);
    }
    QLC_RELEASED(ck, f, "release.scalar_function", "function.members", item->name);
  }
  QLC_CALL(ck, rc, pl->scalar_function_open(pl, QLC_NO_SUCH_FUNCTION, &g, &err));
  if (rc == QL_OK && g.release) QLC_DO(ck, g.release(&g));
  check_unknown_name(ck, "scalar_function_open", QLC_NO_SUCH_FUNCTION, rc, &err);
}

static void check_aggregate(struct ql_checker *ck, const struct ql_item_info *item) {
  const struct ql_plugin *pl = ck->plugin;
  struct ql_aggregate_function f = {0}, g = {0};
  struct ql_error err = {0};
  int rc;
  QLC_CALL(ck, rc, pl->aggregate_function_open(pl, item->name, &f, &err));
  if (rc != QL_OK) report(ck, "open.function", item->name, rc, &err);
  ql_check_error(ck, &err, rc, "aggregate_function_open");
  if (rc == QL_OK) {
    check_identity(ck, item, &f.id, QL_FUNCTION_AGGREGATE);
    if (f.accumulator_new == NULL || f.state_schema == NULL || f.return_type == NULL) {
      ql_check_violation(ck, "function.members", "'%s': accumulator_new, state_schema and return_type are required",
                         item->name);
    } else {
      check_aggregate_objects(ck, item->name, &f);
    }
    QLC_RELEASED(ck, f, "release.aggregate_function", "function.members", item->name);
  }
  QLC_CALL(ck, rc, pl->aggregate_function_open(pl, QLC_NO_SUCH_FUNCTION, &g, &err));
  if (rc == QL_OK && g.release) QLC_DO(ck, g.release(&g));
  check_unknown_name(ck, "aggregate_function_open", QLC_NO_SUCH_FUNCTION, rc, &err);
}

static void check_window(struct ql_checker *ck, const struct ql_item_info *item) {
  const struct ql_plugin *pl = ck->plugin;
  struct ql_window_function f = {0}, g = {0};
  struct ql_error err = {0};
  int rc;
  QLC_CALL(ck, rc, pl->window_function_open(pl, item->name, &f, &err));
  if (rc != QL_OK) report(ck, "open.function", item->name, rc, &err);
  ql_check_error(ck, &err, rc, "window_function_open");
  if (rc == QL_OK) {
    check_identity(ck, item, &f.id, QL_FUNCTION_WINDOW);
    if (f.return_type == NULL || f.evaluator_new == NULL) {
      ql_check_violation(ck, "function.members", "'%s': return_type and evaluator_new are required", item->name);
    } else {
      check_window_objects(ck, item->name, &f);
    }
    QLC_RELEASED(ck, f, "release.window_function", "function.members", item->name);
  }
  QLC_CALL(ck, rc, pl->window_function_open(pl, QLC_NO_SUCH_FUNCTION, &g, &err));
  if (rc == QL_OK && g.release) QLC_DO(ck, g.release(&g));
  check_unknown_name(ck, "window_function_open", QLC_NO_SUCH_FUNCTION, rc, &err);
}

/* A call without arguments (the ABI does not declare a table function's
 * arity): either a provider that passes the table-provider checks, or an
 * error that follows the error rules (a refusal such as "takes 2
 * arguments" is the function's right, not a violation). */
static void check_table_function_call(struct ql_checker *ck, const char *name, const struct ql_table_function *f) {
  struct ql_plan_view empty = {sizeof empty, 0, 0, -1, NULL, NULL, NULL, NULL, NULL};
  struct ql_expr_list args = {&empty, 0, 0, NULL};
  struct ql_table_provider p = {0};
  struct ql_error err = {0};
  int rc;
  QLC_CALL(ck, rc, f->call(f, ql_ref_host_session(ck->host), &args, &p, &err));
  ql_check_note(ck, "table function '%s' called without arguments: %s", name, ql_status_name(rc));
  ql_check_error(ck, &err, rc, "table_function.call");
  if (rc != QL_OK) return;
  size_t n = strlen(name) + 3;
  char *what = malloc(n);
  if (what) snprintf(what, n, "%s()", name);
  ql_check_provider_of_call(ck, what ? what : name, &p);
  free(what);
}

static void check_table_function(struct ql_checker *ck, const struct ql_item_info *item) {
  const struct ql_plugin *pl = ck->plugin;
  struct ql_table_function f = {0}, g = {0};
  struct ql_error err = {0};
  int rc;
  QLC_CALL(ck, rc, pl->table_function_open(pl, item->name, &f, &err));
  if (rc != QL_OK) report(ck, "open.function", item->name, rc, &err);
  ql_check_error(ck, &err, rc, "table_function_open");
  if (rc == QL_OK) {
    check_identity(ck, item, &f.id, QL_FUNCTION_TABLE);
    if (f.call == NULL) {
      ql_check_violation(ck, "function.members", "'%s': call is required", item->name);
    } else {
      check_table_function_call(ck, item->name, &f);
    }
    QLC_RELEASED(ck, f, "release.table_function", "function.members", item->name);
  }
  QLC_CALL(ck, rc, pl->table_function_open(pl, QLC_NO_SUCH_FUNCTION, &g, &err));
  if (rc == QL_OK && g.release) QLC_DO(ck, g.release(&g));
  check_unknown_name(ck, "table_function_open", QLC_NO_SUCH_FUNCTION, rc, &err);
}

void ql_check_function(struct ql_checker *ck, const struct ql_item_info *item) {
  ql_check_note(ck, "function '%s'", item->name);
  switch (item->kind) {
    case QL_ITEM_SCALAR_FUNCTION: check_scalar(ck, item); break;
    case QL_ITEM_AGGREGATE_FUNCTION: check_aggregate(ck, item); break;
    case QL_ITEM_WINDOW_FUNCTION: check_window(ck, item); break;
    case QL_ITEM_TABLE_FUNCTION: check_table_function(ck, item); break;
    default: break;
  }
}

/* ---------------------------------------------------------------- planners */

/* A one-node plan (EmptyRelation) every planner must answer without failing. */
static int tiny_plan(struct ql_plan_view *out, struct ql_error *error) {
  struct ArrowSchema schema = {0};
  QL_RETURN_NOT_OK(ql_schema_init_struct(&schema, "", 0, error));
  struct ql_ir_builder *b;
  int rc = ql_ir_builder_new(&b, error);
  if (rc == QL_OK) {
    struct ql_plan_node n;
    memset(&n, 0, sizeof n);
    n.kind = QL_NODE_EMPTY_RELATION;
    n.schema = &schema;
    n.condition = -1;
    n.n_projection = -1;
    n.fetch = -1;
    ql_node_id root = ql_ir_node(b, &n);
    rc = ql_ir_builder_finish(b, root, out, error);
    ql_ir_builder_free(b);
  }
  ql_schema_release(&schema);
  return rc;
}

static int no_physical(const struct ql_planner_context *self, ql_node_id node, struct ql_execution_plan *out,
                       struct ql_error *error) {
  (void)self;
  (void)out;
  return ql_error_set(error, QL_ENOTSUP, "qlink-check plans no subtree physically (node %d)", (int)node);
}

/* One call of the planner on `view`; `what` names the view in reports. */
static void check_planner_on(struct ql_checker *ck, const struct ql_item_info *item, const struct ql_planner *pl,
                             const struct ql_plan_view *view, const char *what);

static void check_planner_call(struct ql_checker *ck, const struct ql_item_info *item, const struct ql_planner *pl) {
  struct ql_plan_view view = {0};
  struct ql_error err = {0};
  if (tiny_plan(&view, &err) != QL_OK) {
    ql_check_violation(ck, "check.internal", "cannot build a plan: %s", ql_error_message(&err));
    ql_error_release(&err);
    return;
  }
  check_planner_on(ck, item, pl, &view, "a one-node plan");
  /* A planner that reads lazily must also answer a skeleton it expands. */
  struct ql_plan_view lazy;
  if (pl->flags & QL_PLANNER_LAZY_VIEW) {
    if (ql_ir_lazy_twin(&view, &lazy, &err) == QL_OK) {
      check_planner_on(ck, item, pl, &lazy, "a one-node lazy plan view");
      lazy.release(&lazy);
    } else {
      ql_check_violation(ck, "check.internal", "cannot build a lazy view: %s", ql_error_message(&err));
      ql_error_release(&err);
    }
  }
  view.release(&view);
}

static void check_planner_on(struct ql_checker *ck, const struct ql_item_info *item, const struct ql_planner *pl,
                             const struct ql_plan_view *view, const char *what) {
  struct ql_error err = {0};
  struct ql_planner_context ctx = {sizeof ctx, 0, ql_ref_host_session(ck->host), view, no_physical, NULL};
  struct ql_planner_result result;
  memset(&result, 0, sizeof result);
  result.struct_size = sizeof result;
  int rc;
  QLC_CALL(ck, rc, pl->plan(pl, &ctx, &result, &err));
  if (rc != QL_OK) {
    report(ck, "planner.call", item->name, rc, &err);
  } else if (result.action == QL_PLANNER_REWRITE) {
    if (result.rewrite.release == NULL || ql_ir_validate(&result.rewrite, NULL) != QL_OK) {
      ql_check_violation(ck, "planner.rewrite", "'%s' rewrote %s into an invalid plan", item->name, what);
    }
    if (result.rewrite.release) QLC_DO(ck, result.rewrite.release(&result.rewrite));
  } else if (result.action == QL_PLANNER_PHYSICAL) {
    if (result.physical.release) QLC_DO(ck, result.physical.release(&result.physical));
  } else if (result.action != QL_PLANNER_DECLINE) {
    ql_check_violation(ck, "planner.action", "'%s' answered unknown action %d", item->name, result.action);
  }
  ql_check_error(ck, &err, rc, "plan");
}

/* An unknown option is the caller's mistake: QL_EINVAL naming it. */
static void check_planner_unknown_option(struct ql_checker *ck, const struct ql_item_info *item) {
  const struct ql_plugin *pl = ck->plugin;
  const char *key = QLC_NO_SUCH_OPTION, *value = "1";
  struct ql_options bad = {1, &key, &value};
  struct ql_planner q = {0};
  struct ql_error err = {0};
  int rc;
  QLC_CALL(ck, rc, pl->planner_open(pl, item->name, &bad, &q, &err));
  if (rc == QL_OK) {
    ql_check_violation(ck, "options.unknown", "planner '%s' opened with unknown option '%s'; expected QL_EINVAL",
                       item->name, key);
    if (q.release) QLC_DO(ck, q.release(&q));
  } else if (rc != QL_EINVAL) {
    report(ck, "options.unknown", "planner open with an unknown option", rc, &err);
  } else if (err.release == NULL || err.message == NULL || strstr(err.message, key) == NULL) {
    ql_check_violation(ck, "options.unknown", "planner '%s': the QL_EINVAL for an unknown option does not name '%s'",
                       item->name, key);
  }
  ql_check_error(ck, &err, rc, "planner_open");
}

void ql_check_planner(struct ql_checker *ck, const struct ql_item_info *item) {
  ql_check_note(ck, "planner '%s'", item->name);
  const struct ql_plugin *pl = ck->plugin;
  struct ql_planner p = {0};
  struct ql_error err = {0};
  int rc;
  QLC_CALL(ck, rc, pl->planner_open(pl, item->name, NULL, &p, &err));
  if (rc != QL_OK) {
    report(ck, "open.planner", item->name, rc, &err);
    ql_check_error(ck, &err, rc, "planner_open");
    return;
  }
  if (p.plan == NULL) {
    ql_check_violation(ck, "planner.members", "'%s' has no plan member", item->name);
  } else {
    check_planner_call(ck, item, &p);
  }
  QLC_RELEASED(ck, p, "release.planner", "planner.members", item->name);
  check_planner_unknown_option(ck, item);
  static const char *const k_probe = "qlink_check_no_such_planner";
  struct ql_planner q = {0};
  QLC_CALL(ck, rc, pl->planner_open(pl, k_probe, NULL, &q, &err));
  if (rc == QL_OK && q.release) QLC_DO(ck, q.release(&q));
  check_unknown_name(ck, "planner_open", k_probe, rc, &err);
}

/* ---------------------------------------------------------- schema providers */

/* Every table the provider lists opens and releases itself; a name it does
 * not list is QL_ENOTFOUND (table.h). */
static void check_schema_tables(struct ql_checker *ck, const struct ql_schema_provider *sp) {
  struct ql_error err = {0};
  int rc;
  int64_t n;
  QLC_CALL(ck, n, sp->table_count(sp));
  for (int64_t i = 0; i < n; i++) {
    const char *name;
    QLC_CALL(ck, name, sp->table_name(sp, i));
    struct ql_table_provider t = {0};
    QLC_CALL(ck, rc, name ? sp->table(sp, name, &t, &err) : QL_EINVAL);
    if (rc != QL_OK) {
      report(ck, "schema_provider.table", name ? name : "(null name)", rc, &err);
      ql_check_error(ck, &err, rc, "schema provider table");
      continue;
    }
    ql_check_error(ck, &err, rc, "schema provider table");
    QLC_RELEASED(ck, t, "release.table_provider", "table_provider.members", name);
  }
  static const char *const k_probe = "qlink_check_no_such_table";
  struct ql_table_provider t = {0};
  QLC_CALL(ck, rc, sp->table(sp, k_probe, &t, &err));
  if (rc == QL_OK && t.release) QLC_DO(ck, t.release(&t));
  if (rc != QL_ENOTFOUND) {
    ql_check_violation(ck, "schema_provider.unknown_table", "table('%s') (not listed) returned %s: %s; expected "
                       "QL_ENOTFOUND", k_probe, ql_status_name(rc),
                       err.release && err.message ? err.message : "(no message)");
  }
  ql_check_error(ck, &err, rc, "schema provider table");
}

void ql_check_schema_provider(struct ql_checker *ck, const struct ql_item_info *item) {
  ql_check_note(ck, "schema provider '%s'", item->name);
  struct ql_table_spec spec = {0};
  if (ql_check_spec_options(ck, item->name, &spec) != QL_OK) return;
  const struct ql_plugin *pl = ck->plugin;
  struct ql_schema_provider sp = {0};
  struct ql_error err = {0};
  int rc;
  QLC_CALL(ck, rc, pl->schema_provider_open(pl, item->name, &spec.options, ql_ref_host_session(ck->host), &sp, &err));
  if (rc != QL_OK) report(ck, "open.schema_provider", item->name, rc, &err);
  ql_check_error(ck, &err, rc, "schema_provider_open");
  if (rc == QL_OK) {
    if (sp.table_count == NULL || sp.table_name == NULL || sp.table == NULL) {
      ql_check_violation(ck, "schema_provider.members", "'%s': table_count, table_name and table are required; "
                         "NULL:%s%s%s", item->name, sp.table_count ? "" : " table_count",
                         sp.table_name ? "" : " table_name", sp.table ? "" : " table");
    } else {
      check_schema_tables(ck, &sp);
    }
    QLC_RELEASED(ck, sp, "release.schema_provider", "schema_provider.members", item->name);
  }
  ql_table_spec_free(&spec);
  static const char *const k_probe = "qlink_check_no_such_schema";
  struct ql_schema_provider q = {0};
  QLC_CALL(ck, rc, pl->schema_provider_open(pl, k_probe, NULL, ql_ref_host_session(ck->host), &q, &err));
  if (rc == QL_OK && q.release) QLC_DO(ck, q.release(&q));
  check_unknown_name(ck, "schema_provider_open", k_probe, rc, &err);
}
