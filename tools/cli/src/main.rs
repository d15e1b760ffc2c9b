// SPDX-License-Identifier: Apache-2.0
//! `qlink`: run SQL over qlink plugins with DataFusion.
//!
//!   qlink [OPTIONS]                 the interactive shell, or a script from stdin
//!   qlink sql [OPTIONS] "SQL"       run a query and print its result
//!   qlink explain [OPTIONS] [--analyze] "SQL"   print the plan (--analyze: run it and show metrics)
//!   qlink check [--spec P?k=v]... [--verbose] PLUGIN.so   the conformance kit
//!   qlink serve --port N [--host ADDR] [OPTIONS]   an Arrow Flight SQL server (qlink_session::flight_sql)
//!
//! OPTIONS: --plugin PATH (repeatable; registers the plugin's functions),
//! --table NAME=PLUGIN/PROVIDER?key=value&... (PLUGIN: a path or the name of
//! a plugin loaded with --plugin), --schema NAME=PLUGIN/PROVIDER?... (every
//! table of a schema provider as NAME.table), --planner PLUGIN/NAME?...,
//! --format table|csv|json, --memory-limit 2G, --timing (the query's own
//! elapsed time on stderr), --workers URL,... (distributed execution on
//! running `qlink-worker`s). An option of another command (`--analyze` on
//! `sql`, `--spec` on `explain`...), an unknown flag (`-x`) or a --table /
//! --schema spec naming a plugin but no provider is a usage error (exit 2).
//!
//! Errors print one line and exit non-zero; never a panic trace.

use std::ffi::CString;
use std::io::{IsTerminal, Write};
use std::sync::Arc;

use datafusion::arrow::error::ArrowError;
use datafusion::error::DataFusionError;
use datafusion::prelude::SessionConfig;
use qlink_datafusion::distributed::Secret;
use qlink_datafusion::ffi::{ql_check_options, ql_check_plugin, QL_ITEM_SCHEMA_PROVIDER, QL_ITEM_TABLE_PROVIDER};
use qlink_datafusion::planner::InstalledPlanner;
use qlink_datafusion::{Plugin, QlinkSession};
use qlink_session::builder::{parse_size, session_context};
pub(crate) use qlink_session::message::one_line as df_message;
use qlink_session::workers::{check_reachable, parse_workers};

mod output;
mod query;
mod shell;
mod statements;

use query::{run_statement, RunOptions};

const USAGE: &str = "usage:
  qlink [OPTIONS]                    the interactive shell (\\? for its commands); a script
                                     when standard input is not a terminal: qlink < a.sql
  qlink sql [OPTIONS] \"SQL\"
  qlink explain [OPTIONS] [--analyze] \"SQL\"   (--analyze: run the query, show each operator's metrics)
  qlink check [--spec PROVIDER?key=value]... [--threads N] [--verbose] PLUGIN.so
                                     (exit 0 conforming, 1 violations or plugin errors,
                                     3 not loadable)
  qlink serve --port N [--host ADDR] [--secret-file FILE] [OPTIONS]
                                     an Arrow Flight SQL server over the same session (read-only
                                     SQL: queries, prepared statements, catalog listings); --port 0
                                     picks a free port; prints \"qlink serve: Flight SQL on
                                     grpc://ADDR:PORT\" once listening. --host: default 127.0.0.1;
                                     another address needs a secret (--secret-file or QLINK_SECRET),
                                     which every call must then carry (authorization: Bearer SECRET)
