//! Tables for people: a header row, columns sized to their content and to the width
//! there is, cut with `…` rather than wrapped, and colour only when asked for.
//!
//! When the rows do not fit, the table gives way in this order: the `Fill` column
//! shrinks to its minimum, then the `Shrink` columns do, then columns are dropped,
//! lowest `drop` rank first, and the fit starts again with the room they leave.

use anstyle::{AnsiColor, Style};

use crate::view::human::{Tone, truncate};

/// The colour a tone is shown in.
pub fn tone(tone: Tone) -> Style {
    let fg = |c: AnsiColor| Style::new().fg_color(Some(c.into()));
    match tone {
        Tone::Quiet => Style::new().dimmed(),
        Tone::Busy => fg(AnsiColor::Cyan),
        Tone::Attention => fg(AnsiColor::Yellow).bold(),
        Tone::Good => fg(AnsiColor::Green),
        Tone::Bad => fg(AnsiColor::Red),
    }
}

/// How a column gives way when the table is too wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// Always as wide as its widest cell.
    Fixed,
    /// Cut down to `min` columns at most.
    Shrink { min: usize },
    /// Takes what is left, down to `min`; meant for the last column.
    Fill { min: usize },
}

#[derive(Debug, Clone)]
pub struct Column {
    pub header: &'static str,
    pub fit: Fit,
    /// Dropped when even the shrunk table does not fit: the lowest rank goes first;
    /// `None` is never dropped.
    pub drop: Option<u8>,
}

impl Column {
    pub fn new(header: &'static str, fit: Fit) -> Column {
        Column {
            header,
            fit,
            drop: None,
        }
    }

    pub fn dropped_at(mut self, rank: u8) -> Column {
        self.drop = Some(rank);
        self
    }
}

/// A cell: its text and how it is coloured when colour is on. The text is made
/// [printable](crate::view::human::printable) as the cell is made — one line, no escape
/// sequence or control character — so what a worker wrote (a decision, a question) cannot
/// drive the terminal, and the only styling is the cell's own.
#[derive(Debug, Clone, Default)]
pub struct Cell {
    text: String,
    style: Style,
}

