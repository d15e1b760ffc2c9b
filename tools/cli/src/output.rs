// SPDX-License-Identifier: Apache-2.0
//! Printing query results: tables in aligned pages, CSV and JSON streamed
//! batch by batch, and the progress line shown on a terminal.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use datafusion::arrow::array::{new_empty_array, Array, ArrayRef, AsArray, PrimitiveArray, RecordBatch, StringBuilder};
use datafusion::arrow::datatypes::{ArrowPrimitiveType, DataType, Field, FieldRef, Float32Type, Float64Type, Schema, SchemaRef};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::json::writer::{make_encoder, JsonArray, NullableEncoder};
use datafusion::arrow::json::{Encoder, EncoderFactory, EncoderOptions, WriterBuilder};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::error::DataFusionError;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::metrics::MetricValue;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use futures::StreamExt;

/// Stderr progress for long queries: elapsed time, the scans' partitions
/// finished of their total, rows and batches printed.
pub(crate) struct Progress {
    rows: Arc<AtomicU64>,
    batches: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
    plan: Arc<Mutex<Option<Arc<dyn ExecutionPlan>>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// A progress line on stderr once the query has run a second, when
    /// `show` and stderr is a terminal; nothing otherwise.
    pub(crate) fn start(show: bool) -> Progress {
        let rows = Arc::new(AtomicU64::new(0));
        let batches = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let plan: Arc<Mutex<Option<Arc<dyn ExecutionPlan>>>> = Arc::new(Mutex::new(None));
        let thread = if show && std::io::stderr().is_terminal() {
            let (r, b, d) = (Arc::clone(&rows), Arc::clone(&batches), Arc::clone(&done));
            let watched = Arc::clone(&plan);
            Some(std::thread::spawn(move || {
                let t0 = Instant::now();
                let mut shown = false;
                while !d.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(100));
                    if t0.elapsed() < Duration::from_millis(1000) || d.load(Ordering::Relaxed) {
                        continue;
                    }
                    shown = true;
                    let parts = match watched.lock().ok().and_then(|p| p.clone()) {
                        Some(p) => {
                            let (finished, total) = scan_partitions(p.as_ref());
                            format!("  partitions {finished}/{total}")
                        }
                        None => String::new(),
                    };
                    eprint!(
                        "\r\x1b[K{:.1}s{parts}  {} rows  {} batches",
                        t0.elapsed().as_secs_f64(),
                        r.load(Ordering::Relaxed),
                        b.load(Ordering::Relaxed)
                    );
                }
                if shown {
                    eprint!("\r\x1b[K");
                }
            }))
        } else {
            None
        };
        Progress { rows, batches, done, plan, thread }
    }
    /// Count `plan`'s scan partitions in the progress line.
    pub(crate) fn watch(&self, plan: Arc<dyn ExecutionPlan>) {
        if let Ok(mut p) = self.plan.lock() {
            *p = Some(plan);
        }
    }
    fn add(&self, b: &RecordBatch) {
        self.rows.fetch_add(b.num_rows() as u64, Ordering::Relaxed);
        self.batches.fetch_add(1, Ordering::Relaxed);
    }
}

/// The leaves' (the scans') partitions of `plan`: (finished, total). A
/// partition is finished once its stream recorded an end time (DataFusion's
/// baseline metrics `end_timestamp`, which qlink's and DataFusion's own
/// scans record).
fn scan_partitions(plan: &dyn ExecutionPlan) -> (usize, usize) {
    let children = plan.children();
    if children.is_empty() {
        let total = plan.output_partitioning().partition_count();
        let finished = plan
            .metrics()
            .map_or(0, |m| m.iter().filter(|metric| matches!(metric.value(), MetricValue::EndTimestamp(t) if t.value().is_some())).count());
        return (finished.min(total), total);
    }
    children.iter().fold((0, 0), |(f, t), c| {
        let (cf, ct) = scan_partitions(c.as_ref());
        (f + cf, t + ct)
    })
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Rows per aligned block in table format: the widths are sized over one
/// page, so memory stays bounded however large the result is.
const TABLE_PAGE_ROWS: usize = 4096;

/// Writes JSON floats that JSON cannot carry (NaN, +/-Inf) as the strings
/// "NaN", "Infinity", "-Infinity"; arrow's default writes them as null,
/// which a reader cannot tell from SQL NULL. Finite values keep arrow's text.
#[derive(Debug)]
struct NonFiniteAsString;

/// Options with no factory: the default encoder the wrapper delegates to.
static PLAIN_JSON: std::sync::LazyLock<EncoderOptions> = std::sync::LazyLock::new(EncoderOptions::default);

struct FloatEncoder<'a, T: ArrowPrimitiveType> {
    values: &'a PrimitiveArray<T>,
    inner: NullableEncoder<'a>,
}

