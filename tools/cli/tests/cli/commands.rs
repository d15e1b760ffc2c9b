// SPDX-License-Identifier: Apache-2.0
//! The `qlink` binary end to end: streaming output with bounded memory, the
//! header of an empty result, JSON nulls and non-finite floats, Ctrl-C, and
//! the one-line error texts.
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const QLINK: &str = env!("CARGO_BIN_EXE_qlink");

fn qlink(args: &[&str]) -> Output {
    Command::new(QLINK).args(args).output().expect("run qlink")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// Runs qlink, counts its stdout lines as they arrive, and reaps it with
/// wait4 to read that one child's peak resident set (KiB).
#[allow(clippy::zombie_processes)] // reaped by wait4, which std's Child does not see
fn count_lines_and_peak_rss(args: &[&str]) -> (usize, String, i32, i64) {
    let mut child = Command::new(QLINK).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id() as libc::pid_t;
    let mut out = BufReader::with_capacity(1 << 16, child.stdout.take().unwrap());
    let mut lines = 0usize;
    let mut last = String::new();
    let mut line = String::new();
    loop {
        line.clear();
        if out.read_line(&mut line).unwrap() == 0 {
            break;
        }
        lines += 1;
        if !line.trim().is_empty() {
            last.clone_from(&line);
        }
    }
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(err, "", "qlink wrote to stderr");
    let mut status = 0;
    // SAFETY: rusage is plain old data; pid is our own unreaped child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid);
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -1 };
    (lines, last, code, usage.ru_maxrss)
}

/// 20 million rows collected before printing peaked at ~200 MB (160 MB of
/// Int64 batches alone); streamed, the process stays near its ~85 MB base.
#[test]
fn csv_streams_twenty_million_rows_in_bounded_memory() {
    let (lines, last, code, peak_kib) = count_lines_and_peak_rss(&["sql", "--format", "csv", "SELECT * FROM generate_series(1, 20000000)"]);
    assert_eq!(code, 0);
    assert_eq!(lines, 20_000_001, "header + one line per row");
    assert_eq!(last, "20000000\n");
    assert!(peak_kib < 140 * 1024, "peak RSS {peak_kib} KiB: the result was buffered");
}

#[test]
fn json_and_table_stream_in_bounded_memory() {
    let (lines, last, code, peak_kib) = count_lines_and_peak_rss(&["sql", "--format", "json", "SELECT * FROM generate_series(1, 5000000)"]);
    assert_eq!(code, 0);
    assert_eq!(lines, 1, "one JSON array on one line");
    assert!(last.ends_with("{\"value\":5000000}]\n"));
    assert!(peak_kib < 140 * 1024, "json peak RSS {peak_kib} KiB");

    // Table: pages of 4096 rows, each its own block of 3 header lines + rows + 1 closing line.
    let rows = 10_000usize;
    let (lines, last, code, _) = count_lines_and_peak_rss(&["sql", "SELECT value AS v FROM generate_series(1, 10000) ORDER BY v"]);
    assert_eq!(code, 0);
    let pages = rows.div_ceil(4096);
    assert_eq!(lines, rows + pages * 4);
    assert_eq!(last, "+-------+\n");
}

