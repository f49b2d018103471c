//! The one snapshot call (`list-panes -a -F ...`) and its pure parser.
//!
//! Each line is framed by a random nonce at both ends and carries a fixed number of
//! tab-separated fields. Tag values are arbitrary strings (a tag can hold a tab or a newline),
//! so a line that is not framed by this snapshot's nonce or has the wrong field count is
//! refused, never guessed: its pane (when its first field still names one) is unverifiable.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **Snapshot lines are framed by a per-call random nonce** at both ends, and must have the
//!   exact field count. tmux prints tag values raw (tabs and newlines included), so without the
//!   frame a hostile tag could forge a second pane's line.

use crate::model::is_tmux_id;

/// The `@team_*` tags as a pane sees them.
///
/// tmux resolves `#{@x}` in a pane's context through pane, window and then session options,
/// so a session's tags show through on an untagged pane. That is why a pane counts as tagged
/// only through the pane-only tags (`@team_incarnation` on workers, `@team_role` on the
/// leader), and why sessions carry `@team_session_owner`, which panes never set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tags {
    pub owner: String,
    pub worker: String,
    pub incarnation: String,
    pub workspace: String,
    pub name: String,
    pub role: String,
    pub op: String,
    pub session_owner: String,
}

impl Tags {
    /// Whether the pane itself carries our tags (not just inherited session options).
    pub fn pane_tagged(&self) -> bool {
        !self.owner.is_empty() && (!self.incarnation.is_empty() || !self.role.is_empty())
    }
}

/// One pane as the snapshot saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneRow {
    pub pane_id: String,
    pub pane_pid: u32,
    pub dead: bool,
    pub session_id: String,
    pub session_name: String,
    pub window_id: String,
    pub server_pid: u32,
    pub server_start: u64,
    pub tags: Tags,
    /// The command tmux started the pane with (`#{pane_start_command}`, as tmux quotes it),
    /// listed only for a dead pane and a leader-tagged one (empty otherwise, to keep the
    /// listing small): what proves a dead pane was a worker's, and a leader no record names
    /// was started by `init`.
    pub start_command: String,
}

impl PaneRow {
    /// Whether this line shows exactly the pane `p` records, where it was recorded: the same
    /// server incarnation, pane id and pid, session and window (a recorded pane moved
    /// elsewhere, or respawned, is not it).
    pub fn is_exactly(&self, p: &crate::model::PaneIncarnation) -> bool {
        (self.server_pid, self.server_start) == (p.server_pid, p.server_start)
            && self.pane_id == p.pane_id
            && self.pane_pid == p.pane_pid
            && self.session_id == p.session_id
            && self.window_id == p.window_id
    }

    /// The incarnation this listing line shows (without the process start time, which only
    /// `/proc` knows).
    pub fn incarnation(&self) -> crate::model::PaneIncarnation {
        crate::model::PaneIncarnation {
            server_pid: self.server_pid,
            server_start: self.server_start,
            pane_id: self.pane_id.clone(),
            pane_pid: self.pane_pid,
            session_id: self.session_id.clone(),
            window_id: self.window_id.clone(),
            process_start: None,
        }
    }
}

/// A line the parser refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// The pane the line starts with, when that much could be read.
    pub pane_id: Option<String>,
    pub reason: String,
}

/// A parsed snapshot of one server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub rows: Vec<PaneRow>,
    pub malformed: Vec<Malformed>,
    /// Each well-formed pane's size and its window's, by pane id (for layout decisions only:
    /// geometry is never part of a proof).
    pub geometry: std::collections::HashMap<String, Geometry>,
}

/// A pane's size and its window's, in cells.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Geometry {
    pub pane_width: u32,
    pub pane_height: u32,
    pub window_width: u32,
    pub window_height: u32,
}

const FIELDS: &[&str] = &[
    "pane_id",
    "pane_pid",
    "pane_dead",
    "session_id",
    "window_id",
    "pid",
    "start_time",
    "@team_owner",
    "@team_worker",
    "@team_incarnation",
    "@team_workspace",
    "@team_name",
    "@team_role",
    "@team_op",
    "@team_session_owner",
    "session_name",
    "pane_width",
    "pane_height",
    "window_width",
    "window_height",
    // Only for a dead pane or a leader-tagged one (conditionals); tmux escapes tabs and
    // newlines in it.
    "?pane_dead,#{pane_start_command},#{?@team_role,#{pane_start_command},}",
];

