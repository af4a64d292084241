//! The footer relay: from a worker's reply only the footer crosses back to the lead —
//! `## Result`, `## How to verify`, `## Deferred / concerns` — and the NEEDS-HELP escape
//! hatch. Pure and streaming: a reply is fed line by line and only the last occurrence of
//! each section (bounded by the line cap) is kept, so a transcript of any size is read in
//! one pass without being held in memory.

use serde::{Deserialize, Serialize};

/// The rebuilt footer never exceeds this many lines.
pub const MAX_FOOTER_LINES: usize = 60;
/// A single footer line longer than this many characters is cut.
pub const MAX_LINE_CHARS: usize = 2000;
/// Marks every place the harness cut something.
pub const TRUNCATED_MARKER: &str = "[truncated by harness]";

/// Lines of the rebuilt footer that are not section content: three headings and the two
/// blank lines between sections.
const FRAME_LINES: usize = 5;
const CONTENT_BUDGET: usize = MAX_FOOTER_LINES - FRAME_LINES;
/// Lines kept per NEEDS-HELP field.
const MAX_FIELD_LINES: usize = 20;

/// One of the three required footer sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Result,
    HowToVerify,
    Deferred,
}

impl Section {
    pub const ALL: [Section; 3] = [Section::Result, Section::HowToVerify, Section::Deferred];

    /// The key used in JSON (`sections.<key>`, `missing: [<key>]`).
    pub fn key(self) -> &'static str {
        match self {
            Section::Result => "result",
            Section::HowToVerify => "how_to_verify",
            Section::Deferred => "deferred",
        }
    }

    /// The canonical heading, as the rebuilt footer and the prompts spell it.
    pub fn heading(self) -> &'static str {
        match self {
            Section::Result => "## Result",
            Section::HowToVerify => "## How to verify",
            Section::Deferred => "## Deferred / concerns",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The level of a line that starts with 1 to 6 `#`, and the text after them.
fn heading_parts(line: &str) -> Option<(usize, &str)> {
    let trimmed = line.trim();
    let hashes = trimmed.len() - trimmed.trim_start_matches('#').len();
    (1..=6)
        .contains(&hashes)
        .then(|| (hashes, &trimmed[hashes..]))
}

/// Recognises a footer heading, tolerant of case, spacing and decoration:
/// `##Result`, `## HOW TO VERIFY`, `### Deferred/Concerns:` all match.
pub fn classify_heading(line: &str) -> Option<Section> {
    classify_heading_at(line).map(|(section, _)| section)
}

fn classify_heading_at(line: &str) -> Option<(Section, usize)> {
    let (level, text) = heading_parts(line)?;
    let name: String = text
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    let section = match name.as_str() {
        "result" | "results" => Section::Result,
        "howtoverify" => Section::HowToVerify,
        "deferredconcerns" | "deferredandconcerns" | "deferred" | "concernsdeferred" => {
            Section::Deferred
        }
        _ => return None,
    };
    Some((section, level))
}

/// A markdown code fence (```` ``` ```` or `~~~`, three or more): its character and length.
fn fence_of(line: &str) -> Option<(char, usize)> {
    let trimmed = line.trim_start();
    let c = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = trimmed.len() - trimmed.trim_start_matches(c).len();
    (len >= 3).then_some((c, len))
}

/// The content of one section since its latest heading, bounded.
#[derive(Debug, Default, Clone)]
struct SectionBuf {
    seen: bool,
    started: bool,
    /// At most `CONTENT_BUDGET` lines; trailing blank lines are held in `pending_blank`.
    lines: Vec<String>,
    /// Content lines from the first to the last non-blank one, kept or not.
    len: usize,
    pending_blank: usize,
    long_line_cut: bool,
}

impl SectionBuf {
    fn reset(&mut self) {
        *self = SectionBuf {
            seen: true,
            ..SectionBuf::default()
        };
    }

    fn push(&mut self, line: &str) {
        let blank = line.trim().is_empty();
        if !self.started {
            if blank {
                return;
            }
            self.started = true;
        }
        if blank {
            self.pending_blank += 1;
            return;
        }
        for _ in 0..self.pending_blank {
            self.store(String::new());
        }
        self.pending_blank = 0;
        let line = line.trim_end();
        let kept = if line.chars().count() > MAX_LINE_CHARS {
            self.long_line_cut = true;
            let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
            format!("{cut} {TRUNCATED_MARKER}")
        } else {
            line.to_string()
        };
        self.store(kept);
    }

    fn store(&mut self, line: String) {
        self.len += 1;
        if self.lines.len() < CONTENT_BUDGET {
            self.lines.push(line);
        }
    }
}

/// The NEEDS-HELP fields, in the order the prompt asks for them.
const HELP_FIELDS: [&str; 4] = ["tried", "options", "leaning", "cost-if-wrong"];

/// A worker's structured request for help (SPEC §5.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NeedsHelp {
    /// What follows `NEEDS-HELP:` on the first line.
    pub question: String,
    pub tried: String,
    pub options: String,
    pub leaning: String,
    pub cost_if_wrong: String,
}

