//! A verify's verdict. The verify command is the lead's check, and the code it runs is
//! the worker's: its exit code decides first, and a reward file in `$CREW_VERIFIER_DIR`
//! can only lower a pass. A command that exits non-zero (or that a signal ends) fails,
//! whatever reward its run wrote; one that exits 0 passes unless its verifier wrote a
//! reward below 1.0, or one that is no finite number (Harbor's reward semantics, for a
//! verifier that exits 0). Pure: `run::verify` runs the command and reads the file.

use super::record::{DecidedBy, Verify};

/// The verdict of `command`, which exited with `exit_code` (`None`: a signal ended it),
/// given the reward its verifier wrote: `Ok(None)` when it wrote none, `Err` naming a
/// reward that cannot be taken.
pub fn verdict(
    command: &str,
    exit_code: Option<i32>,
    reward: Result<Option<f64>, String>,
) -> Verify {
    let by_exit = Verify {
        command: command.to_string(),
        reward: 0.0,
        passed: false,
        problem: None,
        decided_by: Some(DecidedBy::Exit),
        exit_code,
    };
    if exit_code != Some(0) {
        // What the run wrote beside a failing exit is never read as a pass.
        return by_exit;
    }
    match reward {
        Ok(None) => Verify {
            reward: 1.0,
            passed: true,
            ..by_exit
        },
        Ok(Some(reward)) => Verify {
            reward,
            passed: reward >= 1.0,
            decided_by: Some(DecidedBy::Reward),
            ..by_exit
        },
        // A reward that is no number fails the verify, named; it is never stored.
        Err(problem) => Verify {
            problem: Some(problem),
            decided_by: Some(DecidedBy::Reward),
            ..by_exit
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decided(v: &Verify) -> (bool, f64, Option<DecidedBy>) {
        (v.passed, v.reward, v.decided_by)
    }

    #[test]
    fn a_failing_exit_fails_whatever_reward_was_written() {
        use DecidedBy::*;
        for reward in [
            Ok(Some(1.0)),
            Ok(Some(5.0)),
            Ok(None),
            Err("bad".to_string()),
        ] {
            let v = verdict("t", Some(1), reward);
            assert_eq!(decided(&v), (false, 0.0, Some(Exit)));
            assert_eq!(
                (v.exit_code, &v.problem, v.grounds().as_str()),
                (Some(1), &None, "exit 1")
            );
        }
        let killed = verdict("t", None, Ok(Some(1.0)));
        assert_eq!(decided(&killed), (false, 0.0, Some(Exit)));
        assert_eq!(killed.grounds(), "ended by a signal");
    }

    #[test]
    fn a_reward_can_only_lower_a_pass() {
        use DecidedBy::*;
        let plain = verdict("t", Some(0), Ok(None));
        assert_eq!(decided(&plain), (true, 1.0, Some(Exit)));
        assert_eq!(plain.grounds(), "exit 0");
        let half = verdict("t", Some(0), Ok(Some(0.5)));
        assert_eq!(decided(&half), (false, 0.5, Some(Reward)));
        assert_eq!(half.grounds(), "exit 0, reward 0.5");
        assert_eq!(
            decided(&verdict("t", Some(0), Ok(Some(1.0)))),
            (true, 1.0, Some(Reward))
        );
        let bad = verdict("t", Some(0), Err("not a number: x".into()));
        assert_eq!(decided(&bad), (false, 0.0, Some(Reward)));
        assert_eq!(bad.problem.as_deref(), Some("not a number: x"));
    }

    #[test]
    fn a_verify_recorded_before_the_exit_code_was_kept_reads_back() {
        let old: Verify =
            serde_json::from_str(r#"{"command":"t","reward":1.0,"passed":true}"#).unwrap();
        assert_eq!((old.decided_by, old.exit_code), (None, None));
        assert_eq!(old.grounds(), "reward 1");
        let new = serde_json::to_value(verdict("t", Some(0), Ok(Some(0.5)))).unwrap();
        assert_eq!(new["decided_by"], "reward");
        assert_eq!(new["exit_code"], 0);
    }
}
