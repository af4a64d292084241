//! The MCP server of one session: its tools (the CLI's operations, each run on a thread of
//! its own through `spawn_blocking`, since the operations block), the runs as resources,
//! the subscriptions to them, and the warnings the operations meet, sent as log messages.
// Logging, which rmcp marks deprecated after SEP-2577 (protocol 2026-07-28), is part of the
// 2025 revisions this server speaks.
#![allow(deprecated)]

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
    LoggingMessageNotificationParam, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ResourceUpdatedNotificationParam,
    ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscribeRequestParams, Tool,
    ToolAnnotations, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};
use tokio::sync::broadcast;

use super::resources;
use super::tools::{self, Kind};
use super::watch::Moved;
use crate::error::{CrewError, Result};
use crate::ops::answer;

/// What every session of one server shares.
pub struct Shared {
    /// The folder the server runs in (after `-C`): every operation starts from it.
    pub cwd: PathBuf,
    pub tools: Vec<tools::Tool>,
    /// What the watcher tells of runs that moved.
    pub moved: broadcast::Sender<Arc<Moved>>,
}

/// One at a time, the actions of this server: a verify ends every process the server
/// started but its supervisors, so two actions must never overlap.
static ACTING: Mutex<()> = Mutex::new(());

/// One session: the shared server, its subscriptions and its log level.
#[derive(Clone)]
pub struct Session {
    shared: Arc<Shared>,
    subscribed: Arc<Mutex<HashSet<String>>>,
    level: Arc<Mutex<LoggingLevel>>,
}

impl Session {
    pub fn new(shared: Arc<Shared>) -> Session {
        Session {
            shared,
            subscribed: Arc::default(),
            level: Arc::new(Mutex::new(LoggingLevel::Warning)),
        }
    }

    /// Runs `work` in a fresh [`ops::Context`](crate::ops::Context) on a blocking thread;
    /// returns its result and the warnings it noted.
    pub async fn blocking<T: Send + 'static>(
        &self,
        kind: Kind,
        work: impl FnOnce(&crate::ops::Context) -> Result<T> + Send + 'static,
    ) -> (Result<T>, Vec<String>) {
        let cwd = self.shared.cwd.clone();
        let joined = tokio::task::spawn_blocking(move || {
            let _one = match kind {
                Kind::Act => Some(ACTING.lock().unwrap_or_else(|e| e.into_inner())),
                Kind::Read | Kind::Query | Kind::Wait => None,
            };
            let ctx = crate::ops::Context::new(cwd);
            let result = work(&ctx);
            (result, ctx.take_warnings())
        })
        .await;
        joined.unwrap_or_else(|e| {
            (
                Err(CrewError::internal(format!("the operation failed: {e}"))),
                Vec::new(),
            )
        })
    }

    /// Tells the client each warning, as a log message, when its level lets warnings
    /// through.
    async fn say(&self, peer: &Peer<RoleServer>, warnings: Vec<String>) {
        let level = *self.level.lock().unwrap_or_else(|e| e.into_inner());
        if severity(level) > severity(LoggingLevel::Warning) {
            return;
        }
        for warning in warnings {
            let sent = peer
                .notify_logging_message(
                    LoggingMessageNotificationParam::new(
                        LoggingLevel::Warning,
                        serde_json::Value::String(warning),
                    )
                    .with_logger("git-crew"),
                )
                .await;
            if sent.is_err() {
                return;
            }
        }
    }

    /// Sends `notifications/resources/updated` for each subscribed resource that `moved`
    /// touches, and `list_changed` when runs came or went; until the client is gone.
    async fn tell(self, peer: Peer<RoleServer>) {
        let mut moved = self.shared.moved.subscribe();
        loop {
            // Some missed (the client is slow to read): every subscription may have moved.
            let (moved, missed) = match moved.recv().await {
                Ok(moved) => (moved, false),
                Err(broadcast::error::RecvError::Lagged(_)) => (
                    Arc::new(Moved {
                        runs: Default::default(),
                        listed: true,
                    }),
                    true,
                ),
                Err(broadcast::error::RecvError::Closed) => return,
            };
            let uris: Vec<String> = {
                let subscribed = self.subscribed.lock().unwrap_or_else(|e| e.into_inner());
                subscribed
                    .iter()
                    .filter(|uri| missed || resources::touches(uri, &moved))
                    .cloned()
                    .collect()
            };
            for uri in uris {
                let sent = peer
                    .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                    .await;
                if sent.is_err() {
                    return;
                }
            }
            if moved.listed && peer.notify_resource_list_changed().await.is_err() {
                return;
            }
        }
    }
}

/// How severe a level is, lowest first.
fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// The tool as `tools/list` gives it.
fn listed(tool: &tools::Tool) -> Tool {
    let read_only = tool.kind == Kind::Read;
    let annotations = ToolAnnotations::new()
        .read_only(read_only)
        .destructive(tool.name == "abandon")
        .idempotent(read_only || matches!(tool.kind, Kind::Query | Kind::Wait))
        .open_world(false);
    Tool::new(tool.name, tool.description, Arc::new(tool.input.clone()))
        .with_raw_output_schema(Arc::new(tool.output.clone()))
        .with_annotations(annotations)
}

