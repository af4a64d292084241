//! Frames of a long-lived front end, for `bench/forecast.py`: one context (as the `watch`
//! console and an MCP server keep one), `watch`'s frame read FRAMES times; the first frame
//! makes every trial merge of the conflict forecast, the later ones find them cached.
//!
//!     forecast_frames REPO FRAMES
//!
//! Prints one JSON object: the forecasts found, the merges the first frame made, and the
//! milliseconds of the first frame and the median of the later ones.

use std::time::Instant;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, repo, frames] = &args[..] else {
        return Err("usage: forecast_frames REPO FRAMES".into());
    };
    let frames: usize = frames.parse()?;
    if frames < 2 {
        return Err("FRAMES is at least 2".into());
    }
    let ctx = git_crew::ops::Context::new(repo.into());
    let mut ms = Vec::with_capacity(frames);
    let mut first = None;
    for _ in 0..frames {
        let start = Instant::now();
        let frame = git_crew::ops::watch::frame(&ctx)?;
        ms.push(start.elapsed().as_secs_f64() * 1000.0);
        first.get_or_insert((frame.forecasts.all().len(), frame.forecasts.merged));
    }
    let (forecasts, merged) = first.unwrap_or_default();
    let mut later = ms[1..].to_vec();
    later.sort_by(f64::total_cmp);
    println!(
        "{}",
        serde_json::json!({
            "forecasts": forecasts,
            "merged_first": merged,
            "first_ms": (ms[0] * 100.0).round() / 100.0,
            "later_median_ms": (later[later.len() / 2] * 100.0).round() / 100.0,
        })
    );
    Ok(())
}
