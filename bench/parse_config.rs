//! Parsing flight and plan files at scale, for `bench/parse.py`: builds a flight.toml with
//! N `[workers.*]` tables and a plan with N tasks, and times git-crew's own parse and
//! validation of each (in-process: no process start, no repository).
//!
//!     parse_config N
//!
//! Prints one JSON object: tables, flight_s, tasks, plan_s.

use std::time::Instant;

use git_crew::core::{flight, plan};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .ok_or("usage: parse_config N")?
        .parse()?;
    let mut text = String::from("version = 1\ndefault_backend = \"native\"\n");
    for i in 0..n {
        text.push_str(&format!("[workers.w{i}]\nbackend = \"native\"\n"));
    }
    let layer = flight::LayerSource {
        layer: flight::Layer::Project,
        origin: ".crew/flight.toml".into(),
        text,
        has_lines: true,
    };
    let start = Instant::now();
    let resolved = flight::resolve(&[layer], &flight::Invocation::default())
        .map_err(|d| format!("{} problems", d.len()))?;
    let flight_s = start.elapsed().as_secs_f64();
    assert_eq!(resolved.flight.workers.len(), n);

    let mut text = String::from("[plan]\nid = \"big\"\n");
    for i in 0..n {
        text.push_str(&format!(
            "[[tasks]]\nid = \"t{i}\"\nwave = {}\nscope = [\"src/t{i}/**\"]\nprompt = \"x\"\n",
            1 + i % 10
        ));
    }
    let start = Instant::now();
    let parsed = plan::parse("big", ".crew/plans/big.toml", &text)
        .map_err(|d| format!("{} problems", d.len()))?;
    let plan_s = start.elapsed().as_secs_f64();
    assert_eq!(parsed.tasks.len(), n);
    println!(
        "{}",
        serde_json::json!({"tables": n, "flight_s": flight_s, "tasks": n, "plan_s": plan_s})
    );
    // The process ends here: what it parsed is not freed piece by piece.
    std::mem::forget((resolved, parsed));
    Ok(())
}
