//! Where a layer's text and each of its values came from: the names the walker and the
//! merge share.

use serde::Serialize;

/// Where a value came from, lowest precedence first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    Default,
    User,
    Project,
    Invocation,
}

impl Layer {
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Default => "default",
            Layer::User => "user",
            Layer::Project => "project",
            Layer::Invocation => "invocation",
        }
    }
}

/// Where a value was set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub layer: Layer,
    /// The layer's file or flag, shared by every key it set.
    pub origin: std::sync::Arc<str>,
    pub location: Option<(usize, usize)>,
}

/// One layer's text and where it came from.
#[derive(Debug, Clone)]
pub struct LayerSource {
    pub layer: Layer,
    /// A file path, or the flag that produced the text.
    pub origin: String,
    pub text: String,
    /// Whether diagnostics point at lines of `text` (false for flags).
    pub has_lines: bool,
}
