//! Durable, symlink-safe file primitives: the one module that opens files under the state root.
//!
//! A cloned repository can carry a hostile `.team/` (a lock file that is a symlink to
//! `~/notes`, an `audit.jsonl` that is a symlink to `~/.bashrc`, a `team.json` that is a FIFO).
//! So nothing under the state root is opened by path. Every operation here walks from an
//! *anchor* directory (opened normally: it is the caller's, e.g. the workspace) one component
//! at a time with `openat(O_DIRECTORY | O_NOFOLLOW)`, so neither the state root itself nor any
//! directory between it and the file may be a symlink; the file itself is opened with
//! `O_NOFOLLOW | O_NONBLOCK` (a FIFO cannot block the open) and must be a regular file
//! (`fstat`). Files opened for writing in place (locks, appends) must also have a single link,
//! so a hard link to a user's file cannot be written through. Directories are created with
//! `mkdirat` (mode 0700) and their parent is fsynced, so their creation is durable (a worker's
//! runtime files excepted: see the decisions below). Every read
//! is bounded by a limit per kind of file ([`limits`]).
//!
//! Refusals are [`Error::UnsafePath`] (exit 65) naming the path; a file over its limit is
//! [`Error::MalformedState`] (exit 65).
//!
//! The `state_*` functions take the state root (`root`) and an absolute `path` inside it; the
//! root's parent is the anchor. The functions without the prefix are for files outside any
//! state root (the reaper's own files, an audit log given by flag): their parent directory is
//! the anchor, and only the file itself is opened without following a symlink.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **Symlink-safe state I/O is anchored at the state root's parent.** The workspace path above
//!   `.team` is the user's own (it may contain symlinks, e.g. a home directory on another disk);
//!   from `.team` down, nothing is followed. A refusal is `UnsafePath` (exit 65) naming the
//!   path; a file over its size limit is `MalformedState` (65). Limits: `team.json` 16 MiB, a task
//!   or status file 1 MiB, the journal 128 MiB, `events.jsonl` 256 MiB, a lock's holder 64 KiB,
//!   an audit log read whole 4 GiB. Files written in place (locks, appends) must have one link, so
//!   a hard link to a user's file is refused like a symlink. `Store::load` also checks
//!   `events.jsonl`, which is appended to only after effects, so a hostile one stops a command
//!   before it acts. An audit log given by `--audit-log` is outside the state root: only its last
//!   component is refused as a symlink (its directory is the user's choice). `reap/state.rs` still
//!   calls `lock::acquire` by path after `StateRoot::ensure`; `lock::acquire_in` is the
//!   state-root form.
//! - **A walk is one `openat2` call** (`RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH` from the
//!   anchor), where it was an `openat` and a `close` per component: a `down 1` made 61 walks
//!   of `ws/.team/teams/<team>/...`, about a third of its system calls. The kernel refuses a
//!   symlink at every component, as the walk does; anything but success or absence falls back
//!   to the walk, which names what is wrong (and serves kernels before 5.6). *Rejected:*
//!   keeping the directories a walk reached open for the process and re-checking each with a
//!   `statx` of its path: that check follows symlinks above the last component, so a
//!   directory of ours moved out of the root and reached again through a symlink passed it
//!   (found by a black-box attack: an unlink landed outside `.team`).

//!
//! - **A worker's runtime files are not fsynced** (`Sync::Never`, issue 15): its directory,
//!   inbox and startup script are made without any fsync, and a teardown moves them to the
//!   team's trash with one fsync of each of the two directories (`resources::Dirs::sync`).
//!   Their paths are recorded durably in the team's state before they are made, so a cleanup
//!   after any crash finds them or finds them absent (absent is success), and a crash of the
//!   machine takes the tmux server and every pane that would read them. State (team, tasks,
//!   journal, locks' directories) is still made durable at every step. The two directories
//!   they go in (`workers/`, `runtime/`) are made, durably, with the team (`Store::create`),
//!   so the first `up` has none to make before its split.
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::error::{Error, Result};

/// The most bytes read from each kind of file.
pub mod limits {
    /// `team.json`.
    pub const TEAM_JSON: u64 = 16 << 20;
    /// `journal.json` (it holds `team.json` and every staged file whole).
    pub const JOURNAL: u64 = 128 << 20;
    /// One task file.
    pub const TASK: u64 = 1 << 20;
    /// A worker's `status.json`.
    pub const STATUS: u64 = 1 << 20;
    /// A lock file's holder record.
    pub const LOCK: u64 = 64 << 10;
    /// `events.jsonl`.
    pub const EVENTS: u64 = 256 << 20;
    /// An audit log read whole (`verify`, `query`).
    pub const AUDIT: u64 = 4 << 30;
    /// Small files of the tools' own (the reaper's dead-socket list).
    pub const SMALL: u64 = 1 << 20;
}

/// How [`state_open`] / [`open`] opens a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read only; absent is `None`.
    Read,
    /// Read and write, created (with `mode`) when absent, never truncated: lock files.
    ReadWriteCreate(u32),
    /// Read and append, created (with `mode`) when absent: logs.
    AppendCreate(u32),
    /// Read and write an existing file; absent is `None`.
    ReadWrite,
}

/// An opened file, and whether this open created it.
#[derive(Debug)]
pub struct Opened {
    pub file: File,
    pub created: bool,
}

fn errno_io(e: Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(e.raw_os_error())
}

fn unsafe_path(path: &Path, why: impl Into<String>) -> Error {
    Error::UnsafePath {
        path: path.to_path_buf(),
        why: why.into(),
    }
}

/// Splits `path` into the components below `base`, each a plain name.
fn rel_components<'a>(base: &Path, path: &'a Path) -> Result<Vec<&'a OsStr>> {
    let rel = path
        .strip_prefix(base)
        .map_err(|_| unsafe_path(path, format!("is outside {}", base.display())))?;
    rel.components()
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(unsafe_path(path, "contains `.`, `..` or a root")),
        })
        .collect()
}

/// A directory reached from an anchor without following symlinks.
struct Walk {
    fd: OwnedFd,
    path: PathBuf,
}

/// Why a component could not be opened as a directory: a symlink, or not a directory.
fn not_a_dir(parent: &OwnedFd, name: &OsStr, full: &Path) -> Error {
    match rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
            unsafe_path(full, "is a symlink; state is never reached through one")
        }
        // It was not a directory (or a symlink) when opened, and is one now: it changed
        // meanwhile.
        Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Directory => unsafe_path(
            full,
            "was swapped while it was being opened (a symlink or another file for a moment)",
        ),
        Ok(st) => unsafe_path(
            full,
            format!(
                "is a {}, not a directory",
                type_name(FileType::from_raw_mode(st.st_mode))
            ),
        ),
        Err(e) => Error::io("inspect", full, errno_io(e)),
    }
}

