//! The tools: the CLI's operations, each through its `ops` function, with the arguments
//! of its flags and the JSON its `--json` prints. A tool's input schema comes from the
//! type its arguments are read into, its output schema from the type the command's JSON
//! is serialised from (`view::output`, and `ops` where the output holds `run`'s types).

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::core::flight::Invocation;
use crate::core::scope::Role;
use crate::error::{CrewError, ErrorCode, Result};
use crate::ops::Context;
use crate::ops::answer::{self, Status};

use super::schema;

/// The longest a `wait` holds a tool call: the lead's turn waits for it, and codex gives
/// a tool call 60 s unless told otherwise.
pub const WAIT_AT_MOST: Duration = Duration::from_secs(50);

/// What a tool call came to: the command's JSON object and how it came out, and notes
/// for the lead beside the JSON (a wait cut to [`WAIT_AT_MOST`]).
pub struct Answer {
    pub fields: Map<String, Value>,
    pub status: Status,
    pub notes: Vec<String>,
}

impl Answer {
    fn of<T: serde::Serialize>(data: &T, status: Status) -> Result<Answer> {
        Ok(Answer {
            fields: answer::fields(data)?,
            status,
            notes: Vec::new(),
        })
    }

    fn ok<T: serde::Serialize>(data: &T) -> Result<Answer> {
        Answer::of(data, Status::Ok)
    }
}

/// How a tool may run beside the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A read on a snapshot: changes nothing, runs beside anything.
    Read,
    /// A read that may write a report (`should_stop` at the top tier).
    Query,
    /// An action: one at a time in this server (a verify ends every process this server
    /// started but its supervisors, so two must not overlap).
    Act,
    /// `wait`: settles the store while it polls, beside the reads and the actions.
    Wait,
}

type Call = Box<dyn Fn(&Context, Value) -> Result<Answer> + Send + Sync>;

/// One tool: its name, what it does, its schemas and how to call it.
pub struct Tool {
    pub name: &'static str,
    pub description: &'static str,
    pub kind: Kind,
    pub input: Map<String, Value>,
    pub output: Map<String, Value>,
    call: Call,
}

impl Tool {
    /// Reads `arguments` into the tool's input and runs it: an argument the tool does not
    /// take, or one of the wrong type, is a usage error (exit 2), as a wrong flag is.
    pub fn call(&self, ctx: &Context, arguments: Map<String, Value>) -> Result<Answer> {
        let names = schema::argument_names(&self.input);
        if let Some(unknown) = arguments.keys().find(|k| !names.contains(k)) {
            return Err(CrewError::new(
                ErrorCode::Usage,
                format!("{} takes no argument `{unknown}`", self.name),
            )
            .hinted(format!("its arguments: {}", names.join(", "))));
        }
        (self.call)(ctx, Value::Object(arguments))
    }
}

/// A tool whose arguments are read into `I` and whose output is `O`'s JSON.
fn tool<I, O>(
    name: &'static str,
    kind: Kind,
    description: &'static str,
    run: fn(&Context, I) -> Result<Answer>,
) -> Tool
where
    I: DeserializeOwned + JsonSchema + 'static,
    O: JsonSchema,
{
    Tool {
        name,
        description,
        kind,
        input: schema::input::<I>(),
        output: schema::output::<O>(),
        call: Box::new(move |ctx, arguments| {
            let input: I = serde_json::from_value(arguments).map_err(|e| {
                CrewError::new(ErrorCode::Usage, format!("{name}: {e}"))
                    .hinted("tools/list gives each tool's arguments and their types")
            })?;
            run(ctx, input)
        }),
    }
}

