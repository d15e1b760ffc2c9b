// SPDX-License-Identifier: Apache-2.0
//! Running one statement of the `qlink` tool: `DESCRIBE TABLE` with the
//! columns' field metadata (units, long_name, ...), any other statement
//! through DataFusion, its result printed as it streams, `--timing` on
//! stderr, and Ctrl-C cancelling the statement (in the shell and scripts).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::error::DataFusionError;
use datafusion::physical_plan::execute_stream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use qlink_datafusion::QlinkSession;

use crate::output::{print_stream, Progress};

/// How a statement's result is shown.
pub struct RunOptions {
    /// table, csv or json.
    pub format: String,
    /// Print "qlink: query elapsed ... s, cpu ... s" on stderr after it.
    pub timing: bool,
    /// Show the progress line on a terminal (off with --quiet).
    pub progress: bool,
    /// The workers of a distributed session (empty: none): a failed
    /// statement names any of them that stopped answering.
    pub workers: Vec<url::Url>,
}

/// Set by the shell's SIGINT handler; a running statement stops at it.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Run `sql` (one statement, no trailing `;`) and print its result.
/// Errors: the statement's; "query cancelled (Ctrl-C)" after an interrupt.
pub async fn run_statement(s: &QlinkSession, sql: &str, opts: &RunOptions) -> Result<(), DataFusionError> {
    INTERRUPTED.store(false, Ordering::SeqCst);
    let work = async {
        // --timing: the statement alone, as datafusion-cli's "Elapsed"
        // (planning, execution, printing); CPU is the process's (every
        // thread) over the same interval.
        let (t0, cpu0) = (Instant::now(), process_cpu_s());
        let progress = Progress::start(opts.progress);
        let stream = match describe_target(sql) {
            Some(name) => {
                let batch = describe(s, &name).await?;
                Box::pin(RecordBatchStreamAdapter::new(batch.schema(), futures::stream::iter([Ok(batch)])))
            }
            None => {
                let df = s.ctx.sql(sql).await?;
                let task = Arc::new(df.task_ctx());
                let plan = df.create_physical_plan().await?;
                progress.watch(Arc::clone(&plan));
                execute_stream(plan, task)?
            }
        };
        print_stream(stream, &opts.format, &progress).await?;
        drop(progress);
        if opts.timing {
            eprintln!("qlink: query elapsed {:.6} s, cpu {:.6} s", t0.elapsed().as_secs_f64(), process_cpu_s() - cpu0);
        }
        Ok(())
    };
    let result = tokio::select! {
        r = work => r,
        _ = interrupted() => Err(DataFusionError::Execution("query cancelled (Ctrl-C)".into())),
    };
    result.map_err(|e| name_lost_worker(e, &opts.workers))
}

/// A distributed statement's error, prefixed with the first worker that no
/// longer accepts connections (a worker that died mid-query surfaces as a
/// transport error naming no one). A transport error is probed for up to
/// half a second: the dead worker's listening socket may close just after
/// its connections do.
pub fn name_lost_worker(e: DataFusionError, workers: &[url::Url]) -> DataFusionError {
    if workers.is_empty() || crate::is_broken_pipe(&e) {
        return e;
    }
    let text = crate::df_message(&e);
    let lower = text.to_lowercase();
    let transport = ["h2 protocol", "transport error", "broken pipe", "connection"].iter().any(|t| lower.contains(t));
    for attempt in 0..if transport { 5 } else { 1 } {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(100));
        }
        if let Err(lost) = qlink_session::workers::check_reachable(workers) {
            return DataFusionError::Execution(format!("{lost}; the statement failed: {text}"));
        }
    }
    e
}

async fn interrupted() {
    while !INTERRUPTED.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The table of a `DESCRIBE name` / `DESCRIBE TABLE name` statement.
fn describe_target(sql: &str) -> Option<String> {
    let mut words = sql.split_whitespace();
    if !words.next()?.eq_ignore_ascii_case("describe") {
        return None;
    }
    let mut name = words.next()?;
    if name.eq_ignore_ascii_case("table") {
        name = words.next()?;
    }
    words.next().is_none().then(|| name.to_string())
}

/// One row per column of table `name`: column_name, data_type, is_nullable
/// (as DataFusion's DESCRIBE) and metadata, the field's metadata as
/// `key=value` pairs sorted by key and joined with "; " (a plugin puts a
/// variable's units, long_name and standard_name there), or NULL.
pub async fn describe(s: &QlinkSession, name: &str) -> Result<RecordBatch, DataFusionError> {
    let table = s.ctx.table_provider(name).await?;
    let schema = table.schema();
    let (mut names, mut types, mut nullable, mut meta) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for f in schema.fields() {
        names.push(f.name().clone());
        types.push(f.data_type().to_string());
        nullable.push(if f.is_nullable() { "YES" } else { "NO" }.to_string());
        let mut kv: Vec<_> = f.metadata().iter().collect();
        kv.sort();
        meta.push((!kv.is_empty()).then(|| kv.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ")));
    }
    let out = Arc::new(Schema::new(vec![
        Field::new("column_name", DataType::Utf8, false),
        Field::new("data_type", DataType::Utf8, false),
        Field::new("is_nullable", DataType::Utf8, false),
        Field::new("metadata", DataType::Utf8, true),
    ]));
    Ok(RecordBatch::try_new(
        out,
        vec![
            Arc::new(StringArray::from(names)),
            Arc::new(StringArray::from(types)),
            Arc::new(StringArray::from(nullable)),
            Arc::new(StringArray::from(meta)),
        ],
    )?)
}

/// User + system CPU seconds of the whole process so far (all threads).
fn process_cpu_s() -> f64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    secs(ru.ru_utime) + secs(ru.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::describe_target;

    #[test]
    fn describe_statements() {
        assert_eq!(describe_target("DESCRIBE t").as_deref(), Some("t"));
        assert_eq!(describe_target("describe table era5.t_lat").as_deref(), Some("era5.t_lat"));
        assert_eq!(describe_target("DESCRIBE SELECT 1"), None);
        assert_eq!(describe_target("SELECT 1"), None);
    }
}
