/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: reading the arrays of a group, consolidated or by listing.
 * See array.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "json_text.h"
#include "qlink/lib/object_store.h"
#include "qlink/lib/status.h"
#include "qlink_zarr/array.h"

void zr_group_free(struct zr_group *g) {
  if (!g) return;
  for (int64_t i = 0; i < g->n_arrays; i++) zr_array_free(&g->arrays[i]);
  free(g->arrays);
  free(g->subgroups);
  if (g->attrs) json_decref(g->attrs);
  memset(g, 0, sizeof(*g));
}

static int has_dims(const struct zr_array *a) { return a->ndim > 0 && a->dims[0] != NULL; }

/* Append a parsed array. 0-d (scalar) arrays are kept: a scalar coordinate
 * (CMIP's `height`, cfgrib's `step`) is a column of every table (model.c);
 * 0-d data variables make the scalars table there. */
static int keep_array(struct zr_group *g, struct zr_array *a, struct ql_error *error) {
  struct zr_array *grown = realloc(g->arrays, sizeof(*grown) * (size_t)(g->n_arrays + 1));
  if (!grown) {
    zr_array_free(a);
    return ql_error_set(error, QL_ENOMEM, "out of memory reading array metadata");
  }
  g->arrays = grown;
  g->arrays[g->n_arrays++] = *a;
  return QL_OK;
}

static int parse_one(const char *what, const char *name, int32_t format, const json_t *meta, const json_t *zattrs,
                     struct zr_group *g, struct ql_error *error) {
  struct zr_array a;
  int rc = format == 3 ? zr_array_parse_v3(name, meta, &a, error) : zr_array_parse_v2(name, meta, zattrs, &a, error);
  if (rc != QL_OK) {
    zr_array_free(&a);
    return ql_error_prefix(error, "zarr store %s: array '%s'", what, name);
  }
  if (a.ndim > 0 && !has_dims(&a)) {
    /* xarray refuses such a store too; dropping the array silently would
     * hide a variable the user expects. */
    zr_array_free(&a);
    return ql_error_set(error, QL_EDATA,
                        "zarr store %s: array '%s' has no dimension names (_ARRAY_DIMENSIONS / dimension_names)", what,
                        name);
  }
  return keep_array(g, &a, error);
}

/* A codec that sees only bytes (or elements of one byte): the stored
 * chunk reads the same whatever the element width. */
static int bytes_only_codec(int32_t id) {
  switch (id) {
    case ZR_CODEC_BYTES:
    case ZR_CODEC_BLOSC:
    case ZR_CODEC_ZSTD:
    case ZR_CODEC_ZLIB:
    case ZR_CODEC_GZIP:
    case ZR_CODEC_LZ4:
    case ZR_CODEC_CRC32C:
    case ZR_CODEC_BZ2:
    case ZR_CODEC_LZMA:
    case ZR_CODEC_CRC32:
    case ZR_CODEC_ADLER32:
    case ZR_CODEC_FLETCHER32:
    case ZR_CODEC_JENKINS: return 1;
    default: return 0;
  }
}

/* xarray's stackable(): no variable is named `dim`, and every array using
 * it holds bytes with `dim` last. */
static int stackable(const struct zr_group *g, const char *dim) {
  for (int64_t k = 0; k < g->n_arrays; k++) {
    const struct zr_array *a = &g->arrays[k];
    if (strcmp(a->name, dim) == 0) return 0;
    for (int32_t i = 0; i < a->ndim; i++) {
      if (a->dims[i] && strcmp(a->dims[i], dim) == 0 && (a->dtype.type != ZR_BYTES || i != a->ndim - 1)) return 0;
    }
  }
  return 1;
}

/* Fold the character dimension of `a` into its dtype (|S1 over (..., n)
 * becomes |S<n> over (...)), when its chunks hold whole strings, its codecs
 * see only bytes, and the rewritten array still names the stored chunks
 * (zr_chunk_key appends key_trailing_zeros). Left as it is otherwise. */
