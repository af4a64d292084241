//! Marker blocks in hook scripts: git-crew's lines live between `# >>> git-crew >>>` and
//! `# <<< git-crew <<<`, added to whatever hook is already there, updated in place, and
//! removed exactly. Pure text edits; `git/hooks_dir.rs` does the file work.
//!
//! The block goes right after the shebang rather than at the end: many hooks end with
//! `exec` or `exit` (the pre-commit framework's, husky's), and a block appended after
//! them would never run.

/// First line of git-crew's block.
pub const BEGIN: &str = "# >>> git-crew >>>";
/// Last line of git-crew's block.
pub const END: &str = "# <<< git-crew <<<";
/// The first line of a hook git-crew creates.
pub const SHEBANG: &str = "#!/bin/sh";

/// The byte range of the block (markers included) in a text.
fn span(text: &str) -> Option<std::ops::Range<usize>> {
    let start = text.find(BEGIN)?;
    let end = text[start..].find(END)? + start + END.len();
    Some(start..end)
}

/// The block (markers included) found in a shim such as `hooks/pre-commit`.
pub fn block_of(text: &str) -> Option<&str> {
    span(text).map(|r| &text[r])
}

/// What installing a block into a hook amounts to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Install {
    /// No hook yet: create this file.
    Create(String),
    /// Rewrite the hook with this text (block added or refreshed).
    Update(String),
    /// The hook already carries this exact block.
    Unchanged,
    /// The hook is not a shell script, so no shell block can go inside it: move it aside
    /// and create a shell hook that runs the block and then `exec`s the moved hook.
    Chain,
}

/// Whether a hook's text can take a shell block: a `sh`-family shebang, or none (git runs
/// such a hook with `sh`).
pub fn is_shell_script(text: &str) -> bool {
    let Some(first) = text.lines().next() else {
        return true;
    };
    let Some(interpreter) = first.strip_prefix("#!") else {
        return true;
    };
    let mut words = interpreter.split_whitespace();
    let mut program = words.next().unwrap_or("");
    if program.ends_with("/env") {
        program = words.find(|w| !w.starts_with('-')).unwrap_or("");
    }
    let name = program.rsplit('/').next().unwrap_or("");
    matches!(
        name,
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "ash" | "mksh" | "busybox"
    )
}

/// Plans adding `block` (markers included) to a hook whose current text is `existing`.
pub fn install(existing: Option<&str>, block: &str) -> Install {
    let Some(text) = existing else {
        return Install::Create(format!("{SHEBANG}\n{block}\n"));
    };
    if let Some(current) = block_of(text) {
        if current == block {
            return Install::Unchanged;
        }
        return Install::Update(text.replacen(current, block, 1));
    }
    if !is_shell_script(text) {
        return Install::Chain;
    }
    let updated = match text.strip_prefix("#!") {
        Some(_) => {
            let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
            format!("{first}\n{block}\n{rest}")
        }
        None => format!("{block}\n{text}"),
    };
    Install::Update(updated)
}

/// The text of a hook without git-crew's block, or `None` when it has none.
pub fn remove(text: &str) -> Option<String> {
    let range = span(text)?;
    let rest = &text[range.end..];
    let after = rest.strip_prefix('\n').unwrap_or(rest);
    Some(format!("{}{after}", &text[..range.start]))
}

/// Whether what is left of a hook after removing the block is only what git-crew wrote
/// when it created the file, so the file itself can go.
pub fn is_only_shebang(text: &str) -> bool {
    text.trim() == SHEBANG || text.trim().is_empty()
}

/// The block of a chaining hook: runs git-crew's block, then the hook moved aside — if
/// git would have run it (it is executable).
pub fn chain_block(block: &str, moved_name: &str) -> String {
    let body = block
        .strip_suffix(END)
        .unwrap_or(block)
        .trim_end_matches('\n');
    let moved = format!("\"$(dirname \"$0\")/{moved_name}\"");
    format!("{body}\nif [ -x {moved} ]; then exec {moved} \"$@\"; fi\n{END}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOCK: &str =
        "# >>> git-crew >>>\ngit-crew hook pre-commit \"$@\" || exit $?\n# <<< git-crew <<<";

    #[test]
    fn a_missing_hook_is_created() {
        assert_eq!(
            install(None, BLOCK),
            Install::Create(format!("#!/bin/sh\n{BLOCK}\n"))
        );
    }

    #[test]
    fn the_block_goes_after_the_shebang_of_an_existing_hook() {
        let existing = "#!/usr/bin/env bash\nset -e\nnpm test\nexec foo\n";
        let Install::Update(text) = install(Some(existing), BLOCK) else {
            panic!("expected an update")
        };
        assert_eq!(
            text,
            format!("#!/usr/bin/env bash\n{BLOCK}\nset -e\nnpm test\nexec foo\n")
        );
        assert_eq!(install(Some(&text), BLOCK), Install::Unchanged);
        assert_eq!(remove(&text).unwrap(), existing);
    }

    #[test]
    fn a_hook_without_shebang_gets_the_block_on_top() {
        let existing = "npx lint-staged\n";
        let Install::Update(text) = install(Some(existing), BLOCK) else {
            panic!()
        };
        assert_eq!(text, format!("{BLOCK}\nnpx lint-staged\n"));
        assert_eq!(remove(&text).unwrap(), existing);
    }

    #[test]
    fn an_old_block_is_updated_in_place() {
        let old = "#!/bin/sh\necho before\n# >>> git-crew >>>\nold line\n# <<< git-crew <<<\necho after\n";
        let Install::Update(text) = install(Some(old), BLOCK) else {
            panic!()
        };
        assert_eq!(
            text,
            format!("#!/bin/sh\necho before\n{BLOCK}\necho after\n")
        );
    }

    #[test]
    fn other_interpreters_are_chained() {
        assert_eq!(
            install(Some("#!/usr/bin/env python3\nprint(1)\n"), BLOCK),
            Install::Chain
        );
        assert_eq!(install(Some("#!/usr/bin/perl\n"), BLOCK), Install::Chain);
        assert!(is_shell_script("#!/usr/bin/env -S bash -e\n"));
        assert!(is_shell_script("#!/bin/sh\n"));
        assert!(is_shell_script(""));
        let chained = chain_block(BLOCK, "pre-commit.pre-crew");
        assert!(chained.starts_with(BEGIN));
        let moved = "\"$(dirname \"$0\")/pre-commit.pre-crew\"";
        assert!(chained.ends_with(&format!(
            "if [ -x {moved} ]; then exec {moved} \"$@\"; fi\n{END}"
        )));
    }

    #[test]
    fn removal_of_a_created_hook_leaves_only_the_shebang() {
        let Install::Create(text) = install(None, BLOCK) else {
            panic!()
        };
        let left = remove(&text).unwrap();
        assert!(is_only_shebang(&left));
        assert_eq!(remove("#!/bin/sh\necho hi\n"), None);
    }

    #[test]
    fn block_of_finds_the_block_in_a_shim() {
        let shim = format!("#!/bin/sh\n{BLOCK}\n");
        assert_eq!(block_of(&shim), Some(BLOCK));
    }
}
