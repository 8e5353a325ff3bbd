//! Builders shared by the test modules.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use panewise_window::{
    Conversation, Measured, Message, PinSettings, Role, StageMemory, StrategyConfig,
    SummarizerError, SummaryRequest, SummaryResponse, Usage, VisitContext, WindowPlan, WindowStage,
    WindowStrategy,
};

/// How a test answers a visit's summary request: the stage itself never calls anything.
pub trait Summarizer {
    /// Answers `request`.
    fn summarize(&self, request: SummaryRequest<'_>) -> Result<SummaryResponse, SummarizerError>;
}

/// A stage as a test drives it: the stage, the summarizer that answers its requests, and the
/// memory one run carries from visit to visit (in a `RefCell` so tests can share the harness
/// the way they shared the stage).
pub struct Harness {
    stage: WindowStage<Message>,
    summarizer: Option<Box<dyn Summarizer>>,
    memory: RefCell<StageMemory>,
}

impl Harness {
    /// The stage answered by `summarizer`, with a fresh memory.
    pub fn new(stage: WindowStage<Message>, summarizer: Option<Box<dyn Summarizer>>) -> Self {
        Self {
            stage,
            summarizer,
            memory: RefCell::new(StageMemory::new()),
        }
    }

    /// True while the stage's memory holds a stand-down on the floor (W82).
    pub fn stood_down(&self) -> bool {
        self.memory.borrow().stood_down()
    }
}

impl From<WindowStage<Message>> for Harness {
    fn from(stage: WindowStage<Message>) -> Self {
        Self::new(stage, None)
    }
}

impl std::ops::Deref for Harness {
    type Target = WindowStage<Message>;

    fn deref(&self) -> &WindowStage<Message> {
        &self.stage
    }
}

/// A text of exactly `chars` characters.
pub fn text(chars: usize) -> String {
    "x".repeat(chars)
}

/// An assistant call of `name` with id `id` and its result of `chars` characters.
pub fn tool_turn(id: &str, name: &str, chars: usize) -> Vec<Message> {
    vec![
        Message::assistant_calls("", &[(id, name, "{}")]),
        Message::tool_result(id, text(chars)),
    ]
}

/// A conversation from messages.
pub fn conversation(messages: Vec<Message>) -> Conversation {
    Conversation::from_messages(messages)
}

/// A visit context at `iteration` with no reading.
pub fn context(iteration: u32) -> VisitContext<'static> {
    VisitContext::new(iteration, 1_000)
}

/// A context with a fresh reading of `input` tokens covering the whole conversation.
pub fn measured_context(
    conversation: &Conversation,
    iteration: u32,
    input: u64,
) -> VisitContext<'static> {
    let mut context = context(iteration);
    context.measured = Some(Measured {
        usage: Usage { input, output: 10 },
        sent_messages: conversation.len(),
        iteration: iteration.saturating_sub(1),
    });
    context
}

/// A stage running `strategy` with default pins.
pub fn stage(strategy: impl WindowStrategy<Message> + 'static) -> Harness {
    WindowStage::new(Box::new(strategy)).into()
}

/// A stage running `strategy` with the recency pin off, for tests about other rules.
pub fn stage_without_pins(strategy: impl WindowStrategy<Message> + 'static) -> Harness {
    WindowStage::with_pins(
        Box::new(strategy),
        PinSettings {
            keep_last_tool_results: 0,
            keep_ledger_facts: 0,
            exclude_tools: Vec::new(),
        },
    )
    .into()
}

/// A stage from a JSON configuration, answered by `summarizer`.
pub fn configured(json: &str, summarizer: Option<Box<dyn Summarizer>>) -> Harness {
    Harness::new(
        StrategyConfig::from_json(json)
            .unwrap()
            .build_stage()
            .unwrap(),
        summarizer,
    )
}

/// Runs one visit to completion, answering a summary request with the harness's summarizer.
pub fn visit(
    stage: &Harness,
    conversation: &Conversation,
    context: VisitContext<'_>,
) -> Option<WindowPlan<Message>> {
    try_visit(stage, conversation, context).unwrap()
}

