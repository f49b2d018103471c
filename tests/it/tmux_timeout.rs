//! A tmux client that does not answer is ended after the timeout, through the pidfd opened
//! right after it was spawned (never by a bare pid).

use std::time::{Duration, Instant};

#[test]
fn a_hung_tmux_client_is_killed_after_the_timeout() {
    let d = tempfile::tempdir().unwrap();
    let pidfile = d.path().join("pid");
    let fake = d.path().join("tmux");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\necho $$ > {}\nexec sleep 120\n",
            pidfile.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let tmux = team_core::tmux::Tmux::new(&fake, d.path().join("sock"));
    let t0 = Instant::now();
    let err = tmux.run(&["list-panes"]).unwrap_err();
    assert!(err.to_string().contains("did not answer"), "{err}");
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The client (now `sleep 120`) is gone soon after the timeout, long before it would end.
    let proc_dir = std::path::PathBuf::from(format!("/proc/{pid}"));
    while proc_dir.exists()
        && std::fs::read_to_string(proc_dir.join("cmdline")).is_ok_and(|c| c.starts_with("sleep"))
    {
        assert!(
            t0.elapsed() < Duration::from_secs(40),
            "the timed-out client {pid} still runs"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
