//! The geometry of `up`: where new worker panes go and how many fit, simulated with tmux's
//! own arithmetic (its tiled grid, and what `split-window -l pct%` makes of a pane), so that
//! every worker pane keeps at least [`MIN_PANE`].
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **Every worker pane is at least 20x5 cells** ([`MIN_PANE`], issue 15). `up` plans from the
//!   listing's pane and window sizes: the first workers go in a column beside the leader (`-h
//!   50%`, the leader keeps its half and is never resized again), divided evenly as far as every
//!   pane keeps 5 rows (the split arithmetic is tmux's, simulated in `stack_cells`); the rest go
//!   in new windows of the team's session, each holding the workers alone and re-tiled (`select-
//!   layout tiled`) after every split inside the same guarded chain, up to what tmux's tiled grid
//!   holds at 20x5 (80x24: 4 beside the leader, 12 a window; 200x50: 8 and 64). A later `up`
//!   splits the member with the most room: in a window of workers only (every pane in it tagged
//!   as this team's worker), the window is re-tiled; elsewhere the member's pane is divided as a
//!   column and no other pane moves. (Chosen over re-tiling the leader's window: that would move
//!   the leader and any pane of the user's.) A new window's size is taken from the session's
//!   windows (tmux gives a session's new windows one size); if it is wrong, tmux's "no space"
//!   still moves the rest to a new window. An adopted session with no room is refused, as
//!   before. `--max-workers` is 1 to 1024.

/// The smallest worker pane `up` makes, in cells (width, height). A window that cannot hold
/// another pane this big continues in a new window.
pub const MIN_PANE: (u32, u32) = (20, 5);

/// How a run of new panes is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Layout {
    /// A column beside the leader (`-h 50%`), divided evenly top to bottom.
    LeaderColumn,
    /// A column of workers: the source pane is split evenly top to bottom.
    Stack,
    /// A window of workers only: every split is followed by `select-layout tiled`.
    Tiled,
}

/// Where the next new panes go, and how many of at least [`MIN_PANE`] still fit there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Place {
    pub(super) layout: Layout,
    pub(super) fits: usize,
}

/// tmux's grid for `n` tiled panes (`layout_set_tiled`): (rows, columns).
pub(super) fn tiled_grid(n: u32) -> (u32, u32) {
    let (mut rows, mut cols) = (1, 1);
    while rows * cols < n {
        rows += 1;
        if rows * cols < n {
            cols += 1;
        }
    }
    (rows, cols)
}

/// How many panes of at least [`MIN_PANE`] a `w`x`h` window holds when tiled.
pub(super) fn tiled_fit(w: u32, h: u32) -> usize {
    let mut n = 0u32;
    loop {
        let (rows, cols) = tiled_grid(n + 1);
        if rows > h || cols > w {
            return n as usize;
        }
        let (pw, ph) = ((w - (cols - 1)) / cols, (h - (rows - 1)) / rows);
        if pw < MIN_PANE.0 || ph < MIN_PANE.1 || n >= 4096 {
            return n as usize;
        }
        n += 1;
    }
}

/// What tmux makes of `split-window -l pct%` on a pane `h` cells long: (old pane, new pane).
pub(super) fn split_cells(h: u32, pct: Option<u8>) -> (u32, u32) {
    let new = match pct {
        Some(p) => (h * u32::from(p) / 100).clamp(1, h.saturating_sub(2).max(1)),
        None => h.div_ceil(2).saturating_sub(1),
    };
    (h.saturating_sub(new + 1), new)
}

/// The heights a pane `h` cells tall ends with when `n` new panes are split off it in a chain
/// (the source, then each new one, with [`share`]s): the source's first, then each new pane's.
pub(super) fn stack_cells(h: u32, n: usize) -> Vec<u32> {
    let mut out = Vec::with_capacity(n + 1);
    let mut cur = h;
    for k in 0..n {
        let (old, new) = split_cells(cur, share(n - k, n - k + 1));
        out.push(old);
        cur = new;
    }
    out.push(cur);
    out
}

/// How many new panes a stack of height `h` and width `w` takes with every pane (the source
/// included) at least [`MIN_PANE`].
pub(super) fn stack_fit(w: u32, h: u32) -> usize {
    if w < MIN_PANE.0 {
        return 0;
    }
    let mut n = 0;
    while n < 4096 && stack_cells(h, n + 1).iter().all(|&c| c >= MIN_PANE.1) {
        n += 1;
    }
    n
}

/// How many new panes fit in the column a split of the leader (`-h 50%`) opens.
pub(super) fn leader_column_fit(g: crate::tmux::Geometry) -> usize {
    let (_, col) = split_cells(g.pane_width, Some(50));
    if col < MIN_PANE.0 || g.pane_height < MIN_PANE.1 {
        return 0;
    }
    // The column is one pane of the leader's height, which the chain then divides.
    1 + stack_fit(col, g.pane_height)
}

/// `pct` of a pane that must leave room for `keep` shares when `total` shares are split off.
pub(super) fn share(give: usize, of: usize) -> Option<u8> {
    if give == 0 || of == 0 || give >= of {
        return None;
    }
    let pct = (give * 100 + of / 2) / of;
    Some(pct.clamp(1, 99) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_keep_every_pane_at_least_the_minimum() {
        // tmux's tiled grid, and how many 20x5 panes a window holds.
        assert_eq!(tiled_grid(12), (4, 3));
        assert_eq!(tiled_fit(80, 24), 12);
        assert_eq!(tiled_fit(200, 50), 64);
        assert_eq!(tiled_fit(19, 50), 0);
        for (w, h) in [(80, 24), (200, 50), (41, 11), (300, 100)] {
            let n = tiled_fit(w, h) as u32;
            let (rows, cols) = tiled_grid(n);
            assert!((w - (cols - 1)) / cols >= MIN_PANE.0 && (h - (rows - 1)) / rows >= MIN_PANE.1);
        }
        // A column: every pane, the source's included, keeps at least 5 rows.
        for h in 1..200 {
            let n = stack_fit(40, h);
            assert!(
                n == 0 || stack_cells(h, n).iter().all(|&c| c >= MIN_PANE.1),
                "{h}"
            );
            assert!(
                n == 0 || (n as u32 + 1) * (MIN_PANE.1 + 1) <= h + 1,
                "{h}: {n}"
            );
        }
        assert_eq!(stack_fit(19, 100), 0);
        assert_eq!(stack_fit(40, 24), 3);
        let g = |w, h| crate::tmux::Geometry {
            pane_width: w,
            pane_height: h,
            window_width: w,
            window_height: h,
        };
        assert_eq!(leader_column_fit(g(80, 24)), 4);
        assert_eq!(leader_column_fit(g(200, 50)), 8);
        assert_eq!(leader_column_fit(g(39, 50)), 0);
    }

    #[test]
    fn shares_divide_evenly() {
        assert_eq!(share(1, 2), Some(50));
        assert_eq!(share(2, 3), Some(67));
        assert_eq!(share(3, 4), Some(75));
        assert_eq!(share(1, 1), None);
    }
}
