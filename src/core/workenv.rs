//! A worker's own environment, decided as values: where its home, its tools' state and
//! its caches are, which of the lead's variables it never sees, and what of the lead's
//! CLI state is copied into its home. Nothing here touches the filesystem;
//! `run::workenv` makes the folders and copies the files.
//!
//! The rule it serves: no file a lead-side process later reads as configuration or runs
//! as code changes during a run. So a worker's tools never write under the lead's home:
//! `HOME`, the XDG folders and every CLI's and package manager's state point into the
//! worker's own home (per standing worker, or per run) and into caches shared among
//! workers only.

use std::path::{Path, PathBuf};

use crate::core::flight::AdapterKind;

/// Variables that point at a service of the lead's (a socket with a path, a display, a
/// session bus): a worker never gets them.
pub const SCRUBBED: &[&str] = &[
    "TMUX",
    "TMUX_PANE",
    "TMUX_TMPDIR",
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "DBUS_SESSION_BUS_ADDRESS",
    "DISPLAY",
    "XAUTHORITY",
    "WAYLAND_DISPLAY",
    "XDG_RUNTIME_DIR",
    "STY",
    "KITTY_LISTEN_ON",
    "NVIM",
    "NVIM_LISTEN_ADDRESS",
];

/// Variables that name where a tool keeps its state or caches: git-crew sets each of them
/// for a worker. A backend's `env` that names one of the CLI state folders names where
/// the lead's CLI state is, to seed from — never the worker's.
pub const HOME_VARS: &[&str] = &[
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "CODEX_HOME",
    "CLAUDE_CONFIG_DIR",
    "PRE_COMMIT_HOME",
    "CARGO_HOME",
    "npm_config_cache",
    "NPM_CONFIG_CACHE",
    "npm_config_store_dir",
    "pnpm_config_store_dir",
    "PNPM_CONFIG_STORE_DIR",
    "YARN_CACHE_FOLDER",
    "PIP_CACHE_DIR",
    "UV_CACHE_DIR",
    "GOPATH",
    "GOMODCACHE",
    "GOCACHE",
    "GRADLE_USER_HOME",
];

/// What of the lead's environment a worker's environment is built from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lead {
    /// The lead's home folder.
    pub home: Option<PathBuf>,
    /// The lead's variables that matter here (`RUSTUP_HOME`, `GIT_CONFIG_GLOBAL`,
    /// `XDG_CONFIG_HOME`, `CODEX_HOME`, `CLAUDE_CONFIG_DIR`, `MAVEN_OPTS`), from its
    /// environment or, for the CLI state folders, the backend's `env`.
    pub vars: Vec<(String, String)>,
    /// Which of the lead's files exist, of those asked about by [`Lead::wants`].
    pub existing: Vec<PathBuf>,
}

impl Lead {
    fn var(&self, key: &str) -> Option<&str> {
        self.vars
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }

    fn exists(&self, path: &Path) -> bool {
        self.existing.iter().any(|p| p == path)
    }

    /// The lead's files whose existence decides something here.
    pub fn wants(home: Option<&Path>, vars: &[(String, String)]) -> Vec<PathBuf> {
        let lead = Lead {
            home: home.map(Path::to_path_buf),
            vars: vars.to_vec(),
            existing: Vec::new(),
        };
        let mut wanted = lead.git_config_candidates();
        if let Some(home) = home {
            wanted.push(home.join(".rustup"));
        }
        wanted
    }

    fn git_config_candidates(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        if let Some(home) = &self.home {
            out.push(home.join(".gitconfig"));
        }
        match (self.var("XDG_CONFIG_HOME"), &self.home) {
            (Some(xdg), _) => out.push(Path::new(xdg).join("git/config")),
            (None, Some(home)) => out.push(home.join(".config/git/config")),
            (None, None) => {}
        }
        out
    }

    /// The lead's global git config, which a worker reads (never writes): its identity
    /// and settings. `/dev/null` when it has none.
    fn git_config(&self) -> String {
        if let Some(global) = self.var("GIT_CONFIG_GLOBAL") {
            return global.to_string();
        }
        self.git_config_candidates()
            .into_iter()
            .find(|p| self.exists(p))
            .map_or_else(|| "/dev/null".into(), |p| p.to_string_lossy().into_owned())
    }

    /// Where the lead's state of `adapter`'s CLI is, to seed a worker's from.
    pub fn cli_state(&self, adapter: AdapterKind) -> Option<PathBuf> {
        let folder = adapter.home_state()?;
        let var = match adapter {
            AdapterKind::Codex => "CODEX_HOME",
            _ => "CLAUDE_CONFIG_DIR",
        };
        self.var(var)
            .map(PathBuf::from)
            .or_else(|| self.home.as_ref().map(|h| h.join(folder)))
    }

