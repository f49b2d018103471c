//! Names and paths: validated team and worker names, the state root, and path builders that
//! refuse anything escaping the root or passing through a symlink.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **The private socket** is `${TMUX_TMPDIR:-/tmp}/tmux-<uid>/team-<12 hex of SHA-256 of the
//!   canonical workspace path>`; teams of one workspace share it, one session per team.

use std::fmt;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

const NAME_RULE: &str = "must match [a-z0-9][a-z0-9_-]{0,39}";

fn check_name(kind: &'static str, s: &str) -> Result<()> {
    let bad = |why| {
        Err(Error::InvalidName {
            kind,
            name: s.to_string(),
            why,
        })
    };
    if s.is_empty() {
        return bad("it is empty");
    }
    if s.len() > 40 {
        return bad("it is longer than 40 characters");
    }
    let mut chars = s.chars();
    let first = chars.next().unwrap_or('-');
    if !(first.is_ascii_lowercase() || first.is_ascii_digit()) {
        return bad(NAME_RULE);
    }
    if !chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-') {
        return bad(NAME_RULE);
    }
    Ok(())
}

macro_rules! name_type {
    ($(#[$m:meta])* $name:ident, $kind:literal) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// Validates `s` (`[a-z0-9][a-z0-9_-]{0,39}`).
            pub fn new(s: &str) -> Result<Self> {
                check_name($kind, s)?;
                Ok(Self(s.to_string()))
            }
            /// The name as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                $name::new(&s).map_err(serde::de::Error::custom)
            }
        }

        impl std::str::FromStr for $name {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self> {
                $name::new(s)
            }
        }
    };
}

name_type!(
    /// A validated team name.
    TeamName,
    "team"
);
name_type!(
    /// A validated worker name (`worker-<n>` for workers the tools create).
    WorkerName,
    "worker"
);
name_type!(
    /// A validated role name.
    RoleName,
    "role"
);

impl WorkerName {
    /// The name of the worker with monotonic index `n`.
    pub fn for_index(n: u64) -> WorkerName {
        WorkerName(format!("worker-{n}"))
    }
}

/// The root of a workspace's team state (`<workspace>/.team` unless overridden).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateRoot {
    root: PathBuf,
    /// The workspace this root is the `.team` of, when it is one; `None` for a root named
    /// explicitly elsewhere (it may serve several workspaces).
    workspace: Option<PathBuf>,
}

impl StateRoot {
    /// Resolves the state root: an explicit directory (from `--state-dir` or `TEAM_STATE_DIR`,
    /// which the binary reads) or `<workspace>/.team`. The result is absolute.
    pub fn resolve(workspace: &Path, explicit: Option<&Path>) -> Result<StateRoot> {
        let base = match explicit {
            Some(p) if p.is_absolute() => p.to_path_buf(),
            Some(p) => workspace.join(p),
            None => workspace.join(".team"),
        };
        if !base.is_absolute() {
            return Err(Error::Usage(format!(
                "state root {} is not absolute",
                base.display()
            )));
        }
        let root = normalize(&base)?;
        // The root belongs to the workspace when it is `<workspace>/.team`, however it was
        // named (by default, or an explicit directory that happens to be that one).
        let workspace = normalize(workspace)
            .ok()
            .filter(|ws| ws.join(".team") == root);
        Ok(StateRoot { root, workspace })
    }

    /// The state root directory.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The workspace this root is the `.team` of (`None` for an explicit root elsewhere). A
    /// team whose `team.json` records another workspace was copied or moved here: its panes
    /// and processes are the other workspace's team's, and no command acts on them from here.
    pub fn workspace(&self) -> Option<&Path> {
        self.workspace.as_deref()
    }

    /// Creates the root, its `.gitignore` (`*`), and `locks/`, and refuses network file systems.
    /// Nothing is followed through a symlink (see `fsutil`): a symlinked root, `locks/` or
    /// `.gitignore` is refused.
    pub fn ensure(&self) -> Result<()> {
        use crate::fsutil;
        fsutil::state_create_dir(&self.root, &self.root)?;
        check_local_fs(&self.root)?;
        let gi = self.root.join(".gitignore");
        if fsutil::state_open(&self.root, &gi, fsutil::Access::Read)?.is_none() {
            fsutil::state_write(&self.root, &gi, b"*\n")?;
        }
        fsutil::state_create_dir(&self.root, &self.locks_dir())?;
        Ok(())
    }