fn type_name(t: FileType) -> &'static str {
    match t {
        FileType::RegularFile => "regular file",
        FileType::Directory => "directory",
        FileType::Symlink => "symlink",
        FileType::Fifo => "FIFO",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        FileType::Unknown => "file of unknown type",
    }
}

impl Walk {
    /// Opens the anchor directory (following symlinks: it is the caller's own).
    fn anchor(dir: &Path) -> Result<Walk> {
        let fd = rustix::fs::open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| Error::io("open directory", dir, errno_io(e)))?;
        Ok(Walk {
            fd,
            path: dir.to_path_buf(),
        })
    }

    /// Steps into `name` without following a symlink; creates it (0700, parent fsynced) when
    /// absent and `create`. `None` when absent and not `create`.
    fn child(&self, name: &OsStr, create: bool) -> Result<Option<Walk>> {
        let full = self.path.join(name);
        loop {
            match rustix::fs::openat(
                &self.fd,
                name,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                Ok(fd) => return Ok(Some(Walk { fd, path: full })),
                Err(Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o700)) {
                        Ok(()) => rustix::fs::fsync(&self.fd)
                            .map_err(|e| Error::io("fsync directory", &self.path, errno_io(e)))?,
                        Err(Errno::EXIST) => {}
                        Err(e) => return Err(Error::io("create directory", &full, errno_io(e))),
                    }
                }
                Err(Errno::NOENT) => return Ok(None),
                Err(Errno::LOOP | Errno::NOTDIR) => return Err(not_a_dir(&self.fd, name, &full)),
                Err(e) => return Err(Error::io("open directory", &full, errno_io(e))),
            }
        }
    }

    /// Walks `names` below this directory. Past the first `free` components, each must be on
    /// the mount of the one above it: no state below the state root is reached through a
    /// mount point (a file system a worker mounted over a directory of its own).
    fn descend(mut self, names: &[&OsStr], create: bool, free: usize) -> Result<Option<Walk>> {
        for (i, n) in names.iter().enumerate() {
            match self.child(n, create)? {
                Some(w) => {
                    if i >= free && mount_of(&w.fd, &w.path)? != mount_of(&self.fd, &self.path)? {
                        return Err(unsafe_path(
                            &w.path,
                            "is a mount point (a file system is mounted there); state is never reached through one",
                        ));
                    }
                    self = w;
                }
                None => return Ok(None),
            }
        }
        Ok(Some(self))
    }

    fn sync(&self) -> Result<()> {
        rustix::fs::fsync(&self.fd)
            .map_err(|e| Error::io("fsync directory", &self.path, errno_io(e)))
    }
}

/// The directory `dir` inside the state root `root` (`root` itself included), reached without
/// following symlinks.
fn state_walk(root: &Path, dir: &Path, create: bool) -> Result<Option<Walk>> {
    let anchor = root
        .parent()
        .ok_or_else(|| unsafe_path(root, "the state root cannot be `/`"))?;
    let mut names = rel_components(anchor, root)?;
    if dir != root {
        names.extend(rel_components(root, dir)?);
    }
    let w = Walk::anchor(anchor)?;
    if names.is_empty() {
        return Ok(Some(w));
    }
    // The whole way down in one call that follows no symlink at any component and cannot
    // leave the anchor (Linux 5.6+). Anything but success or plain absence (a symlink, a
    // component that is not a directory, an older kernel) takes the walk one component at a
    // time, which also says exactly what is wrong.
    let rel: PathBuf = names.iter().collect();
    let how = rustix::fs::ResolveFlags::NO_SYMLINKS
        | rustix::fs::ResolveFlags::NO_MAGICLINKS
        | rustix::fs::ResolveFlags::NO_XDEV
        | rustix::fs::ResolveFlags::BENEATH;
    match rustix::fs::openat2(
        &w.fd,
        &rel,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
        how,
    ) {
        Ok(fd) => {
            return Ok(Some(Walk {
                fd,
                path: w.path.join(&rel),
            }));
        }
        Err(Errno::NOENT) if !create => return Ok(None),
        Err(_) => {}
    }
    // The state root itself may be a mount point of its own (the user's choice); nothing
    // below it may.
    let free = rel_components(anchor, root)?.len();
    w.descend(&names, create, free)
}

/// The parent walk and file name of `path` inside `root`.
fn state_parent<'a>(
    root: &Path,
    path: &'a Path,
    create: bool,
) -> Result<(Option<Walk>, &'a OsStr)> {
    let parent = path
        .parent()
        .ok_or_else(|| unsafe_path(path, "has no parent"))?;
    let name = path
        .file_name()
        .ok_or_else(|| unsafe_path(path, "has no file name"))?;
    if !path.starts_with(root) || path == root {
        return Err(unsafe_path(
            path,
            format!("is not inside {}", root.display()),
        ));
    }
    Ok((state_walk(root, parent, create)?, name))
}

/// The anchor walk (the parent, followed) and file name of a path outside any state root.
fn plain_parent(path: &Path) -> Result<(Walk, &OsStr)> {
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| unsafe_path(path, "has no file name"))?;
    Ok((Walk::anchor(parent)?, name))
}

/// Opens `name` in `dir` without following a symlink, and checks it is a regular file.
fn open_in(dir: &Walk, name: &OsStr, access: Access) -> Result<Option<Opened>> {
    let full = dir.path.join(name);
    let base = OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
    let (flags, mode) = match access {
        Access::Read => (OFlags::RDONLY, 0),
        Access::ReadWrite => (OFlags::RDWR, 0),
        Access::ReadWriteCreate(m) => (OFlags::RDWR | OFlags::CREATE, m),
        Access::AppendCreate(m) => (OFlags::RDWR | OFlags::APPEND | OFlags::CREATE, m),
    };
    let creates = flags.contains(OFlags::CREATE);
    let (fd, created) = loop {
        // Try without O_CREAT first, so we know whether this open made the file.
        match rustix::fs::openat(
            &dir.fd,
            name,
            base | (flags - OFlags::CREATE),
            Mode::empty(),
        ) {
            Ok(fd) => break (fd, false),
            Err(Errno::NOENT) if creates => {
                match rustix::fs::openat(
                    &dir.fd,
                    name,
                    base | flags | OFlags::EXCL,
                    Mode::from_raw_mode(mode),
                ) {
                    Ok(fd) => break (fd, true),
                    Err(Errno::EXIST) => continue,
                    Err(Errno::LOOP) => return Err(not_regular_symlink(&full)),
                    Err(e) => return Err(Error::io("create", &full, errno_io(e))),
                }
            }
            Err(Errno::NOENT) => return Ok(None),
            Err(Errno::LOOP) => return Err(not_regular_symlink(&full)),
            Err(Errno::NXIO) => return Err(unsafe_path(&full, "is not a regular file")),
            Err(e) => return Err(Error::io("open", &full, errno_io(e))),
        }
    };
    let st = rustix::fs::fstat(&fd).map_err(|e| Error::io("stat", &full, errno_io(e)))?;
    let t = FileType::from_raw_mode(st.st_mode);
    if t != FileType::RegularFile {
        return Err(unsafe_path(
            &full,
            format!("is a {}, not a regular file", type_name(t)),
        ));
    }
    if access != Access::Read && st.st_nlink > 1 {
        return Err(unsafe_path(
            &full,
            format!(
                "has {} hard links; a file written in place must have one",
                st.st_nlink
            ),
        ));
    }
    // A file bind-mounted over a state file is someone else's file: never written in place.
    if access != Access::Read && mount_of(&fd, &full)? != mount_of(&dir.fd, &dir.path)? {
        return Err(unsafe_path(
            &full,
            "is a mount point (a file is mounted over it); a file written in place must not be",
        ));
    }
    // Back to blocking I/O (it makes no difference for a regular file, but say what we mean).
    let fl = rustix::fs::fcntl_getfl(&fd).map_err(|e| Error::io("fcntl", &full, errno_io(e)))?;
    rustix::fs::fcntl_setfl(&fd, fl - OFlags::NONBLOCK)
        .map_err(|e| Error::io("fcntl", &full, errno_io(e)))?;
    Ok(Some(Opened {
        file: File::from(fd),
        created,
    }))
}

