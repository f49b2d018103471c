//! tmux's client protocol, spoken directly: one command list per connection, exactly what the
//! `tmux` client sends for `tmux -S <endpoint> <command> ...`, without starting a process.
//!
//! A `tmux` client process costs about 3 ms before it says a word to the server (loading its
//! libraries and locale); the conversation itself costs about 0.3 ms. Most of what the tools
//! do is one or two tmux calls, so the client process was most of their time.
//!
//! # Decisions the design left open
//!
//! (Indexed from ARCHITECTURE.md.)
//!
//! - **tmux calls speak its protocol directly** (issue 15): a `down 1` is one tmux call, and
//!   the `tmux` process was most of its cost. **Only a running server, only protocol 8.** This client connects to the socket and
//!   sends the identify messages and the command as tmux 3.1 to 3.6 do (`PROTOCOL_VERSION` 8,
//!   16-byte imsg headers, at most 16 KiB per message). Whenever it cannot be sure the server
//!   understood it *before* the command could have run, it steps aside and the `tmux` binary
//!   runs the same argv: no server on the socket (the binary reports it, or starts one for
//!   `new-session`), a server that answers "protocol version mismatch", a command list too
//!   long for one message, a working directory it cannot name. After the command was sent,
//!   a surprise is an error, never a second run.
//! - **The same client as the binary's.** It sends the environment the binary would have
//!   inherited (the caller's, minus `TMUX`, `TMUX_PANE` and every `TEAM_*`: see
//!   [`configure`]), its working directory, its pid, an empty terminal name and no terminal
//!   (no stdin or stdout descriptor), so the server treats it as the detached command client
//!   that `tmux` without a terminal is. (tmux reads the client's `PATH` for new panes, and
//!   its working directory when a split names none.)
//! - **UTF-8 output.** It identifies as a UTF-8 client (as `tmux -u` does; the binary path
//!   passes `-u` too), so pane paths and titles come back as they are, not with `_` for every
//!   non-ASCII byte, whatever the caller's locale.
//! - **Never a malformed message.** tmux 3.3 ends the whole server (`fatalx`) on an identify
//!   message of the wrong size, so every message here has the exact size tmux expects, only
//!   message types every protocol-8 server knows are sent, and the tests hold a real server
//!   to each of them.
//! - **Off switch.** Without [`configure`] (or with `TEAM_TMUX_NATIVE=0`, which the binaries
//!   read) every call runs the binary.

use std::ffi::OsString;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::Output;

const PROTOCOL_VERSION: u32 = 8;
const HEADER: usize = 16;
/// tmux's `MAX_IMSGSIZE`: header included.
const MAX_IMSGSIZE: usize = 16384;

const MSG_VERSION: u32 = 12;
const MSG_IDENTIFY_FLAGS: u32 = 100;
const MSG_IDENTIFY_TERM: u32 = 101;
const MSG_IDENTIFY_TTYNAME: u32 = 102;
const MSG_IDENTIFY_ENVIRON: u32 = 105;
const MSG_IDENTIFY_DONE: u32 = 106;
const MSG_IDENTIFY_CLIENTPID: u32 = 107;
const MSG_IDENTIFY_CWD: u32 = 108;
const MSG_COMMAND: u32 = 200;
const MSG_EXIT: u32 = 203;
const MSG_EXITED: u32 = 204;
const MSG_READY: u32 = 207;
const MSG_SHUTDOWN: u32 = 210;
const MSG_READ_OPEN: u32 = 300;
const MSG_READ_DONE: u32 = 302;
const MSG_WRITE_OPEN: u32 = 303;
const MSG_WRITE: u32 = 304;
const MSG_WRITE_READY: u32 = 305;
const MSG_WRITE_CLOSE: u32 = 306;

/// tmux's `CLIENT_UTF8` client flag.
const CLIENT_UTF8: i32 = 0x10000;
const EBADF: i32 = 9;

/// The environment a native client sends (`NAME=value` strings), set once per process.
static CLIENT_ENV: OnceLock<Vec<Vec<u8>>> = OnceLock::new();

/// Turns the native client on for this process, with the environment the `tmux` binary would
/// have inherited: `vars` is the caller's environment; `TMUX`, `TMUX_PANE` and every `TEAM_*`
/// are dropped here. Without this call, every tmux call runs the binary.
pub fn configure(vars: impl IntoIterator<Item = (OsString, OsString)>) {
    let env = vars
        .into_iter()
        .filter(|(k, _)| {
            let k = k.as_bytes();
            k != b"TMUX" && k != b"TMUX_PANE" && !k.starts_with(b"TEAM_") && !k.contains(&b'=')
        })
        .map(|(k, v)| {
            let mut s = k.as_bytes().to_vec();
            s.push(b'=');
            s.extend_from_slice(v.as_bytes());
            s
        })
        .collect();
    let _ = CLIENT_ENV.set(env);
}

