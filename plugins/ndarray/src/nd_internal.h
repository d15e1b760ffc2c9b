/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_ndarray: a registration (registration.c), the registry that
 * publishes registrations under handles (registry.c), and the datasets
 * built over them for the XQL table model (dataset.c). registry.c uses
 * the other two; dataset.c uses registration.c. */
#ifndef QLINK_NDARRAY_INTERNAL_H
#define QLINK_NDARRAY_INTERNAL_H

#include <jansson.h>
#include <stdatomic.h>

#include "qlink_ndarray.h"
#include "qlink_zarr/dtype.h"
#include "qlink_zarr/model.h"

/* One registered variable: copies of the caller's description (the data
 * buffer itself is the owner's). */
struct nd_var {
  char *name;
  int32_t ndim;
  int32_t is_coord;
  char *dims[ND_MAX_DIMS];
  int64_t shape[ND_MAX_DIMS];
  int64_t strides[ND_MAX_DIMS]; /* bytes; in memory only */
  int64_t chunks[ND_MAX_DIMS];
  struct zr_dtype dtype;        /* byte order as the buffer holds it (lazy: native) */
  const uint8_t *data;          /* NULL for lazy variables */
  nd_load_fn load;
  void *load_ctx;
  json_t *attrs; /* never NULL */
  uint8_t *null_cell; /* dtype.size bytes, native order, owned; NULL: no cell is missing */
};

/* A registered dataset, reference-counted: the registry holds one
 * reference until nd_unregister, every zr_dataset built over it another.
 * The last reference calls release(owner). Immutable once registered. */
struct nd_registration {
  atomic_int refs;
  uint8_t handle[ND_HANDLE_HEX / 2]; /* the key specs name it by (random; never shown) */
  int64_t serial;                    /* 1, 2, ... in registration order: messages and EXPLAIN only */
  char *name;
  int32_t n_vars;
  struct nd_var *vars;
  void *owner;
  void (*release)(void *owner);
};

/* The registration whose handle `text` spells (ND_HANDLE_HEX hex digits,
 * either case), with a reference taken; NULL for any other text or a
 * handle nobody registered (or that was unregistered). The comparison
 * takes the same time whichever byte differs. */
struct nd_registration *nd_lookup(const char *text);

/* A registration of `n_vars` variables (copies of their descriptions; the
 * buffers stay the caller's) named `name` ("dataset" when NULL or empty),
 * with one reference and no owner yet. QL_EINVAL names the variable whose
 * description is wrong, QL_ENOTSUP an element type qlink cannot hold. */
int nd_registration_new(const struct nd_variable *vars, int32_t n_vars, const char *name,
                        struct nd_registration **out, struct ql_error *error);
/* Gives `r` its owner, released with the last reference, and counts it
 * live (nd_live_count). Called once, as the registry publishes it. */
void nd_registration_publish(struct nd_registration *r, void *owner, void (*release)(void *owner));
/* Frees a registration never published (NULL is ignored); its owner is
 * not released. */
void nd_registration_free(struct nd_registration *r);
/* Drops one reference; the last one releases the owner and frees `r`. */
void nd_registration_unref(struct nd_registration *r);

/* Build the tables of `r` (a reference is taken by the dataset): the
 * variables as the group's arrays, read through the registration's chunk
 * source. `renames`, `min_block_rows` and `nan_fill` (enum zr_nan_fill:
 * ZR_NAN_FILL_ALL, or ZR_NAN_FILL_NAN) as zr_dataset_open's. */
int nd_dataset_open(struct nd_registration *r, const char *renames, int64_t min_block_rows, int32_t nan_fill,
                    struct zr_dataset **out, struct ql_error *error);

/* The registration API's members (qlink_ndarray.h: struct nd_api). */
int nd_register(const struct nd_variable *vars, int32_t n_vars, const char *name, void *owner,
                void (*release)(void *owner), char *handle, char *message, size_t message_cap);
int nd_unregister(const char *handle);
int64_t nd_live_count(void);

/* Parse an element type (numpy typestr or Arrow format, qlink_ndarray.h). */
int nd_dtype_parse(const char *text, struct zr_dtype *out, struct ql_error *error);

#endif /* QLINK_NDARRAY_INTERNAL_H */
