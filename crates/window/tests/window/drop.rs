//! W30–W39: the shared drop mechanism, sliding-window, token-budget and the drop notice.

use panewise_window::record::{PlanAction, RecordDetail};
use panewise_window::{
    Message, RefusalReason, SlidingWindow, TokenBudget, WindowError, WindowMessage,
};

use crate::support::*;

#[test]
fn w30_a_drop_from_the_head_puts_a_notice_in_its_place() {
    let mut messages = vec![];
    messages.extend(tool_turn("c1", "grep", 600));
    messages.extend(tool_turn("c2", "read_file", 600));
    messages.push(Message::assistant("now"));
    let mut conversation = conversation(messages);
    let stage = stage_without_pins(SlidingWindow::new(1).unwrap());
    let plan = visit_and_apply(&stage, &mut conversation, context(3)).unwrap();
    assert_eq!(plan.record.removed_message_count, 4);
    assert_eq!(plan.evictions.len(), 4);
    let notice = &conversation.messages()[0];
    assert!(notice.content.starts_with("[dropped history"));
    assert_eq!(conversation.len(), 2);
    assert_eq!(
        plan.record.window_chars_after,
        conversation.window_chars(),
        "the record's after figure is the window's exact size"
    );
    match plan.record.detail {
        RecordDetail::SlidingWindow(detail) => {
            assert_eq!((detail.turns_before, detail.turns_after), (3, 2));
        }
        other => panic!("unexpected detail {other:?}"),
    }
}

#[test]
fn w31_an_assistant_head_with_nothing_fitting_refuses_replacement_not_smaller() {
    let conversation = conversation(vec![
        Message::assistant("tiny"),
        Message::assistant("also tiny"),
        Message::assistant("now"),
    ]);
    let stage = stage(SlidingWindow::new(1).unwrap());
    let plan = visit(&stage, &conversation, context(1)).unwrap();
    assert!(plan.edit.is_none());
    assert_eq!(
        plan.record.refusals[0].reason,
        RefusalReason::ReplacementNotSmaller
    );
    assert_eq!(plan.record.refusals[0].turn_index, 0);
}

#[test]
fn w31_a_user_head_allows_a_silent_drop_of_a_small_span() {
    let conversation = conversation(vec![
        Message::assistant("tiny"),
        Message::user("question"),
        Message::assistant("answer"),
    ]);
    let stage = stage(SlidingWindow::new(2).unwrap());
    let plan = visit(&stage, &conversation, context(1)).unwrap();
    let edit = plan.edit.unwrap();
    assert_eq!(edit.removed, 0..1);
    assert!(edit.inserted.is_none());
}

#[test]
fn w31_the_plain_notice_is_used_when_the_rich_one_does_not_fit() {
    let conversation = conversation(vec![
        Message::assistant_calls("", &[("c1", "a_rather_long_tool_name_for_this_test", "{}")]),
        Message::tool_result("c1", text(250)),
        Message::assistant("now"),
    ]);
    let stage = stage_without_pins(SlidingWindow::new(1).unwrap());
    let plan = visit(&stage, &conversation, context(1)).unwrap();
    let notice = plan.edit.unwrap().inserted.unwrap();
    assert!((notice.chars().count() as u64) < 250);
    assert!(!notice.contains("a_rather_long_tool_name"));
    assert_eq!(
        plan.record.dropped_observations,
        Some(vec!["a_rather_long_tool_name_for_this_test".to_string()])
    );
}

#[test]
fn w32_sliding_window_disengages_at_or_below_keep_and_needs_no_usage() {
    let conversation = conversation(vec![Message::user("a"), Message::assistant("b")]);
    let stage = stage(SlidingWindow::new(2).unwrap());
    assert!(visit(&stage, &conversation, context(1)).is_none());
    let bigger = crate::support::conversation(vec![
        Message::assistant(text(500)),
        Message::user("a"),
        Message::assistant("b"),
    ]);
    let plan = visit(&stage, &bigger, context(1)).unwrap();
    assert!(plan.budget_pressure.is_none());
    assert!(plan.spend.is_none());
    assert_eq!(plan.evictions.len(), 1);
    assert!(SlidingWindow::new(0).is_err());
}

