//! The one session engine: every session — a supervised CLI or panewise's own model loop —
//! runs through [`Session::run`].
//!
//! One loop over a closed input (an input from the [`Backend`], a [`Control`] from a front
//! end, a deadline the reducer armed, the watchdog's tick); each input stamped with the
//! session's clock, its messages recorded in the session log and folded by the reducer, and the
//! returned commands run by one exhaustive `match` over `Cmd` whose arms each delegate (to the
//! backend, the deadline table, the front ends). The approval policy ([`crate::approval`])
//! answers the front pending approval, or asks the front ends through an [`Update::Ask`].
//!
//! The engine reads no terminal and no signal: front ends drive it through a
//! [`SessionHandle`] (controls in, updates out). [`lines`] is the front end that drives a
//! session from lines of text (the terminal of `panewise run`, and the tests).

mod budget;
pub mod deadlines;
pub mod handle;
pub mod lines;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use panewise_pane_state::log::LogHeader;
use panewise_pane_state::state::RequestClosed;
use panewise_pane_state::{Cmd, Event, Msg, State, TurnId, WATCHDOG_TICK_MS};
use panewise_providers::{Mapper, ModelTable};
use tokio::sync::mpsc;
use tokio::time::{sleep_until, Duration, Instant};
use tracing::Instrument;

use crate::approval::{decide_in, ApprovalMode, Decision};
use crate::backend::{Backend, BackendInput, BackendOutcome, Produced};
use crate::clock::{now_ms, SessionClock};
use crate::error::SessionError;
use crate::journal::transcript::{self, PromptSource, TranscriptRecorder};
use crate::session_log::SessionLogFile;
use deadlines::{Deadlines, Due};
pub use handle::{Controls, SessionHandle};
use panewise_pane_state::log::TranscriptEntry;
pub use panewise_session_protocol::Actor;
pub use panewise_session_protocol::{Control, Observer, Update};

/// What a session is, besides its backend.
#[derive(Debug, Clone)]
pub struct SessionSpec {
    /// The log's header.
    pub header: LogHeader,
    /// Where the session log goes.
    pub log: PathBuf,
    /// The prompts given at the start, in order.
    pub prompts: Vec<String>,
    /// How permission requests are answered.
    pub approval: ApprovalMode,
    /// The working directory the approval policy decides against.
    pub cwd: PathBuf,
    /// A front end can answer questions ([`Update::Ask`]); otherwise `ask` denies and says why.
    pub can_ask: bool,
    /// More prompts may come through the handle: the session lasts until
    /// [`Control::EndOfInput`]. Otherwise it ends once its prompts' turns are done.
    pub stay_open: bool,
    /// The deadlines to arm, when not the defaults; recorded before the first prompt.
    pub deadlines: Option<panewise_pane_state::Deadlines>,
    /// The log's cap in bytes ([`crate::journal::session_log::DEFAULT_LOG_CAP_BYTES`]);
    /// past it the session is stopped and its log says why.
    pub log_cap: u64,
    /// The spend caps, when it has any (`[limits]`, `--max-cost-usd`, `--max-tokens`);
    /// recorded before the first prompt (R112).
    pub budget: Option<panewise_pane_state::BudgetCaps>,
}

impl SessionSpec {
    /// A spec with `header`, recording to `log`, for an agent working in `cwd`; no prompts,
    /// `ask`, nobody to ask, ending when its turns are done.
    pub fn new(header: LogHeader, log: PathBuf, cwd: PathBuf) -> Self {
        SessionSpec {
            header,
            log,
            prompts: Vec::new(),
            approval: ApprovalMode::Ask,
            cwd,
            can_ask: false,
            stay_open: false,
            deadlines: None,
            log_cap: crate::journal::session_log::DEFAULT_LOG_CAP_BYTES,
            budget: None,
        }
    }
}

