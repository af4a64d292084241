//! What a TAB offers for a RUN or a task argument, and in which order. Pure: the caller
//! lists the run ids on file, the tasks of the runs whose records it read, and the
//! plans' text.

use std::collections::{HashMap, HashSet};

use toml::de::{DeTable, DeValue};

/// One value a TAB may offer, with a few words shells that show them (zsh, fish) print
/// beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub value: String,
    pub help: String,
}

/// What the caller knows of the runs on file: every run id (live and finished, any
/// order) and, for those whose record it read, `(run, task)`.
#[derive(Debug, Default, Clone)]
pub struct Runs {
    pub ids: Vec<String>,
    pub tasks: Vec<(String, String)>,
}

impl Runs {
    /// The run ids, newest first (a run id begins with its start time), each once.
    fn newest_first(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.ids.iter().map(String::as_str).collect();
        ids.sort_unstable_by(|a, b| b.cmp(a));
        ids.dedup();
        ids
    }

    /// The task of each run whose record was read.
    fn task_of(&self) -> HashMap<&str, &str> {
        self.tasks
            .iter()
            .map(|(r, t)| (r.as_str(), t.as_str()))
            .collect()
    }

    /// Every task with its latest run, the task whose latest run is newest first.
    fn latest_by_task(&self) -> Vec<(&str, &str)> {
        let task_of = self.task_of();
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for run in self.newest_first() {
            if let Some(&task) = task_of.get(run)
                && seen.insert(task)
            {
                out.push((task, run));
            }
        }
        out
    }
}

/// What a RUN argument takes, starting with `current`: `@last`, the task ids (a task
/// names its latest run), then the run ids, each newest first. When nothing starts with
/// `current`, the run ids that end with it (a run address may be the tail of an id).
pub fn runs(current: &str, runs: &Runs) -> Vec<Candidate> {
    let ids = runs.newest_first();
    let mut all = Vec::new();
    if let Some(last) = ids.first() {
        all.push(Candidate {
            value: "@last".into(),
            help: format!("the run started last ({last})"),
        });
    }
    for (task, run) in runs.latest_by_task() {
        all.push(Candidate {
            value: task.into(),
            help: format!("task; its latest run {run}"),
        });
    }
    let task_of = runs.task_of();
    let run_help = |run: &str| {
        task_of
            .get(run)
            .map_or_else(String::new, |t| format!("task {t}"))
    };
    for run in &ids {
        all.push(Candidate {
            value: (*run).into(),
            help: run_help(run),
        });
    }
    let mut matching = starting_with(current, all);
    if matching.is_empty() && !current.is_empty() {
        matching = ids
            .iter()
            .filter(|run| run.ends_with(current))
            .map(|run| Candidate {
                value: (*run).into(),
                help: run_help(run),
            })
            .collect();
    }
    matching
}

/// What a task argument takes, starting with `current`: the plans' task ids, plan by
/// plan in file order (`plans` holds each plan's name and text), then the tasks of past
/// runs, the one run latest first; each task once.
pub fn tasks(current: &str, plans: &[(String, String)], runs: &Runs) -> Vec<Candidate> {
    let mut seen = HashSet::new();
    let mut all = Vec::new();
    for (plan, text) in plans {
        for task in plan_task_ids(text) {
            if seen.insert(task.clone()) {
                all.push(Candidate {
                    value: task,
                    help: format!("plan {plan}"),
                });
            }
        }
    }
    for (task, run) in runs.latest_by_task() {
        if seen.insert(task.to_string()) {
            all.push(Candidate {
                value: task.into(),
                help: format!("latest run {run}"),
            });
        }
    }
    starting_with(current, all)
}

fn starting_with(current: &str, all: Vec<Candidate>) -> Vec<Candidate> {
    all.into_iter()
        .filter(|c| c.value.starts_with(current))
        .collect()
}