    /// `<root>/locks`.
    pub fn locks_dir(&self) -> PathBuf {
        self.root.join("locks")
    }
    /// `<root>/locks/<team>.scale.lock`.
    pub fn scale_lock(&self, team: &TeamName) -> PathBuf {
        self.locks_dir().join(format!("{team}.scale.lock"))
    }
    /// `<root>/locks/<team>.state.lock`.
    pub fn state_lock(&self, team: &TeamName) -> PathBuf {
        self.locks_dir().join(format!("{team}.state.lock"))
    }
    /// `<root>/audit.jsonl`.
    pub fn audit_log(&self) -> PathBuf {
        self.root.join("audit.jsonl")
    }
    /// `<root>/teams`.
    pub fn teams_dir(&self) -> PathBuf {
        self.root.join("teams")
    }
    /// `<root>/teams/<team>`.
    pub fn team_dir(&self, team: &TeamName) -> PathBuf {
        self.teams_dir().join(team.as_str())
    }
    /// `<root>/teams/<team>/trash`: workers' files a teardown moved out of the way, deleted
    /// after the command (`ops::resources::empty_trash`).
    pub fn trash_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("trash")
    }
    /// `<root>/teams/<team>/team.json`.
    pub fn team_json(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("team.json")
    }
    /// `<root>/teams/<team>/journal.json`.
    /// `teams/<team>/init.json`: written by `init` before its first pane exists, removed once
    /// `team.json` is stored. Left behind, it says an init was interrupted.
    pub fn init_record(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("init.json")
    }

    pub fn journal(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("journal.json")
    }
    /// `<root>/teams/<team>/events.jsonl`.
    pub fn events(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("events.jsonl")
    }
    /// `<root>/teams/<team>/tasks`.
    pub fn tasks_dir(&self, team: &TeamName) -> PathBuf {
        self.team_dir(team).join("tasks")
    }
    /// `<root>/teams/<team>/workers/<worker>`.
    pub fn worker_dir(&self, team: &TeamName, worker: &WorkerName) -> PathBuf {
        self.team_dir(team).join("workers").join(worker.as_str())
    }
    /// `<root>/teams/<team>/runtime/<worker>.sh`.
    pub fn runtime_script(&self, team: &TeamName, worker: &WorkerName) -> PathBuf {
        self.team_dir(team)
            .join("runtime")
            .join(format!("{worker}.sh"))
    }
    /// `<root>/worktrees/<team>/<worker>`.
    pub fn worktree(&self, team: &TeamName, worker: &WorkerName) -> PathBuf {
        self.root
            .join("worktrees")
            .join(team.as_str())
            .join(worker.as_str())
    }

    /// Checks that `path` (from a state file, so untrusted) lies strictly inside `base`, which
    /// must itself be inside the state root, and that no existing component between the state
    /// root and `path` is a symlink. Returns the normalized path.
    pub fn contained_in(&self, base: &Path, path: &Path) -> Result<PathBuf> {
        self.contained_in_seen(base, path, &mut SeenDirs::default())
    }

    /// [`StateRoot::contained_in`], skipping the directories `seen` already found to be
    /// directories (not symlinks) and adding the ones it finds: checking every worker of a team
    /// stats the components they share (`teams/<team>/workers`, ...) once, not once per worker.
    /// A check is a snapshot either way: every effect walks again without following a symlink
    /// (`fsutil`).
    pub fn contained_in_seen(
        &self,
        base: &Path,
        path: &Path,
        seen: &mut SeenDirs,
    ) -> Result<PathBuf> {
        let unsafe_path = |why: &str| Error::UnsafePath {
            path: path.to_path_buf(),
            why: why.to_string(),
        };
        if path
            .components()
            .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
        {
            return Err(unsafe_path("contains `.` or `..` components"));
        }
        if !path.is_absolute() {
            return Err(unsafe_path("is not absolute"));
        }
        if !base.starts_with(&self.root) {
            return Err(Error::Internal(format!(
                "{} is outside the state root",
                base.display()
            )));
        }
        let rel = path
            .strip_prefix(base)
            .map_err(|_| unsafe_path(&format!("is outside {}", base.display())))?;
        if rel.as_os_str().is_empty() {
            return Err(unsafe_path(&format!("is {} itself", base.display())));
        }
        no_symlinks_below_seen(&self.root, path, seen)?;
        Ok(path.to_path_buf())
    }
}