/// The header of a session's log: what ran, where, with which versions.
pub fn log_header(
    agent_id: &str,
    model: Option<String>,
    cwd: &Path,
    cli_version: Option<String>,
) -> LogHeader {
    LogHeader {
        agent_id: agent_id.to_owned(),
        started_at_ms: now_ms(),
        model,
        cwd: Some(cwd.display().to_string()),
        cli_version,
        panewise_version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        resumed_from: None,
        provider: None,
        own_loop: None,
        name: None,
    }
}

/// How a session ended.
#[derive(Debug)]
pub struct SessionOutcome {
    /// The final pane state.
    pub state: State,
    /// The session log.
    pub log: PathBuf,
    /// How the backend's side ended.
    pub backend: BackendOutcome,
}

/// Where the engine's updates go: an observer sees each as it is made; the front ends get them
/// through the bounded update channel ([`handle::UPDATE_BOUND`]) when the engine hands them on
/// ([`Outlet::hand_on`]), before it folds its next message and before it reads its next
/// input. Until then they wait here, at most what one message's commands (or one read of the
/// agent's output) made. Front ends that went away are no error: the session goes on and its
/// log records everything.
#[derive(Debug)]
pub(crate) struct Outlet {
    updates: mpsc::Sender<Update>,
    pending: VecDeque<Update>,
    observer: Option<Observer>,
}

impl Outlet {
    pub(crate) fn send(&mut self, update: Update) {
        if let Some(observer) = &self.observer {
            observer.see(&update);
        }
        if !self.updates.is_closed() {
            self.pending.push_back(update);
        }
    }

    pub(crate) fn send_all(&mut self, updates: impl IntoIterator<Item = Update>) {
        for update in updates {
            self.send(update);
        }
    }

    pub(crate) fn notice(&mut self, text: String) {
        tracing::info!(notice = %text);
        self.send(Update::Notice(text));
    }

    /// Hands the pending updates to the front ends, waiting while the channel is full (the
    /// engine's backpressure: it reads nothing more until its front ends have read). A channel
    /// whose receiver is gone fails at once, never waits: the rest is dropped.
    pub(crate) async fn hand_on(&mut self) {
        while let Some(update) = self.pending.pop_front() {
            if self.updates.send(update).await.is_err() {
                self.pending.clear();
            }
        }
    }
}

impl crate::backend::NoticeSink for Outlet {
    fn notice(&mut self, text: String) {
        Outlet::notice(self, text);
    }
}

/// Every input the loop folds.
#[derive(Debug)]
enum Input {
    Backend(BackendInput),
    Control(Control),
    /// Every handle is gone: nobody can prompt or answer any more.
    ControlsClosed,
    Deadline(Due),
    Tick,
}

/// One session, ready to run.
#[derive(Debug)]
pub struct Session {
    backend: Backend,
    log: SessionLogFile,
    log_path: PathBuf,
    mapper: Mapper,
    deadlines: Deadlines,
    clock: SessionClock,
    out: Outlet,
    controls: mpsc::Receiver<Control>,
    controls_open: bool,
    prompts: Vec<String>,
    approval: ApprovalMode,
    cwd: PathBuf,
    can_ask: bool,
    /// More prompts may come.
    input_open: bool,
    /// The deadlines to record before the first prompt.
    configured_deadlines: Option<panewise_pane_state::Deadlines>,
    /// The spend caps to record before the first prompt.
    configured_budget: Option<panewise_pane_state::BudgetCaps>,
    /// The daemon's verdict over all its sessions (or their day), which holds this one too.
    daemon_budget: Option<String>,
    /// A stop was asked for: nothing queued is sent any more.
    stopping: bool,
    /// Who sent the last answer to a question, for the transcript once it is accepted.
    question_by: Option<Actor>,
    /// The conversation's lines, queued until the next write to the log.
    transcript: TranscriptRecorder,
    session_span: tracing::Span,
    turn_span: tracing::Span,
    turn_seen: Option<TurnId>,
}

