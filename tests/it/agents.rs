//! Work reaches the agents (issue 10), tested with the fake agent on real tmux panes: nothing
//! is typed into a blocking screen, delivery is proven (paste, then Enter on its own), a dead
//! worker is seen at once, no shell executes the first prompt, and dead or silent workers do
//! not jam the team.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tests::{Sandbox, assert_code, json_lines};

const PROFILE: &str = r#"
[agents.fake]
programs = ["fake-agent"]
display = "Fake agent"
ready_cursor = ["fake> "]
ready_screen = ["Type a task"]
stable_ms = 500
settle_ms = 200
verify_ms = 800
retries = 2
busy = ["Working on:"]

[[agents.fake.blocking]]
name = "trust"
any = ["Do you trust the files in this folder?"]
next_step = "{worker} asks whether to trust {workspace}: answer it by hand once, then `team-scale up` again"

[[agents.fake.blocking]]
name = "sign-in"
any = ["Sign in to Fake"]
next_step = "run `fake-agent login` once, then `team-scale up` again"

[agents.fakearg]
programs = []
display = "Fake agent (prompt at launch)"
prompt_arg = ["{prompt}"]
busy = ["Working on:"]
[[agents.fakearg.blocking]]
name = "trust"
any = ["Do you trust the files in this folder?"]
next_step = "answer it by hand once"
"#;

struct Fake {
    sb: Sandbox,
    record: PathBuf,
    received: PathBuf,
}

impl Fake {
    /// A team `demo` whose workers run the fake agent with `flags`.
    fn new(flags: &str, extra: &[&str]) -> Fake {
        let sb = Sandbox::new();
        std::fs::create_dir_all(sb.ws.join(".team")).unwrap();
        std::fs::write(sb.ws.join(".team/agents.toml"), PROFILE).unwrap();
        let record = sb.dir.path().join("record.bin");
        let received = sb.dir.path().join("received.txt");
        let cmd = format!(
            "exec {} --record {} --received {} {flags}",
            tests::bin("fake-agent").display(),
            record.display(),
            received.display()
        );
        let mut args = vec!["init", "demo", "--private", "--worker-cmd", &cmd];
        args.extend_from_slice(extra);
        let o = sb.run("team-scale", &args);
        assert_code(&o, 0);
        Fake {
            sb,
            record,
            received,
        }
    }

    fn up(&self, args: &[&str]) -> std::process::Output {
        let mut a = vec!["up", "demo"];
        a.extend_from_slice(args);
        self.sb.run("team-scale", &a)
    }

    fn typed(&self) -> Vec<u8> {
        std::fs::read(&self.record).unwrap_or_default()
    }

    fn received(&self) -> String {
        std::fs::read_to_string(&self.received).unwrap_or_default()
    }

