//! The run's fences around the supervisor's own work after an attempt: the size cap
//! (`fences.max_file_size`) on the files a run leaves for git-crew to commit and on the
//! objects it brings into the repository, and the time that work may take past the
//! budget. Pure: the supervisor gathers the files' sizes and the import's verdicts first.

use std::time::Duration;

use super::record::Outcome;
use super::size;

/// The shipped `fences.max_file_size`, and the cap of a run recorded before the key.
pub use crate::core::flight::DEFAULT_MAX_FILE_SIZE;

/// How long the supervisor's work after an attempt (the commit of the work left behind,
/// its checks, the import of the run's objects) may run past the time budget.
pub const GRACE: Duration = Duration::from_secs(10);

/// The most paths or objects a decision names; the rest are counted.
const NAMED: usize = 10;

/// A regular file of a run's worktree that git would add, with its apparent size (as the
/// filesystem reports it, never read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftFile {
    pub path: String,
    pub size: u64,
    /// The size of the blob the index holds for the path, when it is tracked and the blob
    /// is known: a file of that size is most likely unchanged, and either way git finds
    /// nothing bigger than the repository already holds.
    pub recorded: Option<u64>,
}

/// The files over `cap`: bigger than it, and not the size of the blob the repository
/// already holds for them.
pub fn over_cap(files: &[LeftFile], cap: u64) -> Vec<&LeftFile> {
    files
        .iter()
        .filter(|f| f.size > cap && f.recorded != Some(f.size))
        .collect()
}

/// A size next to the cap it is compared with: exact bytes where both would read alike.
fn shown_against(bytes: u64, cap: u64) -> String {
    if size::show(bytes) == size::show(cap) {
        format!("{bytes} bytes")
    } else {
        size::show(bytes)
    }
}

/// The first few names, then how many more.
fn named(items: Vec<String>) -> String {
    let more = items.len().saturating_sub(NAMED);
    let mut text = items.into_iter().take(NAMED).collect::<Vec<_>>().join(", ");
    if more > 0 {
        text.push_str(&format!(" and {more} more"));
    }
    text
}

/// The decision on a run that left files over the cap: a scope rejection naming them
/// and the cap; nothing of them was hashed or committed. `None` when there are none.
pub fn left_over(files: &[LeftFile], cap: u64) -> Option<(Outcome, String)> {
    let over = over_cap(files, cap);
    if over.is_empty() {
        return None;
    }
    let what = if over.len() == 1 {
        "a file".to_string()
    } else {
        format!("{} files", over.len())
    };
    let list = named(
        over.iter()
            .map(|f| format!("{} ({})", f.path, shown_against(f.size, cap)))
            .collect(),
    );
    Some((
        Outcome::ScopeReject,
        format!(
            "the run left {what} over fences.max_file_size ({}), so nothing was committed: {list}",
            size::show(cap)
        ),
    ))
}

/// An object of a run's quarantine that was kept out of the repository, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Its content does not hash to its name, it cannot be read, or it is not a regular
    /// file or folder.
    FalseName(String),
    /// It declares more bytes than the cap: a loose object's header, a pack file's own
    /// size, or an object a pack holds.
    OverCap { name: String, size: u64 },
    /// The time for the import ran out before it was taken in.
    OutOfTime(String),
}

/// The decision on a run whose objects were kept out of the repository: a scope
/// rejection for false or oversized objects (naming them, and the cap), a timeout when
/// only the time ran out. `None` when none was.
pub fn refused_objects(refused: &[Refused], cap: u64) -> Option<(Outcome, String)> {
    let mut false_names = Vec::new();
    let mut over = Vec::new();
    let mut late = 0;
    for r in refused {
        match r {
            Refused::FalseName(name) => false_names.push(name.clone()),
            Refused::OverCap { name, size } => {
                over.push(format!("{name} ({})", shown_against(*size, cap)))
            }
            Refused::OutOfTime(_) => late += 1,
        }
    }
    let mut parts = Vec::new();
    if !false_names.is_empty() {
        parts.push(format!(
            "the run wrote objects whose content does not match their names: {}",
            named(false_names)
        ));
    }
    if !over.is_empty() {
        parts.push(format!(
            "the run wrote objects over fences.max_file_size ({}), kept out of the repository: {}",
            size::show(cap),
            named(over)
        ));
    }
    if !parts.is_empty() {
        return Some((Outcome::ScopeReject, parts.join("; ")));
    }
    (late > 0).then(|| {
        (
            Outcome::Timeout,
            format!(
                "importing the run's objects ran past the time budget and its {}s grace: {} left out",
                GRACE.as_secs(),
                super::text::count(late, "object", "objects")
            ),
        )
    })
}

/// A step of the supervisor's work after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Listing the files git would add, to measure them.
    List,
    /// Asking git whether a read-only run left changes.
    Status,
    /// `git add` of the work left behind.
    Add,
}