static int fold_characters(struct zr_array *a) {
  int32_t last = a->ndim - 1;
  int64_t n = a->shape[last];
  if (n < 1 || n > INT32_MAX || a->chunks[last] != n) return QL_OK;
  for (int32_t k = 0; k < a->codecs.n; k++) {
    if (!bytes_only_codec(a->codecs.codecs[k].id)) return QL_OK;
  }
  struct zr_array t = *a;
  t.ndim = last;
  t.key_trailing_zeros = a->key_trailing_zeros + 1;
  int64_t zeros[ZR_MAX_DIMS] = {0};
  char before[1200], after[1200];
  if (zr_chunk_key(a, zeros, before, sizeof(before)) != QL_OK || zr_chunk_key(&t, zeros, after, sizeof(after)) != QL_OK ||
      strcmp(before, after) != 0) {
    return QL_OK;
  }
  uint8_t *fill = malloc((size_t)n);
  if (!fill) return QL_ENOMEM;
  memset(fill, a->fill ? a->fill[0] : 0, (size_t)n); /* every character of an unwritten chunk is the fill */
  free(a->fill);
  a->fill = fill;
  free(a->dims[last]);
  a->dims[last] = NULL;
  a->shape[last] = 0;
  a->chunks[last] = 0;
  a->ndim = last;
  a->dtype.size = (int32_t)n;
  a->key_trailing_zeros = t.key_trailing_zeros;
  return QL_OK;
}

/* xarray's CharacterArrayCoder: an |S1 array whose last dimension is
 * stackable reads as fixed-width strings over its other dimensions (netCDF
 * char arrays, as raw conversions leave them). Arrays of one dimension (a
 * scalar string to xarray) stay characters. */
static int concat_characters(struct zr_group *g, struct ql_error *error) {
  uint8_t *fold = calloc((size_t)g->n_arrays + 1, 1);
  if (!fold) return ql_error_set(error, QL_ENOMEM, "out of memory");
  for (int64_t k = 0; k < g->n_arrays; k++) {
    const struct zr_array *a = &g->arrays[k];
    fold[k] = a->dtype.type == ZR_BYTES && a->dtype.size == 1 && a->ndim >= 2 && a->dims[a->ndim - 1] &&
              stackable(g, a->dims[a->ndim - 1]);
  }
  int rc = QL_OK;
  for (int64_t k = 0; k < g->n_arrays && rc == QL_OK; k++) {
    if (fold[k]) rc = fold_characters(&g->arrays[k]);
  }
  free(fold);
  return rc == QL_OK ? QL_OK : ql_error_set(error, rc, "out of memory");
}

/* Note a child group's name (for the error of a store whose data lies in
 * its groups only, as a DataTree's root): the first ZR_SUBGROUPS_SHOWN
 * names, then "...". Best effort: a name that does not fit is left out. */
#define ZR_SUBGROUPS_SHOWN 8
static void note_subgroup(struct zr_group *g, const char *name) {
  if (++g->n_subgroups > ZR_SUBGROUPS_SHOWN + 1) return;
  const char *piece = g->n_subgroups > ZR_SUBGROUPS_SHOWN ? "..." : name;
  size_t have = g->subgroups ? strlen(g->subgroups) : 0, len = strlen(piece);
  char *grown = realloc(g->subgroups, have + (have ? 2 : 0) + len + 1);
  if (!grown) return;
  if (have) memcpy(grown + have, ", ", 2), have += 2;
  memcpy(grown + have, piece, len + 1);
  g->subgroups = grown;
}

/* Length of the child name in `key` when it is "<name>/<doc>" (doc such as
 * ".zgroup"), or 0. */
static size_t child_key(const char *key, const char *doc) {
  size_t kl = strlen(key), dl = strlen(doc);
  return kl > dl + 1 && key[kl - dl - 1] == '/' && strcmp(key + kl - dl, doc) == 0 ? kl - dl - 1 : 0;
}

static int by_name(const void *x, const void *y) {
  return strcmp(((const struct zr_array *)x)->name, ((const struct zr_array *)y)->name);
}

static int valid_name(const char *name) {
  return name[0] && strchr(name, '/') == NULL && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

/* A key with a "." or ".." segment (or a leading '/') would read outside
 * the store's root. */
static int escapes(const char *key) {
  if (key[0] == '/') return 1;
  const char *p = key;
  while (*p) {
    const char *e = strchr(p, '/');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) return 1;
    if (!e) break;
    p = e + 1;
  }
  return 0;
}

