/* SPDX-License-Identifier: Apache-2.0 */
/* The file:// object store: the local file system rooted at "/", read with
 * stat/pread and listed with opendir/readdir. Stateless, so thread-safe. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qlink/lib/object_store.h"
#include "qlink/lib/status.h"
#include "store_internal.h"

/* "/" + path, malloc'd. */
static char *ql_file_absolute(const char *path) {
  size_t n = strlen(path) + 2;
  char *abs = malloc(n);
  if (abs) snprintf(abs, n, "/%s", path);
  return abs;
}

static int64_t ql_stat_mtime_ns(const struct stat *st) {
  return (int64_t)st->st_mtim.tv_sec * 1000000000 + (int64_t)st->st_mtim.tv_nsec;
}

/* Map a failed system call on an object to a status. */
static int ql_file_errno_error(struct ql_error *error, int err, const char *op, const char *path) {
  if (err == ENOENT || err == ENOTDIR) {
    return ql_error_set(error, QL_ENOTFOUND, "object not found: file:///%s", path);
  }
  if (err == ENOMEM) return ql_error_set(error, QL_ENOMEM, "%s file:///%s: %s", op, path, strerror(err));
  return ql_error_set(error, QL_EIO, "%s file:///%s: %s", op, path, strerror(err));
}

static int ql_file_head(const struct ql_object_store *self, const char *path, struct ql_object_meta *out,
                        struct ql_error *error) {
  (void)self;
  QL_RETURN_NOT_OK(ql_object_path_check(path, 0, error));
  char *abs = ql_file_absolute(path);
  if (!abs) return ql_error_set(error, QL_ENOMEM, "out of memory");
  struct stat st;
  int rc = stat(abs, &st);
  int err = errno;
  free(abs);
  if (rc != 0) return ql_file_errno_error(error, err, "stat", path);
  /* Objects are files; a directory is only a prefix (object_store semantics). */
  if (!S_ISREG(st.st_mode)) return ql_error_set(error, QL_ENOTFOUND, "object not found: file:///%s is not a file", path);
  out->path = path;
  out->size = (int64_t)st.st_size;
  out->last_modified_ns = ql_stat_mtime_ns(&st);
  return QL_OK;
}

static void ql_heap_bytes_release(struct ql_bytes *self) {
  free(self->private_data);
  self->data = NULL;
  self->private_data = NULL;
  self->release = NULL;
}

