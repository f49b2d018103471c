//! The command-line contract, the same for every binary: usage errors and no arguments exit
//! 64 with the usage on stderr; `--help` and `--version` exit 0 on stdout; every subcommand
//! has `--help` and the shared flags; `--json` failures print an error line and a summary; a
//! closed stdout ends the program quietly.

use std::process::{Output, Stdio};

use tests::{Sandbox, assert_code, json_lines};

const BINS: &[&str] = &["team-scale", "team-reap", "team-audit"];

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn run(sb: &Sandbox, bin: &str, args: &[&str]) -> Output {
    sb.bare(bin).args(args).output().expect("run binary")
}

/// The visible subcommands, from the `Commands:` section of `--help`.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|s| s != "help")
        .collect()
}

#[test]
fn usage_errors_exit_64_everywhere() {
    let sb = Sandbox::new();
    for bin in BINS {
        for args in [&["--bogus"][..], &["no-such-subcommand"], &[]] {
            let o = run(&sb, bin, args);
            assert_code(&o, 64);
            assert!(o.stdout.is_empty(), "{bin} {args:?}: {o:?}");
            let err = text(&o.stderr);
            assert!(err.contains("Usage:"), "{bin} {args:?}: {err}");
            if !args.is_empty() {
                assert!(
                    err.starts_with(&format!("{bin}: error: ")),
                    "{bin} {args:?}: {err}"
                );
            }
        }
        // With --json, the failure is also a JSON error line and a summary on stdout.
        let o = run(&sb, bin, &["--json", "--bogus"]);
        assert_code(&o, 64);
        let lines = json_lines(&o.stdout);
        assert_eq!(lines.len(), 2, "{bin}: {lines:?}");
        assert_eq!(lines[0]["type"], "error");
        assert_eq!(lines[0]["code"], 64);
        assert!(lines[0]["message"].as_str().unwrap().contains("--bogus"));
        assert!(lines[0].get("hint").is_some());
        assert_eq!(lines[1]["type"], "summary");
        assert_eq!(lines[1]["exit"], 64);
    }
    // A scope that names no directory would make the reaper act on nothing, silently.
    let o = run(
        &sb,
        "team-reap",
        &["scan", "--only-under", "/nonexistent/dir"],
    );
    assert_code(&o, 64);
    assert!(text(&o.stderr).contains("/nonexistent/dir"), "{o:?}");
}

#[test]
fn help_and_version_exit_0_on_stdout_with_the_shared_flags() {
    let sb = Sandbox::new();
    for bin in BINS {
        let o = run(&sb, bin, &["--version"]);
        assert_code(&o, 0);
        let version = text(&o.stdout);
        assert_eq!(version.lines().count(), 1, "{bin}: {version}");
        assert!(version.starts_with(&format!("{bin} ")), "{bin}: {version}");
        let o = run(&sb, bin, &["--help"]);
        assert_code(&o, 0);
        assert!(o.stderr.is_empty(), "{bin}: {o:?}");
        let help = text(&o.stdout);
        assert!(help.contains("Exit status:"), "{bin}: {help}");
        let subs = subcommands(&help);
        assert!(!subs.is_empty(), "{bin}: no subcommands in {help}");
        assert!(
            !subs.contains(&"generate".to_string()),
            "{bin}: generate is hidden"
        );
        for sub in subs {
            let o = run(&sb, bin, &[&sub, "--help"]);
            assert_code(&o, 0);
            let h = text(&o.stdout);
            // One flag table: the same flags, with the same meaning, on every subcommand.
            for flag in ["-v, --verbose", "-q, --quiet", "--json", "--audit-log"] {
                assert!(h.contains(flag), "{bin} {sub} --help lacks {flag}:\n{h}");
            }
        }
    }
}

#[test]
fn a_runtime_error_with_json_is_an_error_line_and_a_summary() {
    let sb = Sandbox::new();
    let o = run(&sb, "team-scale", &["status", "nope", "--json"]);
    assert_code(&o, 66);
    let lines = json_lines(&o.stdout);
    assert_eq!(lines[0]["type"], "error");
    assert_eq!(lines[0]["code"], 66);
    assert!(
        lines[0]["hint"]
            .as_str()
            .unwrap()
            .contains("team-scale init")
    );
    assert_eq!(lines.last().unwrap()["type"], "summary");
    let err = text(&o.stderr);
    assert!(err.starts_with("team-scale: error: "), "{err}");
    assert!(err.contains("\nhint: "), "{err}");
}

