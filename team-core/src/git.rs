//! The only code that runs git: always `git -C <dir>`, never through a shell, with no terminal
//! prompt and none of the caller's `GIT_DIR` / `GIT_WORK_TREE` / `GIT_INDEX_FILE`.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::error::{Error, Result};

/// Runs `git -C <dir> <args>` with `env` added.
pub fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<Output> {
    let mut c = Command::new("git");
    c.arg("-C").arg(dir).args(args);
    crate::childenv::scrub(&mut c);
    c.env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE");
    for (k, v) in env {
        c.env(k, v);
    }
    c.env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::io("run git in", dir, e))
}

/// Like [`run`], but a failure is an error naming the command; returns trimmed stdout.
pub fn run_ok(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<String> {
    let o = run(dir, args, env)?;
    if !o.status.success() {
        return Err(Error::Refused(format!(
            "git {} in {} failed: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
}
