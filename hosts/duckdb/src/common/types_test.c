/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for hosts/duckdb/src/types.c: every Arrow format qlink plugins
 * produce maps to the DuckDB storage the copy relies on; others are refused
 * with a reason naming the format. */
#include "types.h"

#include <string.h>

#include "ql_test.h"

static struct qd_type parse_ok(const char *format) {
  struct qd_type t;
  char why[256] = "";
  QL_CHECK_INT(qd_type_parse(format, &t, why, sizeof(why)), 0);
  return t;
}

static void parse_fails(const char *format, const char *reason) {
  struct qd_type t;
  char why[256] = "";
  QL_CHECK_INT(qd_type_parse(format, &t, why, sizeof(why)), -1);
  QL_CHECK_STR(why, reason);
}

int main(void) {
  /* duckdb.h type ids: BOOLEAN 1 .. UBIGINT 9, FLOAT 10, DOUBLE 11. */
  const char *ints = "csilCSIL";
  const int widths[] = {1, 2, 4, 8, 1, 2, 4, 8};
  for (int i = 0; i < 8; i++) {
    char f[2] = {ints[i], 0};
    struct qd_type t = parse_ok(f);
    QL_CHECK_INT(t.kind, QD_FIXED);
    QL_CHECK_INT(t.duckdb, 2 + i);
    QL_CHECK_INT(t.width, widths[i]);
  }
  struct qd_type t = parse_ok("b");
  QL_CHECK_INT(t.kind, QD_BOOL);
  QL_CHECK_INT(t.duckdb, 1);
  t = parse_ok("f");
  QL_CHECK_INT(t.duckdb, 10);
  QL_CHECK_INT(t.width, 4);
  t = parse_ok("g");
  QL_CHECK_INT(t.duckdb, 11);
  t = parse_ok("u");
  QL_CHECK_INT(t.kind, QD_STRING);
  QL_CHECK_INT(t.duckdb, 17);
  QL_CHECK_INT(t.large, 0);
  t = parse_ok("U");
  QL_CHECK_INT(t.large, 1);
  QL_CHECK_INT(t.duckdb, 17);
  t = parse_ok("z");
  QL_CHECK_INT(t.duckdb, 18);
  QL_CHECK_INT(t.large, 0);
  t = parse_ok("Z");
  QL_CHECK_INT(t.duckdb, 18);
  QL_CHECK_INT(t.large, 1);
  t = parse_ok("vu"); /* string view: VARCHAR */
  QL_CHECK_INT(t.kind, QD_STRING);
  QL_CHECK_INT(t.duckdb, 17);
  QL_CHECK_INT(t.view, 1);
  t = parse_ok("vz"); /* binary view: BLOB */
  QL_CHECK_INT(t.duckdb, 18);
  QL_CHECK_INT(t.view, 1);
  t = parse_ok("tdD");
  QL_CHECK_INT(t.kind, QD_FIXED);
  QL_CHECK_INT(t.duckdb, 13);
  QL_CHECK_INT(t.width, 4);
  t = parse_ok("tdm");
  QL_CHECK_INT(t.kind, QD_DATE64);
  QL_CHECK_INT(t.duckdb, 13);
  /* Timestamps keep their unit without a zone, become microseconds with one. */
  const char *ts[] = {"tss:", "tsm:", "tsu:", "tsn:"};
  const int ts_ids[] = {20, 21, 12, 22};
  for (int i = 0; i < 4; i++) {
    t = parse_ok(ts[i]);
    QL_CHECK_INT(t.kind, QD_TIMESTAMP);
    QL_CHECK_INT(t.duckdb, ts_ids[i]);
    QL_CHECK_INT(t.width, 8);
  }
  t = parse_ok("tsn:UTC");
  QL_CHECK_INT(t.kind, QD_TIMESTAMPTZ);
  QL_CHECK_INT(t.duckdb, 31);
  QL_CHECK_INT(t.unit_num, 1);
  QL_CHECK_INT(t.unit_den, 1000);
  t = parse_ok("tss:Europe/Paris");
  QL_CHECK_INT(t.unit_num, 1000000);
  QL_CHECK_INT(t.unit_den, 1);
  t = parse_ok("tDm");
  QL_CHECK_INT(t.kind, QD_DURATION);
  QL_CHECK_INT(t.duckdb, 15);
  QL_CHECK_INT(t.unit_num, 1000);
  t = parse_ok("d:10,2");
  QL_CHECK_INT(t.kind, QD_DECIMAL);
  QL_CHECK_INT(t.duckdb, 19);
  QL_CHECK_INT(t.precision, 10);
  QL_CHECK_INT(t.scale, 2);
  QL_CHECK_INT(t.width, 8);
  QL_CHECK_INT(parse_ok("d:4,0").width, 2);
  QL_CHECK_INT(parse_ok("d:9,9").width, 4);
  QL_CHECK_INT(parse_ok("d:38,5,128").width, 16);
  parse_fails("d:39,2", "Arrow type 'd:39,2' (decimal) has no DuckDB mapping in qlink: DuckDB's DECIMAL holds "
                        "precision 1..38 and scale 0..precision in 128 bits");
  parse_fails("d:10,2,256", "Arrow type 'd:10,2,256' (decimal) has no DuckDB mapping in qlink: DuckDB's DECIMAL "
                            "holds precision 1..38 and scale 0..precision in 128 bits");
  parse_fails("d:5,6", "Arrow type 'd:5,6' (decimal) has no DuckDB mapping in qlink: DuckDB's DECIMAL holds "
                       "precision 1..38 and scale 0..precision in 128 bits");
  parse_fails("+m", "Arrow type '+m' has no DuckDB mapping in qlink");
  parse_fails("tsx:", "Arrow type 'tsx:' has no DuckDB mapping in qlink");
  parse_fails("e", "Arrow type 'e' has no DuckDB mapping in qlink");
  parse_fails("", "Arrow type '' has no DuckDB mapping in qlink");

  /* Function arguments: DuckDB type ids -> libqlink cell kinds. */
  for (int id = 1; id <= 9; id++) QL_CHECK_INT(qd_cell_kind_of(id), QL_CELL_INTEGER);
  QL_CHECK_INT(qd_cell_kind_of(10), QL_CELL_REAL);
  QL_CHECK_INT(qd_cell_kind_of(11), QL_CELL_REAL);
  QL_CHECK_INT(qd_cell_kind_of(19), QL_CELL_REAL); /* DECIMAL: 2.5 is a DECIMAL literal */
  QL_CHECK_INT(qd_cell_kind_of(17), QL_CELL_TEXT);
  QL_CHECK_INT(qd_cell_kind_of(18), QL_CELL_BLOB);
  QL_CHECK_INT(qd_cell_kind_of(36), QL_CELL_NULL);
  QL_CHECK_INT(qd_cell_kind_of(13), -1); /* DATE */
  QL_CHECK_INT(qd_cell_kind_of(24), -1); /* LIST */
  QL_CHECK_STR(qd_type_name(5), "BIGINT");
  QL_CHECK_STR(qd_type_name(17), "VARCHAR");
  QL_CHECK_STR(qd_type_name(31), "TIMESTAMP WITH TIME ZONE");
  QL_CHECK_STR(qd_type_name(36), "NULL");
  QL_CHECK_STR(qd_type_name(99), "(a DuckDB type)");
  QL_TEST_END();
}
