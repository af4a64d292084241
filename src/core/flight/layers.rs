//! The layers and their merge: the shipped defaults, the user's and the project's files
//! and the invocation's flags, merged key by key with each key's provenance; then the
//! checks only the merged whole allows (keys that name other keys).

use std::collections::BTreeMap;

use toml::de::DeValue;
use toml::{Table, Value};

use super::diagnostics::{Diagnostic, did_you_mean, join_key};
use super::model::Flight;
use super::schema::{ADAPTERS, DEFAULTS};
pub use super::source::{Layer, LayerSource, Origin};
use super::values::AdapterKind;
use super::walker::parse_layer;

/// Merges `overlay` into `base` key by key: tables merge, anything else replaces.
fn merge_tables(base: &mut Table, overlay: Table) {
    for (key, value) in overlay {
        match (base.get_mut(&key), value) {
            (Some(Value::Table(b)), Value::Table(o)) => merge_tables(b, o),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// The invocation layer as given on the command line.
#[derive(Debug, Clone, Default)]
pub struct Invocation {
    pub backend: Option<String>,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub concurrency: Option<String>,
    pub time_budget: Option<String>,
    /// `--max-cost` and `--max-tokens`: the run's spend fence (`fences.*`).
    pub max_cost: Option<String>,
    pub max_tokens: Option<String>,
    /// `dotted.key=value` pairs, applied in order.
    pub set: Vec<String>,
}

/// Renders one `--set` pair as a TOML document; the value is TOML when it parses as
/// such, else a plain string.
fn set_document(key: &str, raw: &str) -> String {
    let key = key
        .split('.')
        .map(|part| toml_string(part.trim()))
        .collect::<Vec<_>>()
        .join(".");
    let value = if DeValue::parse(raw).is_ok() {
        raw.to_string()
    } else {
        toml_string(raw)
    };
    format!("{key} = {value}\n")
}

fn toml_string(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

fn invocation_source(origin: String, text: String) -> LayerSource {
    LayerSource {
        layer: Layer::Invocation,
        origin,
        text,
        has_lines: false,
    }
}

/// The `--set` pairs as layer documents, in the order they apply.
fn set_sources(inv: &Invocation) -> Result<Vec<LayerSource>, Diagnostic> {
    inv.set
        .iter()
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) => Ok(invocation_source(
                format!("--set {pair}"),
                set_document(key, value),
            )),
            None => Err(Diagnostic {
                origin: format!("--set {pair}"),
                location: None,
                key: pair.clone(),
                message: "expected dotted.key=value".into(),
                suggestion: None,
            }),
        })
        .collect()
}

/// The routing flags as layer documents: `--backend`, then the per-backend flags, which
/// go to `backend` (the chosen backend) when it exists.
fn flag_sources(inv: &Invocation, backend: Option<&str>) -> Vec<LayerSource> {
    let mut out = Vec::new();
    if let Some(b) = &inv.backend {
        out.push(invocation_source(
            format!("--backend {b}"),
            set_document("default_backend", &toml_string(b)),
        ));
    }
    for (flag, key, value) in [
        ("--max-cost", "fences.max_cost_usd", &inv.max_cost),
        ("--max-tokens", "fences.max_tokens", &inv.max_tokens),
    ] {
        if let Some(v) = value {
            out.push(invocation_source(
                format!("{flag} {v}"),
                set_document(key, v),
            ));
        }
    }
    let Some(backend) = backend else {
        return out;
    };
    let flags = [
        ("model", &inv.model, true),
        ("effort", &inv.effort, true),
        ("concurrency", &inv.concurrency, false),
        ("time_budget", &inv.time_budget, true),
    ];
    for (name, value, is_string) in flags {
        if let Some(v) = value {
            let raw = if is_string { toml_string(v) } else { v.clone() };
            let flag = format!("--{} {v}", name.replace('_', "-"));
            out.push(invocation_source(
                flag,
                set_document(&format!("backends.{backend}.{name}"), &raw),
            ));
        }
    }
    out
}

/// The resolved config, with every key's provenance.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub flight: Flight,
    pub table: Table,
    pub origins: BTreeMap<String, Origin>,
}

impl Resolved {
    /// `dotted.key` → layer for every leaf value (SPEC §2 `sources`).
    pub fn sources(&self) -> BTreeMap<String, Layer> {
        let mut out = BTreeMap::new();
        leaves("", &self.table, &mut |key, _| {
            let layer = self.origin_of(key).map_or(Layer::Default, |o| o.layer);
            out.insert(key.to_string(), layer);
        });
        out
    }

