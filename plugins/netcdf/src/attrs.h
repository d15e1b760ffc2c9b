/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_netcdf: a variable's (or a group's: varid NC_GLOBAL) attributes as
 * a JSON object (attrs.c documents the mapping). Called with the lock held.
 * *out is a new reference, also on failure (the caller decrefs it). Errors
 * name the attribute; the caller prefixes file and variable. */
#ifndef QLINK_NETCDF_ATTRS_H
#define QLINK_NETCDF_ATTRS_H

#include <jansson.h>

#include "qlink/error.h"

int ncf_attrs_json(int gid, int varid, json_t **out, struct ql_error *error);

#endif /* QLINK_NETCDF_ATTRS_H */