/* A v3 member's metadata must be an object whose node_type is "array" or
 * "group" (the v3 specification; xarray refuses the store otherwise): a
 * member that is neither would silently lose its variable. */
static int check_node_type(const char *store, const char *name, const char *where, const json_t *doc, const char *nt,
                           struct ql_error *error) {
  if (!json_is_object(doc)) {
    return ql_error_set(error, QL_EDATA, "zarr store %s: %s '%s' is not a JSON object", store, where, name);
  }
  if (!nt || (strcmp(nt, "array") != 0 && strcmp(nt, "group") != 0)) {
    return ql_error_set(error, QL_EDATA, "zarr store %s: %s '%s' has node_type %s%s%s (expected \"array\" or \"group\")",
                        store, where, name, nt ? "'" : "", nt ? nt : "missing", nt ? "'" : "");
  }
  return QL_OK;
}

static int check_key(const char *what, const char *key, struct ql_error *error) {
  if (escapes(key)) {
    return ql_error_set(error, QL_EINVAL, "zarr store %s: metadata key '%s' lies outside the store", what, key);
  }
  return QL_OK;
}

int zr_group_from_consolidated(const char *what, const json_t *root, struct zr_group *out, struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  out->consolidated = 1;
  if (!json_is_object(root)) return ql_error_set(error, QL_EDATA, "zarr store %s: metadata is not a JSON object", what);
  json_t *fmt = json_object_get(root, "zarr_format");
  const char *key;
  json_t *value;
  if (json_is_integer(fmt) && json_integer_value(fmt) == 3) {
    out->zarr_format = 3;
    const char *node_type = json_string_value(json_object_get(root, "node_type"));
    if (!node_type || strcmp(node_type, "group") != 0) {
      return ql_error_set(error, QL_EDATA, "zarr store %s: the root is not a group (node_type '%s')", what,
                          node_type ? node_type : "missing");
    }
    json_t *attrs = json_object_get(root, "attributes");
    out->attrs = json_is_object(attrs) ? json_incref(attrs) : json_object();
    json_t *meta = json_object_get(json_object_get(root, "consolidated_metadata"), "metadata");
    if (!json_is_object(meta)) {
      return ql_error_set(error, QL_EDATA, "zarr store %s: no consolidated_metadata.metadata object", what);
    }
    json_object_foreach(meta, key, value) {
      QL_RETURN_NOT_OK(check_key(what, key, error));
      if (!valid_name(key)) continue; /* sub-group members are not in this Dataset */
      const char *nt = json_string_value(json_object_get(value, "node_type"));
      QL_RETURN_NOT_OK(check_node_type(what, key, "consolidated metadata entry", value, nt, error));
      if (strcmp(nt, "group") == 0) note_subgroup(out, key);
      if (strcmp(nt, "array") != 0) continue;
      QL_RETURN_NOT_OK(parse_one(what, key, 3, value, NULL, out, error));
    }
  } else {
    /* v2 .zmetadata: {"metadata": {"x/.zarray": {...}, "x/.zattrs": {...}}} */
    out->zarr_format = 2;
    json_t *meta = json_object_get(root, "metadata");
    if (!json_is_object(meta)) return ql_error_set(error, QL_EDATA, "zarr store %s: .zmetadata has no metadata object", what);
    json_t *attrs = json_object_get(meta, ".zattrs");
    out->attrs = json_is_object(attrs) ? json_incref(attrs) : json_object();
    json_object_foreach(meta, key, value) {
      QL_RETURN_NOT_OK(check_key(what, key, error));
      char name[1024];
      size_t group = child_key(key, ".zgroup");
      if (group > 0 && group < sizeof(name)) {
        memcpy(name, key, group);
        name[group] = '\0';
        if (valid_name(name)) note_subgroup(out, name);
      }
      size_t nl = child_key(key, ".zarray");
      if (nl == 0 || nl >= sizeof(name)) continue;
      memcpy(name, key, nl);
      name[nl] = '\0';
      if (!valid_name(name)) continue;
      char attrs_key[1100];
      snprintf(attrs_key, sizeof(attrs_key), "%s/.zattrs", name);
      QL_RETURN_NOT_OK(parse_one(what, name, 2, value, json_object_get(meta, attrs_key), out, error));
    }
  }
  if (out->n_arrays > 1) qsort(out->arrays, (size_t)out->n_arrays, sizeof(struct zr_array), by_name);
  return concat_characters(out, error);
}

