//! One function per method: params read into their struct, the registry asked, the answer
//! queued, or the effect that will answer it later (a launch, a removal's stop).

use panewise_api::{
    Ack, AnswerParams, ApproveParams, ApproveResult, CreateParams, DaemonBudgetParams,
    DaemonBudgetResult, ErrorCode, HelloParams, HelloResult, ListParams, ListResult, Method,
    PromptParams, RenameParams, Request, RequestId, ResumeParams, RpcError, SessionParams,
    SetBudgetParams, SetBudgetResult, SubscribeParams, SubscribeResult, WaitingFor, API_VERSION,
};
use panewise_session_protocol::{Actor, Control};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::{
    removal, ConnId, Effect, PendingRemoval, Registry, Removal, Timer, REMOVE_STOP_GRACE_MS,
};

/// What a method did: answered now, or the answer comes with a later event.
enum Reply {
    Now(Result<Value, RpcError>),
    Later,
}

fn params<T: DeserializeOwned>(value: Value) -> Result<T, RpcError> {
    serde_json::from_value(value)
        .map_err(|error| RpcError::new(ErrorCode::InvalidParams, error.to_string()))
}

pub(super) fn result(value: impl Serialize) -> Result<Value, RpcError> {
    serde_json::to_value(value)
        .map_err(|error| RpcError::new(ErrorCode::InternalError, error.to_string()))
}

impl Registry {
    pub(super) fn request(&mut self, conn: ConnId, request: Request, effects: &mut Vec<Effect>) {
        let id = request.id.clone();
        let raw = request.params.unwrap_or_else(|| serde_json::json!({}));
        let Some(method) = Method::from_name(&request.method) else {
            let error = RpcError::new(
                ErrorCode::MethodNotFound,
                format!("no method {:?}", request.method),
            );
            self.answer(conn, id, Err(error), effects);
            return;
        };
        if method == Method::Shutdown {
            self.shutdown(conn, id, raw, effects);
            return;
        }
        let reply = match self.call(conn, id.clone(), method, raw, effects) {
            Ok(reply) => reply,
            Err(error) => Reply::Now(Err(error)),
        };
        if let Reply::Now(outcome) = reply {
            self.answer(conn, id, outcome, effects);
        }
        // Queued after the answer: what the request subscribed to follows it, so a client
        // never has a change undone by the older list in the answer.
        self.pump(conn, effects);
    }

