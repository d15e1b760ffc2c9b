/* SPDX-License-Identifier: Apache-2.0 */
/* The conformance kit's driving helpers: collect a plugin's streams into
 * batches, read cells back, and print them (qlink/lib/check.h). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/arrow.h"
#include "qlink/lib/check.h"
#include "qlink/lib/host.h"
#include "checker.h"
#include "qlink/lib/status.h"

void ql_batches_free(struct ql_batches *b) {
  if (b == NULL) return;
  for (int64_t i = 0; i < b->n_batches; i++) ql_array_release(&b->batches[i]);
  free(b->batches);
  free(b->ends);
  ql_schema_release(&b->schema);
  memset(b, 0, sizeof *b);
}

int ql_check_batches_push(struct ql_batches *b, struct ArrowArray *batch, struct ql_error *error) {
  if (b->n_batches == b->capacity) {
    int64_t cap = b->capacity ? 2 * b->capacity : 16;
    struct ArrowArray *grown = realloc(b->batches, (size_t)cap * sizeof *grown);
    if (grown) b->batches = grown;
    int64_t *ends = grown ? realloc(b->ends, (size_t)cap * sizeof *ends) : NULL;
    if (!ends) return ql_error_set(error, QL_ENOMEM, "out of memory collecting %" PRId64 " batches", cap);
    b->ends = ends;
    b->capacity = cap;
  }
  ql_array_move(batch, &b->batches[b->n_batches]);
  b->n_rows += b->batches[b->n_batches].length;
  b->ends[b->n_batches++] = b->n_rows;
  return QL_OK;
}

static int stream_failed(const struct ql_plugin *plugin, struct ArrowArrayStream *stream, int code,
                         const char *what, struct ql_error *error) {
  void *token = ql_plugin_enter(plugin);
  const char *msg = stream->get_last_error ? stream->get_last_error(stream) : NULL;
  int rc = ql_error_set(error, ql_status_from_errno(code), "stream %s failed (errno-style code %d): %s", what, code,
                        msg ? msg : "(get_last_error gave no message)");
  ql_plugin_leave(plugin, token);
  return rc;
}

static void stream_release(const struct ql_plugin *plugin, struct ArrowArrayStream *stream) {
  void *token = ql_plugin_enter(plugin);
  if (stream->release) stream->release(stream);
  ql_plugin_leave(plugin, token);
}

static int collect(const struct ql_plugin *plugin, struct ArrowArrayStream *stream, struct ql_batches *out,
                   struct ql_error *error) {
  struct ArrowSchema schema = {0};
  void *token = ql_plugin_enter(plugin);
  int code = stream->get_schema(stream, &schema);
  ql_plugin_leave(plugin, token);
  if (code != 0) return stream_failed(plugin, stream, code, "get_schema", error);
  if (out->schema.release == NULL) {
    ql_schema_move(&schema, &out->schema);
  } else {
    ql_schema_release(&schema);
  }
  for (;;) {
    struct ArrowArray batch = {0};
    token = ql_plugin_enter(plugin);
    code = stream->get_next(stream, &batch);
    ql_plugin_leave(plugin, token);
    if (code != 0) return stream_failed(plugin, stream, code, "get_next", error);
    if (batch.release == NULL) return QL_OK;
    if (batch.n_children != out->schema.n_children || batch.length < 0) {
      int64_t n = batch.n_children;
      ql_array_release(&batch);
      return ql_error_set(error, QL_EDATA, "a batch has %" PRId64 " columns, the schema %" PRId64, n,
                          out->schema.n_children);
    }
    QL_RETURN_NOT_OK(ql_check_batches_push(out, &batch, error));
  }
}

int ql_batches_collect(const struct ql_plugin *plugin, struct ArrowArrayStream *stream, struct ql_batches *out,
                       struct ql_error *error) {
  if (stream == NULL || stream->release == NULL || out == NULL) {
    return ql_error_set(error, QL_EINVAL, "ql_batches_collect: a released stream or no output");
  }
  if (stream->get_schema == NULL || stream->get_next == NULL) {
    stream_release(plugin, stream);
    return ql_error_set(error, QL_EINVAL, "ql_batches_collect: the stream has no %s",
                        stream->get_schema ? "get_next" : "get_schema");
  }
  int rc = collect(plugin, stream, out, error);
  stream_release(plugin, stream);
  return rc;
}

int ql_batches_scan(const struct ql_plugin *plugin, const struct ql_table_provider *provider,
                    struct ql_ref_host *host, const struct ql_scan_args *args, struct ql_batches *out,
                    struct ql_error *error) {
  struct ql_scan_args all = {sizeof all, -1, NULL, {NULL, 0, 0, NULL}, -1};
  struct ql_execution_plan plan = {0};
  if (provider == NULL || provider->scan == NULL) {
    return ql_error_set(error, QL_EINVAL, "ql_batches_scan: the table provider has no scan");
  }
  void *token = ql_plugin_enter(plugin);
  int rc = provider->scan(provider, ql_ref_host_session(host), args ? args : &all, &plan, error);
  ql_plugin_leave(plugin, token);
  if (rc != QL_OK) return rc;
  if (plan.get_properties == NULL || plan.get_schema == NULL || plan.execute == NULL || plan.release == NULL) {
    rc = ql_error_set(error, QL_EINVAL, "ql_batches_scan: the plan lacks get_properties, get_schema, execute or release");
    if (plan.release) {
      token = ql_plugin_enter(plugin);
      plan.release(&plan);
      ql_plugin_leave(plugin, token);
    }
    return rc;
  }
  struct ql_plan_properties props = {0};
  token = ql_plugin_enter(plugin);
  rc = plan.get_properties(&plan, &props, error);
  ql_plugin_leave(plugin, token);
  if (rc == QL_OK && out->schema.release == NULL) {
    /* Even a scan of no partition has a schema. */
    token = ql_plugin_enter(plugin);
    rc = plan.get_schema(&plan, &out->schema, error);
    ql_plugin_leave(plugin, token);
  }
  for (int64_t p = 0; rc == QL_OK && p < props.partition_count; p++) {
    struct ql_task_context ctx;
    ql_ref_host_task_context(host, p, &ctx);
    struct ArrowArrayStream stream = {0};
    token = ql_plugin_enter(plugin);
    rc = plan.execute(&plan, p, &ctx, &stream, error);
    ql_plugin_leave(plugin, token);
    if (rc == QL_OK) rc = ql_batches_collect(plugin, &stream, out, error);
  }
  token = ql_plugin_enter(plugin);
  plan.release(&plan);
  ql_plugin_leave(plugin, token);
  return rc;
}

