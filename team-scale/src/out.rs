//! stdout: data only. Human lines, or JSON lines (`--json`) each with a `type`.

use std::io::Write;

use crate::error::CliResult;

/// Writes data lines to stdout.
pub struct Out {
    json: bool,
    stdout: std::io::StdoutLock<'static>,
}

impl Out {
    pub fn new(json: bool) -> Out {
        Out {
            json,
            stdout: std::io::stdout().lock(),
        }
    }

    /// A JSON record (only in `--json` mode).
    pub fn record(&mut self, v: &serde_json::Value) -> CliResult<()> {
        if self.json {
            serde_json::to_writer(&mut self.stdout, v)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            self.stdout.write_all(b"\n")?;
        }
        Ok(())
    }

    /// A human line (only without `--json`).
    pub fn line(&mut self, s: &str) -> CliResult<()> {
        if !self.json {
            self.stdout.write_all(s.as_bytes())?;
            self.stdout.write_all(b"\n")?;
        }
        Ok(())
    }

    pub fn flush(&mut self) -> CliResult<()> {
        self.stdout.flush()?;
        Ok(())
    }
}

/// Progress during a wait: on stderr, and only when stderr is a terminal.
pub fn progress(msg: &str) {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        eprintln!("team-scale: {msg}");
    }
}
