//! `iofleet serve [--db PATH] [--listen ADDR] [--allow-host NAME] [--token-file FILE]`:
//! the results store in a browser, read-only (`crate::web::serve` answers the pages, and
//! `crate::web::access` decides who may ask). Binds 127.0.0.1:8716 unless told otherwise;
//! any address that is not loopback needs `--token-file` and gets a notice.

use std::net::{SocketAddr, TcpListener};

use clap::Args;

use crate::exit::Exit;
use crate::store::record::{store_exit, DbArg};
use crate::web::access::{Access, AccessArgs};
use crate::web::http::Limits;
use crate::web::serve::Site;

/// Where `iofleet serve` listens unless `--listen` says otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8716";

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on, IP:PORT (port 0: any free port, printed at start). Anything
    /// but a loopback address lets others reach every stored run, so it needs
    /// --token-file.
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN, value_parser = listen_addr)]
    pub listen: SocketAddr,
    /// Who may read the pages: --allow-host, --token-file.
    #[command(flatten)]
    pub access: AccessArgs,
    #[command(flatten)]
    pub db: DbArg,
}

fn listen_addr(s: &str) -> Result<SocketAddr, String> {
    s.parse().map_err(|_| {
        format!("'{s}' is not IP:PORT (e.g. {DEFAULT_LISTEN}, 0.0.0.0:8716 or [::1]:8716)")
    })
}

pub fn run(a: ServeArgs) -> Result<i32, Exit> {
    let path = match &a.db.db {
        Some(p) => p.clone(),
        None => iofleet_store::default_path().map_err(Exit::input)?,
    };
    // Refuse a missing or foreign store now rather than on the first page.
    let store = iofleet_store::Store::open_read_only(&path).map_err(store_exit)?;
    if let Some(note) = store.read_note() {
        eprintln!("note: {note}");
    }
    let listener = TcpListener::bind(a.listen)
        .map_err(|e| Exit::input(format!("--listen {}: {e}", a.listen)))?;
    let local = listener.local_addr().unwrap_or(a.listen);
    let access = Access::new("--listen", local, &a.access)?;
    if let Some(notice) = access.notice(&format!("read every run in {}", path.display())) {
        eprintln!("{notice}");
    }
    eprintln!(
        "serving {} read-only on http://{local}/ (Ctrl-C to stop)",
        path.display()
    );
    let site = Site::new(path);
    crate::web::http::serve(listener, access, Limits::default(), move |r| {
        site.respond(r)
    })
    .join()
    .map_err(|_| Exit::failure("the listener stopped"))?;
    Ok(0)
}