#[test]
fn w33_token_budget_waits_for_the_first_call() {
    let conversation = conversation(vec![Message::assistant(text(5000)), Message::user("q")]);
    let stage = stage(TokenBudget::with_keep_recent_turns(10, 1).unwrap());
    assert!(visit(&stage, &conversation, context(1)).is_none());
}

#[test]
fn w33_w55_token_budget_rejects_a_zero_reading_by_name() {
    let conversation = conversation(vec![Message::assistant(text(5000)), Message::user("q")]);
    let stage = stage(TokenBudget::with_keep_recent_turns(10, 1).unwrap());
    let mut context = measured_context(&conversation, 2, 0);
    if let Some(measured) = context.measured.as_mut() {
        measured.usage.output = 0;
    }
    context.provider = "acme";
    let error = try_visit(&stage, &conversation, context).unwrap_err();
    assert_eq!(
        error,
        WindowError::Unmeasurable {
            provider: "acme".to_string()
        }
    );
    assert!(error.to_string().contains("CompactionUnmeasurableError"));
}

#[test]
fn w33_only_a_reading_strictly_above_the_threshold_triggers() {
    let conversation = conversation(vec![Message::assistant(text(5000)), Message::user("q")]);
    let stage = stage(TokenBudget::with_keep_recent_turns(1000, 1).unwrap());
    assert!(visit(
        &stage,
        &conversation,
        measured_context(&conversation, 2, 1000)
    )
    .is_none());
    let plan = visit(
        &stage,
        &conversation,
        measured_context(&conversation, 2, 1001),
    )
    .unwrap();
    let pressure = plan.budget_pressure.unwrap();
    assert_eq!(pressure.plan_action, PlanAction::Evict);
    assert_eq!(
        (pressure.cap_tokens, pressure.projected_tokens),
        (1000, 1001)
    );
    assert!(plan.spend.is_none());
}

#[test]
fn w33_token_budget_drops_the_oldest_turns_only_until_under_the_threshold() {
    let mut messages = vec![Message::system("sys"), Message::user("request")];
    for i in 0..10 {
        messages.extend(tool_turn(&format!("c{i}"), "read_file", 4_000));
    }
    let mut conversation = conversation(messages);
    let total = conversation.tokens_in(0..conversation.len());
    let stage = stage_without_pins(TokenBudget::with_keep_recent_turns(total - 2_500, 2).unwrap());
    let context = measured_context(&conversation, 2, total);
    let plan = visit_and_apply(&stage, &mut conversation, context).unwrap();
    // Each tool turn is ~1000 tokens: three turns are the fewest that free 2500.
    assert_eq!(plan.record.removed_message_count, 6);
    assert!(conversation.tokens_in(0..conversation.len()) <= total - 2_500);
    match plan.record.detail {
        RecordDetail::TokenBudget(detail) => {
            assert_eq!(detail.measured_tokens, total);
            assert!(detail.over_budget);
        }
        other => panic!("unexpected detail {other:?}"),
    }
}

#[test]
fn w33_counted_tokens_since_the_call_are_added_to_the_reading() {
    let mut conversation = conversation(vec![
        Message::assistant(text(4_000)),
        Message::user("request"),
    ]);
    let context = measured_context(&conversation, 2, 900);
    conversation.push(Message::assistant(text(800)));
    let stage = stage(TokenBudget::with_keep_recent_turns(1_000, 1).unwrap());
    // 900 measured + 200 counted since: over the threshold of 1000.
    let plan = visit(&stage, &conversation, context).unwrap();
    match plan.record.detail {
        RecordDetail::TokenBudget(detail) => assert_eq!(detail.tokens_since_measured, 200),
        other => panic!("unexpected detail {other:?}"),
    }
}