fn not_regular_symlink(full: &Path) -> Error {
    unsafe_path(
        full,
        "is a symlink; state files are never opened through one",
    )
}

/// Reads a whole opened file, refusing one larger than `max` bytes.
fn read_all(mut f: File, path: &Path, max: u64) -> Result<Vec<u8>> {
    let too_big = |n: u64| Error::MalformedState {
        path: path.to_path_buf(),
        msg: format!("is {n} bytes or more, over the limit of {max} bytes for this file"),
    };
    let len = f.metadata().map_err(|e| Error::io("stat", path, e))?.len();
    if len > max {
        return Err(too_big(len));
    }
    let mut buf = Vec::with_capacity(len as usize);
    (&mut f)
        .take(max + 1)
        .read_to_end(&mut buf)
        .map_err(|e| Error::io("read", path, e))?;
    if buf.len() as u64 > max {
        return Err(too_big(buf.len() as u64));
    }
    Ok(buf)
}

/// Atomic replace of `name` in `dir`: temp file, fsync, rename, fsync of the directory (the
/// fsyncs only when `sync` is [`Sync::Now`]).
fn write_in(dir: &Walk, name: &OsStr, bytes: &[u8], mode: u32, sync: Sync) -> Result<()> {
    let target = dir.path.join(name);
    let tmp_name = OsString::from(format!(
        ".{}.tmp-{}-{}",
        name.to_string_lossy(),
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let tmp = dir.path.join(&tmp_name);
    let fd = rustix::fs::openat(
        &dir.fd,
        tmp_name.as_os_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    )
    .map_err(|e| Error::io("create", &tmp, errno_io(e)))?;
    let mut f = File::from(fd);
    let result = (|| {
        f.write_all(bytes)
            .map_err(|e| Error::io("write", &tmp, e))?;
        if sync == Sync::Now {
            f.sync_all().map_err(|e| Error::io("fsync", &tmp, e))?;
        }
        rustix::fs::renameat(&dir.fd, tmp_name.as_os_str(), &dir.fd, name)
            .map_err(|e| Error::io("rename into", &target, errno_io(e)))?;
        match sync {
            Sync::Now => dir.sync(),
            Sync::Never => Ok(()),
        }
    })();
    if result.is_err() {
        let _ = rustix::fs::unlinkat(&dir.fd, tmp_name.as_os_str(), AtFlags::empty());
    }
    result
}

fn remove_in(dir: &Walk, name: &OsStr, sync: Sync) -> Result<()> {
    match rustix::fs::unlinkat(&dir.fd, name, AtFlags::empty()) {
        Ok(()) if sync == Sync::Now => dir.sync(),
        Ok(()) => Ok(()),
        Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(Error::io("remove", dir.path.join(name), errno_io(e))),
    }
}

// ---- Under the state root ------------------------------------------------------------------

/// Creates `dir` inside the state root `root` (the root included) and every missing directory
/// between, mode 0700, each creation made durable by an fsync of its parent. A symlinked or
/// non-directory component is refused.
pub fn state_create_dir(root: &Path, dir: &Path) -> Result<()> {
    state_walk(root, dir, true).map(|_| ())
}

/// Whether `dir` inside the state root exists as a directory reached without symlinks (a
/// symlinked component is an error, not "absent").
pub fn state_dir_exists(root: &Path, dir: &Path) -> Result<bool> {
    Ok(state_walk(root, dir, false)?.is_some())
}

/// Opens a file inside the state root without following symlinks (see the module docs).
/// `None` when it (or a directory above it) does not exist and `access` does not create.
pub fn state_open(root: &Path, path: &Path, access: Access) -> Result<Option<Opened>> {
    let creates = matches!(access, Access::ReadWriteCreate(_) | Access::AppendCreate(_));
    match state_parent(root, path, creates)? {
        (Some(dir), name) => open_in(&dir, name, access),
        (None, _) => Ok(None),
    }
}

/// Reads a whole file inside the state root, at most `max` bytes; `None` when it does not
/// exist.
pub fn state_read(root: &Path, path: &Path, max: u64) -> Result<Option<Vec<u8>>> {
    match state_open(root, path, Access::Read)? {
        Some(o) => read_all(o.file, path, max).map(Some),
        None => Ok(None),
    }
}

/// Writes a file inside the state root atomically (mode 0600); its directory must exist.
pub fn state_write(root: &Path, path: &Path, bytes: &[u8]) -> Result<()> {
    state_write_mode(root, path, bytes, 0o600)
}

/// [`state_write`] with a file mode.
pub fn state_write_mode(root: &Path, path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    state_write_with(root, path, bytes, mode, Sync::Now)
}

/// [`state_write_mode`], durable only as `sync` says.
pub fn state_write_with(
    root: &Path,
    path: &Path,
    bytes: &[u8],
    mode: u32,
    sync: Sync,
) -> Result<()> {
    match state_parent(root, path, false)? {
        (Some(dir), name) => write_in(&dir, name, bytes, mode, sync),
        (None, _) => Err(Error::io(
            "write",
            path,
            std::io::Error::from(std::io::ErrorKind::NotFound),
        )),
    }
}

/// When a removal is made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sync {
    /// The parent directory is fsynced before the call returns.
    Now,
    /// Never fsynced: a worker's runtime files (its directory, inbox and startup script),
    /// which a crash of the machine makes worthless anyway (it takes the tmux server and every
    /// pane with it). Their paths are recorded durably before they are made, so a cleanup
    /// finds them or finds them absent, and absent is success.
    Never,
}

/// A directory inside the state root, held open once it was reached without symlinks: what is
/// made or inspected through it costs no second walk from the root (`up` makes three files per
/// new worker in two directories, and walked six components for each of them).
pub struct StateDir(Walk);

/// Opens `dir` inside the state root `root` (see [`state_create_dir`] for `create`, which makes
/// the missing directories durably). `None` when absent and not `create`.
pub fn state_dir(root: &Path, dir: &Path, create: bool) -> Result<Option<StateDir>> {
    Ok(state_walk(root, dir, create)?.map(StateDir))
}

impl StateDir {
    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.0.path
    }

    /// The file name of `path` when `path` is directly in this directory.
    fn name_of<'a>(&self, path: &'a Path) -> Result<&'a OsStr> {
        match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) if parent == self.0.path => Ok(name),
            _ => Err(Error::Internal(format!(
                "{} is not directly in {}",
                path.display(),
                self.0.path.display()
            ))),
        }
    }

    /// A descriptor of this very directory (a duplicate), for a walk below it.
    pub fn dup_fd(&self) -> Result<OwnedFd> {
        rustix::io::fcntl_dupfd_cloexec(&self.0.fd, 0)
            .map_err(|e| Error::io("duplicate", &self.0.path, errno_io(e)))
    }

    /// The device and inode of this directory itself (the one held open).
    pub fn own_identity(&self) -> Result<(u64, u64)> {
        let st = rustix::fs::fstat(&self.0.fd)
            .map_err(|e| Error::io("inspect", &self.0.path, errno_io(e)))?;
        Ok((st.st_dev, st.st_ino))
    }

    /// A path that reaches this very directory while it stays open, wherever it is moved or
    /// whatever is put at its name meanwhile: its descriptor in this process's `/proc`
    /// (for a child process to start in).
    pub fn pinned_path(&self) -> PathBuf {
        use std::os::fd::AsRawFd;
        PathBuf::from(format!(
            "/proc/{}/fd/{}",
            std::process::id(),
            self.0.fd.as_raw_fd()
        ))
    }

    /// [`state_kind`] of `path`, which must be directly in this directory.
    pub fn kind(&self, path: &Path) -> Result<Option<&'static str>> {
        kind_in(&self.0, self.name_of(path)?, path)
    }

    /// Creates the directory `dir` (mode 0700), directly in this directory, durable only as
    /// `sync` says, and returns it held open. Already there as a directory is success; a
    /// symlink or a file there is refused.
    pub fn create_dir(&self, dir: &Path, sync: Sync) -> Result<StateDir> {
        let name = self.name_of(dir)?;
        match rustix::fs::mkdirat(&self.0.fd, name, Mode::from_raw_mode(0o700)) {
            Ok(()) if sync == Sync::Now => self.0.sync()?,
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(Error::io("create directory", dir, errno_io(e))),
        }
        match self.0.child(name, false)? {
            Some(w) => Ok(StateDir(w)),
            None => Err(Error::io(
                "open directory",
                dir,
                std::io::Error::from(std::io::ErrorKind::NotFound),
            )),
        }
    }

    /// [`state_write_with`] for `path`, directly in this directory.
    pub fn write(&self, path: &Path, bytes: &[u8], mode: u32, sync: Sync) -> Result<()> {
        let name = self.name_of(path)?;
        write_in(&self.0, name, bytes, mode, sync)
    }

    /// Creates the file `path` (directly in this directory) with `bytes` and `mode`, in place:
    /// never through a symlink, never over anything already there (`O_EXCL`), and not
    /// fsynced. For a new file nothing reads before it is complete (a worker's first inbox and
    /// startup script, read once its pane starts): no temporary name and no rename. A failed
    /// write removes the partial file.
    pub fn create_file(&self, path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
        let name = self.name_of(path)?;
        let fd = rustix::fs::openat(
            &self.0.fd,
            name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )
        .map_err(|e| Error::io("create", path, errno_io(e)))?;
        if let Err(e) = File::from(fd).write_all(bytes) {
            let _ = rustix::fs::unlinkat(&self.0.fd, name, AtFlags::empty());
            return Err(Error::io("write", path, e));
        }
        Ok(())
    }

    /// [`state_read`] of `path`, a file below this directory, walked from it (no component
    /// followed if a symlink): for reading many workers' files through their `workers/` held
    /// open, instead of from the state root each time. `None` when the file or a directory on
    /// the way is absent.
    pub fn read_below(&self, path: &Path, max: u64) -> Result<Option<Vec<u8>>> {
        let below = || {
            Error::Internal(format!(
                "{} is not below {}",
                path.display(),
                self.0.path.display()
            ))
        };
        let rel = path.strip_prefix(&self.0.path).map_err(|_| below())?;
        let mut names = Vec::new();
        for c in rel.components() {
            match c {
                Component::Normal(n) => names.push(n),
                _ => return Err(below()),
            }
        }
        let file = names.pop().ok_or_else(below)?;
        let mut walked: Option<Walk> = None;
        for n in names {
            match walked.as_ref().unwrap_or(&self.0).child(n, false)? {
                Some(w) => walked = Some(w),
                None => return Ok(None),
            }
        }
        match open_in(walked.as_ref().unwrap_or(&self.0), file, Access::Read)? {
            Some(o) => read_all(o.file, path, max).map(Some),
            None => Ok(None),
        }
    }

    /// [`state_remove_with`] for `path`, directly in this directory.
    pub fn remove(&self, path: &Path, sync: Sync) -> Result<()> {
        remove_in(&self.0, self.name_of(path)?, sync)
    }

    /// [`state_remove_tree`] for `dir`, directly in this directory, durable only as `sync`
    /// says.
    pub fn remove_tree(&self, dir: &Path, sync: Sync) -> Result<()> {
        remove_tree_in(&self.0, self.name_of(dir)?, dir, sync, &mut || {})
    }

    /// fsyncs this directory.
    pub fn sync(&self) -> Result<()> {
        self.0.sync()
    }

    /// Moves the entry `path` (directly in this directory) into `to` as `new_name`, whatever
    /// it is (a symlink is moved itself, never followed). Absent is `false`; an entry already
    /// at `new_name` is an error, never replaced.
    pub fn move_into(&self, path: &Path, to: &StateDir, new_name: &OsStr) -> Result<bool> {
        let name = self.name_of(path)?;
        match rustix::fs::renameat_with(
            &self.0.fd,
            name,
            &to.0.fd,
            new_name,
            rustix::fs::RenameFlags::NOREPLACE,
        ) {
            Ok(()) => Ok(true),
            Err(Errno::NOENT) => Ok(false),
            Err(e) => Err(Error::io("move", path, errno_io(e))),
        }
    }

    /// The device and inode of the entry `path` (directly in this directory, not followed),
    /// `None` when absent.
    pub fn identity(&self, path: &Path) -> Result<Option<(u64, u64)>> {
        let name = self.name_of(path)?;
        match rustix::fs::statat(&self.0.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some((st.st_dev, st.st_ino))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(Error::io("inspect", path, errno_io(e))),
        }
    }

    /// When the entry `path` (directly in this directory, not followed) last changed (its
    /// ctime: a rename sets it), `None` when absent.
    pub fn changed_at(&self, path: &Path) -> Result<Option<std::time::SystemTime>> {
        let name = self.name_of(path)?;
        match rustix::fs::statat(&self.0.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(
                std::time::UNIX_EPOCH
                    + std::time::Duration::new(
                        u64::try_from(st.st_ctime).unwrap_or(0),
                        u32::try_from(st.st_ctime_nsec).unwrap_or(0),
                    ),
            )),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(Error::io("inspect", path, errno_io(e))),
        }
    }

    /// The names in this directory (`.` and `..` left out).
    pub fn names(&self) -> Result<Vec<OsString>> {
        let d = rustix::fs::Dir::read_from(self.0.fd.as_fd())
            .map_err(|e| Error::io("read directory", &self.0.path, errno_io(e)))?;
        let mut out = Vec::new();
        for e in d {
            let e = e.map_err(|e| Error::io("read directory", &self.0.path, errno_io(e)))?;
            let name = OsStr::from_bytes(e.file_name().to_bytes());
            if name != "." && name != ".." {
                out.push(name.to_os_string());
            }
        }
        Ok(out)
    }
}

