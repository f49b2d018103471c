//! The redo journal: how a change spanning several files commits atomically.
//!
//! `journal.json` holds the full new bytes of every file to write (or a delete marker), the
//! base generation and a checksum. Writing it durably is the commit point. Then each entry is
//! applied atomically and the journal is deleted. Whoever takes the state lock next replays a
//! journal it finds; replay is idempotent because every entry is a whole file. A journal that
//! fails its checksum, names a path outside the team directory, or does not fit the current
//! generation is refused whole, never half-applied.

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::fsutil;

const JOURNAL_VERSION: u64 = 1;

/// One file of a journaled change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// Relative to the team directory, `/`-separated, no `.` or `..`.
    pub path: String,
    /// The file's whole new content; `None` deletes it.
    pub content: Option<String>,
}

/// The journal file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Journal {
    pub v: u64,
    /// The generation of `team.json` the change was made against.
    pub base_generation: u64,
    pub entries: Vec<Entry>,
    /// SHA-256 (hex) over the canonical JSON of `[v, base_generation, entries]`.
    pub checksum: String,
}

fn checksum(v: u64, base: u64, entries: &[Entry]) -> String {
    let bytes = serde_json::to_vec(&(v, base, entries)).expect("entries serialize");
    hex::encode(Sha256::digest(bytes))
}

impl Journal {
    /// A journal for `entries` made against `base_generation`.
    pub fn new(base_generation: u64, entries: Vec<Entry>) -> Journal {
        let checksum = checksum(JOURNAL_VERSION, base_generation, &entries);
        Journal {
            v: JOURNAL_VERSION,
            base_generation,
            entries,
            checksum,
        }
    }

    /// Parses and checks a journal (checksum, version, paths).
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Journal> {
        let refuse = |msg: String| Error::JournalRefused {
            path: path.to_path_buf(),
            msg,
        };
        let j: Journal =
            serde_json::from_slice(bytes).map_err(|e| refuse(format!("unparsable: {e}")))?;
        if j.v != JOURNAL_VERSION {
            return Err(refuse(format!("unknown journal version {}", j.v)));
        }
        if checksum(j.v, j.base_generation, &j.entries) != j.checksum {
            return Err(refuse("checksum mismatch".into()));
        }
        for e in &j.entries {
            check_rel(&e.path).map_err(|m| refuse(format!("entry {:?}: {m}", e.path)))?;
        }
        Ok(j)
    }
}

/// Checks a journal entry path: relative, plain components only.
fn check_rel(rel: &str) -> std::result::Result<(), String> {
    let p = Path::new(rel);
    if rel.is_empty() || p.is_absolute() {
        return Err("not a relative path".into());
    }
    if !p.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err("has `.`, `..` or a root".into());
    }
    Ok(())
}

/// The journal's location inside a team directory.
pub fn journal_path(team_dir: &Path) -> PathBuf {
    team_dir.join("journal.json")
}

/// Writes the journal durably: the commit point. `root` is the state root the team directory
/// lies in: nothing is reached through a symlink below it (`fsutil`).
pub fn commit(root: &Path, team_dir: &Path, j: &Journal) -> Result<()> {
    let bytes = serde_json::to_vec(j).map_err(|e| Error::Internal(e.to_string()))?;
    fsutil::state_write(root, &journal_path(team_dir), &bytes)?;
    crate::failpoint::hit("journal.committed")
}

/// Applies every entry of `j` and then deletes the journal. `stop_after` ends early after that
/// many steps (for crash tests only: a step is one entry, and the final delete is one more).
pub fn apply(root: &Path, team_dir: &Path, j: &Journal, stop_after: Option<usize>) -> Result<()> {
    for (i, e) in j.entries.iter().enumerate() {
        if stop_after == Some(i) {
            return Ok(());
        }
        let target = team_dir.join(&e.path);
        match &e.content {
            Some(c) => {
                if let Some(parent) = target.parent() {
                    fsutil::state_create_dir(root, parent)?;
                }
                fsutil::state_write(root, &target, c.as_bytes())?;
            }
            None => fsutil::state_remove(root, &target)?,
        }
        if i == 0 {
            crate::failpoint::hit("journal.first_entry_applied")?;
        }
    }
    if stop_after == Some(j.entries.len()) {
        return Ok(());
    }
    fsutil::state_remove(root, &journal_path(team_dir))
}