/// Every tool, reads first.
pub fn all() -> Vec<Tool> {
    use crate::view::output as out;
    vec![
        tool::<StatusIn, out::StatusAnswer<'static>>(
            "status",
            Kind::Read,
            "The runs in flight and the recent ones, oldest first, each with its phase, footer, verify, decision, integration and supervisor (`git crew status --json`). A read: changes nothing. With fleet: true, the runs in flight on every machine of the fleet instead, from the claims on its remote (`git crew status --fleet --json`): fetching them is all it changes.",
            status,
        ),
        tool::<RunIn, crate::view::result::FoundOutput<'static>>(
            "show",
            Kind::Read,
            "One run's record: fences, phase, attempts, the footer the worker handed back, verify result, decision (`git crew show RUN --json`). Never the transcript. A read.",
            show,
        ),
        tool::<DiffIn, out::DiffOutput<'static>>(
            "diff",
            Kind::Read,
            "A run's change, exactly what integrate would apply and audit: the patch, a diffstat or each path with its status (`git crew diff RUN --json`). A read.",
            diff,
        ),
        tool::<LedgerIn, out::LedgerOutput<'static>>(
            "ledger",
            Kind::Read,
            "The outcome ledger: one row per finished attempt, oldest first; with stats, what it teaches of each agent configuration (`git crew ledger [stats] --json`). A read.",
            ledger,
        ),
        tool::<ShouldStopIn, out::ShouldStopOutput<'static>>(
            "should_stop",
            Kind::Query,
            "The two-failure rule for a task and model: continue, escalate-tier (naming the next tier's backend) or human-report, which writes the report under .git/crew/reports/ (`git crew should-stop --json`). Anything but continue comes back with ok true and needs the lead.",
            should_stop,
        ),
        tool::<PlanIn, out::PlanStatusOutput<'static>>(
            "plan_status",
            Kind::Read,
            "Every task of a plan with its derived status (done, in-flight, ready, blocked with its blockers) and every gate with its latest verdict (`git crew plan status --json`). A read.",
            plan_status,
        ),
        tool::<WaveIn, out::WaveStatusOutput<'static>>(
            "wave_status",
            Kind::Read,
            "Whether wave N is complete, each task with its run, the closing gate's verdict and the follow-ons its footers deferred (`git crew wave status N --json`). A read.",
            wave_status,
        ),
        tool::<WorkersIn, out::WorkersOutput<'static>>(
            "workers",
            Kind::Read,
            "The roster of standing workers: backend, model, session, busy run, runs and pass rate (`git crew workers --json`). A read.",
            workers,
        ),
        tool::<DispatchIn, crate::view::dispatch::DispatchOutput<'static>>(
            "dispatch",
            Kind::Act,
            "Start a worker on a task in its own worktree and branch crew/<task>/<run>, fenced (write scope, time budget, delivery contract), under a detached supervisor that outlives this server; returns the run at once (`git crew dispatch --json`). Refused for a task with a live run, a scope overlapping a live run's, or a backend at its limit (queue: true waits for a slot). Then call wait.",
            dispatch,
        ),
        tool::<WaveDispatchIn, out::WaveDispatchOutput<'static>>(
            "wave_dispatch",
            Kind::Act,
            "Dispatch every ready task of a plan's wave at once, all or nothing; refused when two of its write scopes overlap (`git crew wave dispatch N --json`).",
            wave_dispatch,
        ),
        tool::<AdviseIn, out::AdviseOutput<'static>>(
            "advise",
            Kind::Act,
            "Answer a run that asked NEEDS-HELP: its session resumes with the advice, under the same fences (`git crew advise RUN --text T --json`).",
            advise,
        ),
        tool::<VerifyIn, out::VerifyOutput<'static>>(
            "verify",
            Kind::Act,
            "Run a finished run's verify command again in its worktree and record the verdict (`git crew verify RUN --json`); a failed verify is a tool error with code verify-failed.",
            verify,
        ),
        tool::<IntegrateIn, crate::ops::integrate_all::Either<'static>>(
            "integrate",
            Kind::Act,
            "Integrate a finished, verified run: audit its branch against its scope, merge it onto the target's tip away from the checkout (verifying the merge again when the target moved), write the run record notes, advance the target, clean up (`git crew integrate RUN --json`). With all: true instead of a run, every pass awaiting integration in the order the conflict forecast gives; it stops at the first refusal and says what landed, what refused and what is left (`git crew integrate --all --json`).",
            integrate,
        ),
        tool::<AbandonIn, crate::ops::abandon::Output<'static>>(
            "abandon",
            Kind::Act,
            "Stop a run, keeping its branch and commits; for an ended run, keep what it holds under refs/crew/attempts/<run>; for a run of another machine, drop its pass (or expired claim) from the fleet's remote (`git crew abandon RUN [--remote NAME] --json`).",
            abandon,
        ),
        tool::<RetryIn, crate::view::dispatch::DispatchOutput<'static>>(
            "retry",
            Kind::Act,
            "Dispatch an ended run's task again under the same fences, with feedback on how the run went (`git crew retry RUN --json`); the two-failure rule is asked first.",
            retry,
        ),
        tool::<WaitIn, out::WaitOutput<'static>>(
            "wait",
            Kind::Wait,
            "Wait until runs settle (end, or ask for help) and return their results: footer, verify, decision; never the transcript (`git crew wait RUNS --timeout T --json`). Waits 50 s at most (under the 60 s a client such as codex allows a tool call), so that the call never holds your turn: on timeout it returns timed_out true with the runs still working, and you call it again. A run that did not pass is a tool error with code run-failed and the runs' results.",
            wait,
        ),
    ]
}

