/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the ELF dynamic-symbol reader of qlink-check
 * (exports.c) over arbitrary bytes, which must never read out of bounds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* A private copy: ASan then flags any read past the input. */
  unsigned char *copy = malloc(size ? size : 1);
  if (!copy) return 0;
  if (size) memcpy(copy, data, size);
  FILE *out = fopen("/dev/null", "w");
  if (out) {
    struct ql_checker ck;
    memset(&ck, 0, sizeof ck);
    ck.out = out;
    ck.path = "fuzz-input";
    ql_check_exports_image(&ck, copy, size, "fuzz-input");
    fclose(out);
  }
  free(copy);
  return 0;
}
