//! The typed, resolved config: what the merged layers deserialize into.
//!
//! Every struct denies unknown fields, and a test holds each struct's fields to the keys
//! of its table in the schema: a key cannot be valid to the walker and unknown to the
//! model, or the other way round.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::values::SummaryAt as At;
use super::values::{AdapterKind, Enforcement, OnFail, Reflex, SandboxMode, WorktreeCleanup};

/// The resolved routing config (every layer merged and validated).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flight {
    pub version: i64,
    pub default_backend: String,
    pub tiers: Vec<String>,
    #[serde(default)]
    pub backends: BTreeMap<String, Backend>,
    #[serde(default)]
    pub workers: BTreeMap<String, Worker>,
    #[serde(default)]
    pub roles: Roles,
    /// Prices by model name (`[prices."<model>"]`).
    #[serde(default)]
    pub prices: BTreeMap<String, ModelPrice>,
    pub gates: Gates,
    pub fences: Fences,
    pub worktree: WorktreePolicy,
    pub plans: PlansPolicy,
    pub summary: SummaryPolicy,
    pub sandbox: SandboxPolicy,
    pub notify: NotifyPolicy,
    pub fleet: FleetPolicy,
}

/// `[fleet]`: machines that share one plan through their git remote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetPolicy {
    /// The remote whose refs coordinate the fleet; none: this machine alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    /// This machine's name in claims; none: the host's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// How long a claim holds after its last renewal.
    pub lease: String,
}

/// `[notify]`: the command told of a run's turn to needs-help or its end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifyPolicy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    pub timeout: String,
}

/// A model's price per million tokens.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<f64>,
}

/// A price per million tokens (`[prices."<model>"]`), whole: what a run's spend is
/// reckoned by (`core::usage`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Price {
    pub input: f64,
    pub cached_input: f64,
    pub output: f64,
}

impl ModelPrice {
    /// The price, when it names both input and output (cached input defaults to input).
    pub fn price(&self) -> Option<Price> {
        Some(Price {
            input: self.input?,
            cached_input: self.cached_input.or(self.input)?,
            output: self.output?,
        })
    }
}

/// What `[sandbox] require` demands before a worker may start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Require {
    /// Nothing: the fence goes up where it can.
    #[default]
    Nothing,
    /// The kernel write fence (`true`).
    Landlock,
    /// The write fence and a private /tmp in the worker's own namespaces
    /// (`"landlock+ns"`).
    LandlockNs,
}

impl Serialize for Require {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Require::Nothing => s.serialize_bool(false),
            Require::Landlock => s.serialize_bool(true),
            Require::LandlockNs => s.serialize_str("landlock+ns"),
        }
    }
}

