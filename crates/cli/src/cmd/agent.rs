//! `iofleet agent`: the far end of a fleet. Without flags it serves a controller on
//! stdin/stdout, as `run --hosts` and Kubernetes fleets start it; with `--join-file` or
//! `--join` it connects to a controller's join port (`run --listen`), as any launcher
//! starts it (docs/fleet.md "Agents that join"); with `--guest-join` it is the agent of
//! a worker VM booted from a cloud image (docs/vms.md).

use std::io::Read;

use iofleet_fleet::agents::join::{self, rank, JoinAddress, JoinFile, JoinRequest};
use iofleet_fleet::host::TargetArg;

use crate::args::AgentArgs;
use crate::exit::Exit;

/// Where a joining agent's token is read when no file names it.
pub const TOKEN_ENV: &str = "IOFLEET_JOIN_TOKEN";

pub fn run(a: AgentArgs) -> Result<i32, Exit> {
    if let Some(file) = &a.guest_join {
        if a.rank.is_some() || !a.target.is_empty() || a.agents != 1 || a.replay {
            return Err(Exit::input(
                "--guest-join: the VM's join file gives its rank and its disks give the target: drop --rank, --target, --agents and --replay",
            ));
        }
        use iofleet_fleet::vms::guest;
        let join = guest::read_join(file).map_err(|e| Exit::input(format!("--guest-join: {e}")))?;
        return guest::join_as_guest(join).map_err(|e| Exit::failure(format!("--guest-join: {e}")));
    }
    if a.join.is_none() && a.join_file.is_none() {
        if a.rank.is_some() || !a.target.is_empty() || a.agents != 1 || a.replay || a.replay_below {
            return Err(Exit::input(
                "--rank, --target, --agents, --replay and --replay-below are for an agent that joins: give --join-file FILE or --join ADDRESS",
            ));
        }
        return Ok(iofleet_fleet::agents::agent::serve(
            Box::new(std::io::stdin()),
            Box::new(std::io::stdout()),
        ));
    }
    let (address, token) = match (&a.join, &a.join_file) {
        (_, Some(path)) => {
            let file =
                JoinFile::read(path).map_err(|e| Exit::input(format!("--join-file: {e}")))?;
            let address = JoinAddress::parse(&file.join)
                .map_err(|e| Exit::input(format!("--join-file: {e}")))?;
            (address, file.token)
        }
        (Some(addr), None) => {
            let address =
                JoinAddress::parse(addr).map_err(|e| Exit::input(format!("--join: {e}")))?;
            (address, token(&a)?)
        }
        (None, None) => unreachable!("checked above"),
    };
    let placement = rank::placement(
        a.rank,
        |k| std::env::var(k).ok(),
        &iofleet_fleet::sys::hostname(),
    )
    .map_err(Exit::input)?;
    let target = TargetArg::from_paths(
        a.target
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect(),
    );
    let placements = placement.split(a.agents).ok_or_else(|| {
        Exit::input(format!(
            "--agents {}: rank {} × {} is past the largest rank (2^32 − 1)",
            a.agents,
            placement.rank.unwrap_or(0),
            a.agents
        ))
    })?;
    let requests = placements.into_iter().map(|placement| JoinRequest {
        address: address.clone(),
        token: token.clone(),
        placement,
        target: target.clone(),
        join_timeout: a.join_timeout,
        channel: None,
        replay: a.replay,
        replay_below: a.replay_below,
    });
    Ok(join::join_all(requests.collect()))
}

/// The token of `--join`: from --token-file (`-`: stdin), else the environment.
fn token(a: &AgentArgs) -> Result<String, Exit> {
    let text = match &a.token_file {
        Some(p) if p.as_os_str() == "-" => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| Exit::input(format!("--token-file -: cannot read stdin: {e}")))?;
            s
        }
        Some(p) => std::fs::read_to_string(p)
            .map_err(|e| Exit::input(format!("--token-file {}: {e}", p.display())))?,
        None => std::env::var(TOKEN_ENV).map_err(|_| {
            Exit::input(format!(
                "--join needs the command's token: --token-file FILE, or {TOKEN_ENV} in the environment (the controller wrote it to its join file)"
            ))
        })?,
    };
    let t = text.trim().to_string();
    if t.is_empty() {
        return Err(Exit::input("--join: the token given is empty"));
    }
    Ok(t)
}
