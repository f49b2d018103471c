//! `status --watch` (a compact live view redrawn on a terminal until Ctrl-C) and
//! `status --format tmux` (one line for a tmux status bar). Each refresh is one read of the
//! committed state (no lock), the worker status and task files, and one tmux listing.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **`status --watch`** reads without locks (a snapshot, one tmux listing per refresh) and draws
//!   only on a terminal; elsewhere it prints once with a warning. `status --format tmux` is one
//!   line: `<team>: <N>w <busy>b <idle>i [<n>!] [<n>rm] t<done>/<total>`.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use serde_json::json;
use team_core::model::{Lifecycle, Team, WorkState};
use team_core::ops::board;
use team_core::paths::TeamName;
use team_core::proof::PaneProof;
use team_core::view;

use super::status::{current_task, lifecycle_word, short};
use crate::ctx::Ctx;
use crate::error::CliResult;
use crate::out::{Out, clean};

/// One look at a team.
struct Look {
    team: Team,
    rows: Vec<Row>,
    tasks_done: usize,
    tasks_total: usize,
    holder: Option<String>,
    in_flight: bool,
}

struct Row {
    worker: String,
    lifecycle: Lifecycle,
    liveness: &'static str,
    /// Its pane is proven live (what `liveness` says as a word).
    live: bool,
    state: Option<WorkState>,
    age: Option<Duration>,
    task: String,
}

fn look(ctx: &Ctx, name: &TeamName) -> team_core::Result<Look> {
    let store = ctx.store(name);
    let snap = store.snapshot()?;
    let team = snap.team;
    let listing = ctx.tmux(&team.endpoint).list();
    let tasks = store.tasks().unwrap_or_default();
    let now = std::time::SystemTime::now();
    let workers = store.workers_dir().ok().flatten();
    let rows = team
        .workers
        .iter()
        .map(|w| {
            let proof = view::prove_worker(&team, w, &listing);
            let st = store.status_for(workers.as_ref(), w).ok().flatten();
            Row {
                worker: w.name.to_string(),
                lifecycle: w.lifecycle,
                liveness: proof.as_ref().map_or("none", PaneProof::liveness),
                live: matches!(proof, Some(PaneProof::Live(_))),
                state: st.as_ref().map(|s| s.state),
                age: st
                    .as_ref()
                    .and_then(|s| humantime::parse_rfc3339_weak(&s.updated_at).ok())
                    .and_then(|t| now.duration_since(t).ok()),
                task: current_task(&tasks, &w.name).map_or("-".into(), |t| {
                    format!(
                        "#{} {} [{}]",
                        t.id,
                        short(&t.subject, 30),
                        board::status_word(t.status)
                    )
                }),
            }
        })
        .collect();
    Ok(Look {
        tasks_done: tasks
            .iter()
            .filter(|t| t.status == team_core::model::TaskStatus::Completed)
            .count(),
        tasks_total: tasks.len(),
        holder: store.scale_holder()?.map(|h| h.to_string()),
        in_flight: snap.in_flight,
        team,
        rows,
    })
}

fn age(d: Option<Duration>) -> String {
    match d.map(|d| d.as_secs()) {
        None => "-".into(),
        Some(s) if s < 60 => format!("{s}s"),
        Some(s) if s < 3600 => format!("{}m", s / 60),
        Some(s) => format!("{}h", s / 3600),
    }
}

fn state_word(s: Option<WorkState>) -> &'static str {
    match s {
        None => "-",
        Some(WorkState::Idle) => "idle",
        Some(WorkState::Busy) => "busy",
        Some(WorkState::Done) => "done",
        Some(WorkState::Draining) => "draining",
    }
}