OPTIONS (sql and explain; serve takes --plugin, --table, --schema, --planner, --memory-limit):
  --plugin PATH                      load a plugin (its functions are registered)
  --table NAME=PLUGIN/PROVIDER?k=v   register a plugin table (PLUGIN: path or loaded plugin name)
  --schema NAME=PLUGIN/PROVIDER?k=v  register every table of a schema provider as NAME.<table>
  --planner PLUGIN/NAME?k=v          install a planner plugin
  --format table|csv|json            output format (default table); results stream as
                                     they are computed (table: aligned pages of 4096 rows)
                                     json: one array of objects, NULL as null (key kept),
                                     NaN/+Inf/-Inf as the strings \"NaN\"/\"Infinity\"/\"-Infinity\"
                                     csv: a list, struct or map value as its json text
  --memory-limit SIZE                memory pool limit, e.g. 512M, 2G
  --workers URL[,URL...]             run queries across qlink-worker processes
                                     (http://HOST:PORT each): plugin scans are split
                                     among them, each worker reading only its own
                                     partitions; EXPLAIN shows the stages and tasks
  --secret-file FILE                 the workers' shared secret (its first line; default:
                                     the QLINK_SECRET environment variable)
  --timing                           print to stderr the query's own elapsed time, from SQL
                                     submission until its last batch is printed (start-up,
                                     plugin loading and table registration excluded):
                                     \"qlink: query elapsed 0.123456 s, cpu 0.234567 s\"
                                     (cpu: the process's, all threads, same interval)
  --quiet, -q                        no progress line on stderr (shown on a terminal for a
                                     query running over a second: elapsed, rows, batches)
  --                                 end of options: the next argument is the SQL
An option of another command (--analyze on sql, --spec on explain...) or an
unknown flag is a usage error (exit 2).";

struct Args {
    command: String,
    plugins: Vec<String>,
    tables: Vec<(String, String)>,
    schemas: Vec<(String, String)>,
    planners: Vec<String>,
    specs: Vec<String>,
    threads: i32,
    format: String,
    memory_limit: Option<usize>,
    workers: Vec<url::Url>,
    secret_file: Option<std::path::PathBuf>,
    port: Option<u16>,
    host: std::net::IpAddr,
    /// serve: the secret clients must send (read while parsing, so a refused bind loads nothing)
    serve_secret: Option<Secret>,
    analyze: bool,
    verbose: bool,
    timing: bool,
    quiet: bool,
    positional: Vec<String>,
}

fn fail(msg: impl std::fmt::Display) -> ! {
    let text = msg.to_string().replace('\n', " ");
    eprintln!("qlink: error: {text}");
    std::process::exit(1);
}

/// The commands an option applies to: given to another command it would
/// do nothing, so it is a usage error naming the option.
fn option_commands(key: &str) -> Option<&'static [&'static str]> {
    Some(match key {
        "--plugin" | "--table" | "--schema" | "--planner" | "--memory-limit" | "--secret-file" => &["sql", "explain", "serve"],
        "--format" | "--timing" | "--quiet" | "-q" | "--workers" => &["sql", "explain"],
        "--port" | "--host" => &["serve"],
        "--analyze" => &["explain"],
        "--spec" | "--threads" | "--verbose" | "-v" => &["check"],
        _ => return None,
    })
}

/// Refuses an option the command has no use for, saying where it belongs.
fn check_applies(command: &str, key: &str) -> Result<(), String> {
    let Some(commands) = option_commands(key) else { return Ok(()) };
    if commands.contains(&command) {
        return Ok(());
    }
    let hint = match key {
        "--analyze" => " (qlink explain --analyze \"SQL\" runs the query and shows each operator's metrics)",
        _ => "",
    };
    Err(format!("{key} is not an option of 'qlink {command}': it applies to {} only{hint}", commands.join(" and ")))
}

/// An argument that is a flag rather than the SQL: a dash first and no
/// whitespace (a statement may start with a "-- comment" line).
fn looks_like_flag(arg: &str) -> bool {
    arg.len() > 1 && arg.starts_with('-') && !arg.contains(char::is_whitespace)
}

/// A --table/--schema spec that names a plugin but no provider
/// ("m=path/qlink_zarr.so" or "m=qlink_zarr"): the host would split it at
/// its last '/' and try to load the plugin's folder. The message lists the
/// plugin's providers of the wanted kind when it can be loaded.
fn missing_provider(opt: &str, name: &str, spec: &str, kind: i32) -> Option<String> {
    let head = &spec[..spec.find('?').unwrap_or(spec.len())];
    let is_plugin_file = head.ends_with(".so") || std::path::Path::new(head).is_file();
    if head.contains('/') && !is_plugin_file {
        return None;
    }
    let mut msg = format!("{opt} {name}={spec}: no provider after the plugin (write {name}=PLUGIN/PROVIDER?key=value)");
    if is_plugin_file {
        if let Ok(p) = Plugin::load(head) {
            let names: Vec<String> = p.items().into_iter().filter(|i| i.kind == kind).map(|i| i.name).collect();
            let what = if kind == QL_ITEM_SCHEMA_PROVIDER { "schema" } else { "table" };
            if names.is_empty() {
                msg.push_str(&format!("; {} has no {what} providers", p.name()));
            } else {
                msg.push_str(&format!("; {}'s {what} providers: {}", p.name(), names.join(", ")));
            }
        }
    }
    Some(msg)
}

/// A name given twice would register over the first silently (a schema's
/// tables replaced), so it is a usage error naming both specs.
fn check_unique_names(opt: &str, items: &[(String, String)]) -> Result<(), String> {
    for (i, (name, spec)) in items.iter().enumerate() {
        if let Some((_, first)) = items[..i].iter().find(|(n, _)| n == name) {
            return Err(format!("{opt} {name} is given twice ({name}={first} and {name}={spec}): give each its own name"));
        }
    }
    Ok(())
}