    fn call(
        &mut self,
        conn: ConnId,
        request: Option<RequestId>,
        method: Method,
        raw: Value,
        effects: &mut Vec<Effect>,
    ) -> Result<Reply, RpcError> {
        Ok(match method {
            Method::Hello => Reply::Now(self.hello(conn, params(raw)?)),
            Method::List => {
                let ListParams {} = params(raw)?;
                Reply::Now(result(ListResult {
                    sessions: self.summaries(),
                }))
            }
            Method::Create => self.create(conn, request, params(raw)?, effects)?,
            Method::Resume => self.resume(conn, request, params(raw)?, effects)?,
            Method::Prompt => {
                let prompt: PromptParams = params(raw)?;
                self.control(&prompt.session, Control::Prompt(prompt.text), effects)?;
                Reply::Now(result(Ack::OK))
            }
            Method::Approve => {
                let approve: ApproveParams = params(raw)?;
                let by = self.actor(conn);
                let request = self.approve(&approve, by, effects)?;
                Reply::Now(result(ApproveResult { ok: true, request }))
            }
            Method::Answer => {
                let answer: AnswerParams = params(raw)?;
                let by = self.actor(conn);
                let id = self.resolve(&answer.session)?;
                let asks = self
                    .sessions
                    .get(&id)
                    .and_then(|session| session.summary().waiting_for);
                // The question waiting now: an answer typed for an earlier one that was
                // answered meanwhile is refused by the session, not given to the next one.
                let Some(WaitingFor::Question { id: question, .. }) = asks else {
                    return Err(RpcError::new(
                        ErrorCode::NotWaiting,
                        "the session waits for no answer to a question (an approval is \
                         answered with session/approve)",
                    ));
                };
                let control = Control::AnswerQuestion {
                    id: question,
                    answers: vec![answer.text],
                    by,
                };
                self.control(&id, control, effects)?;
                Reply::Now(result(Ack::OK))
            }
            Method::Interrupt => {
                let SessionParams { session } = params(raw)?;
                self.control(&session, Control::Interrupt, effects)?;
                Reply::Now(result(Ack::OK))
            }
            Method::Stop => {
                let SessionParams { session } = params(raw)?;
                self.control(&session, Control::Stop, effects)?;
                Reply::Now(result(Ack::OK))
            }
            Method::Remove => {
                let SessionParams { session } = params(raw)?;
                self.remove(conn, request, &session, effects)?
            }
            Method::Rename => Reply::Now(self.rename(params(raw)?, effects)),
            Method::SetBudget => Reply::Now(self.set_budget(params(raw)?, effects)),
            Method::SetDaemonBudget => {
                let given: DaemonBudgetParams = params(raw)?;
                let positive = |cost: Option<f64>| cost.is_none_or(|c| c.is_finite() && c > 0.0);
                if !positive(given.max_cost_usd)
                    || !positive(given.daily_max_cost_usd)
                    || (given.max_cost_usd.is_none() && given.daily_max_cost_usd.is_none())
                {
                    return Err(RpcError::new(
                        ErrorCode::InvalidParams,
                        "give max_cost_usd, daily_max_cost_usd or both, each above 0",
                    ));
                }
                let caps = self.set_daemon_caps(
                    panewise_pane_state::budget::DaemonCaps {
                        max_cost_usd: given.max_cost_usd,
                        daily_max_cost_usd: given.daily_max_cost_usd,
                    },
                    effects,
                );
                Reply::Now(result(DaemonBudgetResult { ok: true, caps }))
            }
            Method::Subscribe => {
                let subscribe: SubscribeParams = params(raw)?;
                Reply::Now(self.subscribe(conn, &subscribe, effects))
            }
            Method::Unsubscribe => {
                let SessionParams { session } = params(raw)?;
                let id = self.resolve(&session)?;
                self.unsubscribe_lines(conn, &id, effects);
                Reply::Now(result(Ack::OK))
            }
            Method::SubscribeList => {
                let ListParams {} = params(raw)?;
                self.subscribe_list(conn);
                Reply::Now(result(ListResult {
                    sessions: self.summaries(),
                }))
            }
            // Answered by `shutdown`, before this match.
            Method::Shutdown => Reply::Now(result(Ack::OK)),
        })
    }

    fn actor(&self, conn: ConnId) -> Actor {
        Actor::Api {
            client: self.conns.get(&conn).and_then(|c| c.client.clone()),
        }
    }

    fn hello(&mut self, conn: ConnId, hello: HelloParams) -> Result<Value, RpcError> {
        if hello.api_version != API_VERSION {
            return Err(RpcError::new(
                ErrorCode::VersionMismatch,
                format!(
                    "this daemon speaks API version {API_VERSION}, the client {}; restart the \
                     daemon (`panewise daemon`) with the same panewise",
                    hello.api_version
                ),
            ));
        }
        if let Some(connection) = self.conns.get_mut(&conn) {
            connection.client = hello.client;
        }
        result(HelloResult {
            api_version: API_VERSION,
            panewise_version: env!("CARGO_PKG_VERSION").to_owned(),
            pid: self.pid,
        })
    }

    fn create(
        &mut self,
        conn: ConnId,
        request: Option<RequestId>,
        create: CreateParams,
        effects: &mut Vec<Effect>,
    ) -> Result<Reply, RpcError> {
        if let Some(name) = &create.name {
            if name.trim().is_empty() {
                return Err(RpcError::new(ErrorCode::InvalidParams, "the name is empty"));
            }
            if self.name_taken(name) {
                return Err(RpcError::new(
                    ErrorCode::NameTaken,
                    format!("a session is already named {name:?}"),
                ));
            }
            self.reserved.insert(name.clone());
        }
        effects.push(Effect::Launch {
            conn,
            request,
            params: create,
        });
        Ok(Reply::Later)
    }

