/* SPDX-License-Identifier: Apache-2.0 */
/* The DuckDB host: Arrow formats of plugin columns -> DuckDB types, and
 * DuckDB types of function arguments -> libqlink cells.
 *
 * Pure C (no DuckDB call) so the rules are tested on their own
 * (types_test.c); vectors.h applies them to DuckDB vectors.
 */
#ifndef QLINK_DUCKDB_TYPES_H
#define QLINK_DUCKDB_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "qlink/arrow_c.h"
#include "qlink/lib/args.h"

/* The type ids of these rules: duckdb.h's DUCKDB_TYPE_* values (stable C
 * API V1), repeated so that types.c needs no DuckDB header. The V2 build
 * maps its own type ids onto them (v2/vectors.c). */
enum {
  QD_T_BOOLEAN = 1, QD_T_TINYINT = 2, QD_T_SMALLINT = 3, QD_T_INTEGER = 4, QD_T_BIGINT = 5,
  QD_T_UTINYINT = 6, QD_T_USMALLINT = 7, QD_T_UINTEGER = 8, QD_T_UBIGINT = 9, QD_T_FLOAT = 10,
  QD_T_DOUBLE = 11, QD_T_TIMESTAMP = 12, QD_T_DATE = 13, QD_T_INTERVAL = 15, QD_T_VARCHAR = 17,
  QD_T_BLOB = 18, QD_T_DECIMAL = 19, QD_T_TIMESTAMP_S = 20, QD_T_TIMESTAMP_MS = 21, QD_T_TIMESTAMP_NS = 22,
  QD_T_TIMESTAMP_TZ = 31, QD_T_SQLNULL = 36, QD_T_STRING_LITERAL = 37, QD_T_INTEGER_LITERAL = 38,
  QD_T_TIME = 14, QD_T_HUGEINT = 16, QD_T_ENUM = 23, QD_T_LIST = 24, QD_T_STRUCT = 25, QD_T_MAP = 26, QD_T_UUID = 27,
  QD_T_UNION = 28, QD_T_BIT = 29, QD_T_TIME_TZ = 30, QD_T_UHUGEINT = 32, QD_T_ARRAY = 33, QD_T_ANY = 34, QD_T_BIGNUM = 35
};

/* How a column's Arrow values become DuckDB values. */
enum qd_kind {
  QD_BOOL = 1,   /* "b": bits -> bool bytes */
  QD_FIXED,      /* same width and meaning: memcpy */
  QD_STRING,     /* "u", "U": VARCHAR; "z", "Z": BLOB */
  QD_DATE64,     /* "tdm": milliseconds -> DATE days */
  QD_TIMESTAMP,  /* "ts?:": TIMESTAMP_S/_MS/TIMESTAMP/_NS, values as stored */
  QD_TIMESTAMPTZ,/* "ts?:TZ": TIMESTAMP WITH TIME ZONE, converted to microseconds */
  QD_DURATION,   /* "tD?": INTERVAL of microseconds */
  QD_DECIMAL     /* "d:P,S" (P <= 38): DECIMAL(P,S), narrowed to DuckDB's storage width */
};

struct qd_type {
  int32_t kind;       /* enum qd_kind */
  int32_t duckdb;     /* the duckdb_type id */
  int32_t width;      /* bytes per value in the DuckDB vector (0: strings) */
  int32_t large;      /* strings: int64 offsets ("U", "Z") */
  int32_t view;       /* strings: 16-byte views ("vu", "vz") */
  int64_t unit_num;   /* timestamps with zone and durations: value * unit_num / unit_den = microseconds */
  int64_t unit_den;
  uint8_t precision, scale; /* decimals */
};

/* The libqlink cell kind (qlink/lib/args.h, enum ql_cell_kind) a DuckDB
 * value of type id `duckdb_type` is read as when passed to a plugin
 * function: integers and BOOLEAN INTEGER, FLOAT/DOUBLE/DECIMAL REAL, VARCHAR TEXT,
 * BLOB BLOB, the NULL type NULL; -1 for any other type (not passed). */
int qd_cell_kind_of(int32_t duckdb_type);
/* DuckDB's name of a type id ("BIGINT"), for messages. */
const char *qd_type_name(int32_t duckdb_type);

/* Parse an Arrow format string. 0 on success; else -1 with a one-line
 * reason in `why` (e.g. "Arrow type '+m' (map) has no DuckDB mapping in qlink"). */
int qd_type_parse(const char *format, struct qd_type *out, char *why, size_t why_cap);

#endif /* QLINK_DUCKDB_TYPES_H */
