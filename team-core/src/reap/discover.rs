//! Which tmux servers to scan: every socket in the user's socket directory plus `--socket`s.

use std::collections::BTreeSet;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The sockets in `dir` (`<tmux_tmpdir>/tmux-<uid>`), then each of `extra`, without
/// duplicates. A missing directory just has no sockets.
pub fn sockets(dir: &Path, extra: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut found = BTreeSet::new();
    match std::fs::read_dir(dir) {
        Ok(rd) => {
            for e in rd {
                let e = e.map_err(|e| Error::io("read directory", dir, e))?;
                let path = e.path();
                let ft = e
                    .file_type()
                    .map_err(|err| Error::io("inspect", &path, err))?;
                if ft.is_socket() {
                    found.insert(path);
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io("read directory", dir, e)),
    }
    let mut out: Vec<PathBuf> = found.into_iter().collect();
    for p in extra {
        if !out.contains(p) {
            out.push(p.clone());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sockets_and_extras() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("file"), b"").unwrap();
        let s = d.path().join("sock");
        let _l = std::os::unix::net::UnixListener::bind(&s).unwrap();
        let extra = PathBuf::from("/elsewhere/sock");
        let got = sockets(d.path(), &[extra.clone(), s.clone()]).unwrap();
        assert_eq!(got, vec![s, extra]);
        assert!(sockets(&d.path().join("missing"), &[]).unwrap().is_empty());
    }
}