    fn resume(
        &mut self,
        conn: ConnId,
        request: Option<RequestId>,
        resume: ResumeParams,
        effects: &mut Vec<Effect>,
    ) -> Result<Reply, RpcError> {
        // The session continued, when the daemon still lists it: the new one takes its name
        // (and it goes back to its default), so `resume den` leaves `den` running.
        let (log, continued) = match self.resolve(&resume.session) {
            Ok(id) => {
                let Some(session) = self.sessions.get(&id) else {
                    return Err(RpcError::new(ErrorCode::UnknownSession, "no such session"));
                };
                if !session.is_ended() {
                    return Err(RpcError::new(
                        ErrorCode::SessionRunning,
                        "the session is running; there is nothing to resume",
                    ));
                }
                // A default name is the id's own: the new session has its own.
                let continued = (session.name != panewise_api::default_session_name(&id))
                    .then(|| (id.clone(), session.name.clone()));
                (session.info.log.clone(), continued)
            }
            Err(error) if error.code == ErrorCode::UnknownSession.code() => {
                (std::path::PathBuf::from(&resume.session), None)
            }
            Err(error) => return Err(error),
        };
        effects.push(Effect::Resume {
            conn,
            request,
            log,
            prompt: resume.prompt,
            client: resume.client,
            continued,
        });
        Ok(Reply::Later)
    }

    /// New spend caps for a session: each one given over the session's own (R112); the
    /// session weighs its spend against them and goes on when it is within them (R113).
    fn set_budget(
        &mut self,
        params: SetBudgetParams,
        effects: &mut Vec<Effect>,
    ) -> Result<Value, RpcError> {
        let positive = |cost: f64| cost.is_finite() && cost > 0.0;
        if params.max_cost_usd.is_some_and(|cost| !positive(cost)) || params.max_tokens == Some(0) {
            return Err(RpcError::new(
                ErrorCode::InvalidParams,
                "max_cost_usd and max_tokens must be above 0",
            ));
        }
        if params.max_cost_usd.is_none() && params.max_tokens.is_none() {
            return Err(RpcError::new(
                ErrorCode::InvalidParams,
                "give max_cost_usd, max_tokens or both",
            ));
        }
        let id = self.resolve(&params.session)?;
        let now = self
            .sessions
            .get(&id)
            .and_then(|session| session.state.budget)
            .unwrap_or_default();
        let budget = panewise_pane_state::BudgetCaps {
            max_cost_usd: params.max_cost_usd.or(now.max_cost_usd),
            max_tokens: params.max_tokens.or(now.max_tokens),
        };
        self.control(&id, Control::SetBudget(budget), effects)?;
        result(SetBudgetResult { ok: true, budget })
    }

    /// Sends a prompt, an interrupt or a stop to the session `key` names.
    fn control(
        &mut self,
        key: &str,
        control: Control,
        effects: &mut Vec<Effect>,
    ) -> Result<(), RpcError> {
        let id = self.resolve(key)?;
        let Some(session) = self.sessions.get_mut(&id) else {
            return Err(RpcError::new(ErrorCode::UnknownSession, "no such session"));
        };
        if session.is_ended() {
            return Err(session.ended_error());
        }
        if control == Control::Stop {
            session.stop_requested = true;
        }
        effects.push(Effect::Control { id, control });
        Ok(())
    }

