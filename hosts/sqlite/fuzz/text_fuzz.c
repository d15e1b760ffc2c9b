/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the SQLite host's parsers of outside input: date/time
 * text from SQL (qls_parse_timestamp, every unit) and its formatter on what
 * it parsed (the round trip must give a time that parses again). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cells.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char units[] = "smun";
  for (int u = 0; u < 4; u++) {
    int64_t v = 0;
    if (qls_parse_timestamp((const char *)data, (int64_t)size, units[u], &v) != 0) continue;
    struct qls_buf b = {0};
    if (qls_format_timestamp(v, units[u], &b) == 0) {
      int64_t again = 0;
      if (qls_parse_timestamp(b.data, b.len, units[u], &again) != 0 || again != v) abort();
    }
    qls_buf_free(&b);
  }
  return 0;
}