/// Removes a file inside the state root and fsyncs its directory. Absent is success.
pub fn state_remove(root: &Path, path: &Path) -> Result<()> {
    state_remove_with(root, path, Sync::Now)
}

/// [`state_remove`], durable only as `sync` says.
pub fn state_remove_with(root: &Path, path: &Path, sync: Sync) -> Result<()> {
    match state_parent(root, path, false)? {
        (Some(dir), name) => remove_in(&dir, name, sync),
        (None, _) => Ok(()),
    }
}

/// What is at `path` inside the state root, without following it: the name of its type
/// (`"regular file"`, `"directory"`, `"symlink"`, ...), `None` when it (or a directory above it)
/// does not exist. A symlinked directory above it is refused.
pub fn state_kind(root: &Path, path: &Path) -> Result<Option<&'static str>> {
    match state_parent(root, path, false)? {
        (Some(dir), name) => kind_in(&dir, name, path),
        (None, _) => Ok(None),
    }
}

/// [`state_kind`] of `name` in `dir` (`path` names it in errors).
fn kind_in(dir: &Walk, name: &OsStr, path: &Path) -> Result<Option<&'static str>> {
    match rustix::fs::statat(&dir.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(type_name(FileType::from_raw_mode(st.st_mode)))),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(Error::io("inspect", path, errno_io(e))),
    }
}

