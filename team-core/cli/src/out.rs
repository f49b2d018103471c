//! stdout is data only: human lines, or with `--json` JSON lines that each carry a `type` and
//! end with one `summary`. A closed pipe becomes [`CliError::BrokenPipe`] (a quiet exit 0).
//! Warnings and progress go to stderr.

use std::io::{self, BufWriter, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{CliError, stdout_err};

static SUMMARY_WRITTEN: AtomicBool = AtomicBool::new(false);

/// Writes data to stdout.
pub struct Out {
    json: bool,
    w: BufWriter<io::Stdout>,
}

impl Out {
    /// Human lines, or JSON lines when `json`.
    pub fn new(json: bool) -> Out {
        Out {
            json,
            w: BufWriter::new(io::stdout()),
        }
    }

    /// Whether this output is JSON lines.
    pub fn is_json(&self) -> bool {
        self.json
    }

    /// A JSON record (only in `--json` mode). A record whose `type` is `summary` is
    /// remembered, so an error after it does not add a second summary.
    pub fn record(&mut self, v: &serde_json::Value) -> Result<(), CliError> {
        if self.json {
            self.json(v)?;
        }
        Ok(())
    }

    /// A human line (only without `--json` and without `-q`).
    pub fn line(&mut self, s: &str) -> Result<(), CliError> {
        if !self.json && !crate::quiet_mode() {
            self.text(s)?;
        }
        Ok(())
    }

    /// One JSON value as a line, whatever the mode.
    pub fn json(&mut self, v: &serde_json::Value) -> Result<(), CliError> {
        if v.get("type").and_then(|t| t.as_str()) == Some("summary") {
            SUMMARY_WRITTEN.store(true, Ordering::Relaxed);
        }
        self.text(&v.to_string())
    }

    /// One line of text, whatever the mode.
    pub fn text(&mut self, s: &str) -> Result<(), CliError> {
        self.bytes(s.as_bytes())?;
        self.bytes(b"\n")
    }

    /// Raw bytes, whatever the mode.
    pub fn bytes(&mut self, b: &[u8]) -> Result<(), CliError> {
        self.w.write_all(b).map_err(stdout_err)
    }

    pub fn flush(&mut self) -> Result<(), CliError> {
        self.w.flush().map_err(stdout_err)
    }
}

/// The `--json` error line, and a summary line unless the command already wrote one.
/// Write errors are ignored: this is the last thing the program does.
pub fn error_line(code: i32, message: &str, hint: Option<&str>) {
    let mut o = io::stdout().lock();
    let _ = writeln!(
        o,
        "{}",
        serde_json::json!({"type": "error", "code": code, "message": message, "hint": hint})
    );
    if !SUMMARY_WRITTEN.load(Ordering::Relaxed) {
        let _ = writeln!(
            o,
            "{}",
            serde_json::json!({"type": "summary", "ok": false, "exit": code})
        );
    }
    let _ = o.flush();
}

/// Progress during a wait: on stderr, and only when stderr is a terminal.
pub fn progress(msg: &str) {
    if io::stderr().is_terminal() {
        crate::say_line!("{}: {msg}", crate::tool());
    }
}

/// Makes untrusted text safe to print on a terminal: control characters are escaped.
pub fn clean(s: &str) -> String {
    // Most text has nothing to escape: copied whole (a query prints millions of fields).
    if !s.chars().any(char::is_control) {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::clean;

    #[test]
    fn clean_escapes_control_characters_only() {
        assert_eq!(clean("plain %3 (worker-2) é"), "plain %3 (worker-2) é");
        assert_eq!(clean("a\x1b[2Jb\nc\u{9b}d"), "a\\u{1b}[2Jb\\nc\\u{9b}d");
        assert_eq!(clean(""), "");
    }
}
