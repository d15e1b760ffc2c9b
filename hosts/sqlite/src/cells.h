/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: Arrow cells as SQLite values (the type mapping).
 *
 * Pure C, no SQLite dependency, so the mapping is tested on its own
 * (cells_test.c). One function reads row `row` of an Arrow array into a
 * `struct qls_cell`, SQLite's five storage classes:
 *
 *   Arrow                         SQLite   value
 *   bool, int8..int64, uint8..32  INTEGER  as is (bool 0/1)
 *   uint64                        INTEGER  as is up to INT64_MAX, REAL above
 *   float16/32/64                 REAL     NaN becomes NULL (SQLite itself stores NaN as NULL)
 *   utf8, large_utf8              TEXT     the bytes, as is
 *   binary, large_binary,
 *   fixed_size_binary             BLOB     the bytes, as is
 *   timestamp (any unit, any tz)  TEXT     'YYYY-MM-DD HH:MM:SS[.fffffffff]' in UTC (a zone-less
 *                                          timestamp as written); the fraction keeps its significant
 *                                          digits (trailing zeros dropped), as SQLite's date
 *                                          functions read it
 *   date32, date64                TEXT     'YYYY-MM-DD'
 *   time32, time64                TEXT     'HH:MM:SS[.fffffffff]'
 *   duration (any unit)           INTEGER  nanoseconds (an overflow of int64 is an error)
 *   decimal128                    TEXT     the exact decimal ('-12.50' for d:4,2): REAL would round
 *   list, large_list, fixed list  TEXT     JSON array
 *   struct                        TEXT     JSON object (field names as keys)
 *   map                           TEXT     JSON object when the keys are strings, else an array of [key, value]
 *   null                          NULL
 *   dictionary-encoded            the mapping of its value type
 *
 * Inside JSON, numbers are numbers (NaN and infinities null), booleans
 * true/false, strings and temporal values strings, binary a hex string.
 *
 * Thread-safety: functions touch only their arguments.
 */
#ifndef QLS_CELLS_H
#define QLS_CELLS_H

#include <stdint.h>

#include "qlink/arrow_c.h"
#include "qlink/error.h"

enum qls_class { QLS_NULL = 0, QLS_INTEGER = 1, QLS_REAL = 2, QLS_TEXT = 3, QLS_BLOB = 4 };

/* A growable byte buffer; zero-initialise, free with qls_buf_free. */
struct qls_buf {
  char *data;
  int64_t len;
  int64_t cap;
};
void qls_buf_free(struct qls_buf *b);

/* One value. For TEXT and BLOB, `data`/`size` point either into the Arrow
 * array (borrowed for as long as the array) or into the scratch buffer given
 * to qls_cell_read (valid until that buffer is next used). */
struct qls_cell {
  int32_t klass; /* enum qls_class */
  int64_t i;
  double f;
  const char *data;
  int64_t size;
};

/* The SQLite column type declared for a field of `format` ("INTEGER",
 * "REAL", "TEXT", "BLOB", "" for the null type), or NULL for a format this
 * mapping does not cover (run-end encoded, views, unions, decimal256,
 * intervals): the caller refuses the table naming the column. `schema` is
 * the field (its children and dictionary are checked too). */
const char *qls_decltype(const struct ArrowSchema *schema);

/* Read row `row` (0-based, before the array's offset is applied) of `array`
 * (of type `schema`) into `out`; text that has to be formatted goes into
 * `scratch`. QL_EINVAL naming the type for an unsupported format,
 * QL_EOVERFLOW for a duration beyond int64 nanoseconds, QL_ENOMEM. */
int qls_cell_read(const struct ArrowSchema *schema, const struct ArrowArray *array, int64_t row,
                  struct qls_cell *out, struct qls_buf *scratch, struct ql_error *error);

/* Format a timestamp `v` of `unit` ('s','m','u','n') as the TEXT above,
 * appended to `b`. QL_ENOMEM. */
int qls_format_timestamp(int64_t v, char unit, struct qls_buf *b);

/* Parse SQLite date/time text ('YYYY-MM-DD', 'YYYY-MM-DD HH:MM',
 * 'YYYY-MM-DD HH:MM:SS', 'YYYY-MM-DD HH:MM:SS.f...') into a count of `unit`
 * since the epoch, rounded down. 0 on success, -1 when the text has another
 * shape or the time does not fit the unit's int64 range (then nothing is
 * pushed down for it). */
int qls_parse_timestamp(const char *text, int64_t size, char unit, int64_t *out);

#endif /* QLS_CELLS_H */
