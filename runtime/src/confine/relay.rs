//! The relay: the process inside a confinement's network namespace that listens on the lab's loopback
//! ports and forwards each connection to the unix socket [`super::serve_ports`] made for it outside.
//! Bubblewrap runs it as the subject's parent ([`super::Confinement::args`]); the namespaces launcher
//! runs [`relay_accept`] in its own process.

use std::ffi::OsString;
use std::path::Path;

/// The probelab subcommand that is the relay ([`relay_main`]).
pub const RELAY_SUBCOMMAND: &str = "confine-relay";

/// The relay inside a confined process's namespace: `PORT=SOCKET… -- ARGV…`. Binds `127.0.0.1:PORT`
/// for each, starts ARGV (its stdio, env and cwd inherited), forwards every connection to its socket,
/// and exits with ARGV's status (128 + the signal that ended it). Returns the exit code.
pub fn relay_main(args: &[OsString]) -> i32 {
    let Some(split) = args.iter().position(|a| a == "--") else {
        eprintln!("probelab confine-relay: usage: PORT=SOCKET... -- ARGV...");
        return 2;
    };
    let (pairs, argv) = (&args[..split], &args[split + 1..]);
    let Some((program, rest)) = argv.split_first() else {
        eprintln!("probelab confine-relay: no command after --");
        return 2;
    };
    for pair in pairs {
        let s = pair.to_string_lossy();
        let Some((port, sock)) = s.split_once('=').and_then(|(p, s)| Some((p.parse::<u16>().ok()?, s.to_string())))
        else {
            eprintln!("probelab confine-relay: {s:?} is not PORT=SOCKET");
            return 2;
        };
        let listener = match std::net::TcpListener::bind(("127.0.0.1", port)) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("probelab confine-relay: cannot listen on 127.0.0.1:{port}: {e}");
                return 2;
            }
        };
        std::thread::spawn(move || relay_accept(listener, std::path::Path::new(&sock)));
    }
    let status = match std::process::Command::new(program).args(rest).status() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("probelab confine-relay: cannot start {}: {e}", program.to_string_lossy());
            return 127;
        }
    };
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(1)
}

/// Forwards every connection `listener` accepts to the unix socket `sock` (a thread each).
pub(crate) fn relay_accept(listener: std::net::TcpListener, sock: &Path) {
    for conn in listener.incoming().flatten() {
        let sock = sock.to_path_buf();
        std::thread::spawn(move || forward(conn, &sock));
    }
}

fn forward(conn: std::net::TcpStream, sock: &Path) {
    let Ok(out) = std::os::unix::net::UnixStream::connect(sock) else { return };
    let (Ok(mut conn2), Ok(mut out2)) = (conn.try_clone(), out.try_clone()) else { return };
    let up = std::thread::spawn(move || {
        let mut conn = conn;
        let mut out = out;
        let _ = std::io::copy(&mut conn, &mut out);
        let _ = out.shutdown(std::net::Shutdown::Write);
    });
    let _ = std::io::copy(&mut out2, &mut conn2);
    let _ = conn2.shutdown(std::net::Shutdown::Write);
    let _ = up.join();
}
