//! The conflict forecast for people: a short marker on a run's line (`status`, `watch`)
//! and a line of its own in `show`.

use crate::core::forecast::Forecast;

/// The marker on a run's line: `clean`, or what it conflicts with — `conflicts: main`
/// (its target's tip), `conflicts: 2 runs`, `conflicts: main, 1 run`.
pub fn marker(forecast: &Forecast) -> String {
    let runs = forecast.conflicts_with.len();
    let mut with = Vec::new();
    if !forecast.merges_cleanly {
        with.push(forecast.into.clone());
    }
    if runs > 0 {
        with.push(super::human::count(runs, "run", "runs"));
    }
    match with.is_empty() {
        true => "clean".to_string(),
        false => format!("conflicts: {}", with.join(", ")),
    }
}

/// The line in `show`: `forecast onto main @ 1a2b3c4d5e6f: merges cleanly; conflicts
/// with no other run`, naming the paths that conflict with the tip and the runs it
/// conflicts with.
pub fn line(forecast: &Forecast) -> String {
    let tip = forecast.tip.get(..12).unwrap_or(&forecast.tip);
    let onto = match forecast.merges_cleanly {
        true => "merges cleanly".to_string(),
        false => format!("conflicts in {}", forecast.conflicting_paths.join(", ")),
    };
    let with = match forecast.conflicts_with.is_empty() {
        true => "conflicts with no other run".to_string(),
        false => format!("conflicts with {}", forecast.conflicts_with.join(", ")),
    };
    format!("forecast onto {} @ {tip}: {onto}; {with}", forecast.into)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forecast(clean: bool, with: &[&str]) -> Forecast {
        Forecast {
            into: "main".into(),
            tip: "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d".into(),
            merges_cleanly: clean,
            conflicting_paths: if clean {
                vec![]
            } else {
                vec!["src/a.rs".into(), "src/b.rs".into()]
            },
            conflicts_with: with.iter().map(|r| r.to_string()).collect(),
        }
    }

    #[test]
    fn the_marker_says_clean_or_what_it_conflicts_with() {
        assert_eq!(marker(&forecast(true, &[])), "clean");
        assert_eq!(marker(&forecast(false, &[])), "conflicts: main");
        assert_eq!(marker(&forecast(true, &["r1", "r2"])), "conflicts: 2 runs");
        assert_eq!(marker(&forecast(false, &["r1"])), "conflicts: main, 1 run");
    }

    #[test]
    fn the_line_names_the_tip_the_paths_and_the_runs() {
        assert_eq!(
            line(&forecast(true, &[])),
            "forecast onto main @ 1a2b3c4d5e6f: merges cleanly; conflicts with no other run"
        );
        assert_eq!(
            line(&forecast(false, &["r1", "r2"])),
            "forecast onto main @ 1a2b3c4d5e6f: conflicts in src/a.rs, src/b.rs; conflicts with r1, r2"
        );
    }
}
