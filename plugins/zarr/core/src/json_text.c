/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: JSON with Python's non-finite tokens and integers beyond int64. See json_text.h. */
#include "json_text.h"

#include <stdlib.h>
#include <string.h>

static int is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '+' || c == '-';
}

/* Length of the integer literal at text[i] if it lies outside int64 (jansson
 * refuses those: "too big integer"), else 0. Such a literal is an integer
 * token ("-"? digits, no fraction or exponent) of more than 19 digits, or of
 * 19 digits above 9223372036854775807 (9223372036854775808 when negative). */
static size_t big_integer_at(const char *text, size_t n, size_t i) {
  size_t d = i + (text[i] == '-');
  size_t end = d;
  while (end < n && text[end] >= '0' && text[end] <= '9') end++;
  size_t digits = end - d;
  if (digits < 19 || (end < n && is_word_char(text[end]))) return 0;
  if (digits == 19 && memcmp(text + d, text[i] == '-' ? "9223372036854775808" : "9223372036854775807", 19) <= 0) {
    return 0;
  }
  return end - i;
}

/* Length of the token starting at text[i] (outside a string) that is to be
 * quoted, or 0: "NaN", "Infinity" or "-Infinity", or an integer outside
 * int64, standing alone (not the start or the end of a longer word such as
 * NaNx or 1Infinity). */
static size_t token_at(const char *text, size_t n, size_t i) {
  static const char *const tokens[] = {"NaN", "Infinity", "-Infinity"};
  if (i > 0 && is_word_char(text[i - 1])) return 0;
  if (text[i] == '-' || (text[i] >= '0' && text[i] <= '9')) {
    size_t len = big_integer_at(text, n, i);
    if (len) return len;
  }
  for (size_t t = 0; t < sizeof(tokens) / sizeof(tokens[0]); t++) {
    size_t len = strlen(tokens[t]);
    if (n - i >= len && memcmp(text + i, tokens[t], len) == 0 && (i + len == n || !is_word_char(text[i + len]))) {
      return len;
    }
  }
  return 0;
}

/* Walk the text outside strings; with `out`, copy it there, each
 * token_at token quoted. Returns the number of tokens found. */
static size_t rewrite(const char *text, size_t n, char *out) {
  size_t found = 0, o = 0;
  int in_string = 0;
  for (size_t i = 0; i < n;) {
    char c = text[i];
    if (in_string) {
      if (c == '\\' && i + 1 < n) {
        if (out) {
          out[o++] = c;
          out[o++] = text[i + 1];
        }
        i += 2;
        continue;
      }
      if (c == '"') in_string = 0;
    } else if (c == '"') {
      in_string = 1;
    } else if (c == 'N' || c == 'I' || c == '-' || (c >= '1' && c <= '9')) {
      size_t len = token_at(text, n, i);
      if (len) {
        found++;
        if (out) {
          out[o++] = '"';
          memcpy(out + o, text + i, len);
          o += len;
          out[o++] = '"';
        }
        i += len;
        continue;
      }
    }
    if (out) out[o++] = c;
    i++;
  }
  return found;
}

json_t *zr_json_parse(const char *text, size_t n, json_error_t *jerr) { return zr_json_parse_flags(text, n, 0, jerr); }

json_t *zr_json_parse_flags(const char *text, size_t n, size_t flags, json_error_t *jerr) {
  size_t found = rewrite(text, n, NULL);
  if (found == 0) return json_loadb(text, n, JSON_DECODE_ANY | flags, jerr);
  char *copy = malloc(n + 2 * found + 1);
  if (!copy) {
    memset(jerr, 0, sizeof(*jerr));
    strcpy(jerr->text, "out of memory");
    return NULL;
  }
  size_t len = n + 2 * found;
  rewrite(text, n, copy);
  json_t *doc = json_loadb(copy, len, JSON_DECODE_ANY | flags, jerr);
  free(copy);
  return doc;
}
