//! Nothing a worker wrote is lost: what git cannot save (ignored files, nested repositories,
//! checked-out submodules) keeps its worktree, named in `down`'s output and in `status`; and
//! nothing a worker wrote in its worktree makes a teardown run a command of its choosing.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use tests::{Sandbox, assert_code, json_lines};

/// Runs git in `dir` (tests only run git to set up and inspect fixtures).
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "protocol.file.allow=always",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// A workspace that is a git repository ignoring `.env` and `scratch/`, with a submodule when
/// `submodule` is set; a team with two workers in detached worktrees. Returns worker-2's
/// worktree.
fn setup(sb: &Sandbox, submodule: bool) -> PathBuf {
    git(&sb.ws, &["init", "-q"]);
    std::fs::write(sb.ws.join(".gitignore"), ".env\nscratch/\n").unwrap();
    std::fs::write(sb.ws.join("README"), "hello\n").unwrap();
    git(&sb.ws, &["add", "."]);
    git(&sb.ws, &["commit", "-qm", "init"]);
    if submodule {
        let src = sb.dir.path().join("subsrc");
        std::fs::create_dir_all(&src).unwrap();
        git(&src, &["init", "-q"]);
        std::fs::write(src.join("lib.txt"), "v1\n").unwrap();
        git(&src, &["add", "."]);
        git(&src, &["commit", "-qm", "sub"]);
        git(
            &sb.ws,
            &["submodule", "add", "-q", &src.display().to_string(), "sub"],
        );
        git(&sb.ws, &["commit", "-qm", "add sub"]);
    }
    assert_code(
        &sb.run(
            "team-scale",
            &[
                "init",
                "demo",
                "--private",
                "--worktree",
                "detached",
                "--worker-cmd",
                "exec sleep 100000",
            ],
        ),
        0,
    );
    assert_code(
        &sb.run("team-scale", &["up", "demo", "2", "--ready-timeout", "0"]),
        0,
    );
    let wt = sb.ws.join(".team/worktrees/demo/worker-2");
    assert!(wt.join("README").exists(), "worker-2 has a worktree");
    // A tracked edit, which git can save.
    std::fs::write(wt.join("README"), "hello, edited\n").unwrap();
    wt
}

/// worker-2's record in `down`'s JSON lines.
fn worker_2(lines: &[Value]) -> &Value {
    lines
        .iter()
        .find(|l| l["type"] == "worker" && l["worker"] == "worker-2")
        .unwrap_or_else(|| panic!("no record of worker-2: {lines:?}"))
}

fn down_worker_2(sb: &Sandbox) -> (i32, Vec<Value>) {
    let o = sb.run(
        "team-scale",
        &[
            "down", "demo", "--worker", "worker-2", "--force", "--grace", "1s", "--json",
        ],
    );
    (o.status.code().unwrap_or(-1), json_lines(&o.stdout))
}

/// `down` keeps the worktree: content intact, exit 3, the path named in the output and in
/// `status`, the tracked edit saved on a branch.
fn assert_kept(sb: &Sandbox, wt: &Path, files: &[(&str, &str)], kind: &str) {
    let (code, lines) = down_worker_2(sb);
    for (rel, content) in files {
        assert_eq!(
            std::fs::read_to_string(wt.join(rel)).ok().as_deref(),
            Some(*content),
            "{rel} lost; down said {lines:?}"
        );
    }
    assert_eq!(code, 3, "cleanup debt remains: {lines:?}");
    let w = worker_2(&lines);
    assert_eq!(w["worktree_kept"], wt.display().to_string(), "{w}");
    assert!(
        !w["unsavable"][kind].as_array().unwrap().is_empty(),
        "{kind}: {w}"
    );
    let saved = w["saved_branch"]
        .as_str()
        .expect("the tracked edit was saved");
    assert_eq!(
        git(&sb.ws, &["show", &format!("{saved}:README")]),
        "hello, edited"
    );
    let st = json_lines(&sb.run("team-scale", &["status", "demo", "--json"]).stdout);
    let sw = st
        .iter()
        .find(|l| l["type"] == "worker" && l["worker"] == "worker-2")
        .expect("the record stays while its worktree is kept");
    assert_eq!(sw["lifecycle"], "removing");
    assert!(
        sw["removal_reasons"]
            .to_string()
            .contains(&wt.display().to_string()),
        "status names the kept worktree: {sw}"
    );
    assert!(
        git(&sb.ws, &["worktree", "list"]).contains(&wt.display().to_string()),
        "still a registered worktree"
    );
}

#[test]
fn an_ignored_env_file_keeps_its_worktree() {
    let sb = Sandbox::new();
    let wt = setup(&sb, false);
    std::fs::write(wt.join(".env"), "API_KEY=secret\n").unwrap();
    assert_kept(&sb, &wt, &[(".env", "API_KEY=secret\n")], "ignored");

    // Once the user moved it away, a retry saves nothing new and removes the worktree.
    std::fs::remove_file(wt.join(".env")).unwrap();
    let before = git(
        &sb.ws,
        &["for-each-ref", "--format=%(refname)", "refs/heads/team/"],
    );
    assert_code(&sb.run("team-scale", &["reconcile", "demo"]), 0);
    assert!(!wt.exists());
    assert_eq!(
        git(
            &sb.ws,
            &["for-each-ref", "--format=%(refname)", "refs/heads/team/"]
        ),
        before,
        "the same state is not saved twice"
    );
}

#[test]
fn an_ignored_scratch_dir_keeps_its_worktree() {
    let sb = Sandbox::new();
    let wt = setup(&sb, false);
    std::fs::create_dir_all(wt.join("scratch/deep")).unwrap();
    std::fs::write(wt.join("scratch/deep/notes.md"), "findings\n").unwrap();
    assert_kept(
        &sb,
        &wt,
        &[("scratch/deep/notes.md", "findings\n")],
        "ignored",
    );
}

#[test]
fn a_nested_repository_keeps_its_worktree() {
    let sb = Sandbox::new();
    let wt = setup(&sb, false);
    let nested = wt.join("tools/nested");
    std::fs::create_dir_all(&nested).unwrap();
    git(&nested, &["init", "-q"]);
    std::fs::write(nested.join("work.txt"), "uncommitted\n").unwrap();
    std::fs::write(nested.join("committed.txt"), "c\n").unwrap();
    git(&nested, &["add", "committed.txt"]);
    git(&nested, &["commit", "-qm", "only here"]);
    assert_kept(
        &sb,
        &wt,
        &[
            ("tools/nested/work.txt", "uncommitted\n"),
            ("tools/nested/committed.txt", "c\n"),
        ],
        "nested_repos",
    );
    assert!(nested.join(".git").is_dir());
}

#[test]
fn a_dirty_submodule_keeps_its_worktree() {
    let sb = Sandbox::new();
    let wt = setup(&sb, true);
    git(&wt, &["submodule", "update", "--init", "-q"]);
    std::fs::write(wt.join("sub/lib.txt"), "v2, unsaved\n").unwrap();
    assert_kept(&sb, &wt, &[("sub/lib.txt", "v2, unsaved\n")], "submodules");
}

