//! `cargo xtask agents`: the agent profiles against the real agent CLIs.
//!
//! Installs `@openai/codex`, `@anthropic-ai/claude-code` and `@google/gemini-cli` (npm) and
//! `aider-chat` (PyPI, in a venv) into a cache dir outside the repository
//! (`$TEAM_AGENTS_CACHE`, else `~/.cache/team-agents`), then runs `team-scale init` + `up 1`
//! for each CLI twice, each time in a fresh temp workspace (a git repo) with a throwaway `HOME`
//! (never the real one) and its own `TMUX_TMPDIR`:
//!
//! - **first run**: no credentials, no network: `up` must exit non-zero, name the screen or the
//!   exit, and type nothing; files under the throwaway HOME must not change during `up`;
//! - **configured**: a HOME pre-configured as far as possible without network (onboarding done,
//!   folder trusted, a fake key): `up` should report the first prompt delivered.
//!
//! Writes `target/agents/report.md` (and `.json`). Not part of CI: it needs the registries.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

const NPM: &[&str] = &[
    "@openai/codex@0.171.0",
    "@anthropic-ai/claude-code@2.1.197",
    "@google/gemini-cli@0.61.0",
];
const AIDER: &str = "aider-chat==0.86.2";
const KEY: &str = "sk-test-not-a-real-key-0123456789";

struct Row {
    cli: &'static str,
    scenario: &'static str,
    code: i32,
    secs: f64,
    delivery: String,
    detail: String,
    /// Files of the throwaway HOME that hold the user's decisions (trust, settings, auth)
    /// and changed during `up`.
    home_changed: Vec<String>,
    /// How many other files of HOME the CLI wrote (its own caches, logs, sessions).
    other_changed: usize,
    /// `send-keys` intents in the audit log: what the tools typed.
    typed: usize,
    /// The leader's `send` after a delivered `up` (configured HOME only): its exit, result
    /// and detail.
    send: Option<(i32, String, String)>,
    expected: bool,
}

/// Files that record a user's decisions: a change to one during `up` would be the tools
/// answering for the user.
const DECISION_FILES: &[&str] = &[
    ".gemini/trustedFolders.json",
    ".gemini/settings.json",
    ".codex/auth.json",
    ".claude/settings.json",
    ".aider.conf.yml",
];

pub fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let cache = std::env::var_os("TEAM_AGENTS_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/team-agents")))
        .context("no HOME and no TEAM_AGENTS_CACHE")?;
    let only: Vec<&str> = args.iter().map(String::as_str).collect();
    install(&cache)?;
    let bin = crate::util::build_bins(root, false, false)?;
    let mut rows = Vec::new();
    for cli in ["codex", "claude", "gemini", "aider"] {
        if !only.is_empty() && !only.contains(&cli) {
            continue;
        }
        for scenario in ["first run", "configured"] {
            eprintln!("xtask agents: {cli}, {scenario}");
            rows.push(one(&bin, &cache, cli, scenario)?);
        }
    }
    let out = root.join("target/agents");
    std::fs::create_dir_all(&out)?;
    let md = report_md(&rows);
    std::fs::write(out.join("report.md"), &md)?;
    let js: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({"cli": r.cli, "scenario": r.scenario, "exit": r.code, "seconds": r.secs,
                   "delivery": r.delivery, "detail": r.detail, "home_changed": r.home_changed,
                   "other_files_changed": r.other_changed, "typed": r.typed,
                   "send": r.send.as_ref().map(|(c, w, d)| json!({"exit": c, "result": w, "detail": d})),
                   "as_expected": r.expected})
        })
        .collect();
    std::fs::write(out.join("report.json"), serde_json::to_string_pretty(&js)?)?;
    println!("{md}");
    println!("written to {}", out.join("report.md").display());
    Ok(())
}

fn install(cache: &Path) -> anyhow::Result<()> {
    let npm_dir = cache.join("npm");
    if !npm_dir.join("node_modules/.bin/gemini").exists() {
        std::fs::create_dir_all(&npm_dir)?;
        eprintln!("xtask agents: npm install {}", NPM.join(" "));
        let mut a = vec!["install", "--no-audit", "--no-fund", "--prefix"];
        let p = npm_dir.display().to_string();
        a.push(&p);
        a.extend_from_slice(NPM);
        duct::cmd("npm", &a).run()?;
    }
    let venv = cache.join("aider-venv");
    if !venv.join("bin/aider").exists() {
        eprintln!("xtask agents: pip install {AIDER}");
        duct::cmd("python3", ["-m", "venv", &venv.display().to_string()]).run()?;
        duct::cmd(venv.join("bin/pip"), ["install", "-q", AIDER]).run()?;
    }
    Ok(())
}

