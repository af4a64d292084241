//! Run addressing: what a RUN argument may be besides a whole run id — `@last`, a task id
//! (its latest run), or a unique prefix or suffix of a run id — and which run it names.
//! Pure: the caller lists the runs.

/// A run as far as addressing goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known<'a> {
    pub run: &'a str,
    pub task: &'a str,
    pub started_at: jiff::Timestamp,
}

/// Why an address names no single run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unresolved {
    /// No run, task or id part matches.
    NotFound(String),
    /// Several runs match; their ids (and tasks), latest first.
    Ambiguous {
        address: String,
        candidates: Vec<String>,
    },
}

/// The newest run first: by start, then by id.
fn newest_first(runs: &mut [&Known]) {
    runs.sort_by(|a, b| b.started_at.cmp(&a.started_at).then(b.run.cmp(a.run)));
}

/// Resolves `address` among `runs`: a whole run id; `@last` (the run started last); a
/// task id (its latest run); else a prefix or suffix of exactly one run id.
pub fn resolve(address: &str, runs: &[Known]) -> Result<String, Unresolved> {
    if let Some(exact) = runs.iter().find(|r| r.run == address) {
        return Ok(exact.run.to_string());
    }
    if crate::core::record::is_run_id(address) {
        return Err(Unresolved::NotFound(format!("no run {address}")));
    }
    let mut all: Vec<&Known> = runs.iter().collect();
    newest_first(&mut all);
    if address == "@last" {
        return all
            .first()
            .map(|r| r.run.to_string())
            .ok_or_else(|| Unresolved::NotFound("there is no run yet".into()));
    }
    if let Some(latest) = all.iter().find(|r| r.task == address) {
        return Ok(latest.run.to_string());
    }
    let matches: Vec<&&Known> = all
        .iter()
        .filter(|r| r.run.starts_with(address) || r.run.ends_with(address))
        .collect();
    match matches.as_slice() {
        [] => Err(Unresolved::NotFound(format!(
            "no run, task or run id part `{address}`"
        ))),
        [one] => Ok(one.run.to_string()),
        many => Err(Unresolved::Ambiguous {
            address: address.to_string(),
            candidates: many
                .iter()
                .map(|r| format!("{} (task {})", r.run, r.task))
                .collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs() -> Vec<Known<'static>> {
        vec![
            Known {
                run: "20260101-100000-1a2b",
                task: "api",
                started_at: "2026-01-01T10:00:00Z".parse().unwrap(),
            },
            Known {
                run: "20260101-110000-3c4d",
                task: "api",
                started_at: "2026-01-01T11:00:00Z".parse().unwrap(),
            },
            Known {
                run: "20260101-120000-5e6f",
                task: "docs",
                started_at: "2026-01-01T12:00:00Z".parse().unwrap(),
            },
        ]
    }

    #[test]
    fn whole_ids_tasks_last_and_unique_parts_resolve() {
        let runs = runs();
        assert_eq!(
            resolve("20260101-100000-1a2b", &runs).unwrap(),
            "20260101-100000-1a2b"
        );
        assert_eq!(resolve("@last", &runs).unwrap(), "20260101-120000-5e6f");
        assert_eq!(resolve("api", &runs).unwrap(), "20260101-110000-3c4d");
        assert_eq!(resolve("3c4d", &runs).unwrap(), "20260101-110000-3c4d");
        assert_eq!(
            resolve("20260101-12", &runs).unwrap(),
            "20260101-120000-5e6f"
        );
    }

    #[test]
    fn an_ambiguous_part_lists_its_candidates_newest_first_and_nothing_is_not_found() {
        let runs = runs();
        match resolve("20260101", &runs) {
            Err(Unresolved::Ambiguous { candidates, .. }) => {
                assert_eq!(candidates.len(), 3);
                assert!(candidates[0].starts_with("20260101-120000-5e6f (task docs)"));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            resolve("zzz", &runs),
            Err(Unresolved::NotFound(_))
        ));
        assert!(matches!(
            resolve("@last", &[]),
            Err(Unresolved::NotFound(_))
        ));
    }
}
