//! The one routing precedence, for dispatch, wave dispatch and the summary's HOW line:
//! the invocation's flags, then the plan task's standing worker, then the role's routing
//! (`[roles.<role>]`), then the backend's own keys, then the shipped defaults. Pure.

use super::flight::{Backend, Flight, RoleRouting, Worker};

/// What a dispatch asks for, before routing.
#[derive(Debug, Clone, Default)]
pub struct Ask<'a> {
    pub role: &'a str,
    /// The standing worker (a flag, or the plan task's `worker`).
    pub worker: Option<&'a str>,
    /// `--backend`, `--model`, `--effort`, `--time-budget`.
    pub backend: Option<&'a str>,
    pub model: Option<&'a str>,
    pub effort: Option<&'a str>,
    pub time_budget: Option<&'a str>,
}

/// Where a dispatch goes.
#[derive(Debug, Clone)]
pub struct Route {
    pub backend: String,
    pub config: Backend,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub time_budget: String,
    pub role: RoleRouting,
    pub worker: Option<Worker>,
}

/// Routes `ask`; an unknown worker or backend is named.
pub fn route(flight: &Flight, ask: &Ask) -> Result<Route, String> {
    let role = flight.roles.get(ask.role).cloned().unwrap_or_default();
    let worker = match ask.worker {
        Some(name) => Some(flight.workers.get(name).cloned().ok_or_else(|| {
            let known: Vec<&str> = flight.workers.keys().map(String::as_str).collect();
            format!(
                "unknown worker `{name}` (the roster: {})",
                if known.is_empty() {
                    "none; add [workers.<name>] to .crew/flight.toml".to_string()
                } else {
                    known.join(", ")
                }
            )
        })?),
        None => None,
    };
    let backend = ask
        .backend
        .map(String::from)
        .or(worker.as_ref().map(|w| w.backend.clone()))
        .or(role.backend.clone())
        .unwrap_or_else(|| flight.default_backend.clone());
    let model = ask
        .model
        .map(String::from)
        .or(worker.as_ref().and_then(|w| w.model.clone()))
        .or(role.model.clone());
    let route = Route {
        backend: String::new(),
        config: Backend::default(),
        model,
        effort: None,
        time_budget: String::new(),
        role,
        worker,
    };
    route.on(flight, ask, &backend, false)
}

impl Route {
    /// This route on `backend`: the flags, the worker and the role still come first for
    /// effort and budget; the model is theirs too, unless `backends_model` (an escalation
    /// to a tier's backend takes that backend's model).
    pub fn on(
        mut self,
        flight: &Flight,
        ask: &Ask,
        backend: &str,
        backends_model: bool,
    ) -> Result<Route, String> {
        let config = flight
            .backends
            .get(backend)
            .cloned()
            .ok_or_else(|| format!("unknown backend `{backend}`"))?;
        self.model = if backends_model {
            config.model.clone()
        } else {
            self.model.or(config.model.clone())
        };
        self.effort = ask
            .effort
            .map(String::from)
            .or(self.worker.as_ref().and_then(|w| w.effort.clone()))
            .or(self.role.effort.clone())
            .or(config.effort.clone());
        self.time_budget = ask
            .time_budget
            .map(String::from)
            .or(self.role.time_budget.clone())
            .or(config.time_budget.clone())
            .unwrap_or_else(|| flight.fences.time_budget.clone());
        self.backend = backend.to_string();
        self.config = config;
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::flight::{Invocation, Layer, LayerSource, resolve};

    fn flight() -> Flight {
        let text = "default_backend = \"codex\"\n\
            [backends.low]\nadapter = \"command\"\nargv = [\"x\"]\nmodel = \"small\"\neffort = \"low\"\n\
            [workers.w]\nbackend = \"low\"\neffort = \"high\"\n\
            [roles.review]\nbackend = \"claude\"\nmodel = \"reviewer\"\ntime_budget = \"5m\"\n";
        let layer = LayerSource {
            layer: Layer::Project,
            origin: "p".into(),
            text: text.into(),
            has_lines: true,
        };
        resolve(&[layer], &Invocation::default()).unwrap().flight
    }

    #[test]
    fn flags_beat_the_worker_which_beats_the_role_which_beats_the_backend() {
        let f = flight();
        let r = route(
            &f,
            &Ask {
                role: "implement",
                ..Ask::default()
            },
        )
        .unwrap();
        assert_eq!(
            (r.backend.as_str(), r.time_budget.as_str()),
            ("codex", "25m")
        );
        // The role routes a review: its backend, model and budget.
        let r = route(
            &f,
            &Ask {
                role: "review",
                ..Ask::default()
            },
        )
        .unwrap();
        assert_eq!(r.backend, "claude");
        assert_eq!(r.model.as_deref(), Some("reviewer"));
        assert_eq!(r.time_budget, "5m");
        // A worker beats the role; the backend fills in what the worker leaves.
        let ask = Ask {
            role: "review",
            worker: Some("w"),
            ..Ask::default()
        };
        let r = route(&f, &ask).unwrap();
        assert_eq!(r.backend, "low");
        assert_eq!(r.effort.as_deref(), Some("high"));
        assert_eq!(r.model.as_deref(), Some("reviewer"));
        // Flags beat everything.
        let ask = Ask {
            backend: Some("claude"),
            effort: Some("max"),
            ..ask
        };
        let r = route(&f, &ask).unwrap();
        assert_eq!(
            (r.backend.as_str(), r.effort.as_deref()),
            ("claude", Some("max"))
        );
        assert!(
            route(
                &f,
                &Ask {
                    role: "implement",
                    worker: Some("nobody"),
                    ..Ask::default()
                }
            )
            .is_err()
        );
    }
}