impl<T: ArrowPrimitiveType> Encoder for FloatEncoder<'_, T>
where
    T::Native: Into<f64>,
{
    fn encode(&mut self, idx: usize, out: &mut Vec<u8>) {
        let v: f64 = self.values.value(idx).into();
        if v.is_nan() {
            out.extend_from_slice(b"\"NaN\"");
        } else if v == f64::INFINITY {
            out.extend_from_slice(b"\"Infinity\"");
        } else if v == f64::NEG_INFINITY {
            out.extend_from_slice(b"\"-Infinity\"");
        } else {
            self.inner.encode(idx, out);
        }
    }
}

impl EncoderFactory for NonFiniteAsString {
    fn make_default_encoder<'a>(
        &self,
        field: &'a FieldRef,
        array: &'a dyn Array,
        _options: &'a EncoderOptions,
    ) -> Result<Option<NullableEncoder<'a>>, ArrowError> {
        fn wrap<'a, T: ArrowPrimitiveType>(field: &'a FieldRef, array: &'a dyn Array) -> Result<Option<NullableEncoder<'a>>, ArrowError>
        where
            T::Native: Into<f64>,
        {
            let values = array.as_primitive::<T>();
            let inner = make_encoder(field, array, &PLAIN_JSON)?;
            let nulls = array.logical_nulls();
            Ok(Some(NullableEncoder::new(Box::new(FloatEncoder { values, inner }), nulls)))
        }
        match array.data_type() {
            DataType::Float64 => wrap::<Float64Type>(field, array),
            DataType::Float32 => wrap::<Float32Type>(field, array),
            _ => Ok(None),
        }
    }
}

/// JSON encoding options of --format json, also used for nested values in
/// csv so both show a value alike.
fn json_options() -> EncoderOptions {
    EncoderOptions::default().with_explicit_nulls(true).with_encoder_factory(Arc::new(NonFiniteAsString))
}

/// The schema csv writes: CSV has no nested values (arrow's CSV writer
/// refuses lists, structs and maps), so such a column becomes text, each
/// value its JSON (as --format json writes it; NULL stays an empty field).
/// A nested type JSON cannot show either (a union, a map with non-string
/// keys) is an error naming the column and its type.
fn csv_schema(schema: &SchemaRef) -> Result<SchemaRef, DataFusionError> {
    if !schema.fields().iter().any(|f| f.data_type().is_nested()) {
        return Ok(Arc::clone(schema));
    }
    let options = json_options();
    let mut fields = Vec::with_capacity(schema.fields().len());
    for f in schema.fields() {
        if !f.data_type().is_nested() {
            fields.push(Arc::clone(f));
            continue;
        }
        let empty = new_empty_array(f.data_type());
        if let Err(e) = make_encoder(f, empty.as_ref(), &options) {
            return Err(DataFusionError::Plan(format!(
                "--format csv: column '{}' of type {} cannot be written as CSV: {e}",
                f.name(),
                f.data_type()
            )));
        }
        fields.push(Arc::new(Field::new(f.name(), DataType::Utf8, true)));
    }
    Ok(Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone())))
}

