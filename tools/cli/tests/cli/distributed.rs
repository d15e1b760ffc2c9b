// SPDX-License-Identifier: Apache-2.0
//! Distributed queries: `qlink sql --workers` over `qlink-worker`s on this
//! machine. Answers equal the single-process ones exactly (every scan
//! partition ran once, on one worker), EXPLAIN draws the stages with the
//! scan's partitions divided between the tasks, plugin functions run on the
//! workers, plans a worker cannot rebuild run on the coordinator, and each
//! failure names what failed. Every worker and coordinator here shares one
//! secret (`QLINK_SECRET`); a worker's plugins are the sample build's
//! directory unless a test gives another `--plugin-dir`.
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

const QLINK: &str = env!("CARGO_BIN_EXE_qlink");
const WORKER: &str = env!("CARGO_BIN_EXE_qlink-worker");
const SAMPLE: &str = qlink_sys::plugins::SAMPLE;
const DFTEST: &str = qlink_sys::plugins::DFTEST;
/// The workers' shared secret in these tests (32 printable bytes or more).
const SECRET: &str = "distributed-test-secret-0123456789abcdef";

/// The folder holding the sample and dftest plugins.
fn plugin_dir() -> String {
    std::path::Path::new(SAMPLE).parent().unwrap().to_string_lossy().into_owned()
}

/// A free TCP port on the loopback interface (bound, then released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A running qlink-worker, killed on drop.
struct Worker {
    child: Child,
    url: String,
}

