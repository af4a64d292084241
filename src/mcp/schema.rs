//! The JSON Schemas of the tools: an input schema from the type a tool's arguments are read
//! into, and an output schema from the type the command's JSON is serialised from,
//! wrapped in the envelope every command prints (`"ok"`, `"error"` when there is one, then
//! the output's fields) — or the refusal, `{"ok": false, "error": {...}}`. Both JSON
//! Schema 2020-12, as MCP asks.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value, json};

/// The dialect of every schema.
const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// The schema of the arguments `T` reads: an object that takes no key it does not name
/// (an unknown argument is a usage error, as an unknown flag is).
pub fn input<T: JsonSchema>() -> Map<String, Value> {
    let generator = SchemaSettings::draft2020_12().into_generator();
    let mut schema = object(generator.into_root_schema_for::<T>());
    schema.remove("title");
    schema.insert("additionalProperties".into(), Value::Bool(false));
    schema
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    schema
}

/// The schema of what a tool returns when its output is `T`: the command's JSON, or its
/// refusal.
pub fn output<T: JsonSchema>() -> Map<String, Value> {
    let mut generator = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator();
    let data = generator.subschema_for::<T>();
    let error = generator.subschema_for::<crate::ops::answer::ErrorJson>();
    let defs: Map<String, Value> = generator.take_definitions(true);
    let mut schema = json!({
        "$schema": DIALECT,
        "type": "object",
        "anyOf": [
            {
                "allOf": [
                    data,
                    {
                        "properties": {"ok": {"type": "boolean"}, "error": error},
                        "required": ["ok"],
                    },
                ],
            },
            {
                "properties": {"ok": {"const": false}, "error": error},
                "required": ["ok", "error"],
                "additionalProperties": false,
            },
        ],
    });
    if !defs.is_empty() {
        schema["$defs"] = Value::Object(defs);
    }
    object_of(schema)
}

/// The argument names an input schema allows.
pub fn argument_names(input: &Map<String, Value>) -> Vec<String> {
    input
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

fn object(schema: Schema) -> Map<String, Value> {
    object_of(schema.to_value())
}

fn object_of(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        // A schema of `true` takes anything.
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{CrewError, ErrorCode};

    fn validator(schema: &Map<String, Value>) -> jsonschema::Validator {
        jsonschema::validator_for(&Value::Object(schema.clone())).unwrap()
    }

    #[derive(serde::Serialize, JsonSchema)]
    struct Out {
        run: String,
        phase: Option<String>,
    }

    #[test]
    fn the_output_schema_takes_the_envelope_and_the_refusal_and_nothing_else() {
        let schema = output::<Out>();
        assert_eq!(schema["type"], "object");
        let v = validator(&schema);
        let data = crate::ops::answer::fields(&Out {
            run: "r".into(),
            phase: None,
        })
        .unwrap();
        let ok = crate::ops::answer::envelope(data.clone(), &crate::ops::answer::Status::Ok);
        assert!(v.is_valid(&ok), "{ok}");
        let refused = CrewError::new(ErrorCode::RunNotFound, "no run").hinted("look");
        let failed = crate::ops::answer::envelope(
            data,
            &crate::ops::answer::Status::Failed(refused.clone()),
        );
        assert!(v.is_valid(&failed), "{failed}");
        assert!(v.is_valid(&crate::ops::answer::refusal(&refused)));
        let detailed = CrewError::new(ErrorCode::Internal, "x").with_details(vec!["d".into()]);
        assert!(v.is_valid(&crate::ops::answer::refusal(&detailed)));
        // A run without its phase, a code outside the set, a refusal with more keys.
        for wrong in [
            json!({"ok": true, "run": "r"}),
            json!({"ok": false, "error": {"code": "no-such-code", "message": "m", "hint": "h"}}),
            json!({"ok": false, "error": {"code": "internal", "message": "m", "hint": "h"}, "x": 1}),
            json!({"ok": true}),
        ] {
            assert!(!v.is_valid(&wrong), "{wrong}");
        }
    }

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct In {
        run: String,
        #[serde(default)]
        all: bool,
    }

    #[test]
    fn the_input_schema_names_every_argument_and_takes_no_other() {
        let schema = input::<In>();
        assert_eq!(argument_names(&schema), ["run", "all"]);
        let v = validator(&schema);
        assert!(v.is_valid(&json!({"run": "r"})));
        assert!(!v.is_valid(&json!({"run": "r", "other": 1})));
        assert!(!v.is_valid(&json!({"all": true})));
    }
}
