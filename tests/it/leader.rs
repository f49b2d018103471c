//! The leader's everyday commands (issue 13) on a real private server with the fake agent:
//! the task board (add, assign, list, show, returned tasks offered to idle workers), messages
//! with proven delivery (and refused for a pane that is no longer ours), policy changes.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use tests::{Sandbox, assert_audit_pairs, assert_code, json_lines};

/// The fake agent's profile. The workers run with `--done-after`, so the busy line goes away
/// after each prompt and later messages can be typed.
const PROFILE: &str = r#"
[agents.fake]
programs = ["fake-agent"]
display = "Fake agent"
ready_cursor = ["fake> "]
stable_ms = 300
settle_ms = 150
verify_ms = 800
retries = 2
busy = ["Working on:"]
queue_cursor = ["fake>"]

[agents.fakeplain]
programs = []
display = "Fake agent (no queue)"
ready_cursor = ["fake> "]
stable_ms = 300
settle_ms = 150
verify_ms = 800
retries = 2
busy = ["Working on:"]
"#;

struct Team {
    sb: Sandbox,
    dir: PathBuf,
}

impl Team {
    /// A team `demo` of the fake agent; each worker records what it receives in
    /// `<dir>/received-<worker>.txt` and every byte in `<dir>/record-<worker>.bin`.
    fn new() -> Team {
        Team::running(|dir| {
            format!(
                "exec {} --done-after 700 --received {d}/received-$TEAM_WORKER.txt --record {d}/record-$TEAM_WORKER.bin",
                tests::bin("fake-agent").display(),
                d = dir.display()
            )
        })
    }

    /// A team `demo` of the fake agent's profile whose workers run `cmd(<scratch dir>)`.
    fn running(cmd: impl FnOnce(&std::path::Path) -> String) -> Team {
        Team::running_as("fake", cmd)
    }

    /// A team `demo` of the agent profile `agent` whose workers run `cmd(<scratch dir>)`.
    fn running_as(agent: &str, cmd: impl FnOnce(&std::path::Path) -> String) -> Team {
        let sb = Sandbox::new();
        std::fs::create_dir_all(sb.ws.join(".team")).unwrap();
        std::fs::write(sb.ws.join(".team/agents.toml"), PROFILE).unwrap();
        let dir = sb.dir.path().to_path_buf();
        let cmd = cmd(&dir);
        let o = sb.run(
            "team-scale",
            &[
                "init",
                "demo",
                "--private",
                "--agent",
                agent,
                "--worker-cmd",
                &cmd,
            ],
        );
        assert_code(&o, 0);
        Team { sb, dir }
    }

    fn run(&self, args: &[&str]) -> Output {
        self.sb.run("team-scale", args)
    }

    fn run_in(&self, args: &[&str], input: &str) -> Output {
        let mut c = self.sb.cmd("team-scale");
        c.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    }

    fn received(&self, w: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("received-{w}.txt"))).unwrap_or_default()
    }

    fn inbox(&self, w: &str) -> String {
        std::fs::read_to_string(
            self.sb
                .ws
                .join(format!(".team/teams/demo/workers/{w}/inbox.md")),
        )
        .unwrap()
    }

    fn tasks(&self) -> Vec<Value> {
        let o = self.run(&["task", "list", "demo", "--json"]);
        assert_code(&o, 0);
        json_lines(&o.stdout)
            .into_iter()
            .filter(|l| l["type"] == "task")
            .collect()
    }

    fn worker(&self, w: &str) -> Value {
        let o = self.run(&["status", "demo", "--json"]);
        json_lines(&o.stdout)
            .into_iter()
            .find(|l| l["type"] == "worker" && l["worker"] == w)
            .unwrap_or(Value::Null)
    }

    fn events(&self) -> String {
        std::fs::read_to_string(self.sb.ws.join(".team/teams/demo/events.jsonl")).unwrap()
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn task_board_reaches_the_owners_inbox_and_screen_and_returned_tasks_are_offered() {
    let t = Team::new();
    assert_code(&t.run(&["up", "demo", "2", "--ready-timeout", "20s"]), 0);

    // Bad input first: nothing is stored.
    let o = t.run_in(
        &["task", "add", "demo", "-"],
        r#"[{"subject":"x","owner":"worker-9"}]"#,
    );
    assert_code(&o, 65);
    assert!(text(&o).contains("worker-9"), "{}", text(&o));
    let o = t.run_in(
        &["task", "add", "demo", "-"],
        r#"[{"subject":"x","owner":"new:1"}]"#,
    );
    assert_code(&o, 65);
    assert!(text(&o).contains("up --tasks"), "{}", text(&o));
    assert_code(&t.run_in(&["task", "add", "demo", "-"], "[]"), 64);
    assert!(t.tasks().is_empty());

    // A task for an existing member: its inbox lists it and its agent is told.
    let o = t.run_in(
        &["task", "add", "demo", "-", "--json"],
        r#"[{"subject":"write the parser","description":"see docs","owner":"worker-1"}]"#,
    );
    assert_code(&o, 0);
    let lines = json_lines(&o.stdout);
    let d = lines.iter().find(|l| l["type"] == "delivery").unwrap();
    assert_eq!(d["worker"], "worker-1");
    assert_eq!(d["result"], "delivered", "{d}");
    assert!(t.inbox("worker-1").contains("- #1: write the parser"));
    assert!(
        t.received("worker-1").contains("New task for you: #1."),
        "{}",
        t.received("worker-1")
    );
    assert!(!t.received("worker-2").contains("New task"));

    // An open task: every member's inbox lists it, nobody is told.
    let o = t.run_in(
        &["task", "add", "demo", "-"],
        r#"[{"subject":"review","blocked_by":[1]}]"#,
    );
    assert_code(&o, 0);
    for w in ["worker-1", "worker-2"] {
        let inbox = t.inbox(w);
        let open = &inbox[inbox.find("## Open tasks").expect(&inbox)..];
        assert!(
            open.contains("- #2: review") && open.contains("(blocked by #1)"),
            "{inbox}"
        );
    }
    let list = t.tasks();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["owner"], "worker-1");
    assert_eq!(list[0]["status"], "pending");
    assert_eq!(list[1]["owner"], Value::Null);
    assert_eq!(list[1]["blocked_by"], serde_json::json!([1]));
    assert!(list[1]["updated"].as_str().is_some());
    let o = t.run(&["task", "show", "demo", "1"]);
    assert_code(&o, 0);
    assert!(text(&o).contains("see docs"), "{}", text(&o));
    assert_code(&t.run(&["task", "show", "demo", "9"]), 66);

    // Assign: worker-2 gets task 2, told; its inbox moves the task from open to its own.
    let o = t.run(&["task", "assign", "demo", "2", "worker-2"]);
    assert_code(&o, 0);
    assert!(t.received("worker-2").contains("New task for you: #2."));
    let inbox = t.inbox("worker-2");
    assert!(!inbox.contains("## Open tasks"), "{inbox}");
    assert!(inbox.contains("- #2: review"), "{inbox}");
    assert_code(&t.run(&["task", "assign", "demo", "2", "worker-7"]), 1);

    // Seeing: status shows each worker's task and note; the watch and tmux views.
    let inc2 = t.worker("worker-2")["incarnation"]
        .as_str()
        .unwrap()
        .to_string();
    assert_code(
        &t.run(&[
            "worker-status",
            "demo",
            "--worker",
            "worker-2",
            "--incarnation",
            &inc2,
            "--state",
            "busy",
            "--note",
            "reading the spec",
        ]),
        0,
    );
    let o = t.run(&["status", "demo"]);
    assert_code(&o, 0);
    let st = text(&o);
    let line2 = st
        .lines()
        .find(|l| l.trim_start().starts_with("worker-2"))
        .unwrap();
    assert!(
        line2.contains("#2 review [pending]") && line2.contains("note: reading the spec"),
        "{st}"
    );
    let w2 = t.worker("worker-2");
    assert_eq!(w2["task"]["id"], 2, "{w2}");
    assert_eq!(w2["note"], "reading the spec");
    let o = t.run(&["status", "demo", "--format", "tmux"]);
    assert_code(&o, 0);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "demo: 2w 1b 0i t0/2"
    );
    let o = t.run(&["status", "demo", "--watch"]);
    assert_code(&o, 0);
    assert!(text(&o).contains("only on a terminal"), "{}", text(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout)
            .matches("team demo")
            .count(),
        1
    );
    assert!(text(&o).contains("#1 write the parser"), "{}", text(&o));
    let o = t.run(&["attach", "demo"]);
    assert_code(&o, 0);
    let cmd = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        cmd.contains(&format!(
            "-S {} attach-session -t '$",
            t.sb.private_sock().display()
        )),
        "{cmd}"
    );

    // worker-2 claims task 2 (its blocker is not done: refused), then is removed; with
    // `--reassign auto` the returned task goes to idle worker-1, which is told.
    let inc1 = t.worker("worker-1")["incarnation"]
        .as_str()
        .unwrap()
        .to_string();
    assert_code(
        &t.run(&[
            "worker-status",
            "demo",
            "--worker",
            "worker-1",
            "--incarnation",
            &inc1,
            "--state",
            "idle",
        ]),
        0,
    );
    assert_code(&t.run(&["policy", "demo", "--reassign", "auto"]), 0);
    let o = t.run(&["down", "demo", "--worker", "worker-2", "--force", "--json"]);
    assert_code(&o, 0);
    let sum = json_lines(&o.stdout)
        .into_iter()
        .find(|l| l["type"] == "summary")
        .unwrap();
    assert_eq!(sum["tasks_returned"], serde_json::json!([2]), "{sum}");
    assert_eq!(sum["tasks_offered"][0]["worker"], "worker-1", "{sum}");
    assert_eq!(sum["tasks_offered"][0]["told"], "delivered", "{sum}");
    assert_eq!(t.tasks()[1]["owner"], "worker-1");
    assert!(t.received("worker-1").contains("New task for you: #2."));
    assert!(t.inbox("worker-1").contains("- #2: review"));

    // `up demo 0 --tasks` adds tasks only.
    let o = t.run_in(
        &["up", "demo", "0", "--tasks", "-"],
        r#"[{"subject":"docs","owner":"worker-1"}]"#,
    );
    assert_code(&o, 0);
    assert_eq!(t.tasks().len(), 3);
    // `up` with a task for an existing member: its inbox and its agent too.
    let o = t.run_in(
        &["up", "demo", "1", "--ready-timeout", "20s", "--tasks", "-"],
        r#"[{"subject":"pair with the new one","owner":"worker-1"}]"#,
    );
    assert_code(&o, 0);
    assert!(
        t.received("worker-1").contains("New task for you: #4."),
        "{}",
        t.received("worker-1")
    );
    assert!(t.inbox("worker-1").contains("- #4: pair with the new one"));
    assert!(t.events().contains("\"tasks_added\""));
    assert!(t.events().contains("\"task_assigned\""));
    assert!(assert_audit_pairs(&t.sb.ws.join(".team/audit.jsonl")) > 0);
}

