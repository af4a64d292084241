//! Makes a worker's own environment (what it is is `core::workenv`'s): its home and the
//! workers' shared caches, made before the fence goes up, and the lead's CLI credentials
//! (and whatever the backend's `seed` names) copied in at every run start. Nothing is
//! ever copied back: the lead's files are only read.

use std::path::{Path, PathBuf};

use crate::run::error::{Context, Result};

use crate::core::flight::Backend as BackendConfig;
use crate::core::record::RunRecord;
use crate::core::workenv::{self, Lead, Places, SeedFilter};

/// The largest lead file seeded into a worker's home.
const SEED_CAP: u64 = 1 << 20;

/// A worker's environment, made.
#[derive(Debug, Clone)]
pub struct WorkerEnv {
    pub places: Places,
    /// The variables that point its tools at its home and caches.
    pub env: Vec<(String, String)>,
    /// What was seeded into its home, for the supervisor's log.
    pub seeded: Vec<PathBuf>,
}

/// The lead's side of a worker's environment: this process's home and variables, with
/// the backend's `env` naming where the lead's CLI state is.
fn lead(config: &BackendConfig) -> Lead {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut vars: Vec<(String, String)> = [
        "RUSTUP_HOME",
        "GIT_CONFIG_GLOBAL",
        "XDG_CONFIG_HOME",
        "MAVEN_OPTS",
        "CODEX_HOME",
        "CLAUDE_CONFIG_DIR",
    ]
    .iter()
    .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
    .collect();
    for key in ["CODEX_HOME", "CLAUDE_CONFIG_DIR"] {
        if let Some(value) = config.env.as_ref().and_then(|e| e.get(key)) {
            vars.push((key.to_string(), value.clone()));
        }
    }
    let existing = Lead::wants(home.as_deref(), &vars)
        .into_iter()
        .filter(|p| p.exists())
        .collect();
    Lead {
        home,
        vars,
        existing,
    }
}

/// Makes the environment of run `record`'s worker (its folder `run_dir`, under
/// git-crew's state folder): the folders, and the seeds copied in.
pub fn prepare(run_dir: &Path, record: &RunRecord, config: &BackendConfig) -> Result<WorkerEnv> {
    let state_dir = run_dir
        .parent()
        .and_then(Path::parent)
        .context("a run's folder lies in git-crew's state folder")?;
    let places = Places {
        home: workenv::home(state_dir, run_dir, record.worker.as_deref()),
        cache: workenv::shared_cache(state_dir),
    };
    for root in [&places.home, &places.cache] {
        std::fs::create_dir_all(root)
            .with_context(|| format!("cannot create {}", root.display()))?;
    }
    // Inside the home and the cache, the worker may have made any entry a symlink: the
    // folders are made without following one.
    for dir in workenv::folders(&places) {
        let (root, rel) = if let Ok(rel) = dir.strip_prefix(&places.home) {
            (&places.home, rel)
        } else {
            (&places.cache, dir.strip_prefix(&places.cache)?)
        };
        crate::sys::fs::mkdirs_beneath(root, rel)?;
    }
    // pnpm 10 and older find the shared store in the worker's own pnpm config; a line
    // the worker (or an earlier run) left there stays. Best effort: without it, pnpm
    // keeps its store in the worker's home.
    let (rc, line) = workenv::pnpm_rc(&places);
    let had = crate::sys::fs::read_capped(
        &places.home.join(&rc),
        SEED_CAP,
        crate::sys::fs::Links::Refuse,
    )
    .map(|b| String::from_utf8_lossy(&b).into_owned())
    .unwrap_or_default();
    if !had.lines().any(|l| l.trim_start().starts_with("store-dir")) {
        let mut text = had;
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&line);
        text.push('\n');
        let _ = crate::sys::fs::write_beneath(&places.home, &rc, text.as_bytes());
    }
    let lead = lead(config);
    let mut seeded = Vec::new();
    let extra = config.seed.clone().unwrap_or_default();
    for seed in workenv::seeds(record.adapter, &lead, &extra) {
        // The lead's own file: a symlink to it is followed, anything but a regular file
        // of at most the cap is left out.
        let Ok(raw) =
            crate::sys::fs::read_capped(&seed.from, SEED_CAP, crate::sys::fs::Links::Follow)
        else {
            continue;
        };
        let bytes = match seed.filter {
            SeedFilter::Whole => raw,
            SeedFilter::ClaudeAccount => {
                let Some(kept) = serde_json::from_slice(&raw)
                    .ok()
                    .and_then(|v| workenv::claude_account(&v))
                else {
                    continue;
                };
                serde_json::to_vec_pretty(&kept)?
            }
        };
        crate::sys::fs::write_beneath(&places.home, &seed.to, &bytes)?;
        seeded.push(seed.to);
    }
    Ok(WorkerEnv {
        env: workenv::variables(&places, &lead),
        places,
        seeded,
    })
}
