/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_netcdf: netCDF files (netCDF-3 classic, 64-bit offset, CDF5;
 * netCDF-4 / HDF5) as a chunk source of qlink_zarr's table model
 * (qlink_zarr/model.h). libnetcdf reads every byte; this plugin maps its
 * variables onto the model's arrays and serves boxes of them.
 *
 * Thread-safety: libnetcdf (and the HDF5 under it) is not thread-safe.
 * Every nc_* call of the plugin runs between ncf_lock() and ncf_unlock(),
 * one process-wide mutex: scans of several partitions (and of several
 * datasets) read one box at a time. Datasets are immutable once opened and
 * shared across threads (model.h).
 */
#ifndef QLINK_NETCDF_NCF_H
#define QLINK_NETCDF_NCF_H

#include <stddef.h>
#include <stdint.h>

#include "qlink/services.h"
#include "qlink_zarr/model.h"

/* The process-wide mutex around libnetcdf (lock.c). Not recursive. */
void ncf_lock(void);
void ncf_unlock(void);
/* Called (lock held) after each successful nc_open: the first call
 * registers the exit handler, after libnetcdf registered HDF5's. */
void ncf_opened(void);
/* 1 once the process exits (read with the lock held): libnetcdf and HDF5
 * may be torn down, so no nc_* call is made any more (files are left to
 * the kernel, reads fail). */
int ncf_exiting(void);

/* Files larger than this are refused from stores other than file:// (they
 * are read whole into memory for nc_open_mem): 1 GiB. */
#define NCF_MAX_MEMORY_BYTES ((int64_t)1 << 30)

/* A classic header declaring more dimensions, attributes and variables
 * than this in all is refused (libnetcdf holds each in memory): 2^22. */
#define NCF_MAX_HEADER_ITEMS ((int64_t)1 << 22)

/* Check a classic (CDF-1, CDF-2, CDF-5) header before libnetcdf parses
 * it (header.c): every count it declares must fit in the bytes the file
 * holds (libnetcdf 4.9 allocates declared counts up front and crashes when
 * that fails), names are non-empty, types exist in the version, ranks are
 * at most NC_MAX_VAR_DIMS and dimension ids name a dimension. The bytes
 * are `mem[0, size)`, or the file open at `fd` (>= 0: read with pread,
 * its size from fstat). Anything not starting "CDF" is QL_OK (HDF5's and
 * libnetcdf's own checks apply). QL_EDATA naming `label` and the byte
 * offset; QL_ENOTSUP over NCF_MAX_HEADER_ITEMS; QL_EIO if `fd` fails.
 * Thread-safe (no libnetcdf call). */
int ncf_header_check(int fd, const uint8_t *mem, uint64_t size, const char *label, struct ql_error *error);

/* HDF5's chunk cache of every netCDF-4 variable (nc_set_chunk_cache before
 * each open): netCDF-C 4.10's defaults, 64 MiB and 1000 slots per open
 * variable, filled only by chunks that are read. */
#define NCF_CHUNK_CACHE_BYTES ((size_t)64 << 20)
#define NCF_CHUNK_CACHE_SLOTS ((size_t)1000)

/* One input file, checked by the host's object-store gate (paths.c). */
struct ncf_input {
  char *label;  /* the file as messages name it: its local path or URL (owned) */
  int fd;       /* file:// inputs: an open descriptor (read-only), else -1 */
  uint8_t *mem; /* other stores: the file's bytes (owned), else NULL */
  size_t mem_len;
};

/* The files `spec` names (the `path` option): one file, a folder (its
 * files ending in ".nc", sorted by name) or a glob in the last path
 * component (DIR/era5_*.nc, DIR/era5_19??.nc; sorted by name). Every
 * listing and every file goes through the store that `registry` hands out
 * for the spec's URL (a host's sandbox gate: DuckDB's allowed_directories),
 * so a file the host refuses is never opened. A file:// file is opened
 * with open(2) after the store's head allowed it; other stores' files are
 * read whole (at most NCF_MAX_MEMORY_BYTES). *out: malloc'd array of *n
 * inputs (ncf_inputs_free). Errors name the spec and the file: QL_ENOTFOUND
 * (no such file, nothing matches), the store's refusal, QL_EOVERFLOW (too
 * large). */