/// How many times [`state_remove_tree`] tries again when the directory filled up while it was
/// being emptied (a worker's supervisor writing `exit.json` as its child dies).
const TREE_RETRIES: usize = 7;
/// The deepest directory [`state_remove_tree`] descends into.
const TREE_DEPTH: usize = 64;

/// Removes the directory `dir` inside the state root and everything in it, relative to
/// directory fds: no symlink is followed (a symlink inside is removed itself, never its
/// target), `dir` itself must be a directory reached without symlinks, and the parent is
/// fsynced. A file that appears while the directory is being emptied (a late `exit.json`) is
/// removed by a bounded retry. Absent is success.
pub fn state_remove_tree(root: &Path, dir: &Path) -> Result<()> {
    remove_tree_racing(root, dir, Sync::Now, &mut || {})
}

/// [`state_remove_tree`], with `emptied` called after each emptying, right before the
/// directory itself is removed (where a late writer strikes; the tests write there).
fn remove_tree_racing(
    root: &Path,
    dir: &Path,
    sync: Sync,
    emptied: &mut dyn FnMut(),
) -> Result<()> {
    match state_parent(root, dir, false)? {
        (Some(parent), name) => remove_tree_in(&parent, name, dir, sync, emptied),
        (None, _) => Ok(()),
    }
}

/// [`remove_tree_racing`] of `name` in the directory `parent`, held open (`dir` names it in
/// errors).
fn remove_tree_in(
    parent: &Walk,
    name: &OsStr,
    dir: &Path,
    sync: Sync,
    emptied: &mut dyn FnMut(),
) -> Result<()> {
    for attempt in 0.. {
        let r = (|| {
            let Some(w) = parent.child(name, false)? else {
                return Ok(());
            };
            if mount_of(&w.fd, &w.path)? != mount_of(&parent.fd, &parent.path)? {
                return Err(unsafe_path(
                    dir,
                    "is a mount point (a file system is mounted there); nothing is removed through it",
                ));
            }
            clear_dir(&w, 0)?;
            emptied();
            match rustix::fs::unlinkat(&parent.fd, name, AtFlags::REMOVEDIR) {
                Ok(()) | Err(Errno::NOENT) => Ok(()),
                Err(e) => Err(Error::io("remove", dir, errno_io(e))),
            }
        })();
        match r {
            Err(Error::Io { source, .. })
                if source.raw_os_error() == Some(Errno::NOTEMPTY.raw_os_error())
                    && attempt + 1 < TREE_RETRIES =>
            {
                // 1, 2, 4 ... 32 ms (63 ms in all): a supervisor's `exit.json` lands within a
                // millisecond or two of its worker's exit, and a teardown empties many dirs.
                std::thread::sleep(std::time::Duration::from_millis(1 << attempt));
            }
            Err(e) => return Err(e),
            Ok(()) => break,
        }
    }
    match sync {
        Sync::Now => parent.sync(),
        Sync::Never => Ok(()),
    }
}

/// Empties the directory `w` (see [`state_remove_tree`]).
fn clear_dir(w: &Walk, depth: usize) -> Result<()> {
    if depth > TREE_DEPTH {
        return Err(unsafe_path(&w.path, "is nested too deep to remove"));
    }
    let mount = mount_of(&w.fd, &w.path)?;
    let d = rustix::fs::Dir::read_from(w.fd.as_fd())
        .map_err(|e| Error::io("read directory", &w.path, errno_io(e)))?;
    let mut entries = Vec::new();
    for e in d {
        let e = e.map_err(|e| Error::io("read directory", &w.path, errno_io(e)))?;
        let name = OsStr::from_bytes(e.file_name().to_bytes());
        if name != "." && name != ".." {
            entries.push((name.to_os_string(), e.file_type()));
        }
    }
    for (name, t) in entries {
        let full = w.path.join(&name);
        let t = match t {
            FileType::Unknown => {
                match rustix::fs::statat(&w.fd, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) => FileType::from_raw_mode(st.st_mode),
                    Err(Errno::NOENT) => continue,
                    Err(e) => return Err(Error::io("inspect", &full, errno_io(e))),
                }
            }
            t => t,
        };
        let flags = if t == FileType::Directory {
            // Opened without following, so a directory swapped for a symlink is not entered.
            match w.child(&name, false) {
                Ok(Some(sub)) => {
                    if mount_of(&sub.fd, &sub.path)? != mount {
                        return Err(unsafe_path(
                            &sub.path,
                            "is a mount point (a file system is mounted there); nothing is removed through it",
                        ));
                    }
                    clear_dir(&sub, depth + 1)?;
                    AtFlags::REMOVEDIR
                }
                Ok(None) => continue,
                Err(Error::UnsafePath { .. }) => AtFlags::empty(),
                Err(e) => return Err(e),
            }
        } else {
            AtFlags::empty()
        };
        match rustix::fs::unlinkat(&w.fd, name.as_os_str(), flags) {
            Ok(()) | Err(Errno::NOENT) => {}
            Err(e) => return Err(Error::io("remove", &full, errno_io(e))),
        }
    }
    Ok(())
}

