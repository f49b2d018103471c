//! A removed worker's resources: its git worktree (saved before removal, never lost), its
//! branch, its worker directory and its startup script.
//!
//! Paths come from a state file, so they are untrusted: [`validate`] checks each one is exactly
//! the one derived from the worker's name, inside the team's own directories without symlinked
//! parents, and the removal acts relative to directories reached without following a symlink.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **More that git cannot save keeps a worktree**: staged content that differs from both HEAD
//!   and the file on disk (`git status` `XY` both set; the save commits the file), and refs that
//!   live in the worktree only (`refs/worktree/*`, `refs/bisect/*`, `refs/rewritten/*`).
//!
//! - **Worktrees are saved with a private index**: `GIT_INDEX_FILE` in a temp file (in the
//!   worktree's administrative directory), `read-tree HEAD`, `add -A`, `write-tree`,
//!   `commit-tree -p HEAD`, `update-ref team/<team>/saved/<worker>-<time>`; only then `git
//!   worktree remove`.
//!
//! - **A worker's worktree chooses nothing git runs** (twelfth black-box round). Every git
//!   call has `core.fsmonitor=false` and `submodule.recurse=false` on its command line
//!   (`crate::git`); the worktree is reached through [`crate::git::Worktree`], the
//!   repository's own record, never its `.git` file; `status` never enters a submodule
//!   (`--ignore-submodules=all`), and a gitlink whose directory holds anything keeps the
//!   worktree ([`Unsavable::submodules`]): its commits may live only in that repository, and
//!   telling would mean running git in it. The attacks: a staged nested repository whose
//!   config sets `core.fsmonitor` (run by `down` as the user), a `.git` file pointed at a
//!   repository of the worker's own, and a clean staged gitlink to commits made inside the
//!   worktree (lost with it while `down` reported it saved). *Rejected*: turning hooks off
//!   too: they live in the common directory, which the worktree does not reach, and `git
//!   worktree add` needs the user's `post-checkout` (Git LFS).
//!
//! - **The thirteenth round, against those fixes.** A worktree's own config
//!   (`config.worktree`, read when `extensions.worktreeConfig` is on, as `git
//!   sparse-checkout` sets it) may set only the sparse keys
//!   ([`crate::git::Worktree::foreign_config`]), else the worktree is kept: a
//!   `filter.<x>.clean` there ran four times under `down`. The save runs with
//!   `core.sparseCheckout=false`, since a sparse `add -A` skipped an edit outside the
//!   patterns while `down` reported it saved. Every entry named `.git` below the top keeps the
//!   worktree ([`Unsavable::git_entries`]): git skips any path through one, and files in a
//!   `notes/.git/` went unsaved. A worktree a live process works in (cwd, root or an open
//!   file, from `/proc`) is kept, checked before the save and again before the removal: a
//!   daemon the teardown leaves running (`shared`) wrote files after the save that went with
//!   the worktree. And no `git worktree prune`: it dropped the user's own worktree whose
//!   directory was away; only the worker's record goes.
//!
//! - **The fourteenth round.** The save stores the files' bytes (`GIT_ATTR_SOURCE` = the
//!   empty tree, `core.autocrlf=false`, no global attributes file; before git 2.40 a
//!   worktree with `.gitattributes` is kept instead): `ident` and `text` had changed what was
//!   saved while the originals went. A staged file whose copy on disk is gone (`AD`) keeps
//!   the worktree, as one changed on disk (`MM`) did. An unfinished rebase, merge,
//!   cherry-pick, revert or bisect keeps it ([`Unsavable::history`]); commits that only the
//!   worktree's `HEAD` reflog or `ORIG_HEAD` reaches (read as data, bounded, no FIFO waited
//!   on) are saved, their independent tips as further parents of the saved commit
//!   ([`orphan_tips`]; a history it cannot tell keeps the worktree): they live in its
//!   administrative directory, which goes with it, and an amend or a reset is too common to
//!   keep every such worktree. The in-use
//!   check reads `/proc/<pid>/maps` too (a file mapped with no descriptor open), and a file
//!   system mounted in the worktree (`/proc/self/mountinfo`) keeps it: `git worktree remove
//!   --force` deleted through a bind mount.
//!
//! - **The worktree is held open; it goes by rename, not by path** (fifteenth round). A
//!   process outside the worker (another worker of the team) swapped the worktree's entry
//!   while `down` ran: a clean decoy during the save, the real one back for `git worktree
//!   remove` (work lost while reported saved), or a symlink to a victim just before it (git
//!   emptied the victim, outside `.team`). Now the worktree is opened with no symlink on its
//!   way and held; git starts in that very directory (`/proc/<pid>/fd/<n>`,
//!   `GIT_WORK_TREE=.`: resolved once as each git starts, a window of microseconds); and the
//!   removal renames the entry into the trash only while it is that directory (device and
//!   inode, checked again after the move and put back if not), where it is deleted following
//!   no symlink, then removes the repository's record (`.git/worktrees/<id>`, which
//!   `remove_dir_all` does not follow either) and checks a `locked` worktree first. *Rejected*:
//!   `git worktree remove`, which acts by path. The sixteenth round showed git re-resolving
//!   `.` to a path (`getcwd`, then `chdir` by name), so a decoy swapped in during a git step
//!   still fooled the save; hence the last gate, [`differs_from_saved`]: everything the held
//!   directory holds, read through its descriptor and hashed as git stores it, must be in the
//!   saved commit's tree (HEAD's when nothing was saved; a worktree clean to git but not byte
//!   for byte, line endings say, is saved by force first), or the worktree is kept. The
//!   seventeenth round: a `.git` directory at the top (`rm .git; git init`, commits there)
//!   was skipped by the gate and deleted with its history (now it keeps the worktree), and a
//!   file renamed within its directory across the position of a listing under way was seen
//!   by neither git's scan nor the gate's (now a directory or file whose size, mtime or
//!   ctime changes while the gate reads it keeps the worktree).
//!
//! - **The thirtieth round: what no commit holds and no deletion may take.** A socket, FIFO
//!   or device node in the worktree keeps it ([`Unsavable::special_files`], and the last gate,
//!   [`differs_from_saved`], names one too): git saves none, and a live tmux server's socket
//!   went with the worktree (the server ran on, unreachable). And a process is judged to work
//!   in the worktree by identity, not only by path ([`in_use`]): one in another mount
//!   namespace, with the worktree bind-mounted elsewhere and its current directory there, shows
//!   another path in `/proc`, and `down` removed the worktree under it. Its current directory,
//!   root and directories held open are walked up through `..` from their `/proc` links (only
//!   when on the worktree's device; each directory passed is remembered), and its other open
//!   and mapped files are looked up among the device and inode numbers the worktree holds.
//!   *Rejected*: walking up from every file's directory (a file has no `..`; its path is the
//!   other namespace's) and reading `/proc/<pid>/map_files` (root only). Left: a mapped file
//!   on btrfs, whose maps name the file system's device, not the subvolume's, is known by path
//!   only.
//!
//! - **The forty-first round: what only a worktree's record holds.** A worktree's index,
//!   `HEAD`, `HEAD` reflog and `ORIG_HEAD` live in the repository's record of it
//!   (`.git/worktrees/<id>`), not in its directory, and go with that record. Unmerged index
//!   entries (any stage above 0) keep the worktree ([`Unsavable::unmerged`]): after a `git
//!   checkout -m` that cannot merge a binary file, the worker's own version is only a stage-3
//!   blob, and the save commits the file on disk. *Rejected*: saving every stage's blob (in a
//!   tree of its own, say): nothing would bring a conflict back as the worker left it.
//!   In a repository whose refs are not stored as files (reftable, `git init
//!   --ref-format=reftable`, git 2.45 and later; [`crate::git::Worktree::ref_format`]) the
//!   worktree's `HEAD` reflog, `ORIG_HEAD` and `CHERRY_PICK_HEAD` (`REVERT_HEAD`, `REBASE_HEAD`,
//!   ...) are kept in that storage: reading `logs/HEAD` and `ORIG_HEAD` as files found nothing,
//!   and `down` removed worktrees whose reset-away commits only they reached. There they are
//!   read through git (`git log -g HEAD`, `git rev-parse --verify ORIG_HEAD`, `git
//!   for-each-ref --include-root-refs`), run as every other git call on the worktree, and
//!   what git cannot read keeps the worktree. The files backend still reads them as data (each
//!   reflog entry's old commit too, and no FIFO there is waited on, as git would).
//!   And a worktree whose directory is away (moved with `mv`, deleted, or moved during
//!   `--grace`) had its record deleted outright, with the commits only that record's `HEAD`,
//!   `HEAD` reflog or `ORIG_HEAD` reached (`down`, `reconcile` and `shutdown` alike). Now
//!   [`away_record`] reads the record alone through git ([`crate::git::Worktree::run_record`]:
//!   `GIT_DIR` the record, `core.bare=true`) and the record goes only when it holds nothing
//!   of its own: no commit only it reaches (its `HEAD` counts), no unmerged entry and no
//!   staged content that is neither `HEAD`'s nor a save's of this worker, no ref of its own,
//!   no unfinished operation, no lock, no config of its own beyond the sparse keys and no file
//!   git keeps there beyond the usual ones; what cannot be read counts as held. Else the
//!   record is kept and the worktree reported kept (`worktree_kept`,
//!   [`Unsavable::away_record`]), the worker stays `removing` (exit 3), and the reason says
//!   how to finish: put the directory back (a `reconcile` then saves and removes it as any
//!   other), `git worktree repair` it where it is now (it is the user's from then on), or
//!   `git worktree remove` it. *Why keep rather than save*: the record is what a moved
//!   directory's `.git` file names (deleting it breaks that checkout), and its index and an
//!   unfinished operation have no place in a saved commit; git itself keeps such a record
//!   for three months (`gc.worktreePruneExpire`).
//!
//! - **Only the worker's own branch is ever deleted, after its intent.** [`validate`] refuses
//!   (exit 65, before any effect) a record whose branch the tools made (`branch_created`) but
//!   that is not `<prefix>/<worker>` of the team's branch mode; a branch checked out in any
//!   worktree is kept; and the teardown deletes the branch (`update-ref -d` at the tip it
//!   checked) only after a durable `delete-branch` intent naming it and its commit. The
//!   attack: `team.json` edited to name `master` as the worker's branch had `down` delete
//!   it, with no audit record.
//!
//! - **A worktree holding what git cannot save keeps its worker record.** `docs/design.md` section 6 drops
//!   a record "once everything of it is gone", and a kept worktree is not gone: the worker stays
//!   `removing` with the reason `worktree_kept: <path> holds what git cannot save (...)`, so
//!   `status` names the path, `down`/`shutdown` exit 3, and `reconcile` finishes the removal once
//!   the user has moved the files out. What git can save is still saved first; a retry that finds
//!   the same state (same tree on the same parent) reuses its `team/<team>/saved/...` branch
//!   instead of making another.
//!
//! - **Index flags do not hide a worker's edits.** `git status` trusts `assume-unchanged` and
//!   `skip-worktree`, so `save_worktree` also reads `git ls-files -v` (lower-case tag:
//!   assume-unchanged; `S`/`s`: skip-worktree): a flagged file present in the worktree (or an
//!   assume-unchanged one deleted) makes the worktree dirty, and the private index (fresh from
//!   `read-tree HEAD`, so flag-free) saves its content; skip-worktree files absent from the
//!   worktree (a sparse checkout) are flagged on the private index too, so they are not saved as
//!   deletions. If the flagged files hold exactly HEAD's content, nothing is saved.
//!
//! - **Empty directories keep their worktree** (`Unsavable::empty_dirs`, named like ignored
//!   files): git records none. They are found by a walk that follows no symlink and skips every
//!   `.git`, bounded to 200,000 entries; a larger worktree is kept as "cannot tell what it holds".
//!
//! - **A worker's files are removed only as the tools made them.** `up` refuses (exit 65, before
//!   any effect) a symlinked or non-directory `runtime/` or `workers/`, anything already where a
//!   new worker's directory goes, and anything but a regular file where its startup script goes
//!   (a stale script file is replaced whole): a rollback removes what the records name, so they
//!   name only what this operation makes. `resources::remove` works through `workers/` and
//!   `runtime/` held open (reached without following a symlink, `fsutil::StateDir`), and only
//!   on the paths derived from the worker's own name; a directory where the script goes is an
//!   error, never removed.
//!
//! - **Removed files go to the trash, deleted after the command** (issue 15). A teardown moves a
//!   worker's directory and startup script into `teams/<team>/trash/` (a `rename` to a name
//!   unique to the move, never replacing anything; a symlink is moved itself, never followed),
//!   makes the moves durable with one fsync of `workers/` and one of `runtime/`, and only then
//!   drops the record: nothing of a removed worker is left where it was, as before. The trash
//!   is emptied by `team-scale empty-trash` ([`empty_trash`]), which the command that filled it
//!   starts detached when it ends, in `SCHED_IDLE` (the reaper, which settles debt through the
//!   same teardown from cron, empties it itself); relative to directory fds, a symlink in the
//!   trash is unlinked, never followed. A trash left by a crash is emptied the next time; an
//!   entry that cannot be deleted (nested too deep, immutable) keeps only itself, and `status`
//!   names the trash when something has stayed there for over a minute ([`trash_left`]). A symlinked or
//!   non-directory `trash/` is refused with the rest of the team's paths, before any effect
//!   (exit 65), and `empty-trash` refuses a root that holds no such team (exit 66), whatever
//!   its trash holds. *Why*: on a file system that discards freed blocks synchronously
//!   (this machine's ext4, mounted `discard` without a journal), deleting a file that holds data
//!   waits for the disk (about 0.13 ms, against 0.01 ms for an empty one), and `down 63`
//!   spent 20-25 ms there, after its kills and before its answer. A late `exit.json` from the
//!   worker's supervisor finds the directory gone and is not written (its walk creates
//!   nothing), so the retries the in-place removal needed for it are gone too.
//!   *Rejected*: deleting on threads (8 threads halved it at best: the unlinks share the
//!   directory's lock); deleting in the command after its answer (the caller still waits for
//!   its exit).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::fsutil::{self, StateDir};
use crate::model::{Resources, Team, Worker, WorktreeRecord};
use crate::paths::{SeenDirs, StateRoot};

