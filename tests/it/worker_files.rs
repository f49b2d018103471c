//! A worker's files: `up` makes them, and its rollback and the teardown remove only what the
//! tools made (never a directory they found, never through a symlink), robustly (a supervisor
//! writing `exit.json` during the removal is no cleanup debt).

use std::path::PathBuf;

use tests::{Sandbox, assert_code};

fn init(sb: &Sandbox) {
    init_with(sb, &[]);
}

/// `init` of team s3 (leader and workers `exec sleep`), with `env` set for it.
fn init_with(sb: &Sandbox, env: &[(&str, &str)]) {
    let o = sb
        .cmd("team-scale")
        .args([
            "init",
            "s3",
            "--private",
            "--leader-cmd",
            "exec sleep 100000",
            "--worker-cmd",
            "exec sleep 100000",
        ])
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert_code(&o, 0);
}

/// Team s3 with worker-1 and worker-2.
fn team_of_two(sb: &Sandbox) {
    init(sb);
    assert_code(&up(sb), 0);
    assert_code(&up(sb), 0);
}

fn team_dir(sb: &Sandbox) -> PathBuf {
    sb.ws.join(".team/teams/s3")
}

fn team_json(sb: &Sandbox) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(team_dir(sb).join("team.json")).unwrap()).unwrap()
}

fn up(sb: &Sandbox) -> std::process::Output {
    sb.run("team-scale", &["up", "s3", "1", "--ready-timeout", "0"])
}

/// `up` refused before any effect: exit 65, the error names `names`, no worker recorded.
#[track_caller]
fn refused_before_any_effect(sb: &Sandbox, o: &std::process::Output, names: &str) {
    assert_code(o, 65);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(names), "the error names {names}: {err}");
    let t = team_json(sb);
    assert_eq!(
        t["workers"],
        serde_json::json!([]),
        "no worker recorded: {t}"
    );
}

#[test]
fn up_never_removes_a_directory_it_found_where_a_script_goes() {
    let sb = Sandbox::new();
    init(&sb);
    let next = team_json(&sb)["next_worker_index"].as_u64().unwrap();
    let found = team_dir(&sb).join(format!("runtime/worker-{next}.sh"));
    std::fs::create_dir_all(&found).unwrap();
    std::fs::write(found.join("precious.txt"), "mine\n").unwrap();

    let o = up(&sb);
    refused_before_any_effect(&sb, &o, &found.display().to_string());
    assert_eq!(
        std::fs::read_to_string(found.join("precious.txt")).unwrap(),
        "mine\n"
    );
}

/// Attack: a plain file (or a hard link to one of the user's) where the next worker's startup
/// script goes, as a cloned `.team/` can carry. `up` creates the script in place and never over
/// an entry, and its rollback removes what is at the path, so the file is refused before any
/// effect and kept, its content and its other name intact.
#[test]
fn up_never_removes_a_plain_file_it_found_where_a_script_goes() {
    let sb = Sandbox::new();
    init(&sb);
    let next = team_json(&sb)["next_worker_index"].as_u64().unwrap();
    let found = team_dir(&sb).join(format!("runtime/worker-{next}.sh"));
    let users = sb.dir.path().join("users-notes.txt");
    std::fs::write(&users, "mine\n").unwrap();
    std::fs::hard_link(&users, &found).unwrap();

    let o = up(&sb);
    refused_before_any_effect(&sb, &o, &found.display().to_string());
    assert_eq!(std::fs::read_to_string(&found).unwrap(), "mine\n");
    assert_eq!(std::fs::read_to_string(&users).unwrap(), "mine\n");
}

#[test]
fn up_never_removes_a_worker_directory_it_found() {
    let sb = Sandbox::new();
    init(&sb);
    let next = team_json(&sb)["next_worker_index"].as_u64().unwrap();
    let found = team_dir(&sb).join(format!("workers/worker-{next}"));
    std::fs::create_dir_all(&found).unwrap();
    std::fs::write(found.join("notes.md"), "mine\n").unwrap();

    let o = up(&sb);
    refused_before_any_effect(&sb, &o, &found.display().to_string());
    assert_eq!(
        std::fs::read_to_string(found.join("notes.md")).unwrap(),
        "mine\n"
    );
}

