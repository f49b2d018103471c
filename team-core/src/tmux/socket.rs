//! Removing a private socket file once no server answers on it (issue 15: `shutdown` left it
//! behind, and every later scan paid for it).
//!
//! Teams of one workspace share the socket, and another team's `init` may start a new server
//! on the same path at any instant. tmux itself serialises server starts on a path with an
//! exclusive `flock` on `<path>.lock` (`client_connect`: a client whose `connect` is refused
//! takes that lock, tries again, and only then unlinks the path and starts a server, which
//! binds it and unlinks the lock file). So the removal takes the same lock, checks that it
//! locked the file the path still names, and under it checks that the socket is the same inode
//! it saw refuse connections and that it still refuses them; only then it unlinks the socket
//! (and the lock file, as tmux's server does). A client that starts a server waits for the lock
//! and, once it has it, finds no file and starts its server as usual.
//!
//! Left open: a tmux client that cannot open the lock file at all starts a server without it;
//! that server binds a new inode, which the inode check before the unlink catches except in
//! the instant between that check and the unlink.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **`shutdown` removes the private socket file** once the team's leader is gone and no
//!   server answers on it (a server exits with its last session; `shutdown` waits up to 2 s for
//!   it to stop answering). Another team's session in the listing before the leader's kill keeps
//!   it at once. The removal takes tmux's own server-start lock (`flock` on `<socket>.lock`, which
//!   a tmux client holds from a refused `connect` until its new server has bound the path),
//!   checks it locked the file the path names, and under it checks the socket is the inode that
//!   refused and still refuses; then it unlinks the socket and the lock file (as tmux's server
//!   does). So an `init` starting a server on the path at that instant either waits for the lock
//!   and starts on a clean path, or has already bound a new inode, which is kept. Left open: a
//!   tmux client that cannot open the lock file starts a server without it; the inode check
//!   narrows that to the instant between the check and the unlink. The summary says `socket:
//!   removed | absent | kept` (kept: a line with the reason).

use std::io::ErrorKind;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// What became of a socket file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SocketRemoval {
    /// No server answered on it: it was removed.
    Removed,
    /// There was no file.
    Absent,
    /// Kept, and why (a server answers, it is not a socket of ours, it was replaced, ...).
    Kept(String),
}

impl SocketRemoval {
    /// `removed`, `absent` or `kept`.
    pub fn word(&self) -> &'static str {
        match self {
            SocketRemoval::Removed => "removed",
            SocketRemoval::Absent => "absent",
            SocketRemoval::Kept(_) => "kept",
        }
    }
}

fn io(op: &'static str, path: &Path, e: std::io::Error) -> Error {
    Error::Io {
        op,
        path: path.to_path_buf(),
        source: e,
    }
}

enum Answer {
    Serves,
    Refuses,
    NoFile,
    Other(std::io::Error),
}

fn answer(path: &Path) -> Answer {
    match UnixStream::connect(path) {
        Ok(_) => Answer::Serves,
        Err(e) if e.kind() == ErrorKind::ConnectionRefused => Answer::Refuses,
        Err(e) if e.kind() == ErrorKind::NotFound => Answer::NoFile,
        Err(e) => Answer::Other(e),
    }
}

/// (device, inode) of a socket file of ours at `path`; `None` when there is no file.
fn socket_id(path: &Path) -> Result<std::result::Result<Option<(u64, u64)>, String>> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_socket() => Ok(Err("it is not a socket".into())),
        Ok(m) if m.uid() != rustix::process::getuid().as_raw() => {
            Ok(Err("it belongs to another user".into()))
        }
        Ok(m) => Ok(Ok(Some((m.dev(), m.ino())))),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(Ok(None)),
        Err(e) => Err(io("stat socket", path, e)),
    }
}

/// Removes the socket file `path` if no server answers on it, waiting up to `wait` for a
/// server that is exiting (after its last session closed) to stop answering. See the module
/// docs for the race with a server starting on the same path.
pub fn remove_if_dead(path: &Path, wait: Duration) -> Result<SocketRemoval> {
    let before = match socket_id(path)? {
        Err(why) => return Ok(SocketRemoval::Kept(why)),
        Ok(None) => return Ok(SocketRemoval::Absent),
        Ok(Some(id)) => id,
    };
    let deadline = Instant::now() + wait;
    loop {
        match answer(path) {
            Answer::Refuses => break,
            Answer::NoFile => return Ok(SocketRemoval::Absent),
            Answer::Other(e) => return Ok(SocketRemoval::Kept(format!("connect: {e}"))),
            Answer::Serves if Instant::now() >= deadline => {
                return Ok(SocketRemoval::Kept("a server answers on it".into()));
            }
            Answer::Serves => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    let lock_path = PathBuf::from(format!("{}.lock", path.display()));
    let Some(lock) = tmux_start_lock(&lock_path, Instant::now() + Duration::from_secs(2))? else {
        return Ok(SocketRemoval::Kept(
            "a tmux server is being started on it (its start lock is held)".into(),
        ));
    };
    // Under tmux's start lock: nobody starts a server on the path until it is released.
    let out = match socket_id(path)? {
        Err(why) => SocketRemoval::Kept(why),
        Ok(None) => SocketRemoval::Absent,
        Ok(Some(id)) if id != before => {
            SocketRemoval::Kept("it was replaced (a new server started on it)".into())
        }
        Ok(Some(_)) => match answer(path) {
            Answer::Refuses => match std::fs::remove_file(path) {
                Ok(()) => SocketRemoval::Removed,
                Err(e) if e.kind() == ErrorKind::NotFound => SocketRemoval::Absent,
                Err(e) => return Err(io("remove socket", path, e)),
            },
            Answer::NoFile => SocketRemoval::Absent,
            Answer::Serves => SocketRemoval::Kept("a server answers on it".into()),
            Answer::Other(e) => SocketRemoval::Kept(format!("connect: {e}")),
        },
    };
    // As tmux's server does once it has bound the socket: the lock file goes while held (a
    // client waiting on it starts over, as tmux's own clients do).
    if same_file(&lock, &lock_path) {
        let _ = std::fs::remove_file(&lock_path);
    }
    drop(lock);
    Ok(out)
}

fn same_file(f: &std::fs::File, path: &Path) -> bool {
    match (f.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Takes tmux's start lock `<socket>.lock` (exclusive `flock`), making sure the locked file is
/// the one the path names (a starting server unlinks it). `None`: not taken by `deadline`.
fn tmux_start_lock(lock_path: &Path, deadline: Instant) -> Result<Option<std::fs::File>> {
    loop {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(lock_path)
            .map_err(|e| io("open tmux's start lock", lock_path, e))?;
        match f.try_lock() {
            Ok(()) if same_file(&f, lock_path) => return Ok(Some(f)),
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(io("lock tmux's start lock", lock_path, e));
            }
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