impl Session {
    /// Creates the session's log and a handle to drive it; the session runs when
    /// [`Session::run`] is awaited (or [`handle::spawn`] spawns it on a task).
    pub fn new(
        spec: SessionSpec,
        mut backend: Backend,
    ) -> Result<(Session, SessionHandle), SessionError> {
        let log = SessionLogFile::create(&spec.log, &spec.header)
            .map(|log| log.with_cap(spec.log_cap))
            .map_err(|source| SessionError::Log {
                path: spec.log.clone(),
                source,
            })?;
        Ok(Self::on_log(
            spec,
            backend_with_clock(&mut backend),
            log,
            backend,
        ))
    }

    /// Hands `mirror` a copy of every write to the session's log from now on (see
    /// [`SessionLogFile::mirror`]); returns the log's length before, which it does not see.
    pub fn mirror_log(&mut self, mirror: crate::session_log::LogMirror) -> u64 {
        self.log.mirror(mirror)
    }

    /// Lets `observer` see every update this session sends, before its front ends do.
    pub fn observe(&mut self, observer: Observer) {
        self.out.observer = Some(observer);
    }

    /// A session recording into `log`, already created (a test's failing disk).
    pub fn with_log(
        spec: SessionSpec,
        mut backend: Backend,
        log: SessionLogFile,
    ) -> (Session, SessionHandle) {
        let clock = backend_with_clock(&mut backend);
        Self::on_log(spec, clock, log, backend)
    }

    fn on_log(
        spec: SessionSpec,
        clock: SessionClock,
        log: SessionLogFile,
        backend: Backend,
    ) -> (Session, SessionHandle) {
        let (control_sender, controls) = mpsc::channel(handle::CONTROL_BOUND);
        let (update_sender, updates) = mpsc::channel(handle::UPDATE_BOUND);
        let provider = backend.provider();
        let model = spec.header.model.clone();
        let session_span = tracing::info_span!(
            "session",
            agent = %spec.header.agent_id,
            log = %spec.log.display()
        );
        let session = Session {
            mapper: Mapper::new(provider, ModelTable::built_in()).with_model(model),
            backend,
            log,
            log_path: spec.log.clone(),
            deadlines: Deadlines::default(),
            clock,
            out: Outlet {
                updates: update_sender,
                pending: VecDeque::new(),
                observer: None,
            },
            controls,
            controls_open: true,
            prompts: spec.prompts,
            approval: spec.approval,
            cwd: spec.cwd,
            can_ask: spec.can_ask,
            input_open: spec.stay_open,
            configured_deadlines: spec.deadlines,
            configured_budget: spec.budget,
            daemon_budget: None,
            stopping: false,
            question_by: None,
            transcript: TranscriptRecorder::new(PromptSource::Sent),
            session_span,
            turn_span: tracing::Span::none(),
            turn_seen: None,
        };
        let handle = SessionHandle::new(control_sender, updates);
        (session, handle)
    }

    /// Runs the session to its end: the backend started, the first prompts submitted, then
    /// inputs folded until no turn works, nothing is queued, no more prompts can come and the
    /// backend is idle. The log's last line is a checkpoint of the final state.
    ///
    /// A log that cannot be written stops the session: the agent is interrupted and then, as
    /// the backend is dropped, its process group killed, and the error names the log.
    pub async fn run(mut self) -> Result<SessionOutcome, SessionError> {
        let span = self.session_span.clone();
        let result = self.run_loop().instrument(span).await;
        if let Err(error) = &result {
            if let SessionError::Log { .. } = error {
                // Nothing more can be recorded: stop the agent rather than let it work unseen.
                let _ignored = self.backend.interrupt(&mut self.out).await;
                let _ignored = self.backend.kill(&mut self.out);
            }
            // The closing line says why the session ended (nothing if the log is gone).
            let now = self.clock.now_ms();
            let _ignored = self
                .transcript
                .finish(now, Some(error.to_string()), &mut self.log);
        }
        // The front ends are told everything before the run ends.
        self.out.hand_on().await;
        result?;
        self.log
            .checkpoint()
            .map_err(|source| self.log_error(source))?;
        let now = self.clock.now_ms();
        self.transcript
            .finish(now, None, &mut self.log)
            .map_err(|source| self.log_error(source))?;
        tracing::info!(parent: &self.session_span, "session ended");
        Ok(SessionOutcome {
            state: self.log.state().clone(),
            log: self.log_path,
            backend: self.backend.outcome(),
        })
    }

