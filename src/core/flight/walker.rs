//! Validating one layer: a walk of its TOML against the schema table that reports every
//! problem (not only the first) and records where each key was set.

use std::collections::BTreeMap;

use toml::de::{DeTable, DeValue};
use toml::{Table, Value};

use super::diagnostics::{Diagnostic, Located, did_you_mean, join_key};
use super::schema::{Field, Kind, MAX_DURATION, ROOT};
use super::source::{LayerSource, Origin};

/// A validated layer: its values and where each key was set.
#[derive(Debug, Clone, Default)]
pub struct ParsedLayer {
    pub table: Table,
    pub origins: BTreeMap<String, Origin>,
}

struct Walker<'a> {
    source: &'a LayerSource,
    /// `source.origin`, allocated once for all the keys it sets.
    origin: std::sync::Arc<str>,
    located: Located<'a>,
    origins: BTreeMap<String, Origin>,
}

impl<'a> Walker<'a> {
    fn new(source: &'a LayerSource) -> Walker<'a> {
        Walker {
            source,
            origin: source.origin.as_str().into(),
            located: Located::new(&source.origin, &source.text, source.has_lines),
            origins: BTreeMap::new(),
        }
    }

    fn report(&mut self, offset: usize, key: &str, message: String, suggestion: Option<String>) {
        self.located.report(offset, key, message, suggestion);
    }

    fn record(&mut self, key: &str, offset: usize) {
        let origin = Origin {
            layer: self.source.layer,
            origin: self.origin.clone(),
            location: self.located.locate(offset),
        };
        self.origins.insert(key.to_string(), origin);
    }

    fn table(&mut self, prefix: &str, fields: &[Field], table: &DeTable<'_>) -> Table {
        let mut out = Table::new();
        for (key, value) in table.iter() {
            let name: &str = key.get_ref();
            let dotted = join_key(prefix, name);
            let Some(field) = fields.iter().find(|f| f.name == name) else {
                let known: Vec<&str> = fields.iter().map(|f| f.name).collect();
                let message = format!("unknown key (known here: {})", known.join(", "));
                self.located
                    .unknown_key(key.span().start, &dotted, name, &known, prefix, message);
                continue;
            };
            if let Some(v) = self.value(&dotted, field.kind, value) {
                self.record(&dotted, key.span().start);
                out.insert(name.to_string(), v);
            }
        }
        out
    }

    fn value(
        &mut self,
        dotted: &str,
        kind: Kind,
        value: &toml::Spanned<DeValue<'_>>,
    ) -> Option<Value> {
        let at = value.span().start;
        let wrong = |w: &mut Self| {
            w.report(
                at,
                dotted,
                format!(
                    "expected {}, found {}",
                    kind.describe(),
                    value.get_ref().type_str()
                ),
                None,
            );
            None
        };
        match (kind, value.get_ref()) {
            (Kind::Table(fields), DeValue::Table(t)) => {
                Some(Value::Table(self.table(dotted, fields, t)))
            }
            (Kind::Named(fields), DeValue::Table(t)) => {
                let mut out = Table::new();
                for (name, entry) in t.iter() {
                    let entry_key = join_key(dotted, name.get_ref());
                    match entry.get_ref() {
                        DeValue::Table(inner) => {
                            let v = self.table(&entry_key, fields, inner);
                            self.record(&entry_key, name.span().start);
                            out.insert(name.get_ref().to_string(), Value::Table(v));
                        }
                        other => self.report(
                            entry.span().start,
                            &entry_key,
                            format!("expected a table, found {}", other.type_str()),
                            None,
                        ),
                    }
                }
                Some(Value::Table(out))
            }
            (Kind::Str, DeValue::String(s)) => Some(Value::String(s.to_string())),
            (Kind::Enum(allowed) | Kind::BoolOrEnum(allowed), DeValue::String(s)) => {
                if allowed.contains(&s.as_ref()) {
                    Some(Value::String(s.to_string()))
                } else {
                    let suggestion = did_you_mean(s, allowed.iter().copied());
                    let also = if matches!(kind, Kind::BoolOrEnum(_)) {
                        "true, false or "
                    } else {
                        ""
                    };
                    self.report(
                        at,
                        dotted,
                        format!("`{s}` is not {also}one of {}", allowed.join(", ")),
                        suggestion,
                    );
                    None
                }
            }
            (Kind::Bool | Kind::BoolOrEnum(_), DeValue::Boolean(b)) => Some(Value::Boolean(*b)),
            (Kind::Int { min, max }, DeValue::Integer(i)) => {
                match i64::from_str_radix(i.as_str(), i.radix()) {
                    Ok(n) if (min..=max).contains(&n) => Some(Value::Integer(n)),
                    _ => {
                        let range = if min == max {
                            format!("must be {min}")
                        } else {
                            format!("must be between {min} and {max}")
                        };
                        self.report(at, dotted, range, None);
                        None
                    }
                }
            }
            (Kind::Number, DeValue::Integer(_) | DeValue::Float(_)) => {
                let number = match value.get_ref() {
                    DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix())
                        .ok()
                        .map(|n| n as f64),
                    DeValue::Float(f) => f.as_str().parse::<f64>().ok(),
                    _ => None,
                };
                match number.filter(|n| n.is_finite() && *n >= 0.0) {
                    Some(n) => Some(Value::Float(n)),
                    None => {
                        self.report(
                            at,
                            dotted,
                            "must be a finite number, at least 0".into(),
                            None,
                        );
                        None
                    }
                }
            }
            (Kind::Duration, DeValue::String(s)) => match humantime::parse_duration(s) {
                Ok(d) if d > MAX_DURATION => {
                    self.report(
                        at,
                        dotted,
                        format!("`{s}` is longer than the most a run may take (30 days)"),
                        None,
                    );
                    None
                }
                Ok(d) if !d.is_zero() => Some(Value::String(s.to_string())),
                Ok(_) => {
                    self.report(
                        at,
                        dotted,
                        "a duration must be longer than zero".into(),
                        None,
                    );
                    None
                }
                Err(e) => {
                    self.report(
                        at,
                        dotted,
                        format!("`{s}` is not a duration ({e}); write e.g. \"25m\" or \"1h 30m\""),
                        None,
                    );
                    None
                }
            },
            (Kind::Size, DeValue::String(s)) => match crate::core::size::parse(s) {
                Ok(0) => {
                    self.report(at, dotted, "a size must be more than zero".into(), None);
                    None
                }
                Ok(_) => Some(Value::String(s.to_string())),
                Err(e) => {
                    self.report(at, dotted, e, None);
                    None
                }
            },
            // A number of bytes, kept as the size string it stands for.
            (Kind::Size, DeValue::Integer(i)) => match i64::from_str_radix(i.as_str(), i.radix()) {
                Ok(n) if n > 0 => Some(Value::String(n.to_string())),
                _ => {
                    self.report(at, dotted, "a size must be more than zero".into(), None);
                    None
                }
            },
            (Kind::StrArray | Kind::EnumArray(_) | Kind::PatternArray, DeValue::Array(items)) => {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let item_key = format!("{dotted}[{i}]");
                    match item.get_ref() {
                        DeValue::String(s) => {
                            if matches!(kind, Kind::PatternArray)
                                && let Some(problem) =
                                    crate::core::worktree_files::pattern_problem(s)
                            {
                                self.report(
                                    item.span().start,
                                    &item_key,
                                    format!("{s:?} is not a gitignore pattern: {problem}"),
                                    None,
                                );
                                continue;
                            }
                            if let Kind::EnumArray(allowed) = kind
                                && !allowed.contains(&s.as_ref())
                            {
                                let suggestion = did_you_mean(s, allowed.iter().copied());
                                self.report(
                                    item.span().start,
                                    &item_key,
                                    format!("`{s}` is not one of {}", allowed.join(", ")),
                                    suggestion,
                                );
                                continue;
                            }
                            out.push(Value::String(s.to_string()));
                        }
                        other => self.report(
                            item.span().start,
                            &item_key,
                            format!("expected a string, found {}", other.type_str()),
                            None,
                        ),
                    }
                }
                Some(Value::Array(out))
            }
            (Kind::StrMap, DeValue::Table(t)) => {
                let mut out = Table::new();
                for (name, item) in t.iter() {
                    match item.get_ref() {
                        DeValue::String(s) => {
                            self.record(&join_key(dotted, name.get_ref()), name.span().start);
                            out.insert(name.get_ref().to_string(), Value::String(s.to_string()));
                        }
                        other => self.report(
                            item.span().start,
                            &join_key(dotted, name.get_ref()),
                            format!("expected a string, found {}", other.type_str()),
                            None,
                        ),
                    }
                }
                Some(Value::Table(out))
            }
            _ => wrong(self),
        }
    }
}

