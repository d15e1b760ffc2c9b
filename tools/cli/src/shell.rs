//! `qlink` without a statement: an interactive shell on a terminal, or a
//! script read from standard input (`qlink < analysis.sql`).
//!
//! The shell reads lines in the terminal's own line mode (its editing keys:
//! erase, Ctrl-U, Ctrl-W), appends each entry to the history file
//! (`$QLINK_HISTORY` or `~/.qlink_history`), gathers lines until a `;` ends
//! a statement (`statements.rs`), and runs each as `qlink sql` would. Lines
//! starting with `\` or `.` at the start of a statement are commands:
//! `\q` (`.quit`, `.exit`), `\d` (`.tables`), `\d NAME` (`.schema NAME`),
//! `\timing`, `\?` (`.help`). Ctrl-C during a statement cancels it and the
//! shell goes on; Ctrl-C at the prompt clears the unfinished statement;
//! Ctrl-D quits.

use std::io::{Read, Write};
use std::sync::atomic::Ordering;

use datafusion::error::DataFusionError;
use qlink_datafusion::QlinkSession;

use crate::query::{run_statement, RunOptions, INTERRUPTED};
use crate::statements::{is_blank, split_statements};

const HELP: &str = "\\q            quit (also .quit, .exit, Ctrl-D)
\\d            list tables (also .tables)
\\d NAME       columns of a table, with their metadata (also .schema NAME)
\\timing       show each statement's elapsed time (on/off)
\\?            this help (also .help)
Statements end with ';' and may span lines; Ctrl-C cancels a running one.";

/// Run a script: every statement of `text` in order (a last statement
/// without `;` included). Stops at the first error, naming the statement's
/// number.
pub async fn run_script(s: &QlinkSession, text: &str, opts: &RunOptions) -> Result<(), DataFusionError> {
    let (mut stmts, rest) = split_statements(text);
    if !is_blank(&rest) {
        stmts.push(rest.trim().to_string());
    }
    for (i, sql) in stmts.iter().enumerate() {
        if let Err(e) = run_statement(s, sql, opts).await {
            if crate::is_broken_pipe(&e) {
                return Err(e);
            }
            return Err(DataFusionError::Execution(format!("statement {} of the script: {}", i + 1, crate::df_message(&e))));
        }
    }
    Ok(())
}

/// Read a script from standard input and run it.
pub async fn run_stdin(s: &QlinkSession, opts: &RunOptions) -> Result<(), DataFusionError> {
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text)?;
    run_script(s, &text, opts).await
}

fn history_path() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("QLINK_HISTORY") {
        return Some(p.into());
    }
    std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".qlink_history"))
}

/// SIGINT: mark the running statement interrupted (an atomic store is
/// async-signal-safe); the statement's future sees the flag and stops. At
/// the prompt it interrupts the read (no SA_RESTART): the entry is dropped.
extern "C" fn on_sigint(_sig: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

fn install_sigint() {
    // SAFETY: a zeroed sigaction with a handler that only stores to an atomic.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
    }
}

/// What reading a line gave.
enum Line {
    Text(String),
    Interrupted,
    Eof,
}

/// One line from standard input after printing `prompt`, read with
/// read(2) so that Ctrl-C (EINTR) ends the wait.
fn read_line(prompt: &str) -> std::io::Result<Line> {
    print!("{prompt}");
    std::io::stdout().flush()?;
    let mut bytes = Vec::new();
    loop {
        let mut b = 0u8;
        // SAFETY: reads one byte into `b`.
        let n = unsafe { libc::read(0, &mut b as *mut u8 as *mut libc::c_void, 1) };
        match n {
            1 if b == b'\n' => return Ok(Line::Text(String::from_utf8_lossy(&bytes).into_owned())),
            1 => bytes.push(b),
            0 if bytes.is_empty() => return Ok(Line::Eof),
            0 => return Ok(Line::Text(String::from_utf8_lossy(&bytes).into_owned())),
            _ => {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    INTERRUPTED.store(false, Ordering::SeqCst);
                    println!();
                    return Ok(Line::Interrupted);
                }
                return Err(e);
            }
        }
    }
}

/// Append one entry (its lines joined by spaces) to the history file.
fn remember(history: &Option<std::path::PathBuf>, entry: &str) {
    let Some(path) = history else { return };
    let line = entry.trim().replace('\n', " ");
    if line.is_empty() {
        return;
    }
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
        let _ = writeln!(f, "{line}");
    }
}

/// The interactive shell. Returns when the user quits.
pub async fn interactive(s: &QlinkSession, mut opts: RunOptions) -> Result<(), DataFusionError> {
    install_sigint();
    let history = history_path();
    println!("qlink {} (DataFusion 55.2.0): statements end with ';', \\? for help, \\q to quit", env!("CARGO_PKG_VERSION"));
    let mut buf = String::new();
    loop {
        let prompt = if buf.is_empty() { "qlink> " } else { "  ...> " };
        let line = match read_line(prompt)? {
            Line::Text(l) => l,
            Line::Interrupted => {
                buf.clear();
                continue;
            }
            Line::Eof => break,
        };
        if buf.is_empty() {
            let t = line.trim();
            if t.starts_with('\\') || (t.starts_with('.') && !t.contains(';')) {
                remember(&history, t);
                match command(s, t, &mut opts).await {
                    Ok(true) => break,
                    Ok(false) => {}
                    Err(e) => eprintln!("qlink: error: {}", crate::df_message(&e)),
                }
                continue;
            }
        }
        buf.push_str(&line);
        buf.push('\n');
        let (stmts, rest) = split_statements(&buf);
        if stmts.is_empty() && !buf.contains(';') {
            continue;
        }
        remember(&history, &buf);
        for sql in stmts {
            if let Err(e) = run_statement(s, &sql, &opts).await {
                eprintln!("qlink: error: {}", crate::df_message(&e));
            }
        }
        buf = if is_blank(&rest) { String::new() } else { rest };
    }
    println!();
    Ok(())
}

/// A shell command; Ok(true) to quit.
async fn command(s: &QlinkSession, cmd: &str, opts: &mut RunOptions) -> Result<bool, DataFusionError> {
    let mut words = cmd.split_whitespace();
    let head = words.next().unwrap_or("");
    let arg = words.next();
    match (head, arg) {
        ("\\q" | ".quit" | ".exit" | ".q", _) => return Ok(true),
        ("\\?" | "\\h" | ".help", _) => println!("{HELP}"),
        ("\\timing" | ".timer", a) => {
            opts.timing = match a {
                Some("on") => true,
                Some("off") => false,
                _ => !opts.timing,
            };
            println!("timing is {}", if opts.timing { "on" } else { "off" });
        }
        ("\\d" | ".tables", None) => {
            let sql = "SELECT table_schema, table_name, table_type FROM information_schema.tables \
                       WHERE table_schema <> 'information_schema' ORDER BY table_schema, table_name";
            run_statement(s, sql, opts).await?;
        }
        ("\\d" | ".schema", Some(name)) => run_statement(s, &format!("DESCRIBE {name}"), opts).await?,
        _ => println!("unknown command '{cmd}' (\\? lists the commands)"),
    }
    Ok(false)
}
