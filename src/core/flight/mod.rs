//! Flight control: the routing config model, its schema, the four-layer merge with
//! provenance, and validation diagnostics (`path:line:col`, the key, a did-you-mean).
//!
//! Pure: callers read the layer files and pass their text in. One schema table drives
//! validation, the JSON Schema (`git crew flight schema`), the suggestions and the
//! shipped defaults, and tests hold the typed model to it, so a key cannot be known to
//! one and unknown to another.
//!
//! - `schema.rs`: the field table (`ROOT` and the tables below it), each key's default
//!   beside it, and the defaults layer rendered from them.
//! - `source.rs`: where a layer's text and each value came from (layer, file, line).
//! - `walker.rs`: one layer's TOML walked against the schema, every problem reported.
//! - `diagnostics.rs`: the reporter every TOML reader shares (flight layers, plans).
//! - `layers.rs`: the layers, their merge with provenance, and the reference checks.
//! - `model.rs`: the typed config the merged layers deserialize into.
//! - `values.rs`: the closed sets of values some keys take, as enums.
//! - `json_schema.rs`: the JSON Schema, derived from the schema table.
//!
//! Everything callers use is re-exported here: `crate::core::flight::X` is the one path.

mod diagnostics;
mod json_schema;
mod layers;
mod model;
mod schema;
mod source;
mod values;
mod walker;

pub use diagnostics::{Diagnostic, Lines, Located, did_you_mean, line_col};
pub use json_schema::json_schema;
pub use layers::{Invocation, Layer, LayerSource, Origin, Resolved, leaves, resolve};
pub use model::{
    Backend, Fences, FleetPolicy, Flight, Gates, ModelPrice, NotifyPolicy, PlansPolicy, Price,
    Require, RoleRouting, Roles, SandboxPolicy, SummaryPolicy, Worker, WorktreePolicy,
};
pub use schema::{
    ADAPTERS, DEFAULT_MAX_ATTEMPTS, DEFAULT_MAX_FILE_SIZE, DEFAULT_MAX_OUTPUT, DEFAULTS,
    DefaultValue, Field, Kind, MAX_DURATION, ROOT, SANDBOXES,
};
pub use values::{
    AdapterKind, Enforcement, OnFail, Reflex, SandboxMode, SummaryAt, WorktreeCleanup,
};
pub use walker::{ParsedLayer, parse_layer};
