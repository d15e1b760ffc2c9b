/* qlink-check PLUGIN.so [--spec 'provider?k=v&...']... [--threads N] [--verbose] [--no-isolate]
 *
 * Runs the conformance kit (qlink/lib/check.h) on a plugin. Prints one line
 * per violation, "VIOLATION <rule>: <what>", and exits 0 only when there is
 * none (1 with violations, 2 for bad usage). Each catalogue item is checked
 * in a child process, so a plugin that crashes is reported as
 * "VIOLATION crash: ..."; --no-isolate checks everything in this process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/check.h"

static int usage(void) {
  fprintf(stderr, "usage: qlink-check PLUGIN.so [--spec 'provider?key=value&...']... [--threads N] [--verbose] [--no-isolate]\n");
  return 2;
}

int main(int argc, char **argv) {
  const char *path = NULL;
  const char **specs = calloc((size_t)argc, sizeof *specs);
  struct ql_check_options options = {0, specs, 0, 0, stdout, 1};
  if (!specs) return 2;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--spec") == 0 && i + 1 < argc) {
      specs[options.n_specs++] = argv[++i];
    } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      options.threads = atoi(argv[++i]);
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
  return violations == 0 ? 0 : 1;
}