#[test]
fn a_symlinked_runtime_dir_is_refused_before_any_effect() {
    let sb = Sandbox::new();
    init(&sb);
    let outside = sb.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let runtime = team_dir(&sb).join("runtime");
    let _ = std::fs::remove_dir_all(&runtime);
    std::os::unix::fs::symlink(&outside, &runtime).unwrap();

    let o = up(&sb);
    refused_before_any_effect(&sb, &o, &runtime.display().to_string());
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert!(!team_dir(&sb).join("workers/worker-1").exists());
}

/// Attack: the team's `workers/` is swapped for a symlink to a directory elsewhere, so the new
/// worker's directory, inbox and startup script would land outside the state root. `up`
/// writes through the directory it walked to without following a symlink, so it refuses
/// before any effect, and nothing lands outside.
#[test]
fn a_symlinked_workers_dir_is_refused_before_any_effect() {
    let sb = Sandbox::new();
    init(&sb);
    let outside = sb.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let workers = team_dir(&sb).join("workers");
    let _ = std::fs::remove_dir_all(&workers);
    std::os::unix::fs::symlink(&outside, &workers).unwrap();

    let o = up(&sb);
    refused_before_any_effect(&sb, &o, &workers.display().to_string());
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

/// The supervisor writes `exit.json` into the worker dir when its child dies, which is while
/// the teardown removes that dir: the removal must not fail with "Directory not empty".
#[test]
fn a_late_exit_json_is_no_cleanup_debt() {
    let sb = Sandbox::new();
    init(&sb);
    assert_code(&up(&sb), 0); // worker-1 stays: `down` never removes every worker
    for i in 2..22 {
        assert_code(&up(&sb), 0);
        let o = sb.run(
            "team-scale",
            &[
                "down",
                "s3",
                "--worker",
                &format!("worker-{i}"),
                "--force",
                "--grace",
                "2s",
            ],
        );
        assert_code(&o, 0);
        assert!(!team_dir(&sb).join(format!("workers/worker-{i}")).exists());
    }
    let t = team_json(&sb);
    assert_eq!(t["workers"].as_array().unwrap().len(), 1, "{t}");
}

fn down(sb: &Sandbox, worker: &str) -> std::process::Output {
    sb.run(
        "team-scale",
        &["down", "s3", "--worker", worker, "--force", "--grace", "2s"],
    )
}

fn trash_names(sb: &Sandbox) -> Vec<String> {
    match std::fs::read_dir(team_dir(sb).join("trash")) {
        Ok(d) => d
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// A teardown moves a worker's directory and startup script out of their places before it
/// drops the record (so nothing of it is left where the next worker of that name goes), and
/// the trash they went to is emptied after the command: one worker's files by the command
/// itself (cheaper than starting a process), more by a detached `empty-trash`.
#[test]
fn a_removed_workers_files_leave_at_once_and_the_trash_empties() {
    let sb = Sandbox::new();
    init(&sb);
    for _ in 0..4 {
        assert_code(&up(&sb), 0);
    }
    assert_code(&down(&sb, "worker-2"), 0);
    assert!(
        trash_names(&sb).is_empty(),
        "one worker's files are deleted before the command ends: {:?}",
        trash_names(&sb)
    );
    let o = sb.run(
        "team-scale",
        &[
            "down", "s3", "--worker", "worker-3", "--worker", "worker-4", "--force", "--grace",
            "2s",
        ],
    );
    assert_code(&o, 0);
    for w in ["worker-2", "worker-3", "worker-4"] {
        assert!(!team_dir(&sb).join("workers").join(w).exists());
        assert!(!team_dir(&sb).join(format!("runtime/{w}.sh")).exists());
    }
    assert_eq!(team_json(&sb)["workers"].as_array().unwrap().len(), 1);
    tests::wait_for(
        "the trash to be emptied",
        std::time::Duration::from_secs(10),
        || trash_names(&sb).is_empty(),
    );
    assert!(team_dir(&sb).join("workers/worker-1/inbox.md").exists());
}

/// Attack: the team's `trash/` is a symlink to a directory elsewhere, so a removed worker's
/// files would be moved (and then deleted) outside the state root. The teardown checks it
/// with the rest of the team's paths, before any effect: exit 65, the worker's pane alive,
/// nothing moved out there.
#[test]
fn a_symlinked_trash_is_refused_before_any_effect() {
    let sb = Sandbox::new();
    team_of_two(&sb);
    let outside = sb.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("canary"), "mine\n").unwrap();
    let trash = team_dir(&sb).join("trash");
    let _ = std::fs::remove_dir_all(&trash);
    std::os::unix::fs::symlink(&outside, &trash).unwrap();

    let o = down(&sb, "worker-2");
    assert_code(&o, 65);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&*trash.to_string_lossy()), "{err}");
    let t = team_json(&sb);
    let w2 = t["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "worker-2")
        .unwrap_or_else(|| panic!("worker-2 is still recorded: {t}"));
    assert_eq!(w2["lifecycle"], "active", "{t}");
    let pane = w2["pane"]["pane_id"].as_str().unwrap();
    let panes = tests::tmux_at(
        &sb.private_sock(),
        &["list-panes", "-a", "-F", "#{pane_id}"],
    );
    assert!(
        String::from_utf8_lossy(&panes.stdout)
            .lines()
            .any(|p| p == pane),
        "worker-2's pane {pane} was killed"
    );
    let mut names: Vec<_> = std::fs::read_dir(&outside)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["canary"]);
    assert!(team_dir(&sb).join("workers/worker-2/inbox.md").exists());
}

