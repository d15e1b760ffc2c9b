/* SPDX-License-Identifier: Apache-2.0 */
/* qls_call_test: a plugin for the SQLite host's tests of qlink_call (table
 * functions called through a virtual table). Not shipped.
 *
 *   echo(ARG, ...)  one row per argument: position (int64, 1-based),
 *                   format (utf8: the literal's Arrow format) and value
 *                   (utf8: int64 as %lld, float64 as %.17g, bool as
 *                   true/false, utf8 as is; NULL for a null literal), in
 *                   one partition of one batch, with exact row-count
 *                   statistics. Fails naming the argument if one is not a
 *                   literal or the list does not validate.
 *   fail(ARG, ...)  fails with "fail: refused 3 arguments (deliberately)".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/function.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/ir.h"
#include "qlink/lib/status.h"
#include "qlink/plugin.h"

static const struct ql_item_info k_items[] = {
    {QL_ITEM_TABLE_FUNCTION, 0, "echo", "one row per argument: position, format, value", NULL},
    {QL_ITEM_TABLE_FUNCTION, 0, "fail", "always fails", NULL},
};

struct qct_rows {
  int64_t n;
  int64_t *position;
  char **format, **value; /* value NULL: a null literal */
};

static void rows_free(struct qct_rows *r) {
  for (int64_t i = 0; i < r->n; i++) {
    free(r->format[i]);
    free(r->value[i]);
  }
  free(r->position);
  free(r->format);
  free(r->value);
  free(r);
}

static const char *const k_names[] = {"position", "format", "value"};
static const char *const k_formats[] = {"l", "u", "u"};

/* utf8 column `which` (1 format, 2 value) of the rows. */
static int text_column(const struct qct_rows *r, int which, struct ArrowArray *out, struct ql_error *error) {
  size_t bytes = 0;
  for (int64_t i = 0; i < r->n; i++) {
    const char *t = which == 1 ? r->format[i] : r->value[i];
    bytes += t ? strlen(t) : 0;
  }
  int32_t *offsets = malloc(sizeof *offsets * (size_t)(r->n + 1));
  char *data = malloc(bytes + 1);
  uint8_t *validity = calloc((size_t)(r->n / 8 + 1), 1);
  if (!offsets || !data || !validity) {
    free(offsets);
    free(data);
    free(validity);
    return ql_error_set(error, QL_ENOMEM, "out of memory");
  }
  int64_t nulls = 0;
  offsets[0] = 0;
  for (int64_t i = 0; i < r->n; i++) {
    const char *t = which == 1 ? r->format[i] : r->value[i];
    size_t len = t ? strlen(t) : 0;
    if (t) validity[i / 8] |= (uint8_t)(1u << (i % 8));
    else nulls++;
    memcpy(data + offsets[i], t ? t : "", len);
    offsets[i + 1] = offsets[i] + (int32_t)len;
  }
  return ql_array_init_binary(out, r->n, nulls, validity, offsets, data, error);
}

/* ---- the execution plan: one partition, the projected columns */

struct qct_plan {
  struct qct_rows *own; /* a copy of the provider's rows: a plan may outlive its provider */
  int32_t n_proj;
  int32_t proj[3];
};

static int plan_schema_of(const struct qct_plan *p, struct ArrowSchema *out, struct ql_error *error) {
  int rc = ql_schema_init_struct(out, "", p->n_proj, error);
  for (int32_t i = 0; rc == QL_OK && i < p->n_proj; i++)
    rc = ql_schema_init(out->children[i], k_formats[p->proj[i]], k_names[p->proj[i]],
                        p->proj[i] == 2 ? ARROW_FLAG_NULLABLE : 0, error);
  if (rc != QL_OK) ql_schema_release(out);
  return rc;
}

static const char *plan_name(const struct ql_execution_plan *self) {
  (void)self;
  return "EchoExec";
}
static const char *plan_display(const struct ql_execution_plan *self) {
  (void)self;
  return "echo";
}
static int plan_get_schema(const struct ql_execution_plan *self, struct ArrowSchema *out, struct ql_error *error) {
  return plan_schema_of(self->private_data, out, error);
}
static int plan_get_properties(const struct ql_execution_plan *self, struct ql_plan_properties *out,
                               struct ql_error *error) {
  (void)self;
  (void)error;
  out->boundedness = QL_BOUNDED;
  out->partition_count = 1;
  out->n_ordering = 0;
  out->ordering = NULL;
  return QL_OK;
}
static int64_t plan_child_count(const struct ql_execution_plan *self) {
  (void)self;
  return 0;
}
static const struct ql_execution_plan *plan_child(const struct ql_execution_plan *self, int64_t i) {
  (void)self;
  (void)i;
  return NULL;
}
static int plan_with_new_children(const struct ql_execution_plan *self, struct ql_execution_plan *children,
                                  int64_t n, struct ql_execution_plan *out, struct ql_error *error) {
  (void)self;
  (void)out;
  for (int64_t i = 0; i < n; i++)
    if (children[i].release) children[i].release(&children[i]);
  return ql_error_set(error, QL_ENOTSUP, "EchoExec has no children");
}