impl Cell {
    pub fn styled(text: impl Into<String>, style: Style) -> Cell {
        Cell {
            text: crate::view::human::printable(&text.into()),
            style,
        }
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Cell {
        Cell::styled(text, Style::new())
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Cell {
        Cell::from(text.to_string())
    }
}

#[derive(Debug, Clone)]
pub struct Table {
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// Leaves out the column headed `header`, cells and all.
    pub fn drop_column(&mut self, header: &str) {
        if let Some(i) = self.columns.iter().position(|c| c.header == header) {
            self.columns.remove(i);
            for row in &mut self.rows {
                if i < row.len() {
                    row.remove(i);
                }
            }
        }
    }
}

const GAP: usize = 2;

fn len(text: &str) -> usize {
    text.chars().count()
}

impl Table {
    /// The table in `width` columns (none: as wide as its content), coloured or not.
    pub fn render(&self, width: Option<usize>, colour: bool) -> String {
        let (shown, widths) = self.layout(width);
        let header: Vec<Cell> = self
            .columns
            .iter()
            .map(|c| Cell::styled(c.header, Style::new().bold()))
            .collect();
        std::iter::once(&header)
            .chain(&self.rows)
            .map(|row| {
                let cells: Vec<(&Cell, usize)> = shown
                    .iter()
                    .zip(&widths)
                    .map(|(&c, &w)| (&row[c], w))
                    .collect();
                line(&cells, colour)
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Which columns are shown, and how wide each is.
    fn layout(&self, width: Option<usize>) -> (Vec<usize>, Vec<usize>) {
        let mut shown: Vec<usize> = (0..self.columns.len()).collect();
        loop {
            let mut widths: Vec<usize> = shown.iter().map(|&c| self.natural(c)).collect();
            let Some(width) = width else {
                return (shown, widths);
            };
            let total = |w: &[usize]| w.iter().sum::<usize>() + GAP * w.len().saturating_sub(1);
            let fills = shown
                .iter()
                .enumerate()
                .filter_map(|(i, &c)| match self.columns[c].fit {
                    Fit::Fill { min } => Some((i, min)),
                    _ => None,
                });
            let shrinks =
                shown
                    .iter()
                    .enumerate()
                    .filter_map(|(i, &c)| match self.columns[c].fit {
                        Fit::Shrink { min } => Some((i, min)),
                        _ => None,
                    });
            for (i, min) in fills.chain(shrinks) {
                let excess = total(&widths).saturating_sub(width);
                widths[i] -= excess.min(widths[i].saturating_sub(min));
            }
            if total(&widths) <= width {
                return (shown, widths);
            }
            let victim = shown
                .iter()
                .enumerate()
                .filter_map(|(i, &c)| self.columns[c].drop.map(|rank| (rank, i)))
                .min();
            match victim {
                Some((_, i)) => {
                    shown.remove(i);
                }
                // Nothing more can give way: the table is wider than the room.
                None => return (shown, widths),
            }
        }
    }

    /// A column's width with nothing cut: its widest cell or its header.
    fn natural(&self, column: usize) -> usize {
        self.rows
            .iter()
            .map(|row| len(&row[column].text))
            .chain(std::iter::once(len(self.columns[column].header)))
            .max()
            .unwrap_or(0)
    }
}

/// One row: each cell cut to its width and padded after its colour, the last unpadded.
fn line(cells: &[(&Cell, usize)], colour: bool) -> String {
    let mut out = String::new();
    for (i, (cell, width)) in cells.iter().enumerate() {
        let text = truncate(&cell.text, *width);
        let pad = width - len(&text);
        if colour && cell.style != Style::new() {
            out.push_str(&format!(
                "{}{text}{}",
                cell.style.render(),
                cell.style.render_reset()
            ));
        } else {
            out.push_str(&text);
        }
        if i + 1 < cells.len() {
            out.push_str(&" ".repeat(pad + GAP));
        }
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        Table {
            columns: vec![
                Column::new("RUN", Fit::Fixed),
                Column::new("TASK", Fit::Shrink { min: 6 }),
                Column::new("WORKER", Fit::Fixed).dropped_at(1),
                Column::new("NOTE", Fit::Fill { min: 8 }).dropped_at(0),
            ],
            rows: vec![
                vec![
                    "r-0001".into(),
                    "add-the-login-form".into(),
                    "codex".into(),
                    "verify passed (reward 1)".into(),
                ],
                vec!["r-0002".into(), "db".into(), "claude".into(), "".into()],
            ],
        }
    }

    #[test]
    fn an_unlimited_table_is_as_wide_as_its_content_and_aligned() {
        let text = table().render(None, false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "RUN     TASK                WORKER  NOTE");
        assert_eq!(
            lines[1],
            "r-0001  add-the-login-form  codex   verify passed (reward 1)"
        );
        assert_eq!(lines[2], "r-0002  db                  claude");
    }

    #[test]
    fn a_narrow_table_fills_then_shrinks_then_drops() {
        // The note gives way first.
        let text = table().render(Some(50), false);
        assert!(text.lines().all(|l| l.chars().count() <= 50), "{text}");
        assert!(text.contains("verify passed…"), "{text}");
        assert!(text.contains("add-the-login-form"), "{text}");
        // Then the task is cut, the note dropped, and columns stay aligned.
        let text = table().render(Some(24), false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "RUN     TASK      WORKER");
        assert_eq!(lines[1], "r-0001  add-the…  codex");
        // With no room even for that, only what may not drop is left.
        let text = table().render(Some(15), false);
        assert_eq!(text.lines().next().unwrap(), "RUN     TASK");
    }

    #[test]
    fn colour_wraps_the_text_and_never_the_padding() {
        let mut t = table();
        t.rows[0][2] = Cell::styled(
            "codex",
            Style::new().fg_color(Some(anstyle::AnsiColor::Green.into())),
        );
        let coloured = t.render(None, true);
        assert!(
            coloured.contains("\u{1b}[32mcodex\u{1b}[0m   verify"),
            "{coloured:?}"
        );
        assert!(
            coloured.starts_with("\u{1b}[1mRUN\u{1b}[0m     \u{1b}[1mTASK"),
            "{coloured:?}"
        );
        assert!(!t.render(None, false).contains('\u{1b}'));
    }

    #[test]
    fn what_a_cell_holds_cannot_drive_the_terminal() {
        let mut t = table();
        t.rows[0][3] = "asks: \u{1b}]52;c;cHduZWQ=\u{7}which\u{1b}[2K\ndb?\u{1b}[8m".into();
        let text = t.render(None, true);
        assert!(
            text.lines().nth(1).unwrap().ends_with("asks: which db?"),
            "{text:?}"
        );
        assert!(!text.contains(']') && !text.contains('\u{7}'), "{text:?}");
        assert!(!text.contains("[2K") && !text.contains("[8m"), "{text:?}");
    }
}
