/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_fold: the plugin's one exported symbol. */
#include "fold_planner.h"

QL_PLUGIN_EXPORT int qlink_plugin_init(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error);

QL_PLUGIN_EXPORT int qlink_plugin_init(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error) {
  return fd_plugin_fill(abi_version, out, error);
}
