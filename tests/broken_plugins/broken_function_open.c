/* SPDX-License-Identifier: Apache-2.0 */
/* Breaks one rule on purpose for qlink-check's tests (see broken_plugin.h). */
#define BROKEN_FUNCTION_OPEN 1
#include "broken_plugin.h"
