//! The one clock and the one run-id source.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the epoch.
pub fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Now, as a row's `at`: RFC 3339 UTC with microseconds.
pub fn stamp_now() -> String {
    crate::core::stamp::format(SystemTime::now())
}

/// RFC 3339 UTC, to the second.
pub fn rfc3339(millis: u64) -> String {
    crate::core::stamp::seconds(millis)
}

/// A new run id: sortable by time, unique on this machine.
pub fn new_run_id() -> String {
    let now = now_millis();
    let stamp = rfc3339(now).replace(['-', ':'], "");
    let stamp = stamp.trim_end_matches('Z').replace('T', "-");
    let salt = (now % 1000) as u32 ^ (std::process::id() << 10);
    format!("{stamp}-{:04x}", salt & 0xffff)
}

#[cfg(test)]
mod tests {
    #[test]
    fn new_run_ids_are_run_ids() {
        let id = super::new_run_id();
        assert!(crate::core::record::is_run_id(&id), "{id}");
    }
}
