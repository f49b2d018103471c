//! The integration-test harness: real binaries, real tmux, private servers only.
//!
//! - [`bin`] builds the three binaries once per test run (with fail points compiled in), since
//!   `cargo test` does not build other packages' binaries. It builds them into the normal
//!   target directory with the feature set of `cargo test --workspace --all-features`, so the
//!   dependencies the test build compiled are reused, not compiled a second time.
//! - [`TmuxServer`] is a tmux server on a socket in its own temp dir, started with
//!   `-f /dev/null`, and killed on drop (also on panic).
//! - [`Sandbox`] is a workspace plus a private `TMUX_TMPDIR`; every command it makes starts
//!   from an empty environment plus an allowlist ([`Sandbox::command`]), and on drop it kills
//!   every server whose socket lies in it.
//!
//! Nothing here ever talks to a tmux server it did not start.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **The tests' `HOME`** is an empty directory (`target/tmp/test-home`, or the sandbox's), so no
//!   `~/.gitconfig` or `~/.tmux.conf` of the machine applies.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// The arguments of the one `cargo build` that makes the binaries for the tests: the three
/// binaries with every feature (fail points included), in the normal target directory.
/// `--workspace --all-features` resolves the features `cargo test --workspace --all-features`
/// (the README's and CI's command) resolves (this package takes its test-only crates as normal
/// dependencies so that holds without dev-dependencies), so every dependency that build made
/// is reused as is and only the three binaries compile. Measured on a fresh clone: 3 crates
/// compiled, 0 dependencies.
pub const BUILD_ARGS: &[&str] = &[
    "build",
    "--quiet",
    "--workspace",
    "--all-features",
    "--bin",
    "team-scale",
    "--bin",
    "team-reap",
    "--bin",
    "team-audit",
    "--bin",
    "fake-agent",
    "--bin",
    "fake-daemon",
];

/// The path of a binary of the workspace (`team-scale`, `team-reap`, `team-audit`, and the
/// test programs `fake-agent` and `fake-daemon`), built
/// once per test process with fail points (see [`BUILD_ARGS`]).
pub fn bin(name: &str) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let dir = BUILT.get_or_init(|| {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace_root().join("target"));
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .current_dir(workspace_root())
            .args(BUILD_ARGS)
            .status()
            .expect("run cargo build for the test binaries");
        assert!(status.success(), "building the binaries failed");
        target.join("debug")
    });
    let p = dir.join(name);
    assert!(p.exists(), "{} was not built", p.display());
    p
}

/// A command with a hermetic environment: nothing of the test process's environment but
/// [`ALLOWED_ENV`], and `HOME` set to an empty directory of the build's temp area (so no
/// `~/.gitconfig`, `~/.tmux.conf` or shell profile of the machine applies). Every program the
/// tests run (our binaries, `git`, `sleep`, helpers) starts from this; a test adds what it
/// needs with `.env(...)`. [`Sandbox::command`] is the same with the sandbox's own `HOME`.
pub fn hermetic(program: impl AsRef<std::ffi::OsStr>) -> Command {
    static HOME: OnceLock<PathBuf> = OnceLock::new();
    let home = HOME.get_or_init(|| {
        let h = workspace_root().join("target/tmp/test-home");
        std::fs::create_dir_all(&h).expect("create the tests' HOME");
        h
    });
    let mut c = Command::new(program);
    c.env_clear();
    for k in ALLOWED_ENV {
        if let Some(v) = std::env::var_os(k) {
            c.env(k, v);
        }
    }
    c.env("HOME", home);
    c
}

/// The tmux binary.
pub fn tmux_bin() -> PathBuf {
    PathBuf::from("tmux")
}

/// Runs tmux on `sock` with `args`, with `TMUX`/`TMUX_PANE` cleared.
pub fn tmux_at(sock: &Path, args: &[&str]) -> Output {
    Command::new(tmux_bin())
        .arg("-S")
        .arg(sock)
        .args(args)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .stdin(Stdio::null())
        .output()
        .expect("run tmux")
}

/// Turns on `team-core`'s native tmux client in this test process, as the binaries do (with
/// this process's environment; `TMUX`, `TMUX_PANE` and `TEAM_*` are dropped by it).
pub fn native_client() {
    team_core::tmux::wire::configure(std::env::vars_os());
}

/// Kills the server on `sock` (explicit socket only).
pub fn kill_server(sock: &Path) {
    let _ = tmux_at(sock, &["kill-server"]);
}