/// A RUN argument: a run address, never a path.
fn address(run: &str) -> Result<String> {
    crate::ops::runs::run_address(run).map_err(|e| CrewError::new(ErrorCode::Usage, e))
}

/// The routing of the run to start, as the routing flags give it.
#[derive(Default, Deserialize, JsonSchema)]
pub struct Routing {
    /// Route to this backend (sets `default_backend`).
    backend: Option<String>,
    /// The model of the chosen backend.
    model: Option<String>,
    /// The reasoning effort of the chosen backend.
    effort: Option<String>,
    /// How many runs of the chosen backend may be live at once.
    concurrency: Option<String>,
    /// The time budget of a run of the chosen backend (e.g. 25m, 1h 30m).
    time_budget: Option<String>,
    /// The spend fence in dollars (`fences.max_cost_usd`).
    max_cost: Option<String>,
    /// The spend fence in tokens, in and out (`fences.max_tokens`).
    max_tokens: Option<String>,
    /// Flight keys for this call: dotted.key=value.
    #[serde(default)]
    set: Vec<String>,
}

impl Routing {
    fn invocation(self) -> Invocation {
        Invocation {
            backend: self.backend,
            model: self.model,
            effort: self.effort,
            concurrency: self.concurrency,
            time_budget: self.time_budget,
            max_cost: self.max_cost,
            max_tokens: self.max_tokens,
            set: self.set,
        }
    }
}

#[derive(Deserialize, JsonSchema)]
struct StatusIn {
    /// Only this run: its id, a unique part of it, its task, or @last.
    run: Option<String>,
    /// How many finished runs to include, most recent first (default 20).
    #[serde(default = "twenty")]
    recent: usize,
    /// Include every finished run.
    #[serde(default)]
    all: bool,
    /// The runs in flight on every machine of the fleet instead, from the claims on its
    /// remote (`status --fleet`).
    #[serde(default)]
    fleet: bool,
    /// The fleet's remote (default: fleet.remote); only with fleet.
    remote: Option<String>,
}

fn twenty() -> usize {
    20
}

fn status(ctx: &Context, input: StatusIn) -> Result<Answer> {
    use crate::view::output::StatusAnswer;
    let now = crate::sys::clock::now_millis();
    if input.fleet {
        if input.run.is_some() || input.all {
            return Err(CrewError::new(
                ErrorCode::Usage,
                "status: fleet lists the fleet's claims; give it without run or all",
            ));
        }
        let request = crate::ops::status::FleetRequest {
            remote: input.remote,
        };
        let fleet = crate::ops::status::fleet(ctx, &request)?;
        return Answer::ok(&StatusAnswer::Fleet(fleet.output(now)));
    }
    if input.remote.is_some() {
        return Err(CrewError::new(
            ErrorCode::Usage,
            "status: remote names the fleet's remote; give it with fleet: true",
        ));
    }
    let request = crate::ops::status::Request {
        run: input.run.as_deref().map(address).transpose()?,
        recent: input.recent,
        all: input.all,
    };
    let status = crate::ops::status::status(ctx, &request)?;
    Answer::ok(&StatusAnswer::Runs(status.output(now)))
}

#[derive(Deserialize, JsonSchema)]
struct RunIn {
    /// The run: its id, a unique part of it, its task, or @last.
    run: String,
}

fn show(ctx: &Context, input: RunIn) -> Result<Answer> {
    let request = crate::ops::show::Request {
        run: address(&input.run)?,
    };
    let shown = crate::ops::show::show(ctx, &request)?;
    Answer::ok(&shown.output(crate::sys::clock::now_millis()))
}

/// What `diff` shows.
#[derive(Default, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
enum Form {
    /// The patch.
    #[default]
    Patch,
    /// A diffstat.
    Stat,
    /// Each path with its status (A, M, D).
    NameStatus,
}