/// How a reply relates to the NEEDS-HELP contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HelpRequest {
    /// The first line does not start with `NEEDS-HELP:`.
    NotAsked,
    /// A complete request: the run goes to `needs-help`.
    Asked(NeedsHelp),
    /// `NEEDS-HELP:` without all four fields: treated as a reply without a footer.
    Incomplete { missing: Vec<&'static str> },
}

#[derive(Debug, Default, Clone)]
struct HelpBuf {
    asked: bool,
    question: String,
    fields: [Option<Vec<String>>; 4],
    current: Option<usize>,
}

impl HelpBuf {
    fn push(&mut self, line: &str, is_heading: bool) {
        if is_heading {
            self.current = None;
            return;
        }
        let trimmed = line.trim();
        let unbulleted = trimmed
            .strip_prefix("- ")
            .or_else(|| trimmed.strip_prefix("* "))
            .unwrap_or(trimmed);
        if let Some((index, value)) = help_field(unbulleted) {
            self.fields[index] = Some(vec![value.trim().to_string()]);
            self.current = Some(index);
        } else if let Some(index) = self.current
            && let Some(lines) = self.fields[index].as_mut()
            && lines.len() < MAX_FIELD_LINES
        {
            lines.push(line.trim_end().to_string());
        }
    }

    fn finish(self) -> HelpRequest {
        if !self.asked {
            return HelpRequest::NotAsked;
        }
        let missing: Vec<&'static str> = HELP_FIELDS
            .iter()
            .zip(&self.fields)
            .filter(|(_, value)| value.as_ref().is_none_or(|v| v.join("").trim().is_empty()))
            .map(|(name, _)| *name)
            .collect();
        if !missing.is_empty() {
            return HelpRequest::Incomplete { missing };
        }
        let [tried, options, leaning, cost_if_wrong] = self
            .fields
            .map(|v| v.unwrap_or_default().join("\n").trim().to_string());
        HelpRequest::Asked(NeedsHelp {
            question: self.question,
            tried,
            options,
            leaning,
            cost_if_wrong,
        })
    }
}

