//! The only code that runs git: always `git -C <dir>`, never through a shell, with no terminal
//! prompt and none of the caller's `GIT_DIR` / `GIT_WORK_TREE` / `GIT_INDEX_FILE`.
//!
//! Git runs commands that a repository's own files name (`core.fsmonitor`, and whatever
//! a nested repository's config says when a command recurses into it), and finds a worktree's
//! repository through the worktree's `.git` file. A worker writes its worktree, so neither is
//! trusted: every call here turns those commands off on its command line (which outranks every
//! config file and reaches the git processes it starts), and a worker's worktree is reached
//! only through [`Worktree`], the repository's own record of it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::error::{Error, Result};

/// Options given to every git call: no file system monitor (a command a repository's config
/// names, run by `status`, `add`, `diff`...), no recursion into submodules (each has a config
/// of its own), and no replace objects (`refs/replace/*`, which anyone who can write a ref,
/// a worker included, can add: `git replace main F` with F a child of a worker's commit made
/// `main` look like it reached that commit, and the worker branch was deleted as merged;
/// what is reachable is judged on the objects as they are). The user's own hooks stay on
/// (`git worktree add` runs `post-checkout`, which Git LFS needs): they live in the
/// repository's common directory, which a worker's worktree does not reach.
const HARDENED: [&str; 5] = [
    "--no-replace-objects",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "submodule.recurse=false",
];

/// Runs `git -C <dir> <args>` with `env` added.
pub fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<Output> {
    command(dir, args, env)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::io("run git in", dir, e))
}

/// Like [`run_ok`], with `input` on git's standard input (`update-ref --stdin`).
pub fn run_input(dir: &Path, args: &[&str], input: &[u8]) -> Result<String> {
    use std::io::Write;
    let mut child = command(dir, args, &[])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::io("run git in", dir, e))?;
    let wrote = child.stdin.take().map(|mut i| i.write_all(input));
    let o = child
        .wait_with_output()
        .map_err(|e| Error::io("run git in", dir, e))?;
    if let Some(Err(e)) = wrote {
        return Err(Error::io("write to git in", dir, e));
    }
    checked(dir, args, o)
}

fn command(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut c = Command::new("git");
    c.args(HARDENED).arg("-C").arg(dir).args(args);
    crate::childenv::scrub(&mut c);
    c.env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_COMMON_DIR")
        .env_remove("GIT_CONFIG_PARAMETERS")
        .env_remove("GIT_CONFIG_COUNT");
    for (k, v) in env {
        c.env(k, v);
    }
    c.env("GIT_TERMINAL_PROMPT", "0");
    c
}

/// Whether the git that [`run`] runs is at least `major.minor` (`false` when it cannot say).
pub fn at_least(major: u32, minor: u32) -> bool {
    static VERSION: std::sync::OnceLock<Option<(u32, u32)>> = std::sync::OnceLock::new();
    let v = VERSION.get_or_init(|| {
        let o = Command::new("git")
            .arg("version")
            .stdin(Stdio::null())
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&o.stdout);
        let mut n = text
            .split_whitespace()
            .nth(2)?
            .split('.')
            .map(|p| p.parse::<u32>().ok());
        Some((n.next()??, n.next()??))
    });
    v.is_some_and(|v| v >= (major, minor))
}

