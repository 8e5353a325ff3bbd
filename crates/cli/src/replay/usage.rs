//! The model calls a session log recorded (its `tokens_in` lines, each with the output count of
//! the `tokens_out` lines after it), as `panewise replay` prints them: a usage line under each
//! call, and a totals line with the cost split by kind. Any provider's log: the split is shown
//! where the provider reported one.

use panewise_pane_state::Msg;
use panewise_protocol::CostSource;
use panewise_providers::call_usage::cost_text;
use panewise_providers::{CallTokens, CostSplit, PriceTable};

/// One model call of the log.
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedCall {
    /// How many transcript lines the log held before the call's prompt: where it goes in the
    /// conversation (the writer's order, which a clock's ties cannot blur).
    pub after_lines: usize,
    /// The model, as logged or as last logged.
    pub model: Option<String>,
    /// Its tokens by kind.
    pub tokens: CallTokens,
}

/// Collects the calls from the log's messages, in order.
#[derive(Debug, Default)]
pub struct CallCollector {
    calls: Vec<LoggedCall>,
}

impl CallCollector {
    /// Takes in one logged message, read after `after_lines` transcript lines: a `tokens_in`
    /// opens a call, a `tokens_out` is the running output count of the open one (the last
    /// count is the call's output).
    pub fn push(&mut self, after_lines: usize, msg: &Msg) {
        match msg {
            Msg::TokensIn {
                input,
                model,
                cache_read,
                cache_write,
                cache_write_1h,
                ..
            } => {
                let model = model
                    .clone()
                    .or_else(|| self.calls.last().and_then(|call| call.model.clone()));
                self.calls.push(LoggedCall {
                    after_lines,
                    model,
                    tokens: CallTokens {
                        prompt: *input,
                        cache_read: *cache_read,
                        cache_write: *cache_write,
                        cache_write_1h: *cache_write_1h,
                        output: None,
                    },
                });
            }
            Msg::TokensOut { output, .. } => {
                if let Some(call) = self.calls.last_mut() {
                    call.tokens.output = Some(*output);
                }
            }
            _ => {}
        }
    }

    /// The calls collected.
    pub fn finish(self) -> Vec<LoggedCall> {
        self.calls
    }
}

/// A call's usage line: its tokens by kind and its cost split at `prices`.
pub fn call_text(call: &LoggedCall, prices: &PriceTable) -> String {
    let cost = call.tokens.cost(prices, call.model.as_deref());
    format!("{}; {}", call.tokens.text(), cost_text(cost.as_ref()))
}

/// The session's totals: every call's tokens summed by kind, and its cost as every view shows
/// it — the `session` cost the log's fold holds, with its source: what the agent reported
/// (the built-in table's price of the tokens beside it), or panewise's estimate (`~`, its
/// split beside it); without one, the cost split of the calls whose model has a price,
/// saying how many had none (their cost is not guessed).
pub fn totals_text(
    calls: &[LoggedCall],
    prices: &PriceTable,
    session: Option<(f64, CostSource)>,
) -> String {
    let mut tokens = CallTokens::default();
    let mut cost: Option<CostSplit> = None;
    let mut unpriced = 0usize;
    for call in calls {
        tokens = tokens.plus(&call.tokens);
        match call.tokens.cost(prices, call.model.as_deref()) {
            Some(split) => cost = Some(cost.map_or(split, |sum| sum.plus(&split))),
            None => unpriced += 1,
        }
    }
    let count = match calls.len() {
        1 => "1 model call".to_owned(),
        count => format!("{count} model calls"),
    };
    let cost = match (cost, unpriced, session) {
        (priced, _, Some((reported, CostSource::Reported))) => format!(
            "${reported:.4} reported by the agent{}",
            priced.map_or(String::new(), |split| format!(
                " (the built-in table prices these tokens at ${:.4})",
                split.total_usd
            ))
        ),
        (priced, _, Some((estimate, CostSource::Estimated))) => format!(
            "~${estimate:.4} estimated from the tokens{}",
            priced.map_or(String::new(), |split| format!(
                " ({})",
                cost_text(Some(&split))
            ))
        ),
        (Some(split), 0, _) => cost_text(Some(&split)),
        (Some(split), unpriced, _) => format!(
            "{} (without {unpriced} call(s) whose model has no price)",
            cost_text(Some(&split))
        ),
        (None, _, _) => cost_text(None),
    };
    format!("{count}: {}; {cost}", tokens.text())
}

