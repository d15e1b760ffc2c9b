/* SPDX-License-Identifier: Apache-2.0 */
/* The conformance kit in process: the sample plugin conforms (0
 * violations), and each broken plugin is caught by the rule it breaks. */
#include <stdlib.h>
#include <string.h>

#include "ql_test.h"
#include "qlink/lib/check.h"

static const char *g_build;

/* Run ql_check_plugin on plugins/NAME.so; the report goes into *report (malloc'd). */
static int check_with(const char *name, const char *spec, int isolate, char **report) {
  char path[4096];
  snprintf(path, sizeof path, "%s/plugins/%s.so", g_build, name);
  size_t size = 0;
  FILE *out = open_memstream(report, &size);
  const char *specs[1] = {spec};
  struct ql_check_options o = {spec ? 1 : 0, specs, 3, 0, out, isolate};
  int violations = ql_check_plugin(path, &o);
  fclose(out);
  return violations;
}

static int check(const char *name, const char *spec, char **report) { return check_with(name, spec, 0, report); }

/* The report names `rule`, and every violation in it is one of `allowed`
 * (space-separated): the broken plugins share a conforming base, so only
 * their one defect (and its consequences) may show. */
static void expect_rule(const char *plugin, const char *rule, const char *allowed) {
  char *report = NULL;
  int violations = check(plugin, NULL, &report);
  char line[128];
  snprintf(line, sizeof line, "VIOLATION %s:", rule);
  QL_CHECK(violations != 0);
  QL_CHECK(report != NULL && strstr(report, line) != NULL);
  int others = 0;
  for (const char *at = report ? strstr(report, "VIOLATION ") : NULL; at; at = strstr(at + 1, "VIOLATION ")) {
    const char *name = at + strlen("VIOLATION ");
    size_t len = strcspn(name, ":");
    int ok = 0;
    for (const char *a = allowed; *a; a += strcspn(a, " "), a += *a == ' ') {
      ok |= strcspn(a, " ") == len && strncmp(a, name, len) == 0;
    }
    others += !ok;
  }
  QL_CHECK_INT(others, 0);
  if (report == NULL || strstr(report, line) == NULL || others) {
    fprintf(stderr, "%s: expected '%s' (allowed: %s) in:\n%s\n", plugin, line, allowed, report ? report : "");
  }
  free(report);
}