    fn workers(&self) -> Vec<serde_json::Value> {
        let t: serde_json::Value = serde_json::from_slice(
            &std::fs::read(self.sb.ws.join(".team/teams/demo/team.json")).unwrap(),
        )
        .unwrap();
        t["workers"].as_array().cloned().unwrap_or_default()
    }
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn trust_dialog_gets_nothing_typed_and_up_names_the_screen() {
    let f = Fake::new("--screen trust", &[]);
    let t0 = Instant::now();
    let o = f.up(&["1", "--ready-timeout", "20s", "--json"]);
    // Nothing typed into the dialog: its keys are menu choices.
    assert_eq!(f.typed(), b"", "keys reached the trust dialog");
    assert_code(&o, 1);
    let e = stderr(&o);
    assert!(
        e.contains("worker-1") && e.contains("blocked by the trust screen"),
        "{e}"
    );
    assert!(e.contains("answer it by hand once"), "{e}");
    assert!(
        e.contains("Do you trust the files"),
        "last lines shown: {e}"
    );
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert!(f.workers().is_empty(), "rolled back: {:?}", f.workers());
    // The same, as data.
    let lines = json_lines(&o.stdout);
    assert_eq!(
        (lines[0]["worker"].as_str(), lines[0]["delivery"].as_str()),
        (Some("worker-1"), Some("blocked")),
        "{lines:?}"
    );
    assert_eq!(lines[1]["ok"], false);
}

#[test]
fn short_lived_first_screen_then_sign_in_gets_nothing_typed() {
    // A prompt-looking input box for 1.5 s, then the sign-in screen replaces it.
    let f = Fake::new("--first-screen 1500 --screen signin", &[]);
    let o = f.up(&["1", "--ready-timeout", "20s"]);
    assert_eq!(
        f.typed(),
        b"",
        "the first prompt went into a screen that was replaced"
    );
    assert_code(&o, 1);
    let e = stderr(&o);
    assert!(e.contains("blocked by the sign-in screen"), "{e}");
    assert!(e.contains("fake-agent login"), "{e}");
}

#[test]
fn late_prompt_on_the_alternate_screen_needing_a_separate_enter_is_delivered_to_all() {
    let f = Fake::new("--late 1500 --alt --separate-enter", &[]);
    let t0 = Instant::now();
    let o = f.up(&["3", "--ready-timeout", "20s", "--json"]);
    let got = f.received();
    for w in ["worker-1", "worker-2", "worker-3"] {
        assert!(
            got.contains(&format!("You are {w} of team demo")),
            "{w} never submitted: {got:?}"
        );
    }
    assert_code(&o, 0);
    let lines = json_lines(&o.stdout);
    for l in &lines[..3] {
        assert_eq!(l["delivery"], "delivered", "{l}");
    }
    // Delivered in parallel: one late prompt, one settle and one check, not three of each.
    assert!(t0.elapsed() < Duration::from_secs(8), "{:?}", t0.elapsed());
    // Each paste was followed by an Enter of its own: the text went in as a bracketed paste.
    let typed = String::from_utf8_lossy(&f.typed()).into_owned();
    assert!(typed.contains("\x1b[200~You are worker-"), "{typed:?}");
    // The audit log holds a send-keys intent and outcome for each.
    let audit = std::fs::read_to_string(f.sb.ws.join(".team/audit.jsonl")).unwrap();
    let sends = audit
        .lines()
        .filter(|l| l.contains("\"action\":\"send-keys\"") && l.contains("\"stage\":\"intent\""))
        .count();
    assert_eq!(sends, 3, "{audit}");
    tests::assert_audit_pairs(&f.sb.ws.join(".team/audit.jsonl"));
}

#[test]
fn prompt_given_at_launch_types_nothing() {
    let f = Fake::new("", &["--agent", "fakearg"]);
    let o = f.up(&["1", "--ready-timeout", "20s", "--json"]);
    assert_code(&o, 0);
    assert_eq!(json_lines(&o.stdout)[0]["delivery"], "delivered");
    assert!(
        f.received().contains("You are worker-1 of team demo"),
        "{}",
        f.received()
    );
    assert_eq!(f.typed(), b"", "nothing needed typing");
}

#[test]
fn a_worker_that_exits_at_start_is_seen_at_once_with_its_status_and_last_lines() {
    // The exit status comes from exit.json (written by the pane's supervisor; the fake agent
    // writes it itself here) or from tmux's pane_dead_status when tmux has reaped the process.
    let f = Fake::new("--exit-at-start 3 --exit-json", &[]);
    let t0 = Instant::now();
    let o = f.up(&["1", "--ready-timeout", "30s"]);
    assert_code(&o, 1);
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    let e = stderr(&o);
    assert!(e.contains("exited with status 3"), "{e}");
    assert!(e.contains("Unable to connect to the fake service"), "{e}");
    assert!(f.workers().is_empty());
    // Without exit.json, the death is still seen at once, with the last lines.
    let f = Fake::new("--exit-at-start 3", &[]);
    let t0 = Instant::now();
    let o = f.up(&["1", "--ready-timeout", "30s"]);
    assert_code(&o, 1);
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    let e = stderr(&o);
    assert!(e.contains("worker-1's process (Fake agent) exited"), "{e}");
    assert!(e.contains("Unable to connect to the fake service"), "{e}");
}

#[test]
fn the_default_shell_worker_never_executes_the_first_prompt() {
    let sb = Sandbox::new();
    let trigger = "Hello $(touch pwned1) ; touch pwned2 `touch pwned3` read {inbox}";
    assert_code(
        &sb.run(
            "team-scale",
            &["init", "demo", "--private", "--trigger", trigger],
        ),
        0,
    );
    let o = sb.run(
        "team-scale",
        &["up", "demo", "1", "--ready-timeout", "10s", "--json"],
    );
    std::thread::sleep(Duration::from_millis(500));
    for f in ["pwned1", "pwned2", "pwned3"] {
        assert!(
            !sb.ws.join(f).exists(),
            "{f}: the prompt was executed by a shell"
        );
    }
    assert_code(&o, 0);
    assert_eq!(json_lines(&o.stdout)[0]["delivery"], "delivered");
    let pane = json_lines(&o.stdout)[0]["pane_id"]
        .as_str()
        .unwrap()
        .to_string();
    let screen = tests::tmux_at(
        &sb.private_sock(),
        &["capture-pane", "-p", "-J", "-t", &pane],
    );
    let screen = String::from_utf8_lossy(&screen.stdout).into_owned();
    assert!(
        screen.contains("Hello $(touch pwned1) ; touch pwned2"),
        "{screen}"
    );
    assert!(!screen.contains("not found"), "{screen}");
}

#[test]
fn init_refuses_a_worker_program_that_does_not_exist() {
    let sb = Sandbox::new();
    for cmd in ["no-such-agent-cli-xyz --yolo", "exec /nonexistent/codex"] {
        let o = sb.run(
            "team-scale",
            &["init", "demo", "--private", "--worker-cmd", cmd],
        );
        assert_code(&o, 64);
        let e = stderr(&o);
        assert!(
            e.contains("not found on PATH") && e.contains("hint: install"),
            "{e}"
        );
        assert!(!sb.ws.join(".team/teams/demo/team.json").exists());
    }
    let o = sb.run(
        "team-scale",
        &["init", "demo", "--private", "--agent", "nosuch"],
    );
    assert_code(&o, 64);
    assert!(
        stderr(&o).contains("no agent profile \"nosuch\""),
        "{}",
        stderr(&o)
    );
}

fn kill_pid(pid: u64) {
    // Our own test's process, by pid.
    let st = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
}

fn wait_liveness(sb: &Sandbox, worker: &str, want: &[&str]) {
    let t0 = Instant::now();
    loop {
        let o = sb.run("team-scale", &["status", "demo", "--json"]);
        let l = json_lines(&o.stdout);
        if l.iter()
            .any(|w| w["worker"] == worker && want.iter().any(|x| w["liveness"] == *x))
        {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{worker} never {want:?}: {l:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_dead_only_worker_does_not_jam_up_and_reconcile_settles_it() {
    let f = Fake::new("", &[]);
    let o = f.up(&["1", "--ready-timeout", "20s"]);
    assert_code(&o, 0);
    let pid = f.workers()[0]["pane"]["pane_pid"].as_u64().unwrap();
    kill_pid(pid);
    // With remain-on-exit the pane stays, dead (without it, it would be missing).
    wait_liveness(&f.sb, "worker-1", &["dead", "missing"]);
    // up splits from another proven source (the leader) and says why.
    let o = f.up(&["1", "--ready-timeout", "20s"]);
    assert_code(&o, 0);
    assert!(stderr(&o).contains("instead of worker-1"), "{}", stderr(&o));
    // reconcile settles the dead member with proof.
    let o = f.sb.run("team-scale", &["reconcile", "demo"]);
    assert_code(&o, 0);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("worker-1: its process exited"),
        "{o:?}"
    );
    let names: Vec<String> = f
        .workers()
        .iter()
        .map(|w| w["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["worker-2"]);
    tests::assert_audit_pairs(&f.sb.ws.join(".team/audit.jsonl"));
}

fn socket_panes(sock: &Path) -> usize {
    let o = tests::tmux_at(sock, &["list-panes", "-a", "-F", "#{pane_id}"]);
    String::from_utf8_lossy(&o.stdout).lines().count()
}

#[test]
fn workers_that_never_reported_are_busy_and_a_drain_timeout_removes_nothing() {
    let sb = Sandbox::new();
    assert_code(&sb.run("team-scale", &["init", "demo", "--private"]), 0);
    assert_code(
        &sb.run("team-scale", &["up", "demo", "2", "--ready-timeout", "10s"]),
        0,
    );
    let panes = socket_panes(&sb.private_sock());
    // Never reported: busy for down without --force.
    let o = sb.run("team-scale", &["down", "demo", "1"]);
    assert_code(&o, 1);
    assert!(
        stderr(&o).contains("0 of 2 active workers are idle"),
        "{}",
        stderr(&o)
    );
    // Named: the drain times out, exit 75, nothing removed.
    let o = sb.run(
        "team-scale",
        &[
            "down",
            "demo",
            "--worker",
            "worker-2",
            "--drain-timeout",
            "1s",
        ],
    );
    assert_code(&o, 75);
    assert_eq!(socket_panes(&sb.private_sock()), panes);
    let st = json_lines(&sb.run("team-scale", &["status", "demo", "--json"]).stdout);
    assert_eq!(
        st.iter().filter(|l| l["lifecycle"] == "active").count(),
        2,
        "{st:?}"
    );
    assert!(
        !sb.ws
            .join(".team/teams/demo/workers/worker-2/status.json")
            .exists(),
        "the drain mark of a worker that never reported is undone"
    );
    // --force removes it.
    assert_code(
        &sb.run(
            "team-scale",
            &[
                "down", "demo", "--worker", "worker-2", "--force", "--grace", "1s",
            ],
        ),
        0,
    );
    assert_eq!(socket_panes(&sb.private_sock()), panes - 1);
}

/// The text of `o`'s stdout and stderr.
/// Black-box round: a Codex-style approval menu whose selected choice is shown only in reverse
/// video (no marker glyph), and a plain `Allow this command? [y/N]` question, were typed into:
/// `send` reported `undelivered`, but the agent had every byte, and its first key `y` answered.
/// Whatever the style, the menu or question gets not one byte, from `up` (a typed profile) or
/// `send` (Codex's), and not even an intent is written.
#[test]
fn an_unmarked_menu_or_a_yes_no_question_gets_no_keys() {
    for style in ["reverse", "codex", "yn"] {
        // Typed first prompt (`custom`): `up` types nothing.
        let f = Fake::new(
            &format!("--screen approval --approval-style {style}"),
            &["--agent", "custom"],
        );
        let o = f.up(&["1", "--ready-timeout", "6s", "--json"]);
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(
            String::from_utf8_lossy(&f.typed()),
            "",
            "{style}: keys reached the approval: {}",
            both(&o)
        );
        assert_code(&o, 1);
        let e = stderr(&o);
        assert!(e.contains("blocked by the approval screen"), "{style}: {e}");

        // Codex's profile: the prompt goes in at launch, then the agent asks; `send` types
        // nothing.
        let f = Fake::new(
            &format!("--done-after 200 --approval-after 2000 --approval-style {style}"),
            &["--agent", "codex"],
        );
        let o = f.up(&["1", "--ready-timeout", "20s"]);
        assert_code(&o, 0);
        let sb = &f.sb;
        tests::wait_for("the approval", Duration::from_secs(10), || {
            let o = sb.run("team-scale", &["peek", "demo", "worker-1"]);
            String::from_utf8_lossy(&o.stdout).contains("rm -rf build/")
        });
        let o = sb.run(
            "team-scale",
            &[
                "send",
                "demo",
                "worker-1",
                "yes, continue with the next task",
                "--ready-timeout",
                "5s",
                "--json",
            ],
        );
        assert_code(&o, 1);
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(
            String::from_utf8_lossy(&f.typed()),
            "",
            "{style}: keys reached the approval: {}",
            both(&o)
        );
        let d = json_lines(&o.stdout)
            .into_iter()
            .find(|l| l["type"] == "delivery")
            .unwrap();
        assert_eq!(d["result"], "blocked", "{style}: {d}");
        let peek = sb.run("team-scale", &["peek", "demo", "worker-1"]);
        assert!(
            !String::from_utf8_lossy(&peek.stdout).contains("(approved)"),
            "{style}: {}",
            both(&peek)
        );
        let log = std::fs::read_to_string(sb.ws.join(".team/audit.jsonl")).unwrap_or_default();
        assert!(!log.contains("\"action\":\"send-keys\""), "{style}: {log}");
    }
}

fn both(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Black-box round: a Codex command-approval menu (`› 1. Yes, proceed (y)` on the cursor line,
/// no bracketed paste) took `send`'s paste as keys: its `y`/`a` answered it, though no Enter
/// was pressed. Codex's profile has no ready cursor, so any still screen was "ready". A
/// selected menu choice is now an `approval` screen for every profile: not one byte reaches
/// it, and the command says so (`blocked`, exit 1).
#[test]
fn an_approval_menu_gets_no_keys_whatever_the_profile() {
    // Typed first prompt (`custom`: ready once still): `up` types nothing into the menu.
    let f = Fake::new("--screen approval", &["--agent", "custom"]);
    let o = f.up(&["1", "--ready-timeout", "6s", "--json"]);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        f.typed(),
        b"",
        "keys reached the approval menu: {}",
        both(&o)
    );
    assert_code(&o, 1);
    let e = stderr(&o);
    assert!(e.contains("blocked by the approval screen"), "{e}");
    assert!(e.contains("Yes, proceed (y)"), "last lines shown: {e}");
    let lines = json_lines(&o.stdout);
    assert_eq!(lines[0]["delivery"], "blocked", "{lines:?}");

    // Codex's profile (the attacker's): the prompt goes in at launch, then the agent asks for
    // an approval; `send` and `broadcast` type nothing into the menu.
    let f = Fake::new(
        "--done-after 200 --approval-after 2000",
        &["--agent", "codex"],
    );
    let o = f.up(&["1", "--ready-timeout", "20s"]);
    assert_code(&o, 0);
    let sb = &f.sb;
    tests::wait_for("the approval menu", Duration::from_secs(10), || {
        let o = sb.run("team-scale", &["peek", "demo", "worker-1"]);
        String::from_utf8_lossy(&o.stdout).contains("Yes, proceed (y)")
    });
    let o = sb.run(
        "team-scale",
        &[
            "send",
            "demo",
            "worker-1",
            "stop after the current task",
            "--ready-timeout",
            "5s",
            "--json",
        ],
    );
    assert_code(&o, 1);
    let d = json_lines(&o.stdout)
        .into_iter()
        .find(|l| l["type"] == "delivery")
        .unwrap();
    assert_eq!(d["result"], "blocked", "{d}");
    assert!(
        d["detail"].as_str().unwrap().contains("approval"),
        "the command says why: {d}"
    );
    let o = sb.run(
        "team-scale",
        &[
            "broadcast",
            "demo",
            "yes, approve all",
            "--ready-timeout",
            "3s",
        ],
    );
    assert_code(&o, 1);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        String::from_utf8_lossy(&f.typed()),
        "",
        "keys reached the approval menu"
    );
    let peek = sb.run("team-scale", &["peek", "demo", "worker-1"]);
    assert!(
        !String::from_utf8_lossy(&peek.stdout).contains("(approved)"),
        "{}",
        both(&peek)
    );
    // Not even an intent to type was written.
    let log = std::fs::read_to_string(sb.ws.join(".team/audit.jsonl")).unwrap_or_default();
    assert!(!log.contains("\"action\":\"send-keys\""), "{log}");
}