    /// claude keeps its account and onboarding in `.claude.json`: in its config folder
    /// when `CLAUDE_CONFIG_DIR` names one, else in the home folder.
    pub fn claude_json(&self) -> Option<PathBuf> {
        match self.var("CLAUDE_CONFIG_DIR") {
            Some(dir) => Some(Path::new(dir).join(".claude.json")),
            None => self.home.as_ref().map(|h| h.join(".claude.json")),
        }
    }
}

/// Where a worker's environment lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    /// The worker's home: its tools' state, config and private caches.
    pub home: PathBuf,
    /// Caches shared among workers, never with the lead.
    pub cache: PathBuf,
}

/// The home of a run's worker under git-crew's state folder: a standing worker's own,
/// kept across its runs (its sessions and warm caches survive), else the run's.
pub fn home(state_dir: &Path, run_dir: &Path, worker: Option<&str>) -> PathBuf {
    match worker {
        Some(name) => state_dir.join("homes").join(folder_name(name)),
        None => run_dir.join("home"),
    }
}

/// The caches workers share, under git-crew's state folder.
pub fn shared_cache(state_dir: &Path) -> PathBuf {
    state_dir.join("worker-cache")
}

/// A folder name for a roster name: its safe characters, and a hash of the whole so two
/// names never meet in one folder.
fn folder_name(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    // FNV-1a: stable across builds, which std's hasher is not.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{safe}-{:08x}", hash as u32)
}

/// The variables that point a worker's tools at its own home and the workers' caches.
pub fn variables(places: &Places, lead: &Lead) -> Vec<(String, String)> {
    let home = |rel: &str| places.home.join(rel).to_string_lossy().into_owned();
    let cache = |rel: &str| places.cache.join(rel).to_string_lossy().into_owned();
    let mut env: Vec<(String, String)> = vec![
        ("HOME".into(), home("")),
        ("XDG_CONFIG_HOME".into(), home(".config")),
        ("XDG_CACHE_HOME".into(), home(".cache")),
        ("XDG_DATA_HOME".into(), home(".local/share")),
        ("XDG_STATE_HOME".into(), home(".local/state")),
        ("CODEX_HOME".into(), home(".codex")),
        ("CLAUDE_CONFIG_DIR".into(), home(".claude")),
        ("PRE_COMMIT_HOME".into(), home(".cache/pre-commit")),
        ("GOPATH".into(), home("go")),
        ("CARGO_HOME".into(), cache("cargo")),
        ("npm_config_cache".into(), cache("npm")),
        // pnpm 11 reads `pnpm_config_*` only, and npm never warns of it (npm 11 warns
        // `Unknown env config "store-dir"` at every command of a `npm_config_store_dir`);
        // pnpm 10 and older read their store from the worker's `pnpm/rc` ([`pnpm_rc`]).
        ("pnpm_config_store_dir".into(), cache("pnpm")),
        ("YARN_CACHE_FOLDER".into(), cache("yarn")),
        ("PIP_CACHE_DIR".into(), cache("pip")),
        ("UV_CACHE_DIR".into(), cache("uv")),
        ("GOMODCACHE".into(), cache("go/mod")),
        ("GOCACHE".into(), cache("go/build")),
        ("GRADLE_USER_HOME".into(), cache("gradle")),
        ("GIT_CONFIG_GLOBAL".into(), lead.git_config()),
    ];
    // The toolchains stay the lead's, read and run, never written: rustup finds them
    // from the home folder unless told.
    let rustup = lead.var("RUSTUP_HOME").map(PathBuf::from).or_else(|| {
        lead.home
            .as_ref()
            .map(|h| h.join(".rustup"))
            .filter(|p| lead.exists(p))
    });
    if let Some(rustup) = rustup {
        env.push(("RUSTUP_HOME".into(), rustup.to_string_lossy().into_owned()));
    }
    let maven = format!("-Dmaven.repo.local={}", cache("maven"));
    env.push((
        "MAVEN_OPTS".into(),
        match lead.var("MAVEN_OPTS") {
            Some(opts) => format!("{opts} {maven}"),
            None => maven,
        },
    ));
    env
}

/// What pnpm 10 and older read their store folder from, since they take no
/// `pnpm_config_*` variable: the worker's global pnpm config (`$XDG_CONFIG_HOME/pnpm/rc`,
/// relative to its home) and the line that points it at the workers' shared store.
pub fn pnpm_rc(places: &Places) -> (PathBuf, String) {
    (
        PathBuf::from(".config/pnpm/rc"),
        format!("store-dir={}", places.cache.join("pnpm").display()),
    )
}