/// Whether [`configure`] turned the native client on.
pub fn configured() -> bool {
    CLIENT_ENV.get().is_some()
}

/// What a native call came to.
#[derive(Debug)]
pub enum Attempt {
    /// The server ran the command list and this is what it said.
    Done(Output),
    /// Nothing was run; the binary should run the same argv (the reason is for the log).
    StepAside(&'static str),
    /// The command list was sent and the conversation then failed: it may or may not have run.
    Failed(String),
}

/// Runs `args` (one command list, `;`-separated as on tmux's command line) on the server at
/// `endpoint`, within `timeout`.
pub fn run<S: AsRef<str>>(endpoint: &Path, args: &[S], timeout: Duration) -> Attempt {
    let Some(env) = CLIENT_ENV.get() else {
        return Attempt::StepAside("native client not configured");
    };
    let Ok(cwd) = std::env::current_dir() else {
        return Attempt::StepAside("no working directory");
    };
    let Some(hello) = identify(env, cwd.as_os_str().as_bytes()) else {
        return Attempt::StepAside("working directory too long");
    };
    let Some(command) = command(args) else {
        return Attempt::StepAside("command list longer than one message");
    };
    let deadline = Instant::now() + timeout;
    let Ok(mut sock) = UnixStream::connect(endpoint) else {
        return Attempt::StepAside("no server answers on the socket");
    };
    // One write. A server that does not speak protocol 8 answers the first message with
    // MSG_VERSION and reads no further, so nothing has run when that comes back; a write cut
    // short by the server hanging up delivered no whole command either.
    let mut bytes = hello;
    bytes.extend_from_slice(&command);
    if let Err(e) = send(&mut sock, &bytes, deadline) {
        return match e.kind() {
            ErrorKind::BrokenPipe | ErrorKind::ConnectionReset => {
                Attempt::StepAside("the server hung up before the command")
            }
            _ => Attempt::Failed(format!("sending to the tmux server: {e}")),
        };
    }
    converse(&mut sock, deadline)
}

/// One imsg: header (type, length, flags, peer id carrying the protocol version, pid) and data.
fn push_msg(buf: &mut Vec<u8>, kind: u32, data: &[&[u8]]) {
    let len = HEADER + data.iter().map(|d| d.len()).sum::<usize>();
    debug_assert!(len <= MAX_IMSGSIZE);
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(&(len as u16).to_ne_bytes());
    buf.extend_from_slice(&0u16.to_ne_bytes());
    buf.extend_from_slice(&PROTOCOL_VERSION.to_ne_bytes());
    buf.extend_from_slice(&u32::MAX.to_ne_bytes());
    for d in data {
        buf.extend_from_slice(d);
    }
}

/// The identify messages of a terminal-less command client; `None` when the working directory
/// does not fit one message.
fn identify(env: &[Vec<u8>], cwd: &[u8]) -> Option<Vec<u8>> {
    if HEADER + cwd.len() + 1 > MAX_IMSGSIZE {
        return None;
    }
    let term = env
        .iter()
        .find_map(|e| e.strip_prefix(b"TERM="))
        .filter(|t| HEADER + t.len() < MAX_IMSGSIZE)
        .unwrap_or(b"");
    let mut b = Vec::with_capacity(1024 + env.iter().map(|e| e.len() + HEADER + 1).sum::<usize>());
    push_msg(&mut b, MSG_IDENTIFY_FLAGS, &[&CLIENT_UTF8.to_ne_bytes()]);
    push_msg(&mut b, MSG_IDENTIFY_TERM, &[term, b"\0"]);
    push_msg(&mut b, MSG_IDENTIFY_TTYNAME, &[b"\0"]);
    push_msg(&mut b, MSG_IDENTIFY_CWD, &[cwd, b"\0"]);
    push_msg(
        &mut b,
        MSG_IDENTIFY_CLIENTPID,
        &[&(std::process::id() as i32).to_ne_bytes()],
    );
    // As the tmux client does: a variable too long for one message is not sent.
    for e in env.iter().filter(|e| HEADER + e.len() < MAX_IMSGSIZE) {
        push_msg(&mut b, MSG_IDENTIFY_ENVIRON, &[e, b"\0"]);
    }
    push_msg(&mut b, MSG_IDENTIFY_DONE, &[]);
    Some(b)
}

/// MSG_COMMAND: argc, then each argument NUL-terminated; `None` when it does not fit.
fn command<S: AsRef<str>>(args: &[S]) -> Option<Vec<u8>> {
    let packed: usize = args.iter().map(|a| a.as_ref().len() + 1).sum();
    if args.is_empty() || HEADER + 4 + packed > MAX_IMSGSIZE {
        return None;
    }
    let mut data = Vec::with_capacity(4 + packed);
    data.extend_from_slice(&(args.len() as i32).to_ne_bytes());
    for a in args {
        // tmux would cut an argument at a NUL; such an argument is not this command list.
        if a.as_ref().as_bytes().contains(&0) {
            return None;
        }
        data.extend_from_slice(a.as_ref().as_bytes());
        data.push(0);
    }
    let mut b = Vec::with_capacity(HEADER + data.len());
    push_msg(&mut b, MSG_COMMAND, &[&data]);
    Some(b)
}

fn remaining(deadline: Instant) -> std::io::Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        Err(std::io::Error::new(
            ErrorKind::TimedOut,
            "tmux did not answer in time",
        ))
    } else {
        Ok(left)
    }
}

