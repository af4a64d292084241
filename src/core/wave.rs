//! Which tasks of a wave can run at once: every write scope of the wave's ready tasks
//! against the others and against the runs in flight. Pure; `cli/wave.rs` gathers the
//! tasks and runs and applies the answer.

use super::scope::{Role, scopes_overlap};

/// A task or a run, as far as its write scope goes.
#[derive(Debug, Clone)]
pub struct Writer<'a> {
    /// The task id, or `run <id> (task <task>)` for a run in flight.
    pub name: String,
    pub role: &'a str,
    pub scope: &'a [String],
}

impl Writer<'_> {
    fn writes(&self) -> bool {
        Role::parse(self.role).is_some_and(Role::may_commit)
    }
}

/// Every pair whose write scopes overlap: two of the wave's `tasks`, or one of them and a
/// run in `flight`. Only roles that write count (a review's scope reserves nothing).
pub fn clashes(tasks: &[Writer], flight: &[Writer]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, a) in tasks.iter().enumerate().filter(|(_, t)| t.writes()) {
        for b in tasks[i + 1..].iter().filter(|t| t.writes()) {
            if let Some((x, y)) = scopes_overlap(a.scope, b.scope) {
                out.push(format!("{} `{x}` overlaps {} `{y}`", a.name, b.name));
            }
        }
        for run in flight.iter().filter(|r| r.writes()) {
            if let Some((x, y)) = scopes_overlap(a.scope, run.scope) {
                out.push(format!(
                    "{} `{x}` overlaps `{y}` of in-flight {}",
                    a.name, run.name
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w<'a>(name: &str, role: &'a str, scope: &'a [String]) -> Writer<'a> {
        Writer {
            name: name.to_string(),
            role,
            scope,
        }
    }

    #[test]
    fn writers_clash_with_writers_and_runs_in_flight_only() {
        let src = vec!["src/**".to_string()];
        let routes = vec!["src/routes/**".to_string()];
        let docs = vec!["docs/**".to_string()];
        let tasks = [
            w("a", "implement", &src),
            w("b", "cleanup", &routes),
            w("c", "implement", &docs),
            w("d", "review", &src),
        ];
        let flight = [
            w("run r1 (task x)", "implement", &docs),
            w("run r2 (task y)", "review", &routes),
        ];
        assert_eq!(
            clashes(&tasks, &flight),
            [
                "a `src/**` overlaps b `src/routes/**`",
                "c `docs/**` overlaps `docs/**` of in-flight run r1 (task x)",
            ]
        );
        assert!(clashes(&tasks[2..3], &[]).is_empty());
    }
}