    /// The origin of a key, or of the closest enclosing key that has one.
    pub fn origin_of(&self, key: &str) -> Option<&Origin> {
        let mut key = key;
        loop {
            if let Some(o) = self.origins.get(key) {
                return Some(o);
            }
            key = &key[..key.rfind('.')?];
        }
    }
}

/// Calls `f` for every leaf (non-table value) with its dotted key.
pub fn leaves(prefix: &str, table: &Table, f: &mut dyn FnMut(&str, &Value)) {
    for (key, value) in table {
        let dotted = join_key(prefix, key);
        match value {
            Value::Table(t) => leaves(&dotted, t, f),
            other => f(&dotted, other),
        }
    }
}

/// Resolves the layers: shipped defaults, then `files` (user, project) in order, then the
/// invocation. Every layer is validated on its own; then the merged result is checked as
/// a whole (references between keys).
pub fn resolve(
    files: &[LayerSource],
    invocation: &Invocation,
) -> Result<Resolved, Vec<Diagnostic>> {
    let defaults = LayerSource {
        layer: Layer::Default,
        origin: "<shipped defaults>".into(),
        text: DEFAULTS.clone(),
        has_lines: true,
    };
    let mut table = Table::new();
    let mut origins = BTreeMap::new();
    let mut diagnostics = Vec::new();
    let mut apply = |source: &LayerSource, table: &mut Table, diagnostics: &mut Vec<Diagnostic>| {
        match parse_layer(source) {
            Ok(parsed) => {
                merge_tables(table, parsed.table);
                origins.extend(parsed.origins);
            }
            Err(d) => diagnostics.extend(d),
        }
    };
    apply(&defaults, &mut table, &mut diagnostics);
    for file in files {
        apply(file, &mut table, &mut diagnostics);
    }
    if !diagnostics.is_empty() {
        return Err(diagnostics);
    }
    match set_sources(invocation) {
        Ok(sources) => {
            for source in &sources {
                apply(source, &mut table, &mut diagnostics);
            }
        }
        Err(d) => diagnostics.push(d),
    }
    // The per-backend flags follow the backend this invocation routes to; an unknown one
    // is reported by the reference check below, once.
    let chosen = invocation.backend.clone().or_else(|| {
        table
            .get("default_backend")
            .and_then(Value::as_str)
            .map(String::from)
    });
    let known = chosen.filter(|b| {
        table
            .get("backends")
            .and_then(Value::as_table)
            .is_some_and(|t| t.contains_key(b))
    });
    for source in &flag_sources(invocation, known.as_deref()) {
        apply(source, &mut table, &mut diagnostics);
    }
    if !diagnostics.is_empty() {
        return Err(diagnostics);
    }
    let flight: Flight = match Value::Table(table.clone()).try_into() {
        Ok(flight) => flight,
        Err(e) => {
            return Err(vec![Diagnostic {
                origin: "flight".into(),
                location: None,
                key: String::new(),
                message: format!("the merged config is incomplete: {e}"),
                suggestion: None,
            }]);
        }
    };
    let resolved = Resolved {
        flight,
        table,
        origins,
    };
    let problems = check_references(&resolved);
    if problems.is_empty() {
        Ok(resolved)
    } else {
        Err(problems)
    }
}

