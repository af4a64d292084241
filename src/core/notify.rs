//! Notifications (`[notify]` of the flight config): which changes of a run tell the
//! lead's notify command, and the command as dispatch resolved it for the run. Pure: the
//! supervisor runs it (`run::notify`).

use serde::{Deserialize, Serialize};

use super::flight::NotifyPolicy;
use super::record::Phase;

/// The notify command of a run, resolved from the flight config at dispatch and kept in
/// the run's folder, like its backend config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notifier {
    /// The argv: the program, then its arguments.
    pub command: Vec<String>,
    /// How long it may take before its process group is killed.
    pub timeout_s: u64,
}

impl Notifier {
    /// The notifier `[notify]` configures; none without a command (or with `[]`).
    pub fn of(policy: &NotifyPolicy) -> Option<Notifier> {
        let command = policy.command.as_ref().filter(|c| !c.is_empty())?;
        // The walker has checked the duration; a value it let through is above zero.
        let timeout_s =
            humantime::parse_duration(&policy.timeout).map_or(10, |d| d.as_secs().max(1));
        Some(Notifier {
            command: command.clone(),
            timeout_s,
        })
    }
}

/// Whether a run that has just moved to `phase` is news for the lead: it needs help, or
/// it ended by itself (done, failed, rejected, timed out). An abandoned run is not: the
/// lead (or a later command of the lead's, finding its supervisor dead) ended it.
pub fn notifies(phase: Phase) -> bool {
    matches!(
        phase,
        Phase::NeedsHelp | Phase::Done | Phase::Failed | Phase::Rejected | Phase::TimedOut
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(command: Option<&[&str]>, timeout: &str) -> NotifyPolicy {
        NotifyPolicy {
            command: command.map(|c| c.iter().map(|s| s.to_string()).collect()),
            timeout: timeout.into(),
        }
    }

    #[test]
    fn a_notifier_needs_a_command() {
        assert_eq!(Notifier::of(&policy(None, "10s")), None);
        assert_eq!(Notifier::of(&policy(Some(&[]), "10s")), None);
        assert_eq!(
            Notifier::of(&policy(Some(&["notify-send", "crew"]), "1m 30s")),
            Some(Notifier {
                command: vec!["notify-send".into(), "crew".into()],
                timeout_s: 90,
            })
        );
        // Under a second is a second: a timeout of zero would kill it at once.
        assert_eq!(
            Notifier::of(&policy(Some(&["x"]), "300ms")).map(|n| n.timeout_s),
            Some(1)
        );
    }

    #[test]
    fn the_lead_hears_of_help_and_of_every_end_but_an_abandon() {
        for phase in [
            Phase::NeedsHelp,
            Phase::Done,
            Phase::Failed,
            Phase::Rejected,
            Phase::TimedOut,
        ] {
            assert!(notifies(phase), "{phase:?}");
        }
        for phase in [
            Phase::Queued,
            Phase::Preparing,
            Phase::Working,
            Phase::Verifying,
            Phase::Abandoned,
            Phase::AwaitingAttach,
        ] {
            assert!(!notifies(phase), "{phase:?}");
        }
    }
}