/// An edit hidden from `git status` by an index flag is saved, not lost with the worktree.
fn hidden_edit_is_saved(flag: &str) {
    let sb = Sandbox::new();
    let wt = setup(&sb, false);
    // The worker hides its edit of README.
    git(&wt, &["update-index", flag, "README"]);
    assert_eq!(
        git(&wt, &["status", "--porcelain"]),
        "",
        "git status sees nothing"
    );
    let (code, lines) = down_worker_2(&sb);
    assert_eq!(code, 0, "{lines:?}");
    let w = worker_2(&lines);
    let saved = w["saved_branch"]
        .as_str()
        .unwrap_or_else(|| panic!("the hidden edit was not saved: {w}"));
    assert_eq!(
        git(&sb.ws, &["show", &format!("{saved}:README")]),
        "hello, edited"
    );
    assert!(!wt.exists(), "everything was saved, so the worktree goes");
}

#[test]
fn an_assume_unchanged_edit_is_saved() {
    hidden_edit_is_saved("--assume-unchanged");
}

#[test]
fn a_skip_worktree_edit_is_saved() {
    hidden_edit_is_saved("--skip-worktree");
}

#[test]
fn an_empty_directory_keeps_its_worktree() {
    let sb = Sandbox::new();
    let wt = setup(&sb, false);
    std::fs::create_dir_all(wt.join("made/by-worker")).unwrap();
    assert_kept(&sb, &wt, &[], "empty_dirs");
    assert!(wt.join("made/by-worker").is_dir());
    let st = sb.run("team-scale", &["status", "demo"]);
    assert!(
        String::from_utf8_lossy(&st.stdout).contains("empty directories: made/by-worker/"),
        "status names the empty directory: {}",
        String::from_utf8_lossy(&st.stdout)
    );
}

/// Staged content that differs from the file on disk (`git add`, then an edit) and a commit
/// held only by a ref of the worktree (`refs/worktree/*`, and since the thirty-second
/// black-box round `refs/rewritten/*`, where a stopped `rebase --rebase-merges` keeps its
/// labels) are kept: a saved branch records the files on disk and reachable commits only, so
/// removing the worktree would lose them.
#[test]
fn staged_changes_and_worktree_refs_keep_their_worktree() {
    for case in ["staged", "worktree-ref", "rewritten-ref"] {
        let sb = Sandbox::new();
        let wt = setup(&sb, false);
        match case {
            "staged" => {
                std::fs::write(wt.join("README"), "staged\n").unwrap();
                git(&wt, &["add", "README"]);
                std::fs::write(wt.join("README"), "on disk\n").unwrap();
            }
            _ => {
                std::fs::write(wt.join("w3.txt"), "precious\n").unwrap();
                git(&wt, &["add", "w3.txt"]);
                git(
                    &wt,
                    &[
                        "-c",
                        "user.name=t",
                        "-c",
                        "user.email=t@t",
                        "commit",
                        "-q",
                        "-m",
                        "w3 work",
                    ],
                );
                let r = if case == "worktree-ref" {
                    "refs/worktree/keep"
                } else {
                    "refs/rewritten/keep"
                };
                git(&wt, &["update-ref", r, "HEAD"]);
                git(&wt, &["checkout", "-q", "--detach", "HEAD~1"]);
            }
        }
        let (code, lines) = down_worker_2(&sb);
        let out = format!("{lines:?}");
        assert!(wt.exists(), "{case}: the worktree was removed: {out}");
        assert_eq!(code, 3, "{case}: cleanup debt remains: {out}");
        let key = if case == "staged" {
            "staged_differs"
        } else {
            "worktree_refs"
        };
        assert!(out.contains(key), "{case}: named as {key}: {out}");
    }
}

// Attacks of the twelfth black-box round: what a worker can write in its own worktree (or,
// for the branch, in `.team`) must never make a teardown run its commands, lose its commits,
// or delete a branch the tools did not make.

/// A nested repository whose config names a command git runs (`core.fsmonitor`), for a
/// worker to leave in its worktree; the command would create `marker`.
fn hostile_repo(dir: &Path, marker: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
    std::fs::write(dir.join("work.txt"), "committed, only here\n").unwrap();
    git(dir, &["add", "work.txt"]);
    git(dir, &["commit", "-qm", "only here"]);
    git(
        dir,
        &[
            "config",
            "core.fsmonitor",
            &format!("touch {}; false", marker.display()),
        ],
    );
}

#[test]
fn a_staged_nested_repository_keeps_its_worktree_and_runs_nothing_of_its_own() {
    let sb = Sandbox::new();
    let wt = setup(&sb, false);
    let marker = sb.dir.path().join("ran");
    // The worker commits work in a repository of its own and stages it: a gitlink, whose
    // commit exists only in that repository.
    hostile_repo(&wt.join("sub"), &marker);
    git(&wt, &["add", "sub"]);
    assert_kept(
        &sb,
        &wt,
        &[("sub/work.txt", "committed, only here\n")],
        "submodules",
    );
    assert!(
        !marker.exists(),
        "down ran a command named by the nested repository's config"
    );
    let o = sb.run("team-scale", &["reconcile", "demo"]);
    assert!(!marker.exists(), "reconcile ran it: {o:?}");
    assert!(
        wt.join("sub/.git").is_dir(),
        "the nested repository is kept"
    );
}

#[test]
fn a_worktree_pointed_at_another_repository_is_reached_through_its_own() {
    let sb = Sandbox::new();
    let wt = setup(&sb, false);
    let marker = sb.dir.path().join("ran");
    let evil = sb.dir.path().join("evil");
    hostile_repo(&evil, &marker);
    // The worker points its worktree's `.git` file at its own repository.
    std::fs::write(
        wt.join(".git"),
        format!("gitdir: {}\n", evil.join(".git").display()),
    )
    .unwrap();
    let (code, lines) = down_worker_2(&sb);
    assert!(
        !marker.exists(),
        "down ran a command named by the repository the worktree's .git file points at: {lines:?}"
    );
    let o = sb.run("team-scale", &["reconcile", "demo"]);
    assert!(!marker.exists(), "reconcile ran it: {o:?}");
    // The edit was saved through the workspace's own record of the worktree, in the workspace.
    let w = worker_2(&lines);
    let saved = w["saved_branch"].as_str().expect("the edit was saved");
    assert_eq!(
        git(&sb.ws, &["show", &format!("{saved}:README")]),
        "hello, edited"
    );
    assert_eq!(
        git(&evil, &["for-each-ref", "--format=%(refname)"]),
        "refs/heads/main",
        "nothing was written into the other repository"
    );
    // The worktree goes (into the trash, deleted there, following no symlink), its record
    // with it; the other repository stays as it was.
    assert_eq!(code, 0, "{lines:?}");
    assert!(!wt.exists(), "the worktree is gone");
    assert!(evil.join(".git").is_dir() && evil.join("work.txt").exists());
}

