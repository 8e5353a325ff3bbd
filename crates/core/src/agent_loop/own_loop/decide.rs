//! How the loop decides a tool call: its paths' facts asked of the shell
//! ([`Effect::ResolvePaths`]), then the approval policy over them, the sandbox's plan for
//! `shell`, and the person's answer when the policy asks. Pure, as the loop is.

use super::*;

impl OwnLoop {
    /// Decides the next pending call: runs it, asks through the reducer's queue, or refuses.
    pub(super) fn next_tool(&mut self, call: PendingCall, at_ms: u64) -> Vec<Effect> {
        let parsed = match &call.parsed {
            Ok(parsed) => parsed.clone(),
            Err(reason) => {
                let reason = reason.clone();
                self.next = Next::Tools;
                return self.refuse(call, reason, at_ms);
            }
        };
        // A file tool's paths are facts on disk: the shell finds them, and the call is decided
        // when they come back.
        let paths = paths_to_resolve(&ToolRequest::Own(&parsed));
        if !paths.is_empty() {
            let id = call.id.clone();
            self.under_way = UnderWay::Resolving(call);
            return vec![Effect::ResolvePaths { id, paths }];
        }
        self.decide_call(call, parsed, &PathFacts::new(), at_ms)
    }

    /// The shell found the facts about call `id`'s paths: the call is decided over them.
    pub(super) fn paths_resolved(
        &mut self,
        id: &str,
        facts: &PathFacts,
        at_ms: u64,
    ) -> Vec<Effect> {
        let call = match std::mem::replace(&mut self.under_way, UnderWay::Nothing) {
            UnderWay::Resolving(call) if call.id == id => call,
            other => {
                self.under_way = other;
                return Vec::new();
            }
        };
        match call.parsed.clone() {
            Ok(parsed) => self.decide_call(call, parsed, facts, at_ms),
            Err(reason) => {
                self.next = Next::Tools;
                self.refuse(call, reason, at_ms)
            }
        }
    }

    /// Decides a parsed call over the facts about its paths: runs it, asks through the
    /// reducer's queue, or refuses.
    pub(super) fn decide_call(
        &mut self,
        call: PendingCall,
        parsed: ToolCall,
        facts: &PathFacts,
        at_ms: u64,
    ) -> Vec<Effect> {
        let mut decision = decide(self.config.approval, &ToolRequest::Own(&parsed), facts);
        let mut effects = Vec::new();
        // `shell` is bounded by the sandbox where there is one: the sandbox's plan decides it.
        if matches!(parsed, ToolCall::Shell(_)) {
            let plan = self.config.sandbox.plan(self.config.approval);
            decision = match plan.approval {
                ShellApproval::Run => Decision::Run,
                ShellApproval::Ask => Decision::Ask,
                ShellApproval::Deny(reason) => Decision::Deny { reason },
            };
            if let (Some(why), false) = (plan.unboxed_because, self.said_unboxed) {
                self.said_unboxed = true;
                effects.push(Effect::Emit(ProviderEvent::Warning { message: why }));
            }
        }
        let entry = transcript::policy_entry(
            &call.id,
            &call.name,
            &parsed.summary(),
            &decision,
            self.config.approval,
        );
        effects.push(Effect::Transcript { at_ms, entry });
        match decision {
            Decision::Run => effects.extend(self.start_tool(call.id, call.name, parsed, at_ms)),
            Decision::Deny { reason } => {
                self.next = Next::Tools;
                effects.extend(self.refuse(call, reason, at_ms));
            }
            Decision::Ask => {
                effects.push(Effect::Reduce(Msg::ApprovalRequested {
                    id: call.id.clone(),
                    tool: call.name.clone(),
                    summary: parsed.summary(),
                    turn: None,
                }));
                self.under_way = UnderWay::Approval(call);
            }
        }
        effects
    }

    /// The answer to the call whose approval was asked: it starts, or is refused with
    /// `reason`. An answer for any other call changes nothing.
    pub(super) fn resolve_approval(
        &mut self,
        id: &str,
        approved: bool,
        reason: String,
        at_ms: u64,
    ) -> Vec<Effect> {
        let call = match std::mem::replace(&mut self.under_way, UnderWay::Nothing) {
            UnderWay::Approval(call) if call.id == id => call,
            other => {
                self.under_way = other;
                return Vec::new();
            }
        };
        match (&call.parsed, approved) {
            (Ok(parsed), true) => {
                let parsed = parsed.clone();
                self.start_tool(call.id, call.name, parsed, at_ms)
            }
            _ => {
                self.next = Next::Tools;
                self.refuse(call, reason, at_ms)
            }
        }
    }

    /// A call that does not run: its reason goes back to the model as an error result.
    pub(super) fn refuse(&mut self, call: PendingCall, reason: String, at_ms: u64) -> Vec<Effect> {
        let summary = match &call.parsed {
            Ok(parsed) => parsed.summary(),
            Err(_) => String::new(),
        };
        let notice = Effect::Notice(format!("did not run {} `{summary}`: {reason}", call.name));
        let declined = Effect::Transcript {
            at_ms,
            entry: TranscriptEntry::ToolOutput {
                call_id: call.id.clone(),
                status: ToolCallStatus::Declined,
                exit_code: None,
                output: Some(reason.clone()),
                cut_bytes: 0,
            },
        };
        self.tool_runs.push(ToolRun {
            name: call.name.clone(),
            summary,
            ran: false,
            is_error: true,
            exit_code: None,
        });
        let result = self.add_result(&call.id, &call.name, reason, true, at_ms);
        vec![notice, declined, result]
    }
}
