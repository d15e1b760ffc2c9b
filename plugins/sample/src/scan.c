/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_sample: the lifetime of a planned series scan (struct smp_scan),
 * shared by its execution plans (series.c) and its streams
 * (series_stream.c). */
#include <stdatomic.h>
#include <stdlib.h>

#include "qlink/lib/arrow.h"
#include "sample_internal.h"

void smp_scan_ref(struct smp_scan *scan) { atomic_fetch_add(&scan->refs, 1); }

void smp_scan_unref(struct smp_scan *scan) {
  if (scan == NULL || atomic_fetch_sub(&scan->refs, 1) != 1) return;
  free(scan->columns);
  smp_ranges_free(&scan->rows);
  ql_schema_release(&scan->schema);
  free(atomic_load(&scan->display));
  free(scan);
}
