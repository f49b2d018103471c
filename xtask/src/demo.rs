//! `cargo xtask demo`: a real team on a private tmux server, narrated step by step.
//!
//! Everything happens in a fresh temp workspace with its own `TMUX_TMPDIR`, so the demo never
//! touches a tmux server it did not start, and it kills its server at the end (by socket).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{Context, bail};

struct Demo {
    bin: PathBuf,
    ws: PathBuf,
    tt: PathBuf,
}

impl Demo {
    fn cmd(&self, tool: &str, args: &[&str]) -> Command {
        let mut c = crate::util::tool(&self.bin, tool, Some(&self.tt));
        c.args(args).current_dir(&self.ws);
        c
    }

    /// Runs a step, echoing the command and its output; fails the demo on an unexpected code.
    fn step(&self, tool: &str, args: &[&str], expect: i32) -> anyhow::Result<Output> {
        println!("\n$ {tool} {}", args.join(" "));
        let o = self
            .cmd(tool, args)
            .output()
            .with_context(|| format!("run {tool}"))?;
        print!("{}", String::from_utf8_lossy(&o.stdout));
        eprint!("{}", String::from_utf8_lossy(&o.stderr));
        let code = o.status.code().unwrap_or(-1);
        println!("(exit {code})");
        if code != expect {
            bail!("{tool} {args:?} exited {code}, expected {expect}");
        }
        Ok(o)
    }

    /// Like [`Demo::step`], with `input` on stdin.
    fn step_with_input(
        &self,
        tool: &str,
        args: &[&str],
        input: &str,
        expect: i32,
    ) -> anyhow::Result<Output> {
        println!("\n$ {tool} {} <<'EOF'\n{input}\nEOF", args.join(" "));
        let mut c = self.cmd(tool, args);
        c.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = c.spawn()?;
        std::io::Write::write_all(&mut child.stdin.take().context("stdin")?, input.as_bytes())?;
        let o = child.wait_with_output()?;
        print!("{}", String::from_utf8_lossy(&o.stdout));
        eprint!("{}", String::from_utf8_lossy(&o.stderr));
        let code = o.status.code().unwrap_or(-1);
        println!("(exit {code})");
        if code != expect {
            bail!("{tool} {args:?} exited {code}, expected {expect}");
        }
        Ok(o)
    }

    fn sockets(&self) -> Vec<PathBuf> {
        crate::util::sockets(&self.tt)
    }
}

pub fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let keep = args.iter().any(|a| a == "--keep");
    which::which("tmux").context("tmux is not installed (apt-get install -y tmux)")?;
    // The same build as the test harness (fail points compiled in, for the crash step).
    let bin = crate::util::build_bins(root, false, true)?;
    let base = std::env::temp_dir().join(format!("team-demo-{}", std::process::id()));
    let d = Demo {
        bin,
        ws: base.join("workspace"),
        tt: base.join("tmux"),
    };
    std::fs::create_dir_all(&d.ws)?;
    std::fs::create_dir_all(&d.tt)?;
    let result = script(&d);
    if keep {
        println!(
            "\nThe demo team is still up: TMUX_TMPDIR={} and workspace {}",
            d.tt.display(),
            d.ws.display()
        );
    } else {
        crate::util::kill_servers(&d.tt);
        let _ = std::fs::remove_dir_all(&base);
    }
    result
}

