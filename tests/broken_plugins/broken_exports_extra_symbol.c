/* SPDX-License-Identifier: Apache-2.0 */
/* Breaks one rule on purpose for qlink-check's tests (see broken_plugin.h). */
#define BROKEN_EXPORTS_EXTRA_SYMBOL 1
#include "broken_plugin.h"

/* The defect: a second exported symbol. */
QL_PLUGIN_EXPORT int qlb_extra_exported_symbol(void);
QL_PLUGIN_EXPORT int qlb_extra_exported_symbol(void) { return 42; }
