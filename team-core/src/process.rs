//! Process proofs (Linux). Placeholder until the process layer lands.

use crate::error::Result;

/// Start time of `pid` (`/proc/<pid>/stat` field 22), `None` when gone.
pub fn start_time(pid: u32) -> Result<Option<u64>> {
    let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return Ok(None);
    };
    let rest = s.rsplit_once(')').map(|x| x.1).unwrap_or("");
    Ok(rest.split_whitespace().nth(19).and_then(|v| v.parse().ok()))
}
