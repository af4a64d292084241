//! What an attempt spent: tokens in and out and dollars, read from the worker's own stream
//! as it arrives, priced only from the lead's configuration, and checked against the
//! run's spend fence. Pure: bytes and numbers in, numbers out.
//!
//! - **codex** (`exec --json`): `turn.completed.usage` is the *thread's* cumulative total,
//!   carried over across resumes: an attempt spent the difference from the thread's total
//!   before it. Its `input_tokens` include the cached ones; its `output_tokens` include
//!   the reasoning ones.
//! - **claude** (`--output-format stream-json`): the last line, `result`, has the
//!   invocation's own `usage` and `total_cost_usd`, taken as reported. Before it, each
//!   `assistant` event carries its message's usage as the message began (input exact,
//!   output not yet known): enough to stop a run whose input alone passes the fence.
//! - **command** workers may write their own usage, the same five fields as JSON, to
//!   `$CREW_USAGE_FILE` (the attempt's total so far; rewritten as it grows).
//!
//! A figure that is not a finite, non-negative number (nor a credible one: more than a
//! million dollars in one report) is no figure: it is left out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::flight::AdapterKind;

/// Tokens and dollars. `input_tokens` count every input token, `cached_input_tokens` the
/// part of them read from a cache; `output_tokens` every output token,
/// `reasoning_tokens` the part of them spent reasoning. `cost_usd` is null when neither
/// the worker reported it nor a price is configured for the model ("unpriced").
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub cached_input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub reasoning_tokens: u64,
    #[serde(default, deserialize_with = "finite_cost")]
    pub cost_usd: Option<f64>,
}

/// A price per million tokens, as the flight config names it.
pub use super::flight::Price;

impl Usage {
    /// Tokens in and out: what `fences.max_tokens` counts.
    pub fn tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// Whether nothing at all was reported.
    pub fn is_empty(&self) -> bool {
        self.tokens() == 0 && self.cost_usd.is_none()
    }

    /// What was spent since `earlier`, a total of the same thread (codex): the tokens'
    /// difference; a cost only when both totals have one.
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            cached_input_tokens: self
                .cached_input_tokens
                .saturating_sub(earlier.cached_input_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
            reasoning_tokens: self
                .reasoning_tokens
                .saturating_sub(earlier.reasoning_tokens),
            cost_usd: self
                .cost_usd
                .zip(earlier.cost_usd)
                .map(|(a, b)| (a - b).max(0.0)),
        }
    }

    /// The two added up. The cost is known when both are (or when one spent nothing):
    /// a sum with an unpriced part is no price.
    pub fn plus(&self, other: &Usage) -> Usage {
        let cost = match (self.cost_usd, other.cost_usd) {
            (Some(a), Some(b)) => Some(a + b),
            (Some(a), None) if other.tokens() == 0 => Some(a),
            (None, Some(b)) if self.tokens() == 0 => Some(b),
            _ => None,
        };
        Usage {
            input_tokens: self.input_tokens.saturating_add(other.input_tokens),
            cached_input_tokens: self
                .cached_input_tokens
                .saturating_add(other.cached_input_tokens),
            output_tokens: self.output_tokens.saturating_add(other.output_tokens),
            reasoning_tokens: self.reasoning_tokens.saturating_add(other.reasoning_tokens),
            cost_usd: cost,
        }
    }

    /// The usage with its cost: as reported when it was, else computed from `price` when
    /// there is one, else unknown.
    pub fn priced(mut self, price: Option<&Price>) -> Usage {
        if self.cost_usd.is_none()
            && let Some(p) = price
        {
            let fresh = self.input_tokens.saturating_sub(self.cached_input_tokens) as f64;
            let cost = fresh * p.input
                + self.cached_input_tokens as f64 * p.cached_input
                + self.output_tokens as f64 * p.output;
            self.cost_usd = Some(cost / 1_000_000.0);
        }
        self
    }

    /// A command worker's usage file, as it wrote it (nothing when it is not the shape).
    pub fn from_file(text: &str) -> Option<Usage> {
        serde_json::from_str(text).ok()
    }
}

/// What a run spent: each attempt that reported anything, and the sum.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunUsage {
    pub attempts: Vec<AttemptUsage>,
    pub total: Usage,
    /// The last cumulative total a codex thread reported, and its session: a later
    /// attempt on that session spent what its total adds to this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<ThreadTotal>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AttemptUsage {
    pub attempt: u32,
    #[serde(flatten)]
    pub usage: Usage,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ThreadTotal {
    pub session: String,
    #[serde(flatten)]
    pub usage: Usage,
}