/* Read exactly n bytes at offset unless the file ends first; returns bytes read or -1. */
static int64_t ql_pread_full(int fd, uint8_t *buf, int64_t n, int64_t offset) {
  int64_t done = 0;
  while (done < n) {
    ssize_t got = pread(fd, buf + done, (size_t)(n - done), (off_t)(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (got == 0) break;
    done += got;
  }
  return done;
}

/* Open `path` for a read of `length` bytes (-1: to the end) at `offset`:
 * the object-store range rules shared by get_range and read_into (`what`
 * names the call in errors). On QL_OK *fd is open (the caller closes it)
 * and *want is the byte count to read, clipped to the object's end. */
static int ql_file_open_range(const char *path, int64_t offset, int64_t length, const char *what, int *fd,
                              int64_t *want, struct ql_error *error) {
  char *abs = ql_file_absolute(path);
  if (!abs) return ql_error_set(error, QL_ENOMEM, "out of memory");
  /* O_NONBLOCK: opening a FIFO (or a device) must not wait for a writer;
   * it is then refused below as not a file. Regular files ignore the flag. */
  int f = open(abs, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  int err = errno;
  free(abs);
  if (f < 0) return ql_file_errno_error(error, err, "open", path);
  struct stat st;
  if (fstat(f, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(f);
    return ql_error_set(error, QL_ENOTFOUND, "object not found: file:///%s is not a file", path);
  }
  int64_t size = (int64_t)st.st_size;
  if (offset > size) {
    close(f);
    return ql_error_set(error, QL_EINVAL, "%s file:///%s: offset %lld is past the end (size %lld bytes)", what, path,
                        (long long)offset, (long long)size);
  }
  *want = length >= 0 && length < size - offset ? length : size - offset;
  *fd = f;
  return QL_OK;
}

static int ql_file_get_range(const struct ql_object_store *self, const char *path, int64_t offset, int64_t length,
                             struct ql_bytes *out, struct ql_error *error) {
  (void)self;
  memset(out, 0, sizeof(*out));
  QL_RETURN_NOT_OK(ql_object_path_check(path, 0, error));
  if (offset < 0 || length < -1) {
    return ql_error_set(error, QL_EINVAL, "get_range file:///%s: bad range offset %lld length %lld", path,
                        (long long)offset, (long long)length);
  }
  int fd;
  int64_t want;
  QL_RETURN_NOT_OK(ql_file_open_range(path, offset, length, "get_range", &fd, &want, error));
  uint8_t *buf = malloc(want > 0 ? (size_t)want : 1);
  if (!buf) {
    close(fd);
    return ql_error_set(error, QL_ENOMEM, "out of memory reading %lld bytes of file:///%s", (long long)want, path);
  }
  int64_t got = ql_pread_full(fd, buf, want, offset);
  int err = errno;
  close(fd);
  if (got < 0) {
    free(buf);
    return ql_error_set(error, QL_EIO, "read file:///%s at %lld: %s", path, (long long)offset, strerror(err));
  }
  out->data = buf;
  out->size = got; /* shorter only if the file shrank meanwhile */
  out->release = ql_heap_bytes_release;
  out->private_data = buf;
  return QL_OK;
}

/* get_range into the caller's buffer: the same path and range checks and
 * errors, a positioned read straight into dst. */
static int ql_file_read_into(const struct ql_object_store *self, const char *path, int64_t offset, int64_t length,
                             uint8_t *dst, int64_t *out_len, struct ql_error *error) {
  (void)self;
  if (out_len) *out_len = 0;
  QL_RETURN_NOT_OK(ql_object_path_check(path, 0, error));
  if (offset < 0 || length < 0 || !out_len || (!dst && length > 0)) {
    return ql_error_set(error, QL_EINVAL, "read_into file:///%s: bad arguments offset %lld length %lld", path,
                        (long long)offset, (long long)length);
  }
  int fd;
  int64_t want;
  QL_RETURN_NOT_OK(ql_file_open_range(path, offset, length, "read_into", &fd, &want, error));
  int64_t got = ql_pread_full(fd, dst, want, offset);
  int err = errno;
  close(fd);
  if (got < 0) return ql_error_set(error, QL_EIO, "read file:///%s at %lld: %s", path, (long long)offset, strerror(err));
  *out_len = got; /* shorter only if the file shrank meanwhile */
  return QL_OK;
}

/* A growing array of metas, for listing. */
struct ql_meta_vec {
  struct ql_object_meta *items;
  int64_t count, cap;
};

static int ql_meta_vec_push(struct ql_meta_vec *v, char *path, int64_t size, int64_t mtime) {
  if (v->count == v->cap) {
    int64_t cap = v->cap ? v->cap * 2 : 64;
    struct ql_object_meta *items = realloc(v->items, (size_t)cap * sizeof(*items));
    if (!items) return QL_ENOMEM;
    v->items = items;
    v->cap = cap;
  }
  v->items[v->count++] = (struct ql_object_meta){path, size, mtime};
  return QL_OK;
}

/* Recursively collect regular files under `dir` (absolute) whose object path
 * is `rel` ("" for the root). Unreadable entries are skipped; symbolic links
 * to directories are not followed (no cycles). Only allocation fails. */
static int ql_file_walk(const char *dir, const char *rel, struct ql_meta_vec *v) {
  DIR *d = opendir(dir);
  if (!d) return QL_OK;
  int rc = QL_OK;
  struct dirent *entry;
  while (rc == QL_OK && (entry = readdir(d)) != NULL) {
    const char *name = entry->d_name;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) continue;
    size_t abs_n = strlen(dir) + 1 + strlen(name) + 1, rel_n = strlen(rel) + 1 + strlen(name) + 1;
    char *abs = malloc(abs_n), *sub = malloc(rel_n);
    if (!abs || !sub) {
      free(abs);
      free(sub);
      rc = QL_ENOMEM;
      break;
    }
    snprintf(abs, abs_n, strcmp(dir, "/") == 0 ? "%s%s" : "%s/%s", dir, name);
    snprintf(sub, rel_n, rel[0] ? "%s/%s" : "%s%s", rel, name);
    struct stat lst, st;
    if (lstat(abs, &lst) == 0 && S_ISDIR(lst.st_mode)) {
      rc = ql_file_walk(abs, sub, v);
      free(sub);
    } else if (stat(abs, &st) == 0 && S_ISREG(st.st_mode)) {
      rc = ql_meta_vec_push(v, sub, (int64_t)st.st_size, ql_stat_mtime_ns(&st));
      if (rc != QL_OK) free(sub);
    } else {
      free(sub);
    }
    free(abs);
  }
  closedir(d);
  return rc;
}

static int ql_file_list(const struct ql_object_store *self, const char *prefix, struct ql_object_list *out,
                        struct ql_error *error) {
  (void)self;
  memset(out, 0, sizeof(*out));
  prefix = prefix ? prefix : "";
  QL_RETURN_NOT_OK(ql_object_path_check(prefix, 1, error));
  char *abs = ql_file_absolute(prefix);
  if (!abs) return ql_error_set(error, QL_ENOMEM, "out of memory");
  struct ql_meta_vec v = {0};
  int rc = ql_file_walk(abs, prefix, &v);
  free(abs);
  if (rc != QL_OK) {
    ql_object_metas_free(v.items, v.count);
    return ql_error_set(error, rc, "out of memory listing file:///%s", prefix);
  }
  ql_object_list_adopt(out, v.items, v.count);
  return QL_OK;
}

static void ql_file_store_release(struct ql_object_store *self) {
  self->release = NULL;
  self->private_data = NULL;
}

int ql_file_store_new(struct ql_object_store *out, struct ql_error *error) {
  (void)error;
  memset(out, 0, sizeof(*out));
  out->struct_size = (uint32_t)sizeof(*out);
  out->head = ql_file_head;
  out->get_range = ql_file_get_range;
  out->list = ql_file_list;
  out->release = ql_file_store_release;
  out->read_into = ql_file_read_into;
  return QL_OK;
}
