/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: kerchunk reference sets ("virtual Zarr").
 *
 * A reference file maps Zarr keys (".zgroup", "t/.zarray", "t/0.0") to
 * their bytes, each one of:
 *   - inline text: a JSON string, its UTF-8 bytes (kerchunk writes JSON
 *     metadata and ASCII chunks so); a JSON object or array that is not a
 *     reference is its compact JSON text, as fsspec serialises it;
 *   - inline bytes: "base64:" followed by standard base64 (padding
 *     optional, no whitespace; array.h's zr_base64_decode);
 *   - a whole file: [url];
 *   - a byte range of a file: [url, offset, length] (bytes, offset >= 0,
 *     0 <= length <= ZR_REFS_MAX_RANGE).
 * Formats: version 1 ({"version": 1, "refs": {...}, "templates": {...}})
 * and version 0 (the flat {key: value} dict, no "version" member).
 * Templates: "{{name}}" in a url (spaces inside the braces allowed) is the
 * string templates[name], substituted once (a template's own braces are
 * kept as text: no recursion). `gen` (generated references) is refused.
 *
 * URLs: "scheme://..." and absolute local paths are taken as they are
 * (ql_url_split); any other url is relative to the reference file's folder:
 * joined to the file's url text up to its last '/', then split alike (".."
 * may climb to the root of that store, not above; in a URL, percent
 * escapes are decoded). A reference file
 * read from a store other than file:// and memory:// (an HTTP server, a
 * bucket) may not point at file:// or memory:// targets. Targets are read
 * as bytes, never as reference files, so references cannot loop.
 *
 * Errors (QL_EDATA unless said): malformed JSON (with line and column), an
 * unknown version, a value of another shape, bad base64, a negative or
 * absurd offset or length, an unknown template; a url ql_url_split
 * refuses (climbing above its store's root, a file URL naming a host:
 * QL_EINVAL); a local target of a remote file (QL_EINVAL); `gen`
 * (QL_ENOTSUP): each names the reference file and the key. */
#ifndef QLINK_ZARR_REFS_H
#define QLINK_ZARR_REFS_H

#include <stddef.h>
#include <stdint.h>

#include "qlink/types.h"
#include "qlink_zarr/store.h"

/* The largest byte range one reference may name (2 GiB, the largest chunk
 * the decoder takes), and the largest reference file read (1 GiB). */
#define ZR_REFS_MAX_RANGE ((int64_t)1 << 31)
#define ZR_REFS_MAX_FILE ((int64_t)1 << 30)
/* Distinct stores (scheme://authority) one reference set may name. */
#define ZR_REFS_MAX_STORES 256

enum zr_ref_kind { ZR_REF_INLINE = 0, ZR_REF_RANGE = 1, ZR_REF_WHOLE = 2 };

struct zr_ref {
  char *key;      /* the Zarr key, a valid object path (owned) */
  int32_t kind;   /* enum zr_ref_kind */
  int32_t target; /* RANGE, WHOLE: index into zr_refs.targets; -1 for INLINE */
  uint8_t *data;  /* INLINE: the bytes (owned; NULL when size is 0) */
  int64_t size;   /* INLINE: bytes of data; RANGE: the range's length; WHOLE: -1 */
  int64_t offset; /* RANGE: first byte in the target file */
};

/* A target file: the store serving it and the path inside that store. */
struct zr_ref_target {
  char *url;  /* as messages show it: store_url + "/" + path (owned) */
  char *path; /* inside its store, as ql_url_split gives it (owned) */
  int32_t store;
};

struct zr_refs {
  struct zr_ref *refs; /* sorted by key (strcmp), keys unique */
  int64_t n_refs;
  struct zr_ref_target *targets;
  int64_t n_targets;
  char **stores; /* distinct store URLs ("file://", "http://h:8000"), owned */
  int32_t n_stores;
  int32_t version; /* 0 or 1 */
};

/* Parse `n` bytes of a reference file read from `url` (a local path or
 * URL, as ql_url_split takes it: used to resolve relative urls and in
 * messages). On success `out` owns everything (zr_refs_free); on failure
 * `out` is empty. Thread-safe (no shared state). */
int zr_refs_parse(const char *text, size_t n, const char *url, struct zr_refs *out, struct ql_error *error);
void zr_refs_free(struct zr_refs *refs);

/* The reference of `key`, or NULL (binary search). */
const struct zr_ref *zr_refs_find(const struct zr_refs *refs, const char *key);

/* ---- the reference set as a store (refs_store.c) */

/* What `url` names by its extension (case-insensitive, trailing '/'
 * ignored): 1 a JSON reference file (".json"), 2 a Parquet reference set
 * (".parq", ".parquet"), 0 anything else (a Zarr store). */
int zr_refs_detect(const char *url);

/* Open the reference file `url` as a Zarr store (zr_store_open calls this
 * for zr_refs_detect() != 0): `out->os` serves each key from its
 * reference (head, get_range, read_into, list; thread-safe, immutable),
 * `out->root` is "", `out->url` the reference file's url; zr_store_close
 * releases it all. Every target is read through the object store that
 * `registry` gives for its URL (one get_store per distinct store, at
 * open), so each read meets the host's gates as a `path` would. A store
 * the registry refuses fails only the reads that need it.
 *
 * Errors: what zr_refs_parse gives; the reference file's own read
 * (QL_ENOTFOUND when absent; over ZR_REFS_MAX_FILE bytes QL_EOVERFLOW);
 * QL_ENOTSUP for Parquet references (no Parquet reader is linked); QL_EDATA
 * when no key is a Zarr group (.zgroup, .zmetadata or zarr.json).
 * Reads: a key absent from the set is QL_ENOTFOUND (a Zarr chunk never
 * written); a target that is missing (QL_EIO), refused, unreachable or
 * shorter than its range (QL_EDATA) fails naming the reference file, the
 * key, the target and the byte range. */
int zr_refs_store_open(const struct ql_object_store_registry *registry, const char *url, struct zr_store *out,
                       struct ql_error *error);

#endif /* QLINK_ZARR_REFS_H */