fn check_provider_specs(a: &Args) -> Result<(), String> {
    check_unique_names("--table", &a.tables)?;
    check_unique_names("--schema", &a.schemas)?;
    for (opt, items, kind) in [("--table", &a.tables, QL_ITEM_TABLE_PROVIDER), ("--schema", &a.schemas, QL_ITEM_SCHEMA_PROVIDER)] {
        if let Some(m) = items.iter().find_map(|(name, spec)| missing_provider(opt, name, spec, kind)) {
            return Err(m);
        }
    }
    Ok(())
}

fn name_spec(opt: &str, v: &str) -> Result<(String, String), String> {
    match v.split_once('=') {
        Some((n, s)) if !n.is_empty() && !s.is_empty() => Ok((n.to_string(), s.to_string())),
        _ => Err(format!("{opt} wants NAME=PLUGIN/PROVIDER?key=value, got '{v}'")),
    }
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1).peekable();
    // No command, or options first: `sql`, which without a statement opens
    // the shell (or reads a script from standard input).
    let command = match it.peek().map(|s| s.as_str()) {
        None => "sql".to_string(),
        Some(a) if a.starts_with('-') && !["--help", "-h", "--version"].contains(&a) => "sql".to_string(),
        _ => it.next().unwrap(),
    };
    if command == "--help" || command == "-h" || command == "help" {
        println!("{USAGE}");
        std::process::exit(0);
    }
    if command == "--version" {
        println!("qlink {} (DataFusion 55.2.0)", env!("CARGO_PKG_VERSION"));
        std::process::exit(0);
    }
    if !["sql", "explain", "check", "serve"].contains(&command.as_str()) {
        return Err(format!("unknown command '{command}'\n{USAGE}"));
    }
    let mut a = Args {
        command,
        plugins: vec![],
        tables: vec![],
        schemas: vec![],
        planners: vec![],
        specs: vec![],
        threads: 0,
        format: "table".into(),
        memory_limit: None,
        workers: vec![],
        secret_file: None,
        port: None,
        host: std::net::IpAddr::from([127, 0, 0, 1]),
        serve_secret: None,
        analyze: false,
        verbose: false,
        timing: false,
        quiet: false,
        positional: vec![],
    };
    while let Some(arg) = it.next() {
        if arg == "--" {
            a.positional.extend(it.by_ref());
            break;
        }
        if !looks_like_flag(&arg) {
            a.positional.push(arg);
            continue;
        }
        let (key, inline) = match arg.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        check_applies(&a.command, &key)?;
        let mut value =
            |name: &str| -> Result<String, String> { inline.clone().or_else(|| it.next()).ok_or_else(|| format!("{name} needs a value")) };
        match key.as_str() {
            "--plugin" => a.plugins.push(value("--plugin")?),
            "--table" => a.tables.push(name_spec("--table", &value("--table")?)?),
            "--schema" => a.schemas.push(name_spec("--schema", &value("--schema")?)?),
            "--planner" => a.planners.push(value("--planner")?),
            "--spec" => a.specs.push(value("--spec")?),
            "--threads" => {
                let v = value("--threads")?;
                a.threads = match v.parse::<i32>() {
                    Ok(n) if (1..=1024).contains(&n) => n,
                    _ => return Err(format!("--threads wants a whole number from 1 to 1024, got '{v}'")),
                };
            }
            "--format" => {
                a.format = value("--format")?;
                if !["table", "csv", "json"].contains(&a.format.as_str()) {
                    return Err(format!("--format must be table, csv or json, not '{}'", a.format));
                }
            }
            "--memory-limit" => a.memory_limit = Some(parse_size(&value("--memory-limit")?).map_err(|e| format!("--memory-limit: {e}"))?),
            "--workers" => a.workers.extend(parse_workers(&value("--workers")?)?),
            "--secret-file" => a.secret_file = Some(value("--secret-file")?.into()),
            "--port" => {
                let v = value("--port")?;
                a.port = Some(v.parse::<u16>().map_err(|_| format!("--port wants a port from 0 to 65535 (0: any free one), got '{v}'"))?);
            }
            "--host" => {
                let v = value("--host")?;
                a.host = v.parse().map_err(|_| format!("--host wants an IP address (e.g. 127.0.0.1, 0.0.0.0), got '{v}'"))?;
            }
            "--analyze" => a.analyze = true,
            "--verbose" | "-v" => a.verbose = true,
            "--timing" => a.timing = true,
            "--quiet" | "-q" => a.quiet = true,
            "--help" | "-h" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            k => return Err(format!("unknown option '{k}'\n{USAGE}")),
        }
    }
    if a.command == "serve" {
        if let Some(extra) = a.positional.first() {
            return Err(format!("serve takes no SQL (clients send it), got '{extra}'"));
        }
        if a.port.is_none() {
            return Err("serve needs --port N (0: any free port, printed once listening)".to_string());
        }
        a.serve_secret = Secret::from_file_or_env(a.secret_file.as_deref())?;
        qlink_session::flight_sql::check_bind(&a.host, &a.serve_secret)?;
    } else if a.positional.len() != 1 && !(a.command == "sql" && a.positional.is_empty()) {
        return Err(match a.command.as_str() {
            "check" => "check wants exactly one plugin path".to_string(),
            "sql" => "sql wants one SQL statement (quote it), or none for the shell".to_string(),
            _ => format!("{} wants exactly one SQL statement (quote it)", a.command),
        });
    }
    check_provider_specs(&a)?;
    Ok(a)
}