int ncf_inputs_resolve(const struct ql_object_store_registry *registry, const char *spec, struct ncf_input **out,
                       int32_t *n, struct ql_error *error);
void ncf_inputs_free(struct ncf_input *inputs, int32_t n);

/* One open file of a dataset. */
struct ncf_file {
  char *label;       /* owned */
  int ncid;          /* the open file, or -1 */
  int gid;           /* the group served (ncid itself for the root group) */
  uint8_t *mem;      /* nc_open_mem's bytes (owned; outlive the open file) */
  int64_t rec_start; /* first record of this file along the record dimension */
  int64_t rec_len;   /* its records */
};

/* What the source keeps per group array (same index). */
struct ncf_var {
  int32_t nc_type;  /* NC_BYTE ... NC_STRING */
  int32_t nc_ndim;  /* the variable's rank in the file (one more than the array's for folded chars) */
  int32_t rec_axis; /* the array axis along the record dimension, or -1 */
  int *varids;      /* per file (owned) */
  int64_t *rebase;  /* NULL, or per file {multiplier, offset}: numbers of a "<unit> since <date>" variable
                        rebased onto the first file's units (rebase.c) */
  int32_t n_keep;   /* fill values the rebase leaves alone (_FillValue, missing_value) */
  int64_t keep_i[2];
  double keep_f[2];
};

/* A dataset's chunk source state (model.h's ctx). */
struct ncf_source {
  int32_t n_files;
  struct ncf_file *files;
  int64_t n_vars; /* == group.n_arrays */
  struct ncf_var *vars;
};

/* Open `path` (one file, a folder or a glob) through `registry`: the group
 * `group` ("/" or NULL: the root; "/a/b": that group's own variables),
 * several files concatenated along `concat_dim` (NULL: the first file's
 * unlimited dimension). `renames`, `min_block_rows`, `nan_fill` as
 * zr_dataset_open's. Errors name the file(s), the group and the variable. */
int ncf_dataset_open(const struct ql_object_store_registry *registry, const char *path, const char *group,
                     const char *concat_dim, const char *renames, int64_t min_block_rows, int32_t nan_fill,
                     struct zr_dataset **out, struct ql_error *error);

/* Open one input (called with the lock held): nc_open on /proc/self/fd/N
 * or nc_open_mem; `input` gives up its bytes to `file`. */
int ncf_file_open(struct ncf_input *input, const char *group, struct ncf_file *file, struct ql_error *error);
/* Close (lock held). */
void ncf_file_close(struct ncf_file *file);

/* The variables of `file`'s group as model arrays (called with the lock
 * held): g->arrays (attributes as JSON, as zarr keeps them), vars[k] for
 * array k (varids[0] set; n_files slots). Variables of a type the model
 * cannot serve (compound, vlen, opaque, enum) are QL_ENOTSUP naming the
 * file and variable. */
int ncf_read_group(const struct ncf_file *file, int32_t n_files, struct zr_group *g, struct ncf_var **vars,
                   struct ql_error *error);
void ncf_vars_free(struct ncf_var *vars, int64_t n);

/* Block extents of contiguous (and netCDF-3) variables: record slabs of
 * about this many elements along their first dimension. */
#define NCF_SLAB_ELEMENTS ((int64_t)1 << 20)

/* Record variable `other` (file `file` of n_files) against the first
 * file's `first`: equal attributes, or only "<unit> since <date>" units
 * that differ by a whole multiple (v->rebase set). QL_EINVAL naming the
 * variable and both units otherwise. */
int ncf_rebase_plan(const struct zr_array *first, const struct zr_array *other, struct ncf_var *v, int32_t file,
                    int32_t n_files, struct ql_error *error);
/* Rebase `n` cells (dtype `d`, native order) read from file `file`. */
void ncf_rebase_apply(const struct ncf_var *v, int32_t file, const struct zr_dtype *d, uint8_t *cells, int64_t n);

/* The chunk source's read_box (source.c). */
int ncf_read_box(const struct zr_dataset *ds, int64_t array, const int64_t *lo, const int64_t *count, uint8_t *out,
                 struct zr_heap *heap, struct zr_scratch *scratch, int64_t *chunks, int64_t *bytes,
                 struct ql_error *error);

#endif /* QLINK_NETCDF_NCF_H */