/// Checks every resource path of `w` (hostile state is refused whole, before any effect).
/// `seen` carries the directories found safe from one worker to the next of the same pass (see
/// [`StateRoot::contained_in_seen`]).
pub fn validate(root: &StateRoot, team: &Team, w: &Worker, seen: &mut SeenDirs) -> Result<()> {
    validate_paths(root, team, w, seen).map_err(|e| match e {
        // Every worker's files are checked before any change, so say whose this one is.
        Error::UnsafePath { path, why } => Error::UnsafePath {
            path,
            why: format!("{why} (a file of {})", w.name),
        },
        e => e,
    })
}

/// [`validate`], without naming the worker in a refusal.
fn validate_paths(root: &StateRoot, team: &Team, w: &Worker, seen: &mut SeenDirs) -> Result<()> {
    let r = &w.resources;
    let team_dir = root.team_dir(&team.name);
    // Each path is the one `up` derives from the worker's own name, and no other: an edited
    // record pointing worker-3's directory at worker-2's would have a cleanup remove a live
    // worker's files.
    let own = |what: &str, recorded: &std::path::Path, expected: std::path::PathBuf| {
        if recorded == expected {
            Ok(())
        } else {
            Err(Error::MalformedState {
                path: root.team_json(&team.name),
                msg: format!(
                    "worker {}: its {what} is recorded as {}, not its own {}",
                    w.name,
                    recorded.display(),
                    expected.display()
                ),
            })
        }
    };
    if let Some(d) = &r.worker_dir {
        root.contained_in_seen(&team_dir.join("workers"), d, seen)?;
        own("directory", d, root.worker_dir(&team.name, &w.name))?;
    }
    if let Some(s) = &r.script {
        root.contained_in_seen(&team_dir.join("runtime"), s, seen)?;
        own(
            "startup script",
            s,
            root.runtime_script(&team.name, &w.name),
        )?;
        // The tools only ever make a file there: a directory is not theirs to move away (found
        // before any effect, not after the kill).
        if std::fs::symlink_metadata(s).is_ok_and(|m| m.is_dir()) {
            return Err(Error::UnsafePath {
                path: s.clone(),
                why: "is a directory where the tools make a startup script; move it away".into(),
            });
        }
    }
    if let Some(wt) = &r.worktree {
        root.contained_in_seen(
            &root.path().join("worktrees").join(team.name.as_str()),
            &wt.path,
            seen,
        )?;
        own("worktree", &wt.path, root.worktree(&team.name, &w.name))?;
        if let Some(b) = &wt.branch
            && !valid_branch(b)
        {
            return Err(Error::MalformedState {
                path: root.team_json(&team.name),
                msg: format!("worker {}: branch {b:?} is not a plain branch name", w.name),
            });
        }
        // A branch the tools would delete is the one `up` makes for this worker in the team's
        // branch mode (`<prefix>/<worker>`), and no other: an edited record naming the user's
        // own branch would have a cleanup delete it.
        if wt.branch_created {
            let own = match &team.settings.worktree {
                crate::model::WorktreeMode::Branch(p) => Some(format!("{p}/{}", w.name)),
                _ => None,
            };
            if own.is_none() || wt.branch != own {
                return Err(Error::MalformedState {
                    path: root.team_json(&team.name),
                    msg: format!(
                        "worker {}: its branch is recorded as {:?}, made by the tools, but the team's own would be {}",
                        w.name,
                        wt.branch.as_deref().unwrap_or(""),
                        own.as_deref()
                            .map_or("none (the team makes no branches)".into(), |o| format!(
                                "{o:?}"
                            ))
                    ),
                });
            }
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
    /// The branch the tools made for the worker, and its tip, to delete once its audit
    /// intent is durable (the teardown does it, then sets `branch_deleted`).
    pub branch_to_delete: Option<(String, String)>,
    /// A branch the tools made but kept: no other branch reaches its commits, a worktree has
    /// it checked out, or its deletion failed.
    pub kept_branch: Option<String>,
    /// Why [`ResourceReport::kept_branch`] was kept.
    pub kept_branch_why: Option<String>,
    /// Why something was kept (the record then stays `removing`).
    pub blocked: Vec<String>,
    /// A worktree kept because it holds what git cannot save (see [`Unsavable`]).
    pub kept_worktree: Option<PathBuf>,
    /// What that worktree holds that git cannot save.
    pub unsavable: Unsavable,
}

/// What a worktree holds that a commit cannot save, so removing the worktree would lose it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unsavable {
    /// Ignored files and directories (`.env`, build and scratch dirs): `git add -A` skips them.
    pub ignored: Vec<String>,
    /// Directories with a repository of their own: a commit records at most their HEAD.
    pub nested_repos: Vec<String>,
    /// Submodules checked out in the worktree (a gitlink whose directory holds a repository
    /// or any file): their content and commits live in their own repository, which goes with
    /// the worktree. The tools do not look inside one (its config can name commands git would
    /// run), so every one keeps the worktree, committed or not.
    pub submodules: Vec<String>,
    /// Empty directories: git records no directory without a file in it.
    pub empty_dirs: Vec<String>,
    /// Entries named `.git` below the worktree's root that are no repository already named
    /// above (a `notes/.git/` of files, a `.git` file): git never saves a path through one.
    pub git_entries: Vec<String>,
    /// Files whose staged content differs from both HEAD and the file on disk: the save
    /// commits the file on disk, so the staged version would be lost.
    pub staged_differs: Vec<String>,
    /// Paths with unmerged index entries (stages 1 to 3: a conflict, or a `git checkout -m`
    /// that could not merge): a stage can hold the only copy of an edit (the worker's own
    /// version of a binary file), and the save commits the file on disk alone.
    pub unmerged: Vec<String>,
    /// Refs that live only in this worktree (`refs/worktree/*`, `refs/bisect/*`,
    /// `refs/rewritten/*`): removing
    /// the worktree drops them and the commits only they hold.
    pub worktree_refs: Vec<String>,
    /// What only this worktree's own history holds that a save cannot carry: an unfinished
    /// rebase, merge, cherry-pick, revert or bisect, or a `HEAD` reflog it cannot read or
    /// check (the commits only that reflog reaches are saved, [`orphan_tips`]).
    pub history: Vec<String>,
    /// `.gitattributes` files, when this git (older than 2.40) cannot save without applying
    /// them: `ident`, `text` or `eol` would change the bytes saved.
    pub attributes: Vec<String>,
    /// Sockets, FIFOs and device nodes: git records none, and the socket of a live server (a
    /// tmux server of yours) or a FIFO a program waits on is gone with its directory.
    pub special_files: Vec<String>,
    /// For a worktree whose directory is away (moved or deleted): what the repository's
    /// record of it (`.git/worktrees/<id>`) holds that would be lost with it (commits only
    /// its `HEAD`, reflog or `ORIG_HEAD` reach, staged changes, refs of its own...), so the
    /// record is kept ([`away_record`]).
    pub away_record: Vec<String>,
}

impl Unsavable {
    /// Whether the worktree holds nothing git cannot save.
    pub fn is_empty(&self) -> bool {
        self.ignored.is_empty()
            && self.nested_repos.is_empty()
            && self.submodules.is_empty()
            && self.empty_dirs.is_empty()
            && self.git_entries.is_empty()
            && self.staged_differs.is_empty()
            && self.unmerged.is_empty()
            && self.worktree_refs.is_empty()
            && self.history.is_empty()
            && self.attributes.is_empty()
            && self.special_files.is_empty()
            && self.away_record.is_empty()
    }

    /// A short description naming the first few paths of each kind.
    pub fn describe(&self) -> String {
        let list = |v: &[String]| {
            let mut s = v.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
            if v.len() > 5 {
                s.push_str(&format!(" and {} more", v.len() - 5));
            }
            s
        };
        let mut parts = Vec::new();
        if !self.ignored.is_empty() {
            parts.push(format!("ignored: {}", list(&self.ignored)));
        }
        if !self.nested_repos.is_empty() {
            parts.push(format!("nested repositories: {}", list(&self.nested_repos)));
        }
        if !self.submodules.is_empty() {
            parts.push(format!(
                "submodules checked out: {}",
                list(&self.submodules)
            ));
        }
        if !self.empty_dirs.is_empty() {
            parts.push(format!("empty directories: {}", list(&self.empty_dirs)));
        }
        if !self.git_entries.is_empty() {
            parts.push(format!(
                "entries named .git, which git never saves: {}",
                list(&self.git_entries)
            ));
        }
        if !self.staged_differs.is_empty() {
            parts.push(format!(
                "staged changes that differ from the files: {}",
                list(&self.staged_differs)
            ));
        }
        if !self.unmerged.is_empty() {
            parts.push(format!(
                "unmerged index entries, whose stages a save cannot carry: {}",
                list(&self.unmerged)
            ));
        }
        if !self.worktree_refs.is_empty() {
            parts.push(format!(
                "refs of this worktree only: {}",
                list(&self.worktree_refs)
            ));
        }
        if !self.history.is_empty() {
            parts.push(format!(
                "history of this worktree only: {}",
                list(&self.history)
            ));
        }
        if !self.attributes.is_empty() {
            parts.push(format!(
                ".gitattributes this git (before 2.40) would apply to the save: {}",
                list(&self.attributes)
            ));
        }
        if !self.special_files.is_empty() {
            parts.push(format!(
                "sockets, FIFOs or device nodes, which git never saves: {}",
                list(&self.special_files)
            ));
        }
        if !self.away_record.is_empty() {
            parts.push(format!(
                "its directory is away, and the repository's record of it holds {}",
                self.away_record.join("; ")
            ));
        }
        parts.join("; ")
    }
}

/// Finds what git cannot save in the worktree `g`: one `git status --porcelain=v2 -z
/// --ignored=matching --untracked-files=all --ignore-submodules=all` (ignored directories are
/// listed once, nested repositories appear as untracked directories), the checked-out
/// submodules from the index (`git ls-files -s`, never entered), and a bounded walk for empty
/// directories, which git does not see at all.
pub fn unsavable(g: &Worktree) -> Result<Unsavable> {
    let o = g.run(
        &[
            "status",
            "--porcelain=v2",
            "-z",
            "--ignored=matching",
            "--untracked-files=all",
            "--ignore-submodules=all",
        ],
        &[],
    )?;
    if !o.status.success() {
        return Err(Error::Refused(format!(
            "git status in {} failed: {}",
            g.path.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        )));
    }
    let mut u = parse_status_v2(&o.stdout);
    let staged = g.run(&["ls-files", "-s", "-z"], &[])?;
    if !staged.status.success() {
        return Err(Error::Refused(format!(
            "git ls-files in {} failed: {}",
            g.path.display(),
            String::from_utf8_lossy(&staged.stderr).trim()
        )));
    }
    u.unmerged = unmerged(&staged.stdout);
    u.submodules = gitlinks(&staged.stdout)
        .into_iter()
        .filter(|p| holds_anything(&g.path.join(p)))
        .map(|p| format!("{p}/"))
        .collect();
    let Walked {
        empty_dirs,
        git_entries: gits,
        attributes,
        special_files,
    } = walk(&g.path, WALK_LIMIT)?;
    u.empty_dirs = empty_dirs;
    u.special_files = special_files;
    if !crate::git::at_least(2, 40) {
        u.attributes = attributes;
    }
    u.history = history_only(g, Via::Dir)?;
    // A `.git` of a repository already named (nested, or a submodule) is not named twice.
    u.git_entries = gits
        .into_iter()
        .filter(|e| {
            let parent = e.trim_end_matches('/').trim_end_matches(".git");
            !u.nested_repos
                .iter()
                .chain(&u.submodules)
                .any(|r| r == parent)
        })
        .collect();
    u.worktree_refs = worktree_refs(g, Via::Dir)?;
    Ok(u)
}

/// The refs of the worktree `g`'s own (see [`Unsavable::worktree_refs`]).
fn worktree_refs(g: &Worktree, via: Via) -> Result<Vec<String>> {
    let refs = via.run_ok(
        g,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/worktree/",
            "refs/bisect/",
            // Where an interrupted `rebase --rebase-merges` keeps its labels; also per
            // worktree (gitrepository-layout), so a commit only it holds goes with the record.
            "refs/rewritten/",
        ],
    )?;
    Ok(refs
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect())
}

/// What git keeps in a worktree's record (`.git/worktrees/<id>`) that [`away_record`] reads
/// through git or knows to hold nothing of the worker's: anything else there keeps a record
/// whose directory is away. `team-save-*.index` are the save's own temporary indexes.
const RECORD_ENTRIES: [&str; 11] = [
    "gitdir",
    "commondir",
    "HEAD",
    "ORIG_HEAD",
    "index",
    "logs",
    "refs",
    "reftable",
    "COMMIT_EDITMSG",
    "config.worktree",
    "info",
];