/// Every file under `dir` with its bytes (to tell what changed).
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(d: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        let Ok(rd) = std::fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                walk(&p, out);
            } else if ft.is_file() {
                out.insert(p.clone(), std::fs::read(&p).unwrap_or_default());
            }
        }
    }
    let mut m = BTreeMap::new();
    walk(dir, &mut m);
    m
}

fn write(p: &Path, s: &str) -> anyhow::Result<()> {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d)?;
    }
    std::fs::write(p, s)?;
    Ok(())
}

/// A HOME that gets each CLI to its input prompt without network (see
/// `shared/reference/agent-clis.md`).
fn configure(cli: &str, home: &Path, ws: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let w = ws.display().to_string();
    Ok(match cli {
        "codex" => {
            write(
                &home.join(".codex/auth.json"),
                &json!({"auth_mode": "apikey", "OPENAI_API_KEY": KEY}).to_string(),
            )?;
            write(
                &home.join(".codex/config.toml"),
                &format!("[projects.{:?}]\ntrust_level = \"trusted\"\n", w),
            )?;
            vec![("OPENAI_API_KEY".into(), KEY.into())]
        }
        "claude" => {
            let mut projects = serde_json::Map::new();
            projects.insert(w.clone(), json!({"hasTrustDialogAccepted": true}));
            write(
                &home.join(".claude.json"),
                &json!({
                    "hasCompletedOnboarding": true,
                    "customApiKeyResponses": {"approved": [&KEY[KEY.len() - 20..]], "rejected": []},
                    "projects": projects,
                })
                .to_string(),
            )?;
            vec![("ANTHROPIC_API_KEY".into(), KEY.into())]
        }
        "gemini" => {
            write(
                &home.join(".gemini/settings.json"),
                &json!({"security": {"auth": {"selectedType": "gemini-api-key"}}}).to_string(),
            )?;
            let mut t = serde_json::Map::new();
            t.insert(w, json!("TRUST_FOLDER"));
            write(
                &home.join(".gemini/trustedFolders.json"),
                &Value::Object(t).to_string(),
            )?;
            vec![("GEMINI_API_KEY".into(), KEY.into())]
        }
        "aider" => {
            write(
                &home.join(".aider.conf.yml"),
                "gitignore: false\ncheck-update: false\nanalytics-disable: true\nshow-release-notes: false\nmodel: gpt-4o\n",
            )?;
            vec![("OPENAI_API_KEY".into(), KEY.into())]
        }
        _ => Vec::new(),
    })
}

