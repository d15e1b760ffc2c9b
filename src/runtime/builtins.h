/* SPDX-License-Identifier: Apache-2.0 */
/* libqlink internal: the table of canonical built-in functions behind
 * ql_function_registry_add_builtins (docs/functions.md lists the same). */
#ifndef QLINK_SRC_RUNTIME_BUILTINS_H
#define QLINK_SRC_RUNTIME_BUILTINS_H

#include <stdint.h>

struct ql_builtin {
  const char *name;      /* as SQL spells it (canonical name or alias) */
  const char *canonical; /* NULL: `name` is canonical; else the name an alias resolves to */
  int32_t kind;          /* enum ql_function_kind */
  int32_t volatility;    /* enum ql_volatility */
};

/* The table, `*count` rows; static storage. */
const struct ql_builtin *ql_builtins(int64_t *count);

#endif /* QLINK_SRC_RUNTIME_BUILTINS_H */
