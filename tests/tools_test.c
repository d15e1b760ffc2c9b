/* SPDX-License-Identifier: Apache-2.0 */
/* The command-line tools as a user runs them: qlink-host-c's list, scan and
 * plan output compared exactly, and qlink-check's exit status and report
 * on the sample plugin and on every broken plugin. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "ql_test.h"

static const char *g_build;

/* Run a shell command, capture stdout into *out (malloc'd); the exit status. */
static int run(const char *cmd, char **out) {
  FILE *p = popen(cmd, "r");
  size_t cap = 1 << 16, n = 0;
  *out = calloc(cap, 1);
  if (!p || !*out) return -1;
  size_t got;
  while ((got = fread(*out + n, 1, cap - 1 - n, p)) > 0) {
    n += got;
    if (n == cap - 1) {
      char *grown = realloc(*out, cap * 2);
      if (!grown) break;
      memset(grown + cap, 0, cap);
      *out = grown;
      cap *= 2;
    }
  }
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int host(const char *args, char **out) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "%s/tools/qlink-host-c %s 2>/dev/null", g_build, args);
  return run(cmd, out);
}

static void expect_host(const char *args, const char *want) {
  char *out = NULL;
  QL_CHECK_INT(host(args, &out), 0);
  QL_CHECK_STR(out, want);
  free(out);
}

static void expect_check(const char *plugin, const char *spec, int want_status, const char *rule) {
  char cmd[4096], *out = NULL;
  snprintf(cmd, sizeof cmd, "%s/tools/qlink-check %s/plugins/%s.so %s%s%s 2>&1", g_build, g_build, plugin,
           spec ? "--spec '" : "", spec ? spec : "", spec ? "'" : "");
  int status = run(cmd, &out);
  QL_CHECK_INT(status, want_status);
  if (rule) {
    char line[128];
    snprintf(line, sizeof line, "VIOLATION %s:", rule);
    QL_CHECK(strstr(out, line) != NULL);
  } else {
    QL_CHECK(strstr(out, "VIOLATION") == NULL);
  }
  if ((status != want_status) || (rule && !strstr(out, rule))) fprintf(stderr, "%s:\n%s\n", cmd, out);
  free(out);
}

