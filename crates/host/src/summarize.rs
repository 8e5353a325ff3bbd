//! The summarizer side of the window stage. The stage (`panewise-window`) is synchronous and
//! never calls a model: a summarizing strategy's visit stops at a
//! [`VisitOutcome::NeedsSummary`]. This module is where that request meets something that can
//! wait: the async [`Summarizer`] a model-calling runner implements, and [`WindowRunner`], which
//! pairs a stage with its summarizer and the memory one run carries from visit to visit.
//! [`ModelSummarizer`] answers the requests with any model API client.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use async_trait::async_trait;
use panewise_providers::{ApiMessage, ModelRequest};
use panewise_transport::{CancellationToken, ModelClient};
use panewise_window::{
    Conversation, ExtractiveSummarizer, StageMemory, StrategyConfig, SummarizerError,
    SummaryRequest, SummaryResponse, Usage, VisitContext, VisitOutcome, WindowError, WindowMessage,
    WindowPlan, WindowStage,
};

/// Writes summaries for the window stage, typically by calling a model. The runner asks it at
/// most once per visit and never retries (W42): an `Err` becomes the `summarizer-failed`
/// refusal.
#[async_trait]
pub trait Summarizer: Send + Sync {
    /// Summarizes the span in `request`.
    async fn summarize(
        &self,
        request: SummaryRequest<'_>,
    ) -> Result<SummaryResponse, SummarizerError>;
}

/// The offline summarizer answers at once from the window crate's pure extractive summary.
#[async_trait]
impl Summarizer for ExtractiveSummarizer {
    async fn summarize(
        &self,
        request: SummaryRequest<'_>,
    ) -> Result<SummaryResponse, SummarizerError> {
        Ok(ExtractiveSummarizer::summarize(self, request))
    }
}

/// A summarizer that asks a model through any [`ModelClient`] (Anthropic, OpenAI, Gemini):
/// the request's fixed system prompt, its rendered transcript as the one user message, no
/// tools. The summary's cost is reported as its usage: every prompt token (cached or not)
/// as input, every output token as output.
pub struct ModelSummarizer {
    client: Arc<dyn ModelClient>,
    max_output_tokens: u32,
}

impl ModelSummarizer {
    /// The most output tokens a summary may take, unless set otherwise.
    pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 2_048;

    /// A summarizer over `client`.
    pub fn new(client: Arc<dyn ModelClient>) -> Self {
        Self {
            client,
            max_output_tokens: Self::DEFAULT_MAX_OUTPUT_TOKENS,
        }
    }

    /// Caps each summary at `tokens` output tokens.
    pub fn with_max_output_tokens(mut self, tokens: u32) -> Self {
        self.max_output_tokens = tokens;
        self
    }
}

#[async_trait]
impl Summarizer for ModelSummarizer {
    async fn summarize(
        &self,
        request: SummaryRequest<'_>,
    ) -> Result<SummaryResponse, SummarizerError> {
        let messages = [ApiMessage::User {
            text: request.render().into(),
        }];
        let call = ModelRequest {
            model: request.model.into(),
            system: Some(request.system_prompt.into()),
            messages: messages.as_slice().into(),
            tools: Default::default(),
            max_output_tokens: self.max_output_tokens,
            // A summary is asked once per history, so a cache write (1.25 times the input
            // price on Anthropic) would never be read back.
            prompt_cache: false,
            cache_key: None,
            context_management: None,
        };
        let completion = self
            .client
            // The stage waits for its summary; a run that stops drops the visit's future,
            // and with it the call.
            .complete(&call, CancellationToken::new())
            .await
            .map_err(|error| SummarizerError::new(error.to_string()))?;
        if completion.text.trim().is_empty() {
            return Err(SummarizerError::new(
                "the model answered with no summary text",
            ));
        }
        let stats = &completion.stats;
        let input = [
            stats.input_tokens,
            stats.cached_input_tokens,
            stats.cache_write_input_tokens,
        ];
        let reported = input.iter().any(Option::is_some) || stats.output_tokens.is_some();
        let usage = reported.then(|| Usage {
            input: input
                .iter()
                .flatten()
                .fold(0u64, |sum, count| sum.saturating_add(*count)),
            output: stats.output_tokens.unwrap_or(0),
        });
        Ok(SummaryResponse {
            text: completion.text,
            usage,
        })
    }
}