/// The `-F` format for a snapshot framed by `nonce`.
pub fn format(nonce: &str) -> String {
    let mut f = String::from(nonce);
    for name in FIELDS {
        f.push('\t');
        f.push_str("#{");
        f.push_str(name);
        f.push('}');
    }
    f.push('\t');
    f.push_str(nonce);
    f
}

impl Snapshot {
    /// Parses `list-panes -a -F <format(nonce)>` output.
    pub fn parse(out: &str, nonce: &str) -> Snapshot {
        let mut s = Snapshot::default();
        // A tag containing newlines splits its pane's line; the pieces are refused below, and
        // the first piece still names the pane.
        for line in out.split('\n') {
            if line.is_empty() {
                continue;
            }
            match parse_line(line, nonce) {
                Ok((row, geo)) => {
                    s.geometry.insert(row.pane_id.clone(), geo);
                    s.rows.push(row);
                }
                Err(m) => s.malformed.push(m),
            }
        }
        // A pane with a malformed line must not also appear as well-formed (forged lines).
        let bad: Vec<String> = s
            .malformed
            .iter()
            .filter_map(|m| m.pane_id.clone())
            .collect();
        s.rows.retain(|r| !bad.contains(&r.pane_id));
        s.geometry.retain(|p, _| !bad.contains(p));
        let mut seen = std::collections::HashSet::new();
        let mut dup = Vec::new();
        for r in &s.rows {
            if !seen.insert(r.pane_id.clone()) {
                dup.push(r.pane_id.clone());
            }
        }
        if !dup.is_empty() {
            s.rows.retain(|r| !dup.contains(&r.pane_id));
            s.geometry.retain(|p, _| !dup.contains(p));
            for d in dup {
                s.malformed.push(Malformed {
                    pane_id: Some(d),
                    reason: "pane listed twice".into(),
                });
            }
        }
        s
    }

    /// The row for `pane_id`.
    pub fn pane(&self, pane_id: &str) -> Option<&PaneRow> {
        self.rows.iter().find(|r| r.pane_id == pane_id)
    }

    /// Whether `pane_id` had a malformed line.
    pub fn is_malformed(&self, pane_id: &str) -> bool {
        self.malformed
            .iter()
            .any(|m| m.pane_id.as_deref() == Some(pane_id))
    }

    /// The size of `pane_id` and of its window, when it was listed.
    pub fn geometry(&self, pane_id: &str) -> Option<Geometry> {
        self.geometry.get(pane_id).copied()
    }

    /// The server identity, when any pane was listed.
    pub fn server(&self) -> Option<(u32, u64)> {
        self.rows.first().map(|r| (r.server_pid, r.server_start))
    }
}