/// The task ids a plan file declares (`[[tasks]] id = "..."`), in file order. Lenient:
/// a plan that does not validate still offers the ids it spells out; one that is not
/// TOML offers none.
pub fn plan_task_ids(text: &str) -> Vec<String> {
    let Ok(doc) = DeTable::parse(text) else {
        return Vec::new();
    };
    let Some(tasks) = doc.get_ref().get("tasks") else {
        return Vec::new();
    };
    let DeValue::Array(items) = tasks.get_ref() else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| match item.get_ref() {
            DeValue::Table(t) => match t.get("id").map(|id| id.get_ref()) {
                Some(DeValue::String(id)) if super::plan::check_task_id(id).is_ok() => {
                    Some(id.to_string())
                }
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "20260101-100000-1a2b";
    const MID: &str = "20260102-100000-3c4d";
    const NEW: &str = "20260103-100000-5e6f";

    fn on_file() -> Runs {
        Runs {
            ids: vec![MID.into(), NEW.into(), OLD.into(), MID.into()],
            tasks: vec![
                (OLD.into(), "api".into()),
                (MID.into(), "routes".into()),
                (NEW.into(), "api".into()),
            ],
        }
    }

    fn values(c: &[Candidate]) -> Vec<&str> {
        c.iter().map(|c| c.value.as_str()).collect()
    }

    #[test]
    fn a_run_argument_offers_last_then_tasks_then_runs_newest_first() {
        let all = runs("", &on_file());
        assert_eq!(
            values(&all),
            ["@last", "api", "routes", NEW, MID, OLD],
            "{all:?}"
        );
        assert_eq!(all[0].help, format!("the run started last ({NEW})"));
        assert_eq!(all[1].help, format!("task; its latest run {NEW}"));
        assert_eq!(all[5].help, "task api");
    }

    #[test]
    fn only_what_starts_with_the_word_and_else_the_ids_ending_with_it() {
        assert_eq!(values(&runs("2026010", &on_file())), [NEW, MID, OLD]);
        assert_eq!(values(&runs("r", &on_file())), ["routes"]);
        assert_eq!(values(&runs("@", &on_file())), ["@last"]);
        assert_eq!(values(&runs("3c4d", &on_file())), [MID]);
        assert!(runs("zzz", &on_file()).is_empty());
    }

    #[test]
    fn no_runs_offer_nothing_not_even_last() {
        assert!(runs("", &Runs::default()).is_empty());
    }

    #[test]
    fn a_run_whose_record_was_not_read_is_offered_without_a_task() {
        let unread = Runs {
            ids: vec![OLD.into()],
            tasks: vec![],
        };
        let all = runs("", &unread);
        assert_eq!(values(&all), ["@last", OLD]);
        assert_eq!(all[1].help, "");
    }

    #[test]
    fn a_task_argument_offers_plan_tasks_then_tasks_of_past_runs_once_each() {
        let plans = vec![
            (
                "v1".to_string(),
                "[[tasks]]\nid = \"b\"\n[[tasks]]\nid = \"routes\"\n".to_string(),
            ),
            ("v2".to_string(), "[[tasks]]\nid = \"a\"\n".to_string()),
        ];
        let all = tasks("", &plans, &on_file());
        assert_eq!(values(&all), ["b", "routes", "a", "api"], "{all:?}");
        assert_eq!(all[1].help, "plan v1");
        assert_eq!(all[3].help, format!("latest run {NEW}"));
        assert_eq!(values(&tasks("a", &plans, &on_file())), ["a", "api"]);
    }

    #[test]
    fn plan_task_ids_are_read_leniently() {
        // Unknown keys and a stored status make the plan invalid, not its ids unreadable.
        let text = "[plan]\nid = \"v1\"\nstatus = \"done\"\n[[tasks]]\nid = \"a\"\nbogus = 1\n\
                    [[tasks]]\nwave = 2\n[[tasks]]\nid = 7\n[[tasks]]\nid = \"../x\"\n\
                    [[tasks]]\nid = \"b/c\"\n";
        assert_eq!(plan_task_ids(text), ["a", "b/c"]);
        assert!(plan_task_ids("[[tasks]\nid = ").is_empty());
        assert!(plan_task_ids("tasks = 3").is_empty());
        assert!(plan_task_ids("").is_empty());
    }
}
