/* SPDX-License-Identifier: Apache-2.0 */
/* The qlink DuckDB extension (stable C extension API, V1, target 1.5.6),
 * qlink.duckdb_extension: its entry point, qlink_init_c_api (DuckDB finds
 * it from the file name). It makes the database's state and registers
 *
 * - qlink_scan('PLUGIN/PROVIDER?k=v&...' [, table := 'NAME']) (scan.c),
 * - qlink_plugins(), qlink_tables, qlink_allow, qlink_seal and
 *   qlink_attach (catalog.c),
 * - qlink_load and the table functions behind plugin table functions
 *   (functions.c),
 *
 * and opens the connection qlink_attach and qlink_load run their DDL on.
 */
#include <stdlib.h>

#include "common/access.h"
#include "common/db.h"
#include "v1/catalog.h"
#include "v1/functions.h"
#include "v1/scan.h"

DUCKDB_EXTENSION_API bool qlink_init_c_api(duckdb_extension_info info, struct duckdb_extension_access *access);

DUCKDB_EXTENSION_ENTRYPOINT(duckdb_connection connection, duckdb_extension_info info,
                            struct duckdb_extension_access *access) {
  char *msg = NULL;
  struct qd_db *db = qd_db_new(&msg);
  if (!db) {
    access->set_error(info, qd_text_or_oom(msg));
    free(msg);
    return false;
  }
  if (qd_register_scan(connection, db) != 0 || qd_register_catalog(connection, db) != 0 ||
      qd_register_functions(connection, db) != 0) {
    access->set_error(info, "qlink: registering the qlink functions failed");
    return false;
  }
  /* A connection of its own for qlink_attach's DDL (held while DuckDB lives). */
  duckdb_database *database = access->get_database(info);
  if (!database || duckdb_connect(*database, &db->ddl) != DuckDBSuccess) {
    access->set_error(info, "qlink: cannot open a connection for qlink_attach");
    return false;
  }
  return true;
}
