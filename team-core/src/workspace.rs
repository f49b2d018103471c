//! Finding the workspace the way git finds a repository: the nearest directory, from the
//! current one upwards, that holds a `.team` entry. The search stops at a file-system boundary
//! (a mount point is checked, its parent is not) and at the user's home directory (checked,
//! nothing above it), so a stray `~/../.team` or one on another disk is never picked up.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **Workspace discovery** applies when neither `--workspace` nor `--state-dir`/
//!   `TEAM_STATE_DIR` is given, in `team-scale` and `team-audit` (the hook keeps its payload-cwd
//!   rule). `init` refuses below an existing workspace (exit 1) unless `--here`.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The nearest of `start` and its ancestors holding `.team` (any kind of entry, so a
/// symlinked `.team` is found and then refused by the state-root checks), or `None`.
/// `home` is the caller's `$HOME` (the library reads no environment).
pub fn find(start: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let mut dir = start.to_path_buf();
    loop {
        if std::fs::symlink_metadata(dir.join(".team")).is_ok() {
            return Some(dir);
        }
        if home.is_some_and(|h| h == dir) {
            return None;
        }
        let parent = dir.parent()?.to_path_buf();
        let (Ok(here), Ok(up)) = (std::fs::metadata(&dir), std::fs::metadata(&parent)) else {
            return None;
        };
        if here.dev() != up.dev() {
            return None;
        }
        dir = parent;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_ancestor_and_the_home_ceiling() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let ws = root.join("ws");
        let deep = ws.join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(find(&deep, None), None);
        std::fs::create_dir(ws.join(".team")).unwrap();
        assert_eq!(find(&deep, None), Some(ws.clone()));
        assert_eq!(find(&ws, None), Some(ws.clone()));
        // A nearer one wins.
        std::fs::create_dir(ws.join("a/.team")).unwrap();
        assert_eq!(find(&deep, None), Some(ws.join("a")));
        // $HOME is a ceiling: checked itself, nothing above it.
        assert_eq!(find(&deep, Some(&ws.join("a/b"))), None);
        assert_eq!(find(&deep, Some(&ws.join("a"))), Some(ws.join("a")));
    }
}