/// A tool call's result: the command's JSON as structured content (and as text), an
/// error when the command says `"ok": false` — a refusal, or a check that said no.
fn result(outcome: Result<tools::Answer>) -> CallToolResult {
    match outcome {
        Ok(tools::Answer {
            fields,
            status,
            notes,
        }) => {
            let failed = status.failure().is_some();
            let json = answer::envelope(fields, &status);
            let mut result = if failed {
                CallToolResult::structured_error(json)
            } else {
                CallToolResult::structured(json)
            };
            result
                .content
                .extend(notes.into_iter().map(ContentBlock::text));
            result
        }
        Err(error) => CallToolResult::structured_error(answer::refusal(&error)),
    }
}

const INSTRUCTIONS: &str = "git-crew dispatches coding agents into fenced worktrees and keeps their record in git. \
Each tool is a git-crew command and returns that command's JSON: status, show, diff, ledger, should_stop, plan_status, wave_status and workers read; \
dispatch, wave_dispatch, advise, verify, integrate, abandon and retry act; wait waits 50 s at most. \
A refusal is a tool error whose JSON carries error.code, error.message and error.hint. \
Runs are resources (crew://runs, crew://runs/<run>); subscribe to one to hear when it changes phase.";

impl ServerHandler for Session {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_resources_list_changed()
            .enable_tools()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new("git-crew", env!("CARGO_PKG_VERSION")).with_title("git-crew"),
            )
            .with_instructions(INSTRUCTIONS)
    }

    /// The revisions with `resources/subscribe`, `notifications/resources/updated` and
    /// the `initialize` handshake: up to 2025-11-25.
    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        tokio::spawn(self.clone().tell(context.peer));
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.shared.tools.iter().map(listed).collect(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.shared
            .tools
            .iter()
            .find(|t| t.name == name)
            .map(listed)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, ErrorData> {
        let Some(index) = self
            .shared
            .tools
            .iter()
            .position(|t| t.name == request.name)
        else {
            return Err(ErrorData::invalid_params(
                format!("no tool named {}", request.name),
                None,
            ));
        };
        let kind = self.shared.tools[index].kind;
        let shared = self.shared.clone();
        let arguments = request.arguments.unwrap_or_default();
        let (outcome, warnings) = self
            .blocking(kind, move |ctx| shared.tools[index].call(ctx, arguments))
            .await;
        self.say(&context.peer, warnings).await;
        Ok(result(outcome).into())
    }

    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourcesResult, ErrorData> {
        let (listed, _) = self.blocking(Kind::Read, resources::list).await;
        // A repository with no runs (or none git-crew can read) still lists `crew://runs`.
        let runs = listed.unwrap_or_default();
        Ok(ListResourcesResult::with_all_items(resources::listing(
            &runs,
        )))
    }

    async fn list_resource_templates(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            resources::template(),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _: RequestContext<RoleServer>,
    ) -> std::result::Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        let Some(read) = resources::Read::of(&uri) else {
            return Err(ErrorData::resource_not_found(
                format!("git-crew has no resource {uri}"),
                None,
            ));
        };
        let (json, _) = self.blocking(Kind::Read, move |ctx| read.json(ctx)).await;
        match json {
            Ok(json) => Ok(resources::contents(&uri, &json).into()),
            Err(error) => Err(resources::not_read(&uri, &error)),
        }
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _: RequestContext<RoleServer>,
    ) -> std::result::Result<(), ErrorData> {
        self.subscribed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(request.uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _: RequestContext<RoleServer>,
    ) -> std::result::Result<(), ErrorData> {
        self.subscribed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&request.uri);
        Ok(())
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _: RequestContext<RoleServer>,
    ) -> std::result::Result<(), ErrorData> {
        *self.level.lock().unwrap_or_else(|e| e.into_inner()) = request.level;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use crate::ops::answer::Status;

    #[test]
    fn a_refusal_is_a_tool_error_carrying_the_clis_json() {
        let refused = CrewError::new(ErrorCode::RunNotFound, "no run matches x");
        let result = result(Err(refused.clone()));
        assert_eq!(result.is_error, Some(true));
        let json = result.structured_content.unwrap();
        assert_eq!(json, answer::refusal(&refused));
        assert_eq!(json["error"]["code"], "run-not-found");
        assert!(
            json["error"]["hint"]
                .as_str()
                .is_some_and(|h| !h.is_empty())
        );
    }

    #[test]
    fn a_check_that_said_no_is_a_tool_error_with_its_data_and_attention_is_not() {
        let mut fields = serde_json::Map::new();
        fields.insert("runs".into(), serde_json::json!([]));
        let failed = result(Ok(tools::Answer {
            fields: fields.clone(),
            status: Status::Failed(CrewError::new(ErrorCode::RunFailed, "not every run passed")),
            notes: vec![],
        }));
        assert_eq!(failed.is_error, Some(true));
        let json = failed.structured_content.unwrap();
        assert_eq!(
            (json["ok"].clone(), json["runs"].clone()),
            (false.into(), serde_json::json!([]))
        );
        let attention = result(Ok(tools::Answer {
            fields,
            status: Status::Attention,
            notes: vec!["a note".into()],
        }));
        assert_eq!(attention.is_error, Some(false));
        assert_eq!(attention.content.len(), 2);
        assert_eq!(attention.structured_content.unwrap()["ok"], true);
    }
}