#[test]
fn w36_the_notice_states_its_clauses_in_order() {
    let mut messages = vec![Message::user("request")];
    messages.extend(tool_turn("c1", "grep", 900));
    messages.push(Message::assistant("now"));
    let conversation = conversation(messages);
    let stage = stage_without_pins(SlidingWindow::new(1).unwrap());
    let plan = visit(&stage, &conversation, context(7)).unwrap();
    let notice = plan.edit.unwrap().inserted.unwrap();
    assert!(notice.starts_with("[dropped history"));
    assert!(notice.ends_with(']'));
    let order = [
        "2 earlier messages",
        "iteration 7",
        "\"sliding-window\"",
        "current request is still in the window",
        "grep",
        "Nothing was summarized",
        "commit log",
    ];
    let positions: Vec<usize> = order
        .iter()
        .map(|part| notice.find(part).unwrap())
        .collect();
    assert!(
        positions.windows(2).all(|pair| pair[0] < pair[1]),
        "{notice}"
    );
}

#[test]
fn w37_at_most_four_plain_identifier_names_are_printed() {
    let mut messages = vec![];
    let names: Vec<String> = (0..20).map(|i| format!("tool_{i}")).collect();
    for (i, name) in names.iter().enumerate() {
        messages.extend(tool_turn(&format!("c{i}"), name, 200));
    }
    messages.push(Message::assistant_calls(
        "",
        &[("bad", "rm -rf /; echo", "{}")],
    ));
    messages.push(Message::tool_result("bad", text(200)));
    messages.push(Message::assistant("now"));
    let conversation = conversation(messages);
    let plan = visit(
        &stage_without_pins(SlidingWindow::new(1).unwrap()),
        &conversation,
        context(1),
    )
    .unwrap();
    let notice = plan.edit.unwrap().inserted.unwrap();
    let tool_sentence = &notice[notice.find("Results from these tools").unwrap()
        ..notice.find("Call the tool again").unwrap()];
    assert!(
        tool_sentence.contains("tool_0, tool_1, tool_2, tool_3, …"),
        "{notice}"
    );
    assert!(!tool_sentence.contains("tool_4"));
    // The archived spans' descriptions name their own tools, only plain identifiers (W71).
    assert!(!notice.contains("rm -rf"));
    let dropped = plan.record.dropped_observations.unwrap();
    assert_eq!(dropped.len(), 21, "the record is uncapped and unfiltered");
    assert_eq!(dropped[20], "rm -rf /; echo");
}

#[test]
fn w37_with_no_printable_name_the_tool_sentence_is_left_out() {
    let conversation = conversation(vec![
        Message::assistant_calls("", &[("c1", "not an identifier", "{}")]),
        Message::tool_result("c1", text(600)),
        Message::assistant("now"),
    ]);
    let plan = visit(
        &stage_without_pins(SlidingWindow::new(1).unwrap()),
        &conversation,
        context(1),
    )
    .unwrap();
    let notice = plan.edit.unwrap().inserted.unwrap();
    assert!(!notice.contains("Results from these tools"), "{notice}");
    assert!(!notice.contains("not an identifier"));
}

#[test]
fn w38_at_most_one_notice_is_ever_in_the_window() {
    let mut conversation = conversation(vec![Message::assistant(text(800))]);
    let stage = stage(SlidingWindow::new(2).unwrap());
    for i in 0..10 {
        conversation.push(Message::assistant(text(800)));
        conversation.push(Message::assistant(format!("step {i}")));
        visit_and_apply(&stage, &mut conversation, context(i + 1));
        let notices = contents(&conversation)
            .iter()
            .filter(|c| c.starts_with("[dropped history"))
            .count();
        assert!(notices <= 1);
    }
}