/// Attack (nineteenth black-box round): a worker bind-mounts a directory of the user's inside
/// its own worker directory (it runs as root), then is removed. Its directory went to the
/// trash and was deleted there, and the deletion used to go down through the mount: the
/// user's files were gone and `down` exited 0. Since the thirty-fifth round a worker directory
/// holding anything the tools do not write there is kept where it is (exit 3), the mount
/// point included; the next test mounts over a file the tools do write, so that the
/// directory does go to the trash, and no removal enters the mount point there.
#[test]
fn a_file_system_mounted_in_a_workers_directory_is_never_removed_through() {
    let sb = Sandbox::new();
    team_of_two(&sb);
    let victim = sb.dir.path().join("victim");
    std::fs::create_dir_all(victim.join("deep")).unwrap();
    std::fs::write(victim.join("a.txt"), "keep1\n").unwrap();
    std::fs::write(victim.join("deep/b.txt"), "keep2\n").unwrap();
    let sub = team_dir(&sb).join("workers/worker-2/sub");
    std::fs::create_dir_all(&sub).unwrap();
    // The bind mount lives in a private mount namespace, with the `down` that sees it (one
    // worker's files are deleted by `down` itself, in that namespace).
    let Some(o) = sb.team_scale_with_bind_mount(
        &victim,
        &sub,
        &[
            "down", "s3", "--worker", "worker-2", "--force", "--grace", "1s",
        ],
    ) else {
        return;
    };
    assert_code(&o, 3);
    assert_eq!(
        std::fs::read_to_string(victim.join("a.txt")).unwrap(),
        "keep1\n"
    );
    assert_eq!(
        std::fs::read_to_string(victim.join("deep/b.txt")).unwrap(),
        "keep2\n"
    );
    assert!(
        team_dir(&sb).join("workers/worker-2/sub").exists(),
        "the directory holding the mount point stays where it was: {}",
        String::from_utf8_lossy(&o.stdout)
    );
}

/// The trash may still come to hold a mount point (a worker that mounts in its directory
/// between the check and the move): emptying it never enters one. A directory of the user's
/// bind-mounted inside a trash entry keeps its files, and the entry holding it stays.
#[test]
fn emptying_the_trash_never_enters_a_mount_point() {
    let sb = Sandbox::new();
    team_of_two(&sb);
    let victim = sb.dir.path().join("victim");
    std::fs::create_dir_all(victim.join("deep")).unwrap();
    std::fs::write(victim.join("deep/b.txt"), "keep\n").unwrap();
    let entry = team_dir(&sb).join("trash/0123456789ab-worker-9");
    std::fs::create_dir_all(entry.join("sub")).unwrap();
    std::fs::write(entry.join("inbox.md"), "old\n").unwrap();
    let root = sb.ws.join(".team");
    let Some(o) = sb.team_scale_with_bind_mount(
        &victim,
        &entry.join("sub"),
        &["empty-trash", "--root", root.to_str().unwrap(), "s3"],
    ) else {
        return;
    };
    assert_eq!(
        std::fs::read_to_string(victim.join("deep/b.txt"))
            .ok()
            .as_deref(),
        Some("keep\n"),
        "{o:?}"
    );
    assert!(
        trash_names(&sb).iter().any(|n| n.ends_with("-worker-9")),
        "the entry holding the mount point stays in the trash: {:?}",
        trash_names(&sb)
    );
}

