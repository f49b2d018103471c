//! `team-scale supervise` (hidden): the first process of every worker pane.
//!
//! It makes itself a child subreaper, so everything the worker starts (`setsid` and
//! double-forked daemons included) stays below it and can be proven the worker's by ancestry;
//! names itself `team-supervise`; runs the worker's startup script as its child with every
//! inherited `TEAM_*` variable removed (the script sets the worker's own), `sh` reading it
//! from a sealed memory copy of the script, made once the file opened with no symlink on its
//! path had one link and the digest `up` started the pane with (`/bin/sh /dev/fd/9`; the
//! script closes it first thing); forwards SIGHUP,
//! SIGINT and SIGTERM to that child; and when the child exits, writes the worker's
//! `exit.json` and a line on the pane. It exits once it has no children left, with the child's
//! status (128 + signal when a signal ended it), so a residue of the worker keeps its anchor
//! for as long as it lives.

use std::ffi::CString;
use std::io::Write;
use std::os::fd::AsFd;
use std::path::PathBuf;

use team_core::Error;
use team_core::paths::{TeamName, WorkerName};
use team_core::supervisor::{MainExit, SupervisorArgs};

use crate::cli::SuperviseArgs;
use crate::error::CliResult;

pub fn run(a: SuperviseArgs) -> CliResult<i32> {
    let abs = |p: PathBuf, what: &str| -> CliResult<PathBuf> {
        if p.is_absolute() {
            Ok(p)
        } else {
            Err(Error::Usage(format!("--{what} must be an absolute path")).into())
        }
    };
    let args = SupervisorArgs {
        op: a.op.as_deref().map(|o| parse_uuid(o, "op")).transpose()?,
        team: TeamName::new(&a.team)?,
        worker: WorkerName::new(&a.worker)?,
        owner: parse_uuid(&a.owner, "owner")?,
        incarnation: parse_uuid(&a.incarnation, "incarnation")?,
        state_root: abs(a.root, "root")?,
        workspace: abs(a.ws, "ws")?,
    };
    let (prog, rest) = a
        .command
        .split_first()
        .ok_or_else(|| Error::Usage("no command after --".into()))?;

    let me = rustix::process::getpid();
    if let Err(e) = rustix::process::set_child_subreaper(Some(me)) {
        // Without it, double-forked descendants escape to init and are never proven ours:
        // safe (they are left alone), but say so on the pane.
        note(&format!(
            "cannot become a child subreaper ({e}); detached processes of this worker will not be found"
        ));
    }
    if let Ok(name) = CString::new(team_core::supervisor::COMM) {
        let _ = rustix::thread::set_name(&name);
    }

    // The worker's own startup script is opened here, with no symlink at any component of
    // its path (`fsutil::state_open`), and `sh` reads it through that open file: given the
    // path, `sh` would follow a `runtime/` swapped for a symlink after `up` wrote the script.
    let expected = std::env::var(team_core::supervisor::SCRIPT_DIGEST_VAR).ok();
    let script = startup_script(&args, prog, rest, expected.as_deref())?;
    let (prog, rest): (&std::ffi::OsStr, Vec<std::ffi::OsString>) = match &script {
        Some(_) => (
            "/bin/sh".as_ref(),
            vec![format!("/dev/fd/{SCRIPT_FD}").into()],
        ),
        None => (prog.as_os_str(), rest.to_vec()),
    };
    let mut cmd = std::process::Command::new(prog);
    cmd.args(&rest);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("TEAM_") {
            cmd.env_remove(&k);
        }
    }
    let child = cmd
        .spawn()
        .map_err(|e| Error::Usage(format!("cannot start {}: {e}", prog.to_string_lossy())))?;
    let child_pid = rustix::process::Pid::from_raw(child.id() as i32)
        .ok_or_else(|| Error::Internal("child pid 0".into()))?;
    // Our unreaped child: the pid is its until we wait for it.
    let child_fd =
        rustix::process::pidfd_open(child_pid, rustix::process::PidfdFlags::empty()).ok();
    drop(child); // never waited through std: the loop below reaps every child
    drop(script); // the child has its own copy
    let main_ended = name_the_main_process(child_pid.as_raw_nonzero().get() as u32);

    if let Some(fd) = child_fd {
        forward_signals(fd, args.clone());
    }

    let mut status: Option<i32> = None;
    loop {
        match rustix::process::wait(rustix::process::WaitOptions::empty()) {
            Ok(Some((pid, st))) => {
                if pid == child_pid && status.is_none() {
                    let exit = MainExit {
                        incarnation: args.incarnation,
                        code: st.exit_status(),
                        signal: st.terminating_signal(),
                        at: team_core::fsutil::now_rfc3339(),
                    };
                    note(&format!(
                        "{}'s command ended ({})",
                        args.worker,
                        exit.describe()
                    ));
                    // Reaped: from now on every child of ours is an adopted orphan.
                    let _ = main_ended.send(());
                    if let Err(e) = team_core::supervisor::write_exit(&args, &exit) {
                        note(&format!("cannot record the exit: {e}"));
                    }
                    status = Some(match (exit.code, exit.signal) {
                        (Some(c), _) => c,
                        (None, Some(s)) => 128 + s,
                        _ => 1,
                    });
                }
            }
            Ok(None) => {}
            Err(rustix::io::Errno::INTR) => {}
            Err(rustix::io::Errno::CHILD) => break,
            Err(e) => {
                note(&format!("wait failed: {e}"));
                break;
            }
        }
    }
    Ok(status.unwrap_or(1))
}

