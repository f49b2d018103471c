//! A removed worker's resources: its git worktree (saved before removal, never lost), its
//! branch, its worker directory and its startup script.
//!
//! Paths come from a state file, so they are untrusted: [`validate`] checks each one is inside
//! the team's own directories without symlinked parents, and the removal functions check again
//! right before acting.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::model::{Resources, Team, Worker, WorktreeRecord};
use crate::paths::StateRoot;

/// Checks every resource path of `w` (hostile state is refused whole, before any effect).
pub fn validate(root: &StateRoot, team: &Team, w: &Worker) -> Result<()> {
    let r = &w.resources;
    let team_dir = root.team_dir(&team.name);
    if let Some(d) = &r.worker_dir {
        root.contained_in(&team_dir.join("workers"), d)?;
    }
    if let Some(s) = &r.script {
        root.contained_in(&team_dir.join("runtime"), s)?;
    }
    if let Some(wt) = &r.worktree {
        root.contained_in(
            &root.path().join("worktrees").join(team.name.as_str()),
            &wt.path,
        )?;
        if let Some(b) = &wt.branch
            && !valid_branch(b)
        {
            return Err(Error::MalformedState {
                path: root.team_json(&team.name),
                msg: format!("worker {}: branch {b:?} is not a plain branch name", w.name),
            });
        }
    }
    Ok(())
}

fn valid_branch(b: &str) -> bool {
    !b.is_empty()
        && !b.starts_with('-')
        && !b.contains("..")
        && b.split('/').all(|c| !c.is_empty() && !c.starts_with('.'))
        && b.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"/_-.".contains(&c))
}

/// What happened to one worker's resources.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceReport {
    /// The branch the worktree's state was saved on, when it held anything unsaved.
    pub saved_branch: Option<String>,
    pub worktree_removed: bool,
    pub branch_deleted: Option<String>,
    /// A branch the tools made but kept, because no other branch reaches its commits.
    pub kept_branch: Option<String>,
    /// Why something was kept (the record then stays `removing`).
    pub blocked: Vec<String>,
}

use crate::git::{run as git, run_ok as git_ok};

const IDENT: [(&str, &str); 4] = [
    ("GIT_AUTHOR_NAME", "team-scale"),
    ("GIT_AUTHOR_EMAIL", "team-scale@localhost"),
    ("GIT_COMMITTER_NAME", "team-scale"),
    ("GIT_COMMITTER_EMAIL", "team-scale@localhost"),
];

/// Whether `commit`'s history is reachable from a branch other than `own`.
fn reachable_elsewhere(dir: &Path, commit: &str, own: Option<&str>) -> Result<bool> {
    let refs = git_ok(
        dir,
        &["for-each-ref", "--format=%(refname)", "refs/heads/"],
        &[],
    )?;
    let mut args: Vec<String> = vec![
        "rev-list".into(),
        "--count".into(),
        commit.into(),
        "--not".into(),
    ];
    let own_ref = own.map(|b| format!("refs/heads/{b}"));
    let mut others = 0;
    for r in refs.lines() {
        if Some(r) != own_ref.as_deref() {
            args.push(r.to_string());
            others += 1;
        }
    }
    if others == 0 {
        return Ok(false);
    }
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    Ok(git_ok(dir, &argv, &[])? == "0")
}

fn stamp() -> String {
    crate::fsutil::now_rfc3339()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect()
}

/// Saves the full state of the worktree at `wt` (uncommitted edits, untracked files, commits no
/// other branch reaches) on `team/<team>/saved/<worker>-<time>`. `None` when nothing was unsaved.
pub fn save_worktree(wt: &WorktreeRecord, team: &str, worker: &str) -> Result<Option<String>> {
    let dir = &wt.path;
    let status = git_ok(
        dir,
        &["status", "--porcelain", "--untracked-files=all"],
        &[],
    )?;
    let head = git_ok(dir, &["rev-parse", "--verify", "-q", "HEAD"], &[]).ok();
    let dirty = !status.is_empty();
    let unreachable = match &head {
        Some(h) => !reachable_elsewhere(dir, h, wt.branch.as_deref())?,
        None => false,
    };
    if !dirty && !unreachable {
        return Ok(None);
    }
    let commit = if dirty {
        // A private index, so the worktree's own index and files stay as they are.
        let tmp = tempfile_path(dir)?;
        let idx = tmp.to_string_lossy().to_string();
        let env: Vec<(&str, &str)> = IDENT
            .iter()
            .copied()
            .chain([("GIT_INDEX_FILE", idx.as_str())])
            .collect();
        let r = (|| {
            if let Some(h) = &head {
                git_ok(dir, &["read-tree", h], &env)?;
            }
            git_ok(dir, &["add", "-A", "--", "."], &env)?;
            let tree = git_ok(dir, &["write-tree"], &env)?;
            let msg = format!("team-scale: saved state of {worker} (team {team}) before removal");
            let mut args = vec!["commit-tree", tree.as_str(), "-m", msg.as_str()];
            if let Some(h) = &head {
                args.extend(["-p", h.as_str()]);
            }
            git_ok(dir, &args, &env)
        })();
        let _ = std::fs::remove_file(&tmp);
        r?
    } else {
        head.clone().unwrap_or_default()
    };
    let branch = format!("team/{team}/saved/{worker}-{}", stamp());
    git_ok(
        dir,
        &["update-ref", &format!("refs/heads/{branch}"), &commit, ""],
        &[],
    )?;
    Ok(Some(branch))
}

