/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: parsing kerchunk reference sets. See refs.h. */
#include "refs.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_text.h"
#include "qlink/lib/object_store.h"
#include "qlink/lib/status.h"
#include "qlink_zarr/array.h"

/* ------------------------------------------------- a string -> index map */

struct strmap {
  struct {
    const char *s; /* borrowed: the owner's string, which outlives the map */
    int32_t idx;
  } *slots;
  size_t cap, n;
};

static uint64_t fnv1a(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

static int32_t strmap_get(const struct strmap *m, const char *s) {
  if (!m->cap) return -1;
  for (size_t i = fnv1a(s) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (!m->slots[i].s) return -1;
    if (strcmp(m->slots[i].s, s) == 0) return m->slots[i].idx;
  }
}

static int strmap_put(struct strmap *m, const char *s, int32_t idx) {
  if ((m->n + 1) * 2 > m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    struct strmap grown = {calloc(cap, sizeof(*m->slots)), cap, 0};
    if (!grown.slots) return QL_ENOMEM;
    for (size_t i = 0; i < m->cap; i++) {
      if (m->slots[i].s) strmap_put(&grown, m->slots[i].s, m->slots[i].idx);
    }
    free(m->slots);
    *m = grown;
  }
  size_t i = fnv1a(s) & (m->cap - 1);
  while (m->slots[i].s) i = (i + 1) & (m->cap - 1);
  m->slots[i].s = s;
  m->slots[i].idx = idx;
  m->n++;
  return QL_OK;
}

/* ------------------------------------------------------------ the parser */

struct parser {
  const char *url;   /* the reference file, for messages */
  char *base_store;  /* its store URL ("file://", "http://h:8000") */
  size_t base_len;   /* relative urls start after url[0, base_len): its text up to its last '/' */
  int base_local;    /* read from file:// or memory:// */
  const json_t *templates;
  struct zr_refs *out;
  int64_t cap_refs, cap_targets;
  struct strmap target_map, store_map;
};

static int is_local_store(const char *store) { return strcmp(store, "file://") == 0 || strcmp(store, "memory://") == 0; }

static int has_scheme(const char *u) {
  if (!isalpha((unsigned char)u[0])) return 0;
  size_t i = 1;
  while (isalnum((unsigned char)u[i]) || u[i] == '+' || u[i] == '-' || u[i] == '.') i++;
  return strncmp(u + i, "://", 3) == 0;
}

static char *join3(const char *a, const char *sep, const char *b) {
  size_t n = strlen(a) + strlen(sep) + strlen(b) + 1;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s%s%s", a, sep, b);
  return s;
}

/* `raw` with each "{{ name }}" replaced by templates[name] (malloc'd). */
static int expand_templates(const struct parser *p, const char *key, const char *raw, char **out,
                            struct ql_error *error) {
  *out = NULL;
  size_t cap = strlen(raw) + 1, o = 0;
  char *buf = malloc(cap);
  if (!buf) return ql_error_set(error, QL_ENOMEM, "out of memory");
  for (const char *s = raw; *s;) {
    const char *open = p->templates ? strstr(s, "{{") : NULL;
    const char *close = open ? strstr(open + 2, "}}") : NULL;
    const char *piece = s;
    size_t len = open && close ? (size_t)(open - s) : strlen(s);
    const char *value = NULL;
    if (open && close) {
      const char *a = open + 2, *b = close;
      while (a < b && *a == ' ') a++;
      while (b > a && b[-1] == ' ') b--;
      char name[128];
      if ((size_t)(b - a) >= sizeof(name)) {
        free(buf);
        return ql_error_set(error, QL_EDATA, "kerchunk references %s: key '%s': template name in '%s' is too long",
                            p->url, key, raw);
      }
      memcpy(name, a, (size_t)(b - a));
      name[b - a] = '\0';
      value = json_string_value(json_object_get(p->templates, name));
      if (!value) {
        free(buf);
        return ql_error_set(error, QL_EDATA, "kerchunk references %s: key '%s': url '%s' uses template '%s', which "
                            "templates does not define as a string", p->url, key, raw, name);
      }
    }
    size_t vlen = value ? strlen(value) : 0;
    if (o + len + vlen + 1 > cap) {
      cap = (o + len + vlen + 1) * 2;
      char *grown = realloc(buf, cap);
      if (!grown) {
        free(buf);
        return ql_error_set(error, QL_ENOMEM, "out of memory");
      }
      buf = grown;
    }
    memcpy(buf + o, piece, len);
    o += len;
    if (value) memcpy(buf + o, value, vlen), o += vlen;
    s = value ? close + 2 : piece + len;
  }
  buf[o] = '\0';
  *out = buf;
  return QL_OK;
}

/* The store and path of target url `u` (already expanded): a relative
 * url is joined to the reference file's own text up to its last '/', and
 * that split as the file's url was, so ".." and percent escapes follow the
 * same rules (ql_url_split: no climbing above the store's root). */
static int split_target(const struct parser *p, const char *key, const char *u, char **store, char **path,
                        struct ql_error *error) {
  *store = *path = NULL;
  if (!u[0]) return ql_error_set(error, QL_EDATA, "kerchunk references %s: key '%s': empty url", p->url, key);
  int relative = !has_scheme(u) && u[0] != '/';
  char *joined = relative ? malloc(p->base_len + strlen(u) + 1) : NULL;
  if (relative && !joined) return ql_error_set(error, QL_ENOMEM, "out of memory");
  if (relative) {
    memcpy(joined, p->url, p->base_len);
    strcpy(joined + p->base_len, u);
  }
  int rc = ql_url_split(relative ? joined : u, store, path, error);
  free(joined);
  if (rc != QL_OK) return ql_error_prefix(error, "kerchunk references %s: key '%s' -> '%s'", p->url, key, u);
  if (!p->base_local && is_local_store(*store)) {
    return ql_error_set(error, QL_EINVAL, "kerchunk references %s: key '%s' -> '%s' is refused: a reference file "
                        "read from %s may not point at local files (file://, memory://)", p->url, key, u,
                        p->base_store);
  }
  return QL_OK;
}

static int add_store(struct parser *p, char *store, int32_t *idx, struct ql_error *error) {
  struct zr_refs *r = p->out;
  *idx = strmap_get(&p->store_map, store);
  if (*idx >= 0) {
    free(store);
    return QL_OK;
  }
  if (r->n_stores >= ZR_REFS_MAX_STORES) {
    free(store);
    return ql_error_set(error, QL_EDATA, "kerchunk references %s name more than %d stores (scheme://host): refused",
                        p->url, ZR_REFS_MAX_STORES);
  }
  char **grown = realloc(r->stores, sizeof(*grown) * (size_t)(r->n_stores + 1));
  if (!grown) {
    free(store);
    return ql_error_set(error, QL_ENOMEM, "out of memory");
  }
  r->stores = grown;
  r->stores[r->n_stores] = store;
  *idx = r->n_stores++;
  if (strmap_put(&p->store_map, store, *idx) != QL_OK) return ql_error_set(error, QL_ENOMEM, "out of memory");
  return QL_OK;
}

/* The index of raw url `raw`'s target, added on first sight. */
static int resolve(struct parser *p, const char *key, const char *raw, int32_t *target, struct ql_error *error) {
  char *u = NULL, *store = NULL, *path = NULL, *url = NULL;
  int rc = expand_templates(p, key, raw, &u, error);
  if (rc == QL_OK) rc = split_target(p, key, u, &store, &path, error);
  free(u);
  if (rc == QL_OK && !(url = join3(store, "/", path))) rc = ql_error_set(error, QL_ENOMEM, "out of memory");
  if (rc == QL_OK && (*target = strmap_get(&p->target_map, url)) >= 0) {
    free(store);
    free(path);
    free(url);
    return QL_OK;
  }
  struct zr_refs *r = p->out;
  if (rc == QL_OK && r->n_targets == p->cap_targets) {
    int64_t cap = p->cap_targets ? p->cap_targets * 2 : 16;
    struct zr_ref_target *grown = cap < INT32_MAX ? realloc(r->targets, sizeof(*grown) * (size_t)cap) : NULL;
    if (!grown) rc = ql_error_set(error, QL_ENOMEM, "out of memory");
    else r->targets = grown, p->cap_targets = cap;
  }
  int32_t s = -1;
  if (rc == QL_OK) {
    rc = add_store(p, store, &s, error);
    store = NULL;
  }
  if (rc != QL_OK) {
    free(store);
    free(path);
    free(url);
    return rc;
  }
  struct zr_ref_target *t = &r->targets[r->n_targets];
  t->url = url;
  t->path = path;
  t->store = s;
  *target = (int32_t)r->n_targets++;
  if (strmap_put(&p->target_map, url, *target) != QL_OK) return ql_error_set(error, QL_ENOMEM, "out of memory");
  return QL_OK;
}

/* [url] or [url, offset, length]. */
static int parse_target(struct parser *p, const char *key, const json_t *v, struct zr_ref *r,
                        struct ql_error *error) {
  size_t n = json_array_size(v);
  const char *u = json_string_value(json_array_get(v, 0));
  if ((n != 1 && n != 3) || !u) {
    return ql_error_set(error, QL_EDATA, "kerchunk references %s: key '%s': a reference list must be [url] or "
                        "[url, offset, length] with a string url (got %zu items)", p->url, key, n);
  }
  if (n == 3) {
    const json_t *off = json_array_get(v, 1), *len = json_array_get(v, 2);
    if (!json_is_integer(off) || !json_is_integer(len)) {
      return ql_error_set(error, QL_EDATA, "kerchunk references %s: key '%s' -> '%s': offset and length must be "
                          "integers", p->url, key, u);
    }
    r->offset = json_integer_value(off);
    r->size = json_integer_value(len);
    if (r->offset < 0 || r->size < 0 || r->size > ZR_REFS_MAX_RANGE || r->offset > INT64_MAX - r->size) {
      return ql_error_set(error, QL_EDATA, "kerchunk references %s: key '%s' -> '%s': offset %lld and length %lld "
                          "are out of range (offset >= 0, 0 <= length <= %lld)", p->url, key, u,
                          (long long)r->offset, (long long)r->size, (long long)ZR_REFS_MAX_RANGE);
    }
    r->kind = ZR_REF_RANGE;
  } else {
    r->kind = ZR_REF_WHOLE;
    r->size = -1;
  }
  return resolve(p, key, u, &r->target, error);
}

static int parse_value(struct parser *p, const char *key, const json_t *v, struct zr_ref *r, struct ql_error *error) {
  r->target = -1;
  if (json_is_array(v) && json_is_string(json_array_get(v, 0))) return parse_target(p, key, v, r, error);
  if (json_is_string(v)) {
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n >= 7 && memcmp(s, "base64:", 7) == 0) {
      /* array.h's decoder; a NUL inside the text is no base64 */
      int rc = strlen(s + 7) == n - 7 ? zr_base64_decode(s + 7, &r->data, &r->size) : QL_EDATA;
      if (rc == QL_ENOMEM) return ql_error_set(error, QL_ENOMEM, "out of memory");
      if (rc != QL_OK) {
        return ql_error_set(error, QL_EDATA, "kerchunk references %s: key '%s': bad base64 (%zu characters)", p->url,
                            key, n - 7);
      }
      return QL_OK;
    }
    r->data = n ? malloc(n) : NULL;
    if (n && !r->data) return ql_error_set(error, QL_ENOMEM, "out of memory");
    if (n) memcpy(r->data, s, n);
    r->size = (int64_t)n;
    return QL_OK;
  }
  if (json_is_object(v) || json_is_array(v)) {
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!text) return ql_error_set(error, QL_ENOMEM, "out of memory");
    r->data = (uint8_t *)text;
    r->size = (int64_t)strlen(text);
    return QL_OK;
  }
  return ql_error_set(error, QL_EDATA, "kerchunk references %s: key '%s': expected text, \"base64:...\", [url] or "
                      "[url, offset, length]", p->url, key);
}

