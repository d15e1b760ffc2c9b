/* SPDX-License-Identifier: Apache-2.0 */
/* Test support for the plugins over qlink_zarr_core (qlink_zarr,
 * qlink_ndarray): a reference host with the plugin the test links in, and
 * a plan's batches, partition by partition. Linked as a library
 * (qlink_zarr_test_support), so nothing here checks anything itself: each
 * function returns a status and fills `error`, for the test's own
 * QL_CHECK_OK (ql_test.h's counters are the test file's). */
#ifndef QLINK_ZARR_TEST_UTIL_H
#define QLINK_ZARR_TEST_UTIL_H

#include <stdint.h>

#include "qlink/lib/host.h"
#include "qlink/qlink.h"

/* The entry point of the plugin the test is linked with (its plugin.c). */
int qlink_plugin_init(uint32_t abi_version, struct ql_plugin *out, struct ql_error *error);

/* A reference host with `options` (NULL: ql_ref_host_new's defaults) into
 * *host and the plugin's descriptor for QL_ABI_VERSION into *plugin
 * (zeroed first). On failure nothing is left to free (*host NULL). */
int zr_test_open(const struct ql_ref_host_options *options, struct ql_ref_host **host, struct ql_plugin *plugin,
                 struct ql_error *error);
/* Release the plugin, then free the host (ql_ref_host_free's status:
 * QL_ESTATE when memory is still reserved). */
int zr_test_close(struct ql_ref_host *host, struct ql_plugin *plugin, struct ql_error *error);

/* Writes a test's objects into a store (store_put.h). */
typedef void (*zr_test_build_fn)(const struct ql_object_store *store);

/* `build` over the host's in-memory store ("memory://"). QL_OK, or the
 * registry's status when it has no such store. */
int zr_test_build_store(struct ql_ref_host *host, zr_test_build_fn build, struct ql_error *error);

/* Called with each batch (released after the call) and the caller's ctx. */
typedef void (*zr_test_batch_fn)(const struct ArrowArray *batch, void *ctx);

/* Every partition of `plan` in order, each executed with `host`'s task
 * context for it; `each` sees every batch. QL_OK, or the first failure:
 * get_properties' or execute's status and message, or a get_next's
 * (its errno as a status, the stream's message, the partition named). */
int zr_test_each_batch(struct ql_ref_host *host, const struct ql_execution_plan *plan, zr_test_batch_fn each,
                       void *ctx, struct ql_error *error);

/* The value of metric `name` of `plan` (get_metrics), or -1 when it has
 * none by that name or get_metrics fails. */
int64_t zr_test_metric(const struct ql_execution_plan *plan, const char *name);

#endif /* QLINK_ZARR_TEST_UTIL_H */
