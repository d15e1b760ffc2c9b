/* SPDX-License-Identifier: Apache-2.0 */
/* The V2 build's registrations (register.h): table functions and query
 * PRAGMAs of VARCHAR parameters, each with the struct qd_db as its user
 * data, and a PRAGMA's query. */
#include "v2/register.h"

#include "v2/bind.h"

void qd_set_query(duckdb_v2_pragma_function_query_info_handle result, const char *sql,
                  duckdb_v2_error_info_handle *err) {
  duckdb_v2_str q = qd_str(sql);
  if (duckdb_v2_pragma_function_query_set_query(result, &q, NULL) != DUCKDB_V2_ERROR_NONE)
    qd_v2_fail(err, "qlink: DuckDB refused the PRAGMA's query");
}

/* Add to `sig` n_args (0..2) positional VARCHAR parameters and, with
 * `named`, a VARCHAR named parameter of that name, qd_absent by default.
 * The VARCHAR type and the default go to *varchar and *none, which the
 * caller destroys (each may stay NULL). 1, or 0 on any failure. */
static int add_varchar_params(duckdb_v2_factory_handle factory, duckdb_v2_function_signature_handle sig, int n_args,
                              const char *named, duckdb_v2_logical_type_handle *varchar, duckdb_v2_value_handle *none) {
  duckdb_v2_str vt = qd_str("VARCHAR");
  int ok = duckdb_v2_factory_create_type_from_text(factory, &vt, varchar, NULL) == DUCKDB_V2_ERROR_NONE;
  static const char *const arg_names[] = {"arg0", "arg1"};
  for (int i = 0; ok && i < n_args; i++) {
    duckdb_v2_identifier_t an = qd_str(arg_names[i]);
    ok = duckdb_v2_function_signature_add_parameter(sig, &an, *varchar, NULL, DUCKDB_V2_FUNCTION_PARAMETER_KIND_POSITIONAL_ONLY,
                                                    NULL) == DUCKDB_V2_ERROR_NONE;
  }
  if (ok && named) {
    duckdb_v2_identifier_t nn = qd_str(named);
    ok = duckdb_v2_value_create_varchar(factory, &qd_absent, none, NULL) == DUCKDB_V2_ERROR_NONE &&
         duckdb_v2_function_signature_add_parameter(sig, &nn, *varchar, *none, DUCKDB_V2_FUNCTION_PARAMETER_KIND_NAMED_ONLY,
                                                    NULL) == DUCKDB_V2_ERROR_NONE;
  }
  return ok;
}

/* A query PRAGMA `name` of n_args VARCHAR arguments (and, with `named`, a
 * VARCHAR named parameter of that name, NULL by default). */
int qd_register_pragma_v2(duckdb_v2_extension_handle extension, duckdb_v2_factory_handle factory,
                          struct qd_db *db, const char *name, int n_args, const char *named,
                          duckdb_v2_pragma_function_query_callback_fn query) {
  duckdb_v2_pragma_function_handle f = NULL;
  duckdb_v2_function_signature_handle sig = NULL;
  duckdb_v2_logical_type_handle varchar = NULL;
  duckdb_v2_value_handle none = NULL;
  duckdb_v2_identifier_t fname = qd_str(name);
  duckdb_v2_opaque user = {db, NULL, NULL};
  int ok = duckdb_v2_pragma_function_create(factory, &f, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_pragma_function_set_name(f, &fname, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_pragma_function_get_signature(f, &sig, NULL) == DUCKDB_V2_ERROR_NONE &&
           add_varchar_params(factory, sig, n_args, named, &varchar, &none);
  ok = ok && duckdb_v2_pragma_function_set_user_data(f, &user, NULL) == DUCKDB_V2_ERROR_NONE &&
       duckdb_v2_pragma_function_set_query_callback(f, query, NULL) == DUCKDB_V2_ERROR_NONE &&
       duckdb_v2_extension_register_pragma_function(extension, f, NULL) == DUCKDB_V2_ERROR_NONE;
  if (none) duckdb_v2_value_destroy(&none);
  if (varchar) duckdb_v2_logical_type_destroy(&varchar);
  if (f) duckdb_v2_pragma_function_destroy(&f);
  return ok ? 0 : -1;
}

int qd_register_v2(duckdb_v2_extension_handle extension, duckdb_v2_factory_handle factory, struct qd_db *db,
                   const char *name, int n_args, const char *named, duckdb_v2_table_function_bind_callback_fn bind,
                   duckdb_v2_table_function_init_global_callback_fn init,
                   duckdb_v2_table_function_init_local_callback_fn local,
                   duckdb_v2_table_function_exec_callback_fn exec,
                   duckdb_v2_table_function_filter_pushdown_callback_fn pushdown) {
  duckdb_v2_table_function_handle f = NULL;
  duckdb_v2_function_signature_handle sig = NULL;
  duckdb_v2_logical_type_handle varchar = NULL;
  duckdb_v2_value_handle none = NULL;
  duckdb_v2_identifier_t fname = qd_str(name);
  duckdb_v2_opaque user = {db, NULL, NULL};
  int ok = duckdb_v2_table_function_create(factory, &f, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_table_function_set_name(f, &fname, NULL) == DUCKDB_V2_ERROR_NONE &&
           duckdb_v2_table_function_get_signature(f, &sig, NULL) == DUCKDB_V2_ERROR_NONE &&
           add_varchar_params(factory, sig, n_args, named, &varchar, &none);
  ok = ok && duckdb_v2_table_function_set_user_data(f, &user, NULL) == DUCKDB_V2_ERROR_NONE &&
       duckdb_v2_table_function_set_bind_callback(f, bind, NULL) == DUCKDB_V2_ERROR_NONE &&
       duckdb_v2_table_function_set_init_global_callback(f, init, NULL) == DUCKDB_V2_ERROR_NONE &&
       (!local || duckdb_v2_table_function_set_init_local_callback(f, local, NULL) == DUCKDB_V2_ERROR_NONE) &&
       duckdb_v2_table_function_set_exec_callback(f, exec, NULL) == DUCKDB_V2_ERROR_NONE;
  if (ok && pushdown) {
    ok = duckdb_v2_table_function_set_projection_pushdown(f, true, NULL) == DUCKDB_V2_ERROR_NONE &&
         duckdb_v2_table_function_set_filter_pushdown_callback(f, pushdown, NULL) == DUCKDB_V2_ERROR_NONE;
  }
  ok = ok && duckdb_v2_extension_register_table_function(extension, f, NULL) == DUCKDB_V2_ERROR_NONE;
  if (none) duckdb_v2_value_destroy(&none);
  if (varchar) duckdb_v2_logical_type_destroy(&varchar);
  if (f) duckdb_v2_table_function_destroy(&f);
  return ok ? 0 : -1;
}
