//! The process layer: proving that a process is ours before signalling it (docs/design.md section 3,
//! invariant 4).
//!
//! A process is identified by its pid *and* its start time (field 22 of `/proc/<pid>/stat`),
//! so a recycled pid never passes for the process that was recorded. Before any signal the
//! process is *proven*: a pidfd is opened first, then the start time, the owning uid and the
//! environment (`TEAM_OWNER`, and `TEAM_WORKER` when given) are read from `/proc`, and finally
//! the pidfd is polled. A pid cannot be reused while the process the pidfd refers to still
//! exists (even as a zombie), so if the pidfd is still unreadable (not exited) after the reads,
//! everything read from `/proc/<pid>` described the pidfd's process. Every signal then goes
//! through that pidfd, never through the bare pid: there are no process-group or broad kills.
//!
//! A zombie counts as gone: it has exited and its environment can no longer be read.
//!
//! Only Linux has pidfds; elsewhere every proof answers [`ProcVerdict::Unverifiable`] and the
//! `/proc` readers fail with an `Unsupported` I/O error.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **Process proofs** open the pidfd first, then read start time, uid and environment, then
//!   check the pidfd still runs, so the reads were about that process. An empty
//!   `/proc/<pid>/environ` (seen right after `execve`) proves nothing: `unverifiable`. Process
//!   scans read each environment once and look further only at those carrying `TEAM_OWNER=`.

use std::io;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// How long [`terminate`] waits for processes after SIGKILL.
pub const KILL_WAIT: Duration = Duration::from_secs(1);

/// One process incarnation: a pid and the start time that tells it from a later process
/// reusing the pid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ProcId {
    pub pid: u32,
    /// Start time in clock ticks after boot (field 22 of `/proc/<pid>/stat`).
    pub start_time: u64,
}

/// The answer of a proof.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum ProcVerdict {
    /// Alive, same incarnation, and its environment names our owner (and worker).
    Owned,
    /// Alive but not ours: another incarnation, another uid, or another (or no) owner id.
    NotOwned { reason: String },
    /// Exited (a zombie included), or never existed.
    Gone,
    /// Could not be decided (permission, no pidfd support, unreadable `/proc`): leave it alone.
    Unverifiable { reason: String },
}

/// A signal [`Proven::signal`] can send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sig {
    Term,
    Kill,
    Hup,
    Int,
}

/// What sending a signal did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignalOutcome {
    /// The kernel accepted the signal for the proven process.
    Sent,
    /// The process had already exited; nothing was sent.
    Gone,
}

/// What [`terminate`] did to one process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum StopOutcome {
    /// It exited within the grace period after SIGTERM.
    ExitedAfterTerm,
    /// It survived the grace period, was re-proven, and exited after SIGKILL.
    Killed,
    /// It had exited before anything was sent.
    GoneBefore,
    /// It survived SIGTERM but the re-proof failed (it exec'd with another environment, say),
    /// so it was not killed.
    NotOwnedAnymore { reason: String },
    /// It is still running (a signal failed, the re-proof was unverifiable, or it did not exit
    /// after SIGKILL).
    StillAlive { reason: String },
}

/// A process proven ours, holding the pidfd every signal goes through.
#[derive(Debug)]
pub struct Proven {
    pub id: ProcId,
    fd: OwnedFd,
    basis: Basis,
}

/// What a proof rested on, so a re-proof checks the same thing.
#[derive(Debug, Clone)]
enum Basis {
    /// The environment named our owner (and worker): only for panes' own processes, whose
    /// pane incarnation was proven first.
    Env {
        owner: String,
        worker: Option<String>,
    },
    /// Below a worker's supervisor `sup`, with no other `TEAM_INCARNATION` than the worker's
    /// and, outside the supervisor's session, no other terminal than the supervisor's (`root`:
    /// its environment, when the proof read it).
    Ancestry {
        incarnation: String,
        sup: u32,
        root: std::cell::OnceCell<crate::proctree::ProcEnv>,
    },
}

/// The result of a `/proc` scan: what matched, and how many entries could not be read
/// (unknown is not absent).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Scan<T = ProcId> {
    pub found: Vec<T>,
    pub unreadable: usize,
}

/// A process of the current user whose environment carries a `TEAM_OWNER`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamProc {
    pub id: ProcId,
    /// `TEAM_OWNER` (first occurrence, lossily decoded).
    pub owner: String,
    /// `TEAM_WORKER`.
    pub worker: Option<String>,
    /// `TEAM_NAME`.
    pub team: Option<String>,
    /// `TEAM_STATE_DIR`.
    pub state_dir: Option<PathBuf>,
    /// `TEAM_WORKSPACE`.
    pub workspace: Option<PathBuf>,
    /// The worker incarnation (from its supervisor's arguments).
    #[serde(default)]
    pub incarnation: Option<String>,
}

/// The environment variable naming the owner id of a team's processes.
pub const ENV_OWNER: &str = "TEAM_OWNER";
/// The environment variable naming a worker.
pub const ENV_WORKER: &str = "TEAM_WORKER";
/// The environment variable naming a worker's incarnation.
pub const ENV_INCARNATION: &str = "TEAM_INCARNATION";

// ---------------------------------------------------------------------------------------------
// Pure parsers.
// ---------------------------------------------------------------------------------------------

/// The fields of `/proc/<pid>/stat` after the last `)`, split on whitespace. The comm field
/// (in parentheses) may itself contain `)`, spaces and newlines, so only the last `)` is
/// trustworthy.
fn stat_fields_after_comm(stat: &[u8]) -> Option<impl Iterator<Item = &[u8]>> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = &stat[close + 1..];
    Some(
        rest.split(|b| b.is_ascii_whitespace())
            .filter(|f| !f.is_empty()),
    )
}

/// Parses the start time (field 22) from the text of `/proc/<pid>/stat`.
pub fn parse_stat_start_time(stat: &str) -> Option<u64> {
    parse_stat_bytes(stat.as_bytes()).map(|(_, start)| start)
}

/// Parses the state (field 3) and start time (field 22) of a `/proc/<pid>/stat` line.
fn parse_stat_bytes(stat: &[u8]) -> Option<(u8, u64)> {
    let mut fields = stat_fields_after_comm(stat)?;
    // Field 3 (state) is the first one after the comm; field 22 is 19 further on.
    let state = fields.next()?;
    if state.len() != 1 {
        return None;
    }
    let start = fields.nth(18)?;
    if !start.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let start = std::str::from_utf8(start).ok()?.parse().ok()?;
    Some((state[0], start))
}

/// The real uid from the text of `/proc/<pid>/status`.
fn parse_status_uid(status: &[u8]) -> Option<u32> {
    status
        .split(|&b| b == b'\n')
        .find_map(|line| line.strip_prefix(b"Uid:"))
        .and_then(|rest| {
            let first = rest
                .split(|b| b.is_ascii_whitespace())
                .find(|f| !f.is_empty())?;
            std::str::from_utf8(first).ok()?.parse().ok()
        })
}

/// Every value of `key` in a NUL-separated environment block, in order.
fn env_values<'a>(environ: &'a [u8], key: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
    environ.split(|&b| b == 0).filter_map(move |entry| {
        let rest = entry.strip_prefix(key.as_bytes())?;
        rest.strip_prefix(b"=")
    })
}

/// True when every pair's key is present and *every* occurrence of it has the given value
/// (duplicated keys with conflicting values never match).
fn environ_matches(environ: &[u8], pairs: &[(&str, &str)]) -> bool {
    pairs.iter().all(|(key, value)| {
        let mut seen = false;
        for v in env_values(environ, key) {
            if v != value.as_bytes() {
                return false;
            }
            seen = true;
        }
        seen
    })
}

/// The first value of `key`, if any.
fn env_first<'a>(environ: &'a [u8], key: &'a str) -> Option<&'a [u8]> {
    env_values(environ, key).next()
}

/// Why an environment does not match our owner (and worker), or `None` when it does.
fn env_mismatch(environ: &[u8], owner: &str, worker: Option<&str>) -> Option<String> {
    let check = |key: &str, want: &str| -> Option<String> {
        if environ_matches(environ, &[(key, want)]) {
            return None;
        }
        Some(match env_first(environ, key) {
            None => format!("its environment has no {key}"),
            Some(v) => format!(
                "its {key} is {:?}, not {want:?}",
                String::from_utf8_lossy(v)
            ),
        })
    };
    check(ENV_OWNER, owner).or_else(|| worker.and_then(|w| check(ENV_WORKER, w)))
}

/// The pairs a proof requires.
fn required_pairs<'a>(owner: &'a str, worker: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut pairs = vec![(ENV_OWNER, owner)];
    if let Some(w) = worker {
        pairs.push((ENV_WORKER, w));
    }
    pairs
}

// ---------------------------------------------------------------------------------------------
// /proc readers.
// ---------------------------------------------------------------------------------------------

fn proc_path(pid: u32, file: &str) -> PathBuf {
    PathBuf::from(format!("/proc/{pid}/{file}"))
}

/// True for the errors that mean "this process no longer exists".
fn is_gone(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
        || e.raw_os_error() == Some(rustix::io::Errno::SRCH.raw_os_error())
}

/// Reads a whole `/proc` file: an `open` and reads of 4 KiB until one returns nothing. (procfs
/// files report a size of 0, so `fs::read` adds an `fstat` and starts with 32-byte reads; a
/// teardown of many workers reads thousands of them.)
pub(crate) fn read_procfs(path: impl AsRef<std::path::Path>) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut out = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match f.read(&mut chunk) {
            Ok(0) => return Ok(out),
            Ok(n) => out.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Reads a `/proc/<pid>/<file>`; `Ok(None)` when the process is gone.
fn read_proc(pid: u32, file: &str) -> Result<Option<Vec<u8>>> {
    if !cfg!(target_os = "linux") {
        return Err(unsupported("read", pid));
    }
    let path = proc_path(pid, file);
    match read_procfs(&path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if is_gone(&e) => Ok(None),
        Err(e) => Err(Error::Process {
            op: "read",
            pid,
            what: file.to_owned(),
            source: e,
        }),
    }
}

fn unsupported(op: &'static str, pid: u32) -> Error {
    Error::Process {
        op,
        pid,
        what: "process".into(),
        source: io::Error::new(
            io::ErrorKind::Unsupported,
            "process proofs need Linux /proc and pidfds",
        ),
    }
}

fn malformed(pid: u32, file: &str) -> Error {
    Error::Process {
        op: "parse",
        pid,
        what: file.to_owned(),
        source: io::Error::new(io::ErrorKind::InvalidData, "unexpected format"),
    }
}

/// State (field 3) and start time of a process; `None` when it is gone.
fn stat_of(pid: u32) -> Result<Option<(u8, u64)>> {
    match read_proc(pid, "stat")? {
        None => Ok(None),
        Some(bytes) => parse_stat_bytes(&bytes)
            .map(Some)
            .ok_or_else(|| malformed(pid, "stat")),
    }
}

/// The start time of `pid` (clock ticks after boot); `None` when the process is gone.
/// A zombie still has a start time here; [`prove`] treats it as gone.
pub fn start_time(pid: u32) -> Result<Option<u64>> {
    Ok(stat_of(pid)?.map(|(_, start)| start))
}

/// Whether the live process of a recorded pane is still the one recorded: `Err` says why not.
/// A pid and a tmux server's pid, start second and ids can all come back after a restart
/// (tmux ids restart at `%0`, and a pid namespace can choose its next pid), but not the pane
/// process's start time in clock ticks. A record without one (`None`) has nothing to compare.
pub fn recorded_start_matches(
    pane_pid: u32,
    recorded: Option<u64>,
) -> std::result::Result<(), String> {
    let Some(want) = recorded else {
        return Ok(());
    };
    match start_time(pane_pid) {
        Ok(Some(start)) if start == want => Ok(()),
        Ok(Some(start)) => Err(format!(
            "pid_reused: pane pid {pane_pid} started at {start}, not the recorded {want}: another process has that pid"
        )),
        Ok(None) => Err(format!(
            "pane pid {pane_pid} is gone while tmux shows its pane live; judged next time"
        )),
        Err(e) => Err(format!("pane pid {pane_pid}: {e}")),
    }
}

/// The real uid of `pid`; `None` when it is gone.
fn uid_of(pid: u32) -> Result<Option<u32>> {
    match read_proc(pid, "status")? {
        None => Ok(None),
        Some(bytes) => parse_status_uid(&bytes)
            .map(Some)
            .ok_or_else(|| malformed(pid, "status")),
    }
}

/// Shells by name: typed text reaching one runs as a command.
pub const SHELL_NAMES: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "ksh93", "mksh", "pdksh", "ash", "hush", "yash", "fish",
    "rbash", "tcsh", "csh", "posh", "oksh", "loksh", "elvish", "nu", "xonsh", "pwsh", "busybox",
];

