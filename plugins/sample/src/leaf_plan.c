/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_sample: what every leaf execution plan (a table scan) shares: no
 * children, a display line built on first use (see sample_internal.h). */
#include <inttypes.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>

#include "qlink/lib/status.h"
#include "sample_internal.h"

int64_t smp_leaf_child_count(const struct ql_execution_plan *self) {
  (void)self;
  return 0;
}

const struct ql_execution_plan *smp_leaf_child(const struct ql_execution_plan *self, int64_t i) {
  (void)self;
  (void)i;
  return NULL;
}

int smp_leaf_take_children(const char *plan, struct ql_execution_plan *children, int64_t n_children,
                                 struct ql_error *error) {
  for (int64_t i = 0; i < n_children; i++) {
    if (children[i].release) children[i].release(&children[i]);
  }
  if (n_children != 0) {
    return ql_error_set(error, QL_EINVAL, "%s has no children; got %" PRId64, plan, n_children);
  }
  return QL_OK;
}

const char *smp_display_keep(_Atomic(char *) *slot, char *built, const char *out_of_memory) {
  if (built == NULL) return out_of_memory;
  char *expected = NULL;
  /* Another thread may have built it first: keep theirs. */
  if (!atomic_compare_exchange_strong(slot, &expected, built)) {
    free(built);
    return expected;
  }
  return built;
}
