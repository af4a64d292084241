//! The wave summary for people: the title, then WHAT/WHY/HOW/WHEN wrapped to the
//! terminal (SPEC §7). What it says is decided in `core::summary`.

use crate::core::summary::Summary;

impl Summary {
    /// The human rendering: the title, then WHAT/WHY/HOW/WHEN, each wrapped to at most
    /// two lines of `width`, [sanitized](crate::core::text::sanitize) (it quotes gate evidence
    /// and names a worker's runs).
    pub fn render(&self, width: usize) -> String {
        let mut out = self.title.clone();
        for (label, text) in [
            ("WHAT", &self.what),
            ("WHY", &self.why),
            ("HOW", &self.how),
            ("WHEN", &self.when),
        ] {
            let lines = wrap(text, width.saturating_sub(7).max(20), 2);
            out.push_str(&format!("\n{label:<6} {}", lines[0]));
            for line in &lines[1..] {
                out.push_str(&format!("\n       {line}"));
            }
        }
        crate::core::text::sanitize(&out)
    }
}

/// At most `max` lines of `width` characters; what does not fit ends in "…".
fn wrap(text: &str, width: usize, max: usize) -> Vec<String> {
    let mut lines: Vec<String> = vec![String::new()];
    let mut cut = false;
    for word in text.split_whitespace() {
        let last = lines.last_mut().expect("one line at least");
        let len = last.chars().count();
        if len == 0 || len + 1 + word.chars().count() <= width {
            if len > 0 {
                last.push(' ');
            }
            last.push_str(word);
        } else if lines.len() < max {
            lines.push(word.to_string());
        } else {
            cut = true;
            break;
        }
    }
    for line in lines.iter_mut() {
        if line.chars().count() > width {
            *line = line.chars().take(width.saturating_sub(1)).collect();
            cut = true;
        }
    }
    if cut {
        let last = lines.last_mut().expect("one line at least");
        while last.chars().count() + 1 > width {
            last.pop();
        }
        last.push('…');
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_wrap_to_two_and_are_cut() {
        let text = "word ".repeat(100);
        let lines = wrap(&text, 30, 2);
        assert_eq!(lines.len(), 2);
        assert!(lines[1].ends_with('…'));
        assert!(lines.iter().all(|l| l.chars().count() <= 30));
    }
}
