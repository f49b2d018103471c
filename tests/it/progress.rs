//! Progress during waits goes to stderr only when stderr is a terminal.

use tests::{Sandbox, assert_code};

#[test]
fn progress_only_on_a_terminal() {
    let sb = Sandbox::new();
    assert_code(
        &sb.run(
            "team-scale",
            &[
                "init",
                "demo",
                "--private",
                "--ready-pattern",
                "ready-now",
                "--worker-cmd",
                "echo ready-now; exec cat",
            ],
        ),
        0,
    );
    // Piped stderr: data and errors only.
    let o = sb.run("team-scale", &["up", "demo", "1", "--ready-timeout", "5s"]);
    assert_code(&o, 0);
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("waiting up to"),
        "{o:?}"
    );
    // A terminal (script(1) gives the command a pty): the wait is shown.
    let cmd = format!(
        "'{}' up demo 1 --ready-timeout 5s",
        tests::bin("team-scale").display()
    );
    let o = sb
        .command("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output()
        .unwrap();
    assert_code(&o, 0);
    let all = String::from_utf8_lossy(&o.stdout);
    assert!(
        all.contains("waiting up to 5s for 1 new worker(s) to be ready"),
        "{all}"
    );
}