/// A team in branch mode whose worker-2's record is edited to name the user's own branch as
/// one the tools made: `down` refuses before any effect, and the branch stays.
#[test]
fn a_recorded_branch_that_is_not_the_workers_own_is_never_deleted() {
    let sb = Sandbox::new();
    git(&sb.ws, &["init", "-q"]);
    std::fs::write(sb.ws.join("README"), "hello\n").unwrap();
    git(&sb.ws, &["add", "."]);
    git(&sb.ws, &["commit", "-qm", "init"]);
    git(&sb.ws, &["branch", "release"]); // another branch reaching main's commits
    let init = [
        "init",
        "demo",
        "--private",
        "--worktree",
        "branch:work",
        "--worker-cmd",
        "exec sleep 100000",
    ];
    assert_code(&sb.run("team-scale", &init), 0);
    assert_code(
        &sb.run("team-scale", &["up", "demo", "3", "--ready-timeout", "0"]),
        0,
    );
    // Its own branch, merged elsewhere, goes, after a durable intent naming it.
    git(&sb.ws, &["branch", "keep-3", "work/worker-3"]);
    let o = sb.run(
        "team-scale",
        &["down", "demo", "--worker", "worker-3", "--force", "--json"],
    );
    assert_code(&o, 0);
    assert!(!git(&sb.ws, &["branch", "--list", "work/worker-3"]).contains("worker-3"));
    let log = std::fs::read_to_string(sb.ws.join(".team/audit.jsonl")).unwrap();
    let deletes: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["action"] == "delete-branch")
        .collect();
    assert_eq!(
        deletes
            .iter()
            .map(|r| r["stage"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["intent", "complete"],
        "{deletes:?}"
    );
    assert_eq!(deletes[0]["targets"][0]["branch"], "work/worker-3");
    tests::assert_audit_pairs(&sb.ws.join(".team/audit.jsonl"));

    // worker-2's record now names `main` (checked out in the workspace) as made by the tools.
    for (victim, checked_out) in [("main", true), ("release", false)] {
        let p = sb.ws.join(".team/teams/demo/team.json");
        let mut t: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        for w in t["workers"].as_array_mut().unwrap() {
            if w["name"] == "worker-2" {
                w["resources"]["worktree"]["branch"] = victim.into();
                w["resources"]["worktree"]["branch_created"] = true.into();
            }
        }
        std::fs::write(&p, serde_json::to_vec_pretty(&t).unwrap()).unwrap();
        let o = sb.run(
            "team-scale",
            &["down", "demo", "--worker", "worker-2", "--force"],
        );
        assert_code(&o, 65);
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("team's own would be \"work/worker-2\""),
            "{o:?}"
        );
        assert_eq!(
            git(&sb.ws, &["branch", "--list", victim]).trim_start_matches("* "),
            victim,
            "branch {victim} (checked out: {checked_out}) was deleted"
        );
    }
}

// The thirteenth black-box round, against the twelfth's fixes.

#[test]
fn a_worktrees_own_config_never_names_a_command_the_tools_run() {
    let sb = Sandbox::new();
    let wt = setup(&sb, false);
    let marker = sb.dir.path().join("ran");
    // `git sparse-checkout` turns on `extensions.worktreeConfig`; the worker then sets a
    // clean filter in its worktree's own config and applies it to every file.
    git(&wt, &["sparse-checkout", "set", "--no-cone", "/*"]);
    git(
        &wt,
        &[
            "config",
            "--worktree",
            "filter.evil.clean",
            &format!("sh -c 'touch {}; cat'", marker.display()),
        ],
    );
    std::fs::write(wt.join(".gitattributes"), "* filter=evil\n").unwrap();
    let (code, lines) = down_worker_2(&sb);
    assert!(
        !marker.exists(),
        "down ran a filter named by the worktree's own config: {lines:?}"
    );
    assert_eq!(code, 3, "{lines:?}");
    let w = worker_2(&lines);
    assert!(
        w["blocked"].to_string().contains("filter.evil.clean"),
        "{w}"
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("README")).unwrap(),
        "hello, edited\n"
    );
}

#[test]
fn an_edit_outside_a_sparse_checkout_is_saved() {
    let sb = Sandbox::new();
    let wt = setup(&sb, false);
    // The worker narrows its checkout to `src/` (README, unedited, leaves the disk), then
    // writes README again: git status shows the edit, and a sparse `add -A` would skip it.
    // `checkout` rather than a write of the old bytes: git leaves a file whose stat differs
    // from its index entry on disk ("not up to date"), and git here compares whole seconds,
    // so a write of the old bytes passed or failed by the clock.
    git(&wt, &["checkout", "--", "README"]);
    git(&wt, &["sparse-checkout", "set", "--no-cone", "/src/"]);
    assert!(!wt.join("README").exists(), "outside the sparse patterns");
    std::fs::write(wt.join("README"), "edited outside the cone\n").unwrap();
    let (code, lines) = down_worker_2(&sb);
    assert_eq!(code, 0, "{lines:?}");
    let w = worker_2(&lines);
    let saved = w["saved_branch"]
        .as_str()
        .unwrap_or_else(|| panic!("the edit was not saved: {w}"));
    assert_eq!(
        git(&sb.ws, &["show", &format!("{saved}:README")]),
        "edited outside the cone"
    );
}

#[test]
fn files_under_a_nested_dot_git_keep_their_worktree() {
    let sb = Sandbox::new();
    let wt = setup(&sb, false);
    std::fs::create_dir_all(wt.join("notes/.git")).unwrap();
    std::fs::write(wt.join("notes/.git/findings.md"), "3 days of findings\n").unwrap();
    std::fs::create_dir_all(wt.join("a")).unwrap();
    std::fs::write(wt.join("a/.git"), "my notes\n").unwrap();
    assert_kept(
        &sb,
        &wt,
        &[
            ("notes/.git/findings.md", "3 days of findings\n"),
            ("a/.git", "my notes\n"),
        ],
        "git_entries",
    );
}

#[test]
fn the_users_own_worktrees_keep_their_records() {
    let sb = Sandbox::new();
    let wt = setup(&sb, false);
    let _ = wt;
    // A worktree of the user's, whose directory is away (an unmounted drive).
    let mine = sb.dir.path().join("userwt");
    git(
        &sb.ws,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            &mine.display().to_string(),
        ],
    );
    std::fs::rename(&mine, sb.dir.path().join("userwt.away")).unwrap();
    let (code, lines) = down_worker_2(&sb);
    assert_eq!(code, 0, "{lines:?}");
    assert!(
        sb.ws.join(".git/worktrees/userwt").is_dir(),
        "the user's worktree record was pruned"
    );
}

#[test]
fn a_worktree_a_live_process_works_in_is_kept() {
    let sb = Sandbox::new();
    let wt = setup(&sb, false);
    // A process that is not the worker's (a daemon it left that the teardown does not stop,
    // or a shell of yours) works in the worktree.
    let mut p = Command::new("sleep")
        .arg("100000")
        .current_dir(&wt)
        .spawn()
        .unwrap();
    let _guard = tests::KillOnDrop::now([p.id()]);
    let (code, lines) = down_worker_2(&sb);
    assert_eq!(code, 3, "{lines:?}");
    let w = worker_2(&lines);
    assert!(
        w["blocked"]
            .to_string()
            .contains(&format!("in use by process(es) {}", p.id())),
        "{w}"
    );
    assert!(
        wt.join("README").exists(),
        "the worktree was removed under it"
    );
    let _ = p.kill();
    let _ = p.wait();
}

