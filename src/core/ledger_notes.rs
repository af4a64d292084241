//! How one task's ledger lies in notes, so that appending a row and answering should-stop
//! cost the same at 10 rows and at 100,000.
//!
//! - The **head** note (on the blob of `crew-task:<task>`) holds the latest rows, JSON
//!   Lines as ever, and — once the task has rolled — one *carry* line that sums up the
//!   older rows: `{"at":…,"carry":{"writers":{…},"segments":{…}}}`.
//! - When the head passes [`Limits::head_max`] bytes, its oldest rows move, verbatim, into
//!   **segment** notes on the blobs of `crew-task:<task>#<n>` (n = 1, 2, …; a segment takes
//!   rows until it holds [`Limits::segment_max`] bytes), and the carry takes in what
//!   should-stop needs of them: per failure key, the failures and the latest tier.
//! - Each row names the clone that appended it (`"writer"`, right after `"at"`; absent on
//!   rows written before segments existed). A writer stamps its rows strictly in order,
//!   and a clone always knows a prefix of each writer's rows (sync brings whole notes
//!   histories), so what a roll moved is, per writer, every row up to a stamp: the carry
//!   keeps, per writer, that stamp (`through`) and the sums of those rows. Two carries
//!   meeting in a line union (sync, or `git notes merge -s cat_sort_uniq`) merge by
//!   taking, per writer, the one that reaches further — it sums a superset — so a union
//!   never counts a row twice or loses one, and a row a union brought back into the head
//!   that a carry already covers is skipped.
//!
//! A note written before segments existed is a head without a carry: read as it is, and
//! rolled by the first append that finds it past the limit.

use std::collections::{BTreeMap, HashSet};

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::ledger::{Row, Tally};
use super::stamp;

/// When a head rolls and how much a segment takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// A head this large (bytes) after an append rolls.
    pub head_max: usize,
    /// What a roll leaves in the head: the newest rows that fit in this many bytes.
    pub head_keep: usize,
    /// A segment takes rows until it holds this many bytes; then the next one starts.
    pub segment_max: usize,
}

/// The limits git-crew writes with: a head of at most 64 KiB (about 200 rows), of which
/// 16 KiB stay after a roll; segments of 1 MiB (about 3,000 rows).
pub const LIMITS: Limits = Limits {
    head_max: 64 << 10,
    head_keep: 16 << 10,
    segment_max: 1 << 20,
};

/// The key a task's head note hangs on (its blob's content).
pub fn head_key(task: &str) -> String {
    format!("crew-task:{task}")
}

/// The key segment `n` of a task hangs on.
pub fn segment_key(task: &str, n: u32) -> String {
    format!("crew-task:{task}#{n}")
}

/// What one writer's rolled rows add up to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Covered {
    /// The stamp of the writer's latest rolled row: every row of this writer up to it is
    /// in a segment.
    pub through: String,
    /// How many of its rows rolled.
    pub rows: u64,
    /// Failures per failure key among them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failures: BTreeMap<String, usize>,
    /// Per failure key, the stamp and tier of the latest of them that names a tier.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tiers: BTreeMap<String, (String, String)>,
}

/// What a head carries of its task's rolled rows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Carry {
    /// Per writer (`""` for rows that name none), what rolled.
    #[serde(default)]
    pub writers: BTreeMap<String, Covered>,
    /// The segments, each with the stamp of the latest row it holds.
    #[serde(default)]
    pub segments: BTreeMap<u32, String>,
}

impl Carry {
    /// Takes in another carry: per writer the one that reaches further, per segment the
    /// later stamp.
    fn merge(&mut self, other: Carry) {
        for (writer, theirs) in other.writers {
            match self.writers.get(&writer) {
                Some(mine) if stamp::cmp(&mine.through, &theirs.through).is_ge() => {}
                _ => {
                    self.writers.insert(writer, theirs);
                }
            }
        }
        for (n, last) in other.segments {
            match self.segments.get(&n) {
                Some(mine) if stamp::cmp(mine, &last).is_ge() => {}
                _ => {
                    self.segments.insert(n, last);
                }
            }
        }
    }