/* ---------------------------------------------------------------- cells */

/* The batch holding `row` and the row within it, or NULL: a binary search
 * of the batches' row ends, so reading every row is not quadratic in the
 * batch count (statistics and ordering checks read whole partitions). */
static const struct ArrowArray *locate(const struct ql_batches *b, int64_t column, int64_t *row) {
  if (column < 0 || column >= b->schema.n_children || *row < 0 || *row >= b->n_rows) return NULL;
  int64_t lo = 0, hi = b->n_batches - 1; /* the first batch whose end passes row */
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (b->ends[mid] > *row) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  *row -= lo > 0 ? b->ends[lo - 1] : 0;
  return &b->batches[lo];
}

/* Child `column` of a batch and its index for `row`, honouring both offsets. */
static const struct ArrowArray *cell(const struct ql_batches *b, int64_t column, int64_t row, int64_t *index) {
  const struct ArrowArray *batch = locate(b, column, &row);
  if (batch == NULL) return NULL;
  const struct ArrowArray *child = batch->children[column];
  int64_t i = batch->offset + row;
  if (!ql_array_is_valid(child, i)) return NULL;
  *index = child->offset + i;
  return child;
}

int ql_batches_i64(const struct ql_batches *b, int64_t column, int64_t row, int64_t *out) {
  int64_t i;
  const struct ArrowArray *c = cell(b, column, row, &i);
  if (c == NULL) return 0;
  const void *d = c->buffers[1];
  switch (b->schema.children[column]->format[0]) {
    case 'c': *out = ((const int8_t *)d)[i]; return 1;
    case 's': *out = ((const int16_t *)d)[i]; return 1;
    case 'i': *out = ((const int32_t *)d)[i]; return 1;
    case 'l': *out = ((const int64_t *)d)[i]; return 1;
    case 'C': *out = ((const uint8_t *)d)[i]; return 1;
    case 'S': *out = ((const uint16_t *)d)[i]; return 1;
    case 'I': *out = ((const uint32_t *)d)[i]; return 1;
    case 'L': *out = (int64_t)((const uint64_t *)d)[i]; return 1;
    case 'b': *out = (((const uint8_t *)d)[i / 8] >> (i % 8)) & 1; return 1;
    case 't': {
      /* Temporal types in their own unit: date32 ("tdD") and time32 ("tts",
       * "ttm") are 32-bit, every other temporal format 64-bit. */
      const char *f = b->schema.children[column]->format;
      int narrow = strcmp(f, "tdD") == 0 || strcmp(f, "tts") == 0 || strcmp(f, "ttm") == 0;
      if (f[1] != 'd' && f[1] != 't' && f[1] != 's' && f[1] != 'D') return 0;
      *out = narrow ? ((const int32_t *)d)[i] : ((const int64_t *)d)[i];
      return 1;
    }
    default: return 0;
  }
}

