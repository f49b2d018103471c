//! `cargo xtask chaos [--seconds S] [--seed N]`: the tools under fire.
//!
//! On a private tmux server: one team (`max_workers 6`) whose workers report status from their
//! panes, a second team, and untagged "user" panes. For S seconds, several loops run random
//! `team-scale up` / `down` / `down --force` / `reconcile`, `team-reap` every few seconds, and a
//! killer sends SIGKILL or SIGINT (Ctrl-C) to a random one of our running tool processes (our
//! own unreaped children, by pid). At
//! the end: `reconcile`, one `team-reap`, then every invariant is checked and printed. Exits
//! non-zero on any violation, naming the seed to replay.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::Value;

/// A small deterministic PRNG (xorshift64*), so a seed replays the same choices.
#[derive(Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

struct World {
    bin: PathBuf,
    ws: PathBuf,
    tt: PathBuf,
    sock: std::sync::OnceLock<PathBuf>,
    /// Running tool processes, for the killer. A child stays here until it has been reaped
    /// under its own lock, so the killer can only ever signal our own, unreaped child.
    running: Mutex<HashMap<u64, Arc<Mutex<Child>>>>,
    /// Subjects of tasks whose `up` succeeded, and of those whose `up` ended otherwise.
    tasks_sure: Mutex<BTreeSet<String>>,
    tasks_maybe: Mutex<BTreeSet<String>>,
    counter: Mutex<u64>,
    log: Mutex<Vec<String>>,
    /// The sandbox's own scratch dir (the nested team's workspace, the daemon's files).
    base: PathBuf,
    /// `fake-daemon` (from the tests package): the shared daemon and its client.
    fake_daemon: PathBuf,
}

impl World {
    fn sock(&self) -> &Path {
        self.sock
            .get()
            .map(PathBuf::as_path)
            .unwrap_or(Path::new("/nonexistent"))
    }

    fn cmd(&self, tool: &str) -> Command {
        let mut c = crate::util::tool(&self.bin, tool, Some(&self.tt));
        c.current_dir(&self.ws)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// Runs a tool process registered with the killer; returns its exit code (None: killed).
    fn run(
        &self,
        tool: &str,
        args: &[String],
        input: Option<String>,
    ) -> anyhow::Result<(Option<i32>, String)> {
        let mut c = self.cmd(tool);
        c.args(args);
        if input.is_some() {
            c.stdin(Stdio::piped());
        }
        let mut child: Child = c.spawn().with_context(|| format!("spawn {tool}"))?;
        if let Some(text) = input {
            let mut stdin = child.stdin.take().context("stdin")?;
            let _ = stdin.write_all(text.as_bytes());
        }
        let mut stdout = child.stdout.take().context("stdout")?;
        let mut stderr = child.stderr.take().context("stderr")?;
        let out_t = std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = std::io::Read::read_to_end(&mut stdout, &mut v);
            v
        });
        let err_t = std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = std::io::Read::read_to_end(&mut stderr, &mut v);
            v
        });
        let id = {
            let mut c = self.counter.lock().unwrap();
            *c += 1;
            *c
        };
        let child = Arc::new(Mutex::new(child));
        self.running.lock().unwrap().insert(id, child.clone());
        let status = loop {
            if let Some(st) = child.lock().unwrap().try_wait()? {
                break st;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        self.running.lock().unwrap().remove(&id);
        let _ = out_t.join();
        let err = err_t.join().unwrap_or_default();
        struct Out {
            status: std::process::ExitStatus,
            stderr: Vec<u8>,
        }
        let out = Out {
            status,
            stderr: err,
        };
        let code = out.status.code();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        self.log
            .lock()
            .unwrap()
            .push(format!("{tool} {} -> {code:?}", args.join(" ")));
        Ok((code, stderr))
    }

    fn tmux(&self, args: &[&str]) -> anyhow::Result<String> {
        let o = crate::util::tmux(self.sock()).args(args).output()?;
        if !o.status.success() {
            bail!("tmux {args:?}: {}", String::from_utf8_lossy(&o.stderr));
        }
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    }
}

fn parse_args(args: &[String]) -> anyhow::Result<(u64, u64)> {
    let mut seconds = 60;
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos() as u64
        | 1;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => seconds = it.next().context("--seconds needs a value")?.parse()?,
            "--seed" => {
                seed = it
                    .next()
                    .context("--seed needs a value")?
                    .parse::<u64>()?
                    .max(1)
            }
            other => bail!("unknown chaos option {other:?}"),
        }
    }
    Ok((seconds, seed))
}

