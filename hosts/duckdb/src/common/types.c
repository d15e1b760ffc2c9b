/* SPDX-License-Identifier: Apache-2.0 */
/* Arrow format strings -> DuckDB storage (see types.h). Pure C: the DuckDB
 * type ids are the values of duckdb.h's enum, repeated in types.h so that
 * this file and its test need no DuckDB header. */
#include "types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int qd_cell_kind_of(int32_t duckdb_type) {
  switch (duckdb_type) {
    case QD_T_BOOLEAN: case QD_T_TINYINT: case QD_T_SMALLINT: case QD_T_INTEGER: case QD_T_BIGINT:
    case QD_T_UTINYINT: case QD_T_USMALLINT: case QD_T_UINTEGER: case QD_T_UBIGINT: case QD_T_INTEGER_LITERAL:
      return QL_CELL_INTEGER;
    case QD_T_FLOAT: case QD_T_DOUBLE: case QD_T_DECIMAL: return QL_CELL_REAL;
    case QD_T_VARCHAR: case QD_T_STRING_LITERAL: return QL_CELL_TEXT;
    case QD_T_BLOB: return QL_CELL_BLOB;
    case QD_T_SQLNULL: return QL_CELL_NULL;
    default: return -1;
  }
}

const char *qd_type_name(int32_t duckdb_type) {
  static const char *const names[] = {
      "INVALID", "BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER",
      "UBIGINT", "FLOAT", "DOUBLE", "TIMESTAMP", "DATE", "TIME", "INTERVAL", "HUGEINT", "VARCHAR", "BLOB",
      "DECIMAL", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS", "ENUM", "LIST", "STRUCT", "MAP", "UUID", "UNION",
      "BIT", "TIME WITH TIME ZONE", "TIMESTAMP WITH TIME ZONE", "UHUGEINT", "ARRAY", "ANY", "BIGNUM", "NULL",
      "STRING_LITERAL", "INTEGER_LITERAL"};
  if (duckdb_type < 0 || duckdb_type >= (int32_t)(sizeof(names) / sizeof(names[0]))) return "(a DuckDB type)";
  return names[duckdb_type];
}

static int fixed(struct qd_type *t, int32_t duckdb, int32_t width) {
  t->kind = QD_FIXED;
  t->duckdb = duckdb;
  t->width = width;
  return 0;
}

static int unit_of(char u, int64_t *num, int64_t *den) {
  switch (u) {
    case 's': *num = 1000000, *den = 1; return 0;
    case 'm': *num = 1000, *den = 1; return 0;
    case 'u': *num = 1, *den = 1; return 0;
    case 'n': *num = 1, *den = 1000; return 0;
    default: return -1;
  }
}

int qd_type_parse(const char *format, struct qd_type *out, char *why, size_t why_cap) {
  memset(out, 0, sizeof(*out));
  out->unit_num = out->unit_den = 1;
  if (!format) format = "";
  if (format[0] && format[1] == '\0') {
    switch (format[0]) {
      case 'b': out->kind = QD_BOOL, out->duckdb = QD_T_BOOLEAN, out->width = 1; return 0;
      case 'c': return fixed(out, QD_T_TINYINT, 1);
      case 's': return fixed(out, QD_T_SMALLINT, 2);
      case 'i': return fixed(out, QD_T_INTEGER, 4);
      case 'l': return fixed(out, QD_T_BIGINT, 8);
      case 'C': return fixed(out, QD_T_UTINYINT, 1);
      case 'S': return fixed(out, QD_T_USMALLINT, 2);
      case 'I': return fixed(out, QD_T_UINTEGER, 4);
      case 'L': return fixed(out, QD_T_UBIGINT, 8);
      case 'f': return fixed(out, QD_T_FLOAT, 4);
      case 'g': return fixed(out, QD_T_DOUBLE, 8);
      case 'u': case 'U': case 'z': case 'Z':
        out->kind = QD_STRING;
        out->duckdb = (format[0] == 'u' || format[0] == 'U') ? QD_T_VARCHAR : QD_T_BLOB;
        out->large = format[0] == 'U' || format[0] == 'Z';
        return 0;
      default: break;
    }
  }
  if (strcmp(format, "vu") == 0 || strcmp(format, "vz") == 0) {
    out->kind = QD_STRING;
    out->duckdb = format[1] == 'u' ? QD_T_VARCHAR : QD_T_BLOB;
    out->view = 1;
    return 0;
  }
  if (strcmp(format, "tdD") == 0) return fixed(out, QD_T_DATE, 4);
  if (strcmp(format, "tdm") == 0) {
    out->kind = QD_DATE64, out->duckdb = QD_T_DATE, out->width = 4;
    return 0;
  }
  if (strncmp(format, "ts", 2) == 0 && format[2] && format[3] == ':') {
    if (unit_of(format[2], &out->unit_num, &out->unit_den) != 0) goto unmapped;
    out->width = 8;
    if (format[4] != '\0') {
      out->kind = QD_TIMESTAMPTZ, out->duckdb = QD_T_TIMESTAMP_TZ;
      return 0;
    }
    out->kind = QD_TIMESTAMP;
    out->duckdb = format[2] == 's' ? QD_T_TIMESTAMP_S : format[2] == 'm' ? QD_T_TIMESTAMP_MS
                : format[2] == 'u' ? QD_T_TIMESTAMP : QD_T_TIMESTAMP_NS;
    return 0;
  }
  if (strncmp(format, "tD", 2) == 0 && format[2] && format[3] == '\0') {
    if (unit_of(format[2], &out->unit_num, &out->unit_den) != 0) goto unmapped;
    out->kind = QD_DURATION, out->duckdb = QD_T_INTERVAL, out->width = 16;
    return 0;
  }
  if (strncmp(format, "d:", 2) == 0) {
    int p = 0, s = 0, bits = 128, n = 0;
    int got = sscanf(format + 2, "%d,%d%n,%d%n", &p, &s, &n, &bits, &n);
    if (got < 2 || format[2 + n] != '\0' || bits != 128 || p < 1 || p > 38 || s < 0 || s > p) {
      snprintf(why, why_cap, "Arrow type '%s' (decimal) has no DuckDB mapping in qlink: DuckDB's DECIMAL holds "
               "precision 1..38 and scale 0..precision in 128 bits", format);
      return -1;
    }
    out->kind = QD_DECIMAL, out->duckdb = QD_T_DECIMAL;
    out->precision = (uint8_t)p, out->scale = (uint8_t)s;
    out->width = p <= 4 ? 2 : p <= 9 ? 4 : p <= 18 ? 8 : 16;
    return 0;
  }
unmapped:
  snprintf(why, why_cap, "Arrow type '%s' has no DuckDB mapping in qlink", format);
  return -1;
}