int ql_batches_f64(const struct ql_batches *b, int64_t column, int64_t row, double *out) {
  int64_t i;
  const struct ArrowArray *c = cell(b, column, row, &i);
  if (c == NULL) return 0;
  switch (b->schema.children[column]->format[0]) {
    case 'f': *out = ((const float *)c->buffers[1])[i]; return 1;
    case 'g': *out = ((const double *)c->buffers[1])[i]; return 1;
    default: {
      int64_t v;
      if (!ql_batches_i64(b, column, row, &v)) return 0;
      *out = (double)v;
      return 1;
    }
  }
}

int ql_batches_str(const struct ql_batches *b, int64_t column, int64_t row, const char **data, int64_t *size) {
  int64_t i;
  const char *f = column >= 0 && column < b->schema.n_children ? b->schema.children[column]->format : "";
  if (strcmp(f, "u") != 0 && strcmp(f, "z") != 0) return 0;
  const struct ArrowArray *c = cell(b, column, row, &i);
  if (c == NULL) return 0;
  const int32_t *offsets = c->buffers[1];
  *data = (const char *)c->buffers[2] + offsets[i];
  *size = offsets[i + 1] - offsets[i];
  return 1;
}

/* ---------------------------------------------------------------- print */

static void write_json_string(FILE *out, const char *s, int64_t n) {
  fputc('"', out);
  for (int64_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '"' || ch == '\\') {
      fprintf(out, "\\%c", ch);
    } else if (ch < 0x20) {
      fprintf(out, "\\u%04x", ch);
    } else {
      fputc(ch, out);
    }
  }
  fputc('"', out);
}

static void write_csv_string(FILE *out, const char *s, int64_t n) {
  if (memchr(s, ',', (size_t)n) == NULL && memchr(s, '"', (size_t)n) == NULL && memchr(s, '\n', (size_t)n) == NULL) {
    fwrite(s, 1, (size_t)n, out);
    return;
  }
  fputc('"', out);
  for (int64_t i = 0; i < n; i++) {
    if (s[i] == '"') fputc('"', out);
    fputc(s[i], out);
  }
  fputc('"', out);
}

