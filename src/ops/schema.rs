//! The JSON Schemas of the outputs' parts whose types live in `run` (`landing::Cleaned`,
//! `prune::Kept`), which carries no schema of its own: each is a shadow of the type's
//! fields, and the tests below check the type's own serialisation against it key for key.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};

use crate::run::landing::Cleaned;
use crate::run::prune::Kept;

/// What integrate's cleanup did (`run::landing::Cleaned`).
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code)]
struct CleanedShadow {
    /// `removed`, `kept` or `gone` (there was none).
    worktree: WorktreeFate,
    /// `deleted` or `kept`.
    branch: BranchFate,
    kept_because: Option<String>,
    /// What git ignored in the removed worktree, gone with it.
    ignored: Vec<String>,
}

#[derive(JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[allow(dead_code)]
enum WorktreeFate {
    Removed,
    Kept,
    Gone,
}

#[derive(JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[allow(dead_code)]
enum BranchFate {
    Deleted,
    Kept,
}

/// What keeps an ended run's work (`run::prune::Kept`).
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code)]
struct KeptShadow {
    /// `refs/crew/attempts/<run>`.
    attempts_ref: String,
    /// What it points at now (`null` when there was nothing to keep).
    commit: Option<String>,
    /// The paths kept as one more commit for the worktree's uncommitted changes.
    uncommitted: Vec<String>,
    /// It already kept everything.
    already: bool,
}

impl JsonSchema for Cleaned {
    fn schema_name() -> Cow<'static, str> {
        "Cleaned".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        CleanedShadow::json_schema(generator)
    }
}

impl JsonSchema for Kept {
    fn schema_name() -> Cow<'static, str> {
        "Kept".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        KeptShadow::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid<T: JsonSchema + serde::Serialize>(value: &T) {
        let schema = schemars::generate::SchemaSettings::draft2020_12()
            .for_serialize()
            .into_generator()
            .into_root_schema_for::<T>();
        let schema = serde_json::to_value(schema).unwrap();
        let instance = serde_json::to_value(value).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&instance)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{instance} against {schema}: {errors:?}");
        // Every key the type writes is one the schema names, and the other way round.
        let keys: Vec<&String> = instance.as_object().unwrap().keys().collect();
        let named: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(keys, named);
    }

    #[test]
    fn cleanup_as_integrate_prints_it_matches_its_schema() {
        valid(&Cleaned::kept());
        valid(&Cleaned {
            worktree: "removed",
            branch: "deleted",
            kept_because: Some("x".into()),
            ignored: vec!["target/".into()],
        });
        valid(&Cleaned {
            worktree: "gone",
            ..Cleaned::kept()
        });
    }

    #[test]
    fn what_keeps_a_run_as_abandon_prints_it_matches_its_schema() {
        valid(&Kept {
            attempts_ref: "refs/crew/attempts/r".into(),
            commit: Some("abc".into()),
            uncommitted: vec!["a.txt".into()],
            already: false,
        });
        valid(&Kept {
            attempts_ref: "refs/crew/attempts/r".into(),
            commit: None,
            uncommitted: vec![],
            already: true,
        });
    }
}
