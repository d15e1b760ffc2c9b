/* SPDX-License-Identifier: Apache-2.0 */
/* qlink-check as a library: ql_check_plugin (qlink/lib/check.h), which
 * runs the checks of descriptor.c, exports.c, objects.c and tables.c, each
 * catalogue item in a forked child. Their report lines: report.c.
 *
 * Each broken rule is printed as one line "VIOLATION <rule>: <what>" on the
 * report stream and counted. The plugin runs under libqlink's reference host
 * and every call into it is bracketed by its executor hooks.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "checker.h"

#define QLC_DEFAULT_THREADS 4
#define QLC_BATCH_SIZE 64 /* small, so streams cross several batches */

static void check_item(struct ql_checker *ck, const struct ql_item_info *item) {
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

/* Load the plugin and a reference host, check catalogue items [first, last),
 * then unload and free the host (which fails if memory is still reserved).
 * Returns 0, or -1 if the plugin or the host could not be set up. */
static int check_items_in_host(struct ql_checker *ck, int32_t first, int32_t last) {
  struct ql_loaded_plugin *loaded = NULL;
  struct ql_error err = {0};
  if (ql_plugin_load(ck->path, &loaded, &err) != QL_OK) {
    ql_check_violation(ck, "load", "the loader refuses %s: %s", ck->path, ql_error_message(&err));
    ql_error_release(&err);
    return -1;
  }
  struct ql_ref_host_options ho = {-1, QLC_BATCH_SIZE, 2};
  if (ql_ref_host_new(&ho, &ck->host, &err) != QL_OK) {
    ql_check_violation(ck, "check.internal", "cannot create the reference host: %s", ql_error_message(&err));
    ql_error_release(&err);
    ql_plugin_unload(loaded);
    return -1;
  }
  ck->plugin = &loaded->plugin;
  for (int32_t i = first; i < last && i < ck->plugin->n_items; i++) check_item(ck, &ck->plugin->items[i]);
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

/* Negotiation and descriptor checks, then whether the loader accepts the
 * plugin. Returns 1 if it is loadable, with its catalogue size in *n_items. */
static int check_loadable(struct ql_checker *ck, int32_t *n_items) {
  *n_items = 0;
  if (ql_check_negotiation_and_descriptor(ck, ck->path) != 0) return 0;
  struct ql_loaded_plugin *loaded = NULL;
  struct ql_error err = {0};
  if (ql_plugin_load(ck->path, &loaded, &err) != QL_OK) {
    ql_check_violation(ck, "load", "the loader refuses %s: %s", ck->path, ql_error_message(&err));
    ql_error_release(&err);
    return 0;
  }
  *n_items = loaded->plugin.n_items;
  ql_plugin_unload(loaded);
  return 1;
}

/* ---------------------------------------------------------------- isolation */

struct child_result {
  int finished; /* the child reached its end (else it crashed) */
  int violations;
  int plugin_errors;
  int loadable;
  int32_t n_items;
};

#define QLC_SENTINEL "\nQLC_CHILD_DONE "

static void child_main(struct ql_checker *ck, int fd, int32_t item) {
  FILE *out = fdopen(fd, "w");
  if (out == NULL) _exit(111);
  ck->out = out;
  ck->violations = 0;
  ck->plugin_errors = 0;
  int loadable = 0;
  int32_t n_items = 0;
  if (item < 0) {
    loadable = check_loadable(ck, &n_items);
  } else {
    check_items_in_host(ck, item, item + 1);
  }
  fprintf(out, QLC_SENTINEL "%d %d %d %d\n", ck->violations, loadable, (int)n_items, ck->plugin_errors);
  fclose(out);
  _exit(0);
}

/* Relay a child's report to ck->out and read its result line. */
static void relay(struct ql_checker *ck, char *text, size_t n, struct child_result *res) {
  text[n] = '\0';
  char *sentinel = strstr(text, QLC_SENTINEL);
  if (sentinel) {
    *sentinel = '\0';
    res->finished = sscanf(sentinel + strlen(QLC_SENTINEL), "%d %d %d %d", &res->violations, &res->loadable,
                           &res->n_items, &res->plugin_errors) == 4;
  }
  fputs(text, ck->out);
}

/* Run item `item`'s checks (-1: the descriptor checks) in a forked child. */
static void run_child(struct ql_checker *ck, int32_t item, const char *what, struct child_result *res) {
  memset(res, 0, sizeof *res);
  int fds[2];
  fflush(ck->out);
  if (pipe(fds) != 0) {
    ql_check_violation(ck, "check.internal", "pipe: %s", strerror(errno));
    return;
  }
  pid_t pid = fork();
  if (pid < 0) {
    ql_check_violation(ck, "check.internal", "fork: %s", strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return;
  }
  if (pid == 0) {
    close(fds[0]);
    child_main(ck, fds[1], item);
  }
  close(fds[1]);
  size_t cap = 4096, n = 0;
  char *text = malloc(cap);
  ssize_t got;
  while (text && (got = read(fds[0], text + n, cap - 1 - n)) != 0) {
    if (got < 0) {
      if (errno == EINTR) continue;
      break;
    }
    n += (size_t)got;
    if (n + 1 == cap) {
      char *grown = realloc(text, cap * 2);
      if (grown == NULL) break;
      text = grown;
      cap *= 2;
    }
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (text) relay(ck, text, n, res);
  free(text);
  ck->violations += res->violations;
  ck->plugin_errors += res->plugin_errors;
  if (!res->finished) {
    if (WIFSIGNALED(status)) {
      ql_check_violation(ck, "crash", "%s: the plugin crashed the host with signal %d (%s)", what, WTERMSIG(status),
                         strsignal(WTERMSIG(status)));
    } else {
      ql_check_violation(ck, "crash", "%s: the host process died (exit status %d) before the checks finished", what,
                         WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
  }
}

static int check_isolated(struct ql_checker *ck) {
  struct child_result res;
  run_child(ck, -1, "negotiation and descriptor", &res);
  if (!res.finished || !res.loadable) return -1;
  for (int32_t i = 0; i < res.n_items; i++) {
    char what[64];
    snprintf(what, sizeof what, "catalogue item %d", (int)i);
    struct child_result item;
    run_child(ck, i, what, &item);
  }
  return 0;
}

int ql_check_plugin(const char *path, const struct ql_check_options *options) {
  struct ql_checker ck;
  memset(&ck, 0, sizeof ck);
  ck.out = options && options->out ? options->out : stdout;
  ck.verbose = options ? options->verbose : 0;
  ck.threads = options && options->threads > 0 ? options->threads : QLC_DEFAULT_THREADS;
  ck.path = path;
  ck.scan_label = "scan";
  ck.options = options;
  if (path == NULL) {
    ql_check_violation(&ck, "load", "no plugin path");
    return -1;
  }
  ql_check_exports(&ck, path);
  int rc;
  if (options && options->isolate) {
    rc = check_isolated(&ck);
  } else {
    int32_t n_items;
    rc = check_loadable(&ck, &n_items) ? check_items_in_host(&ck, 0, n_items) : -1;
  }
  free(ck.last_plugin_error);
  if (rc != 0) {
    fprintf(ck.out, "qlink-check: %s: %d violation(s); the plugin could not be loaded\n", path, ck.violations);
    return -1;
  }
  if (ck.plugin_errors > 0) {
    /* Not conforming-as-checked either: the skipped checks did not run. */
    fprintf(ck.out, "qlink-check: %s: %d violation(s), %d plugin error(s) (the checks that needed the failed rows were "
            "skipped)\n", path, ck.violations, ck.plugin_errors);
    return ck.violations + ck.plugin_errors;
  }
  fprintf(ck.out, "qlink-check: %s: %d violation(s)\n", path, ck.violations);
  return ck.violations;
}
