//! Drawing a `watch` frame with ratatui: the header, the table sized to the width, the
//! questions of the runs that ask for help, the status or prompt line, and the key line.
//! The live console draws it on the terminal; `--once` into a buffer of the width
//! (`text`), so both show the same frame.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Cell, HighlightSpacing, Paragraph, Row as TableRow, StatefulWidget, Table, TableState, Widget,
};

use crate::view::console::table::{self, Column, Row};
use crate::view::human::{Tone, truncate};

/// The key line.
pub const KEYS: &str =
    "↑/↓ select  Enter show  d diff  a answer  i integrate  x abandon  q/Esc quit";

/// The line above the keys in the live console.
pub enum Prompt<'a> {
    /// What the last action or key said.
    Status(&'a str),
    /// The answer to a NEEDS-HELP being typed.
    Answer { run: &'a str, text: &'a str },
    /// `abandon RUN? y/n`.
    Confirm { run: &'a str },
}

/// What a frame shows.
pub struct View<'a> {
    pub header: &'a str,
    pub rows: &'a [Row],
    pub questions: &'a [[String; 2]],
    pub selected: Option<usize>,
    /// None in a printed frame.
    pub prompt: Option<Prompt<'a>>,
    /// Colours (not under NO_COLOR).
    pub color: bool,
}

impl View<'_> {
    fn style(&self, tone: Tone) -> Style {
        if !self.color {
            return Style::new();
        }
        Style::new().fg(match tone {
            Tone::Quiet => Color::DarkGray,
            Tone::Busy => Color::Cyan,
            Tone::Attention => Color::Yellow,
            Tone::Good => Color::Green,
            Tone::Bad => Color::Red,
        })
    }

    /// The table's rows and its header (one line saying so when there is no run).
    pub(super) fn table_height(&self) -> u16 {
        if self.rows.is_empty() {
            1
        } else {
            clamp(self.rows.len() + 1)
        }
    }

    /// A blank line, then two lines per question.
    pub(super) fn questions_height(&self) -> u16 {
        if self.questions.is_empty() {
            0
        } else {
            clamp(1 + 2 * self.questions.len())
        }
    }
}

fn clamp(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

/// Draws `view` in `area`; returns where the cursor goes (after the answer being typed).
pub fn draw(view: &View, area: Rect, buf: &mut Buffer) -> Option<Position> {
    let prompt_height = u16::from(view.prompt.is_some());
    // The questions right under the table, the table keeping its header and two rows
    // whatever they take; the status and key lines at the bottom.
    let room = area.height.saturating_sub(2 + prompt_height);
    let table_height = view.table_height();
    let asked = room.saturating_sub(table_height.min(3)).saturating_sub(1) / 2;
    let questions_height = if asked == 0 {
        0
    } else {
        view.questions_height().min(1 + 2 * asked)
    };
    let [head, body, questions, _, prompt, keys] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(table_height.min(room - questions_height)),
        Constraint::Length(questions_height),
        Constraint::Fill(1),
        Constraint::Length(prompt_height),
        Constraint::Length(1),
    ])
    .areas(area);
    let width = usize::from(area.width);
    Line::from(truncate(view.header, width))
        .style(Style::new().add_modifier(Modifier::BOLD))
        .render(head, buf);
    draw_table(view, body, buf);
    let mut lines = vec![Line::default()];
    for [ask, options] in view.questions {
        lines.push(Line::styled(
            truncate(ask, width),
            view.style(Tone::Attention),
        ));
        lines.push(Line::from(truncate(&format!("  {options}"), width)));
    }
    Paragraph::new(lines).render(questions, buf);
    let cursor = view
        .prompt
        .as_ref()
        .and_then(|p| draw_prompt(view, p, prompt, buf));
    Line::styled(truncate(KEYS, width), view.style(Tone::Quiet)).render(keys, buf);
    cursor
}

