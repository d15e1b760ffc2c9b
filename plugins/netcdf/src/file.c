/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_netcdf: opening one input with libnetcdf and choosing its group
 * (ncf.h: ncf_file_open, ncf_file_close). Called with the lock held. */
#include <netcdf.h>
#include <netcdf_mem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ncf.h"
#include "qlink/lib/status.h"

void ncf_file_close(struct ncf_file *file) {
  if (file->ncid >= 0 && !ncf_exiting()) nc_close(file->ncid);
  file->ncid = -1;
  free(file->mem);
  free(file->label);
  file->mem = NULL;
  file->label = NULL;
}

/* The group rule: the root group, or the one `group` names by its full
 * path ("/a/b"; a leading '/' optional). */
static int choose_group(struct ncf_file *file, const char *group, struct ql_error *error) {
  file->gid = file->ncid;
  if (!group || !group[0] || strcmp(group, "/") == 0) return QL_OK;
  char path[4096];
  int n = snprintf(path, sizeof(path), "%s%s", group[0] == '/' ? "" : "/", group);
  if (n < 0 || (size_t)n >= sizeof(path)) {
    return ql_error_set(error, QL_EINVAL, "netcdf file %s: group name over %zu bytes", file->label, sizeof(path) - 1);
  }
  int st = nc_inq_grp_full_ncid(file->ncid, path, &file->gid);
  if (st != NC_NOERR) {
    return ql_error_set(error, QL_ENOTFOUND, "netcdf file %s: no group '%s' (%s)", file->label, path, nc_strerror(st));
  }
  return QL_OK;
}

int ncf_file_open(struct ncf_input *input, const char *group, struct ncf_file *file, struct ql_error *error) {
  memset(file, 0, sizeof(*file));
  file->ncid = -1;
  file->label = input->label;
  input->label = NULL;
  int st;
  if (ncf_exiting()) return ql_error_set(error, QL_ECANCELLED, "netcdf file %s: the process is exiting", file->label);
  /* HDF5's cache of decompressed chunks, per variable: netCDF-C 4.10's
   * default (64 MiB, 1000 slots; 4.9.0 has 16 MiB), so the chunks of a
   * variable an open table reads again are decompressed once, not on every
   * scan. Cells read only once are unaffected. */
  nc_set_chunk_cache(NCF_CHUNK_CACHE_BYTES, NCF_CHUNK_CACHE_SLOTS, 0.75f);
  /* a classic header's counts checked against the file before libnetcdf
   * allocates them */
  int rc = ncf_header_check(input->fd, input->mem, input->mem_len, file->label, error);
  if (rc != QL_OK) {
    if (input->fd >= 0) close(input->fd);
    input->fd = -1;
    return rc;
  }
  if (input->fd >= 0) {
    /* the descriptor the gate allowed, by its /proc name: libnetcdf and
     * HDF5 open that very file */
    char name[64];
    snprintf(name, sizeof(name), "/proc/self/fd/%d", input->fd);
    st = nc_open(name, NC_NOWRITE, &file->ncid);
    close(input->fd);
    input->fd = -1;
  } else {
    file->mem = input->mem;
    input->mem = NULL;
    /* a plain name: libnetcdf would parse a URL ("memory:///x.nc") as a remote (DAP) one */
    st = nc_open_mem("qlink-netcdf-memory", NC_NOWRITE, input->mem_len, file->mem, &file->ncid);
  }
  if (st == NC_NOERR) ncf_opened();
  if (st != NC_NOERR) {
    file->ncid = -1;
    return ql_error_set(error, st == NC_ENOTNC ? QL_EDATA : QL_EIO, "netcdf file %s: cannot open: %s", file->label,
                        nc_strerror(st));
  }
  return choose_group(file, group, error);
}