/// A private tmux server for one test.
pub struct TmuxServer {
    pub dir: tempfile::TempDir,
    pub sock: PathBuf,
}

impl TmuxServer {
    /// Starts a server with one session `base` (a long `sleep` in its pane).
    pub fn start() -> TmuxServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let sock = dir.path().join("sock");
        let s = TmuxServer { dir, sock };
        s.start_again();
        s
    }

    /// Starts a server as [`TmuxServer::start`] does, with `PATH` set to `path` for it (and so
    /// for its global environment).
    pub fn start_with_path(path: &str) -> TmuxServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let sock = dir.path().join("sock");
        let s = TmuxServer { dir, sock };
        s.start_with(Some(path));
        s
    }

    /// Starts a (new) server on the same socket.
    pub fn start_again(&self) {
        self.start_with(None);
    }

    fn start_with(&self, path: Option<&str>) {
        // A server that was just killed may still be exiting: retry briefly.
        let mut last = String::new();
        for _ in 0..50 {
            let mut c = Command::new(tmux_bin());
            if let Some(p) = path {
                c.env("PATH", p);
            }
            let o = c
                .arg("-S")
                .arg(&self.sock)
                .args([
                    "-f",
                    "/dev/null",
                    "new-session",
                    "-d",
                    "-s",
                    "base",
                    "-x",
                    "200",
                    "-y",
                    "50",
                    "sleep 100000",
                ])
                .env_remove("TMUX")
                .env_remove("TMUX_PANE")
                .output()
                .expect("start tmux");
            if o.status.success() {
                return;
            }
            last = String::from_utf8_lossy(&o.stderr).into_owned();
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("tmux start: {last}");
    }

    /// Runs tmux on this server; panics unless it succeeds; returns stdout.
    pub fn tmux(&self, args: &[&str]) -> String {
        let o = tmux_at(&self.sock, args);
        assert!(
            o.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// A `team-core` handle on this server, speaking tmux's protocol as the binaries do.
    pub fn core(&self) -> team_core::tmux::Tmux {
        native_client();
        team_core::tmux::Tmux::new(tmux_bin(), &self.sock)
    }

    /// Kills the server now.
    pub fn kill(&self) {
        kill_server(&self.sock);
    }
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The only variables of the test process's environment the binaries see.
pub const ALLOWED_ENV: &[&str] = &["PATH", "LANG"];

/// A workspace and a private `TMUX_TMPDIR` for running the binaries.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
    pub ws: PathBuf,
    pub tt: PathBuf,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::tempdir().expect("temp dir");
        let ws = dir.path().join("ws");
        let tt = dir.path().join("tt");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&tt).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        let ws = ws.canonicalize().unwrap();
        Sandbox { dir, ws, tt }
    }

    /// A command for one of our binaries, in the workspace, with a clean environment.
    /// `team-reap` also gets `--lock-file` in this sandbox: its default lock
    /// (`/tmp/tmux-<uid>/team-reap.lock`) is one per user, shared by every test.
    pub fn cmd(&self, name: &str) -> Command {
        let mut c = self.bare(name);
        if name == "team-reap" {
            c.arg("--lock-file").arg(self.reap_lock());
        }
        c
    }

    /// A command for one of our binaries with no argument added (for tests of the command
    /// line itself).
    pub fn bare(&self, name: &str) -> Command {
        self.command(bin(name))
    }

    /// The reaper lock [`Sandbox::cmd`] gives `team-reap`.
    pub fn reap_lock(&self) -> PathBuf {
        self.dir.path().join("reap").join("team-reap.lock")
    }

    /// Any program, in the workspace, with the same clean environment as [`Sandbox::cmd`]:
    /// nothing of the caller's environment but `PATH` and `LANG`, plus `HOME` (a directory of
    /// the sandbox), `TMUX_TMPDIR` (the sandbox's), `TEAM_TMUX_CONFIG=/dev/null` and
    /// `SHELL=/bin/sh`. A test adds what it needs with `.env(...)`.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        c.current_dir(&self.ws).env_clear();
        for k in ALLOWED_ENV {
            if let Some(v) = std::env::var_os(k) {
                c.env(k, v);
            }
        }
        c.env("HOME", self.home())
            .env("TMUX_TMPDIR", &self.tt)
            .env("TEAM_TMUX_CONFIG", "/dev/null")
            .env("SHELL", "/bin/sh")
            .stdin(Stdio::null());
        c
    }

    /// Runs `team-scale args` in a private mount namespace where `src` is bind-mounted on
    /// `dst` (the namespace, and the mount, end with the command). `None` when this machine
    /// gives no private mount namespace (it needs root): the caller's test then says so and
    /// stops.
    pub fn team_scale_with_bind_mount(
        &self,
        src: &Path,
        dst: &Path,
        args: &[&str],
    ) -> Option<std::process::Output> {
        let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
        self.sh_in_private_mount_namespace(&format!(
            "mount --bind '{}' '{}' || exit 200; exec '{}' {}",
            src.display(),
            dst.display(),
            bin("team-scale").display(),
            quoted.join(" ")
        ))
    }

    /// Runs `sh -c script` in a private mount namespace (its mounts end with the last process
    /// in it). The script exits 200 when a mount fails. `None` when this machine gives no
    /// private mount namespace (it needs root): the caller's test then says so and stops.
    pub fn sh_in_private_mount_namespace(&self, script: &str) -> Option<std::process::Output> {
        let o = self
            .command("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c", script])
            .output()
            .unwrap();
        if o.status.code() == Some(200) || o.status.code() == Some(1) && o.stdout.is_empty() {
            eprintln!(
                "no private mount namespace here (needs root): the mount test not run: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            return None;
        }
        Some(o)
    }

    /// The sandbox's `HOME`.
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// Runs `name args...` and returns its output.
    pub fn run(&self, name: &str, args: &[&str]) -> Output {
        self.cmd(name).args(args).output().expect("run binary")
    }

    /// The private socket `team-scale init --private` uses for this workspace.
    pub fn private_sock(&self) -> PathBuf {
        team_core::paths::private_endpoint(&self.tt, &self.ws)
    }

    /// The state root.
    pub fn root(&self) -> team_core::paths::StateRoot {
        team_core::paths::StateRoot::resolve(&self.ws, None).unwrap()
    }

    /// Every socket in this sandbox's tmux socket directory.
    pub fn sockets(&self) -> Vec<PathBuf> {
        let dir = team_core::paths::tmux_socket_dir(&self.tt);
        std::fs::read_dir(dir)
            .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
            .unwrap_or_default()
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        for s in self.sockets() {
            kill_server(&s);
        }
    }
}