#[derive(Deserialize, JsonSchema)]
struct DiffIn {
    /// The run: its id, a unique part of it, its task, or @last.
    run: String,
    /// The patch (default), a diffstat, or each path with its status.
    #[serde(default)]
    form: Form,
}

fn diff(ctx: &Context, input: DiffIn) -> Result<Answer> {
    use crate::ops::diff::Shown;
    let request = crate::ops::diff::Request {
        run: address(&input.run)?,
        shown: match input.form {
            Form::Patch => Shown::Patch,
            Form::Stat => Shown::Stat,
            Form::NameStatus => Shown::NameStatus,
        },
        page: false,
    };
    Answer::ok(&crate::ops::diff::diff(ctx, &request)?.output())
}

#[derive(Deserialize, JsonSchema)]
struct LedgerIn {
    /// Only this task's rows.
    task: Option<String>,
    /// Learn from the ledger per agent configuration instead of listing it.
    #[serde(default)]
    stats: bool,
}

fn ledger(ctx: &Context, input: LedgerIn) -> Result<Answer> {
    let request = crate::ops::ledger::Request {
        task: input.task,
        stats: input.stats,
    };
    Answer::ok(&crate::ops::ledger::ledger(ctx, &request)?.output())
}

#[derive(Deserialize, JsonSchema)]
struct ShouldStopIn {
    task: String,
    /// The model, or backend:<name> for a backend that names no model.
    model: String,
    /// The tier the model runs at (default: the tier of the backend using it).
    tier: Option<String>,
    /// Flight keys for this decision: dotted.key=value.
    #[serde(default)]
    set: Vec<String>,
}

fn should_stop(ctx: &Context, input: ShouldStopIn) -> Result<Answer> {
    let request = crate::ops::ledger::ShouldStopRequest {
        task: input.task,
        model: input.model,
        tier: input.tier,
        set: input.set,
    };
    let stopped = crate::ops::ledger::should_stop(ctx, &request)?;
    Answer::of(&stopped.output(&request), stopped.status())
}

#[derive(Deserialize, JsonSchema)]
struct PlanIn {
    /// The plan (default: the only one in .crew/plans).
    plan: Option<String>,
}

fn plan_status(ctx: &Context, input: PlanIn) -> Result<Answer> {
    let request = crate::ops::plan::Request { plan: input.plan };
    Answer::ok(&crate::ops::plan::status(ctx, &request)?.output())
}

#[derive(Deserialize, JsonSchema)]
struct WaveIn {
    wave: u32,
    /// The plan (default: the only one in .crew/plans).
    plan: Option<String>,
}

fn wave_status(ctx: &Context, input: WaveIn) -> Result<Answer> {
    let request = crate::ops::wave::StatusRequest {
        wave: input.wave,
        plan: input.plan,
    };
    Answer::ok(&crate::ops::wave::status(ctx, &request)?.output())
}

#[derive(Deserialize, JsonSchema)]
struct WorkersIn {}

fn workers(ctx: &Context, _: WorkersIn) -> Result<Answer> {
    let workers = crate::ops::workers::workers(ctx, &crate::ops::workers::Request {})?;
    Answer::ok(&crate::ops::workers::output(&workers))
}

#[derive(Deserialize, JsonSchema)]
struct DispatchIn {
    /// The task id (becomes part of the branch name).
    task: String,
    /// The task, as text.
    prompt: Option<String>,
    /// The task, from a file (relative to the repository's folder the server runs in).
    prompt_file: Option<String>,
    /// Globs the run may write; required for implement and cleanup runs.
    #[serde(default)]
    scope: Vec<String>,
    /// What the run is for (default implement): review and investigate runs write a
    /// manifest, never commits.
    role: Option<Role>,
    /// The command that checks the work, run in the worktree.
    verify: Option<String>,
    /// Cut the worktree from this revision instead of HEAD.
    base: Option<String>,
    /// Decide everything and return the run that would start; create nothing.
    #[serde(default)]
    dry_run: bool,
    /// Beyond the backend's concurrency, queue the run instead of refusing it.
    #[serde(default)]
    queue: bool,
    /// When verify fails, try again while the budget remains.
    #[serde(default)]
    continue_until_pass: bool,
    /// Take the task's role, scope, prompt, verify, size and worker from this plan.
    plan: Option<String>,
    /// The task's size in worker-hours.
    size: Option<f64>,
    /// Route through this standing worker of the roster.
    worker: Option<String>,
    /// Archive raw transcripts in this folder instead of .git/crew/transcripts; "" disables them.
    transcripts: Option<String>,
    /// Claim the task on this git remote first (a fleet sharing it; default fleet.remote).
    remote: Option<String>,
    #[serde(flatten)]
    routing: Routing,
}