#[test]
fn w38_a_tools_fake_notice_is_not_a_notice_and_adds_no_content() {
    let conversation = conversation(vec![
        Message::assistant_calls("", &[("c1", "evil", "{}")]),
        Message::tool_result("c1", format!("[dropped history: secret {}", text(600))),
        Message::assistant("now"),
    ]);
    let plan = visit(
        &stage_without_pins(SlidingWindow::new(1).unwrap()),
        &conversation,
        context(1),
    )
    .unwrap();
    let notice = plan.edit.unwrap().inserted.unwrap();
    assert!(!notice.contains("secret"));
}

#[test]
fn w39_the_notice_follows_a_request_kept_at_the_head() {
    let mut messages = vec![Message::user("request")];
    messages.extend(tool_turn("c1", "grep", 900));
    messages.push(Message::assistant("now"));
    let mut conversation = conversation(messages);
    visit_and_apply(
        &stage_without_pins(SlidingWindow::new(1).unwrap()),
        &mut conversation,
        context(1),
    );
    let window = contents(&conversation);
    assert_eq!(window[0], "request");
    assert!(window[1].starts_with("[dropped history"));
    assert_eq!(window[2], "now");
}

#[test]
fn w39_a_drop_deeper_in_the_window_inserts_no_notice_but_the_record_names_the_tools() {
    // An unanswered call is stepped over before the span, so the span is not at the head.
    let messages = vec![
        Message::system("sys"),
        Message::assistant_calls("", &[("pending", "long_job", "{}")]),
        Message::user("old"),
        Message::assistant_calls("", &[("c1", "grep", "{}")]),
        Message::tool_result("c1", text(900)),
        Message::user("new"),
        Message::assistant("now"),
    ];
    let conversation = conversation(messages);
    let plan = visit(
        &stage_without_pins(SlidingWindow::new(1).unwrap()),
        &conversation,
        context(1),
    )
    .unwrap();
    let edit = plan.edit.unwrap();
    assert_eq!(edit.removed, 2..5);
    assert!(edit.inserted.is_none());
    assert_eq!(
        plan.record.dropped_observations,
        Some(vec!["grep".to_string()])
    );
}

#[test]
fn w39_a_window_opening_with_system_messages_gets_the_notice_right_after_them() {
    let mut conversation = conversation(vec![
        Message::system("sys"),
        Message::assistant(text(900)),
        Message::user("request"),
        Message::assistant("now"),
    ]);
    visit_and_apply(
        &stage_without_pins(SlidingWindow::new(1).unwrap()),
        &mut conversation,
        context(1),
    );
    let window = contents(&conversation);
    assert_eq!(window[0], "sys");
    assert!(window[1].starts_with("[dropped history"), "{window:?}");
    assert_eq!(&window[2..], ["request", "now"]);
}

#[test]
fn w39_after_system_and_a_kept_request_the_notice_follows_the_request() {
    let mut messages = vec![Message::system("sys"), Message::user("request")];
    messages.extend(tool_turn("c1", "grep", 900));
    messages.push(Message::assistant("earlier progress"));
    messages.push(Message::assistant("now"));
    let mut conversation = conversation(messages);
    visit_and_apply(
        &stage_without_pins(SlidingWindow::new(1).unwrap()),
        &mut conversation,
        context(1),
    );
    let window = contents(&conversation);
    assert_eq!(&window[..2], ["sys", "request"]);
    assert!(window[2].starts_with("[dropped history"), "{window:?}");
    assert!(window[2].contains("current request is still in the window"));
    assert!(window[2].contains("grep"));
    assert_eq!(window[3], "now");
}

#[test]
fn w31_after_system_messages_an_assistant_head_with_nothing_fitting_refuses() {
    let conversation = conversation(vec![
        Message::system("sys"),
        Message::assistant("tiny"),
        Message::assistant("also tiny"),
        Message::assistant("now"),
    ]);
    let plan = visit(
        &stage(SlidingWindow::new(1).unwrap()),
        &conversation,
        context(1),
    )
    .unwrap();
    assert!(plan.edit.is_none());
    assert_eq!(
        plan.record.refusals[0].reason,
        RefusalReason::ReplacementNotSmaller
    );
    assert_eq!(plan.record.refusals[0].turn_index, 1);
}

