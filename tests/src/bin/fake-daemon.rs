//! A stand-in for a shared daemon (like Codex's `app-server`) and its clients, for the
//! ancestry tests.
//!
//! - `fake-daemon serve SOCKET PIDFILE`: listens on a unix socket, writes its pid to PIDFILE,
//!   and echoes every line back to each client, forever.
//! - `fake-daemon dgram SOCKET PIDFILE`: a unix datagram socket bound to SOCKET (notify-style).
//! - `fake-daemon udp PIDFILE`: a UDP server on 127.0.0.1 (any port) that echoes datagrams.
//! - `fake-daemon map FILE PIDFILE`: maps FILE into memory, closes it, leaves for `/`, writes
//!   its pid to PIDFILE, and writes a counter into the mapping every 50 ms, forever: a process
//!   working in a file with no descriptor open and its current directory elsewhere.
//! - `fake-daemon thread-files SOCKET PIDFILE`: listens on a unix socket from a thread that
//!   has a descriptor table of its own (`unshare(CLONE_FILES)`): the process's own
//!   `/proc/<pid>/fd` does not show it.
//! - `fake-daemon thread-net PIDFILE`: listens on TCP from a thread in a network namespace of
//!   its own (`unshare(CLONE_NEWNET)`, needs the privilege); writes `unsupported` to PIDFILE
//!   when it cannot.
//! - `fake-daemon client SOCKET BEATFILE`: connects (retrying for 10 s), then every 50 ms sends
//!   a line and waits for its echo, writing the count of round trips to BEATFILE. It exits 1
//!   (writing `broken` to BEATFILE) as soon as the daemon is gone.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("serve") if args.len() == 4 => serve(&args[2], &args[3]),
        Some("client") if args.len() == 4 => client(&args[2], &args[3]),
        Some("udp") if args.len() == 3 => udp(&args[2]),
        Some("dgram") if args.len() == 4 => dgram(&args[2], &args[3]),
        Some("map") if args.len() == 4 => map(&args[2], &args[3]),
        Some("thread-files") if args.len() == 4 => thread_files(&args[2], &args[3]),
        Some("thread-net") if args.len() == 3 => thread_net(&args[2]),
        _ => {
            eprintln!(
                "usage: fake-daemon serve SOCKET PIDFILE | dgram SOCKET PIDFILE | udp PIDFILE | map FILE PIDFILE | thread-files SOCKET PIDFILE | thread-net PIDFILE | client SOCKET BEATFILE"
            );
            std::process::exit(64);
        }
    }
}

// A test helper's own mapping: the only way to hold a file with no descriptor open.
#[allow(unsafe_code)]
fn map(file: &str, pidfile: &str) {
    use rustix::mm::{MapFlags, ProtFlags};
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(file)
        .expect("open");
    let len = 4096;
    f.set_len(len as u64).expect("size");
    // SAFETY: a fresh shared mapping of a file this process just sized; only this process
    // writes through it, as bytes.
    let p = unsafe {
        rustix::mm::mmap(
            std::ptr::null_mut(),
            len,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::SHARED,
            &f,
            0,
        )
    }
    .expect("mmap") as *mut u8;
    drop(f);
    std::env::set_current_dir("/").expect("chdir");
    std::fs::write(pidfile, std::process::id().to_string()).expect("pid file");
    for n in 0u64.. {
        let text = format!("write {n}\n");
        // SAFETY: within the mapping's `len` bytes.
        unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), p, text.len().min(len)) };
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn serve(sock: &str, pidfile: &str) {
    let _ = std::fs::remove_file(sock);
    let l = UnixListener::bind(sock).expect("bind");
    std::fs::write(pidfile, std::process::id().to_string()).expect("pid file");
    for s in l.incoming().flatten() {
        std::thread::spawn(move || {
            let mut w = s.try_clone().expect("clone");
            for line in BufReader::new(s).lines() {
                let Ok(line) = line else { return };
                if writeln!(w, "{line}").is_err() {
                    return;
                }
            }
        });
    }
}

// A test helper's own thread: `unshare` of its descriptor table or network namespace is what
// is tested, and nothing else in this process depends on either.
#[allow(unsafe_code)]
fn thread_files(sock: &str, pidfile: &str) {
    let (sock, pidfile) = (sock.to_string(), pidfile.to_string());
    std::thread::spawn(move || {
        // SAFETY: this thread only binds a socket after it; no other thread shares its files.
        unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::FILES) }
            .expect("unshare");
        let _ = std::fs::remove_file(&sock);
        let l = UnixListener::bind(&sock).expect("bind");
        std::fs::write(&pidfile, std::process::id().to_string()).expect("pid file");
        for s in l.incoming() {
            drop(s);
        }
    });
    loop {
        std::thread::park();
    }
}

#[allow(unsafe_code)]
fn thread_net(pidfile: &str) {
    let pidfile = pidfile.to_string();
    std::thread::spawn(move || {
        // SAFETY: a network namespace of this thread's own; it holds no socket yet.
        if unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNET) }.is_err()
        {
            std::fs::write(&pidfile, "unsupported").expect("pid file");
            std::process::exit(2);
        }
        let l = std::net::TcpListener::bind("0.0.0.0:0").expect("bind");
        std::fs::write(&pidfile, std::process::id().to_string()).expect("pid file");
        for s in l.incoming() {
            drop(s);
        }
    });
    loop {
        std::thread::park();
    }
}

fn dgram(sock: &str, pidfile: &str) {
    let _ = std::fs::remove_file(sock);
    let s = std::os::unix::net::UnixDatagram::bind(sock).expect("bind");
    std::fs::write(pidfile, std::process::id().to_string()).expect("pid file");
    let mut buf = [0u8; 512];
    while s.recv(&mut buf).is_ok() {}
}

fn udp(pidfile: &str) {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    std::fs::write(pidfile, std::process::id().to_string()).expect("pid file");
    let mut buf = [0u8; 512];
    while let Ok((n, from)) = s.recv_from(&mut buf) {
        let _ = s.send_to(&buf[..n], from);
    }
}

fn client(sock: &str, beatfile: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let s = loop {
        match UnixStream::connect(sock) {
            Ok(s) => break s,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => fail(beatfile, &format!("connect: {e}")),
        }
    };
    let mut w = s.try_clone().expect("clone");
    let mut r = BufReader::new(s);
    for n in 1u64.. {
        let mut line = String::new();
        if writeln!(w, "ping {n}").is_err() || r.read_line(&mut line).unwrap_or(0) == 0 {
            fail(beatfile, "the daemon is gone");
        }
        let _ = std::fs::write(beatfile, n.to_string());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn fail(beatfile: &str, why: &str) -> ! {
    let _ = std::fs::write(beatfile, "broken");
    eprintln!("fake-daemon client: {why}");
    std::process::exit(1);
}