/// The folders of a worker's environment made before its fence goes up (git-crew's
/// state folder is not the worker's to write, so nothing there can be made from inside).
pub fn folders(places: &Places) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = [
        ".config",
        ".cache/pre-commit",
        ".local/share",
        ".local/state",
        ".codex",
        ".claude",
        "go",
    ]
    .iter()
    .map(|rel| places.home.join(rel))
    .collect();
    dirs.extend(
        [
            "cargo", "npm", "pnpm", "yarn", "pip", "uv", "go/mod", "go/build", "gradle", "maven",
        ]
        .iter()
        .map(|rel| places.cache.join(rel)),
    );
    dirs
}

/// One file copied from the lead's CLI state into a worker's home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seed {
    pub from: PathBuf,
    /// Relative to the worker's home.
    pub to: PathBuf,
    pub filter: SeedFilter,
}

/// What is kept of a seeded file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeedFilter {
    /// The whole file.
    Whole,
    /// claude's `.claude.json`: only its account and onboarding keys (never its
    /// `mcpServers`, nor its per-project settings, which carry MCP servers and tool
    /// permissions).
    ClaudeAccount,
}

/// The keys of claude's `.claude.json` a worker gets: who it is signed in as, and that
/// onboarding is over.
pub const CLAUDE_ACCOUNT_KEYS: &[&str] = &[
    "oauthAccount",
    "userID",
    "primaryApiKey",
    "customApiKeyResponses",
    "hasCompletedOnboarding",
    "lastOnboardingVersion",
    "firstStartTime",
    "installMethod",
];

/// What is copied from the lead's CLI state into a worker's home at every run start:
/// credentials, and the files the backend's `seed` names (its config, hooks, MCP servers
/// or instructions reach a worker only that way).
pub fn seeds(adapter: AdapterKind, lead: &Lead, extra: &[String]) -> Vec<Seed> {
    let (Some(state), Some(own)) = (lead.cli_state(adapter), adapter.home_state()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let credentials = match adapter {
        AdapterKind::Codex => "auth.json",
        _ => ".credentials.json",
    };
    out.push(Seed {
        from: state.join(credentials),
        to: Path::new(own).join(credentials),
        filter: SeedFilter::Whole,
    });
    if adapter == AdapterKind::Claude
        && let Some(json) = lead.claude_json()
    {
        for to in [".claude.json", ".claude/.claude.json"] {
            out.push(Seed {
                from: json.clone(),
                to: to.into(),
                filter: SeedFilter::ClaudeAccount,
            });
        }
    }
    for rel in extra {
        out.push(Seed {
            from: state.join(rel),
            to: Path::new(own).join(rel),
            filter: SeedFilter::Whole,
        });
    }
    out
}

/// Why a `seed` entry cannot be used: it must be a relative path inside the CLI's state
/// folder.
pub fn check_seed(entry: &str) -> Result<(), String> {
    let path = Path::new(entry);
    if entry.is_empty()
        || path.is_absolute()
        || path
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return Err(format!(
            "seed entry `{entry}` must be a path inside the CLI's state folder (relative, no `..`)"
        ));
    }
    Ok(())
}

