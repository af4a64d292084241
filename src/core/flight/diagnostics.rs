//! The diagnostics reporter shared by every reader of git-crew's TOML files (flight
//! layers, plans): `path:line:col`, the dotted key, the message and a did-you-mean.

use std::fmt;

/// A problem in one layer, located as precisely as the source allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file path, or the flag (`--set k=v`) for the invocation layer.
    pub origin: String,
    /// 1-based line and column, when the origin is a file.
    pub location: Option<(usize, usize)>,
    /// The dotted key concerned (empty for a syntax error).
    pub key: String,
    pub message: String,
    pub suggestion: Option<String>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.origin)?;
        if let Some((line, col)) = self.location {
            write!(f, ":{line}:{col}")?;
        }
        write!(f, ": ")?;
        if !self.key.is_empty() {
            write!(f, "`{}`: ", self.key)?;
        }
        write!(f, "{}", self.message)?;
        if let Some(s) = &self.suggestion {
            write!(f, " (did you mean `{s}`?)")?;
        }
        Ok(())
    }
}

/// Where each line of a text starts, so any byte offset is located in O(log lines):
/// diagnostics and provenance for every key of a large file stay linear in its size.
#[derive(Debug, Clone)]
pub struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    pub fn new(text: &'a str) -> Lines<'a> {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines { text, starts }
    }

    /// The 1-based line and column of a byte offset.
    pub fn locate(&self, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&start| start <= offset);
        let start = self.starts[line - 1];
        (line, self.text[start..offset].chars().count() + 1)
    }
}

/// Diagnostics located in one file — `path:line:col`, the dotted key, the message and a
/// did-you-mean — for every reader of git-crew's TOML files (flight layers, plans).
pub struct Located<'a> {
    origin: String,
    /// `None` for text with no lines to point at (a `--set` flag).
    lines: Option<Lines<'a>>,
    pub diagnostics: Vec<Diagnostic>,
}

impl<'a> Located<'a> {
    pub fn new(origin: &str, text: &'a str, has_lines: bool) -> Located<'a> {
        Located {
            origin: origin.to_string(),
            lines: has_lines.then(|| Lines::new(text)),
            diagnostics: Vec::new(),
        }
    }

    /// The line and column of a byte offset, when the text has lines.
    pub fn locate(&self, offset: usize) -> Option<(usize, usize)> {
        self.lines.as_ref().map(|lines| lines.locate(offset))
    }

    pub fn report(
        &mut self,
        offset: usize,
        key: &str,
        message: String,
        suggestion: Option<String>,
    ) {
        let location = self.locate(offset);
        self.diagnostics.push(Diagnostic {
            origin: self.origin.clone(),
            location,
            key: key.to_string(),
            message,
            suggestion,
        });
    }

    /// Reports `name` (at `dotted`) as a key that is not one of `known`, with the closest
    /// known one as a did-you-mean (spelt with `prefix`).
    pub fn unknown_key(
        &mut self,
        offset: usize,
        dotted: &str,
        name: &str,
        known: &[&str],
        prefix: &str,
        message: String,
    ) {
        let suggestion = did_you_mean(name, known.iter().copied()).map(|s| join_key(prefix, &s));
        self.report(offset, dotted, message, suggestion);
    }
}

/// The 1-based line and column of a byte offset in `text` (one lookup; build [`Lines`]
/// for many).
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    Lines::new(text).locate(offset)
}

/// The closest candidate to a misspelt name, when one is close enough to suggest.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(name, c), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c.to_string())
}

/// `prefix.name`, or `name` at the root.
pub(super) fn join_key(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_locate_every_offset_as_a_scan_would() {
        let text = "a = 1\n\n[b]\nc = \"é\"\nlast";
        for offset in 0..=text.len() + 2 {
            let mut o = offset.min(text.len());
            while !text.is_char_boundary(o) {
                o -= 1;
            }
            let before = &text[..o];
            let line = before.matches('\n').count() + 1;
            let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            assert_eq!(Lines::new(text).locate(offset), (line, col), "{offset}");
        }
    }

    #[test]
    fn suggestions_need_a_close_match() {
        assert_eq!(
            did_you_mean("modle", ["model", "effort"]),
            Some("model".into())
        );
        assert_eq!(did_you_mean("zzz", ["model", "effort"]), None);
    }
}
