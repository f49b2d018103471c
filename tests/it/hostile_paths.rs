//! A workspace's path is data, never tmux syntax: a directory named like a tmux format
//! (`#(cmd)` runs `cmd` wherever tmux expands formats) must run nothing.

use std::path::Path;
use std::time::Duration;

use tests::{Sandbox, assert_code, tmux_at};

/// Every file named `name` under `dir`.
fn find(dir: &Path, name: &str) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if e.file_name() == name {
                out.push(p.clone());
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            }
        }
    }
    out
}

#[test]
fn a_workspace_named_like_a_tmux_format_runs_nothing() {
    let sb = Sandbox::new();
    let ws = sb.ws.join("ws#(touch PWNED)#{pane_id}##");
    std::fs::create_dir_all(&ws).unwrap();
    let run = |args: &[&str]| {
        sb.cmd("team-scale")
            .current_dir(&ws)
            .args(args)
            .output()
            .unwrap()
    };
    assert_code(
        &run(&[
            "init",
            "h",
            "--private",
            "--worker-cmd",
            "exec sleep 100000",
        ]),
        0,
    );
    assert_code(&run(&["up", "h", "1", "--ready-timeout", "0"]), 0);
    // A `#()` job runs in the background: give it time to have run.
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(
        find(sb.dir.path(), "PWNED"),
        Vec::<std::path::PathBuf>::new(),
        "a directory name ran a command"
    );
    // The worker's pane starts in the workspace as it is named.
    let sock = team_core::paths::private_endpoint(&sb.tt, &ws);
    let o = tmux_at(
        &sock,
        &[
            "list-panes",
            "-a",
            "-F",
            "#{@team_worker}\t#{pane_start_path}",
        ],
    );
    let text = String::from_utf8_lossy(&o.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("worker-1\t"))
        .unwrap_or_else(|| panic!("no worker pane: {text}"));
    assert_eq!(
        line.split('\t').nth(1),
        Some(ws.to_str().unwrap()),
        "{text}"
    );
}
