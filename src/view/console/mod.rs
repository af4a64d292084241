//! The `watch` console's decisions, as values: what a key does in which mode, and which
//! run is selected once the list of runs changes. The table's rows and columns are in
//! [`table`]. Pure: keys come in as [`Key`]s, whatever terminal library read them.

pub mod table;

use crate::core::record::Phase;

/// A key, as far as the console cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Up,
    Down,
    Enter,
    Esc,
    Backspace,
    Char(char),
    /// Ctrl-C: quits from any mode.
    Interrupt,
}

/// What the console is doing with the keys.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Mode {
    /// Arrow keys select a run; letters act on it.
    #[default]
    Browse,
    /// Typing the answer to a run's NEEDS-HELP: Enter sends it, Esc cancels.
    Answer { run: String, text: String },
    /// `abandon RUN? y/n`.
    Confirm { run: String },
}

/// What the console does for a key, beyond moving the selection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Quit,
    Show(String),
    Diff(String),
    Advise { run: String, text: String },
    Integrate(String),
    Abandon(String),
}

/// A run of the list, as the keys see it.
#[derive(Debug, Clone, Copy)]
pub struct Listed<'a> {
    pub run: &'a str,
    pub phase: Phase,
}

/// The outcome of a key: the next mode and selection, what to do, and a note for the
/// status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub mode: Mode,
    pub selected: Option<usize>,
    pub action: Option<Action>,
    pub note: Option<String>,
}

/// What `key` does in `mode`, with `runs` listed and `selected` the selected row.
pub fn step(mode: Mode, key: Key, runs: &[Listed], selected: Option<usize>) -> Step {
    let selected = selected.filter(|&i| i < runs.len());
    let mut out = Step {
        mode: Mode::Browse,
        selected,
        action: None,
        note: None,
    };
    if key == Key::Interrupt {
        out.action = Some(Action::Quit);
        return out;
    }
    match mode {
        Mode::Browse => browse(key, runs, out),
        Mode::Answer { run, mut text } => match key {
            Key::Esc => Step {
                note: Some(format!("no answer sent to {run}")),
                ..out
            },
            Key::Enter if text.trim().is_empty() => Step {
                note: Some("type the answer, then Enter (Esc cancels)".into()),
                mode: Mode::Answer { run, text },
                ..out
            },
            Key::Enter => Step {
                action: Some(Action::Advise {
                    run,
                    text: text.trim().to_string(),
                }),
                ..out
            },
            other => {
                match other {
                    Key::Backspace => {
                        text.pop();
                    }
                    Key::Char(c) if !c.is_control() => text.push(c),
                    _ => {}
                }
                Step {
                    mode: Mode::Answer { run, text },
                    ..out
                }
            }
        },
        Mode::Confirm { run } => match key {
            Key::Char('y' | 'Y') => Step {
                action: Some(Action::Abandon(run)),
                ..out
            },
            _ => Step {
                note: Some(format!("{run} not abandoned")),
                ..out
            },
        },
    }
}

fn browse(key: Key, runs: &[Listed], mut out: Step) -> Step {
    let last = runs.len().checked_sub(1);
    match key {
        Key::Char('q') | Key::Esc => out.action = Some(Action::Quit),
        Key::Up => out.selected = last.map(|_| out.selected.map_or(0, |i| i.saturating_sub(1))),
        Key::Down => out.selected = last.map(|l| out.selected.map_or(0, |i| (i + 1).min(l))),
        Key::Enter | Key::Char('d' | 'a' | 'i' | 'x') => {
            let Some(listed) = out.selected.map(|i| runs[i]) else {
                out.note = Some("no run to act on".into());
                return out;
            };
            let run = listed.run.to_string();
            match key {
                Key::Enter => out.action = Some(Action::Show(run)),
                Key::Char('d') => out.action = Some(Action::Diff(run)),
                Key::Char('i') => out.action = Some(Action::Integrate(run)),
                Key::Char('x') => out.mode = Mode::Confirm { run },
                _ if listed.phase == Phase::NeedsHelp => {
                    out.mode = Mode::Answer {
                        run,
                        text: String::new(),
                    }
                }
                _ => {
                    out.note = Some(format!(
                        "{run} is {}, not waiting for help",
                        listed.phase.as_str()
                    ))
                }
            }
        }
        _ => {}
    }
    out
}