/* One cell; returns 0 for NULL (nothing written). */
static int write_cell(const struct ql_batches *b, int64_t c, int64_t r, FILE *out, int json) {
  const char *f = b->schema.children[c]->format;
  int64_t v;
  double d;
  const char *s;
  int64_t n;
  if (strcmp(f, "b") == 0) {
    if (!ql_batches_i64(b, c, r, &v)) return 0;
    fputs(v ? "true" : "false", out);
  } else if (strchr("csilCSIL", f[0]) && f[1] == '\0') {
    if (!ql_batches_i64(b, c, r, &v)) return 0;
    if (f[0] == 'L') {
      fprintf(out, "%" PRIu64, (uint64_t)v);
    } else {
      fprintf(out, "%" PRId64, v);
    }
  } else if ((f[0] == 'f' || f[0] == 'g') && f[1] == '\0') {
    if (!ql_batches_f64(b, c, r, &d)) return 0;
    fprintf(out, "%.17g", d);
  } else if (ql_batches_str(b, c, r, &s, &n)) {
    if (json) {
      write_json_string(out, s, n);
    } else {
      write_csv_string(out, s, n);
    }
  } else {
    return 0;
  }
  return 1;
}

int ql_batches_write(const struct ql_batches *b, FILE *out, const char *format, struct ql_error *error) {
  int json = format && strcmp(format, "jsonl") == 0;
  if (!json && (format == NULL || strcmp(format, "csv") != 0)) {
    return ql_error_set(error, QL_EINVAL, "unknown output format '%s' (csv or jsonl)", format ? format : "(null)");
  }
  int64_t nc = b->schema.n_children;
  if (!json) {
    for (int64_t c = 0; c < nc; c++) fprintf(out, "%s%s", c ? "," : "", b->schema.children[c]->name);
    fputc('\n', out);
  }
  for (int64_t r = 0; r < b->n_rows; r++) {
    if (json) fputc('{', out);
    for (int64_t c = 0; c < nc; c++) {
      if (json) {
        fprintf(out, "%s", c ? "," : "");
        write_json_string(out, b->schema.children[c]->name, (int64_t)strlen(b->schema.children[c]->name));
        fputc(':', out);
        if (!write_cell(b, c, r, out, 1)) fputs("null", out);
      } else {
        if (c) fputc(',', out);
        write_cell(b, c, r, out, 0);
      }
    }
    fputs(json ? "}\n" : "\n", out);
  }
  return QL_OK;
}

/* ------------------------------------------------------------ comparing */

int ql_check_schema_equal(const struct ArrowSchema *a, const struct ArrowSchema *b) {
  if (strcmp(a->format ? a->format : "", b->format ? b->format : "") != 0) return 0;
  if (strcmp(a->name ? a->name : "", b->name ? b->name : "") != 0) return 0;
  if (a->n_children != b->n_children || a->flags != b->flags) return 0;
  for (int64_t i = 0; i < a->n_children; i++) {
    if (!ql_check_schema_equal(a->children[i], b->children[i])) return 0;
  }
  return 1;
}

static uint64_t fnv(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * UINT64_C(1099511628211);
  return h;
}

uint64_t ql_check_batches_hash(const struct ql_batches *b) {
  uint64_t h = UINT64_C(14695981039346656037);
  for (int64_t r = 0; r < b->n_rows; r++) {
    for (int64_t c = 0; c < b->schema.n_children; c++) {
      int64_t v;
      double d;
      const char *s;
      int64_t n;
      if (ql_batches_i64(b, c, r, &v)) {
        h = fnv(h, &v, sizeof v);
      } else if (ql_batches_f64(b, c, r, &d)) {
        h = fnv(h, &d, sizeof d);
      } else if (ql_batches_str(b, c, r, &s, &n)) {
        h = fnv(h, s, (size_t)n);
      } else {
        h = fnv(h, "\0null", 5);
      }
    }
  }
  return fnv(h, &b->n_rows, sizeof b->n_rows);
}