fn dispatch(ctx: &Context, input: DispatchIn) -> Result<Answer> {
    use crate::ops::dispatch::Prompt;
    let usage = |message: String| CrewError::new(ErrorCode::Usage, message);
    let prompt = match (input.prompt, input.prompt_file) {
        (Some(_), Some(_)) => {
            return Err(usage("give prompt or prompt_file, not both".into()));
        }
        (Some(text), None) => Some(Prompt::Text(text)),
        (None, Some(file)) => Some(Prompt::File(file.into())),
        (None, None) if input.plan.is_some() => None,
        (None, None) => {
            return Err(usage(
                "give the task as prompt or prompt_file, or name its plan".into(),
            ));
        }
    };
    let size_h = input
        .size
        .map(crate::ops::dispatch::size_hours)
        .transpose()
        .map_err(usage)?;
    let request = crate::ops::dispatch::Request {
        task: input.task,
        prompt,
        scope: input.scope,
        role: input.role,
        verify: input.verify,
        base: input.base,
        queue: input.queue,
        continue_until_pass: input.continue_until_pass,
        plan: input.plan,
        size_h,
        worker: input.worker,
        transcripts: input.transcripts,
        invocation: input.routing.invocation(),
        dry_run: input.dry_run,
        remote: input.remote,
    };
    dispatched(ctx, crate::ops::dispatch::dispatch(ctx, &request)?)
}

/// A dispatch's output, its warnings said as the CLI says them.
fn dispatched(ctx: &Context, dispatched: crate::ops::dispatch::Dispatched) -> Result<Answer> {
    let warnings = dispatched.said();
    if dispatched.started.record.is_some() {
        for warning in &warnings {
            ctx.warn(warning);
        }
    }
    Answer::ok(&dispatched.output(&warnings))
}

#[derive(Deserialize, JsonSchema)]
struct WaveDispatchIn {
    wave: u32,
    /// The plan (default: the only one in .crew/plans).
    plan: Option<String>,
    /// Decide every task's run and return them; start nothing.
    #[serde(default)]
    dry_run: bool,
    #[serde(flatten)]
    routing: Routing,
}

fn wave_dispatch(ctx: &Context, input: WaveDispatchIn) -> Result<Answer> {
    let request = crate::ops::wave::Request {
        wave: input.wave,
        plan: input.plan,
        dry_run: input.dry_run,
        invocation: input.routing.invocation(),
    };
    let waved = crate::ops::wave::dispatch(ctx, &request)?;
    let said = waved.said();
    Answer::ok(&waved.output(&said))
}

#[derive(Deserialize, JsonSchema)]
struct AdviseIn {
    /// The run that asked: its id, a unique part of it, its task, or @last.
    run: String,
    /// The answer.
    text: String,
}

fn advise(ctx: &Context, input: AdviseIn) -> Result<Answer> {
    let request = crate::ops::advise::Request {
        run: address(&input.run)?,
        text: input.text,
    };
    Answer::ok(&crate::ops::advise::advise(ctx, &request)?.output())
}

#[derive(Deserialize, JsonSchema)]
struct VerifyIn {
    /// The run: its id, a unique part of it, its task, or @last.
    run: String,
    /// The verify command to use (and keep) instead of the run's own.
    command: Option<String>,
}

fn verify(ctx: &Context, input: VerifyIn) -> Result<Answer> {
    let request = crate::ops::verify::Request {
        run: address(&input.run)?,
        command: input.command,
    };
    let (verdict, record) = crate::ops::verify::verify(ctx, &request)?;
    Answer::of(
        &crate::ops::verify::output(&verdict, &record),
        crate::ops::verify::status(&verdict, &record),
    )
}