/// Starts the thread whose name says which child is the worker's main process
/// ([`team_core::supervisor::MainMark`]): `main <pid>` now, `main ended` once a message (or
/// the sender's end) comes. Walks of this supervisor's children read it to tell the main
/// process from adopted orphans, which age cannot do once the main process is gone.
fn name_the_main_process(pid: u32) -> std::sync::mpsc::Sender<()> {
    use team_core::supervisor::MainMark;
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let set = |m: MainMark| {
        if let Ok(name) = CString::new(m.thread_name()) {
            let _ = rustix::thread::set_name(&name);
        }
    };
    let _ = std::thread::Builder::new().spawn(move || {
        set(MainMark::Running(pid));
        let _ = rx.recv();
        set(MainMark::Ended);
        loop {
            std::thread::park();
        }
    });
    tx
}

/// The descriptor `sh` reads the startup script from (`/bin/sh /dev/fd/9`); the script's first
/// line closes it, so the worker's program does not inherit it.
const SCRIPT_FD: i32 = team_core::supervisor::SCRIPT_FD;

/// The most bytes of a startup script read (they are a few hundred).
const MAX_SCRIPT: u64 = 64 << 10;

/// When the command is `up`'s (`/bin/sh` and this worker's startup script), the script, for
/// `sh` to read at [`SCRIPT_FD`]: opened with no symlink on its path, with one link, and
/// with the digest `up` started the pane with (`expected`, from its environment; required),
/// then copied into a sealed memory file, so what `sh` runs is exactly what was
/// checked (a rename over the script, or a write into it, after the check changes nothing).
/// `None` for any other command (a supervisor started by hand). A script that fails a check
/// is refused: the worker does not start.
fn startup_script(
    args: &SupervisorArgs,
    prog: &std::ffi::OsString,
    rest: &[std::ffi::OsString],
    expected: Option<&str>,
) -> CliResult<Option<std::os::fd::OwnedFd>> {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;
    // Any other command (a supervisor started by hand) is run as given.
    if prog != "/bin/sh" || rest.len() != 1 {
        return Ok(None);
    }
    let root = team_core::paths::StateRoot::resolve(&args.state_root, Some(&args.state_root))?;
    let path = root.runtime_script(&args.team, &args.worker);
    if std::path::Path::new(&rest[0]) != path {
        return Ok(None);
    }
    let refuse = |why: String| -> CliResult<Option<std::os::fd::OwnedFd>> {
        note(&format!(
            "the startup script {} {why}; the worker does not start",
            path.display()
        ));
        Err(Error::Refused(format!("startup script {}: {why}", path.display())).into())
    };
    let opened =
        match team_core::fsutil::state_open(root.path(), &path, team_core::fsutil::Access::Read) {
            Ok(Some(o)) => o,
            Ok(None) => return refuse("is missing".into()),
            Err(e) => return refuse(format!("cannot be opened safely: {e}")),
        };
    let links = opened.file.metadata().map(|m| m.nlink()).unwrap_or(0);
    if links != 1 {
        return refuse(format!(
            "has {links} links (a file that also lives elsewhere)"
        ));
    }
    let mut bytes = Vec::new();
    if let Err(e) = (&opened.file).take(MAX_SCRIPT + 1).read_to_end(&mut bytes) {
        return refuse(format!("cannot be read: {e}"));
    }
    if bytes.len() as u64 > MAX_SCRIPT {
        return refuse(format!("is larger than {MAX_SCRIPT} bytes"));
    }
    // Fail closed: a pane `up` starts always carries the digest. One started otherwise with
    // `up`'s command (`respawn-pane -k` reuses it, without the variable) runs nothing.
    match expected {
        None => {
            return refuse(format!(
                "came without the digest `up` gives a worker's pane ({})",
                team_core::supervisor::SCRIPT_DIGEST_VAR
            ));
        }
        Some(want) if team_core::supervisor::script_digest(&bytes) != want => {
            return refuse("is not the one `up` wrote (its digest differs)".into());
        }
        Some(_) => {}
    }
    let sealed = sealed_copy(&bytes)
        .map_err(|e| Error::Internal(format!("a sealed copy of the startup script: {e}")))?;
    let at = rustix::io::fcntl_dupfd_cloexec(&sealed, SCRIPT_FD)
        .map_err(|e| Error::Internal(format!("dup of the startup script: {e}")))?;
    if at.as_raw_fd() != SCRIPT_FD {
        return refuse(format!("cannot be given to sh at descriptor {SCRIPT_FD}"));
    }
    rustix::io::fcntl_setfd(&at, rustix::io::FdFlags::empty())
        .map_err(|e| Error::Internal(format!("startup script descriptor: {e}")))?;
    Ok(Some(at))
}