// The fourteenth black-box round.

#[test]
fn the_save_keeps_every_byte_whatever_the_worktrees_attributes_say() {
    let sb = Sandbox::new();
    let wt = setup(&sb, false);
    std::fs::write(wt.join(".gitattributes"), "* ident\n*.bin text\n").unwrap();
    std::fs::write(
        wt.join("notes.txt"),
        "notes: $Id: the only copy of my notes $\n",
    )
    .unwrap();
    let bin: Vec<u8> = (0..=255u8).chain(*b"\r\n\r\n").collect();
    std::fs::write(wt.join("model.bin"), &bin).unwrap();
    let (code, lines) = down_worker_2(&sb);
    assert_eq!(code, 0, "{lines:?}");
    let saved = worker_2(&lines)["saved_branch"]
        .as_str()
        .expect("saved")
        .to_string();
    let show = |f: &str| {
        Command::new("git")
            .arg("-C")
            .arg(&sb.ws)
            .args(["show", &format!("{saved}:{f}")])
            .output()
            .unwrap()
            .stdout
    };
    assert_eq!(
        show("notes.txt"),
        b"notes: $Id: the only copy of my notes $\n"
    );
    assert_eq!(show("model.bin"), bin, "the bytes saved are not the file's");
}

#[test]
fn a_staged_file_deleted_from_disk_keeps_its_worktree() {
    let sb = Sandbox::new();
    let wt = setup(&sb, false);
    std::fs::write(wt.join("s.txt"), "STAGED ONLY\n").unwrap();
    git(&wt, &["add", "s.txt"]);
    std::fs::remove_file(wt.join("s.txt")).unwrap();
    assert_kept(&sb, &wt, &[], "staged_differs");
    assert_eq!(git(&wt, &["show", ":s.txt"]), "STAGED ONLY");
}

/// An amended or reset-away commit lives only in the worktree's own reflog: the save carries
/// it as a further parent, so its branch keeps it.
#[test]
fn commits_only_the_worktrees_history_holds_are_saved() {
    let sb = Sandbox::new();
    let wt = setup(&sb, false);
    git(&wt, &["commit", "-qam", "only in the reflog soon"]);
    let lost = git(&wt, &["rev-parse", "HEAD"]);
    git(&wt, &["reset", "-q", "--hard", "HEAD~1"]);
    let (code, lines) = down_worker_2(&sb);
    assert_eq!(code, 0, "{lines:?}");
    let saved = worker_2(&lines)["saved_branch"]
        .as_str()
        .unwrap_or_else(|| panic!("nothing saved: {lines:?}"))
        .to_string();
    let o = Command::new("git")
        .arg("-C")
        .arg(&sb.ws)
        .args(["merge-base", "--is-ancestor", &lost, &saved])
        .status()
        .unwrap();
    assert!(o.success(), "the reset-away commit is not on {saved}");
}

#[test]
fn an_unfinished_rebase_keeps_its_worktree() {
    let sb = Sandbox::new();
    let wt = setup(&sb, false);
    git(&wt, &["commit", "-qam", "mine"]);
    git(&wt, &["checkout", "-q", "--detach", "HEAD~1"]);
    std::fs::write(wt.join("README"), "theirs\n").unwrap();
    git(&wt, &["commit", "-qam", "theirs"]);
    let onto = git(&wt, &["rev-parse", "HEAD"]);
    git(&wt, &["checkout", "-q", "--detach", "HEAD@{2}"]);
    let o = Command::new("git")
        .arg("-C")
        .arg(&wt)
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "rebase", &onto])
        .output()
        .unwrap();
    assert!(!o.status.success(), "the rebase stops on its conflict");
    std::fs::write(wt.join("README"), "hello, edited\n").unwrap();
    assert_kept(&sb, &wt, &[], "history");
}

#[test]
fn a_file_mapped_by_a_live_process_keeps_its_worktree() {
    let sb = Sandbox::new();
    let wt = setup(&sb, false);
    let pidfile = sb.dir.path().join("map.pid");
    let mut p = Command::new(env!("CARGO_BIN_EXE_fake-daemon"))
        .arg("map")
        .arg(wt.join("db.bin"))
        .arg(&pidfile)
        .spawn()
        .unwrap();
    let _guard = tests::KillOnDrop::now([p.id()]);
    tests::wait_for("the mapping", std::time::Duration::from_secs(10), || {
        pidfile.exists()
    });
    let (code, lines) = down_worker_2(&sb);
    assert_eq!(code, 3, "{lines:?}");
    assert!(
        worker_2(&lines)["blocked"]
            .to_string()
            .contains(&format!("in use by process(es) {}", p.id())),
        "{lines:?}"
    );
    assert!(wt.join("db.bin").exists());
    let _ = p.kill();
    let _ = p.wait();
}

#[test]
fn a_file_system_mounted_in_a_worktree_is_never_removed_through() {
    let sb = Sandbox::new();
    let wt = setup(&sb, false);
    let victim = sb.dir.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("precious.txt"), "PRECIOUS\n").unwrap();
    std::fs::create_dir_all(wt.join("mnt")).unwrap();
    // The bind mount lives in a private mount namespace, with the `down` that sees it.
    let Some(o) = sb.team_scale_with_bind_mount(
        &victim,
        &wt.join("mnt"),
        &[
            "down", "demo", "--worker", "worker-2", "--force", "--grace", "1s", "--json",
        ],
    ) else {
        return;
    };
    let lines = json_lines(&o.stdout);
    assert_eq!(o.status.code(), Some(3), "{lines:?}");
    assert!(
        worker_2(&lines)["blocked"]
            .to_string()
            .contains("file systems are mounted in it"),
        "{lines:?}"
    );
    assert_eq!(
        std::fs::read_to_string(victim.join("precious.txt")).unwrap(),
        "PRECIOUS\n"
    );
}

// The seventeenth black-box round.

/// A worker that replaced its worktree's `.git` file with a repository of its own (`rm .git;
/// git init`) and committed there: nothing saves that history, so the worktree stays.
#[test]
fn a_repository_of_its_own_at_the_top_keeps_the_worktree() {
    let sb = Sandbox::new();
    let wt = setup(&sb, false);
    std::fs::write(wt.join("README"), "hello\n").unwrap(); // clean to the team's record
    std::fs::remove_file(wt.join(".git")).unwrap();
    git(&wt, &["init", "-q"]);
    std::fs::write(wt.join("notes.md"), "SECRET HISTORY\n").unwrap();
    git(&wt, &["add", "notes.md"]);
    git(&wt, &["commit", "-qm", "the worker's work"]);
    git(&wt, &["rm", "-q", "notes.md"]);
    git(&wt, &["commit", "-qm", "removed, in its history only"]);
    let (code, lines) = down_worker_2(&sb);
    assert_eq!(code, 3, "{lines:?}");
    assert!(
        worker_2(&lines)["blocked"]
            .to_string()
            .contains(".git (a repository of its own"),
        "{lines:?}"
    );
    assert_eq!(
        git(&wt, &["log", "--format=%s", "-1"]),
        "removed, in its history only"
    );
}

