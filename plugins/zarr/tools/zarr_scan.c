/* SPDX-License-Identifier: Apache-2.0 */
/* zarr-scan: scan one qlink_zarr table through libqlink's reference host
 * and print JSON lines: a header {"columns", "formats", "metadata",
 * "answers", "display", "partitions", "ordering": [[column, flags]...] (the
 * plan's order within each partition)}, one JSON array per row, then
 * {"stats": ...}.
 *
 *   zarr-scan PATH [--table T] [--tables OLD=NEW,...] [--columns a,b]
 *             [--where FILTER]... [--limit N] [--batch N] [--partitions N]
 *             [--block-rows N] [--list] [--dump DIR]
 *
 * --block-rows N passes the table option block_rows (default: the plugin's).
 *
 * --partitions N sets the session's qlink.execution.target_partitions
 * (default: the reference host's 2 threads). The summary lists each
 * partition's exact row count ("partition_rows").
 *
 * --dump DIR writes column i of fixed-width types as DIR/<i>.bin (values,
 * native order; booleans one byte each) and DIR/<i>.valid (one byte per
 * row) instead of printing rows.
 *
 * FILTER: "col OP LIT" (OP: = != < <= > >=), "col between LIT LIT",
 * "col notbetween LIT LIT", "col in LIT,LIT", "col notin LIT,LIT",
 * "not FILTER", "FILTER or FILTER" (one level). LIT: an integer (int64), a
 * number with '.', 'e', nan or inf (float64), ts:<ns> / tss:<s> / tsms:<ms>
 * (timestamps), date:<days>, dur:<ns>. Floats print with 17 digits, NaN as
 * NaN, binary as hex, timestamps and durations as integers.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/arrow.h"
#include "qlink/lib/host.h"
#include "qlink/lib/ir.h"
#include "qlink/lib/status.h"
#include "qlink/qlink.h"

int qlink_plugin_init(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error);

static int fail(struct ql_error *err, const char *what) {
  fprintf(stderr, "zarr-scan: %s: %s\n", what, ql_error_message(err));
  ql_error_release(err);
  return 1;
}

static void json_string(const char *s, int64_t n) {
  putchar('"');
  for (int64_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') {
      printf("\\%c", c);
    } else if (c < 0x20) {
      printf("\\u%04x", c);
    } else {
      putchar(c);
    }
  }
  putchar('"');
}

/* Every key/value pair of a field's metadata (Arrow's encoding: int32
 * count, then int32-length-prefixed key and value), as JSON members. */
static void print_metadata(const char *m) {
  if (!m) return;
  int32_t n, len;
  memcpy(&n, m, 4);
  size_t pos = 4;
  for (int32_t i = 0; i < n; i++) {
    printf("%s", i ? ", " : "");
    for (int part = 0; part < 2; part++) {
      memcpy(&len, m + pos, 4);
      json_string(m + pos + 4, len);
      pos += 4 + (size_t)len;
      if (part == 0) printf(": ");
    }
  }
}

static void print_double(double v) {
  if (isnan(v)) {
    printf("NaN");
  } else if (isinf(v)) {
    printf(v > 0 ? "Infinity" : "-Infinity");
  } else {
    printf("%.17g", v);
  }
}

static void print_cell(const char *fmt, const struct ArrowArray *a, int64_t i) {
  if (!ql_array_is_valid(a, i)) {
    printf("null");
    return;
  }
  int64_t k = i + a->offset;
  const void *d = a->buffers[1];
  switch (fmt[0]) {
    case 'b': printf("%s", (((const uint8_t *)d)[k / 8] >> (k % 8)) & 1 ? "true" : "false"); return;
    case 'c': printf("%d", ((const int8_t *)d)[k]); return;
    case 's': printf("%d", ((const int16_t *)d)[k]); return;
    case 'i': printf("%d", ((const int32_t *)d)[k]); return;
    case 'l': printf("%" PRId64, ((const int64_t *)d)[k]); return;
    case 'C': printf("%u", ((const uint8_t *)d)[k]); return;
    case 'S': printf("%u", ((const uint16_t *)d)[k]); return;
    case 'I': printf("%u", ((const uint32_t *)d)[k]); return;
    case 'L': printf("%" PRIu64, ((const uint64_t *)d)[k]); return;
    case 'f': print_double(((const float *)d)[k]); return;
    case 'g': print_double(((const double *)d)[k]); return;
    case 't': printf("%" PRId64, ((const int64_t *)d)[k]); return;
    case 'u':
    case 'z': {
      const int32_t *off = a->buffers[1];
      const char *data = a->buffers[2];
      if (fmt[0] == 'u') {
        json_string(data + off[k], off[k + 1] - off[k]);
      } else {
        putchar('"');
        for (int32_t j = off[k]; j < off[k + 1]; j++) printf("%02x", (unsigned char)data[j]);
        putchar('"');
      }
      return;
    }
    default: printf("\"?\"");
  }
}