fn draw_table(view: &View, area: Rect, buf: &mut Buffer) {
    if view.rows.is_empty() {
        Line::from("no runs in flight").render(area, buf);
        return;
    }
    let columns = table::fit(usize::from(area.width), view.rows);
    let header = TableRow::new(columns.iter().map(|(c, _)| Cell::from(c.header())))
        .style(Style::new().add_modifier(Modifier::BOLD));
    let rows = view.rows.iter().map(|row| {
        TableRow::new(columns.iter().map(|&(c, w)| {
            let cell = Cell::from(c.cell(row, w));
            match c {
                Column::Phase => cell.style(view.style(Tone::of(row.phase))),
                _ => cell,
            }
        }))
    });
    let widths = columns.iter().map(|&(_, w)| Constraint::Length(clamp(w)));
    let table = Table::new(rows, widths)
        .header(header)
        .column_spacing(clamp(table::SPACING))
        .highlight_symbol("> ")
        .highlight_spacing(HighlightSpacing::Always)
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    let mut state = TableState::default().with_selected(view.selected);
    StatefulWidget::render(table, area, buf, &mut state);
}

fn draw_prompt(view: &View, prompt: &Prompt, area: Rect, buf: &mut Buffer) -> Option<Position> {
    let width = usize::from(area.width);
    match prompt {
        Prompt::Status(text) => Line::from(truncate(text, width)).render(area, buf),
        Prompt::Confirm { run } => Line::styled(
            truncate(&format!("abandon {run}? y/n"), width),
            view.style(Tone::Attention).add_modifier(Modifier::BOLD),
        )
        .render(area, buf),
        Prompt::Answer { run, text } => {
            let label = truncate(&format!("answer {run}: "), width.saturating_sub(1));
            let room = width.saturating_sub(label.chars().count() + 1);
            // The end of a long answer, where the typing is.
            let skip = text.chars().count().saturating_sub(room);
            let typed = Span::raw(text.chars().skip(skip).collect::<String>());
            let at = label.chars().count() + typed.width();
            Line::from(vec![
                Span::styled(label, view.style(Tone::Attention)),
                typed,
            ])
            .render(area, buf);
            return Some(Position::new(area.x + clamp(at), area.y));
        }
    }
    None
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::core::record::Phase;

    fn row(run: &str, task: &str, phase: Phase, time: &str, activity: &str, last: &str) -> Row {
        Row {
            run: run.into(),
            task: task.into(),
            phase,
            time: time.into(),
            activity: activity.into(),
            spend: String::new(),
            forecast: String::new(),
            last: last.into(),
        }
    }

    pub(in crate::cli::watch) fn rows() -> Vec<Row> {
        vec![
            row(
                "20260101-000000-0001",
                "routes",
                Phase::Working,
                "1m12s/25m",
                "just now",
                "cargo test -p routes: 41 passed",
            ),
            row(
                "20260101-000000-0002",
                "a-task-id-far-longer-than-anyone-should-write",
                Phase::NeedsHelp,
                "3m/25m",
                "2m ago",
                "asks: which database should the routes use?",
            ),
            row(
                "20260101-000000-0003",
                "db",
                Phase::Queued,
                "0s/25m",
                "-",
                "",
            ),
            row(
                "20260101-000000-0004",
                "docs",
                Phase::Done,
                "4m05s/25m",
                "9m ago",
                "awaiting integration",
            ),
        ]
    }

    pub(in crate::cli::watch) fn questions() -> Vec<[String; 2]> {
        vec![[
            "20260101-000000-0002 asks: which database should the routes use?".into(),
            "options: sqlite | postgres · leaning: sqlite, it is already a dependency".into(),
        ]]
    }

    pub(in crate::cli::watch) fn view<'a>(
        rows: &'a [Row],
        questions: &'a [[String; 2]],
        prompt: Option<Prompt<'a>>,
    ) -> View<'a> {
        View {
            header: "git crew watch — 3 in flight, 1 awaiting integration — 2026-01-01T00:04:00Z",
            rows,
            questions,
            selected: prompt.as_ref().map(|_| 1),
            prompt,
            color: true,
        }
    }

    #[test]
    fn phases_are_coloured_by_tone_unless_colour_is_off() {
        let (rows, questions) = (rows(), questions());
        let colours = |color: bool| {
            let v = View {
                color,
                ..view(&rows, &questions, None)
            };
            let area = Rect::new(0, 0, 100, 10);
            let mut buf = Buffer::empty(area);
            draw(&v, area, &mut buf);
            // The first cell of each row's phase.
            let x = (2 + 20 + 1 + 32 + 1) as u16;
            (2..6).map(|y| buf[(x, y)].fg).collect::<Vec<_>>()
        };
        assert_eq!(
            colours(true),
            [Color::Cyan, Color::Yellow, Color::DarkGray, Color::Green]
        );
        assert_eq!(colours(false), [Color::Reset; 4]);
    }

    /// The live console in a terminal of `width`×`height`, and where its cursor is.
    fn live(view: &View, width: u16, height: u16) -> (String, Option<Position>) {
        let area = Rect::new(0, 0, width, height);
        let mut buf = Buffer::empty(area);
        let cursor = draw(view, area, &mut buf);
        (super::super::text::text_of(&buf), cursor)
    }

    #[test]
    fn the_console_marks_the_selection_and_keeps_its_lines_at_the_bottom() {
        let (rows, questions) = (rows(), questions());
        let status = view(
            &rows,
            &questions,
            Some(Prompt::Status("advised 20260101-000000-0002")),
        );
        let (screen, cursor) = live(&status, 100, 14);
        insta::assert_snapshot!(screen, @r"
        git crew watch — 3 in flight, 1 awaiting integration — 2026-01-01T00:04:00Z
          RUN                  TASK                             PHASE      TIME      ACTIVITY LAST
          20260101-000000-0001 routes                           working    1m12s/25m just now cargo test -p…
        > 20260101-000000-0002 a-task-id-far-longer-than-anyon… needs-help 3m/25m    2m ago   asks: which d…
          20260101-000000-0003 db                               queued     0s/25m    -
          20260101-000000-0004 docs                             done       4m05s/25m 9m ago   awaiting inte…

        20260101-000000-0002 asks: which database should the routes use?
          options: sqlite | postgres · leaning: sqlite, it is already a dependency



        advised 20260101-000000-0002
        ↑/↓ select  Enter show  d diff  a answer  i integrate  x abandon  q/Esc quit
        ");
        assert_eq!(cursor, None);
        let confirm = view(
            &rows,
            &questions,
            Some(Prompt::Confirm {
                run: "20260101-000000-0002",
            }),
        );
        let (screen, _) = live(&confirm, 100, 14);
        assert_eq!(
            screen.lines().nth(12),
            Some("abandon 20260101-000000-0002? y/n")
        );
    }

    #[test]
    fn the_answer_being_typed_shows_its_end_with_the_cursor_after_it() {
        let (rows, questions) = (rows(), questions());
        let typed = "Use sqlite; it is already a dependency, and postgres would need a server";
        let answer = view(
            &rows,
            &questions,
            Some(Prompt::Answer {
                run: "20260101-000000-0002",
                text: typed,
            }),
        );
        let (screen, cursor) = live(&answer, 60, 10);
        let line = screen.lines().nth(8).unwrap();
        assert!(line.starts_with("answer 20260101-000000-0002: "), "{line}");
        assert!(line.ends_with("postgres would need a server"), "{line}");
        assert_eq!(cursor, Some(Position::new(59, 8)));
        // A terminal too short for everything keeps the table's header and two rows.
        let (screen, _) = live(&answer, 60, 7);
        insta::assert_snapshot!(screen, @r"
        git crew watch — 3 in flight, 1 awaiting integration — 2026…
          RUN                  TASK             PHASE      TIME
          20260101-000000-0001 routes           working    1m12s/25m
        > 20260101-000000-0002 a-task-id-far-l… needs-help 3m/25m
          20260101-000000-0003 db               queued     0s/25m
        answer 20260101-000000-0002: d postgres would need a server
        ↑/↓ select  Enter show  d diff  a answer  i integrate  x ab…
        ");
    }
}