/// Parses JSON lines.
pub fn json_lines(out: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(out)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
        .collect()
}

/// Asserts an exit status, showing stderr when it differs.
#[track_caller]
pub fn assert_code(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "expected exit {code}; stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Checks the audit log at `path`: every intent written by our tools has exactly one outcome
/// (`complete` or `failed`) with the same `audit_id`, and no outcome lacks its intent. Returns
/// the number of intent/outcome pairs.
#[track_caller]
pub fn assert_audit_pairs(path: &Path) -> usize {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut by_id: std::collections::BTreeMap<String, (u32, u32)> = Default::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let r: serde_json::Value = serde_json::from_str(line).expect("audit lines are JSON");
        if !r["caller"].as_str().unwrap_or("").starts_with("team-") {
            continue;
        }
        let e = by_id
            .entry(r["audit_id"].as_str().unwrap_or("").to_string())
            .or_default();
        match r["stage"].as_str() {
            Some("intent") => e.0 += 1,
            Some("complete" | "failed") => e.1 += 1,
            _ => {}
        }
    }
    for (id, (i, o)) in &by_id {
        assert_eq!((*i, *o), (1, 1), "audit id {id}: {i} intents, {o} outcomes");
    }
    by_id.len()
}

/// Waits (polling every 25 ms) until `ok`, failing the test after `timeout`.
pub fn wait_for(what: &str, timeout: std::time::Duration, mut ok: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + timeout;
    while !ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
}

/// One of the test's own processes, named by its pid *and* its start time. Pids are recycled
/// (`pid_max` is 32768 on many machines, and a test run forks tens of thousands of processes),
/// so a bare pid may name another test's process, or anyone's, by the time it is checked or
/// signalled: a check by pid alone can pass for a process that was killed, and a kill by pid
/// alone can end a stranger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Own {
    pub pid: u32,
    /// `None`: no process had this pid when it was taken (it is never alive).
    start: Option<u64>,
}

impl Own {
    /// The process that has pid `pid` now (take it while the process surely is the test's:
    /// right after starting it or reading the pid it wrote).
    pub fn now(pid: u32) -> Own {
        Own {
            pid,
            start: stat_start(pid),
        }
    }