#[derive(Deserialize, JsonSchema)]
struct IntegrateIn {
    /// The run: its id, a unique part of it, its task, or @last. Or `all`.
    run: Option<String>,
    /// Every pass awaiting integration, in the order the conflict forecast gives.
    #[serde(default)]
    all: bool,
    /// The branch to integrate into (default: the branch the run was cut from).
    into: Option<String>,
    /// One commit on the target instead of a merge commit.
    #[serde(default)]
    squash: bool,
    /// Integrate although verify did not pass (recorded in the note).
    #[serde(default)]
    force_unverified: bool,
    /// Flight keys for this call: dotted.key=value.
    #[serde(default)]
    set: Vec<String>,
    /// Audit, check the gates and build the merge, then say what would land; change nothing.
    #[serde(default)]
    dry_run: bool,
    /// Land through this git remote (a fleet sharing it; default fleet.remote).
    remote: Option<String>,
}

fn integrate(ctx: &Context, input: IntegrateIn) -> Result<Answer> {
    let usage = |message: &str| Err(CrewError::new(ErrorCode::Usage, message));
    let observe = |event: crate::ops::integrate::Event<'_>| {
        if let crate::ops::integrate::Event::Warning(warning) = event {
            ctx.warn(warning);
        }
    };
    let link = |link: &String| ctx.warn(format!("symlink outside the run's scope: {link}"));
    let run = match (input.run, input.all) {
        (Some(_), true) => return usage("give a run or all, not both"),
        (None, false) => return usage("give the run to integrate, or all: true"),
        (Some(run), false) => run,
        (None, true) if input.force_unverified => {
            return usage("force_unverified is for one run, not all");
        }
        (None, true) => {
            let request = crate::ops::integrate_all::Request {
                into: input.into,
                squash: input.squash,
                invocation: Invocation {
                    set: input.set,
                    ..Invocation::default()
                },
                dry_run: input.dry_run,
                remote: input.remote,
            };
            let all = crate::ops::integrate_all::integrate_all(ctx, &request, &observe)?;
            for done in &all.landed {
                done.landing.links_outside_scope.iter().for_each(link);
            }
            return Answer::of(
                &crate::ops::integrate_all::Either::All(all.output()),
                all.status(),
            );
        }
    };
    let request = crate::ops::integrate::Request {
        run: address(&run)?,
        into: input.into,
        squash: input.squash,
        force_unverified: input.force_unverified,
        invocation: Invocation {
            set: input.set,
            ..Invocation::default()
        },
        dry_run: input.dry_run,
        remote: input.remote,
    };
    let done = crate::ops::integrate::integrate(ctx, &request, &observe)?;
    done.landing.links_outside_scope.iter().for_each(link);
    Answer::ok(&crate::ops::integrate_all::Either::One(
        crate::ops::integrate::output(&done),
    ))
}

#[derive(Deserialize, JsonSchema)]
struct AbandonIn {
    /// The run: its id, a unique part of it, its task, or @last.
    run: String,
    /// A fleet's remote (else `fleet.remote`) where a run of another machine holds a claim
    /// to drop: a pass never integrated, or a claim whose lease ran out.
    #[serde(default)]
    remote: Option<String>,
}

fn abandon(ctx: &Context, input: AbandonIn) -> Result<Answer> {
    let request = crate::ops::abandon::Request {
        run: address(&input.run)?,
        remote: input.remote,
    };
    let abandoned = crate::ops::abandon::abandon(ctx, &request)?;
    Answer::ok(&abandoned.output(crate::sys::clock::now_millis()))
}

#[derive(Deserialize, JsonSchema)]
struct RetryIn {
    /// The run to retry: its id, a unique part of it, its task, or @last.
    run: String,
    /// The lead's feedback for the new run (default: what was measured in the run).
    text: Option<String>,
    /// Decide everything and return the run that would start; create nothing.
    #[serde(default)]
    dry_run: bool,
    /// Beyond the backend's concurrency, queue the run instead of refusing it.
    #[serde(default)]
    queue: bool,
    /// Routing for the new run (default: the old run's backend, model and budget).
    #[serde(flatten)]
    routing: Routing,
}

fn retry(ctx: &Context, input: RetryIn) -> Result<Answer> {
    let request = crate::ops::retry::Request {
        run: address(&input.run)?,
        text: input.text,
        queue: input.queue,
        invocation: input.routing.invocation(),
        dry_run: input.dry_run,
    };
    dispatched(ctx, crate::ops::retry::retry(ctx, &request)?)
}

