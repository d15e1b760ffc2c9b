/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_ndarray: registering N-dimensional arrays held by the caller (an
 * xarray Dataset's variables: numpy buffers, or lazy arrays loaded block by
 * block) so that the plugin's `dataset` providers serve them as SQL tables
 * in the XQL model (qlink_zarr/model.h in plugins/zarr/core/include; README.md).
 *
 * The plugin exports qlink_plugin_init only (docs/abi.md R12), so the
 * caller reaches these functions through it: call qlink_plugin_init with
 * QL_ABI_VERSION_0_1; the descriptor's private_data (its last member) is
 * then a `const struct nd_api *` (check magic == ND_API_MAGIC and
 * struct_size), valid for as long as the library stays loaded; release the
 * descriptor as usual. dlopen of the same path returns the same handle, so
 * a process that opens qlink_ndarray.so itself (Python: ctypes.CDLL) and an
 * engine that loads it as a plugin share one registry. A registered dataset
 * is then named by its handle in a spec: `qlink_ndarray/dataset?id=H`, H the
 * 32 lowercase hex digits of 128 random bits (getrandom) that registration
 * wrote (table provider: option `table`; schema provider: every table).
 * The handle is the only key: whoever holds it can read the dataset, and
 * nothing else can (no small or sequential number is accepted), so a caller
 * keeps it to the connection or session it registered the dataset for and
 * unregisters it when that closes (README.md, "Handles").
 *
 * Ownership: nothing is copied at registration but names, shapes, strides,
 * chunk extents, attributes and null cells; `data` buffers are read in place during
 * scans and must stay valid and unchanged until `release(owner)` is
 * called. A block the buffer holds contiguously in C order (native byte
 * order, aligned for the element) is served without a copy: the record
 * batches' value buffers point into `data`. Other blocks are copied once
 * into the scan's C-order buffer. `release` is called exactly once, after
 * nd_unregister and once no table provider, plan, stream or record batch
 * built from the dataset is alive any more, from whatever thread
 * drops the last reference (possibly an engine's worker thread). If
 * nd_register fails, `release` is not called: the owner stays the caller's.
 *
 * Thread-safety: every function may be called from any thread; the
 * registry is guarded by a mutex. `load` callbacks run on engine threads,
 * concurrently for different blocks; they must be thread-safe.
 */
#ifndef QLINK_NDARRAY_H
#define QLINK_NDARRAY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Most dimensions a variable may have. */
#define ND_MAX_DIMS 32

/* A lazy variable's loader: write the box [start, start + count) (ndim
 * extents, each count >= 1, inside the shape) into `out`, C-contiguous, in
 * the variable's dtype and native byte order (prod(count) * itemsize
 * bytes). Return 0 on success; anything else fails the query, with the
 * NUL-terminated text written to `message` (at most `message_cap` bytes) as
 * the reason. Called once per variable per block a scan reads (a block's
 * bounding box of the selected rows), from engine threads, concurrently. */
typedef int (*nd_load_fn)(void *ctx, int32_t ndim, const int64_t *start, const int64_t *count, void *out,
                          char *message, size_t message_cap);

/* One variable of a dataset. */
struct nd_variable {
  const char *name;        /* unique within the dataset */
  int32_t ndim;            /* 0 .. ND_MAX_DIMS */
  int32_t is_coord;        /* 1: a coordinate (non-zero ndim 1 named as its dimension: the dimension's
                              values); 0: a data variable */
  const char *const *dims; /* ndim dimension names */
  const int64_t *shape;    /* ndim extents (>= 0); a dimension's extent must agree across variables */
  const char *dtype;       /* element type: a numpy typestr ("<f8", "|b1", "<i4", "<M8[ns]", "<m8[s]",
                              "<U12", "|S4"; byte order '<', '>', '|' or '=') or an Arrow format
                              ("b", "c", "C", "s", "S", "i", "I", "l", "L", "e", "f", "g", "tss:",
                              "tsm:", "tsu:", "tsn:", "tDs", "tDm", "tDu", "tDn") */
  const void *data;        /* in memory: the element at index 0 of every axis; NULL when `load` is given */
  const int64_t *strides;  /* in memory: bytes between elements along each axis (any sign, 0 for
                              broadcast axes); NULL: C-contiguous */
  const int64_t *chunks;   /* ndim extents >= 1 that cut the variable into blocks (a dask array's
                              chunk size, say); NULL: chosen so a block holds about 65536 elements,
                              split from the outermost axis in */
  const char *attrs_json;  /* the variable's attributes as a JSON object (each becomes Arrow field
                              metadata: strings as they are, other values as JSON), or NULL */
  nd_load_fn load;         /* lazy: the loader (data NULL); NULL for a variable in memory */
  void *load_ctx;          /* passed to load */
  const void *null_cell;   /* fixed-width strings ("<U<n>", "|S<n>") only, optional: the itemsize bytes
                              (native byte order) of a missing cell; cells equal to them are SQL NULL.
                              Choose bytes no real value has (UTF-32: a first code unit above
                              0x10FFFF, say). Copied at registration. NULL: no cell is missing */
};

/* "NDA2" little-endian: the API with handles (the first one, "RADN", took
 * and returned sequential int64 ids). */
#define ND_API_MAGIC 0x3241444Eu

/* Hex digits of a handle (128 bits); a handle's text is this many
 * lowercase hex digits and a NUL. */
#define ND_HANDLE_HEX 32

/* One entry of nd_api's `layout`: where a member of a struct this header
 * declares lies as compiled, so that a mirror of the struct in another
 * language (Python's ctypes, python/qlink/_ndarray.py) checks its size and
 * every member's offset against it, as the Rust mirrors of the ABI are
 * checked against the headers at compile time. */
struct nd_layout_entry {
  const char *type;   /* "nd_variable", "nd_api", "nd_layout_entry"; NULL ends the table */
  const char *member; /* the member's name; NULL: the struct itself (offset 0, size its sizeof) */
  uint32_t offset;    /* offsetof */
  uint32_t size;      /* sizeof */
};

/* The registration API (see the top of this file for how to reach it). */
struct nd_api {
  uint32_t struct_size; /* sizeof(struct nd_api) */
  uint32_t magic;       /* ND_API_MAGIC */

  /* Register a dataset of `n_vars` variables under a new handle, written
   * to `handle` (ND_HANDLE_HEX + 1 bytes: lowercase hex and a NUL) from
   * 128 bits of the kernel's randomness; returns 0. `name` (may be NULL)
   * names it in messages and EXPLAIN, with a serial number that is not a
   * key (the handle is never shown). `owner` is handed to `release`
   * (which may be NULL: nothing to release). On failure returns -1 with
   * the reason in `message` (a bad dtype, a dimension whose extent differs
   * between variables, data and load both or neither given, no randomness
   * ...) and `handle` empty. The dataset's tables are built once here to
   * check it; every provider opened later builds its own (cheap:
   * coordinates are copied). */
  int (*register_dataset)(const struct nd_variable *vars, int32_t n_vars, const char *name, void *owner,
                          void (*release)(void *owner), char *handle, char *message, size_t message_cap);
  /* Remove the dataset of `handle` from the registry (specs naming it fail
   * from now on; providers already open keep working). 0, or -1 for a
   * handle no registered dataset has. */
  int (*unregister_dataset)(const char *handle);
  /* Datasets registered and not yet released (unregistered ones still in
   * use count): for tests and leak checks. */
  int64_t (*live_count)(void);
  /* The layout of struct nd_variable, struct nd_api and struct
   * nd_layout_entry as the plugin was compiled: each struct's size and
   * every member's offset and size, ending with an entry whose type is
   * NULL. Static; for mirrors to check themselves before the first call. */
  const struct nd_layout_entry *layout;
};

#ifdef __cplusplus
}
#endif

#endif /* QLINK_NDARRAY_H */
