//! The native tmux client (`team_core::tmux::wire`) says what the tmux binary says, to the
//! same server, and steps aside to the binary whenever it cannot be sure the server
//! understood it before the command could run; after the command was sent it never runs it a
//! second time.

use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use team_core::tmux::{Output, Tmux};
use tests::{TmuxServer, native_client, wait_for};

fn native(s: &TmuxServer) -> Tmux {
    s.core().with_native(true)
}

fn binary(s: &TmuxServer) -> Tmux {
    s.core().with_native(false)
}

fn same(a: &Output, b: &Output) -> bool {
    a.success == b.success && a.stdout == b.stdout && a.stderr == b.stderr
}

/// An output, cut short for a failure message.
fn show(o: &Output) -> String {
    let cut = |s: &str| s.chars().take(200).collect::<String>();
    format!(
        "success {} stdout ({} bytes) {:?} stderr {:?}",
        o.success,
        o.stdout.len(),
        cut(&o.stdout),
        cut(&o.stderr)
    )
}

/// A `tmux` stand-in that records each run in `<dir>/runs` and prints `from-binary`.
fn marker_binary(dir: &Path) -> PathBuf {
    let fake = dir.join("fake-tmux");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\necho run >> {}\necho from-binary\n",
            dir.join("runs").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    fake
}

fn binary_runs(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("runs")).map_or(0, |s| s.lines().count())
}

/// The call was answered by the marker binary of `dir`, run exactly once.
#[track_caller]
fn ran_the_binary_once(o: &team_core::tmux::Output, dir: &Path) {
    assert_eq!(o.stdout, "from-binary\n");
    assert_eq!(binary_runs(dir), 1);
}

#[test]
fn the_native_client_and_the_binary_say_the_same() {
    let s = TmuxServer::start();
    let big = "x".repeat(10_000);
    let mut cases: Vec<Vec<&str>> = vec![
        vec![
            "list-panes",
            "-a",
            "-F",
            "#{pane_id}\t#{pane_pid}\t#{session_name}\t#{pane_dead}",
        ],
        vec!["display-message", "-p", "héllo wörld ✓ #{session_name}"],
        vec!["kill-pane", "-t", "%999"],
        vec!["bogus-command"],
        vec![
            "display-message",
            "-p",
            "before",
            ";",
            "kill-pane",
            "-t",
            "%999",
            ";",
            "display-message",
            "-p",
            "after",
        ],
        vec!["has-session", "-t", "=nope"],
        vec!["has-session", "-t", "=base"],
        vec![
            "if-shell",
            "-F",
            "#{==:1,1}",
            "display -p yes",
            "display -p no",
        ],
        vec!["run-shell", "echo from-a-shell"],
        // More than one message of output (16 KiB), on a stream of its own (show-buffer).
        vec![
            "set-buffer",
            "-b",
            "big",
            &big,
            ";",
            "show-buffer",
            "-b",
            "big",
            ";",
            "show-buffer",
            "-b",
            "big",
        ],
    ];
    // A client's stdout is handed out once: a print, then a stream of its own, fails.
    cases.push(vec![
        "display-message",
        "-p",
        "first",
        ";",
        "show-buffer",
        "-b",
        "big",
    ]);
    let (n, b) = (native(&s), binary(&s));
    for argv in &cases {
        let on = n.run(argv).unwrap();
        let ob = b.run(argv).unwrap();
        assert!(
            same(&on, &ob),
            "{argv:?}\nnative: {}\nbinary: {}",
            show(&on),
            show(&ob),
            argv = &argv[..argv.len().min(4)]
        );
    }
    // And they did run: the big buffer comes back whole.
    let o = n.run(&["show-buffer", "-b", "big"]).unwrap();
    assert_eq!(o.stdout.len(), 10_000);
}

#[test]
fn a_new_pane_gets_the_client_s_path_and_working_directory_as_with_the_binary() {
    native_client();
    // A server started with a PATH of its own, so a pane that got the server's would show.
    let server_path = "/usr/local/bin:/usr/bin:/bin:/no-such-dir-server-path";
    assert_ne!(std::env::var("PATH").unwrap(), server_path);
    let s = TmuxServer::start_with_path(server_path);
    let out = s.dir.path().join("env");
    let pane = native(&s)
        .run(&[
            "split-window",
            "-d",
            "-t",
            "=base:",
            "-P",
            "-F",
            "#{pane_id}",
            &format!("echo \"$PATH\" > {}; exec sleep 100000", out.display()),
        ])
        .unwrap();
    assert!(pane.success, "{}", show(&pane));
    wait_for("the pane's shell", Duration::from_secs(10), || {
        std::fs::read_to_string(&out).is_ok_and(|s| s.ends_with('\n'))
    });
    assert_eq!(
        std::fs::read_to_string(&out).unwrap().trim_end(),
        std::env::var("PATH").unwrap(),
        "tmux gives a pane split by a detached client that client's PATH"
    );
    let cwd = s.tmux(&[
        "display-message",
        "-p",
        "-t",
        pane.stdout.trim(),
        "#{pane_current_path}",
    ]);
    assert_eq!(
        PathBuf::from(cwd.trim()).canonicalize().unwrap(),
        std::env::current_dir().unwrap().canonicalize().unwrap()
    );
}

