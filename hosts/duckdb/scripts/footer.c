/* SPDX-License-Identifier: Apache-2.0 */
/* qlink-duckdb-footer FILE [DUCKDB_VERSION]: append the 512-byte metadata
 * footer DuckDB requires of a loadable extension: eight 32-byte fields,
 * written in reverse order ("4", platform, version, extension version, ABI
 * type, then three empty), followed by a 256-byte signature (zeros: an
 * unsigned extension, loaded with allow_unsigned_extensions / -unsigned).
 * Without DUCKDB_VERSION: a C API V1 extension (C API v1.5.6, C_STRUCT).
 * With it (e.g. v2.0.1): a C API V2 extension, C_STRUCT_UNSTABLE, which
 * DuckDB loads into that exact engine version only.
 * A build step: the link writes a fresh file each time, then this appends. */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: qlink-duckdb-footer FILE.duckdb_extension [DUCKDB_VERSION]\n");
    return 2;
  }
  /* Fields in the order DuckDB reads them (last field first in the file). */
  const char *fields[8] = {"4", "linux_amd64", "v1.5.6", "0.1.0", "C_STRUCT", "", "", ""};
  if (argc == 3) {
    if (argv[2][0] != 'v' || strlen(argv[2]) > 31) {
      fprintf(stderr, "qlink-duckdb-footer: '%s' is not a DuckDB version such as v2.0.1\n", argv[2]);
      return 2;
    }
    fields[2] = argv[2];
    fields[4] = "C_STRUCT_UNSTABLE";
  }
  unsigned char footer[512];
  memset(footer, 0, sizeof(footer));
  for (int i = 0; i < 8; i++) strncpy((char *)footer + (7 - i) * 32, fields[i], 31);
  FILE *f = fopen(argv[1], "ab");
  if (!f) {
    perror(argv[1]);
    return 1;
  }
  size_t w = fwrite(footer, 1, sizeof(footer), f);
  if (fclose(f) != 0 || w != sizeof(footer)) {
    perror(argv[1]);
    return 1;
  }
  return 0;
}
