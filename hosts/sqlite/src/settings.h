/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: qlink_allow and qlink_trust_schema (settings.c). */
#ifndef QLS_SETTINGS_H
#define QLS_SETTINGS_H

struct qls_conn;

/* Registers qlink_allow('DIR', ...) / qlink_allow() and
 * qlink_trust_schema([0|1]) on c->db; a SQLite status. */
int qls_register_settings(struct qls_conn *c);

#endif /* QLS_SETTINGS_H */