pub fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let (seconds, seed) = parse_args(args)?;
    let bin = crate::util::build_bins(root, false, true)?;
    let fake_daemon = build_fake_daemon(root)?;
    let base = std::env::temp_dir().join(format!("team-chaos-{}", std::process::id()));
    let ws = base.join("ws");
    let tt = base.join("tt");
    std::fs::create_dir_all(&ws)?;
    std::fs::create_dir_all(&tt)?;
    let ws = ws.canonicalize()?;
    let world = Arc::new(World {
        bin,
        sock: std::sync::OnceLock::new(),
        ws,
        tt,
        running: Mutex::new(HashMap::new()),
        tasks_sure: Mutex::new(BTreeSet::new()),
        tasks_maybe: Mutex::new(BTreeSet::new()),
        counter: Mutex::new(0),
        log: Mutex::new(Vec::new()),
        base: base.clone(),
        fake_daemon,
    });
    println!(
        "chaos: seed {seed}, {seconds} s, workspace {}",
        world.ws.display()
    );
    let mut bystanders = Bystanders::default();
    let result = chaos(world.clone(), seconds, seed, &mut bystanders);
    bystanders.end();
    // Tear down every server in the sandbox, by socket.
    crate::util::kill_servers(&world.tt);
    match result {
        Ok(()) => {
            let _ = std::fs::remove_dir_all(&base);
            println!("chaos: all invariants hold (seed {seed})");
            Ok(())
        }
        Err(e) => {
            let log = world.log.lock().unwrap();
            for l in log.iter().rev().take(30).collect::<Vec<_>>().iter().rev() {
                eprintln!("  {l}");
            }
            bail!(
                "chaos: {e:#}\nreplay with: cargo xtask chaos --seconds {seconds} --seed {seed} (state kept in {})",
                base.display()
            )
        }
    }
}

fn worker_cmd(w: &World) -> String {
    // A worker that reports busy and idle from its pane, like an agent's hook would. The first
    // worker ever also starts, from its own environment, another team (a nested tmux server and
    // leader below its supervisor) and a detached daemon that a client outside the team uses:
    // when chaos removes that worker, both must survive.
    let ts = w.bin.join("team-scale").display().to_string();
    let b = w.base.display();
    format!(
        "if mkdir '{b}/first' 2>/dev/null; then (cd '{b}/wsn' && env -u TEAM_STATE_DIR '{ts}' init nested --private --leader-cmd 'exec sleep 1000000' >/dev/null 2>&1); setsid '{fd}' serve '{b}/d.sock' '{b}/d.pid' >/dev/null 2>&1 & fi; \
         while :; do '{ts}' worker-status --state busy >/dev/null 2>&1; sleep 0.$((RANDOM % 9 + 1)) 2>/dev/null || sleep 1; '{ts}' worker-status --state idle >/dev/null 2>&1; sleep 1; done",
        fd = w.fake_daemon.display()
    )
}

/// Builds the tests package's `fake-daemon`.
fn build_fake_daemon(root: &Path) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    duct::cmd(
        &cargo,
        ["build", "--quiet", "-p", "tests", "--bin", "fake-daemon"],
    )
    .dir(root)
    .run()?;
    Ok(root.join("target/debug/fake-daemon"))
}

/// What chaos must never harm: a team started from a chaos worker's environment, and a shared
/// daemon a chaos worker started, with a client outside the team.
#[derive(Default)]
struct Bystanders {
    nested_sock: PathBuf,
    nested_server: u32,
    /// The nested server's start time: a pid alone may be recycled.
    nested_server_start: Option<u64>,
    nested_leader: u32,
    daemon: u32,
    daemon_start: Option<u64>,
    client: Option<Child>,
    beat: PathBuf,
}

