/* SPDX-License-Identifier: Apache-2.0 */
/* The SQLite host driven through libsqlite3: the extension (built in this
 * tree, with the sanitizers when the tree has them) loaded into real
 * connections. Checks the xBestIndex translation through EXPLAIN QUERY
 * PLAN (its idxStr), answers, every entry point's errors, the plugin path
 * rule, sqlite3_interrupt, and two connections in two threads. */
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ql_test.h"

static char g_ext[4096], g_plugins[4096];

/* The first column of the first row (or "ERROR: message"), malloc'd. */
static char *q1(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  char *out = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    const char *t = (const char *)sqlite3_column_text(st, 0);
    out = strdup(t ? t : "NULL");
  } else if (rc == SQLITE_DONE) {
    out = strdup("(no row)");
  } else {
    size_t n = strlen(sqlite3_errmsg(db)) + 8;
    out = malloc(n);
    snprintf(out, n, "ERROR: %s", sqlite3_errmsg(db));
  }
  sqlite3_finalize(st);
  return out;
}

#define CHECK_Q(db, sql, want)   \
  do {                           \
    char *got_ = q1(db, sql);    \
    QL_CHECK_STR(got_, want);    \
    free(got_);                  \
  } while (0)

/* Does the first row start with `prefix`? (for messages with paths) */
#define CHECK_Q_PREFIX(db, sql, prefix)                                    \
  do {                                                                     \
    char *got_ = q1(db, sql);                                              \
    int ok_ = strncmp(got_, prefix, strlen(prefix)) == 0;                  \
    if (!ok_) fprintf(stderr, "got: %s\nwant prefix: %s\n", got_, prefix); \
    QL_CHECK(ok_);                                                         \
    free(got_);                                                            \
  } while (0)

#define CHECK_Q_HAS(db, sql, part)                                   \
  do {                                                               \
    char *got_ = q1(db, sql);                                        \
    int ok_ = strstr(got_, part) != NULL;                            \
    if (!ok_) fprintf(stderr, "got: %s\nwant part: %s\n", got_, part); \
    QL_CHECK(ok_);                                                   \
    free(got_);                                                      \
  } while (0)

static sqlite3 *open_db(void) {
  sqlite3 *db = NULL;
  sqlite3_open(":memory:", &db);
  sqlite3_enable_load_extension(db, 1);
  char *err = NULL;
  if (sqlite3_load_extension(db, g_ext, "sqlite3_qlink_init", &err) != SQLITE_OK) {
    fprintf(stderr, "load %s: %s\n", g_ext, err ? err : "?");
    sqlite3_free(err);
  }
  return db;
}

static void exec(sqlite3 *db, const char *sql) {
  char *err = NULL;
  int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
  if (rc != SQLITE_OK) fprintf(stderr, "%s: %s\n", sql, err ? err : "?");
  QL_CHECK_INT(rc, SQLITE_OK);
  sqlite3_free(err);
}

