//! Operations bigger than one tmux message (16 KiB) are split over several invocations.

use tests::{Sandbox, assert_code, json_lines};

#[test]
fn up_30_and_down_29_span_several_tmux_messages() {
    let sb = Sandbox::new();
    assert_code(
        &sb.run(
            "team-scale",
            &[
                "init",
                "big",
                "--private",
                "--max-workers",
                "40",
                "--size",
                "250x80",
                "--worker-cmd",
                "exec sleep 100000",
            ],
        ),
        0,
    );
    let o = sb.run(
        "team-scale",
        &["up", "big", "30", "--ready-timeout", "0", "--json"],
    );
    assert_code(&o, 0);
    let sum = json_lines(&o.stdout).pop().unwrap();
    assert_eq!(sum["members"], 30);
    let st = json_lines(&sb.run("team-scale", &["status", "big", "--json"]).stdout);
    let live = st
        .iter()
        .filter(|l| l["type"] == "worker" && l["liveness"] == "live")
        .count();
    assert_eq!(live, 30);
    let o = sb.run(
        "team-scale",
        &["down", "big", "29", "--force", "--grace", "2s", "--json"],
    );
    assert_code(&o, 0);
    let st = json_lines(&sb.run("team-scale", &["status", "big", "--json"]).stdout);
    assert_eq!(st.last().unwrap()["workers"], 1);
    tests::assert_audit_pairs(&sb.ws.join(".team/audit.jsonl"));
}
