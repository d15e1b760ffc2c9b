/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: qlink_tables('SPEC') and qlink_attach('NAME','SPEC')
 * (tables.c). */
#ifndef QLS_TABLES_H
#define QLS_TABLES_H

struct qls_conn;

/* Registers the qlink_tables module and qlink_attach on c->db; a SQLite
 * status. */
int qls_register_tables(struct qls_conn *c);

#endif /* QLS_TABLES_H */