/// The session's totals when the agent reported no call of its own (only per turn, as Gemini
/// CLI over ACP does): its tokens and the cost every view shows for it
/// ([`panewise_api::view::cost_text`]'s figure, said with its source).
pub fn session_totals_text(totals: &panewise_protocol::SessionStats) -> String {
    let count = |tokens: Option<u64>| {
        tokens.map_or_else(
            || "not reported".to_owned(),
            panewise_providers::call_usage::grouped,
        )
    };
    let cost = match (totals.cost_usd, totals.cost_source) {
        (Some(cost), Some(CostSource::Reported)) => format!("${cost:.4} reported by the agent"),
        (Some(cost), Some(CostSource::Estimated)) => {
            format!("~${cost:.4} estimated from the tokens")
        }
        (Some(cost), Some(CostSource::Unknown) | None) => format!("${cost:.4}"),
        (None, _) => "cost unknown (no price for these tokens)".to_owned(),
    };
    format!(
        "prompt {}; {} out (reported per turn, not per call); {cost}",
        count(panewise_api::view::input_tokens(totals)),
        count(totals.output_tokens),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens_in(input: u64, model: Option<&str>, split: Option<(u64, u64, u64)>) -> Msg {
        Msg::TokensIn {
            input,
            model: model.map(str::to_owned),
            cache_read: split.map(|(read, _, _)| read),
            cache_write: split.map(|(_, write, _)| write),
            cache_write_1h: split.map(|(_, _, hour)| hour),
            turn: None,
        }
    }

    fn tokens_out(output: u64) -> Msg {
        Msg::TokensOut { output, turn: None }
    }

    /// Golden text, priced with the built-in table (claude-sonnet-4-5: input 3, cache read
    /// 0.3, 5-minute write 3.75, 1-hour write 6, output 15 US dollars per million tokens).
    #[test]
    fn calls_are_collected_from_the_log_and_totalled_by_kind() {
        let log = [
            (
                1,
                tokens_in(11_000, Some("claude-sonnet-4-5"), Some((0, 10_000, 4_000))),
            ),
            (2, tokens_out(100)),
            (3, tokens_out(200)),
            // No model: the last one logged.
            (4, tokens_in(8_149, None, Some((7_983, 0, 0)))),
            (5, tokens_out(39)),
            (6, tokens_in(500, Some("no-such-model"), None)),
        ];
        let mut collector = CallCollector::default();
        for (ts, msg) in &log {
            collector.push(*ts, msg);
        }
        let calls = collector.finish();
        let prices = PriceTable::built_in();
        let lines: Vec<String> = calls.iter().map(|call| call_text(call, &prices)).collect();
        assert_eq!(
            lines,
            [
                "prompt 11,000 = 1,000 new + 0 cache read + 10,000 cache write (4,000 of them \
                 1h); 200 out; $0.0525 = $0.0030 input + $0.0000 cache read + $0.0225 cache \
                 write 5m + $0.0240 cache write 1h + $0.0030 output",
                "prompt 8,149 = 166 new + 7,983 cache read + 0 cache write; 39 out; $0.0035 = \
                 $0.0005 input + $0.0024 cache read + $0.0000 cache write + $0.0006 output",
                "prompt 500 (no cache figures reported); output not reported; cost unknown (no \
                 price for the model)",
            ]
        );
        assert_eq!(calls[1].after_lines, 4);
        // 0.0525 + 0.0034779 = 0.0559779.
        assert_eq!(
            totals_text(&calls, &prices, None),
            "3 model calls: prompt 19,649 = 1,666 new + 7,983 cache read + 10,000 cache write \
             (4,000 of them 1h); 239 out; $0.0560 = $0.0035 input + $0.0024 cache read + \
             $0.0225 cache write 5m + $0.0240 cache write 1h + $0.0036 output (without 1 \
             call(s) whose model has no price)"
        );
        assert_eq!(
            totals_text(&calls[2..], &prices, None),
            "1 model call: prompt 500 (no cache figures reported); output not reported; cost \
             unknown (no price for the model)"
        );
    }
}