/// What the repository's record of the worktree `g` (`.git/worktrees/<id>`) holds that would
/// be lost with it, when the worktree's directory is away (moved or deleted): empty when the
/// record holds nothing of its own and may go. Its `HEAD`, `HEAD` reflog and `ORIG_HEAD`
/// (commits no branch or tag reaches), its index (unmerged entries, or staged content that
/// is neither `HEAD`'s nor a save's of this worker, `team/<team>/saved/<worker>-*`), refs of
/// its own, an unfinished operation, a lock, a config of its own that git is not run under,
/// and any other file there. Read as every git call reads a record alone
/// ([`Worktree::run_record`]); what cannot be read is named too.
fn away_record(g: &Worktree, repo: &Path, team: &str, worker: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    if std::fs::symlink_metadata(g.admin.join("locked")).is_ok() {
        out.push("a lock (`git worktree lock`, which git's own pruning honours)".to_string());
    }
    let foreign = g.foreign_config()?;
    if !foreign.is_empty() {
        // Git is not run under it.
        out.push(format!(
            "its own git config (config.worktree) sets {}",
            foreign.join(", ")
        ));
        return Ok(out);
    }
    let mut other = Vec::new();
    for e in std::fs::read_dir(&g.admin).map_err(|e| Error::io("read", &g.admin, e))? {
        let e = e.map_err(|e| Error::io("read", &g.admin, e))?;
        let name = e.file_name().to_string_lossy().into_owned();
        let kind = e
            .file_type()
            .map_err(|err| Error::io("inspect", e.path(), err))?;
        let known = RECORD_ENTRIES.contains(&name.as_str())
            || (name.starts_with("team-save-") && name.ends_with(".index"));
        let dir = matches!(name.as_str(), "logs" | "refs" | "reftable" | "info");
        if name == "locked" {
            continue;
        }
        if !known {
            other.push(name);
        } else if (dir && !kind.is_dir()) || (!dir && !kind.is_file()) {
            // A FIFO git would wait on, a symlink it would follow.
            other.push(format!(
                "{name} (not a plain {})",
                if dir { "directory" } else { "file" }
            ));
        }
    }
    // An unfinished operation's files are named as such below.
    other.retain(|n| !UNFINISHED_FILES.contains(&n.as_str()));
    if !other.is_empty() {
        other.sort();
        out.push(format!("files of its own: {}", other.join(", ")));
        return Ok(out);
    }
    out.extend(history_only(g, Via::Record)?);
    let refs = worktree_refs(g, Via::Record)?;
    if !refs.is_empty() {
        out.push(format!("refs of its own: {}", refs.join(", ")));
    }
    if std::fs::symlink_metadata(g.admin.join("index")).is_ok() {
        let staged = Via::Record.run_ok(g, &["ls-files", "-s", "-z"])?;
        let unmerged = unmerged(staged.as_bytes());
        if !unmerged.is_empty() {
            out.push(format!("unmerged index entries: {}", unmerged.join(", ")));
        } else if !index_matches(g, repo, team, worker)? {
            out.push("staged changes no commit holds".to_string());
        }
    }
    Ok(out)
}

/// Whether the index of the worktree record `g` holds what `HEAD` holds, or what a save of
/// this worker holds (`team/<team>/saved/<worker>-*`: a removal that saved, moved the
/// directory away and was stopped before the record went).
fn index_matches(g: &Worktree, repo: &Path, team: &str, worker: &str) -> Result<bool> {
    let mine = format!("refs/heads/team/{team}/saved/{worker}-");
    let saved = git_ok(
        repo,
        &[
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            &format!("refs/heads/team/{team}/saved/"),
        ],
        &[],
    )?;
    let mut against = vec!["HEAD".to_string()];
    against.extend(saved.lines().filter_map(|l| {
        let (name, c) = l.split_once(' ')?;
        name.starts_with(&mine).then(|| c.to_string())
    }));
    for c in &against {
        let o = Via::Record.run(g, &["diff-index", "--cached", "--quiet", c, "--"])?;
        match o.status.code() {
            Some(0) => return Ok(true),
            Some(1) => {}
            _ => {
                return Err(Error::Refused(format!(
                    "git diff-index --cached {c} on {} failed: {}",
                    g.admin.display(),
                    String::from_utf8_lossy(&o.stderr).trim()
                )));
            }
        }
    }
    Ok(false)
}

/// How git reaches a worktree: in its directory, or, when that is away, on the repository's
/// record of it alone ([`Worktree::run_record`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    Dir,
    Record,
}

impl Via {
    fn run(self, g: &Worktree, args: &[&str]) -> Result<std::process::Output> {
        match self {
            Via::Dir => g.run(args, &[]),
            Via::Record => g.run_record(args, &[]),
        }
    }

    fn run_ok(self, g: &Worktree, args: &[&str]) -> Result<String> {
        match self {
            Via::Dir => g.run_ok(args, &[]),
            Via::Record => g.run_record_ok(args, &[]),
        }
    }
}