/* Read and parse one JSON document; QL_ENOTFOUND passes through. */
static int load_json(const struct zr_store *store, const char *key, json_t **out, struct ql_error *error) {
  struct ql_bytes bytes;
  memset(&bytes, 0, sizeof(bytes));
  *out = NULL;
  QL_RETURN_NOT_OK(zr_store_get(store, key, &bytes, error));
  json_error_t jerr;
  *out = zr_json_parse((const char *)bytes.data, (size_t)bytes.size, &jerr);
  if (bytes.release) bytes.release(&bytes);
  if (!*out) {
    return ql_error_set(error, QL_EDATA, "zarr store %s: malformed JSON in '%s' at line %d: %s", store->url, key,
                        jerr.line, jerr.text);
  }
  return QL_OK;
}

static int list_arrays(const struct zr_store *store, int32_t format, struct zr_group *out, struct ql_error *error) {
  char **keys = NULL;
  int64_t n = 0;
  QL_RETURN_NOT_OK(zr_store_list(store, &keys, &n, error));
  const char *doc = format == 3 ? "zarr.json" : ".zarray";
  int rc = QL_OK;
  for (int64_t i = 0; i < n && rc == QL_OK; i++) {
    size_t group = format == 2 ? child_key(keys[i], ".zgroup") : 0;
    if (group > 0) {
      keys[i][group] = '\0';
      if (valid_name(keys[i])) note_subgroup(out, keys[i]);
      continue;
    }
    size_t nl = child_key(keys[i], doc);
    if (nl == 0) continue;
    keys[i][nl] = '\0';
    const char *name = keys[i];
    if (!valid_name(name)) continue;
    char key[1100];
    snprintf(key, sizeof(key), "%s/%s", name, doc);
    json_t *meta = NULL, *zattrs = NULL;
    rc = load_json(store, key, &meta, error);
    if (rc == QL_OK && format == 3) {
      const char *nt = json_string_value(json_object_get(meta, "node_type"));
      rc = check_node_type(store->url, name, "zarr.json of", meta, nt, error);
      if (rc == QL_OK && strcmp(nt, "group") == 0) note_subgroup(out, name);
      if (rc == QL_OK && strcmp(nt, "array") != 0) {
        json_decref(meta);
        continue;
      }
    }
    if (rc == QL_OK && format == 2) {
      snprintf(key, sizeof(key), "%s/.zattrs", name);
      struct ql_error quiet;
      memset(&quiet, 0, sizeof(quiet));
      int arc = load_json(store, key, &zattrs, &quiet);
      if (arc != QL_OK && arc != QL_ENOTFOUND) {
        ql_error_move(error, &quiet);
        rc = arc;
      }
      ql_error_release(&quiet);
    }
    if (rc == QL_OK) rc = parse_one(store->url, name, format, meta, zattrs, out, error);
    if (meta) json_decref(meta);
    if (zattrs) json_decref(zattrs);
  }
  zr_store_list_free(keys, n);
  if (rc == QL_OK && out->n_arrays > 1) qsort(out->arrays, (size_t)out->n_arrays, sizeof(struct zr_array), by_name);
  return rc;
}

/* No group document at the root: say whether the path is missing, a file,
 * or a directory without Zarr metadata. Object stores have no directories
 * and listing a whole tree to see whether anything lies under the path
 * could take minutes (a path at a parent folder of many stores), so only a
 * local path (file://, the local file system for every host) is looked at,
 * with one stat; it reads nothing. */
