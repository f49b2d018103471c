//! `teams/<team>/workers/<worker>/exit.json`: how a worker's main process ended, written by
//! the pane's supervisor. Read only when its incarnation is the worker's current one.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use uuid::Uuid;

use crate::error::Result;

/// The most bytes read from an exit file.
pub const MAX_EXIT_FILE: usize = 4096;

/// How a worker's main process ended.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ExitInfo {
    pub incarnation: Uuid,
    #[serde(default)]
    pub code: Option<i32>,
    #[serde(default)]
    pub signal: Option<i32>,
}

impl ExitInfo {
    /// "exited with status 1", "was killed by signal 9".
    pub fn describe(&self) -> String {
        match (self.code, self.signal) {
            (_, Some(s)) => format!("was killed by signal {s}"),
            (Some(c), None) => format!("exited with status {c}"),
            (None, None) => "exited".into(),
        }
    }
}

/// Where one worker incarnation's exit record is: `path`, inside the state root `root`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExitFile {
    pub root: PathBuf,
    pub path: PathBuf,
    pub incarnation: Uuid,
}

impl ExitFile {
    /// [`read_exit`] of this file.
    pub fn read(&self) -> Result<Option<ExitInfo>> {
        read_exit(&self.root, &self.path, self.incarnation)
    }
}

/// Reads `path` (inside the state root `root`, reached without following any symlink) and
/// returns its record when it names `incarnation`. A missing, oversized, malformed or other
/// incarnation's file is `None`: it proves nothing about this worker.
pub fn read_exit(root: &Path, path: &Path, incarnation: Uuid) -> Result<Option<ExitInfo>> {
    let Some(bytes) = crate::fsutil::state_read(root, path, MAX_EXIT_FILE as u64)? else {
        return Ok(None);
    };
    Ok(parse_exit(&bytes).filter(|e| e.incarnation == incarnation))
}

/// [`read_exit`], through the team's `workers/` held open (see
/// `crate::fsutil::StateDir::read_below`).
pub fn read_exit_in(
    workers: &crate::fsutil::StateDir,
    path: &Path,
    incarnation: Uuid,
) -> Result<Option<ExitInfo>> {
    let Some(bytes) = workers.read_below(path, MAX_EXIT_FILE as u64)? else {
        return Ok(None);
    };
    Ok(parse_exit(&bytes).filter(|e| e.incarnation == incarnation))
}

/// Parses an exit file (pure).
pub fn parse_exit(bytes: &[u8]) -> Option<ExitInfo> {
    if bytes.len() > MAX_EXIT_FILE {
        return None;
    }
    serde_json::from_slice(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_matching_incarnation_counts() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(".team");
        std::fs::create_dir(&root).unwrap();
        let p = root.join("exit.json");
        let me = Uuid::new_v4();
        let read_exit = |p: &Path, inc: Uuid| read_exit(&root, p, inc);
        assert_eq!(read_exit(&p, me).unwrap(), None);
        std::fs::write(
            &p,
            format!(r#"{{"incarnation":"{me}","code":3,"signal":null}}"#),
        )
        .unwrap();
        let e = read_exit(&p, me).unwrap().unwrap();
        assert_eq!(e.describe(), "exited with status 3");
        assert_eq!(read_exit(&p, Uuid::new_v4()).unwrap(), None);
        std::fs::write(&p, b"{oops").unwrap();
        assert_eq!(read_exit(&p, me).unwrap(), None);
        // Through a symlink: not read.
        std::fs::write(
            dir.path().join("elsewhere.json"),
            format!(r#"{{"incarnation":"{me}","code":3,"signal":null}}"#),
        )
        .unwrap();
        std::fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink(dir.path().join("elsewhere.json"), &p).unwrap();
        assert!(read_exit(&p, me).is_err());
    }
}
