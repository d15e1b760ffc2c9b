/* SPDX-License-Identifier: Apache-2.0 */
/* libqlink internal: the reference host's executor and temp-file service
 * (src/runtime), used by ref_host.c and their tests. Not public API. */
#ifndef QLINK_SRC_RUNTIME_RUNTIME_INTERNAL_H
#define QLINK_SRC_RUNTIME_RUNTIME_INTERNAL_H

#include "qlink/services.h"

/* A pthread worker pool behind struct ql_executor. `threads` (>= 1) is the
 * parallelism it reports and the number of workers it starts; when every
 * worker is busy it starts more (up to 16 * threads, at least 64), so a job
 * that waits for another job it spawned does not deadlock the pool. */
struct ql_thread_executor;
int ql_thread_executor_new(int32_t threads, struct ql_thread_executor **out, struct ql_error *error);
/* Runs every queued job (detached ones included) to completion, joins the
 * workers and frees the pool. Release every job handle first (a handle
 * points into the pool). */
void ql_thread_executor_free(struct ql_thread_executor *executor);
const struct ql_executor *ql_thread_executor_view(struct ql_thread_executor *executor);
/* Worker threads started so far (for tests). */
int32_t ql_thread_executor_workers(struct ql_thread_executor *executor);

/* A temp-file service creating files with mkstemp in `dir` (NULL: $TMPDIR,
 * else /tmp); each file is deleted on release. `out` owns a copy of dir;
 * free it with ql_temp_files_free (after every file was released or not:
 * files are independent of the service). */
int ql_temp_files_init(struct ql_temp_files *out, const char *dir, struct ql_error *error);
void ql_temp_files_free(struct ql_temp_files *service);

#endif /* QLINK_SRC_RUNTIME_RUNTIME_INTERNAL_H */