/// A repository in branch mode (prefix `work`) with workers `worker-1` to `worker-<n>` up,
/// each running `sleep`; returns the sandbox and worker-1's worktree.
fn branch_team(n: &str) -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    git(&sb.ws, &["init", "-q"]);
    std::fs::write(sb.ws.join("README"), "hello\n").unwrap();
    git(&sb.ws, &["add", "."]);
    git(&sb.ws, &["commit", "-qm", "init"]);
    let init = [
        "init",
        "demo",
        "--private",
        "--worktree",
        "branch:work",
        "--worker-cmd",
        "exec sleep 100000",
    ];
    assert_code(&sb.run("team-scale", &init), 0);
    assert_code(
        &sb.run("team-scale", &["up", "demo", n, "--ready-timeout", "0"]),
        0,
    );
    let wt = sb.ws.join(".team/worktrees/demo/worker-1");
    (sb, wt)
}

/// Commits a file in the worktree `wt`; returns the commit.
fn commit_in(wt: &Path, file: &str) -> String {
    std::fs::write(wt.join(file), "work\n").unwrap();
    git(wt, &["add", file]);
    git(wt, &["commit", "-qm", file]);
    git(wt, &["rev-parse", "HEAD"])
}

/// The refs (symbolic ones resolved) whose history holds `commit`.
fn holders(ws: &Path, commit: &str) -> String {
    git(
        ws,
        &["for-each-ref", "--format=%(refname)", "--contains", commit],
    )
}

/// Two workers' branches on one commit (worker-2 fast-forwarded onto worker-1's), removed
/// in one operation: each "reached" the other's commits, and both went. The branches are
/// judged one at a time against the refs as they are then, so the second one stays.
#[test]
fn branches_on_one_commit_removed_together_keep_their_commits() {
    for how in ["down", "shutdown"] {
        let (sb, wt1) = branch_team("3");
        let c = commit_in(&wt1, "parser.rs");
        let wt2 = sb.ws.join(".team/worktrees/demo/worker-2");
        git(&wt2, &["merge", "-q", "--ff-only", "work/worker-1"]);
        let o = match how {
            "down" => sb.run(
                "team-scale",
                &[
                    "down", "demo", "--worker", "worker-1", "--worker", "worker-2", "--force",
                ],
            ),
            _ => sb.run("team-scale", &["shutdown", "demo"]),
        };
        assert_code(&o, 0);
        let refs = holders(&sb.ws, &c);
        assert!(
            refs.contains("refs/heads/work/worker-"),
            "{how}: no branch holds the workers' commit any more: {refs:?}\n{}",
            String::from_utf8_lossy(&o.stdout)
        );
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("no other branch reaches its commits"),
            "{how}: {o:?}"
        );
        tests::assert_audit_pairs(&sb.ws.join(".team/audit.jsonl"));
    }
}

/// A symbolic ref to the worker's branch (`git symbolic-ref refs/heads/review
/// refs/heads/work/worker-1`, a user's alias) is no other branch: the branch, the only one
/// holding its commit, stays.
#[test]
fn a_symbolic_ref_to_the_branch_does_not_count_as_another_branch() {
    let (sb, wt1) = branch_team("2");
    let c = commit_in(&wt1, "result.txt");
    git(
        &sb.ws,
        &[
            "symbolic-ref",
            "refs/heads/review",
            "refs/heads/work/worker-1",
        ],
    );
    let o = sb.run(
        "team-scale",
        &["down", "demo", "--worker", "worker-1", "--force"],
    );
    assert_code(&o, 0);
    assert_eq!(
        git(
            &sb.ws,
            &["rev-parse", "--verify", "-q", "refs/heads/work/worker-1"]
        ),
        c,
        "the branch went: {o:?}"
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("refs/heads/review points to it"),
        "{o:?}"
    );
    // The alias holds nothing of its own: the work was also saved on a branch of its own.
    let saved = git(
        &sb.ws,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "--contains",
            &c,
            "refs/heads/team/",
        ],
    );
    assert!(
        saved.contains("refs/heads/team/demo/saved/worker-1-"),
        "{saved}"
    );
}

/// The worker's branch replaced by a symbolic ref to a user's branch: deleting the worker's
/// branch is deleting that ref itself, never the branch it points to.
#[test]
fn a_worker_branch_made_symbolic_never_deletes_what_it_points_to() {
    let (sb, wt1) = branch_team("2");
    git(&sb.ws, &["branch", "feature"]);
    git(&sb.ws, &["branch", "feature-2", "feature"]); // another branch reaching it
    git(&wt1, &["checkout", "-q", "--detach"]);
    git(
        &sb.ws,
        &[
            "symbolic-ref",
            "refs/heads/work/worker-1",
            "refs/heads/feature",
        ],
    );
    let o = sb.run(
        "team-scale",
        &["down", "demo", "--worker", "worker-1", "--force"],
    );
    assert_code(&o, 0);
    assert!(
        git(&sb.ws, &["branch", "--list", "feature"]).contains("feature"),
        "the user's branch went through the worker's symbolic ref: {o:?}"
    );
}

/// The worker dropped its branch; the user then made one of the same name: that is not the
/// branch `up` made, and it stays (said so).
#[test]
fn a_branch_recreated_under_the_workers_name_is_not_deleted() {
    let (sb, wt1) = branch_team("2");
    git(&wt1, &["checkout", "-q", "-b", "feature-parser"]);
    git(&wt1, &["branch", "-q", "-D", "work/worker-1"]);
    git(&sb.ws, &["branch", "work/worker-1", "main"]);
    let o = sb.run(
        "team-scale",
        &["down", "demo", "--worker", "worker-1", "--force"],
    );
    assert_code(&o, 0);
    assert!(
        git(&sb.ws, &["branch", "--list", "work/worker-1"]).contains("work/worker-1"),
        "the user's branch went: {o:?}"
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("not proven to be the one up made"),
        "{o:?}"
    );
}

// The thirtieth black-box round.

