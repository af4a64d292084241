//! The conflict forecast, decided in pure code. The facts are what trial merges found:
//! each run merged onto its target's tip, and each pair of runs bound for the same target
//! merged with each other. From them come each run's forecast (does it merge cleanly onto
//! the tip, and which other runs does it conflict with) and the order `integrate --all`
//! lands the passes in so that none meets a conflict the forecast saw, with the passes it
//! holds back and why.

use std::collections::BTreeMap;

use serde::Serialize;

/// A run the forecast looks at: a pass awaiting integration, or a live run with commits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub run: String,
    /// The branch it lands on.
    pub into: String,
    /// It passed and waits for integrate (`integrate --all` takes it); else it is live.
    pub pass: bool,
}

/// The pairs of candidates to merge on trial: every two bound for the same target, once
/// (`(i, j)` with `i < j`), where `focus` holds for at least one of them.
pub fn pairs(candidates: &[Candidate], focus: impl Fn(&Candidate) -> bool) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (i, a) in candidates.iter().enumerate() {
        for (j, b) in candidates.iter().enumerate().skip(i + 1) {
            if a.into == b.into && (focus(a) || focus(b)) {
                out.push((i, j));
            }
        }
    }
    out
}

/// What merging one candidate onto its target's tip found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Onto {
    /// The target's tip it was merged onto.
    pub tip: String,
    /// The paths that conflict (none: it merges cleanly).
    pub conflicts: Vec<String>,
}

/// A run's conflict forecast (`"forecast"` on a run in `status`, `show` and `watch`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Forecast {
    /// The branch it lands on.
    pub into: String,
    /// That branch's tip, which the forecast merged it onto.
    pub tip: String,
    /// It merges onto `tip` without a conflict.
    pub merges_cleanly: bool,
    /// The paths that conflict with `tip` (empty when it merges cleanly).
    pub conflicting_paths: Vec<String>,
    /// The other runs bound for the same branch (passes awaiting integration and live
    /// runs with commits) it conflicts with, oldest first.
    pub conflicts_with: Vec<String>,
}

/// Each candidate's forecast, by run. `onto[i]` is what merging candidate `i` onto its
/// target's tip found (`None`: it was not looked at, or its target is gone: no forecast);
/// `clashes` are the pairs (indexes into `candidates`) whose trial merge conflicted.
pub fn forecasts(
    candidates: &[Candidate],
    onto: &[Option<Onto>],
    clashes: &[(usize, usize)],
) -> BTreeMap<String, Forecast> {
    let mut out = BTreeMap::new();
    for (i, candidate) in candidates.iter().enumerate() {
        let Some(Some(found)) = onto.get(i) else {
            continue;
        };
        let mut with: Vec<usize> = clashes
            .iter()
            .filter_map(|&(a, b)| match (a == i, b == i) {
                (true, false) => Some(b),
                (false, true) => Some(a),
                _ => None,
            })
            .filter(|&other| other < candidates.len())
            .collect();
        with.sort_unstable();
        with.dedup();
        out.insert(
            candidate.run.clone(),
            Forecast {
                into: candidate.into.clone(),
                tip: found.tip.clone(),
                merges_cleanly: found.conflicts.is_empty(),
                conflicting_paths: found.conflicts.clone(),
                conflicts_with: with.iter().map(|&o| candidates[o].run.clone()).collect(),
            },
        );
    }
    out
}

/// Why `integrate --all` holds a pass back rather than try it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hold {
    /// It does not merge cleanly onto its target's tip.
    Target { into: String, paths: Vec<String> },
    /// It conflicts with these passes, which come before it in the order.
    Clashes(Vec<String>),
}

impl Hold {
    /// In words, after the run id: `conflicts with main (src/a.rs)`.
    pub fn describe(&self) -> String {
        match self {
            Hold::Target { into, paths } => {
                format!("conflicts with {into} ({})", paths.join(", "))
            }
            Hold::Clashes(with) => format!("conflicts with {}", with.join(", ")),
        }
    }
}

/// A pass `integrate --all` holds back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub run: String,
    pub hold: Hold,
}

/// The passes `integrate --all` tries, in order, and those it holds back.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Queue {
    pub order: Vec<String>,
    pub held: Vec<Held>,
}

