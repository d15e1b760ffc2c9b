/* SPDX-License-Identifier: Apache-2.0 */
/* Breaks one rule on purpose for the hosts' tests (see broken_plugin.h). */
#define BROKEN_THIRD_BATCH 1
#include "broken_plugin.h"