fn parse_line(line: &str, nonce: &str) -> Result<(PaneRow, Geometry), Malformed> {
    let parts: Vec<&str> = line.split('\t').collect();
    let pane_id = parts
        .get(1)
        .filter(|p| parts.first() == Some(&nonce) && is_tmux_id(p, '%'))
        .map(|p| p.to_string());
    let bad = |reason: &str| Malformed {
        pane_id: pane_id.clone(),
        reason: reason.to_string(),
    };
    if parts.first() != Some(&nonce) {
        return Err(bad("line does not start with this snapshot's nonce"));
    }
    if parts.len() != FIELDS.len() + 2 || parts.last() != Some(&nonce) {
        return Err(bad(
            "wrong number of fields (a value holds a tab or newline?)",
        ));
    }
    let f = &parts[1..parts.len() - 1];
    let num = |s: &str, what: &str| -> Result<u64, Malformed> {
        s.parse::<u64>()
            .map_err(|_| bad(&format!("{what} {s:?} is not a number")))
    };
    if !is_tmux_id(f[0], '%') || !is_tmux_id(f[3], '$') || !is_tmux_id(f[4], '@') {
        return Err(bad("an id is not of the form %N/$N/@N"));
    }
    let pane_pid = u32::try_from(num(f[1], "pane_pid")?).map_err(|_| bad("pane_pid too large"))?;
    let dead = match f[2] {
        "0" | "" => false,
        "1" => true,
        _ => return Err(bad("pane_dead is not 0 or 1")),
    };
    let server_pid = u32::try_from(num(f[5], "pid")?).map_err(|_| bad("pid too large"))?;
    let server_start = num(f[6], "start_time")?;
    let cells = |i: usize, what: &str| -> Result<u32, Malformed> {
        u32::try_from(num(f[i], what)?).map_err(|_| bad(&format!("{what} too large")))
    };
    let geo = Geometry {
        pane_width: cells(16, "pane_width")?,
        pane_height: cells(17, "pane_height")?,
        window_width: cells(18, "window_width")?,
        window_height: cells(19, "window_height")?,
    };
    let row = PaneRow {
        pane_id: f[0].to_string(),
        pane_pid,
        dead,
        session_id: f[3].to_string(),
        window_id: f[4].to_string(),
        server_pid,
        server_start,
        tags: Tags {
            owner: f[7].to_string(),
            worker: f[8].to_string(),
            incarnation: f[9].to_string(),
            workspace: f[10].to_string(),
            name: f[11].to_string(),
            role: f[12].to_string(),
            op: f[13].to_string(),
            session_owner: f[14].to_string(),
        },
        session_name: f[15].to_string(),
        start_command: f[20].to_string(),
    };
    Ok((row, geo))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const N: &str = "n0nce";

    fn line(fields: &[&str]) -> String {
        format!("{N}\t{}\t{N}", fields.join("\t"))
    }

    fn good(id: &str) -> String {
        line(&[
            id,
            "123",
            "0",
            "$1",
            "@2",
            "900",
            "1700000000",
            "own",
            "worker-1",
            "inc",
            "/ws",
            "demo",
            "",
            "",
            "sown",
            "team-demo",
            "80",
            "24",
            "160",
            "48",
            "",
        ])
    }

    #[test]
    fn parses_a_good_line() {
        let s = Snapshot::parse(&format!("{}\n", good("%3")), N);
        assert_eq!(s.malformed, vec![]);
        let r = &s.rows[0];
        assert_eq!((r.pane_id.as_str(), r.pane_pid, r.dead), ("%3", 123, false));
        assert_eq!((r.server_pid, r.server_start), (900, 1700000000));
        assert_eq!(r.tags.incarnation, "inc");
        assert_eq!(r.tags.session_owner, "sown");
        assert!(r.tags.pane_tagged());
        let g = s.geometry("%3").unwrap();
        assert_eq!(
            (g.pane_width, g.pane_height, g.window_width, g.window_height),
            (80, 24, 160, 48)
        );
    }

    #[test]
    fn refuses_malformed_lines() {
        // A tag with a newline: the first piece names the pane, which becomes unverifiable.
        let forged = line(&[
            "%4", "1", "0", "$1", "@2", "900", "1", "own", "w\n", "", "", "", "", "", "", "s", "1",
            "1", "1", "1",
        ]);
        let s = Snapshot::parse(&forged, N);
        assert!(s.rows.is_empty());
        assert!(s.is_malformed("%4"));
        // Wrong nonce: a line someone prepared in advance.
        let s = Snapshot::parse(&good("%5").replace(N, "other"), N);
        assert!(s.rows.is_empty() && s.malformed.len() == 1);
        // Bad numbers and ids.
        for bad in [
            good("%5").replace("\t123\t", "\tx\t"),
            good("%5").replace("\t$1\t", "\t1\t"),
            good("5"),
            good("%5").replace("\t0\t$1", "\t2\t$1"),
        ] {
            let s = Snapshot::parse(&bad, N);
            assert!(s.rows.is_empty(), "accepted {bad:?}");
        }
        // The same pane twice (a forged second line): both refused.
        let s = Snapshot::parse(&format!("{}\n{}\n", good("%6"), good("%6")), N);
        assert!(s.rows.is_empty() && s.is_malformed("%6"));
    }

    #[test]
    fn inherited_session_tags_do_not_make_a_pane_ours() {
        let t = Tags {
            owner: "x".into(),
            ..Default::default()
        };
        assert!(!t.pane_tagged());
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,400}") {
            let _ = Snapshot::parse(&s, N);
        }

        #[test]
        fn a_tag_value_cannot_forge_another_pane(v in "[ -~\t\n]{0,40}") {
            // Whatever a tag holds, the listing yields at most the real pane, never another.
            let l = line(&["%1", "1", "0", "$1", "@1", "9", "9", &v, "", "", "", "", "", "", "", "s", "1", "1", "1", "1"]);
            let s = Snapshot::parse(&l, N);
            prop_assert!(s.rows.iter().all(|r| r.pane_id == "%1"));
        }
    }
}