impl RunUsage {
    /// Records what attempt `attempt` spent (again, replacing what it had said).
    pub fn set(&mut self, attempt: u32, usage: Usage) {
        self.attempts.retain(|a| a.attempt != attempt);
        self.attempts.push(AttemptUsage { attempt, usage });
        self.attempts.sort_by_key(|a| a.attempt);
        self.total = self
            .attempts
            .iter()
            .fold(Usage::default(), |sum, a| sum.plus(&a.usage));
    }

    /// The thread total a resume of `session` is measured from (none: a fresh thread).
    pub fn thread_before(&self, session: Option<&str>) -> Usage {
        match (&self.thread, session) {
            (Some(t), Some(s)) if t.session == s => t.usage,
            _ => Usage::default(),
        }
    }
}

fn finite_cost<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let value = Option::<Value>::deserialize(d)?;
    Ok(value.as_ref().and_then(cost))
}

/// The most one report may say was spent: a figure past it is no figure.
const MAX_COST_USD: f64 = 1_000_000.0;

/// A dollar figure as a stream gives it: a finite, non-negative number no larger than
/// [`MAX_COST_USD`], else none.
fn cost(value: &Value) -> Option<f64> {
    value
        .as_f64()
        .filter(|c| c.is_finite() && (0.0..=MAX_COST_USD).contains(c))
}

fn n(value: &Value) -> u64 {
    value.as_u64().unwrap_or(0)
}

/// What a stream has said so far about what its invocation spent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reading {
    /// The thread's cumulative total (codex): subtract the total before the attempt.
    ThreadTotal(Usage),
    /// The invocation's own spend (claude's final `result`), final.
    Invocation(Usage),
    /// A lower bound of the invocation's spend, before its final figure (claude's
    /// messages as they begin).
    AtLeast(Usage),
}

impl Reading {
    /// The attempt's spend, given the thread's total before it.
    pub fn attempt(&self, before: &Usage) -> Usage {
        match self {
            Reading::ThreadTotal(total) => total.since(before),
            Reading::Invocation(usage) | Reading::AtLeast(usage) => *usage,
        }
    }

    /// Whether the stream has said its last word: codex's turn is over, claude's
    /// `result` is in. The worker is ending by itself then; what it did is judged, and
    /// the fence holds back only the attempts after it.
    pub fn is_final(&self) -> bool {
        !matches!(self, Reading::AtLeast(_))
    }
}

/// The longest stream line the meter reads; a longer one is skipped (a supervisor stays
/// small whatever a worker prints).
const MAX_LINE: usize = 1 << 20;
/// The most messages whose usage is remembered while a claude stream runs.
const MAX_MESSAGES: usize = 4096;

/// Reads usage off a worker's stdout as it arrives, a buffer at a time.
#[derive(Debug, Clone)]
pub struct Meter {
    adapter: AdapterKind,
    partial: Vec<u8>,
    overlong: bool,
    thread_total: Option<Usage>,
    invocation: Option<Usage>,
    messages: BTreeMap<String, Usage>,
}

impl Meter {
    pub fn new(adapter: AdapterKind) -> Meter {
        Meter {
            adapter,
            partial: Vec::new(),
            overlong: false,
            thread_total: None,
            invocation: None,
            messages: BTreeMap::new(),
        }
    }