fn send(sock: &mut UnixStream, bytes: &[u8], deadline: Instant) -> std::io::Result<()> {
    sock.set_write_timeout(Some(remaining(deadline)?))?;
    sock.write_all(bytes)
}

/// Reads the server's messages until it says the client may exit, answering its requests to
/// open the client's stdout and stderr.
fn converse(sock: &mut UnixStream, deadline: Instant) -> Attempt {
    let mut inbuf: Vec<u8> = Vec::with_capacity(8192);
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    // The streams the server opened, and the descriptor (1 or 2) each one writes to.
    let mut streams: Vec<(i32, i32)> = Vec::new();
    let mut chunk = [0u8; 16384];
    loop {
        // Every whole message in the buffer first.
        while inbuf.len() >= HEADER {
            let kind = u32::from_ne_bytes(inbuf[0..4].try_into().unwrap());
            // Newer imsg code keeps flags in the upper half of a 32-bit length.
            let len = u16::from_ne_bytes(inbuf[4..6].try_into().unwrap()) as usize;
            if len < HEADER {
                return Attempt::Failed(format!("malformed message from tmux (length {len})"));
            }
            if inbuf.len() < len {
                break;
            }
            let data = inbuf[HEADER..len].to_vec();
            inbuf.drain(..len);
            match kind {
                MSG_VERSION => return Attempt::StepAside("protocol version mismatch"),
                MSG_WRITE_OPEN | MSG_READ_OPEN if data.len() < 8 => {
                    return Attempt::Failed("malformed open request from tmux".into());
                }
                MSG_WRITE_OPEN => {
                    let stream = int(&data, 0);
                    let fd = int(&data, 4);
                    // Only the client's own stdout and stderr (`-` or a print), never a path
                    // to open (a command writing a file through its client), and each one once:
                    // as the tmux client, which closes its descriptor once a stream has it.
                    let error = if (fd == 1 || fd == 2) && !streams.iter().any(|(_, f)| *f == fd) {
                        streams.push((stream, fd));
                        0
                    } else {
                        EBADF
                    };
                    let mut reply = Vec::new();
                    push_msg(
                        &mut reply,
                        MSG_WRITE_READY,
                        &[&stream.to_ne_bytes(), &error.to_ne_bytes()],
                    );
                    if let Err(e) = send(sock, &reply, deadline) {
                        return Attempt::Failed(format!("answering tmux: {e}"));
                    }
                }
                MSG_READ_OPEN => {
                    // No stdin and no files: the read fails, as `tmux ... < /dev/null` would not.
                    let mut reply = Vec::new();
                    push_msg(
                        &mut reply,
                        MSG_READ_DONE,
                        &[&int(&data, 0).to_ne_bytes(), &EBADF.to_ne_bytes()],
                    );
                    if let Err(e) = send(sock, &reply, deadline) {
                        return Attempt::Failed(format!("answering tmux: {e}"));
                    }
                }
                MSG_WRITE if data.len() >= 4 => {
                    let stream = int(&data, 0);
                    match streams
                        .iter()
                        .find(|(s, _)| *s == stream)
                        .map(|(_, fd)| *fd)
                    {
                        Some(1) => stdout.extend_from_slice(&data[4..]),
                        Some(2) => stderr.extend_from_slice(&data[4..]),
                        _ => {}
                    }
                }
                MSG_EXIT | MSG_SHUTDOWN => {
                    let retval = if data.len() >= 4 { int(&data, 0) } else { 0 };
                    if data.len() > 4 {
                        let msg = &data[4..];
                        let msg = msg.strip_suffix(b"\0").unwrap_or(msg);
                        stderr.extend_from_slice(msg);
                        stderr.push(b'\n');
                    }
                    return done(retval == 0, stdout, stderr);
                }
                MSG_EXITED => return done(true, stdout, stderr),
                MSG_READY => {
                    return Attempt::Failed("tmux attached a command client".into());
                }
                // MSG_WRITE_CLOSE, MSG_FLAGS and anything else: nothing to do.
                MSG_WRITE_CLOSE => {}
                _ => {}
            }
        }
        let left = match remaining(deadline) {
            Ok(d) => d,
            Err(e) => return Attempt::Failed(e.to_string()),
        };
        if let Err(e) = sock.set_read_timeout(Some(left)) {
            return Attempt::Failed(format!("reading from tmux: {e}"));
        }
        match sock.read(&mut chunk) {
            // As the tmux client says when the server goes away mid-command (a server that
            // was exiting as the client connected resets the connection instead).
            Ok(0) => return lost(stdout, stderr),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return lost(stdout, stderr),
            Ok(n) => inbuf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Attempt::Failed("tmux did not answer in time".into());
            }
            Err(e) => return Attempt::Failed(format!("reading from tmux: {e}")),
        }
    }
}

