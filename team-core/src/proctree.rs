//! Processes by ancestry: which processes are a worker's, proven by where they sit in the
//! process tree, not by the environment they carry.
//!
//! A worker's processes are the descendants of its pane's supervisor (a child subreaper of
//! ours, see [`crate::supervisor`]). [`Tree::snapshot`] reads `/proc/<pid>/stat` of every
//! process once (pid, comm, state, ppid, session, start time); [`Tree::below`] walks a
//! supervisor's descendants with the rules that keep foreign processes out:
//!
//! - a tmux server (or client) is never a worker's process, and nothing below it is: another
//!   team's leader and workers, the user's panes, all live below some tmux server;
//! - another supervisor is another worker's pane: its subtree is not ours either;
//! - a process of another uid, or whose `TEAM_INCARNATION` names another incarnation, is left
//!   out with its subtree (the variable only ever confirms; its absence proves nothing, so a
//!   `setsid env -i` child is still the worker's);
//! - a *detached* process (in another session than the supervisor's, or an orphan the
//!   supervisor adopted) that serves on a socket (listening unix or TCP, a bound UDP port, in
//!   its own network namespace) may serve clients outside the worker (a shared daemon, like
//!   Codex's app-server): it is marked `shared`, to be reported, never signalled, and nothing
//!   below it is walked (its children serve its clients too).
//!
//! The walk is a snapshot; [`crate::process::prove_below`] re-proves each candidate through a
//! pidfd before any signal.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **Shared daemons are reported, never killed.** A worker's process that is *detached* (it
//!   left the pane's session with `setsid`, or it is an orphan the supervisor adopted, i.e. a
//!   direct child of the supervisor other than the worker's main process: a double fork
//!   without `setsid`). Which child is the main process, the supervisor says in the name of
//!   one of its threads (`main <pid>`, then `main ended`; see
//!   [`crate::supervisor::MainMark`]): the oldest child, which was used before, is an orphan
//!   once the main process has gone, and an in-session listener was then taken for the main
//!   process and hung up and serves on a socket (a listening unix or TCP socket, a unix datagram socket bound to a
//!   name, or a UDP socket bound to a port, looked up in the process's *own* network namespace tables
//!   `/proc/<pid>/net/*`, so `unshare -n` does not hide it, and matched to the process's socket
//!   fds) may serve clients outside the worker — Codex's `app-server` serves every Codex of the
//!   user — and proving who its clients are would take `sock_diag`; so it is `shared`: reported
//!   by `down` and the reaper (`verdict: shared`, silent in cron mode), never signalled, and
//!   nothing below it is walked (its children work for its clients too). A process whose fds or
//!   tables cannot be read counts as serving. A renamed copy of tmux (`mux: server`) counts as
//!   tmux: any `<name>: server`/`: client` comm is never signalled, nor anything below it. Other
//!   detached residue follows the team's residue policy (`team-scale policy --residue
//!   kill|report`, default `kill`, shown by `status`). Processes still attached to the pane's
//!   session are the agent's own and end with it; when a pane is killed, its supervisor (which
//!   survives the hangup) passes SIGHUP on to them, as a terminal's session leader would.
//!   The walk goes on through exiting processes and zombies (their children are being handed to
//!   the supervisor), judging each child on its own.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::process::ProcId;

/// One process as `/proc/<pid>/stat` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub id: ProcId,
    pub ppid: u32,
    /// Session id (field 6).
    pub sid: u32,
    /// State letter (field 3).
    pub state: u8,
    /// `comm` (field 2, without the parentheses), lossily decoded.
    pub comm: String,
}

impl Node {
    /// A tmux server or client: its comm starts with `tmux` (a server calls itself
    /// `tmux: server`).
    pub fn is_tmux(&self) -> bool {
        is_tmux_comm(&self.comm)
    }

    /// A worker supervisor of ours.
    pub fn is_supervisor(&self) -> bool {
        self.comm == crate::supervisor::COMM
    }

    fn is_zombie(&self) -> bool {
        matches!(self.state, b'Z' | b'X' | b'x')
    }
}

/// Whether a comm names tmux: `tmux...`, or any `<name>: server` / `<name>: client` (tmux
/// titles itself after its program name, so a renamed copy of tmux shows `mux: server`).
/// Erring towards "tmux" only ever means "never signalled".
pub fn is_tmux_comm(comm: &str) -> bool {
    comm.starts_with("tmux") || comm.ends_with(": server") || comm.ends_with(": client")
}

/// Parses a whole `/proc/<pid>/stat` line. The comm may hold spaces, parentheses and
/// newlines, so it is everything between the first `(` and the *last* `)`.
pub fn parse_stat(stat: &[u8]) -> Option<Node> {
    let open = stat.iter().position(|&b| b == b'(')?;
    let close = stat.iter().rposition(|&b| b == b')')?;
    if close < open {
        return None;
    }
    let pid: u32 = std::str::from_utf8(&stat[..open])
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let comm = String::from_utf8_lossy(&stat[open + 1..close]).into_owned();
    let mut f = stat[close + 1..]
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty());
    let num = |f: &[u8]| -> Option<u64> { std::str::from_utf8(f).ok()?.parse().ok() };
    let state = f.next()?;
    if state.len() != 1 {
        return None;
    }
    let ppid = num(f.next()?)?; // 4
    let _pgrp = f.next()?; // 5
    let sid = num(f.next()?)?; // 6
    let start = num(f.nth(15)?)?; // 22
    Some(Node {
        id: ProcId {
            pid,
            start_time: start,
        },
        ppid: u32::try_from(ppid).ok()?,
        sid: u32::try_from(sid).ok()?,
        state: state[0],
        comm,
    })
}

/// Field 20 of a `/proc/<pid>/stat` line: how many threads the process has.
fn num_threads(stat: &[u8]) -> Option<u64> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let f = stat[close + 1..]
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty())
        .nth(17)?; // fields 3.. after the comm: the 18th is field 20
    std::str::from_utf8(f).ok()?.parse().ok()
}