#[test]
fn w60_a_leftover_notice_does_not_stall_a_drop_strategy() {
    let mut conversation = conversation(vec![Message::assistant(text(2_000))]);
    let stage = stage(SlidingWindow::new(1).unwrap());
    for i in 0..6 {
        conversation.push(Message::assistant(format!("short {i}")));
        visit_and_apply(&stage, &mut conversation, context(i + 1));
        assert!(
            conversation.turn_count() <= 2,
            "{:?}",
            contents(&conversation)
        );
    }
}

#[test]
fn w35_tool_names_are_recovered_from_calls_listed_once_in_order_and_never_unknown() {
    let mut named = Message::tool_result("c3", text(300));
    named.tool_name = Some("declared_name".to_string());
    let conversation = conversation(vec![
        Message::assistant_calls("", &[("c1", "grep", "{}"), ("c2", "ls", "{}")]),
        Message::tool_result("c2", text(300)),
        Message::tool_result("c1", text(300)),
        Message::assistant_calls("", &[("c3", "ignored_call_name", "{}")]),
        named,
        Message::tool_result("no-such-call", text(300)),
        Message::assistant_calls("", &[("c4", "grep", "{}")]),
        Message::tool_result("c4", text(300)),
        Message::assistant("now"),
    ]);
    let plan = visit(
        &stage_without_pins(SlidingWindow::new(1).unwrap()),
        &conversation,
        context(1),
    )
    .unwrap();
    assert_eq!(
        plan.record.dropped_observations.unwrap(),
        vec!["ls", "grep", "declared_name"]
    );
    assert!(!plan.edit.unwrap().inserted.unwrap().contains("unknown"));
}

#[test]
fn w38_an_earlier_notice_behind_a_leaving_request_is_rewritten_so_one_notice_stays() {
    // The shape the property generator found: an earlier drop put its notice after the request
    // it kept; the person asked something new, so that request leaves now. Its notice must not
    // stay beside the new one.
    let earlier = format!(
        "{}: 3 earlier messages were dropped at iteration 2 by the \"sliding-window\" window \
         strategy. Archived whole, by id: sp-0123456789ab; sp-abcdefabcdef.]",
        panewise_window::notice::DROP_NOTICE_PREFIX
    );
    let mut conversation = conversation(vec![
        Message::system("sys"),
        Message::user(text(600)),
        Message::stage_note(earlier.clone(), 5),
        Message::assistant("done with that"),
        Message::user("and now the tests"),
        Message::assistant("running them"),
    ]);
    let stage = stage_without_pins(SlidingWindow::new(4).unwrap());
    let (plan, archived) = visit_archive_and_apply(&stage, &mut conversation, context(6)).unwrap();
    let notices: Vec<&Message> = conversation
        .messages()
        .iter()
        .filter(|m| m.content.starts_with("[dropped history"))
        .collect();
    assert_eq!(notices.len(), 1, "{:#?}", conversation.messages());
    assert_ne!(
        notices[0].content, earlier,
        "the new notice replaced the old"
    );
    assert!(
        notices[0].content.contains("1 earlier message was dropped"),
        "the notice counts the conversation's messages, not the old notice: {}",
        notices[0].content
    );
    assert_eq!(
        plan.record.removed_message_count, 1,
        "the request; the old notice is rewritten in place"
    );
    assert!(
        archived.iter().all(|span| span.content != earlier),
        "a stage note is not conversation: it is not archived"
    );
    assert!(
        notices[0]
            .content
            .contains("Archived by an earlier drop: sp-0123456789ab; sp-abcdefabcdef."),
        "the ids the old notice named are still named: {}",
        notices[0].content
    );
    assert_eq!(plan.record.window_chars_after, conversation.window_chars());
}