impl Bystanders {
    /// The client's last beat. It rewrites the file in place (truncate, then write), so a
    /// read can land in between and find it empty: such a read is retried, never taken for 0.
    fn beats(&self) -> Result<u64, String> {
        for _ in 0..100 {
            let s = std::fs::read_to_string(&self.beat).unwrap_or_default();
            if s.trim() == "broken" {
                return Err("the shared daemon's client lost its connection".into());
            }
            if let Ok(n) = s.trim().parse() {
                return Ok(n);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(0)
    }

    /// Ends the client (our child) and the daemon (started by a worker, by its pid file).
    fn end(&mut self) {
        if let Some(mut c) = self.client.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some(start) = self.daemon_start {
            crate::util::signal_if_same(self.daemon, start, rustix::process::Signal::KILL);
        }
    }

    fn check(&self, w: &World, problems: &mut Vec<String>) {
        if !proc_alive(self.daemon, self.daemon_start) {
            problems.push(format!(
                "the shared daemon (pid {}) was killed",
                self.daemon
            ));
        }
        match self.beats() {
            Err(e) => problems.push(e),
            Ok(before) => {
                // It beats every 50 ms; on a loaded machine the next beat can take a while, so
                // wait up to 10 s for it (the claim is the same: the client still works).
                let deadline = std::time::Instant::now() + Duration::from_secs(10);
                let mut after = self.beats();
                while matches!(after, Ok(a) if a <= before) && std::time::Instant::now() < deadline
                {
                    std::thread::sleep(Duration::from_millis(50));
                    after = self.beats();
                }
                if !matches!(after, Ok(a) if a > before) {
                    problems.push("the shared daemon's client stopped working".into());
                }
            }
        }
        if !proc_alive(self.nested_server, self.nested_server_start) {
            problems.push(format!(
                "the nested team's tmux server (pid {}) was killed",
                self.nested_server
            ));
        }
        let leaders = pane_pids(&self.nested_sock);
        if leaders != vec![self.nested_leader] {
            problems.push(format!(
                "the nested team's leader pane changed: {leaders:?}, was {}",
                self.nested_leader
            ));
        }
        let _ = w;
        println!("check: the nested team and the shared daemon survived");
    }
}

/// Whether the process `pid` that started at `start` still runs (not a newer one on its pid).
fn proc_alive(pid: u32, start: Option<u64>) -> bool {
    start.is_some() && crate::util::start_time(pid) == start
}

fn pane_pids(sock: &Path) -> Vec<u32> {
    crate::util::tmux(sock)
        .args(["list-panes", "-a", "-F", "#{pane_pid}"])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| l.trim().parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Starts the first chaos worker (which starts the bystanders) and records them.
fn start_bystanders(w: &World, by: &mut Bystanders) -> anyhow::Result<()> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let (code, err) = w.run(
        "team-scale",
        &s(&["up", "chaos", "2", "--ready-timeout", "0"]),
        None,
    )?;
    if code != Some(0) {
        bail!("up chaos 2: {err}");
    }
    let wsn = w.base.join("wsn").canonicalize()?;
    let deadline = Instant::now() + Duration::from_secs(20);
    let pidf = w.base.join("d.pid");
    loop {
        if by.nested_sock.as_os_str().is_empty() {
            let o = w
                .cmd("team-scale")
                .args(["status", "nested", "--json"])
                .current_dir(&wsn)
                .output()?;
            if let Some(ep) = String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find(|l| l["type"] == "summary")
                .and_then(|l| l["endpoint"].as_str().map(PathBuf::from))
            {
                by.nested_sock = ep;
            }
        }
        let daemon: u32 = std::fs::read_to_string(&pidf)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        let leaders = pane_pids(&by.nested_sock);
        let server = crate::util::tmux(&by.nested_sock)
            .args(["display-message", "-p", "#{pid}"])
            .output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok());
        if let (true, [leader], Some(server)) = (daemon != 0, leaders.as_slice(), server) {
            by.daemon = daemon;
            by.daemon_start = crate::util::start_time(daemon);
            by.nested_leader = *leader;
            by.nested_server = server;
            by.nested_server_start = crate::util::start_time(server);
            break;
        }
        if Instant::now() > deadline {
            bail!("the first chaos worker did not start the nested team and the daemon");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    by.beat = w.base.join("beat");
    by.client = Some(
        Command::new(&w.fake_daemon)
            .arg("client")
            .arg(w.base.join("d.sock"))
            .arg(&by.beat)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?,
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while by.beats().map_err(anyhow::Error::msg)? < 2 {
        if Instant::now() > deadline {
            bail!("the daemon's client did not get going");
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    println!(
        "chaos: bystanders: nested team server {} leader {}, shared daemon {}",
        by.nested_server, by.nested_leader, by.daemon
    );
    // The worker that started them goes first; the reaper then meets its supervisor, which
    // lives on as the daemon's parent, on every run.
    let (code, err) = w.run(
        "team-scale",
        &s(&[
            "down", "chaos", "--worker", "worker-1", "--force", "--grace", "1s",
        ]),
        None,
    )?;
    if code != Some(0) {
        bail!("down chaos --worker worker-1: {err}");
    }
    let mut problems = Vec::new();
    by.check(w, &mut problems);
    if !problems.is_empty() {
        bail!(
            "removing the worker that started them: {}",
            problems.join("; ")
        );
    }
    Ok(())
}

fn chaos(w: Arc<World>, seconds: u64, seed: u64, by: &mut Bystanders) -> anyhow::Result<()> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    std::fs::create_dir_all(w.base.join("wsn"))?;
    let wc = worker_cmd(&w);
    for (team, max) in [("chaos", "6"), ("other", "3")] {
        let (code, err) = w.run(
            "team-scale",
            &s(&[
                "init",
                team,
                "--private",
                "--max-workers",
                max,
                "--worker-cmd",
                &wc,
                "--size",
                "250x80",
            ]),
            None,
        )?;
        if code != Some(0) {
            bail!("init {team}: {err}");
        }
    }
    let sock = team_status(&w, "chaos")?["endpoint"]
        .as_str()
        .context("endpoint")?
        .to_string();
    let _ = w.sock.set(PathBuf::from(&sock));
    let (code, err) = w.run(
        "team-scale",
        &s(&["up", "other", "2", "--ready-timeout", "0"]),
        None,
    )?;
    if code != Some(0) {
        bail!("up other: {err}");
    }
    w.tmux(&[
        "new-session",
        "-d",
        "-s",
        "user",
        "sleep 100000",
        ";",
        "split-window",
        "sleep 100000",
        ";",
        "split-window",
        "sleep 100000",
    ])?;
    let protected_before = foreign_panes(&w)?;
    start_bystanders(&w, by)?;

    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut handles = Vec::new();
    for lane in 0..3u64 {
        let w = w.clone();
        let mut rng = Rng(seed.wrapping_add(lane.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1);
        handles.push(std::thread::spawn(move || -> anyhow::Result<()> {
            while Instant::now() < deadline {
                let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
                match rng.below(10) {
                    0..=3 => {
                        let n = 1 + rng.below(2);
                        let mut subjects = Vec::new();
                        for _ in 0..n {
                            let mut c = w.counter.lock().unwrap();
                            *c += 1;
                            subjects.push(format!("t-{c}"));
                        }
                        let tasks: Vec<Value> = subjects
                            .iter()
                            .map(|sub| serde_json::json!({"subject": sub, "description": "chaos"}))
                            .collect();
                        let (code, _) = w.run(
                            "team-scale",
                            &s(&[
                                "up",
                                "chaos",
                                &n.to_string(),
                                "--ready-timeout",
                                "0",
                                "--tasks",
                                "-",
                                "--wait",
                                "2s",
                            ]),
                            Some(serde_json::to_string(&tasks)?),
                        )?;
                        let set = if code == Some(0) {
                            &w.tasks_sure
                        } else {
                            &w.tasks_maybe
                        };
                        set.lock().unwrap().extend(subjects);
                    }
                    4..=5 => {
                        w.run(
                            "team-scale",
                            &s(&[
                                "down",
                                "chaos",
                                "1",
                                "--drain-timeout",
                                "1s",
                                "--grace",
                                "1s",
                                "--wait",
                                "2s",
                            ]),
                            None,
                        )?;
                    }
                    6 => {
                        w.run(
                            "team-scale",
                            &s(&[
                                "down", "chaos", "1", "--force", "--grace", "1s", "--wait", "2s",
                            ]),
                            None,
                        )?;
                    }
                    _ => {
                        w.run(
                            "team-scale",
                            &s(&["reconcile", "chaos", "--grace", "1s", "--wait", "2s"]),
                            None,
                        )?;
                    }
                }
                std::thread::sleep(Duration::from_millis(rng.below(300)));
            }
            Ok(())
        }));
    }
    {
        let w = w.clone();
        handles.push(std::thread::spawn(move || -> anyhow::Result<()> {
            while Instant::now() < deadline {
                std::thread::sleep(Duration::from_secs(3));
                w.run(
                    "team-reap",
                    &[
                        "--only-under".to_string(),
                        w.base.display().to_string(),
                        "--socket".to_string(),
                        w.sock().display().to_string(),
                    ],
                    None,
                )?;
            }
            Ok(())
        }));
    }
    {
        let w = w.clone();
        let mut rng = Rng(seed ^ 0xDEAD_BEEF | 1);
        handles.push(std::thread::spawn(move || -> anyhow::Result<()> {
            while Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(200 + rng.below(800)));
                let victim = {
                    let r = w.running.lock().unwrap();
                    let ids: Vec<u64> = r.keys().copied().collect();
                    if ids.is_empty() {
                        None
                    } else {
                        r.get(&ids[rng.below(ids.len() as u64) as usize]).cloned()
                    }
                };
                if let Some(child) = victim {
                    // Our own child, not yet reaped (reaping happens under the same lock), so
                    // its pid is still its own.
                    let mut c = child.lock().unwrap();
                    let pid = c.id();
                    if rng.below(2) == 0 {
                        // Ctrl-C: the tool rolls back or finishes its step, then exits 130.
                        let sent = Command::new("kill")
                            .args(["-INT", &pid.to_string()])
                            .status()
                            .is_ok_and(|s| s.success());
                        if sent {
                            w.log
                                .lock()
                                .unwrap()
                                .push(format!("killer: SIGINT pid {pid}"));
                        }
                    } else if c.kill().is_ok() {
                        w.log
                            .lock()
                            .unwrap()
                            .push(format!("killer: SIGKILL pid {pid}"));
                    }
                }
            }
            Ok(())
        }));
    }
    for h in handles {
        h.join()
            .map_err(|_| anyhow::anyhow!("a chaos thread panicked"))??;
    }
    println!("chaos: {} tool runs; settling", w.log.lock().unwrap().len());
    settle_and_check(&w, &protected_before, by)
}

fn team_status(w: &World, team: &str) -> anyhow::Result<Value> {
    let (code, out) = {
        let o = w
            .cmd("team-scale")
            .args(["status", team, "--json"])
            .output()?;
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    };
    if code != Some(0) {
        bail!("status {team} exited {code:?}");
    }
    let lines: Vec<Value> = out
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    lines
        .into_iter()
        .find(|l| l["type"] == "summary")
        .context("no summary")
}

/// Panes that are not the chaos team's: untagged ones and the other team's.
fn foreign_panes(w: &World) -> anyhow::Result<BTreeSet<String>> {
    let out = w.tmux(&[
        "list-panes",
        "-a",
        "-F",
        "#{pane_id} #{pane_pid} #{@team_name} #{@team_incarnation}#{@team_role}",
    ])?;
    Ok(out
        .lines()
        .filter(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let tagged = f.get(3).is_some_and(|t| !t.is_empty());
            !tagged || f.get(2) != Some(&"chaos")
        })
        .map(|l| l.split(' ').take(2).collect::<Vec<_>>().join(" "))
        .collect())
}

fn settle_and_check(
    w: &World,
    protected_before: &BTreeSet<String>,
    by: &Bystanders,
) -> anyhow::Result<()> {
    let mut problems = Vec::new();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let mut settled = false;
    for _ in 0..3 {
        let (code, err) = w.run(
            "team-scale",
            &s(&["reconcile", "chaos", "--grace", "1s"]),
            None,
        )?;
        if code == Some(0) {
            settled = true;
            break;
        }
        eprintln!("chaos: reconcile exited {code:?}: {err}");
    }
    if !settled {
        problems.push("reconcile did not converge to exit 0".to_string());
    }
    let (code, err) = w.run(
        "team-reap",
        &[
            "--only-under".to_string(),
            w.base.display().to_string(),
            "--socket".to_string(),
            w.sock().display().to_string(),
        ],
        None,
    )?;
    if code != Some(0) {
        problems.push(format!("the final team-reap exited {code:?}: {err}"));
    }

    // 1. Every member has a live pane matching its record; nothing pending or removing.
    let o = w
        .cmd("team-scale")
        .args(["status", "chaos", "--json"])
        .output()?;
    let lines: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let mut members: BTreeMap<String, String> = BTreeMap::new();
    for l in lines.iter().filter(|l| l["type"] == "worker") {
        if l["lifecycle"] != "active" || l["liveness"] != "live" {
            problems.push(format!(
                "worker {} is {} / {}",
                l["worker"], l["lifecycle"], l["liveness"]
            ));
        }
        members.insert(
            l["incarnation"].as_str().unwrap_or("").to_string(),
            l["worker"].as_str().unwrap_or("").to_string(),
        );
    }
    println!("check: {} members, all live and active", members.len());

    // 2. No tagged pane of the chaos team that the team does not record.
    let out = w.tmux(&[
        "list-panes",
        "-a",
        "-F",
        "#{pane_id} #{@team_name} #{@team_incarnation} #{@team_role}",
    ])?;
    for l in out.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        if f.get(1) == Some(&"chaos") && f.get(3) != Some(&"leader") {
            let inc = f.get(2).copied().unwrap_or("");
            if !inc.is_empty() && !members.contains_key(inc) {
                problems.push(format!(
                    "tagged pane {} (incarnation {inc}) is not recorded",
                    f[0]
                ));
            }
        }
    }
    println!("check: no unrecorded tagged pane");

    // 3. No untagged pane and no pane of the other team was killed; the nested team and the
    //    shared daemon are whole.
    by.check(w, &mut problems);
    let after = foreign_panes(w)?;
    for p in protected_before.difference(&after) {
        problems.push(format!("foreign pane {p} was killed"));
    }
    println!(
        "check: {} foreign panes all survived",
        protected_before.len()
    );

    // 4. Tasks: none lost, none duplicated, each valid.
    let dir = w.ws.join(".team/teams/chaos/tasks");
    let mut seen: BTreeMap<String, u32> = BTreeMap::new();
    for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let is_task = name
            .strip_suffix(".json")
            .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()));
        if !is_task {
            problems.push(format!("stray file {name} in tasks/ after reconcile"));
            continue;
        }
        let v: Value = match std::fs::read(e.path())
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
        {
            Some(v) => v,
            None => {
                problems.push(format!("task file {} does not parse", e.path().display()));
                continue;
            }
        };
        if !["pending", "in_progress", "completed", "failed"]
            .contains(&v["status"].as_str().unwrap_or(""))
        {
            problems.push(format!("task {} has status {}", v["id"], v["status"]));
        }
        *seen
            .entry(v["subject"].as_str().unwrap_or("").to_string())
            .or_default() += 1;
    }
    let sure = w.tasks_sure.lock().unwrap().clone();
    let maybe = w.tasks_maybe.lock().unwrap().clone();
    for (sub, n) in &seen {
        if *n > 1 {
            problems.push(format!("task {sub} exists {n} times"));
        }
        if !sure.contains(sub) && !maybe.contains(sub) {
            problems.push(format!("task {sub} was never created"));
        }
    }
    for sub in &sure {
        if !seen.contains_key(sub) {
            problems.push(format!("task {sub} of a successful up is lost"));
        }
    }
    println!(
        "check: {} tasks ({} from successful ups, {} from interrupted ones), none lost or duplicated",
        seen.len(),
        sure.len(),
        seen.len().saturating_sub(sure.len())
    );

    // 5. The audit chain verifies, and every kill intent has exactly one outcome.
    let v = w.cmd("team-audit").args(["verify"]).output()?;
    if !v.status.success() {
        problems.push(format!(
            "team-audit verify failed: {}",
            String::from_utf8_lossy(&v.stdout)
        ));
    }
    let q = w.cmd("team-audit").args(["query", "--json"]).output()?;
    let recs: Vec<Value> = String::from_utf8_lossy(&q.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|r: &Value| r["type"] != "summary")
        .collect();
    let mut by_id: HashMap<String, (u32, u32)> = HashMap::new();
    for r in &recs {
        let e = by_id
            .entry(r["audit_id"].as_str().unwrap_or("").to_string())
            .or_default();
        match r["stage"].as_str() {
            Some("intent") => e.0 += 1,
            Some("complete" | "failed") => e.1 += 1,
            _ => {}
        }
    }
    let open = by_id.values().filter(|(i, o)| *i == 1 && *o == 0).count();
    let bad = by_id.values().filter(|(i, o)| *i > 1 || *o > 1).count();
    if bad > 0 {
        problems.push(format!(
            "{bad} audit ids have more than one intent or outcome"
        ));
    }
    // An intent without an outcome is a process killed between the two (the killer's doing):
    // the log shows "result unknown", which is honest; it is reported, not a violation.
    println!(
        "check: audit chain verifies; {} records, {open} intents left open by SIGKILLed processes",
        recs.len()
    );

    // 6. State files parse; no journal left behind.
    if w.ws.join(".team/teams/chaos/journal.json").exists() {
        problems.push("a journal was left behind".into());
    }
    for team in ["chaos", "other"] {
        if let Err(e) = team_status(w, team) {
            problems.push(format!("state of {team} does not load: {e}"));
        }
    }
    println!("check: state files parse, no journal left");
    if problems.is_empty() {
        Ok(())
    } else {
        for p in &problems {
            eprintln!("VIOLATION: {p}");
        }
        bail!("{} invariant violations", problems.len())
    }
}
