//! What an operation comes to for a front end that prints data: the object of its JSON
//! (the CLI's `--json`, the MCP server's structured content) and how it came out, which
//! every front end tells the same way (the CLI as its exit code, the MCP server as a
//! tool result's `isError`).

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value};

use crate::error::{CrewError, ErrorCode, ErrorKind};

/// How a command came out — the one thing its exit code is derived from.
#[derive(Debug, Default)]
pub enum Status {
    /// Success; for a query, the positive answer (exit 0).
    #[default]
    Ok,
    /// Not a failure, but the lead is needed: a worker asked for help, an escalation, a
    /// human report (exit 5; `"ok": true`).
    Attention,
    /// A check said no: `"ok": false` with the error, and its exit code.
    Failed(CrewError),
}

impl Status {
    /// The error of a failed status.
    pub fn failure(&self) -> Option<&CrewError> {
        match self {
            Status::Failed(error) => Some(error),
            _ => None,
        }
    }

    /// The exit code it makes.
    pub fn exit_code(&self) -> u8 {
        match self {
            Status::Ok => crate::error::exit::OK,
            Status::Attention => ErrorKind::Attention.exit_code(),
            Status::Failed(error) => error.exit_code(),
        }
    }
}

/// The fields of `data`'s JSON object (a value that is not an object is `"value"`); an
/// output that cannot be rendered is git-crew's bug (exit 70).
pub fn fields<T: serde::Serialize>(data: &T) -> Result<Map<String, Value>, CrewError> {
    match serde_json::to_value(data) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Ok(Map::from_iter([("value".to_string(), other)])),
        Err(e) => Err(CrewError::internal(format!(
            "cannot render the output: {e}"
        ))),
    }
}

/// The JSON a command prints: `"ok"` (false only for a check that said no), the error
/// when there is one, then the output's fields (SPEC §2's envelope).
pub fn envelope(fields: Map<String, Value>, status: &Status) -> Value {
    let mut object = Map::new();
    object.insert("ok".into(), Value::Bool(status.failure().is_none()));
    if let Some(error) = status.failure() {
        object.insert("error".into(), error.to_json());
    }
    object.extend(fields);
    Value::Object(object)
}

/// The JSON of a command that was refused: `{"ok": false, "error": {...}}`.
pub fn refusal(error: &CrewError) -> Value {
    serde_json::json!({"ok": false, "error": error.to_json()})
}

/// The schema of the envelope's error object, as `CrewError::to_json` writes it (a type for
/// its JSON Schema only): its code from the
/// closed set, its message (with the details after it), the hint, and the details and
/// causes when there are some.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code)]
pub struct ErrorJson {
    code: Code,
    message: String,
    hint: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    causes: Option<Vec<String>>,
}

/// An error code: one of [`ErrorCode::ALL`].
pub struct Code;

impl JsonSchema for Code {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ErrorCode".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let codes: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        schemars::json_schema!({
            "type": "string",
            "enum": codes,
            "description": "The error's code, from the closed set README.md's table lists",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn the_envelope_puts_ok_and_the_error_before_the_fields() {
        let mut fields = Map::new();
        fields.insert("run".into(), "r".into());
        let ok = envelope(fields.clone(), &Status::Attention);
        assert_eq!(ok, serde_json::json!({"ok": true, "run": "r"}));
        let failed = Status::Failed(CrewError::new(ErrorCode::RunFailed, "no"));
        let value = envelope(fields, &failed);
        let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["ok", "error", "run"]);
        assert_eq!(value["error"]["code"], "run-failed");
        assert_eq!(failed.exit_code(), 1);
        assert_eq!(Status::Attention.exit_code(), 5);
    }

    #[test]
    fn an_output_is_its_object_and_anything_else_a_value() {
        assert_eq!(fields(&1).unwrap()["value"], 1);
        assert_eq!(fields(&serde_json::json!({"a": 1})).unwrap()["a"], 1);
    }
}