/// A process that works in the worktree from another mount namespace (a container that
/// bind-mounts it at another path) shows another path in `/proc`: it is known by the
/// directory's identity instead. Its current directory below the mount (found by walking
/// `..`), then a file it holds open, each keep the worktree; once both are gone it goes.
#[test]
fn a_process_in_another_mount_namespace_keeps_the_worktree() {
    let sb = Sandbox::new();
    let wt = setup(&sb, false);
    std::fs::create_dir_all(wt.join("sub/dir")).unwrap();
    std::fs::write(wt.join("sub/dir/f"), "f\n").unwrap();
    let mnt = sb.dir.path().join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    // Started in the background: `sh_in_private_mount_namespace` waits for its end.
    let spawn = |then: &str, tag: &str| {
        let ready = sb.dir.path().join(format!("{tag}.ready"));
        let mut p = sb
            .command("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c"])
            .arg(format!(
                "mount --bind '{}' '{}' || exit 200; {then}; : > '{}'; exec sleep 100000",
                wt.display(),
                mnt.display(),
                ready.display()
            ))
            .current_dir(sb.dir.path())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !ready.exists() {
            if let Some(st) = p.try_wait().unwrap() {
                eprintln!("no private mount namespace here (needs root): the test not run ({st})");
                return None;
            }
            assert!(std::time::Instant::now() < deadline, "{tag} never ready");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Some(p)
    };
    let mnt_s = mnt.display().to_string();
    let Some(mut in_dir) = spawn(&format!("cd '{mnt_s}/sub/dir'"), "cwd") else {
        return;
    };
    let _g1 = tests::KillOnDrop::now([in_dir.id()]);
    let Some(mut holds) = spawn(&format!("exec 7<'{mnt_s}/README'; cd /"), "fd") else {
        return;
    };
    let _g2 = tests::KillOnDrop::now([holds.id()]);
    let reconcile = || {
        let o = sb.run("team-scale", &["reconcile", "demo", "--json"]);
        (o.status.code().unwrap_or(-1), json_lines(&o.stdout))
    };
    for (i, p) in [&mut in_dir, &mut holds].into_iter().enumerate() {
        // The first `down` keeps the worker `removing`; `reconcile` then tries again.
        let (code, lines) = if i == 0 {
            down_worker_2(&sb)
        } else {
            reconcile()
        };
        assert_eq!(code, 3, "{lines:?}");
        assert!(
            worker_2(&lines)["blocked"]
                .to_string()
                .contains(&format!("in use by process(es) {}", p.id())),
            "{lines:?}"
        );
        assert_eq!(
            std::fs::read_to_string(wt.join("sub/dir/f"))
                .ok()
                .as_deref(),
            Some("f\n"),
            "the worktree was removed under a live process"
        );
        let _ = p.kill();
        let _ = p.wait();
    }
    let (code, lines) = reconcile();
    assert_eq!(code, 0, "{lines:?}");
    assert!(!wt.exists());
}

/// A live tmux server's socket and a FIFO in the worktree went with it, silently: git saves
/// neither, so each keeps the worktree, named (sockets, FIFOs and device nodes alike).
#[test]
fn a_socket_or_a_fifo_keeps_its_worktree() {
    for kind in ["socket", "fifo"] {
        let sb = Sandbox::new();
        let wt = setup(&sb, false);
        let _listener = match kind {
            "socket" => Some(std::os::unix::net::UnixListener::bind(wt.join("ctl")).unwrap()),
            _ => {
                let o = Command::new("mkfifo")
                    .arg(wt.join("pipe"))
                    .status()
                    .unwrap();
                assert!(o.success());
                None
            }
        };
        let name = if kind == "socket" { "ctl" } else { "pipe" };
        let (code, lines) = down_worker_2(&sb);
        assert!(
            std::fs::symlink_metadata(wt.join(name)).is_ok(),
            "{kind} removed: {lines:?}"
        );
        assert_eq!(code, 3, "{lines:?}");
        let w = worker_2(&lines);
        assert_eq!(w["worktree_kept"], wt.display().to_string(), "{w}");
        assert_eq!(
            w["unsavable"]["special_files"],
            serde_json::json!([name]),
            "{w}"
        );
        let st = sb.run("team-scale", &["status", "demo"]);
        assert!(
            String::from_utf8_lossy(&st.stdout).contains(&format!(
                "sockets, FIFOs or device nodes, which git never saves: {name}"
            )),
            "status names it: {}",
            String::from_utf8_lossy(&st.stdout)
        );
    }
}

/// The thirty-second black-box round: with `core.fileMode=false` in the repository's config,
/// the save stored a worker's executable files as `100644`, and the last gate, which compared
/// bytes only, let the worktree go. The save records the mode on disk, and the gate compares
/// modes too.
#[test]
fn the_executable_bit_is_saved_whatever_core_filemode_says() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let wt = setup(&sb, false);
    git(&sb.ws, &["config", "core.fileMode", "false"]);
    for f in ["README", "new.sh"] {
        std::fs::write(wt.join(f), "#!/bin/sh\necho hi\n").unwrap();
        std::fs::set_permissions(wt.join(f), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (code, lines) = down_worker_2(&sb);
    assert_eq!(code, 0, "{lines:?}");
    let saved = worker_2(&lines)["saved_branch"]
        .as_str()
        .unwrap_or_else(|| panic!("nothing saved: {lines:?}"))
        .to_string();
    for f in ["README", "new.sh"] {
        let entry = git(&sb.ws, &["ls-tree", &saved, f]);
        assert!(entry.starts_with("100755"), "{f} saved as {entry}");
    }
}

/// A repository with one commit and a team `demo` of two workers on branches `work/<worker>`.
pub(crate) fn branch_team_of_two(sb: &Sandbox) {
    git(&sb.ws, &["init", "-q"]);
    std::fs::write(sb.ws.join("README"), "hello\n").unwrap();
    git(&sb.ws, &["add", "."]);
    git(&sb.ws, &["commit", "-qm", "init"]);
    let init = [
        "init",
        "demo",
        "--private",
        "--worktree",
        "branch:work",
        "--worker-cmd",
        "exec sleep 100000",
    ];
    assert_code(&sb.run("team-scale", &init), 0);
    assert_code(
        &sb.run("team-scale", &["up", "demo", "2", "--ready-timeout", "0"]),
        0,
    );
}

/// Attack (thirty-fifth black-box round): a commit held only by the worker branch's own
/// reflog (the branch moved to it and back from the main repository, so the worktree's `HEAD`
/// reflog never saw it) went with the branch, whose deletion takes its reflog. Such a branch
/// is kept, named with the reason.
#[test]
fn a_commit_only_the_worker_branchs_reflog_holds_keeps_the_branch() {
    let sb = Sandbox::new();
    branch_team_of_two(&sb);
    let head = git(&sb.ws, &["rev-parse", "HEAD"]);
    let tree = git(&sb.ws, &["write-tree"]);
    let lost = git(
        &sb.ws,
        &[
            "commit-tree",
            &tree,
            "-p",
            &head,
            "-m",
            "only the branch reflog",
        ],
    );
    git(
        &sb.ws,
        &[
            "update-ref",
            "-m",
            "work",
            "refs/heads/work/worker-2",
            &lost,
        ],
    );
    git(
        &sb.ws,
        &[
            "update-ref",
            "-m",
            "back",
            "refs/heads/work/worker-2",
            &head,
        ],
    );
    let o = sb.run(
        "team-scale",
        &["down", "demo", "--worker", "worker-2", "--force", "--json"],
    );
    let reachable = Command::new("git")
        .arg("-C")
        .arg(&sb.ws)
        .args(["log", "-g", "--format=%H", "--all"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&reachable.stdout).contains(&lost)
            || !git(&sb.ws, &["branch", "--contains", &lost]).is_empty(),
        "the commit only the branch's reflog held is lost: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(
        git(&sb.ws, &["branch", "--list", "work/worker-2"]).contains("worker-2"),
        "the branch went: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("reflog"),
        "says why: {}",
        String::from_utf8_lossy(&o.stdout)
    );
}

/// The common case the reflog rule must not get in the way of: the worker amends a commit in
/// its worktree (the amended-away one is in both the branch's and the worktree's reflogs),
/// the leader merges the branch. Removing the worker saves the amended-away commit on a saved
/// branch, and the worker branch then goes.
#[test]
fn an_amended_and_merged_worker_branch_still_goes() {
    let sb = Sandbox::new();
    branch_team_of_two(&sb);
    let wt = sb.ws.join(".team/worktrees/demo/worker-2");
    std::fs::write(wt.join("a.txt"), "a\n").unwrap();
    git(&wt, &["add", "a.txt"]);
    git(&wt, &["commit", "-qm", "first try"]);
    let first = git(&wt, &["rev-parse", "HEAD"]);
    git(&wt, &["commit", "-q", "--amend", "-m", "second try"]);
    git(&sb.ws, &["merge", "-q", "--ff-only", "work/worker-2"]);
    let o = sb.run(
        "team-scale",
        &["down", "demo", "--worker", "worker-2", "--force", "--json"],
    );
    assert_code(&o, 0);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        git(&sb.ws, &["branch", "--list", "work/worker-2"]).is_empty(),
        "the merged branch stayed: {out}"
    );
    assert!(
        !git(&sb.ws, &["branch", "--contains", &first]).is_empty(),
        "the amended-away commit is on no branch: {out}"
    );
}

