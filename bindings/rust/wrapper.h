/* SPDX-License-Identifier: Apache-2.0 */
/* What build.rs hands bindgen: every ABI header and the libqlink headers
 * the mirrors cover, plus enum constants for values the headers give as
 * function-like macros (bindgen evaluates only plain ones). */
#include "qlink/qlink.h"
#include "qlink/lib/check.h"
#include "qlink/lib/loader.h"
enum { QL_ABI_VERSION_0_1_VALUE = QL_ABI_VERSION_0_1 };
