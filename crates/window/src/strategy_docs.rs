//! What each built-in strategy takes, as data: the help text of `panewise window --config` and
//! the unknown-key error are drawn from it, and a test holds it to what the parser accepts.

/// One option of a strategy, as a configuration spells it: what help text lists and what the
/// unknown-key error offers instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionDoc {
    /// The key, as written in the configuration file.
    pub name: &'static str,
    /// What the value may be, and its default when it has one.
    pub value: &'static str,
    /// A valid value as JSON text, so a test can prove the parser takes every listed option.
    pub example: &'static str,
}

/// A built-in strategy: its name, what it does, and the options it takes besides the pins.
/// `keepThinkingTurns` is in no local strategy's list: the local history keeps no thinking,
/// so every local strategy refuses it with that reason (W89).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StrategyDoc {
    /// The `strategy` value that chooses it.
    pub name: &'static str,
    /// What it does, in one line.
    pub summary: &'static str,
    /// Whether it engages only on a usage reading over its threshold.
    pub token_triggered: bool,
    /// Whether the provider applies it (a provider-side strategy), so it edits nothing
    /// locally and takes none of [`PIN_OPTIONS`].
    pub provider_side: bool,
    /// Its own options (every strategy also takes [`PIN_OPTIONS`]).
    pub options: &'static [OptionDoc],
}

const THRESHOLD: OptionDoc = OptionDoc {
    name: "thresholdTokens",
    value: "required, a whole number of at least 1",
    example: "2000",
};
const KEEP_TURNS_DEFAULT: OptionDoc = OptionDoc {
    name: "keepRecentTurns",
    value: "a whole number of at least 1, default 6",
    example: "6",
};
const KEEP_OBSERVATIONS: OptionDoc = OptionDoc {
    name: "keepRecentObservations",
    value: "a whole number, default 10",
    example: "10",
};
/// `keepToolUses` under a local masking strategy: Anthropic's name for the same count (W86).
/// Its example equals `keepRecentObservations`', so a configuration giving every option
/// gives the two the same value, the only way both may be given.
const KEEP_TOOL_USES_LOCAL: OptionDoc = OptionDoc {
    name: "keepToolUses",
    value: "a whole number, the same as keepRecentObservations (Anthropic's name for it); give either, or both with one value",
    example: "10",
};
const CLEAR_AT_LEAST_LOCAL: OptionDoc = OptionDoc {
    name: "clearAtLeastTokens",
    value: "a whole number of at least 1: mask nothing unless the placeholders save at least this many tokens, counted locally; default: no minimum",
    example: "2000",
};
const CLEAR_TOOL_INPUTS_LOCAL: OptionDoc = OptionDoc {
    name: "clearToolInputs",
    value: "false only: the local window cannot blank a call's arguments, so true is refused (the provider-side strategy can)",
    example: "false",
};
const MODEL: OptionDoc = OptionDoc {
    name: "model",
    value: "required, the summarizer's model (never the agent's)",
    example: "\"extractive\"",
};
const RETAIN: OptionDoc = OptionDoc {
    name: "retain",
    value: "\"conversation\" (default) or \"discard\": how folded originals are kept",
    example: "\"discard\"",
};

/// The options every local strategy takes: the pin ceilings (W23), the excluded tools (W87)
/// and the cache guard.
pub const PIN_OPTIONS: [OptionDoc; 6] = [
    OptionDoc {
        name: "keepLastToolResults",
        value: "false or a whole number, default 2",
        example: "2",
    },
    OptionDoc {
        name: "keepLedgerFacts",
        value: "false or a whole number, default 4",
        example: "false",
    },
    OptionDoc {
        name: "excludeTools",
        value: "a list of tool names whose results no local strategy removes or masks (refusal excluded-tool); default none",
        example: "[\"read_file\"]",
    },
    OptionDoc {
        name: "paybackCalls",
        value: "a whole number of at least 1: hold an edit back unless it pays for the prompt cache it breaks within this many calls; default: apply every edit",
        example: "5",
    },
    OptionDoc {
        name: "overflowTokens",
        value: "a whole number of at least 1: at this many tokens an edit is applied even if it does not pay; default: never forced",
        example: "180000",
    },
    OptionDoc {
        name: "shadow",
        value: "true or false, default false: record what the strategy would do and change nothing",
        example: "true",
    },
];

const TRIGGER_CLEAR: OptionDoc = OptionDoc {
    name: "triggerTokens",
    value: "a whole number of at least 1: the provider clears once the prompt reaches this many input tokens; default 100000",
    example: "30000",
};

