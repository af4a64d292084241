//! Failures injected for tests at named points (`GIT_CREW_FAILPOINT`), so every window
//! of a crash-safe sequence can be exercised by a real process.

fn armed(name: &str) -> bool {
    std::env::var_os("GIT_CREW_FAILPOINT").is_some_and(|v| v == name)
}

/// A crash at `name`: the process is killed outright, as a power cut or `kill -9` would.
pub fn crash(name: &str) {
    if armed(name) {
        super::process::die();
    }
}

/// Whether tests asked for a failure at `name` that the caller turns into an error — a
/// step that fails, where [`crash`] is a crash.
pub fn fails_at(name: &str) -> bool {
    armed(name)
}
