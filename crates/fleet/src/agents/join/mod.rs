//! Agents that join: any launcher (`mpirun`, `srun`, `pdsh`, an `ssh` loop, a
//! Kubernetes Job) starts `iofleet agent --join ADDRESS`, and each agent connects back
//! to the command's join port over TLS instead of being reached over a session. From
//! its welcome on, a joined agent is a host of the fleet like any other: the same
//! frames, heartbeats, clock offsets, loss rules and exact merge (`agents`).
//!
//! Parts: `server` is the join port and its event loop; `client` is the agent's side;
//! `creds` the per-command certificate and token; `address` the join address and file;
//! `rank` reads a launcher's rank variables.

pub mod address;
pub mod client;
pub mod creds;
pub mod rank;
pub mod server;

pub use address::{JoinAddress, JoinFile};
pub use client::{join, join_all, JoinRequest};
pub use server::{JoinServer, JoinSettings, JoinedLink, Member, PeerAddr};
