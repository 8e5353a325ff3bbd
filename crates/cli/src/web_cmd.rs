//! `panewise web`: serves the inbox and the sessions to a browser (crate `panewise-web`),
//! a client of this machine's daemon like the dashboard. It listens on 127.0.0.1 at a fixed
//! port (`--port`), or on a 0600 Unix socket (`--unix`); any other address only with
//! `--bind ADDR --i-know-this-is-exposed`. At start it prints the address with a single-use
//! pairing code in the fragment. `panewise web devices` lists the paired devices,
//! `panewise web revoke ID` forgets one (its token is refused at once, its streams close).
//! With `--remote HOST` (and `[remote] hosts`) the page lists every host's sessions, named
//! `HOST:ID`, its inbox every host's requests (`web_remote.rs`).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use panewise_web::guard::allowed_hosts;
use panewise_web::server::{
    check_bind, router, serve, system_clock, system_random, watch_pushes, DelaySource, DeviceStore,
    Listen, LocalDaemon, Push, Web,
};

/// The port `panewise web` listens on by default: fixed, so a bookmark, an `ssh -L` and a
/// `tailscale serve` survive restarts.
pub const DEFAULT_PORT: u16 = 7455;

/// `panewise web [devices | revoke ID]`.
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    action: Option<Action>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(clap::Subcommand, Debug)]
enum Action {
    /// List the paired devices (id, name, when paired); tokens are never shown or kept.
    Devices,
    /// Forget a paired device (by id, or by name when only one has it): its token is
    /// refused at once and its open streams close.
    Revoke {
        /// The device's id or name.
        id: String,
    },
}

#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// The loopback port.
    #[arg(long, default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Listen on this Unix socket (mode 0600) instead of TCP: for `ssh -L` and proxies.
    #[arg(long, value_name = "PATH", conflicts_with = "bind")]
    unix: Option<PathBuf>,
    /// Listen on another address than 127.0.0.1; anything but loopback also needs
    /// `--i-know-this-is-exposed`.
    #[arg(long, value_name = "ADDR")]
    bind: Option<IpAddr>,
    /// Allow a non-loopback `--bind`: the page stays authenticated, but the port is open to
    /// the network.
    #[arg(long)]
    i_know_this_is_exposed: bool,
    /// Another Host name the page may be reached by (a `tailscale serve` name, a proxy's,
    /// `host:port` as the browser sends it); repeatable.
    #[arg(long = "allow-host", value_name = "HOST")]
    allow_host: Vec<String>,
    /// The contact a push service may reach this server's operator by (`mailto:` or
    /// `https:`), named in every Web Push's VAPID token; some push services require a real one.
    #[arg(long, value_name = "URL", default_value = "mailto:panewise@localhost")]
    push_contact: String,
    #[command(flatten)]
    remote: crate::remote::RemoteArgs,
}

/// Where `panewise web` keeps its state: `$XDG_DATA_HOME/panewise/web`.
fn web_dir() -> anyhow::Result<PathBuf> {
    let sessions = panewise_host::session_log::sessions_dir()
        .context("neither XDG_DATA_HOME nor HOME is set")?;
    let data = sessions
        .parent()
        .context("the sessions directory has no parent")?;
    Ok(data.join("web"))
}

/// Where the paired devices are kept: `web/devices.json`.
fn devices_file() -> anyhow::Result<PathBuf> {
    Ok(web_dir()?.join("devices.json"))
}

/// Where the VAPID private key is kept (0600, made at the first start): `web/vapid.key`.
fn vapid_file() -> anyhow::Result<PathBuf> {
    Ok(web_dir()?.join("vapid.key"))
}

/// The `[notify]` delay, read from the user's file each time the push watcher asks (as the
/// daemon reads it), the last that read kept when the file stops reading.
fn notify_delay() -> DelaySource {
    let user = panewise_host::config::user_file();
    let last = Arc::new(std::sync::Mutex::new(std::time::Duration::ZERO));
    Arc::new(move || {
        let mut last = last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match crate::daemon_cmd::notify_settings(user.as_deref()) {
            Ok(settings) => *last = settings.delay,
            Err(error) => tracing::warn!(%error, "[notify]: keeping the last delay that read"),
        }
        *last
    })
}

