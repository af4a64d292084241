//! The live console's state: the frame last read, the selected run, the mode of the keys
//! and the status line.

use super::super::context::CommandContext;
use super::frame;
use super::render::{Prompt, View};
use crate::view::console::table::Row;
use crate::view::console::{self, Action, Key, Listed, Mode};

#[derive(Default)]
pub struct App {
    header: String,
    rows: Vec<Row>,
    questions: Vec<[String; 2]>,
    selected: Option<usize>,
    pub mode: Mode,
    pub status: String,
    color: bool,
}

impl App {
    pub fn new(color: bool) -> App {
        App {
            color,
            ..App::default()
        }
    }

    /// Reads the runs again; the selection stays on its run while it is listed. A frame
    /// that cannot be read leaves the last one and says why.
    pub fn reload(&mut self, ctx: &CommandContext) {
        let frame = match crate::ops::watch::frame(ctx) {
            Ok(frame) => frame,
            Err(err) => {
                self.status = format!("error: {}", err.message);
                return;
            }
        };
        let previous = self
            .selected
            .and_then(|i| Some((self.rows.get(i)?.run.clone(), i)));
        self.rows = frame::rows(&frame);
        self.questions = frame::questions(&frame);
        self.header = frame::header(&frame);
        let runs: Vec<&str> = self.rows.iter().map(|r| r.run.as_str()).collect();
        self.selected = console::reselect(previous.as_ref().map(|(r, i)| (r.as_str(), *i)), &runs);
    }

    /// What `key` does: the mode, selection and status change here; the action is the
    /// caller's to carry out.
    pub fn key(&mut self, key: Key) -> Option<Action> {
        let listed: Vec<Listed> = self
            .rows
            .iter()
            .map(|r| Listed {
                run: &r.run,
                phase: r.phase,
            })
            .collect();
        let step = console::step(std::mem::take(&mut self.mode), key, &listed, self.selected);
        self.mode = step.mode;
        self.selected = step.selected;
        if let Some(note) = step.note {
            self.status = note;
        }
        step.action
    }

    pub fn view(&self) -> View<'_> {
        let prompt = match &self.mode {
            Mode::Browse => Prompt::Status(&self.status),
            Mode::Answer { run, text } => Prompt::Answer { run, text },
            Mode::Confirm { run } => Prompt::Confirm { run },
        };
        View {
            header: &self.header,
            rows: &self.rows,
            questions: &self.questions,
            selected: self.selected,
            prompt: Some(prompt),
            color: self.color,
        }
    }
}