/// Runs one visit to completion, returning the stage's error.
pub fn try_visit(
    stage: &Harness,
    conversation: &Conversation,
    context: VisitContext<'_>,
) -> Result<Option<WindowPlan<Message>>, panewise_window::WindowError> {
    let mut memory = stage.memory.borrow_mut();
    let outcome = stage.stage.visit(conversation, context, &mut memory)?;
    Ok(outcome.resolve(|request| {
        stage
            .summarizer
            .as_ref()
            .expect("the test supplies a summarizer to a summarizing stage")
            .summarize(request)
    }))
}

/// Runs one visit and applies its plan, returning the plan.
pub fn visit_and_apply(
    stage: &Harness,
    conversation: &mut Conversation,
    context: VisitContext<'_>,
) -> Option<WindowPlan<Message>> {
    let mut plan = visit(stage, conversation, context)?;
    conversation.apply(&mut plan).unwrap();
    Some(plan)
}

/// [`visit_and_apply`], with the spans the plan lets go of, archived from the window before
/// it was applied, as the own loop does.
pub fn visit_archive_and_apply(
    stage: &Harness,
    conversation: &mut Conversation,
    context: VisitContext<'_>,
) -> Option<(
    WindowPlan<Message>,
    Vec<panewise_window::archive::ArchivedSpan>,
)> {
    let mut plan = visit(stage, conversation, context)?;
    let archived = plan.archived_spans(conversation);
    conversation.apply(&mut plan).unwrap();
    Some((plan, archived))
}

/// The contents of the window, for compact assertions.
pub fn contents(conversation: &Conversation) -> Vec<String> {
    conversation
        .messages()
        .iter()
        .map(|message| message.content.clone())
        .collect()
}

/// True when every tool result in the window follows a call with its id.
pub fn no_orphaned_results(messages: &[Message]) -> bool {
    let mut calls: Vec<&str> = Vec::new();
    for message in messages {
        if message.role == Role::Assistant {
            calls.extend(message.tool_calls.iter().map(|call| call.id.as_str()));
        }
        if message.role == Role::Tool {
            match &message.tool_call_id {
                Some(id) if calls.contains(&id.as_str()) => {}
                _ => return false,
            }
        }
    }
    true
}

/// True when every call of `input` whose results are in `input` is in `output` exactly when
/// all of those results are (masked results keep their call id, so they still count).
pub fn pairs_stay_or_leave_together(input: &[Message], output: &[Message]) -> bool {
    let has_call = |messages: &[Message], id: &str| {
        messages
            .iter()
            .any(|m| m.tool_calls.iter().any(|call| call.id == id))
    };
    let results = |messages: &[Message], id: &str| {
        messages
            .iter()
            .filter(|m| m.tool_call_id.as_deref() == Some(id))
            .count()
    };
    input.iter().flat_map(|m| m.tool_calls.iter()).all(|call| {
        let answers = results(input, &call.id);
        let kept = results(output, &call.id);
        answers == 0
            || (has_call(output, &call.id) && kept == answers)
            || (!has_call(output, &call.id) && kept == 0)
    })
}

/// A summarizer that answers `text` and counts its calls.
#[derive(Clone)]
pub struct FixedSummarizer {
    pub text: String,
    pub calls: Arc<AtomicUsize>,
}

impl FixedSummarizer {
    pub fn new(text: &str) -> Self {
        Self {
            text: text.to_string(),
            calls: Arc::new(AtomicUsize::new(0)),
        }
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Summarizer for FixedSummarizer {
    fn summarize(&self, _request: SummaryRequest<'_>) -> Result<SummaryResponse, SummarizerError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(SummaryResponse {
            text: self.text.clone(),
            usage: Some(Usage {
                input: 100,
                output: 20,
            }),
        })
    }
}

/// A summarizer that always fails.
pub struct FailingSummarizer;

impl Summarizer for FailingSummarizer {
    fn summarize(&self, _request: SummaryRequest<'_>) -> Result<SummaryResponse, SummarizerError> {
        Err(SummarizerError::new("provider unavailable"))
    }
}

/// A summarizer that captures the rendered request.
#[derive(Clone, Default)]
pub struct CapturingSummarizer {
    pub seen: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Summarizer for CapturingSummarizer {
    fn summarize(&self, request: SummaryRequest<'_>) -> Result<SummaryResponse, SummarizerError> {
        self.seen
            .lock()
            .unwrap()
            .push(format!("{}\n{}", request.system_prompt, request.render()));
        Ok(SummaryResponse {
            text: "short".to_string(),
            usage: None,
        })
    }
}
