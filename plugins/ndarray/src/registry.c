/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_ndarray: the process-wide registry of datasets (qlink_ndarray.h),
 * keyed by random 128-bit handles (README.md, "Handles"). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "nd_internal.h"
#include "qlink/lib/status.h"
#include "qlink_zarr/ndcopy.h"

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nd_registration **registry; /* registered (not yet unregistered) datasets */
static int64_t n_registry, cap_registry;
static int64_t next_serial = 1;
static atomic_llong live; /* registrations not yet released */

enum { HANDLE_BYTES = ND_HANDLE_HEX / 2 };

/* `n` bytes from the kernel's randomness: getrandom(2), else (a kernel
 * older than 3.17, or a sandbox refusing the call) /dev/urandom. */
static int random_bytes(uint8_t *out, size_t n, struct ql_error *error) {
  size_t got = 0;
  while (got < n) {
    ssize_t k = getrandom(out + got, n - got, 0);
    if (k > 0) {
      got += (size_t)k;
    } else if (k < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  if (got == n) return QL_OK;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return ql_error_set(error, QL_EINTERNAL, "no randomness for a dataset handle: getrandom and /dev/urandom failed (%s)",
                        strerror(errno));
  }
  while (got < n) {
    ssize_t k = read(fd, out + got, n - got);
    if (k > 0) {
      got += (size_t)k;
    } else if (!(k < 0 && errno == EINTR)) {
      break;
    }
  }
  close(fd);
  if (got != n) return ql_error_set(error, QL_EINTERNAL, "no randomness for a dataset handle: /dev/urandom ran short");
  return QL_OK;
}

static void handle_format(const uint8_t *bytes, char *text) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < HANDLE_BYTES; i++) {
    text[2 * i] = digits[bytes[i] >> 4];
    text[2 * i + 1] = digits[bytes[i] & 15];
  }
  text[ND_HANDLE_HEX] = '\0';
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* 0 and the bytes if `text` is exactly ND_HANDLE_HEX hex digits, else -1. */
static int handle_parse(const char *text, uint8_t *bytes) {
  if (!text) return -1;
  for (int i = 0; i < HANDLE_BYTES; i++) {
    if (!text[2 * i] || !text[2 * i + 1]) return -1;
    int hi = hex_value(text[2 * i]), lo = hex_value(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return -1;
    bytes[i] = (uint8_t)(hi << 4 | lo);
  }
  return text[ND_HANDLE_HEX] == '\0' ? 0 : -1;
}

/* Equal handles, in time independent of where they differ. */
static int handle_equal(const uint8_t *a, const uint8_t *b) {
  uint8_t diff = 0;
  for (int i = 0; i < HANDLE_BYTES; i++) diff |= (uint8_t)(a[i] ^ b[i]);
  return diff == 0;
}

/* The index of the registration of `bytes` in the registry, or -1 (the
 * registry lock held). */
static int64_t find_locked(const uint8_t *bytes) {
  int64_t at = -1;
  for (int64_t i = 0; i < n_registry; i++) {
    if (handle_equal(registry[i]->handle, bytes)) at = i;
  }
  return at;
}

/* Arrow formats the API takes, as numpy typestrs. */
static const char *const arrow_formats[][2] = {
    {"b", "|b1"},   {"c", "|i1"},   {"C", "|u1"},   {"s", "<i2"},   {"S", "<u2"},   {"i", "<i4"},   {"I", "<u4"},
    {"l", "<i8"},   {"L", "<u8"},   {"e", "<f2"},   {"f", "<f4"},   {"g", "<f8"},   {"tss:", "<M8[s]"},
    {"tsm:", "<M8[ms]"}, {"tsu:", "<M8[us]"}, {"tsn:", "<M8[ns]"}, {"tDs", "<m8[s]"}, {"tDm", "<m8[ms]"},
    {"tDu", "<m8[us]"},  {"tDn", "<m8[ns]"}};

int nd_dtype_parse(const char *text, struct zr_dtype *out, struct ql_error *error) {
  if (!text || !text[0]) return ql_error_set(error, QL_EINVAL, "no dtype");
  for (size_t i = 0; i < sizeof(arrow_formats) / sizeof(arrow_formats[0]); i++) {
    if (strcmp(text, arrow_formats[i][0]) == 0) return zr_dtype_parse_v2(arrow_formats[i][1], out, error);
  }
  char native[64];
  if (strlen(text) >= sizeof(native)) return ql_error_set(error, QL_EINVAL, "dtype '%.40s...' is too long", text);
  strcpy(native, text);
  if (native[0] == '=') native[0] = '<'; /* qlink targets little-endian hosts */
  return zr_dtype_parse_v2(native, out, error);
}

static void var_free(struct nd_var *v) {
  free(v->name);
  for (int32_t i = 0; i < ND_MAX_DIMS; i++) free(v->dims[i]);
  if (v->attrs) json_decref(v->attrs);
  free(v->null_cell);
}

static void registration_free(struct nd_registration *r) {
  for (int32_t i = 0; i < r->n_vars; i++) var_free(&r->vars[i]);
  free(r->vars);
  free(r->name);
  free(r);
}

void nd_registration_unref(struct nd_registration *r) {
  if (!r || atomic_fetch_sub(&r->refs, 1) != 1) return;
  if (r->release) r->release(r->owner);
  registration_free(r);
  atomic_fetch_sub(&live, 1);
}

struct nd_registration *nd_lookup(const char *text) {
  uint8_t bytes[HANDLE_BYTES];
  if (handle_parse(text, bytes) != 0) return NULL;
  struct nd_registration *found = NULL;
  pthread_mutex_lock(&registry_lock);
  int64_t at = find_locked(bytes);
  if (at >= 0) {
    found = registry[at];
    atomic_fetch_add(&found->refs, 1);
  }
  pthread_mutex_unlock(&registry_lock);
  return found;
}

/* Chunk extents when the caller gives none: whole extents from the
 * innermost axis out while a block stays within `target` elements, then
 * as many of the next axis as fit, single positions outside. */
static void default_chunks(struct nd_var *v, int64_t target) {
  int64_t inner = 1;
  int32_t k = v->ndim - 1;
  for (; k >= 0; k--) {
    int64_t ext = v->shape[k] > 0 ? v->shape[k] : 1;
    if (inner > target / ext) break;
    v->chunks[k] = ext;
    inner *= ext;
  }
  if (k >= 0) {
    int64_t fit = target / inner;
    v->chunks[k] = fit < 1 ? 1 : fit;
    for (int32_t i = 0; i < k; i++) v->chunks[i] = 1;
  }
}

static int var_init(const struct nd_variable *in, int32_t index, struct nd_var *v, struct ql_error *error) {
  if (!in->name || !in->name[0]) return ql_error_set(error, QL_EINVAL, "variable %d has no name", (int)index);
  v->name = strdup(in->name);
  if (!v->name) return ql_error_set(error, QL_ENOMEM, "out of memory");
  if (in->ndim < 0 || in->ndim > ND_MAX_DIMS) {
    return ql_error_set(error, QL_EINVAL, "variable '%s': %d dimensions (0 .. %d)", in->name, (int)in->ndim,
                        ND_MAX_DIMS);
  }
  v->ndim = in->ndim;
  v->is_coord = in->is_coord != 0;
  if (v->ndim > 0 && (!in->dims || !in->shape)) {
    return ql_error_set(error, QL_EINVAL, "variable '%s': dims and shape are required", in->name);
  }
  for (int32_t i = 0; i < v->ndim; i++) {
    if (!in->dims[i] || !in->dims[i][0]) {
      return ql_error_set(error, QL_EINVAL, "variable '%s': dimension %d has no name", in->name, (int)i);
    }
    for (int32_t j = 0; j < i; j++) {
      if (strcmp(in->dims[i], in->dims[j]) == 0) {
        return ql_error_set(error, QL_EINVAL, "variable '%s': dimension '%s' appears twice", in->name, in->dims[i]);
      }
    }
    if (in->shape[i] < 0) {
      return ql_error_set(error, QL_EINVAL, "variable '%s': negative extent %lld along '%s'", in->name,
                          (long long)in->shape[i], in->dims[i]);
    }
    v->dims[i] = strdup(in->dims[i]);
    if (!v->dims[i]) return ql_error_set(error, QL_ENOMEM, "out of memory");
    v->shape[i] = in->shape[i];
  }
  if (zr_product(v->shape, v->ndim) < 0) {
    return ql_error_set(error, QL_EINVAL, "variable '%s': its element count overflows 64 bits", in->name);
  }
  if (nd_dtype_parse(in->dtype, &v->dtype, error) != QL_OK) return ql_error_prefix(error, "variable '%s'", in->name);
  if (v->dtype.type == ZR_VLEN) {
    return ql_error_set(error, QL_ENOTSUP, "variable '%s': variable-length strings are not supported (pass '<U<n>')",
                        in->name);
  }
  if ((in->data == NULL) == (in->load == NULL)) {
    return ql_error_set(error, QL_EINVAL, "variable '%s': give either data (in memory) or load (lazy), not %s",
                        in->name, in->data ? "both" : "neither");
  }
  v->data = in->data;
  v->load = in->load;
  v->load_ctx = in->load_ctx;
  if (v->load) {
    if (in->strides) return ql_error_set(error, QL_EINVAL, "variable '%s': strides given for a lazy variable", in->name);
    v->dtype.big_endian = 0; /* loaders write native order */
  }
  int64_t stride = v->dtype.size;
  for (int32_t i = v->ndim - 1; i >= 0; i--) {
    v->strides[i] = in->strides ? in->strides[i] : stride;
    stride *= v->shape[i] > 0 ? v->shape[i] : 1;
  }
  if (in->chunks) {
    for (int32_t i = 0; i < v->ndim; i++) {
      if (in->chunks[i] < 1) {
        return ql_error_set(error, QL_EINVAL, "variable '%s': chunk extent %lld along '%s' (must be >= 1)", in->name,
                            (long long)in->chunks[i], v->dims[i]);
      }
      v->chunks[i] = in->chunks[i] < v->shape[i] || v->shape[i] == 0 ? in->chunks[i] : v->shape[i];
    }
  } else {
    default_chunks(v, ZR_DEFAULT_BLOCK_ROWS);
  }
  if (in->attrs_json && in->attrs_json[0]) {
    json_error_t jerr;
    v->attrs = json_loads(in->attrs_json, JSON_DECODE_ANY, &jerr);
    if (!v->attrs || !json_is_object(v->attrs)) {
      return ql_error_set(error, QL_EINVAL, "variable '%s': attrs_json is not a JSON object (%s)", in->name,
                          v->attrs ? "another JSON value" : jerr.text);
    }
  } else {
    v->attrs = json_object();
    if (!v->attrs) return ql_error_set(error, QL_ENOMEM, "out of memory");
  }
  if (in->null_cell) {
    if (v->dtype.type != ZR_UNICODE && v->dtype.type != ZR_BYTES) {
      return ql_error_set(error, QL_EINVAL, "variable '%s': null_cell is given, but '%s' is not a fixed-width string",
                          in->name, in->dtype);
    }
    v->null_cell = malloc((size_t)v->dtype.size);
    if (!v->null_cell) return ql_error_set(error, QL_ENOMEM, "out of memory");
    memcpy(v->null_cell, in->null_cell, (size_t)v->dtype.size);
  }
  return QL_OK;
}

static void set_message(char *message, size_t cap, const struct ql_error *error) {
  if (message && cap > 0) snprintf(message, cap, "%s", ql_error_message(error));
}

int nd_register(const struct nd_variable *vars, int32_t n_vars, const char *name, void *owner,
                void (*release)(void *owner), char *handle, char *message, size_t message_cap) {
  struct ql_error error;
  memset(&error, 0, sizeof(error));
  if (message && message_cap) message[0] = '\0';
  if (handle) handle[0] = '\0';
  if (n_vars < 0 || (n_vars > 0 && !vars) || !handle) {
    if (handle) {
      ql_error_set(&error, QL_EINVAL, "nd_register: %d variables", (int)n_vars);
    } else {
      ql_error_set(&error, QL_EINVAL, "nd_register: no buffer for the handle");
    }
    set_message(message, message_cap, &error);
    ql_error_release(&error);
    return -1;
  }
  char text[ND_HANDLE_HEX + 1];
  struct nd_registration *r = calloc(1, sizeof(*r));
  int rc = r ? QL_OK : ql_error_set(&error, QL_ENOMEM, "out of memory");
  if (rc == QL_OK) {
    atomic_init(&r->refs, 1);
    r->vars = calloc((size_t)(n_vars ? n_vars : 1), sizeof(*r->vars));
    r->name = strdup(name && name[0] ? name : "dataset");
    if (!r->vars || !r->name) rc = ql_error_set(&error, QL_ENOMEM, "out of memory");
  }
  for (int32_t i = 0; rc == QL_OK && i < n_vars; i++) {
    r->n_vars = i + 1;
    rc = var_init(&vars[i], i, &r->vars[i], &error);
    for (int32_t j = 0; rc == QL_OK && j < i; j++) {
      if (strcmp(r->vars[j].name, r->vars[i].name) == 0) {
        rc = ql_error_set(&error, QL_EINVAL, "two variables named '%s'", r->vars[i].name);
      }
    }
  }
  if (rc == QL_OK) {
    pthread_mutex_lock(&registry_lock);
    r->serial = next_serial++;
    pthread_mutex_unlock(&registry_lock);
    /* build the tables once: a bad dataset fails here, not at its first query */
    struct zr_dataset *ds = NULL;
    rc = nd_dataset_open(r, NULL, ZR_DEFAULT_BLOCK_ROWS, ZR_NAN_FILL_ALL, &ds, &error);
    if (ds) zr_dataset_unref(ds); /* drops its reference: r->refs is 1 again */
  }
  if (rc == QL_OK) {
    r->owner = owner;
    r->release = release;
    pthread_mutex_lock(&registry_lock);
    if (n_registry == cap_registry) {
      int64_t cap = cap_registry ? 2 * cap_registry : 8;
      struct nd_registration **grown = realloc(registry, sizeof(*grown) * (size_t)cap);
      if (grown) {
        registry = grown;
        cap_registry = cap;
      }
    }
    if (n_registry < cap_registry) {
      /* 128 random bits never repeat in practice; a repeat is drawn again all the same */
      do {
        rc = random_bytes(r->handle, sizeof(r->handle), &error);
      } while (rc == QL_OK && find_locked(r->handle) >= 0);
      if (rc == QL_OK) {
        handle_format(r->handle, text); /* while r is surely alive */
        registry[n_registry++] = r;
        atomic_fetch_add(&live, 1);
      }
    } else {
      rc = ql_error_set(&error, QL_ENOMEM, "out of memory");
    }
    pthread_mutex_unlock(&registry_lock);
  }
  if (rc != QL_OK) {
    set_message(message, message_cap, &error);
    ql_error_release(&error);
    if (r) registration_free(r); /* the owner stays the caller's: no release */
    return -1;
  }
  memcpy(handle, text, sizeof(text));
  return 0;
}

int nd_unregister(const char *handle) {
  uint8_t bytes[HANDLE_BYTES];
  if (handle_parse(handle, bytes) != 0) return -1;
  struct nd_registration *found = NULL;
  pthread_mutex_lock(&registry_lock);
  int64_t at = find_locked(bytes);
  if (at >= 0) {
    found = registry[at];
    registry[at] = registry[--n_registry];
  }
  if (n_registry == 0) {
    free(registry);
    registry = NULL;
    cap_registry = 0;
  }
  pthread_mutex_unlock(&registry_lock);
  if (!found) return -1;
  nd_registration_unref(found);
  return 0;
}

int64_t nd_live_count(void) { return atomic_load(&live); }