static int dump_column(FILE *data, FILE *valid, const char *fmt, const struct ArrowArray *a) {
  int64_t width = fmt[0] == 'b' ? 0 : ql_format_byte_width(fmt);
  if (width < 0 || fmt[0] == 'u' || fmt[0] == 'z') return 1;
  uint8_t *bytes = malloc((size_t)a->length + 1);
  if (!bytes) return 1;
  for (int64_t r = 0; r < a->length; r++) bytes[r] = (uint8_t)ql_array_is_valid(a, r);
  fwrite(bytes, 1, (size_t)a->length, valid);
  if (width == 0) {
    const uint8_t *bits = a->buffers[1];
    for (int64_t r = 0; r < a->length; r++) {
      int64_t k = r + a->offset;
      bytes[r] = (bits[k / 8] >> (k % 8)) & 1;
    }
    fwrite(bytes, 1, (size_t)a->length, data);
  } else {
    fwrite((const uint8_t *)a->buffers[1] + a->offset * width, (size_t)width, (size_t)a->length, data);
  }
  free(bytes);
  return 0;
}

static ql_expr_id literal(struct ql_ir_builder *b, const char *text) {
  struct ql_scalar s;
  memset(&s, 0, sizeof(s));
  const char *colon = strchr(text, ':');
  if (colon) {
    static const struct {
      const char *prefix, *format;
    } kinds[] = {{"ts", "tsn:"}, {"tss", "tss:"}, {"tsms", "tsm:"}, {"date", "tdD"}, {"dur", "tDn"}};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
      if ((size_t)(colon - text) == strlen(kinds[i].prefix) && strncmp(text, kinds[i].prefix, (size_t)(colon - text)) == 0) {
        s.format = kinds[i].format;
        s.value.i64 = strtoll(colon + 1, NULL, 10);
        return ql_ir_literal(b, &s);
      }
    }
  }
  if (strpbrk(text, ".eEnNiI")) return ql_ir_literal_f64(b, strtod(text, NULL));
  return ql_ir_literal_i64(b, strtoll(text, NULL, 10));
}

static int64_t find_column(const struct ArrowSchema *schema, const char *name) { return ql_schema_find(schema, name); }