/// The mount a directory held open is on: its mount id (Linux 5.8+), else its device. A bind
/// mount of the same file system has the device of the directory it is mounted in, but a
/// mount id of its own.
fn mount_of(fd: &OwnedFd, path: &Path) -> Result<(u64, u64)> {
    let st = rustix::fs::statx(
        fd,
        "",
        AtFlags::EMPTY_PATH,
        rustix::fs::StatxFlags::BASIC_STATS | rustix::fs::StatxFlags::MNT_ID,
    )
    .map_err(|e| Error::io("inspect", path, errno_io(e)))?;
    let dev = (u64::from(st.stx_dev_major) << 32) | u64::from(st.stx_dev_minor);
    let id = if rustix::fs::StatxFlags::from_bits_retain(st.stx_mask)
        .contains(rustix::fs::StatxFlags::MNT_ID)
    {
        st.stx_mnt_id
    } else {
        0
    };
    Ok((dev, id))
}

/// fsyncs a directory inside the state root. Absent is success.
pub fn state_sync_dir(root: &Path, dir: &Path) -> Result<()> {
    match state_walk(root, dir, false)? {
        Some(w) => w.sync(),
        None => Ok(()),
    }
}

/// Appends `bytes` to a file inside the state root in one write (`O_APPEND`), creating it
/// (0600) when absent.
pub fn state_append(root: &Path, path: &Path, bytes: &[u8]) -> Result<()> {
    let o = state_open(root, path, Access::AppendCreate(0o600))?
        .ok_or_else(|| Error::Internal(format!("{} not created", path.display())))?;
    (&o.file)
        .write_all(bytes)
        .map_err(|e| Error::io("append to", path, e))
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    pub name: OsString,
    pub is_file: bool,
}

/// Lists a directory inside the state root (without `.` and `..`); `None` when absent.
pub fn state_list(root: &Path, dir: &Path) -> Result<Option<Vec<DirEntry>>> {
    let Some(w) = state_walk(root, dir, false)? else {
        return Ok(None);
    };
    let d = rustix::fs::Dir::read_from(w.fd.as_fd())
        .map_err(|e| Error::io("read directory", dir, errno_io(e)))?;
    let mut out = Vec::new();
    for e in d {
        let e = e.map_err(|e| Error::io("read directory", dir, errno_io(e)))?;
        let name = OsStr::from_bytes(e.file_name().to_bytes());
        if name == "." || name == ".." {
            continue;
        }
        out.push(DirEntry {
            name: name.to_os_string(),
            is_file: e.file_type() == FileType::RegularFile,
        });
    }
    Ok(Some(out))
}

// ---- Outside any state root ----------------------------------------------------------------

/// Opens a file outside any state root: its parent is followed, the file itself is not (and
/// must be a regular file). For an audit log given by flag, the reaper's own files.
pub fn open(path: &Path, access: Access) -> Result<Option<Opened>> {
    let (dir, name) = plain_parent(path)?;
    open_in(&dir, name, access)
}

/// Reads a whole file outside any state root (see [`open`]), at most `max` bytes.
pub fn read(path: &Path, max: u64) -> Result<Option<Vec<u8>>> {
    // A missing directory means a missing file (its parent is the caller's own, followed).
    if path
        .parent()
        .is_some_and(|d| !d.as_os_str().is_empty() && !d.exists())
    {
        return Ok(None);
    }
    match open(path, Access::Read)? {
        Some(o) => read_all(o.file, path, max).map(Some),
        None => Ok(None),
    }
}

/// Writes `bytes` to `path` atomically: a temp file in the same directory, fsync, rename over
/// `path`, fsync of the directory. A crash at any instant leaves either the old or the new file.
/// For files outside a state root; under one, use [`state_write`].
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<()> {
    let (dir, name) = plain_parent(path)?;
    write_in(&dir, name, bytes, 0o600, Sync::Now)
}

/// fsyncs a directory so a rename or unlink in it is durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    Walk::anchor(dir)?.sync()
}

/// Creates `dir` (and parents) with mode 0700, outside any state root (a socket directory).
pub fn create_private_dir(dir: &Path) -> Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
        .map_err(|e| Error::io("create directory", dir, e))
}

/// Renames `from` to `to` in the same directory, outside any state root, never over an
/// existing file (`RENAME_NOREPLACE`), then fsyncs the directory. Neither name is followed if
/// it is a symlink (a rename never follows its last components). For the audit log's segments.
pub fn rename_noreplace(from: &Path, to: &Path) -> Result<()> {
    let (dir, from_name) = plain_parent(from)?;
    let to_name = to
        .file_name()
        .ok_or_else(|| unsafe_path(to, "has no file name"))?;
    let dir_of = |p: &Path| {
        p.parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf()
    };
    if dir_of(to) != dir_of(from) {
        return Err(unsafe_path(to, "is not in the same directory"));
    }
    rustix::fs::renameat_with(
        &dir.fd,
        from_name,
        &dir.fd,
        to_name,
        rustix::fs::RenameFlags::NOREPLACE,
    )
    .map_err(|e| Error::io("rename to", to, errno_io(e)))?;
    dir.sync()
}

/// Removes a file outside any state root (the file itself is not followed: an unlink never
/// is) and fsyncs its directory. Absent is success.
pub fn remove(path: &Path) -> Result<()> {
    let (dir, name) = plain_parent(path)?;
    remove_in(&dir, name, Sync::Now)
}