static int plan_execute(const struct ql_execution_plan *self, int64_t partition, const struct ql_task_context *ctx,
                        struct ArrowArrayStream *out, struct ql_error *error) {
  (void)ctx;
  const struct qct_plan *p = self->private_data;
  if (partition != 0) return ql_error_set(error, QL_EINVAL, "EchoExec has one partition, not %" PRId64, partition);
  struct ArrowSchema schema;
  struct ArrowArray batch;
  memset(&batch, 0, sizeof batch);
  int rc = plan_schema_of(p, &schema, error);
  if (rc != QL_OK) return rc;
  rc = ql_array_init_struct(&batch, p->own->n, p->n_proj, error);
  for (int32_t i = 0; rc == QL_OK && i < p->n_proj; i++) {
    if (p->proj[i] == 0) {
      int64_t *data = malloc(sizeof *data * (size_t)(p->own->n + 1));
      if (!data) rc = ql_error_set(error, QL_ENOMEM, "out of memory");
      else memcpy(data, p->own->position, sizeof *data * (size_t)p->own->n);
      if (rc == QL_OK) rc = ql_array_init_fixed(batch.children[i], p->own->n, 0, NULL, data, error);
    } else {
      rc = text_column(p->own, p->proj[i], batch.children[i], error);
    }
  }
  if (rc != QL_OK) {
    ql_schema_release(&schema);
    ql_array_release(&batch);
    return rc;
  }
  return ql_stream_from_arrays(&schema, &batch, 1, out, error);
}

static void plan_release(struct ql_execution_plan *self) {
  struct qct_plan *p = self->private_data;
  rows_free(p->own);
  free(p);
  self->release = NULL;
}

/* ---- the table provider */

static struct qct_rows *rows_copy(const struct qct_rows *r) {
  struct qct_rows *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->position = malloc(sizeof *c->position * (size_t)(r->n + 1));
  c->format = calloc((size_t)r->n + 1, sizeof *c->format);
  c->value = calloc((size_t)r->n + 1, sizeof *c->value);
  if (!c->position || !c->format || !c->value) {
    rows_free(c);
    return NULL;
  }
  for (int64_t i = 0; i < r->n; i++, c->n++) {
    c->position[i] = r->position[i];
    c->format[i] = strdup(r->format[i]);
    c->value[i] = r->value[i] ? strdup(r->value[i]) : NULL;
    if (!c->format[i] || (r->value[i] && !c->value[i])) {
      c->n++;
      rows_free(c);
      return NULL;
    }
  }
  return c;
}

static int tp_get_schema(const struct ql_table_provider *self, struct ArrowSchema *out, struct ql_error *error) {
  (void)self;
  struct qct_plan all = {NULL, 3, {0, 1, 2}};
  return plan_schema_of(&all, out, error);
}

static void stats_release(struct ql_statistics *self) { self->release = NULL; }

static int tp_get_statistics(const struct ql_table_provider *self, struct ql_statistics *out, struct ql_error *error) {
  (void)error;
  const struct qct_rows *r = self->private_data;
  out->num_rows_precision = QL_PRECISION_EXACT;
  out->num_rows = r->n;
  out->total_bytes_precision = QL_PRECISION_ABSENT;
  out->n_columns = 0;
  out->columns = NULL;
  out->release = stats_release;
  return QL_OK;
}

static int tp_scan(const struct ql_table_provider *self, const struct ql_session *session,
                   const struct ql_scan_args *args, struct ql_execution_plan *out, struct ql_error *error) {
  (void)session;
  struct qct_plan *p = calloc(1, sizeof *p);
  if (!p || !(p->own = rows_copy(self->private_data))) {
    free(p);
    return ql_error_set(error, QL_ENOMEM, "out of memory");
  }
  if (args->n_projection < 0) {
    p->n_proj = 3;
    for (int32_t i = 0; i < 3; i++) p->proj[i] = i;
  }
  for (int32_t i = 0; i < args->n_projection; i++) {
    if (i >= 3 || args->projection[i] < 0 || args->projection[i] > 2) {
      rows_free(p->own);
      free(p);
      return ql_error_set(error, QL_EINVAL, "echo: projection index out of range");
    }
    p->proj[p->n_proj++] = args->projection[i];
  }
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->name = plan_name;
  out->display = plan_display;
  out->get_schema = plan_get_schema;
  out->get_properties = plan_get_properties;
  out->child_count = plan_child_count;
  out->child = plan_child;
  out->with_new_children = plan_with_new_children;
  out->execute = plan_execute;
  out->release = plan_release;
  out->private_data = p;
  return QL_OK;
}

