/* SPDX-License-Identifier: Apache-2.0 */
/* For libFuzzer targets that link a plugin's sources: the reference host
 * and the plugin's descriptor (qlink_plugin_init, ABI QL_ABI_VERSION),
 * made once, on the first input, and kept for the process (a fuzzer never
 * exits cleanly, so nothing is released). `batch_size`: rows per batch
 * (0: the host's default); one executor thread, unbounded memory. Aborts
 * when either cannot be had. Not thread-safe: libFuzzer calls one input
 * at a time. */
#ifndef QL_FUZZ_HOST_H
#define QL_FUZZ_HOST_H

#include <stdlib.h>

#include "qlink/lib/host.h"
#include "qlink/lib/status.h"
#include "qlink/qlink.h"

int qlink_plugin_init(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error);

static inline void ql_fuzz_host(int64_t batch_size, struct ql_ref_host **host, struct ql_plugin *plugin) {
  if (*host) return;
  struct ql_error err = {0};
  struct ql_ref_host_options o = {-1, batch_size, 1};
  if (ql_ref_host_new(&o, host, &err) != QL_OK || qlink_plugin_init(QL_ABI_VERSION, plugin, &err) != QL_OK) abort();
}

#endif /* QL_FUZZ_HOST_H */
