//! `git crew flight [--explain]` and `git crew flight schema`: the resolved routing config.

use clap::{Args, Subcommand};

use super::context::CommandContext;
use super::error::{CrewError, Result};
use super::ui::Report;
use crate::core::flight::{self, Invocation, Layer, Resolved};

const FLIGHT_EXAMPLES: &str = "Examples:\n  git crew flight --explain\n  git crew flight --backend claude --effort high\n  git crew flight --set backends.codex.concurrency=5\n  git crew flight schema > flight.schema.json";

/// Print the resolved routing config.
///
/// Four layers, each overriding the one below, merged key by key: the shipped defaults,
/// the user's `$XDG_CONFIG_HOME/git-crew/flight.toml` (else `~/.config/git-crew/flight.toml`),
/// the project's `.crew/flight.toml`, and the routing flags of this invocation.
#[derive(Debug, Args)]
#[command(after_help = FLIGHT_EXAMPLES)]
#[command(args_conflicts_with_subcommands = true)]
pub struct FlightArgs {
    #[command(subcommand)]
    pub action: Option<FlightAction>,

    /// Say which layer each value comes from.
    #[arg(long)]
    pub explain: bool,

    #[command(flatten)]
    pub routing: RoutingArgs,
}

#[derive(Debug, Subcommand)]
pub enum FlightAction {
    /// Print the JSON Schema of flight.toml.
    ///
    /// For taplo and other TOML editors.
    Schema,
}

/// The invocation layer: routing flags any command that resolves routing accepts.
#[derive(Debug, Clone, Default, Args)]
pub struct RoutingArgs {
    /// Route to this backend (sets `default_backend`).
    #[arg(long, value_name = "NAME")]
    pub backend: Option<String>,
    /// The model of the chosen backend.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// The reasoning effort of the chosen backend.
    #[arg(long, value_name = "EFFORT")]
    pub effort: Option<String>,
    /// How many runs of the chosen backend may be live at once.
    #[arg(long, value_name = "N")]
    pub concurrency: Option<String>,
    /// The time budget of a run of the chosen backend (e.g. 25m, 1h 30m).
    #[arg(long, value_name = "DURATION")]
    pub time_budget: Option<String>,
    /// The spend fence in dollars: the run ends once it has spent this much (sets
    /// `fences.max_cost_usd`).
    #[arg(long, value_name = "USD", allow_negative_numbers = true)]
    pub max_cost: Option<String>,
    /// The spend fence in tokens, in and out (sets `fences.max_tokens`).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_tokens: Option<String>,
    /// Set any key: dotted.key=value (value in TOML syntax, or a plain string).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

impl RoutingArgs {
    pub fn invocation(&self) -> Invocation {
        Invocation {
            backend: self.backend.clone(),
            model: self.model.clone(),
            effort: self.effort.clone(),
            concurrency: self.concurrency.clone(),
            time_budget: self.time_budget.clone(),
            max_cost: self.max_cost.clone(),
            max_tokens: self.max_tokens.clone(),
            set: self.set.clone(),
        }
    }
}

pub fn run(ctx: &CommandContext, args: FlightArgs) -> Result<Report> {
    if let Some(FlightAction::Schema) = args.action {
        let schema = flight::json_schema();
        let human = serde_json::to_string_pretty(&schema)
            .map_err(|e| CrewError::internal(e.to_string()))?;
        // The document itself, with no envelope: it is what an editor loads.
        let mut report = Report::new(schema, human);
        report.raw = true;
        return Ok(report);
    }
    let resolved = resolve(ctx, &args.routing)?;
    let sources = resolved.sources();
    let mut human = String::new();
    flight::leaves("", &resolved.table, &mut |key, value| {
        human.push_str(&format!("{key} = {value}"));
        if args.explain {
            let origin = resolved.origin_of(key);
            let layer = origin.map_or(Layer::Default, |o| o.layer);
            human.push_str(&format!("    # {}", layer.as_str()));
            if let Some(o) = origin.filter(|o| o.layer != Layer::Default) {
                human.push_str(&format!(" ({}", o.origin));
                if let Some((line, col)) = o.location {
                    human.push_str(&format!(":{line}:{col}"));
                }
                human.push(')');
            }
        }
        human.push('\n');
    });
    let fence = crate::ops::flight::fence(&resolved.flight);
    human.push_str(&format!("# fence: {fence}\n"));
    let output = FlightOutput {
        flight: &resolved.flight,
        fence,
        sources: args.explain.then_some(&sources),
    };
    Ok(Report::of(&output, human))
}

/// What `flight` prints: the resolved config, the fence a worker would get, and (with
/// `--explain`) each value's layer.
#[derive(serde::Serialize)]
struct FlightOutput<'a, S: serde::Serialize> {
    flight: &'a crate::core::flight::Flight,
    fence: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    sources: Option<&'a S>,
}

/// Resolves the routing config for this invocation and its routing flags
/// ([`crate::ops::flight::resolve`]).
pub fn resolve(ctx: &CommandContext, routing: &RoutingArgs) -> Result<Resolved> {
    crate::ops::flight::resolve(ctx, &routing.invocation())
}
