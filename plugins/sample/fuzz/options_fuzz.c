/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the sample plugin's table providers opened from user
 * text. The input is the part of a table spec after "qlink_sample/"
 * ("series?start=S&stop=E&step=T&partitions=P", "grid?ny=NY&nx=NX&..."),
 * as SQL or a command line hands it over. Opening must refuse what it
 * cannot serve with a message; a provider it opens must give its schema and
 * statistics, plan and run a scan of at most 64 rows in every partition,
 * and release everything, without crash, leak or read out of bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ql_fuzz_host.h"
#include "qlink/lib/check.h"
#include "qlink/lib/host.h"
#include "qlink/lib/loader.h"
#include "qlink/lib/options.h"
#include "qlink/lib/status.h"
#include "qlink/qlink.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_TEXT = 4096, MAX_GRID_CELLS = 1 << 16, SCAN_LIMIT = 64 };

/* The grid builds all its cells when it opens (up to 2^28 rows, within the
 * plugin's limits but not the fuzzer's memory): larger grids are not tried. */
static int grid_too_large(const struct ql_options *o) {
  int64_t ny = 65, nx = 16;
  struct ql_error err = {0};
  if (ql_options_get_i64(o, "ny", 65, &ny, &err) != QL_OK || ql_options_get_i64(o, "nx", 16, &nx, &err) != QL_OK) {
    ql_error_release(&err);
    return 0; /* the plugin refuses it with its own message */
  }
  return ny > 0 && nx > 0 && ny > MAX_GRID_CELLS / nx;
}

static void exercise(const struct ql_plugin *plugin, struct ql_ref_host *host, struct ql_table_provider *tp) {
  struct ql_error err = {0};
  struct ArrowSchema schema = {0};
  if (tp->get_schema(tp, &schema, &err) != QL_OK || !schema.release) abort(); /* an open provider has a schema */
  schema.release(&schema);
  if (tp->get_statistics) {
    struct ql_statistics st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    if (tp->get_statistics(tp, &st, &err) == QL_OK) {
      if (st.release) st.release(&st);
    } else {
      ql_error_release(&err);
    }
  }
  struct ql_scan_args args;
  memset(&args, 0, sizeof args);
  args.struct_size = sizeof args;
  args.n_projection = -1;
  args.limit = SCAN_LIMIT;
  struct ql_batches b;
  memset(&b, 0, sizeof b);
  if (ql_batches_scan(plugin, tp, host, &args, &b, &err) == QL_OK) {
    if (b.n_rows < 0) abort();
  } else if (!err.release) {
    abort(); /* a failure explains itself */
  }
  ql_batches_free(&b);
  ql_error_release(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct ql_ref_host *host;
  static struct ql_plugin plugin;
  ql_fuzz_host(16, &host, &plugin);
  struct ql_error err = {0};
  static const char prefix[] = "qlink_sample/";
  char text[sizeof prefix + MAX_TEXT];
  if (size > MAX_TEXT || memchr(data, 0, size)) return 0;
  memcpy(text, prefix, sizeof prefix - 1);
  memcpy(text + sizeof prefix - 1, data, size);
  text[sizeof prefix - 1 + size] = '\0';

  struct ql_table_spec spec;
  if (ql_table_spec_parse(text, &spec, &err) != QL_OK) {
    ql_error_release(&err);
    return 0;
  }
  if (strcmp(spec.provider, "grid") != 0 || !grid_too_large(&spec.options)) {
    struct ql_table_provider tp;
    memset(&tp, 0, sizeof tp);
    void *token = ql_plugin_enter(&plugin);
    int rc = plugin.table_provider_open(&plugin, spec.provider, &spec.options, ql_ref_host_session(host), &tp, &err);
    if (rc == QL_OK) {
      exercise(&plugin, host, &tp);
      tp.release(&tp);
    } else if (!err.release || !err.message || !err.message[0]) {
      abort(); /* a refusal names what was wrong */
    }
    ql_plugin_leave(&plugin, token);
  }
  ql_error_release(&err);
  ql_table_spec_free(&spec);
  return 0;
}