/// `batch` with its nested columns replaced by their JSON text (see csv_schema).
fn nested_as_json(batch: &RecordBatch, csv_schema: &SchemaRef) -> Result<RecordBatch, ArrowError> {
    if Arc::ptr_eq(&batch.schema(), csv_schema) || !batch.schema().fields().iter().any(|f| f.data_type().is_nested()) {
        return Ok(batch.clone());
    }
    let options = json_options();
    let schema = batch.schema();
    let mut columns = Vec::with_capacity(batch.num_columns());
    for (f, col) in schema.fields().iter().zip(batch.columns()) {
        if !f.data_type().is_nested() {
            columns.push(Arc::clone(col));
            continue;
        }
        let mut enc = make_encoder(f, col.as_ref(), &options)?;
        let mut text = StringBuilder::with_capacity(col.len(), col.len() * 16);
        let mut buf = Vec::new();
        for i in 0..col.len() {
            if enc.is_null(i) {
                text.append_null();
            } else {
                buf.clear();
                enc.encode(i, &mut buf);
                text.append_value(String::from_utf8_lossy(&buf));
            }
        }
        columns.push(Arc::new(text.finish()) as ArrayRef);
    }
    RecordBatch::try_new(Arc::clone(csv_schema), columns)
}

/// A writer that remembers a broken pipe: arrow's CSV writer turns I/O
/// errors into CsvError strings, losing their kind (`| head` must stay quiet).
struct PipeWatch<W> {
    inner: W,
    broken: bool,
}

impl<W: Write> Write for PipeWatch<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let r = self.inner.write(buf);
        self.broken |= matches!(&r, Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe);
        r
    }
    fn flush(&mut self) -> std::io::Result<()> {
        let r = self.inner.flush();
        self.broken |= matches!(&r, Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe);
        r
    }
}

async fn write_csv<W: Write>(
    stream: &mut SendableRecordBatchStream,
    csv_schema: &SchemaRef,
    progress: &Progress,
    out: &mut W,
) -> Result<(), DataFusionError> {
    let mut w = datafusion::arrow::csv::Writer::new(out);
    // An empty batch writes just the header (LIMIT 0 still names its columns).
    w.write(&RecordBatch::new_empty(Arc::clone(csv_schema)))?;
    while let Some(b) = stream.next().await {
        let b = b?;
        progress.add(&b);
        w.write(&nested_as_json(&b, csv_schema)?)?;
    }
    Ok(())
}

/// Prints a result as the stream yields it: csv and json batch by batch,
/// table in aligned pages of at most TABLE_PAGE_ROWS rows. The header comes
/// from the schema, so an empty result still shows its columns.
pub(crate) async fn print_stream(mut stream: SendableRecordBatchStream, format: &str, progress: &Progress) -> Result<(), DataFusionError> {
    let schema = stream.schema();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    match format {
        "csv" => {
            // Checked before the header is written: a column that cannot be
            // rendered fails the query with nothing printed.
            let csv_schema = csv_schema(&schema)?;
            let mut watch = PipeWatch { inner: &mut out, broken: false };
            let written = write_csv(&mut stream, &csv_schema, progress, &mut watch).await;
            if written.is_err() && watch.broken {
                return Err(DataFusionError::IoError(std::io::ErrorKind::BrokenPipe.into()));
            }
            written?;
        }
        "json" => {
            let mut w = WriterBuilder::new()
                .with_explicit_nulls(true)
                .with_encoder_factory(Arc::new(NonFiniteAsString))
                .build::<_, JsonArray>(&mut out);
            while let Some(b) = stream.next().await {
                let b = b?;
                progress.add(&b);
                w.write(&b)?;
            }
            w.finish()?;
            drop(w);
            writeln!(out)?;
        }
        _ => {
            let mut page: Vec<RecordBatch> = Vec::new();
            let mut page_rows = 0usize;
            let mut printed = false;
            while let Some(b) = stream.next().await {
                let b = b?;
                progress.add(&b);
                let mut offset = 0;
                while offset < b.num_rows() {
                    let take = (b.num_rows() - offset).min(TABLE_PAGE_ROWS - page_rows);
                    page.push(b.slice(offset, take));
                    page_rows += take;
                    offset += take;
                    if page_rows == TABLE_PAGE_ROWS {
                        writeln!(out, "{}", pretty_format_batches(&page)?)?;
                        page.clear();
                        page_rows = 0;
                        printed = true;
                    }
                }
            }
            if page_rows > 0 || !printed {
                if page.is_empty() {
                    page.push(RecordBatch::new_empty(Arc::clone(&schema)));
                }
                writeln!(out, "{}", pretty_format_batches(&page)?)?;
            }
        }
    }
    out.flush()?;
    Ok(())
}