/// Directories below a state root already found to be directories, not symlinks, by one
/// validation pass ([`StateRoot::contained_in_seen`]).
#[derive(Debug, Default)]
pub struct SeenDirs(std::collections::HashSet<PathBuf>);

/// Refuses a symlink at any existing component of `path` below `root`.
pub fn no_symlinks_below(root: &Path, path: &Path) -> Result<()> {
    no_symlinks_below_seen(root, path, &mut SeenDirs::default())
}

/// [`no_symlinks_below`], skipping (and adding to) the directories in `seen`.
fn no_symlinks_below_seen(root: &Path, path: &Path, seen: &mut SeenDirs) -> Result<()> {
    let rel = path.strip_prefix(root).map_err(|_| Error::UnsafePath {
        path: path.to_path_buf(),
        why: format!("is outside {}", root.display()),
    })?;
    let mut cur = root.to_path_buf();
    let mut components = rel.components().peekable();
    while let Some(c) = components.next() {
        cur.push(c);
        if seen.0.contains(&cur) {
            continue;
        }
        match std::fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(Error::UnsafePath {
                    path: path.to_path_buf(),
                    why: format!("{} is a symlink", cur.display()),
                });
            }
            Ok(m) if m.is_dir() => {
                seen.0.insert(cur.clone());
            }
            // A file where a directory of the path goes (a `workers` that is a regular file):
            // malformed state, not an I/O error.
            Ok(_) if components.peek().is_some() => {
                return Err(Error::UnsafePath {
                    path: path.to_path_buf(),
                    why: format!("{} is not a directory", cur.display()),
                });
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::io("inspect", &cur, e)),
        }
    }
    Ok(())
}

/// Lexically normalizes an absolute path: drops `.`, refuses `..`.
fn normalize(p: &Path) -> Result<PathBuf> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                return Err(Error::UnsafePath {
                    path: p.to_path_buf(),
                    why: "contains `..`".into(),
                });
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    Ok(out)
}

/// Refuses a state root on a network file system, where flock semantics vary.
pub fn check_local_fs(path: &Path) -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        let st = rustix::fs::statfs(path).map_err(|e| Error::io("statfs", path, e.into()))?;
        // Magic numbers from statfs(2).
        let fs = match st.f_type as i64 {
            0x6969 => Some("NFS"),
            0xFF534D42 => Some("CIFS"),
            0xFE534D42 => Some("SMB2"),
            0x517B => Some("SMB"),
            0x65735546 => Some("FUSE"),
            0x01021997 => Some("9P"),
            0x0BD00BD0 => Some("Lustre"),
            0x47504653 => Some("GPFS"),
            _ => None,
        };
        if let Some(fs) = fs {
            return Err(Error::NonLocalFs {
                path: path.to_path_buf(),
                fs: fs.to_string(),
            });
        }
    }
    let _ = path;
    Ok(())
}

/// The private socket of a workspace:
/// `<tmux_tmpdir>/tmux-<uid>/team-<12 hex of SHA-256 of the canonical workspace path>`.
/// `tmux_tmpdir` is `$TMUX_TMPDIR` or `/tmp`, read by the binary.
pub fn private_endpoint(tmux_tmpdir: &Path, workspace: &Path) -> PathBuf {
    tmux_socket_dir(tmux_tmpdir).join(private_socket_name(workspace))
}

/// Whether `endpoint` is named as the private socket [`private_endpoint`] makes for
/// `workspace` (its directory is the socket directory of whoever ran `init`, so only the name
/// is compared).
pub fn is_private_endpoint_of(endpoint: &Path, workspace: &Path) -> bool {
    endpoint.file_name().and_then(|n| n.to_str()) == Some(private_socket_name(workspace).as_str())
}