/// `bytes` in a memory file that nobody can change any more (sealed against writes, growth and
/// shrinking).
fn sealed_copy(bytes: &[u8]) -> rustix::io::Result<std::os::fd::OwnedFd> {
    use rustix::fs::{MemfdFlags, SealFlags};
    let fd = rustix::fs::memfd_create(
        "team-startup-script",
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )?;
    let mut done = 0;
    while done < bytes.len() {
        done += rustix::io::write(&fd, &bytes[done..])?;
    }
    rustix::fs::fcntl_add_seals(
        &fd,
        SealFlags::WRITE | SealFlags::GROW | SealFlags::SHRINK | SealFlags::SEAL,
    )?;
    Ok(fd)
}

fn parse_uuid(s: &str, what: &str) -> CliResult<uuid::Uuid> {
    uuid::Uuid::parse_str(s)
        .map_err(|_| Error::Usage(format!("--{what}: not a UUID: {s:?}")).into())
}

/// A line on the pane (its terminal may be gone: errors are ignored).
fn note(msg: &str) {
    let _ = writeln!(std::io::stderr(), "\r\nteam-scale: {msg}\r");
}

/// Forwards SIGINT and SIGTERM to the worker's main process through its pidfd, and passes a
/// hangup on to the pane's session. The handlers also keep the supervisor alive when its pane
/// goes, so the worker's residue stays below it (handlers, unlike an ignored signal, are reset
/// for the child on exec).
fn forward_signals(fd: std::os::fd::OwnedFd, args: SupervisorArgs) {
    use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGHUP, SIGINT, SIGTERM]) else {
        return;
    };
    std::thread::spawn(move || {
        for sig in signals.forever() {
            match sig {
                SIGHUP => {
                    // Twice: a process forked (or reparented to us) while the first pass ran
                    // is caught by the second.
                    hang_up_session(&args);
                    std::thread::sleep(std::time::Duration::from_millis(200));
                    hang_up_session(&args);
                }
                SIGINT => {
                    let _ = rustix::process::pidfd_send_signal(
                        fd.as_fd(),
                        rustix::process::Signal::INT,
                    );
                }
                _ => {
                    let _ = rustix::process::pidfd_send_signal(
                        fd.as_fd(),
                        rustix::process::Signal::TERM,
                    );
                }
            }
        }
    });
}

/// The pane's terminal hung up (its pane was killed, or its server went away). The kernel
/// sends SIGHUP to a terminal's session leader only, and to the foreground job when that
/// leader exits; since the supervisor outlives its pane, it does the second part itself: every
/// process still in the pane's session (not the detached ones) gets SIGHUP, each through a
/// pidfd and proven below this supervisor first.
fn hang_up_session(args: &SupervisorArgs) {
    use team_core::process::{ProcVerdict, Sig, prove_below};
    let me = std::process::id();
    let Ok(tree) = team_core::proctree::Tree::subtree(me) else {
        return;
    };
    let Some(root) = tree.node(me).cloned() else {
        return;
    };
    let inc = args.incarnation.to_string();
    let below = tree.below(&root, &inc, &team_core::proctree::Proc::new());
    // The pane's session, as the kernel's hangup would reach it (an orphan that stayed in the
    // session counts; one that called `setsid` left it).
    for m in below
        .members
        .iter()
        .filter(|m| m.node.sid == root.sid && !m.shared)
    {
        if let (ProcVerdict::Owned, Some(p)) = prove_below(m.node.id, root.id, &inc) {
            let _ = p.signal(Sig::Hup);
        }
    }
}