/// Terminal clients by `comm`: typed text reaching one goes to another terminal (another tmux
/// server's pane, a remote shell).
const TERMINAL_CLIENTS: &[&str] = &[
    "tmux",
    "tmux: client",
    "screen",
    "ssh",
    "mosh-client",
    "telnet",
    "rlogin",
    "su",
    "sudo",
    // `runuser --pty` runs its command on a terminal of its own and forwards the pane's keys.
    "runuser",
    "login",
    "socat",
    "nc",
    "ncat",
    "script",
];

/// Programs that run the lines they read (or may be told to: `sqlite3 .shell`, `gdb shell`,
/// `ed !cmd`, `sed e`, `awk system()`, `xargs sh -c`), whatever their arguments: none of them
/// is an agent reading its prompt from the terminal. Pagers, viewers, editors, browsers, mail
/// and file-transfer clients and database clients count too: typed text reaching one is a
/// command there, and most of them run a shell line given after `!` or `|` (`less !cmd`, `man`
/// through its pager, `vi :!cmd`, `lynx !`, `mutt !`, `ftp !`, `psql \!`, `mysql \!`). Matched
/// by `comm`, `argv[0]` and the executable's own name (`/proc/<pid>/exe`, which follows
/// Debian's alternatives: `pager` is `less`, `editor` is `vim.basic`), also without a `.suffix`
/// (`vim.basic`) or a version (`emacs-29.1`); the alternatives' own names are here too, for
/// tmux's foreground check, which sees only `argv[0]`.
pub const LINE_RUNNERS: &[&str] = &[
    // Debian's alternatives and wrappers for a pager, an editor or a browser.
    "pager",
    "sensible-pager",
    "editor",
    "sensible-editor",
    "select-editor",
    "www-browser",
    "x-www-browser",
    "sensible-browser",
    "infobrowser",
    "sqlite3",
    "sqlite",
    "duckdb",
    "gdb",
    "lldb",
    "jdb",
    "ed",
    "red",
    "ex",
    "xargs",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "sed",
    "gsed",
    "bc",
    "dc",
    "psql",
    "mysql",
    "mariadb",
    "redis-cli",
    "valkey-cli",
    "mongo",
    "mongosh",
    "cqlsh",
    "expect",
    "busybox",
    // Pagers and viewers.
    "less",
    "more",
    "most",
    "pg",
    "lv",
    "man",
    "info",
    "pinfo",
    "w3m",
    "lynx",
    "links",
    "links2",
    "elinks",
    "tig",
    // Editors.
    "vi",
    "vim",
    "nvim",
    "view",
    "vimdiff",
    "rvim",
    "rview",
    "gvim",
    "nvi",
    "elvis",
    "vile",
    "vis",
    "emacs",
    "zile",
    "jove",
    "nano",
    "pico",
    "joe",
    "jed",
    "mg",
    "micro",
    "kak",
    "hx",
    "mcedit",
    // File managers that run command lines.
    "mc",
    "ranger",
    "nnn",
    "lf",
    "vifm",
    // Mail, news and file-transfer clients.
    "mail",
    "mailx",
    "s-nail",
    "mutt",
    "neomutt",
    "alpine",
    "pine",
    "ftp",
    "sftp",
    "lftp",
    "tftp",
    // REPLs that are programs of their own (not `python -i`): whatever they run is code.
    // Debuggers of interpreted code too: `pdb3` is a script whose comm is its name.
    "pdb",
    "ipdb",
    "pudb",
    "ipython",
    "ipython3",
    "bpython",
    "ptpython",
    "pry",
    "iex",
    "erl",
    "ocaml",
    "utop",
    "swipl",
    "gforth",
    "clisp",
];

/// Whether `comm` names one of `list`: as it is, without a `.suffix` (`vim.basic`,
/// `vim.tiny`), or without a trailing version (`emacs-29.1`, `lua5.4`).
fn named_in(list: &[&str], comm: &str) -> bool {
    let base = comm.split('.').next().unwrap_or(comm);
    let unversioned = comm.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
    [comm, base, unversioned]
        .iter()
        .any(|n| !n.is_empty() && list.contains(n))
}

/// Node's options that take the next word as their value (`node --title x`), when not given
/// as `--option=value`.
const NODE_VALUE_OPTIONS: &[&[u8]] = &[
    b"-r",
    b"--require",
    b"--import",
    b"--loader",
    b"--experimental-loader",
    b"--title",
    b"-C",
    b"--conditions",
    b"--inspect-port",
    b"--debug-port",
    b"--input-type",
    b"--env-file",
    b"--env-file-if-exists",
    b"--redirect-warnings",
    b"--report-dir",
    b"--report-directory",
    b"--report-filename",
    b"--diagnostic-dir",
    b"--cpu-prof-dir",
    b"--cpu-prof-name",
    b"--heap-prof-dir",
    b"--heap-prof-name",
    b"--openssl-config",
    b"--tls-cipher-list",
    b"--tls-keylog",
    b"--icu-data-dir",
    b"--unhandled-rejections",
    b"--dns-result-order",
    b"--disable-proto",
    b"--watch-path",
    b"--secure-heap",
    b"--secure-heap-min",
    b"--max-http-header-size",
    b"--experimental-policy",
    b"--policy-integrity",
    b"--trace-event-categories",
    b"--trace-event-file-pattern",
    b"--localstorage-file",
    b"--snapshot-blob",
    b"--test-reporter",
    b"--test-reporter-destination",
    b"--test-name-pattern",
    b"--run",
];

/// Interpreters by `comm` (digits and dots trimmed: `python3.11`): reading the terminal with
/// no script file (no program, `-i`, perl's `-d`, or code given inline, which may read and run
/// lines: `perl -ne 'system $_'`), they run what is typed.
const REPLS: &[&str] = &[
    "python", "pypy", "node", "nodejs", "deno", "bun", "perl", "ruby", "irb", "php", "lua",
    "luajit", "tclsh", "wish", "R", "julia", "ghci", "guile", "racket", "sbcl", "jshell", "scala",
    "groovysh", "sqlite", "psql", "mysql", "bc", "dc", "gdb",
];

/// What reads a terminal below `root` (a worker's supervisor) and has run for at least
/// `min_age`: the pid and executable of each such process whose standard input is a terminal,
/// sorted. It changes when such a process comes of age, exits or `exec`s another program (a
/// `python3` that is a `pyenv` shim `exec`s the interpreter at the end of its start): a
/// delivery waits for it to hold still before it types, so that the terminal-reader look
/// judges what will read the text, not what was starting. Processes younger than `min_age`
/// (a worker's short-lived children) and an agent's own tools (stdin a pipe or `/dev/null`)
/// come and go without moving it. Empty when nothing can be read.
pub fn subtree_fingerprint(root: u32, min_age: std::time::Duration) -> Vec<(u32, Option<PathBuf>)> {
    let Ok(tree) = crate::proctree::Tree::subtree(root) else {
        return Vec::new();
    };
    // Start times are in clock ticks after boot (100 a second on Linux).
    let now = std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|u| u.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(u64::MAX, |secs| (secs * 100.0) as u64);
    let min_ticks = (min_age.as_millis() / 10) as u64;
    let on_tty = |pid: u32| {
        std::fs::read_link(proc_path(pid, "fd/0"))
            .is_ok_and(|t| t.starts_with("/dev/pts") || t.starts_with("/dev/tty"))
    };
    let mut v: Vec<(u32, Option<PathBuf>)> = tree
        .nodes()
        .filter(|n| {
            n.id.pid != root
                && n.state != b'Z'
                && now.saturating_sub(n.id.start_time) >= min_ticks
                && on_tty(n.id.pid)
        })
        .map(|n| {
            (
                n.id.pid,
                std::fs::read_link(proc_path(n.id.pid, "exe")).ok(),
            )
        })
        .collect();
    v.sort();
    v
}