/// Matches `tried:`, `Options:`, `cost-if-wrong:` (also `cost_if_wrong:`, `cost if wrong:`).
fn help_field(line: &str) -> Option<(usize, &str)> {
    let (name, value) = line.split_once(':')?;
    let name: String = name
        .trim()
        .chars()
        .map(|c| {
            if c == '_' || c == ' ' {
                '-'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect();
    HELP_FIELDS
        .iter()
        .position(|f| *f == name)
        .map(|i| (i, value))
}

/// Feeds a reply line by line; `finish` gives the extraction.
#[derive(Debug, Default, Clone)]
pub struct FooterScanner {
    sections: [SectionBuf; 3],
    /// The section being read, and the level of its heading.
    current: Option<(Section, usize)>,
    /// The code fence the reader is inside: headings there are content, not structure.
    fence: Option<(char, usize)>,
    help: HelpBuf,
    /// Lines seen so far, where the last NEEDS-HELP block and the last footer heading
    /// started: the later of the two decides.
    lines: usize,
    help_at: Option<usize>,
    heading_at: Option<usize>,
}

impl FooterScanner {
    pub fn new() -> FooterScanner {
        FooterScanner::default()
    }

    /// Feeds one line of the reply (without its line terminator).
    pub fn push_line(&mut self, line: &str) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        self.lines += 1;
        // A NEEDS-HELP block starts wherever agents put it (after their log lines too),
        // outside code fences; a later one replaces an earlier one.
        let trimmed = line.trim_start();
        if self.fence.is_none()
            && let Some(tag) = trimmed.get(..11)
            && tag.eq_ignore_ascii_case("NEEDS-HELP:")
        {
            self.help = HelpBuf {
                asked: true,
                question: trimmed[11..].trim().to_string(),
                ..HelpBuf::default()
            };
            self.help_at = Some(self.lines);
            self.current = None;
            return;
        }
        let heading = match (self.fence, fence_of(line)) {
            (None, Some(open)) => {
                self.fence = Some(open);
                None
            }
            (Some((c, len)), Some((c2, len2))) => {
                if c == c2 && len2 >= len && line.trim().chars().all(|x| x == c) {
                    self.fence = None;
                }
                None
            }
            (Some(_), None) => None,
            (None, None) => classify_heading_at(line),
        };
        if self.help.asked {
            self.help.push(line, heading.is_some());
        }
        match heading {
            Some((section, level)) => {
                self.heading_at = Some(self.lines);
                self.sections[section.index()].reset();
                self.current = Some((section, level));
            }
            None => {
                // Another heading at the level of the current section's ends it
                // (`## Appendix` after `## Deferred / concerns`); a deeper one, or a
                // `# comment` under a `##` heading, is part of it.
                let ends = self.fence.is_none()
                    && self.current.is_some_and(|(_, level)| {
                        heading_parts(line)
                            .is_some_and(|(l, text)| l == level && text.starts_with(' '))
                    });
                if ends {
                    self.current = None;
                } else if let Some((section, _)) = self.current {
                    self.sections[section.index()].push(line);
                }
            }
        }
    }

    /// Feeds one line given as raw bytes; bytes that are not UTF-8 are replaced.
    pub fn push_bytes(&mut self, line: &[u8]) {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        self.push_line(&String::from_utf8_lossy(line));
    }

    pub fn finish(self) -> Extraction {
        let missing: Vec<Section> = Section::ALL
            .into_iter()
            .filter(|s| !self.sections[s.index()].seen)
            .collect();
        let alloc = allocate(self.sections.each_ref().map(|s| s.len));
        let mut truncated = false;
        let mut texts: [Option<String>; 3] = Default::default();
        for section in Section::ALL {
            let buf = &self.sections[section.index()];
            if !buf.seen {
                continue;
            }
            let budget = alloc[section.index()];
            let mut lines: Vec<&str> = Vec::new();
            if buf.len > budget {
                truncated = true;
                lines.extend(
                    buf.lines
                        .iter()
                        .take(budget.saturating_sub(1))
                        .map(String::as_str),
                );
                lines.push(TRUNCATED_MARKER);
            } else {
                lines.extend(buf.lines.iter().map(String::as_str));
            }
            truncated |= buf.long_line_cut;
            texts[section.index()] = Some(lines.join("\n"));
        }
        let footer_text = missing.is_empty().then(|| {
            Section::ALL
                .iter()
                .map(|s| {
                    let body = texts[s.index()].as_deref().unwrap_or("");
                    if body.is_empty() {
                        s.heading().to_string()
                    } else {
                        format!("{}\n{body}", s.heading())
                    }
                })
                .collect::<Vec<_>>()
                .join("\n\n")
        });
        let [result, how_to_verify, deferred] = texts;
        // A footer that follows the last NEEDS-HELP block beats it.
        let help = match (self.help_at, self.heading_at) {
            (Some(help), Some(heading)) if heading > help && missing.is_empty() => {
                HelpRequest::NotAsked
            }
            _ => self.help.finish(),
        };
        if let HelpRequest::Incomplete { .. } = help {
            // SPEC §5.5: a NEEDS-HELP missing a field is a reply without a footer.
            return Extraction {
                footer_text: None,
                sections: Sections::default(),
                missing: Section::ALL.to_vec(),
                truncated: false,
                help,
            };
        }
        Extraction {
            footer_text,
            sections: Sections {
                result,
                how_to_verify,
                deferred,
            },
            missing,
            truncated,
            help,
        }
    }
}

/// Shares the content budget between the sections: each gets what it needs while that
/// fits, and the long ones split what remains, so a flood in one section never pushes the
/// others out of the footer.
fn allocate(lens: [usize; 3]) -> [usize; 3] {
    let mut order = [0usize, 1, 2];
    order.sort_by_key(|&i| lens[i]);
    let mut remaining = CONTENT_BUDGET;
    let mut alloc = [0usize; 3];
    for (k, &i) in order.iter().enumerate() {
        let share = remaining / (3 - k);
        alloc[i] = lens[i].min(share);
        remaining -= alloc[i];
    }
    alloc
}

/// The three sections' content (heading excluded) as they appear in the rebuilt footer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Sections {
    pub result: Option<String>,
    pub how_to_verify: Option<String>,
    pub deferred: Option<String>,
}

/// What was extracted from a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extraction {
    /// The rebuilt footer; `None` unless all three sections are present.
    pub footer_text: Option<String>,
    pub sections: Sections,
    /// Sections with no heading in the reply, in footer order.
    pub missing: Vec<Section>,
    /// Whether the harness cut anything.
    pub truncated: bool,
    pub help: HelpRequest,
}

