//! Layout at scale (issue 15): however many workers `up` adds, in however many calls, every
//! worker pane stays at least 20x5 cells, and the leader keeps its size.
//!
//! The attack is the old layout: each `up` split only the last worker's pane (or the leader),
//! so after `up 3` and `up 5` the fifth pane held a sliver, and `up 40` in an 80x24 session
//! made one-row panes until tmux said "no space".

use tests::{Sandbox, assert_code, json_lines, tmux_at};

/// (pane id, width, height, worker tag, role tag) of every pane on the sandbox's server.
fn panes(sb: &Sandbox) -> Vec<(String, u32, u32, String, String)> {
    let o = tmux_at(
        &sb.private_sock(),
        &[
            "list-panes",
            "-a",
            "-F",
            "#{pane_id}\t#{pane_width}\t#{pane_height}\t#{@team_worker}\t#{@team_role}",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (
                f[0].to_string(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                f[3].to_string(),
                f[4].to_string(),
            )
        })
        .collect()
}

/// Grows a team in `steps` in a session of `size` and checks every worker pane after each.
fn grow(size: &str, steps: &[u32]) {
    let total: u32 = steps.iter().sum();
    let sb = Sandbox::new();
    let max = total.to_string();
    assert_code(
        &sb.run(
            "team-scale",
            &[
                "init",
                "t",
                "--private",
                "--max-workers",
                &max,
                "--size",
                size,
                "--worker-cmd",
                "exec sleep 100000",
            ],
        ),
        0,
    );
    let mut leader_size = None;
    let mut members = 0;
    for &n in steps {
        let o = sb.run(
            "team-scale",
            &["up", "t", &n.to_string(), "--ready-timeout", "0", "--json"],
        );
        assert_code(&o, 0);
        members += n;
        assert_eq!(json_lines(&o.stdout).pop().unwrap()["members"], members);
        let all = panes(&sb);
        let workers: Vec<_> = all.iter().filter(|p| !p.3.is_empty()).collect();
        assert_eq!(workers.len(), members as usize, "{size}: {all:?}");
        for w in &workers {
            assert!(
                w.1 >= 20 && w.2 >= 5,
                "{size}, after up {n} ({members} members): worker {} pane {} is {}x{}",
                w.3,
                w.0,
                w.1,
                w.2
            );
        }
        let leader = all.iter().find(|p| p.4 == "leader").expect("the leader");
        match leader_size {
            None => leader_size = Some((leader.1, leader.2)),
            Some(s) => assert_eq!(s, (leader.1, leader.2), "{size}: the leader was resized"),
        }
    }
}

#[test]
fn every_worker_pane_is_at_least_20x5_in_an_80x24_session() {
    grow("80x24", &[3, 5, 248]);
}

#[test]
fn every_worker_pane_is_at_least_20x5_in_a_200x50_session() {
    grow("200x50", &[3, 5, 248]);
}