    /// Takes in the next bytes of the stream.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        if !matches!(self.adapter, AdapterKind::Codex | AdapterKind::Claude) {
            return;
        }
        while let Some(end) = bytes.iter().position(|b| *b == b'\n') {
            if !self.overlong {
                self.partial.extend_from_slice(&bytes[..end]);
                let line = std::mem::take(&mut self.partial);
                self.line(&line);
            }
            self.partial.clear();
            self.overlong = false;
            bytes = &bytes[end + 1..];
        }
        if !self.overlong {
            self.partial.extend_from_slice(bytes);
            if self.partial.len() > MAX_LINE {
                self.partial = Vec::new();
                self.overlong = true;
            }
        }
    }

    /// Takes in a whole stream (an attempt's kept output).
    pub fn of(adapter: AdapterKind, stdout: &[u8]) -> Meter {
        let mut meter = Meter::new(adapter);
        meter.feed(stdout);
        meter.feed(b"\n");
        meter
    }

    fn line(&mut self, line: &[u8]) {
        let first = line.iter().position(|b| !b.is_ascii_whitespace());
        if first.is_none_or(|i| line[i] != b'{') {
            return;
        }
        let Ok(event) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        match (self.adapter, event["type"].as_str()) {
            (AdapterKind::Codex, Some("turn.completed")) => {
                let u = &event["usage"];
                self.thread_total = Some(Usage {
                    input_tokens: n(&u["input_tokens"]),
                    cached_input_tokens: n(&u["cached_input_tokens"]),
                    output_tokens: n(&u["output_tokens"]),
                    reasoning_tokens: n(&u["reasoning_output_tokens"]),
                    cost_usd: None,
                });
            }
            (AdapterKind::Claude, Some("result")) => {
                let mut usage = claude_usage(&event["usage"]);
                usage.cost_usd = cost(&event["total_cost_usd"]);
                self.invocation = Some(usage);
            }
            (AdapterKind::Claude, Some("assistant")) => {
                let message = &event["message"];
                let Some(id) = message["id"].as_str() else {
                    return;
                };
                if self.messages.len() >= MAX_MESSAGES && !self.messages.contains_key(id) {
                    return;
                }
                let seen = claude_usage(&message["usage"]);
                let entry = self.messages.entry(id.to_string()).or_default();
                entry.input_tokens = entry.input_tokens.max(seen.input_tokens);
                entry.cached_input_tokens = entry.cached_input_tokens.max(seen.cached_input_tokens);
                entry.output_tokens = entry.output_tokens.max(seen.output_tokens);
            }
            _ => {}
        }
    }

    /// What the stream has said so far, if anything.
    pub fn reading(&self) -> Option<Reading> {
        if let Some(total) = self.thread_total {
            return Some(Reading::ThreadTotal(total));
        }
        if let Some(usage) = self.invocation {
            return Some(Reading::Invocation(usage));
        }
        if self.messages.is_empty() {
            return None;
        }
        let sum = self
            .messages
            .values()
            .fold(Usage::default(), |sum, u| sum.plus(u));
        Some(Reading::AtLeast(sum))
    }
}

/// claude's usage object: every input token (fresh, written to the cache, read from it)
/// and the output.
fn claude_usage(u: &Value) -> Usage {
    let read = n(&u["cache_read_input_tokens"]);
    Usage {
        input_tokens: n(&u["input_tokens"])
            .saturating_add(n(&u["cache_creation_input_tokens"]))
            .saturating_add(read),
        cached_input_tokens: read,
        output_tokens: n(&u["output_tokens"]),
        reasoning_tokens: 0,
        cost_usd: None,
    }
}

/// The spend fence of a run: `fences.max_cost_usd`, `fences.max_tokens`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SpendFence {
    pub max_cost_usd: Option<f64>,
    pub max_tokens: Option<u64>,
}

impl SpendFence {
    /// Why `spent` (the run's total so far) is past the fence, if it is: the limit that
    /// was reached, named.
    pub fn breached(&self, spent: &Usage) -> Option<String> {
        if let Some(max) = self.max_tokens
            && spent.tokens() >= max
        {
            return Some(format!(
                "the spend fence was reached: {} tokens of {max} (fences.max_tokens)",
                spent.tokens()
            ));
        }
        if let (Some(max), Some(cost)) = (self.max_cost_usd, spent.cost_usd)
            && cost >= max
        {
            return Some(format!(
                "the spend fence was reached: {} of {} (fences.max_cost_usd)",
                dollars(cost),
                dollars(max)
            ));
        }
        None
    }

    pub fn is_set(&self) -> bool {
        self.max_cost_usd.is_some() || self.max_tokens.is_some()
    }
}

/// Dollars as people read them: `$0.18`, `$0.0042` for less than a cent.
pub fn dollars(usd: f64) -> String {
    if usd != 0.0 && usd.abs() < 0.01 {
        format!("${usd:.4}")
    } else {
        format!("${usd:.2}")
    }
}

/// Tokens as people read them: `950`, `12.8k`.
fn k(tokens: u64) -> String {
    if tokens >= 10_000 {
        format!("{:.1}k", tokens as f64 / 1000.0)
    } else {
        tokens.to_string()
    }
}

/// A spend in one word, for a table: its cost, else its tokens (`12.8k tok`).
pub fn short(usage: &Usage) -> String {
    match usage.cost_usd {
        Some(cost) => dollars(cost),
        None => format!("{} tok", k(usage.tokens())),
    }
}