/// Every built-in strategy, in the order of [`STRATEGY_NAMES`](crate::config::STRATEGY_NAMES).
pub const STRATEGY_DOCS: [StrategyDoc; 9] = [
    StrategyDoc {
        name: "sliding-window",
        summary: "keep the last keepRecentTurns turns",
        token_triggered: false,
        provider_side: false,
        options: &[OptionDoc {
            name: "keepRecentTurns",
            value: "required, a whole number of at least 1",
            example: "3",
        }],
    },
    StrategyDoc {
        name: "token-budget",
        summary: "drop the oldest turns until under thresholdTokens",
        token_triggered: true,
        provider_side: false,
        options: &[THRESHOLD, KEEP_TURNS_DEFAULT],
    },
    StrategyDoc {
        name: "summarize-oldest",
        summary: "fold the oldest turns into a summary when over thresholdTokens",
        token_triggered: true,
        provider_side: false,
        options: &[THRESHOLD, KEEP_TURNS_DEFAULT, MODEL, RETAIN],
    },
    StrategyDoc {
        name: "observation-masking",
        summary: "mask tool results older than the last keepRecentObservations (the local twin of anthropic-clear-tool-uses)",
        token_triggered: false,
        provider_side: false,
        options: &[
            KEEP_OBSERVATIONS,
            KEEP_TOOL_USES_LOCAL,
            CLEAR_AT_LEAST_LOCAL,
            OptionDoc {
                name: "triggerTokens",
                value: "a whole number of at least 1: mask only once a usage reading (plus what was appended since) reaches this many tokens; default: on every visit",
                example: "30000",
            },
            CLEAR_TOOL_INPUTS_LOCAL,
        ],
    },
    StrategyDoc {
        name: "hybrid",
        summary: "when over thresholdTokens, mask first and fold only if masking is not enough",
        token_triggered: true,
        provider_side: false,
        options: &[
            THRESHOLD,
            KEEP_TURNS_DEFAULT,
            KEEP_OBSERVATIONS,
            KEEP_TOOL_USES_LOCAL,
            CLEAR_AT_LEAST_LOCAL,
            CLEAR_TOOL_INPUTS_LOCAL,
            MODEL,
            RETAIN,
        ],
    },
    StrategyDoc {
        name: "anthropic-clear-tool-uses",
        summary: "Anthropic clears the oldest tool results on its servers past triggerTokens (clear_tool_uses_20250919)",
        token_triggered: false,
        provider_side: true,
        options: &[
            TRIGGER_CLEAR,
            OptionDoc {
                name: "keepToolUses",
                value: "a whole number: the most recent tool uses left as they are; default 3",
                example: "5",
            },
            OptionDoc {
                name: "clearAtLeastTokens",
                value: "a whole number of at least 1: clear nothing unless at least this many tokens go; default: no minimum",
                example: "5000",
            },
            OptionDoc {
                name: "excludeTools",
                value: "a list of tool names whose uses are never cleared; default none",
                example: "[\"web_search\"]",
            },
            OptionDoc {
                name: "clearToolInputs",
                value: "true or false: clear the calls' arguments too; default false",
                example: "true",
            },
        ],
    },
    StrategyDoc {
        name: "anthropic-clear-thinking",
        summary: "Anthropic clears thinking blocks of earlier turns on its servers (clear_thinking_20251015)",
        token_triggered: false,
        provider_side: true,
        options: &[OptionDoc {
            name: "keepThinkingTurns",
            value: "a whole number of at least 1, or \"all\": the recent turns whose thinking stays; default 1",
            example: "\"all\"",
        }],
    },
    StrategyDoc {
        name: "anthropic-compact",
        summary: "Anthropic summarizes the conversation into a compaction block past triggerTokens (compact_20260112)",
        token_triggered: false,
        provider_side: true,
        options: &[
            OptionDoc {
                name: "triggerTokens",
                value: "a whole number of at least 50000: compact once the prompt reaches this many input tokens; default 150000",
                example: "60000",
            },
            OptionDoc {
                name: "instructions",
                value: "a non-empty string: the summarization prompt, replacing the API's own; default the API's",
                example: "\"Keep file paths.\"",
            },
            OptionDoc {
                name: "pauseAfterCompaction",
                value: "true or false: stop the call after the summary; default false",
                example: "true",
            },
        ],
    },
    StrategyDoc {
        name: "openai-compaction",
        summary: "OpenAI compacts the conversation into an opaque compaction item past compactThreshold (Responses context_management)",
        token_triggered: false,
        provider_side: true,
        options: &[OptionDoc {
            name: "compactThreshold",
            value: "required, a whole number of at least 1: compact once the prompt crosses this many tokens",
            example: "200000",
        }],
    },
];