/// The file name of the private socket [`private_endpoint`] makes for `workspace`. A kill
/// that relies on a server being that one checks it inside tmux (`#{b:socket_path}`, the
/// path the server is bound at): a symlink or a hard link of that name leading to another
/// server reaches a server bound elsewhere.
pub fn private_socket_name(workspace: &Path) -> String {
    use sha2::{Digest, Sha256};
    use std::os::unix::ffi::OsStrExt;
    let h = hex::encode(Sha256::digest(workspace.as_os_str().as_bytes()));
    format!("team-{}", &h[..12])
}

/// The user's tmux socket directory: `<tmux_tmpdir>/tmux-<uid>`.
pub fn tmux_socket_dir(tmux_tmpdir: &Path) -> PathBuf {
    tmux_tmpdir.join(format!("tmux-{}", rustix::process::getuid().as_raw()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn names() {
        for ok in ["a", "demo", "team-1", "x_y", "0", &"a".repeat(40)] {
            TeamName::new(ok).unwrap();
        }
        for bad in [
            "",
            "-a",
            "_a",
            "A",
            "a b",
            "a/b",
            "..",
            "a.b",
            &"a".repeat(41),
            "ü",
        ] {
            assert!(TeamName::new(bad).is_err(), "{bad:?} accepted");
        }
    }

    proptest! {
        #[test]
        fn any_accepted_name_is_a_safe_path_component(s in "\\PC{0,50}") {
            if let Ok(n) = TeamName::new(&s) {
                let p = Path::new(n.as_str());
                prop_assert_eq!(p.components().count(), 1);
                prop_assert!(matches!(p.components().next(), Some(Component::Normal(_))));
                let bad = ['\'', '"', ';', ' ', '#', '$', '{', '}'];
                prop_assert!(!n.as_str().contains(bad));
            }
        }
    }

    #[test]
    fn containment() {
        let d = tempfile::tempdir().unwrap();
        let root = StateRoot::resolve(d.path(), None).unwrap();
        root.ensure().unwrap();
        let base = root.path().join("worktrees/t");
        std::fs::create_dir_all(&base).unwrap();
        assert!(root.contained_in(&base, &base.join("worker-1")).is_ok());
        assert!(root.contained_in(&base, &base.join("../x")).is_err());
        assert!(root.contained_in(&base, Path::new("/etc/passwd")).is_err());
        assert!(root.contained_in(&base, &base).is_err());
        std::os::unix::fs::symlink("/tmp", base.join("link")).unwrap();
        let err = root.contained_in(&base, &base.join("link/x")).unwrap_err();
        assert!(err.to_string().contains("symlink"), "{err}");
    }

    /// One validation pass stats the directories its paths share once (`SeenDirs`), and still
    /// refuses a symlink in what they do not share: the attack is a team whose first worker's
    /// paths are clean and whose second worker's directory is a symlink.
    #[test]
    fn a_shared_check_still_refuses_each_paths_own_symlink() {
        let d = tempfile::tempdir().unwrap();
        let root = StateRoot::resolve(d.path(), None).unwrap();
        root.ensure().unwrap();
        let base = root.path().join("teams/t/workers");
        std::fs::create_dir_all(base.join("worker-1")).unwrap();
        std::os::unix::fs::symlink("/tmp", base.join("worker-2")).unwrap();
        let mut seen = SeenDirs::default();
        root.contained_in_seen(&base, &base.join("worker-1/inbox.md"), &mut seen)
            .unwrap();
        assert!(
            seen.0.contains(&base),
            "the shared directory was not remembered"
        );
        let err = root
            .contained_in_seen(&base, &base.join("worker-2/inbox.md"), &mut seen)
            .unwrap_err();
        assert!(err.to_string().contains("worker-2 is a symlink"), "{err}");
        // A symlink is never remembered as safe, whatever was checked first.
        let err = root
            .contained_in_seen(&base, &base.join("worker-2"), &mut seen)
            .unwrap_err();
        assert!(err.to_string().contains("symlink"), "{err}");
    }
}