/// Attack (twentieth black-box round): a worker (root) bind-mounts a directory of the user's
/// over its own worker directory, then is removed. Its supervisor, outliving the pane, wrote
/// its `exit.json` through the mount: the user's file of that name was overwritten. And a
/// file of the user's mounted over the team's lock file got the lock's holder record written
/// into it. No state is reached through a mount point below `.team`, and no file mounted
/// over a state file is written in place.
#[test]
fn no_state_is_written_through_a_mount() {
    let sb = Sandbox::new();
    let victim = sb.dir.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("exit.json"), "{\"user\":\"precious data\"}\n").unwrap();
    let lockv = sb.dir.path().join("lockv");
    std::fs::write(&lockv, "the user's notes\n").unwrap();
    let ts = tests::bin("team-scale");
    let wdir = team_dir(&sb).join("workers/worker-2");
    // The team, its mounts and its teardown live in one private mount namespace (its tmux
    // server and supervisors too: the namespace ends with the server the sandbox kills).
    let script = format!(
        "set -e; T='{ts}'; \
         \"$T\" init s3 --private --leader-cmd 'exec sleep 100000' --worker-cmd 'exec sleep 100000'; \
         \"$T\" up s3 2 --ready-timeout 0 >/dev/null; \
         mount --bind '{victim}' '{wdir}' || exit 200; \
         set +e; \"$T\" down s3 --worker worker-2 --force --grace 1s; echo \"down=$?\"; \
         mount --bind '{lockv}' '{lock}' || exit 200; \
         \"$T\" up s3 1 --ready-timeout 0; echo \"up=$?\"; \
         sleep 1",
        ts = ts.display(),
        victim = victim.display(),
        wdir = wdir.display(),
        lockv = lockv.display(),
        lock = sb.ws.join(".team/locks/s3.scale.lock").display(),
    );
    let Some(o) = sb.sh_in_private_mount_namespace(&script) else {
        return;
    };
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(out.contains("down=3"), "worker-2 is kept: {out}{err}");
    assert!(
        !out.contains("up=0"),
        "up wrote through a lock file mounted over: {out}{err}"
    );
    assert!(err.contains("mount point"), "{err}");
    assert_eq!(
        std::fs::read_to_string(victim.join("exit.json")).unwrap(),
        "{\"user\":\"precious data\"}\n",
        "the supervisor wrote through the mount: {out}{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&lockv).unwrap(),
        "the user's notes\n",
        "{out}{err}"
    );
}

/// The other side of the rule above: the state root itself may be a mount point of its own
/// (a tmpfs on `.team`, the user's choice). Every command works there, through the walk that
/// allows a mount at the root and nowhere below it.
#[test]
fn a_state_root_that_is_a_mount_point_works() {
    let sb = Sandbox::new();
    let ts = tests::bin("team-scale");
    let script = format!(
        "set -e; T='{ts}'; mkdir -p .team; mount -t tmpfs tmpfs .team || exit 200; \
         \"$T\" init s3 --private --leader-cmd 'exec sleep 100000' --worker-cmd 'exec sleep 100000' >/dev/null; \
         \"$T\" up s3 2 --ready-timeout 0 >/dev/null; echo up=$?; \
         \"$T\" down s3 1 --force --grace 1s >/dev/null; echo down=$?; \
         \"$T\" status s3 >/dev/null; echo status=$?; \
         \"$T\" shutdown s3 --grace 1s >/dev/null; echo shutdown=$?",
        ts = ts.display(),
    );
    let Some(o) = sb.sh_in_private_mount_namespace(&script) else {
        return;
    };
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        ["up=0", "down=0", "status=0", "shutdown=0"]
            .iter()
            .all(|w| out.contains(w)),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Attack: symlinks planted in the trash (to a directory and to a file of the user's), next to
/// a leftover a crash could have left. Emptying the trash unlinks each symlink itself and
/// deletes the leftover, and never reaches what a symlink points to.
#[test]
fn the_trash_is_emptied_without_following_a_symlink() {
    let sb = Sandbox::new();
    team_of_two(&sb);
    let outside = sb.dir.path().join("outside");
    std::fs::create_dir_all(outside.join("sub")).unwrap();
    std::fs::write(outside.join("canary"), "mine\n").unwrap();
    std::fs::write(outside.join("sub/canary"), "mine\n").unwrap();
    let trash = team_dir(&sb).join("trash");
    std::fs::create_dir_all(trash.join("0123456789ab-worker-9")).unwrap();
    std::fs::write(trash.join("0123456789ab-worker-9/inbox.md"), "left\n").unwrap();
    std::os::unix::fs::symlink(&outside, trash.join("dir-link")).unwrap();
    std::os::unix::fs::symlink(outside.join("canary"), trash.join("file-link")).unwrap();
    std::os::unix::fs::symlink(&outside, trash.join("0123456789ab-worker-9/inner-link")).unwrap();

    assert_code(&down(&sb, "worker-2"), 0);
    tests::wait_for(
        "the trash to be emptied",
        std::time::Duration::from_secs(10),
        || trash_names(&sb).is_empty(),
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("canary")).unwrap(),
        "mine\n"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("sub/canary")).unwrap(),
        "mine\n"
    );
}