    /// Whether a row (by its writer and stamp) is one of the rolled rows.
    fn covers(&self, writer: &str, at: Option<Timestamp>) -> bool {
        match (at, self.writers.get(writer)) {
            (Some(at), Some(covered)) => stamp::parse(&covered.through).is_some_and(|t| at <= t),
            _ => false,
        }
    }

    /// What the rolled rows tell the two-failure rule.
    fn tally(&self) -> Tally {
        let mut tally = Tally::default();
        for covered in self.writers.values() {
            for (key, n) in &covered.failures {
                *tally.failures.entry(key.clone()).or_default() += n;
            }
            for (key, (at, tier)) in &covered.tiers {
                tally.note_tier(key, at, tier);
            }
        }
        tally
    }

    /// The segments that may hold a row stamped at or after `since`.
    pub fn segments_since(&self, since: Timestamp) -> Vec<u32> {
        self.segments
            .iter()
            .filter(|(_, last)| stamp::parse(last).is_none_or(|t| t >= since))
            .map(|(n, _)| *n)
            .collect()
    }
}

const HEAD: &str = "{\"at\":\"";

/// A line's `at`, as written.
fn at_text(line: &str) -> Option<&str> {
    let rest = line.strip_prefix(HEAD)?;
    rest.find('"').map(|end| &rest[..end])
}

/// What follows a line's `at` value (from its closing quote on).
fn after_at(line: &str) -> Option<&str> {
    let rest = line.strip_prefix(HEAD)?;
    rest.find('"').map(|end| &rest[end..])
}

/// Whether a line is a carry line.
pub fn is_carry(line: &str) -> bool {
    after_at(line).is_some_and(|rest| rest.starts_with("\",\"carry\":"))
}

/// The writer a row line names (`""` when it names none).
pub fn writer_of(line: &str) -> &str {
    after_at(line)
        .and_then(|rest| rest.strip_prefix("\",\"writer\":\""))
        .and_then(|rest| rest.find('"').map(|end| &rest[..end]))
        .unwrap_or("")
}

/// A row line (`{"at":…,…}`) with `"writer":"<writer>"` put right after its `at`.
pub fn with_writer(line: &str, writer: &str) -> String {
    match after_at(line) {
        Some(rest) if !rest.starts_with("\",\"writer\":") => {
            let head = &line[..line.len() - rest.len()];
            format!("{head}\",\"writer\":\"{writer}\"{}", &rest[1..])
        }
        _ => line.to_string(),
    }
}

/// A head note, read: its carry lines merged, and its other lines (each once, in order).
pub struct Head<'a> {
    pub carry: Carry,
    /// The latest stamp any carry line bears.
    carry_at: Option<Timestamp>,
    lines: Vec<&'a str>,
}

impl<'a> Head<'a> {
    pub fn parse(text: &'a str) -> Head<'a> {
        let mut carry = Carry::default();
        let mut carry_at = None;
        let mut lines = Vec::new();
        let mut seen = HashSet::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            if is_carry(line) {
                carry_at = carry_at.max(at_text(line).and_then(stamp::parse));
                if let Ok(line) = serde_json::from_str::<CarryLine>(line) {
                    carry.merge(line.carry);
                }
            } else if seen.insert(line) {
                lines.push(line);
            }
        }
        Head {
            carry,
            carry_at,
            lines,
        }
    }

    /// The rows no carry covers: those still only here.
    pub fn live(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.lines.iter().copied().filter(|line| {
            !self
                .carry
                .covers(writer_of(line), at_text(line).and_then(stamp::parse))
        })
    }
}

#[derive(Serialize, Deserialize)]
struct CarryLine {
    at: String,
    carry: Carry,
}

/// Whether a head this long must roll.
pub fn needs_roll(head: &str, limits: Limits) -> bool {
    head.len() >= limits.head_max
}