impl Worker {
    fn start(extra: &[&str]) -> Worker {
        let port = free_port().to_string();
        let dir = plugin_dir();
        let default_dir = ["--plugin-dir", dir.as_str()];
        let dir_args: &[&str] = if extra.contains(&"--plugin-dir") { &[] } else { &default_dir };
        let mut child = Command::new(WORKER)
            .env("QLINK_SECRET", SECRET)
            .args(["--port", &port])
            .args(dir_args)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start qlink-worker");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line, format!("qlink-worker: serving on http://127.0.0.1:{port}\n"));
        Worker { child, url: format!("http://127.0.0.1:{port}") }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn qlink(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(QLINK).env("QLINK_SECRET", SECRET).args(args).output().expect("run qlink");
    (o.status.success(), String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

const SERIES: &str = "/series?stop=100000&partitions=8";

#[test]
fn a_distributed_query_gives_the_single_process_answer() {
    let (a, b) = (Worker::start(&[]), Worker::start(&[]));
    let workers = format!("{},{}", a.url, b.url);
    let table = format!("s={SAMPLE}{SERIES}");
    let cases = [
        (
            "SELECT parity, count(*) AS n, sum(value) AS total, min(square) AS lo FROM s GROUP BY parity ORDER BY parity",
            "parity,n,total,lo\neven,50000,2499950000,0\nodd,50000,2500000000,1\n",
        ),
        // Filters and projection are part of the recipe each worker rebuilds.
        ("SELECT count(*) AS n, sum(value) AS total FROM s WHERE value >= 1000 AND value < 91000", "n,total\n90000,4139955000\n"),
    ];
    for (sql, want) in cases {
        let local = qlink(&["sql", "--format", "csv", "--table", &table, sql]);
        assert_eq!(local, (true, want.to_string(), String::new()), "{sql}");
        let dist = qlink(&["sql", "--format", "csv", "--workers", &workers, "--table", &table, sql]);
        assert_eq!(dist, (true, want.to_string(), String::new()), "{sql}");
    }
}

#[test]
fn explain_draws_the_stages_and_each_task_s_partitions() {
    let (a, b) = (Worker::start(&[]), Worker::start(&[]));
    let workers = format!("{},{}", a.url, b.url);
    let table = format!("s={SAMPLE}{SERIES}");
    let (ok, out, err) = qlink(&["explain", "--format", "csv", "--workers", &workers, "--table", &table, "SELECT sum(value) AS t FROM s"]);
    assert!(ok, "{err}");
    assert!(out.contains("DistributedExec"), "{out}");
    assert!(out.contains("Stage 1"), "{out}");
    // Task t runs on worker t mod 2, in --workers order.
    let at = |w: &Worker| w.url.trim_start_matches("http://").to_string();
    let tasks = format!("8 partitions over 2 tasks: t0:[0..4)@{} t1:[4..8)@{}", at(&a), at(&b));
    assert!(out.contains(&tasks), "{out}");
}

#[test]
fn a_one_partition_scan_runs_on_the_coordinator() {
    // sample_range's scan has one partition, so one task: the query runs
    // here, whole (its recipe would rebuild it on a worker: host/recipe.rs).
    let w = Worker::start(&[]);
    let sql = "SELECT count(*) AS n, sum(value) AS t FROM sample_range(0, 1000)";
    let args = ["sql", "--format", "csv", "--workers", &w.url, "--plugin", SAMPLE, sql];
    assert_eq!(qlink(&args), (true, "n,t\n1000,499500\n".to_string(), String::new()));
    let (ok, out, err) = qlink(&["explain", "--format", "csv", "--workers", &w.url, "--plugin", SAMPLE, sql]);
    assert!(ok, "{err}");
    assert!(!out.contains("DistributedExec") && !out.contains("TaskScanExec"), "{out}");
}

#[test]
fn plugin_functions_run_on_the_workers() {
    // The coordinator names the plugins whose functions it registered; each
    // worker registers the same build's functions, so the plan is split.
    let (a, b) = (Worker::start(&[]), Worker::start(&[]));
    let workers = format!("{},{}", a.url, b.url);
    let table = format!("s={SAMPLE}/series?stop=100&partitions=4");
    let cases = [
        ("SELECT sum(add_one(value)) AS t FROM s", "t\n5050\n"),
        ("SELECT sum_sq(value) AS t FROM s", "t\n328350\n"),
        ("SELECT parity, sum_sq(add_one(value)) AS t FROM s GROUP BY parity ORDER BY parity", "parity,t\neven,166650\nodd,171700\n"),
        ("SELECT max(c) AS m FROM (SELECT running_count() OVER (PARTITION BY parity ORDER BY value) AS c FROM s)", "m\n50\n"),
    ];
    for (sql, want) in cases {
        let local = qlink(&["sql", "--format", "csv", "--plugin", SAMPLE, "--table", &table, sql]);
        assert_eq!(local, (true, want.to_string(), String::new()), "{sql}");
        let args = ["sql", "--format", "csv", "--workers", &workers, "--plugin", SAMPLE, "--table", &table, sql];
        assert_eq!(qlink(&args), (true, want.to_string(), String::new()), "{sql}");
        let (ok, out, err) = qlink(&["explain", "--format", "csv", "--workers", &workers, "--plugin", SAMPLE, "--table", &table, sql]);
        assert!(ok, "{err}");
        assert!(out.contains("DistributedExec") && out.contains("4 partitions over 2 tasks"), "{out}");
    }
    // Functions from a plugin file the workers lack: only a query calling
    // one fails, naming the file; the others still run on the workers.
    let dir = tempdir("qlink-worker-sample-only");
    std::fs::copy(SAMPLE, dir.join("qlink_sample.so")).unwrap();
    let copy = tempdir("qlink-coordinator-copy").join("qlink_sample_copy.so");
    std::fs::copy(SAMPLE, &copy).unwrap();
    let flags = ["--plugin-dir", dir.to_str().unwrap()];
    let (a, b) = (Worker::start(&flags), Worker::start(&flags));
    let workers = format!("{},{}", a.url, b.url);
    let copy = copy.to_str().unwrap();
    let run = |sql: &str| qlink(&["sql", "--format", "csv", "--workers", &workers, "--plugin", copy, "--table", &table, sql]);
    assert_eq!(run("SELECT sum(value) AS t FROM s"), (true, "t\n4950\n".to_string(), String::new()));
    let (ok, _, err) = run("SELECT sum(add_one(value)) AS t FROM s");
    assert!(!ok);
    let missing =
        format!("add_one: this worker has no plugin file {}/qlink_sample_copy.so (the coordinator's is qlink_sample ", dir.display());
    assert!(err.contains(&missing), "{err}");
}

#[test]
fn an_unreachable_worker_is_an_error_at_start() {
    let port = free_port();
    let (ok, out, err) = qlink(&["sql", "--workers", &format!("http://127.0.0.1:{port}"), "SELECT 1"]);
    assert!(!ok && out.is_empty());
    assert!(err.starts_with("qlink: error: "), "{err}");
    assert!(err.contains(&format!("worker http://127.0.0.1:{port}/ is unreachable: ")), "{err}");
    let (ok, _, err) = qlink(&["sql", "--workers", "http://127.0.0.1", "SELECT 1"]);
    assert!(!ok);
    assert_eq!(err, "qlink: error: worker 'http://127.0.0.1' has no port; write http://HOST:PORT (qlink-worker --port N)\n");
}

#[test]
fn a_worker_without_the_plugin_or_with_another_build_says_so() {
    let table = format!("s={SAMPLE}{SERIES}");
    let sql = "SELECT sum(value) AS t FROM s";
    // Two workers, so the scan is split (one worker would run it all in
    // one task, which stays on the coordinator).
    let empty = tempdir("qlink-worker-empty");
    let dir = ["--plugin-dir", empty.to_str().unwrap()];
    let (a, b) = (Worker::start(&dir), Worker::start(&dir));
    let (ok, _, err) = qlink(&["sql", "--workers", &format!("{},{}", a.url, b.url), "--table", &table, sql]);
    assert!(!ok);
    assert!(err.contains(&format!("this worker has no plugin file {}/qlink_sample.so", empty.display())), "{err}");
    assert!(err.contains("the coordinator's is qlink_sample "), "{err}");
    drop((a, b));
    // Another plugin's file under the sample's name: a different build.
    let other = tempdir("qlink-worker-other");
    std::fs::copy(DFTEST, other.join("qlink_sample.so")).unwrap();
    let dir = ["--plugin-dir", other.to_str().unwrap()];
    let (a, b) = (Worker::start(&dir), Worker::start(&dir));
    let (ok, _, err) = qlink(&["sql", "--workers", &format!("{},{}", a.url, b.url), "--table", &table, sql]);
    assert!(!ok);
    // Refused on the file's digest, before anything in it ran.
    assert!(err.contains(&format!("this worker's plugin file {}/qlink_sample.so has digest ", other.display())), "{err}");
    assert!(err.contains("the coordinator's is qlink_sample "), "{err}");
    assert!(err.contains("install the same build on every worker"), "{err}");
}

#[test]
fn a_worker_dying_mid_query_fails_it_naming_the_worker() {
    let (a, mut b) = (Worker::start(&[]), Worker::start(&[]));
    let table = format!("s={SAMPLE}/series?stop=3000000000&partitions=8");
    let query = Command::new(QLINK)
        .env("QLINK_SECRET", SECRET)
        .args(["sql", "--workers", &format!("{},{}", a.url, b.url), "--table", &table, "SELECT sum(value % 7) AS t FROM s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2000));
    b.child.kill().unwrap();
    b.child.wait().unwrap();
    let o = query.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.starts_with(&format!("qlink: error: worker {}/ is unreachable: ", b.url)), "{err}");
    assert!(err.contains("; the statement failed: "), "{err}");
}

#[test]
fn a_worker_needs_a_secret_and_a_coordinator_sends_it() {
    let o = Command::new(WORKER).env_remove("QLINK_SECRET").args(["--port", "1", "--host", "0.0.0.0"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "qlink-worker: error: a worker needs the secret its coordinators send: --secret-file FILE or QLINK_SECRET (e.g. `openssl rand -hex 32 > FILE`)\n"
    );
    let w = Worker::start(&[]);
    let o = Command::new(QLINK).env_remove("QLINK_SECRET").args(["sql", "--workers", &w.url, "SELECT 1"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("distributed queries need the workers' shared secret"));
}

/// A fresh, empty directory under the system's temporary folder.
fn tempdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
