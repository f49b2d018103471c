//! `cargo xtask bench`: every benchmark in one run, each next to its physical floor measured in
//! the same run on the same machine (these machines are noisy, so only ratios travel).
//!
//! Writes `target/bench/report.json` and `target/bench/report.md`, prints the table, and exits
//! non-zero when a stated target is missed. Builds the binaries in release mode.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;

/// One measured figure and how it compares with its floor.
pub struct Figure {
    pub name: String,
    pub value: f64,
    pub unit: &'static str,
    pub floor_name: String,
    pub floor: f64,
    /// `value / floor`, or for paired runs the median of each run's own ratio.
    pub ratio: f64,
    /// The target, as text, and whether it was met.
    pub target: Option<(String, bool)>,
}

pub struct Bench {
    pub bin: PathBuf,
    pub dir: PathBuf,
    pub figures: Vec<Figure>,
}

impl Bench {
    pub fn tool(&self, name: &str) -> Command {
        crate::util::tool(&self.bin, name, None)
    }

    /// Records a figure measured in pairs: `values[i]` and `floors[i]` ran back to back in
    /// run `i`. The value and floor shown are the medians, and the ratio is the median of the
    /// runs' own ratios: this machine's speed drifts between runs (other VMs on the host), and
    /// a pair shares its moment, so its ratio cancels the drift the medians of two columns keep.
    /// The target is `ratio <= max`; the runs' lowest and highest ratios are printed too.
    pub fn paired(
        &mut self,
        name: &str,
        values: &[f64],
        unit: &'static str,
        floor_name: &str,
        floors: &[f64],
        max: f64,
    ) {
        let ratios: Vec<f64> = values.iter().zip(floors).map(|(v, f)| v / f).collect();
        let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ratios.iter().copied().fold(0.0, f64::max);
        let ratio = median(ratios);
        println!(
            "  ({name}: {} runs, ratios {lo:.2} to {hi:.2})",
            values.len()
        );
        let (value, floor) = (median(values.to_vec()), median(floors.to_vec()));
        // An infinite bound: a figure shown for its context, with no target.
        let target = max
            .is_finite()
            .then(|| (format!("<= {max}x"), ratio <= max));
        self.record(name, value, unit, floor_name, floor, ratio, target);
    }

    /// Records a figure: `value` next to `floor`, its ratio `value / floor` (lower is better
    /// for times; rates put the floor on the side that makes the target read right).
    pub fn figure(
        &mut self,
        name: &str,
        value: f64,
        unit: &'static str,
        floor_name: &str,
        floor: f64,
        target: Option<(String, bool)>,
    ) {
        let ratio = if floor > 0.0 { value / floor } else { f64::NAN };
        self.record(name, value, unit, floor_name, floor, ratio, target);
    }

    /// Prints one figure and keeps it for the report.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        name: &str,
        value: f64,
        unit: &'static str,
        floor_name: &str,
        floor: f64,
        ratio: f64,
        target: Option<(String, bool)>,
    ) {
        println!(
            "  {name:<46} {value:>12.2} {unit:<10} floor {floor_name} {floor:>10.2}  ratio {ratio:>6.2}{}",
            match &target {
                Some((t, ok)) => format!("  target {t}: {}", if *ok { "met" } else { "MISSED" }),
                None => String::new(),
            }
        );
        self.figures.push(Figure {
            name: name.into(),
            value,
            unit,
            floor_name: floor_name.into(),
            floor,
            ratio,
            target,
        });
    }
}

/// Median of `n` timings of `f`, in milliseconds.
pub fn median_ms(n: usize, mut f: impl FnMut() -> anyhow::Result<()>) -> anyhow::Result<f64> {
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        f()?;
        v.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    Ok(v[v.len() / 2])
}

/// A private tmux server for one benchmark, killed on drop (by socket).
pub struct Server {
    pub sock: PathBuf,
}