    async fn run_loop(&mut self) -> Result<(), SessionError> {
        self.out.send(Update::Started {
            log: self.log_path.clone(),
            state: Box::new(self.log.state().clone()),
        });
        tracing::info!("session started");
        let started = self.backend.start(&mut self.out).await?;
        self.fold(started).await?;
        let mut first: Vec<Produced> = self
            .configured_deadlines
            .take()
            .map(|deadlines| {
                Produced::Msg(Msg::DeadlinesConfigured {
                    submit_ms: deadlines.submit_ms,
                    stuck_ms: deadlines.stuck_ms,
                })
            })
            .into_iter()
            .collect();
        first.extend(
            self.configured_budget
                .take()
                .map(|caps| Produced::Msg(Msg::BudgetSet { caps })),
        );
        first.extend(
            self.mapper
                .prologue(self.clock.now_ms())
                .into_iter()
                .map(Produced::Msg),
        );
        first.extend(
            std::mem::take(&mut self.prompts)
                .into_iter()
                .map(|text| Produced::Msg(Msg::PromptSubmitted { text })),
        );
        self.fold(first).await?;
        self.settle().await?;
        let mut tick = tokio::time::interval(Duration::from_millis(WATCHDOG_TICK_MS));
        tick.tick().await;
        while !self.is_over() {
            // Nothing more is read until the front ends took what the last input made.
            self.out.hand_on().await;
            let next_deadline = self.deadlines.next();
            let input = tokio::select! {
                input = self.backend.next_input() => Input::Backend(input),
                control = self.controls.recv(), if self.controls_open => match control {
                    Some(control) => Input::Control(control),
                    None => Input::ControlsClosed,
                },
                _ = sleep_until(next_deadline.map_or_else(far_future, |(at, _)| at)), if next_deadline.is_some() => {
                    match next_deadline {
                        Some((_, due)) => Input::Deadline(due),
                        None => continue,
                    }
                }
                _ = tick.tick() => Input::Tick,
            };
            let produced = self.produced_by(input).await?;
            self.fold(produced).await?;
            self.settle().await?;
        }
        Ok(())
    }

    /// Over when no turn works, nothing is queued (or a stop was asked), no prompt can come,
    /// and the backend is idle.
    fn is_over(&self) -> bool {
        let state = self.log.state();
        self.backend.is_idle()
            && !self.input_open
            && !state.turn_phase.is_working()
            && (self.stopping || state.queued_prompts.is_empty())
    }

    /// Lets the backend do what is due now that everything is folded, step by step.
    async fn settle(&mut self) -> Result<(), SessionError> {
        loop {
            // The budget is weighed before the backend may start anything (R112, R113).
            self.weigh_budget().await?;
            let state = self.log.state();
            let input_open = self.input_open && !self.stopping;
            match self
                .backend
                .settle(state, input_open, &mut self.out)
                .await?
            {
                Some(produced) => self.fold(produced).await?,
                None => return Ok(()),
            }
        }
    }

    /// What one input produces for the fold.
    async fn produced_by(&mut self, input: Input) -> Result<Vec<Produced>, SessionError> {
        let now = self.clock.now_ms();
        Ok(match input {
            Input::Backend(input) => self.backend.on_input(input, &mut self.out)?,
            Input::Deadline(due) => {
                // Fired once: the reducer re-arms it if it wants it again.
                self.deadlines.cancel(due.turn, due.kind);
                vec![Produced::Msg(due.kind.elapsed(due.turn, due.deadline_ms))]
            }
            Input::Tick => vec![Produced::Msg(Msg::StreamWatchdogTick)],
            Input::ControlsClosed => {
                self.controls_open = false;
                self.input_open = false;
                self.can_ask = false;
                self.deny_asked("nobody is left to answer: denied")
                    .into_iter()
                    .map(Produced::Msg)
                    .collect()
            }
            Input::Control(control) => self.control(control, now).await?,
        })
    }