/// Stdout closed by the reader (`qlink sql ... | head`): not an error of
/// the query, so qlink stops quietly as a C tool killed by SIGPIPE would.
pub(crate) fn is_broken_pipe(e: &DataFusionError) -> bool {
    match e.find_root() {
        DataFusionError::IoError(io) => io.kind() == std::io::ErrorKind::BrokenPipe,
        DataFusionError::ArrowError(a, _) => {
            matches!(a.as_ref(), ArrowError::IoError(_, io) if io.kind() == std::io::ErrorKind::BrokenPipe)
        }
        _ => false,
    }
}

/// Errors about a --table/--schema/--planner spec name the spec the user
/// wrote: libqlink parses the provider part as "p/PROVIDER?..." and would
/// otherwise show the placeholder 'p' instead of the plugin path.
fn spec_error(opt: &str, spec: &str, e: DataFusionError) -> DataFusionError {
    if let DataFusionError::ResourcesExhausted(_) = e.find_root() {
        return e;
    }
    let head_end = spec.find('?').unwrap_or(spec.len());
    let tail = match spec[..head_end].rfind('/') {
        Some(slash) => &spec[slash + 1..],
        None => spec,
    };
    let mut msg = df_message(&e).replace(&format!("'p/{tail}'"), &format!("'{spec}'"));
    if opt.starts_with("--planner") {
        msg = msg.replace("table spec '", "planner spec '");
    }
    if msg.contains(spec) {
        DataFusionError::Plan(msg)
    } else {
        DataFusionError::Plan(format!("{opt}{spec}: {msg}"))
    }
}

fn check(a: &Args) -> i32 {
    let path = CString::new(a.positional[0].as_str()).unwrap_or_else(|_| fail("bad plugin path"));
    let specs: Vec<CString> = a.specs.iter().map(|s| CString::new(s.as_str()).unwrap_or_else(|_| fail("bad --spec"))).collect();
    let ptrs: Vec<*const std::os::raw::c_char> = specs.iter().map(|s| s.as_ptr()).collect();
    let opts = ql_check_options {
        n_specs: ptrs.len() as i32,
        specs: if ptrs.is_empty() { std::ptr::null() } else { ptrs.as_ptr() },
        threads: a.threads,
        verbose: a.verbose as i32,
        out: std::ptr::null_mut(),
        isolate: 1,
    };
    std::io::stdout().flush().ok();
    // SAFETY: valid strings and options for the call.
    let violations = unsafe { ql_check_plugin(path.as_ptr(), &opts) };
    // As qlink-check: 3 when the plugin could not be loaded at all.
    match violations {
        0 => 0,
        v if v < 0 => 3,
        _ => 1,
    }
}