/// Runs `panewise web`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let store = DeviceStore::File(devices_file()?);
    match args.action {
        Some(Action::Devices) => {
            let devices = store.load()?;
            let mut out = String::from("ID            NAME  PAIRED (ms since the epoch)\n");
            for device in &devices.devices {
                out.push_str(&format!(
                    "{}  {}  {}\n",
                    device.id,
                    crate::terminal_text::one_line(&device.name, 40),
                    device.paired_at_ms
                ));
            }
            crate::agents_cmd::write_out(out.as_bytes())?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Action::Revoke { id }) => {
            let mut devices = store.load()?;
            let device = devices.revoke(&id)?;
            store.save(&devices)?;
            let line = format!(
                "revoked {} ({})\n",
                device.id,
                crate::terminal_text::one_line(&device.name, 40)
            );
            crate::agents_cmd::write_out(line.as_bytes())?;
            Ok(ExitCode::SUCCESS)
        }
        None => serve_web(args.serve, store),
    }
}

fn serve_web(args: ServeArgs, store: DeviceStore) -> anyhow::Result<ExitCode> {
    let (listen, port) = match (&args.unix, args.bind) {
        (Some(path), _) => (Listen::Unix(path.clone()), args.port),
        (None, ip) => {
            let ip = ip.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
            check_bind(ip, args.i_know_this_is_exposed)?;
            (Listen::Tcp(SocketAddr::new(ip, args.port)), args.port)
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let program = std::env::current_exe().context("cannot find the panewise binary")?;
        let local = LocalDaemon::new(program);
        // With `--remote HOST` or `[remote] hosts`, every host's sessions in one list, as the
        // dashboard shows them.
        let remotes = crate::remote::Remotes::load(&args.remote)?;
        let daemon: Arc<dyn panewise_web::server::Daemon> = if remotes.any() {
            Arc::new(crate::web_remote::HostsDaemon::new(local, remotes))
        } else {
            Arc::new(local)
        };
        let mut extra = args.allow_host.clone();
        if let Some(ip) = args.bind.filter(|ip| !ip.is_loopback()) {
            // The address it was bound to explicitly is a Host the browser sends.
            extra.push(SocketAddr::new(ip, port).to_string());
        }
        let random = system_random();
        let web = Web::new(
            daemon,
            allowed_hosts(port, &extra),
            store,
            system_clock(),
            Arc::clone(&random),
        )
        .map_err(|why| anyhow::anyhow!("cannot draw a pairing code: {why}"))?;
        // Web Push: the key is made once and kept; without it the page works, pushes don't.
        let web = match Push::load_or_create(&vapid_file()?, &random, args.push_contact.clone()) {
            Ok(push) => web.with_push(push),
            Err(error) => {
                eprintln!("panewise web: no Web Push: {error}");
                web
            }
        };
        let code = web.pairing_code();
        let web = Arc::new(web);
        tokio::spawn(watch_pushes(Arc::clone(&web), notify_delay()));
        let app = router(web);
        serve(&listen, app, |bound| {
            let page = match &listen {
                Listen::Tcp(addr) if !addr.ip().is_loopback() => format!("http://{bound}/"),
                _ => format!("http://127.0.0.1:{port}/"),
            };
            println!("panewise web: listening on {bound}");
            if let Listen::Unix(_) = listen {
                println!("panewise web: reach it with ssh -L {port}:{bound} HOST, then:");
            }
            // The code is in the fragment: browsers never send it, so no server log or
            // proxy sees it; the page takes it out of the address and history at once.
            println!("panewise web: open {page}#pair={code}");
            println!("panewise web: the pairing code is single use and expires in 5 minutes");
        })
        .await
        .context("panewise web: cannot listen")?;
        anyhow::Ok(ExitCode::SUCCESS)
    })
}