#[test]
fn table_pages_are_aligned_blocks() {
    let o = qlink(&["sql", "SELECT value AS v FROM generate_series(1, 4097) ORDER BY v"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let blocks: Vec<&str> = text.split("+------+\n| v    |\n+------+\n").collect();
    assert_eq!(blocks.len(), 3, "two headers: a full page of 4096 rows, then one row");
    assert_eq!(blocks[0], "");
    assert!(text.ends_with("+------+\n| v    |\n+------+\n| 4097 |\n+------+\n"));
    assert!(text.contains("| 4096 |\n+------+\n+------+\n"));
}

#[test]
fn limit_zero_prints_the_header() {
    let q = "SELECT 1 AS a, 'x' AS b LIMIT 0";
    let csv = qlink(&["sql", "--format", "csv", q]);
    assert_eq!(stdout(&csv), "a,b\n");
    let table = qlink(&["sql", q]);
    assert_eq!(stdout(&table), "+---+---+\n| a | b |\n+---+---+\n+---+---+\n");
    let json = qlink(&["sql", "--format", "json", q]);
    assert_eq!(stdout(&json), "[]\n");
}

#[test]
fn json_keeps_null_keys_and_names_non_finite_floats() {
    let o = qlink(&[
        "sql",
        "--format",
        "json",
        "SELECT CAST(NULL AS INT) AS n, CAST('NaN' AS DOUBLE) AS x, CAST('inf' AS DOUBLE) AS i, \
         CAST('-inf' AS DOUBLE) AS m, 1.5 AS f, CAST('NaN' AS REAL) AS r, CAST(NULL AS DOUBLE) AS dn, \
         [CAST('nan' AS DOUBLE), NULL, 2.0] AS l, named_struct('a', CAST('inf' AS DOUBLE)) AS st",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "[{\"n\":null,\"x\":\"NaN\",\"i\":\"Infinity\",\"m\":\"-Infinity\",\"f\":1.5,\"r\":\"NaN\",\"dn\":null,\
         \"l\":[\"NaN\",null,2.0],\"st\":{\"a\":\"Infinity\"}}]\n"
    );
    let help = qlink(&["--help"]);
    assert!(stdout(&help).contains("NaN/+Inf/-Inf as the strings \"NaN\"/\"Infinity\"/\"-Infinity\""));
}

#[test]
fn ctrl_c_prints_one_line_and_exits_130() {
    let child = Command::new(QLINK)
        .args(["sql", "SELECT count(*) FROM generate_series(1, 100000000000)"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) }, 0);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130));
    assert_eq!(stderr(&o).trim_start_matches('\n'), "qlink: interrupted\n");
    assert_eq!(stdout(&o), "");
}

#[test]
fn spec_errors_show_the_plugin_path() {
    let o = qlink(&["sql", "--table", "t=/x/y.so/tab?=1", "SELECT 1"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o), "qlink: error: table spec '/x/y.so/tab?=1': option '=1' has an empty key\n");
    let o = qlink(&["sql", "--planner", "/a/b.so/pl?%%", "SELECT 1"]);
    assert_eq!(stderr(&o), "qlink: error: planner spec '/a/b.so/pl?%%': option '%%' has no '=' (expected key=value)\n");
    let o = qlink(&["sql", "--table", "t=/d/p.so/tab?a=%zz", "SELECT 1"]);
    assert_eq!(stderr(&o), "qlink: error: --table t=/d/p.so/tab?a=%zz: bad percent escape '%zz' in table spec option value '%zz'\n");
}