int main(void) {
  g_build = getenv("QL_BUILD_DIR");
  if (g_build == NULL) g_build = ".";
  char so[4096], args[8192];
  snprintf(so, sizeof so, "%s/plugins/qlink_sample.so", g_build);

  /* Filters the plugin applies exactly, with a projection. */
  snprintf(args, sizeof args, "scan %s 'series?stop=100&step=3' --columns square --where 'value >= 10' --where 'value < 40'", so);
  expect_host(args, "square\n144\n225\n324\n441\n576\n729\n900\n1089\n1296\n1521\n");
  /* A filter the plugin does not support: the host applies it, then the limit. */
  snprintf(args, sizeof args, "scan %s 'series?stop=100&step=3' --columns value --where 'square > 200' --where 'value < 40' --limit 3", so);
  expect_host(args, "value\n15\n18\n21\n");
  snprintf(args, sizeof args, "scan %s 'series?start=5&stop=8&partitions=2' --format jsonl --limit 2", so);
  expect_host(args, "{\"value\":5,\"square\":25,\"parity\":\"odd\"}\n{\"value\":6,\"square\":36,\"parity\":\"even\"}\n");
  snprintf(args, sizeof args, "scan %s 'series?start=-2&stop=3&partitions=3'", so);
  expect_host(args, "value,square,parity\n-2,4,even\n-1,1,odd\n0,0,even\n1,1,odd\n2,4,even\n");

  /* Bad input: an error, not a crash. */
  char *out = NULL;
  snprintf(args, sizeof args, "scan %s 'series?stop=10&bogus=1'", so);
  QL_CHECK_INT(host(args, &out), 1);
  free(out);
  snprintf(args, sizeof args, "scan %s 'series?stop=10' --where 'nope = 1'", so);
  QL_CHECK_INT(host(args, &out), 1);
  free(out);

  snprintf(args, sizeof args, "list %s", so);
  QL_CHECK_INT(host(args, &out), 0);
  QL_CHECK(strstr(out, "plugin qlink_sample 0.1.0 (ABI 0.1)") != NULL);
  QL_CHECK(strstr(out, "table_provider     series") != NULL);
  QL_CHECK(strstr(out, "planner            drop_true_filters") != NULL);
  QL_CHECK(strstr(out, "option stop") != NULL);
  free(out);

  snprintf(args, sizeof args, "plan %s decline_all", so);
  QL_CHECK_INT(host(args, &out), 0);
  QL_CHECK(strstr(out, "planner decline_all: DECLINE\n") != NULL);
  free(out);
  snprintf(args, sizeof args, "plan %s drop_true_filters", so);
  QL_CHECK_INT(host(args, &out), 0);
  QL_CHECK(strstr(out, "planner drop_true_filters: REWRITE node 2\n") != NULL);
  /* The spliced plan: the Limit now reads the real filter, no TRUE filter is left. */
  const char *after = strstr(out, "plan after the rewrite:\nLimit");
  QL_CHECK(after != NULL && strstr(after, "true") == NULL && strstr(after, "value > 3") != NULL &&
           strstr(after, "TableScan: t") != NULL);
  free(out);

  snprintf(args, sizeof args, "call %s add_one 1 NULL 41", so);
  expect_host(args, "2\nNULL\n42\n");
  snprintf(args, sizeof args, "call %s sum_sq 1 2 NULL 3", so);
  expect_host(args, "14\n");
  snprintf(args, sizeof args, "call %s sum_sq", so);
  expect_host(args, "NULL\n");
  snprintf(args, sizeof args, "call %s running_count x x x", so);
  expect_host(args, "1\n2\n3\n");
  snprintf(args, sizeof args, "call %s add_one 9223372036854775807", so);
  QL_CHECK_INT(host(args, &out), 1);
  free(out);

  expect_check("qlink_sample", "series?stop=500&step=3&partitions=6", 0, NULL);
  /* Not loadable at all: exit status 3, not 1. */
  expect_check("broken_no_entry", NULL, 3, "exports.entry_point");
  expect_check("broken_magic", NULL, 3, "descriptor.magic");
  expect_check("broken_version", NULL, 1, "negotiate.unknown_version");
  expect_check("broken_release", NULL, 1, "release.table_provider");
  expect_check("broken_stream_end", NULL, 1, "stream.end");
  expect_check("broken_leak_reservation", NULL, 1, "memory.reservations");
  expect_check("broken_unknown_option_ok", NULL, 1, "options.unknown");
  expect_check("broken_exports_extra_symbol", NULL, 1, "exports.extra_symbol");
  expect_check("broken_concurrent", NULL, 1, "concurrency.results");
  expect_check("broken_stats", NULL, 1, "statistics.num_rows");
  expect_check("broken_pushdown", NULL, 1, "pushdown.exact");
  expect_check("broken_crash", NULL, 1, "crash");
  expect_check("broken_function_open", NULL, 1, "open.function");
  expect_check("broken_schema_provider_members", NULL, 1, "schema_provider.members");
  expect_check("broken_plan_members", NULL, 1, "plan.members");
  expect_check("broken_stream_members", NULL, 1, "stream.members");
  expect_check("broken_table_provider_members", NULL, 1, "table_provider.members");
  expect_check("broken_table_function_members", NULL, 1, "function.members");
  expect_check("broken_planner_release_null", NULL, 1, "planner.members");
  expect_check("broken_null_count", NULL, 1, "statistics.null_count");
  expect_check("broken_planner_option_message", NULL, 1, "options.unknown");
  expect_check("broken_planner_unknown_name", NULL, 1, "open.unknown_name");
  expect_check("broken_schema_unknown_name", NULL, 1, "open.unknown_name");
  expect_check("broken_schema_unknown_table", NULL, 1, "schema_provider.unknown_table");
  expect_check("broken_error_status", NULL, 1, "error.status");
  expect_check("broken_error_release", NULL, 1, "release.error");
  expect_check("broken_ordering", NULL, 1, "plan.ordering");

  /* --threads takes a whole number in 1..1024; anything else is a usage
   * error (exit 2) before any check runs. */
  static const char *const bad_threads[] = {"abc", "0", "-3", "4x", "", "1025", "99999999999999999999"};
  for (size_t i = 0; i < sizeof bad_threads / sizeof bad_threads[0]; i++) {
    char cmd[8192 + 64];
    snprintf(cmd, sizeof cmd, "%s/tools/qlink-check %s --threads '%s' 2>&1", g_build, so, bad_threads[i]);
    QL_CHECK_INT(run(cmd, &out), 2);
    QL_CHECK(strstr(out, "--threads") != NULL && strstr(out, "VIOLATION") == NULL);
    free(out);
  }
  snprintf(args, sizeof args, "%s/tools/qlink-check %s --spec 'series?stop=100&partitions=3' --threads 7 2>&1", g_build,
           so);
  QL_CHECK_INT(run(args, &out), 0);
  QL_CHECK(strstr(out, ": 0 violation(s)\n") != NULL);
  free(out);
  /* A file that is no plugin at all is not loadable either. */
  snprintf(args, sizeof args, "%s/tools/qlink-check %s/no_such_plugin.so 2>&1", g_build, g_build);
  QL_CHECK_INT(run(args, &out), 3);
  QL_CHECK(strstr(out, "the plugin could not be loaded") != NULL);
  free(out);
  QL_TEST_END();
}