/// A usage for people: `58.8k in (12.0k cached), 95 out, $0.18`, or `unpriced`.
pub fn shown(usage: &Usage) -> String {
    let cached = if usage.cached_input_tokens > 0 {
        format!(" ({} cached)", k(usage.cached_input_tokens))
    } else {
        String::new()
    };
    let cost = usage.cost_usd.map_or("unpriced".to_string(), dollars);
    format!(
        "{} in{cached}, {} out, {cost}",
        k(usage.input_tokens),
        k(usage.output_tokens)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("git-fixtures/streams")
            .join(name);
        std::fs::read(path).unwrap()
    }

    #[test]
    fn codex_reports_the_threads_total_and_an_attempt_spent_the_difference() {
        let exec = Meter::of(AdapterKind::Codex, &stream("codex-exec.jsonl"));
        let Some(Reading::ThreadTotal(first)) = exec.reading() else {
            panic!("{:?}", exec.reading());
        };
        assert_eq!((first.input_tokens, first.output_tokens), (19820, 125));
        let resumed = Meter::of(AdapterKind::Codex, &stream("codex-resume.jsonl"));
        let spent = resumed.reading().unwrap().attempt(&first);
        assert_eq!((spent.input_tokens, spent.output_tokens), (10087, 81));
        assert_eq!(spent.cost_usd, None);
    }

    #[test]
    fn claude_reports_its_invocation_and_its_cost_as_it_is() {
        let meter = Meter::of(AdapterKind::Claude, &stream("claude-print.jsonl"));
        let Some(Reading::Invocation(usage)) = meter.reading() else {
            panic!("{:?}", meter.reading());
        };
        assert_eq!((usage.input_tokens, usage.output_tokens), (58817, 95));
        assert_eq!(usage.cost_usd, Some(0.17787599999999998));
        // A price never overrides a reported cost.
        let price = Price {
            input: 100.0,
            cached_input: 1.0,
            output: 100.0,
        };
        assert_eq!(
            usage.priced(Some(&price)).cost_usd,
            Some(0.17787599999999998)
        );
    }

    #[test]
    fn a_stream_is_final_once_its_turn_or_its_invocation_is_over() {
        let codex = stream("codex-exec.jsonl");
        let mut meter = Meter::new(AdapterKind::Codex);
        meter.feed(&codex[..codex.len() / 2]);
        assert_eq!(meter.reading(), None);
        meter.feed(&codex[codex.len() / 2..]);
        assert!(meter.reading().unwrap().is_final());
        let claude = stream("claude-print.jsonl");
        let cut = claude
            .windows(16)
            .position(|w| w == b"{\"type\":\"result\"")
            .unwrap();
        let mut meter = Meter::new(AdapterKind::Claude);
        meter.feed(&claude[..cut]);
        assert!(!meter.reading().unwrap().is_final());
        meter.feed(&claude[cut..]);
        meter.feed(b"\n");
        assert!(meter.reading().unwrap().is_final());
    }

    #[test]
    fn before_its_result_a_claude_stream_is_a_lower_bound_counted_once_per_message() {
        let text = stream("claude-print.jsonl");
        let cut = text
            .windows(16)
            .position(|w| w == b"{\"type\":\"result\"")
            .unwrap();
        let mut meter = Meter::new(AdapterKind::Claude);
        // Fed in pieces that split lines anywhere.
        for piece in text[..cut].chunks(7) {
            meter.feed(piece);
        }
        let Some(Reading::AtLeast(usage)) = meter.reading() else {
            panic!("{:?}", meter.reading());
        };
        // Two messages of 29343 and 29474 input tokens, each seen in several events.
        assert_eq!(usage.input_tokens, 29343 + 29474);
    }

    #[test]
    fn a_price_computes_the_cost_of_tokens_only_and_nothing_else_invents_one() {
        let usage = Usage {
            input_tokens: 2_000_000,
            cached_input_tokens: 1_000_000,
            output_tokens: 100_000,
            reasoning_tokens: 50_000,
            cost_usd: None,
        };
        let price = Price {
            input: 1.25,
            cached_input: 0.125,
            output: 10.0,
        };
        // 1M fresh × 1.25 + 1M cached × 0.125 + 0.1M out × 10 = 2.375.
        let cost = usage.priced(Some(&price)).cost_usd.unwrap();
        assert!((cost - 2.375).abs() < 1e-9, "{cost}");
        assert_eq!(usage.priced(None).cost_usd, None);
        assert_eq!(short(&usage.priced(None)), "2100.0k tok");
        assert_eq!(short(&usage.priced(Some(&price))), "$2.38");
        assert_eq!(
            shown(&usage.priced(None)),
            "2000.0k in (1000.0k cached), 100.0k out, unpriced"
        );
    }

    #[test]
    fn a_usage_file_that_lies_about_its_cost_has_none() {
        let u = Usage::from_file(r#"{"input_tokens": 10, "output_tokens": 5, "cost_usd": -1}"#)
            .unwrap();
        assert_eq!((u.tokens(), u.cost_usd), (15, None));
        let u = Usage::from_file(
            r#"{"input_tokens": 18446744073709551615, "output_tokens": 9, "cost_usd": 1e308}"#,
        )
        .unwrap();
        assert_eq!((u.tokens(), u.cost_usd), (u64::MAX, None));
        // JSON has no NaN: a worker that writes one wrote no usage at all.
        assert_eq!(
            Usage::from_file(r#"{"input_tokens": 1, "cost_usd": NaN}"#),
            None
        );
        assert_eq!(Usage::from_file("not json"), None);
        let u = Usage::from_file(r#"{"output_tokens": 7, "cost_usd": 0.5}"#).unwrap();
        assert_eq!((u.tokens(), u.cost_usd), (7, Some(0.5)));
    }

    #[test]
    fn sums_lose_their_price_when_a_part_is_unpriced() {
        let priced = Usage {
            input_tokens: 10,
            cost_usd: Some(0.5),
            ..Usage::default()
        };
        let unpriced = Usage {
            input_tokens: 10,
            ..Usage::default()
        };
        assert_eq!(priced.plus(&priced).cost_usd, Some(1.0));
        assert_eq!(priced.plus(&unpriced).cost_usd, None);
        assert_eq!(priced.plus(&Usage::default()).cost_usd, Some(0.5));
    }

    #[test]
    fn the_spend_fence_names_the_limit_reached() {
        let fence = SpendFence {
            max_cost_usd: Some(1.0),
            max_tokens: Some(1000),
        };
        let mut spent = Usage {
            input_tokens: 900,
            output_tokens: 99,
            cost_usd: Some(0.99),
            ..Usage::default()
        };
        assert_eq!(fence.breached(&spent), None);
        spent.output_tokens = 100;
        assert!(
            fence
                .breached(&spent)
                .unwrap()
                .contains("1000 tokens of 1000")
        );
        spent.output_tokens = 0;
        spent.cost_usd = Some(1.5);
        assert!(fence.breached(&spent).unwrap().contains("$1.50 of $1.00"));
        // An unpriced run is never past a dollar fence: only its tokens count.
        spent.cost_usd = None;
        assert_eq!(fence.breached(&spent), None);
    }

    #[test]
    fn a_run_adds_up_its_attempts_and_a_repeated_attempt_replaces_itself() {
        let mut run = RunUsage::default();
        let one = Usage {
            input_tokens: 100,
            output_tokens: 10,
            cost_usd: Some(0.25),
            ..Usage::default()
        };
        run.set(1, one);
        run.set(2, one);
        run.set(
            2,
            Usage {
                output_tokens: 20,
                ..one
            },
        );
        assert_eq!(run.attempts.len(), 2);
        assert_eq!((run.total.tokens(), run.total.cost_usd), (230, Some(0.5)));
        run.thread = Some(ThreadTotal {
            session: "T1".into(),
            usage: one,
        });
        assert_eq!(run.thread_before(Some("T1")), one);
        assert_eq!(run.thread_before(Some("T2")), Usage::default());
        assert_eq!(run.thread_before(None), Usage::default());
        let json = serde_json::to_value(&run).unwrap();
        assert_eq!(json["attempts"][1]["output_tokens"], 20);
        assert_eq!(json["total"]["cost_usd"], 0.5);
    }

    #[test]
    fn an_overlong_line_is_skipped_and_the_meter_stays_small() {
        let mut meter = Meter::new(AdapterKind::Codex);
        meter.feed(&vec![b'x'; MAX_LINE + 10]);
        meter.feed(b"still the same line\n");
        meter.feed(br#"{"type":"turn.completed","usage":{"input_tokens":5,"output_tokens":1}}"#);
        meter.feed(b"\n");
        assert!(meter.partial.capacity() <= MAX_LINE + 8192);
        assert_eq!(
            meter.reading(),
            Some(Reading::ThreadTotal(Usage {
                input_tokens: 5,
                output_tokens: 1,
                ..Usage::default()
            }))
        );
    }
}