int main(void) {
  g_build = getenv("QL_BUILD_DIR");
  if (g_build == NULL) g_build = ".";
  char *report = NULL;
  int violations = check("qlink_sample", "series?stop=1000&step=7&partitions=5", &report);
  QL_CHECK_INT(violations, 0);
  QL_CHECK(report != NULL && strstr(report, "VIOLATION") == NULL);
  if (violations != 0) fprintf(stderr, "%s", report);
  free(report);

  /* Table functions are called without arguments: sample_range refuses
   * (its right, with a conforming error); numbers_fn's provider is checked. */
  {
    char path[4096];
    snprintf(path, sizeof path, "%s/plugins/qlink_sample.so", g_build);
    size_t size = 0;
    FILE *out = open_memstream(&report, &size);
    const char *specs[1] = {"series?stop=100"};
    struct ql_check_options o = {1, specs, 2, 1, out, 0};
    violations = ql_check_plugin(path, &o);
    fclose(out);
    QL_CHECK_INT(violations, 0);
    QL_CHECK(report != NULL &&
             strstr(report, "check table function 'sample_range' called without arguments: QL_EINVAL\n") != NULL);
    free(report);
  }

  /* Without the required option the provider cannot open: that is reported. */
  violations = check("qlink_sample", NULL, &report);
  QL_CHECK(violations > 0);
  QL_CHECK(report != NULL && strstr(report, "VIOLATION open.table_provider:") != NULL);
  free(report);

  expect_rule("broken_no_entry", "exports.entry_point", "exports.entry_point entry_point.missing load");
  expect_rule("broken_no_entry", "entry_point.missing", "exports.entry_point entry_point.missing load");
  expect_rule("broken_magic", "descriptor.magic", "descriptor.magic load");
  expect_rule("broken_version", "negotiate.unknown_version", "negotiate.unknown_version");
  expect_rule("broken_release", "release.table_provider", "release.table_provider");
  expect_rule("broken_stream_end", "stream.end", "stream.end");
  expect_rule("broken_leak_reservation", "memory.reservations", "memory.reservations");
  expect_rule("broken_unknown_option_ok", "options.unknown", "options.unknown");
  expect_rule("broken_exports_extra_symbol", "exports.extra_symbol", "exports.extra_symbol");
  expect_rule("broken_concurrent", "concurrency.results", "concurrency.results");
  expect_rule("broken_stats", "statistics.num_rows", "statistics.num_rows");
  expect_rule("broken_pushdown", "pushdown.exact", "pushdown.exact");
  expect_rule("broken_function_open", "open.function", "open.function");
  expect_rule("broken_schema_provider_members", "schema_provider.members", "schema_provider.members");
  expect_rule("broken_plan_members", "plan.members", "plan.members");
  expect_rule("broken_stream_members", "stream.members", "stream.members");
  expect_rule("broken_table_provider_members", "table_provider.members", "table_provider.members");
  expect_rule("broken_table_function_members", "function.members", "function.members");
  expect_rule("broken_planner_release_null", "planner.members", "planner.members");
  expect_rule("broken_null_count", "statistics.null_count", "statistics.null_count");
  expect_rule("broken_planner_option_message", "options.unknown", "options.unknown");
  expect_rule("broken_planner_unknown_name", "open.unknown_name", "open.unknown_name");
  expect_rule("broken_schema_unknown_name", "open.unknown_name", "open.unknown_name");
  expect_rule("broken_schema_unknown_table", "schema_provider.unknown_table", "schema_provider.unknown_table");
  expect_rule("broken_error_status", "error.status", "error.status");
  expect_rule("broken_error_release", "release.error", "release.error");
  expect_rule("broken_ordering", "plan.ordering", "plan.ordering");

  /* A function that cannot open is reported with its own error, not with
   * the message of the unknown-name probe that follows. */
  violations = check("broken_function_open", NULL, &report);
  QL_CHECK_INT(violations, 1);
  QL_CHECK(report != NULL &&
           strstr(report, "VIOLATION open.function: add_one returned QL_EINVAL: add_one: the deliberate cause of this "
                          "failure\n") != NULL);
  QL_CHECK(report != NULL && strstr(report, "no scalar function") == NULL);
  free(report);
  /* Null counts are checked for a float64 column whose min/max are absent. */
  violations = check("broken_null_count", NULL, &report);
  QL_CHECK(report != NULL &&
           strstr(report, "VIOLATION statistics.null_count: the table: column 'x' claims exactly 1 nulls, the rows "
                          "have 0\n") != NULL);
  free(report);
  /* Errors from any call, not only qlink_plugin_init: the probe of an
   * unknown planner name. */
  violations = check("broken_error_status", NULL, &report);
  QL_CHECK(report != NULL &&
           strstr(report, "VIOLATION error.status: planner_open returned QL_ENOTFOUND but its error's status field "
                          "is QL_EINVAL (1)\n") != NULL);
  free(report);
  violations = check("broken_error_release", NULL, &report);
  QL_CHECK(report != NULL &&
           strstr(report, "VIOLATION release.error: scalar_function_open: error release left release set\n") != NULL);
  free(report);

  /* Isolated, the sample still conforms, a crash is a violation, and the
   * violations of a child reach the report. */
  violations = check_with("qlink_sample", "series?stop=100&partitions=3", 1, &report);
  QL_CHECK_INT(violations, 0);
  QL_CHECK(report != NULL && strstr(report, "VIOLATION") == NULL);
  free(report);
  /* item 0 (numbers) and the provider the table function numbers_fn() returns */
  violations = check_with("broken_crash", NULL, 1, &report);
  QL_CHECK_INT(violations, 2);
  QL_CHECK(report != NULL && strstr(report, "VIOLATION crash: catalogue item 0: ") != NULL);
  free(report);
  /* 2 scans x (4 partitions + the plan) and the table's own statistics,
   * for numbers and for the same provider returned by numbers_fn(). */
  violations = check_with("broken_stats", NULL, 1, &report);
  QL_CHECK_INT(violations, 22);
  QL_CHECK(report != NULL && strstr(report, "VIOLATION statistics.num_rows: the table claims exactly 101 rows, a scan returned 100") != NULL);
  QL_CHECK(report != NULL && strstr(report, "VIOLATION statistics.num_rows:") != NULL);
  QL_CHECK(report != NULL && strstr(report, "QLC_CHILD_DONE") == NULL);
  free(report);

  /* A path that is not a plugin at all. */
  violations = check("no_such_plugin", NULL, &report);
  QL_CHECK_INT(violations, -1);
  free(report);
  QL_TEST_END();
}