/// Parses and validates one layer against the schema; every problem is reported.
pub fn parse_layer(source: &LayerSource) -> Result<ParsedLayer, Vec<Diagnostic>> {
    let doc = match DeTable::parse(&source.text) {
        Ok(doc) => doc,
        Err(e) => {
            let mut walker = Walker::new(source);
            let offset = e.span().map_or(0, |s| s.start);
            let message = e.message().trim().to_string();
            walker.report(offset, "", format!("malformed TOML: {message}"), None);
            return Err(walker.located.diagnostics);
        }
    };
    let mut walker = Walker::new(source);
    let table = walker.table("", ROOT, doc.get_ref());
    if walker.located.diagnostics.is_empty() {
        Ok(ParsedLayer {
            table,
            origins: walker.origins,
        })
    } else {
        Err(walker.located.diagnostics)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::flight::Layer;

    fn errors(origin: &str, text: &str) -> Vec<String> {
        let source = LayerSource {
            layer: Layer::Project,
            origin: origin.into(),
            text: text.into(),
            has_lines: true,
        };
        parse_layer(&source)
            .unwrap_err()
            .iter()
            .map(|d| d.to_string())
            .collect()
    }

    #[test]
    fn unknown_keys_are_located_and_suggested() {
        assert_eq!(
            errors(
                ".crew/flight.toml",
                "version = 1\n\n[backends.codex]\nmodle = \"x\"\n"
            ),
            [
                ".crew/flight.toml:4:1: `backends.codex.modle`: unknown key (known here: adapter, command, model, effort, sandbox, session_reuse, concurrency, time_budget, idle_timeout, tier, extra_args, env, seed, argv, resume_argv, note) (did you mean `backends.codex.model`?)"
            ]
        );
    }

    #[test]
    fn wrong_types_and_values_are_reported_each() {
        let errs = errors(
            "p.toml",
            "tiers = \"mid\"\n[backends.codex]\nconcurrency = \"3\"\nsandbox = \"read-onyl\"\ntime_budget = \"soon\"\n[roles.reviwe]\n",
        );
        assert_eq!(errs.len(), 5, "{errs:#?}");
        assert_eq!(
            errs[0],
            "p.toml:3:15: `backends.codex.concurrency`: expected an integer, found string"
        );
        assert!(errs[1].starts_with("p.toml:4:11: `backends.codex.sandbox`: `read-onyl` is not one of worktree-full, read-only (did you mean `read-only`?)"));
        assert!(
            errs[2]
                .starts_with("p.toml:5:15: `backends.codex.time_budget`: `soon` is not a duration")
        );
        assert!(
            errs[3].contains("`roles.reviwe`: unknown key")
                && errs[3].contains("did you mean `roles.review`?")
        );
        assert_eq!(
            errs[4],
            "p.toml:1:9: `tiers`: expected an array of strings, found string"
        );
    }

    #[test]
    fn malformed_toml_gives_a_location() {
        let errs = errors("u.toml", "version = 1\n[backends.codex\n");
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with("u.toml:2:"), "{}", errs[0]);
        assert!(errs[0].contains("malformed TOML"));
    }
}
