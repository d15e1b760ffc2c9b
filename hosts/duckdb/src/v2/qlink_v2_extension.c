/* SPDX-License-Identifier: Apache-2.0 */
/* The qlink DuckDB extension against DuckDB's C API V2 (unstable: built
 * for, and loaded by, the pinned engine version only),
 * qlink_v2.duckdb_extension: its entry point, qlink_v2_init_c_api_v2
 * (DuckDB finds it from the file's base name, qlink_v2). It makes the
 * database's state and registers, as the V1 build does (src/v1),
 *
 * - qlink_scan('PLUGIN/PROVIDER?k=v&...' [, table := 'NAME']), with filter
 *   pushdown (scan.c, filters.c),
 * - qlink_plugins(), qlink_tables, qlink_allow, qlink_seal and
 *   qlink_attach, a query PRAGMA here (catalog.c),
 * - qlink_load, a query PRAGMA too, and the functions behind plugin
 *   functions (functions.c).
 *
 * C API V2 registers functions only while the extension loads, so all of
 * them are registered here; the build holds no connection.
 */
#include <stdlib.h>

#include "common/access.h"
#include "common/db.h"
#include "v2/bind.h"
#include "v2/catalog.h"
#include "v2/functions.h"
#include "v2/scan.h"

DUCKDB_EXTENSION_API void qlink_v2_init_c_api_v2(struct duckdb_v2_extension_input *input);

DUCKDB_EXTENSION_ENTRYPOINT(duckdb_v2_extension_handle extension, duckdb_v2_context_handle context,
                            duckdb_v2_error_info_handle *err) {
  char *msg = NULL;
  struct qd_db *db = qd_db_new(&msg);
  if (!db) {
    qd_v2_fail(err, qd_text_or_oom(msg));
    free(msg);
    return;
  }
  duckdb_v2_factory_handle factory = NULL;
  int ok = duckdb_v2_context_get_factory(context, &factory, NULL) == DUCKDB_V2_ERROR_NONE;
  ok = ok && qd_register_scan_v2(extension, factory, db) == 0;
  ok = ok && qd_register_catalog_v2(extension, factory, db) == 0;
  ok = ok && qd_register_functions_v2(extension, factory, db) == 0;
  if (!ok) qd_v2_fail(err, "qlink: registering the qlink functions failed");
}