#[test]
fn the_longest_command_list_fits_and_a_longer_one_goes_to_the_binary() {
    native_client();
    let s = TmuxServer::start();
    // 16384 bytes: a 16-byte header, argc, then "display-message\0-p\0<arg>\0".
    let room = 16384 - 16 - 4 - "display-message\0-p\0".len() - 1;
    let arg = "y".repeat(room);
    let o = native(&s).run(&["display-message", "-p", &arg]).unwrap();
    assert!(o.success, "{}", o.stderr);
    assert_eq!(
        o.stdout.trim_end().len(),
        room,
        "tmux took the whole argument"
    );

    let d = tempfile::tempdir().unwrap();
    let over = format!("{arg}y");
    let t = Tmux::new(marker_binary(d.path()), &s.sock).with_native(true);
    let o = t.run(&["display-message", "-p", &over]).unwrap();
    ran_the_binary_once(&o, d.path());
}

#[test]
fn no_server_on_the_socket_is_left_to_the_binary() {
    native_client();
    let d = tempfile::tempdir().unwrap();
    let t = Tmux::new(marker_binary(d.path()), d.path().join("no-such-sock")).with_native(true);
    let o = t.run(&["list-panes", "-a"]).unwrap();
    ran_the_binary_once(&o, d.path());
}

/// A server on `sock` that reads what comes and, once it has `min` bytes, answers `reply`
/// (nothing when `None`), then holds the connection for `hold`.
fn fake_server(sock: &Path, min: usize, reply: Option<Vec<u8>>, hold: Duration) {
    let l = UnixListener::bind(sock).unwrap();
    std::thread::spawn(move || {
        let Ok((mut c, _)) = l.accept() else {
            return;
        };
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while got.len() < min {
            match c.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
        if let Some(r) = reply {
            let _ = c.write_all(&r);
        }
        std::thread::sleep(hold);
    });
}

#[test]
fn a_server_of_another_protocol_version_is_left_to_the_binary() {
    native_client();
    let d = tempfile::tempdir().unwrap();
    let sock = d.path().join("sock");
    // MSG_VERSION (12), no data, as a protocol-7 server answers the first message.
    let mut version = Vec::new();
    version.extend_from_slice(&12u32.to_ne_bytes());
    version.extend_from_slice(&16u16.to_ne_bytes());
    version.extend_from_slice(&0u16.to_ne_bytes());
    version.extend_from_slice(&7u32.to_ne_bytes());
    version.extend_from_slice(&0u32.to_ne_bytes());
    fake_server(&sock, 16, Some(version), Duration::from_secs(2));
    let t = Tmux::new(marker_binary(d.path()), &sock).with_native(true);
    let o = t.run(&["list-panes", "-a"]).unwrap();
    ran_the_binary_once(&o, d.path());
}

#[test]
fn a_server_that_took_the_command_and_went_quiet_is_an_error_never_a_second_run() {
    native_client();
    let d = tempfile::tempdir().unwrap();
    let sock = d.path().join("sock");
    fake_server(&sock, 1, None, Duration::from_secs(10));
    let t = Tmux::new(marker_binary(d.path()), &sock)
        .with_native(true)
        .with_timeout(Duration::from_millis(500));
    let t0 = Instant::now();
    let err = t.run(&["kill-pane", "-t", "%1"]).unwrap_err();
    assert!(err.to_string().contains("did not answer"), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert_eq!(
        binary_runs(d.path()),
        0,
        "the command may have run: not again"
    );
}

#[test]
fn a_server_that_hangs_up_mid_command_reads_as_tmux_says_it() {
    let s = TmuxServer::start();
    // The last session goes, and with it the server (exit-empty), while the client waits.
    let on = native(&s).run(&["kill-session", "-t", "=base"]).unwrap();
    s.start_again();
    let ob = binary(&s).run(&["kill-session", "-t", "=base"]).unwrap();
    assert!(
        same(&on, &ob),
        "native: {}\nbinary: {}",
        show(&on),
        show(&ob)
    );
}

/// With the native client off (`TEAM_TMUX_NATIVE=0`) every call runs the `tmux` binary: a
/// whole life of a team still works that way, and leaves no pane behind.
#[test]
fn a_team_lives_and_ends_with_the_native_client_off() {
    let sb = tests::Sandbox::new();
    let run = |args: &[&str]| {
        sb.cmd("team-scale")
            .env("TEAM_TMUX_NATIVE", "0")
            .args(args)
            .output()
            .unwrap()
    };
    tests::assert_code(
        &run(&[
            "init",
            "t",
            "--private",
            "--worker-cmd",
            "exec sleep 100000",
        ]),
        0,
    );
    let o = run(&["up", "t", "2", "--ready-timeout", "0", "--json"]);
    tests::assert_code(&o, 0);
    let summary = tests::json_lines(&o.stdout)
        .into_iter()
        .find(|l| l["type"] == "summary")
        .unwrap();
    // Two tmux calls, as with the native client: the listing and the split chain.
    assert_eq!(summary["tmux_invocations"], 2);
    let panes = |sock: &Path| {
        let o = tests::tmux_at(sock, &["list-panes", "-a", "-F", "#{@team_worker}"]);
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| !l.is_empty())
            .count()
    };
    let sock = sb.private_sock();
    assert_eq!(panes(&sock), 2, "two tagged worker panes");
    tests::assert_code(&run(&["down", "t", "1", "--force", "--grace", "1s"]), 0);
    assert_eq!(panes(&sock), 1);
    tests::assert_code(&run(&["status", "t"]), 0);
    tests::assert_code(&run(&["shutdown", "t", "--grace", "1s"]), 0);
    wait_for("the server to go", Duration::from_secs(5), || {
        !Tmux::new("tmux", &sock).with_native(false).server_answers()
    });
}
