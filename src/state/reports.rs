//! Human reports: what dispatch files when a task has failed at the top tier and only a
//! person can take it further (`<git-common-dir>/crew/reports/<task>.md`).

use std::path::{Path, PathBuf};

/// Files `task`'s human report under the state folder `state_dir`; where it went, or
/// `None` when it could not be written.
pub fn file(state_dir: &Path, task: &str, report: &str) -> Option<PathBuf> {
    let path = crate::core::layout::human_report(state_dir, task);
    std::fs::create_dir_all(path.parent()?).ok()?;
    std::fs::write(&path, report).ok()?;
    Some(path)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_report_is_filed_where_the_layout_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = super::file(dir.path(), "routes", "# stuck\n").unwrap();
        assert_eq!(
            path,
            crate::core::layout::human_report(dir.path(), "routes")
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "# stuck\n");
        // A folder where the report goes: not filed, and said so.
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        assert_eq!(super::file(dir.path(), "routes", "x"), None);
    }
}