/// The current wall-clock time as RFC 3339 with milliseconds, UTC.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn root(d: &tempfile::TempDir) -> PathBuf {
        let r = d.path().join(".team");
        state_create_dir(&r, &r.join("teams/t")).unwrap();
        r
    }

    #[test]
    fn state_write_replaces_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let r = root(&d);
        let p = r.join("teams/t/f.json");
        state_write(&r, &p, b"one").unwrap();
        state_write(&r, &p, b"two").unwrap();
        assert_eq!(state_read(&r, &p, 10).unwrap().unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(r.join("teams/t"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "temp files left: {names:?}");
        state_remove(&r, &p).unwrap();
        state_remove(&r, &p).unwrap();
        assert_eq!(state_read(&r, &p, 10).unwrap(), None);
    }

    #[test]
    fn symlinks_anywhere_are_refused_and_targets_untouched() {
        let d = tempfile::tempdir().unwrap();
        let r = root(&d);
        let victim = d.path().join("notes");
        fs::write(&victim, b"precious").unwrap();
        // The file itself.
        let lock = r.join("locks/t.state.lock");
        state_create_dir(&r, &r.join("locks")).unwrap();
        std::os::unix::fs::symlink(&victim, &lock).unwrap();
        let e = state_open(&r, &lock, Access::ReadWriteCreate(0o600)).unwrap_err();
        assert!(matches!(e, Error::UnsafePath { .. }), "{e}");
        assert!(e.to_string().contains("t.state.lock"), "{e}");
        let e = state_append(&r, &lock, b"x").unwrap_err();
        assert_eq!(e.class().code(), 65);
        // A directory component.
        let elsewhere = d.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        fs::write(elsewhere.join("team.json"), b"precious").unwrap();
        std::os::unix::fs::symlink(&elsewhere, r.join("teams/u")).unwrap();
        let e = state_read(&r, &r.join("teams/u/team.json"), 100).unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
        let e = state_write(&r, &r.join("teams/u/team.json"), b"x").unwrap_err();
        assert_eq!(e.class().code(), 65);
        let e = state_create_dir(&r, &r.join("teams/u/tasks")).unwrap_err();
        assert_eq!(e.class().code(), 65);
        // The root itself.
        let r2 = d.path().join("team2");
        std::os::unix::fs::symlink(&elsewhere, &r2).unwrap();
        let e = state_read(&r2, &r2.join("team.json"), 100).unwrap_err();
        assert_eq!(e.class().code(), 65, "{e}");
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        assert_eq!(fs::read(elsewhere.join("team.json")).unwrap(), b"precious");
        assert!(!elsewhere.join("tasks").exists());
    }

    /// Attack on walks made one after another by one process: after a walk reached `teams/t`
    /// (and its parents), each is swapped for a symlink to elsewhere (at its own level or
    /// above, to a tree with the same names or to the moved directory itself), moved away
    /// and replaced, or removed and made again. Every later access must see what the path
    /// leads to now, with no symlink anywhere on it: a symlink is refused as on a first walk,
    /// and a write lands in the new directory, never in the one moved away.
    #[test]
    fn every_walk_sees_the_path_as_it_is_now_with_no_symlink_on_it() {
        let d = tempfile::tempdir().unwrap();
        let r = root(&d);
        let file = r.join("teams/t/team.json");
        state_write(&r, &file, b"one").unwrap();
        let elsewhere = d.path().join("elsewhere");
        fs::create_dir_all(elsewhere.join("t")).unwrap();
        fs::write(elsewhere.join("t/team.json"), b"precious").unwrap();
        fs::write(elsewhere.join("team.json"), b"precious").unwrap();

        // The team's directory becomes a symlink.
        fs::rename(r.join("teams/t"), d.path().join("old-t")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, r.join("teams/t")).unwrap();
        let e = state_read(&r, &file, 100).unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
        assert_eq!(state_write(&r, &file, b"x").unwrap_err().class().code(), 65);
        // A directory above it becomes a symlink (to a tree with the same names).
        fs::remove_file(r.join("teams/t")).unwrap();
        fs::create_dir(r.join("teams/t")).unwrap();
        state_write(&r, &file, b"two").unwrap();
        fs::rename(r.join("teams"), d.path().join("old-teams")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, r.join("teams")).unwrap();
        // `teams/t` through the symlink is `elsewhere/t`.
        let e = state_read(&r, &file, 100).unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
        assert_eq!(state_write(&r, &file, b"x").unwrap_err().class().code(), 65);
        // The same through a relative symlink, which stays below the workspace.
        fs::remove_file(r.join("teams")).unwrap();
        std::os::unix::fs::symlink("../elsewhere", r.join("teams")).unwrap();
        let e = state_read(&r, &file, 100).unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
        assert_eq!(state_write(&r, &file, b"x").unwrap_err().class().code(), 65);
        assert_eq!(
            fs::read(elsewhere.join("t/team.json")).unwrap(),
            b"precious"
        );
        assert_eq!(fs::read(elsewhere.join("team.json")).unwrap(), b"precious");

        // Moved away and replaced by a new directory: the write lands in the new one.
        fs::remove_file(r.join("teams")).unwrap();
        fs::rename(d.path().join("old-teams"), r.join("teams")).unwrap();
        assert_eq!(state_read(&r, &file, 100).unwrap().unwrap(), b"two");
        fs::rename(r.join("teams/t"), d.path().join("moved-t")).unwrap();
        fs::create_dir(r.join("teams/t")).unwrap();
        state_write(&r, &file, b"three").unwrap();
        assert_eq!(fs::read(r.join("teams/t/team.json")).unwrap(), b"three");
        assert_eq!(
            fs::read(d.path().join("moved-t/team.json")).unwrap(),
            b"two"
        );
        // Removed and made again (the inode number may be given again).
        fs::remove_dir_all(r.join("teams/t")).unwrap();
        fs::create_dir(r.join("teams/t")).unwrap();
        state_write(&r, &file, b"four").unwrap();
        assert_eq!(fs::read(r.join("teams/t/team.json")).unwrap(), b"four");
        // Moved out of the root and reached again through a symlink to it: refused, and
        // nothing is removed there.
        fs::rename(r.join("teams"), d.path().join("moved-teams")).unwrap();
        std::os::unix::fs::symlink(d.path().join("moved-teams"), r.join("teams")).unwrap();
        assert!(
            state_read(&r, &file, 100)
                .unwrap_err()
                .to_string()
                .contains("symlink")
        );
        assert_eq!(state_remove(&r, &file).unwrap_err().class().code(), 65);
        assert_eq!(
            fs::read(d.path().join("moved-teams/t/team.json")).unwrap(),
            b"four"
        );
        fs::remove_file(r.join("teams")).unwrap();
        fs::rename(d.path().join("moved-teams"), r.join("teams")).unwrap();
        // Removed: absent, not found in the removed directory.
        fs::remove_dir_all(r.join("teams/t")).unwrap();
        assert_eq!(state_read(&r, &file, 100).unwrap(), None);
    }

    #[test]
    fn fifos_devices_hard_links_and_big_files_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let r = root(&d);
        let fifo = r.join("teams/t/team.json");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let t0 = std::time::Instant::now();
        let e = state_read(&r, &fifo, 100).unwrap_err();
        assert!(t0.elapsed() < std::time::Duration::from_secs(2));
        assert!(e.to_string().contains("FIFO"), "{e}");
        let e = read(Path::new("/dev/zero"), 100).unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");

        let big = r.join("teams/t/big.json");
        let f = fs::File::create(&big).unwrap();
        f.set_len(101).unwrap();
        let e = state_read(&r, &big, 100).unwrap_err();
        assert_eq!(e.class().code(), 65, "{e}");
        assert_eq!(state_read(&r, &big, 101).unwrap().unwrap().len(), 101);

        let victim = d.path().join("victim");
        fs::write(&victim, b"precious").unwrap();
        let hl = r.join("teams/t/events.jsonl");
        fs::hard_link(&victim, &hl).unwrap();
        let e = state_append(&r, &hl, b"x").unwrap_err();
        assert!(e.to_string().contains("hard links"), "{e}");
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
    }

    #[test]
    fn a_created_file_never_replaces_nor_follows_what_is_there() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let r = root(&d);
        let dir = state_dir(&r, &r.join("teams/t"), false).unwrap().unwrap();
        let new = r.join("teams/t/worker-1.sh");
        dir.create_file(&new, b"#!/bin/sh\n", 0o700).unwrap();
        assert_eq!(fs::read(&new).unwrap(), b"#!/bin/sh\n");
        let mode = fs::metadata(&new).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        // Already there: refused, left as it was.
        let e = dir.create_file(&new, b"other", 0o700).unwrap_err();
        assert!(e.to_string().contains("worker-1.sh"), "{e}");
        assert_eq!(fs::read(&new).unwrap(), b"#!/bin/sh\n");
        // A symlink there: refused, neither followed nor replaced.
        let victim = d.path().join("victim");
        fs::write(&victim, b"precious").unwrap();
        let link = r.join("teams/t/inbox.md");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        assert!(dir.create_file(&link, b"x", 0o600).is_err());
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        // No temporary left behind.
        let names = dir.names().unwrap();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn a_read_below_a_held_dir_follows_no_symlink() {
        let d = tempfile::tempdir().unwrap();
        let r = root(&d);
        let workers = r.join("teams/t/workers");
        fs::create_dir_all(workers.join("worker-1")).unwrap();
        fs::write(workers.join("worker-1/status.json"), b"{}").unwrap();
        let dir = state_dir(&r, &workers, false).unwrap().unwrap();
        let read = |p: &Path| dir.read_below(p, 100);
        assert_eq!(
            read(&workers.join("worker-1/status.json"))
                .unwrap()
                .unwrap(),
            b"{}"
        );
        assert_eq!(read(&workers.join("worker-1/exit.json")).unwrap(), None);
        assert_eq!(read(&workers.join("worker-9/status.json")).unwrap(), None);
        // A symlinked worker directory, and a symlinked file: refused, never read through.
        let elsewhere = d.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        fs::write(elsewhere.join("status.json"), b"planted").unwrap();
        std::os::unix::fs::symlink(&elsewhere, workers.join("worker-2")).unwrap();
        let e = read(&workers.join("worker-2/status.json")).unwrap_err();
        assert_eq!(e.class().code(), 65, "{e}");
        std::os::unix::fs::symlink(
            elsewhere.join("status.json"),
            workers.join("worker-1/inbox.md"),
        )
        .unwrap();
        let e = read(&workers.join("worker-1/inbox.md")).unwrap_err();
        assert_eq!(e.class().code(), 65, "{e}");
        // Not below it.
        assert!(read(&r.join("teams/t/team.json")).is_err());
        assert!(read(&workers.join("../team.json")).is_err());
    }

    #[test]
    fn listing_and_created_dirs() {
        let d = tempfile::tempdir().unwrap();
        let r = root(&d);
        assert_eq!(state_list(&r, &r.join("teams/t/tasks")).unwrap(), None);
        state_create_dir(&r, &r.join("teams/t/tasks")).unwrap();
        state_write(&r, &r.join("teams/t/tasks/1.json"), b"{}").unwrap();
        let l = state_list(&r, &r.join("teams/t/tasks")).unwrap().unwrap();
        assert_eq!(
            l,
            vec![DirEntry {
                name: "1.json".into(),
                is_file: true
            }]
        );
        use std::os::unix::fs::PermissionsExt;
        let m = fs::metadata(r.join("teams/t/tasks")).unwrap();
        assert_eq!(m.permissions().mode() & 0o777, 0o700);
    }

    #[test]
    fn remove_tree_follows_no_symlink_and_outlasts_a_late_writer() {
        let d = tempfile::tempdir().unwrap();
        let r = root(&d);
        let victim = d.path().join("victim");
        fs::create_dir(&victim).unwrap();
        fs::write(victim.join("keep"), b"precious").unwrap();
        let w = r.join("teams/t/workers/worker-1");
        fs::create_dir_all(w.join("deep/er")).unwrap();
        fs::write(w.join("deep/er/f"), b"x").unwrap();
        fs::write(w.join("status.json"), b"{}").unwrap();
        std::os::unix::fs::symlink(&victim, w.join("link")).unwrap();
        // The supervisor's `exit.json`, written once the directory was emptied.
        let mut late = 0;
        remove_tree_racing(&r, &w, Sync::Now, &mut || {
            if late == 0 {
                fs::write(w.join("exit.json"), b"{}").unwrap();
            }
            late += 1;
        })
        .unwrap();
        assert_eq!(late, 2, "one retry");
        assert!(!w.exists());
        assert_eq!(fs::read(victim.join("keep")).unwrap(), b"precious");
        state_remove_tree(&r, &w).unwrap(); // absent: done
        // A symlinked worker dir is refused, its target untouched.
        std::os::unix::fs::symlink(&victim, &w).unwrap();
        let e = state_remove_tree(&r, &w).unwrap_err();
        assert_eq!(e.class().code(), 65, "{e}");
        assert_eq!(fs::read(victim.join("keep")).unwrap(), b"precious");
        // A writer that never stops is an error after a bounded number of tries.
        fs::remove_file(&w).unwrap();
        fs::create_dir(&w).unwrap();
        let e = remove_tree_racing(&r, &w, Sync::Now, &mut || {
            fs::write(w.join("exit.json"), b"{}").unwrap()
        })
        .unwrap_err();
        assert!(e.to_string().contains("not empty"), "{e}");
        // A directory where a file is removed stays.
        let script = r.join("teams/t/runtime/worker-1.sh");
        fs::create_dir_all(script.join("sub")).unwrap();
        assert!(state_remove(&r, &script).is_err());
        assert!(script.join("sub").is_dir());
        assert_eq!(state_kind(&r, &script).unwrap(), Some("directory"));
        assert_eq!(state_kind(&r, &r.join("teams/t/none")).unwrap(), None);
    }
}