/// Black-box round 5: a worker whose agent hands its terminal to a shell (`exec sh -i`, with
/// or without job control, or reading `/dev/stdin`), to a client of another tmux server or
/// `script`, to a Python REPL, or to a program that runs the lines it reads (awk, perl -ne, an
/// `sh -c` read/eval loop) still
/// proves ours, but text typed into it would run as a command there. `send` must type nothing.
#[test]
fn send_types_nothing_into_a_shell_or_another_terminal() {
    let other = tests::TmuxServer::start();
    // Its shell's prompt looks like the agent's: only the checks stop the typing.
    other.tmux(&["new-session", "-d", "-s", "fsh", "PS1='fake> ' exec sh -i"]);
    let osock = other.sock.clone();
    let t = Team::running(|dir| {
        let script = dir.join("agent.sh");
        std::fs::write(
            &script,
            format!(
                "{agent} --done-after 300 --die-after 2500 --received {d}/received-$TEAM_WORKER.txt\n\
                 case $TEAM_WORKER in\n\
                 worker-1) PS1='fake> ' exec sh -i ;;\n\
                 worker-2) PS1='fake> ' exec sh +m -i ;;\n\
                 worker-4) exec python3 -q -i -c \"import sys; sys.ps1 = 'fake> '\" ;;\n\
                 worker-5) printf 'fake> '; exec sh /dev/stdin ;;\n\
                 worker-6) printf 'fake> '; exec awk '{{ system($0) }}' ;;\n\
                 worker-7) printf 'fake> '; exec perl -ne 'system $_' ;;\n\
                 worker-8) PS1='fake> ' SHELL=/bin/sh exec script -q /dev/null ;;\n\
                 worker-9) printf 'fake> '; exec sh -c 'while read x; do eval \"$x\"; done' ;;\n\
                 *) unset TMUX TMUX_PANE; exec tmux -S {o} -f /dev/null attach -t fsh ;;\n\
                 esac\n",
                agent = tests::bin("fake-agent").display(),
                d = dir.display(),
                o = osock.display()
            ),
        )
        .unwrap();
        format!("sh {}", script.display())
    });
    let (sb, dir) = (&t.sb, &t.dir);
    assert_code(&t.run(&["policy", "demo", "--max-workers", "9"]), 0);
    assert_code(&t.run(&["up", "demo", "9", "--ready-timeout", "20s"]), 0);
    // The agents exit; a shell or a nested client takes each pane's terminal.
    std::thread::sleep(std::time::Duration::from_millis(4000));
    let log = sb.ws.join(".team/audit.jsonl");
    let send_intents = || {
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .filter(|l| {
                l.contains("\"action\":\"send-keys\"") && l.contains("\"stage\":\"intent\"")
            })
            .count()
    };
    let intents = send_intents();
    for w in (1..=9).map(|i| format!("worker-{i}")) {
        let w = w.as_str();
        let marker = dir.join(format!("ran-{w}"));
        // Worker 4 is a Python REPL: the text is Python there.
        let text = if w == "worker-4" {
            format!("open('{}', 'w').close()", marker.display())
        } else {
            format!("touch {}", marker.display())
        };
        let o = sb.run(
            "team-scale",
            &["send", "demo", w, &text, "--ready-timeout", "5s", "--json"],
        );
        assert_code(&o, 1);
        let d = json_lines(&o.stdout)
            .into_iter()
            .find(|l| l["type"] == "delivery")
            .unwrap();
        assert_ne!(d["result"], "delivered", "{w}: {d}");
        std::thread::sleep(std::time::Duration::from_millis(500));
        assert!(
            !marker.exists(),
            "{w}: the typed text ran as a command: {d}"
        );
        // Nor was it typed and left waiting for an Enter: every typing writes its intent
        // first, and no intent was written.
        assert_eq!(send_intents(), intents, "{w}: keys were typed: {d}");
    }
    // Nothing reached the other server's shell either.
    let screen = other.tmux(&["capture-pane", "-p", "-t", "fsh"]);
    assert!(!screen.contains("touch"), "{screen}");
    // The shells, the REPLs and `script` outlive a killed server (an interactive shell ignores
    // SIGTERM, `script` keeps a terminal of its own): the team goes the tools' way, which
    // proves and ends every process below each supervisor, so the test leaves none behind.
    let o = sb.run("team-scale", &["shutdown", "demo", "--grace", "2s"]);
    assert!(matches!(o.status.code(), Some(0 | 3)), "{o:?}");
    let ws = sb.ws.display().to_string();
    let left = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|p| {
                std::fs::read(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&ws))
            })
            .collect::<Vec<_>>()
    };
    let t0 = std::time::Instant::now();
    while !left().is_empty() && t0.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(
        left(),
        Vec::<u32>::new(),
        "processes of this team outlived its shutdown"
    );
    assert_audit_pairs(&sb.ws.join(".team/audit.jsonl"));
}

