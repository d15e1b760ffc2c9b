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
