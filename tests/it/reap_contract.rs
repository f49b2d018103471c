//! team-reap under cron: a reaper that cannot see any tmux server must not look like one that
//! found nothing (exit 69, even with `-q`), and its JSON says `null` for what is absent.

use tests::{Sandbox, TmuxServer, assert_code, json_lines};

#[test]
fn tmux_missing_is_69_even_quiet() {
    let sb = Sandbox::new();
    let empty = sb.dir.path().join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    for args in [
        &["-q"][..],
        &["--check", "-q"],
        &["scan", "-q"],
        &["run", "--json"],
    ] {
        let o = sb
            .cmd("team-reap")
            .env("PATH", &empty)
            .args(args)
            .output()
            .unwrap();
        assert_code(&o, 69);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("tmux is not installed"), "{args:?}: {err}");
    }
}

#[test]
fn no_server_answering_is_69_even_quiet() {
    let sb = Sandbox::new();
    let dir = team_core::paths::tmux_socket_dir(&sb.tt);
    std::fs::create_dir_all(&dir).unwrap();
    drop(std::os::unix::net::UnixListener::bind(dir.join("dead")).unwrap());
    for args in [
        &["-q", "--no-processes"][..],
        &["--check", "-q", "--no-processes"],
    ] {
        let o = sb.run("team-reap", args);
        assert_code(&o, 69);
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("no tmux server answers"),
            "{o:?}"
        );
    }
    let o = sb.run("team-reap", &["scan", "--json", "--no-processes"]);
    assert_code(&o, 69);
    let lines = json_lines(&o.stdout);
    let summary = lines.iter().find(|l| l["type"] == "summary").unwrap();
    assert_eq!(summary["dead_servers"], 1);
    assert_eq!(summary["exit"], 69);
}

#[test]
fn absent_fields_are_null_never_empty() {
    let sb = Sandbox::new();
    let srv = TmuxServer::start();
    let sock = srv.sock.to_str().unwrap().to_string();
    let o = sb.run(
        "team-reap",
        &[
            "scan",
            "--all",
            "--json",
            "--no-processes",
            "--socket",
            &sock,
        ],
    );
    assert_code(&o, 0);
    let lines = json_lines(&o.stdout);
    let pane = lines
        .iter()
        .find(|l| l["type"] == "pane" && l["verdict"] == "untagged")
        .unwrap_or_else(|| panic!("no untagged pane in {lines:?}"));
    for k in ["team", "worker", "role", "owner", "workspace"] {
        assert!(pane[k].is_null(), "{k}: {pane}");
    }
    for l in &lines {
        for (k, v) in l.as_object().unwrap() {
            assert_ne!(v, "", "{k} is \"\" in {l}");
        }
    }
}

/// Attack: the only socket is answered by something that says "done" to every command and
/// lists nothing, or only lines that are not panes (no tmux server does either). That is not a
/// server seen: exit 69, not a clean 0.
#[test]
fn an_empty_answer_on_every_socket_is_69() {
    let sb = Sandbox::new();
    let dir = team_core::paths::tmux_socket_dir(&sb.tt);
    std::fs::create_dir_all(&dir).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    // Nothing at all, a garbled line, a plausible-looking pane line without this call's nonce.
    for (i, out) in [&b""[..], b"x\n", b"%99 x\n"].into_iter().enumerate() {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let sock = dir.join(format!("fake{i}"));
        tests::impostor_tmux(&sock, stop.clone(), out);
        let o = sb.run("team-reap", &["run", "--no-processes"]);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let _ = std::fs::remove_file(&sock);
        assert_code(&o, 69);
    }
}