/* A key that is a valid object path: not empty, no empty, "." or ".."
 * segment (a leading '/' was dropped, as kerchunk drops it). */
static int valid_key(const char *k) {
  if (!k[0]) return 0;
  for (const char *s = k;;) {
    const char *e = strchr(s, '/');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    if (len == 0 || (len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.')) return 0;
    if (!e) return 1;
    s = e + 1;
  }
}

static int add_ref(struct parser *p, const char *key, const json_t *v, struct ql_error *error) {
  struct zr_refs *r = p->out;
  if (key[0] == '/') key++;
  if (!valid_key(key)) {
    return ql_error_set(error, QL_EDATA, "kerchunk references %s: key '%s' is not a valid Zarr key", p->url, key);
  }
  if (r->n_refs == p->cap_refs) {
    int64_t cap = p->cap_refs ? p->cap_refs * 2 : 64;
    struct zr_ref *grown = realloc(r->refs, sizeof(*grown) * (size_t)cap);
    if (!grown) return ql_error_set(error, QL_ENOMEM, "out of memory");
    r->refs = grown;
    p->cap_refs = cap;
  }
  struct zr_ref *ref = &r->refs[r->n_refs];
  memset(ref, 0, sizeof(*ref));
  ref->key = strdup(key);
  if (!ref->key) return ql_error_set(error, QL_ENOMEM, "out of memory");
  r->n_refs++; /* owned from here, freed with the set on failure */
  return parse_value(p, key, v, ref, error);
}

static int by_key(const void *a, const void *b) {
  return strcmp(((const struct zr_ref *)a)->key, ((const struct zr_ref *)b)->key);
}

/* The references of a parsed document, version 1 or 0. */
static int parse_doc(struct parser *p, const json_t *doc, struct ql_error *error) {
  if (!json_is_object(doc)) {
    return ql_error_set(error, QL_EDATA, "kerchunk references %s: the document is not a JSON object", p->url);
  }
  const json_t *version = json_object_get(doc, "version"), *refs = doc;
  if (!version && (json_object_get(doc, "zarr_format") || json_object_get(doc, "metadata"))) {
    return ql_error_set(error, QL_EDATA, "kerchunk references %s: this is Zarr metadata (zarr.json, .zmetadata), not "
                        "a reference file: point path at the store's folder", p->url);
  }
  if (version) {
    if (!json_is_integer(version) || json_integer_value(version) != 1) {
      return ql_error_set(error, QL_EDATA, "kerchunk references %s: unsupported version (1, or 0 without a version "
                          "member, are read)", p->url);
    }
    p->out->version = 1;
    refs = json_object_get(doc, "refs");
    if (!json_is_object(refs)) {
      return ql_error_set(error, QL_EDATA, "kerchunk references %s: version 1 without a \"refs\" object", p->url);
    }
    const json_t *gen = json_object_get(doc, "gen");
    if (json_array_size(gen) > 0) {
      return ql_error_set(error, QL_ENOTSUP, "kerchunk references %s: generated references (\"gen\") are not "
                          "supported: write them out as \"refs\"", p->url);
    }
    const json_t *templates = json_object_get(doc, "templates");
    if (templates && !json_is_object(templates)) {
      return ql_error_set(error, QL_EDATA, "kerchunk references %s: \"templates\" is not an object", p->url);
    }
    p->templates = json_object_size(templates) ? templates : NULL;
  }
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)refs, key, v) { QL_RETURN_NOT_OK(add_ref(p, key, v, error)); }
  struct zr_refs *r = p->out;
  if (r->n_refs > 1) qsort(r->refs, (size_t)r->n_refs, sizeof(*r->refs), by_key);
  for (int64_t i = 1; i < r->n_refs; i++) {
    if (strcmp(r->refs[i - 1].key, r->refs[i].key) == 0) {
      return ql_error_set(error, QL_EDATA, "kerchunk references %s: key '%s' appears twice (with and without a "
                          "leading '/')", p->url, r->refs[i].key);
    }
  }
  return QL_OK;
}