/// What should-stop needs of `task`, from its head note alone.
pub fn tally(head: &str, task: &str) -> Tally {
    let head = Head::parse(head);
    let mut tally = head.carry.tally();
    for line in head.live() {
        if let Ok(row) = serde_json::from_str::<Row>(line)
            && row.task == task
        {
            tally.add(&row);
        }
    }
    tally
}

/// Every row of a task's notes (its segments and its head), each once (a row is the line
/// it was written as: a union may leave it in two notes), oldest first.
pub fn rows_of<'a>(notes: impl IntoIterator<Item = &'a str>) -> Vec<Row> {
    let mut seen = HashSet::new();
    let mut rows: Vec<Row> = notes
        .into_iter()
        .flat_map(str::lines)
        .filter(|line| !line.trim().is_empty() && !is_carry(line) && seen.insert(*line))
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    // By time (stamps of either precision, each read once); stable, so rows of one instant
    // keep the order they were appended in.
    rows.sort_by_cached_key(|row| stamp::parse(&row.at));
    rows
}

/// A head after a roll, and the segments to write (whole texts).
#[derive(Debug, Clone, PartialEq)]
pub struct Rolled {
    pub head: String,
    pub segments: Vec<(u32, String)>,
}

/// The segment a roll adds to first (it then starts new ones).
pub fn last_segment(head: &str) -> Option<u32> {
    Head::parse(head).carry.segments.keys().max().copied()
}