/// One snapshot of the process tree.
#[derive(Debug, Default)]
pub struct Tree {
    nodes: HashMap<u32, Node>,
    children: HashMap<u32, Vec<u32>>,
    /// `/proc` entries that could not be read (gone between listing and reading, mostly).
    pub unreadable: usize,
}

/// Why a descendant was left out of a worker's processes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub id: ProcId,
    pub comm: String,
    pub reason: String,
}

/// A descendant of a supervisor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub node: Node,
    /// In another session than the supervisor's (it called `setsid`), or an orphan the
    /// supervisor adopted (a double fork): it outlives the pane.
    pub detached: bool,
    /// Detached and holding a listening socket: it may serve clients outside the worker.
    pub shared: bool,
}

/// What [`Tree::below`] found.
#[derive(Debug, Clone, Default)]
pub struct Below {
    pub members: Vec<Member>,
    pub skipped: Vec<Skipped>,
}

/// How deep a walk goes (a fork bomb is not a reason to recurse forever).
const MAX_DEPTH: usize = 64;
/// The most processes [`Tree::subtree`] reads.
const MAX_SUBTREE: usize = 100_000;

/// `/proc`, opened once for the `openat`s of a scan.
fn open_proc() -> Result<rustix::fd::OwnedFd> {
    rustix::fs::open(
        "/proc",
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .map_err(|e| Error::io("open", std::path::Path::new("/proc"), e.into()))
}

/// Reads `/proc/<pid>/stat` into `buf` in three system calls (`openat`, `read` until it is
/// short, `close`): the scan reads every process's, so the generic `fs::read` (an `fstat` and
/// reads that start at 32 bytes) would double its cost. `None` when it cannot be read.
fn read_stat(proc: &rustix::fd::OwnedFd, pid: u32, buf: &mut Vec<u8>) -> Option<()> {
    use std::io::Read;
    let fd = rustix::fs::openat(
        proc,
        format!("{pid}/stat"),
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .ok()?;
    buf.clear();
    let mut f = std::fs::File::from(fd);
    let mut chunk = [0u8; 1024];
    loop {
        match f.read(&mut chunk) {
            Ok(0) => return Some(()),
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() > 64 * 1024 {
                    return None;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

impl Tree {
    /// Reads every `/proc/<pid>/stat`.
    pub fn snapshot() -> Result<Tree> {
        if !cfg!(target_os = "linux") {
            return Err(Error::Internal(
                "process trees need Linux /proc".to_string(),
            ));
        }
        let proc_dir = PathBuf::from("/proc");
        let entries = std::fs::read_dir(&proc_dir).map_err(|e| Error::io("list", &proc_dir, e))?;
        let dir = open_proc()?;
        let mut t = Tree::default();
        let mut buf = Vec::with_capacity(1024);
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            match read_stat(&dir, pid, &mut buf).and_then(|()| parse_stat(&buf)) {
                Some(n) if n.id.pid == pid => t.insert(n),
                _ => t.unreadable += 1,
            }
        }
        Ok(t)
    }

    /// The process `pid` and its descendants only, found through the kernel's child lists
    /// (`/proc/<pid>/task/<tid>/children`) rather than by reading every process: what a
    /// supervisor needs when its pane hangs up, which every supervisor of a team does at once
    /// when the team goes. A child forked while the walk runs may be missed (the caller's second
    /// pass catches it). Without child lists (a kernel without `CONFIG_PROC_CHILDREN`), the
    /// whole [`Tree::snapshot`].
    pub fn subtree(pid: u32) -> Result<Tree> {
        Tree::subtrees(&[pid])
    }

    /// Each of `roots` and its descendants, as [`Tree::subtree`]: what a teardown needs, whose
    /// walks all start at the supervisors of the workers it removes. The cost follows the
    /// workers' processes, not every process on the machine.
    pub fn subtrees(roots: &[u32]) -> Result<Tree> {
        let me = std::process::id();
        if !std::path::Path::new(&format!("/proc/{me}/task/{me}/children")).exists() {
            return Tree::snapshot();
        }
        let dir = open_proc()?;
        let mut t = Tree::default();
        let mut buf = Vec::with_capacity(1024);
        let mut stack = roots.to_vec();
        let mut seen = HashSet::new();
        while let Some(p) = stack.pop() {
            if !seen.insert(p) || seen.len() > MAX_SUBTREE {
                continue;
            }
            match read_stat(&dir, p, &mut buf).and_then(|()| parse_stat(&buf)) {
                Some(n) if n.id.pid == p => t.insert(n),
                _ => {
                    t.unreadable += 1;
                    continue;
                }
            }
            // Each thread keeps its own list: a process of one thread (most, and what its
            // stat says) has one list at a known path, without listing its tasks.
            let lists: Vec<PathBuf> = if num_threads(&buf) == Some(1) {
                vec![PathBuf::from(format!("/proc/{p}/task/{p}/children"))]
            } else {
                let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
                    continue;
                };
                tasks.flatten().map(|t| t.path().join("children")).collect()
            };
            for list in lists {
                let Ok(c) = crate::process::read_procfs(list) else {
                    continue;
                };
                stack.extend(
                    String::from_utf8_lossy(&c)
                        .split_whitespace()
                        .filter_map(|c| c.parse::<u32>().ok()),
                );
            }
        }
        Ok(t)
    }

    /// A tree made of the given nodes (tests).
    pub fn from_nodes(nodes: impl IntoIterator<Item = Node>) -> Tree {
        let mut t = Tree::default();
        for n in nodes {
            t.insert(n);
        }
        t
    }

    fn insert(&mut self, n: Node) {
        self.children.entry(n.ppid).or_default().push(n.id.pid);
        self.nodes.insert(n.id.pid, n);
    }

    /// Whether `pid` has a child that is not a zombie.
    pub fn has_live_child(&self, pid: u32) -> bool {
        self.children.get(&pid).is_some_and(|c| {
            c.iter()
                .any(|k| self.nodes.get(k).is_some_and(|n| n.state != b'Z'))
        })
    }

    /// Every process seen.
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.values()
    }

    /// The process `pid`, if it was seen.
    pub fn node(&self, pid: u32) -> Option<&Node> {
        self.nodes.get(&pid)
    }

    /// Whether any process seen has `pid` for its parent.
    pub fn has_children(&self, pid: u32) -> bool {
        self.children.get(&pid).is_some_and(|c| !c.is_empty())
    }

    /// Reports every descendant of `pid` as skipped, for `why`.
    fn skip_below(&self, pid: u32, why: &str, skipped: &mut Vec<Skipped>) {
        let mut stack = vec![(pid, 0usize)];
        while let Some((p, depth)) = stack.pop() {
            if depth > MAX_DEPTH {
                continue;
            }
            for &c in self.children.get(&p).map(Vec::as_slice).unwrap_or(&[]) {
                if let Some(n) = self.nodes.get(&c) {
                    skipped.push(Skipped {
                        id: n.id,
                        comm: n.comm.clone(),
                        reason: why.to_string(),
                    });
                }
                stack.push((c, depth + 1));
            }
        }
    }

    /// Every supervisor of ours in the snapshot.
    pub fn supervisors(&self) -> impl Iterator<Item = &Node> {
        self.nodes.values().filter(|n| n.is_supervisor())
    }

    /// The descendants of `root` that belong to the worker it supervises (see the module
    /// docs), breadth first. `incarnation` is the worker's; `inspect` reads what the walk needs
    /// beyond `stat` (uid, `TEAM_INCARNATION`, listening sockets), so tests can stand in for
    /// `/proc`.
    pub fn below(&self, root: &Node, incarnation: &str, inspect: &dyn Inspect) -> Below {
        let mut out = Below::default();
        // The worker's main process, as the supervisor names it; without its word (an older
        // supervisor), its oldest child, which is wrong once the main process has gone.
        let first_child = match inspect.main_mark(root.id.pid) {
            Some(crate::supervisor::MainMark::Running(p)) => Some(p),
            Some(crate::supervisor::MainMark::Ended) => None,
            None => self
                .children
                .get(&root.id.pid)
                .into_iter()
                .flatten()
                .filter_map(|c| self.nodes.get(c))
                .min_by_key(|n| (n.id.start_time, n.id.pid))
                .map(|n| n.id.pid),
        };
        let mut frontier = vec![root.id.pid];
        let mut seen: HashSet<u32> = HashSet::from([root.id.pid]);
        // A tmux server (or another terminal host) below the worker: see
        // `keep_detached_below_a_server`.
        let mut server: Option<u32> = None;
        // The supervisor's own environment, read once, when a member is first judged.
        let mut root_env: Option<ProcEnv> = None;
        for _ in 0..MAX_DEPTH {
            let mut next = Vec::new();
            for pid in frontier {
                for &c in self.children.get(&pid).map(Vec::as_slice).unwrap_or(&[]) {
                    if !seen.insert(c) {
                        continue;
                    }
                    let Some(n) = self.nodes.get(&c) else {
                        continue;
                    };
                    if n.is_zombie() {
                        // Exited, not yet reaped: nothing to signal, but its children (about
                        // to be reparented to the supervisor) are still the worker's.
                        next.push(c);
                        continue;
                    }
                    let skip = |reason: String| Skipped {
                        id: n.id,
                        comm: n.comm.clone(),
                        reason,
                    };
                    if n.is_tmux() {
                        // A server's name is `<name>: server`, or `<name>:` when that is longer
                        // than a thread name holds (tmux cuts it at the last space); a client
                        // says `: client`, a tmux command not yet started says its name only.
                        if n.comm.contains(':') && !n.comm.ends_with(": client") {
                            server.get_or_insert(n.id.pid);
                        }
                        out.skipped.push(skip(
                            "a tmux server or client: never signalled, nor anything below it"
                                .into(),
                        ));
                        continue;
                    }
                    if n.is_supervisor() {
                        out.skipped
                            .push(skip("another worker's supervisor (another pane)".into()));
                        continue;
                    }
                    match inspect.uid(n.id.pid) {
                        Some(u) if u == inspect.our_uid() => {}
                        Some(u) => {
                            out.skipped.push(skip(format!("runs as uid {u}")));
                            continue;
                        }
                        None => {
                            // Exiting right now, mostly: not signalled, but its children
                            // (reparented to the supervisor as it goes) are walked, each
                            // judged on its own.
                            out.skipped.push(skip("its owner could not be read".into()));
                            next.push(c);
                            continue;
                        }
                    }
                    let env = inspect.env(n.id.pid);
                    match &env.incarnation {
                        EnvToken::Absent | EnvToken::Unreadable => {}
                        EnvToken::Is(v) if v == incarnation => {}
                        EnvToken::Is(v) => {
                            out.skipped.push(skip(format!(
                                "its TEAM_INCARNATION is {v:?}: another worker's process"
                            )));
                            continue;
                        }
                    }
                    // Only outside the supervisor's session can a process come from another
                    // terminal: every tmux pane is a session of its own.
                    if n.sid != root.sid
                        && let Some(why) = env.foreign_terminal(
                            root_env.get_or_insert_with(|| inspect.env(root.id.pid)),
                        )
                    {
                        out.skipped.push(skip(format!(
                            "{why}: never signalled, nor anything below it"
                        )));
                        continue;
                    }
                    // Detached: it left the pane's session (`setsid`), or it is an orphan the
                    // supervisor adopted (a double fork without `setsid`): any direct child of
                    // the supervisor but its first (the worker's script) was reparented to it.
                    let orphan = n.ppid == root.id.pid && Some(n.id.pid) != first_child;
                    let detached = n.sid != root.sid || orphan;
                    if detached && inspect.hosts_terminals(n.id.pid) {
                        // A tmux server under a name that does not say so (a copy named with
                        // more than 15 bytes), `screen`, `script`: what runs in its terminals
                        // may be anyone's.
                        server.get_or_insert(n.id.pid);
                        out.skipped.push(skip(
                            "hosts terminals (a tmux server under another name, screen, ...): never signalled, nor anything below it"
                                .into(),
                        ));
                        continue;
                    }
                    let shared = detached && inspect.listens(n.id.pid);
                    out.members.push(Member {
                        node: n.clone(),
                        detached,
                        shared,
                    });
                    if shared {
                        // What a shared daemon runs (its workers, a renamed tmux's panes)
                        // serves its clients too: nothing below it is the worker's alone.
                        self.skip_below(c, "below a shared daemon", &mut out.skipped);
                        continue;
                    }
                    next.push(c);
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        if let Some(server) = server {
            self.keep_detached_below_a_server(root, server, &mut out);
        }
        self.spare_namespace_inits(root, &mut out, inspect);
        out
    }

    /// A member that is the first process of a pid namespace takes everything in that
    /// namespace with it when it ends (the kernel kills the rest). When anything below it is
    /// spared (skipped, or a shared daemon), it is spared too: skipped, never signalled. What
    /// else runs below it is still judged on its own.
    fn spare_namespace_inits(&self, root: &Node, out: &mut Below, inspect: &dyn Inspect) {
        let spared: Vec<u32> = out
            .skipped
            .iter()
            .map(|s| s.id.pid)
            .chain(
                out.members
                    .iter()
                    .filter(|m| m.shared)
                    .map(|m| m.node.id.pid),
            )
            .collect();
        if spared.is_empty() {
            return;
        }
        let candidates: HashSet<u32> = out
            .members
            .iter()
            .filter(|m| !m.shared)
            .map(|m| m.node.id.pid)
            .collect();
        // Each member above a spared process (up to the supervisor), with that process.
        let mut above: HashMap<u32, u32> = HashMap::new();
        for p in spared {
            let mut cur = p;
            for _ in 0..MAX_DEPTH {
                let Some(n) = self.nodes.get(&cur) else {
                    break;
                };
                if n.ppid == root.id.pid || n.ppid <= 1 {
                    break;
                }
                if candidates.contains(&n.ppid) {
                    above.entry(n.ppid).or_insert(p);
                }
                cur = n.ppid;
            }
        }
        if above.is_empty() {
            return;
        }
        let mut kept = Vec::new();
        out.members.retain(|m| {
            let Some(&spared) = above.get(&m.node.id.pid) else {
                return true;
            };
            if !inspect.pid_ns_init(m.node.id.pid) {
                return true;
            }
            kept.push(Skipped {
                id: m.node.id,
                comm: m.node.comm.clone(),
                reason: format!(
                    "the first process of a pid namespace in which pid {spared} runs, which is not to be signalled: ending it would end everything in the namespace"
                ),
            });
            false
        });
        out.skipped.extend(kept);
    }

    /// With a tmux server below the worker (a team or session it started, re-parented to the
    /// supervisor when it daemonized), a detached member may have come from one of that
    /// server's panes (`setsid -f` typed there, a `pipe-pane` job): re-parented to the
    /// supervisor, it keeps no trace of that server, and nothing in its environment need say
    /// so (tmux sets none for `pipe-pane` jobs; `env -i` drops all). Every detached member, and
    /// everything below one, is then skipped: never signalled, reported.
    fn keep_detached_below_a_server(&self, root: &Node, server: u32, out: &mut Below) {
        let why = format!(
            "a tmux server runs below this worker (pid {server}): a detached process may have left one of its panes; never signalled, nor anything below it"
        );
        let mut kept: HashSet<u32> = HashSet::new();
        let below_kept = |pid: u32, kept: &HashSet<u32>| {
            let mut cur = pid;
            for _ in 0..MAX_DEPTH {
                let Some(n) = self.nodes.get(&cur) else {
                    return false;
                };
                if n.ppid == root.id.pid || n.ppid <= 1 {
                    return false;
                }
                if kept.contains(&n.ppid) {
                    return true;
                }
                cur = n.ppid;
            }
            false
        };
        let mut members = Vec::new();
        // Breadth first: a member's parent was judged before it.
        for m in std::mem::take(&mut out.members) {
            if m.detached || below_kept(m.node.id.pid, &kept) {
                kept.insert(m.node.id.pid);
                out.skipped.push(Skipped {
                    id: m.node.id,
                    comm: m.node.comm.clone(),
                    reason: why.clone(),
                });
            } else {
                members.push(m);
            }
        }
        out.members = members;
    }
}

/// What `TEAM_INCARNATION` a process carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvToken {
    Absent,
    /// Unreadable (a zombie, mid-exec): says nothing either way.
    Unreadable,
    /// Its value (every occurrence must agree, else the first differing one).
    Is(String),
}

/// What a walk reads of a process's environment, in one read: the worker token it carries and
/// the terminal tmux started it in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcEnv {
    /// `TEAM_INCARNATION`.
    pub incarnation: EnvToken,
    /// `TMUX`: the server (socket, pid, session) of the pane it was started in.
    pub tmux: EnvToken,
    /// `TMUX_PANE`: that pane.
    pub tmux_pane: EnvToken,
}

impl ProcEnv {
    /// An environment that says nothing.
    pub fn unknown() -> ProcEnv {
        ProcEnv {
            incarnation: EnvToken::Unreadable,
            tmux: EnvToken::Unreadable,
            tmux_pane: EnvToken::Unreadable,
        }
    }

    /// Why a process with this environment was started in a terminal other than the one of
    /// `root` (the worker's supervisor, which tmux started in the worker's pane); `None` when
    /// it may have been started in the worker's. A process below a supervisor can come from
    /// another terminal: a tmux server a worker started is re-parented to the supervisor when
    /// it daemonizes, and so is every process that leaves one of that server's panes (a
    /// `setsid -f` or `( cmd & )` typed there by the user). Each names the other server or
    /// pane in `TMUX`/`TMUX_PANE`, which tmux sets for every pane and the worker's own
    /// processes inherit from its supervisor. A process may drop or change these variables:
    /// that only keeps it from being signalled, never makes a foreign process ours.
    pub fn foreign_terminal(&self, root: &ProcEnv) -> Option<String> {
        for (var, mine, theirs) in [
            ("TMUX", &self.tmux, &root.tmux),
            ("TMUX_PANE", &self.tmux_pane, &root.tmux_pane),
        ] {
            let EnvToken::Is(v) = mine else {
                continue;
            };
            match theirs {
                EnvToken::Is(r) if r == v => {}
                EnvToken::Is(r) => {
                    return Some(format!(
                        "its {var} is {v:?}, not its supervisor's {r:?}: it was started in another terminal (a pane of another tmux server, or another pane)"
                    ));
                }
                _ => {
                    return Some(format!(
                        "its {var} is {v:?} and its supervisor's cannot be told: it may have been started in another terminal"
                    ));
                }
            }
        }
        None
    }
}

/// The `/proc` reads a walk needs beyond `stat`.
pub trait Inspect {
    fn our_uid(&self) -> u32;
    fn uid(&self, pid: u32) -> Option<u32>;
    /// `TEAM_INCARNATION`, `TMUX` and `TMUX_PANE`, from one read of its environment.
    fn env(&self, pid: u32) -> ProcEnv;
    /// Whether the process may serve clients on a socket: in any of its threads' descriptor
    /// tables, a listening unix or TCP socket, a bound unix datagram or UDP/UDP-Lite socket, or
    /// a socket of a kind the kernel's tables do not show (vsock, SCTP, ...), looked up in each
    /// thread's own network namespace. Unreadable: `true`.
    fn listens(&self, pid: u32) -> bool;
    /// Whether the process holds a pseudo-terminal's master side (`/dev/ptmx`): it hosts
    /// terminals, as a tmux server does under any name, or `screen`.
    fn hosts_terminals(&self, pid: u32) -> bool;
    /// Whether the process is the first process (pid 1) of a pid namespace other than ours:
    /// when it ends, the kernel kills everything in that namespace. Unreadable: `true`.
    fn pid_ns_init(&self, pid: u32) -> bool;
    /// Which child the supervisor `pid` says is its worker's main process
    /// ([`crate::supervisor::MainMark`]); `None` when none of its threads says (a supervisor
    /// of an older version, or one that has not started its main process yet).
    fn main_mark(&self, pid: u32) -> Option<crate::supervisor::MainMark>;
}

/// The real `/proc`.
#[derive(Debug)]
pub struct Proc {
    uid: u32,
}

impl Proc {
    pub fn new() -> Proc {
        Proc {
            uid: rustix::process::getuid().as_raw(),
        }
    }
}

/// The sockets the kernel's tables show in the network namespace `/proc/<pid>/task/<tid>`
/// sees (a process or thread in another namespace, `unshare -n`, has tables of its own).
struct SocketTables {
    /// Listening unix and TCP sockets, bound unix datagram sockets, and UDP and UDP-Lite
    /// sockets bound to a port.
    serving: HashSet<u64>,
    /// Every socket in the tables read, serving or not.
    known: HashSet<u64>,
}

/// `None` when the unix table cannot be read.
fn socket_tables(pid: u32, tid: u32) -> Option<SocketTables> {
    let read = |f: &str| {
        crate::process::read_procfs(format!("/proc/{pid}/task/{tid}/net/{f}"))
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    };
    let mut t = SocketTables {
        serving: HashSet::new(),
        known: HashSet::new(),
    };
    let unix = read("unix")?;
    t.serving.extend(listening_unix(&unix));
    t.known.extend(table_inodes(&unix, 6));
    for (f, serving) in [
        ("tcp", listening_tcp as fn(&str) -> Vec<u64>),
        ("tcp6", listening_tcp),
        ("udp", bound_udp),
        ("udp6", bound_udp),
        ("udplite", bound_udp),
        ("udplite6", bound_udp),
        ("raw", |_: &str| Vec::new()),
        ("raw6", |_: &str| Vec::new()),
        ("icmp", |_: &str| Vec::new()),
        ("icmp6", |_: &str| Vec::new()),
    ] {
        if let Some(text) = read(f) {
            t.serving.extend(serving(&text));
            t.known.extend(table_inodes(&text, 9));
        }
    }
    // Kernel-facing sockets (routing, audit, uevents; packet capture) serve no clients.
    if let Some(text) = read("netlink") {
        t.known.extend(table_inodes(&text, 9));
    }
    if let Some(text) = read("packet") {
        t.known.extend(table_inodes(&text, 8));
    }
    Some(t)
}

/// The inodes in column `col` of a `/proc/net` table (after its header line).
fn table_inodes(text: &str, col: usize) -> Vec<u64> {
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(col)?.parse().ok())
        .collect()
}

/// The threads of `pid` (its tasks); `None` when they cannot be listed.
fn tasks(pid: u32) -> Option<Vec<u32>> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    Some(
        dir.flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect(),
    )
}

/// The targets of the descriptors of thread `tid` of `pid` (a thread can have a table of its
/// own, `unshare(CLONE_FILES)`); `None` when they cannot be read.
fn fd_targets(pid: u32, tid: u32) -> Option<Vec<PathBuf>> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/task/{tid}/fd")).ok()?;
    Some(
        dir.flatten()
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .collect(),
    )
}

fn socket_inode(target: &std::path::Path) -> Option<u64> {
    target
        .to_str()?
        .strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

impl Default for Proc {
    fn default() -> Self {
        Proc::new()
    }
}

impl Inspect for Proc {
    fn our_uid(&self) -> u32 {
        self.uid
    }

    fn uid(&self, pid: u32) -> Option<u32> {
        crate::process::uid(pid).ok().flatten()
    }

    fn env(&self, pid: u32) -> ProcEnv {
        crate::process::proc_env(pid)
    }

    fn listens(&self, pid: u32) -> bool {
        // Unreadable: it may well serve. Shared is the safe answer for a detached process.
        let Some(tids) = tasks(pid) else {
            return true;
        };
        // The sockets of every thread, by the network namespace the thread is in.
        let mut by_ns: HashMap<PathBuf, (u32, HashSet<u64>)> = HashMap::new();
        for tid in tids {
            let Some(targets) = fd_targets(pid, tid) else {
                if std::path::Path::new(&format!("/proc/{pid}/task/{tid}")).exists() {
                    return true;
                }
                continue; // the thread has exited
            };
            let sockets: HashSet<u64> = targets.iter().filter_map(|t| socket_inode(t)).collect();
            if sockets.is_empty() {
                continue;
            }
            let Ok(ns) = std::fs::read_link(format!("/proc/{pid}/task/{tid}/ns/net")) else {
                return true;
            };
            by_ns
                .entry(ns)
                .or_insert((tid, HashSet::new()))
                .1
                .extend(sockets);
        }
        by_ns
            .values()
            .any(|(tid, sockets)| match socket_tables(pid, *tid) {
                // A socket no table shows is of a kind that may serve (vsock, SCTP, ...), or
                // comes from another namespace.
                Some(t) => sockets
                    .iter()
                    .any(|i| t.serving.contains(i) || !t.known.contains(i)),
                None => true,
            })
    }

    fn hosts_terminals(&self, pid: u32) -> bool {
        tasks(pid).into_iter().flatten().any(|tid| {
            fd_targets(pid, tid).into_iter().flatten().any(|t| {
                t == std::path::Path::new("/dev/ptmx") || t == std::path::Path::new("/dev/pts/ptmx")
            })
        })
    }

    fn pid_ns_init(&self, pid: u32) -> bool {
        let Ok(status) = crate::process::read_procfs(format!("/proc/{pid}/status")) else {
            return true;
        };
        String::from_utf8_lossy(&status)
            .lines()
            .find_map(|l| l.strip_prefix("NSpid:"))
            .is_none_or(|ids| {
                let ids: Vec<&str> = ids.split_whitespace().collect();
                ids.len() > 1 && ids.last() == Some(&"1")
            })
    }

    fn main_mark(&self, pid: u32) -> Option<crate::supervisor::MainMark> {
        // A supervisor has a few threads: the main loop (named like the process), the signal
        // forwarder, and the one named after the main process.
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .ok()?
            .flatten()
            .filter(|t| t.file_name().to_str() != Some(&pid.to_string()))
            .find_map(|t| {
                let comm = crate::process::read_procfs(t.path().join("comm")).ok()?;
                crate::supervisor::MainMark::parse(&String::from_utf8_lossy(&comm))
            })
    }
}

/// The inodes of listening unix sockets in the text of `/proc/net/unix` (flag `__SO_ACCEPTCON`
/// = 0x10000, state 01).
pub fn listening_unix(text: &str) -> Vec<u64> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let flags = u64::from_str_radix(f.get(3)?, 16).ok()?;
            let listening = flags & 0x10000 != 0;
            // A datagram socket bound to a name serves whoever sends to it (syslog- or
            // notify-style): type 0002 with a path (or an abstract `@name`).
            let bound_dgram = f.get(4) == Some(&"0002") && f.get(7).is_some();
            (listening || bound_dgram).then(|| f.get(6)?.parse().ok())?
        })
        .collect()
}