/* Where relative urls start: the reference file's store and folder. */
static int parser_base(struct parser *p, const char *url, struct ql_error *error) {
  char *store = NULL, *path = NULL;
  QL_RETURN_NOT_OK(ql_url_split(url, &store, &path, error));
  free(path);
  const char *slash = strrchr(url, '/');
  p->base_len = slash ? (size_t)(slash - url) + 1 : 0;
  p->base_store = store;
  p->base_local = is_local_store(store);
  return QL_OK;
}

int zr_refs_parse(const char *text, size_t n, const char *url, struct zr_refs *out, struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  struct parser p;
  memset(&p, 0, sizeof(p));
  p.url = url;
  p.out = out;
  int rc = parser_base(&p, url, error);
  if (rc != QL_OK) rc = ql_error_prefix(error, "kerchunk references %s", url);
  json_t *doc = NULL;
  if (rc == QL_OK) {
    json_error_t jerr;
    /* NUL inside a string is inline bytes kerchunk wrote as text */
    doc = zr_json_parse_flags(text, n, JSON_ALLOW_NUL, &jerr);
    if (!doc) {
      rc = ql_error_set(error, QL_EDATA, "kerchunk references %s: malformed JSON at line %d, column %d: %s", url,
                        jerr.line, jerr.column, jerr.text);
    }
  }
  if (rc == QL_OK) rc = parse_doc(&p, doc, error);
  if (doc) json_decref(doc);
  free(p.base_store);
  free(p.target_map.slots);
  free(p.store_map.slots);
  if (rc != QL_OK) zr_refs_free(out);
  return rc;
}

void zr_refs_free(struct zr_refs *refs) {
  for (int64_t i = 0; i < refs->n_refs; i++) {
    free(refs->refs[i].key);
    free(refs->refs[i].data);
  }
  for (int64_t i = 0; i < refs->n_targets; i++) {
    free(refs->targets[i].url);
    free(refs->targets[i].path);
  }
  for (int32_t i = 0; i < refs->n_stores; i++) free(refs->stores[i]);
  free(refs->refs);
  free(refs->targets);
  free(refs->stores);
  memset(refs, 0, sizeof(*refs));
}

const struct zr_ref *zr_refs_find(const struct zr_refs *refs, const char *key) {
  int64_t lo = 0, hi = refs->n_refs;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    int c = strcmp(refs->refs[mid].key, key);
    if (c == 0) return &refs->refs[mid];
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}
