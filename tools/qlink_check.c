/* SPDX-License-Identifier: Apache-2.0 */
/* qlink-check PLUGIN.so [--spec 'provider?k=v&...']... [--threads N] [--verbose] [--no-isolate]
 *
 * Runs the conformance kit (qlink/lib/check.h) on a plugin. Prints one line
 * per violation, "VIOLATION <rule>: <what>", one per error the plugin
 * reported correctly (a stream failing on bad data), "PLUGIN ERROR <what>",
 * and exits 0 only when there is neither: 1 with violations or plugin
 * errors, 2 for bad usage, 3 when the plugin could not be
 * loaded at all (no catalogue item was checked). Each catalogue item is checked
 * in a child process, so a plugin that crashes is reported as
 * "VIOLATION crash: ..."; --no-isolate checks everything in this process.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/check.h"

#define QLC_MAX_THREADS 1024
#define QLC_EXIT_VIOLATIONS 1
#define QLC_EXIT_USAGE 2
#define QLC_EXIT_NOT_LOADABLE 3

/* --threads N: a decimal integer in 1..QLC_MAX_THREADS, nothing else. */
static int parse_threads(const char *s, int32_t *out) {
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end != '\0' || errno != 0 || v < 1 || v > QLC_MAX_THREADS) {
    fprintf(stderr, "qlink-check: --threads '%s': expected a whole number from 1 to %d\n", s, QLC_MAX_THREADS);
    return -1;
  }
  *out = (int32_t)v;
  return 0;
}

static int usage(void) {
  fprintf(stderr, "usage: qlink-check PLUGIN.so [--spec 'provider?key=value&...']... [--threads N] [--verbose] [--no-isolate]\n");
  return QLC_EXIT_USAGE;
}

int main(int argc, char **argv) {
  const char *path = NULL;
  const char **specs = calloc((size_t)argc, sizeof *specs);
  struct ql_check_options options = {0, specs, 0, 0, stdout, 1};
  if (!specs) return QLC_EXIT_USAGE;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--spec") == 0 && i + 1 < argc) {
      specs[options.n_specs++] = argv[++i];
    } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      if (parse_threads(argv[++i], &options.threads) != 0) {
        free(specs);
        return usage();
      }
    } else if (strcmp(argv[i], "--verbose") == 0) {
      options.verbose = 1;
    } else if (strcmp(argv[i], "--no-isolate") == 0) {
      options.isolate = 0;
    } else if (argv[i][0] != '-' && path == NULL) {
      path = argv[i];
    } else {
      free(specs);
      return usage();
    }
  }
  if (path == NULL) {
    free(specs);
    return usage();
  }
  int violations = ql_check_plugin(path, &options);
  free(specs);
  if (violations < 0) return QLC_EXIT_NOT_LOADABLE;
  return violations == 0 ? 0 : QLC_EXIT_VIOLATIONS;
}