impl Server {
    pub fn start(dir: &Path, name: &str) -> anyhow::Result<Server> {
        let sock = dir.join(name);
        let s = Server { sock };
        s.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "base",
            "-x",
            "250",
            "-y",
            "80",
            "sleep 100000",
        ])?;
        Ok(s)
    }

    pub fn tmux(&self, args: &[&str]) -> anyhow::Result<String> {
        let o = crate::util::tmux(&self.sock)
            .args(args)
            .stdin(Stdio::null())
            .output()?;
        if !o.status.success() {
            bail!(
                "tmux {} ...: {}",
                args.first().copied().unwrap_or(""),
                String::from_utf8_lossy(&o.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    }
}

impl Server {
    /// Runs many commands in as few invocations as tmux accepts (one message is at most
    /// 16 KiB); returns the concatenated output.
    pub fn batch(&self, cmds: &[Vec<String>]) -> anyhow::Result<String> {
        let mut out = String::new();
        let mut argv: Vec<String> = Vec::new();
        let mut bytes = 0;
        for c in cmds {
            let n: usize = c.iter().map(|a| a.len() + 1).sum::<usize>() + 2;
            if !argv.is_empty() && bytes + n > 14 * 1024 {
                let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
                out.push_str(&self.tmux(&refs)?);
                argv.clear();
                bytes = 0;
            }
            if !argv.is_empty() {
                argv.push(";".into());
            }
            argv.extend(c.iter().cloned());
            bytes += n;
        }
        if !argv.is_empty() {
            let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
            out.push_str(&self.tmux(&refs)?);
        }
        Ok(out)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = crate::util::tmux(&self.sock).arg("kill-server").output();
    }
}

/// fdatasync calls per second on a file in `dir`.
fn fdatasync_rate(dir: &Path) -> anyhow::Result<f64> {
    let p = dir.join("fsync-floor");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&p)?;
    let n = 300;
    let t = Instant::now();
    for _ in 0..n {
        f.write_all(b"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n")?;
        f.sync_data()?;
    }
    Ok(n as f64 / t.elapsed().as_secs_f64())
}

fn pass_lines(n: usize, tag: &str) -> Vec<u8> {
    let mut v = Vec::new();
    for i in 0..n {
        v.extend_from_slice(
            format!("{{\"type\":\"pane\",\"endpoint\":\"/tmp/x\",\"pane_id\":\"%{i}\",\"verdict\":\"orphan\",\"w\":\"{tag}\"}}\n").as_bytes(),
        );
    }
    v
}

fn run_pass(b: &Bench, log: &Path, input: Vec<u8>) -> anyhow::Result<std::process::Child> {
    let mut c = b
        .tool("team-audit")
        .args(["--audit-log"])
        .arg(log)
        .arg("pass")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()?;
    let mut stdin = c.stdin.take().context("stdin")?;
    std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    Ok(c)
}

fn audit(b: &mut Bench) -> anyhow::Result<()> {
    let fsync = fdatasync_rate(&b.dir)?;
    println!("floor: fdatasync {fsync:.0}/s on {}", b.dir.display());

    // One `team-audit record` process per record.
    let log = b.dir.join("audit-record.jsonl");
    let n = 100;
    let t = Instant::now();
    for i in 0..n {
        let o = b
            .tool("team-audit")
            .arg("--audit-log")
            .arg(&log)
            .args([
                "record",
                "--caller",
                "bench",
                "--action",
                "kill-pane",
                "--target",
                &format!("%{i}"),
            ])
            .stdout(Stdio::null())
            .status()?;
        if !o.success() {
            bail!("team-audit record failed");
        }
    }
    let rate = n as f64 / t.elapsed().as_secs_f64();
    b.figure(
        "audit: record, one process per record",
        rate,
        "records/s",
        "fdatasync/s",
        fsync,
        None,
    );

    // `pass` with 10,000 lines.
    let log = b.dir.join("audit-pass.jsonl");
    let lines = 10_000;
    let t = Instant::now();
    let st = run_pass(b, &log, pass_lines(lines, "a"))?.wait()?;
    if !st.success() {
        bail!("team-audit pass failed");
    }
    let rate = lines as f64 / t.elapsed().as_secs_f64();
    let ok = rate >= 10_000.0 && rate >= fsync / 2.0;
    b.figure(
        "audit: pass, 10,000 lines",
        rate,
        "records/s",
        "fdatasync/s",
        fsync,
        Some((">= 10,000/s and >= fdatasync/2".into(), ok)),
    );

    // 8 concurrent writers.
    let log = b.dir.join("audit-8.jsonl");
    let per = 1_250;
    let t = Instant::now();
    let kids: Vec<_> = (0..8)
        .map(|i| run_pass(b, &log, pass_lines(per, &i.to_string())))
        .collect::<anyhow::Result<_>>()?;
    for mut k in kids {
        if !k.wait()?.success() {
            bail!("a concurrent pass failed");
        }
    }
    let rate = (8 * per) as f64 / t.elapsed().as_secs_f64();
    b.figure(
        "audit: 8 concurrent pass writers",
        rate,
        "records/s",
        "fdatasync/s",
        fsync,
        None,
    );
    let v = b
        .tool("team-audit")
        .arg("--audit-log")
        .arg(&log)
        .arg("verify")
        .stdout(Stdio::null())
        .status()?;
    if !v.success() {
        bail!("the concurrently written log does not verify");
    }
    Ok(())
}

/// One reaper-like pipeline line of about 400 bytes (a record of about 700).
fn big_line(i: usize, teams: usize) -> String {
    format!(
        "{{\"type\":\"pane\",\"action\":\"kill-pane\",\"team\":\"team-{}\",\"endpoint\":\"/tmp/tmux-1000/team-0123456789ab\",\"generation\":{},\"pane_id\":\"%{i}\",\"pane_pid\":{},\"session_id\":\"${}\",\"window_id\":\"@{}\",\"server_pid\":4242,\"server_start\":1700000000,\"owner\":\"6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f\",\"worker\":\"worker-{}\",\"incarnation\":\"00000000-0000-4000-8000-{i:012}\",\"verdict\":\"orphan\",\"reason\":\"team state gone\"}}\n",
        i % teams,
        i / 7,
        100_000 + i,
        i % 97,
        i % 991,
        i % 64
    )
}

/// Wall time of `c`, failing unless it exits 0. Its stdout goes to a pipe that is read, not
/// to /dev/null: GNU grep stops at the first match when its output is /dev/null.
fn time_ms(c: &mut Command) -> anyhow::Result<f64> {
    let t = Instant::now();
    let o = c.stdout(Stdio::piped()).stderr(Stdio::inherit()).output()?;
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    if !o.status.success() {
        bail!("{c:?} exited {}", o.status);
    }
    Ok(ms)
}

/// Peak resident memory of `c` in MiB: GNU time's `%M` (from `wait4`), else polling the
/// child's `/proc/<pid>/status` `VmHWM` (a high-water mark) until it exits.
fn peak_rss_mib(c: &mut Command) -> anyhow::Result<f64> {
    if Path::new("/usr/bin/time").exists() {
        let out = std::env::temp_dir().join(format!("xtask-rss-{}", std::process::id()));
        let mut t = Command::new("/usr/bin/time");
        t.arg("-f")
            .arg("%M")
            .arg("-o")
            .arg(&out)
            .arg(c.get_program());
        t.args(c.get_args());
        for (k, v) in c.get_envs() {
            match v {
                Some(v) => t.env(k, v),
                None => t.env_remove(k),
            };
        }
        let st = t.stdout(Stdio::null()).status()?;
        let kib: f64 = std::fs::read_to_string(&out)
            .ok()
            .and_then(|s| s.lines().last().and_then(|l| l.trim().parse().ok()))
            .context("GNU time wrote no %M")?;
        let _ = std::fs::remove_file(&out);
        if !st.success() {
            bail!("{c:?} exited {st}");
        }
        return Ok(kib / 1024.0);
    }
    let mut child = c.stdout(Stdio::null()).spawn()?;
    let status = format!("/proc/{}/status", child.id());
    let mut kib = 0f64;
    loop {
        if let Ok(s) = std::fs::read_to_string(&status)
            && let Some(v) = s
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<f64>().ok())
        {
            kib = kib.max(v);
        }
        if let Some(st) = child.try_wait()? {
            if !st.success() {
                bail!("{c:?} exited {st}");
            }
            return Ok(kib / 1024.0);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The audit log at scale (issue 15): a log of 1M records (50k with `--quick`) written by
/// `team-audit pass`, then `verify` against `sha256sum` of the file, `query --team` against
/// `grep -c`, and `query --last 100` against `tail -n 100`.
fn audit_scale(b: &mut Bench, quick: bool) -> anyhow::Result<()> {
    let n: usize = if quick { 50_000 } else { 1_000_000 };
    let teams = 20;
    let log = b.dir.join("audit-big.jsonl");
    let t = Instant::now();
    let mut c = b
        .tool("team-audit")
        .arg("--log")
        .arg(&log)
        .args(["--max-size", "0", "pass", "--caller", "team-reap"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()?;
    let mut stdin = c.stdin.take().context("stdin")?;
    let feeder = std::thread::spawn(move || -> std::io::Result<()> {
        let mut buf = String::with_capacity(1 << 20);
        for i in 0..n {
            buf.push_str(&big_line(i, teams));
            if buf.len() >= (1 << 20) - 512 {
                stdin.write_all(buf.as_bytes())?;
                buf.clear();
            }
        }
        stdin.write_all(buf.as_bytes())
    });
    if !c.wait()?.success() {
        bail!("team-audit pass (generating the big log) failed");
    }
    feeder
        .join()
        .map_err(|_| anyhow::anyhow!("feeder panicked"))??;
    let gen_s = t.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(&log)?.len();
    println!(
        "audit log: {n} records, {:.0} MiB, written by pass in {gen_s:.1} s",
        bytes as f64 / (1 << 20) as f64
    );
    let label = if quick { "50k" } else { "1M" };
    let runs = if quick { 5 } else { 3 };
    let bin = b.bin.clone();
    let tool = |args: &[&str]| {
        let mut c = crate::util::tool(&bin, "team-audit", None);
        c.arg("--log").arg(&log).args(args);
        c
    };
    // Warm the page cache, so both sides read from memory.
    time_ms(Command::new("cat").arg(&log))?;

    let mut sha = Vec::new();
    let mut ver = Vec::new();
    for _ in 0..runs {
        sha.push(time_ms(Command::new("sha256sum").arg(&log))?);
        ver.push(time_ms(&mut tool(&["verify"]))?);
    }
    let (sha, ver) = (median(sha), median(ver));
    b.figure(
        &format!("audit: verify, {label} records"),
        ver,
        "ms",
        "sha256sum ms",
        sha,
        Some(("<= 1.5x".into(), ver <= 1.5 * sha)),
    );
    let rss = peak_rss_mib(&mut tool(&["verify"]))?;
    b.figure(
        &format!("audit: verify peak memory, {label} records"),
        rss,
        "MiB",
        "target MiB",
        64.0,
        Some(("<= 64 MiB".into(), rss <= 64.0)),
    );

    let needle = "\"team\":\"team-7\"";
    let mut grep = Vec::new();
    let mut q = Vec::new();
    for _ in 0..runs {
        grep.push(time_ms(
            Command::new("grep").args(["-c", needle]).arg(&log),
        )?);
        q.push(time_ms(&mut tool(&["query", "--team", "team-7"]))?);
    }
    let (grep, q) = (median(grep), median(q));
    b.figure(
        &format!("audit: query --team (1 in {teams}), {label} records"),
        q,
        "ms",
        "grep -c ms",
        grep,
        Some(("<= 2x".into(), q <= 2.0 * grep)),
    );
    let qrss = peak_rss_mib(&mut tool(&["query", "--team", "team-7"]))?;
    b.figure(
        &format!("audit: query --team peak memory, {label} records"),
        qrss,
        "MiB",
        "target MiB",
        64.0,
        Some(("<= 64 MiB".into(), qrss <= 64.0)),
    );

    let tail = median_ms(9, || {
        time_ms(Command::new("tail").args(["-n", "100"]).arg(&log)).map(|_| ())
    })?;
    let last = median_ms(9, || {
        time_ms(&mut tool(&["query", "--last", "100"])).map(|_| ())
    })?;
    b.figure(
        &format!("audit: query --last 100, {label} records"),
        last,
        "ms",
        "tail -n 100 ms",
        tail,
        Some(("<= 50 ms".into(), last <= 50.0)),
    );
    let since = median_ms(9, || {
        time_ms(&mut tool(&["query", "--since", "1s"])).map(|_| ())
    })?;
    b.figure(
        &format!("audit: query --since 1s (nothing that recent), {label} records"),
        since,
        "ms",
        "tail -n 100 ms",
        tail,
        None,
    );
    let _ = std::fs::remove_file(&log);
    Ok(())
}

pub fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let quick = args.iter().any(|a| a == "--quick");
    let groups: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let only = |g: &str| groups.is_empty() || groups.iter().any(|a| *a == g);
    let bin = crate::util::build_bins(root, true, false)?;
    let out = root.join("target/bench");
    std::fs::create_dir_all(&out)?;
    // The teams live outside cargo's target dir, as a user's workspace does: every build
    // creates and deletes thousands of files there, and on an ext4 without a journal (this
    // machine's) creating a file next to many recently deleted ones costs up to 40x more, a
    // cost the floors (tmux alone, no files) never pay.
    let dir = std::env::temp_dir().join(format!("team-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut b = Bench {
        bin,
        dir: dir.clone(),
        figures: Vec::new(),
    };
    let machine = format!(
        "{}; creating a file in the scratch dir ({}): {:.0} µs",
        machine(),
        dir.display(),
        create_cost_us(&dir)?
    );
    println!("machine: {machine}");
    let result = (|| -> anyhow::Result<()> {
        if only("scale") {
            scale(&mut b, quick)?;
        }
        if only("readers") {
            readers(&mut b, quick)?;
        }
        if only("layout") {
            layout(&mut b, quick)?;
        }
        if only("deliver") {
            delivery(&mut b, root)?;
        }
        if only("audit") {
            audit(&mut b)?;
            audit_scale(&mut b, quick)?;
        }
        if only("reap") {
            reap(&mut b)?;
            reap_processes(&mut b, quick)?;
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result?;
    write_report(&out, &machine, &b.figures)?;
    let missed: Vec<_> = b
        .figures
        .iter()
        .filter(|f| matches!(f.target, Some((_, false))))
        .map(|f| f.name.clone())
        .collect();
    if !missed.is_empty() {
        bail!("targets missed: {}", missed.join("; "));
    }
    Ok(())
}

/// What creating (and then removing) an empty file costs in `dir`, in µs (the median of 200):
/// `up` makes three per worker, so this machine figure goes with the table.
fn create_cost_us(dir: &Path) -> anyhow::Result<f64> {
    let mut times = Vec::new();
    for i in 0..200 {
        let p = dir.join(format!("create-probe-{i}"));
        let t = Instant::now();
        std::fs::File::create_new(&p)?;
        times.push(t.elapsed().as_secs_f64() * 1e6);
        std::fs::remove_file(&p)?;
    }
    Ok(median(times))
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown cpu".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let tmux = Command::new("tmux")
        .arg("-V")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    format!("{cpu}, {cores} cores, {tmux}")
}

fn write_report(out: &Path, machine: &str, figures: &[Figure]) -> anyhow::Result<()> {
    let rows: Vec<_> = figures
        .iter()
        .map(|f| {
            json!({
                "name": f.name, "value": f.value, "unit": f.unit, "floor_name": f.floor_name,
                "floor": f.floor, "ratio": f.ratio,
                "target": f.target.as_ref().map(|t| t.0.clone()),
                "met": f.target.as_ref().map(|t| t.1),
            })
        })
        .collect();
    let report = json!({"machine": machine, "date": humantime_now(), "figures": rows});
    std::fs::write(out.join("report.json"), serde_json::to_vec_pretty(&report)?)?;
    let mut md = format!(
        "Machine: {machine}\n\n| benchmark | value | floor (same run) | ratio | target |\n|---|---|---|---|---|\n"
    );
    for f in figures {
        md.push_str(&format!(
            "| {} | {:.2} {} | {} {:.2} | {:.2} | {} |\n",
            f.name,
            f.value,
            f.unit,
            f.floor_name,
            f.floor,
            f.ratio,
            match &f.target {
                Some((t, ok)) => format!("{t}: {}", if *ok { "met" } else { "**missed**" }),
                None => "-".into(),
            }
        ));
    }
    std::fs::write(out.join("report.md"), &md)?;
    println!("\n{md}");
    println!(
        "written: {} and report.md",
        out.join("report.json").display()
    );
    Ok(())
}

fn humantime_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs();
    format!("unix {secs}")
}

/// Builds `sessions` sessions of `per` single-pane windows on `s`; pane `i` (in creation
/// order) runs `cmd(i)` (an argv, run without a shell). Returns the pane ids in creation order.
pub fn populate(
    s: &Server,
    sessions: usize,
    per: usize,
    cmd: &dyn Fn(usize) -> Vec<String>,
) -> anyhow::Result<Vec<String>> {
    let mut cmds: Vec<Vec<String>> = Vec::new();
    for i in 0..sessions {
        for w in 0..per {
            let mut c: Vec<String> = if w == 0 {
                ["new-session", "-d", "-s", &format!("s{i}")]
                    .map(String::from)
                    .to_vec()
            } else {
                ["new-window", "-d", "-t", &format!("=s{i}:")]
                    .map(String::from)
                    .to_vec()
            };
            c.extend(["-P", "-F", "#{pane_id}"].map(String::from));
            c.extend(cmd(i * per + w));
            cmds.push(c);
        }
    }
    let out = s.batch(&cmds)?;
    let panes: Vec<String> = out.lines().map(|l| l.trim().to_string()).collect();
    if panes.len() != sessions * per {
        bail!("made {} panes, expected {}", panes.len(), sessions * per);
    }
    Ok(panes)
}

/// A pane that runs `sleep`.
fn sleeper(_: usize) -> Vec<String> {
    ["sleep", "100000"].map(String::from).to_vec()
}

/// Pane `i` of a reap bench: every other one is a worker of the team `gone` of `ws` (whose
/// state does not exist), run below its supervisor as `up` starts one, so the reaper can prove
/// it (see [`tag_orphans`]); the rest run `sleep`.
fn orphan_or_sleeper(bin: &Path, ws: &Path, owner: &str, i: usize) -> Vec<String> {
    if !i.is_multiple_of(2) {
        return sleeper(i);
    }
    let root = ws.join(".team");
    // Its startup script, at the path `up` gives it (a supervisor runs nothing else).
    let script = root.join(format!("teams/gone/runtime/worker-{}.sh", i + 1));
    let body = "#!/bin/sh\nexec sleep 100000\n";
    std::fs::create_dir_all(script.parent().expect("a runtime dir"))
        .and_then(|()| std::fs::write(&script, body))
        .expect("an orphan's startup script written");
    // Started in the workspace, as `up` starts a worker (the reaper checks where it works),
    // with the digest of its script (`team_core::supervisor::SCRIPT_DIGEST_VAR`): a
    // supervisor runs nothing without it.
    use sha2::Digest;
    let mut v = vec![
        "-e".to_string(),
        format!(
            "TEAM_SCRIPT_SHA256={}",
            hex::encode(sha2::Sha256::digest(body.as_bytes()))
        ),
        "-c".to_string(),
        ws.display().to_string(),
        bin.join("team-scale").display().to_string(),
    ];
    v.extend(
        [
            "supervise",
            "--team",
            "gone",
            "--worker",
            &format!("worker-{}", i + 1),
            "--owner",
            owner,
            "--incarnation",
            &orphan_incarnation(i),
            "--root",
            &root.display().to_string(),
            "--ws",
            &ws.display().to_string(),
            "--",
            "/bin/sh",
            &script.display().to_string(),
        ]
        .map(String::from),
    );
    v
}

fn orphan_incarnation(i: usize) -> String {
    format!("00000000-0000-4000-8000-{i:012}")
}

/// The median of 9 runs of `team-reap scan --json` over the server `s`.
fn reap_scan_ms(b: &Bench, tt: &Path, s: &Server) -> anyhow::Result<f64> {
    let sock = s.sock.display().to_string();
    median_ms(9, || {
        let o = b
            .tool("team-reap")
            .env("TMUX_TMPDIR", tt)
            .args(["scan", "--json", "--socket", &sock])
            .stdout(Stdio::null())
            .status()?;
        // scan exits 0 (or 1 under --check); any other code is a failure.
        if o.code() != Some(0) {
            bail!("team-reap scan exited {o}");
        }
        Ok(())
    })
}

/// Tags every other pane of `panes` (those [`orphan_or_sleeper`] started below a supervisor)
/// as a worker of the team `gone` of `ws`: the reaper's orphans.
fn tag_orphans(s: &Server, panes: &[String], ws: &Path, owner: &str) -> anyhow::Result<()> {
    let mut cmds: Vec<Vec<String>> = Vec::new();
    for (i, p) in panes.iter().enumerate().filter(|(i, _)| i % 2 == 0) {
        for (k, v) in [
            ("@team_owner", owner.to_string()),
            ("@team_worker", format!("worker-{}", i + 1)),
            ("@team_incarnation", orphan_incarnation(i)),
            ("@team_workspace", ws.display().to_string()),
            ("@team_name", "gone".to_string()),
        ] {
            cmds.push(vec![
                "set-option".into(),
                "-p".into(),
                "-t".into(),
                p.clone(),
                k.into(),
                v,
            ]);
        }
    }
    s.batch(&cmds)?;
    Ok(())
}

/// The tools' own listing format (`team_core::tmux::snapshot::format`, with a fixed nonce):
/// the floors of the reaper's scans list the same fields, the conditional start command
/// included.
const LISTING_FORMAT: &str = "n\t#{pane_id}\t#{pane_pid}\t#{pane_dead}\t#{session_id}\t#{window_id}\t#{pid}\t#{start_time}\t#{@team_owner}\t#{@team_worker}\t#{@team_incarnation}\t#{@team_workspace}\t#{@team_name}\t#{@team_role}\t#{@team_op}\t#{@team_session_owner}\t#{session_name}\t#{pane_width}\t#{pane_height}\t#{window_width}\t#{window_height}\t#{?pane_dead,#{pane_start_command},#{?@team_role,#{pane_start_command},}}\tn";

/// The reaper: `scan --json` over 1,000 panes next to one bare `list-panes -a -F` with the
/// same format, and the reap of 500 orphans next to one bare invocation of 500 `kill-pane`s.
pub fn reap(b: &mut Bench) -> anyhow::Result<()> {
    let tt = b.dir.join("reap-tt");
    let sockdir = tt.join(format!("tmux-{}", crate::util::uid()));
    std::fs::create_dir_all(&sockdir)?;
    let ws = b.dir.join("reap-ws");
    std::fs::create_dir_all(ws.join(".team"))?;
    let owner = "00000000-0000-4000-8000-00000000dead";
    let bin = b.bin.clone();
    let setup = |s: &Server| -> anyhow::Result<Vec<String>> {
        let panes = populate(s, 50, 20, &|i| orphan_or_sleeper(&bin, &ws, owner, i))?;
        tag_orphans(s, &panes, &ws, owner)?;
        Ok(panes)
    };
    let s = Server::start(&sockdir, "reap")?;
    let panes = setup(&s)?;
    let orphans: Vec<String> = panes.iter().step_by(2).cloned().collect();
    let fmt = LISTING_FORMAT;
    let floor = median_ms(9, || s.tmux(&["list-panes", "-a", "-F", fmt]).map(|_| ()))?;
    let scan = reap_scan_ms(b, &tt, &s)?;
    b.figure(
        "reap: scan --json, 1,000 panes / 50 sessions",
        scan,
        "ms",
        "bare list-panes ms",
        floor,
        Some(("<= 3x".into(), scan <= 3.0 * floor)),
    );
    // The floor for the kill: one invocation of 500 plain kill-panes, on a fresh copy.
    drop(s);
    let s2 = Server::start(&sockdir, "floor")?;
    let panes2 = setup(&s2)?;
    let mut args: Vec<String> = Vec::new();
    for p in panes2.iter().step_by(2) {
        if !args.is_empty() {
            args.push(";".into());
        }
        args.extend(["kill-pane".into(), "-t".into(), p.clone()]);
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let t = Instant::now();
    s2.tmux(&refs)?;
    let kill_floor = t.elapsed().as_secs_f64() * 1000.0;
    drop(s2);
    let s3 = Server::start(&sockdir, "reap3")?;
    setup(&s3)?;
    let sock3 = s3.sock.display().to_string();
    let t = Instant::now();
    let o = b
        .tool("team-reap")
        .env("TMUX_TMPDIR", &tt)
        .env("TEAM_AUDIT_LOG", b.dir.join("reap-audit.jsonl"))
        .args(["--json", "--socket", &sock3])
        .output()?;
    let reap_ms = t.elapsed().as_secs_f64() * 1000.0;
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let killed = lines
        .iter()
        .filter(|l| l["action"] == "killed" && l["type"] == "pane")
        .count();
    let invocations = lines
        .iter()
        .find(|l| l["type"] == "summary")
        .and_then(|l| l["tmux_invocations"].as_u64())
        .unwrap_or(u64::MAX);
    if killed != orphans.len() {
        bail!(
            "team-reap killed {killed} panes, expected {} (exit {:?}): {}",
            orphans.len(),
            o.status.code(),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let left = s3.tmux(&["list-panes", "-a", "-F", "#{@team_owner}"])?;
    if left.lines().any(|l| l == owner) {
        bail!("orphans survived the reap");
    }
    if left.lines().count() != 501 {
        bail!(
            "the reap killed untagged panes: {} left, expected 501",
            left.lines().count()
        );
    }
    b.figure(
        "reap: kill 500 orphans (proven, audited)",
        reap_ms,
        "ms",
        "bare 500 kill-pane ms",
        kill_floor,
        Some(("<= 3x".into(), reap_ms <= 3.0 * kill_floor)),
    );
    let per = invocations as f64 / killed as f64;
    b.figure(
        "reap: tmux invocations per killed pane",
        per,
        "calls",
        "target",
        1.0,
        Some(("<= 1".into(), per <= 1.0)),
    );
    Ok(())
}

/// The reaper's scan of 3,000 panes, each with its running process (300 with `--quick`), half
/// of them tagged as a gone team's workers, next to its floor measured in the same run: one
/// bare `list-panes -a -F` with the reaper's format plus reading every process's
/// `/proc/<pid>/stat` once (the least a process scan can read).
fn reap_processes(b: &mut Bench, quick: bool) -> anyhow::Result<()> {
    let (sessions, per) = if quick { (6, 50) } else { (60, 50) };
    let n = sessions * per;
    let tt = b.dir.join("reapp-tt");
    let sockdir = tt.join(format!("tmux-{}", crate::util::uid()));
    std::fs::create_dir_all(&sockdir)?;
    let ws = b.dir.join("reapp-ws");
    std::fs::create_dir_all(ws.join(".team"))?;
    let owner = "00000000-0000-4000-8000-00000000beef";
    let s = Server::start(&sockdir, "reapp")?;
    let bin = b.bin.clone();
    let panes = populate(&s, sessions, per, &|i| {
        orphan_or_sleeper(&bin, &ws, owner, i)
    })?;
    tag_orphans(&s, &panes, &ws, owner)?;
    let fmt = LISTING_FORMAT;
    let pids: Vec<u32> = s
        .tmux(&["list-panes", "-a", "-F", "#{pane_pid}"])?
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    if pids.len() < n {
        bail!("{} pane processes, expected {n}", pids.len());
    }
    let floor = median_ms(9, || {
        s.tmux(&["list-panes", "-a", "-F", fmt])?;
        let mut read = 0usize;
        for pid in &pids {
            read += std::fs::read(format!("/proc/{pid}/stat")).map_or(0, |b| b.len());
        }
        std::hint::black_box(read);
        Ok(())
    })?;
    let scan = reap_scan_ms(b, &tt, &s)?;
    b.figure(
        &format!("reap: scan --json, {n} panes with {n} processes"),
        scan,
        "ms",
        "bare list-panes + /proc reads ms",
        floor,
        Some(("<= 2x".into(), scan <= 2.0 * floor)),
    );
    Ok(())
}

/// A scratch workspace with a private team on its own server.
struct Team {
    ws: PathBuf,
    tt: PathBuf,
    sock: PathBuf,
}

impl Team {
    fn new(b: &Bench, tag: &str, max: u32) -> anyhow::Result<Team> {
        Team::sized(b, tag, max, "250x80")
    }

    fn sized(b: &Bench, tag: &str, max: u32, size: &str) -> anyhow::Result<Team> {
        let base = b.dir.join(tag);
        let ws = base.join("ws");
        let tt = base.join("tt");
        std::fs::create_dir_all(&ws)?;
        std::fs::create_dir_all(&tt)?;
        let ws = ws.canonicalize()?;
        let mut t = Team {
            sock: PathBuf::new(),
            ws,
            tt,
        };
        let o = t.run(
            b,
            &[
                "init",
                "bench",
                "--private",
                "--max-workers",
                &max.to_string(),
                "--worker-cmd",
                "exec sleep 100000",
                "--size",
                size,
                "--json",
            ],
        )?;
        let sock = o
            .iter()
            .find(|l| l["type"] == "team")
            .and_then(|l| l["endpoint"].as_str())
            .context("init printed no endpoint")?
            .into();
        t.sock = sock;
        Ok(t)
    }

    /// Runs `team-scale args` and returns its JSON lines; fails unless it exits 0.
    fn run(&self, b: &Bench, args: &[&str]) -> anyhow::Result<Vec<serde_json::Value>> {
        let o = crate::util::tool(&b.bin, "team-scale", Some(&self.tt))
            .args(args)
            .current_dir(&self.ws)
            .output()?;
        if !o.status.success() {
            bail!(
                "team-scale {args:?} exited {}: {}{}",
                o.status,
                String::from_utf8_lossy(&o.stderr),
                String::from_utf8_lossy(&o.stdout)
            );
        }
        Ok(String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect())
    }

    fn server(&self) -> Server {
        Server {
            sock: self.sock.clone(),
        }
    }
}

impl Drop for Team {
    /// The team's server goes with it, on every path (a failed figure included): the bench
    /// deletes its scratch dirs afterwards, and a server whose socket is gone cannot be reached.
    fn drop(&mut self) {
        crate::util::kill_servers(&self.tt);
    }
}

fn summary_invocations(lines: &[serde_json::Value]) -> f64 {
    lines
        .iter()
        .find(|l| l["type"] == "summary")
        .and_then(|l| l["tmux_invocations"].as_u64())
        .map_or(f64::NAN, |n| n as f64)
}

/// Waits for what the last step started to finish starting (or exiting): a pane's shell and
/// command, tmux's utmp helper, a supervisor. Each timed step, a floor included, then starts on
/// a quiet machine instead of sharing its CPUs with the tail of the one before.
fn settle() {
    std::thread::sleep(Duration::from_millis(300));
}

/// One bare invocation that makes `n` panes with the same command in a new session.
fn bare_splits(s: &Server, session: &str, n: usize) -> anyhow::Result<(f64, Vec<String>)> {
    s.tmux(&[
        "new-session",
        "-d",
        "-s",
        session,
        "-x",
        "250",
        "-y",
        "80",
        "exec sleep 100000",
    ])?;
    // In as few invocations as tmux takes (one message is at most 16 KiB), as `up` must.
    let cmds: Vec<Vec<String>> = (0..n)
        .map(|_| {
            [
                "split-window",
                "-t",
                &format!("={session}:"),
                "-P",
                "-F",
                "#{pane_id}",
                "exec sleep 100000",
                ";",
                "select-layout",
                "-t",
                &format!("={session}:"),
                "tiled",
            ]
            .map(String::from)
            .to_vec()
        })
        .collect();
    let t = Instant::now();
    let out = s.batch(&cmds)?;
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    Ok((ms, out.lines().map(String::from).collect()))
}

/// `team-scale up 1` and `up 8` next to bare splits; `down 1` and `down 8 --force` next to
/// bare kills.
fn scale(b: &mut Bench, quick: bool) -> anyhow::Result<()> {
    // up 1, 8, 64: a fresh team each run, readiness waiting off (`--ready-timeout 0`: the
    // delivery step is a readiness wait, measured by the `deliver` group).
    let ups: &[(usize, usize)] = if quick {
        &[(1, 3), (8, 1)]
    } else {
        &[(1, 11), (8, 7), (64, 5)]
    };
    for &(n, runs) in ups {
        let mut ups = Vec::new();
        let mut floors = Vec::new();
        let mut inv = Vec::new();
        for r in 0..runs {
            let t = Team::new(b, &format!("up{n}-{r}"), 128)?;
            let s = t.server();
            settle();
            let (floor, _) = bare_splits(&s, "floor", n)?;
            floors.push(floor);
            settle();
            let t0 = Instant::now();
            let lines = t.run(
                b,
                &[
                    "up",
                    "bench",
                    &n.to_string(),
                    "--ready-timeout",
                    "0",
                    "--json",
                ],
            )?;
            ups.push(t0.elapsed().as_secs_f64() * 1000.0);
            inv.push(summary_invocations(&lines) / n as f64);
        }
        let per = median(inv);
        let max = if n == 1 { 2.0 } else { 1.5 };
        b.paired(
            &format!("scale: up {n} (readiness off)"),
            &ups,
            "ms",
            &format!("bare {n} splits ms"),
            &floors,
            max,
        );
        b.figure(
            &format!("scale: tmux invocations per worker, up {n}"),
            per,
            "calls",
            "target",
            3.0,
            Some(("<= 3".into(), per <= 3.0)),
        );
    }
    // down 1, down 8 and 63 --force: workers exit on SIGTERM.
    let downs: &[(usize, bool, usize)] = if quick {
        &[(1, false, 3), (8, true, 1)]
    } else {
        &[(1, false, 11), (8, true, 7), (63, true, 5)]
    };
    for &(n, force, runs) in downs {
        let mut downs = Vec::new();
        let mut floors = Vec::new();
        let mut inv = Vec::new();
        for r in 0..runs {
            let t = Team::new(b, &format!("down{n}-{r}"), 128)?;
            t.run(
                b,
                &["up", "bench", &(n + 1).to_string(), "--ready-timeout", "0"],
            )?;
            // A worker that never reported is busy for `down`: they report idle, as agents do
            // (`--force` takes them anyway).
            for i in (1..=n + 1).filter(|_| !force) {
                t.run(
                    b,
                    &[
                        "worker-status",
                        "bench",
                        "--worker",
                        &format!("worker-{i}"),
                        "--state",
                        "idle",
                    ],
                )?;
            }
            let s = t.server();
            let (_, panes) = bare_splits(&s, "floor", n)?;
            let mut args: Vec<String> = Vec::new();
            for p in &panes {
                if !args.is_empty() {
                    args.push(";".into());
                }
                args.extend(["kill-pane".into(), "-t".into(), p.clone()]);
            }
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            settle();
            let t0 = Instant::now();
            s.tmux(&refs)?;
            floors.push(t0.elapsed().as_secs_f64() * 1000.0);
            settle();
            let mut args = vec!["down", "bench"];
            let ns = n.to_string();
            args.push(&ns);
            if force {
                args.push("--force");
            }
            args.extend(["--grace", "3s", "--json"]);
            let t0 = Instant::now();
            let lines = t.run(b, &args)?;
            downs.push(t0.elapsed().as_secs_f64() * 1000.0);
            inv.push(summary_invocations(&lines) / n as f64);
        }
        let per = median(inv);
        let name = if force {
            format!("scale: down {n} --force")
        } else {
            format!("scale: down {n}")
        };
        let max = if n == 1 { 2.5 } else { 1.5 };
        b.paired(
            &name,
            &downs,
            "ms",
            &format!("bare {n} kill-panes ms"),
            &floors,
            max,
        );
        b.figure(
            &format!("scale: tmux invocations per worker, down {n}"),
            per,
            "calls",
            "target",
            3.0,
            Some(("<= 3".into(), per <= 3.0)),
        );
    }
    Ok(())
}

/// Runs `team-scale args` in `t` and returns how long it took and its exit code.
fn timed(b: &Bench, t: &Team, args: &[&str]) -> anyhow::Result<(f64, Option<i32>)> {
    let t0 = Instant::now();
    let o = crate::util::tool(&b.bin, "team-scale", Some(&t.tt))
        .args(args)
        .current_dir(&t.ws)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    Ok((t0.elapsed().as_secs_f64() * 1000.0, o.code()))
}

/// `up 1` + `down 1` pairs: the median time of each.
fn up_down_pairs(b: &Bench, t: &Team, runs: usize) -> anyhow::Result<(f64, f64)> {
    let (mut ups, mut downs) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let (ms, code) = timed(b, t, &["up", "bench", "1", "--ready-timeout", "0"])?;
        anyhow::ensure!(code == Some(0), "up 1 exited {code:?}");
        ups.push(ms);
        let (ms, code) = timed(b, t, &["down", "bench", "1", "--force", "--grace", "3s"])?;
        anyhow::ensure!(code == Some(0), "down 1 exited {code:?}");
        downs.push(ms);
    }
    Ok((median(ups), median(downs)))
}

/// Readers never block writers: `up 1`/`down 1` alone, then under 20 concurrent `status`
/// loops (`--wait 0s`: a reader that had to wait for a lock would exit 75).
///
/// The machine drifts over a run (seconds-long phases where everything is 1.5x slower), so
/// each round measures the writers alone and under every kind of load back to back, and each
/// figure is the median of its rounds' ratios (as `scale` pairs each run with its floor).
fn readers(b: &mut Bench, quick: bool) -> anyhow::Result<()> {
    let (loops, rounds, runs) = if quick { (4, 2, 2) } else { (20, 5, 3) };
    let t = Team::new(b, "readers", 64)?;
    t.run(b, &["up", "bench", "4", "--ready-timeout", "0"])?;
    let status = ["status", "bench", "--wait", "0s", "--json"];
    // The floor of a reader that asks the server anything: a bare `tmux list-panes -a`
    // started at the lowest CPU priority (`chrt --idle`, as `status` lowers itself). The
    // server answers every client at its own (normal) priority, and a connection costs it
    // about 0.6 ms whatever the command (tmux 3.3 counts its open files through
    // `/proc/self/fd` at every accept): 20 such loops keep it busy a third of the time.
    let sock = t.sock.clone();
    let bare_reader = move || {
        let mut c = Command::new("chrt");
        c.args(["--idle", "0", "tmux", "-S"])
            .arg(&sock)
            .args(["list-panes", "-a", "-F", "#{pane_id}"])
            .env_remove("TMUX")
            .env_remove("TMUX_PANE");
        c
    };
    // Per round: (alone, --version loops, status loops, status pollers, bare idle listing
    // loops), each (up, down).
    let mut r: [[Vec<f64>; 2]; 5] = Default::default();
    let (mut reads, mut busy, mut poll_busy) = (0, 0, 0);
    for _ in 0..rounds {
        let alone = up_down_pairs(b, &t, runs)?;
        // The same number of loops of a process that reads nothing (`team-scale
        // --version`): what 20 busy processes on this machine cost a writer with no lock
        // involved at all.
        let (cu, cd, _, _) = under_loops(b, &t, loops, runs, &["--version"])?;
        let (bu, bd, _, _) = under_commands(b, &t, loops, runs, &bare_reader, None)?;
        let (su, sd, n, k) = under_loops(b, &t, loops, runs, &status)?;
        reads += n;
        busy += k;
        // Pollers as they run in practice: each `status` once a second (`status --watch`
        // redraws every 2 s by default).
        let (pu, pd, _, k) =
            under_polls(b, &t, loops, runs, &status, Some(Duration::from_secs(1)))?;
        poll_busy += k;
        for (i, (u, d)) in [alone, (cu, cd), (su, sd), (pu, pd), (bu, bd)]
            .into_iter()
            .enumerate()
        {
            r[i][0].push(u);
            r[i][1].push(d);
        }
    }
    // Each load's name, as the figure and as a floor; the loads index `r`.
    let load = |k: usize| {
        [
            "alone".to_string(),
            format!("under {loops} --version loops"),
            format!("under {loops} status loops"),
            format!("under {loops} status pollers (1/s each)"),
            format!("under {loops} bare idle tmux listing loops"),
        ][k]
            .clone()
    };
    // (figure's load, floor's load, target), the floor named as in the README's table.
    let figures = [
        (2, 0, 1.3),
        (2, 1, 1.3),
        (4, 0, f64::INFINITY),
        (2, 4, 1.3),
        (3, 0, 1.3),
    ];
    for (w, what) in ["up 1", "down 1"].into_iter().enumerate() {
        for (v, f, max) in figures {
            let name = match (v, f) {
                (_, 0) => format!("readers: {what} {}", load(v)),
                (2, 1) => format!("readers: {what} {}, vs --version loops", load(v)),
                _ => format!("readers: {what} {}, vs bare idle listing loops", load(v)),
            };
            b.paired(
                &name,
                &r[v][w],
                "ms",
                &format!("{what} {} ms", load(f)),
                &r[f][w],
                max,
            );
        }
    }
    b.figure(
        "readers: status pollers' exits 75 (--wait 0s)",
        poll_busy as f64,
        "reads",
        "target",
        0.0,
        Some(("0".into(), poll_busy == 0)),
    );
    // What one refresh of `status --watch` costs: a whole `status` (one listing, the state read
    // without a lock) next to one bare `list-panes -a` process.
    let n = rounds * runs;
    let srv = t.server();
    let floor = median_ms(n, || {
        srv.tmux(&["list-panes", "-a", "-F", "#{pane_id}"])
            .map(|_| ())
    })?;
    let st = median_ms(n, || {
        let (_, code) = timed(b, &t, &["status", "bench", "--json"])?;
        anyhow::ensure!(code == Some(0), "status exited {code:?}");
        Ok(())
    })?;
    b.figure(
        "readers: status (one refresh of --watch), 4 workers",
        st,
        "ms",
        "bare list-panes -a ms",
        floor,
        None,
    );
    b.figure(
        &format!("readers: status exits 75 (--wait 0s), of {reads}"),
        busy as f64,
        "reads",
        "target",
        0.0,
        Some(("0".into(), busy == 0 && reads > 0)),
    );
    Ok(())
}

/// `up 1`/`down 1` pairs while `loops` threads run `team-scale <args>` back to back: the
/// median times, how many loop runs there were, and how many exited 75.
fn under_loops(
    b: &Bench,
    t: &Team,
    loops: usize,
    runs: usize,
    args: &[&str],
) -> anyhow::Result<(f64, f64, u64, u64)> {
    under_polls(b, t, loops, runs, args, None)
}

/// [`under_loops`], each loop pausing `pause` after each run when given (a poller: a
/// dashboard, `status --watch`), the loops' phases spread evenly over one pause.
fn under_polls(
    b: &Bench,
    t: &Team,
    loops: usize,
    runs: usize,
    args: &[&str],
    pause: Option<Duration>,
) -> anyhow::Result<(f64, f64, u64, u64)> {
    let cmd = || {
        let mut c = crate::util::tool(&b.bin, "team-scale", Some(&t.tt));
        c.args(args).current_dir(&t.ws);
        c
    };
    under_commands(b, t, loops, runs, &cmd, pause)
}

/// [`under_polls`] with any command in the loops.
fn under_commands(
    b: &Bench,
    t: &Team,
    loops: usize,
    runs: usize,
    cmd: &(dyn Fn() -> Command + Sync),
    pause: Option<Duration>,
) -> anyhow::Result<(f64, f64, u64, u64)> {
    let stop = std::sync::atomic::AtomicBool::new(false);
    let nap = |stop: &std::sync::atomic::AtomicBool, d: Duration| {
        let end = Instant::now() + d;
        while Instant::now() < end && !stop.load(std::sync::atomic::Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(10).min(end - Instant::now()));
        }
    };
    std::thread::scope(|sc| -> anyhow::Result<(f64, f64, u64, u64)> {
        let handles: Vec<_> = (0..loops)
            .map(|i| {
                let stop = &stop;
                sc.spawn(move || {
                    let (mut n, mut busy) = (0u64, 0u64);
                    if let Some(p) = pause {
                        nap(stop, p * i as u32 / loops as u32);
                    }
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let code = cmd()
                            .stdout(Stdio::null())
                            .stderr(Stdio::null())
                            .status()
                            .ok()
                            .and_then(|s| s.code());
                        n += 1;
                        if code == Some(75) {
                            busy += 1;
                        }
                        if let Some(p) = pause {
                            nap(stop, p);
                        }
                    }
                    (n, busy)
                })
            })
            .collect();
        // Let the loops get going: pollers start spread over one pause, so every one of them
        // runs before the first measurement.
        std::thread::sleep(pause.map_or(Duration::from_millis(300), |p| {
            p + Duration::from_millis(300)
        }));
        let res = up_down_pairs(b, t, runs);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let (mut reads, mut busy) = (0, 0);
        for h in handles {
            let (n, k) = h.join().expect("a loop panicked");
            reads += n;
            busy += k;
        }
        let (up, down) = res?;
        Ok((up, down, reads, busy))
    })
}

/// Peak resident memory (VmHWM, KiB) of a child, polled until it exits.
fn run_with_peak(mut c: Command) -> anyhow::Result<(std::process::ExitStatus, u64)> {
    let mut child = c.stdout(Stdio::null()).stderr(Stdio::piped()).spawn()?;
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak = 0u64;
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_path)
            && let Some(kb) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak = peak.max(kb);
        }
        if let Some(st) = child.try_wait()? {
            break st;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    if !status.success() {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            use std::io::Read;
            let _ = e.read_to_string(&mut err);
        }
        bail!("exited {status}: {err}");
    }
    Ok((status, peak))
}

/// `up 256` in an 80x24 and a 200x50 session: time, memory, and the smallest worker pane
/// (every one must be at least 20x5 cells).
fn layout(b: &mut Bench, quick: bool) -> anyhow::Result<()> {
    let n: u32 = if quick { 32 } else { 256 };
    for size in ["80x24", "200x50"] {
        let t = Team::sized(b, &format!("layout-{size}"), n, size)?;
        let mut c = crate::util::tool(&b.bin, "team-scale", Some(&t.tt));
        c.args(["up", "bench", &n.to_string(), "--ready-timeout", "0"])
            .current_dir(&t.ws);
        let t0 = Instant::now();
        let (_, peak_kib) = run_with_peak(c)?;
        let ms = t0.elapsed().as_secs_f64() * 1000.0;
        // One handle: a `Server` kills its server when dropped.
        let s = t.server();
        let out = s.tmux(&[
            "list-panes",
            "-a",
            "-F",
            "#{@team_worker}\t#{pane_width}\t#{pane_height}\t#{window_id}",
        ])?;
        let mut workers = 0;
        let (mut min_w, mut min_h) = (u32::MAX, u32::MAX);
        let mut windows = std::collections::BTreeSet::new();
        for l in out.lines() {
            let f: Vec<&str> = l.split('\t').collect();
            if f.len() != 4 || f[0].is_empty() {
                continue;
            }
            workers += 1;
            min_w = min_w.min(f[1].parse()?);
            min_h = min_h.min(f[2].parse()?);
            windows.insert(f[3].to_string());
        }
        anyhow::ensure!(workers == n, "{workers} worker panes, not {n}");
        let (floor, _) = bare_splits(&s, "floor", n as usize)?;
        b.figure(
            &format!("layout: up {n} in {size} ({} windows)", windows.len()),
            ms,
            "ms",
            &format!("bare {n} splits ms"),
            floor,
            None,
        );
        b.figure(
            &format!("layout: smallest worker pane in {size}, width"),
            f64::from(min_w),
            "cells",
            "target",
            20.0,
            Some((">= 20".into(), min_w >= 20)),
        );
        b.figure(
            &format!("layout: smallest worker pane in {size}, height"),
            f64::from(min_h),
            "cells",
            "target",
            5.0,
            Some((">= 5".into(), min_h >= 5)),
        );
        b.figure(
            &format!("layout: up {n} in {size}, peak memory"),
            peak_kib as f64 / 1024.0,
            "MiB",
            "-",
            0.0,
            None,
        );
    }
    Ok(())
}

/// The fake agent of the tests, as a user profile.
const FAKE_PROFILE: &str = r#"
[agents.fake]
programs = ["fake-agent"]
ready_cursor = ["fake> "]
ready_screen = ["Type a task"]
stable_ms = 500
settle_ms = 200
verify_ms = 800
busy = ["Working on:"]
"#;

/// `up 1` and `up 8` to delivered with the fake agent (prompt after 300 ms, Enter needed on its
/// own): delivery runs for all workers at once, so `up 8` should cost about what `up 1` does.
pub fn delivery(b: &mut Bench, root: &Path) -> anyhow::Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    duct::cmd(
        &cargo,
        ["build", "--quiet", "-p", "tests", "--bin", "fake-agent"],
    )
    .dir(root)
    .run()?;
    let fake = root.join("target/debug/fake-agent");
    let mut res = Vec::new();
    for (n, runs) in [(1usize, 3usize), (8, 3)] {
        let mut ups = Vec::new();
        for r in 0..runs {
            let base = b.dir.join(format!("deliver{n}-{r}"));
            let (ws, tt) = (base.join("ws"), base.join("tt"));
            std::fs::create_dir_all(ws.join(".team"))?;
            std::fs::create_dir_all(&tt)?;
            std::fs::write(ws.join(".team/agents.toml"), FAKE_PROFILE)?;
            let t = Team {
                ws: ws.canonicalize()?,
                tt,
                sock: PathBuf::new(),
            };
            let cmd = format!("exec {} --late 300 --separate-enter", fake.display());
            t.run(
                b,
                &[
                    "init",
                    "bench",
                    "--private",
                    "--max-workers",
                    "16",
                    "--size",
                    "250x80",
                    "--worker-cmd",
                    &cmd,
                ],
            )?;
            let t0 = Instant::now();
            let lines = t.run(b, &["up", "bench", &n.to_string(), "--json"])?;
            ups.push(t0.elapsed().as_secs_f64() * 1000.0);
            let delivered = lines
                .iter()
                .filter(|l| l["delivery"] == "delivered")
                .count();
            if delivered != n {
                bail!("up {n}: {delivered} delivered: {lines:?}");
            }
            crate::util::kill_servers(&t.tt);
        }
        res.push(median(ups));
    }
    let (one, eight) = (res[0], res[1]);
    b.figure(
        "scale: up 1 to delivered (fake agent)",
        one,
        "ms",
        "none",
        one,
        None,
    );
    b.figure(
        "scale: up 8 to delivered (fake agent)",
        eight,
        "ms",
        "up 1 to delivered ms",
        one,
        Some(("<= up 1 + 1000 ms".into(), eight <= one + 1000.0)),
    );
    Ok(())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v[v.len() / 2]
}
