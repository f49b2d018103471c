//! Reading a log line by line with bounded memory, forwards and backwards.
//!
//! Nothing here holds more than one block plus one line: a line longer than [`MAX_LINE`] is
//! never a record (the writer refuses to write one) and is reported as [`Line::too_long`]
//! without being kept in memory.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;

/// The longest line (without its `\n`) that can be a record. The writer refuses longer ones.
pub const MAX_LINE: usize = 16 << 20;
/// Bytes read at a time.
const BLOCK: usize = 1 << 20;

/// One line of a log.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Line<'a> {
    /// 1-based line number (forward reading only; 0 when read backwards).
    pub no: u64,
    /// Byte offset of the line's first byte.
    pub offset: u64,
    /// The line without its `\n`; empty when `too_long`.
    pub body: &'a [u8],
    /// Length of the line without its `\n` (also when `too_long`).
    pub len: u64,
    /// Whether a `\n` ends it (only the last line of a file can lack one).
    pub terminated: bool,
    /// Longer than [`MAX_LINE`]: not kept, never a record.
    pub too_long: bool,
}

/// A reader over a file from an offset, by `pread` (it leaves the file position alone).
pub(crate) struct At<'f> {
    file: &'f File,
    pos: u64,
}

impl<'f> At<'f> {
    pub fn new(file: &'f File, pos: u64) -> Self {
        At { file, pos }
    }
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// Forward reading of `R` from byte `offset` (where `R` is positioned).
pub(crate) struct Lines<R> {
    r: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// File offset of `buf[start]`.
    offset: u64,
    no: u64,
    eof: bool,
}

impl<R: Read> Lines<R> {
    pub fn new(r: R, offset: u64) -> Self {
        Lines {
            r,
            buf: vec![0; BLOCK],
            start: 0,
            end: 0,
            offset,
            no: 0,
            eof: false,
        }
    }

    fn fill(&mut self) -> io::Result<usize> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            let n = (self.buf.len() * 2).min(MAX_LINE + 1).max(self.end + 1);
            self.buf.resize(n, 0);
        }
        loop {
            match self.r.read(&mut self.buf[self.end..]) {
                Ok(n) => {
                    self.end += n;
                    if n == 0 {
                        self.eof = true;
                    }
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// The next line, or `None` at the end.
    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        let mut searched = 0usize;
        loop {
            let pending = &self.buf[self.start + searched..self.end];
            if let Some(i) = memchr::memchr(b'\n', pending) {
                let len = searched + i;
                let s = self.start;
                self.start += len + 1;
                let offset = self.offset;
                self.offset += len as u64 + 1;
                self.no += 1;
                return Ok(Some(Line {
                    no: self.no,
                    offset,
                    body: &self.buf[s..s + len],
                    len: len as u64,
                    terminated: true,
                    too_long: false,
                }));
            }
            searched = self.end - self.start;
            if searched > MAX_LINE {
                return self.skip_long(searched as u64).map(Some);
            }
            if self.eof || self.fill()? == 0 {
                if self.start == self.end {
                    return Ok(None);
                }
                let (s, len) = (self.start, self.end - self.start);
                self.start = self.end;
                let offset = self.offset;
                self.offset += len as u64;
                self.no += 1;
                return Ok(Some(Line {
                    no: self.no,
                    offset,
                    body: &self.buf[s..s + len],
                    len: len as u64,
                    terminated: false,
                    too_long: false,
                }));
            }
            // `fill` moved the pending bytes to the front of the buffer.
        }
    }

    /// Skips the rest of a line longer than [`MAX_LINE`], `seen` bytes of which are buffered.
    fn skip_long(&mut self, seen: u64) -> io::Result<Line<'_>> {
        let offset = self.offset;
        let mut len = seen;
        self.start = 0;
        self.end = 0;
        let terminated = loop {
            if self.fill()? == 0 {
                len += self.end as u64;
                self.end = 0;
                break false;
            }
            if let Some(i) = memchr::memchr(b'\n', &self.buf[..self.end]) {
                len += i as u64;
                self.start = i + 1;
                break true;
            }
            len += self.end as u64;
            self.end = 0;
        };
        self.offset += len + u64::from(terminated);
        self.no += 1;
        Ok(Line {
            no: self.no,
            offset,
            body: &[],
            len,
            terminated,
            too_long: true,
        })
    }
}

/// Backward reading of a file's lines, last first.
pub(crate) struct RevLines<'f> {
    file: &'f File,
    /// The file's bytes `[pos, pos + buf.len())`; `buf[..cut]` are not yet returned.
    buf: Vec<u8>,
    cut: usize,
    pos: u64,
    started: bool,
}

impl<'f> RevLines<'f> {
    /// Reads `file` backwards from `size` (its length, or any line boundary).
    pub fn new(file: &'f File, size: u64) -> Self {
        RevLines {
            file,
            buf: Vec::new(),
            cut: 0,
            pos: size,
            started: false,
        }
    }

    /// Prepends one block read before `pos` to the unreturned bytes; false at the start.
    fn grow(&mut self) -> io::Result<bool> {
        if self.pos == 0 {
            return Ok(false);
        }
        let n = (BLOCK as u64).min(self.pos);
        let mut block = vec![0u8; n as usize];
        self.file.read_exact_at(&mut block, self.pos - n)?;
        self.pos -= n;
        block.extend_from_slice(&self.buf[..self.cut]);
        self.cut = block.len();
        self.buf = block;
        Ok(true)
    }