fn one(bin: &Path, cache: &Path, cli: &'static str, scenario: &'static str) -> anyhow::Result<Row> {
    let base = std::env::temp_dir().join(format!(
        "team-agents-{cli}-{}-{}",
        scenario.replace(' ', "-"),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&base);
    let (ws, home, tt) = (base.join("ws"), base.join("home"), base.join("tt"));
    for d in [&ws, &home, &tt] {
        std::fs::create_dir_all(d)?;
    }
    let ws = ws.canonicalize()?;
    // A git repository with one commit (aider wants one; the others do not mind).
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(&ws)
            .env("HOME", &home)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
    };
    git(&["init", "-q"])?;
    std::fs::write(ws.join("README.md"), "scratch\n")?;
    git(&["add", "README.md"])?;
    git(&["commit", "-qm", "init"])?;
    let extra_env = if scenario == "configured" {
        configure(cli, &home, &ws)?
    } else {
        Vec::new()
    };
    let path = format!(
        "{}:{}:/usr/local/bin:/usr/bin:/bin",
        cache.join("npm/node_modules/.bin").display(),
        cache.join("aider-venv/bin").display()
    );
    let tool = |args: &[&str]| {
        let mut c = crate::util::tool(bin, "team-scale", Some(&tt));
        c.args(args)
            .current_dir(&ws)
            .env("HOME", &home)
            .env("PATH", &path)
            .env("TERM", "xterm-256color")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .env_remove("GEMINI_API_KEY")
            .env_remove("GOOGLE_API_KEY");
        for (k, v) in &extra_env {
            c.env(k, v);
        }
        c.output()
    };
    let o = tool(&["init", "t", "--private", "--worker-cmd", cli])?;
    if !o.status.success() {
        bail!("init for {cli}: {}", String::from_utf8_lossy(&o.stderr));
    }
    let before = files(&home);
    let t0 = Instant::now();
    let o = tool(&["up", "t", "1", "--ready-timeout", "60s", "--json"])?;
    let secs = t0.elapsed().as_secs_f64();
    let code = o.status.code().unwrap_or(-1);
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let first: Value = stdout
        .lines()
        .next()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or(Value::Null);
    let (delivery, detail) = if code == 0 {
        (
            first["delivery"].as_str().unwrap_or("?").to_string(),
            first["delivery_detail"].as_str().unwrap_or("").to_string(),
        )
    } else {
        let line = stderr
            .lines()
            .find(|l| l.trim_start().starts_with("worker-1:"))
            .unwrap_or_else(|| stderr.lines().next().unwrap_or(""))
            .trim()
            .to_string();
        let word = ["blocked", "undelivered"]
            .into_iter()
            .find(|w| line.contains(&format!(": {w}")))
            .unwrap_or("error");
        (word.to_string(), line)
    };
    // What `up` typed (before the `send` below types too).
    let typed = std::fs::read_to_string(ws.join(".team/audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("\"action\":\"send-keys\"") && l.contains("\"stage\":\"intent\""))
        .count();
    // The leader's `send` reuses the first prompt's delivery. With no network the agent
    // still works on its first prompt (it retries the API for minutes): `--queue` types the
    // message as one it queues, where it takes such messages, else once it is idle again.
    let send = if scenario == "configured" && code == 0 {
        let o = tool(&[
            "send",
            "t",
            "worker-1",
            "reply with the single word pong",
            "--queue",
            "--ready-timeout",
            "150s",
            "--json",
        ])?;
        let line: Value = String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|l| l["type"] == "delivery")
            .unwrap_or(Value::Null);
        Some((
            o.status.code().unwrap_or(-1),
            line["result"].as_str().unwrap_or("?").to_string(),
            line["detail"].as_str().unwrap_or("").to_string(),
        ))
    } else {
        None
    };
    let after = files(&home);
    let mut home_changed: Vec<String> = after
        .iter()
        .filter(|(p, b)| before.get(*p) != Some(*b))
        .map(|(p, _)| p.strip_prefix(&home).unwrap_or(p).display().to_string())
        .collect();
    home_changed.extend(
        before
            .keys()
            .filter(|p| !after.contains_key(*p))
            .map(|p| format!("-{}", p.strip_prefix(&home).unwrap_or(p).display())),
    );
    let other_changed = home_changed
        .iter()
        .filter(|f| !DECISION_FILES.contains(&f.trim_start_matches('-')))
        .count();
    home_changed.retain(|f| DECISION_FILES.contains(&f.trim_start_matches('-')));
    let _ = tool(&["shutdown", "t", "--grace", "1s"]);
    crate::util::kill_servers(&tt);
    // Codex leaves a detached app-server per Codex home, which the tools report as shared and
    // never kill: it is ours by ancestry (below this run's supervisors), and so ended by pid.
    crate::util::end_residue_below(&base);
    std::thread::sleep(Duration::from_millis(200));
    let _ = std::fs::remove_dir_all(&base);
    let expected = match scenario {
        "first run" => code != 0 && delivery != "error" && typed == 0 && home_changed.is_empty(),
        _ => {
            code == 0
                && delivery == "delivered"
                && home_changed.is_empty()
                && send
                    .as_ref()
                    .is_some_and(|(c, w, _)| *c == 0 && w == "delivered")
        }
    };
    Ok(Row {
        cli,
        scenario,
        code,
        secs,
        delivery,
        detail,
        home_changed,
        other_changed,
        typed,
        send,
        expected,
    })
}

fn report_md(rows: &[Row]) -> String {
    let mut s = String::from(
        "| CLI | HOME | `up` exit | time | result | what `up` said | typed | then `send` | trust/settings files changed | as expected |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let detail = r.detail.replace('|', "\\|");
        let detail: String = detail.chars().take(220).collect();
        s.push_str(&format!(
            "| {} | {} | {} | {:.1} s | {} | {} | {} | {} | {} (and {} files of its own) | {} |\n",
            r.cli,
            r.scenario,
            r.code,
            r.secs,
            r.delivery,
            detail,
            if r.typed == 0 {
                "nothing".to_string()
            } else {
                format!("{} message(s)", r.typed)
            },
            match &r.send {
                None => "-".to_string(),
                Some((c, _, d)) => format!("exit {c}: {}", d.replace('|', "\\|")),
            },
            if r.home_changed.is_empty() {
                "none".to_string()
            } else {
                r.home_changed.join(", ")
            },
            r.other_changed,
            if r.expected { "yes" } else { "**no**" }
        ));
    }
    s
}
