/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_sample: what tests may know of the sample plugin beyond the ABI.
 *
 * The sample plugin's executor_enter returns a pointer to the calling
 * thread's counters below (thread-local storage of the plugin, valid while
 * the plugin is loaded and the thread lives). A test calls enter/leave once
 * to get the pointer, then reads the counters after driving the plugin
 * through a host: a host that brackets every call leaves enters == leaves,
 * depth == 0 and mismatches == 0.
 */
#ifndef QLINK_SAMPLE_H
#define QLINK_SAMPLE_H

#include <stdint.h>

struct smp_hook_counts {
  int64_t enters;     /* executor_enter calls on this thread */
  int64_t leaves;     /* matched executor_leave calls */
  int64_t depth;      /* enters not yet left */
  int64_t mismatches; /* leaves with a foreign token or without an enter */
};

#endif /* QLINK_SAMPLE_H */