static ql_expr_id parse_filter(struct ql_ir_builder *b, const struct ArrowSchema *schema, char *text) {
  char *or = strstr(text, " or ");
  if (or) {
    *or = '\0';
    ql_expr_id l = parse_filter(b, schema, text);
    ql_expr_id r = parse_filter(b, schema, or + 4);
    return ql_ir_binary(b, QL_OP_OR, l, r);
  }
  if (strncmp(text, "not ", 4) == 0) return ql_ir_unary(b, QL_EXPR_NOT, parse_filter(b, schema, text + 4));
  char col[256], op[32], rest[4096];
  if (sscanf(text, "%255s %31s %4095[^\n]", col, op, rest) != 3) return -1;
  int64_t ci = find_column(schema, col);
  ql_expr_id c = ql_ir_column(b, col, NULL, (int32_t)ci);
  static const struct {
    const char *sym;
    int32_t op;
  } ops[] = {{"=", QL_OP_EQ}, {"!=", QL_OP_NE}, {"<", QL_OP_LT}, {"<=", QL_OP_LE}, {">", QL_OP_GT}, {">=", QL_OP_GE}};
  for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
    if (strcmp(op, ops[i].sym) == 0) return ql_ir_binary(b, ops[i].op, c, literal(b, rest));
  }
  struct ql_expr e;
  memset(&e, 0, sizeof(e));
  ql_expr_id args[256];
  int32_t n = 0;
  args[n++] = c;
  if (strcmp(op, "between") == 0 || strcmp(op, "notbetween") == 0) {
    char lo[128], hi[128];
    if (sscanf(rest, "%127s %127s", lo, hi) != 2) return -1;
    args[n++] = literal(b, lo);
    args[n++] = literal(b, hi);
    e.kind = QL_EXPR_BETWEEN;
    e.flags = op[0] == 'n' ? QL_EXPR_NEGATED : 0;
  } else if (strcmp(op, "in") == 0 || strcmp(op, "notin") == 0) {
    char *save = NULL;
    for (char *t = strtok_r(rest, ",", &save); t && n < 255; t = strtok_r(NULL, ",", &save)) args[n++] = literal(b, t);
    e.kind = QL_EXPR_IN_LIST;
    e.flags = op[0] == 'n' ? QL_EXPR_NEGATED : 0;
  } else {
    return -1;
  }
  e.n_args = n;
  e.args = args;
  e.column_index = -1;
  e.filter = -1;
  return ql_ir_expr(b, &e);
}

static void print_scalar(const struct ql_scalar *s, int precision) {
  if (precision == QL_PRECISION_ABSENT || s->is_null || !s->format) {
    printf("null");
    return;
  }
  if (s->format[0] == 'f' || s->format[0] == 'g') {
    print_double(s->value.f64);
  } else if (strchr("CSIL", s->format[0])) {
    printf("%" PRIu64, s->value.u64);
  } else {
    printf("%" PRId64, s->value.i64);
  }
}

static void print_stats(const char *label, const struct ql_statistics *st, const struct ArrowSchema *schema) {
  printf("{\"%s\": {\"num_rows\": %" PRId64 ", \"exact\": %s, \"min\": {", label, st->num_rows,
         st->num_rows_precision == QL_PRECISION_EXACT ? "true" : "false");
  for (int64_t i = 0; i < st->n_columns; i++) {
    printf("%s\"%s\": ", i ? ", " : "", schema->children[i]->name);
    print_scalar(&st->columns[i].min, st->columns[i].min_max_precision);
  }
  printf("}, \"max\": {");
  for (int64_t i = 0; i < st->n_columns; i++) {
    printf("%s\"%s\": ", i ? ", " : "", schema->children[i]->name);
    print_scalar(&st->columns[i].max, st->columns[i].min_max_precision);
  }
  printf("}}}\n");
}

struct request {
  const char *path, *table, *tables, *columns;
  const char *const *wheres;
  int n_where, list;
  int64_t limit;
  const char *dump;
  const char *block_rows;
};

static void print_header(const struct ql_execution_plan *plan, const struct ArrowSchema *out_schema,
                         const int32_t *answers, int n_where, const struct ql_plan_properties *props) {
  printf("{\"columns\": [");
  for (int64_t i = 0; i < out_schema->n_children; i++) {
    printf("%s", i ? ", " : "");
    json_string(out_schema->children[i]->name, (int64_t)strlen(out_schema->children[i]->name));
  }
  printf("], \"formats\": [");
  for (int64_t i = 0; i < out_schema->n_children; i++) printf("%s\"%s\"", i ? ", " : "", out_schema->children[i]->format);
  printf("], \"metadata\": {");
  for (int64_t i = 0; i < out_schema->n_children; i++) {
    printf("%s\"%s\": {", i ? ", " : "", out_schema->children[i]->name);
    print_metadata(out_schema->children[i]->metadata);
    printf("}");
  }
  printf("}, \"answers\": [");
  for (int i = 0; i < n_where; i++) printf("%s%d", i ? ", " : "", answers[i]);
  printf("], \"name\": \"%s\", \"display\": ", plan->name(plan));
  json_string(plan->display(plan), (int64_t)strlen(plan->display(plan)));
  printf(", \"partitions\": %" PRId64 ", \"ordering\": [", props->partition_count);
  for (int64_t i = 0; i < props->n_ordering; i++) {
    printf("%s[%d, %d]", i ? ", " : "", props->ordering[i].column, props->ordering[i].flags);
  }
  printf("]}\n");
}