    /// One control from a front end.
    async fn control(&mut self, control: Control, now: u64) -> Result<Vec<Produced>, SessionError> {
        tracing::debug!(?control, "control");
        let mut produced = Vec::new();
        match control {
            Control::Prompt(text) if self.stopping => {
                let _ = text;
                self.out
                    .notice("the session is stopping; that prompt was not sent".to_owned());
            }
            Control::Prompt(text) if text.trim().is_empty() => {}
            Control::Prompt(text) => produced.push(Produced::Msg(Msg::PromptSubmitted { text })),
            Control::Answer {
                id,
                approved,
                for_session,
                by,
                message,
            } => {
                // The reducer decides whether the answer still counts (R101) and says why
                // when it does not.
                let who = by.describe();
                let reason = (!approved).then(|| match message {
                    Some(message) if !message.trim().is_empty() => {
                        format!("denied by {who}: {message}")
                    }
                    _ => format!("denied by {who}"),
                });
                tracing::info!(%id, approved, ?by, "approval answered");
                produced.push(Produced::Msg(Msg::ApprovalAnswered {
                    id: Some(id),
                    approved,
                    for_session: approved && for_session,
                    by: Some(by),
                    reason,
                }));
            }
            Control::AnswerQuestion { id, answers, by } => {
                tracing::info!(?id, ?by, "question answered");
                // Who answered goes into the transcript once the reducer accepts the answer
                // (`Cmd::ResolveQuestion`).
                self.question_by = Some(by);
                produced.push(Produced::Msg(Msg::QuestionAnswered {
                    id: Some(id),
                    answers,
                }));
            }
            Control::Interrupt => {
                self.transcript
                    .record(TranscriptEntry::Interrupt { by: Actor::Person }, now);
                produced.push(Produced::Msg(Msg::RequestStop { at: now }));
            }
            Control::EndOfInput => {
                self.input_open = false;
            }
            // Weighed against the spend at the next settle, which holds or releases.
            Control::SetBudget(caps) => produced.push(Produced::Msg(Msg::BudgetSet { caps })),
            Control::DaemonBudget(verdict) => self.daemon_budget = verdict,
            Control::Stop => {
                self.stopping = true;
                self.input_open = false;
                produced.extend(
                    self.deny_asked("the session is stopping: denied")
                        .into_iter()
                        .map(Produced::Msg),
                );
                self.transcript
                    .record(TranscriptEntry::Interrupt { by: Actor::Session }, now);
                let state = self.log.state();
                let working = state.turn_phase.is_working();
                // As a second Ctrl-C: a working turn is stopped and its agent killed; then
                // `Quit`, so no queued prompt starts another turn.
                produced.extend(
                    crate::signals::stop_messages(state, now)
                        .into_iter()
                        .map(Produced::Msg),
                );
                if !working {
                    // An idle agent is not waited for.
                    self.out.notice("stopping the session".to_owned());
                    self.backend.kill(&mut self.out)?;
                }
            }
        }
        Ok(produced)
    }

    /// Denials, by the session, of every request put to a person, and no answers to every
    /// question waiting: nobody can answer them.
    fn deny_asked(&self, reason: &str) -> Vec<Msg> {
        let state = self.log.state();
        let denials = state
            .pending_approvals
            .iter()
            .filter(|pending| pending.asked)
            .map(|pending| Msg::ApprovalAnswered {
                id: Some(pending.id.clone()),
                approved: false,
                for_session: false,
                by: Some(Actor::Session),
                reason: Some(reason.to_owned()),
            });
        let unanswered = state
            .pending_questions
            .iter()
            .map(|set| Msg::QuestionAnswered {
                id: Some(set.id.clone()),
                answers: Vec::new(),
            });
        denials.chain(unanswered).collect()
    }