/// claude's `.claude.json` with only [`CLAUDE_ACCOUNT_KEYS`]; `None` when it is not a
/// JSON object.
pub fn claude_account(json: &serde_json::Value) -> Option<serde_json::Value> {
    let object = json.as_object()?;
    let kept: serde_json::Map<String, serde_json::Value> = object
        .iter()
        .filter(|(k, _)| CLAUDE_ACCOUNT_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Some(serde_json::Value::Object(kept))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lead() -> Lead {
        Lead {
            home: Some("/home/lead".into()),
            vars: vec![("MAVEN_OPTS".into(), "-Xmx1g".into())],
            existing: vec!["/home/lead/.gitconfig".into(), "/home/lead/.rustup".into()],
        }
    }

    fn places() -> Places {
        Places {
            home: "/r/.git/crew/homes/w".into(),
            cache: "/r/.git/crew/worker-cache".into(),
        }
    }

    fn get<'a>(env: &'a [(String, String)], key: &str) -> Option<&'a str> {
        env.iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn every_tool_points_into_the_workers_home_or_the_workers_cache() {
        let env = variables(&places(), &lead());
        for key in HOME_VARS {
            if let Some(value) = get(&env, key) {
                assert!(
                    value.starts_with("/r/.git/crew/"),
                    "{key}={value} lies outside git-crew's folders"
                );
            }
        }
        for key in [
            "HOME",
            "CODEX_HOME",
            "CLAUDE_CONFIG_DIR",
            "CARGO_HOME",
            "PRE_COMMIT_HOME",
        ] {
            assert!(get(&env, key).is_some(), "{key} is set");
        }
        assert_eq!(get(&env, "RUSTUP_HOME"), Some("/home/lead/.rustup"));
        assert_eq!(
            get(&env, "GIT_CONFIG_GLOBAL"),
            Some("/home/lead/.gitconfig")
        );
        assert_eq!(
            get(&env, "MAVEN_OPTS"),
            Some("-Xmx1g -Dmaven.repo.local=/r/.git/crew/worker-cache/maven")
        );
        for key in SCRUBBED {
            assert!(get(&env, key).is_none());
        }
    }

    /// npm warns of every `npm_config_*` variable it does not know, at every command.
    #[test]
    fn npm_is_given_no_variable_it_does_not_know() {
        let env = variables(&places(), &lead());
        let npm: Vec<&str> = env
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| k.to_ascii_lowercase().starts_with("npm_config_"))
            .collect();
        assert_eq!(npm, ["npm_config_cache"]);
        assert_eq!(
            get(&env, "pnpm_config_store_dir"),
            Some("/r/.git/crew/worker-cache/pnpm")
        );
        let (rc, line) = pnpm_rc(&places());
        assert_eq!(rc, Path::new(".config/pnpm/rc"));
        assert_eq!(line, "store-dir=/r/.git/crew/worker-cache/pnpm");
    }

    #[test]
    fn a_lead_without_a_global_git_config_gives_none() {
        let lead = Lead {
            existing: Vec::new(),
            ..lead()
        };
        let env = variables(&places(), &lead);
        assert_eq!(get(&env, "GIT_CONFIG_GLOBAL"), Some("/dev/null"));
        assert_eq!(get(&env, "RUSTUP_HOME"), None);
        let pinned = Lead {
            vars: vec![("GIT_CONFIG_GLOBAL".into(), "/etc/g".into())],
            ..lead
        };
        assert_eq!(
            get(&variables(&places(), &pinned), "GIT_CONFIG_GLOBAL"),
            Some("/etc/g")
        );
    }

    #[test]
    fn a_standing_worker_keeps_one_home_and_a_run_has_its_own() {
        let state = Path::new("/r/.git/crew");
        let run = Path::new("/r/.git/crew/runs/R1");
        assert_eq!(home(state, run, None), run.join("home"));
        let a = home(state, run, Some("impl-a"));
        assert!(a.starts_with(state.join("homes")));
        assert_eq!(a, home(state, Path::new("/elsewhere"), Some("impl-a")));
        assert_ne!(a, home(state, run, Some("impl/a")));
        assert_ne!(
            home(state, run, Some("../../x")).parent(),
            Some(Path::new("/r/.git"))
        );
        assert!(
            home(state, run, Some("../../x"))
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("______x-")
        );
    }

    #[test]
    fn credentials_are_seeded_and_the_rest_only_when_asked() {
        let codex = seeds(AdapterKind::Codex, &lead(), &[]);
        assert_eq!(codex.len(), 1);
        assert_eq!(codex[0].from, Path::new("/home/lead/.codex/auth.json"));
        assert_eq!(codex[0].to, Path::new(".codex/auth.json"));
        let asked = seeds(AdapterKind::Codex, &lead(), &["config.toml".into()]);
        assert_eq!(asked[1].to, Path::new(".codex/config.toml"));
        let claude = seeds(
            AdapterKind::Claude,
            &Lead {
                vars: vec![("CLAUDE_CONFIG_DIR".into(), "/cfg".into())],
                ..lead()
            },
            &[],
        );
        assert_eq!(claude[0].from, Path::new("/cfg/.credentials.json"));
        assert_eq!(claude[1].from, Path::new("/cfg/.claude.json"));
        assert_eq!(claude[1].filter, SeedFilter::ClaudeAccount);
        assert!(seeds(AdapterKind::Command, &lead(), &[]).is_empty());
    }

    #[test]
    fn a_seed_entry_stays_inside_the_state_folder() {
        assert!(check_seed("config.toml").is_ok());
        assert!(check_seed("prompts/a.md").is_ok());
        for bad in ["", "/etc/passwd", "../x", "a/../../b", "./x"] {
            assert!(check_seed(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_the_account_of_claude_json_is_kept() {
        let json = serde_json::json!({
            "oauthAccount": {"emailAddress": "a@b"},
            "hasCompletedOnboarding": true,
            "mcpServers": {"evil": {"command": "sh"}},
            "projects": {"/x": {"mcpServers": {}}},
        });
        let kept = claude_account(&json).unwrap();
        assert_eq!(kept["oauthAccount"]["emailAddress"], "a@b");
        assert!(kept.get("mcpServers").is_none());
        assert!(kept.get("projects").is_none());
        assert!(claude_account(&serde_json::json!([1])).is_none());
    }
}