/// A window stage driven for one run: the stage, the summarizer that answers its requests,
/// and the [`StageMemory`] its visits share.
pub struct WindowRunner<M: WindowMessage> {
    stage: WindowStage<M>,
    summarizer: Option<Box<dyn Summarizer>>,
    memory: StageMemory,
}

impl<M: WindowMessage + 'static> WindowRunner<M> {
    /// Builds the configured stage. A summarizing strategy needs `summarizer`; the error names
    /// the `summarizer` field when it is missing (W51).
    pub fn from_config(
        config: &StrategyConfig,
        summarizer: Option<Box<dyn Summarizer>>,
    ) -> Result<Self, WindowError> {
        if config.needs_summarizer() && summarizer.is_none() {
            return Err(WindowError::InvalidConfig {
                field: "summarizer".to_string(),
                reason: format!(
                    "`{}` needs a summarizer and none was supplied",
                    config.strategy_name()
                ),
            });
        }
        Ok(Self {
            stage: config.build_stage()?,
            summarizer,
            memory: StageMemory::new(),
        })
    }
}

impl<M: WindowMessage> WindowRunner<M> {
    /// The strategy's name.
    pub fn strategy_name(&self) -> &str {
        self.stage.strategy_name()
    }

    /// Visits the window once. `Ok(None)`: the strategy did not engage. When the strategy asks
    /// for a summary, the summarizer is awaited once and its answer, or its failure, completes
    /// the visit.
    pub async fn visit(
        &mut self,
        conversation: &Conversation<M>,
        context: VisitContext<'_>,
    ) -> Result<Option<WindowPlan<M>>, WindowError> {
        match self.stage.visit(conversation, context, &mut self.memory)? {
            VisitOutcome::NotEngaged => Ok(None),
            VisitOutcome::Ready(plan) => Ok(Some(plan)),
            VisitOutcome::NeedsSummary(pending) => {
                let answer = match &self.summarizer {
                    Some(summarizer) => summarizer.summarize(pending.request()).await,
                    // `from_config` refuses this; a failure keeps the window as it was.
                    None => Err(SummarizerError::new("no summarizer was supplied")),
                };
                Ok(Some(pending.complete(answer)))
            }
        }
    }
}

