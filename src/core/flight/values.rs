//! The closed sets of values some keys take (`adapter`, `sandbox`, `gates.enforce`, ...),
//! as enums. Each is declared once, as variant = "string" pairs: its serde form, its
//! `as_str`/`Display`/`FromStr` and the `NAMES` the schema table lists as the key's
//! allowed values all come from that one list.

/// Declares a closed set of config values: the enum (serde'd as the strings given), its
/// `NAMES` in the order given, `as_str`, `Display` and `FromStr`.
macro_rules! closed_set {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
        $vis enum $name {
            $( $(#[$vmeta])* #[serde(rename = $text)] $variant ),+
        }

        impl $name {
            /// Every value, in the order the schema lists them.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// Every value's string, in the order of [`Self::ALL`].
            pub const NAMES: &'static [&'static str] = &[$($text),+];

            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;

            fn from_str(s: &str) -> Result<$name, String> {
                $name::ALL
                    .iter()
                    .copied()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| format!("`{s}` is not one of {}", $name::NAMES.join(", ")))
            }
        }
    };
}

closed_set! {
    /// When the summary is given (`summary.at`, `git crew summary --at`).
    #[derive(clap::ValueEnum)]
    pub enum SummaryAt {
        Dispatch = "dispatch",
        Completion = "completion",
        MicroPlan = "micro-plan",
    }
}

closed_set! {
    /// What drives a backend's worker (`backends.<name>.adapter`).
    pub enum AdapterKind {
        Codex = "codex",
        Claude = "claude",
        Command = "command",
        /// The lead's own sub-task: git-crew starts no process.
        Native = "native",
    }
}

impl AdapterKind {
    /// Whether a session of this adapter can be resumed from another worktree: codex
    /// resumes by thread id anywhere, a command backend with `resume_argv` is trusted to;
    /// claude resumes only from the directory a session started in.
    pub fn resumes_across_worktrees(self) -> bool {
        !matches!(self, AdapterKind::Claude | AdapterKind::Native)
    }

    /// The CLI's own state folder under a home folder (the lead's, seeded from; the
    /// worker's own, which it writes).
    pub fn home_state(self) -> Option<&'static str> {
        match self {
            AdapterKind::Codex => Some(".codex"),
            AdapterKind::Claude => Some(".claude"),
            AdapterKind::Command | AdapterKind::Native => None,
        }
    }
}

closed_set! {
    /// What a worker may write (`backends.<name>.sandbox`, `roles.<role>.sandbox`).
    pub enum SandboxMode {
        /// The worktree is the boundary.
        WorktreeFull = "worktree-full",
        /// No writes.
        ReadOnly = "read-only",
    }
}

closed_set! {
    /// Whether a gate holds the work it gates (`gates.enforce`).
    #[derive(Default)]
    pub enum Enforcement {
        /// Blocked work is refused.
        #[default]
        Strict = "strict",
        /// Blocked work proceeds, and says so.
        Warn = "warn",
        /// Gates never block.
        Off = "off",
    }
}

closed_set! {
    /// What a failing gate verdict does to the waves it gates (`gates.on_fail`).
    #[derive(Default)]
    pub enum OnFail {
        /// Downstream work stays blocked.
        #[default]
        Hold = "hold",
        /// Any recorded verdict lets the waves go.
        Continue = "continue",
    }
}

closed_set! {
    /// What integrate removes once a run has landed (`worktree.cleanup`); work is never
    /// lost.
    pub enum WorktreeCleanup {
        /// The worktree; the branch stays.
        Conservative = "conservative",
        /// The worktree and the branch.
        Eager = "eager",
        /// Nothing.
        Never = "never",
    }
}

closed_set! {
    /// The summary's shape (`summary.reflex`).
    pub enum Reflex {
        WhatWhyHowWhen = "what-why-how-when",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use SummaryAt as At;

    /// The serde form, `as_str`, `Display` and `FromStr` of every value agree.
    fn agrees<T>(all: &[T])
    where
        T: Copy + PartialEq + std::fmt::Debug + std::fmt::Display + std::str::FromStr,
        T: serde::Serialize + serde::de::DeserializeOwned,
    {
        for &v in all {
            let text = v.to_string();
            assert_eq!(serde_json::to_value(v).unwrap(), text.as_str());
            assert_eq!(serde_json::from_value::<T>(text.clone().into()).unwrap(), v);
            assert!(text.parse::<T>().is_ok_and(|p| p == v), "{text}");
        }
        assert!("nope".parse::<T>().is_err());
    }

    #[test]
    fn every_value_has_one_spelling() {
        agrees(AdapterKind::ALL);
        agrees(SandboxMode::ALL);
        agrees(Enforcement::ALL);
        agrees(OnFail::ALL);
        agrees(WorktreeCleanup::ALL);
        agrees(Reflex::ALL);
        agrees(At::ALL);
        assert_eq!(AdapterKind::NAMES, ["codex", "claude", "command", "native"]);
        assert_eq!(SandboxMode::NAMES, ["worktree-full", "read-only"]);
        assert_eq!(
            "bogus".parse::<Enforcement>(),
            Err("`bogus` is not one of strict, warn, off".to_string())
        );
    }

    #[test]
    fn a_flag_takes_the_same_spelling() {
        for &at in At::ALL {
            let value = clap::ValueEnum::to_possible_value(&at).unwrap();
            assert_eq!(value.get_name(), at.as_str());
        }
    }
}