/* The plan detail of the first scan of `sql`. */
static char *plan_of(sqlite3 *db, const char *sql) {
  char *e = sqlite3_mprintf("EXPLAIN QUERY PLAN %s", sql);
  sqlite3_stmt *st = NULL;
  char *out = NULL;
  if (sqlite3_prepare_v2(db, e, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    out = strdup((const char *)sqlite3_column_text(st, 3));
  sqlite3_finalize(st);
  sqlite3_free(e);
  return out ? out : strdup("(no plan)");
}

#define CHECK_PLAN(db, sql, want)   \
  do {                              \
    char *got_ = plan_of(db, sql);  \
    QL_CHECK_STR(got_, want);       \
    free(got_);                     \
  } while (0)

static void test_best_index(sqlite3 *db) {
  exec(db, "CREATE VIRTUAL TABLE s USING qlink('qlink_sample/series?start=0&stop=100&step=1')");
  CHECK_PLAN(db, "SELECT sum(value) FROM s WHERE value > 10 AND value <= 20",
             "SCAN s VIRTUAL TABLE INDEX 0:qlink columns=value filters=value > ?1 [exact, omitted]; value <= ?2 "
             "[exact, omitted]");
  CHECK_PLAN(db, "SELECT parity FROM s WHERE value IN (1, 2, 3)",
             "SCAN s VIRTUAL TABLE INDEX 1:qlink columns=value,parity filters=value IN ?1 [exact, omitted]");
  /* every constraint exact: LIMIT and OFFSET reach the scan */
  CHECK_PLAN(db, "SELECT value FROM s WHERE value >= 50 LIMIT 3 OFFSET 2",
             "SCAN s VIRTUAL TABLE INDEX 2:qlink columns=value filters=value >= ?1 [exact, omitted] limit=?2 offset=?3");
  /* parity is not pushable in the sample: SQLite filters, so no limit */
  CHECK_PLAN(db, "SELECT value FROM s WHERE parity = 'odd' LIMIT 3",
             "SCAN s VIRTUAL TABLE INDEX 3:qlink columns=value,parity");
  /* a value that does not convert to the column's type stays with SQLite */
  CHECK_PLAN(db, "SELECT value FROM s WHERE value = 'abc'", "SCAN s VIRTUAL TABLE INDEX 4:qlink columns=value");
  /* a join's right side is not known when planning: pushed, re-checked */
  CHECK_PLAN(db, "SELECT b.square FROM s a JOIN s b ON b.value = a.value + 1 WHERE a.value < 3",
             "SCAN a VIRTUAL TABLE INDEX 5:qlink columns=value filters=value < ?1 [exact, omitted]");
  /* answers */
  CHECK_Q(db, "SELECT sum(value) FROM s WHERE value > 10 AND value <= 20", "155");
  CHECK_Q(db, "SELECT group_concat(value) FROM s WHERE value IN (3, '4', 7.0, 2.5, NULL)", "3,4,7");
  CHECK_Q(db, "SELECT group_concat(value) FROM (SELECT value FROM s WHERE value >= 50 LIMIT 3 OFFSET 2)", "52,53,54");
  CHECK_Q(db, "SELECT count(*) FROM s WHERE value = 'abc'", "0");
  CHECK_Q(db, "SELECT count(*) FROM s WHERE value = '7'", "1");
  CHECK_Q(db, "SELECT group_concat(b.square) FROM s a JOIN s b ON b.value = a.value + 1 WHERE a.value < 3", "1,4,9");
  CHECK_Q(db, "SELECT count(*), sum(square) FROM s WHERE parity = 'odd'", "50");
  CHECK_Q(db, "SELECT count(*) FROM s WHERE value IS NULL", "0");
  CHECK_Q(db, "SELECT count(*) FROM s WHERE value IS NOT 5", "99");
  CHECK_Q(db, "SELECT count(*) FROM s WHERE value != 5 AND value < 10", "9");
  /* OR: SQLite's multi-index OR would union one scan per term by rowid,
   * and qlink rowids are ordinals within a scan, so it must not be chosen
   * (it returned 1, 10, "5", "2,1,0", 2 and 10 here) */
  CHECK_Q(db, "SELECT count(*) FROM s WHERE value = 1 OR value = 2", "2");
  CHECK_Q(db, "SELECT count(*) FROM s WHERE value < 10 OR value > 90", "19");
  CHECK_Q(db, "SELECT group_concat(value) FROM s WHERE value = 5 OR value = 7", "5,7");
  CHECK_Q(db, "SELECT group_concat(value) FROM (SELECT value FROM s WHERE value < 3 OR value > 96 ORDER BY value DESC)",
          "99,98,97,2,1,0");
  CHECK_Q(db, "SELECT count(*) FROM s WHERE (value < 3 OR value > 97) AND value != 1", "4");
  CHECK_Q(db, "SELECT count(*) FROM s a JOIN s b ON a.value = b.value OR a.value = b.value + 50 WHERE b.value < 10",
          "20");
  CHECK_PLAN(db, "SELECT count(*) FROM s WHERE value = 1 OR value = 2",
             "SCAN s VIRTUAL TABLE INDEX 8:qlink columns=value filters=value IN ?1 [exact, omitted]");
  CHECK_PLAN(db, "SELECT count(*) FROM s WHERE value < 10 OR value > 90",
             "SCAN s VIRTUAL TABLE INDEX 4:qlink columns=value");
  CHECK_Q(db, "SELECT typeof(value) || typeof(parity) FROM s LIMIT 1", "integertext");
  /* one ordered partition serves ORDER BY (so LIMIT reaches the scan too);
   * four partitions, or the opposite direction, do not */
  exec(db, "CREATE VIRTUAL TABLE one USING qlink('qlink_sample/series?start=100&stop=0&step=-1&partitions=1')");
  CHECK_PLAN(db, "SELECT value FROM one ORDER BY value DESC LIMIT 3",
             "SCAN one VIRTUAL TABLE INDEX 0:qlink columns=value limit=?1 ordered");
  CHECK_Q(db, "SELECT group_concat(value) FROM (SELECT value FROM one ORDER BY value DESC LIMIT 3)", "100,99,98");
  CHECK_PLAN(db, "SELECT value FROM one ORDER BY value LIMIT 3", "SCAN one VIRTUAL TABLE INDEX 1:qlink columns=value");
  CHECK_Q(db, "SELECT group_concat(value) FROM (SELECT value FROM one ORDER BY value LIMIT 3)", "1,2,3");
  CHECK_PLAN(db, "SELECT value FROM s ORDER BY value LIMIT 3", "SCAN s VIRTUAL TABLE INDEX 4:qlink columns=value");
  CHECK_Q(db, "SELECT group_concat(value) FROM (SELECT value FROM s ORDER BY value DESC LIMIT 2)", "99,98");
}

static void test_functions(sqlite3 *db) {
  CHECK_Q(db, "SELECT qlink_load('qlink_sample')",
          "qlink_sample: loaded scalar add_one, aggregate sum_sq; table function sample_range through CREATE "
          "VIRTUAL TABLE t USING qlink_call('qlink_sample', 'NAME', argument, ...); skipped running_count (a window "
          "function is a partition evaluator (evaluate_all), which SQLite's aggregate-style window API cannot "
          "express); decline_all (SQLite has no planner hook); drop_true_filters (SQLite has no planner hook)");
  CHECK_Q(db, "SELECT add_one(41)", "42");
  CHECK_Q(db, "SELECT add_one(NULL) IS NULL", "1");
  CHECK_Q(db, "SELECT sum_sq(value) FROM s WHERE value < 4", "14");
  /* 3000 rows: three batches of the aggregate's 1024-row buffer */
  exec(db, "CREATE VIRTUAL TABLE big USING qlink('qlink_sample/series?start=0&stop=3000&step=1')");
  CHECK_Q(db, "SELECT sum_sq(value) = sum(value * value) FROM big", "1");
  CHECK_Q(db, "SELECT parity, sum_sq(value) FROM s WHERE value < 4 GROUP BY parity ORDER BY parity", "even");
  CHECK_Q(db, "SELECT add_one('x')",
          "ERROR: qlink: qlink_sample.add_one: argument 1: 'x' is not a number (the function takes l)");
  CHECK_Q(db, "SELECT qlink_load('qlink_sample', 'running_count')",
          "ERROR: qlink_load: qlink_sample.running_count cannot be loaded into SQLite: a window function is a "
          "partition evaluator (evaluate_all), which SQLite's aggregate-style window API cannot express");
  CHECK_Q(db, "SELECT qlink_load('qlink_sample', 'sample_range')",
          "qlink_sample: loaded nothing; table function sample_range through CREATE VIRTUAL TABLE t USING "
          "qlink_call('qlink_sample', 'NAME', argument, ...)");
  CHECK_Q(db, "SELECT qlink_load('qlink_sample', 'nope')", "ERROR: qlink_load: plugin qlink_sample has no function 'nope'");
}

static void test_schema_providers(sqlite3 *db) {
  CHECK_Q(db, "SELECT group_concat(table_name || '.' || column_name || ':' || arrow_type || ':' || sqlite_type) "
              "FROM qlink_tables('broken_third_batch/tables')",
          "numbers.x:l:INTEGER");
  CHECK_Q(db, "SELECT group_concat(column_name) FROM qlink_tables('qlink_sample/series?stop=3')", "value,square,parity");
  CHECK_Q(db, "SELECT qlink_attach('nums', 'broken_third_batch/tables')", "1");
  CHECK_Q(db, "SELECT qlink_attach('nums', 'broken_third_batch/tables')", "1"); /* again: nothing to add */
  /* two batches of 25 rows: the third, which fails, is never read */
  CHECK_Q(db, "SELECT sum(x) FROM (SELECT x FROM nums.numbers LIMIT 30)", "435");
  CHECK_Q(db, "SELECT qlink_attach('1bad', 'broken_third_batch/tables')",
          "ERROR: qlink_attach: '1bad' is not a schema name (letters, digits, _)");
  CHECK_Q(db, "SELECT * FROM qlink_tables('qlink_sample/nothing')",
          "ERROR: qlink_tables: qlink_sample/nothing: plugin qlink_sample has no table or schema provider 'nothing'");
}

static void test_errors(sqlite3 *db) {
  CHECK_Q(db, "CREATE VIRTUAL TABLE e1 USING qlink('nospec')",
          "ERROR: qlink: nospec: table spec 'nospec' has no '/': expected PLUGIN/PROVIDER?key=value&...");
  CHECK_Q(db, "CREATE VIRTUAL TABLE e2 USING qlink('qlink_sample/nope')",
          "ERROR: qlink: qlink_sample/nope: plugin qlink_sample has no table or schema provider 'nope'");
  CHECK_Q(db, "CREATE VIRTUAL TABLE e3 USING qlink('qlink_sample/series?stop=5&bogus=1')",
          "ERROR: qlink: qlink_sample (qlink_sample/series?stop=5&bogus=1): unknown option 'bogus' for "
          "qlink_sample/series; accepted: start, stop, step, partitions");
  CHECK_Q_HAS(db, "CREATE VIRTUAL TABLE e4 USING qlink('broken_abi_major/numbers')",
              "serves none of the ABI versions this host speaks (0.1); the plugin said: serves ABI 1.0 only");
  CHECK_Q(db, "CREATE VIRTUAL TABLE e5 USING qlink('broken_third_batch/tables')",
          "ERROR: qlink: broken (broken_third_batch/tables): 'tables' is a schema provider: SELECT qlink_attach('NAME', "
          "'broken_third_batch/tables') makes its tables NAME.<table>");
  exec(db, "CREATE VIRTUAL TABLE b3 USING qlink('broken_third_batch/numbers?n=100')");
  CHECK_Q(db, "SELECT count(*) FROM b3",
          "ERROR: qlink: broken (broken_third_batch/numbers?n=100): numbers: reading batch 3 failed (deliberately)");
  CHECK_Q(db, "SELECT count(*) FROM b3 WHERE x < 50", "ERROR: qlink: broken (broken_third_batch/numbers?n=100): "
                                                       "numbers: reading batch 3 failed (deliberately)");
  CHECK_Q(db, "SELECT count(*) FROM s", "100"); /* the connection keeps working */
}

/* qlink_call: table functions, called when the virtual table is created
 * (plugins/qls_call_test.so, hosts/sqlite/tests/call_plugin.c). */
static void test_call(sqlite3 *db) {
  /* every literal kind reaches the plugin with its format and exact value */
  exec(db, "CREATE VIRTUAL TABLE e USING qlink_call('qls_call_test', 'echo', 42, -0x10, 0.125, - 2e3, 'it''s', "
           "NULL, TRUE, false, '', 9223372036854775807, 'caf\xc3\xa9')");
  CHECK_Q(db, "SELECT group_concat(position || ':' || format || ':' || coalesce(value, 'NULL'), '|') FROM e",
          "1:l:42|2:l:-16|3:g:0.125|4:g:-2000|5:u:it's|6:n:NULL|7:b:true|8:b:false|9:u:|10:l:9223372036854775807|"
          "11:u:caf\xc3\xa9");
  CHECK_Q(db, "SELECT typeof(position) || typeof(format) || typeof(value) FROM e WHERE position = 6", "integertextnull");
  /* served as a qlink table: projection and LIMIT reach the scan */
  CHECK_PLAN(db, "SELECT value FROM e LIMIT 2", "SCAN e VIRTUAL TABLE INDEX 1:qlink columns=value limit=?1");
  CHECK_Q(db, "SELECT group_concat(value) FROM (SELECT value FROM e LIMIT 2)", "42,-16");
  CHECK_PLAN(db, "SELECT format FROM e WHERE position > 3", "SCAN e VIRTUAL TABLE INDEX 2:qlink columns=position,format");
  CHECK_Q(db, "SELECT count(*) FROM e WHERE position > 3", "8");
  /* the sample's sample_range: filters, LIMIT and ORDER BY reach its scan
   * as they reach a USING qlink table's */
  exec(db, "CREATE VIRTUAL TABLE r USING qlink_call('qlink_sample', 'sample_range', -5, 20, 3)");
  CHECK_Q(db, "SELECT group_concat(value) FROM r", "-5,-2,1,4,7,10,13,16,19");
  CHECK_PLAN(db, "SELECT value FROM r WHERE value > 4 LIMIT 2",
             "SCAN r VIRTUAL TABLE INDEX 1:qlink columns=value filters=value > ?1 [exact, omitted] limit=?2");
  CHECK_Q(db, "SELECT group_concat(value) FROM (SELECT value FROM r WHERE value > 4 LIMIT 2)", "7,10");
  CHECK_PLAN(db, "SELECT value FROM r ORDER BY value LIMIT 3",
             "SCAN r VIRTUAL TABLE INDEX 2:qlink columns=value limit=?1 ordered");
  CHECK_Q(db, "SELECT group_concat(b.square) FROM r JOIN s AS b ON b.value = r.value WHERE r.value > 0", "1,16,49,100,169,256,361");
  CHECK_Q(db, "CREATE VIRTUAL TABLE r2 USING qlink_call('qlink_sample', 'sample_range', 1, 2.5)",
          "ERROR: qlink: qlink_sample (sample_range(1, 2.5)): sample_range: argument 2 (stop) must be an integer "
          "literal, got a literal of type 'g'");
  CHECK_Q(db, "CREATE VIRTUAL TABLE r2 USING qlink_call('qlink_sample', 'sample_range', 1, 5, 0)",
          "ERROR: qlink: qlink_sample (sample_range(1, 5, 0)): sample_range: argument 'step' must not be 0");
  CHECK_Q(db, "CREATE VIRTUAL TABLE r2 USING qlink_call('qlink_sample', 'sample_range', 1)",
          "ERROR: qlink: qlink_sample (sample_range(1)): sample_range takes 2 or 3 arguments (start, stop[, step]), "
          "got 1");
  /* no argument; dropped and made again */
  exec(db, "CREATE VIRTUAL TABLE e0 USING qlink_call('qls_call_test', 'echo')");
  CHECK_Q(db, "SELECT count(*) FROM e0", "0");
  exec(db, "DROP TABLE e0");
  exec(db, "CREATE VIRTUAL TABLE e0 USING qlink_call('qls_call_test','echo',  'a b' )");
  CHECK_Q(db, "SELECT value FROM e0", "a b");
  /* arguments that are no literal, named by position and text */
  CHECK_Q(db, "CREATE VIRTUAL TABLE b1 USING qlink_call('qls_call_test', 'echo', 1, abc)",
          "ERROR: qlink: echo(1, abc): qlink_call argument 4 `abc`: not a SQL literal: expected an integer, a real, a "
          "'string', NULL, TRUE or FALSE");
  CHECK_Q(db, "CREATE VIRTUAL TABLE b1 USING qlink_call('qls_call_test', 'echo', 1 + 1)",
          "ERROR: qlink: echo(1 + 1): qlink_call argument 3 `1 + 1`: text after the number (one literal per argument)");
  CHECK_Q(db, "CREATE VIRTUAL TABLE b1 USING qlink_call('qls_call_test', 'echo', \"x\")",
          "ERROR: qlink: echo(\"x\"): qlink_call argument 3 `\"x\"`: a quoted identifier, not a string: strings take "
          "single quotes");
  CHECK_Q(db, "CREATE VIRTUAL TABLE b1 USING qlink_call('qls_call_test', 'echo', 'a', 99999999999999999999)",
          "ERROR: qlink: echo('a', 99999999999999999999): qlink_call argument 4 `99999999999999999999`: an integer "
          "outside the int64 range");
  CHECK_Q(db, "CREATE VIRTUAL TABLE b1 USING qlink_call('qls_call_test', 'echo', (1))",
          "ERROR: qlink: echo((1)): qlink_call argument 3 `(1)`: not a SQL literal: expected an integer, a real, a "
          "'string', NULL, TRUE or FALSE");
  CHECK_Q(db, "CREATE VIRTUAL TABLE b1 USING qlink_call(qls_call_test, 'echo')",
          "ERROR: qlink: qlink_call argument 1 `qls_call_test`: not a SQL literal: expected an integer, a real, a "
          "'string', NULL, TRUE or FALSE; USING qlink_call('PLUGIN', 'FUNCTION', argument, ...) names the plugin as "
          "a 'string'");
  CHECK_Q(db, "CREATE VIRTUAL TABLE b1 USING qlink_call('qls_call_test', 7)",
          "ERROR: qlink: qlink_call argument 2 `7`: not a 'string'; USING qlink_call('PLUGIN', 'FUNCTION', argument, "
          "...) names the function as a 'string'");
  CHECK_Q(db, "CREATE VIRTUAL TABLE b1 USING qlink_call('qls_call_test')",
          "ERROR: qlink: USING qlink_call('PLUGIN', 'FUNCTION', argument, ...) takes the plugin, the function and its "
          "arguments, got 1 arguments");
  /* the modules are not eponymous: a table needs CREATE VIRTUAL TABLE (xCreate) */
  CHECK_Q(db, "SELECT * FROM qlink_call", "ERROR: no such table: qlink_call");
  CHECK_Q(db, "SELECT * FROM qlink", "ERROR: no such table: qlink");
  CHECK_Q(db, "CREATE VIRTUAL TABLE b1 USING qlink_call",
          "ERROR: qlink: USING qlink_call('PLUGIN', 'FUNCTION', argument, ...) takes the plugin, the function and its "
          "arguments, got 0 arguments");
  /* names that are no table function */
  CHECK_Q(db, "CREATE VIRTUAL TABLE b1 USING qlink_call('qls_call_test', 'nope')",
          "ERROR: qlink: qls_call_test (nope()): plugin qls_call_test has no table function 'nope'");
  CHECK_Q(db, "CREATE VIRTUAL TABLE b1 USING qlink_call('qlink_sample', 'add_one', 1)",
          "ERROR: qlink: qlink_sample (add_one(1)): plugin qlink_sample has no table function 'add_one'; 'add_one' is "
          "a scalar function: SELECT qlink_load('PLUGIN', 'NAME') registers it");
  CHECK_Q(db, "CREATE VIRTUAL TABLE b1 USING qlink_call('qlink_sample', 'series')",
          "ERROR: qlink: qlink_sample (series()): plugin qlink_sample has no table function 'series'; 'series' is a "
          "table provider: USING qlink('PLUGIN/NAME?...') reads it");
  CHECK_Q_PREFIX(db, "CREATE VIRTUAL TABLE b1 USING qlink_call('no_such_plugin', 'echo')",
                 "ERROR: qlink: echo(): plugin 'no_such_plugin' is in no allowed plugin directory (");
  /* a call that fails: the plugin's message is the statement's error */
  CHECK_Q(db, "CREATE VIRTUAL TABLE b1 USING qlink_call('qls_call_test', 'fail', 1, 'x', NULL)",
          "ERROR: qlink: qls_call_test (fail(1, 'x', NULL)): fail: refused 3 arguments (deliberately)");
  CHECK_Q(db, "CREATE VIRTUAL TABLE b1 USING qlink_call('broken_third_batch', 'numbers_fn', 1)",
          "ERROR: qlink: broken (numbers_fn(1)): numbers_fn takes no arguments");
  /* a provider failing mid-scan, as for USING qlink */
  exec(db, "CREATE VIRTUAL TABLE nf USING qlink_call('broken_third_batch', 'numbers_fn')");
  CHECK_Q(db, "SELECT count(*) FROM nf",
          "ERROR: qlink: broken (numbers_fn()): numbers: reading batch 3 failed (deliberately)");
  CHECK_Q(db, "SELECT group_concat(x) FROM (SELECT x FROM nf LIMIT 4)", "0,1,2,3");
  /* the connection keeps working */
  CHECK_Q(db, "SELECT count(*) FROM e", "11");
  CHECK_Q(db, "SELECT name FROM sqlite_master WHERE name = 'b1'", "(no row)");
  /* qlink_load names the table functions and how to call them */
  CHECK_Q(db, "SELECT qlink_load('qls_call_test')",
          "qls_call_test: loaded nothing; table functions echo, fail through CREATE VIRTUAL TABLE t USING "
          "qlink_call('qls_call_test', 'NAME', argument, ...)");
  CHECK_Q(db, "SELECT qlink_load('qls_call_test', 'echo')",
          "qls_call_test: loaded nothing; table function echo through CREATE VIRTUAL TABLE t USING "
          "qlink_call('qls_call_test', 'NAME', argument, ...)");
}

/* A qlink_call table in a database file calls again when the file is
 * opened again (xConnect). */
static void test_call_reconnect(void) {
  char path[] = "/tmp/qls_call_XXXXXX";
  int fd = mkstemp(path);
  QL_CHECK(fd >= 0);
  close(fd);
  sqlite3 *db = NULL;
  sqlite3_open(path, &db);
  sqlite3_enable_load_extension(db, 1);
  QL_CHECK_INT(sqlite3_load_extension(db, g_ext, "sqlite3_qlink_init", NULL), SQLITE_OK);
  exec(db, "CREATE VIRTUAL TABLE kept USING qlink_call('qls_call_test', 'echo', 'x', 2)");
  /* another connection changes the schema: this one reads it again and
   * SQLite connects `kept` again (xConnect); it is this connection's own
   * table, so it connects without trust */
  sqlite3 *other = NULL;
  sqlite3_open(path, &other);
  exec(other, "CREATE TABLE plain(x)");
  sqlite3_close(other);
  CHECK_Q(db, "SELECT count(*) FROM plain", "0");
  CHECK_Q(db, "SELECT group_concat(format || '=' || value) FROM kept", "u=x,l=2");
  sqlite3_close(db);
  db = NULL;
  sqlite3_open(path, &db);
  sqlite3_enable_load_extension(db, 1);
  QL_CHECK_INT(sqlite3_load_extension(db, g_ext, "sqlite3_qlink_init", NULL), SQLITE_OK);
  /* another connection's table: refused until this one trusts the schema */
  CHECK_Q(db, "SELECT group_concat(format || '=' || value) FROM kept",
          "ERROR: qlink: main.kept comes from the database's schema (USING qlink_call('qls_call_test', 'echo', 'x', "
          "2)), which this connection did not create: a database file can name any plugin or path there, so qlink "
          "connects it only when the connection trusts the schema; run SELECT qlink_trust_schema(1) first if you "
          "trust this database");
  CHECK_Q(db, "SELECT qlink_trust_schema()", "0");
  CHECK_Q(db, "SELECT qlink_trust_schema(1)", "1");
  CHECK_Q(db, "SELECT group_concat(format || '=' || value) FROM kept", "u=x,l=2");
  sqlite3_close(db);
  unlink(path);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

static void test_path_rule(void) {
  char dir[] = "/tmp/qls_path_XXXXXX";
  QL_CHECK(mkdtemp(dir) != NULL);
  char allowed[4200], link[4300], text[4300], sample[4200], sql[9000];
  snprintf(allowed, sizeof allowed, "%s/allowed", dir);
  mkdir(allowed, 0700);
  snprintf(sample, sizeof sample, "%s/qlink_sample.so", g_plugins);
  snprintf(link, sizeof link, "%s/linked.so", allowed);
  QL_CHECK_INT(symlink(sample, link), 0);
  snprintf(text, sizeof text, "%s/notes.so", allowed);
  write_file(text, "not a shared library\n");
  unsetenv("QLINK_PLUGIN_PATH");
  sqlite3 *db = open_db();
  CHECK_Q(db, "CREATE VIRTUAL TABLE x USING qlink('qlink_sample/series?stop=3')",
          "ERROR: qlink: qlink_sample/series?stop=3: plugin 'qlink_sample': no plugin directory is allowed; set "
          "QLINK_PLUGIN_PATH or call qlink_allow('DIR') before loading plugins");
  sqlite3_close(db);
  db = open_db();
  snprintf(sql, sizeof sql, "SELECT qlink_allow('%s')", allowed);
  CHECK_Q(db, sql, "1");
  /* outside the directory */
  snprintf(sql, sizeof sql, "CREATE VIRTUAL TABLE x USING qlink('%s/series?stop=3')", sample);
  CHECK_Q_HAS(db, sql, "outside the allowed plugin directories");
  /* a symlink inside leading out */
  CHECK_Q_HAS(db, "CREATE VIRTUAL TABLE x USING qlink('linked/series?stop=3')", "outside the allowed plugin directories");
  snprintf(sql, sizeof sql, "CREATE VIRTUAL TABLE x USING qlink('%s/series?stop=3')", link);
  CHECK_Q_HAS(db, sql, "outside the allowed plugin directories");
  /* .. climbing out */
  snprintf(sql, sizeof sql, "SELECT qlink_load('%s/../../../%s/qlink_sample.so')", allowed, g_plugins);
  CHECK_Q_HAS(db, sql, "outside the allowed plugin directories");
  snprintf(sql, sizeof sql, "CREATE VIRTUAL TABLE x USING qlink_call('%s/qls_call_test.so', 'echo')", g_plugins);
  CHECK_Q_HAS(db, sql, "outside the allowed plugin directories");
  /* a file inside that is no plugin */
  CHECK_Q_HAS(db, "SELECT qlink_load('notes')", "is not a qlink plugin");
  /* SQL cannot widen the list once a plugin was named */
  snprintf(sql, sizeof sql, "SELECT qlink_allow('%s')", g_plugins);
  CHECK_Q_HAS(db, sql, "the allowed directories are fixed once a plugin was loaded");
  sqlite3_close(db);
  /* qlink_allow() seals explicitly */
  db = open_db();
  CHECK_Q(db, "SELECT qlink_allow()", "0");
  CHECK_Q_HAS(db, sql, "the allowed directories are fixed once a plugin was loaded");
  sqlite3_close(db);
  unlink(link);
  unlink(text);
  rmdir(allowed);
  rmdir(dir);
  setenv("QLINK_PLUGIN_PATH", g_plugins, 1);
}

/* sqlite3_interrupt from another thread stops a scan that would not end. */
struct interrupter {
  sqlite3 *db;
};

static void *interrupt_later(void *arg) {
  struct interrupter *it = arg;
  usleep(200 * 1000);
  sqlite3_interrupt(it->db);
  return NULL;
}

static void test_interrupt(sqlite3 *db) {
  exec(db, "CREATE VIRTUAL TABLE endless USING qlink('qlink_sample/series?start=0&stop=3000000000&step=1')");
  struct interrupter it = {db};
  pthread_t t;
  pthread_create(&t, NULL, interrupt_later, &it);
  CHECK_Q(db, "SELECT sum(value) FROM endless", "ERROR: interrupted");
  pthread_join(t, NULL);
  CHECK_Q(db, "SELECT count(*) FROM s", "100");
}

struct worker {
  int64_t stop;
  char *answer;
};

static void *work(void *arg) {
  struct worker *w = arg;
  sqlite3 *db = open_db();
  char sql[256];
  snprintf(sql, sizeof sql, "CREATE VIRTUAL TABLE t USING qlink('qlink_sample/series?start=0&stop=%lld&step=1')",
           (long long)w->stop);
  sqlite3_exec(db, sql, NULL, NULL, NULL);
  w->answer = q1(db, "SELECT sum(value) FROM t WHERE value % 3 = 0");
  sqlite3_close(db);
  return NULL;
}

static void test_threads(void) {
  struct worker w[2] = {{300000, NULL}, {600000, NULL}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, &w[i]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  QL_CHECK_STR(w[0].answer, "14999850000");
  QL_CHECK_STR(w[1].answer, "59999700000");
  free(w[0].answer);
  free(w[1].answer);
}

int main(void) {
  const char *build = getenv("QL_BUILD_DIR");
  if (!build) build = "build/asan";
  snprintf(g_ext, sizeof g_ext, "%s/hosts/sqlite/qlink.so", build);
  snprintf(g_plugins, sizeof g_plugins, "%s/plugins", build);
  char *real = realpath(g_plugins, NULL);
  if (real) {
    snprintf(g_plugins, sizeof g_plugins, "%s", real);
    free(real);
  }
  setenv("QLINK_PLUGIN_PATH", g_plugins, 1);
  sqlite3 *db = open_db();
  test_best_index(db);
  test_functions(db);
  test_schema_providers(db);
  test_errors(db);
  test_call(db);
  test_interrupt(db);
  sqlite3_close(db);
  test_path_rule();
  test_call_reconnect();
  test_threads();
  QL_TEST_END();
}
