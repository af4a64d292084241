//! The typed, resolved config: what the merged layers deserialize into.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::values::{AdapterKind, Enforcement, OnFail, Reflex, SandboxMode, WorktreeCleanup};
use crate::core::summary::At;

/// The resolved routing config (every layer merged and validated).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flight {
    pub version: i64,
    pub default_backend: String,
    pub tiers: Vec<String>,
    #[serde(default)]
    pub backends: BTreeMap<String, Backend>,
    #[serde(default)]
    pub workers: BTreeMap<String, Worker>,
    #[serde(default)]
    pub roles: BTreeMap<String, RoleRouting>,
    pub gates: Gates,
    pub fences: Fences,
    pub worktree: WorktreePolicy,
    pub plans: PlansPolicy,
    pub summary: SummaryPolicy,
    pub sandbox: SandboxPolicy,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SandboxPolicy {
    pub enabled: bool,
    pub require: bool,
    pub writable: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Backend {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<AdapterKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_reuse: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_budget: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_args: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_argv: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Worker {
    pub backend: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RoleRouting {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_budget: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gates {
    pub enforce: Enforcement,
    pub require_evidence: bool,
    pub on_fail: OnFail,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fences {
    pub time_budget: String,
    pub needs_help_after_failures: i64,
    pub max_attempts: i64,
    pub max_output: i64,
    pub manifest_required: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorktreePolicy {
    pub cleanup: WorktreeCleanup,
    pub port_range: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlansPolicy {
    pub stale_after_days: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryPolicy {
    pub reflex: Reflex,
    pub at: Vec<At>,
}
