//! A lookalike of a worker's supervisor, for the attack tests: it names itself
//! `team-supervise` (as the real one does) and takes whatever arguments it is given (a real
//! supervisor's, copied), but its executable is not `team-scale`. It starts `sleep 100009` as
//! its child, writes the child's pid to `$FAKE_PIDFILE`, and waits forever.

fn main() {
    let _ = std::fs::write("/proc/self/comm", "team-supervise");
    let pidfile = std::env::var_os("FAKE_PIDFILE").expect("FAKE_PIDFILE");
    let mut child = std::process::Command::new("sleep")
        .arg("100009")
        .spawn()
        .expect("sleep");
    std::fs::write(pidfile, child.id().to_string()).expect("pid file");
    let _ = child.wait();
    loop {
        std::thread::park();
    }
}
