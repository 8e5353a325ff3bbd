//! The pure parts of driving a CLI that runs one turn per process (Codex `exec --json`, Gemini
//! CLI `-p … --output-format stream-json`): the arguments of each turn's process, the first one
//! fresh and every later one resuming the session by the id the first run reported.
//!
//! These channels cannot ask the host whether a tool may run: what the agent may do is decided
//! up front by the CLI's own sandbox and approval flags, chosen here from an [`Access`].

/// A CLI that runs one turn per process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OneShotCli {
    /// `codex exec --json`; follow-ups with `codex exec resume <thread_id>`.
    Codex,
    /// `gemini -p … --output-format stream-json`; follow-ups with `--resume <session_id>`.
    GeminiCli,
}

/// What the agent may do without asking, decided before the turn starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read files, change nothing: Codex `--sandbox read-only`, Gemini `--approval-mode default`
    /// (which in headless mode refuses every tool that would need a confirmation).
    ReadOnly,
    /// Edit files inside the working directory: Codex `--sandbox workspace-write`, Gemini
    /// `--approval-mode auto_edit`.
    EditWorkspace,
    /// Everything, unsandboxed: Codex `--dangerously-bypass-approvals-and-sandbox`, Gemini
    /// `--yolo`.
    Full,
}

/// How a one-shot CLI is started for each turn of a supervised session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OneShotLaunch {
    /// Which CLI.
    pub cli: OneShotCli,
    /// `--model`, when the user chose one.
    pub model: Option<String>,
    /// What the agent may do.
    pub access: Access,
}

impl OneShotLaunch {
    /// The arguments after the executable for one turn: `prompt` as a fresh session, or as a
    /// follow-up of `resume` (the thread id of Codex's `thread.started`, the session id of
    /// Gemini's `init`).
    pub fn args(&self, prompt: &str, resume: Option<&str>) -> Vec<String> {
        match self.cli {
            OneShotCli::Codex => self.codex_args(prompt, resume),
            OneShotCli::GeminiCli => self.gemini_args(prompt, resume),
        }
    }

    fn codex_args(&self, prompt: &str, resume: Option<&str>) -> Vec<String> {
        let mut args = vec!["exec".to_owned()];
        if resume.is_some() {
            args.push("resume".to_owned());
        }
        args.extend(["--json", "--skip-git-repo-check"].map(str::to_owned));
        if let Some(model) = &self.model {
            args.extend(["--model".to_owned(), model.clone()]);
        }
        // `exec resume` has no `--sandbox` flag; the same setting goes through `-c`.
        let sandbox = match self.access {
            Access::ReadOnly => Some("read-only"),
            Access::EditWorkspace => Some("workspace-write"),
            Access::Full => None,
        };
        match (sandbox, resume) {
            (Some(mode), None) => args.extend(["--sandbox".to_owned(), mode.to_owned()]),
            (Some(mode), Some(_)) => {
                args.extend(["--config".to_owned(), format!("sandbox_mode=\"{mode}\"")]);
            }
            (None, _) => args.push("--dangerously-bypass-approvals-and-sandbox".to_owned()),
        }
        // Everything after `--` is positional, so a prompt that starts with `-` stays a prompt.
        args.push("--".to_owned());
        if let Some(thread) = resume {
            args.push(thread.to_owned());
        }
        args.push(prompt.to_owned());
        args
    }

    fn gemini_args(&self, prompt: &str, resume: Option<&str>) -> Vec<String> {
        // `--prompt=` keeps a prompt that starts with `-` from being read as a flag.
        let mut args = vec![
            format!("--prompt={prompt}"),
            "--output-format".to_owned(),
            "stream-json".to_owned(),
        ];
        if let Some(model) = &self.model {
            args.extend(["--model".to_owned(), model.clone()]);
        }
        match self.access {
            Access::ReadOnly => args.extend(["--approval-mode", "default"].map(str::to_owned)),
            Access::EditWorkspace => {
                args.extend(["--approval-mode", "auto_edit"].map(str::to_owned));
            }
            Access::Full => args.push("--yolo".to_owned()),
        }
        if let Some(session) = resume {
            args.extend(["--resume".to_owned(), session.to_owned()]);
        }
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(cli: OneShotCli, access: Access, model: Option<&str>) -> OneShotLaunch {
        OneShotLaunch {
            cli,
            model: model.map(str::to_owned),
            access,
        }
    }

    #[test]
    fn codex_arguments_per_access_and_resume() {
        let cases: &[(Access, Option<&str>, Option<&str>, &str)] = &[
            (
                Access::ReadOnly,
                None,
                None,
                "exec --json --skip-git-repo-check --sandbox read-only -- hi",
            ),
            (
                Access::EditWorkspace,
                Some("gpt-5.5"),
                None,
                "exec --json --skip-git-repo-check --model gpt-5.5 --sandbox workspace-write -- hi",
            ),
            (
                Access::Full,
                None,
                None,
                "exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox -- hi",
            ),
            (
                Access::ReadOnly,
                None,
                Some("t-1"),
                "exec resume --json --skip-git-repo-check --config sandbox_mode=\"read-only\" -- t-1 hi",
            ),
            (
                Access::Full,
                None,
                Some("t-1"),
                "exec resume --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox -- t-1 hi",
            ),
        ];
        for (access, model, resume, expected) in cases {
            let args = launch(OneShotCli::Codex, *access, *model).args("hi", *resume);
            assert_eq!(args.join(" "), *expected, "{access:?} {resume:?}");
        }
    }

    #[test]
    fn gemini_arguments_per_access_and_resume() {
        let cases: &[(Access, Option<&str>, Option<&str>, &str)] = &[
            (
                Access::ReadOnly,
                None,
                None,
                "--prompt=hi --output-format stream-json --approval-mode default",
            ),
            (
                Access::EditWorkspace,
                Some("gemini-2.5-pro"),
                None,
                "--prompt=hi --output-format stream-json --model gemini-2.5-pro --approval-mode auto_edit",
            ),
            (
                Access::Full,
                None,
                Some("s-1"),
                "--prompt=hi --output-format stream-json --yolo --resume s-1",
            ),
        ];
        for (access, model, resume, expected) in cases {
            let args = launch(OneShotCli::GeminiCli, *access, *model).args("hi", *resume);
            assert_eq!(args.join(" "), *expected, "{access:?} {resume:?}");
        }
    }

    #[test]
    fn a_prompt_that_looks_like_a_flag_stays_one_argument() {
        let codex = launch(OneShotCli::Codex, Access::ReadOnly, None).args("--help me", None);
        assert_eq!(codex.last().map(String::as_str), Some("--help me"));
        assert_eq!(codex.iter().filter(|arg| *arg == "--").count(), 1);
        let gemini = launch(OneShotCli::GeminiCli, Access::ReadOnly, None).args("-y", None);
        assert_eq!(gemini.first().map(String::as_str), Some("--prompt=-y"));
        assert!(!gemini.iter().any(|arg| arg == "-y"));
    }
}