/// The decision on a run whose step ran out of time (and was stopped): a timeout.
pub fn out_of_time(step: Step) -> (Outcome, String) {
    let what = match step {
        Step::List => "listing the work left behind",
        Step::Status => "checking the worktree for changes",
        Step::Add => "`git add` of the work left behind",
    };
    (
        Outcome::Timeout,
        format!(
            "{what} ran past the time budget and its {}s grace, and was stopped",
            GRACE.as_secs()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, size: u64, recorded: Option<u64>) -> LeftFile {
        LeftFile {
            path: path.into(),
            size,
            recorded,
        }
    }

    #[test]
    fn a_file_over_the_cap_is_named_with_the_cap() {
        let cap = 100 << 20;
        let files = [
            file("src/a.rs", 120, None),
            file("big.bin", 30 << 30, None),
            file("at-cap.bin", cap, None),
        ];
        assert_eq!(
            left_over(&files, cap),
            Some((
                Outcome::ScopeReject,
                "the run left a file over fences.max_file_size (100 MiB), so nothing was committed: big.bin (30 GiB)"
                    .into()
            ))
        );
        assert_eq!(left_over(&files[..1], cap), None);
        assert_eq!(left_over(&[], cap), None);
    }

    #[test]
    fn a_tracked_file_the_size_of_its_blob_is_not_over_the_cap() {
        let cap = 1 << 20;
        let files = [
            // A big asset of the base, untouched.
            file("assets/video.mp4", 5 << 20, Some(5 << 20)),
            // The same path grown, or a small file made huge: over.
            file("assets/grown.mp4", 6 << 20, Some(5 << 20)),
            file("README.md", (4 << 30) + 100, Some(100)),
        ];
        let over: Vec<&str> = over_cap(&files, cap).iter().map(|f| &*f.path).collect();
        assert_eq!(over, ["assets/grown.mp4", "README.md"]);
        let (_, text) = left_over(&files, cap).unwrap();
        assert_eq!(
            text,
            "the run left 2 files over fences.max_file_size (1 MiB), so nothing was committed: assets/grown.mp4 (6 MiB), README.md (4 GiB)"
        );
    }

    #[test]
    fn a_size_that_reads_like_the_cap_is_shown_in_bytes() {
        let cap = 1 << 20;
        let (_, text) = left_over(&[file("a", cap + 1, None)], cap).unwrap();
        assert!(text.ends_with("a (1048577 bytes)"), "{text}");
    }

    #[test]
    fn many_files_are_counted_past_the_first_ten() {
        let files: Vec<LeftFile> = (0..13).map(|i| file(&format!("f{i}"), 9, None)).collect();
        let (_, text) = left_over(&files, 8).unwrap();
        assert!(text.starts_with("the run left 13 files over"), "{text}");
        assert!(text.ends_with("f9 (9 B) and 3 more"), "{text}");
    }

    #[test]
    fn refused_objects_name_the_reason_and_the_cap() {
        let cap = 1 << 20;
        assert_eq!(refused_objects(&[], cap), None);
        let over = Refused::OverCap {
            name: "1f2e".into(),
            size: 5 << 20,
        };
        assert_eq!(
            refused_objects(std::slice::from_ref(&over), cap),
            Some((
                Outcome::ScopeReject,
                "the run wrote objects over fences.max_file_size (1 MiB), kept out of the repository: 1f2e (5 MiB)"
                    .into()
            ))
        );
        let (outcome, text) = refused_objects(
            &[
                Refused::FalseName("ab12".into()),
                over,
                Refused::OutOfTime("cd34".into()),
            ],
            cap,
        )
        .unwrap();
        assert_eq!(outcome, Outcome::ScopeReject);
        assert_eq!(
            text,
            "the run wrote objects whose content does not match their names: ab12; the run wrote objects over fences.max_file_size (1 MiB), kept out of the repository: 1f2e (5 MiB)"
        );
    }

    #[test]
    fn objects_left_out_for_time_alone_make_a_timeout() {
        let refused = [
            Refused::OutOfTime("a".into()),
            Refused::OutOfTime("b".into()),
        ];
        assert_eq!(
            refused_objects(&refused, 1),
            Some((
                Outcome::Timeout,
                "importing the run's objects ran past the time budget and its 10s grace: 2 objects left out"
                    .into()
            ))
        );
    }

    #[test]
    fn a_step_past_its_time_is_a_named_timeout() {
        assert_eq!(
            out_of_time(Step::Add),
            (
                Outcome::Timeout,
                "`git add` of the work left behind ran past the time budget and its 10s grace, and was stopped"
                    .into()
            )
        );
        assert!(
            out_of_time(Step::List)
                .1
                .starts_with("listing the work left behind")
        );
        assert!(
            out_of_time(Step::Status)
                .1
                .starts_with("checking the worktree")
        );
    }
}