impl Extraction {
    /// Whether the reply satisfies the delivery contract.
    pub fn is_complete(&self) -> bool {
        self.missing.is_empty()
    }

    /// One named rejection per missing section.
    pub fn rejections(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let HelpRequest::Incomplete { missing } = &self.help {
            let fields: Vec<String> = missing.iter().map(|f| format!("`{f}:`")).collect();
            out.push(format!(
                "a NEEDS-HELP block must carry all four fields; missing {}",
                fields.join(", ")
            ));
        }
        out.extend(
            self.missing
                .iter()
                .map(|s| format!("missing section `{}`", s.heading())),
        );
        out
    }
}

/// Extracts the footer from a whole reply held in memory.
pub fn extract_footer(text: &str) -> Extraction {
    let mut scanner = FooterScanner::new();
    for line in text.split('\n') {
        scanner.push_line(line);
    }
    scanner.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "thinking...\n\n## Result\nAdded the route.\n\n## How to verify\n```\ncargo test routes\n```\n\n## Deferred / concerns\nNone.\n";

    #[test]
    fn extracts_the_three_sections_and_rebuilds_the_footer() {
        let x = extract_footer(GOOD);
        assert!(x.is_complete());
        assert!(!x.truncated);
        assert_eq!(x.sections.result.as_deref(), Some("Added the route."));
        assert_eq!(
            x.sections.how_to_verify.as_deref(),
            Some("```\ncargo test routes\n```")
        );
        assert_eq!(
            x.footer_text.as_deref(),
            Some(
                "## Result\nAdded the route.\n\n## How to verify\n```\ncargo test routes\n```\n\n## Deferred / concerns\nNone."
            )
        );
        assert_eq!(x.help, HelpRequest::NotAsked);
    }

    #[test]
    fn headings_are_tolerant_of_case_spacing_and_decoration() {
        for (line, want) in [
            ("##Result", Some(Section::Result)),
            ("## RESULT", Some(Section::Result)),
            ("  ###  Results:", Some(Section::Result)),
            ("## HOW TO VERIFY", Some(Section::HowToVerify)),
            ("## how-to-verify", Some(Section::HowToVerify)),
            ("## Deferred/Concerns", Some(Section::Deferred)),
            ("## **Deferred & concerns**", Some(Section::Deferred)),
            ("## Result of the work", None),
            ("Result", None),
            ("####### Result", None),
            ("# comment in a script", None),
        ] {
            assert_eq!(classify_heading(line), want, "{line}");
        }
    }

    #[test]
    fn the_last_occurrence_wins() {
        let text = "Template:\n## Result\n<what you did>\n## How to verify\n<how>\n## Deferred / concerns\n<none>\nWorking...\n## Result\nreal result\n## How to verify\nreal check\n## Deferred / concerns\nreal concerns";
        let x = extract_footer(text);
        assert_eq!(x.sections.result.as_deref(), Some("real result"));
        assert_eq!(x.sections.how_to_verify.as_deref(), Some("real check"));
        assert_eq!(x.sections.deferred.as_deref(), Some("real concerns"));
    }

    #[test]
    fn each_missing_section_is_a_named_rejection() {
        let x = extract_footer("## Result\ndone\n");
        assert_eq!(x.missing, [Section::HowToVerify, Section::Deferred]);
        assert_eq!(x.footer_text, None);
        assert_eq!(
            x.rejections(),
            [
                "missing section `## How to verify`",
                "missing section `## Deferred / concerns`"
            ]
        );
        let x = extract_footer("no footer at all");
        assert_eq!(x.missing.len(), 3);
    }

    #[test]
    fn an_empty_section_is_present() {
        let x = extract_footer("## Result\nok\n## How to verify\nrun it\n## Deferred / concerns\n");
        assert!(x.is_complete());
        assert_eq!(x.sections.deferred.as_deref(), Some(""));
        assert!(x.footer_text.unwrap().ends_with("## Deferred / concerns"));
    }

    #[test]
    fn the_footer_is_capped_at_sixty_lines_without_starving_a_section() {
        let mut text = String::from("## Result\n");
        for i in 0..500 {
            text.push_str(&format!("line {i}\n"));
        }
        text.push_str("## How to verify\ncargo test\n## Deferred / concerns\nnone\n");
        let x = extract_footer(&text);
        assert!(x.truncated);
        let footer = x.footer_text.unwrap();
        assert_eq!(footer.lines().count(), MAX_FOOTER_LINES);
        assert!(footer.contains("## How to verify\ncargo test"));
        assert!(footer.contains("line 0\n"));
        assert!(!footer.contains("line 499"));
        let result = x.sections.result.unwrap();
        assert!(result.ends_with(TRUNCATED_MARKER));
        assert_eq!(result.lines().count(), CONTENT_BUDGET - 2);
    }

    #[test]
    fn three_floods_share_the_budget() {
        let mut text = String::new();
        for s in Section::ALL {
            text.push_str(s.heading());
            text.push('\n');
            for i in 0..100 {
                text.push_str(&format!("{} {i}\n", s.key()));
            }
        }
        let x = extract_footer(&text);
        assert_eq!(x.footer_text.unwrap().lines().count(), MAX_FOOTER_LINES);
    }

    #[test]
    fn trailing_blank_lines_do_not_count_and_long_lines_are_cut() {
        let mut text = String::from("## Result\nok\n");
        text.push_str(&"\n".repeat(1000));
        text.push_str("## How to verify\n");
        text.push_str(&"x".repeat(MAX_LINE_CHARS + 10));
        text.push_str("\n## Deferred / concerns\nnone");
        let x = extract_footer(&text);
        assert_eq!(x.sections.result.as_deref(), Some("ok"));
        assert!(x.truncated);
        assert!(
            x.sections
                .how_to_verify
                .unwrap()
                .ends_with(TRUNCATED_MARKER)
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_never_crash() {
        let mut scanner = FooterScanner::new();
        for line in [
            &b"## Result\xff\xfe"[..],
            b"ok \xc3\x28",
            b"## How to verify",
            b"\x80",
            b"## Deferred / concerns",
            b"-",
        ] {
            scanner.push_bytes(line);
        }
        let x = scanner.finish();
        assert!(x.is_complete());
        assert!(x.sections.result.unwrap().starts_with("ok "));
    }

    #[test]
    fn crlf_replies_are_read() {
        let x = extract_footer(&GOOD.replace('\n', "\r\n"));
        assert!(x.is_complete());
        assert_eq!(x.sections.result.as_deref(), Some("Added the route."));
    }

    #[test]
    fn a_following_heading_of_the_same_level_ends_a_section() {
        let x = extract_footer(
            "## Result\nok\n### Details\nmore\n## How to verify\nrun\n# not a heading, a comment\nmake\n## Deferred / concerns\nnone\n## Appendix\nthe whole log\n",
        );
        assert_eq!(x.sections.result.as_deref(), Some("ok\n### Details\nmore"));
        assert_eq!(
            x.sections.how_to_verify.as_deref(),
            Some("run\n# not a heading, a comment\nmake")
        );
        assert_eq!(x.sections.deferred.as_deref(), Some("none"));
    }

    #[test]
    fn headings_inside_code_fences_are_content() {
        let text = "Quoting the template:\n```\n## Result\n## How to verify\n## Deferred / concerns\n```\n";
        assert_eq!(extract_footer(text).missing.len(), 3);
        let text = "## Result\nok\n## How to verify\n~~~sh\n# Result\ncargo test\n~~~\n## Deferred / concerns\nnone\n";
        let x = extract_footer(text);
        assert_eq!(x.sections.result.as_deref(), Some("ok"));
        assert_eq!(
            x.sections.how_to_verify.as_deref(),
            Some("~~~sh\n# Result\ncargo test\n~~~")
        );
        // A fence closes only with its own character, at least as long.
        let text = "## Result\n````\n```\n## Result\n````\n## How to verify\nx\n## Deferred / concerns\ny\n";
        let x = extract_footer(text);
        assert_eq!(
            x.sections.result.as_deref(),
            Some("````\n```\n## Result\n````")
        );
    }

    #[test]
    fn needs_help_with_all_fields_is_a_request() {
        let text = "\nNEEDS-HELP: which database?\ntried: sqlite in memory\n  and a temp file\noptions: postgres | sqlite\nleaning: sqlite\n- cost-if-wrong: a migration later\n";
        let x = extract_footer(text);
        assert_eq!(
            x.help,
            HelpRequest::Asked(NeedsHelp {
                question: "which database?".into(),
                tried: "sqlite in memory\n  and a temp file".into(),
                options: "postgres | sqlite".into(),
                leaning: "sqlite".into(),
                cost_if_wrong: "a migration later".into(),
            })
        );
        assert_eq!(x.missing.len(), 3);
    }

    #[test]
    fn needs_help_missing_a_field_is_incomplete_and_names_the_fields() {
        // After a complete footer, a malformed NEEDS-HELP still decides: the reply is
        // treated as one without a footer (SPEC §5.5).
        let x = extract_footer(
            "## Result\nr\n## How to verify\nv\n## Deferred / concerns\nd\nNEEDS-HELP: stuck\ntried: a\nleaning: b\n",
        );
        assert_eq!(x.missing.len(), 3);
        assert_eq!(x.footer_text, None);
        assert_eq!(
            x.help,
            HelpRequest::Incomplete {
                missing: vec!["options", "cost-if-wrong"]
            }
        );
        assert_eq!(
            x.rejections()[0],
            "a NEEDS-HELP block must carry all four fields; missing `options:`, `cost-if-wrong:`"
        );
        let x =
            extract_footer("needs-help: x\nTried: a\nOptions: b\nLeaning: c\nCost_if_wrong: d\n");
        assert!(matches!(x.help, HelpRequest::Asked(_)));
    }

    #[test]
    fn needs_help_after_log_lines_is_found_and_the_later_of_it_and_a_footer_decides() {
        const HELP: &str =
            "NEEDS-HELP: which db?\ntried: a\noptions: b\nleaning: c\ncost-if-wrong: d\n";
        let logs = "[info] compiling\n[warn] 3 tests skipped\n";
        let x = extract_footer(&format!("{logs}{HELP}"));
        assert!(
            matches!(&x.help, HelpRequest::Asked(h) if h.question == "which db?"),
            "{x:?}"
        );
        // Two blocks: the last decides.
        let x = extract_footer(&format!(
            "{HELP}more logs\n{}",
            HELP.replace("which db?", "which port?")
        ));
        assert!(matches!(&x.help, HelpRequest::Asked(h) if h.question == "which port?"));
        // A footer after it beats it; a NEEDS-HELP after a footer beats the footer.
        let x = extract_footer(&format!("{logs}{HELP}{GOOD}"));
        assert_eq!(x.help, HelpRequest::NotAsked);
        assert!(x.is_complete());
        let x = extract_footer(&format!("{GOOD}{HELP}"));
        assert!(matches!(x.help, HelpRequest::Asked(_)));
        // An incomplete footer after it does not: the question stands.
        let x = extract_footer(&format!("{HELP}## Result\nsee above\n"));
        assert!(matches!(x.help, HelpRequest::Asked(_)), "{x:?}");
        // Inside a code fence it is content.
        let x = extract_footer(&format!("```\n{HELP}```\n"));
        assert_eq!(x.help, HelpRequest::NotAsked);
    }

    #[test]
    fn allocation_fills_short_sections_first() {
        assert_eq!(allocate([1, 2, 3]), [1, 2, 3]);
        assert_eq!(allocate([100, 1, 1]), [CONTENT_BUDGET - 2, 1, 1]);
        let a = allocate([100, 100, 100]);
        assert_eq!(a.iter().sum::<usize>(), CONTENT_BUDGET);
    }
}