    /// Records and folds what the backend produced: each message's commands run before the
    /// next message is folded; protocol answers and reaps wait until all before them is folded.
    async fn fold(&mut self, produced: Vec<Produced>) -> Result<(), SessionError> {
        let mut queue = VecDeque::new();
        let mut later = VecDeque::new();
        self.absorb(produced, &mut queue, &mut later)?;
        loop {
            while let Some(msg) = queue.pop_front() {
                self.fold_one(msg, &mut queue, &mut later).await?;
            }
            let Some(deferred) = later.pop_front() else {
                // What the commands recorded (a prompt sent, an answer) goes to disk now.
                self.transcript
                    .write_to(&mut self.log)
                    .map_err(|source| self.log_error(source))?;
                // A checkpoint now and then, so a log a crash cut off still replays verified.
                let now = self.clock.now_ms();
                return self
                    .log
                    .checkpoint_if_due(now)
                    .map(drop)
                    .map_err(|source| self.log_error(source));
            };
            let produced = self.backend.after_fold(deferred, &mut self.out).await?;
            self.absorb(produced, &mut queue, &mut later)?;
        }
    }

    fn absorb(
        &mut self,
        produced: Vec<Produced>,
        queue: &mut VecDeque<Msg>,
        later: &mut VecDeque<Produced>,
    ) -> Result<(), SessionError> {
        let now = self.clock.now_ms();
        for (at, entry) in self.backend.take_transcript() {
            self.transcript.record(entry, at);
        }
        for item in produced {
            match item {
                Produced::Event(event) => {
                    self.transcript.on_event(&event, now);
                    tracing::debug!(parent: &self.turn_span, event = event.kind_name(), "agent event");
                    let mut msgs = Vec::new();
                    self.mapper.map(&event, now, &mut msgs);
                    queue.extend(msgs);
                    self.out.send(Update::Agent(event));
                }
                Produced::Msg(msg) => {
                    if let Msg::QuestionAsked { id, questions, .. } = &msg {
                        self.transcript.record(
                            TranscriptEntry::Question {
                                id: id.clone(),
                                questions: questions.clone(),
                            },
                            now,
                        );
                    }
                    queue.push_back(msg);
                }
                Produced::Note(note) => self
                    .log
                    .note(&note)
                    .map_err(|source| self.log_error(source))?,
                deferred @ (Produced::AfterFold(_) | Produced::Reap) => later.push_back(deferred),
            }
        }
        Ok(())
    }

    async fn fold_one(
        &mut self,
        msg: Msg,
        queue: &mut VecDeque<Msg>,
        later: &mut VecDeque<Produced>,
    ) -> Result<(), SessionError> {
        // What the last message made reaches the front ends before the next is folded.
        self.out.hand_on().await;
        // The conversation so far goes to disk before the next message.
        self.transcript
            .write_to(&mut self.log)
            .map_err(|source| self.log_error(source))?;
        let at = self.clock.now_ms();
        let asked_before: Vec<String> = self
            .log
            .state()
            .pending_approvals
            .iter()
            .filter(|pending| pending.asked)
            .map(|pending| pending.id.clone())
            .collect();
        let cmds = self
            .log
            .record(at, msg.clone())
            .map_err(|source| self.log_error(source))?;
        let asked_now = match &msg {
            Msg::ApprovalAsked { id } => self
                .log
                .state()
                .pending_approvals
                .iter()
                .find(|pending| pending.id == *id && pending.asked)
                .map(|pending| Update::Ask {
                    id: pending.id.clone(),
                    tool: pending.tool.clone(),
                    summary: pending.summary.clone(),
                    offers_session: true,
                }),
            _ => None,
        };
        self.out.send(Update::Recorded { at, msg });
        self.out.send_all(asked_now);
        self.follow_turn();
        for cmd in cmds {
            let span =
                tracing::debug_span!(parent: &self.turn_span, "effect", cmd = cmd_name(&cmd));
            let produced = self.execute(cmd).instrument(span).await?;
            self.absorb(produced, queue, later)?;
        }
        for id in asked_before {
            let withdrawn = self
                .log
                .state()
                .closed_requests
                .iter()
                .rev()
                .any(|closed| closed.id == id && closed.closed == RequestClosed::Withdrawn);
            if withdrawn {
                // Withdrawn or cleared by a stop: an answer to it would be refused (R101).
                self.out.send(Update::AskWithdrawn { id });
                self.out
                    .notice("the agent no longer waits for that answer".to_owned());
            }
        }
        if let Some(answer) = self.answer_front_approval() {
            // Folded next, before anything else can look at the same front request.
            queue.push_front(answer);
        }
        if !self.can_ask {
            // Nobody can answer a question here: the agent is told so at once.
            let front = self.log.state().pending_questions.front();
            let queued = |set: &panewise_pane_state::state::PendingQuestionSet| {
                queue.iter().any(|msg| {
                    matches!(msg, Msg::QuestionAnswered { id: Some(id), .. } if *id == set.id)
                })
            };
            if let Some(set) = front.filter(|set| !queued(set)) {
                self.out.notice(format!(
                    "nobody is at a terminal to answer the question: {}",
                    set.questions.join(" / ")
                ));
                queue.push_back(Msg::QuestionAnswered {
                    id: Some(set.id.clone()),
                    answers: Vec::new(),
                });
            }
        }
        Ok(())
    }

