//! What the controller hears from its agents, however it holds them: a session's
//! reader thread (`session::spawn_reader`) and the join port's event loop
//! (`join::server`) both turn an agent's frames into these events, keyed by the host's
//! place in the run, for the agents' launcher to route.

use super::protocol::{Clock, Frame};

/// What an agent's reader reports.
pub(in crate::agents) enum Event {
    Frame(usize, Frame),
    /// A clock reply and the controller's clock when it was read.
    Pong(usize, Clock, u64),
    /// The connection ended: at the end of its stream (None), or ended by the reader
    /// over what it could not accept (a frame over its limit, garbage), which it names.
    Closed(usize, Option<String>),
}