/// Attack: `team-scale empty-trash` (hidden, started by the tools) run by hand on a directory
/// that is no state root of a team (no `teams/<team>/team.json`): it refuses (exit 66) and
/// deletes nothing there.
#[test]
fn empty_trash_refuses_a_root_without_the_team() {
    let sb = Sandbox::new();
    let fake = sb.dir.path().join("fake");
    let trash = fake.join("teams/t1/trash");
    std::fs::create_dir_all(trash.join("pdir")).unwrap();
    std::fs::write(trash.join("precious"), "mine\n").unwrap();
    for root in [
        fake.display().to_string(),
        format!("{}/.", fake.display()),
        format!("/{}", fake.display()),
    ] {
        let o = sb.run("team-scale", &["empty-trash", "--root", &root, "t1"]);
        assert_code(&o, 66);
    }
    assert_eq!(
        std::fs::read_to_string(trash.join("precious")).unwrap(),
        "mine\n"
    );
    assert!(trash.join("pdir").is_dir());
}

/// Attack: an entry planted in the trash that cannot be deleted (nested deeper than the
/// removal descends) must not keep the rest there: the removed worker's files go, and only the
/// planted entry stays.
#[test]
fn one_entry_that_cannot_be_deleted_keeps_only_itself() {
    let sb = Sandbox::new();
    team_of_two(&sb);
    let trash = team_dir(&sb).join("trash");
    let mut deep = trash.join("000-deep");
    for _ in 0..70 {
        deep.push("d");
    }
    std::fs::create_dir_all(&deep).unwrap();
    // Left by a crash, whichever side of the deep entry the directory lists them on.
    for i in 0..20 {
        std::fs::write(trash.join(format!("left-{i}")), "x\n").unwrap();
    }
    assert_code(&down(&sb, "worker-2"), 0);
    tests::wait_for(
        "all but the deep entry to be deleted",
        std::time::Duration::from_secs(10),
        || trash_names(&sb) == ["000-deep"],
    );
}

/// Attack: a directory where a worker's startup script goes. The tools never make one there,
/// so it is not theirs to move away: the teardown refuses before any effect (exit 65), naming
/// the path and whose file it is, and the worker's pane lives on.
#[test]
fn a_directory_where_a_script_goes_is_refused_before_the_kill() {
    let sb = Sandbox::new();
    team_of_two(&sb);
    let script = team_dir(&sb).join("runtime/worker-2.sh");
    std::fs::remove_file(&script).unwrap();
    std::fs::create_dir_all(script.join("sub")).unwrap();
    let o = down(&sb, "worker-1");
    assert_code(&o, 65);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&*script.to_string_lossy()), "{err}");
    assert!(err.contains("a file of worker-2"), "{err}");
    let t = team_json(&sb);
    assert!(
        t["workers"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["lifecycle"] == "active"),
        "{t}"
    );
    let panes = tests::tmux_at(
        &sb.private_sock(),
        &["list-panes", "-a", "-F", "#{pane_id}"],
    );
    assert_eq!(String::from_utf8_lossy(&panes.stdout).lines().count(), 3);
    assert!(script.join("sub").is_dir());
}

