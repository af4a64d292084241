//! What people and programs read about runs, as values: a run's result (the JSON of
//! `status`/`show`/`wait`), the human wording of durations, states and tones, the live
//! console's model, the wave summary's rendering, and what each command prints as data
//! (`output`), with its JSON Schema. Built from `core`'s records and
//! decisions; rendered to a terminal or stdout by `cli`. Pure: the caller gives the time
//! now and the facts.

pub mod console;
pub mod dispatch;
pub mod forecast;
pub mod human;
pub mod output;
pub mod result;
pub mod summary;
