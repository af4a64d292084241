//! This machine's name.

/// The host's name (`/proc/sys/kernel/hostname`), or `localhost` when it cannot be read.
pub fn name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_host_has_a_name_of_one_line() {
        let name = super::name();
        assert!(!name.is_empty());
        assert!(!name.contains('\n'));
    }
}