/// Attack: a `sh` of the workspace's first on `PATH` (a `node_modules/.bin`, a venv, a clone's
/// `bin/`). The supervisor starts the worker's script with `/bin/sh`, as the script's own
/// `#!/bin/sh` says, so the planted `sh` never runs.
#[test]
fn a_planted_sh_on_path_never_starts_a_worker() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let bin = sb.dir.path().join("evil-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let canary = sb.dir.path().join("planted-sh-ran");
    let sh = bin.join("sh");
    std::fs::write(
        &sh,
        format!(
            "#!/bin/sh\necho ran >> {}\nexec /bin/sh \"$@\"\n",
            canary.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&sh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    init_with(&sb, &[("PATH", &path)]);
    let o = sb
        .cmd("team-scale")
        .args(["up", "s3", "2", "--ready-timeout", "0"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert_code(&o, 0);
    // The workers run (their panes' first processes are their supervisors, with a child).
    tests::wait_for(
        "both workers to run",
        std::time::Duration::from_secs(10),
        || {
            team_json(&sb)["workers"]
                .as_array()
                .unwrap()
                .iter()
                .all(|w| {
                    let pid = w["pane"]["pane_pid"].as_u64().unwrap();
                    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
                        .is_ok_and(|c| !c.trim().is_empty())
                })
        },
    );
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(!canary.exists(), "the planted sh ran");
}

/// The live panes of team s3's private server.
fn pane_ids(sb: &Sandbox) -> Vec<String> {
    let o = tests::tmux_at(
        &sb.private_sock(),
        &["list-panes", "-a", "-F", "#{pane_id}"],
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// A `workers` that is a regular file is malformed state: `down` and `reconcile` refuse it
/// before any effect with exit 65 naming it (not 74, an I/O error), and `status` says the
/// reports cannot be read instead of showing none.
#[test]
fn a_workers_dir_that_is_a_file_is_malformed_state() {
    let sb = Sandbox::new();
    team_of_two(&sb);
    let workers = team_dir(&sb).join("workers");
    std::fs::rename(&workers, sb.dir.path().join("workers.kept")).unwrap();
    std::fs::write(&workers, b"not a directory").unwrap();
    let panes = pane_ids(&sb);
    for args in [
        &["down", "s3", "1", "--force", "--grace", "2s"][..],
        &["reconcile", "s3"][..],
    ] {
        let o = sb.run("team-scale", args);
        assert_code(&o, 65);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!("{} is not a directory", workers.display())),
            "{args:?}: {err}"
        );
        assert_eq!(pane_ids(&sb), panes, "{args:?} had an effect");
    }
    assert_eq!(team_json(&sb)["workers"].as_array().unwrap().len(), 2);
    let o = sb.run("team-scale", &["status", "s3"]);
    assert_code(&o, 0);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("reports: cannot be read"), "{out}");
    let o = sb.run("team-scale", &["status", "s3", "--json"]);
    let lines = tests::json_lines(&o.stdout);
    let workers: Vec<_> = lines.iter().filter(|l| l["type"] == "worker").collect();
    assert_eq!(workers.len(), 2);
    assert!(
        workers.iter().all(|w| w["report_error"].is_string()),
        "{workers:?}"
    );
}

/// A symlinked `status.json` is no report: `status` names it as unreadable for that worker
/// (the other worker's report error stays null).
#[test]
fn a_symlinked_report_is_named_by_status() {
    let sb = Sandbox::new();
    team_of_two(&sb);
    let outside = sb.dir.path().join("report.json");
    std::fs::write(&outside, b"{}").unwrap();
    std::os::unix::fs::symlink(&outside, team_dir(&sb).join("workers/worker-2/status.json"))
        .unwrap();
    let o = sb.run("team-scale", &["status", "s3"]);
    assert_code(&o, 0);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("worker-2: report cannot be read") && out.contains("symlink"),
        "{out}"
    );
    let lines = tests::json_lines(&sb.run("team-scale", &["status", "s3", "--json"]).stdout);
    let err = |w: &str| {
        lines
            .iter()
            .find(|l| l["type"] == "worker" && l["worker"] == w)
            .map(|l| l["report_error"].clone())
            .unwrap()
    };
    assert!(err("worker-1").is_null());
    assert!(err("worker-2").is_string());
}

/// Attack: the worker's directory is swapped for a symlink after `down`'s checks, while its
/// pane is being killed. Nothing is moved through the symlink, and since the kill has
/// happened, `down` says cleanup debt remains (exit 3, the worker left `removing` with the
/// reason), not malformed input (65, which promises no effect). Once the directory is back,
/// `reconcile` finishes the removal.
#[test]
fn a_worker_dir_swapped_for_a_symlink_after_the_kill_is_cleanup_debt() {
    let sb = Sandbox::new();
    team_of_two(&sb);
    let dir = team_dir(&sb).join("workers/worker-2");
    let aside = sb.dir.path().join("worker-2.aside");
    let outside = sb.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("keep.txt"), b"mine").unwrap();
    let child = sb
        .cmd("team-scale")
        .args([
            "down", "s3", "--worker", "worker-2", "--force", "--grace", "2s",
        ])
        .env("TEAM_FAILPOINTS", "down.stopped=sleep3000")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The fail point holds `down` after its kill: swap the directory then.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while pane_ids(&sb).len() == 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "the pane was never killed"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::fs::rename(&dir, &aside).unwrap();
    std::os::unix::fs::symlink(&outside, &dir).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_code(&o, 3);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(said.contains("symlink"), "{said}");
    assert_eq!(
        std::fs::read(outside.join("keep.txt")).unwrap(),
        b"mine",
        "moved or deleted through the symlink"
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
    let t = team_json(&sb);
    let w2 = t["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "worker-2")
        .cloned()
        .expect("worker-2 stays recorded");
    assert_eq!(w2["lifecycle"], "removing", "{w2}");
    assert!(
        w2["removal_reasons"]
            .as_array()
            .is_some_and(|r| r.iter().any(|r| r.as_str().unwrap().contains("symlink"))),
        "{w2}"
    );
    // The directory back in its place, `reconcile` finishes.
    std::fs::remove_file(&dir).unwrap();
    std::fs::rename(&aside, &dir).unwrap();
    assert_code(
        &sb.run("team-scale", &["reconcile", "s3", "--grace", "2s"]),
        0,
    );
    let t = team_json(&sb);
    assert_eq!(t["workers"].as_array().unwrap().len(), 1, "{t}");
    assert!(!dir.exists());
}

/// Attack (black-box round 9): `runtime/` swapped for a symlink to a directory of the
/// attacker's after `up` wrote the startup script. Given the script's path, `sh` followed the
/// symlink and ran the attacker's `worker-1.sh` as the worker. The supervisor now opens the
/// script itself with no symlink on its way, and refuses to start the worker when it cannot.
#[test]
fn a_worker_never_runs_a_startup_script_reached_through_a_symlink() {
    let sb = Sandbox::new();
    let root = sb.ws.join(".team");
    let team_dir = root.join("teams/demo");
    std::fs::create_dir_all(&team_dir).unwrap();
    let marker = sb.dir.path().join("ran");
    let script = format!("#!/bin/sh\necho \"$0\" > '{}'\n", marker.display());
    let victim = sb.dir.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("worker-1.sh"), &script).unwrap();
    let at = team_dir.join("runtime/worker-1.sh");
    // As `up` starts a pane: the digest of the script it wrote in the environment.
    let digest = team_core::supervisor::script_digest(script.as_bytes());
    let supervise = |digest: Option<&str>| {
        let id = "11111111-2222-4333-8444-555555555555";
        let mut c = sb.cmd("team-scale");
        if let Some(d) = digest {
            c.env(team_core::supervisor::SCRIPT_DIGEST_VAR, d);
        }
        c.args(["supervise", "--team", "demo", "--worker", "worker-1"])
            .args(["--owner", id, "--incarnation", id])
            .arg("--root")
            .arg(&root)
            .arg("--ws")
            .arg(&sb.ws)
            .arg("--")
            .arg("/bin/sh")
            .arg(&at)
            .output()
            .unwrap()
    };
    let refused = |o: &std::process::Output, what: &str| {
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{what}: {err}");
        assert!(!marker.exists(), "{what}: the worker ran it");
        assert!(err.contains("does not start"), "{what}: {err}");
    };
    // `runtime/` swapped for a symlink (the right bytes behind it, even).
    for link in [victim.clone(), std::path::PathBuf::from("../../../victim")] {
        std::os::unix::fs::symlink(&link, team_dir.join("runtime")).unwrap();
        refused(&supervise(Some(&digest)), "a symlinked runtime/");
        std::fs::remove_file(team_dir.join("runtime")).unwrap();
    }
    // The script `up` wrote runs, read from the sealed copy at fd 9.
    std::fs::create_dir(team_dir.join("runtime")).unwrap();
    std::fs::write(&at, &script).unwrap();
    assert!(supervise(Some(&digest)).status.success());
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap().trim(),
        "/dev/fd/9"
    );
    std::fs::remove_file(&marker).unwrap();
    // Black-box round 11: started with `up`'s command but without the digest
    // (`respawn-pane -k` reuses the command, not the environment).
    refused(&supervise(None), "no digest");
    // Black-box round 10: replaced after `up` wrote it (renamed over, written into) or
    // hard-linked to a file elsewhere.
    let evil = format!("{script}echo evil >> '{}'\n", marker.display());
    let tmp = team_dir.join("runtime/.new");
    std::fs::write(&tmp, &evil).unwrap();
    std::fs::rename(&tmp, &at).unwrap();
    refused(&supervise(Some(&digest)), "renamed over");
    std::fs::write(&at, &evil).unwrap();
    refused(&supervise(Some(&digest)), "written into");
    std::fs::write(victim.join("linked.sh"), &script).unwrap();
    std::fs::remove_file(&at).unwrap();
    std::fs::hard_link(victim.join("linked.sh"), &at).unwrap();
    let o = supervise(Some(&digest));
    refused(&o, "hard-linked");
    assert!(String::from_utf8_lossy(&o.stderr).contains("links"));
}

/// Attack (thirty-fifth black-box round): a directory of the user's (their file, plus copies
/// of the worker's own files) moved in at a worker's directory path was deleted with the
/// worker. The path is the tools', but what they did not write there is not theirs to delete:
/// the directory stays where it is, named with what it holds, and the worker stays
/// `removing` (exit 3) until it is moved out; the worker's pane and processes still go.
#[test]
fn a_directory_holding_files_the_tools_did_not_write_is_kept() {
    let sb = Sandbox::new();
    team_of_two(&sb);
    let wdir = team_dir(&sb).join("workers/worker-2");
    let mine = sb.dir.path().join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(mine.join("p.txt"), "precious\n").unwrap();
    std::fs::copy(wdir.join("inbox.md"), mine.join("inbox.md")).unwrap();
    std::fs::rename(&wdir, sb.dir.path().join("worker-2-was")).unwrap();
    std::fs::rename(&mine, &wdir).unwrap();
    let o = sb.run(
        "team-scale",
        &[
            "down", "s3", "--worker", "worker-2", "--force", "--grace", "1s",
        ],
    );
    assert_eq!(
        std::fs::read_to_string(wdir.join("p.txt")).ok().as_deref(),
        Some("precious\n"),
        "the user's file went: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_code(&o, 3);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("p.txt"), "names what it holds: {out}");
    // Once it is moved out, the removal finishes.
    std::fs::remove_file(wdir.join("p.txt")).unwrap();
    assert_code(&sb.run("team-scale", &["reconcile", "s3"]), 0);
    assert!(!wdir.exists());
}

/// Attack (thirty-seventh black-box round, against the thirty-fifth's fix): user content
/// under the names the tools write: a directory named `inbox.md`, and files named like an
/// atomic write's temporary (`.status.json.tmp-1-<32 hex>` as a directory, a short
/// `.exit.json.tmp-5-abc`). Only the tools' own names, as files, count as theirs.
#[test]
fn user_content_under_the_tools_file_names_keeps_the_directory() {
    let sb = Sandbox::new();
    team_of_two(&sb);
    let wdir = team_dir(&sb).join("workers/worker-2");
    let cases: [(&str, bool); 3] = [
        ("inbox.md", true),
        (".status.json.tmp-1-0123456789abcdef0123456789abcdef", true),
        (".exit.json.tmp-5-abc", false),
    ];
    for (i, (name, dir)) in cases.into_iter().enumerate() {
        let p = wdir.join(name);
        let _ = std::fs::remove_file(&p);
        if dir {
            std::fs::create_dir_all(p.join("sub")).unwrap();
            std::fs::write(p.join("sub/mine.txt"), "mine\n").unwrap();
        } else {
            std::fs::write(&p, "mine\n").unwrap();
        }
        // The first case's `down` leaves the worker `removing`; `reconcile` settles it after.
        let o = if i == 0 {
            sb.run(
                "team-scale",
                &[
                    "down", "s3", "--worker", "worker-2", "--force", "--grace", "1s",
                ],
            )
        } else {
            sb.run("team-scale", &["reconcile", "s3"])
        };
        let kept = if dir {
            p.join("sub/mine.txt")
        } else {
            p.clone()
        };
        assert_eq!(
            std::fs::read_to_string(&kept).ok().as_deref(),
            Some("mine\n"),
            "{name}: the user's content went: {}",
            String::from_utf8_lossy(&o.stdout)
        );
        assert_code(&o, 3);
        if dir {
            std::fs::remove_dir_all(&p).unwrap();
        } else {
            std::fs::remove_file(&p).unwrap();
        }
    }
    // With only the tools' files left, the removal finishes.
    assert_code(&sb.run("team-scale", &["reconcile", "s3"]), 0);
    assert!(!wdir.exists());
}
