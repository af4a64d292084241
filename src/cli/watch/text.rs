//! A `watch` frame as text (`--once`): drawn into a buffer of the width with
//! [`render::draw`], then read back line by line.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Span;

use super::render::{self, View};

/// `view` drawn `width` columns wide, as text: one line per row of the frame, without
/// trailing blanks.
pub fn text(view: &View, width: u16) -> String {
    let height =
        1 + view.table_height() + view.questions_height() + u16::from(view.prompt.is_some()) + 1;
    let area = Rect::new(0, 0, width, height);
    let mut buf = Buffer::empty(area);
    render::draw(view, area, &mut buf);
    text_of(&buf)
}

/// What `buf` shows, a line per row without trailing blanks.
pub(super) fn text_of(buf: &Buffer) -> String {
    let mut out = String::new();
    for line in buf.content.chunks(usize::from(buf.area.width.max(1))) {
        let mut text = String::new();
        let mut hidden = 0usize;
        for cell in line {
            let symbol = cell.symbol();
            if hidden == 0 {
                text.push_str(symbol);
            }
            // A wide character covers the cells after it.
            hidden = hidden.max(Span::raw(symbol).width()).saturating_sub(1);
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::watch::render::tests::{questions, rows, view};

    #[test]
    fn a_printed_frame_fits_a_wide_terminal() {
        let (rows, questions) = (rows(), questions());
        insta::assert_snapshot!(text(&view(&rows, &questions, None), 120), @r"
        git crew watch — 3 in flight, 1 awaiting integration — 2026-01-01T00:04:00Z
          RUN                  TASK                             PHASE      TIME      ACTIVITY LAST
          20260101-000000-0001 routes                           working    1m12s/25m just now cargo test -p routes: 41 passed
          20260101-000000-0002 a-task-id-far-longer-than-anyon… needs-help 3m/25m    2m ago   asks: which database should the r…
          20260101-000000-0003 db                               queued     0s/25m    -
          20260101-000000-0004 docs                             done       4m05s/25m 9m ago   awaiting integration

        20260101-000000-0002 asks: which database should the routes use?
          options: sqlite | postgres · leaning: sqlite, it is already a dependency
        ↑/↓ select  Enter show  d diff  a answer  i integrate  x abandon  q/Esc quit
        ");
    }

    #[test]
    fn a_printed_frame_fits_a_narrow_terminal() {
        let (rows, questions) = (rows(), questions());
        insta::assert_snapshot!(text(&view(&rows, &questions, None), 64), @r"
        git crew watch — 3 in flight, 1 awaiting integration — 2026-01-…
          RUN                  TASK        PHASE      TIME      ACTIVITY
          20260101-000000-0001 routes      working    1m12s/25m just now
          20260101-000000-0002 a-task-id-… needs-help 3m/25m    2m ago
          20260101-000000-0003 db          queued     0s/25m    -
          20260101-000000-0004 docs        done       4m05s/25m 9m ago

        20260101-000000-0002 asks: which database should the routes use?
          options: sqlite | postgres · leaning: sqlite, it is already a…
        ↑/↓ select  Enter show  d diff  a answer  i integrate  x abando…
        ");
        insta::assert_snapshot!(text(&view(&rows, &questions, None), 30), @r"
        git crew watch — 3 in flight,…
          RUN               PHASE
          …0101-000000-0001 working
          …0101-000000-0002 needs-help
          …0101-000000-0003 queued
          …0101-000000-0004 done

        20260101-000000-0002 asks: wh…
          options: sqlite | postgres …
        ↑/↓ select  Enter show  d dif…
        ");
    }

    #[test]
    fn a_printed_frame_with_no_runs_says_so() {
        let mut v = view(&[], &[], None);
        v.header = "git crew watch — 0 in flight — 2026-01-01T00:00:00Z";
        insta::assert_snapshot!(text(&v, 80), @r"
        git crew watch — 0 in flight — 2026-01-01T00:00:00Z
        no runs in flight
        ↑/↓ select  Enter show  d diff  a answer  i integrate  x abandon  q/Esc quit
        ");
    }
}