fn render(l: &Look) -> Vec<String> {
    let mut v = vec![format!(
        "team {}  {} workers  tasks {}/{} done{}{}",
        l.team.name,
        l.team.in_state(Lifecycle::Active).count(),
        l.tasks_done,
        l.tasks_total,
        l.holder
            .as_ref()
            .map_or(String::new(), |h| format!("  [busy: {h}]")),
        if l.in_flight {
            "  [operation in flight]"
        } else {
            ""
        }
    )];
    v.push(format!(
        "  {:<10} {:<9} {:<12} {:<8} {:>5}  TASK",
        "WORKER", "LIFECYCLE", "PANE", "STATE", "AGE"
    ));
    for r in &l.rows {
        v.push(format!(
            "  {:<10} {:<9} {:<12} {:<8} {:>5}  {}",
            r.worker,
            lifecycle_word(r.lifecycle),
            r.liveness,
            state_word(r.state),
            age(r.age),
            clean(&r.task)
        ));
    }
    let debt = l
        .rows
        .iter()
        .filter(|r| r.lifecycle == Lifecycle::Removing)
        .count();
    if debt > 0 {
        v.push(format!(
            "  cleanup debt: {debt} removing; `team-scale reconcile {}` settles it",
            l.team.name
        ));
    }
    v
}

/// `status --watch`.
pub fn watch(ctx: &Ctx, name: &TeamName, interval: Duration) -> CliResult<i32> {
    let terminal = std::io::stdout().is_terminal();
    if !terminal || ctx.json {
        team_cli::error::warn(
            false,
            "--watch redraws only on a terminal (and not with --json); printing once",
        );
        let l = look(ctx, name)?;
        let mut out = Out::new(ctx.json);
        for line in render(&l) {
            out.line(&line)?;
        }
        out.record(&json!({
            "type": "summary", "team": name, "action": "status", "ok": true, "watch": false,
            "workers": l.team.in_state(Lifecycle::Active).count(),
            "tasks_done": l.tasks_done, "tasks": l.tasks_total,
        }))?;
        out.flush()?;
        return Ok(0);
    }
    let interval = interval.max(Duration::from_millis(200));
    loop {
        let t0 = Instant::now();
        let calls0 = team_core::tmux::invocations();
        let body = match look(ctx, name) {
            Ok(l) => render(&l),
            Err(e) => vec![format!("team {name}: {e}")],
        };
        let calls = team_core::tmux::invocations() - calls0;
        let mut screen = String::from("\x1b[H\x1b[2J");
        for line in body {
            screen.push_str(&line);
            screen.push('\n');
        }
        screen.push_str(&format!(
            "\n(refresh every {:?}: {calls} tmux call(s), {} ms; Ctrl-C to stop)\n",
            interval,
            t0.elapsed().as_millis()
        ));
        let mut out = Out::new(false);
        out.bytes(screen.as_bytes())?;
        out.flush()?;
        std::thread::sleep(interval);
    }
}

/// `status --format tmux`: one short line, no colours, for `#(...)` in a status bar.
pub fn tmux_line(ctx: &Ctx, name: &TeamName) -> CliResult<i32> {
    let l = look(ctx, name)?;
    let count = |s: WorkState| l.rows.iter().filter(|r| r.state == Some(s)).count();
    let dead = l
        .rows
        .iter()
        .filter(|r| r.lifecycle == Lifecycle::Active && !r.live)
        .count();
    let debt = l
        .rows
        .iter()
        .filter(|r| r.lifecycle == Lifecycle::Removing)
        .count();
    let mut s = format!(
        "{}: {}w {}b {}i",
        l.team.name,
        l.team.in_state(Lifecycle::Active).count(),
        count(WorkState::Busy),
        count(WorkState::Idle) + count(WorkState::Done),
    );
    if dead > 0 {
        s.push_str(&format!(" {dead}!"));
    }
    if debt > 0 {
        s.push_str(&format!(" {debt}rm"));
    }
    s.push_str(&format!(" t{}/{}", l.tasks_done, l.tasks_total));
    let mut out = Out::new(ctx.json);
    out.record(
        &json!({"type": "summary", "team": name, "action": "status", "ok": true, "line": s}),
    )?;
    out.line(&s)?;
    out.flush()?;
    Ok(0)
}
