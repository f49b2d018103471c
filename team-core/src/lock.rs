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
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **Locks use std's `File::try_lock`** (stable since Rust 1.89), not fs2: std's API is
//!   maintained, and fs2's `FileExt` methods clash with std's by name. fs2 is not a dependency.
//!   Bounded waiting is a try-lock loop with backoff (1 ms doubling to 50 ms).
//! - **Seeing whether a lock is held takes no lock, not even the kernel's** ([`is_held`]): it
//!   reads the holder record in the lock file and checks that its process still runs (the
//!   same process: its start time is in the record). A reader at idle priority that took the
//!   lock shared, even for an instant, could be preempted inside that instant while a
//!   writer's try-lock failed and backed off. Reading the kernel's table of locks
//!   (`/proc/locks`) instead, as this did for a while, is worse: the kernel takes its global
//!   lock of all file locks for writing to print the table, so every `flock` and every close
//!   of a locked file on the machine waits for an RCU grace period and then for that idle
//!   reader to be scheduled (`down 1` went from 2x to 3-12x slower under 20 `status` loops).
//!   A record can lag the lock by a moment (written just after `flock`, cleared just before
//!   the unlock), and a lock taken by hand (`flock(1)`) writes none: `is_held` is a hint for
//!   `status` and the reaper's report, never what a kill waits on (those take the lock).
//! - **The holder record is written in place** (`pwrite` at offset 0, padded with spaces to
//!   the file's length; cleared by blanks), never by truncating: on ext4 a truncate to zero
//!   marks the file for a forced write-back at its close (the `auto_da_alloc` heuristic for
//!   replaced files), one disk write per lock taken.

use std::fs::{File, TryLockError};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fsutil::{self, Access};

/// Who holds a lock: written into the lock file by the holder, read by `status` and by the
/// error a waiter gets.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    pub op: String,
    pub since: String,
    /// The holder's start time (clock ticks after boot, `/proc/<pid>/stat`), so a reader can
    /// tell the holder from a later process that got its pid. Absent in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<u64>,
}

impl Holder {
    /// A holder record for this process doing `op`.
    pub fn me(op: &str) -> Holder {
        let pid = std::process::id();
        Holder {
            pid,
            op: op.to_string(),
            since: crate::fsutil::now_rfc3339(),
            start: crate::process::start_time(pid).ok().flatten(),
        }
    }