fn script(d: &Demo) -> anyhow::Result<()> {
    println!(
        "# A team on a private tmux server, in a scratch workspace {}",
        d.ws.display()
    );
    // A stand-in for an agent: says it is ready, then waits for input like a REPL would.
    let agent = "printf 'agent ready, inbox: %s\\n' \"$TEAM_INBOX\"; exec cat";
    d.step(
        "team-scale",
        &[
            "init",
            "demo",
            "--private",
            "--max-workers",
            "4",
            "--worker-cmd",
            agent,
            "--ready-pattern",
            "agent ready",
        ],
        0,
    )?;
    d.step("team-scale", &["status", "demo"], 0)?;

    println!("\n# Scale up by two workers, with tasks piped in as JSON:");
    let tasks = r#"[{"subject":"write the parser","description":"see docs/parser.md","owner":"worker-1"},
                    {"subject":"review the parser","description":"after task 1","blocked_by":[1]}]"#;
    d.step_with_input("team-scale", &["up", "demo", "2", "--tasks", "-"], tasks, 0)?;
    d.step("team-scale", &["status", "demo"], 0)?;
    println!("\n# A worker reports its state (agents run this from their pane, without flags):");
    d.step(
        "team-scale",
        &[
            "worker-status",
            "demo",
            "--worker",
            "worker-1",
            "--state",
            "busy",
            "--note",
            "parsing",
        ],
        0,
    )?;
    d.step(
        "team-scale",
        &[
            "worker-status",
            "demo",
            "--worker",
            "worker-2",
            "--state",
            "idle",
        ],
        0,
    )?;

    println!("\n# The leader's task board, messages and views (no state file read):");
    d.step("team-scale", &["task", "list", "demo"], 0)?;
    let more = r#"[{"subject":"document the parser","owner":"worker-1"}]"#;
    d.step_with_input("team-scale", &["task", "add", "demo", "-"], more, 0)?;
    d.step(
        "team-scale",
        &["task", "assign", "demo", "2", "worker-2"],
        0,
    )?;
    d.step(
        "team-scale",
        &["send", "demo", "worker-1", "please also run the tests"],
        0,
    )?;
    d.step(
        "team-scale",
        &["peek", "demo", "worker-1", "--lines", "4"],
        0,
    )?;
    d.step("team-scale", &["status", "demo", "--format", "tmux"], 0)?;

    println!(
        "\n# Scale down by one: the idle worker with the highest index goes, its tasks return to pending:"
    );
    d.step("team-scale", &["down", "demo", "1", "--grace", "1s"], 0)?;
    d.step("team-scale", &["status", "demo"], 0)?;

    println!(
        "\n# A crash: scale-up dies right after splitting its pane (a fail point exits abruptly)."
    );
    println!("# The pane exists, recorded as pending; nothing is lost or left unrecorded:");
    let mut c = d.cmd("team-scale", &["up", "demo", "1"]);
    c.env("TEAM_FAILPOINTS", "up.split=exit");
    println!("\n$ TEAM_FAILPOINTS=up.split=exit team-scale up demo 1");
    let o = c.output()?;
    println!(
        "(exit {}: the process died mid-operation)",
        o.status.code().unwrap_or(-1)
    );
    d.step("team-scale", &["status", "demo"], 0)?;
    println!(
        "\n# reconcile finishes what the crash left, with fresh proofs; a second run does nothing:"
    );
    d.step("team-scale", &["reconcile", "demo", "--grace", "1s"], 0)?;
    d.step("team-scale", &["reconcile", "demo"], 0)?;
    d.step("team-scale", &["status", "demo"], 0)?;

    println!("\n# An orphan: a second team whose state is lost (its directory deleted by hand).");
    d.step(
        "team-scale",
        &["init", "scratch", "--private", "--worker-cmd", "exec cat"],
        0,
    )?;
    d.step(
        "team-scale",
        &["up", "scratch", "1", "--ready-timeout", "0"],
        0,
    )?;
    // The new worker's startup may still be writing its files there: as `rm -rf` would,
    // try again until the directory is gone.
    let scratch = d.ws.join(".team/teams/scratch");
    for attempt in 0.. {
        match std::fs::remove_dir_all(&scratch) {
            Ok(()) => break,
            Err(e) if attempt < 20 && e.kind() == std::io::ErrorKind::DirectoryNotEmpty => {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            Err(e) => return Err(e.into()),
        }
    }
    println!("\n$ rm -rf .team/teams/scratch");
    println!(
        "\n# team-reap proves each pane is ours and abandoned, then kills it (cron-safe, silent when idle):"
    );
    // Scoped to the demo's own directory: a reaper sees every tmux server and process of the
    // user, and the demo must not act on anything of yours.
    let scope = d.ws.display().to_string();
    d.step("team-reap", &["scan", "--only-under", &scope], 0)?;
    d.step("team-reap", &["run", "--only-under", &scope], 0)?;
    d.step("team-reap", &["--check", "--only-under", &scope], 0)?;
    println!(
        "\n# Its leader pane (your shell) stays: no record names it any more, and tags prove nothing."
    );
    println!("# Ending it is yours to do:");
    for s in d.sockets() {
        let o = crate::util::tmux(&s)
            .args(["kill-session", "-t", "=scratch"])
            .output()?;
        if o.status.success() {
            println!("\n$ tmux -S {} kill-session -t =scratch", s.display());
        }
    }

    println!("\n# Shut the team down: workers, then the leader and session the tools created:");
    d.step("team-scale", &["shutdown", "demo", "--grace", "1s"], 0)?;

    println!(
        "\n# The audit trail of every kill (intent before, outcome after), and its hash chain:"
    );
    d.step("team-audit", &["query"], 0)?;
    d.step("team-audit", &["verify"], 0)?;
    let left = d
        .sockets()
        .into_iter()
        .filter(|s| {
            crate::util::tmux(s)
                .arg("list-sessions")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .count();
    println!("\n# tmux servers still running in the demo's socket dir: {left}");
    Ok(())
}