static int not_a_group(const struct zr_store *store, struct ql_error *error) {
  char *store_url = NULL, *path = NULL;
  struct ql_error quiet;
  memset(&quiet, 0, sizeof(quiet));
  int local = ql_url_split(store->url, &store_url, &path, &quiet) == QL_OK && strcmp(store_url, "file://") == 0;
  ql_error_release(&quiet);
  free(store_url);
  struct stat st;
  int missing = 0, file = 0;
  if (local) {
    size_t n = strlen(path) + 2;
    char *abs = malloc(n);
    if (abs) {
      snprintf(abs, n, "/%s", path);
      if (stat(abs, &st) != 0) {
        missing = errno == ENOENT || errno == ENOTDIR;
      } else {
        file = !S_ISDIR(st.st_mode);
      }
      free(abs);
    }
  }
  free(path);
  if (missing) {
    return ql_error_set(error, QL_ENOTFOUND, "zarr store %s: the path does not exist", store->url);
  }
  if (file) {
    return ql_error_set(error, QL_EINVAL,
                        "zarr store %s: a file, not a Zarr store (a directory holding zarr.json, .zmetadata or .zgroup)",
                        store->url);
  }
  return ql_error_set(error, QL_ENOTFOUND, "zarr store %s: not a Zarr group (no zarr.json, .zmetadata or .zgroup)",
                      store->url);
}

int zr_group_load(const struct zr_store *store, struct zr_group *out, struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  json_t *root = NULL;
  int rc = load_json(store, "zarr.json", &root, error);
  if (rc == QL_OK) {
    if (json_is_object(json_object_get(root, "consolidated_metadata")) &&
        json_is_object(json_object_get(json_object_get(root, "consolidated_metadata"), "metadata"))) {
      rc = zr_group_from_consolidated(store->url, root, out, error);
      json_decref(root);
      return rc;
    }
    const char *nt = json_string_value(json_object_get(root, "node_type"));
    json_t *fmt = json_object_get(root, "zarr_format");
    if (!json_is_integer(fmt) || json_integer_value(fmt) != 3 || !nt || strcmp(nt, "group") != 0) {
      /* nt is owned by root: format the message before releasing it. */
      if (nt && strcmp(nt, "array") == 0) {
        rc = ql_error_set(error, QL_EDATA,
                          "zarr store %s: zarr.json is an array, not a group (point path at the store that contains it)",
                          store->url);
      } else {
        rc = ql_error_set(error, QL_EDATA, "zarr store %s: zarr.json is not a v3 group (node_type '%s')", store->url,
                          nt ? nt : "missing");
      }
      json_decref(root);
      return rc;
    }
    json_t *attrs = json_object_get(root, "attributes");
    out->attrs = json_is_object(attrs) ? json_incref(attrs) : json_object();
    out->zarr_format = 3;
    json_decref(root);
    QL_RETURN_NOT_OK(list_arrays(store, 3, out, error));
    return concat_characters(out, error);
  }
  if (rc != QL_ENOTFOUND) return rc;
  ql_error_release(error);
  rc = load_json(store, ".zmetadata", &root, error);
  if (rc == QL_OK) {
    rc = zr_group_from_consolidated(store->url, root, out, error);
    json_decref(root);
    return rc;
  }
  if (rc != QL_ENOTFOUND) return rc;
  ql_error_release(error);
  rc = load_json(store, ".zgroup", &root, error);
  if (rc == QL_ENOTFOUND) {
    ql_error_release(error);
    if (load_json(store, ".zarray", &root, error) == QL_OK) {
      json_decref(root);
      ql_error_release(error);
      return ql_error_set(error, QL_EDATA,
                          "zarr store %s: .zarray found: this is an array, not a group (point path at the store that "
                          "contains it)",
                          store->url);
    }
    ql_error_release(error);
    return not_a_group(store, error);
  }
  if (rc != QL_OK) return rc;
  json_decref(root);
  out->zarr_format = 2;
  json_t *attrs = NULL;
  struct ql_error quiet;
  memset(&quiet, 0, sizeof(quiet));
  if (load_json(store, ".zattrs", &attrs, &quiet) != QL_OK) attrs = json_object();
  ql_error_release(&quiet);
  out->attrs = json_is_object(attrs) ? attrs : (attrs ? (json_decref(attrs), json_object()) : json_object());
  QL_RETURN_NOT_OK(list_arrays(store, 2, out, error));
  return concat_characters(out, error);
}
