//! flock'd lock files with bounded waiting and holder information.
//!
//! Lock files live in `<state root>/locks/` and are created once and never deleted: deleting a
//! lock file would let two processes hold "the same" lock on two different inodes. The kernel
//! drops a flock when its holder dies, so there is no stale-lock recovery.
//!
//! We use std's `File::try_lock` (stable since Rust 1.89), not fs2: std's is maintained, and
//! fs2's `FileExt` methods clash with std's by name.
//!
//! Order: `scale` before `state`, never the reverse. `state` is held only around one
//! read-modify-write of state files, never across a tmux call, a git call or a wait.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Who holds a lock: written into the lock file by the holder, read by `status` and by the
/// error a waiter gets.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    pub op: String,
    pub since: String,
}

impl Holder {
    /// A holder record for this process doing `op`.
    pub fn me(op: &str) -> Holder {
        Holder {
            pid: std::process::id(),
            op: op.to_string(),
            since: crate::fsutil::now_rfc3339(),
        }
    }
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pid {} ({}) since {}", self.pid, self.op, self.since)
    }
}

/// A held lock. Dropping it releases the lock (the file stays).
#[derive(Debug)]
pub struct LockGuard {
    file: File,
    path: PathBuf,
}

impl LockGuard {
    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        // Clear the holder so `status` does not show a finished holder; the unlock itself is
        // the kernel's job when the fd closes.
        let _ = self.file.set_len(0);
        let _ = self.file.unlock();
    }
}

fn open_lock_file(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| Error::io("open lock file", path, e))
}

/// Takes the exclusive lock on `path`, waiting at most `wait`. On success the holder info is
/// written into the file. A lock still busy after `wait` is [`Error::Busy`].
pub fn acquire(path: &Path, wait: Duration, holder: &Holder) -> Result<LockGuard> {
    let mut file = open_lock_file(path)?;
    let deadline = Instant::now() + wait;
    let mut pause = Duration::from_millis(1);
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(TryLockError::WouldBlock) => {
                let now = Instant::now();
                if now >= deadline {
                    return Err(Error::Busy {
                        path: path.to_path_buf(),
                        holder: read_holder(path)
                            .map(|h| h.to_string())
                            .unwrap_or_else(|| "an unknown process".into()),
                    });
                }
                std::thread::sleep(pause.min(deadline - now));
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(TryLockError::Error(e)) => return Err(Error::io("lock", path, e)),
        }
    }
    let body = serde_json::to_vec(holder).map_err(|e| Error::Internal(e.to_string()))?;
    file.set_len(0)
        .map_err(|e| Error::io("truncate", path, e))?;
    file.seek(SeekFrom::Start(0))
        .map_err(|e| Error::io("seek", path, e))?;
    file.write_all(&body)
        .map_err(|e| Error::io("write", path, e))?;
    Ok(LockGuard {
        file,
        path: path.to_path_buf(),
    })
}

/// Whether someone holds the lock right now (probes with a non-blocking try-lock).
pub fn is_held(path: &Path) -> Result<bool> {
    let file = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io("open lock file", path, e)),
    };
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            Ok(false)
        }
        Err(TryLockError::WouldBlock) => Ok(true),
        Err(TryLockError::Error(e)) => Err(Error::io("lock", path, e)),
    }
}

/// Reads the holder info of a lock file, if it has any.
pub fn read_holder(path: &Path) -> Option<Holder> {
    let mut s = String::new();
    File::open(path).ok()?.read_to_string(&mut s).ok()?;
    serde_json::from_str(&s).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_open_waits_then_busy_with_holder() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.lock");
        let g = acquire(&p, Duration::ZERO, &Holder::me("first")).unwrap();
        assert!(is_held(&p).unwrap());
        let t0 = Instant::now();
        let err = acquire(&p, Duration::from_millis(100), &Holder::me("second")).unwrap_err();
        assert!(t0.elapsed() >= Duration::from_millis(100));
        assert!(matches!(err, Error::Busy { .. }));
        assert!(err.to_string().contains("first"), "{err}");
        drop(g);
        assert!(!is_held(&p).unwrap());
        assert!(p.exists(), "lock files are never deleted");
        acquire(&p, Duration::ZERO, &Holder::me("third")).unwrap();
    }
}