    /// Opens a turn's span when the reducer starts a turn.
    fn follow_turn(&mut self) {
        let current = self.log.state().current_turn;
        if current != self.turn_seen {
            self.turn_seen = current;
            self.turn_span = match current {
                Some(turn) => {
                    tracing::info_span!(parent: &self.session_span, "turn", turn = turn.0)
                }
                None => tracing::Span::none(),
            };
            tracing::info!(parent: &self.turn_span, "turn started");
        }
    }

    /// The one `match` over `Cmd`, every command named: each arm delegates.
    async fn execute(&mut self, cmd: Cmd) -> Result<Vec<Produced>, SessionError> {
        match cmd {
            Cmd::SendPrompt { text, .. } => {
                self.transcript.record(
                    TranscriptEntry::Prompt { text: text.clone() },
                    self.clock.now_ms(),
                );
                self.backend.send_prompt(text, &mut self.out).await?
            }
            Cmd::InterruptAgent { .. } => self.backend.interrupt(&mut self.out).await?,
            Cmd::KillAgent { .. } => {
                if matches!(self.backend, Backend::Cli(_)) {
                    self.out.notice("killing the agent".to_owned());
                }
                self.backend.kill(&mut self.out)?;
            }
            Cmd::ResolveApproval {
                id,
                tool,
                approved,
                for_session,
                by,
                reason,
            } => {
                let by = by.unwrap_or(Actor::Person);
                self.out.send(Update::Answered {
                    id: id.clone(),
                    tool,
                    approved,
                    for_session,
                    by: by.clone(),
                    reason: reason.clone(),
                });
                self.transcript.record(
                    TranscriptEntry::ApprovalAnswered {
                        request_id: Some(id.clone()),
                        approved,
                        for_session,
                        by,
                        reason: reason.clone(),
                    },
                    self.clock.now_ms(),
                );
                let reason = reason.unwrap_or_else(|| {
                    format!("denied by panewise (--approval {})", self.approval.name())
                });
                return self
                    .backend
                    .resolve_approval(&id, approved, &reason, &mut self.out)
                    .await;
            }
            Cmd::ScheduleDeadline {
                turn,
                kind,
                deadline_ms,
            } => self
                .deadlines
                .schedule(turn, kind, deadline_ms, self.clock.now_ms()),
            Cmd::CancelDeadline { turn, kind } => self.deadlines.cancel(turn, kind),
            Cmd::Emit(event) => {
                tracing::debug!(parent: &self.turn_span, ?event, "emitted");
                if let Event::AnswerRefused { id, refusal } = &event {
                    // The answerer learns why their answer did not count (R101).
                    let request = id
                        .as_deref()
                        .map(|id| format!("request {id}"))
                        .unwrap_or_else(|| "the request".to_owned());
                    self.out.notice(format!(
                        "that answer to {request} was refused: {}",
                        refusal.describe()
                    ));
                }
                self.out.send(Update::Emitted(event));
            }
            Cmd::ResolveQuestion { id, answers } => {
                let by = self.question_by.take().unwrap_or(Actor::Session);
                self.transcript.record(
                    TranscriptEntry::QuestionAnswered {
                        id: Some(id.clone()),
                        answers: answers.clone(),
                        by,
                    },
                    self.clock.now_ms(),
                );
                return self
                    .backend
                    .resolve_question(&id, &answers, &mut self.out)
                    .await;
            }
        }
        Ok(Vec::new())
    }