fn tempfile_path(dir: &Path) -> Result<PathBuf> {
    let gitdir = git_ok(dir, &["rev-parse", "--absolute-git-dir"], &[])?;
    Ok(PathBuf::from(gitdir).join(format!("team-save-{}.index", uuid::Uuid::new_v4().simple())))
}

/// Removes a worker's resources: worktree (after saving it), branch (only if the tools made it
/// and its commits are reachable elsewhere), worker directory, startup script.
pub fn remove(
    root: &StateRoot,
    team: &Team,
    w: &Worker,
    fail: &dyn Fn(&str) -> Result<()>,
) -> Result<ResourceReport> {
    validate(root, team, w)?;
    let mut rep = ResourceReport::default();
    let Resources {
        worker_dir,
        script,
        worktree,
    } = &w.resources;
    if let Some(wt) = worktree {
        remove_worktree(team, w, wt, &mut rep)?;
    }
    fail("down.resources")?;
    if !rep.blocked.is_empty() {
        return Ok(rep);
    }
    for p in worker_dir.iter().chain(script.iter()) {
        // Checked again right before acting.
        validate(root, team, w)?;
        match std::fs::symlink_metadata(p) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("inspect", p, e)),
            Ok(m) if m.is_dir() => {
                std::fs::remove_dir_all(p).map_err(|e| Error::io("remove", p, e))?
            }
            // The directory is fsynced once for all workers by the caller, before the records
            // are dropped ([`sync_parents`]).
            Ok(_) => std::fs::remove_file(p).map_err(|e| Error::io("remove", p, e))?,
        }
    }
    Ok(rep)
}

/// Makes the removals of [`remove`] durable: one fsync per distinct parent directory of the
/// workers' dirs and scripts.
pub fn sync_parents<'a>(workers: impl IntoIterator<Item = &'a Worker>) -> Result<()> {
    let mut dirs: Vec<&std::path::Path> = workers
        .into_iter()
        .flat_map(|w| {
            w.resources
                .worker_dir
                .iter()
                .chain(w.resources.script.iter())
        })
        .filter_map(|p| p.parent())
        .collect();
    dirs.sort();
    dirs.dedup();
    for d in dirs {
        if d.exists() {
            crate::fsutil::sync_dir(d)?;
        }
    }
    Ok(())
}

fn remove_worktree(
    team: &Team,
    w: &Worker,
    wt: &WorktreeRecord,
    rep: &mut ResourceReport,
) -> Result<()> {
    let repo = &team.workspace;
    if wt.path.exists() {
        match save_worktree(wt, team.name.as_str(), w.name.as_str()) {
            Ok(b) => rep.saved_branch = b,
            Err(e) => {
                rep.blocked.push(format!(
                    "worktree {} kept: could not save its state: {e}",
                    wt.path.display()
                ));
                return Ok(());
            }
        }
        // Saved (or nothing unsaved): the worktree's content is all in git now, so removing
        // it loses nothing. `--force` only because untracked files were saved on the branch.
        let p = wt.path.to_string_lossy().to_string();
        let mut args = vec!["worktree", "remove"];
        if rep.saved_branch.is_some() {
            args.push("--force");
        }
        args.push(&p);
        if let Err(e) = git_ok(repo, &args, &[]) {
            rep.blocked
                .push(format!("worktree {} kept: {e}", wt.path.display()));
            return Ok(());
        }
    }
    let _ = git(repo, &["worktree", "prune"], &[]);
    rep.worktree_removed = true;
    if let Some(b) = &wt.branch
        && wt.branch_created
    {
        let r = format!("refs/heads/{b}");
        if let Ok(tip) = git_ok(repo, &["rev-parse", "--verify", "-q", &r], &[]) {
            if reachable_elsewhere(repo, &tip, Some(b))? {
                git_ok(repo, &["update-ref", "-d", &r, &tip], &[])?;
                rep.branch_deleted = Some(b.clone());
            } else {
                rep.kept_branch = Some(b.clone());
            }
        }
    }
    Ok(())
}
