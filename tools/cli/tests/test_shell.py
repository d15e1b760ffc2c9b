# SPDX-License-Identifier: Apache-2.0
"""The qlink shell and scripts, driven as a user drives them: a script on
standard input, and the interactive shell through a pseudo-terminal
(line editing and history recall, the history file, \\d, multi-line statements, Ctrl-C cancelling a
running statement, the progress line on a terminal and not in a pipe).

Needs the qlink binary (QLINK_CLI, default $CARGO_TARGET_DIR/release/qlink)
and the sample plugin of the C release build (QL_BUILD_DIR, default
build/release)."""
import fcntl
import os
import pty
import re
import select
import subprocess
import termios
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
QLINK = os.environ.get("QLINK_CLI") or str(
    Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache/qlink-target")) / "release/qlink")
SAMPLE = Path(os.environ.get("QL_BUILD_DIR", REPO / "build/release")) / "plugins/qlink_sample.so"
# A statement that runs until cancelled: a nested-loop join of 4e10 pairs.
LONG = "SELECT count(*) AS n FROM s a JOIN s b ON a.value <> b.value;"


def run(args, stdin_text):
    return subprocess.run([QLINK, *args], input=stdin_text, capture_output=True, text=True, timeout=120)


def test_script_from_stdin():
    r = run(["--format", "csv"], "SELECT 1 AS a;\n-- a comment; with a semicolon\nSELECT 'x;y' AS b;\nSELECT 3 AS c")
    assert (r.returncode, r.stdout, r.stderr) == (0, "a\n1\nb\nx;y\nc\n3\n", "")


def test_script_stops_at_the_first_error_naming_it():
    r = run(["--format", "csv"], "SELECT 1 AS a;\nSELECT * FROM nope;\nSELECT 2 AS b;")
    assert r.returncode == 1
    assert r.stdout == "a\n1\n"
    assert r.stderr.startswith("qlink: error: statement 2 of the script: ")
    assert "nope" in r.stderr


def test_describe_shows_field_metadata():
    r = run(["--format", "csv", "--table", f"s={SAMPLE}/series?stop=10"], "DESCRIBE s;")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "column_name,data_type,is_nullable,metadata"
    assert len(lines) > 1 and all(len(line.split(",")) == 4 for line in lines[1:])


def test_sql_with_two_statements_is_a_usage_error():
    r = subprocess.run([QLINK, "sql", "SELECT 1", "SELECT 2"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr == "qlink: error: sql wants one SQL statement (quote it), or none for the shell\n"


class Pty:
    """qlink with its stdin, stdout and stderr on a pseudo-terminal."""

    def __init__(self, args, env):
        self.master, slave = pty.openpty()
        def controlling_tty():
            # Its own session with the pty as controlling terminal, so Ctrl-C
            # typed at the master reaches it as SIGINT.
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen([QLINK, *args], stdin=slave, stdout=slave, stderr=slave, env=env,
                                     close_fds=True, preexec_fn=controlling_tty)
        os.close(slave)
        self.seen = ""

    def send(self, text):
        os.write(self.master, text.encode())

    def expect(self, needle, timeout=30.0):
        """Read until `needle` appears after what earlier calls consumed."""
        end = time.monotonic() + timeout
        while needle not in self.seen:
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{needle!r} not shown within {timeout} s; screen so far: {self.seen!r}")
            r, _, _ = select.select([self.master], [], [], left)
            if r:
                try:
                    self.seen += os.read(self.master, 65536).decode(errors="replace")
                except OSError:
                    break
        assert needle in self.seen, self.seen
        at = self.seen.index(needle) + len(needle)
        before, self.seen = self.seen[:at], self.seen[at:]
        return before

    def close(self):
        try:
            self.proc.wait(timeout=30)
        finally:
            os.close(self.master)
        return self.proc.returncode


@pytest.fixture
def shell(tmp_path):
    env = dict(os.environ, QLINK_HISTORY=str(tmp_path / "history"), TERM="xterm")
    sh = Pty(["--table", f"s={SAMPLE}/series?stop=200000"], env)
    sh.expect("qlink> ")
    yield sh, tmp_path / "history"
    if sh.proc.poll() is None:
        sh.proc.kill()
        sh.close()


def test_shell_runs_statements_and_keeps_history(shell):
    sh, history = shell
    sh.send("SELECT 40 + 2 AS answer;\r")
    out = sh.expect("qlink> ")
    assert "answer" in out and "42" in out
    sh.send("SELECT 1\r")
    sh.expect("...> ")
    sh.send("+ 1 AS two;\r")
    out = sh.expect("qlink> ")
    assert "two" in out and "| 2" in out
    sh.send("\\d\r")
    out = sh.expect("qlink> ")
    assert "table_name" in out and "| s " in out
    sh.send("\\d s\r")
    out = sh.expect("qlink> ")
    assert "column_name" in out and "metadata" in out
    sh.send("\\q\r")
    assert sh.close() == 0
    lines = history.read_text().splitlines()
    assert "SELECT 40 + 2 AS answer;" in lines
    assert "\\d s" in lines


UP, LEFT = "\x1b[A", "\x1b[D"


def test_arrow_keys_edit_the_line_and_recall_the_history(tmp_path):
    history = tmp_path / "history"
    history.write_text("SELECT 6 AS six;\n")
    env = dict(os.environ, QLINK_HISTORY=str(history), TERM="xterm")
    sh = Pty([], env)
    sh.expect("qlink> ")
    # Each edit redraws the line, prompt included, so the result's last row
    # (not the prompt) marks the statement's end.
    # Up recalls the entry an earlier shell left in the history file.
    sh.send(UP + "\r")
    out = sh.expect("| 6 ")
    assert "| six |" in out
    sh.expect("qlink> ")
    # Left moves the cursor: "x" lands before "four;", not after it.
    sh.send("SELECT 4 AS four;" + LEFT * 5 + "x\r")
    out = sh.expect("| 4 ")
    assert "| xfour |" in out
    sh.expect("qlink> ")
    # Up again recalls the edited entry as it ran.
    sh.send(UP + "\r")
    out = sh.expect("| 4 ")
    assert "| xfour |" in out
    sh.expect("qlink> ")
    sh.send("\x04")
    assert sh.close() == 0
    assert history.read_text().splitlines() == ["SELECT 6 AS six;", "SELECT 6 AS six;", "SELECT 4 AS xfour;",
                                                "SELECT 4 AS xfour;"]


def test_ctrl_c_at_the_prompt_drops_the_entry(shell):
    sh, _ = shell
    sh.send("SELECT 1\r")
    sh.expect("...> ")
    sh.send("\x03")
    sh.expect("qlink> ")
    sh.send("SELECT 8 AS eight;\r")
    out = sh.expect("qlink> ")
    assert "eight" in out and "| 8" in out
    sh.send("\x04")
    assert sh.close() == 0


def test_ctrl_c_cancels_the_statement_not_the_shell(shell):
    sh, _ = shell
    sh.send(LONG + "\r")
    # The progress line appears on the terminal once the statement has run a
    # second: the join's two scans of 4 partitions each; the nested-loop
    # join has read its build side whole (4 finished) and is still probing.
    line = sh.expect(" rows ", timeout=60)
    m = re.search(r"partitions (\d+)/(\d+)", line)
    assert m is not None, line
    assert int(m.group(2)) == 8 and 4 <= int(m.group(1)) < 8, line
    sh.send("\x03")
    sh.expect("query cancelled (Ctrl-C)", timeout=60)
    sh.expect("qlink> ")
    sh.send("SELECT 7 AS seven;\r")
    out = sh.expect("qlink> ")
    assert "seven" in out and "| 7" in out
    sh.send("\x04")
    assert sh.close() == 0


def test_no_progress_line_when_piped():
    r = subprocess.run([QLINK, "--format", "csv", "--table", f"s={SAMPLE}/series?stop=30000"],
                       input="SELECT count(*) AS n FROM s a JOIN s b ON a.value <> b.value;",
                       capture_output=True, text=True, timeout=300)
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == f"n\n{30000 * 30000 - 30000}\n"
