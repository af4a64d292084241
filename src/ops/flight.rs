//! The routing config of an operation: the user's and the project's flight files read,
//! and merged with the defaults and the invocation's values by `core::flight`.

use std::path::{Path, PathBuf};

use super::Context;
use crate::core::flight::{self, Invocation, Layer, LayerSource, Resolved};
use crate::error::{CrewError, ErrorCode, Result};

/// Resolves the routing config for this invocation: reads the user and project layers
/// and merges them with the defaults and the invocation's values. Any problem is exit 2, listing every
/// diagnostic.
pub fn resolve(ctx: &Context, invocation: &Invocation) -> Result<Resolved> {
    let mut files = Vec::new();
    if let Some(path) = user_config_path() {
        read_layer(&path, Layer::User, &mut files)?;
    }
    if let Ok(workdir) = ctx.workdir() {
        read_layer(
            &workdir.join(".crew").join("flight.toml"),
            Layer::Project,
            &mut files,
        )?;
    }
    flight::resolve(&files, invocation).map_err(|diagnostics| {
        let count = diagnostics.len();
        let noun = if count == 1 { "problem" } else { "problems" };
        CrewError::new(
            ErrorCode::ConfigInvalid,
            format!("flight config has {count} {noun}"),
        )
        .with_details(diagnostics.iter().map(|d| d.to_string()).collect())
        .hinted("`git crew flight schema` prints every key and its type")
    })
}

/// `$XDG_CONFIG_HOME/git-crew/flight.toml`, else `~/.config/git-crew/flight.toml`.
pub fn user_config_path() -> Option<PathBuf> {
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let base =
        xdg.or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("git-crew").join("flight.toml"))
}

fn read_layer(path: &Path, layer: Layer, files: &mut Vec<LayerSource>) -> Result<()> {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8(bytes).map_err(|e| {
                CrewError::new(
                    ErrorCode::ConfigInvalid,
                    format!(
                        "{}: not UTF-8 (byte {})",
                        path.display(),
                        e.utf8_error().valid_up_to()
                    ),
                )
            })?;
            files.push(LayerSource {
                layer,
                origin: path.display().to_string(),
                text,
                has_lines: true,
            });
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(CrewError::new(
            ErrorCode::ConfigUnreadable,
            format!("cannot read {}: {e}", path.display()),
        )),
    }
}

/// The write fence a worker dispatched now would get under `flight`: `landlock-v<ABI>`
/// (`+ns` with its own namespaces), or `none`.
pub fn fence(flight: &crate::core::flight::Flight) -> String {
    let abi = crate::sys::fence::kernel_abi().filter(|_| flight.sandbox.enabled);
    crate::core::dispatch::describe_fence(abi, abi.is_some() && crate::sys::ns::available())
}
