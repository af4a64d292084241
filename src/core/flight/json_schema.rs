//! The JSON Schema of `flight.toml` (`git crew flight schema`), derived from the schema
//! table.

use super::schema::{Field, Kind, ROOT};

/// The JSON Schema of `flight.toml`, for editors (taplo, VS Code Even Better TOML).
pub fn json_schema() -> serde_json::Value {
    let mut root = table_schema(ROOT);
    root["$schema"] = "https://json-schema.org/draft-07/schema#".into();
    root["$id"] = "https://git-crew.dev/schema/flight.json".into();
    root["title"] = "git-crew flight control".into();
    root["description"] = "Routing config of git-crew: .crew/flight.toml (project) or ~/.config/git-crew/flight.toml (user).".into();
    root
}

fn table_schema(fields: &[Field]) -> serde_json::Value {
    let properties: serde_json::Map<String, serde_json::Value> = fields
        .iter()
        .map(|f| {
            let mut schema = kind_schema(f.kind);
            schema["description"] = f.doc.into();
            (f.name.to_string(), schema)
        })
        .collect();
    serde_json::json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
    })
}

fn kind_schema(kind: Kind) -> serde_json::Value {
    use serde_json::json;
    match kind {
        Kind::Table(fields) => table_schema(fields),
        Kind::Named(fields) => {
            json!({"type": "object", "additionalProperties": table_schema(fields)})
        }
        Kind::Str => json!({"type": "string"}),
        Kind::Enum(values) => json!({"type": "string", "enum": values}),
        Kind::Bool => json!({"type": "boolean"}),
        Kind::BoolOrEnum(values) => {
            json!({"anyOf": [{"type": "boolean"}, {"type": "string", "enum": values}]})
        }
        Kind::Int { min, max } => json!({"type": "integer", "minimum": min, "maximum": max}),
        Kind::Number => json!({"type": "number", "minimum": 0}),
        Kind::Duration => {
            json!({"type": "string", "pattern": "^\\s*[0-9]+\\s*[a-zA-Zµ]+(\\s*[0-9]+\\s*[a-zA-Zµ]+)*\\s*$"})
        }
        Kind::Size => json!({"oneOf": [
            {"type": "string", "pattern": "^\\s*([0-9]+(\\.[0-9]+)?|\\.[0-9]+)\\s*([bB]|[kKmMgGtT][iI]?[bB])?\\s*$"},
            {"type": "integer", "minimum": 1},
        ]}),
        Kind::StrArray | Kind::PatternArray => {
            json!({"type": "array", "items": {"type": "string"}})
        }
        Kind::EnumArray(values) => {
            json!({"type": "array", "items": {"type": "string", "enum": values}})
        }
        Kind::StrMap => json!({"type": "object", "additionalProperties": {"type": "string"}}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::flight::{Invocation, leaves, resolve};

    #[test]
    fn the_schema_knows_every_key_of_the_defaults() {
        let schema = json_schema();
        let r = resolve(&[], &Invocation::default()).unwrap();
        leaves("", &r.table, &mut |key, _| {
            let mut node = &schema;
            for part in key.split('.') {
                node = node["properties"]
                    .get(part)
                    .unwrap_or(&node["additionalProperties"]);
                assert!(node.is_object(), "{key} not in schema");
            }
        });
        assert_eq!(
            schema["properties"]["backends"]["additionalProperties"]["additionalProperties"],
            false
        );
    }
}
