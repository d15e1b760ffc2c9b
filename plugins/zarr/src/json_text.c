/* qlink_zarr: JSON with Python's non-finite tokens. See json_text.h. */
#include "json_text.h"

#include <stdlib.h>
#include <string.h>

static int is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '+' || c == '-';
}

/* Length of the non-finite token starting at text[i] (outside a string),
 * or 0: "NaN", "Infinity" or "-Infinity", standing alone (not the start or
 * the end of a longer word such as NaNx or 1Infinity). */
static size_t token_at(const char *text, size_t n, size_t i) {
  static const char *const tokens[] = {"NaN", "Infinity", "-Infinity"};
  if (i > 0 && is_word_char(text[i - 1])) return 0;
  for (size_t t = 0; t < sizeof(tokens) / sizeof(tokens[0]); t++) {
    size_t len = strlen(tokens[t]);
    if (n - i >= len && memcmp(text + i, tokens[t], len) == 0 && (i + len == n || !is_word_char(text[i + len]))) {
      return len;
    }
  }
  return 0;
}

/* Walk the text outside strings; with `out`, copy it there, each
 * non-finite token quoted. Returns the number of tokens found. */
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
    } else if (c == 'N' || c == 'I' || c == '-') {
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

json_t *zr_json_parse(const char *text, size_t n, json_error_t *jerr) {
  size_t found = rewrite(text, n, NULL);
  if (found == 0) return json_loadb(text, n, JSON_DECODE_ANY, jerr);
  char *copy = malloc(n + 2 * found + 1);
  if (!copy) {
    memset(jerr, 0, sizeof(*jerr));
    strcpy(jerr->text, "out of memory");
    return NULL;
  }
  size_t len = n + 2 * found;
  rewrite(text, n, copy);
  json_t *doc = json_loadb(copy, len, JSON_DECODE_ANY, jerr);
  free(copy);
  return doc;
}