/// An error whose stderr is closed (`2>&1 | head -1`) still exits with its own status, the one
/// it has when stderr is open: writing the message (or its hint) must not panic (exit 101).
#[test]
fn a_closed_stderr_loses_the_message_not_the_status() {
    let sb = Sandbox::new();
    for (bin, args) in [
        ("team-scale", &["status", "nope"][..]),
        ("team-scale", &["frobnicate"]),
        ("team-scale", &["empty-trash", "--root", "/", "t1"]),
        ("team-reap", &["--frobnicate"]),
        (
            "team-audit",
            &["verify", "--audit-log", "/nonexistent/x.jsonl"],
        ),
    ] {
        let open = run(&sb, bin, args);
        assert!(!open.stderr.is_empty(), "{bin} {args:?} says why");
        assert_ne!(open.status.code(), Some(0), "{bin} {args:?}");
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let closed = sb
            .bare(bin)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::from(writer))
            .output()
            .unwrap();
        assert_eq!(closed.status.code(), open.status.code(), "{bin} {args:?}");
    }
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let sb = Sandbox::new();
    for bin in BINS {
        for args in [&["--help"][..], &["generate", "bash"], &["generate", "man"]] {
            let (reader, writer) = std::io::pipe().unwrap();
            drop(reader);
            let o = sb
                .bare(bin)
                .args(args)
                .stdout(Stdio::from(writer))
                .stderr(Stdio::piped())
                .output()
                .unwrap();
            assert_code(&o, 0);
            assert!(o.stderr.is_empty(), "{bin} {args:?}: {}", text(&o.stderr));
        }
    }
}

#[test]
fn man_pages_one_per_subcommand_with_the_extra_sections() {
    let sb = Sandbox::new();
    for bin in BINS {
        let dir = sb.dir.path().join("man").join(bin);
        let o = run(
            &sb,
            bin,
            &["generate", "man", "--out-dir", dir.to_str().unwrap()],
        );
        assert_code(&o, 0);
        let help = text(&run(&sb, bin, &["--help"]).stdout);
        let top = std::fs::read_to_string(dir.join(format!("{bin}.1"))).unwrap();
        for sub in subcommands(&help) {
            let page = std::fs::read_to_string(dir.join(format!("{bin}-{sub}.1")))
                .unwrap_or_else(|e| panic!("{bin}-{sub}.1: {e}"));
            for section in ["EXIT STATUS", "ENVIRONMENT", "FILES", "OPTIONS"] {
                assert!(page.contains(section), "{bin}-{sub}.1 lacks {section}");
            }
            // The top page refers to it, and it exists.
            let reference = format!("{bin}-{sub}(1)").replace('-', "\\-");
            assert!(top.contains(&reference), "{bin}.1 lacks {reference}");
        }
    }
}

#[test]
fn quiet_silences_human_lines_and_logs_have_no_colour_when_redirected() {
    let sb = Sandbox::new();
    let log = sb.dir.path().join("audit.jsonl");
    let log = log.to_str().unwrap();
    let record = [
        "record",
        "--caller",
        "t",
        "--action",
        "kill-pane",
        "--audit-log",
        log,
    ];
    let o = run(&sb, "team-audit", &record);
    assert_code(&o, 0);
    assert!(!o.stdout.is_empty(), "without -q the audit id is printed");
    let mut quiet = record.to_vec();
    quiet.push("-q");
    let o = run(&sb, "team-audit", &quiet);
    assert_code(&o, 0);
    assert!(o.stdout.is_empty(), "{}", text(&o.stdout));
    // -vv logs every tmux invocation at debug; stderr is a pipe here, so no escapes.
    let srv = tests::TmuxServer::start();
    let o = run(
        &sb,
        "team-reap",
        &[
            "scan",
            "-vv",
            "--no-processes",
            "--socket",
            srv.sock.to_str().unwrap(),
        ],
    );
    assert_code(&o, 0);
    let err = text(&o.stderr);
    assert!(err.contains("DEBUG"), "-vv logs: {err}");
    assert!(
        !err.contains('\u{1b}'),
        "colour escapes in a redirected stderr: {err:?}"
    );
}