/// The inodes of UDP sockets bound to a local port in the text of `/proc/net/udp{,6}` (a UDP
/// server has no listening state: any bound port may serve).
pub fn bound_udp(text: &str) -> Vec<u64> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let port = f.get(1)?.rsplit(':').next()?;
            (port != "0000").then(|| f.get(9)?.parse().ok())?
        })
        .collect()
}

/// The inodes of listening TCP sockets in the text of `/proc/net/tcp{,6}` (state `0A`).
pub fn listening_tcp(text: &str) -> Vec<u64> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (*f.get(3)? == "0A").then(|| f.get(9)?.parse().ok())?
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn num_threads_is_field_20() {
        let line =
            b"4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 7 0 123456 0 0";
        assert_eq!(num_threads(line), Some(7));
        assert_eq!(parse_stat(line).unwrap().id.start_time, 123456);
        assert_eq!(num_threads(b"garbage"), None);
    }

    fn node(pid: u32, ppid: u32, sid: u32, comm: &str) -> Node {
        Node {
            id: ProcId {
                pid,
                start_time: u64::from(pid) * 10,
            },
            ppid,
            sid,
            state: b'S',
            comm: comm.into(),
        }
    }

    struct Fake {
        env: HashMap<u32, &'static str>,
        tmux: HashMap<u32, &'static str>,
        listen: HashSet<u32>,
        foreign: HashSet<u32>,
        main: Option<crate::supervisor::MainMark>,
        terminals: HashSet<u32>,
        ns_inits: HashSet<u32>,
    }

    impl Inspect for Fake {
        fn our_uid(&self) -> u32 {
            1000
        }
        fn uid(&self, pid: u32) -> Option<u32> {
            Some(if self.foreign.contains(&pid) { 0 } else { 1000 })
        }
        fn env(&self, pid: u32) -> ProcEnv {
            ProcEnv {
                incarnation: self
                    .env
                    .get(&pid)
                    .map_or(EnvToken::Absent, |v| EnvToken::Is((*v).into())),
                tmux: self
                    .tmux
                    .get(&pid)
                    .map_or(EnvToken::Absent, |v| EnvToken::Is((*v).into())),
                tmux_pane: EnvToken::Absent,
            }
        }
        fn listens(&self, pid: u32) -> bool {
            self.listen.contains(&pid)
        }
        fn hosts_terminals(&self, pid: u32) -> bool {
            self.terminals.contains(&pid)
        }
        fn pid_ns_init(&self, pid: u32) -> bool {
            self.ns_inits.contains(&pid)
        }
        fn main_mark(&self, _pid: u32) -> Option<crate::supervisor::MainMark> {
            self.main
        }
    }

    #[test]
    fn parses_stat_with_a_hostile_comm() {
        let line =
            b"4242 (tmux: server) S 1 4242 4242 0 -1 4194624 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0";
        let n = parse_stat(line).unwrap();
        assert_eq!(
            (n.id.pid, n.ppid, n.sid, n.id.start_time),
            (4242, 1, 4242, 777)
        );
        assert!(n.is_tmux());
        let line = b"7 (a) b (c) R 3 7 9 0 -1 4194624 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0";
        let n = parse_stat(line).unwrap();
        assert_eq!(
            (n.comm.as_str(), n.ppid, n.sid, n.id.start_time),
            ("a) b (c", 3, 9, 99)
        );
        assert!(parse_stat(b"garbage").is_none());
        assert!(parse_stat(b"1 (x) S 1").is_none());
    }

    #[test]
    fn walk_keeps_out_tmux_servers_supervisors_and_other_incarnations() {
        // 10 supervisor (sid 10) -> 11 agent -> 12 setsid env -i child (sid 12)
        //                        -> 27 from another server's pane (TMUX) -> 28
        //                        -> 13 tmux server (nested team) -> 14 B's leader shell
        //                        -> 15 another supervisor -> 16
        //                        -> 17 with another TEAM_INCARNATION -> 18
        //                        -> 19 detached listener (shared daemon)
        //                        -> 20 root-owned
        let t = Tree::from_nodes([
            node(10, 1, 10, crate::supervisor::COMM),
            node(11, 10, 10, "codex"),
            node(12, 11, 12, "sleep"),
            node(13, 10, 13, "tmux: client"),
            node(14, 13, 14, "bash"),
            node(15, 10, 15, crate::supervisor::COMM),
            node(16, 15, 15, "sh"),
            node(17, 11, 10, "bash"),
            node(18, 17, 10, "sleep"),
            node(19, 10, 19, "daemon"),
            node(20, 11, 10, "sudo"),
            Node {
                state: b'Z',
                ..node(21, 10, 10, "sh")
            },
            node(22, 21, 22, "sleep"),
            node(23, 19, 19, "daemon-worker"),
            node(24, 10, 10, "double-forked"),
            node(25, 10, 25, "mux: client"),
            node(26, 25, 26, "sleep"),
            // Left a pane of a tmux server the worker started (re-parented to the
            // supervisor), and what it started; and one in the worker's own terminal.
            node(27, 10, 27, "sleep"),
            node(28, 27, 27, "sleep"),
            node(29, 11, 10, "make"),
            node(99, 1, 99, "unrelated"),
        ]);
        let fake = Fake {
            env: HashMap::from([(11, "inc-a"), (17, "inc-b"), (19, "inc-a")]),
            tmux: HashMap::from([
                (10, "/s/team,100,0"),
                (11, "/s/team,100,0"),
                (27, "/s/nested,200,0"),
                (28, "/s/nested,200,0"),
                (29, "/s/team,100,0"),
            ]),
            listen: HashSet::from([19, 11, 24]),
            foreign: HashSet::from([20]),
            main: None,
            terminals: HashSet::new(),
            ns_inits: HashSet::new(),
        };
        let b = below10(&t, &fake);
        let mut pids: Vec<u32> = b.members.iter().map(|m| m.node.id.pid).collect();
        pids.sort();
        assert_eq!(
            pids,
            vec![11, 12, 19, 22, 24, 29],
            "a zombie's children are still walked"
        );
        let m = |p: u32| b.members.iter().find(|m| m.node.id.pid == p).unwrap();
        assert!(
            !m(11).detached && !m(11).shared,
            "attached listeners are the agent's own"
        );
        assert!(m(12).detached && !m(12).shared);
        assert!(m(19).detached && m(19).shared);
        assert!(
            m(24).detached && m(24).shared,
            "an orphan the supervisor adopted is detached, even in the pane's session"
        );
        let mut skipped: Vec<u32> = b.skipped.iter().map(|s| s.id.pid).collect();
        skipped.sort();
        assert_eq!(
            skipped,
            vec![13, 15, 17, 20, 23, 25, 27],
            "tmux (renamed too), supervisors, other incarnations, other uids, below a shared daemon, another terminal"
        );
    }

    #[test]
    fn the_main_process_is_the_one_the_supervisor_names_not_the_oldest_child() {
        // 10 supervisor -> 24 double-forked listener in the pane's session (adopted), and
        // 26 an attached process started after it; the main process (11) is gone.
        let t = Tree::from_nodes([
            node(10, 1, 10, crate::supervisor::COMM),
            node(24, 10, 10, "fake-daemon"),
            node(26, 10, 10, "sleep"),
        ]);
        let mut fake = Fake {
            listen: HashSet::from([24]),
            main: Some(crate::supervisor::MainMark::Ended),
            ..fake()
        };
        let shared = |fake: &Fake| -> Vec<u32> {
            let b = below10(&t, fake);
            let mut v: Vec<u32> = b
                .members
                .iter()
                .filter(|m| m.shared)
                .map(|m| m.node.id.pid)
                .collect();
            v.sort();
            v
        };
        assert_eq!(
            shared(&fake),
            vec![24],
            "main ended: every child is an orphan"
        );
        fake.main = Some(crate::supervisor::MainMark::Running(11));
        assert_eq!(shared(&fake), vec![24], "main exited, not yet reaped");
        fake.main = Some(crate::supervisor::MainMark::Running(24));
        assert_eq!(shared(&fake), Vec::<u32>::new(), "the main process itself");
    }

    fn fake() -> Fake {
        Fake {
            env: HashMap::new(),
            tmux: HashMap::new(),
            listen: HashSet::new(),
            foreign: HashSet::new(),
            main: None,
            terminals: HashSet::new(),
            ns_inits: HashSet::new(),
        }
    }

    fn sorted(mut v: Vec<u32>) -> Vec<u32> {
        v.sort();
        v
    }

    /// The walk below supervisor 10 with worker token `inc-a`.
    fn below10(t: &Tree, f: &Fake) -> Below {
        t.below(t.node(10).unwrap(), "inc-a", f)
    }

    /// The members' pids, sorted.
    fn member_pids(b: &Below) -> Vec<u32> {
        sorted(b.members.iter().map(|m| m.node.id.pid).collect())
    }

    /// The skipped pids, sorted.
    fn skipped_pids(b: &Below) -> Vec<u32> {
        sorted(b.skipped.iter().map(|s| s.id.pid).collect())
    }

    #[test]
    fn the_first_process_of_a_pid_namespace_is_spared_with_what_it_holds() {
        // 10 supervisor -> 11 agent -> 12 `unshare -pf` -> 13 the namespace's pid 1 ->
        //   14 a shared daemon (detached, listening), 15 an ordinary child
        let t = Tree::from_nodes([
            node(10, 1, 10, crate::supervisor::COMM),
            node(11, 10, 10, "sh"),
            node(12, 11, 10, "unshare"),
            node(13, 12, 10, "sleep"),
            node(14, 13, 14, "daemon"),
            node(15, 13, 10, "make"),
        ]);
        let mut f = fake();
        f.listen.insert(14);
        f.ns_inits.insert(13);
        let b = below10(&t, &f);
        let members = member_pids(&b);
        assert_eq!(
            members,
            vec![11, 12, 14, 15],
            "the init is spared, the rest judged"
        );
        let init = b
            .skipped
            .iter()
            .find(|s| s.id.pid == 13)
            .expect("13 skipped");
        assert!(init.reason.contains("pid namespace"), "{}", init.reason);
        // Not an init: judged like any process.
        f.ns_inits.clear();
        let b = below10(&t, &f);
        assert!(b.members.iter().any(|m| m.node.id.pid == 13));
        // An init with nothing spared below it ends with the rest.
        f.ns_inits.insert(13);
        f.listen.clear();
        let b = below10(&t, &f);
        assert!(b.members.iter().any(|m| m.node.id.pid == 13));
    }

    #[test]
    fn a_terminal_host_under_any_name_keeps_the_detached_processes() {
        // 10 supervisor -> 11 agent -> 12 detached leftover; 24 a tmux copy whose name says
        // nothing (`abcdefghijklmno`), holding pty masters -> 25 its pane's shell
        let t = Tree::from_nodes([
            node(10, 1, 10, crate::supervisor::COMM),
            node(11, 10, 10, "sh"),
            node(12, 11, 12, "sleep"),
            node(24, 10, 24, "abcdefghijklmno"),
            node(25, 24, 25, "bash"),
        ]);
        let mut f = fake();
        f.terminals.insert(24);
        let b = below10(&t, &f);
        let members: Vec<u32> = b.members.iter().map(|m| m.node.id.pid).collect();
        assert_eq!(members, vec![11]);
        assert_eq!(skipped_pids(&b), vec![12, 24]);
        // Without its terminals it is a detached leftover like 12.
        f.terminals.clear();
        let b = below10(&t, &f);
        assert_eq!(member_pids(&b), vec![11, 12, 24, 25]);
    }

    #[test]
    fn a_tmux_server_named_with_a_cut_title_keeps_the_detached_processes() {
        // tmux names its server `<name>: server`, cut at the last space when that is longer
        // than 15 bytes: `tmux-next:`; a client says `: client`.
        for (comm, keeps) in [
            ("tmux-next:", true),
            ("tmux3.5:", true),
            ("mx: server", true),
            ("tmux: client", false),
            ("tmux", false),
        ] {
            let t = Tree::from_nodes([
                node(10, 1, 10, crate::supervisor::COMM),
                node(11, 10, 10, "sh"),
                node(12, 11, 12, "sleep"),
                node(24, 10, 24, comm),
            ]);
            let b = below10(&t, &fake());
            let kept = b.skipped.iter().any(|s| s.id.pid == 12);
            assert_eq!(kept, keeps, "{comm}");
        }
    }

    #[test]
    fn main_marks_round_trip_and_nothing_else_parses() {
        use crate::supervisor::MainMark;
        for m in [
            MainMark::Running(4194304),
            MainMark::Ended,
            MainMark::Running(1),
        ] {
            assert!(m.thread_name().len() <= 15);
            assert_eq!(MainMark::parse(&m.thread_name()), Some(m));
        }
        assert_eq!(MainMark::parse("main 12\n"), Some(MainMark::Running(12)));
        for bad in [
            "main ",
            "main 0",
            "main 1x",
            "main -1",
            "team-supervise",
            "mainly 3",
            "",
        ] {
            assert_eq!(MainMark::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn with_a_tmux_server_below_no_detached_process_is_the_workers() {
        // 10 supervisor -> 11 agent -> 12 setsid child (detached) -> 30 its child (attached to 12)
        //               -> 13 tmux server (a team the worker started) -> 14 a pane's shell
        //               -> 24 re-parented orphan (left a pane of 13, environment cleared)
        //               -> 31 in the supervisor's session -> 32
        let t = Tree::from_nodes([
            node(10, 1, 10, crate::supervisor::COMM),
            node(11, 10, 10, "codex"),
            node(12, 11, 12, "sleep"),
            node(30, 12, 12, "sleep"),
            node(13, 10, 13, "mux: server"),
            node(14, 13, 14, "bash"),
            node(24, 10, 24, "sleep"),
            node(31, 11, 10, "make"),
            node(32, 31, 10, "cc"),
        ]);
        let fake = fake();
        let b = below10(&t, &fake);
        assert_eq!(
            member_pids(&b),
            vec![11, 31, 32],
            "only what stays in the pane's session"
        );
        assert_eq!(skipped_pids(&b), vec![12, 13, 24, 30]);
        // Without the server, the detached ones are the worker's again.
        let t = Tree::from_nodes([
            node(10, 1, 10, crate::supervisor::COMM),
            node(11, 10, 10, "codex"),
            node(12, 11, 12, "sleep"),
            node(30, 12, 12, "sleep"),
            node(24, 10, 24, "sleep"),
        ]);
        let b = below10(&t, &fake);
        assert_eq!(member_pids(&b), vec![11, 12, 24, 30]);
    }

    #[test]
    fn listening_sockets_parse() {
        let unix = "Num       RefCount Protocol Flags    Type St Inode Path\n\
                    0000: 00000002 00000000 00010000 0001 01 4711 /tmp/codex-daemon-0/s\n\
                    0000: 00000003 00000000 00000000 0001 03 4712 /tmp/codex-daemon-0/s\n\
                    0000: 00000002 00000000 00000000 0002 01 4713 /tmp/dgram.sock\n\
                    0000: 00000002 00000000 00000000 0002 01 4714\n";
        assert_eq!(
            listening_unix(unix),
            vec![4711, 4713],
            "a bound datagram socket serves"
        );
        let tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
                   0: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1660 1\n\
                   1: 0100007F:07E8 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 1661 1\n";
        assert_eq!(listening_tcp(tcp), vec![1660]);
        let udp = "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n\
                   1: 0100007F:B3AF 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 7001 2\n\
                   2: 00000000:0000 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 7002 2\n";
        assert_eq!(bound_udp(udp), vec![7001]);
    }

    proptest::proptest! {
        #[test]
        fn stat_parser_never_panics(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            let _ = parse_stat(&b);
        }
    }
}
