//! Signals, process groups and the process table, through `rustix` (safe wrappers) and
//! `/proc`. Only installing a signal handler and `pre_exec` remain `unsafe`: neither has a
//! safe form.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use rustix::process::{Pid, Signal, WaitOptions};

fn pid(raw: u32) -> Option<Pid> {
    i32::try_from(raw).ok().and_then(Pid::from_raw)
}

fn send(raw: u32, signal: Signal) {
    if let Some(pid) = pid(raw) {
        let _ = rustix::process::kill_process(pid, signal);
    }
}

/// Sends SIGKILL to process `pid`.
pub fn sigkill(pid: u32) {
    send(pid, Signal::KILL);
}

/// Sends SIGSTOP to process `pid`: it cannot fork or act until killed or continued.
pub fn sigstop(pid: u32) {
    send(pid, Signal::STOP);
}

/// Sends SIGKILL to a whole process group (never to group 0 or 1).
pub fn kill_group(pgid: u32) {
    if pgid > 1
        && let Some(pgid) = pid(pgid)
    {
        let _ = rustix::process::kill_process_group(pgid, Signal::KILL);
    }
}

/// Kills this process outright, as a power cut or `kill -9` would.
pub fn die() -> ! {
    let _ = rustix::process::kill_process(rustix::process::getpid(), Signal::KILL);
    std::process::abort()
}

/// Whether process `pid` exists (signal 0).
pub fn exists(pid: u32) -> bool {
    self::pid(pid).is_some_and(|p| rustix::process::test_kill_process(p).is_ok())
}

/// Waits for child `pid` to end (it was just killed).
pub fn wait_child(pid: u32) {
    if let Some(pid) = self::pid(pid) {
        let _ = rustix::process::waitpid(Some(pid), WaitOptions::empty());
    }
}

/// Reaps one ended child, if any is waiting; whether one was.
pub fn reap_one() -> bool {
    matches!(
        rustix::process::waitpid(None, WaitOptions::NOHANG),
        Ok(Some(_))
    )
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Makes this process the child subreaper of everything it starts: an orphan among its
/// descendants comes back to it rather than to init.
pub fn become_subreaper() {
    let _ = rustix::process::set_child_subreaper(rustix::process::getpid().into());
}

/// This process as the child subreaper for as long as the guard lives (see
/// [`become_subreaper`]); a process that was not one before stops being one when it
/// drops. A long-lived process (the console) lends itself for one operation only.
#[must_use = "the process stays the subreaper only while the guard lives"]
pub struct Subreaper {
    was: bool,
}

/// Makes this process the child subreaper until the guard drops.
pub fn subreaper() -> Subreaper {
    let was = rustix::process::child_subreaper().is_ok_and(|pid| pid.is_some());
    become_subreaper();
    Subreaper { was }
}

impl Drop for Subreaper {
    fn drop(&mut self) {
        if !self.was {
            let _ = rustix::process::set_child_subreaper(None);
        }
    }
}

/// Makes `command`'s process the leader of a new session when it starts: it outlives
/// this process and its terminal.
pub fn new_session(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure only calls setsid(2), which is async-signal-safe, as pre_exec
    // requires.
    unsafe {
        command.pre_exec(|| {
            rustix::process::setsid()?;
            Ok(())
        });
    }
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// How many callers want SIGINT and SIGTERM caught ([`catch_interrupts`] less
/// [`default_interrupts`]): the console catches them for its whole life, and a verify it
/// runs inside it only for its own.
static CATCHING: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_interrupt(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// From now on SIGINT and SIGTERM set a flag ([`interrupted`]) instead of killing this
/// process, so the caller's cleanup runs.
pub fn catch_interrupts() {
    CATCHING.fetch_add(1, Ordering::SeqCst);
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_interrupt as *const () as libc::sighandler_t,
        );
        libc::signal(
            libc::SIGTERM,
            on_interrupt as *const () as libc::sighandler_t,
        );
    }
}

/// Lets go of one [`catch_interrupts`]: once no caller wants them caught, SIGINT and
/// SIGTERM kill this process again, as they do by default.
pub fn default_interrupts() {
    let before = CATCHING
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            Some(n.saturating_sub(1))
        })
        .unwrap_or(0);
    if before > 1 {
        return;
    }
    // SAFETY: restoring the default disposition of two signals.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
    }
}