static int list_tables(const struct ql_plugin *plugin, const struct ql_session *session, struct ql_options *opts) {
  struct ql_error err;
  memset(&err, 0, sizeof(err));
  struct ql_schema_provider sp;
  if (plugin->schema_provider_open(plugin, "store", opts, session, &sp, &err) != QL_OK) return fail(&err, "open");
  printf("{\"tables\": [");
  for (int64_t i = 0; i < sp.table_count(&sp); i++) printf("%s\"%s\"", i ? ", " : "", sp.table_name(&sp, i));
  printf("]}\n");
  sp.release(&sp);
  return 0;
}

/* Execute every partition, printing rows (or dumping columns). */
static int run_partitions(struct ql_ref_host *host, const struct ql_execution_plan *plan,
                          const struct ArrowSchema *out_schema, int64_t partitions, FILE **dump_files,
                          int64_t *rows, int64_t *batches, int64_t *max_batch) {
  struct ql_error err;
  memset(&err, 0, sizeof(err));
  for (int64_t p = 0; p < partitions; p++) {
    struct ql_task_context ctx;
    ql_ref_host_task_context(host, p, &ctx);
    struct ArrowArrayStream stream;
    if (plan->execute(plan, p, &ctx, &stream, &err) != QL_OK) return fail(&err, "execute");
    int status = 0;
    while (status == 0) {
      struct ArrowArray batch_arr;
      if (stream.get_next(&stream, &batch_arr) != 0) {
        fprintf(stderr, "zarr-scan: %s\n", stream.get_last_error(&stream));
        status = 1;
        break;
      }
      if (!batch_arr.release) break;
      (*batches)++;
      if (batch_arr.length > *max_batch) *max_batch = batch_arr.length;
      for (int64_t c = 0; dump_files && c < batch_arr.n_children && c < 256; c++) {
        if (dump_column(dump_files[2 * c], dump_files[2 * c + 1], out_schema->children[c]->format,
                        batch_arr.children[c])) {
          fprintf(stderr, "zarr-scan: --dump supports fixed-width columns only\n");
          status = 1;
        }
      }
      for (int64_t r = 0; !dump_files && r < batch_arr.length; r++) {
        putchar('[');
        for (int64_t c = 0; c < batch_arr.n_children; c++) {
          if (c) printf(", ");
          print_cell(out_schema->children[c]->format, batch_arr.children[c], r);
        }
        printf("]\n");
      }
      *rows += batch_arr.length;
      batch_arr.release(&batch_arr);
    }
    stream.release(&stream);
    if (status) return status;
  }
  return 0;
}

static int print_summary(const struct ql_table_provider *tp, const struct ql_execution_plan *plan,
                         const struct ArrowSchema *schema, const struct ArrowSchema *out_schema, int64_t rows,
                         int64_t batches, int64_t max_batch) {
  struct ql_error err;
  memset(&err, 0, sizeof(err));
  struct ql_statistics st;
  if (plan->get_statistics(plan, -1, &st, &err) != QL_OK) return fail(&err, "statistics");
  print_stats("plan_stats", &st, out_schema);
  st.release(&st);
  struct ql_plan_properties props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  if (plan->get_properties(plan, &props, &err) != QL_OK) return fail(&err, "properties");
  printf("{\"partition_rows\": [");
  for (int64_t p = 0; p < props.partition_count; p++) {
    if (plan->get_statistics(plan, p, &st, &err) != QL_OK) return fail(&err, "statistics");
    printf("%s%" PRId64, p ? ", " : "", st.num_rows);
    st.release(&st);
  }
  printf("]}\n");
  if (tp->get_statistics(tp, &st, &err) != QL_OK) return fail(&err, "statistics");
  print_stats("table_stats", &st, schema);
  st.release(&st);
  struct ql_metrics m;
  if (plan->get_metrics(plan, &m, &err) != QL_OK) return fail(&err, "metrics");
  printf("{\"metrics\": {");
  for (int64_t i = 0; i < m.count; i++) printf("%s\"%s\": %" PRId64, i ? ", " : "", m.items[i].name, m.items[i].value);
  printf(", \"rows\": %" PRId64 ", \"batches\": %" PRId64 ", \"max_batch\": %" PRId64 "}}\n", rows, batches, max_batch);
  m.release(&m);
  return 0;
}

