//! The live console on the terminal: raw mode and the alternate screen for as long as it
//! runs (given back on every way out: quitting, an error, a panic, SIGTERM), a frame
//! every interval and after every key, and the terminal handed over to `show` and `diff`.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use ratatui::DefaultTerminal;
use ratatui::crossterm::cursor::MoveTo;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::terminal::{Clear, ClearType, EnterAlternateScreen, enable_raw_mode};

use super::super::context::CommandContext;
use super::super::error::{CrewError, ErrorCode, Result};
use super::app::App;
use super::{actions, render};
use crate::view::console::{Action, Key, Mode};

/// The longest the console waits for a key before it looks at finished actions and
/// signals again.
const TICK: Duration = Duration::from_millis(200);

/// The terminal, taken over; given back when dropped.
struct Console {
    terminal: DefaultTerminal,
}

impl Console {
    fn open() -> Result<Console> {
        // ratatui's panic hook gives the terminal back before a panic is reported.
        let terminal = ratatui::try_init().map_err(|e| {
            ratatui::restore();
            CrewError::new(
                ErrorCode::NoTerminal,
                format!("cannot take over the terminal: {e}"),
            )
            .hinted("`git crew watch --once` prints one frame")
        })?;
        Ok(Console { terminal })
    }

    /// Gives the terminal to `f` (cooked mode, the main screen, cleared), then takes it
    /// back.
    fn handed_over<T>(&mut self, f: impl FnOnce() -> T) -> T {
        ratatui::restore();
        let _ =
            ratatui::crossterm::execute!(std::io::stdout(), Clear(ClearType::All), MoveTo(0, 0));
        let out = f();
        let _ = enable_raw_mode();
        let _ = ratatui::crossterm::execute!(std::io::stdout(), EnterAlternateScreen);
        let _ = self.terminal.clear();
        out
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        ratatui::restore();
    }
}

/// Waits for a key press in raw mode (left on: the console takes the terminal back next).
pub fn any_key() -> std::io::Result<()> {
    enable_raw_mode()?;
    loop {
        if let Event::Key(k) = event::read()?
            && k.kind == KeyEventKind::Press
        {
            return Ok(());
        }
    }
}

/// Runs the console until a key quits it (Ok) or SIGINT/SIGTERM stops it.
pub fn run(ctx: &CommandContext, interval: Duration) -> Result<()> {
    let color = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let mut console = Console::open()?;
    crate::sys::process::catch_interrupts();
    let (done, results) = mpsc::channel();
    let mut app = App::new(color);
    let mut next = Instant::now();
    let broken =
        |e: std::io::Error| CrewError::new(ErrorCode::IoError, "the terminal").caused_by(&e);
    loop {
        if crate::sys::process::interrupted() {
            return Err(CrewError::new(
                ErrorCode::Interrupted,
                "watch stopped by a signal",
            ));
        }
        while let Ok(summary) = results.try_recv() {
            app.status = summary;
            next = Instant::now();
        }
        if Instant::now() >= next {
            app.reload(ctx);
            next = Instant::now() + interval;
        }
        console
            .terminal
            .draw(|f| {
                if let Some(cursor) = render::draw(&app.view(), f.area(), f.buffer_mut()) {
                    f.set_cursor_position(cursor);
                }
            })
            .map_err(broken)?;
        let wait = next.saturating_duration_since(Instant::now()).min(TICK);
        if !event::poll(wait).map_err(broken)? {
            continue;
        }
        let Event::Key(k) = event::read().map_err(broken)? else {
            continue;
        };
        let Some(key) = key_of(k.code, k.modifiers).filter(|_| k.kind == KeyEventKind::Press)
        else {
            continue;
        };
        match app.key(key) {
            None => {}
            Some(Action::Quit) => return Ok(()),
            Some(action @ (Action::Show(_) | Action::Diff(_))) => {
                app.status = console.handed_over(|| {
                    let status = actions::on_terminal(&ctx.cwd, &action);
                    let _ = any_key();
                    status
                });
            }
            Some(action) => app.status = actions::start(&ctx.cwd, &action, done.clone()),
        }
        if app.mode == Mode::Browse {
            next = Instant::now();
        }
    }
}

fn key_of(code: KeyCode, modifiers: KeyModifiers) -> Option<Key> {
    Some(match code {
        KeyCode::Char('c') if modifiers.contains(KeyModifiers::CONTROL) => Key::Interrupt,
        _ if modifiers.contains(KeyModifiers::CONTROL) => return None,
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        KeyCode::Enter => Key::Enter,
        KeyCode::Esc => Key::Esc,
        KeyCode::Backspace => Key::Backspace,
        KeyCode::Char(c) => Key::Char(c),
        _ => return None,
    })
}