    /// Answers the approval the session waits on (the one named, or the only one waiting),
    /// as the fold shows it; the first answer wins, and a second (from another client) is
    /// told it was answered already, and by whom.
    fn approve(
        &mut self,
        approve: &ApproveParams,
        by: Actor,
        effects: &mut Vec<Effect>,
    ) -> Result<panewise_api::WaitingApproval, RpcError> {
        let id = self.resolve(&approve.session)?;
        let Some(session) = self.sessions.get_mut(&id) else {
            return Err(RpcError::new(ErrorCode::UnknownSession, "no such session"));
        };
        if session.is_ended() {
            return Err(session.ended_error());
        }
        let answered = panewise_api::pick_approval(
            &session.state,
            &session.forwarded,
            approve.request.as_deref(),
        )
        .map_err(|why| why.to_rpc(&session.name))?;
        let request = answered.id.clone();
        let control = match &approve.decision {
            panewise_api::Decision::AllowOnce => Control::allow(request, by.clone()),
            panewise_api::Decision::AllowForSession => {
                Control::allow_for_session(request, by.clone())
            }
            panewise_api::Decision::Deny { message } => {
                Control::deny(request, message.clone(), by.clone())
            }
        };
        session.forwarded.insert(answered.id.clone(), by);
        effects.push(Effect::Control { id, control });
        Ok(answered)
    }

    fn remove(
        &mut self,
        conn: ConnId,
        request: Option<RequestId>,
        key: &str,
        effects: &mut Vec<Effect>,
    ) -> Result<Reply, RpcError> {
        let id = self.resolve(key)?;
        let Some(session) = self.sessions.get(&id) else {
            return Err(RpcError::new(ErrorCode::UnknownSession, "no such session"));
        };
        match removal(session.summary().state, session.is_ended()) {
            Removal::Now => self.forget(conn, request, &id, effects),
            Removal::StopThenRemove => {
                self.stop(&id, effects);
                self.removals.push(PendingRemoval {
                    conn,
                    request: request.clone(),
                    id: id.clone(),
                });
                effects.push(Effect::After {
                    delay_ms: REMOVE_STOP_GRACE_MS,
                    timer: Timer::RemoveGrace { conn, request, id },
                });
            }
            Removal::Refuse(why) => return Err(RpcError::new(ErrorCode::SessionRunning, why)),
        }
        Ok(Reply::Later)
    }

    fn rename(
        &mut self,
        rename: RenameParams,
        effects: &mut Vec<Effect>,
    ) -> Result<Value, RpcError> {
        if rename.name.trim().is_empty() {
            return Err(RpcError::new(ErrorCode::InvalidParams, "the name is empty"));
        }
        if self.name_taken(&rename.name) {
            return Err(RpcError::new(
                ErrorCode::NameTaken,
                format!("a session is already named {:?}", rename.name),
            ));
        }
        let id = self.resolve(&rename.session)?;
        if let Some(session) = self.sessions.get_mut(&id) {
            session.name = rename.name;
        }
        self.publish(&id, effects);
        result(Ack::OK)
    }

    fn subscribe(
        &mut self,
        conn: ConnId,
        subscribe: &SubscribeParams,
        effects: &mut Vec<Effect>,
    ) -> Result<Value, RpcError> {
        let id = self.resolve(&subscribe.session)?;
        let Some(session) = self.sessions.get_mut(&id) else {
            return Err(RpcError::new(ErrorCode::UnknownSession, "no such session"));
        };
        if subscribe.attach {
            session.attached = session.attached.saturating_add(1);
            session.look();
        }
        let log = session.info.log.display().to_string();
        self.subscribe_lines(conn, &id, subscribe.from_line, subscribe.attach, effects);
        self.publish(&id, effects);
        result(SubscribeResult { id, log })
    }

    /// `daemon/shutdown`: answered, then (once the answer is written) the daemon stops.
    fn shutdown(
        &mut self,
        conn: ConnId,
        request: Option<RequestId>,
        raw: Value,
        effects: &mut Vec<Effect>,
    ) {
        if let Err(error) = params::<panewise_api::Empty>(raw) {
            self.answer(conn, request, Err(error), effects);
            return;
        }
        let Some(id) = request else {
            self.terminate(effects);
            return;
        };
        let response = result(Ack::OK).map(|ok| panewise_api::Response::ok(Some(id), ok));
        match response.and_then(|response| {
            panewise_api::rpc::to_line(&response)
                .map_err(|error| RpcError::new(ErrorCode::InternalError, error.to_string()))
        }) {
            Ok(line) => self.send_answer(conn, line.into(), true, effects),
            Err(_) => self.terminate(effects),
        }
    }
}