/// Like [`run`], but a failure is an error naming the command; returns trimmed stdout.
pub fn run_ok(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<String> {
    let o = run(dir, args, env)?;
    checked(dir, args, o)
}

fn checked(dir: &Path, args: &[&str], o: Output) -> Result<String> {
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

/// A linked worktree of a repository, as the repository records it: its administrative
/// directory (`<common dir>/worktrees/<id>`, the one whose `gitdir` names this worktree's
/// `.git`) and the common directory, both found from the repository, never from the
/// worktree's own `.git` file, which whoever writes the worktree can point anywhere.
#[derive(Debug, Clone)]
pub struct Worktree {
    pub path: PathBuf,
    pub admin: PathBuf,
    pub common: PathBuf,
    /// Where git starts, with `GIT_WORK_TREE=.`, when set ([`Worktree::pinned`]).
    pub pin: Option<PathBuf>,
    /// The repository's ref storage, once asked ([`Worktree::ref_format`]).
    ref_format: std::sync::OnceLock<String>,
}

impl Worktree {
    /// The worktree at `path` of the repository at `repo`. An error when the repository
    /// records no such worktree, or more than one.
    pub fn find(repo: &Path, path: &Path) -> Result<Worktree> {
        let common = PathBuf::from(run_ok(
            repo,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
            &[],
        )?);
        // As git records it: the real path (the worktree's own directory is not resolved, so a
        // symlink put in its place does not lead elsewhere).
        let want = path.join(".git");
        let real = path
            .parent()
            .and_then(|p| std::fs::canonicalize(p).ok())
            .zip(path.file_name())
            .map(|(p, n)| p.join(n).join(".git"));
        let mut found = Vec::new();
        let dir = common.join("worktrees");
        let entries = std::fs::read_dir(&dir).map_err(|e| Error::io("read", &dir, e))?;
        for e in entries.flatten() {
            let admin = e.path();
            // A record is a directory (not a symlink to one elsewhere) with a `gitdir` file.
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let Ok(named) = std::fs::read_to_string(admin.join("gitdir")) else {
                continue;
            };
            let named = Path::new(named.trim_end_matches('\n'));
            if named == want || real.as_deref() == Some(named) {
                found.push(admin);
            }
        }
        match found.len() {
            1 => Ok(Worktree {
                path: path.to_path_buf(),
                admin: found.remove(0),
                common,
                pin: None,
                ref_format: std::sync::OnceLock::new(),
            }),
            n => Err(Error::Refused(format!(
                "the repository at {} records {n} worktrees at {} (one expected)",
                repo.display(),
                path.display()
            ))),
        }
    }

    /// The keys the worktree's own config (`config.worktree` in its administrative directory,
    /// read by git when the repository has `extensions.worktreeConfig`, as `git
    /// sparse-checkout` sets) sets beyond the sparse-checkout ones: that file is the
    /// worktree's, so a worker can write it, and a key like `filter.<x>.clean` names a command
    /// git runs. Read as data (`git config --file`, which follows no `include`); a
    /// `config.worktree` that is not a plain file counts as foreign too.
    pub fn foreign_config(&self) -> Result<Vec<String>> {
        const SPARSE: [&str; 3] = [
            "core.sparsecheckout",
            "core.sparsecheckoutcone",
            "index.sparse",
        ];
        let f = self.admin.join("config.worktree");
        match std::fs::symlink_metadata(&f) {
            Err(_) => return Ok(Vec::new()),
            Ok(m) if !m.is_file() => {
                return Ok(vec![format!("{} (not a plain file)", f.display())]);
            }
            Ok(_) => {}
        }
        let path = f.to_string_lossy();
        let keys = run_ok(
            &self.common,
            &["config", "--file", &path, "--list", "--name-only"],
            &[],
        )?;
        Ok(keys
            .lines()
            .map(str::to_ascii_lowercase)
            .filter(|k| !SPARSE.contains(&k.as_str()))
            .collect())
    }

    /// How the repository stores its refs: `files`, or `reftable` (git 2.45 and later), as
    /// `git rev-parse --show-ref-format` says in its common directory. A git older than 2.45
    /// knows only `files` (it cannot open a repository that stores them otherwise: every git
    /// call on one fails).
    pub fn ref_format(&self) -> Result<&str> {
        if let Some(f) = self.ref_format.get() {
            return Ok(f);
        }
        let f = if at_least(2, 45) {
            run_ok(&self.common, &["rev-parse", "--show-ref-format"], &[])?
        } else {
            "files".to_string()
        };
        Ok(self.ref_format.get_or_init(|| f))
    }

    /// This worktree, with git started in `pin` (a path that reaches the very directory the
    /// caller holds open, [`crate::fsutil::StateDir::pinned_path`]) and told its work tree is
    /// `.`: git resolves that once as it starts and then works relative to it, so a directory
    /// put at the worktree's name while a save runs is not what git saves.
    pub fn pinned(mut self, pin: PathBuf) -> Worktree {
        self.pin = Some(pin);
        self
    }

    /// Runs `git <args>` in this worktree, its repository given to git explicitly
    /// (`GIT_DIR`, `GIT_COMMON_DIR`, `GIT_WORK_TREE`), so the worktree's `.git` file and its
    /// administrative directory's `commondir` file are never followed.
    pub fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Result<Output> {
        let admin = self.admin.to_string_lossy();
        let common = self.common.to_string_lossy();
        let (dir, work_tree) = match &self.pin {
            Some(p) => (p.as_path(), std::borrow::Cow::Borrowed(".")),
            None => (self.path.as_path(), self.path.to_string_lossy()),
        };
        let mut all: Vec<(&str, &str)> = vec![
            ("GIT_DIR", &admin),
            ("GIT_COMMON_DIR", &common),
            ("GIT_WORK_TREE", &work_tree),
        ];
        all.extend_from_slice(env);
        run(dir, args, &all)
    }

    /// Like [`Worktree::run`], but a failure is an error naming the command; returns trimmed
    /// stdout.
    pub fn run_ok(&self, args: &[&str], env: &[(&str, &str)]) -> Result<String> {
        let o = self.run(args, env)?;
        checked(&self.path, args, o)
    }

    /// Runs `git <args>` on this worktree's record alone, for a worktree whose directory is
    /// away: started in the record (`<common dir>/worktrees/<id>`), which is given to git as
    /// `GIT_DIR` (with `GIT_COMMON_DIR`), with `core.bare=true` on the command line, so git
    /// has no work tree (a command that needs one fails) and reads only the record and the
    /// repository: its `HEAD`, reflog, index and refs.
    pub fn run_record(&self, args: &[&str], env: &[(&str, &str)]) -> Result<Output> {
        let admin = self.admin.to_string_lossy();
        let common = self.common.to_string_lossy();
        let mut all: Vec<(&str, &str)> = vec![("GIT_DIR", &admin), ("GIT_COMMON_DIR", &common)];
        all.extend_from_slice(env);
        let mut a = vec!["-c", "core.bare=true"];
        a.extend_from_slice(args);
        run(&self.admin, &a, &all)
    }

    /// Like [`Worktree::run_record`], but a failure is an error naming the command; returns
    /// trimmed stdout.
    pub fn run_record_ok(&self, args: &[&str], env: &[(&str, &str)]) -> Result<String> {
        let o = self.run_record(args, env)?;
        checked(&self.admin, args, o)
    }
}