// The forty-first black-box round: what only the repository's record of a worktree holds
// (its HEAD, reflog, ORIG_HEAD and index live in `.git/worktrees/<id>`, not in the
// directory), lost with that record.

/// Whether git itself still keeps the object `id` (a commit or a blob): reachable from a ref,
/// a reflog, a worktree's `HEAD` or a worktree's index, every worktree's included (what `git
/// gc` keeps).
fn kept_by_git(ws: &Path, id: &str) -> bool {
    git(
        ws,
        &[
            "rev-list",
            "--objects",
            "--all",
            "--reflog",
            "--indexed-objects",
        ],
    )
    .lines()
    .any(|l| l.split(' ').next() == Some(id))
}

/// Attack (F1): a worker's worktree directory moved away (`mv`) or deleted (`rm -rf`) while
/// the repository's record of it (`.git/worktrees/<id>`) remained; `down` deleted that record,
/// and with it the only thing that reached a commit made on a detached `HEAD`, one left only
/// in the worktree's `HEAD` reflog, or a change only staged. Such a record is kept, and the
/// worktree reported kept; a record that holds nothing of its own still goes. Moving the
/// directory back lets a `reconcile` save and remove it; `git worktree remove` lets it go.
#[test]
fn a_worktree_whose_directory_is_away_keeps_the_record_of_what_only_it_holds() {
    for case in ["moved", "deleted", "reflog", "staged", "clean"] {
        let sb = Sandbox::new();
        let wt = setup(&sb, false);
        let admin = sb.ws.join(".git/worktrees/worker-2");
        assert!(admin.is_dir(), "{case}: the record is where git keeps it");
        let lost = match case {
            "moved" | "deleted" => {
                git(&wt, &["commit", "-qam", "only the record's HEAD"]);
                Some(git(&wt, &["rev-parse", "HEAD"]))
            }
            "reflog" => {
                git(&wt, &["commit", "-qam", "only the record's reflog"]);
                let c = git(&wt, &["rev-parse", "HEAD"]);
                git(&wt, &["checkout", "-q", "--detach", "HEAD~1"]);
                Some(c)
            }
            "staged" => {
                std::fs::write(wt.join("README"), "only in the record's index\n").unwrap();
                git(&wt, &["add", "README"]);
                Some(git(&wt, &["rev-parse", ":README"]))
            }
            _ => None,
        };
        let away = sb.dir.path().join("away");
        if case == "moved" {
            std::fs::rename(&wt, &away).unwrap();
        } else {
            std::fs::remove_dir_all(&wt).unwrap();
        }
        let (code, lines) = down_worker_2(&sb);
        let w = worker_2(&lines);
        let Some(lost) = lost else {
            assert_eq!(code, 0, "{case}: {lines:?}");
            assert!(!admin.exists(), "{case}: a record that holds nothing goes");
            continue;
        };
        assert!(
            kept_by_git(&sb.ws, &lost),
            "{case}: {lost} is lost: {lines:?}"
        );
        assert_eq!(code, 3, "{case}: cleanup debt remains: {lines:?}");
        assert!(admin.is_dir(), "{case}: the record went: {lines:?}");
        assert_eq!(w["worktree_kept"], wt.display().to_string(), "{case}: {w}");
        assert!(
            !w["unsavable"]["away_record"].as_array().unwrap().is_empty(),
            "{case}: {w}"
        );
        assert!(w["blocked"].to_string().contains("is away"), "{case}: {w}");
        match case {
            "moved" => {
                // Put back, it is saved and removed as any other.
                std::fs::rename(&away, &wt).unwrap();
                let o = sb.run("team-scale", &["reconcile", "demo", "--json"]);
                assert_code(&o, 0);
                assert!(!wt.exists() && !admin.exists(), "{case}: removed at last");
                let saved = git(
                    &sb.ws,
                    &["for-each-ref", "--format=%(refname)", "refs/heads/team/"],
                );
                assert!(
                    git(&sb.ws, &["branch", "--contains", &lost]).contains("team/demo/saved/"),
                    "{case}: {lost} is not on a saved branch ({saved})"
                );
            }
            "deleted" => {
                // The user says it is not needed: git drops the record, the tools the worker.
                git(&sb.ws, &["worktree", "remove", &wt.display().to_string()]);
                assert_code(&sb.run("team-scale", &["reconcile", "demo"]), 0);
            }
            _ => {}
        }
    }
}