#[derive(Deserialize, JsonSchema)]
struct WaitIn {
    /// The runs to wait for: run ids, unique parts of them, task ids, or @last.
    #[schemars(length(min = 1))]
    runs: Vec<String>,
    /// Return as soon as one of them settles.
    #[serde(default)]
    any: bool,
    /// Give up after this long (e.g. 30s): 50 s at most, the default; a longer one is
    /// cut to 50 s, and the result says so.
    timeout: Option<String>,
}

fn wait(ctx: &Context, input: WaitIn) -> Result<Answer> {
    if input.runs.is_empty() {
        return Err(CrewError::new(
            ErrorCode::Usage,
            "wait: name the runs to wait for",
        ));
    }
    let asked = input
        .timeout
        .as_deref()
        .map(|t| {
            humantime::parse_duration(t)
                .map_err(|e| CrewError::new(ErrorCode::BadDuration, format!("timeout {t}: {e}")))
        })
        .transpose()?;
    let (timeout, note) = bounded(asked);
    let request = crate::ops::wait::Request {
        runs: input
            .runs
            .iter()
            .map(|r| address(r))
            .collect::<Result<_>>()?,
        any: input.any,
        timeout: Some(timeout),
    };
    let waited = crate::ops::wait::wait(ctx, &request, |poll| {
        if let crate::ops::wait::Poll::Warning(warning) = poll {
            ctx.warn(warning);
        }
    })?;
    let mut answer = Answer::of(
        &waited.output(crate::sys::clock::now_millis()),
        waited.status(),
    )?;
    answer.notes.extend(note);
    Ok(answer)
}

/// The timeout a wait waits for: the one asked, cut to [`WAIT_AT_MOST`] (and a note
/// saying so when it was cut); [`WAIT_AT_MOST`] when none was asked.
pub fn bounded(asked: Option<Duration>) -> (Duration, Option<String>) {
    match asked {
        Some(t) if t > WAIT_AT_MOST => (
            WAIT_AT_MOST,
            Some(format!(
                "the timeout {} was cut to {}: a wait holds a tool call 50 s at most; call wait again for the runs still working",
                humantime::format_duration(t),
                humantime::format_duration(WAIT_AT_MOST)
            )),
        ),
        Some(t) => (t, None),
        None => (WAIT_AT_MOST, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_is_cut_to_a_minute_and_says_so() {
        assert_eq!(bounded(None), (WAIT_AT_MOST, None));
        let (t, note) = bounded(Some(Duration::from_secs(5)));
        assert_eq!((t, note), (Duration::from_secs(5), None));
        let (t, note) = bounded(Some(Duration::from_secs(600)));
        assert_eq!(t, WAIT_AT_MOST);
        assert!(note.unwrap().contains("10m was cut to 50s"));
    }

    #[test]
    fn every_tool_has_an_object_input_and_output_schema_and_a_unique_name() {
        let tools = all();
        let mut names: Vec<&str> = tools.iter().map(|t| t.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), tools.len());
        for t in &tools {
            assert_eq!(t.input["type"], "object", "{}", t.name);
            assert_eq!(t.input["additionalProperties"], false, "{}", t.name);
            assert_eq!(t.output["type"], "object", "{}", t.name);
            for schema in [&t.input, &t.output] {
                jsonschema::validator_for(&Value::Object(schema.clone()))
                    .unwrap_or_else(|e| panic!("{}: {e}", t.name));
            }
        }
    }

    #[test]
    fn an_argument_a_tool_does_not_take_is_a_usage_error() {
        let tools = all();
        let show = tools.iter().find(|t| t.name == "show").unwrap();
        let ctx = Context::new(std::env::temp_dir());
        let mut args = Map::new();
        args.insert("run".into(), "x".into());
        args.insert("verbose".into(), true.into());
        let Err(err) = show.call(&ctx, args) else {
            panic!("an unknown argument was taken")
        };
        assert_eq!(err.code, ErrorCode::Usage);
        assert!(err.message.contains("`verbose`"), "{}", err.message);
        let mut args = Map::new();
        args.insert("run".into(), 3.into());
        let Err(err) = show.call(&ctx, args) else {
            panic!("a number was taken for a run")
        };
        assert_eq!(err.code, ErrorCode::Usage);
        let mut args = Map::new();
        args.insert("run".into(), "../x".into());
        let Err(err) = show.call(&ctx, args) else {
            panic!("a path was taken for a run")
        };
        assert_eq!(err.code, ErrorCode::Usage);
    }
}
