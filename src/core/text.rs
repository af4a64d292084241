//! Text as decisions and renderings word it: counted nouns, cut text, what another
//! program wrote made fit for a terminal, and a change of git-crew's own as a unified
//! diff. Pure. (The first three are tested in `view::human`, the renderings' home, which
//! re-exports them.)

/// `n` things, with the plural people expect: `1 run`, `2 runs`, `0 workers`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `text` cut to `width` characters, ending in `…` when cut.
pub fn truncate(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut cut: String = text.chars().take(width - 1).collect();
    cut.push('…');
    cut
}

/// Text that another program wrote — a worker's footer or question, a hook's words, a
/// session id — as it may go on a terminal: every escape sequence dropped whole (CSI such
/// as erase-line `ESC [2K` or conceal `ESC [8m`; OSC such as a clipboard write
/// `ESC ]52;c;...BEL`; DCS, SOS, PM and APC strings; their 8-bit C1 forms; the short
/// `ESC x` ones), and every other control character — C0, DEL and C1 — dropped, except
/// the line feed and the tab. What can be seen stays. The one sanitizer of every human
/// rendering: JSON carries the text as it came, as data.
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    sanitize_into(text, &mut out);
    out
}

/// [`sanitize`], appending to `out`.
pub fn sanitize_into(text: &str, out: &mut String) {
    // Most text has nothing to drop: printable ASCII, line feeds and tabs pass as they are
    // (a byte test; the character walk below is for the rest).
    // (Folded without stopping early, which the compiler turns into wide compares.)
    if text.bytes().fold(true, |plain, b| {
        plain & (matches!(b, b' '..=b'~') | (b == b'\n') | (b == b'\t'))
    }) {
        out.push_str(text);
        return;
    }
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' => out.push(c),
            '\u{1b}' => match chars.peek().copied() {
                Some('[') => {
                    chars.next();
                    skip_csi(&mut chars);
                }
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    chars.next();
                    skip_string(&mut chars);
                }
                // nF: intermediate bytes, then one final byte (`ESC ( B`).
                Some(' '..='/') => {
                    while chars.next_if(|c| (' '..='/').contains(c)).is_some() {}
                    chars.next_if(|c| ('0'..='~').contains(c));
                }
                // Fp, Fe, Fs: one byte (`ESC 7`, `ESC c`).
                Some('0'..='~') => {
                    chars.next();
                }
                // Before a control character (another ESC, a line break) or at the end,
                // the ESC goes alone and what follows is read as it comes.
                _ => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
}

/// Skips a control sequence's parameter and intermediate bytes and its final byte.
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars>) {
    while chars.next_if(|c| (' '..='?').contains(c)).is_some() {}
    chars.next_if(|c| ('@'..='~').contains(c));
}

/// Skips a control string (OSC, DCS, SOS, PM, APC) up to its terminator (BEL, ST, `ESC
/// \`), or to a line break or a cancel (CAN, SUB), which end it as a terminal ends it;
/// the line break is kept.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars>) {
    while let Some(c) = chars.peek().copied() {
        match c {
            '\n' => return,
            '\u{7}' | '\u{9c}' | '\u{18}' | '\u{1a}' => {
                chars.next();
                return;
            }
            // `ESC \` ends it; any other ESC ends it too, and starts what comes next.
            '\u{1b}' => {
                let mut ahead = chars.clone();
                ahead.next();
                if ahead.peek() == Some(&'\\') {
                    chars.next();
                    chars.next();
                }
                return;
            }
            _ => {
                chars.next();
            }
        }
    }
}

/// [`sanitize`]d text on one line, for a table cell or a status line: a carriage return
/// keeps what follows it (a progress line shows its last state), line breaks and tabs
/// become spaces, and the ends are trimmed.
pub fn printable(text: &str) -> String {
    let last = text
        .rsplit('\r')
        .find(|s| !s.trim().is_empty())
        .unwrap_or("");
    sanitize(last)
        .chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_string()
}

/// The change from `before` to `after` as a unified diff of lines (`--- a/PATH`,
/// `+++ b/PATH`, hunks with three lines of context), as git shows one; empty when the two
/// are the same.
pub fn unified_diff(before: &str, after: &str, path: &str) -> String {
    if before == after {
        return String::new();
    }
    let path = path.trim_start_matches('/');
    let from = if before.is_empty() {
        "/dev/null".to_string()
    } else {
        format!("a/{path}")
    };
    similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&from, &format!("b/{path}"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unified_diff_reads_as_git_writes_one() {
        assert_eq!(unified_diff("same\n", "same\n", "x"), "");
        let created = unified_diff("", "#!/bin/sh\necho hi\n", "/repo/.git/hooks/pre-commit");
        assert_eq!(
            created,
            "--- /dev/null\n+++ b/repo/.git/hooks/pre-commit\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n+echo hi\n"
        );
        let before = "#!/bin/sh\n1\n2\n3\n4\n5\n6\n7\n";
        let after = "#!/bin/sh\nBLOCK\n1\n2\n3\n4\n5\n6\n7\n";
        let changed = unified_diff(before, after, "hooks/post-merge");
        assert!(
            changed
                .starts_with("--- a/hooks/post-merge\n+++ b/hooks/post-merge\n@@ -1,4 +1,5 @@\n"),
            "{changed}"
        );
        assert!(changed.contains("\n+BLOCK\n"), "{changed}");
        // Three lines of context, not the whole file.
        assert!(!changed.contains("\n 7\n"), "{changed}");
    }
}