/// Checks what the schema alone cannot: keys that name other keys.
fn check_references(resolved: &Resolved) -> Vec<Diagnostic> {
    let flight = &resolved.flight;
    let mut out = Vec::new();
    let mut report = |key: &str, message: String, suggestion: Option<String>| {
        let origin = resolved.origin_of(key);
        out.push(Diagnostic {
            origin: origin.map_or_else(|| "flight".to_string(), |o| o.origin.to_string()),
            location: origin.and_then(|o| o.location),
            key: key.to_string(),
            message,
            suggestion,
        });
    };
    let backend_names = || flight.backends.keys().map(String::as_str);
    // The key is spelt out only for a name that is wrong (a roster can be long).
    let mut check_backend = |key: &dyn Fn() -> String, name: &str| {
        if !flight.backends.contains_key(name) {
            let known: Vec<&str> = backend_names().collect();
            report(
                &key(),
                format!("unknown backend `{name}` (known: {})", known.join(", ")),
                did_you_mean(name, backend_names()),
            );
        }
    };
    check_backend(&|| "default_backend".into(), &flight.default_backend);
    for (name, worker) in &flight.workers {
        check_backend(&|| format!("workers.{name}.backend"), &worker.backend);
    }
    for (name, role) in flight.roles.iter() {
        if let Some(backend) = &role.backend {
            check_backend(&|| format!("roles.{name}.backend"), backend);
        }
    }
    let mut seen = Vec::new();
    if flight.tiers.is_empty() {
        report("tiers", "at least one tier is needed".into(), None);
    }
    for tier in &flight.tiers {
        if seen.contains(&tier) {
            report("tiers", format!("tier `{tier}` is listed twice"), None);
        }
        seen.push(tier);
    }
    if let Some(command) = &flight.notify.command
        && command
            .first()
            .is_some_and(|program| program.trim().is_empty())
    {
        report(
            "notify.command",
            "the notify command's first word names the program to run; it is empty".into(),
            None,
        );
    }
    for (name, backend) in &flight.backends {
        let key = format!("backends.{name}");
        match backend.adapter {
            None => report(
                &key,
                format!(
                    "backend `{name}` needs an `adapter` ({})",
                    ADAPTERS.join(", ")
                ),
                None,
            ),
            Some(AdapterKind::Command) if backend.argv.as_ref().is_none_or(Vec::is_empty) => {
                report(
                    &format!("{key}.argv"),
                    format!(
                        "backend `{name}` uses the command adapter and needs a non-empty `argv`"
                    ),
                    None,
                )
            }
            _ => {}
        }
        if let Some(tier) = &backend.tier
            && !flight.tiers.contains(tier)
        {
            report(
                &format!("{key}.tier"),
                format!(
                    "tier `{tier}` is not in `tiers` ({})",
                    flight.tiers.join(", ")
                ),
                did_you_mean(tier, flight.tiers.iter().map(String::as_str)),
            );
        }
    }
    // A price that names no input or no output price would price half a stream.
    for (model, price) in &flight.prices {
        if price.price().is_none() {
            report(
                &format!("prices.{model}"),
                format!(
                    "the price of `{model}` needs both `input` and `output` (dollars per million tokens)"
                ),
                None,
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(layer: Layer, origin: &str, text: &str) -> LayerSource {
        LayerSource {
            layer,
            origin: origin.into(),
            text: text.into(),
            has_lines: true,
        }
    }

    fn errors(files: &[LayerSource], inv: &Invocation) -> Vec<String> {
        resolve(files, inv)
            .unwrap_err()
            .iter()
            .map(|d| d.to_string())
            .collect()
    }

    #[test]
    fn a_price_needs_input_and_output_and_a_number_is_finite_and_not_negative() {
        let text = "[prices.\"gpt-x\"]\ninput = 1.25\noutput = 10\n[prices.half]\ninput = 1\n[fences]\nmax_cost_usd = 2\nmax_tokens = 50000\n";
        let errs = errors(
            &[file(Layer::Project, "p.toml", text)],
            &Invocation::default(),
        );
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].contains("`prices.half`") && errs[0].contains("needs both"),
            "{errs:?}"
        );
        let ok = "[prices.\"gpt-x\"]\ninput = 1.25\ncached_input = 0.125\noutput = 10\n[fences]\nmax_cost_usd = 2\nmax_tokens = 50000\n";
        let r = resolve(
            &[file(Layer::Project, "p.toml", ok)],
            &Invocation::default(),
        )
        .unwrap();
        let price = r.flight.prices["gpt-x"].price().unwrap();
        assert_eq!(
            (price.input, price.cached_input, price.output),
            (1.25, 0.125, 10.0)
        );
        assert_eq!(r.flight.fences.max_cost_usd, Some(2.0));
        assert_eq!(r.flight.fences.max_tokens, Some(50000));
        let bad = "[fences]\nmax_cost_usd = -1.5\n";
        let errs = errors(
            &[file(Layer::Project, "p.toml", bad)],
            &Invocation::default(),
        );
        assert!(
            errs[0].contains("`fences.max_cost_usd`: must be a finite number, at least 0"),
            "{errs:?}"
        );
        let nan = "[fences]\nmax_cost_usd = nan\n";
        assert_eq!(
            errors(
                &[file(Layer::Project, "p.toml", nan)],
                &Invocation::default()
            )
            .len(),
            1
        );
    }

    #[test]
    fn the_shipped_defaults_resolve() {
        let r = resolve(&[], &Invocation::default()).unwrap();
        assert_eq!(r.flight.default_backend, "codex");
        assert_eq!(r.flight.tiers, ["low", "mid", "high"]);
        assert_eq!(
            r.flight.backends["claude"].adapter,
            Some(AdapterKind::Claude)
        );
        assert!(r.sources().values().all(|l| *l == Layer::Default));
    }

    #[test]
    fn a_size_is_read_with_its_unit_or_as_bytes_and_a_bad_one_is_named() {
        let r = resolve(&[], &Invocation::default()).unwrap();
        assert_eq!(r.flight.fences.max_file_size_bytes(), 100 << 20);
        for (set, bytes) in [
            ("fences.max_file_size=1MiB", 1 << 20),
            ("fences.max_file_size=2 GB", 2_000_000_000),
            ("fences.max_file_size=4096", 4096),
        ] {
            let inv = Invocation {
                set: vec![set.into()],
                ..Invocation::default()
            };
            let r = resolve(&[], &inv).unwrap();
            assert_eq!(r.flight.fences.max_file_size_bytes(), bytes, "{set}");
        }
        let inv = Invocation {
            set: vec![
                "fences.max_file_size=lots".into(),
                "fences.max_file_size=0".into(),
            ],
            ..Invocation::default()
        };
        assert_eq!(
            errors(&[], &inv),
            [
                "--set fences.max_file_size=lots: `fences.max_file_size`: `lots` is not a size; write e.g. \"100MiB\", \"1GiB\" or a number of bytes",
                "--set fences.max_file_size=0: `fences.max_file_size`: a size must be more than zero"
            ]
        );
    }

    #[test]
    fn layers_merge_key_by_key() {
        let user = file(
            Layer::User,
            "user.toml",
            "[backends.codex]\nmodel = \"user-model\"\neffort = \"low\"\nenv = { A = \"1\" }\n",
        );
        let project = file(
            Layer::Project,
            ".crew/flight.toml",
            "[backends.codex]\neffort = \"medium\"\nenv = { B = \"2\" }\n",
        );
        let r = resolve(&[user, project], &Invocation::default()).unwrap();
        let codex = &r.flight.backends["codex"];
        assert_eq!(codex.model.as_deref(), Some("user-model"));
        assert_eq!(codex.effort.as_deref(), Some("medium"));
        assert_eq!(codex.concurrency, Some(3));
        let sources = r.sources();
        assert_eq!(sources["backends.codex.env.A"], Layer::User);
        assert_eq!(sources["backends.codex.env.B"], Layer::Project);
        assert_eq!(sources["backends.codex.model"], Layer::User);
        assert_eq!(sources["backends.codex.effort"], Layer::Project);
        assert_eq!(sources["backends.codex.concurrency"], Layer::Default);
    }

    #[test]
    fn the_invocation_layer_wins_and_follows_the_chosen_backend() {
        let inv = Invocation {
            backend: Some("claude".into()),
            model: Some("claude-opus".into()),
            concurrency: Some("7".into()),
            time_budget: Some("10m".into()),
            set: vec![
                "gates.enforce=warn".into(),
                "backends.codex.extra_args=[\"-c\", \"x=1\"]".into(),
            ],
            ..Invocation::default()
        };
        let r = resolve(&[], &inv).unwrap();
        assert_eq!(r.flight.default_backend, "claude");
        assert_eq!(
            r.flight.backends["claude"].model.as_deref(),
            Some("claude-opus")
        );
        assert_eq!(r.flight.backends["claude"].concurrency, Some(7));
        assert_eq!(
            r.flight.backends["codex"].model.as_deref(),
            Some("gpt-5.6-sol")
        );
        assert_eq!(
            r.flight.gates.enforce,
            crate::core::flight::Enforcement::Warn
        );
        assert_eq!(
            r.flight.backends["codex"].extra_args.as_deref(),
            Some(&["-c".to_string(), "x=1".to_string()][..])
        );
        let sources = r.sources();
        assert_eq!(sources["default_backend"], Layer::Invocation);
        assert_eq!(sources["backends.claude.time_budget"], Layer::Invocation);
        assert_eq!(sources["gates.enforce"], Layer::Invocation);
    }

    #[test]
    fn set_default_backend_steers_the_routing_flags() {
        for value in ["claude", "'claude'", "\"claude\""] {
            let inv = Invocation {
                model: Some("m".into()),
                set: vec![format!("default_backend={value}")],
                ..Invocation::default()
            };
            let r = resolve(&[], &inv).unwrap();
            assert_eq!(
                r.flight.backends["claude"].model.as_deref(),
                Some("m"),
                "{value}"
            );
            assert_eq!(
                r.flight.backends["codex"].model.as_deref(),
                Some("gpt-5.6-sol")
            );
        }
    }

    #[test]
    fn an_unknown_backend_is_one_error_not_two() {
        let inv = Invocation {
            backend: Some("claud".into()),
            model: Some("m".into()),
            ..Invocation::default()
        };
        let errs = errors(&[], &inv);
        assert_eq!(errs.len(), 1, "{errs:#?}");
    }

    #[test]
    fn references_between_keys_are_checked_against_the_layer_that_set_them() {
        let project = file(
            Layer::Project,
            "p.toml",
            "default_backend = \"codx\"\n[backends.script]\nadapter = \"command\"\ntier = \"top\"\n[backends.bare]\ncommand = \"x\"\n[workers.w1]\nbackend = \"nope\"\n",
        );
        let errs = errors(&[project], &Invocation::default());
        assert!(errs.contains(&"p.toml:1:1: `default_backend`: unknown backend `codx` (known: bare, claude, codex, native, script) (did you mean `codex`?)".to_string()), "{errs:#?}");
        assert!(
            errs.iter().any(|e| e
                .starts_with("p.toml:5:11: `backends.bare`: backend `bare` needs an `adapter`")),
            "{errs:#?}"
        );
        assert!(
            errs.iter()
                .any(|e| e.contains("`backends.script.argv`") && e.contains("command adapter"))
        );
        assert!(errs.iter().any(|e| {
            e.starts_with("p.toml:4:1: `backends.script.tier`: tier `top` is not in `tiers`")
        }));
        assert!(
            errs.iter()
                .any(|e| e.starts_with("p.toml:8:1: `workers.w1.backend`: unknown backend `nope`"))
        );
    }

    #[test]
    fn the_notify_command_is_checked_and_layered() {
        let user = file(
            Layer::User,
            "user.toml",
            "[notify]\ncommand = [\"notify-send\", \"crew\"]\n",
        );
        let r = resolve(std::slice::from_ref(&user), &Invocation::default()).unwrap();
        assert_eq!(
            r.flight.notify.command.as_deref(),
            Some(&["notify-send".to_string(), "crew".to_string()][..])
        );
        assert_eq!(r.flight.notify.timeout, "10s");
        let sources = r.sources();
        assert_eq!(sources["notify.command"], Layer::User);
        assert_eq!(sources["notify.timeout"], Layer::Default);
        // `[]` in a later layer turns it off.
        let project = file(Layer::Project, "p.toml", "[notify]\ncommand = []\n");
        let r = resolve(&[user, project], &Invocation::default()).unwrap();
        assert_eq!(r.flight.notify.command.as_deref(), Some(&[][..]));
        // A program with no name, a timeout of zero, a mistyped key: exit 2, located.
        let bad = file(
            Layer::Project,
            "p.toml",
            "[notify]\ncommand = [\" \", \"x\"]\n",
        );
        let errs = errors(&[bad], &Invocation::default());
        assert!(
            errs[0].starts_with("p.toml:2:1: `notify.command`: the notify command's first word"),
            "{errs:#?}"
        );
        let bad = file(
            Layer::Project,
            "p.toml",
            "[notify]\ntimeout = \"0s\"\ncomand = [\"x\"]\n",
        );
        let errs = errors(&[bad], &Invocation::default());
        assert_eq!(errs.len(), 2, "{errs:#?}");
        assert!(
            errs.iter()
                .any(|e| e.contains("`notify.timeout`: a duration must be longer than zero")),
            "{errs:#?}"
        );
        assert!(
            errs.iter()
                .any(|e| e.contains("(did you mean `notify.command`?)")),
            "{errs:#?}"
        );
    }

    #[test]
    fn invocation_errors_name_the_flag() {
        let inv = Invocation {
            concurrency: Some("lots".into()),
            set: vec!["fences.time_budgte=5m".into(), "novalue".into()],
            ..Invocation::default()
        };
        let errs = errors(&[], &inv);
        assert_eq!(
            errs,
            [
                "--set novalue: `novalue`: expected dotted.key=value",
                "--concurrency lots: `backends.codex.concurrency`: expected an integer, found string"
            ]
        );
        let inv = Invocation {
            concurrency: Some("lots".into()),
            set: vec!["fences.time_budgte=5m".into()],
            ..Invocation::default()
        };
        let errs = errors(&[], &inv);
        assert!(
            errs[0].starts_with("--set fences.time_budgte=5m: `fences.time_budgte`: unknown key")
        );
        assert!(errs[0].ends_with("(did you mean `fences.time_budget`?)"));
        assert_eq!(
            errs[1],
            "--concurrency lots: `backends.codex.concurrency`: expected an integer, found string"
        );
        let inv = Invocation {
            backend: Some("claud".into()),
            ..Invocation::default()
        };
        let errs = errors(&[], &inv);
        assert!(errs[0].starts_with("--backend claud: `default_backend`: unknown backend `claud`"));
        assert!(errs[0].ends_with("(did you mean `claude`?)"));
    }
}
