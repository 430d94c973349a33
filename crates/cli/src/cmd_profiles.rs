//! `iofleet profiles list|show|reference`.

use crate::args::ProfilesCmd;
use crate::Exit;

pub fn run(cmd: ProfilesCmd) -> Result<i32, Exit> {
    match cmd {
        ProfilesCmd::List => {
            let names = iofleet_profile::builtin_names();
            let width = names.iter().map(|n| n.len()).max().unwrap_or(0);
            for name in names {
                let raw = iofleet_profile::load_builtin(name).map_err(Exit::failure)?;
                let first = raw
                    .description
                    .as_deref()
                    .unwrap_or("")
                    .split(". ")
                    .next()
                    .unwrap_or("")
                    .trim_end_matches('.')
                    .to_string();
                println!("{name:<width$}  {first}");
            }
        }
        ProfilesCmd::Show { name } => match iofleet_profile::builtin_source(&name) {
            Some(src) => print!("{src}"),
            None => {
                return Err(Exit::input(
                    iofleet_profile::load_builtin(&name)
                        .err()
                        .map(|e| e.to_string())
                        .unwrap_or_else(|| format!("unknown profile {name}")),
                ))
            }
        },
        ProfilesCmd::Reference => print!("{}", iofleet_profile::reference_markdown()),
    }
    Ok(0)
}
