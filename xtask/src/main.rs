//! See <https://github.com/matklad/cargo-xtask/>: the developer's tasks, as `cargo xtask <task>`.
//!
//! - `ci`: fmt check, clippy `-D warnings`, the whole test suite.
//! - `demo`: a real team on a private tmux server, narrated.
//! - `bench`: benchmarks against the physical floor, written to `target/bench/`.
//! - `chaos`: random operations under SIGKILL, then every invariant checked.
//! - `dist`: binaries, man pages and completions in `target/dist/`.
//! - `agents`: the agent profiles against the real agent CLIs (installed into a cache dir).

mod agents;
mod bench;
mod chaos;
mod ci;
mod demo;
mod dist;
mod util;

use std::path::{Path, PathBuf};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = project_root();
    std::env::set_current_dir(&root)?;
    match args.first().map(String::as_str) {
        Some("ci") => ci::run(&root),
        Some("demo") => demo::run(&root, &args[1..]),
        Some("bench") => bench::run(&root, &args[1..]),
        Some("chaos") => chaos::run(&root, &args[1..]),
        Some("dist") => dist::run(&root),
        Some("agents") => agents::run(&root, &args[1..]),
        Some("-h" | "--help") | None => {
            println!("{HELP}");
            Ok(())
        }
        Some(other) => anyhow::bail!("unknown task {other:?}\n\n{HELP}"),
    }
}

const HELP: &str = "\
cargo xtask <task>

Tasks:
  ci      cargo fmt --check, cargo clippy --all-targets -D warnings, cargo test --workspace
  demo    run a real team on a private tmux server and narrate it (--keep to leave it up)
  chaos   random up/down/reconcile/reap under SIGKILL, then check every invariant
          (--seconds S, --seed N)
  dist    release binaries, man pages and shell completions in target/dist/
  bench   every benchmark next to its floor; writes target/bench/report.{json,md}
          (optionally only some groups: scale, deliver, audit, reap)
  agents  install the real agent CLIs into ~/.cache/team-agents and run each profile against
          them with a throwaway HOME; writes target/agents/report.md (optionally only some:
          codex, claude, gemini, aider)";

/// The workspace root (the parent of this crate's manifest dir).
pub fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}