    /// Whether this very process still runs (not a zombie, not a newer process on its pid).
    pub fn alive(&self) -> bool {
        self.start.is_some() && stat_start(self.pid) == self.start
    }

    /// Sends `sig` through a pidfd opened and then checked to be this process: never to a
    /// pid recycled since.
    pub fn signal(&self, sig: rustix::process::Signal) {
        use rustix::process::{Pid, PidfdFlags, pidfd_open, pidfd_send_signal};
        let Some(pid) = Pid::from_raw(self.pid as i32) else {
            return;
        };
        let Ok(fd) = pidfd_open(pid, PidfdFlags::empty()) else {
            return;
        };
        if self.alive() {
            let _ = pidfd_send_signal(&fd, sig);
        }
    }

    /// SIGKILL (see [`Own::signal`]).
    pub fn kill(&self) {
        self.signal(rustix::process::Signal::KILL);
    }
}

impl std::fmt::Display for Own {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.pid)
    }
}

/// The start time (field 22 of `/proc/<pid>/stat`) of `pid` when it runs and is no zombie.
fn stat_start(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let f: Vec<&str> = s.get(s.rfind(')')? + 1..)?.split_whitespace().collect();
    if f.first() == Some(&"Z") {
        return None;
    }
    f.get(19)?.parse().ok()
}

/// Whether `p` still runs (see [`Own`]).
pub fn alive(p: Own) -> bool {
    p.alive()
}

/// Ends a test's own processes when the test ends however it ends (a worker that ignores
/// hangups outlives its tmux server; a lookalike lives until killed): each only while it is
/// the very process named ([`Own::kill`]).
pub struct KillOnDrop(pub Vec<Own>);

impl KillOnDrop {
    /// The processes that have these pids now.
    pub fn now(pids: impl IntoIterator<Item = u32>) -> KillOnDrop {
        KillOnDrop(pids.into_iter().map(Own::now).collect())
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for p in &self.0 {
            p.kill();
        }
    }
}

/// A listener that answers every command it is sent with `stdout` (nothing when empty) and
/// tmux's "exit 0", as no tmux server answers a listing (a server with no pane at all has
/// exited, and a real one prints each pane in the asked format). Runs until `stop` is set.
pub fn impostor_tmux(
    sock: &Path,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    stdout: &'static [u8],
) {
    fn msg(kind: u32, data: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(&((16 + data.len()) as u16).to_ne_bytes());
        m.extend_from_slice(&0u16.to_ne_bytes());
        m.extend_from_slice(&8u32.to_ne_bytes());
        m.extend_from_slice(&u32::MAX.to_ne_bytes());
        m.extend_from_slice(data);
        m
    }
    use std::io::{Read, Write};
    let l = std::os::unix::net::UnixListener::bind(sock).unwrap();
    l.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let Ok((mut c, _)) = l.accept() else {
                std::thread::sleep(std::time::Duration::from_millis(5));
                continue;
            };
            let _ = c.set_nonblocking(false);
            let _ = c.set_read_timeout(Some(std::time::Duration::from_secs(2)));
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            // Read whole messages until the command (type 200) has come.
            'conn: loop {
                let mut at = 0;
                while buf.len() >= at + 16 {
                    let kind = u32::from_ne_bytes(buf[at..at + 4].try_into().unwrap());
                    let len = u16::from_ne_bytes(buf[at + 4..at + 6].try_into().unwrap()) as usize;
                    if len < 16 || buf.len() < at + len {
                        break;
                    }
                    if kind == 200 {
                        let mut answer = Vec::new();
                        if !stdout.is_empty() {
                            // Stream 1 on the client's stdout, then its data (MSG_WRITE_OPEN,
                            // MSG_WRITE), as a server prints.
                            let mut open = 1i32.to_ne_bytes().to_vec();
                            open.extend_from_slice(&1i32.to_ne_bytes());
                            open.extend_from_slice(&0i32.to_ne_bytes());
                            answer.extend(msg(303, &open));
                            let mut data = 1i32.to_ne_bytes().to_vec();
                            data.extend_from_slice(stdout);
                            answer.extend(msg(304, &data));
                        }
                        answer.extend(msg(203, &0i32.to_ne_bytes()));
                        let _ = c.write_all(&answer);
                        // As a server does: the client hangs up first (it may still answer
                        // our messages meanwhile).
                        while matches!(c.read(&mut chunk), Ok(n) if n > 0) {}
                        break 'conn;
                    }
                    at += len;
                }
                match c.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
        }
    });
}
