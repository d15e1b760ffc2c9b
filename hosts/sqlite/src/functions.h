/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: qlink_load('PLUGIN' [, 'NAME']) (functions.c). */
#ifndef QLS_FUNCTIONS_H
#define QLS_FUNCTIONS_H

struct qls_conn;

/* Registers qlink_load on c->db; a SQLite status. */
int qls_register_functions(struct qls_conn *c);

#endif /* QLS_FUNCTIONS_H */
