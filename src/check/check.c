/* qlink-check as a library: ql_check_plugin (qlink/lib/check.h).
 *
 * Each broken rule is printed as one line "VIOLATION <rule>: <what>" on the
 * report stream and counted. The plugin runs under libqlink's reference host
 * and every call into it is bracketed by its executor hooks.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "check_internal.h"

#define QLC_DEFAULT_THREADS 4
#define QLC_BATCH_SIZE 64 /* small, so streams cross several batches */

void ql_check_violation(struct ql_checker *ck, const char *rule, const char *fmt, ...) {
  ck->violations++;
  fprintf(ck->out, "VIOLATION %s: ", rule);
  va_list args;
  va_start(args, fmt);
  vfprintf(ck->out, fmt, args);
  va_end(args);
  fputc('\n', ck->out);
}

void ql_check_note(struct ql_checker *ck, const char *fmt, ...) {
  if (!ck->verbose) return;
  fputs("check ", ck->out);
  va_list args;
  va_start(args, fmt);
  vfprintf(ck->out, fmt, args);
  va_end(args);
  fputc('\n', ck->out);
}

int ql_check_spec_options(struct ql_checker *ck, const char *name, struct ql_table_spec *spec) {
  memset(spec, 0, sizeof *spec);
  const struct ql_check_options *o = ck->options;
  size_t len = strlen(name);
  for (int32_t i = 0; o && i < o->n_specs; i++) {
    const char *s = o->specs[i];
    if (strncmp(s, name, len) != 0 || (s[len] != '?' && s[len] != '\0')) continue;
    /* ql_table_spec_parse reads "PLUGIN/PROVIDER?..."; the plugin is known here. */
    size_t n = strlen(s) + 8;
    char *full = malloc(n);
    if (!full) return QL_ENOMEM;
    snprintf(full, n, "check/%s", s);
    struct ql_error err = {0};
    int rc = ql_table_spec_parse(full, spec, &err);
    free(full);
    if (rc != QL_OK) {
      ql_check_violation(ck, "check.spec", "cannot parse spec '%s': %s", s, ql_error_message(&err));
      ql_error_release(&err);
    }
    return rc;
  }
  return QL_OK;
}

static void check_items(struct ql_checker *ck) {
  const struct ql_plugin *p = ck->plugin;
  for (int32_t i = 0; i < p->n_items; i++) {
    const struct ql_item_info *item = &p->items[i];
    switch (item->kind) {
      case QL_ITEM_TABLE_PROVIDER: ql_check_table_provider(ck, item); break;
      case QL_ITEM_SCHEMA_PROVIDER: ql_check_schema_provider(ck, item); break;
      case QL_ITEM_SCALAR_FUNCTION:
      case QL_ITEM_AGGREGATE_FUNCTION:
      case QL_ITEM_WINDOW_FUNCTION:
      case QL_ITEM_TABLE_FUNCTION: ql_check_function(ck, item); break;
      case QL_ITEM_PLANNER: ql_check_planner(ck, item); break;
      default: ql_check_note(ck, "item '%s' of kind %d: nothing to check", item->name, item->kind); break;
    }
  }
}

static int run_under_host(struct ql_checker *ck, struct ql_loaded_plugin *loaded) {
  struct ql_ref_host_options ho = {-1, QLC_BATCH_SIZE, 2};
  struct ql_error err = {0};
  if (ql_ref_host_new(&ho, &ck->host, &err) != QL_OK) {
    ql_check_violation(ck, "check.internal", "cannot create the reference host: %s", ql_error_message(&err));
    ql_error_release(&err);
    return -1;
  }
  ck->plugin = &loaded->plugin;
  check_items(ck);
  const struct ql_memory_pool *pool = ql_ref_host_runtime_env(ck->host)->memory_pool;
  int64_t reserved = pool ? pool->reserved(pool) : 0;
  ql_plugin_unload(loaded);
  ck->plugin = NULL;
  if (ql_ref_host_free(ck->host, &err) != QL_OK) {
    ql_check_violation(ck, "memory.reservations", "after unloading: %s (%lld bytes were reserved before)",
                       ql_error_message(&err), (long long)reserved);
    ql_error_release(&err);
  }
  ck->host = NULL;
  return 0;
}

int ql_check_plugin(const char *path, const struct ql_check_options *options) {
  struct ql_checker ck;
  memset(&ck, 0, sizeof ck);
  ck.out = options && options->out ? options->out : stdout;
  ck.verbose = options ? options->verbose : 0;
  ck.threads = options && options->threads > 0 ? options->threads : QLC_DEFAULT_THREADS;
  ck.path = path;
  ck.options = options;
  if (path == NULL) {
    ql_check_violation(&ck, "load", "no plugin path");
    return -1;
  }
  ql_check_exports(&ck, path);
  int loadable = ql_check_descriptor(&ck, path) == 0;
  struct ql_loaded_plugin *loaded = NULL;
  struct ql_error err = {0};
  if (ql_plugin_load(path, &loaded, &err) != QL_OK) {
    ql_check_violation(&ck, "load", "the loader refuses %s: %s", path, ql_error_message(&err));
    ql_error_release(&err);
    loadable = 0;
  } else if (!loadable) {
    ql_plugin_unload(loaded);
  }
  if (!loadable || run_under_host(&ck, loaded) != 0) {
    fprintf(ck.out, "qlink-check: %s: %d violation(s); the plugin could not be loaded\n", path, ck.violations);
    return -1;
  }
  fprintf(ck.out, "qlink-check: %s: %d violation(s)\n", path, ck.violations);
  return ck.violations;
}
