/* SPDX-License-Identifier: Apache-2.0 */
/* qlink: a stable C ABI through which separately built libraries plug into
 * columnar query engines in the same process: table providers, execution
 * plans, scalar / aggregate / window / table functions, object stores and
 * query planners. One plugin binary serves every host (DataFusion, DuckDB,
 * SQLite).
 *
 * This umbrella header includes the whole ABI, one header per concern:
 *   qlink/arrow_c.h   Arrow C Data and C Stream Interface structs
 *   qlink/error.h     status codes and struct ql_error
 *   qlink/types.h     versions, options, scalars, function identity, statistics
 *   qlink/services.h  host services: session, task context, runtime environment
 *                     (memory pool, object stores, temp files), executor
 *   qlink/plan.h      read-only plan and expression views (the IR)
 *   qlink/table.h     table providers, execution plans, schema providers
 *   qlink/function.h  UDF, UDAF, UDWF, UDTF
 *   qlink/planner.h   the planner hook
 *   qlink/plugin.h    the plugin descriptor and entry point
 *
 * docs/abi.md is the reference with every rule; libqlink (the headers in qlink/lib/) is
 * the shared C runtime both sides may link.
 *
 * Conventions shared by every object in the ABI (docs/abi.md R1, R2, R5):
 * - The consumer owns the top-level struct; `release` frees the object and
 *   sets `release` to NULL. A struct whose release is NULL is released; the
 *   conformance kit checks that releasing sets it so (R1).
 * - A move is a bitwise copy followed by setting the source's release to
 *   NULL (R1).
 * - Members taking a `const` self are thread-safe: the host may call them
 *   from several threads at once (R2).
 * - Outputs (`out`) are only written on QL_OK; on failure `error` is filled
 *   (R1, R5).
 */
#ifndef QLINK_QLINK_H
#define QLINK_QLINK_H

#include "qlink/arrow_c.h"
#include "qlink/error.h"
#include "qlink/types.h"
#include "qlink/services.h"
#include "qlink/plan.h"
#include "qlink/table.h"
#include "qlink/function.h"
#include "qlink/planner.h"
#include "qlink/plugin.h"

#endif /* QLINK_QLINK_H */