/// A process below `root` (a worker's supervisor) that would run or forward text typed into
/// the worker's pane, reading the pane's terminal (its stdin is the supervisor's, or, for a
/// terminal client or a line runner, a descriptor it opened on it): a terminal client (a
/// nested `tmux attach`, `ssh`), a program that runs the lines it reads (`sqlite3`, a pager
/// such as `less`, an editor; [`LINE_RUNNERS`]), a shell given no script and no `-c`, or an
/// interpreter's REPL (no program, `-i`, perl's `-d`). Each process is known by its comm, its
/// `argv[0]` and its executable (`program_names`; REPLs not by the executable). Described,
/// or `None`. The same programs
/// reading another terminal or a pipe (an agent's own tools) are not reported; nor is what
/// cannot be read (the tmux-side check still sees a shell in the foreground).
pub fn terminal_reader_below(root: u32) -> Option<String> {
    let tty_of = |pid: u32| std::fs::read_link(format!("/proc/{pid}/fd/0")).ok();
    let is_tty = |t: &std::path::Path| t.starts_with("/dev/pts") || t.starts_with("/dev/tty");
    // The pane's terminal; when it cannot be read, any terminal counts.
    let pane_tty = tty_of(root).filter(|t| is_tty(t));
    let tree = crate::proctree::Tree::subtree(root).ok()?;
    for n in tree.nodes() {
        if n.id.pid == root || n.state == b'Z' {
            continue;
        }
        // What the process is, not only what it was called: its comm (the name it was run
        // by, `pager`), its `argv[0]`, and its executable's own name (`less`, through the
        // alternatives' symlinks).
        // What cannot be read (another user's process) is judged by its comm alone.
        let cmdline = read_proc(n.id.pid, "cmdline")
            .ok()
            .flatten()
            .unwrap_or_default();
        let argv: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let (names, exe) = program_names(n.id.pid, &n.comm, argv.first().copied());
        // A loader running a program in its own process (`ld.so /bin/sh`, `valgrind sh`) is
        // that program, with the arguments after it.
        let (names, first_arg) = match loaded_program(n.id.pid, exe.as_deref(), &names, &argv) {
            Some((names, at)) => (names, at + 1),
            None => (names, 1),
        };
        let exe = other_exe(exe.as_deref(), &names);
        let all: Vec<&String> = names.iter().chain(&exe).collect();
        let any = |f: &dyn Fn(&str) -> bool| all.iter().find(|n| f(n)).map(|n| n.to_string());
        let stem = |n: &str| {
            n.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.')
                .to_owned()
        };
        let client = any(&|n| TERMINAL_CLIENTS.contains(&n));
        let runner = any(&|n| named_in(LINE_RUNNERS, n));
        let shell_name = any(&|n| SHELL_NAMES.contains(&n));
        // Not by the executable: an agent written for `node` that names itself (`process.title
        // = "claude"`) keeps no arguments to tell it from a REPL.
        let repl_name = names
            .iter()
            .find(|n| REPLS.contains(&stem(n).as_str()))
            .cloned();
        // An interpreter known only by its executable (a symlink `mybot` to `tclsh` or
        // `python3`): judged like one run by its name, having no script included; but `node`
        // only on what its arguments show (`-i`, `inspect`), never for having none, since an
        // agent on Node renames itself and drops its arguments (`process.title = "claude"`).
        let exe_repl = exe
            .as_ref()
            .filter(|e| REPLS.contains(&stem(e).as_str()))
            .cloned();
        let Some(what) = client
            .clone()
            .or_else(|| runner.clone())
            .or_else(|| shell_name.clone())
            .or_else(|| repl_name.clone())
            .or_else(|| exe_repl.clone())
        else {
            continue;
        };
        let renamed = client.is_none()
            && runner.is_none()
            && shell_name.is_none()
            && repl_name.is_none()
            && exe_repl
                .as_deref()
                .is_some_and(|e| matches!(stem(e).as_str(), "node" | "nodejs"));
        let (client, runner) = (client.is_some(), runner.is_some());
        let (shell, repl) = (
            shell_name.is_some(),
            repl_name.is_some() || exe_repl.is_some(),
        );
        let perl = repl_name.as_deref().is_some_and(|n| stem(n) == "perl");
        // The name shown: the comm, and what it really is when that differs (`pager (less)`).
        let comm = if what == n.comm {
            n.comm.clone()
        } else {
            format!("{} ({what})", n.comm)
        };
        let comm = comm.as_str();
        // `/dev/tty` is the process's controlling terminal: for a process of the pane's
        // session, the pane's (`python3 - < /dev/tty`).
        let on_pane = |t: &std::path::Path| {
            t == std::path::Path::new("/dev/tty")
                || match &pane_tty {
                    Some(p) => t == p,
                    None => is_tty(t),
                }
        };
        // A pager, an editor or a terminal client reads its keys from the terminal it opens
        // itself (`/dev/tty`, a descriptor above 2) even when its input is a pipe (`git log |
        // less`, `cat f | less`).
        // A shell or an interpreter can read its program from the terminal through a
        // descriptor of its own too (`sh /dev/tty < /dev/null`, `sh /dev/fd/5 5<&0`).
        let reads_pane =
            tty_of(n.id.pid).is_some_and(|t| on_pane(&t)) || opened_terminal(n.id.pid, &on_pane);
        if !reads_pane {
            continue;
        }
        if client {
            return Some(format!("{comm} (pid {}) forwards what is typed", n.id.pid));
        }
        if runner {
            return Some(format!(
                "{comm} (pid {}) reads the pane's terminal and can run what it reads",
                n.id.pid
            ));
        }
        let args: Vec<&[u8]> = argv
            .iter()
            .skip(first_arg)
            .copied()
            .filter(|a| !a.is_empty())
            .collect();
        let flag = |a: &&[u8]| a.starts_with(b"-") || a.starts_with(b"+");
        // A script that is the terminal itself (`sh /dev/stdin`, `/dev/tty`, `/proc/self/fd/0`)
        // is no script.
        // A descriptor by path is the terminal when it leads to one (`/dev/fd/5`, `/proc/self/
        // fd/7`); the startup script comes as `/bin/sh /dev/fd/9`, a file.
        let pid = n.id.pid;
        let terminal_path = |a: &[u8]| {
            let a = String::from_utf8_lossy(a);
            let fd_link = if let Some(fd) = a.strip_prefix("/dev/fd/") {
                Some(proc_path(pid, "fd").join(fd))
            } else if let Some(rest) = a.strip_prefix("/proc/")
                && let Some((who, fd)) = rest.split_once("/fd/")
            {
                let who = if who == "self" || who == "thread-self" {
                    pid.to_string()
                } else {
                    who.to_string()
                };
                Some(std::path::PathBuf::from(format!("/proc/{who}/fd/{fd}")))
            } else {
                None
            };
            matches!(a.as_ref(), "/dev/stdin" | "/dev/tty" | "-")
                || fd_link.is_some_and(|l| std::fs::read_link(l).is_ok_and(|t| is_tty(&t)))
        };
        // A module or subcommand that is a REPL or a debugger reading the terminal:
        // `python3 -m pdb x.py`, `-mcode`, `-m asyncio`, `node inspect x.js`.
        let debugger = |m: &[u8]| {
            matches!(
                m,
                b"pdb"
                    | b"ipdb"
                    | b"pudb"
                    | b"code"
                    | b"asyncio"
                    | b"IPython"
                    | b"ptpython"
                    | b"bpython"
                    | b"idlelib"
                    | b"inspect"
                    | b"debug"
                    // These run code given in their arguments, which can be a REPL
                    // (`-m timeit 'import code; code.interact()'`, `-m trace --module code`).
                    | b"timeit"
                    | b"trace"
                    | b"profile"
                    | b"cProfile"
                    | b"pstats"
                    // `-m runpy code` runs the module it is given.
                    | b"runpy"
            )
        };
        let node = repl_name
            .as_deref()
            .or(exe_repl.as_deref())
            .is_some_and(|n| matches!(stem(n).as_str(), "node" | "nodejs"));
        // Python's short options cluster (`-Bm code`, `-Im asyncio`, `-ui`): see `clustered`.
        let python = repl_name
            .as_deref()
            .or(exe_repl.as_deref())
            .is_some_and(|n| matches!(stem(n).as_str(), "python" | "pypy"));
        // An interpreter's inline code (`-c`, `-e`, php's `-r`, `-ne`): the next word is code.
        let inline_flag = |a: &[u8]| {
            matches!(a, b"-c" | b"-e" | b"-E" | b"-r" | b"--eval" | b"-p")
                || (a.starts_with(b"-")
                    && !a.starts_with(b"--")
                    && a.len() > 2
                    && a.ends_with(b"e")
                    && a[1..].iter().all(u8::is_ascii_alphabetic))
        };
        // An option of the interpreter's own that takes the next word as its value
        // (`python3 -W ignore`, `node --title x`): that word is no script.
        let takes_value = |a: &[u8]| {
            (python && matches!(a, b"-W" | b"-X" | b"--check-hash-based-pycs"))
                || (node && NODE_VALUE_OPTIONS.contains(&a))
        };
        // Whether `a` names a regular file, from the process's own directory.
        let is_file = |a: &[u8]| {
            let a = std::path::PathBuf::from(
                <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(a),
            );
            let full = if a.is_absolute() {
                a
            } else {
                proc_path(n.id.pid, "cwd").join(a)
            };
            std::fs::metadata(full).is_ok_and(|m| m.is_file())
        };
        // The script an interpreter runs: its first word that is neither an option, nor an
        // option's value, nor inline code, and names a file that is there. A word that names
        // no file is no script (the value of an option not listed in `takes_value`): an
        // interpreter given none reads its program from the terminal. `None` too for a module
        // (`-m`, judged below) and for whatever is not an interpreter.
        let script: Option<usize> = if repl {
            let mut skip = false;
            let mut found = None;
            for (k, a) in args.iter().enumerate() {
                if std::mem::take(&mut skip) {
                    continue;
                }
                if *a == b"-m" {
                    break;
                }
                if inline_flag(a) || takes_value(a) {
                    skip = true;
                    continue;
                }
                if !flag(a) && !terminal_path(a) && is_file(a) {
                    found = Some(k);
                    break;
                }
            }
            found
        } else {
            None
        };
        // An interpreter running a script that is one of those programs (`python3 /usr/bin/pdb3`
        // through `#!/usr/bin/env python3`).
        // (The script's own name, and the name of the file it leads to through symlinks:
        // `./codex` linked to `/usr/bin/pdb3`.)
        let runs_runner = repl
            && script.and_then(|k| args.get(k)).is_some_and(|a| {
                let a = String::from_utf8_lossy(a).into_owned();
                let path = std::path::Path::new(&a);
                let full = if path.is_absolute() {
                    path.to_path_buf()
                } else {
                    proc_path(n.id.pid, "cwd").join(path)
                };
                let real = std::fs::canonicalize(&full).ok();
                std::iter::once(path.to_path_buf()).chain(real).any(|p| {
                    let name = p
                        .file_name()
                        .map(|f| f.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let stem = name.trim_end_matches(".py");
                    named_in(LINE_RUNNERS, stem) || debugger(stem.as_bytes())
                })
            });
        // Python's short options cluster (`-Bm code`, `-Im asyncio`, `-ui`): `i` anywhere
        // before an option that takes a value, and `m` with its module (the rest of the word,
        // else the next one).
        // Only Python's own options: those before the script (or `-c`/`-m`'s value).
        let script_at = script.unwrap_or_else(|| {
            args.iter()
                .position(|a| !flag(a) && !terminal_path(a))
                .unwrap_or(args.len())
        });
        let clustered = |k: usize, a: &[u8]| {
            if !python
                || k >= script_at
                || !a.starts_with(b"-")
                || a.starts_with(b"--")
                || a.len() < 2
            {
                return false;
            }
            for (p, c) in a[1..].iter().enumerate() {
                match c {
                    b'i' => return true,
                    b'm' => {
                        let rest = &a[p + 2..];
                        return if rest.is_empty() {
                            args.get(k + 1).is_some_and(|m| debugger(m))
                        } else {
                            debugger(rest)
                        };
                    }
                    // These take a value: the rest of the word is it.
                    b'c' | b'W' | b'X' | b'Q' => return false,
                    _ => {}
                }
            }
            false
        };
        // `PYTHONINSPECT` set: Python reads the terminal once its script ends.
        let inspect_env = python
            && read_proc(n.id.pid, "environ")
                .ok()
                .flatten()
                .is_some_and(|env| env_values(&env, "PYTHONINSPECT").any(|v| !v.is_empty()));
        // An interpreter's own options come before its script; the words after it are the
        // script's (Gemini CLI relaunches itself as `node --max-old-space-size=N gemini -i
        // '<prompt>'`, whose `-i` is Gemini's).
        let own = |k: usize| !repl || script.is_none_or(|s| k < s);
        // `PERL5OPT=-d`: perl takes options from the environment too, the debugger among them.
        let perl_debug_env = perl
            && read_proc(n.id.pid, "environ")
                .ok()
                .flatten()
                .is_some_and(|env| {
                    env_values(&env, "PERL5OPT").any(|v| {
                        v.split(|b| b.is_ascii_whitespace())
                            .any(|w| w.starts_with(b"-d"))
                    })
                });
        let interactive = runs_runner
            || inspect_env
            || perl_debug_env
            || args
                .iter()
                .enumerate()
                .filter(|(k, _)| own(*k))
                .any(|(k, a)| {
                    matches!(*a, b"-i" | b"--interactive" | b"repl")
                        || (perl && a.starts_with(b"-d"))
                        || (repl && *a == b"-m" && args.get(k + 1).is_some_and(|m| debugger(m)))
                        || (repl
                            && a.strip_prefix(b"-m")
                                .is_some_and(|m| !m.is_empty() && debugger(m)))
                        || clustered(k, a)
                        || (node && k == 0 && matches!(*a, b"inspect" | b"debug"))
                });
        // A shell's options that take an argument (`-o vi`, `--rcfile f`): that argument is
        // no script.
        let mut given_code = false;
        let mut skip = false;
        for (k, a) in args.iter().enumerate() {
            if std::mem::take(&mut skip) {
                continue;
            }
            if shell
                && matches!(
                    *a,
                    b"-o" | b"+o" | b"-O" | b"+O" | b"--rcfile" | b"--init-file"
                )
            {
                skip = true;
                continue;
            }
            // An interpreter's inline code is no script file: it may read the terminal and run
            // what it reads. A module (`python3 -m aider`) is a program of its own.
            if repl {
                if *a == b"-m" {
                    given_code = true;
                    break;
                }
                if inline_flag(a) {
                    skip = true;
                    continue;
                }
                // Its script is the one found above; any other word is an option or its value.
                if script == Some(k) {
                    given_code = true;
                    break;
                }
                continue;
            }
            if (!flag(a) && !terminal_path(a))
                || (shell && a.starts_with(b"-") && !a.starts_with(b"--") && a.contains(&b'c'))
            {
                given_code = true;
                break;
            }
        }
        // A shell given its code with `-c` that runs no program of its own right now is
        // reading the terminal itself (`sh -c 'while read x; do eval "$x"; done'`); one that
        // waits for a child (`bash -lc agent`) is a wrapper.
        let inline_shell = shell
            && args
                .iter()
                .any(|a| a.starts_with(b"-") && !a.starts_with(b"--") && a.contains(&b'c'));
        if interactive
            || (!renamed && (!given_code || (inline_shell && !waits_for_child(&tree, n.id.pid))))
        {
            return Some(format!(
                "{comm} (pid {}) reads {} from the pane's terminal",
                n.id.pid,
                if shell { "commands" } else { "code" }
            ));
        }
    }
    None
}

/// Whether the shell `pid` waits for a program of its own (a wrapper, `bash -lc agent`), not
/// only has one: a shell that started a child in the background and reads the terminal itself
/// (`sh -c 'sleep 1000 & while read x; do eval "$x"; done'`) has a live child too. The kernel
/// says where the process sleeps (`/proc/<pid>/wchan`): `do_wait` is a wait for a child. When
/// that cannot be read, a live child is taken for a wait.
fn waits_for_child(tree: &crate::proctree::Tree, pid: u32) -> bool {
    if !tree.has_live_child(pid) {
        return false;
    }
    match std::fs::read_to_string(proc_path(pid, "wchan")) {
        Ok(w) if !w.trim().is_empty() && w.trim() != "0" => w.trim() == "do_wait",
        _ => true,
    }
}

/// The names a process goes by: its `comm` and the last component of its `argv[0]` (without a
/// login shell's `-`); and, apart, the last component of its executable (`/proc/<pid>/exe`:
/// the file the alternatives' symlinks lead to, `/usr/bin/pager` being `/usr/bin/less`), when
/// it can be read. See [`other_exe`] for when the executable says more than the names.
fn program_names(pid: u32, comm: &str, arg0: Option<&[u8]>) -> (Vec<String>, Option<String>) {
    let base = |p: &str| p.rsplit('/').next().unwrap_or(p).to_owned();
    let mut names = vec![comm.to_owned()];
    if let Some(arg0) = arg0 {
        let arg0 = base(&String::from_utf8_lossy(arg0));
        let arg0 = arg0.strip_prefix('-').unwrap_or(&arg0);
        if !arg0.is_empty() && arg0 != comm {
            names.push(arg0.to_owned());
        }
    }
    let exe = std::fs::read_link(proc_path(pid, "exe"))
        .ok()
        .map(|exe| {
            let exe = exe.to_string_lossy();
            base(exe.strip_suffix(" (deleted)").unwrap_or(&exe))
        })
        .filter(|e| !e.is_empty());
    (names, exe)
}

/// The executable's name when it is another than `names`; a multi-call binary's (`busybox`)
/// says nothing of the applet it runs, so it is left out.
fn other_exe(exe: Option<&str>, names: &[String]) -> Option<String> {
    exe.filter(|e| !names.iter().any(|n| n == e) && !matches!(*e, "busybox" | "toybox"))
        .map(str::to_owned)
}

/// Programs that load another program and run it in their own process, so that its comm,
/// `argv[0]` and executable name the loader, not what it runs: the dynamic loader (`ld.so
/// /bin/sh -i`), valgrind's tools (`valgrind sh`: the process is `memcheck-amd64-linux` with
/// `argv[0]` `valgrind.bin`) and qemu's user-mode emulators (`qemu-x86_64 /bin/sh`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loader {
    Ld,
    Valgrind,
    Qemu,
}