async fn build_session(a: &Args) -> Result<QlinkSession, DataFusionError> {
    let mut plugins: Vec<Arc<Plugin>> = Vec::new();
    for p in &a.plugins {
        plugins.push(Plugin::load(p)?);
    }
    let find = |name: &str, plugins: &mut Vec<Arc<Plugin>>| -> Result<Arc<Plugin>, DataFusionError> {
        if let Some(p) = plugins.iter().find(|p| p.name() == name || p.path() == name) {
            return Ok(Arc::clone(p));
        }
        if name.contains('/') || name.ends_with(".so") {
            let p = Plugin::load(name)?;
            plugins.push(Arc::clone(&p));
            return Ok(p);
        }
        Err(DataFusionError::Plan(format!("no plugin named '{name}' is loaded (use --plugin PATH)")))
    };
    let mut planners = Vec::new();
    for spec in &a.planners {
        let (head, query) = spec.split_at(spec.find('?').unwrap_or(spec.len()));
        let (plugin, name) =
            head.rsplit_once('/').ok_or_else(|| DataFusionError::Plan(format!("--planner wants PLUGIN/NAME?key=value, got '{spec}'")))?;
        let parsed = qlink_datafusion::TableSpec::parse(&format!("p/{name}{query}")).map_err(|e| spec_error("--planner ", spec, e))?;
        let p = find(plugin, &mut plugins)?;
        planners.push(InstalledPlanner::open(&p, name, &parsed.options)?);
    }
    let secret =
        if a.workers.is_empty() { None } else { Secret::from_file_or_env(a.secret_file.as_deref()).map_err(DataFusionError::Plan)? };
    check_reachable(&a.workers).map_err(DataFusionError::Plan)?;
    let ctx = session_context(SessionConfig::new().with_information_schema(true), a.memory_limit, planners, a.workers.clone(), secret)?;
    let mut s = QlinkSession::new(ctx);
    for p in &plugins {
        s.insert_plugin(Arc::clone(p));
    }
    for p in &a.plugins {
        let p = s.plugin(p)?;
        s.register_functions(&p)?;
    }
    for (name, spec) in &a.tables {
        s.register_table(name, spec).map_err(|e| spec_error(&format!("--table {name}="), spec, e))?;
    }
    for (name, spec) in &a.schemas {
        s.register_schema(name, spec).map_err(|e| spec_error(&format!("--schema {name}="), spec, e))?;
    }
    Ok(s)
}

async fn run(a: &Args) -> Result<(), DataFusionError> {
    if a.command == "serve" {
        let s = build_session(a).await?;
        let opts = qlink_session::flight_sql::ServeOptions { host: a.host, port: a.port.unwrap_or(0), secret: a.serve_secret.clone() };
        return qlink_session::flight_sql::serve(s, opts).await;
    }
    let s = build_session(a).await?;
    let opts = RunOptions { format: a.format.clone(), timing: a.timing, progress: !a.quiet, workers: a.workers.clone() };
    match (a.command.as_str(), a.positional.first()) {
        ("explain", Some(sql)) => {
            let sql = format!("EXPLAIN {}{}", if a.analyze { "ANALYZE " } else { "" }, sql);
            run_statement(&s, &sql, &opts).await
        }
        (_, Some(sql)) => run_statement(&s, sql, &opts).await,
        (_, None) if std::io::stdin().is_terminal() => shell::interactive(&s, opts).await,
        (_, None) => shell::run_stdin(&s, &opts).await,
    }
}

/// Ctrl-C: one line and the shell's conventional 128+SIGINT. Only
/// async-signal-safe calls (write, _exit) are made here.
extern "C" fn on_sigint(_sig: libc::c_int) {
    const MSG: &[u8] = b"\nqlink: interrupted\n";
    // SAFETY: write(2) and _exit(2) are async-signal-safe.
    unsafe {
        libc::write(2, MSG.as_ptr() as *const libc::c_void, MSG.len());
        libc::_exit(130);
    }
}

fn install_sigint() {
    let handler = on_sigint as extern "C" fn(libc::c_int);
    // SAFETY: installing a handler that only calls async-signal-safe functions.
    unsafe {
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
    }
}

fn main() {
    std::panic::set_hook(Box::new(|info| {
        let msg = if let Some(s) = info.payload().downcast_ref::<&str>() {
            s.to_string()
        } else if let Some(s) = info.payload().downcast_ref::<String>() {
            s.clone()
        } else {
            "unknown panic".to_string()
        };
        eprintln!("qlink: internal error: {}", msg.replace('\n', " "));
        std::process::exit(2);
    }));
    let args = parse_args().unwrap_or_else(|e| {
        eprintln!("qlink: error: {e}");
        std::process::exit(2);
    });
    if args.command == "check" {
        std::process::exit(check(&args));
    }
    // Not for `check`: its isolated plugin runs are forked children, which
    // would each print the line on a terminal's Ctrl-C. The interactive
    // shell installs its own (Ctrl-C cancels the statement, not the shell).
    install_sigint();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap_or_else(|e| fail(e));
    let result = rt.block_on(run(&args));
    // Do not wait for the workers: a statement cancelled with Ctrl-C may
    // still be inside one batch of a join (DataFusion stops it at its next
    // yield), and quitting the shell must not wait for that.
    rt.shutdown_background();
    if let Err(e) = result {
        if is_broken_pipe(&e) {
            std::process::exit(141);
        }
        fail(df_message(&e));
    }
}