static void tp_release(struct ql_table_provider *self) {
  rows_free(self->private_data);
  self->release = NULL;
}

/* ---- the table functions */

static char *value_text(const struct ql_scalar *v) {
  char buf[64];
  if (v->is_null) return NULL;
  if (strcmp(v->format, "l") == 0) snprintf(buf, sizeof buf, "%" PRId64, v->value.i64);
  else if (strcmp(v->format, "g") == 0) snprintf(buf, sizeof buf, "%.17g", v->value.f64);
  else if (strcmp(v->format, "b") == 0) snprintf(buf, sizeof buf, "%s", v->value.i64 ? "true" : "false");
  else if (strcmp(v->format, "u") == 0) return strndup(v->value.bytes.data, (size_t)v->value.bytes.size);
  else snprintf(buf, sizeof buf, "(format %s)", v->format);
  return strdup(buf);
}

static int echo_call(const struct ql_table_function *self, const struct ql_session *session,
                     const struct ql_expr_list *args, struct ql_table_provider *out, struct ql_error *error) {
  (void)self;
  (void)session;
  int rc = ql_ir_validate_exprs(args->view, args->exprs, args->n_exprs, error);
  if (rc != QL_OK) return ql_error_prefix(error, "echo: the argument list");
  struct qct_rows *r = calloc(1, sizeof *r);
  if (r) {
    r->position = malloc(sizeof *r->position * (size_t)(args->n_exprs + 1));
    r->format = calloc((size_t)args->n_exprs + 1, sizeof *r->format);
    r->value = calloc((size_t)args->n_exprs + 1, sizeof *r->value);
  }
  if (!r || !r->position || !r->format || !r->value) {
    if (r) rows_free(r);
    return ql_error_set(error, QL_ENOMEM, "out of memory");
  }
  for (int32_t i = 0; i < args->n_exprs; i++) {
    const struct ql_expr *e = &args->view->exprs[args->exprs[i]];
    if (e->kind != QL_EXPR_LITERAL) {
      rows_free(r);
      return ql_error_set(error, QL_EINVAL, "echo: argument %d is a %s, not a literal", i + 1,
                          ql_expr_kind_name(e->kind));
    }
    r->n++;
    r->position[i] = i + 1;
    r->format[i] = strdup(e->literal.format);
    r->value[i] = value_text(&e->literal);
    if (!r->format[i] || (!e->literal.is_null && !r->value[i])) {
      rows_free(r);
      return ql_error_set(error, QL_ENOMEM, "out of memory");
    }
  }
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->table_type = QL_TABLE_BASE;
  out->get_schema = tp_get_schema;
  out->get_statistics = tp_get_statistics;
  out->scan = tp_scan;
  out->release = tp_release;
  out->private_data = r;
  return QL_OK;
}

static int fail_call(const struct ql_table_function *self, const struct ql_session *session,
                     const struct ql_expr_list *args, struct ql_table_provider *out, struct ql_error *error) {
  (void)self;
  (void)session;
  (void)out;
  return ql_error_set(error, QL_EINVAL, "fail: refused %d arguments (deliberately)", (int)args->n_exprs);
}

static void fn_release(struct ql_table_function *self) { self->release = NULL; }

static int open_table_function(const struct ql_plugin *self, const char *name, struct ql_table_function *out,
                               struct ql_error *error) {
  (void)self;
  int echo = name && strcmp(name, "echo") == 0;
  if (!echo && !(name && strcmp(name, "fail") == 0))
    return ql_error_set(error, QL_ENOTFOUND, "qls_call_test has no table function '%s'", name ? name : "(null)");
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->id = (struct ql_function_id){QL_ORIGIN_USER, QL_FUNCTION_TABLE, echo ? "echo" : "fail", "qls_call_test",
                                    echo ? 1u : 2u};
  out->call = echo ? echo_call : fail_call;
  out->release = fn_release;
  return QL_OK;
}

static void plugin_release(struct ql_plugin *self) { self->release = NULL; }

QL_PLUGIN_EXPORT int qlink_plugin_init(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error);

QL_PLUGIN_EXPORT int qlink_plugin_init(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error) {
  if (abi_version != QL_ABI_VERSION)
    return ql_error_set(error, QL_EVERSION, "qls_call_test serves ABI %u.%u only", QL_ABI_VERSION_MAJOR(QL_ABI_VERSION),
                        QL_ABI_VERSION_MINOR(QL_ABI_VERSION));
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  out->magic = QL_PLUGIN_MAGIC;
  out->abi_version = abi_version;
  out->n_items = (int32_t)(sizeof k_items / sizeof k_items[0]);
  out->name = "qls_call_test";
  out->version = "0.1.0";
  out->description = "table functions for the SQLite host's qlink_call tests";
  out->items = k_items;
  out->table_function_open = open_table_function;
  out->release = plugin_release;
  return QL_OK;
}
