//! `git crew footer [FILE]`: the footer relay's primitive.

use std::path::PathBuf;

use clap::Args;
use serde::Serialize;

use super::context::CommandContext;
use super::error::{CrewError, Result};
use super::ui::Report;
use crate::core::footer::{Extraction, HelpRequest, NeedsHelp, Sections};

const FOOTER_EXAMPLES: &str = "Examples:\n  git crew footer reply.md\n  git crew footer < reply.md";

/// `footer`: the rebuilt footer (null unless all three sections are there), each section,
/// the missing ones, whether the harness cut anything, and a complete NEEDS-HELP request
/// (null when the reply is not one) (SPEC §2 `footer`, §5.4-5).
#[derive(Debug, Serialize)]
pub struct FooterOutput<'a> {
    pub footer_text: Option<&'a str>,
    pub sections: &'a Sections,
    pub missing: Vec<&'static str>,
    pub truncated: bool,
    pub needs_help: Option<&'a NeedsHelp>,
}

impl<'a> FooterOutput<'a> {
    fn of(extraction: &'a Extraction) -> FooterOutput<'a> {
        FooterOutput {
            footer_text: extraction.footer_text.as_deref(),
            sections: &extraction.sections,
            missing: extraction.missing.iter().map(|s| s.key()).collect(),
            truncated: extraction.truncated,
            needs_help: match &extraction.help {
                HelpRequest::Asked(help) => Some(help),
                _ => None,
            },
        }
    }
}

/// Extract the footer from a worker's reply.
///
/// Only `## Result`, `## How to verify` and `## Deferred / concerns` cross back to the
/// lead. Headings are matched whatever their case and spacing; when one appears more than
/// once the last occurrence wins; the rebuilt footer is capped at 60 lines. Exit 1 when a
/// section is missing, 5 when the reply is a complete NEEDS-HELP request.
#[derive(Debug, Args)]
#[command(after_help = FOOTER_EXAMPLES)]
pub struct FooterArgs {
    /// The reply to read; standard input when left out.
    pub file: Option<PathBuf>,
}

/// The most of a reply `footer` reads, from a file or from standard input: the cap of a
/// worker's output and manifest (`fences.max_output`'s default).
const REPLY_CAP: u64 = crate::run::output::DEFAULT_CAP;

pub fn run(ctx: &CommandContext, args: FooterArgs) -> Result<Report> {
    let extraction = match &args.file {
        Some(path) => {
            let bytes = super::context::read_given(&ctx.cwd.join(path), REPLY_CAP, "the reply")?;
            crate::ops::footer::scan(&bytes[..], REPLY_CAP)?
        }
        None => crate::ops::footer::scan(std::io::stdin().lock(), REPLY_CAP)?,
    };
    let output = FooterOutput::of(&extraction);
    let mut human = extraction.footer_text.clone().unwrap_or_default();
    let mut report = Report::of(&output, String::new());
    match &extraction.help {
        HelpRequest::Asked(h) => {
            human = format!(
                "NEEDS-HELP: {}\ntried: {}\noptions: {}\nleaning: {}\ncost-if-wrong: {}",
                h.question, h.tried, h.options, h.leaning, h.cost_if_wrong
            );
            report.status = super::ui::Status::Attention;
        }
        HelpRequest::Incomplete { missing } => {
            report.status = super::ui::Status::Failed(
                CrewError::check(
                    "needs-help-incomplete",
                    format!("NEEDS-HELP without {}", missing.join(", ")),
                )
                .hinted("a NEEDS-HELP reply carries tried:, options:, leaning: and cost-if-wrong:"),
            );
        }
        HelpRequest::NotAsked if !extraction.is_complete() => {
            report.status = super::ui::Status::Failed(
                CrewError::check("footer-rejected", "the reply's footer is incomplete")
                    .with_details(extraction.rejections())
                    .hinted(
                        "end the reply with ## Result, ## How to verify and ## Deferred / concerns",
                    ),
            );
        }
        HelpRequest::NotAsked => {}
    }
    report.human = human;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_missing_sections_prints_null_for_the_footer_and_for_needs_help() {
        let extraction = crate::ops::footer::scan("## Result\nDone.\n".as_bytes(), 100).unwrap();
        assert_eq!(
            serde_json::to_string(&FooterOutput::of(&extraction)).unwrap(),
            r#"{"footer_text":null,"sections":{"result":"Done.","how_to_verify":null,"deferred":null},"missing":["how_to_verify","deferred"],"truncated":false,"needs_help":null}"#
        );
    }
}