/// The `send-keys` intents in `sb`'s audit log: every typing writes one first.
fn send_intents(sb: &Sandbox) -> usize {
    std::fs::read_to_string(sb.ws.join(".team/audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("\"action\":\"send-keys\"") && l.contains("\"stage\":\"intent\""))
        .count()
}

/// Sends each of `workers` a command line that would touch a canary (`typed(canary)`) and
/// checks that nothing was typed: `send` exits 1 with the delivery `undelivered`, no
/// `send-keys` intent is written, and the canary never appears. Then shuts the team down.
fn assert_send_types_nothing(
    t: &Team,
    workers: &[&str],
    typed: &dyn Fn(&std::path::Path) -> String,
    what: &str,
) {
    let (sb, dir) = (&t.sb, &t.dir);
    let intents = send_intents(sb);
    for w in workers {
        let canary = dir.join(format!("PWNED-{w}"));
        let o = sb.run(
            "team-scale",
            &[
                "send",
                "demo",
                w,
                &typed(&canary),
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
        assert_eq!(d["result"], "undelivered", "{w}: {d}");
        std::thread::sleep(std::time::Duration::from_millis(500));
        assert!(
            !canary.exists(),
            "{w}: the {what} ran the typed command: {d}"
        );
        assert_eq!(send_intents(sb), intents, "{w}: keys were typed: {d}");
    }
    let o = sb.run("team-scale", &["shutdown", "demo", "--grace", "2s"]);
    assert!(matches!(o.status.code(), Some(0 | 3)), "{o:?}");
}

/// A `custom` team whose workers each run the fake agent (which takes `up`'s first prompt,
/// then exits) and then hand the pane's terminal to their own command: `cases(dir)[i]` for
/// worker-(i+1), a line of `sh` run in the worker's directory. Returns once every agent has
/// exited, and the workers' names.
fn workers_then_running(
    cases: impl FnOnce(&std::path::Path) -> Vec<String>,
) -> (Team, Vec<String>) {
    let mut n = 0;
    let t = Team::running_as("custom", |dir| {
        let cases = cases(dir);
        n = cases.len();
        let arms: String = cases
            .iter()
            .enumerate()
            .map(|(i, c)| format!("worker-{}) {c} ;;\n", i + 1))
            .collect();
        let script = dir.join("agent.sh");
        std::fs::write(
            &script,
            format!(
                "{agent} --done-after 300 --die-after 2500 --received {d}/received-$TEAM_WORKER.txt\n\
                 case $TEAM_WORKER in\n{arms}esac\n",
                agent = tests::bin("fake-agent").display(),
                d = dir.display(),
            ),
        )
        .unwrap();
        format!("sh {}", script.display())
    });
    let max = n.to_string();
    assert_code(&t.run(&["policy", "demo", "--max-workers", &max]), 0);
    assert_code(&t.run(&["up", "demo", &max, "--ready-timeout", "20s"]), 0);
    // The agents exit; each case's program takes its pane's terminal.
    std::thread::sleep(std::time::Duration::from_millis(4000));
    (t, (1..=n).map(|i| format!("worker-{i}")).collect())
}

/// Black-box round: `less` was not recognised. `up`'s first prompt was typed into it
/// ("delivered (typed...)"), and `send '!touch ...'` ran the command (less runs a `!` line in
/// a shell). A pager or viewer reading the pane (`exec less f`, `cat f | less`, whose keys
/// come from the `/dev/tty` it opens, `more` on a long file) gets nothing from `up`.
#[test]
fn up_types_no_first_prompt_into_a_pager() {
    let sb = Sandbox::new();
    let dir = sb.dir.path();
    let long = dir.join("long.txt");
    std::fs::write(
        &long,
        (1..400).map(|i| format!("line {i}\n")).collect::<String>(),
    )
    .unwrap();
    let script = dir.join("pager.sh");
    std::fs::write(
        &script,
        format!(
            "case $TEAM_WORKER in\n\
             worker-1) exec less {l} ;;\n\
             worker-2) cat {l} | less ;;\n\
             *) exec more {l} ;;\n\
             esac\n",
            l = long.display()
        ),
    )
    .unwrap();
    let cmd = format!("sh {}", script.display());
    let o = sb.run(
        "team-scale",
        &[
            "init",
            "demo",
            "--private",
            "--agent",
            "custom",
            "--worker-cmd",
            &cmd,
        ],
    );
    assert_code(&o, 0);
    assert_code(
        &sb.run("team-scale", &["policy", "demo", "--max-workers", "3"]),
        0,
    );
    let o = sb.run(
        "team-scale",
        &["up", "demo", "3", "--ready-timeout", "6s", "--json"],
    );
    assert_code(&o, 1);
    let lines = json_lines(&o.stdout);
    for w in ["worker-1", "worker-2", "worker-3"] {
        let l = lines
            .iter()
            .find(|l| l["worker"] == w)
            .unwrap_or_else(|| panic!("{w}: {lines:?}"));
        assert_eq!(l["delivery"], "undelivered", "{w}: {l}");
    }
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("less") && e.contains("more"),
        "the pager is named: {e}"
    );
    assert_eq!(send_intents(&sb), 0, "keys were typed: {}", text(&o));
}

/// The same round: an agent that hands its terminal to a pager. `send '!touch <canary>'`
/// must type nothing, so the pager runs no command. (The `custom` profile, as the attacker's
/// team had: ready once the screen is still, so only the pager check stops the typing.)
#[test]
fn send_types_nothing_into_a_pager() {
    let (t, workers) = workers_then_running(|dir| {
        let long = dir.join("long.txt");
        std::fs::write(
            &long,
            (1..400).map(|i| format!("line {i}\n")).collect::<String>(),
        )
        .unwrap();
        let l = long.display();
        vec![
            format!("exec less {l}"),
            format!("cat {l} | less"),
            format!("exec more {l}"),
        ]
    });
    let names: Vec<&str> = workers.iter().map(String::as_str).collect();
    assert_send_types_nothing(&t, &names, &|c| format!("!touch {}", c.display()), "pager");
}

/// The twenty-first round: a worker that hands its terminal to Python's debugger
/// (`python3 -m pdb x.py`, and `pdb3 x.py`, a script whose comm is its name) took a typed
/// `!import os; os.system(...)` and ran it, while `send` reported it delivered. A debugger
/// reads code from the terminal: nothing is typed.
#[test]
fn send_types_nothing_into_a_debugger() {
    let t = Team::running_as("custom", |dir| {
        let prog = dir.join("prog.py");
        std::fs::write(
            &prog,
            "import time\nfor i in range(3600):\n    time.sleep(1)\n",
        )
        .unwrap();
        let script = dir.join("agent.sh");
        let pdb3 = if std::path::Path::new("/usr/bin/pdb3").exists() {
            "pdb3"
        } else {
            "python3 -m pdb"
        };
        // The twenty-third round: the same under names of the agent's choosing, a symlink
        // `codex` to `pdb3` (run by its script's interpreter) and a symlink `agent` to the
        // Python executable, given `-m pdb`; the twenty-fourth: clustered options (`-Bm
        // code`, `-ui`) and the standard library's `code.py` run by its path; the
        // twenty-fifth: input redirected from `/dev/tty`, and `PYTHONINSPECT`.
        let python = ["/usr/bin/python3", "/usr/local/bin/python3"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
            .expect("python3 is installed");
        let pdb3_file = if std::path::Path::new("/usr/bin/pdb3").exists() {
            "/usr/bin/pdb3".to_string()
        } else {
            let f = dir.join("pdb3");
            std::fs::write(&f, format!("#!{python}\nimport pdb\npdb.main()\n")).unwrap();
            std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
            f.display().to_string()
        };
        std::os::unix::fs::symlink(&pdb3_file, dir.join("codex")).unwrap();
        std::os::unix::fs::symlink(python, dir.join("agent")).unwrap();
        std::fs::write(
            &script,
            format!(
                "{agent} --done-after 300 --die-after 2500 --received {d}/received-$TEAM_WORKER.txt\n\
                 case $TEAM_WORKER in\n\
                 worker-1) exec python3 -m pdb {p} ;;\n\
                 worker-2) exec {pdb3} {p} ;;\n\
                 worker-3) cd {d} && exec ./codex {p} ;;\n\
                 worker-4) cd {d} && exec ./agent -u -m pdb {p} ;;\n\
                 worker-5) exec python3 -Bm code ;;\n\
                 worker-6) exec python3 -ui {p} ;;\n\
                 worker-7) exec python3 \"$(python3 -c 'import code; print(code.__file__)')\" ;;\n\
                 worker-8) exec python3 - < /dev/tty ;;\n\
                 *) PYTHONINSPECT=1 exec python3 /dev/null ;;\n\
                 esac\n",
                agent = tests::bin("fake-agent").display(),
                d = dir.display(),
                p = prog.display()
            ),
        )
        .unwrap();
        format!("sh {}", script.display())
    });
    assert_code(&t.run(&["policy", "demo", "--max-workers", "9"]), 0);
    assert_code(&t.run(&["up", "demo", "9", "--ready-timeout", "20s"]), 0);
    // The agents exit; the debugger takes each pane's terminal.
    std::thread::sleep(std::time::Duration::from_millis(4000));
    assert_send_types_nothing(
        &t,
        &[
            "worker-1", "worker-2", "worker-3", "worker-4", "worker-5", "worker-6", "worker-7",
            "worker-8", "worker-9",
        ],
        &|c| format!("!import os; os.system('touch {}')", c.display()),
        "debugger",
    );
}

/// The twenty-sixth round: a shell run by the dynamic loader (`ld.so /bin/sh -i`) or by
/// valgrind (`valgrind -q /bin/sh -i`) got `up`'s first prompt and `send`'s text, and ran it:
/// the process's comm, `argv[0]` and executable name the loader, not the shell. A loader is
/// known by its executable, and judged as the program its arguments name: nothing is typed
/// into a shell or a REPL run that way, under another `argv[0]` (`--argv0`), or through a
/// symlink.
#[test]
fn send_types_nothing_into_a_shell_run_by_a_loader() {
    let ld = ["/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("the dynamic loader is where glibc puts it");
    let valgrind = ["/usr/bin/valgrind", "/usr/local/bin/valgrind"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists());
    let python = ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("python3 is installed");
    let (t, workers) = workers_then_running(|dir| {
        std::os::unix::fs::symlink("/bin/sh", dir.join("codex")).unwrap();
        vec![
            format!("exec {ld} /bin/sh -i"),
            format!("exec {ld} --argv0 agent /bin/sh"),
            format!("exec {ld} {python} -i"),
            // Without valgrind, its case runs a symlinked shell through the loader instead.
            match valgrind {
                Some(v) => format!("exec {v} -q /bin/sh -i"),
                None => format!(
                    "cd {} && exec {ld} --library-path /nonexistent ./codex -i",
                    dir.display()
                ),
            },
        ]
    });
    let names: Vec<&str> = workers.iter().map(String::as_str).collect();
    assert_send_types_nothing(
        &t,
        &names,
        &|c| format!("touch {}", c.display()),
        "loaded shell",
    );
}

/// The twenty-seventh round: an interpreter given an option that takes a value (`python3 -W
/// ignore`, `python3 -X utf8`) had that value taken for its script, so its REPL got `up`'s
/// first prompt and `send`'s text and ran them. Option values are known, and a word that names
/// no file is no script: nothing is typed, even with a file named as the value in the worker's
/// directory. (`node --title x` renames the process, arguments and all: a stated limit.)
#[test]
fn send_types_nothing_into_a_repl_given_an_option_value() {
    let (t, workers) = workers_then_running(|dir| {
        std::fs::write(dir.join("ignore"), "print('a file named as the value')\n").unwrap();
        vec![
            "exec python3 -W ignore".into(),
            "exec python3 -X utf8".into(),
            "exec python3 -W ignore -X dev -q".into(),
            format!("cd {} && exec python3 -W ignore", dir.display()),
        ]
    });
    let names: Vec<&str> = workers.iter().map(String::as_str).collect();
    assert_send_types_nothing(
        &t,
        &names,
        &|c| format!("open('{}', 'w')", c.display()),
        "REPL",
    );
}

/// A directory of programs under other names, as Debian's alternatives give them: `pager`
/// (`/usr/bin/pager` when there is one, else a symlink to `less`), `editor` (`/usr/bin/editor`,
/// vim on Debian, else a symlink to `less`), and `codex`, a symlink to `less` named as an
/// agent. Returns the directory, to put first on the worker's `PATH`.
fn alternatives(dir: &std::path::Path) -> PathBuf {
    let bin = dir.join("alt-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let less = ["/usr/bin/less", "/bin/less"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("less is installed");
    for (name, real) in [("pager", "/usr/bin/pager"), ("editor", "/usr/bin/editor")] {
        let target = if std::path::Path::new(real).exists() {
            PathBuf::from(real)
        } else {
            less.clone()
        };
        std::os::unix::fs::symlink(target, bin.join(name)).unwrap();
    }
    std::os::unix::fs::symlink(&less, bin.join("codex")).unwrap();
    bin
}

/// Black-box round: programs were recognised only by the name they were run by. `exec pager
/// f` (`pager` is Debian's alternative for `less`) got `up`'s first prompt and `send '!touch
/// ...'` ran the command; `editor` and `sensible-editor` (vim) got the text too. A program is
/// known by its executable as well (`/proc/<pid>/exe`), and the alternatives' names are known:
/// `up` types nothing into a pager or an editor under those names, nor into `less` named
/// `codex`.
#[test]
fn up_types_no_first_prompt_into_a_pager_under_another_name() {
    let sb = Sandbox::new();
    let dir = sb.dir.path();
    let long = dir.join("long.txt");
    std::fs::write(
        &long,
        (1..400).map(|i| format!("line {i}\n")).collect::<String>(),
    )
    .unwrap();
    let bin = alternatives(dir);
    let script = dir.join("pager.sh");
    std::fs::write(
        &script,
        format!(
            "PATH={b}:$PATH\n\
             case $TEAM_WORKER in\n\
             worker-1) exec pager {l} ;;\n\
             worker-2) exec editor {l} ;;\n\
             *) exec codex {l} ;;\n\
             esac\n",
            b = bin.display(),
            l = long.display()
        ),
    )
    .unwrap();
    let cmd = format!("sh {}", script.display());
    let o = sb.run(
        "team-scale",
        &[
            "init",
            "demo",
            "--private",
            "--agent",
            "custom",
            "--worker-cmd",
            &cmd,
        ],
    );
    assert_code(&o, 0);
    assert_code(
        &sb.run("team-scale", &["policy", "demo", "--max-workers", "3"]),
        0,
    );
    let o = sb.run(
        "team-scale",
        &["up", "demo", "3", "--ready-timeout", "6s", "--json"],
    );
    assert_code(&o, 1);
    let lines = json_lines(&o.stdout);
    for w in ["worker-1", "worker-2", "worker-3"] {
        let l = lines
            .iter()
            .find(|l| l["worker"] == w)
            .unwrap_or_else(|| panic!("{w}: {lines:?}"));
        assert_eq!(l["delivery"], "undelivered", "{w}: {l}");
    }
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("pager") && e.contains("editor") && e.contains("codex (less)"),
        "each program is named: {e}"
    );
    assert_eq!(send_intents(&sb), 0, "keys were typed: {}", text(&o));
}

/// The twenty-ninth round: `python3` found as a `pyenv` shim starts through several shell
/// scripts and `exec`s before the REPL: the screen stayed empty and still while they ran, the
/// `custom` profile took that for ready, the first prompt was typed into the terminal's
/// buffer, and the REPL read and ran it once it started. Here a start of three short steps,
/// then the shell that ran them `exec`s `python3`: nothing is typed, since the processes
/// reading the pane's terminal (those that have run as long as the screen must hold still)
/// must hold still too before a paste, and the REPL is then seen.
#[test]
fn up_types_no_first_prompt_into_a_repl_that_starts_slowly() {
    let sb = Sandbox::new();
    let cmd = "sleep 0.15; sleep 0.15; sleep 0.15; exec python3 -q";
    assert_code(
        &sb.run(
            "team-scale",
            &[
                "init",
                "demo",
                "--private",
                "--agent",
                "custom",
                "--worker-cmd",
                cmd,
            ],
        ),
        0,
    );
    let o = sb.run(
        "team-scale",
        &["up", "demo", "1", "--ready-timeout", "8s", "--json"],
    );
    assert_code(&o, 1);
    let l = json_lines(&o.stdout)
        .into_iter()
        .find(|l| l["worker"] == "worker-1")
        .unwrap_or_else(|| panic!("{}", text(&o)));
    assert_eq!(l["delivery"], "undelivered", "{l}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("python3"),
        "the REPL is named: {}",
        text(&o)
    );
    assert_eq!(send_intents(&sb), 0, "keys were typed: {}", text(&o));
}

/// The same round, through `send`: an agent hands its terminal to `pager`, `editor` or `less`
/// named `codex`; `send '!touch <canary>'` types nothing (no intent either), so no command
/// runs.
#[test]
fn send_types_nothing_into_a_pager_under_another_name() {
    let t = Team::running_as("custom", |dir| {
        let long = dir.join("long.txt");
        std::fs::write(
            &long,
            (1..400).map(|i| format!("line {i}\n")).collect::<String>(),
        )
        .unwrap();
        let bin = alternatives(dir);
        let script = dir.join("agent.sh");
        std::fs::write(
            &script,
            format!(
                "{agent} --done-after 300 --die-after 2500 --received {d}/received-$TEAM_WORKER.txt\n\
                 PATH={b}:$PATH\n\
                 case $TEAM_WORKER in\n\
                 worker-1) exec pager {l} ;;\n\
                 worker-2) exec editor {l} ;;\n\
                 *) exec codex {l} ;;\n\
                 esac\n",
                agent = tests::bin("fake-agent").display(),
                d = dir.display(),
                b = bin.display(),
                l = long.display()
            ),
        )
        .unwrap();
        format!("sh {}", script.display())
    });
    assert_code(&t.run(&["policy", "demo", "--max-workers", "3"]), 0);
    assert_code(&t.run(&["up", "demo", "3", "--ready-timeout", "20s"]), 0);
    // The agents exit; a pager or an editor takes each pane's terminal.
    std::thread::sleep(std::time::Duration::from_millis(4000));
    assert_send_types_nothing(
        &t,
        &["worker-1", "worker-2", "worker-3"],
        &|c| format!("!touch {}", c.display()),
        "pager",
    );
}

#[test]
fn send_reaches_the_agent_and_a_respawned_pane_gets_nothing() {
    let t = Team::new();
    assert_code(&t.run(&["up", "demo", "2", "--ready-timeout", "20s"]), 0);

    // Bad input: refused before anything.
    assert_code(&t.run(&["send", "demo", "worker-1", "a\u{1b}[2Jb"]), 64);
    assert_code(&t.run(&["send", "demo", "worker-1", "  "]), 64);
    assert_code(&t.run(&["send", "demo", "Bad Name", "hi"]), 64);
    let o = t.run(&["send", "demo", "worker-5", "hi"]);
    assert_code(&o, 1);
    assert!(text(&o).contains("not a member"), "{}", text(&o));

    let o = t.run(&["send", "demo", "worker-1", "run the tests again", "--json"]);
    assert_code(&o, 0);
    let o = t.run(&["peek", "demo", "worker-1", "--lines", "4"]);
    assert_code(&o, 0);
    let screen = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        screen.contains("fake>") && screen.lines().count() <= 4,
        "{screen}"
    );
    assert!(t.received("worker-1").contains("run the tests again"));
    assert!(!t.received("worker-2").contains("run the tests again"));
    let o = t.run(&["broadcast", "demo", "stand up in five"]);
    assert_code(&o, 0);
    for w in ["worker-1", "worker-2"] {
        assert!(t.received(w).contains("stand up in five"), "{w}");
    }
    assert!(t.events().contains("\"message\""));

    // The attack: the user respawns worker-1's pane with another program. The pane keeps its
    // %N and its tags, but it is no longer ours: nothing may be typed into it.
    let pane = t.worker("worker-1")["pane_id"]
        .as_str()
        .unwrap()
        .to_string();
    let other = t.dir.join("other.bin");
    let o = tests::tmux_at(
        &t.sb.private_sock(),
        &[
            "respawn-pane",
            "-k",
            "-t",
            &pane,
            &format!(
                "exec {} --record {}",
                tests::bin("fake-agent").display(),
                other.display()
            ),
        ],
    );
    assert!(o.status.success(), "{o:?}");
    std::thread::sleep(std::time::Duration::from_millis(500));
    let o = t.run(&["send", "demo", "worker-1", "delete everything", "--json"]);
    assert_code(&o, 1);
    let d = json_lines(&o.stdout)
        .into_iter()
        .find(|l| l["type"] == "delivery")
        .unwrap();
    assert_eq!(d["result"], "refused", "{d}");
    assert!(
        d["detail"]
            .as_str()
            .unwrap()
            .contains("no longer proven ours"),
        "{d}"
    );
    let o = t.run(&["broadcast", "demo", "delete everything"]);
    assert_code(&o, 1);
    // Nor is the respawned pane's screen shown as worker-1's.
    let o = t.run(&["peek", "demo", "worker-1"]);
    assert_code(&o, 1);
    assert!(text(&o).contains("not proven ours"), "{}", text(&o));
    assert!(o.stdout.is_empty());
    assert!(t.received("worker-2").contains("delete everything"));
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(
        std::fs::read(&other).unwrap_or_default(),
        b"",
        "keys reached the respawned pane"
    );
    assert_audit_pairs(&t.sb.ws.join(".team/audit.jsonl"));
}

#[test]
fn policy_max_workers_is_refused_below_the_members() {
    let sb = Sandbox::new();
    assert_code(
        &sb.run(
            "team-scale",
            &[
                "init",
                "demo",
                "--private",
                "--max-workers",
                "4",
                "--worker-cmd",
                "exec sleep 100000",
            ],
        ),
        0,
    );
    assert_code(
        &sb.run("team-scale", &["up", "demo", "2", "--ready-timeout", "0"]),
        0,
    );
    let o = sb.run("team-scale", &["policy", "demo", "--max-workers", "1"]);
    assert_code(&o, 1);
    assert!(String::from_utf8_lossy(&o.stderr).contains("2 current members"));
    assert_code(
        &sb.run("team-scale", &["policy", "demo", "--max-workers", "0"]),
        64,
    );
    assert_code(
        &sb.run("team-scale", &["policy", "demo", "--max-workers", "1025"]),
        64,
    );
    // As high as `init` takes (a team made with more than 64 can be set back to its size).
    let o = sb.run(
        "team-scale",
        &["policy", "demo", "--max-workers", "256", "--json"],
    );
    assert_code(&o, 0);
    assert_eq!(json_lines(&o.stdout)[0]["max_workers"], 256);
    let o = sb.run(
        "team-scale",
        &["policy", "demo", "--max-workers", "2", "--json"],
    );
    assert_code(&o, 0);
    assert_eq!(json_lines(&o.stdout)[0]["max_workers"], 2);
    let o = sb.run("team-scale", &["up", "demo", "1", "--ready-timeout", "0"]);
    assert_code(&o, 1);
    assert!(String::from_utf8_lossy(&o.stderr).contains("max_workers 2"));
}

#[test]
fn forget_drops_a_respawned_removing_worker_and_leaves_its_pane_alone() {
    let sb = Sandbox::new();
    let run = |args: &[&str]| sb.run("team-scale", args);
    assert_code(
        &run(&[
            "init",
            "demo",
            "--private",
            "--worker-cmd",
            "exec sleep 100000",
        ]),
        0,
    );
    assert_code(&run(&["up", "demo", "2", "--ready-timeout", "0"]), 0);
    let worker = |w: &str| {
        json_lines(&run(&["status", "demo", "--json"]).stdout)
            .into_iter()
            .find(|l| l["type"] == "worker" && l["worker"] == w)
            .unwrap_or(Value::Null)
    };
    let pane = worker("worker-1")["pane_id"].as_str().unwrap().to_string();
    let sock = sb.private_sock();
    // The user respawns worker-1's pane with a program of their own.
    let o = tests::tmux_at(
        &sock,
        &["respawn-pane", "-k", "-t", &pane, "exec sleep 99999"],
    );
    assert!(o.status.success(), "{o:?}");
    let pid = |p: &str| {
        let o = tests::tmux_at(&sock, &["display-message", "-p", "-t", p, "#{pane_pid}"]);
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    let user_pid = pid(&pane);
    assert!(!user_pid.is_empty());

    // Forgetting an active worker, or without confirmation, is refused.
    assert_code(
        &run(&["forget", "demo", "--worker", "worker-2", "--yes"]),
        1,
    );
    assert_code(
        &run(&["forget", "demo", "--worker", "worker-1", "--yes"]),
        1,
    );
    // down cannot prove the pane: worker-1 stays removing, and status says what to do.
    assert_code(
        &run(&["down", "demo", "--worker", "worker-1", "--force"]),
        3,
    );
    assert_eq!(worker("worker-1")["lifecycle"], "removing");
    assert_eq!(worker("worker-1")["forgettable"], true);
    let st = String::from_utf8_lossy(&run(&["status", "demo"]).stdout).to_string();
    assert!(
        st.contains("team-scale forget demo --worker worker-1"),
        "{st}"
    );
    let o = run(&["forget", "demo", "--worker", "worker-1"]);
    assert_code(&o, 1);
    assert!(String::from_utf8_lossy(&o.stderr).contains("--yes"));
    assert_eq!(worker("worker-1")["lifecycle"], "removing");

    let o = run(&["forget", "demo", "--worker", "worker-1", "--yes", "--json"]);
    assert_code(&o, 0);
    assert_eq!(worker("worker-1"), Value::Null);
    assert_eq!(worker("worker-2")["lifecycle"], "active");
    // The pane is the user's, untouched: same process.
    assert_eq!(pid(&pane), user_pid);
    assert_code(&run(&["reconcile", "demo"]), 0);
    assert_eq!(pid(&pane), user_pid);
    let log = std::fs::read_to_string(sb.ws.join(".team/audit.jsonl")).unwrap();
    let forget: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("\"op\":\"forget\""))
        .collect();
    assert_eq!(forget.len(), 2, "{log}");
    assert!(forget[0].contains("\"intent\"") && forget[1].contains("\"complete\""));
    assert_audit_pairs(&sb.ws.join(".team/audit.jsonl"));
}

#[test]
fn commands_in_a_subdirectory_find_the_team_and_init_there_asks_for_here() {
    let sb = Sandbox::new();
    assert_code(
        &sb.run(
            "team-scale",
            &[
                "init",
                "demo",
                "--private",
                "--worker-cmd",
                "exec sleep 100000",
            ],
        ),
        0,
    );
    assert_code(
        &sb.run("team-scale", &["up", "demo", "1", "--ready-timeout", "0"]),
        0,
    );
    let deep = sb.ws.join("src/deep");
    std::fs::create_dir_all(&deep).unwrap();
    let in_deep =
        |bin: &str, args: &[&str]| sb.cmd(bin).current_dir(&deep).args(args).output().unwrap();

    let o = in_deep("team-scale", &["status", "demo", "--json"]);
    assert_code(&o, 0);
    assert!(
        json_lines(&o.stdout)
            .iter()
            .any(|l| l["worker"] == "worker-1")
    );
    assert_code(&in_deep("team-scale", &["list"]), 0);
    // team-audit looks for the log of the workspace above too (none yet: nothing destructive).
    let o = in_deep("team-audit", &["verify"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("{}/.team/audit.jsonl", sb.ws.display())),
        "{err}"
    );

    // $HOME is a ceiling: nothing above it is looked at.
    let o = sb
        .cmd("team-scale")
        .current_dir(&deep)
        .env("HOME", sb.ws.join("src"))
        .args(["status", "demo"])
        .output()
        .unwrap();
    assert_code(&o, 66);

    // init below a workspace: refused (no second .team, no second server) unless --here.
    let socks = sb.sockets().len();
    let o = in_deep("team-scale", &["init", "other", "--private"]);
    assert_code(&o, 1);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--here"),
        "{o:?}"
    );
    assert!(!deep.join(".team").exists());
    assert_eq!(sb.sockets().len(), socks);
    let o = in_deep(
        "team-scale",
        &[
            "init",
            "other",
            "--private",
            "--here",
            "--worker-cmd",
            "exec sleep 100000",
        ],
    );
    assert_code(&o, 0);
    assert!(deep.join(".team/teams/other/team.json").exists());
    // From now on deep is its own workspace.
    assert_code(&in_deep("team-scale", &["status", "demo"]), 66);
    assert_code(&in_deep("team-scale", &["status", "other"]), 0);
}

/// A team of `agent`'s profile whose one worker works on its first prompt for a minute
/// (`--done-after 60000`), with `flags` for the fake agent.
fn working(agent: &str, flags: &str) -> Team {
    let t = Team::running_as(agent, |dir| {
        format!(
            "exec {} --done-after 60000 {flags} --received {d}/received-$TEAM_WORKER.txt --record {d}/record-$TEAM_WORKER.bin",
            tests::bin("fake-agent").display(),
            d = dir.display()
        )
    });
    assert_code(&t.run(&["up", "demo", "1", "--ready-timeout", "20s"]), 0);
    t
}

/// `send demo worker-1 TEXT --json` with `extra` options: its output and its delivery line.
fn send_1(t: &Team, text: &str, extra: &[&str]) -> (Output, Value) {
    let mut args = vec!["send", "demo", "worker-1", text, "--json"];
    args.extend_from_slice(extra);
    let o = t.run(&args);
    let d = delivery(&o);
    (o, d)
}

fn delivery(o: &Output) -> Value {
    json_lines(&o.stdout)
        .into_iter()
        .find(|l| l["type"] == "delivery")
        .unwrap_or_else(|| panic!("no delivery line: {}", text(o)))
}

fn record(t: &Team, w: &str) -> String {
    String::from_utf8_lossy(
        &std::fs::read(t.dir.join(format!("record-{w}.bin"))).unwrap_or_default(),
    )
    .into_owned()
}

/// A message for an agent that works: without `--queue` it waits for the agent to be idle and
/// types nothing, naming the agent as working and `--queue` as the way; with `--queue` it is
/// typed into the input line the working agent shows, and proven by the draft leaving it.
#[test]
fn send_queue_reaches_a_working_agent_and_without_it_nothing_is_typed() {
    let t = working("fake", "");
    let (o, d) = send_1(&t, "status please", &["--ready-timeout", "2s"]);
    assert_code(&o, 1);
    assert_eq!(d["result"], "undelivered", "{d}");
    let detail = d["detail"].as_str().unwrap();
    assert!(
        detail.contains("still working") && detail.contains("send --queue"),
        "{detail}"
    );
    assert!(!record(&t, "worker-1").contains("status please"));
    let (o, d) = send_1(&t, "status please", &["--queue", "--ready-timeout", "5s"]);
    assert_code(&o, 0);
    assert!(
        d["detail"].as_str().unwrap().contains("queued message"),
        "{d}"
    );
    assert!(t.received("worker-1").contains("status please"));
    // `broadcast --queue` too.
    let o = t.run(&[
        "broadcast",
        "demo",
        "wrap up",
        "--queue",
        "--ready-timeout",
        "5s",
    ]);
    assert_code(&o, 0);
    assert!(t.received("worker-1").contains("wrap up"));
    assert_audit_pairs(&t.sb.ws.join(".team/audit.jsonl"));
}

/// `--queue` for an agent whose profile names no input line it keeps while it works (aider
/// takes no message then): it waits as without it, and says why.
#[test]
fn send_queue_waits_for_an_agent_that_takes_no_message_while_it_works() {
    let t = working("fakeplain", "");
    let (o, d) = send_1(&t, "status please", &["--queue", "--ready-timeout", "2s"]);
    assert_code(&o, 1);
    assert_eq!(d["result"], "undelivered", "{d}");
    assert!(
        d["detail"]
            .as_str()
            .unwrap()
            .contains("takes no message while it works"),
        "{d}"
    );
    assert!(!record(&t, "worker-1").contains("status please"));
}

/// The attack on `--queue`: the working agent asks about a tool call above its input line, its
/// busy line still showing and the cursor still on `fake> `, so everything `--queue` looks for
/// is there. A menu is refused before a working agent's input line counts: `send` reports
/// `blocked` and not one key reaches the menu.
#[test]
fn send_queue_types_nothing_into_a_menu_a_working_agent_shows() {
    let t = working("fake", "--approval-after 300 --approval-above");
    tests::wait_for("the menu", std::time::Duration::from_secs(10), || {
        String::from_utf8_lossy(&t.run(&["peek", "demo", "worker-1"]).stdout)
            .contains("Yes, proceed")
    });
    let before = record(&t, "worker-1");
    let (o, d) = send_1(&t, "yes do it", &["--queue", "--ready-timeout", "3s"]);
    assert_code(&o, 1);
    assert_eq!(d["result"], "blocked", "{d}");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(record(&t, "worker-1"), before, "keys reached the menu");
    assert_eq!(send_intents(&t.sb), 1, "only up's first prompt was typed");
}

/// An agent that is an interpreter running a script file, given words after its script that
/// read like the interpreter's own options: Gemini CLI relaunches itself as `node
/// --max-old-space-size=N .../gemini -i '<prompt>'`, whose `-i` is Gemini's. They are the
/// script's, and the agent gets its messages (the process look took a `-i` anywhere for a
/// REPL, so no message ever reached a Gemini CLI worker).
#[test]
fn send_reaches_an_interpreter_agent_whose_script_is_given_dash_i() {
    let t = Team::running(|dir| {
        let py = dir.join("agent.py");
        std::fs::write(
            &py,
            format!(
                "import subprocess, sys\nsys.exit(subprocess.call([{:?}, '--done-after', '700', '--received', {:?}]))\n",
                tests::bin("fake-agent").display().to_string(),
                dir.join("received-worker-1.txt").display().to_string(),
            ),
        )
        .unwrap();
        format!(
            "exec python3 -X utf8 {} -i --interactive repl",
            py.display()
        )
    });
    assert_code(&t.run(&["up", "demo", "1", "--ready-timeout", "20s"]), 0);
    let o = t.run(&[
        "send",
        "demo",
        "worker-1",
        "run the tests",
        "--ready-timeout",
        "10s",
    ]);
    assert_code(&o, 0);
    assert!(t.received("worker-1").contains("run the tests"));
}

/// The thirtieth round: a shell reading its program from the pane's terminal through a
/// descriptor of its own, its standard input elsewhere (`sh /dev/tty < /dev/null`, `sh
/// /dev/fd/5 5<&0 0</dev/null`), and `runuser --pty` (a terminal client, as `su --pty` is),
/// took `send`'s text and ran it. Nothing is typed.
#[test]
fn send_types_nothing_into_a_shell_reading_the_terminal_by_another_descriptor() {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let (t, workers) = workers_then_running(|_| {
        let mut v = vec![
            "exec nice sh /dev/tty </dev/null".to_string(),
            "exec sh /dev/fd/5 5<&0 0</dev/null".to_string(),
            // A read/eval loop with a child in the background: it has a child, but does
            // not wait for it.
            "exec sh -c 'sleep 100000 & while read x; do eval \"$x\"; done'".to_string(),
        ];
        // `runuser` works for root only.
        if root {
            // (Its shell ends by itself: a failing run, which never reaches the shutdown,
            // leaves runuser's own terminal and shell behind otherwise.)
            v.push("exec runuser --pty -u root -- timeout 120 sh -i".into());
        }
        v
    });
    let names: Vec<&str> = workers.iter().map(String::as_str).collect();
    assert_send_types_nothing(&t, &names, &|c| format!("touch {}", c.display()), "shell");
}

/// The thirtieth round: an interpreter under another name given no script (a symlink `mybot`
/// to `python3`, known by its executable), and Python's modules that run code given as their
/// arguments (`-m timeit 'import code; code.interact()'`, `-m trace --module code`), each a
/// REPL reading the pane, took `send`'s text and ran it. Nothing is typed. (Node is judged by
/// its arguments only: an agent on Node renames itself, a stated limit.)
#[test]
fn send_types_nothing_into_a_renamed_interpreter_or_a_module_running_code() {
    let python = ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .find_map(|p| std::fs::canonicalize(p).ok())
        .expect("python3 is installed");
    let (t, workers) = workers_then_running(|dir| {
        let bot = dir.join("mybot");
        std::os::unix::fs::symlink(&python, &bot).unwrap();
        vec![
            format!("exec {}", bot.display()),
            "exec python3 -m runpy code".into(),
            "exec python3 -m timeit -s 'import code; code.interact()'".into(),
            "exec python3 -m trace --listfuncs --module code".into(),
        ]
    });
    let names: Vec<&str> = workers.iter().map(String::as_str).collect();
    assert_send_types_nothing(
        &t,
        &names,
        &|c| format!("open('{}', 'w')", c.display()),
        "REPL",
    );
}

/// The thirty-first round: a menu the agent draws after the paste, before its Enter. No Enter
/// reaches it, and the report says what was typed (the paste), never "nothing was typed into
/// it", which a leader would take for a clean screen to answer.
#[test]
fn a_menu_drawn_after_the_paste_gets_no_enter_and_the_report_says_the_text_went_in() {
    let t = Team::running(|dir| {
        format!(
            "exec {} --approval-after-paste 40 --received {d}/received-$TEAM_WORKER.txt --record {d}/record-$TEAM_WORKER.bin",
            tests::bin("fake-agent").display(),
            d = dir.display()
        )
    });
    let o = t.run(&["up", "demo", "1", "--ready-timeout", "20s"]);
    assert_code(&o, 1);
    let said = text(&o);
    assert!(
        said.contains("approval screen after the text was pasted"),
        "{said}"
    );
    assert!(!said.contains("nothing was typed into it"), "{said}");
    let record = record(&t, "worker-1");
    let after_paste = record.rsplit("\u{1b}[201~").next().unwrap_or_default();
    assert!(
        record.contains("\u{1b}[201~") && !after_paste.contains('\r'),
        "an Enter reached the menu: {record:?}"
    );
}

/// The thirty-first round: `PERL5OPT=-d` turns the Perl debugger on from the environment (as
/// `PYTHONINSPECT` does Python's REPL), and `-m runpy code` runs Python's REPL; both took
/// `send`'s text and ran it. Nothing is typed.
#[test]
fn send_types_nothing_into_a_debugger_turned_on_by_the_environment() {
    let (t, workers) = workers_then_running(|dir| {
        std::fs::write(dir.join("x.pl"), "print 1;\n").unwrap();
        vec![format!(
            "cd {} && PERL5OPT=-d exec perl x.pl",
            dir.display()
        )]
    });
    let names: Vec<&str> = workers.iter().map(String::as_str).collect();
    assert_send_types_nothing(
        &t,
        &names,
        &|c| format!("system(\"touch {}\")", c.display()),
        "Perl debugger",
    );
}
