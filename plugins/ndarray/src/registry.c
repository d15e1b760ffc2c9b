/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_ndarray: the process-wide registry of datasets (qlink_ndarray.h),
 * keyed by random 128-bit handles (README.md, "Handles"); each checked by
 * building its tables once (dataset.c) before it is published. */
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
  struct nd_registration *r = NULL;
  int rc = nd_registration_new(vars, n_vars, name, &r, &error);
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
        nd_registration_publish(r, owner, release);
      }
    } else {
      rc = ql_error_set(&error, QL_ENOMEM, "out of memory");
    }
    pthread_mutex_unlock(&registry_lock);
  }
  if (rc != QL_OK) {
    set_message(message, message_cap, &error);
    ql_error_release(&error);
    nd_registration_free(r); /* unpublished: the owner stays the caller's, no release */
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