fn lost(stdout: Vec<u8>, mut stderr: Vec<u8>) -> Attempt {
    stderr.extend_from_slice(b"server exited unexpectedly\n");
    done(false, stdout, stderr)
}

fn int(data: &[u8], at: usize) -> i32 {
    i32::from_ne_bytes(data[at..at + 4].try_into().unwrap())
}

fn done(success: bool, stdout: Vec<u8>, stderr: Vec<u8>) -> Attempt {
    Attempt::Done(Output {
        success,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_has_tmux_s_header() {
        let mut b = Vec::new();
        push_msg(&mut b, MSG_IDENTIFY_CLIENTPID, &[&7i32.to_ne_bytes()]);
        assert_eq!(b.len(), 20);
        assert_eq!(u32::from_ne_bytes(b[0..4].try_into().unwrap()), 107);
        assert_eq!(u16::from_ne_bytes(b[4..6].try_into().unwrap()), 20);
        assert_eq!(u32::from_ne_bytes(b[8..12].try_into().unwrap()), 8);
    }

    #[test]
    fn a_command_packs_argc_and_nul_terminated_args() {
        let b = command(&["display", "-p", "x"]).unwrap();
        assert_eq!(&b[HEADER..HEADER + 4], &3i32.to_ne_bytes());
        assert_eq!(&b[HEADER + 4..], b"display\0-p\0x\0");
    }

    #[test]
    fn a_command_list_too_long_for_one_message_is_left_to_the_binary() {
        let long = "x".repeat(MAX_IMSGSIZE);
        assert!(command(&["display", "-p", &long]).is_none());
        assert!(command(&["display", "-p", "a\0b"]).is_none());
        let fits = "x".repeat(MAX_IMSGSIZE - HEADER - 4 - "display\0-p\0".len() - 1);
        assert!(command(&["display", "-p", &fits]).is_some());
        let over = format!("{fits}x");
        assert!(command(&["display", "-p", &over]).is_none());
    }

    #[test]
    fn identify_ends_with_done_and_skips_oversized_variables() {
        let env = vec![b"TERM=xterm".to_vec(), vec![b'A'; MAX_IMSGSIZE]];
        let b = identify(&env, b"/tmp").unwrap();
        let mut kinds = Vec::new();
        let mut at = 0;
        while at < b.len() {
            kinds.push(u32::from_ne_bytes(b[at..at + 4].try_into().unwrap()));
            at += u16::from_ne_bytes(b[at + 4..at + 6].try_into().unwrap()) as usize;
        }
        assert_eq!(
            kinds,
            vec![
                MSG_IDENTIFY_FLAGS,
                MSG_IDENTIFY_TERM,
                MSG_IDENTIFY_TTYNAME,
                MSG_IDENTIFY_CWD,
                MSG_IDENTIFY_CLIENTPID,
                MSG_IDENTIFY_ENVIRON,
                MSG_IDENTIFY_DONE
            ]
        );
    }
}