    /// The previous line (the file's last line first), or `None` before the first.
    pub fn prev_line(&mut self) -> io::Result<Option<Line<'_>>> {
        let terminated = if !self.started {
            self.started = true;
            if !self.grow()? {
                return Ok(None);
            }
            if self.buf[self.cut - 1] == b'\n' {
                self.cut -= 1;
                true
            } else {
                false
            }
        } else {
            if self.cut == 0 && !self.grow()? {
                return Ok(None);
            }
            // The byte before the last returned line is its predecessor's '\n'.
            self.cut -= 1;
            true
        };
        let mut skipped: u64 = 0;
        loop {
            if let Some(i) = memchr::memrchr(b'\n', &self.buf[..self.cut]) {
                let start = i + 1;
                let end = self.cut;
                self.cut = start;
                let offset = self.pos + start as u64;
                let len = skipped + (end - start) as u64;
                if len as usize > MAX_LINE {
                    return Ok(Some(too_long(offset, len, terminated)));
                }
                return Ok(Some(Line {
                    no: 0,
                    offset,
                    body: &self.buf[start..end],
                    len,
                    terminated,
                    too_long: false,
                }));
            }
            if self.cut > MAX_LINE {
                skipped += self.cut as u64;
                self.cut = 0;
            }
            if !self.grow()? {
                let end = self.cut;
                self.cut = 0;
                let len = skipped + end as u64;
                if len as usize > MAX_LINE {
                    return Ok(Some(too_long(0, len, terminated)));
                }
                return Ok(Some(Line {
                    no: 0,
                    offset: 0,
                    body: &self.buf[..end],
                    len,
                    terminated,
                    too_long: false,
                }));
            }
        }
    }
}

fn too_long(offset: u64, len: u64, terminated: bool) -> Line<'static> {
    Line {
        no: 0,
        offset,
        body: &[],
        len,
        terminated,
        too_long: true,
    }
}

/// `seq` and `ts` of a line in the canonical shape (`{"v":1,"seq":N,"ts":"T",...`), without
/// parsing the rest; `None` when the line does not start that way.
pub(crate) fn quick_seq_ts(line: &[u8]) -> Option<(u64, &str)> {
    let rest = line.strip_prefix(b"{\"v\":")?;
    let i = rest.iter().position(|&b| b == b',')?;
    let rest = rest[i..].strip_prefix(b",\"seq\":")?;
    let i = rest.iter().position(|&b| !b.is_ascii_digit())?;
    let seq = std::str::from_utf8(&rest[..i]).ok()?.parse().ok()?;
    let rest = rest[i..].strip_prefix(b",\"ts\":\"")?;
    let j = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
    if rest[j] != b'"' {
        return None;
    }
    Some((seq, std::str::from_utf8(&rest[..j]).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Write;

    fn forward(bytes: &[u8]) -> Vec<(u64, Vec<u8>, bool)> {
        let mut l = Lines::new(bytes, 0);
        let mut out = Vec::new();
        while let Some(x) = l.next_line().unwrap() {
            out.push((x.offset, x.body.to_vec(), x.terminated));
        }
        out
    }

    fn backward(bytes: &[u8]) -> Vec<(u64, Vec<u8>, bool)> {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(bytes).unwrap();
        let mut r = RevLines::new(&f, bytes.len() as u64);
        let mut out = Vec::new();
        while let Some(x) = r.prev_line().unwrap() {
            out.push((x.offset, x.body.to_vec(), x.terminated));
        }
        out.reverse();
        out
    }

    fn naive(bytes: &[u8]) -> Vec<(u64, Vec<u8>, bool)> {
        let mut out = Vec::new();
        let mut off = 0usize;
        while off < bytes.len() {
            match bytes[off..].iter().position(|&b| b == b'\n') {
                Some(i) => {
                    out.push((off as u64, bytes[off..off + i].to_vec(), true));
                    off += i + 1;
                }
                None => {
                    out.push((off as u64, bytes[off..].to_vec(), false));
                    off = bytes.len();
                }
            }
        }
        out
    }

    proptest! {
        #[test]
        fn both_directions_split_like_the_naive_reader(
            parts in proptest::collection::vec((0usize..3000, any::<bool>()), 0..40)
        ) {
            let mut bytes = Vec::new();
            for (i, (n, nl)) in parts.iter().enumerate() {
                bytes.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, *n));
                if *nl { bytes.push(b'\n'); }
            }
            prop_assert_eq!(forward(&bytes), naive(&bytes));
            prop_assert_eq!(backward(&bytes), naive(&bytes));
        }
    }

    #[test]
    fn long_lines_are_skipped_in_both_directions() {
        let mut bytes = b"a\n".to_vec();
        bytes.extend(std::iter::repeat_n(b'x', MAX_LINE + 10));
        bytes.extend_from_slice(b"\nb\n");
        let mut l = Lines::new(&bytes[..], 0);
        let mut got = Vec::new();
        while let Some(x) = l.next_line().unwrap() {
            got.push((x.offset, x.len, x.too_long));
        }
        let want = vec![
            (0, 1, false),
            (2, MAX_LINE as u64 + 10, true),
            (MAX_LINE as u64 + 13, 1, false),
        ];
        assert_eq!(got, want);
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&bytes).unwrap();
        let mut r = RevLines::new(&f, bytes.len() as u64);
        let mut back = Vec::new();
        while let Some(x) = r.prev_line().unwrap() {
            back.push((x.offset, x.len, x.too_long));
        }
        back.reverse();
        assert_eq!(back, want);
    }
}