/// The same through `shutdown`, in branch mode: a commit made on a detached `HEAD`, then back
/// on the worker's branch, so only the worktree's `HEAD` reflog reaches it.
#[test]
fn a_worktree_away_at_shutdown_keeps_its_record_in_branch_mode() {
    let (sb, wt) = branch_team("2");
    git(&wt, &["checkout", "-q", "--detach"]);
    let lost = commit_in(&wt, "experiment.rs");
    git(&wt, &["checkout", "-q", "work/worker-1"]);
    std::fs::rename(&wt, sb.dir.path().join("away")).unwrap();
    let o = sb.run("team-scale", &["shutdown", "demo", "--json"]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(kept_by_git(&sb.ws, &lost), "{lost} is lost: {out}");
    assert_eq!(o.status.code(), Some(3), "{out}");
    assert!(sb.ws.join(".git/worktrees/worker-1").is_dir(), "{out}");
    assert!(out.contains("away_record"), "{out}");
}

/// Attack (F2): unmerged index entries (`git checkout -m` that cannot merge a binary file,
/// or a hand-made index) hold the worker's own edit only as a stage-3 blob; `down` saved the
/// file on disk and removed the worktree, so that blob became unreachable. Any unmerged entry
/// keeps the worktree.
#[test]
fn unmerged_index_entries_keep_their_worktree() {
    for case in ["checkout-m", "index-info"] {
        let sb = Sandbox::new();
        let wt = setup(&sb, false);
        let (path, only) = match case {
            "checkout-m" => {
                std::fs::write(wt.join("b.bin"), b"a\0v1").unwrap();
                git(&wt, &["add", "b.bin"]);
                git(&wt, &["commit", "-qm", "bin v1"]);
                git(&wt, &["branch", "other"]);
                std::fs::write(wt.join("b.bin"), b"a\0v2").unwrap();
                git(&wt, &["commit", "-qam", "bin v2"]);
                std::fs::write(wt.join("b.bin"), b"a\0the worker's edit").unwrap();
                let edit = git(&wt, &["hash-object", "b.bin"]);
                let _ = Command::new("git")
                    .arg("-C")
                    .arg(&wt)
                    .args(["checkout", "-q", "-m", "other"])
                    .output()
                    .unwrap();
                ("b.bin", edit)
            }
            _ => {
                let base = git(&wt, &["rev-parse", "HEAD:README"]);
                let ours = git(&wt, &["hash-object", "-w", "README"]);
                std::fs::write(wt.join("theirs"), "theirs only\n").unwrap();
                let theirs = git(&wt, &["hash-object", "-w", "theirs"]);
                std::fs::remove_file(wt.join("theirs")).unwrap();
                let info = format!(
                    "0 {z}\tREADME\n100644 {base} 1\tREADME\n100644 {ours} 2\tREADME\n100644 {theirs} 3\tREADME\n",
                    z = "0".repeat(40)
                );
                let mut c = Command::new("git")
                    .arg("-C")
                    .arg(&wt)
                    .args(["update-index", "--index-info"])
                    .stdin(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                std::io::Write::write_all(&mut c.stdin.take().unwrap(), info.as_bytes()).unwrap();
                assert!(c.wait().unwrap().success());
                ("README", theirs)
            }
        };
        let staged = git(&wt, &["ls-files", "-s", "--", path]);
        assert!(
            staged
                .lines()
                .any(|l| l.contains(&only) && !l.contains(&format!("{only} 0"))),
            "{case}: the edit is an unmerged stage: {staged}"
        );
        let (code, lines) = down_worker_2(&sb);
        assert!(
            kept_by_git(&sb.ws, &only),
            "{case}: the stage's blob {only} is lost: {lines:?}"
        );
        assert_eq!(code, 3, "{case}: {lines:?}");
        let w = worker_2(&lines);
        assert_eq!(w["worktree_kept"], wt.display().to_string(), "{case}: {w}");
        assert_eq!(
            w["unsavable"]["unmerged"],
            serde_json::json!([path]),
            "{case}: {w}"
        );
    }
}

/// A repository whose refs live in a reftable (`git init --ref-format=reftable`, git 2.45 or
/// later), with the team of [`setup`] (two detached workers); worker-2's worktree, or `None`
/// where this git makes no such repository.
fn reftable_team(sb: &Sandbox) -> Option<PathBuf> {
    let o = Command::new("git")
        .arg("-C")
        .arg(&sb.ws)
        .args(["init", "-q", "--ref-format=reftable"])
        .output()
        .unwrap();
    if !o.status.success() {
        eprintln!(
            "skipped: this git makes no reftable repository: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        );
        return None;
    }
    Some(setup(sb, false))
}

/// Attack (F3): in a reftable repository a worktree's `HEAD` reflog and `ORIG_HEAD` are no
/// files (`logs/HEAD`, `ORIG_HEAD`), so reading them as files found nothing, and the commits
/// only they reach went with the worktree. They are read through git. So is
/// `CHERRY_PICK_HEAD`, which says a cherry-pick is under way, as it keeps the worktree in a
/// repository of files.
#[test]
fn commits_only_a_reftable_worktrees_history_holds_are_saved() {
    {
        let sb = Sandbox::new();
        let Some(wt) = reftable_team(&sb) else {
            return;
        };
        git(&wt, &["commit", "-qam", "picked"]);
        let pick = git(&wt, &["rev-parse", "HEAD"]);
        git(&wt, &["checkout", "-q", "--detach", "HEAD~1"]);
        std::fs::write(wt.join("README"), "theirs\n").unwrap();
        git(&wt, &["commit", "-qam", "theirs"]);
        let o = Command::new("git")
            .arg("-C")
            .arg(&wt)
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "cherry-pick",
                &pick,
            ])
            .output()
            .unwrap();
        assert!(!o.status.success(), "the cherry-pick stops on its conflict");
        std::fs::write(wt.join("README"), "resolved\n").unwrap();
        git(&wt, &["add", "README"]);
        assert!(!wt.join(".git").is_dir() && git(&wt, &["rev-parse", "CHERRY_PICK_HEAD"]) == pick);
        let (code, lines) = down_worker_2(&sb);
        assert_eq!(code, 3, "{lines:?}");
        let w = worker_2(&lines);
        assert!(
            w["unsavable"]["history"]
                .to_string()
                .contains("CHERRY_PICK_HEAD"),
            "{w}"
        );
        assert!(wt.join("README").exists());
    }
    for case in ["reflog", "orig-head"] {
        let sb = Sandbox::new();
        let Some(wt) = reftable_team(&sb) else {
            return;
        };
        assert_eq!(git(&sb.ws, &["rev-parse", "--show-ref-format"]), "reftable");
        git(&wt, &["commit", "-qam", "reset away"]);
        let lost = git(&wt, &["rev-parse", "HEAD"]);
        git(&wt, &["reset", "-q", "--hard", "HEAD~1"]);
        if case == "reflog" {
            // ORIG_HEAD moves on: only the reflog holds it.
            git(&wt, &["reset", "-q", "--hard", "HEAD"]);
            assert_ne!(git(&wt, &["rev-parse", "ORIG_HEAD"]), lost);
        }
        if case == "orig-head" {
            git(&wt, &["reflog", "expire", "--expire=now", "--all"]);
            assert_eq!(git(&wt, &["rev-parse", "ORIG_HEAD"]), lost);
        }
        let (code, lines) = down_worker_2(&sb);
        assert!(
            kept_by_git(&sb.ws, &lost),
            "{case}: {lost} is lost: {lines:?}"
        );
        assert_eq!(code, 0, "{case}: {lines:?}");
        let saved = worker_2(&lines)["saved_branch"]
            .as_str()
            .unwrap_or_else(|| panic!("{case}: nothing saved: {lines:?}"))
            .to_string();
        let o = Command::new("git")
            .arg("-C")
            .arg(&sb.ws)
            .args(["merge-base", "--is-ancestor", &lost, &saved])
            .status()
            .unwrap();
        assert!(o.success(), "{case}: {lost} is not on {saved}");
    }
}