static int run(const struct ql_plugin *plugin, struct ql_ref_host *host, const struct request *req) {
  struct ql_error err;
  memset(&err, 0, sizeof(err));
  const struct ql_session *session = ql_ref_host_session(host);
  const char *keys[4] = {"path"}, *values[4] = {req->path};
  int64_t n_opt = 1;
  if (req->tables) {
    keys[n_opt] = "tables";
    values[n_opt++] = req->tables;
  }
  if (req->block_rows) {
    keys[n_opt] = "block_rows";
    values[n_opt++] = req->block_rows;
  }
  if (req->list) {
    struct ql_options opts = {n_opt, keys, values};
    return list_tables(plugin, session, &opts);
  }
  if (req->table) {
    keys[n_opt] = "table";
    values[n_opt++] = req->table;
  }
  struct ql_options opts = {n_opt, keys, values};
  struct ql_table_provider tp;
  struct ArrowSchema schema, out_schema;
  struct ql_plan_view view;
  struct ql_execution_plan plan;
  struct ql_ir_builder *b = NULL;
  FILE *dump_files[2 * 256] = {0};
  memset(&tp, 0, sizeof(tp));
  memset(&schema, 0, sizeof(schema));
  memset(&out_schema, 0, sizeof(out_schema));
  memset(&view, 0, sizeof(view));
  memset(&plan, 0, sizeof(plan));
  int status = 1;
  ql_expr_id roots[64];
  int32_t answers[64] = {0};
  int32_t proj[256], n_proj = -1;
  if (plugin->table_provider_open(plugin, "table", &opts, session, &tp, &err) != QL_OK) {
    status = fail(&err, "open");
    goto done;
  }
  if (tp.get_schema(&tp, &schema, &err) != QL_OK) {
    status = fail(&err, "schema");
    goto done;
  }
  if (req->columns) {
    n_proj = 0;
    char *copy = strdup(req->columns), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t && n_proj < 256; t = strtok_r(NULL, ",", &save)) {
      proj[n_proj++] = (int32_t)ql_schema_find(&schema, t);
    }
    free(copy);
  }
  if (ql_ir_builder_new(&b, &err) != QL_OK) {
    status = fail(&err, "builder");
    goto done;
  }
  for (int i = 0; i < req->n_where; i++) {
    char *copy = strdup(req->wheres[i]);
    roots[i] = parse_filter(b, &schema, copy);
    free(copy);
    if (roots[i] < 0) {
      fprintf(stderr, "zarr-scan: cannot parse filter '%s'\n", req->wheres[i]);
      status = 2;
      goto done;
    }
  }
  if (ql_ir_builder_finish(b, -1, &view, &err) != QL_OK) {
    status = fail(&err, "filters");
    goto done;
  }
  struct ql_expr_list fl = {&view, req->n_where, 0, roots};
  if (req->n_where && tp.supports_filters(&tp, &fl, answers, &err) != QL_OK) {
    status = fail(&err, "supports_filters");
    goto done;
  }
  struct ql_scan_args args;
  memset(&args, 0, sizeof(args));
  args.struct_size = sizeof(args);
  args.n_projection = n_proj;
  args.projection = proj;
  args.filters = fl;
  args.limit = req->limit;
  if (tp.scan(&tp, session, &args, &plan, &err) != QL_OK) {
    status = fail(&err, "scan");
    goto done;
  }
  if (plan.get_schema(&plan, &out_schema, &err) != QL_OK) {
    status = fail(&err, "plan schema");
    goto done;
  }
  struct ql_plan_properties props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  if (plan.get_properties(&plan, &props, &err) != QL_OK) {
    status = fail(&err, "properties");
    goto done;
  }
  print_header(&plan, &out_schema, answers, req->n_where, &props);
  for (int64_t c = 0; req->dump && c < out_schema.n_children && c < 256; c++) {
    char name[4096];
    snprintf(name, sizeof(name), "%s/%lld.bin", req->dump, (long long)c);
    dump_files[2 * c] = fopen(name, "wb");
    snprintf(name, sizeof(name), "%s/%lld.valid", req->dump, (long long)c);
    dump_files[2 * c + 1] = fopen(name, "wb");
    if (!dump_files[2 * c] || !dump_files[2 * c + 1]) {
      fprintf(stderr, "zarr-scan: cannot write %s\n", name);
      goto done;
    }
  }
  int64_t rows = 0, batches = 0, max_batch = 0;
  status = run_partitions(host, &plan, &out_schema, props.partition_count, req->dump ? dump_files : NULL, &rows,
                          &batches, &max_batch);
  if (status == 0) status = print_summary(&tp, &plan, &schema, &out_schema, rows, batches, max_batch);
