//! A worker's side of the task lifecycle, and late claims of removed workers.

use serde_json::Value;
use tests::{Sandbox, assert_code, json_lines};

fn incarnation(sb: &Sandbox, worker: &str) -> String {
    let st = json_lines(&sb.run("team-scale", &["status", "demo", "--json"]).stdout);
    st.iter()
        .find(|l| l["type"] == "worker" && l["worker"] == worker)
        .and_then(|l| l["incarnation"].as_str())
        .unwrap()
        .to_string()
}

fn task(sb: &Sandbox, id: u64) -> Value {
    serde_json::from_slice(
        &std::fs::read(sb.ws.join(format!(".team/teams/demo/tasks/{id}.json"))).unwrap(),
    )
    .unwrap()
}

fn act(sb: &Sandbox, action: &str, id: u64, worker: &str, inc: &str) -> std::process::Output {
    sb.cmd("team-scale")
        .args([
            "task",
            action,
            &id.to_string(),
            "demo",
            "--worker",
            worker,
            "--incarnation",
            inc,
        ])
        .output()
        .unwrap()
}

#[test]
fn claim_done_and_late_claims_of_removed_workers() {
    let sb = Sandbox::new();
    assert_code(
        &sb.run(
            "team-scale",
            &[
                "init",
                "demo",
                "--private",
                "--worker-cmd",
                "exec sleep 100000",
            ],
        ),
        0,
    );
    let mut c = sb.cmd("team-scale");
    c.args(["up", "demo", "2", "--ready-timeout", "0", "--tasks", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    std::io::Write::write_all(
        &mut child.stdin.take().unwrap(),
        br#"[{"subject":"a","description":"","owner":"new:1"},{"subject":"b","description":"","blocked_by":["new:1"]}]"#,
    )
    .unwrap();
    assert!(child.wait().unwrap().success());
    let (i1, i2) = (incarnation(&sb, "worker-1"), incarnation(&sb, "worker-2"));

    // Task 2 is blocked by task 1; task 1 is worker-1's.
    assert_code(&act(&sb, "claim", 2, "worker-2", &i2), 1);
    assert_code(&act(&sb, "claim", 1, "worker-2", &i2), 1);
    assert_code(&act(&sb, "claim", 1, "worker-1", &i1), 0);
    assert_eq!(task(&sb, 1)["status"], "in_progress");
    assert_code(&act(&sb, "claim", 1, "worker-1", &i1), 0); // already so
    assert_code(
        &act(
            &sb,
            "done",
            1,
            "worker-1",
            &uuid::Uuid::new_v4().to_string(),
        ),
        1,
    );
    assert_code(&act(&sb, "done", 1, "worker-1", &i1), 0);
    assert_eq!(task(&sb, 1)["status"], "completed");
    assert_code(&act(&sb, "claim", 2, "worker-2", &i2), 0);
    assert_eq!(task(&sb, 2)["owner"], "worker-2");
    let version = task(&sb, 2)["version"].as_u64().unwrap();

    // worker-2 is removed: its task goes back to pending, and its late claim is refused.
    assert_code(
        &sb.run(
            "team-scale",
            &[
                "down", "demo", "--worker", "worker-2", "--force", "--grace", "1s",
            ],
        ),
        0,
    );
    let t2 = task(&sb, 2);
    assert_eq!(
        (t2["status"].as_str(), t2["owner"].is_null()),
        (Some("pending"), true)
    );
    assert!(t2["version"].as_u64().unwrap() > version);
    let o = act(&sb, "claim", 2, "worker-2", &i2);
    assert_code(&o, 1);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not a member"),
        "{o:?}"
    );
    let o = sb
        .cmd("team-scale")
        .args([
            "worker-status",
            "demo",
            "--worker",
            "worker-2",
            "--incarnation",
            &i2,
            "--state",
            "idle",
        ])
        .output()
        .unwrap();
    assert_code(&o, 1);
    assert_eq!(
        task(&sb, 2)["status"],
        "pending",
        "the refused claim changed nothing"
    );
    // A person at the keyboard may leave the incarnation out.
    let o = sb
        .cmd("team-scale")
        .args(["task", "claim", "2", "demo", "--worker", "worker-1"])
        .output()
        .unwrap();
    assert_code(&o, 0);
}
