//! # panewise-tui
//!
//! The dashboard's pure core (`panewise ui`): every session the daemon hosts on one screen,
//! the ones that need a person first, answered without leaving it. Elm-style:
//! [`App`] is the state, [`update()`] turns an [`Event`] (a key, the mouse, a resize, a tick
//! carrying the time, or the daemon's data: the list, a summary, a subscribed session's log
//! line, an error, the connection lost, a remote host's list or its loss) into the next [`App`] and the [`Effect`]s the shell
//! must carry out (API calls, the title, the bell, quitting), and [`view()`] draws an [`App`]
//! into a ratatui `Frame`.
//!
//! ## Invariants
//! - `update` and `view` are pure: no I/O, no clock (time arrives in [`Event::Tick`]), no
//!   async, no randomness. The same events give the same effects and the same frame.
//! - Effects are plain comparable data; the shell executes them with one exhaustive match.
//! - The watched session's state is the reducer's fold of its subscribed log lines, as
//!   `panewise replay` folds a log ([`app::Watched::fold`]); a line out of order (one of an
//!   earlier subscription still in flight) is skipped, never folded twice.
//! - A remote host's session is keyed `HOST:ID` ([`app::host_of`]); a host that dropped shows
//!   its sessions `unreachable` (a view of the connection: their states are kept), and its
//!   list on reconnecting subscribes the watched session again from its next line.
//! - Every piece of text from a model, a tool or an agent is drawn through [`text`]:
//!   control characters and escape sequences are shown escaped, never interpreted.
//!
//! ## API boundary
//! Depends on the API's types (`panewise-api`), the reducer (`panewise-pane-state`) and
//! ratatui's backend-free halves (`ratatui-core`, `ratatui-widgets`): it is in the xtask
//! purity check, and links no terminal library. The terminal, the event stream and the daemon's client are the
//! shell's: `crates/cli/src/ui_cmd.rs`.
//!
//! ## Where to start reading
//! [`update()`] (`update.rs`), then [`app::App::grouped`], then [`view()`] (`view.rs`).

pub mod app;
pub mod error;
pub mod event;
pub mod notice;
pub mod text;
pub mod transcript;
pub mod update;
pub mod view;
pub mod wording;

pub use app::{App, Settings};
pub use error::TuiError;
pub use event::{Effect, Event, Key, Mouse};
pub use update::update;
pub use view::view;
