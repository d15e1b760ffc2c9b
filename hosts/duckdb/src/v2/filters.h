/* SPDX-License-Identifier: Apache-2.0 */
/* The V2 build's filter pushdown (filters.c). */
#ifndef QLINK_DUCKDB_V2_FILTERS_H
#define QLINK_DUCKDB_V2_FILTERS_H

#include "capi.h"

/* qlink_scan's filter pushdown callback: DuckDB's predicates as qlink
 * filters into the bind's `filters`; those the provider answers EXACT are
 * accepted (DuckDB drops its own filter), INEXACT ones prune. */
void qd_filter_pushdown(duckdb_v2_table_function_filter_pushdown_info_handle info, duckdb_v2_context_handle context,
                        duckdb_v2_error_info_handle *err);

#endif /* QLINK_DUCKDB_V2_FILTERS_H */