    /// Whether the process this record names still runs (the same one, when the record has
    /// its start time; any process with its pid otherwise, which errs on "held").
    fn runs(&self) -> bool {
        match crate::process::start_time(self.pid) {
            Ok(Some(t)) => self.start.is_none_or(|s| s == t),
            Ok(None) => false,
            // Unreadable: cautious.
            Err(_) => true,
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
        let _ = write_in_place(&self.file, b"");
        let _ = self.file.unlock();
    }
}

/// Writes `body` at the start of `file`, padded with spaces to the file's length, without
/// truncating (see the module's decisions).
fn write_in_place(file: &File, body: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let len = file.metadata()?.len().min(fsutil::limits::LOCK) as usize;
    let mut buf = body.to_vec();
    if buf.len() < len {
        buf.resize(len, b' ');
    }
    file.write_all_at(&buf, 0)
}

/// Takes the exclusive lock on `path`, a lock file outside any state root (the reaper's own):
/// the file itself is never opened through a symlink. See [`acquire_in`].
pub fn acquire(path: &Path, wait: Duration, holder: &Holder) -> Result<LockGuard> {
    let o = fsutil::open(path, Access::ReadWriteCreate(0o600))?;
    lock_file(o, path, wait, holder)
}

/// Takes the exclusive lock on `path` inside the state root `root`, waiting at most `wait`.
/// Nothing on the way is followed through a symlink, and the lock file must be a regular file
/// with one link (`fsutil::state_open`). On success the holder info is written into the file.
/// A lock still busy after `wait` is [`Error::Busy`].
pub fn acquire_in(root: &Path, path: &Path, wait: Duration, holder: &Holder) -> Result<LockGuard> {
    let o = fsutil::state_open(root, path, Access::ReadWriteCreate(0o600))?;
    lock_file(o, path, wait, holder)
}

fn lock_file(
    o: Option<fsutil::Opened>,
    path: &Path,
    wait: Duration,
    holder: &Holder,
) -> Result<LockGuard> {
    let file = o
        .ok_or_else(|| Error::Internal(format!("lock file {} not created", path.display())))?
        .file;
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
                        holder: holder_of(&file)
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
    write_in_place(&file, &body).map_err(|e| Error::io("write", path, e))?;
    Ok(LockGuard {
        file,
        path: path.to_path_buf(),
    })
}

/// Whether a process of the tools holds the lock at `path` inside the state root right now,
/// as far as its holder record says: a record naming a process that still runs. It takes no
/// lock and reads no table of locks (see the module's decisions): a hint for `status` and
/// the reaper's report, never what an effect waits on.
pub fn is_held(root: &Path, path: &Path) -> Result<bool> {
    Ok(live_holder(root, path)?.is_some())
}

/// The holder of the lock at `path` inside the state root, when its record names a process
/// that still runs ([`is_held`]).
pub fn live_holder(root: &Path, path: &Path) -> Result<Option<Holder>> {
    let Some(o) = fsutil::state_open(root, path, Access::Read)? else {
        return Ok(None);
    };
    let holder = holder_of(&o.file);
    crate::failpoint::hit("lock.probe")?;
    Ok(holder.filter(Holder::runs))
}

/// Reads the holder info of a lock file inside the state root, if it has any.
pub fn read_holder(root: &Path, path: &Path) -> Option<Holder> {
    holder_of(&fsutil::state_open(root, path, Access::Read).ok()??.file)
}

/// The holder record in an open lock file (bounded read from the start).
/// Only a record the tools could have written counts: a short operation name and time in
/// printable ASCII (the record is shown to people, and a cloned repository can carry a
/// hostile `.team/`: no control, bidirectional or zero-width character reaches a screen).
fn holder_of(f: &File) -> Option<Holder> {
    let mut b = Vec::new();
    let mut r = f;
    r.seek(SeekFrom::Start(0)).ok()?;
    r.take(fsutil::limits::LOCK).read_to_end(&mut b).ok()?;
    let h: Holder = serde_json::from_slice(&b).ok()?;
    let plain = |s: &str| s.len() <= 64 && s.bytes().all(|b| b.is_ascii_graphic() || b == b' ');
    (plain(&h.op) && plain(&h.since)).then_some(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let r = d.path().join(".team");
        fsutil::state_create_dir(&r, &r).unwrap();
        let p = r.join("t.lock");
        (d, r, p)
    }

    /// A record left by a holder that died (SIGKILL: no drop ran), or one naming a pid that
    /// a later process got, says nothing is held; the live holder's own record does.
    #[test]
    fn a_record_counts_only_while_its_own_process_runs() {
        let (_d, r, p) = root();
        let me = std::process::id();
        let start = crate::process::start_time(me).unwrap();
        assert!(start.is_some());
        let rec = |pid: u32, start: Option<u64>| Holder {
            pid,
            op: "up".into(),
            since: crate::fsutil::now_rfc3339(),
            start,
        };
        let write = |h: &Holder| std::fs::write(&p, serde_json::to_vec(h).unwrap()).unwrap();
        write(&rec(me, start));
        assert!(is_held(&r, &p).unwrap(), "its holder runs");
        write(&rec(me, None));
        assert!(
            is_held(&r, &p).unwrap(),
            "an older record: any process of that pid"
        );
        write(&rec(me, start.map(|s| s + 1)));
        assert!(!is_held(&r, &p).unwrap(), "another process got the pid");
        // No process has this pid (above any `pid_max`): its holder is gone.
        write(&rec(u32::MAX - 1, start));
        assert!(!is_held(&r, &p).unwrap(), "its holder died");
        std::fs::write(&p, b"  \n").unwrap();
        assert!(!is_held(&r, &p).unwrap(), "a blank record");
        // A hostile record (a cloned `.team/`) naming a live process never reaches a screen.
        let mut h = rec(me, start);
        h.op = "up\u{1b}]0;owned\u{7}".into();
        write(&h);
        assert!(read_holder(&r, &p).is_none() && !is_held(&r, &p).unwrap());
        for op in ["up\u{202e}nwod", "up\u{200b}", "up\u{2066}"] {
            h.op = op.into();
            write(&h);
            assert!(read_holder(&r, &p).is_none(), "{op:?}");
        }
        h.op = "x".repeat(65);
        write(&h);
        assert!(read_holder(&r, &p).is_none());
        assert!(!is_held(&r, &r.join("none.lock")).unwrap(), "no file");
    }

    /// The record is written over the old one in place: a shorter record after a longer one
    /// reads back whole, and a released lock reads as blank. The file is never truncated.
    #[test]
    fn the_record_is_overwritten_in_place_and_blanked_on_release() {
        let (_d, r, p) = root();
        let long = "x".repeat(60);
        let g = acquire_in(&r, &p, Duration::ZERO, &Holder::me(&long)).unwrap();
        assert_eq!(read_holder(&r, &p).unwrap().op, long);
        let len = std::fs::metadata(&p).unwrap().len();
        drop(g);
        assert!(read_holder(&r, &p).is_none());
        assert!(!is_held(&r, &p).unwrap());
        let bytes = std::fs::read(&p).unwrap();
        assert!(bytes.iter().all(|&b| b == b' ') && bytes.len() as u64 == len);
        let g = acquire_in(&r, &p, Duration::ZERO, &Holder::me("short")).unwrap();
        assert_eq!(read_holder(&r, &p).unwrap().op, "short");
        assert!(is_held(&r, &p).unwrap());
        assert_eq!(std::fs::metadata(&p).unwrap().len(), len, "never truncated");
        drop(g);
    }

    #[test]
    fn second_open_waits_then_busy_with_holder() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path().join(".team");
        fsutil::state_create_dir(&r, &r).unwrap();
        let p = r.join("t.lock");
        let g = acquire_in(&r, &p, Duration::ZERO, &Holder::me("first")).unwrap();
        assert!(is_held(&r, &p).unwrap());
        let t0 = Instant::now();
        let err =
            acquire_in(&r, &p, Duration::from_millis(100), &Holder::me("second")).unwrap_err();
        assert!(t0.elapsed() >= Duration::from_millis(100));
        assert!(matches!(err, Error::Busy { .. }));
        assert!(err.to_string().contains("first"), "{err}");
        drop(g);
        assert!(!is_held(&r, &p).unwrap());
        assert!(p.exists(), "lock files are never deleted");
        acquire(&p, Duration::ZERO, &Holder::me("third")).unwrap();
    }
}