impl<'de> Deserialize<'de> for Require {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Bool(bool),
            Str(String),
        }
        match Raw::deserialize(d)? {
            Raw::Bool(false) => Ok(Require::Nothing),
            Raw::Bool(true) => Ok(Require::Landlock),
            Raw::Str(s) if s == "landlock+ns" => Ok(Require::LandlockNs),
            Raw::Str(s) => Err(serde::de::Error::custom(format!(
                "`{s}` is not true, false or landlock+ns"
            ))),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxPolicy {
    pub enabled: bool,
    pub require: Require,
    pub writable: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Backend {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<AdapterKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_reuse: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_budget: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_args: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_argv: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Worker {
    pub backend: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Per-role routing (`[roles.<role>]`), one field per role. The fields are in the order
/// of their names, the order the JSON output has always listed the roles in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Roles {
    #[serde(default)]
    pub cleanup: RoleRouting,
    #[serde(default)]
    pub implement: RoleRouting,
    #[serde(default)]
    pub investigate: RoleRouting,
    #[serde(default)]
    pub review: RoleRouting,
}

impl Roles {
    /// The routing of the role named `role`, when it is one.
    pub fn get(&self, role: &str) -> Option<&RoleRouting> {
        self.iter().find(|(name, _)| *name == role).map(|(_, r)| r)
    }

    /// Every role and its routing, in the order of their names.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &RoleRouting)> {
        [
            ("cleanup", &self.cleanup),
            ("implement", &self.implement),
            ("investigate", &self.investigate),
            ("review", &self.review),
        ]
        .into_iter()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleRouting {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_budget: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gates {
    pub enforce: Enforcement,
    pub require_evidence: bool,
    pub on_fail: OnFail,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fences {
    pub time_budget: String,
    pub needs_help_after_failures: i64,
    pub max_attempts: i64,
    pub max_output: i64,
    /// A size (`100MiB`, or a number of bytes); see [`Fences::max_file_size_bytes`].
    pub max_file_size: String,
    pub manifest_required: bool,
    #[serde(default)]
    pub max_cost_usd: Option<f64>,
    #[serde(default)]
    pub max_tokens: Option<i64>,
}

impl Fences {
    /// `max_file_size` in bytes (validated by the walker; the shipped default should it
    /// not read).
    pub fn max_file_size_bytes(&self) -> u64 {
        crate::core::size::parse(&self.max_file_size)
            .ok()
            .filter(|n| *n > 0)
            .unwrap_or(super::schema::DEFAULT_MAX_FILE_SIZE)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorktreePolicy {
    pub cleanup: WorktreeCleanup,
    pub port_range: String,
    /// `[worktree] setup`: the shell command that readies a new run worktree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<String>,
    pub setup_timeout: String,
    /// Gitignore patterns ignored in every run's worktree, after the tool state
    /// (`core::worktree_files::TOOL_STATE`).
    pub ignore: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlansPolicy {
    pub stale_after_days: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SummaryPolicy {
    pub reflex: Reflex,
    pub at: Vec<At>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::flight::{DEFAULTS, Kind, Layer, LayerSource, ROOT, leaves, parse_layer};
    use serde::de::DeserializeOwned;
    use toml::{Table, Value};

    /// The field names a derived `Deserialize` asks for: a deserializer that only listens.
    fn fields_of<T: DeserializeOwned>() -> Vec<&'static str> {
        struct Probe<'a>(&'a mut Vec<&'static str>);
        impl<'de> serde::Deserializer<'de> for Probe<'_> {
            type Error = serde::de::value::Error;

            fn deserialize_any<V: serde::de::Visitor<'de>>(
                self,
                _: V,
            ) -> Result<V::Value, Self::Error> {
                Err(serde::de::Error::custom("not a struct"))
            }

            fn deserialize_struct<V: serde::de::Visitor<'de>>(
                self,
                _name: &'static str,
                fields: &'static [&'static str],
                _visitor: V,
            ) -> Result<V::Value, Self::Error> {
                self.0.extend(fields);
                Err(serde::de::Error::custom("listened"))
            }

            serde::forward_to_deserialize_any! {
                bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
                byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
                identifier ignored_any
            }
        }
        let mut fields = Vec::new();
        let _ = T::deserialize(Probe(&mut fields));
        fields
    }

    /// The model struct of each table of the schema (`*` for a user-named entry).
    fn model_fields(path: &str) -> Vec<&'static str> {
        match path {
            "" => fields_of::<Flight>(),
            "backends.*" => fields_of::<Backend>(),
            "workers.*" => fields_of::<Worker>(),
            "prices.*" => fields_of::<ModelPrice>(),
            "roles" => fields_of::<Roles>(),
            "roles.implement" | "roles.review" | "roles.investigate" | "roles.cleanup" => {
                fields_of::<RoleRouting>()
            }
            "gates" => fields_of::<Gates>(),
            "fences" => fields_of::<Fences>(),
            "worktree" => fields_of::<WorktreePolicy>(),
            "plans" => fields_of::<PlansPolicy>(),
            "summary" => fields_of::<SummaryPolicy>(),
            "sandbox" => fields_of::<SandboxPolicy>(),
            "notify" => fields_of::<NotifyPolicy>(),
            "fleet" => fields_of::<FleetPolicy>(),
            other => panic!("the schema's table `{other}` has no model struct"),
        }
    }

    fn join(prefix: &str, name: &str) -> String {
        if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}.{name}")
        }
    }

    /// A document that sets every key of the schema (one entry of each named table), with
    /// the `n`th allowed value of each closed set and the least or the most of each range.
    fn every_key(fields: &[crate::core::flight::Field], n: usize) -> Table {
        let even = n.is_multiple_of(2);
        let mut out = Table::new();
        for f in fields {
            let value = match f.kind {
                Kind::Table(inner) => Value::Table(every_key(inner, n)),
                Kind::Named(inner) => Value::Table(Table::from_iter([(
                    "x".to_string(),
                    Value::Table(every_key(inner, n)),
                )])),
                Kind::Str => Value::String(format!("s{n}")),
                Kind::Enum(values) => Value::String(values[n % values.len()].to_string()),
                Kind::Bool => Value::Boolean(even),
                Kind::BoolOrEnum(values) if !even => {
                    Value::String(values[n % values.len()].to_string())
                }
                Kind::BoolOrEnum(_) => Value::Boolean(n.is_multiple_of(4)),
                Kind::Int { min, max } => Value::Integer(if even { min } else { max }),
                Kind::Number => Value::Float(if even { 0.0 } else { 2.5 }),
                Kind::Duration => Value::String(format!("{}m", n + 1)),
                Kind::Size => Value::String(format!("{}MiB", n + 1)),
                Kind::StrArray | Kind::PatternArray => {
                    Value::Array(vec![Value::String(format!("a{n}"))])
                }
                Kind::EnumArray(values) => Value::Array(
                    values
                        .iter()
                        .map(|v| Value::String(v.to_string()))
                        .collect(),
                ),
                Kind::StrMap => Value::Table(Table::from_iter([(
                    format!("K{n}"),
                    Value::String("v".into()),
                )])),
            };
            out.insert(f.name.to_string(), value);
        }
        out
    }

    /// Every leaf value by its dotted key (an empty table has none).
    fn flat(value: &Value) -> BTreeMap<String, Value> {
        let mut out = BTreeMap::new();
        leaves("", value.as_table().unwrap(), &mut |key, v| {
            out.insert(key.to_string(), v.clone());
        });
        out
    }

    fn layer(text: String) -> Table {
        let source = LayerSource {
            layer: Layer::Default,
            origin: "test".into(),
            text,
            has_lines: true,
        };
        match parse_layer(&source) {
            Ok(parsed) => parsed.table,
            Err(d) => panic!("{d:#?}"),
        }
    }

    /// Like jj's `config_schema_defaults`: the schema table and the typed model describe
    /// the same keys, and the shipped defaults are a valid, complete model.
    #[test]
    fn the_schema_and_the_model_have_the_same_keys() {
        // Each table's keys are exactly its struct's fields.
        fn tables(prefix: &str, fields: &[crate::core::flight::Field]) {
            let mut schema: Vec<&str> = fields.iter().map(|f| f.name).collect();
            let mut model = model_fields(prefix);
            schema.sort_unstable();
            model.sort_unstable();
            assert_eq!(
                schema, model,
                "the keys of `{prefix}` and its struct's fields differ"
            );
            for f in fields {
                match f.kind {
                    Kind::Table(inner) => tables(&join(prefix, f.name), inner),
                    Kind::Named(inner) => tables(&join(&join(prefix, f.name), "*"), inner),
                    _ => {}
                }
            }
        }
        tables("", ROOT);

        // A document with every key, and each allowed value of every closed set, is valid
        // to the walker, deserializes into the model and serializes back to itself.
        fn most_values(fields: &[crate::core::flight::Field]) -> usize {
            let count = |f: &crate::core::flight::Field| match f.kind {
                Kind::Table(inner) | Kind::Named(inner) => most_values(inner),
                Kind::Enum(values) => values.len(),
                _ => 2,
            };
            fields.iter().map(count).max().unwrap_or(0)
        }
        for n in 0..most_values(ROOT) {
            let doc = every_key(ROOT, n);
            let table = layer(toml::to_string(&doc).unwrap());
            assert_eq!(table, doc);
            let table = Value::Table(table);
            let flight: Flight = table.clone().try_into().unwrap();
            assert_eq!(flat(&Value::try_from(&flight).unwrap()), flat(&table));
        }
    }

    #[test]
    fn the_shipped_defaults_are_a_valid_model() {
        // No diagnostics; every key the model requires; nothing it would not keep.
        let table = Value::Table(layer(DEFAULTS.clone()));
        let flight: Flight = table.clone().try_into().unwrap();
        assert_eq!(flat(&Value::try_from(&flight).unwrap()), flat(&table));
    }
}
