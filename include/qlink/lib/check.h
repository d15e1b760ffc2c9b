/* libqlink: the conformance kit (qlink-check) as a library.
 *
 * ql_check_plugin loads a plugin and checks the ABI rules of docs/abi.md
 * against every object its catalogue lists, reporting each violation.
 */
#ifndef QLINK_LIB_CHECK_H
#define QLINK_LIB_CHECK_H

#include <stdio.h>

#include "qlink/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ql_check_options {
  /* Options per table/schema provider: "provider?key=value&..." specs; a
   * provider without one is opened with no options. */
  int32_t n_specs;
  const char *const *specs;
  int32_t threads;   /* threads for the concurrent-execute check; 0: 4 */
  int32_t verbose;   /* print each check as it runs */
  FILE *out;         /* report stream; NULL: stdout */
};

/* Run every check. Returns the number of violations (0: conforming), or -1
 * when the plugin could not be loaded at all (reported as a violation too). */
int ql_check_plugin(const char *path, const struct ql_check_options *options);

#ifdef __cplusplus
}
#endif

#endif /* QLINK_LIB_CHECK_H */
