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
        let mut c = Command::new(self.bin.join(tool));
        c.args(args)
            .current_dir(&self.ws)
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .env_remove("TEAM_STATE_DIR")
            .env_remove("TEAM_AUDIT_LOG")
            .env("TMUX_TMPDIR", &self.tt)
            .env("TEAM_TMUX_CONFIG", "/dev/null")
            .env("SHELL", "/bin/sh");
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

    fn sockets(&self) -> Vec<PathBuf> {
        let dir = self.tt.join(format!("tmux-{}", uid()));
        std::fs::read_dir(dir)
            .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
            .unwrap_or_default()
    }
}

fn uid() -> String {
    String::from_utf8_lossy(
        &Command::new("id")
            .arg("-u")
            .output()
            .map(|o| o.stdout)
            .unwrap_or_default(),
    )
    .trim()
    .to_string()
}

pub fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let keep = args.iter().any(|a| a == "--keep");
    which::which("tmux").context("tmux is not installed (apt-get install -y tmux)")?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    eprintln!("xtask demo: building the binaries");
    duct::cmd!(
        &cargo,
        "build",
        "--quiet",
        "--bins",
        "-p",
        "team-scale",
        "-p",
        "team-reap",
        "-p",
        "team-audit"
    )
    .dir(root)
    .run()?;
    let base = std::env::temp_dir().join(format!("team-demo-{}", std::process::id()));
    let d = Demo {
        bin: root.join("target/debug"),
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
        for s in d.sockets() {
            let _ = Command::new("tmux")
                .arg("-S")
                .arg(&s)
                .arg("kill-server")
                .env_remove("TMUX")
                .output();
        }
        let _ = std::fs::remove_dir_all(&base);
    }
    result
}

fn script(d: &Demo) -> anyhow::Result<()> {
    println!(
        "# A team on a private tmux server, in a scratch workspace {}",
        d.ws.display()
    );
    d.step(
        "team-scale",
        &[
            "init",
            "demo",
            "--private",
            "--max-workers",
            "4",
            "--worker-cmd",
            "sh",
        ],
        0,
    )?;
    d.step("team-scale", &["status", "demo"], 0)?;
    d.step("team-scale", &["status", "demo", "--json"], 0)?;
    println!("\n# Re-running init for a live team refuses and changes nothing (exit 1):");
    d.step("team-scale", &["init", "demo", "--private"], 1)?;
    Ok(())
}
