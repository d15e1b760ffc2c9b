// SPDX-License-Identifier: Apache-2.0
//! `qlink sql --timing`: one stderr line with the query's own wall and CPU
//! seconds (the benchmarks parse it); stdout is the same as without it, and
//! without it stderr stays empty.

use std::process::Command;

const QLINK: &str = env!("CARGO_BIN_EXE_qlink");

fn run(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(QLINK).args(args).output().expect("run qlink");
    (o.status.success(), String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn timing_prints_the_query_time_on_stderr_only() {
    let sql = "SELECT SUM(value) AS s FROM generate_series(1, 200000)";
    let (ok, out, err) = run(&["sql", "--timing", "--format", "csv", sql]);
    assert!(ok, "{err}");
    assert_eq!(out, "s\n20000100000\n");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {err:?}");
    let rest = lines[0].strip_prefix("qlink: query elapsed ").unwrap_or_else(|| panic!("{err:?}"));
    let (wall, cpu) = rest.split_once(" s, cpu ").unwrap_or_else(|| panic!("{err:?}"));
    let cpu = cpu.strip_suffix(" s").unwrap_or_else(|| panic!("{err:?}"));
    let (wall, cpu): (f64, f64) = (wall.parse().unwrap(), cpu.parse().unwrap());
    assert!(wall > 0.0 && wall < 60.0, "{wall}");
    assert!((0.0..60.0).contains(&cpu), "{cpu}");
    let (ok, plain, err) = run(&["sql", "--format", "csv", sql]);
    assert!(ok);
    assert_eq!(plain, out, "--timing leaves stdout alone");
    assert_eq!(err, "", "no timing line without --timing");
    // a failing query prints its error, no timing line
    let (ok, _, err) = run(&["sql", "--timing", "SELECT * FROM no_such_table"]);
    assert!(!ok);
    assert!(err.starts_with("qlink: error:") && !err.contains("elapsed"), "{err}");
}