/// The row selected once the list becomes `runs`: the run selected before (`previous`,
/// with its row then) where it still is; else the row it was on, or the last row when the
/// list got shorter; the first row when nothing was selected; none for an empty list.
pub fn reselect(previous: Option<(&str, usize)>, runs: &[&str]) -> Option<usize> {
    let last = runs.len().checked_sub(1)?;
    Some(match previous {
        None => 0,
        Some((run, row)) => runs.iter().position(|r| *r == run).unwrap_or(row.min(last)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUNS: [Listed; 2] = [
        Listed {
            run: "r1",
            phase: Phase::Working,
        },
        Listed {
            run: "r2",
            phase: Phase::NeedsHelp,
        },
    ];

    fn browse_key(key: Key, selected: Option<usize>) -> Step {
        step(Mode::Browse, key, &RUNS, selected)
    }

    #[test]
    fn arrows_move_the_selection_within_the_list() {
        assert_eq!(browse_key(Key::Down, None).selected, Some(0));
        assert_eq!(browse_key(Key::Down, Some(0)).selected, Some(1));
        assert_eq!(browse_key(Key::Down, Some(1)).selected, Some(1));
        assert_eq!(browse_key(Key::Up, Some(1)).selected, Some(0));
        assert_eq!(browse_key(Key::Up, Some(0)).selected, Some(0));
        assert_eq!(step(Mode::Browse, Key::Down, &[], Some(3)).selected, None);
        // A selection past the list (it got shorter) is dropped.
        assert_eq!(browse_key(Key::Enter, Some(7)).action, None);
    }

    #[test]
    fn letters_act_on_the_selected_run() {
        let act = |c| browse_key(Key::Char(c), Some(0)).action;
        assert_eq!(act('d'), Some(Action::Diff("r1".into())));
        assert_eq!(act('i'), Some(Action::Integrate("r1".into())));
        assert_eq!(act('q'), Some(Action::Quit));
        assert_eq!(act('z'), None);
        assert_eq!(
            browse_key(Key::Enter, Some(1)).action,
            Some(Action::Show("r2".into()))
        );
        assert_eq!(browse_key(Key::Esc, None).action, Some(Action::Quit));
        let none = browse_key(Key::Char('x'), None);
        assert_eq!((none.action, none.mode), (None, Mode::Browse));
        assert_eq!(none.note.as_deref(), Some("no run to act on"));
    }

    #[test]
    fn answering_is_only_for_a_run_that_asks_and_typing_is_not_a_command() {
        let refused = browse_key(Key::Char('a'), Some(0));
        assert_eq!(refused.mode, Mode::Browse);
        assert_eq!(
            refused.note.as_deref(),
            Some("r1 is working, not waiting for help")
        );
        let mut mode = browse_key(Key::Char('a'), Some(1)).mode;
        for key in [
            Key::Char('q'),
            Key::Char('x'),
            Key::Backspace,
            Key::Char('u'),
            Key::Char('\u{1b}'),
            Key::Up,
            Key::Char(' '),
        ] {
            let s = step(mode, key, &RUNS, Some(1));
            assert_eq!(s.action, None);
            mode = s.mode;
        }
        let expected = Mode::Answer {
            run: "r2".into(),
            text: "qu ".into(),
        };
        assert_eq!(mode, expected);
        let sent = step(mode.clone(), Key::Enter, &RUNS, Some(1));
        assert_eq!(
            sent.action,
            Some(Action::Advise {
                run: "r2".into(),
                text: "qu".into()
            })
        );
        assert_eq!(sent.mode, Mode::Browse);
        let cancelled = step(mode, Key::Esc, &RUNS, Some(1));
        assert_eq!((cancelled.action, cancelled.mode), (None, Mode::Browse));
        let blank = Mode::Answer {
            run: "r2".into(),
            text: "  ".into(),
        };
        let kept = step(blank.clone(), Key::Enter, &RUNS, Some(1));
        assert_eq!((kept.action, kept.mode), (None, blank));
    }

    #[test]
    fn abandoning_asks_first_and_only_y_confirms() {
        let asked = browse_key(Key::Char('x'), Some(1));
        assert_eq!(asked.mode, Mode::Confirm { run: "r2".into() });
        assert_eq!(asked.action, None);
        let yes = step(asked.mode.clone(), Key::Char('y'), &RUNS, Some(1));
        assert_eq!(yes.action, Some(Action::Abandon("r2".into())));
        for key in [Key::Char('n'), Key::Enter, Key::Esc, Key::Char('q')] {
            let no = step(asked.mode.clone(), key, &RUNS, Some(1));
            assert_eq!((no.action, no.mode), (None, Mode::Browse), "{key:?}");
        }
        let quit = step(asked.mode, Key::Interrupt, &RUNS, Some(1));
        assert_eq!(quit.action, Some(Action::Quit));
    }

    #[test]
    fn the_selection_follows_its_run_as_the_list_changes() {
        assert_eq!(reselect(None, &[]), None);
        assert_eq!(reselect(None, &["a", "b"]), Some(0));
        assert_eq!(reselect(Some(("b", 1)), &["new", "a", "b"]), Some(2));
        assert_eq!(reselect(Some(("b", 1)), &["a", "c"]), Some(1));
        assert_eq!(reselect(Some(("c", 2)), &["a", "b"]), Some(1));
        assert_eq!(reselect(Some(("c", 2)), &[]), None);
    }
}