#[test]
fn unregistered_object_store_is_a_one_line_usage_error() {
    let o = qlink(&["sql", "CREATE EXTERNAL TABLE t STORED AS PARQUET LOCATION 'az://container/x.parquet'"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "qlink: error: no object store is registered for 'az://container/x.parquet' in the qlink CLI (it reads local paths, http(s):// URLs and public gs:// or s3:// buckets)\n"
    );
    let o = qlink(&["sql", "COPY (SELECT 1) TO 'memory:///o.csv'"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.starts_with("qlink: error: no object store is registered for 'memory:///"), "{e}");
    assert!(!e.contains("bug"), "{e}");
}

/// A reader that stops early (`| head`) ends qlink quietly with 141, the
/// status of a tool killed by SIGPIPE, instead of a "Broken pipe" error:
/// whether the pipe breaks in qlink's buffer or inside arrow's CSV writer
/// (wide rows), which reports it as a CSV error string.
#[test]
fn closed_stdout_stops_quietly() {
    let wide = "SELECT value, repeat('x', 2000) AS pad FROM generate_series(1, 200000)";
    for (format, sql, header) in
        [("csv", "SELECT * FROM generate_series(1, 5000000)", "value\n"), ("csv", wide, "value,pad\n"), ("table", wide, "+")]
    {
        let mut child =
            Command::new(QLINK).args(["sql", "--format", format, sql]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        out.read_line(&mut first).unwrap();
        assert!(first.starts_with(header), "{format}: {first:.80}");
        drop(out);
        let o = child.wait_with_output().unwrap();
        assert_eq!(stderr(&o), "", "{format}: {sql}");
        assert_eq!(o.status.code(), Some(141), "{format}: {sql}");
    }
}

/// A --table or --schema name given twice is a usage error naming both
/// specs (a second --schema silently replaced the first store's tables).
#[test]
fn a_name_given_twice_is_a_usage_error() {
    let a = format!("t={SAMPLE}/series?stop=3");
    let b = format!("t={SAMPLE}/series?stop=5");
    let o = qlink(&["sql", "--table", &a, "--table", &b, "SELECT 1"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o), format!("qlink: error: --table t is given twice ({a} and {b}): give each its own name\n"));
    let o = qlink(&["sql", "--schema", "m=x/store?path=a", "--schema", "m=x/store?path=b", "SELECT 1"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o), "qlink: error: --schema m is given twice (m=x/store?path=a and m=x/store?path=b): give each its own name\n");
}

/// `qlink check` exits as qlink-check does: 3 for a plugin that cannot be
/// loaded, 2 for bad usage; `--threads` is checked like qlink-check's.
#[test]
fn check_exit_statuses_follow_qlink_check() {
    let o = qlink(&["check", "/no/such/plugin.so"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let o = qlink(&["check", "--threads", "0", "/no/such/plugin.so"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o), "qlink: error: --threads wants a whole number from 1 to 1024, got '0'\n");
}

/// A memory limit below one byte, infinite or not a number is a usage error,
/// not a silent zero-byte pool.
#[test]
fn memory_limit_must_be_a_real_size() {
    for bad in ["0.5", "0", "inf", "-1G", "1e30T", "lots"] {
        let o = qlink(&["sql", "--memory-limit", bad, "SELECT 1"]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        assert!(stderr(&o).starts_with("qlink: error: --memory-limit: ") && stderr(&o).contains(bad), "{bad}: {}", stderr(&o));
    }
    let o = qlink(&["sql", "--memory-limit", "64M", "--format", "csv", "SELECT 1 AS one"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), "one\n1\n");
}

const SAMPLE: &str = qlink_sys::plugins::SAMPLE;

/// An option of another command did nothing (`sql --analyze` printed the
/// plain result); now it is a usage error naming the option and where it
/// belongs.
#[test]
fn options_of_another_command_are_usage_errors() {
    let cases: [(&[&str], &str); 5] = [
        (
            &["sql", "--analyze", "SELECT 1"],
            "--analyze is not an option of 'qlink sql': it applies to explain only (qlink explain --analyze \"SQL\" \
             runs the query and shows each operator's metrics)",
        ),
        (&["explain", "--spec", "series?stop=1", "SELECT 1"], "--spec is not an option of 'qlink explain': it applies to check only"),
        (&["sql", "--verbose", "SELECT 1"], "--verbose is not an option of 'qlink sql': it applies to check only"),
        (&["check", "--timing", "x.so"], "--timing is not an option of 'qlink check': it applies to sql and explain only"),
        (&["check", "--format=csv", "x.so"], "--format is not an option of 'qlink check': it applies to sql and explain only"),
    ];
    for (args, msg) in cases {
        let o = qlink(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert_eq!(stderr(&o), format!("qlink: error: {msg}\n"), "{args:?}");
        assert_eq!(stdout(&o), "", "{args:?}");
    }
    let o = qlink(&["explain", "--analyze", "SELECT 1 AS a"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("output_rows=1"), "{}", stdout(&o));
    // --format applies to explain too (it was ignored: always a table).
    let o = qlink(&["explain", "--format", "csv", "SELECT 1 AS a"]);
    assert!(stdout(&o).starts_with("plan_type,plan\nlogical_plan,\"Projection: Int64(1) AS a\n"), "{}", stdout(&o));
}

/// `-x` said "sql wants exactly one SQL statement"; a flag with one dash is
/// now an unknown option like one with two. A statement starting with a
/// "-- comment" line is still the SQL, and `--` ends the options.
#[test]
fn unknown_short_flags_are_named() {
    for flag in ["-x", "-analyze", "--bogus"] {
        let o = qlink(&["sql", flag, "SELECT 1"]);
        assert_eq!(o.status.code(), Some(2), "{flag}");
        assert!(stderr(&o).starts_with(&format!("qlink: error: unknown option '{flag}'\nusage:\n")), "{}", stderr(&o));
    }
    let o = qlink(&["sql", "--format", "csv", "-- the answer\nSELECT 42 AS a"]);
    assert_eq!(stdout(&o), "a\n42\n", "{}", stderr(&o));
    let o = qlink(&["sql", "--format", "csv", "--", "-1 AS a"]);
    assert_eq!(o.status.code(), Some(1), "'-1 AS a' is SQL (not valid SQL), not a flag: {}", stderr(&o));
    let o = qlink(&["sql", "--format", "csv", "--", "SELECT -1 AS a"]);
    assert_eq!(stdout(&o), "a\n-1\n", "{}", stderr(&o));
}

/// `--schema m=PLUGIN.so` (no provider) was split at its last '/' and
/// reported the plugin's folder as "not a qlink plugin".
#[test]
fn a_spec_without_a_provider_is_a_usage_error() {
    let o = qlink(&["sql", "--table", &format!("t={SAMPLE}"), "SELECT 1"]);
    assert_eq!(o.status.code(), Some(2));
    // The sample's providers, in catalogue order (series first; more may be added).
    let e = stderr(&o);
    let head = format!(
        "qlink: error: --table t={SAMPLE}: no provider after the plugin (write t=PLUGIN/PROVIDER?key=value); \
         qlink_sample's table providers: series"
    );
    assert!(e.starts_with(&head) && e.ends_with('\n') && e.lines().count() == 1, "{e}");
    let o = qlink(&["sql", "--schema", &format!("m={SAMPLE}?stop=3"), "SELECT 1"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        format!(
            "qlink: error: --schema m={SAMPLE}?stop=3: no provider after the plugin (write m=PLUGIN/PROVIDER?key=value); \
             qlink_sample has no schema providers\n"
        )
    );
    for spec in ["m=qlink_zarr", "m=/no/such/plugin.so"] {
        let o = qlink(&["sql", "--schema", spec, "SELECT 1"]);
        assert_eq!(o.status.code(), Some(2));
        assert_eq!(
            stderr(&o),
            format!("qlink: error: --schema {spec}: no provider after the plugin (write m=PLUGIN/PROVIDER?key=value)\n")
        );
    }
    // With a provider it still runs.
    let o = qlink(&["sql", "--format", "csv", "--table", &format!("t={SAMPLE}/series?stop=3"), "SELECT count(*) AS n FROM t"]);
    assert_eq!(stdout(&o), "n\n3\n", "{}", stderr(&o));
}

/// CSV has no nested values and arrow's CSV writer refused them after the
/// header was printed; a list, struct or map is now its JSON text (as
/// --format json writes it), and a type JSON cannot show fails before any
/// output, naming the column and its type.
#[test]
fn csv_writes_nested_values_as_json_text() {
    let o = qlink(&[
        "sql",
        "--format",
        "csv",
        "SELECT [1, 2] AS l, named_struct('a', 1, 'b', 'x,y') AS s, 3 AS n, CAST(NULL AS INT[]) AS nl, \
         [CAST('nan' AS DOUBLE), NULL] AS f, map(['k'], [1]) AS m",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "l,s,n,nl,f,m\n\"[1,2]\",\"{\"\"a\"\":1,\"\"b\"\":\"\"x,y\"\"}\",3,,\"[\"\"NaN\"\",null]\",\"{\"\"k\"\":1}\"\n");
    let o = qlink(&["sql", "--format", "csv", "SELECT [1] AS l LIMIT 0"]);
    assert_eq!(stdout(&o), "l\n");
    let o = qlink(&["sql", "--format", "csv", "SELECT 1 AS a, map([1], [2]) AS m"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "", "nothing printed before the error");
    let e = stderr(&o);
    assert!(e.starts_with("qlink: error: --format csv: column 'm' of type Map("), "{e}");
    assert!(e.contains(") cannot be written as CSV: ") && e.contains("Only UTF8 keys"), "{e}");
}
