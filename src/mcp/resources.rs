//! The runs as resources: `crew://runs`, the runs in flight and the recent ones (what the
//! `status` tool returns), and `crew://runs/<run>`, one run (what `show` returns), each
//! read as the command's JSON. A subscription to `crew://runs/<run>` hears when that run
//! changes phase or is integrated; one to `crew://runs`, when any run does.

use rmcp::ErrorData;
use rmcp::model::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate};
use serde_json::Value;

use super::watch::Moved;
use crate::core::record::Phase;
use crate::error::{CrewError, ErrorKind, Result};
use crate::ops::Context;
use crate::ops::answer::{self, Status};

/// The list of runs.
pub const RUNS: &str = "crew://runs";
/// One run: `crew://runs/<run>`.
const RUN_PREFIX: &str = "crew://runs/";
const JSON: &str = "application/json";

/// A run as `resources/list` names it.
pub struct Listed {
    pub run: String,
    pub task: String,
    pub phase: Phase,
}

/// The runs `status` lists by default: every live run and the 20 most recent finished.
pub fn list(ctx: &Context) -> Result<Vec<Listed>> {
    let request = crate::ops::status::Request {
        run: None,
        recent: 20,
        all: false,
    };
    let status = crate::ops::status::status(ctx, &request)?;
    Ok(status
        .runs
        .into_iter()
        .map(|f| Listed {
            run: f.record.run,
            task: f.record.task,
            phase: f.record.phase,
        })
        .collect())
}

/// `crew://runs`, then each run.
pub fn listing(runs: &[Listed]) -> Vec<Resource> {
    let mut listed = vec![
        Resource::new(RUNS, "runs")
            .with_title("Runs in flight and recent")
            .with_description(
                "The runs in flight and the 20 most recent finished runs, as `git crew status --json` prints them",
            )
            .with_mime_type(JSON),
    ];
    listed.extend(runs.iter().map(|r| {
        Resource::new(format!("{RUN_PREFIX}{}", r.run), r.run.clone())
            .with_title(format!("{} ({})", r.task, r.phase.as_str()))
            .with_description(format!(
                "Run {} of task {}, as `git crew show {}` prints it",
                r.run, r.task, r.run
            ))
            .with_mime_type(JSON)
    }));
    listed
}

/// `crew://runs/{run}`.
pub fn template() -> ResourceTemplate {
    ResourceTemplate::new(format!("{RUN_PREFIX}{{run}}"), "run")
        .with_title("One run")
        .with_description(
            "One run by its id (or a unique part of it, its task, or @last), as `git crew show RUN --json` prints it",
        )
        .with_mime_type(JSON)
}

/// What a resource URI reads.
pub enum Read {
    Runs,
    Run(String),
}

impl Read {
    /// The resource `uri` names, if it is one of git-crew's.
    pub fn of(uri: &str) -> Option<Read> {
        if uri == RUNS {
            return Some(Read::Runs);
        }
        let run = uri.strip_prefix(RUN_PREFIX)?;
        crate::ops::runs::run_address(run)
            .ok()
            .map(|run| Read::Run(run.to_string()))
    }

    /// The resource's JSON, as the command prints it.
    pub fn json(self, ctx: &Context) -> Result<Value> {
        let now = crate::sys::clock::now_millis();
        let fields = match self {
            Read::Runs => {
                let request = crate::ops::status::Request {
                    run: None,
                    recent: 20,
                    all: false,
                };
                answer::fields(&crate::ops::status::status(ctx, &request)?.output(now))?
            }
            Read::Run(run) => {
                let shown = crate::ops::show::show(ctx, &crate::ops::show::Request { run })?;
                answer::fields(&shown.output(now))?
            }
        };
        Ok(answer::envelope(fields, &Status::Ok))
    }
}

/// A read's contents: the JSON, as text.
pub fn contents(uri: &str, json: &Value) -> ReadResourceResult {
    ReadResourceResult::new(vec![ResourceContents::TextResourceContents {
        uri: uri.to_string(),
        mime_type: Some(JSON.into()),
        text: json.to_string(),
        meta: None,
    }])
}

/// A read that failed: resource-not-found for a run that is not there, else an internal
/// error; the error's JSON, as the CLI prints it, is the data.
pub fn not_read(uri: &str, error: &CrewError) -> ErrorData {
    let data = Some(answer::refusal(error));
    let message = format!("{uri}: {}", error.message);
    match error.kind() {
        ErrorKind::NotFound => ErrorData::resource_not_found(message, data),
        _ => ErrorData::internal_error(message, data),
    }
}

/// Whether the subscription to `uri` hears of `moved`.
pub fn touches(uri: &str, moved: &Moved) -> bool {
    if uri == RUNS {
        return !moved.runs.is_empty() || moved.listed;
    }
    uri.strip_prefix(RUN_PREFIX)
        .is_some_and(|run| moved.runs.contains(run))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_crew_uris_name_a_resource_and_a_path_is_no_run() {
        assert!(matches!(Read::of(RUNS), Some(Read::Runs)));
        assert!(matches!(Read::of("crew://runs/@last"), Some(Read::Run(r)) if r == "@last"));
        assert!(Read::of("crew://runs/../x").is_none());
        assert!(Read::of("test://watched-resource").is_none());
    }

    #[test]
    fn a_run_subscription_hears_of_its_run_and_the_list_of_any() {
        let moved = Moved {
            runs: ["20261202-101500-1a2b".to_string()].into(),
            listed: false,
        };
        assert!(touches("crew://runs/20261202-101500-1a2b", &moved));
        assert!(!touches("crew://runs/20261202-101500-3c4d", &moved));
        assert!(touches(RUNS, &moved));
        assert!(!touches("test://watched-resource", &moved));
    }
}
