//! stdout for data, with a closed pipe turned into a quiet exit.

use std::io::{self, BufWriter, Write};

use crate::error::{AppError, stdout_err};

pub struct Out {
    w: BufWriter<io::Stdout>,
}

impl Out {
    pub fn new() -> Out {
        Out {
            w: BufWriter::new(io::stdout()),
        }
    }

    /// Writes raw bytes.
    pub fn bytes(&mut self, b: &[u8]) -> Result<(), AppError> {
        self.w.write_all(b).map_err(stdout_err)
    }

    /// Writes one line of text.
    pub fn line(&mut self, s: &str) -> Result<(), AppError> {
        self.bytes(s.as_bytes())?;
        self.bytes(b"\n")
    }

    /// Writes one JSON value as a line.
    pub fn json(&mut self, v: &serde_json::Value) -> Result<(), AppError> {
        self.line(&v.to_string())
    }

    pub fn flush(&mut self) -> Result<(), AppError> {
        self.w.flush().map_err(stdout_err)
    }
}

/// Makes untrusted text safe to print on a terminal: control characters are escaped.
pub fn clean(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let v: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            v
        })
        .collect()
}
