//! Replace objects (`git replace`) never change what the tools take as reachable.

use tests::*;

use crate::worktree_keep::{branch_team_of_two, git};

/// Attack (black-box round 41): the worker commits on its branch, then makes the user's
/// `main` look like a descendant of that commit with a replace object (`git replace main F`,
/// where F has the worker's commit as its parent). With replace objects honoured, "another
/// branch reaches its commits" held, and `down` deleted the worker branch: once the user
/// drops the bogus replacement (`git replace -d`), the commit is on no branch.
#[test]
fn a_replace_object_never_makes_a_worker_branch_look_merged() {
    let sb = Sandbox::new();
    branch_team_of_two(&sb);
    let wt = sb.ws.join(".team/worktrees/demo/worker-2");
    std::fs::write(wt.join("w.txt"), "work\n").unwrap();
    git(&wt, &["add", "w.txt"]);
    git(&wt, &["commit", "-qm", "the worker's work"]);
    let work = git(&wt, &["rev-parse", "HEAD"]);
    let main = git(&sb.ws, &["rev-parse", "HEAD"]);
    let tree = git(&sb.ws, &["rev-parse", "HEAD^{tree}"]);
    let fake = git(
        &wt,
        &["commit-tree", &tree, "-p", &work, "-m", "looks like main"],
    );
    git(&wt, &["replace", &main, &fake]);
    let o = sb.run(
        "team-scale",
        &["down", "demo", "--worker", "worker-2", "--force", "--json"],
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    git(&sb.ws, &["replace", "-d", &main]);
    assert!(
        !git(&sb.ws, &["branch", "--contains", &work]).is_empty(),
        "the worker's commit is on no branch once the replacement is gone: {out}"
    );
}