impl Loader {
    /// The loader one of `names` is, if any.
    fn of<'a>(mut names: impl Iterator<Item = &'a str>) -> Option<Loader> {
        const VALGRIND_TOOLS: &[&str] = &[
            "memcheck",
            "cachegrind",
            "callgrind",
            "helgrind",
            "drd",
            "massif",
            "dhat",
            "lackey",
            "none",
            "exp",
        ];
        const QEMU_ARCHES: &[&str] = &[
            "x86_64",
            "i386",
            "aarch64",
            "aarch64_be",
            "arm",
            "armeb",
            "riscv32",
            "riscv64",
            "ppc",
            "ppc64",
            "ppc64le",
            "mips",
            "mipsel",
            "mips64",
            "mips64el",
            "mipsn32",
            "mipsn32el",
            "s390x",
            "sparc",
            "sparc32plus",
            "sparc64",
            "m68k",
            "alpha",
            "hppa",
            "loongarch64",
            "microblaze",
            "microblazeel",
            "or1k",
            "sh4",
            "sh4eb",
            "xtensa",
            "xtensaeb",
            "hexagon",
            "cris",
            "nios2",
        ];
        const VALGRIND_ARCHES: &[&str] = &[
            "amd64", "x86", "arm64", "arm", "ppc64le", "ppc64be", "ppc32", "s390x", "mips32",
            "mips64", "nanomips", "riscv64",
        ];
        names.find_map(|n| {
            let mut parts = n.split('-');
            let (first, second) = (parts.next()?, parts.next());
            if n.starts_with("ld-linux") || n.starts_with("ld-musl") || n == "ld.so" {
                Some(Loader::Ld)
            } else if n.starts_with("valgrind")
                || (VALGRIND_TOOLS.contains(&first)
                    && second.is_some_and(|a| VALGRIND_ARCHES.contains(&a)))
            {
                Some(Loader::Valgrind)
            } else {
                let arch = n.strip_prefix("qemu-")?;
                let arch = arch.strip_suffix("-static").unwrap_or(arch);
                QEMU_ARCHES.contains(&arch).then_some(Loader::Qemu)
            }
        })
    }

    /// Whether `opt` (one of this loader's options) takes the next argument as its value.
    fn takes_value(self, opt: &[u8]) -> bool {
        match self {
            Loader::Ld => matches!(
                opt,
                b"--library-path"
                    | b"--inhibit-rpath"
                    | b"--audit"
                    | b"--preload"
                    | b"--argv0"
                    | b"--glibc-hwcaps-prefix"
                    | b"--glibc-hwcaps-mask"
            ),
            // Every valgrind option carries its value after `=`.
            Loader::Valgrind => false,
            Loader::Qemu => {
                // `--cpu` as `-cpu`.
                let o = if opt.starts_with(b"--") {
                    &opt[1..]
                } else {
                    opt
                };
                matches!(
                    o,
                    b"-L"
                        | b"-E"
                        | b"-U"
                        | b"-0"
                        | b"-cpu"
                        | b"-g"
                        | b"-d"
                        | b"-D"
                        | b"-R"
                        | b"-s"
                        | b"-B"
                        | b"-p"
                        | b"-seed"
                        | b"-trace"
                        | b"-plugin"
                        | b"-dfilter"
                )
            }
        }
    }
}

/// When `pid`'s executable (`exe`, its last component) is a [`Loader`], the names of the
/// program it runs (the last component of the path its arguments give, and of the file that
/// path leads to through symlinks) added to `names`, and that argument's index in `argv`; loaders running loaders
/// are followed. Known by the executable alone (`/proc/<pid>/exe`), never by a name the
/// process chose (`exec -a valgrind sh -i x` stays a shell); the names it had are kept, so
/// naming a loader's program after a harmless one hides nothing either. `None` for any other
/// process.
fn loaded_program(
    pid: u32,
    exe: Option<&str>,
    names: &[String],
    argv: &[&[u8]],
) -> Option<(Vec<String>, usize)> {
    let mut kind = Loader::of(std::iter::once(exe?))?;
    let mut i = 1;
    for _ in 0..4 {
        // The loader's own options, then the program.
        while let Some(a) = argv.get(i) {
            if a.starts_with(b"-") && a.len() > 1 {
                i += if kind.takes_value(a) { 2 } else { 1 };
            } else {
                break;
            }
        }
        let program = String::from_utf8_lossy(argv.get(i).filter(|a| !a.is_empty())?).into_owned();
        let path = std::path::Path::new(&program);
        let full = if path.is_absolute() {
            path.to_path_buf()
        } else {
            proc_path(pid, "cwd").join(path)
        };
        let mut found: Vec<String> = std::iter::once(path.to_path_buf())
            .chain(std::fs::canonicalize(&full).ok())
            .filter_map(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
            .collect();
        found.dedup();
        match Loader::of(found.iter().map(String::as_str)) {
            Some(next) => {
                kind = next;
                i += 1;
            }
            None => {
                let mut all = names.to_vec();
                all.extend(found.into_iter().filter(|f| !names.contains(f)));
                return Some((all, i));
            }
        }
    }
    None
}

/// Whether `pid` holds a descriptor above 2 on a terminal `on_pane` accepts: one it opened
/// itself (`/dev/tty`) to read keys from, whatever its standard input.
fn opened_terminal(pid: u32, on_pane: &dyn Fn(&std::path::Path) -> bool) -> bool {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    dir.filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
                .is_some_and(|n| n > 2)
        })
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .any(|t| on_pane(&t))
}

