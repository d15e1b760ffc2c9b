// SPDX-License-Identifier: Apache-2.0
//! `qlink` without a statement: an interactive shell on a terminal, or a
//! script read from standard input (`qlink < analysis.sql`).
//!
//! The shell reads lines with rustyline (the line editor datafusion-cli
//! uses: arrow keys and Home/End move, Up/Down recall earlier entries,
//! Ctrl-R searches them), keeps a plain-text history file
//! (`$QLINK_HISTORY` or `~/.qlink_history`, one entry per line, loaded at
//! start and appended after each entry), gathers lines until a `;` ends a
//! statement (`statements.rs`), and runs each as `qlink sql` would. Lines
//! starting with `\` or `.` at the start of a statement are commands:
//! `\q` (`.quit`, `.exit`), `\d` (`.tables`), `\d NAME` (`.schema NAME`),
//! `\timing`, `\?` (`.help`). Ctrl-C during a statement cancels it and the
//! shell goes on; Ctrl-C at the prompt clears the unfinished statement;
//! Ctrl-D quits.

use std::io::{Read, Write};
use std::sync::atomic::Ordering;

use datafusion::error::DataFusionError;
use qlink_datafusion::QlinkSession;
use rustyline::error::ReadlineError;
use rustyline::DefaultEditor;

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
/// the prompt the editor holds the terminal in raw mode, so Ctrl-C is a key
/// there (rustyline's `Interrupted`), not a signal: the entry is dropped.
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

/// The history file's entries, oldest first (an unreadable or missing file
/// is an empty history: the shell still starts).
fn load_history(editor: &mut DefaultEditor, history: &Option<std::path::PathBuf>) {
    let Some(text) = history.as_ref().and_then(|p| std::fs::read_to_string(p).ok()) else { return };
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let _ = editor.add_history_entry(line);
    }
}

/// Record one entry (its lines joined by spaces): in the editor, for Up
/// and Ctrl-R, and appended to the history file.
fn remember(editor: &mut DefaultEditor, history: &Option<std::path::PathBuf>, entry: &str) {
    let line = entry.trim().replace('\n', " ");
    if line.is_empty() {
        return;
    }
    let _ = editor.add_history_entry(line.as_str());
    let Some(path) = history else { return };
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
        let _ = writeln!(f, "{line}");
    }
}

/// The interactive shell. Returns when the user quits.
pub async fn interactive(s: &QlinkSession, mut opts: RunOptions) -> Result<(), DataFusionError> {
    install_sigint();
    let history = history_path();
    let mut editor = DefaultEditor::new().map_err(|e| DataFusionError::Execution(format!("cannot start the line editor: {e}")))?;
    load_history(&mut editor, &history);
    println!("qlink {} (DataFusion 55.2.0): statements end with ';', \\? for help, \\q to quit", env!("CARGO_PKG_VERSION"));
    let mut buf = String::new();
    loop {
        let prompt = if buf.is_empty() { "qlink> " } else { "  ...> " };
        let line = match editor.readline(prompt) {
            Ok(l) => l,
            Err(ReadlineError::Interrupted) => {
                buf.clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(DataFusionError::Execution(format!("reading the terminal: {e}"))),
        };
        if buf.is_empty() {
            let t = line.trim();
            if t.starts_with('\\') || (t.starts_with('.') && !t.contains(';')) {
                remember(&mut editor, &history, t);
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
        remember(&mut editor, &history, &buf);
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
