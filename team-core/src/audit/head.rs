//! Finding the chain head by reading the end of the log, and the damage (a torn tail) after it.

use std::fs::File;
use std::os::unix::fs::FileExt;

use super::Record;
use super::canonical::{ZERO_HASH, parse_line};

/// First window read back from the end of the log; doubled until a whole record is found.
pub(crate) const HEAD_WINDOW: u64 = 64 * 1024;
/// A log whose last good record is further back than this from the end is refused.
pub(crate) const HEAD_WINDOW_MAX: u64 = 64 * 1024 * 1024;

/// The head of the chain and what follows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Head {
    /// `seq` of the last whole, parsable record (0 if none).
    pub seq: u64,
    /// `hash` of that record (64 zeros if none).
    pub hash: String,
    /// File size when read.
    pub size: u64,
    /// Bytes after the last good record that are not a whole record.
    pub damage: Option<Damage>,
    /// The last good record itself.
    pub last: Option<Record>,
}

/// A damaged region: `bytes` bytes starting at `offset`, not counting the `\n` that ends it
/// (present in the file, or written by the writer that found it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Damage {
    pub offset: u64,
    pub bytes: u64,
    /// Whether the file already ends with `\n` after the damage.
    pub terminated: bool,
}

/// Reads the chain head from the end of `file` (of length `size`), reading back a bounded
/// window that doubles only while no whole record has been found in it.
pub(crate) fn read_head(file: &File, size: u64) -> std::io::Result<Head> {
    if size == 0 {
        return Ok(Head {
            seq: 0,
            hash: ZERO_HASH.into(),
            size,
            damage: None,
            last: None,
        });
    }
    let mut window = HEAD_WINDOW;
    loop {
        let start = size.saturating_sub(window);
        let mut buf = vec![0u8; (size - start) as usize];
        file.read_exact_at(&mut buf, start)?;
        if let Some(head) = scan(&buf, start, size) {
            return Ok(head);
        }
        if start == 0 {
            // Nothing in the whole file is a record: all of it is damage.
            return Ok(Head {
                seq: 0,
                hash: ZERO_HASH.into(),
                size,
                damage: Some(damage_from(0, &buf, size)),
                last: None,
            });
        }
        if window >= HEAD_WINDOW_MAX {
            return Err(std::io::Error::other(format!(
                "no whole record in the last {HEAD_WINDOW_MAX} bytes"
            )));
        }
        window *= 2;
    }
}

fn damage_from(offset: u64, buf_from_offset: &[u8], size: u64) -> Damage {
    let terminated = buf_from_offset.last() == Some(&b'\n');
    let bytes = size - offset - u64::from(terminated);
    Damage {
        offset,
        bytes,
        terminated,
    }
}

/// Looks for the last whole, parsable line in `buf` (the file's bytes from `start` to `size`).
/// A line counts only if its start is known: after a `\n` in `buf`, or at offset 0.
fn scan(buf: &[u8], start: u64, size: u64) -> Option<Head> {
    // Ends (exclusive, including '\n') of complete lines, scanning backwards.
    let mut end = match buf.iter().rposition(|&b| b == b'\n') {
        Some(i) => i + 1,
        None => return None,
    };
    loop {
        let line_end = end - 1; // index of the '\n'
        let line_start = match buf[..line_end].iter().rposition(|&b| b == b'\n') {
            Some(i) => i + 1,
            None if start == 0 => 0,
            None => return None,
        };
        if let Ok(r) = parse_line(&buf[line_start..line_end]) {
            let good_end = start + end as u64;
            let damage = (good_end < size).then(|| damage_from(good_end, &buf[end..], size));
            return Some(Head {
                seq: r.seq,
                hash: r.hash.clone(),
                size,
                damage,
                last: Some(r),
            });
        }
        if line_start == 0 {
            return None;
        }
        end = line_start;
    }
}