/// Rolls a head: rows its carry already covers leave it; of the others, the newest that
/// fit in `head_keep` stay and the rest go, oldest first, into segment [`last_segment`]
/// (whose text is `last`) while it has room, then into new ones; the carry takes them in.
pub fn roll(head: &str, task: &str, last: Option<&str>, limits: Limits) -> Rolled {
    let parsed = Head::parse(head);
    let mut carry = parsed.carry.clone();
    let mut carry_at = parsed.carry_at;
    let mut live: Vec<(Option<Timestamp>, &str)> = parsed
        .live()
        .map(|line| (at_text(line).and_then(stamp::parse), line))
        .collect();
    live.sort_by_key(|(at, _)| *at);
    // The newest rows that fit stay; rows of the same instant as the last one to go, go.
    let mut split = live.len();
    let mut kept = 0;
    while split > 0 && kept + live[split - 1].1.len() < limits.head_keep {
        kept += live[split - 1].1.len() + 1;
        split -= 1;
    }
    if split > 0 {
        let cutoff = live[split - 1].0;
        while split < live.len() && live[split].0 <= cutoff {
            split += 1;
        }
    }
    let (going, staying) = live.split_at(split);

    let mut n = carry.segments.keys().max().copied().unwrap_or(0);
    let mut text = match (n, last) {
        (0, _) | (_, None) => String::new(),
        (_, Some(last)) => {
            let mut text = last.to_string();
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text
        }
    };
    let mut segments = Vec::new();
    let mut touched = false;
    for (at, line) in going {
        if n == 0 || (!text.is_empty() && text.len() + line.len() + 1 > limits.segment_max) {
            if touched {
                segments.push((n, std::mem::take(&mut text)));
            }
            text.clear();
            n += 1;
        }
        touched = true;
        carry.segments.entry(n).or_default();
        text.push_str(line);
        text.push('\n');
        if let Some(at) = at {
            let writer = writer_of(line);
            let covered = carry.writers.entry(writer.to_string()).or_default();
            if stamp::parse(&covered.through).is_none_or(|t| t < *at) {
                covered.through = at_text(line).unwrap_or_default().to_string();
            }
            covered.rows += 1;
            if let Ok(row) = serde_json::from_str::<Row>(line)
                && row.task == task
            {
                let key = row.failure_key();
                if row.is_failure() {
                    *covered.failures.entry(key.clone()).or_default() += 1;
                }
                if let Some(tier) = &row.tier {
                    let newer = covered
                        .tiers
                        .get(&key)
                        .is_none_or(|(seen, _)| stamp::cmp(seen, &row.at).is_le());
                    if newer {
                        covered.tiers.insert(key, (row.at.clone(), tier.clone()));
                    }
                }
            }
            let last = carry.segments.entry(n).or_default();
            if stamp::parse(last).is_none_or(|t| t < *at) {
                *last = at_text(line).unwrap_or_default().to_string();
            }
            carry_at = carry_at.max(Some(*at));
        }
    }
    if touched {
        segments.push((n, text));
    }
    let at = carry_at.unwrap_or(Timestamp::UNIX_EPOCH);
    let line = CarryLine {
        at: stamp::format(at),
        carry,
    };
    let mut head = serde_json::to_string(&line).unwrap_or_default();
    head.push('\n');
    for (_, line) in staying {
        head.push_str(line);
        head.push('\n');
    }
    Rolled { head, segments }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::record::{Outcome, RunRecord};

    /// A deterministic generator (xorshift), so a failing case can be replayed.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    const SMALL: Limits = Limits {
        head_max: 4096,
        head_keep: 1024,
        segment_max: 8192,
    };

    /// One clone's notes of one task, in memory: its head and its segments.
    #[derive(Clone, Default)]
    struct Replica {
        writer: String,
        head: String,
        segments: BTreeMap<u32, String>,
    }

    impl Replica {
        fn append(&mut self, row: &Row, limits: Limits) {
            let line = with_writer(&serde_json::to_string(row).unwrap(), &self.writer);
            let line = stamp::after(&self.head, &line);
            self.head.push_str(&line);
            self.head.push('\n');
            if needs_roll(&self.head, limits) {
                let last = last_segment(&self.head).and_then(|n| self.segments.get(&n).cloned());
                let rolled = roll(&self.head, "t", last.as_deref(), limits);
                self.head = rolled.head;
                for (n, text) in rolled.segments {
                    self.segments.insert(n, text);
                }
            }
        }

        fn rows(&self) -> Vec<Row> {
            rows_of(
                self.segments
                    .values()
                    .map(String::as_str)
                    .chain([self.head.as_str()]),
            )
        }

        /// What a sync leaves on both sides: every note the line union of both versions.
        fn union(a: &mut Replica, b: &mut Replica) {
            let head = crate::git::notes::union_lines(&a.head, &b.head);
            let mut segments = a.segments.clone();
            for (n, text) in &b.segments {
                let merged = match segments.get(n) {
                    Some(mine) => crate::git::notes::union_lines(mine, text),
                    None => text.clone(),
                };
                segments.insert(*n, merged);
            }
            for c in [a, b] {
                c.head = head.clone();
                c.segments = segments.clone();
            }
        }
    }

    fn row(i: usize, key: &str, outcome: Outcome, tier: Option<&str>) -> Row {
        let mut record = RunRecord::example();
        record.task = "t".into();
        record.model = Some(key.into());
        record.outcome = Some(outcome);
        let mut row = Row::of(&record);
        row.run = format!("r{i}");
        row.at = format!(
            "2026-01-01T{:02}:{:02}:{:02}Z",
            i / 3600 % 24,
            i / 60 % 60,
            i % 60
        );
        row.tier = tier.map(String::from);
        row
    }

    fn random_row(rng: &mut Rng, i: usize) -> Row {
        let key = ["m0", "m1", "m2"][rng.below(3) as usize];
        let outcome = [
            Outcome::Pass,
            Outcome::Fail,
            Outcome::Timeout,
            Outcome::Abandoned,
            Outcome::Error,
            Outcome::ScopeReject,
        ][rng.below(6) as usize];
        let tier = [None, Some("low"), Some("mid"), Some("high")][rng.below(4) as usize];
        row(i, key, outcome, tier)
    }

    #[test]
    fn a_writer_goes_right_after_at_and_is_read_back() {
        let line = r#"{"at":"2026-01-01T00:00:00Z","run":"r"}"#;
        let written = with_writer(line, "w1");
        assert_eq!(
            written,
            r#"{"at":"2026-01-01T00:00:00Z","writer":"w1","run":"r"}"#
        );
        assert_eq!(writer_of(&written), "w1");
        assert_eq!(writer_of(line), "");
        // Once only; restamping keeps it.
        assert_eq!(with_writer(&written, "w2"), written);
        let restamped = stamp::after("{\"at\":\"2026-01-01T00:00:00Z\"}\n", &written);
        assert_eq!(writer_of(&restamped), "w1");
        assert!(!is_carry(&written));
    }

    #[test]
    fn a_rolled_task_reads_back_every_row_in_order_and_its_head_stays_small() {
        let mut clone = Replica {
            writer: "w".into(),
            ..Replica::default()
        };
        let mut rng = Rng(7);
        let rows: Vec<Row> = (0..400).map(|i| random_row(&mut rng, i)).collect();
        for r in &rows {
            clone.append(r, SMALL);
            assert!(clone.head.len() < SMALL.head_max, "{}", clone.head.len());
        }
        assert!(clone.segments.len() > 3, "{}", clone.segments.len());
        for text in clone.segments.values() {
            assert!(text.len() <= SMALL.segment_max, "{}", text.len());
        }
        let back: Vec<String> = clone.rows().iter().map(|r| r.run.clone()).collect();
        let sent: Vec<String> = rows.iter().map(|r| r.run.clone()).collect();
        assert_eq!(back, sent);
        // The head keeps the newest rows, readable as they are.
        let head = Head::parse(&clone.head);
        let newest: Vec<Row> = head
            .live()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(!newest.is_empty());
        assert_eq!(newest.last().unwrap().run, "r399");
        assert_eq!(
            head.carry.writers["w"].rows as usize + newest.len(),
            rows.len()
        );
    }

    #[test]
    fn an_old_note_is_read_as_it_is_and_rolls_on_the_next_append() {
        // Rows as git-crew wrote them before segments: no writer, no carry.
        let rows: Vec<Row> = (0..200)
            .map(|i| {
                row(
                    i,
                    "m0",
                    if i % 5 == 0 {
                        Outcome::Fail
                    } else {
                        Outcome::Pass
                    },
                    Some("low"),
                )
            })
            .collect();
        let mut old = String::new();
        for r in &rows {
            old.push_str(&serde_json::to_string(r).unwrap());
            old.push('\n');
        }
        assert_eq!(tally(&old, "t"), Tally::of_rows(&rows, "t"));
        assert_eq!(rows_of([old.as_str()]), rows);
        let mut clone = Replica {
            writer: "w".into(),
            head: old,
            ..Replica::default()
        };
        let next = row(500, "m0", Outcome::Fail, Some("mid"));
        clone.append(&next, SMALL);
        assert!(clone.head.len() < SMALL.head_max);
        let mut all = rows.clone();
        all.push(next);
        let back = clone.rows();
        assert_eq!(
            back.iter().map(|r| &r.run).collect::<Vec<_>>(),
            all.iter().map(|r| &r.run).collect::<Vec<_>>()
        );
        assert_eq!(tally(&clone.head, "t"), Tally::of_rows(&back, "t"));
        assert_eq!(tally(&clone.head, "t").failures("m0"), 41);
        assert_eq!(tally(&clone.head, "t").tier("m0"), Some("mid"));
    }

    /// Should-stop's facts from the head alone equal those of every row, for any pattern
    /// of outcomes, keys and tiers, on one clone and across clones that append, roll and
    /// union their notes at random.
    #[test]
    fn the_head_tallies_what_every_row_tallies_for_any_failure_pattern() {
        for seed in 1..=30u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let clones = 1 + rng.below(3) as usize;
            let mut all: Vec<Replica> = (0..clones)
                .map(|c| Replica {
                    writer: format!("w{c}"),
                    ..Replica::default()
                })
                .collect();
            let steps = 100 + rng.below(300) as usize;
            for i in 0..steps {
                let c = rng.below(clones as u64) as usize;
                let r = random_row(&mut rng, i);
                all[c].append(&r, SMALL);
                let mut check = vec![c];
                if clones > 1 && rng.below(40) == 0 {
                    let (x, y) = (
                        rng.below(clones as u64) as usize,
                        rng.below(clones as u64) as usize,
                    );
                    if x != y {
                        let (lo, hi) = (x.min(y), x.max(y));
                        let (left, right) = all.split_at_mut(hi);
                        Replica::union(&mut left[lo], &mut right[0]);
                        check = vec![lo, hi];
                    }
                }
                if check.len() == 1 && i % 3 != 0 {
                    continue;
                }
                for clone in check.iter().map(|c| &all[*c]) {
                    let rows = clone.rows();
                    assert_eq!(
                        tally(&clone.head, "t"),
                        Tally::of_rows(&rows, "t"),
                        "seed {seed} step {i} writer {}",
                        clone.writer
                    );
                }
            }
            // Everyone meets: each has every row, once.
            for c in 1..clones {
                let (left, right) = all.split_at_mut(c);
                Replica::union(&mut left[0], &mut right[0]);
            }
            for c in 1..clones {
                let (left, right) = all.split_at_mut(c);
                Replica::union(&mut left[0], &mut right[0]);
            }
            let rows = all[0].rows();
            let mut runs: Vec<&str> = rows.iter().map(|r| r.run.as_str()).collect();
            runs.sort_unstable();
            let before = runs.len();
            runs.dedup();
            assert_eq!(runs.len(), before, "seed {seed}: a row twice");
            assert_eq!(runs.len(), steps, "seed {seed}: a row lost");
            assert_eq!(tally(&all[0].head, "t"), Tally::of_rows(&rows, "t"));
        }
    }

    #[test]
    fn a_union_of_two_rolled_heads_counts_each_failure_once() {
        let mut a = Replica {
            writer: "a".into(),
            ..Replica::default()
        };
        for i in 0..30 {
            a.append(&row(i, "m", Outcome::Fail, Some("low")), SMALL);
        }
        let mut b = a.clone();
        b.writer = "b".into();
        // Both roll the same rows, and more of their own.
        for i in 30..60 {
            a.append(&row(i, "m", Outcome::Fail, None), SMALL);
            b.append(&row(i + 100, "m", Outcome::Pass, None), SMALL);
        }
        assert!(!a.segments.is_empty() && !b.segments.is_empty());
        Replica::union(&mut a, &mut b);
        let t = tally(&a.head, "t");
        assert_eq!(t.failures("m"), 60);
        assert_eq!(t, Tally::of_rows(&a.rows(), "t"));
        assert_eq!(a.rows().len(), 90);
    }

    #[test]
    fn the_segments_since_a_stamp_are_those_with_rows_that_late() {
        let mut clone = Replica {
            writer: "w".into(),
            ..Replica::default()
        };
        for i in 0..300 {
            clone.append(&row(i, "m", Outcome::Pass, None), SMALL);
        }
        let carry = Head::parse(&clone.head).carry;
        let since = stamp::parse("2026-01-01T00:04:00Z").unwrap();
        let some = carry.segments_since(since);
        assert!(
            !some.is_empty() && some.len() < carry.segments.len(),
            "{some:?}"
        );
        // Every row at or after `since` is in those segments or in the head.
        let mut texts: Vec<&str> = some.iter().map(|n| clone.segments[n].as_str()).collect();
        texts.push(&clone.head);
        let found = rows_of(texts)
            .into_iter()
            .filter(|r| stamp::parse(&r.at).unwrap() >= since)
            .count();
        let all = clone
            .rows()
            .into_iter()
            .filter(|r| stamp::parse(&r.at).unwrap() >= since)
            .count();
        assert_eq!(found, all);
        assert!(all > 0);
    }
}