/// Replays a journal left in `team_dir`, if any. `current_generation` is the generation of the
/// `team.json` on disk (`None` if there is none). Returns whether a journal was replayed.
pub fn replay(root: &Path, team_dir: &Path, current_generation: Option<u64>) -> Result<bool> {
    let path = journal_path(team_dir);
    let Some(bytes) = fsutil::state_read(root, &path, fsutil::limits::JOURNAL)? else {
        return Ok(false);
    };
    let j = Journal::parse(&path, &bytes)?;
    let fits = match current_generation {
        Some(g) => g == j.base_generation || g == j.base_generation + 1,
        None => false,
    };
    if !fits {
        return Err(Error::JournalRefused {
            path,
            msg: format!(
                "made against generation {} but team.json is at {}",
                j.base_generation,
                current_generation.map_or("(missing)".to_string(), |g| g.to_string())
            ),
        });
    }
    apply(root, team_dir, &j, None)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn read_tree(dir: &Path) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for e in walk(dir) {
            let rel = e.strip_prefix(dir).unwrap().to_string_lossy().to_string();
            if rel == "journal.json" || rel.contains(".tmp-") {
                continue;
            }
            out.insert(rel, std::fs::read_to_string(&e).unwrap());
        }
        out
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut v = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                v.extend(walk(&p));
            } else {
                v.push(p);
            }
        }
        v
    }

    fn gen_file(g: u64) -> String {
        format!("{{\"generation\":{g}}}")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// For random multi-file changes and a crash after every prefix of the steps, replay
        /// yields exactly the old or the new state, never a mix.
        #[test]
        fn crash_after_any_prefix_replays_to_old_or_new(
            old in proptest::collection::btree_map("(tasks/[0-9]{1,2}|workers/w[0-3]/status)\\.json", "[a-z ]{0,20}", 0..6),
            change in proptest::collection::btree_map("(tasks/[0-9]{1,2}|workers/w[0-3]/status)\\.json", proptest::option::of("[a-z ]{0,20}"), 1..6),
        ) {
            let mut old_state = old.clone();
            old_state.insert("team.json".into(), gen_file(7));
            let mut new_state = old_state.clone();
            new_state.insert("team.json".into(), gen_file(8));
            let mut entries = vec![Entry { path: "team.json".into(), content: Some(gen_file(8)) }];
            for (p, c) in &change {
                match c {
                    Some(c) => { new_state.insert(p.clone(), c.clone()); }
                    None => { new_state.remove(p); }
                }
                entries.push(Entry { path: p.clone(), content: c.clone() });
            }
            let j = Journal::new(7, entries);
            // Steps: 0 = nothing (crash before commit), 1 = journal written, then one per entry,
            // then the journal's removal.
            for crash_after in 0..=(j.entries.len() + 2) {
                let d = tempfile::tempdir().unwrap();
                for (p, c) in &old_state {
                    let t = d.path().join(p);
                    std::fs::create_dir_all(t.parent().unwrap()).unwrap();
                    std::fs::write(t, c).unwrap();
                }
                if crash_after >= 1 {
                    commit(d.path(), d.path(), &j).unwrap();
                    apply(d.path(), d.path(), &j, Some(crash_after - 1)).unwrap();
                }
                let on_disk: u64 = if read_tree(d.path())["team.json"].contains('8') { 8 } else { 7 };
                replay(d.path(), d.path(), Some(on_disk)).unwrap();
                let got = read_tree(d.path());
                prop_assert!(!journal_path(d.path()).exists());
                if crash_after == 0 {
                    prop_assert_eq!(&got, &old_state);
                } else {
                    prop_assert_eq!(&got, &new_state);
                }
                // Idempotent: a second replay finds nothing and changes nothing.
                prop_assert!(!replay(d.path(), d.path(), Some(8)).unwrap());
                prop_assert_eq!(read_tree(d.path()), got);
            }
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = Journal::parse(Path::new("j"), &bytes);
        }
    }

    #[test]
    fn tampered_or_hostile_journals_are_refused_whole() {
        let d = tempfile::tempdir().unwrap();
        let mut j = Journal::new(
            1,
            vec![Entry {
                path: "team.json".into(),
                content: Some("x".into()),
            }],
        );
        j.entries[0].content = Some("y".into());
        std::fs::write(journal_path(d.path()), serde_json::to_vec(&j).unwrap()).unwrap();
        let err = replay(d.path(), d.path(), Some(1)).unwrap_err();
        assert!(err.to_string().contains("checksum"), "{err}");
        assert!(!d.path().join("team.json").exists());

        let j = Journal::new(
            1,
            vec![Entry {
                path: "../escape".into(),
                content: Some("x".into()),
            }],
        );
        std::fs::write(journal_path(d.path()), serde_json::to_vec(&j).unwrap()).unwrap();
        let err = replay(d.path(), d.path(), Some(1)).unwrap_err();
        assert!(err.to_string().contains(".."), "{err}");

        let j = Journal::new(
            5,
            vec![Entry {
                path: "team.json".into(),
                content: Some("x".into()),
            }],
        );
        std::fs::write(journal_path(d.path()), serde_json::to_vec(&j).unwrap()).unwrap();
        let err = replay(d.path(), d.path(), Some(9)).unwrap_err();
        assert!(err.to_string().contains("generation 5"), "{err}");
        assert!(
            journal_path(d.path()).exists(),
            "a refused journal is kept for the user"
        );
    }
}