done:
  for (int64_t c = 0; c < 2 * 256; c++) {
    if (dump_files[c]) fclose(dump_files[c]);
  }
  ql_ir_builder_free(b);
  ql_schema_release(&out_schema);
  if (plan.release) plan.release(&plan);
  if (view.release) view.release(&view);
  ql_schema_release(&schema);
  if (tp.release) tp.release(&tp);
  return status;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: zarr-scan PATH [--table T] [--tables R] [--columns a,b] [--where F]... [--limit N] [--batch N]\n"
                    "                 [--partitions N] [--block-rows N] [--list] [--dump DIR]\n");
    return 2;
  }
  const char *path = argv[1], *table = NULL, *tables = NULL, *columns = NULL, *dump = NULL;
  const char *wheres[64];
  int n_where = 0, list = 0;
  int64_t limit = -1, batch = 0;
  const char *partitions = NULL, *block_rows = NULL;
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--list") == 0) {
      list = 1;
    } else if (i + 1 < argc && strcmp(argv[i], "--dump") == 0) {
      dump = argv[++i];
    } else if (i + 1 < argc && strcmp(argv[i], "--table") == 0) {
      table = argv[++i];
    } else if (i + 1 < argc && strcmp(argv[i], "--tables") == 0) {
      tables = argv[++i];
    } else if (i + 1 < argc && strcmp(argv[i], "--columns") == 0) {
      columns = argv[++i];
    } else if (i + 1 < argc && strcmp(argv[i], "--where") == 0 && n_where < 64) {
      wheres[n_where++] = argv[++i];
    } else if (i + 1 < argc && strcmp(argv[i], "--limit") == 0) {
      limit = strtoll(argv[++i], NULL, 10);
    } else if (i + 1 < argc && strcmp(argv[i], "--batch") == 0) {
      batch = strtoll(argv[++i], NULL, 10);
    } else if (i + 1 < argc && strcmp(argv[i], "--partitions") == 0) {
      partitions = argv[++i];
    } else if (i + 1 < argc && strcmp(argv[i], "--block-rows") == 0) {
      block_rows = argv[++i];
    } else {
      fprintf(stderr, "zarr-scan: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  struct ql_error err;
  memset(&err, 0, sizeof(err));
  struct ql_plugin plugin;
  if (qlink_plugin_init(QL_ABI_VERSION, &plugin, &err) != QL_OK) return fail(&err, "init");
  struct ql_ref_host_options ho = {-1, batch, 2};
  struct ql_ref_host *host = NULL;
  if (ql_ref_host_new(&ho, &host, &err) != QL_OK) return fail(&err, "host");
  if (partitions &&
      ql_ref_host_config_set(host, "qlink.execution.target_partitions", partitions, &err) != QL_OK) {
    struct ql_error ignored;
    memset(&ignored, 0, sizeof(ignored));
    ql_ref_host_free(host, &ignored);
    ql_error_release(&ignored);
    return fail(&err, "host");
  }
  struct request req = {path, table, tables, columns, wheres, n_where, list, limit, dump, block_rows};
  int status = run(&plugin, host, &req);
  plugin.release(&plugin);
  if (ql_ref_host_free(host, &err) != QL_OK) return fail(&err, "host");
  return status;
}