/// What only the worktree `g`'s own history holds that a save cannot carry (see
/// [`Unsavable::history`]): an unfinished operation, or a history it cannot read or check.
/// The commits it holds are carried by the save ([`orphan_tips`]); on the record of a
/// worktree whose directory is away (`via` [`Via::Record`]), where nothing is saved, they
/// are named too.
fn history_only(g: &Worktree, via: Via) -> Result<Vec<String>> {
    let mut out: Vec<String> = UNFINISHED_FILES
        .into_iter()
        .filter(|n| std::fs::symlink_metadata(g.admin.join(n)).is_ok())
        .map(|n| format!("an unfinished operation ({n})"))
        .collect();
    // Another ref storage (reftable) keeps these refs in itself, not as files in the record.
    if g.ref_format()? != "files" {
        match root_refs(g, via)? {
            Ok(refs) => out.extend(
                refs.into_iter()
                    .filter(|r| UNFINISHED_REFS.contains(&r.as_str()))
                    .map(|r| format!("an unfinished operation ({r})")),
            ),
            Err(why) => out.push(why),
        }
    }
    match orphan_tips(g, via)? {
        Err(why) => out.push(why),
        Ok(tips) if via == Via::Record && !tips.is_empty() => out.push(format!(
            "commits only it reaches: {}",
            tips.iter()
                .map(|t| &t[..12.min(t.len())])
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Ok(_) => {}
    }
    Ok(out)
}

/// The files that say an operation is under way in a worktree's record.
const UNFINISHED_FILES: [&str; 7] = [
    "rebase-merge",
    "rebase-apply",
    "MERGE_HEAD",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "BISECT_LOG",
    "sequencer",
];

/// The refs that say an operation is under way in a worktree, where a ref storage other than
/// files keeps them (the files backend keeps them as files, found as such).
const UNFINISHED_REFS: [&str; 5] = [
    "MERGE_HEAD",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "REBASE_HEAD",
    "BISECT_HEAD",
];

/// The root refs (`HEAD`, `ORIG_HEAD`, `CHERRY_PICK_HEAD`...) the worktree `g` has, from its
/// ref storage, when that is not the files backend (reftable; git 2.45 or later, which
/// `--include-root-refs` needs too). `Err` says why they cannot be read.
fn root_refs(g: &Worktree, via: Via) -> Result<std::result::Result<Vec<String>, String>> {
    let o = via.run(
        g,
        &["for-each-ref", "--include-root-refs", "--format=%(refname)"],
    )?;
    if !o.status.success() {
        return Ok(Err(format!(
            "its root refs cannot be read: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )));
    }
    Ok(Ok(String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.starts_with("refs/"))
        .map(str::to_string)
        .collect()))
}

/// The most commits a save carries as extra parents.
const MAX_ORPHANS: usize = 100;

/// The most entries of a worktree's `HEAD` history that are checked.
const MAX_HISTORY: usize = 20_000;

/// The commits that only the worktree `g`'s own history reaches (its `HEAD` reflog and
/// `ORIG_HEAD`, which go with its administrative directory: an amended or reset-away commit,
/// a detached commit left behind), as the independent tips a save adds as parents so its
/// branch keeps them. `Err` says why they cannot be told (the worktree is then kept). On
/// the record of a worktree whose directory is away (`via` [`Via::Record`]) its `HEAD` is
/// one of them too: no save has it as its first parent.
///
/// In the files backend both are files in the record, read as data (bounded, no FIFO waited
/// on; each reflog entry's old and new commit). Another ref storage (reftable) keeps them in
/// itself, where only git reads them: `git log -g HEAD` and `git rev-parse ORIG_HEAD`, run as
/// every other git call on the worktree; what cannot be read that way keeps it too.
fn orphan_tips(g: &Worktree, via: Via) -> Result<std::result::Result<Vec<String>, String>> {
    let mut ids = std::collections::BTreeSet::new();
    let mut add = |text: &[u8]| {
        for w in String::from_utf8_lossy(text).split(|c: char| !c.is_ascii_hexdigit()) {
            if (w.len() == 40 || w.len() == 64) && w.bytes().any(|b| b != b'0') {
                ids.insert(w.to_ascii_lowercase());
            }
        }
    };
    for f in ["logs/HEAD", "ORIG_HEAD"] {
        let text = match read_small(&g.admin.join(f), 8 << 20) {
            Ok(Some(t)) => t,
            Ok(None) => continue,
            Err(why) => return Ok(Err(format!("its {f} {why}"))),
        };
        add(&text);
    }
    if g.ref_format()? != "files" {
        let limit = format!("-n{}", MAX_HISTORY + 1);
        let log = via.run(g, &["log", "-g", "--format=%H", &limit, "HEAD", "--"])?;
        if !log.status.success() {
            return Ok(Err(format!(
                "its HEAD reflog cannot be read: {}",
                String::from_utf8_lossy(&log.stderr).trim()
            )));
        }
        if log
            .stdout
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count()
            > MAX_HISTORY
        {
            return Ok(Err(format!(
                "more than {MAX_HISTORY} entries in its HEAD reflog, too many to check"
            )));
        }
        add(&log.stdout);
        let orig = via.run(g, &["rev-parse", "--verify", "-q", "ORIG_HEAD"])?;
        match orig.status.code() {
            Some(0) => add(&orig.stdout),
            // No ORIG_HEAD.
            Some(1) if orig.stdout.is_empty() => {}
            _ => {
                return Ok(Err(format!(
                    "its ORIG_HEAD cannot be read: {}",
                    String::from_utf8_lossy(&orig.stderr).trim()
                )));
            }
        }
    }
    if via == Via::Record {
        let head = via.run(g, &["rev-parse", "--verify", "-q", "HEAD"])?;
        match head.status.code() {
            Some(0) => add(&head.stdout),
            // An unborn HEAD: no commit.
            Some(1) if head.stdout.is_empty() => {}
            _ => {
                return Ok(Err(format!(
                    "its HEAD cannot be read: {}",
                    String::from_utf8_lossy(&head.stderr).trim()
                )));
            }
        }
    }
    if ids.len() > MAX_HISTORY {
        return Ok(Err(format!(
            "{} commits in its HEAD history, too many to check",
            ids.len()
        )));
    }
    // Every commit the candidates reach that no branch, tag or HEAD (the save's first
    // parent; on a record alone, a candidate) does; its tips are candidates themselves.
    let mut lost = std::collections::BTreeSet::new();
    for chunk in ids.iter().cloned().collect::<Vec<_>>().chunks(2000) {
        let mut args = vec!["rev-list", "--ignore-missing"];
        args.extend(chunk.iter().map(String::as_str));
        args.extend(["--not", "--branches", "--tags"]);
        if via == Via::Dir {
            args.push("HEAD");
        }
        lost.extend(via.run_ok(g, &args)?.lines().map(str::to_string));
    }
    let tips: Vec<String> = lost.into_iter().filter(|c| ids.contains(c)).collect();
    if tips.len() <= 1 {
        return Ok(Ok(tips));
    }
    let mut args = vec!["merge-base", "--independent"];
    args.extend(tips.iter().map(String::as_str));
    let tips: Vec<String> = via.run_ok(g, &args)?.lines().map(str::to_string).collect();
    if tips.len() > MAX_ORPHANS {
        return Ok(Err(format!(
            "{} lines of history only its reflog holds, more than a save carries ({MAX_ORPHANS})",
            tips.len()
        )));
    }
    Ok(Ok(tips))
}

/// The content of the regular file at `p` (`None` when there is none), read without
/// following a symlink or waiting on a FIFO; an error says why it cannot be read whole.
fn read_small(p: &Path, max: u64) -> std::result::Result<Option<Vec<u8>>, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::symlink_metadata(p) {
        Err(_) => return Ok(None),
        Ok(m) if !m.is_file() => return Err("is not a plain file".into()),
        Ok(_) => {}
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc_flags())
        .open(p)
        .map_err(|e| format!("cannot be read: {e}"))?;
    let mut v = Vec::new();
    (&f).take(max + 1)
        .read_to_end(&mut v)
        .map_err(|e| format!("cannot be read: {e}"))?;
    if v.len() as u64 > max {
        return Err(format!("is larger than {max} bytes"));
    }
    Ok(Some(v))
}

/// `O_NOFOLLOW | O_NONBLOCK`.
fn libc_flags() -> i32 {
    (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32
}

/// How what the held worktree `dir` holds now differs from `commit`'s tree in the repository
/// at `repo`: each file or symlink (the top-level `.git` aside) read through the held
/// directory, following no symlink, hashed as git stores it, and looked up in the tree by
/// path; an empty directory counts too (git keeps none). Empty when everything there is in
/// the tree. Read through the held descriptor, not by path, so it is the directory that is
/// then moved away that is checked, whatever a process put at its name meanwhile.
fn differs_from_saved(dir: &StateDir, repo: &Path, commit: &str) -> Result<Vec<String>> {
    use rustix::fs::{AtFlags, FileType, Mode, OFlags};
    let sha256 = git_ok(repo, &["rev-parse", "--show-object-format"], &[])? == "sha256";
    let listing = crate::git::run(repo, &["ls-tree", "-r", "-z", "--full-tree", commit], &[])?;
    if !listing.status.success() {
        return Err(Error::Refused(format!(
            "git ls-tree {commit} failed: {}",
            String::from_utf8_lossy(&listing.stderr).trim()
        )));
    }
    let mut tree = std::collections::HashMap::new();
    for rec in listing.stdout.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let Some(tab) = rec.iter().position(|b| *b == b'\t') else {
            continue;
        };
        let meta = String::from_utf8_lossy(&rec[..tab]);
        let mut f = meta.split(' ');
        if let (Some(mode), Some(oid)) = (f.next(), f.nth(1)) {
            tree.insert(rec[tab + 1..].to_vec(), (mode.to_string(), oid.to_string()));
        }
    }
    let blob_id = |content: &[u8]| -> String {
        let head = format!("blob {}\0", content.len());
        if sha256 {
            use sha2::Digest;
            let mut h = sha2::Sha256::new();
            h.update(head.as_bytes());
            h.update(content);
            hex::encode(h.finalize())
        } else {
            use sha1::Digest;
            let mut h = sha1::Sha1::new();
            h.update(head.as_bytes());
            h.update(content);
            hex::encode(h.finalize())
        }
    };
    let io = |e: rustix::io::Errno| Error::io("read the held worktree", dir.path(), e.into());
    let mut out = Vec::new();
    let mut seen = 0usize;
    let mut stack: Vec<(std::os::fd::OwnedFd, Vec<u8>)> = vec![(dir.dup_fd()?, Vec::new())];
    // A directory (or file) that changes while it is read is not trusted: a name renamed
    // across the listing's position is seen by no scan, git's or this one.
    let stamp = |fd: &std::os::fd::OwnedFd| {
        rustix::fs::fstat(fd).map(|st| {
            (
                st.st_size,
                st.st_mtime,
                st.st_mtime_nsec,
                st.st_ctime,
                st.st_ctime_nsec,
            )
        })
    };
    while let Some((fd, rel)) = stack.pop() {
        let show_dir = || format!("{}/", String::from_utf8_lossy(&rel));
        let before = stamp(&fd).map_err(io)?;
        let mut names = Vec::new();
        for e in rustix::fs::Dir::read_from(&fd).map_err(io)? {
            let e = e.map_err(io)?;
            let n = e.file_name().to_bytes();
            if n == b"." || n == b".." {
                continue;
            }
            if rel.is_empty() && n == b".git" {
                // A worktree's `.git` is a file naming its record; a directory there is a
                // repository of the worker's own, which nothing saves.
                let st = rustix::fs::statat(&fd, n, AtFlags::SYMLINK_NOFOLLOW).map_err(io)?;
                if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
                    out.push(".git (a repository of its own, not the worktree's .git file)".into());
                }
                continue;
            }
            names.push(n.to_vec());
        }
        if stamp(&fd).map_err(io)? != before {
            out.push(format!("{} (changed while read)", show_dir()));
        }
        if names.is_empty() && !rel.is_empty() {
            out.push(format!("{}/ (empty)", String::from_utf8_lossy(&rel)));
        }
        for n in names {
            seen += 1;
            if seen > WALK_LIMIT {
                return Err(Error::Refused(format!(
                    "{} holds more than {WALK_LIMIT} entries",
                    dir.path().display()
                )));
            }
            let path = if rel.is_empty() {
                n.clone()
            } else {
                [rel.as_slice(), b"/", n.as_slice()].concat()
            };
            let show = || String::from_utf8_lossy(&path).into_owned();
            let st =
                rustix::fs::statat(&fd, n.as_slice(), AtFlags::SYMLINK_NOFOLLOW).map_err(io)?;
            // The mode as git stores it: an executable bit lost is a change too.
            let mode = match FileType::from_raw_mode(st.st_mode) {
                FileType::Symlink => "120000",
                _ if st.st_mode & 0o100 != 0 => "100755",
                _ => "100644",
            };
            let content = match FileType::from_raw_mode(st.st_mode) {
                FileType::Directory => {
                    let sub = rustix::fs::openat(
                        &fd,
                        n.as_slice(),
                        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                        Mode::empty(),
                    )
                    .map_err(io)?;
                    stack.push((sub, path));
                    continue;
                }
                FileType::RegularFile => {
                    let f = rustix::fs::openat(
                        &fd,
                        n.as_slice(),
                        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
                        Mode::empty(),
                    )
                    .map_err(io)?;
                    let before = stamp(&f).map_err(io)?;
                    let mut v = Vec::new();
                    let mut file = std::fs::File::from(f);
                    std::io::Read::read_to_end(&mut file, &mut v)
                        .map_err(|e| Error::io("read the held worktree", dir.path(), e))?;
                    if stamp(&std::os::fd::OwnedFd::from(file)).map_err(io)? != before {
                        out.push(format!("{} (changed while read)", show()));
                        continue;
                    }
                    v
                }
                FileType::Symlink => rustix::fs::readlinkat(&fd, n.as_slice(), Vec::new())
                    .map_err(io)?
                    .into_bytes(),
                // A FIFO, a socket, a device: nothing git keeps, and not to be deleted (the
                // socket of a live server, a FIFO a program waits on).
                _ => {
                    out.push(format!("{} (a socket, FIFO or device node)", show()));
                    continue;
                }
            };
            if tree.get(&path) != Some(&(mode.to_string(), blob_id(&content))) {
                out.push(show());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Mount points at or below `dir` (from `/proc/self/mountinfo`): a removal would go into the
/// file system mounted there, which is not the worktree's.
fn mounts_inside(dir: &Path) -> Option<String> {
    let real = real_path(dir);
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let found: Vec<String> = info
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(unescape_mountinfo)
        .filter(|m| Path::new(m).starts_with(&real) || Path::new(m).starts_with(dir))
        .collect();
    (!found.is_empty()).then(|| format!("file systems are mounted in it: {}", found.join(", ")))
}

/// `/proc/self/mountinfo` escapes space, tab, newline and backslash as `\ooo`.
fn unescape_mountinfo(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `dir` with its parent resolved (as `/proc` shows paths), the directory itself not.
fn real_path(dir: &Path) -> PathBuf {
    dir.parent()
        .and_then(|p| std::fs::canonicalize(p).ok())
        .zip(dir.file_name())
        .map_or_else(|| dir.to_path_buf(), |(p, n)| p.join(n))
}

/// The paths of the gitlinks (mode 160000, submodules) in `git ls-files -s -z` output.
pub fn gitlinks(out: &[u8]) -> Vec<String> {
    out.split(|b| *b == 0)
        .filter_map(|rec| {
            let rec = String::from_utf8_lossy(rec);
            let (meta, path) = rec.split_once('\t')?;
            meta.starts_with("160000 ").then(|| path.to_string())
        })
        .collect()
}

/// The paths of `git ls-files -s -z` output that have an entry at a stage other than 0 (each
/// named once).
pub fn unmerged(out: &[u8]) -> Vec<String> {
    let mut v: Vec<String> = out
        .split(|b| *b == 0)
        .filter_map(|rec| {
            let rec = String::from_utf8_lossy(rec);
            let (meta, path) = rec.split_once('\t')?;
            (meta.rsplit(' ').next()? != "0").then(|| path.to_string())
        })
        .collect();
    v.dedup();
    v
}

/// Whether `p` is anything but absent or an empty directory (a symlink counts: it is not
/// followed, and not judged).
fn holds_anything(p: &Path) -> bool {
    match std::fs::symlink_metadata(p) {
        Err(_) => false,
        Ok(m) if m.is_dir() => std::fs::read_dir(p).map_or(true, |mut d| d.next().is_some()),
        Ok(_) => true,
    }
}

/// The most directory entries [`empty_dirs`] looks at before it gives up (and the worktree is
/// kept, since what it holds is unknown).
pub const WALK_LIMIT: usize = 200_000;

/// The empty directories below `dir` (relative, with a trailing `/`), found by a walk that
/// follows no symlink and skips every `.git`. More than `limit` entries is an error: the
/// caller keeps the worktree rather than guess.
pub fn empty_dirs(dir: &Path, limit: usize) -> Result<Vec<String>> {
    walk(dir, limit).map(|w| w.empty_dirs)
}

/// The empty directories below `dir` and the entries named `.git` below its top level (each
/// relative; a directory with a trailing `/`), by a walk that follows no symlink and does not
/// enter a `.git`. More than `limit` entries is an error.
fn walk(dir: &Path, limit: usize) -> Result<Walked> {
    use std::os::unix::fs::FileTypeExt;
    let mut out = Vec::new();
    let mut gits = Vec::new();
    let mut attrs = Vec::new();
    let mut special = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    let mut seen = 0usize;
    while let Some(d) = stack.pop() {
        let rd = std::fs::read_dir(&d).map_err(|e| Error::io("read directory", &d, e))?;
        let mut any = false;
        for e in rd {
            let e = e.map_err(|e| Error::io("read directory", &d, e))?;
            any = true;
            seen += 1;
            if seen > limit {
                return Err(Error::Refused(format!(
                    "{} holds more than {limit} files and directories; not walked to the end",
                    dir.display()
                )));
            }
            let ft = e
                .file_type()
                .map_err(|x| Error::io("inspect", e.path(), x))?;
            if e.file_name() == ".gitattributes" {
                let p = e.path();
                attrs.push(p.strip_prefix(dir).unwrap_or(&p).display().to_string());
            }
            if e.file_name() == ".git" {
                if d != dir {
                    let p = e.path();
                    let rel = p.strip_prefix(dir).unwrap_or(&p);
                    gits.push(format!(
                        "{}{}",
                        rel.display(),
                        if ft.is_dir() { "/" } else { "" }
                    ));
                }
                continue;
            }
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_socket() || ft.is_fifo() || ft.is_block_device() || ft.is_char_device()
            {
                let p = e.path();
                special.push(p.strip_prefix(dir).unwrap_or(&p).display().to_string());
            }
        }
        if !any && d != dir {
            let rel = d.strip_prefix(dir).unwrap_or(&d);
            out.push(format!("{}/", rel.display()));
        }
    }
    out.sort();
    gits.sort();
    attrs.sort();
    special.sort();
    Ok(Walked {
        empty_dirs: out,
        git_entries: gits,
        attributes: attrs,
        special_files: special,
    })
}

/// What [`walk`] finds.
struct Walked {
    empty_dirs: Vec<String>,
    git_entries: Vec<String>,
    attributes: Vec<String>,
    special_files: Vec<String>,
}

/// Paths whose index entry hides the worktree's file from `git status`: `assume-unchanged`
/// (`git ls-files -v` tag in lower case) or `skip-worktree` (`S`, `s` for both). Returns the
/// ones present in the worktree (edits git status does not show) and the skip-worktree ones
/// absent from it (a sparse checkout: their content is in HEAD, not deleted).
fn hidden_by_flags(g: &Worktree) -> Result<(Vec<String>, Vec<String>)> {
    let o = g.run(&["ls-files", "-v", "-z"], &[])?;
    if !o.status.success() {
        return Err(Error::Refused(format!(
            "git ls-files in {} failed: {}",
            g.path.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        )));
    }
    Ok(parse_ls_files_v(&o.stdout, |p| {
        std::fs::symlink_metadata(g.path.join(p)).is_ok()
    }))
}

/// Parses `git ls-files -v -z`: (flagged paths present, skip-worktree paths absent).
pub fn parse_ls_files_v(out: &[u8], present: impl Fn(&str) -> bool) -> (Vec<String>, Vec<String>) {
    let (mut hidden, mut sparse) = (Vec::new(), Vec::new());
    for rec in out.split(|b| *b == 0) {
        let rec = String::from_utf8_lossy(rec);
        let Some((tag, path)) = rec.split_once(' ') else {
            continue;
        };
        let Some(c) = tag.chars().next().filter(|_| tag.len() == 1) else {
            continue;
        };
        let assume = c.is_ascii_lowercase();
        let skip = c.eq_ignore_ascii_case(&'s');
        if !assume && !skip {
            continue;
        }
        if present(path) {
            hidden.push(path.to_string());
        } else if skip {
            sparse.push(path.to_string());
        } else {
            // assume-unchanged and deleted: the deletion is the worker's change.
            hidden.push(path.to_string());
        }
    }
    (hidden, sparse)
}

/// Parses `git status --porcelain=v2 -z` output into what git cannot save.
pub fn parse_status_v2(out: &[u8]) -> Unsavable {
    let mut u = Unsavable::default();
    let mut fields = out
        .split(|b| *b == 0)
        .map(|f| String::from_utf8_lossy(f).into_owned());
    while let Some(rec) = fields.next() {
        let kind = rec.split(' ').next().unwrap_or("");
        let (n, sub) = match kind {
            "1" => (9, rec.split(' ').nth(2)),
            "2" => (10, rec.split(' ').nth(2)),
            "u" => (11, rec.split(' ').nth(2)),
            "?" | "!" => (2, None),
            _ => continue,
        };
        let path = rec.splitn(n, ' ').nth(n - 1).unwrap_or("").to_string();
        if kind == "2" {
            // The original path of a rename follows as its own field.
            fields.next();
        }
        match kind {
            "!" => u.ignored.push(path),
            // With --untracked-files=all, git lists single files, and a directory only when it
            // is a repository of its own.
            "?" if path.ends_with('/') => u.nested_repos.push(path),
            "?" => {}
            _ => {
                if let Some(sub) = sub
                    && sub.starts_with('S')
                    && sub != "S..."
                {
                    u.submodules.push(path.clone());
                }
                // `XY`: X the index against HEAD, Y the file against the index; both changed
                // means the staged content is neither HEAD's nor the file's.
                let xy = rec.split(' ').nth(1).unwrap_or("..");
                let mut c = xy.chars();
                if let (Some(x), Some(y)) = (c.next(), c.next())
                    && kind == "1"
                    && x != '.'
                    && y != '.'
                    && x != 'D'
                    && !sub.is_some_and(|s| s.starts_with('S'))
                {
                    u.staged_differs.push(path);
                }
            }
        }
    }
    u
}

use crate::git::{self, Worktree, run_ok as git_ok};

const IDENT: [(&str, &str); 4] = [
    ("GIT_AUTHOR_NAME", "team-scale"),
    ("GIT_AUTHOR_EMAIL", "team-scale@localhost"),
    ("GIT_COMMITTER_NAME", "team-scale"),
    ("GIT_COMMITTER_EMAIL", "team-scale@localhost"),
];

/// Whether `commit`'s history is reachable from a branch other than `own` (a real one: a
/// symbolic ref, which may point to `own`, holds nothing of its own).
fn reachable_elsewhere(dir: &Path, commit: &str, own: Option<&str>) -> Result<bool> {
    let listed = git_ok(
        dir,
        &[
            "for-each-ref",
            "--format=%(refname) %(symref)",
            "refs/heads/",
        ],
        &[],
    )?;
    let refs: Vec<&str> = listed
        .lines()
        .filter_map(|l| {
            let (name, target) = l.split_once(' ').unwrap_or((l, ""));
            target.trim().is_empty().then_some(name)
        })
        .collect();
    let mut args: Vec<String> = vec![
        "rev-list".into(),
        "--count".into(),
        commit.into(),
        "--not".into(),
    ];
    let own_ref = own.map(|b| format!("refs/heads/{b}"));
    let mut others = 0;
    for r in refs {
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

/// Saves the full state of the worktree `g` (uncommitted edits, untracked files, commits no
/// other branch of the repository at `repo` reaches; `own` is the worktree's branch) on
/// `team/<team>/saved/<worker>-<time>`. `None` when nothing was unsaved.
/// With `force`, the worktree is saved even when git sees nothing to save (its files differ
/// from HEAD only as attributes or line endings hide, [`differs_from_saved`]).
pub fn save_worktree(
    g: &Worktree,
    repo: &Path,
    own: Option<&str>,
    team: &str,
    worker: &str,
    force: bool,
) -> Result<Option<String>> {
    // A sparse checkout's `add -A` skips every path outside its patterns, edits included:
    // the save sees the whole worktree (absent paths are kept by their skip-worktree flag).
    // And it saves the files' bytes as they are: no attribute of the worktree's (`ident`,
    // `text`, `eol`, a filter) and no line-ending conversion applies (`GIT_ATTR_SOURCE`, git
    // 2.40+, reads attributes from the empty tree; an older git keeps a worktree that has
    // `.gitattributes`, see `unsavable`).
    let empty_tree = g.run_ok(&["hash-object", "-t", "tree", "--stdin"], &[])?;
    let git = |args: &[&str], env: &[(&str, &str)]| {
        let mut a = vec![
            "-c",
            "core.sparseCheckout=false",
            "-c",
            "core.autocrlf=false",
            // The executable bit as it is on disk, whatever the repository says (a
            // `core.fileMode=false` saved every file as 100644).
            "-c",
            "core.fileMode=true",
            "-c",
            "core.attributesFile=/dev/null",
        ];
        a.extend_from_slice(args);
        let mut e: Vec<(&str, &str)> = vec![("GIT_ATTR_SOURCE", empty_tree.as_str())];
        e.extend_from_slice(env);
        g.run_ok(&a, &e)
    };
    let status = git(
        &[
            "status",
            "--porcelain",
            "--untracked-files=all",
            "--ignore-submodules=all",
        ],
        &[],
    )?;
    let head = git(&["rev-parse", "--verify", "-q", "HEAD"], &[]).ok();
    // `git status` trusts the index's assume-unchanged and skip-worktree flags, so an edit
    // behind one is invisible to it; the private index below has no flags and sees it.
    let (hidden, sparse) = hidden_by_flags(g)?;
    let dirty = force || !status.is_empty() || !hidden.is_empty();
    let unreachable = match &head {
        Some(h) => !reachable_elsewhere(repo, h, own)?,
        None => false,
    };
    // Commits only the worktree's reflog holds ride along as further parents of the save
    // (a history that cannot be told keeps the worktree: see `unsavable`).
    let orphans = orphan_tips(g, Via::Dir)?.unwrap_or_default();
    if !dirty && !unreachable && orphans.is_empty() {
        return Ok(None);
    }
    let mut parents: Vec<&str> = head.iter().map(String::as_str).collect();
    parents.extend(orphans.iter().map(String::as_str));
    let msg = if orphans.is_empty() {
        format!("team-scale: saved state of {worker} (team {team}) before removal")
    } else {
        format!(
            "team-scale: saved state of {worker} (team {team}) before removal\n\nFurther parents: {} commit(s) only its reflog held.",
            orphans.len()
        )
    };
    let commit = if dirty {
        // A private index, so the worktree's own index and files stay as they are.
        let tmp = g
            .admin
            .join(format!("team-save-{}.index", uuid::Uuid::new_v4().simple()));
        let idx = tmp.to_string_lossy().to_string();
        let env: Vec<(&str, &str)> = IDENT
            .iter()
            .copied()
            .chain([("GIT_INDEX_FILE", idx.as_str())])
            .collect();
        let r = (|| {
            if let Some(h) = &head {
                git(&["read-tree", h], &env)?;
            }
            // A sparse checkout's absent files are not deletions: keep them as they are.
            for chunk in sparse.chunks(500) {
                let mut args = vec!["update-index", "--skip-worktree", "--"];
                args.extend(chunk.iter().map(String::as_str));
                git(&args, &env)?;
            }
            git(&["add", "-A", "--", "."], &env)?;
            let tree = git(&["write-tree"], &env)?;
            if status.is_empty()
                && orphans.is_empty()
                && let Some(h) = &head
                && git(&["rev-parse", &format!("{h}^{{tree}}")], &[])? == tree
            {
                // The flagged files hold what HEAD holds: nothing to save.
                return Ok(Ok(None));
            }
            if let Some(b) = saved_before(repo, team, worker, &tree, head.as_deref())? {
                return Ok(Err(b));
            }
            let mut args = vec!["commit-tree", tree.as_str(), "-m", msg.as_str()];
            for p in &parents {
                args.extend(["-p", p]);
            }
            git(&args, &env).map(|c| Ok(Some(c)))
        })();
        let _ = std::fs::remove_file(&tmp);
        match r? {
            Ok(Some(c)) => c,
            Ok(None) if !unreachable => return Ok(None),
            Ok(None) => head.clone().unwrap_or_default(),
            // The same state was saved before (a retried removal): that branch holds it.
            Err(branch) => return Ok(Some(branch)),
        }
    } else if !orphans.is_empty() {
        // Nothing uncommitted: HEAD's tree, with the orphans as further parents.
        let tree = match &head {
            Some(h) => git(&["rev-parse", &format!("{h}^{{tree}}")], &[])?,
            None => empty_tree.clone(),
        };
        let mut args = vec!["commit-tree", tree.as_str(), "-m", msg.as_str()];
        for p in &parents {
            args.extend(["-p", p]);
        }
        git(&args, &IDENT)?
    } else {
        head.clone().unwrap_or_default()
    };
    let branch = format!("team/{team}/saved/{worker}-{}", stamp());
    git_ok(
        repo,
        &["update-ref", &format!("refs/heads/{branch}"), &commit, ""],
        &[],
    )?;
    Ok(Some(branch))
}

/// A branch `team/<team>/saved/<worker>-*` whose commit has exactly `tree` on `parent`.
fn saved_before(
    dir: &Path,
    team: &str,
    worker: &str,
    tree: &str,
    parent: Option<&str>,
) -> Result<Option<String>> {
    let prefix = format!("refs/heads/team/{team}/saved/");
    let refs = git_ok(
        dir,
        &[
            "for-each-ref",
            "--format=%(refname) %(tree) %(parent)",
            &prefix,
        ],
        &[],
    )?;
    for l in refs.lines() {
        let mut f = l.split(' ');
        let (Some(r), Some(t)) = (f.next(), f.next()) else {
            continue;
        };
        let p = f.next().filter(|p| !p.is_empty());
        let name = r.strip_prefix("refs/heads/").unwrap_or(r);
        let mine = name
            .strip_prefix(&format!("team/{team}/saved/{worker}-"))
            .is_some();
        if mine && t == tree && p == parent && f.next().is_none() {
            return Ok(Some(name.to_string()));
        }
    }
    Ok(None)
}

/// The directories a teardown removes workers' files from, each reached once without following
/// a symlink and held open for every worker of the batch: the team's `workers/` and `runtime/`
/// (`None` when absent: nothing of a worker is left in it), and its `trash/`, made when the
/// first file is moved there.
pub struct Dirs {
    workers: Option<StateDir>,
    runtime: Option<StateDir>,
    trash: Option<StateDir>,
    trash_path: PathBuf,
    root: PathBuf,
    /// Directories already found safe by [`validate`] in this batch.
    seen: SeenDirs,
}

/// Which directory of [`Dirs`] a file is moved out of.
#[derive(Clone, Copy)]
enum From {
    Workers,
    Runtime,
}

impl Dirs {
    /// Opens the directories of `team` (a symlinked one is refused, as every walk refuses it).
    pub fn open(root: &StateRoot, team: &Team) -> Result<Dirs> {
        let team_dir = root.team_dir(&team.name);
        let open = |d: &str| fsutil::state_dir(root.path(), &team_dir.join(d), false);
        Ok(Dirs {
            workers: open("workers")?,
            runtime: open("runtime")?,
            trash: None,
            trash_path: root.trash_dir(&team.name),
            root: root.path().to_path_buf(),
            seen: SeenDirs::default(),
        })
    }

    /// Moves `path`, directly in `from` (`workers/` or `runtime/`, when it exists), into the
    /// team's `trash/` as `name`; the trash is made (durably, once in a team's life) on first
    /// use.
    fn move_to_trash(&mut self, from: From, path: &std::path::Path, name: &OsStr) -> Result<()> {
        let parent = match from {
            From::Workers => &self.workers,
            From::Runtime => &self.runtime,
        };
        let Some(parent) = parent else {
            return Ok(());
        };
        if self.trash.is_none() {
            self.trash = Some(
                fsutil::state_dir(&self.root, &self.trash_path, true)?.ok_or_else(|| {
                    Error::Internal(format!("{} was not created", self.trash_path.display()))
                })?,
            );
        }
        let trash = self.trash.as_ref().expect("just set");
        parent.move_into(path, trash, name).map(|_| ())
    }

    /// Moves the worktree at `path` (directly in `.team/worktrees/<team>/`) into the trash,
    /// only if the entry there is the directory `id` (the one the save worked in); the
    /// entry moved is checked again in the trash, and put back if it is not that directory.
    /// `Err` says why nothing was moved.
    fn move_worktree(
        &mut self,
        root: &StateRoot,
        path: &Path,
        id: (u64, u64),
    ) -> std::result::Result<(), String> {
        let parent = path.parent().ok_or("it has no parent")?;
        let from = fsutil::state_dir(root.path(), parent, false)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("{} is gone", parent.display()))?;
        if from.identity(path).map_err(|e| e.to_string())? != Some(id) {
            return Err("its directory was replaced during the teardown".into());
        }
        if self.trash.is_none() {
            self.trash = Some(
                fsutil::state_dir(&self.root, &self.trash_path, true)
                    .map_err(|e| e.to_string())?
                    .ok_or("the trash was not created")?,
            );
        }
        let trash = self.trash.as_ref().expect("just set");
        let mut name = std::ffi::OsString::from(&uuid::Uuid::new_v4().simple().to_string()[..12]);
        name.push("-worktree-");
        name.push(path.file_name().unwrap_or_default());
        if !from
            .move_into(path, trash, &name)
            .map_err(|e| e.to_string())?
        {
            return Err("its directory vanished".into());
        }
        let moved = trash.path().join(&name);
        if trash.identity(&moved).map_err(|e| e.to_string())? != Some(id) {
            // Another entry was put there between the check and the move: it goes back.
            let _ = trash.move_into(&moved, &from, path.file_name().unwrap_or_default());
            return Err("its directory was replaced during the teardown".into());
        }
        Ok(())
    }

    /// Makes the removals of [`remove`] durable: one fsync of `workers/` and one of
    /// `runtime/`. The trash is not synced: what is in it is garbage wherever a crash leaves
    /// it (the next emptying deletes it, or a file-system check finds it unreferenced).
    pub fn sync(&self) -> Result<()> {
        for d in self.workers.iter().chain(self.runtime.iter()) {
            d.sync()?;
        }
        Ok(())
    }
}

/// Removes a worker's resources: worktree (after saving it), branch (only if the tools made it
/// and its commits are reachable elsewhere), then its worker directory and startup script,
/// which are moved out of `workers/` and `runtime/` into the team's `trash/`, deleted after the
/// command ([`empty_trash`]). The caller makes the moves durable with [`Dirs::sync`] before it
/// drops the record.
pub fn remove(
    root: &StateRoot,
    team: &Team,
    w: &Worker,
    dirs: &mut Dirs,
    fail: &dyn Fn(&str) -> Result<()>,
) -> Result<ResourceReport> {
    validate(root, team, w, &mut dirs.seen)?;
    let mut rep = ResourceReport::default();
    let Resources {
        worker_dir,
        script,
        worktree,
    } = &w.resources;
    if let Some(wt) = worktree {
        remove_worktree(root, team, w, wt, dirs, &mut rep)?;
    }
    fail("down.resources")?;
    if !rep.blocked.is_empty() {
        return Ok(rep);
    }
    // Moved relative to the directories `dirs` holds open (reached without following a
    // symlink), by `rename`, which acts on the entry itself: a symlink swapped in is moved
    // (and later unlinked), never followed. The paths are exactly the ones derived from the
    // worker's name (`validate`), so each is directly in its directory. The script is only
    // ever a file: a directory found in its place is not touched (an error, so the record
    // stays). A late `exit.json` from the worker's supervisor finds the directory gone and is
    // not written (its walk creates nothing). Each name in the trash is unique to this move,
    // so nothing there is ever replaced.
    let tag = uuid::Uuid::new_v4().simple().to_string();
    let trash_name = |p: &std::path::Path| {
        let mut n = std::ffi::OsString::from(&tag[..12]);
        n.push("-");
        n.push(p.file_name().unwrap_or_default());
        n
    };
    if let Some(p) = script
        && let Some(parent) = &dirs.runtime
        && parent.kind(p)? == Some("directory")
    {
        return Err(Error::io(
            "move to the trash",
            p,
            std::io::Error::from_raw_os_error(rustix::io::Errno::ISDIR.raw_os_error()),
        ));
    }
    if let Some(d) = worker_dir
        && let Some(why) = not_the_tools_worker_dir(dirs, d)?
    {
        rep.blocked.push(format!(
            "worker directory {} kept: {why}; move what is yours out of it, then run `team-scale reconcile {}`",
            d.display(),
            team.name
        ));
        return Ok(rep);
    }
    if let Some(d) = worker_dir {
        dirs.move_to_trash(From::Workers, d, &trash_name(d))?;
    }
    if let Some(p) = script {
        dirs.move_to_trash(From::Runtime, p, &trash_name(p))?;
    }
    Ok(rep)
}

/// The files the tools write in a worker's directory (`inbox.md` by `up` and the leader,
/// `status.json` by `worker-status`, `exit.json` by the supervisor), and the temporary names
/// their atomic writes go through (`.<name>.tmp-<pid>-<id>`).
const WORKER_FILES: &[&str] = &["inbox.md", "status.json", "exit.json"];

/// Why what is at a worker's directory path `d` is not only the tools' (`None`: it is, or
/// nothing is there, or a symlink, which is unlinked, never followed): a directory holding
/// anything the tools do not write there, or something other than a directory. The path is
/// the tools' own, but a directory of the user's moved in at that name, or files a worker or
/// a person saved there, are not theirs to delete.
fn not_the_tools_worker_dir(dirs: &Dirs, d: &std::path::Path) -> Result<Option<String>> {
    let Some(workers) = &dirs.workers else {
        return Ok(None);
    };
    match workers.kind(d)? {
        None | Some("symlink") => return Ok(None),
        Some("directory") => {}
        Some(other) => return Ok(Some(format!("it is a {other}, not the directory up made"))),
    }
    let Some(dir) = fsutil::state_dir(&dirs.root, d, false)? else {
        return Ok(None);
    };
    // A name the tools write, exactly: one of theirs, or an atomic write's temporary
    // `.<name>.tmp-<pid>-<32 hex>`; and only as a regular file or a symlink (unlinked, never
    // followed): a directory of that name holds what the tools never wrote.
    let our_name = |n: &str| {
        WORKER_FILES.contains(&n)
            || WORKER_FILES.iter().any(|f| {
                n.strip_prefix('.')
                    .and_then(|r| r.strip_prefix(f))
                    .and_then(|r| r.strip_prefix(".tmp-"))
                    .and_then(|r| r.split_once('-'))
                    .is_some_and(|(pid, id)| {
                        !pid.is_empty()
                            && pid.bytes().all(|b| b.is_ascii_digit())
                            && id.len() == 32
                            && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
                    })
            })
    };
    let mut foreign = Vec::new();
    for n in dir.names()? {
        let name = n.to_string_lossy().into_owned();
        let ours = our_name(&name)
            && matches!(
                dir.kind(&dir.path().join(&n))?,
                None | Some("regular file") | Some("symlink")
            );
        if !ours {
            foreign.push(name);
        }
    }
    if foreign.is_empty() {
        return Ok(None);
    }
    foreign.sort();
    let more = foreign.len().saturating_sub(5);
    foreign.truncate(5);
    Ok(Some(format!(
        "it holds what the tools did not write there ({}{})",
        foreign.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    )))
}

/// Deletes everything in the trash of `team` (see [`remove`]): directories whole, relative to
/// directory fds, following no symlink (a symlink is unlinked itself). Returns how many entries
/// it deleted; a trash that does not exist is empty, and a root that holds no such team is
/// refused (`NoSuchTeam`). Not durable: a crash leaves garbage that the next emptying finds.
/// Entries that vanish meanwhile (another emptier) are success.
pub fn empty_trash(root: &StateRoot, team: &crate::paths::TeamName) -> Result<usize> {
    // Only the trash of a team that exists: a root that holds no such team is no state root
    // of ours, whatever its trash holds.
    if fsutil::state_kind(root.path(), &root.team_json(team))? != Some("regular file") {
        return Err(Error::NoSuchTeam {
            team: team.to_string(),
            state_root: root.path().to_path_buf(),
        });
    }
    let path = root.trash_dir(team);
    let Some(trash) = fsutil::state_dir(root.path(), &path, false)? else {
        return Ok(0);
    };
    // One entry that cannot be deleted (too deep, immutable) keeps only itself: the others are
    // deleted, then the first failure is returned.
    let mut n = 0;
    let mut first_err = None;
    for name in trash.names()? {
        let p = path.join(&name);
        let r = match trash.kind(&p) {
            Ok(Some("directory")) => trash.remove_tree(&p, fsutil::Sync::Never),
            Ok(Some(_)) => trash.remove(&p, fsutil::Sync::Never),
            Ok(None) => continue,
            Err(e) => Err(e),
        };
        match r {
            Ok(()) => n += 1,
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(n),
    }
}

/// How many entries have been in the trash of `team` for longer than `age` (since they were
/// moved there): what the background emptying could not delete (nested too deep, immutable,
/// not ours to delete), for `status` to show. A fresh entry is still being deleted.
pub fn trash_left(
    root: &StateRoot,
    team: &crate::paths::TeamName,
    age: std::time::Duration,
) -> Result<usize> {
    let path = root.trash_dir(team);
    let Some(trash) = fsutil::state_dir(root.path(), &path, false)? else {
        return Ok(0);
    };
    let now = std::time::SystemTime::now();
    let mut n = 0;
    for name in trash.names()? {
        if let Some(t) = trash.changed_at(&path.join(&name))?
            && now.duration_since(t).unwrap_or_default() > age
        {
            n += 1;
        }
    }
    Ok(n)
}

/// How many entries the trash of `team` holds (one directory read; a removed worker leaves
/// two: its directory and its startup script).
pub fn trash_len(root: &StateRoot, team: &crate::paths::TeamName) -> Result<usize> {
    match fsutil::state_dir(root.path(), &root.trash_dir(team), false)? {
        Some(t) => Ok(t.names()?.len()),
        None => Ok(0),
    }
}

/// Keeps the worktree at `path`, saying why (its worker stays `removing`).
fn kept(rep: &mut ResourceReport, path: &Path, why: String) -> Result<()> {
    rep.blocked
        .push(format!("worktree {} kept: {why}", path.display()));
    Ok(())
}

fn remove_worktree(
    root: &StateRoot,
    team: &Team,
    w: &Worker,
    wt: &WorktreeRecord,
    dirs: &mut Dirs,
    rep: &mut ResourceReport,
) -> Result<()> {
    let repo = &team.workspace;
    // Held open, reached with no symlink on the way: git saves this very directory, and this
    // very directory is what goes (see `move_worktree`), whatever is put at its name meanwhile.
    let pinned = match fsutil::state_dir(root.path(), &wt.path, false) {
        Ok(p) => p,
        Err(e) => {
            return kept(rep, &wt.path, e.to_string());
        }
    };
    if let Some(pinned) = pinned {
        let id = pinned.own_identity()?;
        // Reached through the repository's own record of the worktree, never through the
        // worktree's `.git` file, which the worker could point at a repository of its own.
        let g = match Worktree::find(repo, &wt.path) {
            Ok(g) => g.pinned(pinned.pinned_path()),
            Err(e) => {
                return kept(
                    rep,
                    &wt.path,
                    format!("it is not a worktree its repository records: {e}"),
                );
            }
        };
        if std::fs::symlink_metadata(g.admin.join("locked")).is_ok() {
            return kept(
                rep,
                &wt.path,
                format!(
                    "it is locked (`git worktree lock`); unlock it, then run `team-scale reconcile {}`",
                    team.name
                ),
            );
        }
        // Its own config is the worker's to write: git runs under none but the sparse keys.
        match g.foreign_config() {
            Ok(k) if k.is_empty() => {}
            Ok(k) => {
                return kept(
                    rep,
                    &wt.path,
                    format!(
                        "its own git config (config.worktree) sets {}, which the tools do not run git under; remove them (`git config --worktree --unset <key>`), then run `team-scale reconcile {}`",
                        k.join(", "),
                        team.name
                    ),
                );
            }
            Err(e) => {
                return kept(
                    rep,
                    &wt.path,
                    format!("cannot read its own git config: {e}"),
                );
            }
        }
        // A process still working there (a daemon the worker left, a shell of yours) would
        // write after the save: what it wrote would go with the worktree. A file system
        // mounted in it is not the worktree's: a removal would delete what is on it.
        if let Some(why) = mounts_inside(&wt.path).or_else(|| in_use(&pinned, &wt.path)) {
            return kept(
                rep,
                &wt.path,
                format!(
                    "{why}; run `team-scale reconcile {}` when it is done",
                    team.name
                ),
            );
        }
        // What git cannot save, found before saving what it can.
        let left = match unsavable(&g) {
            Ok(l) => l,
            Err(e) => {
                return kept(rep, &wt.path, format!("cannot tell what it holds: {e}"));
            }
        };
        match save_worktree(
            &g,
            repo,
            wt.branch.as_deref(),
            team.name.as_str(),
            w.name.as_str(),
            false,
        ) {
            Ok(b) => rep.saved_branch = b,
            Err(e) => {
                return kept(rep, &wt.path, format!("could not save its state: {e}"));
            }
        }
        if !left.is_empty() {
            // Never removed (with or without --force) while it holds what git cannot save.
            rep.blocked.push(format!(
                "worktree_kept: {} holds what git cannot save ({}){}; move out what you need, delete the rest, then run `team-scale reconcile {}`",
                wt.path.display(),
                left.describe(),
                rep.saved_branch
                    .as_ref()
                    .map(|b| format!("; the rest of its state is saved on branch {b}"))
                    .unwrap_or_default(),
                team.name
            ));
            rep.kept_worktree = Some(wt.path.clone());
            rep.unsavable = left;
            return Ok(());
        }
        // Saved (or nothing unsaved), and nothing git cannot save: the worktree's content is all
        // in git now, so removing it loses nothing. Checked once more for a process in it.
        if let Some(why) = mounts_inside(&wt.path).or_else(|| in_use(&pinned, &wt.path)) {
            return kept(
                rep,
                &wt.path,
                format!(
                    "{why}; its state is saved{}",
                    rep.saved_branch
                        .as_ref()
                        .map(|b| format!(" on branch {b}"))
                        .unwrap_or_default()
                ),
            );
        }
        // The last gate, through the held directory: everything in it is in what was saved
        // (or in HEAD, when nothing needed saving). A git result taken while another
        // directory stood at the worktree's name (git resolves its work tree to a path) does
        // not pass it.
        let check = |rep: &ResourceReport| {
            let saved = match &rep.saved_branch {
                Some(b) => git_ok(
                    repo,
                    &["rev-parse", "--verify", "-q", &format!("refs/heads/{b}")],
                    &[],
                ),
                None => g.run_ok(&["rev-parse", "--verify", "-q", "HEAD"], &[]),
            };
            saved.and_then(|c| differs_from_saved(&pinned, repo, &c))
        };
        let mut diff = check(rep);
        if rep.saved_branch.is_none() && diff.as_ref().is_ok_and(|d| !d.is_empty()) {
            // Clean to git, not byte for byte (line endings, attributes): saved as it is.
            match save_worktree(
                &g,
                repo,
                wt.branch.as_deref(),
                team.name.as_str(),
                w.name.as_str(),
                true,
            ) {
                Ok(b) => {
                    rep.saved_branch = b;
                    diff = check(rep);
                }
                Err(e) => diff = Err(e),
            }
        }
        match diff {
            Ok(d) if d.is_empty() => {}
            Ok(d) => {
                return kept(
                    rep,
                    &wt.path,
                    format!(
                        "what it holds is not all in {} ({}{}); it changed during the save: run `team-scale reconcile {}`",
                        rep.saved_branch.as_deref().unwrap_or("HEAD"),
                        d.iter().take(5).cloned().collect::<Vec<_>>().join(", "),
                        if d.len() > 5 {
                            format!(" and {} more", d.len() - 5)
                        } else {
                            String::new()
                        },
                        team.name
                    ),
                );
            }
            Err(e) => {
                return kept(
                    rep,
                    &wt.path,
                    format!("cannot check it against what was saved: {e}"),
                );
            }
        }
        // Not `git worktree remove`, which deletes by path and follows a symlink put there:
        // the directory itself moves into the trash (a rename of the entry, checked to be the
        // one held open), deleted with the rest of the trash, following no symlink; then the
        // repository's record of it goes.
        if let Err(why) = dirs.move_worktree(root, &wt.path, id) {
            return kept(rep, &wt.path, why);
        }
        if let Err(e) = std::fs::remove_dir_all(&g.admin) {
            rep.blocked.push(format!(
                "the repository's record of worktree {} ({}) is left: {e}; run `team-scale reconcile {}`",
                wt.path.display(),
                g.admin.display(),
                team.name
            ));
            return Ok(());
        }
    } else if let Ok(g) = Worktree::find(repo, &wt.path) {
        // Its directory is away (moved, deleted): its record in the repository goes too, and
        // no other (`git worktree prune` would drop every worktree whose directory is away,
        // the user's unmounted ones included); but only when it holds nothing of its own.
        let holds = away_record(&g, repo, team.name.as_str(), w.name.as_str())
            .unwrap_or_else(|e| vec![format!("what cannot be read: {e}")]);
        if !holds.is_empty() {
            rep.blocked.push(format!(
                "worktree_kept: {path} is away (moved or deleted), and the repository's record of it ({admin}) is kept: it holds {what}; put the directory back and run `team-scale reconcile {t}` (it is then saved and removed), or run `git worktree repair <where it is now>` to keep it as a worktree of yours, or `git worktree remove {path}` if you need none of it, then `team-scale reconcile {t}`",
                path = wt.path.display(),
                admin = g.admin.display(),
                what = holds.join("; "),
                t = team.name
            ));
            rep.kept_worktree = Some(wt.path.clone());
            rep.unsavable.away_record = holds;
            return Ok(());
        }
        if let Err(e) = std::fs::remove_dir_all(&g.admin) {
            rep.blocked
                .push(format!("worktree record {} kept: {e}", g.admin.display()));
            return Ok(());
        }
    }
    rep.worktree_removed = true;
    if let Some(b) = &wt.branch
        && wt.branch_created
    {
        let r = format!("refs/heads/{b}");
        if let Ok(tip) = git_ok(repo, &["rev-parse", "--verify", "-q", &r], &[]) {
            let made = branch_made_message(team.name.as_str(), w.name.as_str(), &w.incarnation);
            match branch_gate(repo, b, &tip, &made)? {
                // Deleted by the teardown, after its durable audit intent ([`delete_branch`],
                // which passes the same gate again, against the refs as they are then).
                Ok(_) => rep.branch_to_delete = Some((b.clone(), tip)),
                Err(why) => {
                    rep.kept_branch = Some(b.clone());
                    rep.kept_branch_why = Some(why);
                }
            }
        }
    }
    Ok(())
}

/// The reflog message `up` creates a worker's branch with ([`make_branch`]): the first entry
/// of that branch's reflog, which no other branch of the same name has (a branch deleted and
/// made again starts a new reflog). It names the worker's incarnation, unique to it.
pub fn branch_made_message(team: &str, worker: &str, incarnation: &uuid::Uuid) -> String {
    format!("team-scale up: branch of worker {worker} of team {team} (incarnation {incarnation})")
}

/// Creates branch `b` of the repository at `repo` at its `HEAD` commit, with a reflog whose
/// first entry says `made` ([`branch_made_message`]); refused if the branch exists.
pub fn make_branch(repo: &Path, b: &str, made: &str) -> Result<()> {
    let head = git_ok(repo, &["rev-parse", "--verify", "-q", "HEAD^{commit}"], &[])?;
    git_ok(
        repo,
        &[
            "update-ref",
            "--create-reflog",
            "-m",
            made,
            &format!("refs/heads/{b}"),
            &head,
            "",
        ],
        &[],
    )
    .map(|_| ())
}

/// Whether branch `b`, at `tip`, may be deleted now: `Ok` with another branch that holds its
/// commits (its ref and commit, the witness [`delete_branch`] locks), `Err` with why it stays.
/// The branch must be a real ref (not a symbolic one), proven to be the one `up` made (the
/// oldest entry of its reflog is `made`), checked out in no worktree nor pointed to by a
/// symbolic ref, and its tip must be in
/// the history of another real branch under `refs/heads/` as the refs are right now; a
/// symbolic ref, a tag or a remote-tracking ref holds nothing for this.
fn branch_gate(
    repo: &Path,
    b: &str,
    tip: &str,
    made: &str,
) -> Result<std::result::Result<(String, String), String>> {
    let r = format!("refs/heads/{b}");
    let sym = git::run(repo, &["symbolic-ref", "-q", &r], &[])?;
    if sym.status.success() {
        return Ok(Err(format!(
            "it is a symbolic ref (to {}), not the branch up made",
            String::from_utf8_lossy(&sym.stdout).trim()
        )));
    }
    // Each reflog entry: the commit it names, then its message (the first entry is up's).
    let log = git::run(repo, &["log", "-g", "--format=%H %gs", &r, "--"], &[])?;
    let entries = String::from_utf8_lossy(&log.stdout).into_owned();
    let first = entries
        .lines()
        .last()
        .and_then(|l| l.split_once(' '))
        .map(|(_, gs)| gs.to_string());
    if !log.status.success() || first.as_deref() != Some(made) {
        return Ok(Err(
            "it is not proven to be the one up made (its reflog does not begin with up's entry: a branch made again under that name, or a reflog expired)".into(),
        ));
    }
    if checked_out(repo, b)? {
        return Ok(Err("a worktree has it checked out".into()));
    }
    // A user's alias of the branch (`git symbolic-ref refs/heads/review refs/heads/<b>`)
    // would be left pointing at nothing.
    let syms = git_ok(
        repo,
        &["for-each-ref", "--format=%(refname) %(symref)", "refs/"],
        &[],
    )?;
    if let Some(alias) = syms.lines().find_map(|l| {
        let (name, target) = l.split_once(' ')?;
        (target.trim() == r).then_some(name)
    }) {
        return Ok(Err(format!("the symbolic ref {alias} points to it")));
    }
    let refs = git_ok(
        repo,
        &[
            "for-each-ref",
            "--contains",
            tip,
            "--format=%(refname) %(objectname) %(symref)",
            "refs/heads/",
        ],
        &[],
    )?;
    let witness = refs.lines().find_map(|l| {
        let mut f = l.split(' ');
        let (name, oid, target) = (f.next()?, f.next()?, f.next().unwrap_or(""));
        (name != r && target.is_empty() && !oid.is_empty())
            .then(|| (name.to_string(), oid.to_string()))
    });
    let Some(witness) = witness else {
        return Ok(Err("no other branch reaches its commits".into()));
    };
    // Deleting the branch deletes its reflog: a commit it moved through that no other branch
    // or tag reaches (moved there and back from the main repository, unseen by the
    // worktree's own `HEAD` reflog) would go with it.
    let logged: std::collections::BTreeSet<&str> = entries
        .lines()
        .filter_map(|l| l.split(' ').next())
        .filter(|h| (h.len() == 40 || h.len() == 64) && h.bytes().all(|c| c.is_ascii_hexdigit()))
        .collect();
    for chunk in logged.into_iter().collect::<Vec<_>>().chunks(2000) {
        let exclude = format!("--exclude={b}");
        let mut args = vec!["rev-list", "--ignore-missing", "-n", "1"];
        args.extend(chunk.iter().copied());
        args.extend(["--not", exclude.as_str(), "--branches", "--tags"]);
        if !git_ok(repo, &args, &[])?.trim().is_empty() {
            return Ok(Err(
                "its reflog holds commits no other branch or tag reaches (deleting the branch would take them with its reflog)".into(),
            ));
        }
    }
    Ok(Ok(witness))
}

/// Why the worktree held open as `held` (at `dir`) is in use, if a live process (other than
/// this one) has its working directory, its root, an open file or a mapped file in it.
///
/// A path in `/proc` is the process's own view: one in another mount namespace (a container
/// that bind-mounts the worktree elsewhere) shows another path for the same directory. So a
/// path that names the worktree is a hit, and so is anything that is the worktree by
/// identity (device and inode): a current directory or root, or a directory held open, is
/// reached through its `/proc` link and walked up through `..` (only when it is on the
/// worktree's device; see [`DirsAbove`]), and any other file held open or mapped is looked up
/// among the inodes the worktree holds (read once, through the held directory, when first
/// needed: [`worktree_inodes`]).
fn in_use(held: &StateDir, dir: &Path) -> Option<String> {
    let real = real_path(dir);
    let inside = |l: &Path| l.starts_with(&real) || l.starts_with(dir);
    let cannot =
        |e: &dyn std::fmt::Display| Some(format!("cannot tell whether a process works in it: {e}"));
    let top = match held
        .dup_fd()
        .and_then(|fd| ident_at(&fd, "", true).map_err(|e| Error::io("inspect", dir, e.into())))
    {
        Ok(i) => i.0,
        Err(e) => return cannot(&e),
    };
    let mut above = DirsAbove::new(top);
    let mut inodes: Option<Result<std::collections::HashSet<Ident>>> = None;
    let mut holds = |id: Ident| -> Result<bool> {
        match inodes.get_or_insert_with(|| worktree_inodes(held, top)) {
            Ok(set) => Ok(set.contains(&id)),
            Err(e) => Err(Error::Refused(e.to_string())),
        }
    };
    let me = std::process::id();
    let mut users = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return cannot(&"/proc cannot be read");
    };
    for e in procs.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let base = e.path();
        let link = |n: &Path| std::fs::read_link(n).ok();
        let mut hit = false;
        // Its current directory and root: by path, else by identity.
        for n in ["cwd", "root"] {
            let p = base.join(n);
            if link(&p).is_some_and(|l| inside(&l)) {
                hit = true;
                break;
            }
            match above.below(&p) {
                Ok(true) => {
                    hit = true;
                    break;
                }
                Ok(false) => {}
                Err(e) => return cannot(&e),
            }
        }
        // A file it holds open: by path, else by identity.
        if !hit && let Ok(fds) = std::fs::read_dir(base.join("fd")) {
            for f in fds.flatten() {
                let p = f.path();
                // Sockets, pipes and anonymous inodes have no path (`socket:[...]`).
                let Some(l) = link(&p).filter(|l| l.is_absolute()) else {
                    continue;
                };
                if inside(&l) {
                    hit = true;
                    break;
                }
                let Ok((id, is_dir)) = ident_at(rustix::fs::CWD, &p, false) else {
                    continue; // closed meanwhile
                };
                match if is_dir { above.below(&p) } else { holds(id) } {
                    Ok(true) => {
                        hit = true;
                        break;
                    }
                    Ok(false) => {}
                    Err(e) => return cannot(&e),
                }
            }
        }
        // A file mapped into memory, with no descriptor left open: by path, else by the
        // device and inode the map names.
        if !hit && let Ok(m) = std::fs::read_to_string(base.join("maps")) {
            for l in m.lines() {
                let Some(i) = l.find('/') else {
                    continue;
                };
                if inside(Path::new(l[i..].trim_end_matches(" (deleted)"))) {
                    hit = true;
                    break;
                }
                let Some(id) = map_ident(&l[..i]) else {
                    continue;
                };
                match holds(id) {
                    Ok(true) => {
                        hit = true;
                        break;
                    }
                    Ok(false) => {}
                    Err(e) => return cannot(&e),
                }
            }
        }
        if hit {
            let comm = std::fs::read_to_string(base.join("comm")).unwrap_or_default();
            users.push(format!("{pid} ({})", comm.trim()));
        }
    }
    (!users.is_empty()).then(|| format!("in use by process(es) {}", users.join(", ")))
}

/// A file's device (major, minor) and inode.
type Ident = (u32, u32, u64);

/// The identity of `path` relative to `dir` (the empty path: `dir` itself), and whether it is
/// a directory. A `/proc` magic link is followed unless `nofollow`; attributes come from the
/// file system's cache (`AT_STATX_DONT_SYNC`: a hung network or FUSE server is not waited
/// on, and device and inode never change).
fn ident_at(
    dir: impl std::os::fd::AsFd,
    path: impl rustix::path::Arg,
    nofollow: bool,
) -> std::result::Result<(Ident, bool), rustix::io::Errno> {
    use rustix::fs::{AtFlags, FileType, StatxFlags};
    let mut flags = AtFlags::STATX_DONT_SYNC;
    if nofollow {
        flags |= AtFlags::SYMLINK_NOFOLLOW | AtFlags::EMPTY_PATH;
    }
    let st = rustix::fs::statx(dir, path, flags, StatxFlags::TYPE | StatxFlags::INO)?;
    Ok((
        (st.stx_dev_major, st.stx_dev_minor, st.stx_ino),
        FileType::from_raw_mode(st.stx_mode.into()) == FileType::Directory,
    ))
}

/// The identity a `/proc/<pid>/maps` line names before its path (`addr perms offset
/// major:minor inode`, the numbers of the device in hex); `None` for an anonymous mapping.
fn map_ident(head: &str) -> Option<Ident> {
    let mut f = head.split_ascii_whitespace().skip(3);
    let (maj, min) = f.next()?.split_once(':')?;
    let ino = f.next()?.parse::<u64>().ok().filter(|i| *i != 0)?;
    Some((
        u32::from_str_radix(maj, 16).ok()?,
        u32::from_str_radix(min, 16).ok()?,
        ino,
    ))
}

/// The most `..` steps [`DirsAbove`] takes from one directory; a deeper one is taken for
/// being in the worktree (no path is that deep: `PATH_MAX` allows 2,048 levels).
const DOTDOT_LIMIT: usize = 4096;

/// Whether a directory is the worktree or below it, judged by identity: from the directory
/// (a `/proc` link, followed, as the kernel keeps it, whatever mount namespace it was reached
/// in), `..` one step at a time (each opened `O_PATH`, nothing read), to the top, comparing
/// each with the worktree's device and inode. A directory on another device is not walked (a
/// file system mounted in the worktree keeps it anyway, `mounts_inside`), and every directory
/// a walk passes is remembered, so the processes of one shell cost one walk.
struct DirsAbove {
    top: Ident,
    known: std::collections::HashMap<Ident, bool>,
}

impl DirsAbove {
    fn new(top: Ident) -> Self {
        DirsAbove {
            top,
            known: std::collections::HashMap::from([(top, true)]),
        }
    }

    /// Whether the directory `link` leads to is the worktree or below it (a process gone, or
    /// a link that cannot be followed, is not).
    fn below(&mut self, link: &Path) -> Result<bool> {
        use rustix::fs::{Mode, OFlags};
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let Ok(mut cur) = rustix::fs::open(link, flags, Mode::empty()) else {
            return Ok(false);
        };
        let Ok((mut id, _)) = ident_at(&cur, "", true) else {
            return Ok(false);
        };
        if (id.0, id.1) != (self.top.0, self.top.1) {
            return Ok(false);
        }
        let mut passed = Vec::new();
        let found = loop {
            if let Some(k) = self.known.get(&id) {
                break *k;
            }
            if passed.len() >= DOTDOT_LIMIT {
                return Err(Error::Refused(format!(
                    "{} is more than {DOTDOT_LIMIT} directories deep",
                    link.display()
                )));
            }
            passed.push(id);
            let Ok(up) = rustix::fs::openat(&cur, "..", flags, Mode::empty()) else {
                break false;
            };
            let Ok((up_id, _)) = ident_at(&up, "", true) else {
                break false;
            };
            if up_id == id {
                break false; // the top
            }
            (cur, id) = (up, up_id);
        };
        for p in passed {
            self.known.insert(p, found);
        }
        Ok(found)
    }
}

/// Every file and directory the worktree held as `held` holds (device and inode), read
/// through the held descriptor, following no symlink and entering no directory on another
/// device than the worktree's `top`; bounded like [`walk`].
fn worktree_inodes(held: &StateDir, top: Ident) -> Result<std::collections::HashSet<Ident>> {
    use rustix::fs::{Mode, OFlags};
    let io = |e: rustix::io::Errno| Error::io("read the held worktree", held.path(), e.into());
    let mut set = std::collections::HashSet::from([top]);
    let mut stack = vec![held.dup_fd()?];
    while let Some(fd) = stack.pop() {
        for e in rustix::fs::Dir::read_from(&fd).map_err(io)? {
            let e = e.map_err(io)?;
            let n = e.file_name();
            if n.to_bytes() == b"." || n.to_bytes() == b".." {
                continue;
            }
            if set.len() > WALK_LIMIT {
                return Err(Error::Refused(format!(
                    "{} holds more than {WALK_LIMIT} entries",
                    held.path().display()
                )));
            }
            let Ok((id, is_dir)) = ident_at(&fd, n, true) else {
                continue; // gone meanwhile
            };
            set.insert(id);
            if is_dir && (id.0, id.1) == (top.0, top.1) {
                let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                if let Ok(sub) = rustix::fs::openat(&fd, n, flags, Mode::empty()) {
                    stack.push(sub);
                }
            }
        }
    }
    Ok(set)
}

/// Whether branch `b` is checked out in a worktree of the repository at `repo` (its main
/// worktree included): `update-ref -d` would delete it from under that worktree.
fn checked_out(repo: &Path, b: &str) -> Result<bool> {
    let list = git_ok(repo, &["worktree", "list", "--porcelain"], &[])?;
    let want = format!("branch refs/heads/{b}");
    Ok(list.lines().any(|l| l == want))
}

/// Deletes branch `b` of the repository at `repo` if it still points at `tip` (what
/// [`ResourceReport::branch_to_delete`] names; the teardown records its intent first) and
/// still passes the gate ([`branch_gate`], `made` being [`branch_made_message`]) against the
/// refs as they are now: a batch deleting several branches judges each after the ones before
/// it went, so two branches on one commit never vouch for each other. One ref transaction
/// deletes the ref itself (never the branch a symbolic ref points to) and verifies the
/// witness branch at the commit the gate saw, so a concurrent deletion of the witness makes
/// one of the two fail. `Err` says why it was kept.
pub fn delete_branch(repo: &Path, b: &str, tip: &str, made: &str) -> Result<()> {
    let (witness, at) = branch_gate(repo, b, tip, made)?.map_err(Error::Refused)?;
    let tx = format!(
        "option no-deref\nverify {witness} {at}\noption no-deref\ndelete refs/heads/{b} {tip}\n"
    );
    git::run_input(repo, &["update-ref", "--stdin"], tx.as_bytes()).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_v2_finds_ignored_nested_repos_and_dirty_submodules() {
        let out = [
            "1 .M N... 100644 100644 100644 abc abc src/main.rs",
            "1 .M SC.. 160000 160000 160000 abc abc sub one",
            "1 .M S... 160000 160000 160000 abc abc clean-sub",
            "1 .M S..U 160000 160000 160000 abc abc sub two",
            "2 R. N... 100644 100644 100644 abc abc R100 new name.txt",
            "old name.txt",
            "u UU N... 100644 100644 100644 100644 a b c conflicted.txt",
            "? untracked file.txt",
            "? nested repo/",
            "! .env",
            "! scratch dir/",
            "",
        ]
        .join("\0");
        let u = parse_status_v2(out.as_bytes());
        assert_eq!(u.ignored, vec![".env", "scratch dir/"]);
        assert_eq!(u.nested_repos, vec!["nested repo/"]);
        assert_eq!(u.submodules, vec!["sub one", "sub two"]);
        assert!(u.describe().contains("nested repositories: nested repo/"));
        assert!(parse_status_v2(b"1 .M N... 100644 100644 100644 a b f\0? x\0").is_empty());
    }

    #[test]
    fn ls_files_s_finds_unmerged_paths() {
        let out = [
            "100644 aaaa 0\tplain",
            "100644 bbbb 1\tb.bin",
            "100644 cccc 2\tb.bin",
            "100644 dddd 3\tb.bin",
            "100644 eeee 3\tonly theirs",
            "160000 ffff 0\tsub",
            "",
        ]
        .join("\0");
        assert_eq!(unmerged(out.as_bytes()), vec!["b.bin", "only theirs"]);
        assert!(unmerged(b"100644 aaaa 0\tx\0").is_empty());
    }

    #[test]
    fn a_maps_line_names_its_device_and_inode() {
        assert_eq!(
            map_ident("7f3a1c000000-7f3a1c021000 r--p 00000000 fd:01 1315046"),
            Some((0xfd, 1, 1315046))
        );
        assert_eq!(
            map_ident("7ffd8a5d6000-7ffd8a5f7000 rw-p 00000000 00:00 0"),
            None
        );
    }

    #[test]
    fn ls_files_v_finds_flagged_entries() {
        let out = [
            "H plain",
            "h assumed",
            "S skipped",
            "s both",
            "S sparse gone",
            "h deleted",
            "",
        ]
        .join("\0");
        let (hidden, sparse) =
            parse_ls_files_v(out.as_bytes(), |p| !p.contains("gone") && p != "deleted");
        assert_eq!(hidden, vec!["assumed", "skipped", "both", "deleted"]);
        assert_eq!(sparse, vec!["sparse gone"]);
    }

    #[test]
    fn empty_dirs_are_found_and_the_walk_is_bounded() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::fs::create_dir_all(p.join("a/b/empty")).unwrap();
        std::fs::create_dir_all(p.join("full")).unwrap();
        std::fs::write(p.join("full/f"), "x").unwrap();
        std::fs::create_dir_all(p.join(".git/refs/empty")).unwrap();
        std::os::unix::fs::symlink("/", p.join("link")).unwrap();
        assert_eq!(empty_dirs(p, 100).unwrap(), vec!["a/b/empty/"]);
        let _sock = std::os::unix::net::UnixListener::bind(p.join("full/ctl")).unwrap();
        assert_eq!(walk(p, 100).unwrap().special_files, vec!["full/ctl"]);
        assert!(empty_dirs(p, 3).is_err());
    }
}

#[cfg(test)]
mod trash_tests {
    use super::*;

    /// The last gate before a worktree goes: what the held directory holds, byte for byte,
    /// against a commit's tree, through the held descriptor (the path may name another
    /// directory by then).
    #[test]
    fn the_held_worktree_is_checked_against_the_saved_tree_byte_for_byte() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().canonicalize().unwrap();
        let repo = base.join("repo");
        std::fs::create_dir_all(repo.join("src")).unwrap();
        let g = |args: &[&str]| {
            crate::git::run_ok(
                &repo,
                &[&["-c", "user.name=t", "-c", "user.email=t@t"], args].concat(),
                &[],
            )
            .unwrap()
        };
        g(&["init", "-q"]);
        std::fs::write(repo.join("src/a.txt"), "a\r\n").unwrap();
        std::os::unix::fs::symlink("src/a.txt", repo.join("link")).unwrap();
        g(&["-c", "core.autocrlf=false", "add", "-A"]);
        g(&["commit", "-qm", "c"]);
        let head = g(&["rev-parse", "HEAD"]);
        let wt = base.join("wt");
        g(&["worktree", "add", "-q", "--detach", &wt.to_string_lossy()]);
        let held = crate::fsutil::state_dir(&base, &wt, false)
            .unwrap()
            .unwrap();
        assert_eq!(
            differs_from_saved(&held, &repo, &head).unwrap(),
            Vec::<String>::new()
        );
        std::fs::write(wt.join("src/a.txt"), "a\n").unwrap();
        std::fs::write(wt.join("new.txt"), "n").unwrap();
        std::fs::create_dir_all(wt.join("empty")).unwrap();
        // The path now names another directory: the held one is what is read.
        std::fs::rename(&wt, base.join("moved")).unwrap();
        std::fs::create_dir_all(&wt).unwrap();
        assert_eq!(
            differs_from_saved(&held, &repo, &head).unwrap(),
            vec!["empty/ (empty)", "new.txt", "src/a.txt"]
        );
        // A repository of its own where the worktree's `.git` file was.
        let moved = base.join("moved");
        std::fs::remove_file(moved.join(".git")).unwrap();
        std::fs::create_dir_all(moved.join(".git")).unwrap();
        assert!(
            differs_from_saved(&held, &repo, &head).unwrap().contains(
                &".git (a repository of its own, not the worktree's .git file)".to_string()
            )
        );
        // A socket (or a FIFO, a device node) holds nothing git keeps, and is not deleted.
        std::fs::remove_dir_all(moved.join(".git")).unwrap();
        std::fs::write(moved.join(".git"), "gitdir: x\n").unwrap();
        let _sock = std::os::unix::net::UnixListener::bind(moved.join("empty/ctl")).unwrap();
        assert!(
            differs_from_saved(&held, &repo, &head)
                .unwrap()
                .contains(&"empty/ctl (a socket, FIFO or device node)".to_string())
        );
    }

    /// A record whose worktree directory is away goes only when it holds nothing of its own,
    /// read through git on the record alone, in either ref storage.
    #[test]
    fn an_away_worktrees_record_is_read_through_git() {
        for format in ["files", "reftable"] {
            let t = tempfile::tempdir().unwrap();
            let base = t.path().canonicalize().unwrap();
            let repo = base.join("repo");
            std::fs::create_dir_all(&repo).unwrap();
            let g = |dir: &Path, args: &[&str]| {
                crate::git::run_ok(
                    dir,
                    &[&["-c", "user.name=t", "-c", "user.email=t@t"], args].concat(),
                    &[],
                )
                .unwrap()
            };
            let fmt = format!("--ref-format={format}");
            if !crate::git::run(&repo, &["init", "-q", &fmt], &[])
                .unwrap()
                .status
                .success()
            {
                continue; // a git older than 2.45 makes no reftable
            }
            g(&repo, &["commit", "-q", "--allow-empty", "-m", "base"]);
            let wt = base.join("wt");
            g(
                &repo,
                &["worktree", "add", "-q", "--detach", &wt.to_string_lossy()],
            );
            let rec = crate::git::Worktree::find(&repo, &wt).unwrap();
            assert_eq!(rec.ref_format().unwrap(), format);
            let holds = |w: &crate::git::Worktree| away_record(w, &repo, "t", "worker-1").unwrap();
            std::fs::rename(&wt, base.join("away")).unwrap();
            assert_eq!(holds(&rec), Vec::<String>::new(), "{format}");
            std::fs::rename(base.join("away"), &wt).unwrap();
            g(&wt, &["commit", "-q", "--allow-empty", "-m", "reset away"]);
            g(&wt, &["reset", "-q", "--hard", "HEAD~1"]);
            g(&wt, &["reset", "-q", "--hard", "HEAD"]);
            std::fs::remove_dir_all(&wt).unwrap();
            let h = holds(&rec);
            assert!(
                h.len() == 1 && h[0].starts_with("commits only it reaches: "),
                "{format}: {h:?}"
            );
            std::fs::write(rec.admin.join("WIP_HEAD"), "x\n").unwrap();
            assert_eq!(holds(&rec), vec!["files of its own: WIP_HEAD"], "{format}");
        }
    }

    /// `status` shows what stays in the trash: entries older than the age asked, not through
    /// a symlink (a symlinked trash is an error, not "empty").
    #[test]
    fn trash_left_counts_what_stays() {
        let d = tempfile::tempdir().unwrap();
        let root = StateRoot::resolve(d.path(), None).unwrap();
        root.ensure().unwrap();
        let team = crate::paths::TeamName::new("t").unwrap();
        let none = std::time::Duration::ZERO;
        assert_eq!(trash_left(&root, &team, none).unwrap(), 0, "no trash yet");
        let trash = root.trash_dir(&team);
        std::fs::create_dir_all(trash.join("abc-worker-1/d")).unwrap();
        std::fs::write(trash.join("abc-worker-1.sh"), "x").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(trash_left(&root, &team, none).unwrap(), 2);
        let hour = std::time::Duration::from_secs(3600);
        assert_eq!(trash_left(&root, &team, hour).unwrap(), 0, "fresh entries");
        std::fs::remove_dir_all(&trash).unwrap();
        std::os::unix::fs::symlink(d.path(), &trash).unwrap();
        assert!(trash_left(&root, &team, none).is_err());
    }
}