/// The passes among `candidates` (oldest first) in an order that meets none of the
/// forecast's conflicts. A pass that does not merge cleanly onto its target is held. Of
/// the others, the pass that conflicts with the fewest other passes goes first (the
/// oldest first among equals), so that as many land as the forecast allows; a pass that
/// conflicts with one already in the order is held, naming it. A pass with no forecast
/// (its target branch is gone) goes last: integrate says what stops it.
pub fn queue(candidates: &[Candidate], forecasts: &BTreeMap<String, Forecast>) -> Queue {
    let passes: Vec<&Candidate> = candidates.iter().filter(|c| c.pass).collect();
    let is_pass = |run: &String| passes.iter().any(|p| &p.run == run);
    let mut judged: Vec<(usize, usize, &Candidate, &Forecast)> = Vec::new();
    let mut unjudged = Vec::new();
    let mut queue = Queue::default();
    for (age, pass) in passes.iter().enumerate() {
        match forecasts.get(&pass.run) {
            None => unjudged.push(pass.run.clone()),
            Some(f) if !f.merges_cleanly => queue.held.push(Held {
                run: pass.run.clone(),
                hold: Hold::Target {
                    into: f.into.clone(),
                    paths: f.conflicting_paths.clone(),
                },
            }),
            Some(f) => {
                let clashes = f.conflicts_with.iter().filter(|r| is_pass(r)).count();
                judged.push((clashes, age, pass, f));
            }
        }
    }
    judged.sort_by_key(|&(clashes, age, ..)| (clashes, age));
    for (.., pass, forecast) in judged {
        let met: Vec<String> = (forecast.conflicts_with.iter())
            .filter(|r| queue.order.contains(r))
            .cloned()
            .collect();
        if met.is_empty() {
            queue.order.push(pass.run.clone());
        } else {
            queue.held.push(Held {
                run: pass.run.clone(),
                hold: Hold::Clashes(met),
            });
        }
    }
    queue.order.extend(unjudged);
    queue
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(run: &str, into: &str, pass: bool) -> Candidate {
        Candidate {
            run: run.into(),
            into: into.into(),
            pass,
        }
    }

    fn clean(tip: &str) -> Option<Onto> {
        Some(Onto {
            tip: tip.into(),
            conflicts: Vec::new(),
        })
    }

    fn runs(list: &[String]) -> Vec<&str> {
        list.iter().map(String::as_str).collect()
    }

    #[test]
    fn pairs_are_the_runs_bound_for_one_target_each_once_and_near_the_focus() {
        let c = [
            candidate("a", "main", true),
            candidate("b", "main", false),
            candidate("c", "release", true),
            candidate("d", "main", true),
        ];
        assert_eq!(pairs(&c, |_| true), [(0, 1), (0, 3), (1, 3)]);
        // One run in focus: only the pairs it is in.
        assert_eq!(pairs(&c, |x| x.run == "b"), [(0, 1), (1, 3)]);
        assert_eq!(pairs(&c, |x| x.run == "c"), []);
        assert_eq!(pairs(&c, |_| false), []);
    }

    #[test]
    fn a_forecast_names_the_tip_its_conflicts_and_the_runs_it_clashes_with() {
        let c = [
            candidate("a", "main", true),
            candidate("b", "main", false),
            candidate("c", "main", true),
            candidate("gone", "old", true),
        ];
        let onto = [
            clean("t1"),
            Some(Onto {
                tip: "t1".into(),
                conflicts: vec!["src/x.rs".into()],
            }),
            clean("t1"),
            None,
        ];
        // The same clash given both ways, and twice, counts once.
        let f = forecasts(&c, &onto, &[(2, 0), (0, 2), (1, 2)]);
        assert_eq!(f.len(), 3, "no forecast without a target: {f:?}");
        assert_eq!(
            f["a"],
            Forecast {
                into: "main".into(),
                tip: "t1".into(),
                merges_cleanly: true,
                conflicting_paths: vec![],
                conflicts_with: vec!["c".into()],
            }
        );
        assert!(!f["b"].merges_cleanly);
        assert_eq!(f["b"].conflicting_paths, ["src/x.rs"]);
        assert_eq!(f["b"].conflicts_with, ["c"]);
        // Oldest first, as the candidates come.
        assert_eq!(f["c"].conflicts_with, ["a", "b"]);
        let json = serde_json::to_value(&f["a"]).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"into": "main", "tip": "t1", "merges_cleanly": true,
                "conflicting_paths": [], "conflicts_with": ["c"]})
        );
    }

    #[test]
    fn the_queue_lands_the_passes_that_do_not_clash_and_holds_the_rest_naming_why() {
        // a and b clash; c clashes with nobody; d does not merge onto main; live clashes
        // with c but is not a pass; gone has no target.
        let c = [
            candidate("a", "main", true),
            candidate("b", "main", true),
            candidate("c", "main", true),
            candidate("d", "main", true),
            candidate("live", "main", false),
            candidate("gone", "old", true),
        ];
        let onto = [
            clean("t"),
            clean("t"),
            clean("t"),
            Some(Onto {
                tip: "t".into(),
                conflicts: vec!["f".into()],
            }),
            clean("t"),
            None,
        ];
        let f = forecasts(&c, &onto, &[(0, 1), (2, 4)]);
        let q = queue(&c, &f);
        // c clashes with no pass: first; then a (older than b); b is held by a.
        assert_eq!(runs(&q.order), ["c", "a", "gone"]);
        assert_eq!(
            q.held,
            [
                Held {
                    run: "d".into(),
                    hold: Hold::Target {
                        into: "main".into(),
                        paths: vec!["f".into()]
                    }
                },
                Held {
                    run: "b".into(),
                    hold: Hold::Clashes(vec!["a".into()])
                },
            ]
        );
        assert_eq!(q.held[0].hold.describe(), "conflicts with main (f)");
        assert_eq!(q.held[1].hold.describe(), "conflicts with a");
    }

    #[test]
    fn the_pass_that_clashes_least_goes_first_so_that_most_land() {
        // b clashes with a, c and d; oldest-first would land b alone.
        let c: Vec<Candidate> = ["b", "a", "c", "d"]
            .iter()
            .map(|r| candidate(r, "main", true))
            .collect();
        let onto = vec![clean("t"); 4];
        let f = forecasts(&c, &onto, &[(0, 1), (0, 2), (0, 3)]);
        let q = queue(&c, &f);
        assert_eq!(runs(&q.order), ["a", "c", "d"]);
        assert_eq!(
            q.held,
            [Held {
                run: "b".into(),
                hold: Hold::Clashes(vec!["a".into(), "c".into(), "d".into()])
            }]
        );
        // Runs bound for different targets never hold each other.
        let c = [candidate("x", "main", true), candidate("y", "dev", true)];
        let f = forecasts(&c, &[clean("t"), clean("u")], &[]);
        assert_eq!(runs(&queue(&c, &f).order), ["x", "y"]);
        assert_eq!(queue(&[], &BTreeMap::new()), Queue::default());
    }
}