/// Runs `future` to completion on this thread, parking it whenever the future waits. The
/// one-shot commands have no async runtime; a summarizer that does real I/O wakes the thread
/// when it can go on.
pub fn block_on<F: Future>(future: F) -> F::Output {
    struct ThreadWaker(std::thread::Thread);
    impl Wake for ThreadWaker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }

    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        match future.as_mut().poll(&mut context) {
            Poll::Ready(output) => return output,
            // A spurious wake-up only costs another poll.
            Poll::Pending => std::thread::park(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use panewise_window::{Measured, Message, RefusalReason};

    use super::*;

    fn config(json: &str) -> StrategyConfig {
        StrategyConfig::from_json(json).unwrap()
    }

    const SUMMARIZE: &str =
        r#"{"strategy":"summarize-oldest","thresholdTokens":10,"keepRecentTurns":1,"model":"m"}"#;

    fn folding() -> Conversation {
        Conversation::from_messages([
            Message::user("old"),
            Message::assistant("x".repeat(2_000)),
            Message::user("now"),
        ])
    }

    /// A reading over the threshold of 10 whose floor (W80) is not: the window itself, plus
    /// a few tokens of system prompt.
    fn over_budget(conversation: &Conversation) -> VisitContext<'static> {
        let mut context = VisitContext::new(2, 1_000);
        context.measured = Some(Measured {
            usage: Usage {
                input: conversation.tokens_in(0..conversation.len()) + 5,
                output: 10,
            },
            sent_messages: conversation.len(),
            iteration: 1,
        });
        context
    }

    /// Not ready on its first poll; asks to be woken from another thread, the way a future
    /// waiting on a socket does.
    struct WokenFromElsewhere {
        polled: bool,
    }

    impl Future for WokenFromElsewhere {
        type Output = ();

        fn poll(mut self: std::pin::Pin<&mut Self>, context: &mut Context<'_>) -> Poll<()> {
            if self.polled {
                return Poll::Ready(());
            }
            self.polled = true;
            let waker = context.waker().clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(10));
                waker.wake();
            });
            Poll::Pending
        }
    }

    /// A summarizer that has to wait before it answers.
    struct Later;

    #[async_trait]
    impl Summarizer for Later {
        async fn summarize(
            &self,
            _request: SummaryRequest<'_>,
        ) -> Result<SummaryResponse, SummarizerError> {
            WokenFromElsewhere { polled: false }.await;
            Ok(SummaryResponse {
                text: "later".to_string(),
                usage: None,
            })
        }
    }

    struct Failing;

    #[async_trait]
    impl Summarizer for Failing {
        async fn summarize(
            &self,
            _request: SummaryRequest<'_>,
        ) -> Result<SummaryResponse, SummarizerError> {
            Err(SummarizerError::new("provider unavailable"))
        }
    }

    /// W46: a summary written by a model over HTTP (the mock), its cost filed in the record.
    #[tokio::test]
    async fn w46_a_model_summarizer_answers_through_any_api_and_reports_its_tokens() {
        use panewise_mock_server::{MockConfig, MockServer};
        use panewise_providers::{ApiKey, ApiKind};
        use panewise_transport::{ApiConfig, HttpModelClient};

        let server = MockServer::start(MockConfig::default()).await.unwrap();
        for api in ApiKind::ALL {
            let api_config = ApiConfig::new(api, server.base_url(), ApiKey::new("test-key"));
            let client = Arc::new(HttpModelClient::new(api_config).unwrap());
            let summarizer = ModelSummarizer::new(client).with_max_output_tokens(256);
            let mut runner = WindowRunner::<Message>::from_config(
                &config(SUMMARIZE),
                Some(Box::new(summarizer)),
            )
            .unwrap();
            let conversation = folding();
            let plan = runner
                .visit(&conversation, over_budget(&conversation))
                .await
                .unwrap()
                .unwrap();
            let inserted = plan.edit.unwrap().inserted.unwrap();
            assert!(
                inserted.ends_with("so I answer directly."),
                "{api}: {inserted}"
            );
            let logged = server.log().last().and_then(|entry| entry.usage).unwrap();
            let record = serde_json::to_value(&plan.record).unwrap();
            let spent = record.pointer("/summarizerTokens").and_then(|v| v.as_u64());
            assert_eq!(spent, Some(logged.total_tokens()), "{api}: {record}");
            // The request was the window's: its system prompt, the transcript, the model.
            let body = server.log().last().unwrap().body.clone();
            assert!(body.to_string().contains("<<<TRANSCRIPT>>>"), "{api}");
        }
    }

    #[test]
    fn w51_a_summarizing_strategy_without_a_summarizer_names_the_summarizer() {
        let config = config(r#"{"strategy":"hybrid","thresholdTokens":100,"model":"m"}"#);
        match WindowRunner::<Message>::from_config(&config, None) {
            Err(WindowError::InvalidConfig { field, .. }) => assert_eq!(field, "summarizer"),
            Err(other) => panic!("unexpected error {other:?}"),
            Ok(_) => panic!("a summarizing stage was built without a summarizer"),
        }
    }

    #[test]
    fn a_summary_that_arrives_later_completes_the_fold() {
        let conversation = folding();
        let mut runner =
            WindowRunner::<Message>::from_config(&config(SUMMARIZE), Some(Box::new(Later)))
                .unwrap();
        let plan = block_on(runner.visit(&conversation, over_budget(&conversation)))
            .unwrap()
            .unwrap();
        let edit = plan.edit.unwrap();
        assert_eq!(edit.removed, 0..2);
        assert!(edit.inserted.unwrap().ends_with("\n\nlater"));
    }

    #[test]
    fn w42_a_failing_summarizer_files_the_refusal_and_warns_once_per_run() {
        let conversation = folding();
        let mut runner =
            WindowRunner::<Message>::from_config(&config(SUMMARIZE), Some(Box::new(Failing)))
                .unwrap();
        let mut warnings = Vec::new();
        for _ in 0..2 {
            let plan = block_on(runner.visit(&conversation, over_budget(&conversation)))
                .unwrap()
                .unwrap();
            assert_eq!(
                plan.record.refusals[0].reason,
                RefusalReason::SummarizerFailed
            );
            assert!(plan.edit.is_none());
            warnings.push(plan.warning.is_some());
        }
        assert_eq!(warnings, vec![true, false]);
    }
}
