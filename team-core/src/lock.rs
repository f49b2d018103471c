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
//! - **Seeing whether a lock is held takes no lock** ([`is_held`]): it looks the lock file's
//!   inode up in the kernel's table of locks (`/proc/locks`). A reader at idle priority that
//!   took the lock shared, even for an instant, could be preempted inside that instant while
//!   a writer's try-lock failed and backed off. The device is not compared (the kernel prints
//!   the superblock's, which `stat` does not always show), so a lock on a file of the same
//!   inode number elsewhere reads as "held": cautious. Where the table cannot be read, a
//!   shared try-lock answers.

use std::fs::{File, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
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
    let mut file = o
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

/// Whether someone holds the lock at `path` inside the state root right now.
///
/// It looks the file up in the kernel's table of locks (`/proc/locks`) and takes no lock
/// itself. A probe that took the lock, even shared and for an instant, would make a writer's
/// try-lock fail meanwhile, and the readers that ask (`status`, `status --watch`, the reaper's
/// scan) run at idle priority: on a busy machine one can be preempted inside that instant for
/// milliseconds while the writer backs off (a priority inversion that made `up 1` and `down 1`
/// twice as slow under 20 `status` loops). Where the table cannot be read, it falls back to a
/// shared try-lock.
pub fn is_held(root: &Path, path: &Path) -> Result<bool> {
    let Some(o) = fsutil::state_open(root, path, Access::Read)? else {
        return Ok(false);
    };
    if let Some(table) = read_lock_table() {
        let ino = std::os::unix::fs::MetadataExt::ino(
            &o.file.metadata().map_err(|e| Error::io("stat", path, e))?,
        );
        crate::failpoint::hit("lock.probe")?;
        return Ok(flock_held_on(&table, ino));
    }
    match o.file.try_lock_shared() {
        Ok(()) => {
            let _ = o.file.unlock();
            Ok(false)
        }
        Err(TryLockError::WouldBlock) => Ok(true),
        Err(TryLockError::Error(e)) => Err(Error::io("lock", path, e)),
    }
}

/// `/proc/locks`, bounded (a table larger than this is treated as unreadable).
fn read_lock_table() -> Option<String> {
    let mut s = String::new();
    File::open("/proc/locks")
        .ok()?
        .take(fsutil::limits::LOCK_TABLE + 1)
        .read_to_string(&mut s)
        .ok()?;
    (s.len() as u64 <= fsutil::limits::LOCK_TABLE).then_some(s)
}

/// Whether `table` (the text of `/proc/locks`) shows a flock held on inode `ino`. Waiters
/// (`->` lines) do not count. The device is not compared: the kernel prints the superblock's
/// device, which on some file systems (btrfs subvolumes) is not what `stat` reports, and a
/// flock on a file of the same inode number elsewhere only makes the answer cautious ("held").
fn flock_held_on(table: &str, ino: u64) -> bool {
    table.lines().any(|line| {
        let mut t = line.split_whitespace().skip(1);
        if t.next() != Some("FLOCK") {
            return false;
        }
        // `ADVISORY WRITE <pid> <maj>:<min>:<ino> <start> <end>`
        t.nth(3)
            .and_then(|dev_ino| dev_ino.rsplit(':').next())
            .and_then(|i| i.parse::<u64>().ok())
            == Some(ino)
    })
}

/// Reads the holder info of a lock file inside the state root, if it has any.
pub fn read_holder(root: &Path, path: &Path) -> Option<Holder> {
    holder_of(&fsutil::state_open(root, path, Access::Read).ok()??.file)
}

/// The holder record in an open lock file (bounded read from the start).
fn holder_of(f: &File) -> Option<Holder> {
    let mut b = Vec::new();
    let mut r = f;
    r.seek(SeekFrom::Start(0)).ok()?;
    r.take(fsutil::limits::LOCK).read_to_end(&mut b).ok()?;
    serde_json::from_slice(&b).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_table_is_read_by_inode_and_waiters_do_not_count() {
        let table = "1: FLOCK  ADVISORY  WRITE 28844 fe:00:10011438 0 EOF\n\
                     1: -> FLOCK  ADVISORY  WRITE 28845 fe:00:777 0 EOF\n\
                     2: POSIX  ADVISORY  WRITE 123 fe:00:555 0 EOF\n\
                     3: OFDLCK ADVISORY  READ  -1 00:06:999 0 EOF\n";
        assert!(flock_held_on(table, 10011438));
        assert!(
            !flock_held_on(table, 1001143),
            "a prefix of the number is not it"
        );
        assert!(!flock_held_on(table, 777), "a waiter holds nothing");
        assert!(!flock_held_on(table, 555), "not a flock");
        assert!(!flock_held_on(table, 999), "not a flock");
        assert!(!flock_held_on("", 1));
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
        // A shared holder counts too.
        let f = File::open(&p).unwrap();
        f.try_lock_shared().unwrap();
        assert!(is_held(&r, &p).unwrap());
        drop(f);
        assert!(!is_held(&r, &p).unwrap());
        acquire(&p, Duration::ZERO, &Holder::me("third")).unwrap();
    }
}