/// Whether `/proc/<pid>/environ` carries every `KEY=value` of `pairs` (duplicated keys must all
/// carry the value). `None` when the process is gone. A zombie's environment reads as empty.
/// A permission error is returned as an error: the caller treats it as unverifiable.
pub fn environ_has(pid: u32, pairs: &[(&str, &str)]) -> Result<Option<bool>> {
    Ok(read_proc(pid, "environ")?.map(|env| environ_matches(&env, pairs)))
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`): start times only compare within a boot.
pub fn boot_id() -> Result<String> {
    let path = PathBuf::from("/proc/sys/kernel/random/boot_id");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io("read", &path, e))?;
    Ok(text.trim().to_owned())
}

fn our_uid() -> u32 {
    rustix::process::getuid().as_raw()
}

fn our_pid() -> u32 {
    std::process::id()
}

/// Checks that `/proc` is a procfs of our own pid namespace (`/proc/self` names our pid), so
/// `/proc/<pid>` and pidfds speak of the same processes.
fn check_procfs() -> Result<()> {
    let me = our_pid();
    let path = PathBuf::from("/proc/self");
    let target = std::fs::read_link(&path).map_err(|e| Error::io("read link", &path, e))?;
    if target.as_os_str() == me.to_string().as_str() {
        return Ok(());
    }
    Err(Error::Process {
        op: "check",
        pid: me,
        what: "/proc".into(),
        source: io::Error::other(format!(
            "/proc/self is {}, not {me}: /proc belongs to another pid namespace",
            target.display()
        )),
    })
}

// ---------------------------------------------------------------------------------------------
// pidfds (Linux only).
// ---------------------------------------------------------------------------------------------

#[cfg(target_os = "linux")]
mod sys {
    use std::io;
    use std::os::fd::{BorrowedFd, OwnedFd};
    use std::time::{Duration, Instant};

    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use rustix::io::Errno;
    use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};

    use super::Sig;

    pub const SUPPORTED: bool = true;

    pub enum Open {
        Fd(OwnedFd),
        Gone,
        Failed(io::Error),
    }

    pub fn open(pid: u32) -> Open {
        let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
            return Open::Gone;
        };
        match pidfd_open(p, PidfdFlags::empty()) {
            Ok(fd) => Open::Fd(fd),
            Err(Errno::SRCH) => Open::Gone,
            Err(e) => Open::Failed(e.into()),
        }
    }

    pub fn send(fd: BorrowedFd<'_>, sig: Sig) -> io::Result<bool> {
        let sig = match sig {
            Sig::Term => Signal::TERM,
            Sig::Kill => Signal::KILL,
            Sig::Hup => Signal::HUP,
            Sig::Int => Signal::INT,
        };
        match pidfd_send_signal(fd, sig) {
            Ok(()) => Ok(true),
            Err(Errno::SRCH) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Polls `fds` until every one has exited (readable) or `deadline` passes. Returns which
    /// have exited. Poll errors other than EINTR count as "not known to have exited".
    pub fn wait_exited(fds: &[BorrowedFd<'_>], deadline: Instant) -> Vec<bool> {
        let mut exited = vec![false; fds.len()];
        loop {
            let pending: Vec<usize> = (0..fds.len()).filter(|&i| !exited[i]).collect();
            if pending.is_empty() {
                return exited;
            }
            let mut pfds: Vec<PollFd<'_>> = pending
                .iter()
                .map(|&i| PollFd::from_borrowed_fd(fds[i], PollFlags::IN))
                .collect();
            let remaining = deadline.saturating_duration_since(Instant::now());
            let timeout = Timespec::try_from(remaining).unwrap_or(Timespec {
                tv_sec: i64::from(i32::MAX / 1000),
                tv_nsec: 0,
            });
            match poll(&mut pfds, Some(&timeout)) {
                Ok(_) => {}
                Err(Errno::INTR) => continue,
                Err(_) => return exited,
            }
            for (pfd, &i) in pfds.iter().zip(&pending) {
                let r = pfd.revents();
                if r.intersects(PollFlags::IN | PollFlags::HUP) {
                    exited[i] = true;
                } else if r.intersects(PollFlags::ERR | PollFlags::NVAL) {
                    // Not a usable pidfd: we cannot say it exited, and waiting on it is futile.
                    return exited;
                }
            }
            if Instant::now() >= deadline {
                return exited;
            }
        }
    }

    pub fn exited(fd: BorrowedFd<'_>) -> bool {
        wait_exited(&[fd], Instant::now())[0]
    }

    pub fn wait_one(fd: BorrowedFd<'_>, timeout: Duration) -> bool {
        wait_exited(&[fd], super::deadline_after(timeout))[0]
    }
}

#[cfg(not(target_os = "linux"))]
mod sys {
    use std::io;
    use std::os::fd::{BorrowedFd, OwnedFd};
    use std::time::{Duration, Instant};

    use super::Sig;

    pub const SUPPORTED: bool = false;

    #[allow(dead_code)]
    pub enum Open {
        Fd(OwnedFd),
        Gone,
        Failed(io::Error),
    }

    pub fn open(_pid: u32) -> Open {
        Open::Failed(io::Error::new(
            io::ErrorKind::Unsupported,
            "pidfds need Linux",
        ))
    }

    pub fn send(_fd: BorrowedFd<'_>, _sig: Sig) -> io::Result<bool> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "pidfds need Linux",
        ))
    }

    pub fn wait_exited(fds: &[BorrowedFd<'_>], _deadline: Instant) -> Vec<bool> {
        vec![false; fds.len()]
    }

    pub fn exited(_fd: BorrowedFd<'_>) -> bool {
        false
    }

    pub fn wait_one(_fd: BorrowedFd<'_>, _timeout: Duration) -> bool {
        false
    }
}

// ---------------------------------------------------------------------------------------------
// Proofs.
// ---------------------------------------------------------------------------------------------

fn unverifiable(reason: impl Into<String>) -> ProcVerdict {
    ProcVerdict::Unverifiable {
        reason: reason.into(),
    }
}

fn not_owned(reason: impl Into<String>) -> ProcVerdict {
    ProcVerdict::NotOwned {
        reason: reason.into(),
    }
}

/// Checks the process behind an open pidfd against `/proc/<pid>`. Returns the verdict and the
/// start time observed (when the process was found).
fn verify(
    fd: std::os::fd::BorrowedFd<'_>,
    pid: u32,
    expected_start: Option<u64>,
    owner: &str,
    worker: Option<&str>,
) -> (ProcVerdict, Option<u64>) {
    let (verdict, start) = verify_proc(pid, expected_start, owner, worker);
    // The pid cannot have been reused while the pidfd's process exists; if it still has not
    // exited now, everything read above was about it. If it has, it is gone (zombies too).
    if sys::exited(fd) {
        return (ProcVerdict::Gone, start);
    }
    if verdict == ProcVerdict::Gone {
        // /proc says gone (or zombie) but the pidfd says running: a zombie thread-group leader
        // whose other threads live on, or a /proc that hides the pid. Unknown is not absent.
        return (
            unverifiable(format!(
                "/proc says pid {pid} is gone or a zombie, but its pidfd says it still runs"
            )),
            start,
        );
    }
    (verdict, start)
}

/// Why an empty environment proves nothing. Right after `execve` the kernel has switched to the
/// new memory map before it records where the new environment lives, and in that window
/// `/proc/<pid>/environ` reads as empty: a process we just started can look environment-less.
const EMPTY_ENVIRON: &str = "pid {pid} shows an empty environment (mid-exec, or started with none)";

fn verify_proc(
    pid: u32,
    expected_start: Option<u64>,
    owner: &str,
    worker: Option<&str>,
) -> (ProcVerdict, Option<u64>) {
    let (state, start) = match stat_of(pid) {
        Ok(Some(s)) => s,
        Ok(None) => return (ProcVerdict::Gone, None),
        Err(e) => return (unverifiable(e.to_string()), None),
    };
    if matches!(state, b'Z' | b'X' | b'x') {
        return (ProcVerdict::Gone, Some(start));
    }
    if let Some(want) = expected_start
        && want != start
    {
        return (
            not_owned(format!(
                "pid {pid} has start time {start}, not the recorded {want}: another process reuses the pid"
            )),
            Some(start),
        );
    }
    match uid_of(pid) {
        Ok(Some(uid)) if uid == our_uid() => {}
        Ok(Some(uid)) => {
            return (
                not_owned(format!("pid {pid} belongs to uid {uid}")),
                Some(start),
            );
        }
        Ok(None) => return (ProcVerdict::Gone, Some(start)),
        Err(e) => return (unverifiable(e.to_string()), Some(start)),
    }
    let environ = match read_proc(pid, "environ") {
        Ok(Some(env)) => env,
        Ok(None) => return (ProcVerdict::Gone, Some(start)),
        Err(e) => return (unverifiable(e.to_string()), Some(start)),
    };
    if environ.is_empty() {
        return (
            unverifiable(EMPTY_ENVIRON.replace("{pid}", &pid.to_string())),
            Some(start),
        );
    }
    match env_mismatch(&environ, owner, worker) {
        None => (ProcVerdict::Owned, Some(start)),
        Some(why) => (not_owned(format!("pid {pid}: {why}")), Some(start)),
    }
}

/// Proves that `pid` is a process of ours: opens its pidfd first, then checks its start time
/// (equal to `expected_start` when given), its uid (ours), and its environment
/// (`TEAM_OWNER=<owner>`, and `TEAM_WORKER=<worker>` when given). Only an `Owned` verdict comes
/// with a [`Proven`] handle; nothing else may be signalled.
pub fn prove(
    pid: u32,
    expected_start: Option<u64>,
    owner: &str,
    worker: Option<&str>,
) -> (ProcVerdict, Option<Proven>) {
    if !sys::SUPPORTED {
        return (
            unverifiable("process proofs need Linux pidfds and /proc"),
            None,
        );
    }
    if pid == 0 || i32::try_from(pid).is_err() {
        return (unverifiable(format!("{pid} is not a valid pid")), None);
    }
    if pid == our_pid() {
        return (not_owned(format!("pid {pid} is this process itself")), None);
    }
    if owner.is_empty() {
        return (not_owned("no owner id to prove against"), None);
    }
    if let Err(e) = check_procfs() {
        return (unverifiable(e.to_string()), None);
    }
    let fd = match sys::open(pid) {
        sys::Open::Fd(fd) => fd,
        sys::Open::Gone => return (ProcVerdict::Gone, None),
        sys::Open::Failed(e) => {
            return (unverifiable(format!("pidfd_open({pid}): {e}")), None);
        }
    };
    use std::os::fd::AsFd;
    let (verdict, start) = verify(fd.as_fd(), pid, expected_start, owner, worker);
    match (verdict, start) {
        (ProcVerdict::Owned, Some(start_time)) => (
            ProcVerdict::Owned,
            Some(Proven {
                id: ProcId { pid, start_time },
                fd,
                basis: Basis::Env {
                    owner: owner.to_owned(),
                    worker: worker.map(str::to_owned),
                },
            }),
        ),
        (ProcVerdict::Owned, None) => (unverifiable("no start time"), None),
        (v, _) => (v, None),
    }
}

impl Proven {
    /// Sends `sig` through the pidfd. `Gone` when the process has already exited (a zombie
    /// included), in which case nothing is sent.
    pub fn signal(&self, sig: Sig) -> Result<SignalOutcome> {
        use std::os::fd::AsFd;
        if sys::exited(self.fd.as_fd()) {
            return Ok(SignalOutcome::Gone);
        }
        match sys::send(self.fd.as_fd(), sig) {
            Ok(true) => Ok(SignalOutcome::Sent),
            Ok(false) => Ok(SignalOutcome::Gone),
            Err(e) => Err(Error::Process {
                op: "signal",
                pid: self.id.pid,
                what: format!("{sig:?}"),
                source: e,
            }),
        }
    }

    /// Waits up to `timeout` for the process to exit, by polling its pidfd (readable means
    /// exited). True when it has exited.
    pub fn wait_exit(&self, timeout: Duration) -> bool {
        use std::os::fd::AsFd;
        sys::wait_one(self.fd.as_fd(), timeout)
    }

    /// True while the process has not exited (a zombie has exited).
    pub fn is_alive(&self) -> bool {
        use std::os::fd::AsFd;
        !sys::exited(self.fd.as_fd())
    }

    /// Repeats the proof through the same pidfd: same start time, still our uid, and an
    /// environment still naming the same owner and worker (a process may exec with another).
    pub fn reprove(&self) -> ProcVerdict {
        use std::os::fd::AsFd;
        match &self.basis {
            Basis::Env { owner, worker } => {
                verify(
                    self.fd.as_fd(),
                    self.id.pid,
                    Some(self.id.start_time),
                    owner,
                    worker.as_deref(),
                )
                .0
            }
            // Ancestry cannot be gained by a foreign process (a process only ever moves up to
            // a reaper), and the pidfd pins the process: re-check what it could have changed
            // by exec'ing (its name, its token).
            Basis::Ancestry {
                incarnation,
                sup,
                root,
            } => {
                let origin = Origin {
                    sup: *sup,
                    root,
                    reprove: true,
                };
                let v = verify_member(self.id.pid, self.id.start_time, incarnation, &origin);
                if sys::exited(self.fd.as_fd()) {
                    ProcVerdict::Gone
                } else {
                    v
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Proofs by ancestry.
// ---------------------------------------------------------------------------------------------

/// The real uid of `pid`; `None` when it is gone.
pub fn uid(pid: u32) -> Result<Option<u32>> {
    uid_of(pid)
}

/// The value of `key` (a `TEAM_*` token) in a process's environment. Conflicting duplicates
/// read as a value no worker has.
pub fn env_token(pid: u32, key: &str) -> crate::proctree::EnvToken {
    match read_proc(pid, "environ") {
        Ok(Some(env)) => token_in(&env, key),
        _ => crate::proctree::EnvToken::Unreadable,
    }
}

/// The value of `key` in an environment block read from `/proc` (see [`env_token`]).
fn token_in(env: &[u8], key: &str) -> crate::proctree::EnvToken {
    use crate::proctree::EnvToken;
    let mut vals = env_values(env, key);
    let Some(first) = vals.next() else {
        return EnvToken::Absent;
    };
    if vals.any(|v| v != first) {
        return EnvToken::Is("<conflicting duplicates>".into());
    }
    EnvToken::Is(String::from_utf8_lossy(first).into_owned())
}

/// `TEAM_INCARNATION`, `TMUX` and `TMUX_PANE` of a process, from one read of its environment
/// (see [`env_token`] for each).
pub fn proc_env(pid: u32) -> crate::proctree::ProcEnv {
    let env = match read_proc(pid, "environ") {
        Ok(Some(env)) => env,
        _ => return crate::proctree::ProcEnv::unknown(),
    };
    let token = |key: &str| token_in(&env, key);
    crate::proctree::ProcEnv {
        incarnation: token(ENV_INCARNATION),
        tmux: token("TMUX"),
        tmux_pane: token("TMUX_PANE"),
    }
}

/// The `stat` of a process, parsed whole; `None` when it is gone.
pub fn node_of(pid: u32) -> Result<Option<crate::proctree::Node>> {
    match read_proc(pid, "stat")? {
        None => Ok(None),
        Some(b) => crate::proctree::parse_stat(&b)
            .map(Some)
            .ok_or_else(|| malformed(pid, "stat")),
    }
}

/// Where a worker's process was started, for [`verify_member`]: in the session of the
/// supervisor `sup` (every process of that session descends from the supervisor without
/// passing through a tmux pane, each of which is a session of its own), or else in the
/// terminal its `TMUX`/`TMUX_PANE` name, which must be the supervisor's (`root`, read from the
/// supervisor when first needed; see [`crate::proctree::ProcEnv::foreign_terminal`]).
struct Origin<'a> {
    sup: u32,
    root: &'a std::cell::OnceCell<crate::proctree::ProcEnv>,
    /// Whether the terminal is checked only when the process is outside `sup`'s session (a
    /// first proof), or only when it was checked at the first proof (a re-proof).
    reprove: bool,
}

/// Checks what a worker's process could change about itself: it is alive with the same start
/// time, runs as our uid, is neither tmux nor a supervisor, carries no other
/// `TEAM_INCARNATION` than `incarnation` (none at all is fine: ancestry is the proof), and,
/// outside its supervisor's session, names no other terminal than the supervisor's
/// ([`Origin`]).
fn verify_member(pid: u32, start: u64, incarnation: &str, origin: &Origin<'_>) -> ProcVerdict {
    let n = match node_of(pid) {
        Ok(Some(n)) => n,
        Ok(None) => return ProcVerdict::Gone,
        Err(e) => return unverifiable(e.to_string()),
    };
    if matches!(n.state, b'Z' | b'X' | b'x') {
        return ProcVerdict::Gone;
    }
    if n.id.start_time != start {
        return not_owned(format!(
            "pid {pid} has start time {}, not {start}: another process reuses the pid",
            n.id.start_time
        ));
    }
    if n.is_tmux() {
        return not_owned(format!("pid {pid} is tmux ({:?}): never signalled", n.comm));
    }
    if n.is_supervisor() {
        return not_owned(format!("pid {pid} is a worker supervisor"));
    }
    match uid_of(pid) {
        Ok(Some(u)) if u == our_uid() => {}
        Ok(Some(u)) => return not_owned(format!("pid {pid} belongs to uid {u}")),
        Ok(None) => return ProcVerdict::Gone,
        Err(e) => return unverifiable(e.to_string()),
    }
    let env = proc_env(pid);
    if let crate::proctree::EnvToken::Is(v) = &env.incarnation
        && v != incarnation
    {
        return not_owned(format!(
            "pid {pid} carries {ENV_INCARNATION}={v:?}, not this worker's {incarnation}"
        ));
    }
    if origin.reprove
        && let Some(why) = serves_now(&n, origin.sup)
    {
        return not_owned(format!("pid {pid} {why}"));
    }
    let check = if origin.reprove {
        origin.root.get().is_some()
    } else {
        n.sid != origin.sup
    };
    if check {
        let root = origin.root.get_or_init(|| proc_env(origin.sup));
        if let Some(why) = env.foreign_terminal(root) {
            return not_owned(format!("pid {pid}: {why}"));
        }
    }
    ProcVerdict::Owned
}

/// Why a detached process (out of the supervisor `sup`'s session, or adopted by it), proven
/// at the walk, may now serve others: it began serving on a socket, or hosting terminals, since
/// (a process that answers SIGTERM by listening). Such a process is a shared daemon now, as
/// the walk would judge it, and never gets the SIGKILL that follows the grace.
fn serves_now(n: &crate::proctree::Node, sup: u32) -> Option<&'static str> {
    use crate::proctree::Inspect;
    use crate::supervisor::MainMark;
    let inspect = crate::proctree::Proc::new();
    let adopted = n.ppid == sup
        && match inspect.main_mark(sup) {
            Some(MainMark::Running(main)) => main != n.id.pid,
            Some(MainMark::Ended) => true,
            None => false,
        };
    if n.sid == sup && !adopted {
        return None;
    }
    if inspect.hosts_terminals(n.id.pid) {
        return Some("began hosting terminals during the grace: never signalled again");
    }
    if inspect.listens(n.id.pid) {
        return Some(
            "began serving on a socket during the grace (it may serve clients outside the worker): not killed",
        );
    }
    None
}

/// Whether `pid` is (still) below the supervisor `sup`, read afresh from `/proc`: the chain of
/// parents reaches `sup` (same start time) without passing a tmux process or another
/// supervisor.
fn below_supervisor(pid: u32, sup: ProcId) -> ProcVerdict {
    let mut cur = pid;
    for _ in 0..128 {
        let n = match node_of(cur) {
            Ok(Some(n)) => n,
            Ok(None) => return not_owned(format!("an ancestor of pid {pid} (pid {cur}) is gone")),
            Err(e) => return unverifiable(e.to_string()),
        };
        if cur != pid {
            if cur == sup.pid {
                // The pid and start time name the root the caller proved (a supervisor, or a
                // legacy pane's own process).
                if n.id.start_time == sup.start_time {
                    return ProcVerdict::Owned;
                }
                return not_owned(format!(
                    "pid {cur} above pid {pid} is no longer the worker's supervisor"
                ));
            }
            if n.is_tmux() || n.is_supervisor() {
                return not_owned(format!(
                    "pid {pid} is below {:?} (pid {cur}), not below the worker's supervisor",
                    n.comm
                ));
            }
        }
        if n.ppid <= 1 {
            return not_owned(format!(
                "pid {pid} is not below the worker's supervisor (pid {})",
                sup.pid
            ));
        }
        cur = n.ppid;
    }
    unverifiable(format!("the parents of pid {pid} nest too deep"))
}

/// Proves that `member` is one of the worker's processes by ancestry: opens its pidfd, then
/// checks (from fresh `/proc` reads) its start time, uid, that it is neither tmux nor a
/// supervisor, that any `TEAM_INCARNATION` it carries is the worker's, and that it is still
/// below the supervisor `sup`; finally that the pidfd's process has not exited, so every read
/// was about it. Only `Owned` comes with a [`Proven`].
pub fn prove_below(
    member: ProcId,
    sup: ProcId,
    incarnation: &str,
) -> (ProcVerdict, Option<Proven>) {
    if !sys::SUPPORTED {
        return (
            unverifiable("process proofs need Linux pidfds and /proc"),
            None,
        );
    }
    let pid = member.pid;
    if pid <= 1 || i32::try_from(pid).is_err() {
        return (unverifiable(format!("{pid} is not a valid pid")), None);
    }
    if pid == our_pid() {
        return (not_owned(format!("pid {pid} is this process itself")), None);
    }
    if let Err(e) = check_procfs() {
        return (unverifiable(e.to_string()), None);
    }
    let fd = match sys::open(pid) {
        sys::Open::Fd(fd) => fd,
        sys::Open::Gone => return (ProcVerdict::Gone, None),
        sys::Open::Failed(e) => {
            return (unverifiable(format!("pidfd_open({pid}): {e}")), None);
        }
    };
    use std::os::fd::AsFd;
    // The supervisor's environment, when it is read, is read before the member's ancestry is
    // checked: that check confirms the supervisor by its start time.
    let root = std::cell::OnceCell::new();
    let origin = Origin {
        sup: sup.pid,
        root: &root,
        reprove: false,
    };
    let mut v = verify_member(pid, member.start_time, incarnation, &origin);
    if v == ProcVerdict::Owned {
        v = below_supervisor(pid, sup);
    }
    if sys::exited(fd.as_fd()) {
        return (ProcVerdict::Gone, None);
    }
    match v {
        ProcVerdict::Owned => (
            ProcVerdict::Owned,
            Some(Proven {
                id: member,
                fd,
                basis: Basis::Ancestry {
                    incarnation: incarnation.to_owned(),
                    sup: sup.pid,
                    root,
                },
            }),
        ),
        other => (other, None),
    }
}

/// What [`check_supervisor`] found at a recorded pane pid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SupervisorCheck {
    /// The worker's supervisor, alive: its id and session.
    Alive(crate::proctree::Node),
    /// Exited (a zombie too).
    Gone,
    /// Another process (not a supervisor, another start time, another incarnation's).
    Other(String),
    Unverifiable(String),
}

/// Whether `pid` (started at `start`, when recorded) is the supervisor of the worker
/// incarnation `incarnation`: its comm, its start time, and the incarnation in its argv.
pub fn check_supervisor(pid: u32, start: Option<u64>, incarnation: &str) -> SupervisorCheck {
    check_supervisor_args(pid, start, incarnation).0
}

/// [`check_supervisor`], with the arguments it read when the supervisor is alive (its team,
/// worker, owner and paths, for a caller that must compare them with a claim).
pub fn check_supervisor_args(
    pid: u32,
    start: Option<u64>,
    incarnation: &str,
) -> (SupervisorCheck, Option<crate::supervisor::SupervisorArgs>) {
    let mut args = None;
    let check = check_supervisor_into(pid, start, incarnation, &mut args);
    match check {
        SupervisorCheck::Alive(_) => (check, args),
        other => (other, None),
    }
}

fn check_supervisor_into(
    pid: u32,
    start: Option<u64>,
    incarnation: &str,
    found: &mut Option<crate::supervisor::SupervisorArgs>,
) -> SupervisorCheck {
    if !sys::SUPPORTED {
        return SupervisorCheck::Unverifiable("process proofs need Linux pidfds and /proc".into());
    }
    if pid <= 1 || i32::try_from(pid).is_err() {
        return SupervisorCheck::Other(format!("{pid} is not a valid pid"));
    }
    let fd = match sys::open(pid) {
        sys::Open::Fd(fd) => fd,
        sys::Open::Gone => return SupervisorCheck::Gone,
        sys::Open::Failed(e) => {
            return SupervisorCheck::Unverifiable(format!("pidfd_open({pid}): {e}"));
        }
    };
    let n = match node_of(pid) {
        Ok(Some(n)) => n,
        Ok(None) => return SupervisorCheck::Gone,
        Err(e) => return SupervisorCheck::Unverifiable(e.to_string()),
    };
    if matches!(n.state, b'Z' | b'X' | b'x') {
        return SupervisorCheck::Gone;
    }
    if let Some(s) = start
        && s != n.id.start_time
    {
        return SupervisorCheck::Other(format!(
            "pid {pid} has start time {}, not the recorded {s}",
            n.id.start_time
        ));
    }
    if !n.is_supervisor() {
        return SupervisorCheck::Other(format!("pid {pid} ({:?}) is not a supervisor", n.comm));
    }
    match runs_supervisor_exe(pid) {
        Ok(Some(true)) => {}
        Ok(Some(false)) => {
            return SupervisorCheck::Other(format!(
                "pid {pid} is named {:?} but does not run {SUPERVISOR_EXE}",
                n.comm
            ));
        }
        Ok(None) => return SupervisorCheck::Gone,
        Err(e) => return SupervisorCheck::Unverifiable(e.to_string()),
    }
    let args = match read_proc(pid, "cmdline") {
        Ok(Some(b)) => crate::supervisor::SupervisorArgs::from_cmdline(&b),
        Ok(None) => return SupervisorCheck::Gone,
        Err(e) => return SupervisorCheck::Unverifiable(e.to_string()),
    };
    match args {
        Some(a) if a.incarnation.to_string() == incarnation => {
            *found = Some(a);
        }
        Some(a) => {
            return SupervisorCheck::Other(format!(
                "pid {pid} supervises incarnation {}, not {incarnation}",
                a.incarnation
            ));
        }
        None => {
            return SupervisorCheck::Other(format!("pid {pid}'s arguments are not a supervisor's"));
        }
    }
    use std::os::fd::AsFd;
    if sys::exited(fd.as_fd()) {
        return SupervisorCheck::Gone;
    }
    SupervisorCheck::Alive(n)
}

/// Why the supervisor `pid` no longer works in the place its arguments name (`None`: it
/// does). A supervisor starts in its worker's directory (the workspace, or a worktree under
/// the state root), and the kernel keeps that directory's *current* path in
/// `/proc/<pid>/cwd`: when the workspace was moved or renamed (and perhaps an empty directory
/// made at the old path), that path is no longer below the workspace or state root the
/// arguments name, and the state absent at the old path proves nothing about this worker's
/// team. `None` also when the process is gone (nothing left to judge).
pub fn supervisor_moved(pid: u32, args: &crate::supervisor::SupervisorArgs) -> Option<String> {
    let cwd = match std::fs::read_link(proc_path(pid, "cwd")) {
        Ok(p) => p,
        Err(e) if is_gone(&e) => return None,
        Err(e) => return Some(format!("its working directory cannot be read: {e}")),
    };
    if cwd.starts_with(&args.workspace) || cwd.starts_with(&args.state_root) {
        return None;
    }
    Some(format!(
        "its supervisor works in {}, not below the workspace {} its arguments name (moved or renamed)",
        cwd.display(),
        args.workspace.display()
    ))
}

/// The supervisor arguments of `pid`, read from its `cmdline` (`None` when unreadable or not a
/// supervisor's).
pub fn supervisor_args(pid: u32) -> Option<crate::supervisor::SupervisorArgs> {
    let b = read_proc(pid, "cmdline").ok()??;
    crate::supervisor::SupervisorArgs::from_cmdline(&b)
}

/// The executable every supervisor runs: `team-scale supervise`.
pub const SUPERVISOR_EXE: &str = "team-scale";

/// Whether `pid` runs an executable named [`SUPERVISOR_EXE`] (the file name of
/// `/proc/<pid>/exe`, a binary replaced or deleted since included). A process that only names
/// itself `team-supervise` and copies a supervisor's arguments (its own program, or `exec -a`)
/// is no supervisor. `Ok(None)`: the process is gone.
pub fn runs_supervisor_exe(pid: u32) -> Result<Option<bool>> {
    match std::fs::read_link(proc_path(pid, "exe")) {
        Ok(t) => {
            let name = t.file_name().map(|n| n.to_string_lossy().into_owned());
            let name = name.as_deref().unwrap_or("");
            Ok(Some(
                name.strip_suffix(" (deleted)").unwrap_or(name) == SUPERVISOR_EXE,
            ))
        }
        Err(e) if is_gone(&e) => Ok(None),
        Err(e) => Err(Error::Process {
            op: "read",
            pid,
            what: "exe".into(),
            source: e,
        }),
    }
}

// ---------------------------------------------------------------------------------------------
// Scans.
// ---------------------------------------------------------------------------------------------

/// One readable process of ours in `/proc`: its id and environment.
struct Seen {
    id: ProcId,
    environ: Vec<u8>,
}

/// Walks `/proc`, calling `visit` for every live process of the current uid other than this
/// one. Returns the count of entries that could not be read.
fn walk_ours(mut visit: impl FnMut(Seen)) -> Result<usize> {
    if !sys::SUPPORTED {
        return Err(unsupported("scan", 0));
    }
    check_procfs()?;
    let proc_dir = PathBuf::from("/proc");
    let entries = std::fs::read_dir(&proc_dir).map_err(|e| Error::io("list", &proc_dir, e))?;
    let me = our_pid();
    let uid = our_uid();
    let mut unreadable = 0;
    for entry in entries {
        let entry = match entry {
            Ok(e) => e,
            Err(_) => {
                unreadable += 1;
                continue;
            }
        };
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        // Cheap first pass: one read of the environment. A readable, non-empty environment
        // without `TEAM_OWNER=` is no team process, whoever owns it, so the costlier reads
        // below happen only for candidates and for what could not be read.
        if let Ok(Some(env)) = read_proc(pid, "environ")
            && !env.is_empty()
            && !env.split(|b| *b == 0).any(|kv| {
                kv.starts_with(ENV_OWNER.as_bytes()) && kv.get(ENV_OWNER.len()) == Some(&b'=')
            })
        {
            continue;
        }
        match uid_of(pid) {
            Ok(Some(u)) if u == uid => {}
            Ok(_) => continue,
            Err(_) => {
                unreadable += 1;
                continue;
            }
        }
        let (state, started) = match stat_of(pid) {
            Ok(Some(s)) => s,
            Ok(None) => continue,
            Err(_) => {
                unreadable += 1;
                continue;
            }
        };
        if matches!(state, b'Z' | b'X' | b'x') {
            continue;
        }
        let environ = match read_proc(pid, "environ") {
            Ok(Some(env)) if !env.is_empty() => env,
            Ok(Some(_)) | Err(_) => {
                // Empty: mid-exec (see EMPTY_ENVIRON) or started with none; unknown either way.
                unreadable += 1;
                continue;
            }
            Ok(None) => continue,
        };
        // The stat read before the environ: if the pid was recycled in between, the start time
        // no longer matches and the entry is dropped.
        match start_time(pid) {
            Ok(Some(s)) if s == started => {}
            _ => continue,
        }
        visit(Seen {
            id: ProcId {
                pid,
                start_time: started,
            },
            environ,
        });
    }
    Ok(unreadable)
}

/// Scans `/proc` for processes of the current uid (this one excluded) whose environment has
/// `TEAM_OWNER=<owner>`, and `TEAM_WORKER=<worker>` when given. Candidates only: prove each
/// before signalling it.
pub fn find_by_env(owner: &str, worker: Option<&str>) -> Result<Scan> {
    let pairs = required_pairs(owner, worker);
    let mut found = Vec::new();
    let unreadable = walk_ours(|seen| {
        if environ_matches(&seen.environ, &pairs) {
            found.push(seen.id);
        }
    })?;
    Ok(Scan { found, unreadable })
}

/// Scans `/proc` for every process of the current uid (this one excluded) whose environment has
/// a `TEAM_OWNER`, whatever its value: the reaper's view of residue of dead teams.
pub fn scan_team_processes() -> Result<Scan<TeamProc>> {
    use std::os::unix::ffi::OsStrExt;
    let text = |env: &[u8], key: &str| {
        env_first(env, key).map(|v| String::from_utf8_lossy(v).into_owned())
    };
    let path = |env: &[u8], key: &str| {
        env_first(env, key).map(|v| PathBuf::from(std::ffi::OsStr::from_bytes(v)))
    };
    let mut found = Vec::new();
    let unreadable = walk_ours(|seen| {
        let env = &seen.environ;
        if let Some(owner) = text(env, ENV_OWNER) {
            found.push(TeamProc {
                id: seen.id,
                owner,
                worker: text(env, ENV_WORKER),
                team: text(env, "TEAM_NAME"),
                state_dir: path(env, "TEAM_STATE_DIR"),
                workspace: path(env, "TEAM_WORKSPACE"),
                incarnation: None,
            });
        }
    })?;
    Ok(Scan { found, unreadable })
}

// ---------------------------------------------------------------------------------------------
// Graceful stop.
// ---------------------------------------------------------------------------------------------

/// Stops proven processes gracefully: SIGTERM to each; wait up to `grace` for all of them
/// together (returning as soon as all have exited); re-prove each survivor and SIGKILL only
/// those still proven; wait up to [`KILL_WAIT`] for those. One outcome per process, in order.
pub fn terminate(procs: Vec<Proven>, grace: Duration) -> Vec<(ProcId, StopOutcome)> {
    let mut outcomes: Vec<Option<StopOutcome>> = vec![None; procs.len()];

    // 1. SIGTERM.
    for (i, p) in procs.iter().enumerate() {
        outcomes[i] = match p.signal(Sig::Term) {
            Ok(SignalOutcome::Sent) => None,
            Ok(SignalOutcome::Gone) => Some(StopOutcome::GoneBefore),
            Err(e) => Some(StopOutcome::StillAlive {
                reason: e.to_string(),
            }),
        };
    }

    // 2. Wait for all of them at once.
    let deadline = deadline_after(grace);
    wait_pending(
        &procs,
        &mut outcomes,
        deadline,
        StopOutcome::ExitedAfterTerm,
    );

    // 3. Re-prove survivors, SIGKILL the still-proven.
    let mut killed = false;
    for (i, p) in procs.iter().enumerate() {
        if outcomes[i].is_some() {
            continue;
        }
        outcomes[i] = match p.reprove() {
            ProcVerdict::Owned => match p.signal(Sig::Kill) {
                Ok(SignalOutcome::Sent) => {
                    killed = true;
                    None
                }
                Ok(SignalOutcome::Gone) => Some(StopOutcome::ExitedAfterTerm),
                Err(e) => Some(StopOutcome::StillAlive {
                    reason: e.to_string(),
                }),
            },
            ProcVerdict::Gone => Some(StopOutcome::ExitedAfterTerm),
            ProcVerdict::NotOwned { reason } => Some(StopOutcome::NotOwnedAnymore { reason }),
            ProcVerdict::Unverifiable { reason } => Some(StopOutcome::StillAlive {
                reason: format!("survived SIGTERM; re-proof unverifiable: {reason}"),
            }),
        };
    }

    // 4. Bounded wait after SIGKILL.
    if killed {
        wait_pending(
            &procs,
            &mut outcomes,
            deadline_after(KILL_WAIT),
            StopOutcome::Killed,
        );
    }
    procs
        .iter()
        .zip(outcomes)
        .map(|(p, o)| {
            (
                p.id,
                o.unwrap_or_else(|| StopOutcome::StillAlive {
                    reason: "did not exit after SIGKILL".into(),
                }),
            )
        })
        .collect()
}

fn deadline_after(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d)
        .unwrap_or_else(|| now + Duration::from_secs(365 * 24 * 3600))
}

/// Polls the pidfds of the processes without an outcome yet; marks the exited ones `done`.
fn wait_pending(
    procs: &[Proven],
    outcomes: &mut [Option<StopOutcome>],
    deadline: Instant,
    done: StopOutcome,
) {
    use std::os::fd::AsFd;
    let pending: Vec<usize> = (0..procs.len())
        .filter(|&i| outcomes[i].is_none())
        .collect();
    if pending.is_empty() {
        return;
    }
    let fds: Vec<_> = pending.iter().map(|&i| procs[i].fd.as_fd()).collect();
    let exited = sys::wait_exited(&fds, deadline);
    for (&i, gone) in pending.iter().zip(exited) {
        if gone {
            outcomes[i] = Some(done.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Loaders are known by their executables' names, qemu's emulators only in user mode (a
    /// `qemu-img info f` runs no program `info`), and nothing else is one.
    #[test]
    fn loaders_are_known_by_their_executables() {
        for (name, kind) in [
            ("ld-linux-x86-64.so.2", Loader::Ld),
            ("ld-linux-aarch64.so.1", Loader::Ld),
            ("ld-musl-x86_64.so.1", Loader::Ld),
            ("ld.so", Loader::Ld),
            ("memcheck-amd64-linux", Loader::Valgrind),
            ("none-arm64-linux", Loader::Valgrind),
            ("valgrind.bin", Loader::Valgrind),
            ("qemu-x86_64", Loader::Qemu),
            ("qemu-aarch64-static", Loader::Qemu),
        ] {
            assert_eq!(Loader::of(std::iter::once(name)), Some(kind), "{name}");
        }
        for name in [
            "sh",
            "ldconfig",
            "ld",
            "qemu-img",
            "qemu-system-x86_64",
            "qemu-nbd",
            "memcheck",
            "none",
            "codex",
            "node",
        ] {
            assert_eq!(Loader::of(std::iter::once(name)), None, "{name}");
        }
        assert!(Loader::Ld.takes_value(b"--argv0"));
        assert!(!Loader::Ld.takes_value(b"--list"));
        assert!(Loader::Qemu.takes_value(b"-L") && Loader::Qemu.takes_value(b"--cpu"));
        assert!(!Loader::Valgrind.takes_value(b"--tool=memcheck"));
    }
    use proptest::prelude::*;

    /// Pagers, editors and clients are matched by `comm` also under their packaged names.
    #[test]
    fn line_runners_by_name() {
        for comm in [
            "less",
            "more",
            "man",
            "vim.basic",
            "vim.tiny",
            "nvim",
            "emacs-29.1",
            "lynx",
            "mutt",
            "sftp",
            "psql",
            "sqlite3",
            "lldb",
            "ipython3",
            // Debian's alternatives, which run one of the above.
            "pager",
            "editor",
            "sensible-editor",
            "sensible-pager",
            "www-browser",
        ] {
            assert!(named_in(LINE_RUNNERS, comm), "{comm}");
        }
        for comm in [
            "codex",
            "node",
            "claude",
            "python3",
            "fake-agent",
            "lesser",
            "",
        ] {
            assert!(!named_in(LINE_RUNNERS, comm), "{comm}");
        }
    }

    /// A real line of `/proc/self/stat` with `comm` replaced.
    fn stat_line(comm: &str, start: u64) -> String {
        format!(
            "8268 ({comm}) R 8263 8263 4019 0 -1 4194304 102 0 0 0 0 0 0 0 20 0 1 0 {start} 3133440 422 \
             18446744073709551615 94332099612672 94332099632553 140723575801152 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"
        )
    }

    #[test]
    fn parses_a_real_stat_line() {
        assert_eq!(parse_stat_start_time(&stat_line("cat", 53150)), Some(53150));
        assert_eq!(
            parse_stat_bytes(stat_line("cat", 7).as_bytes()),
            Some((b'R', 7))
        );
    }

    #[test]
    fn comm_with_parens_spaces_and_newlines() {
        for comm in [
            ") (",
            "a) R 1 2 3 (b",
            "x y z",
            "))",
            "(",
            "new\nline) 9 9 9",
            "",
            " 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22",
        ] {
            assert_eq!(
                parse_stat_start_time(&stat_line(comm, 424242)),
                Some(424242),
                "comm {comm:?}"
            );
        }
    }

    #[test]
    fn refuses_malformed_stat() {
        for bad in [
            "",
            "1 (x",
            "1 (x) R 1 2",
            "1 (x) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 -5",
            "1 (x) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 +5",
            "1 (x) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 99999999999999999999999",
            "1 (x) RR 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 5",
        ] {
            assert_eq!(parse_stat_start_time(bad), None, "{bad:?}");
        }
        // Exactly 22 fields is enough.
        assert_eq!(
            parse_stat_start_time("1 (x) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 5"),
            Some(5)
        );
    }

    #[test]
    fn parses_status_uid() {
        let status = b"Name:\tsleep\nUmask:\t0022\nState:\tS (sleeping)\nUid:\t1000\t1001\t1002\t1003\nGid:\t5\t5\t5\t5\n";
        assert_eq!(parse_status_uid(status), Some(1000));
        assert_eq!(parse_status_uid(b"Name:\tUid: 7\n"), None);
        assert_eq!(parse_status_uid(b"Uid:\t\n"), None);
    }

    #[test]
    fn environ_matching_is_exact_and_strict() {
        let env = b"PATH=/bin\0TEAM_OWNER=abc\0TEAM_WORKER=w1\0XTEAM_OWNER=zzz\0";
        assert!(environ_matches(env, &[("TEAM_OWNER", "abc")]));
        assert!(environ_matches(
            env,
            &[("TEAM_OWNER", "abc"), ("TEAM_WORKER", "w1")]
        ));
        assert!(!environ_matches(env, &[("TEAM_OWNER", "ab")]));
        assert!(!environ_matches(env, &[("TEAM_OWNER", "abcd")]));
        assert!(!environ_matches(env, &[("TEAM_WORKER", "w2")]));
        assert!(!environ_matches(env, &[("TEAM_NAME", "")]));
        assert!(!environ_matches(b"", &[("TEAM_OWNER", "abc")]));
        // A key that is a prefix of another does not match it.
        assert!(!environ_matches(
            b"TEAM_OWNER_X=abc\0",
            &[("TEAM_OWNER", "abc")]
        ));
        // Conflicting duplicates never match; agreeing ones do.
        assert!(!environ_matches(
            b"TEAM_OWNER=abc\0TEAM_OWNER=evil\0",
            &[("TEAM_OWNER", "abc")]
        ));
        assert!(environ_matches(
            b"TEAM_OWNER=abc\0TEAM_OWNER=abc",
            &[("TEAM_OWNER", "abc")]
        ));
        assert_eq!(
            env_mismatch(env, "other", None).as_deref(),
            Some("its TEAM_OWNER is \"abc\", not \"other\"")
        );
        assert_eq!(env_mismatch(env, "abc", Some("w1")), None);
        assert!(
            env_mismatch(b"", "abc", None)
                .unwrap()
                .contains("no TEAM_OWNER")
        );
    }

    #[test]
    fn verdicts_serialize_with_a_snake_case_tag() {
        assert_eq!(
            serde_json::to_string(&ProcVerdict::NotOwned { reason: "r".into() }).unwrap(),
            r#"{"verdict":"not_owned","reason":"r"}"#
        );
        assert_eq!(
            serde_json::to_string(&ProcVerdict::Gone).unwrap(),
            r#"{"verdict":"gone"}"#
        );
        assert_eq!(
            serde_json::to_string(&StopOutcome::ExitedAfterTerm).unwrap(),
            r#"{"outcome":"exited_after_term"}"#
        );
        let id = ProcId {
            pid: 7,
            start_time: 9,
        };
        let back: ProcId = serde_json::from_str(&serde_json::to_string(&id).unwrap()).unwrap();
        assert_eq!(back, id);
    }

    proptest! {
        #[test]
        fn stat_parser_never_panics(s in ".*") {
            let _ = parse_stat_start_time(&s);
        }

        #[test]
        fn stat_parser_never_panics_on_bytes(b in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = parse_stat_bytes(&b);
            let _ = parse_status_uid(&b);
            let _ = environ_matches(&b, &[("TEAM_OWNER", "x")]);
        }

        #[test]
        fn stat_parser_survives_any_comm(comm in "[^\0]{0,16}", start in any::<u64>()) {
            prop_assert_eq!(parse_stat_start_time(&stat_line(&comm, start)), Some(start));
        }
    }
}