    /// The approval policy answers the front waiting request, or the session puts it to a
    /// person (R102); a tool a person allowed for the session is allowed in their name (R103).
    fn answer_front_approval(&mut self) -> Option<Msg> {
        let state = self.log.state();
        let front = state.pending_approvals.front()?;
        if front.asked {
            return None;
        }
        let (id, tool, summary) = (front.id.clone(), front.tool.clone(), front.summary.clone());
        let allowed_by = state.allowed_for_session.get(&tool).cloned();
        let decision = match self.backend.request(&id) {
            Some(request) => decide_in(self.approval, &request, &self.cwd),
            // A request the backend holds nothing about is a person's to decide.
            None => Decision::Ask,
        };
        let policy = Some(transcript::by_policy(self.approval));
        let answer = |approved: bool, for_session: bool, by, reason| Msg::ApprovalAnswered {
            id: Some(id.clone()),
            approved,
            for_session,
            by,
            reason,
        };
        match decision {
            Decision::Ask if allowed_by.is_some() => {
                tracing::info!(%id, ?allowed_by, "approval answered for the session");
                self.out.notice(format!(
                    "allowed {tool} {summary}: {tool} is allowed for this session"
                ));
                Some(answer(true, true, allowed_by, None))
            }
            Decision::Run => {
                tracing::info!(%id, by = "policy", "approval answered");
                Some(answer(true, false, policy, None))
            }
            Decision::Deny { reason } => {
                self.out
                    .notice(format!("denied {tool} {summary}: {reason}"));
                Some(answer(false, false, policy, Some(reason)))
            }
            Decision::Ask if self.can_ask => Some(Msg::ApprovalAsked { id }),
            Decision::Ask => {
                // Who answered (the policy, with its mode) goes with the reason wherever it is
                // shown ("denied by the policy (--approval ask): …"), so it is not said twice.
                let reason = format!(
                    "approval mode {} asks, and there is no terminal to ask on",
                    self.approval.name()
                );
                self.out
                    .notice(format!("denied {tool} {summary}: {reason}"));
                Some(answer(false, false, policy, Some(reason)))
            }
        }
    }

    fn log_error(&self, source: std::io::Error) -> SessionError {
        SessionError::Log {
            path: self.log_path.clone(),
            source,
        }
    }
}

/// The session's clock, started now and shared with the backend.
fn backend_with_clock(backend: &mut Backend) -> SessionClock {
    let clock = SessionClock::start();
    backend.set_clock(clock);
    clock
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400)
}

/// A command's name, for its tracing span.
fn cmd_name(cmd: &Cmd) -> &'static str {
    match cmd {
        Cmd::SendPrompt { .. } => "send_prompt",
        Cmd::InterruptAgent { .. } => "interrupt_agent",
        Cmd::KillAgent { .. } => "kill_agent",
        Cmd::ResolveApproval { .. } => "resolve_approval",
        Cmd::ScheduleDeadline { .. } => "schedule_deadline",
        Cmd::CancelDeadline { .. } => "cancel_deadline",
        Cmd::ResolveQuestion { .. } => "resolve_question",
        Cmd::Emit(_) => "emit",
    }
}