/// Whether SIGINT or SIGTERM arrived since [`catch_interrupts`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Whether SIGINT or SIGTERM arrived since [`catch_interrupts`] or the last take, and
/// forgets it: a caller that counts interrupts (the runner's first Ctrl-C and its
/// second) takes each once.
pub fn take_interrupt() -> bool {
    INTERRUPTED.swap(false, Ordering::SeqCst)
}

/// A process's state letter (`R`, `S`, `Z`, ...) and parent.
pub fn state_and_parent(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.chars().next()?;
    Some((state, fields.next()?.parse().ok()?))
}

/// A process's parent.
pub fn parent(pid: u32) -> Option<u32> {
    state_and_parent(pid).map(|(_, ppid)| ppid)
}

/// A process's (process group, session).
pub fn group_and_session(pid: u32) -> Option<(u32, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces): state ppid pgrp session.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace().skip(2);
    Some((fields.next()?.parse().ok()?, fields.next()?.parse().ok()?))
}

/// Whether any live (not zombie) process is still in process group `pgid`.
pub fn group_alive(pgid: u32) -> bool {
    all_pids().into_iter().any(|pid| {
        group_and_session(pid).is_some_and(|(group, _)| group == pgid)
            && state_and_parent(pid).is_some_and(|(state, _)| state != 'Z')
    })
}

/// Every process id in `/proc` but this process's own.
pub fn all_pids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|pid| *pid != std::process::id())
        .collect()
}

/// A process's command line, its arguments NUL-separated (empty for a zombie); `None`
/// when `/proc` does not let it be read.
pub fn cmdline(pid: u32) -> Option<Vec<u8>> {
    std::fs::read(format!("/proc/{pid}/cmdline")).ok()
}

/// A process's environment as `KEY=value` entries.
pub fn environ(pid: u32) -> Vec<Vec<u8>> {
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|bytes| bytes.split(|b| *b == 0).map(<[u8]>::to_vec).collect())
        .unwrap_or_default()
}

/// The value of `name` in an environment read by [`environ`].
pub fn env_var(environ: &[Vec<u8>], name: &str) -> Option<String> {
    environ.iter().find_map(|kv| {
        kv.strip_prefix(name.as_bytes())
            .and_then(|rest| rest.strip_prefix(b"="))
            .map(|v| String::from_utf8_lossy(v).into_owned())
    })
}

/// The executable of process `pid`, without the " (deleted)" a rebuilt or reinstalled
/// binary leaves.
pub fn exe(pid: u32) -> Option<String> {
    exe_at(&format!("/proc/{pid}/exe"))
}

/// This process's executable, as [`exe`] reads it.
pub fn own_exe() -> Option<String> {
    exe_at("/proc/self/exe")
}

fn exe_at(link: &str) -> Option<String> {
    std::fs::read_link(link).ok().map(|p| {
        let text = p.to_string_lossy().into_owned();
        text.strip_suffix(" (deleted)")
            .map(String::from)
            .unwrap_or(text)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The disposition of SIGTERM now: whether it is this module's handler.
    fn caught() -> bool {
        // SAFETY: sigaction with no new action only reads the current one.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGTERM, std::ptr::null(), &mut old);
            old.sa_sigaction == on_interrupt as *const () as libc::sighandler_t
        }
    }

    #[test]
    fn a_nested_catch_leaves_the_outer_one_standing() {
        catch_interrupts();
        catch_interrupts();
        default_interrupts();
        assert!(caught(), "the outer catch (the console's) still stands");
        default_interrupts();
        assert!(!caught());
        // One more let-go than catches changes nothing and never wraps around.
        default_interrupts();
        catch_interrupts();
        assert!(caught());
        default_interrupts();
        assert!(!caught());
    }

    #[test]
    fn this_process_is_seen_and_its_parent_known() {
        let me = std::process::id();
        assert!(super::exists(me));
        assert_eq!(super::parent(me), Some(std::os::unix::process::parent_id()));
        assert!(super::group_and_session(me).is_some());
        assert!(!super::exists(u32::MAX));
    }
}
