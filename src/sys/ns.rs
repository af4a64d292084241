//! A private view of `/tmp` for a fenced process tree (a mount namespace, inside a user
//! namespace when git-crew is not root): the run's own temp folder is the process's
//! `/tmp` — or, when paths the process needs lie under the real `/tmp`, an empty `/tmp`
//! with just those bound back in (read-only unless its fence lets it write them) — and
//! `$XDG_RUNTIME_DIR` is covered by an empty tmpfs, and `/dev/pts` by a devpts instance of
//! its own (pseudo-terminals it opens, none of the lead's). Every other mount is read-only but
//! for the paths the process's fence lets it write, bound back writable: the kernel fence
//! governs writes, not a file's mode, owner or times, which a read-only mount keeps.
//! So no socket of the lead's that lives there (tmux, ssh-agent, X11, D-Bus) can be
//! reached by path. Everything is prepared here, in the parent; the child only makes
//! system calls on prepared strings between fork and exec.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

use anyhow::Context;

/// What the child does, prepared.
pub struct Plan {
    /// The sources of the bind mounts: each is cloned (`open_tree`) in the child's new
    /// namespace before the real `/tmp` is covered, into its slot.
    sources: Vec<CString>,
    slots: Vec<AtomicI32>,
    steps: Vec<Step>,
    cwd: Option<CString>,
    uid_map: Option<(CString, CString)>,
}

enum Step {
    /// `mkdir`, its failure ignored (it may exist).
    Mkdir(CString),
    /// Creates an empty file to mount a file on.
    Touch(CString),
    /// Attaches the clone of source `slot` on the target.
    Bind { slot: usize, target: CString },
    /// Makes the bind mount at the target read-only, keeping the flags it had (a user
    /// namespace may not clear them).
    ReadOnly(CString, libc::c_ulong),
    /// Makes every mount read-only (the writable paths are bound back afterwards, from
    /// clones taken before).
    ReadOnlyRoot,
    /// Covers a folder with an empty tmpfs of these options.
    Hide(CString, &'static std::ffi::CStr),
    /// Mounts a new devpts instance of the process's own on `/dev/pts`: the ptys it opens
    /// (through `/dev/ptmx`, which finds the instance at `pts` beside it) are its own,
    /// and no terminal of the lead's is there.
    Devpts,
}

/// `open_tree`'s flag for a detached copy of the tree (linux/mount.h).
const OPEN_TREE_CLONE: libc::c_uint = 1;
/// `mount_setattr`'s argument (linux/mount.h).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}
/// A read-only mount (linux/mount.h).
const MOUNT_ATTR_RDONLY: u64 = 0x0000_0001;
/// `move_mount`'s flag for a source given as a file descriptor (linux/mount.h).
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x0000_0004;

/// Where the process's own devpts instance is mounted.
const PTS: &std::ffi::CStr = c"/dev/pts";

/// The paths a process needs, sorted by what it may do with them.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Needs {
    /// Paths it may write (its fence's folders and files).
    pub writable: Vec<PathBuf>,
    /// Paths it only reads or runs (the repository, `PATH`, its program, its cwd).
    pub readable: Vec<PathBuf>,
    /// Its working folder: entered again once the mounts are made (it was entered before,
    /// on what now lies beneath them).
    pub cwd: Option<PathBuf>,
}

fn cstr(path: &Path) -> anyhow::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).context("a path holds a NUL byte")
}

/// Keeps only the paths no other path of `paths` holds.
fn topmost(mut paths: Vec<PathBuf>) -> Vec<PathBuf> {
    paths.sort();
    paths.dedup();
    let mut kept: Vec<PathBuf> = Vec::new();
    for path in paths {
        if !kept.iter().any(|k| path.starts_with(k)) {
            kept.push(path);
        }
    }
    kept
}

/// The real `/tmp`, as the filesystem resolves it.
fn real_tmp() -> PathBuf {
    std::fs::canonicalize("/tmp").unwrap_or_else(|_| PathBuf::from("/tmp"))
}

/// Prepares the private `/tmp` of a process whose temp folder is `private` (a folder of
/// its own, which it may write), for what it `needs`; `hide` are folders to cover with an
/// empty tmpfs (the lead's `$XDG_RUNTIME_DIR`).
pub fn plan(private: &Path, needs: &Needs, hide: &[PathBuf]) -> anyhow::Result<Plan> {
    let tmp = real_tmp();
    let canon = |p: &PathBuf| std::fs::canonicalize(p).ok();
    let under = |p: &Path| p.starts_with(&tmp) && p != tmp;
    let writable: Vec<PathBuf> = needs
        .writable
        .iter()
        .filter_map(canon)
        .filter(|p| under(p))
        .collect();
    let readable = topmost(
        needs
            .readable
            .iter()
            .filter_map(canon)
            .filter(|p| under(p))
            .collect(),
    );
    // Every path the process may write that lies elsewhere, outermost first: bound back
    // writable over a read-only root.
    let mut elsewhere: Vec<PathBuf> = needs
        .writable
        .iter()
        .filter_map(canon)
        .filter(|p| !p.starts_with(&tmp))
        .collect();
    elsewhere.sort();
    elsewhere.dedup();
    let mut sources = Vec::new();
    // The whole tree is read-only to the process but for what its fence lets it write:
    // the kernel fence governs what is written, not a file's mode, owner or times, which
    // a read-only mount refuses to change.
    let mut steps = vec![Step::ReadOnlyRoot];
    if Path::new(std::ffi::OsStr::from_bytes(PTS.to_bytes())).is_dir() {
        steps.push(Step::Devpts);
    }
    let private = std::fs::canonicalize(private).context("cannot find the run's temp folder")?;
    let mut bind = |steps: &mut Vec<Step>, from: &Path, to: &Path| -> anyhow::Result<()> {
        sources.push(cstr(from)?);
        steps.push(Step::Bind {
            slot: sources.len() - 1,
            target: cstr(to)?,
        });
        Ok(())
    };
    if readable.is_empty() && writable.is_empty() {
        // The run's temp folder becomes /tmp.
        bind(&mut steps, &private, &tmp)?;
    } else {
        // The run's own paths lie under /tmp: they are bound back into an empty /tmp that
        // nothing may write. (Were /tmp the run's temp folder, its write right would
        // reach every path bound beneath it, where the kernel fence looks up the tree.)
        // `TMPDIR` stays the run's temp folder.
        steps.push(Step::Hide(cstr(&tmp)?, c"size=1m,mode=755"));
    }
    // A path is bound back at the same place, on a mount point made inside the private
    // /tmp.
    let mount_point = |steps: &mut Vec<Step>, path: &Path| -> anyhow::Result<()> {
        let mut at = tmp.clone();
        let rel = path.strip_prefix(&tmp)?;
        let parts: Vec<_> = rel.components().collect();
        for (i, part) in parts.iter().enumerate() {
            at.push(part);
            if i + 1 == parts.len() && !path.is_dir() {
                steps.push(Step::Touch(cstr(&at)?));
            } else {
                steps.push(Step::Mkdir(cstr(&at)?));
            }
        }
        Ok(())
    };
    for path in &readable {
        mount_point(&mut steps, path)?;
        bind(&mut steps, path, path)?;
        // Read-only, whatever the kernel fence says of it.
        steps.push(Step::ReadOnly(cstr(path)?, mount_flags(path)));
    }
    for path in &writable {
        if !readable.iter().any(|r| path.starts_with(r)) {
            mount_point(&mut steps, path)?;
        }
        bind(&mut steps, path, path)?;
    }
    for path in &elsewhere {
        bind(&mut steps, path, path)?;
    }
    let needed: Vec<PathBuf> = needs
        .writable
        .iter()
        .chain(&needs.readable)
        .filter_map(canon)
        .collect();
    for dir in hide {
        let Some(dir) = canon(dir) else { continue };
        // One under /tmp is out of view already; one that holds a path the
        // process needs cannot be covered.
        if !dir.starts_with(&tmp)
            && !needed.iter().any(|p| p.starts_with(&dir))
            && std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir())
        {
            steps.push(Step::Hide(cstr(&dir)?, c"size=16k,mode=700"));
        }
    }
    // SAFETY: getuid and getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let uid_map = (uid != 0).then(|| {
        (
            CString::new(format!("{uid} {uid} 1")).unwrap_or_default(),
            CString::new(format!("{gid} {gid} 1")).unwrap_or_default(),
        )
    });
    Ok(Plan {
        slots: sources.iter().map(|_| AtomicI32::new(-1)).collect(),
        cwd: needs.cwd.as_deref().map(cstr).transpose()?,
        sources,
        steps,
        uid_map,
    })
}

/// The flags of the mount `path` lies on that a remount must keep.
fn mount_flags(path: &Path) -> libc::c_ulong {
    use rustix::fs::StatVfsMountFlags as F;
    let Ok(vfs) = rustix::fs::statvfs(path) else {
        return 0;
    };
    let f = vfs.f_flag;
    let mut kept = 0;
    for (has, flag) in [
        (F::NOSUID, libc::MS_NOSUID),
        (F::NODEV, libc::MS_NODEV),
        (F::NOEXEC, libc::MS_NOEXEC),
        (F::NOATIME, libc::MS_NOATIME),
        (F::NODIRATIME, libc::MS_NODIRATIME),
        (F::RELATIME, libc::MS_RELATIME),
    ] {
        if f.contains(has) {
            kept |= flag;
        }
    }
    kept
}

/// The error of the last system call.
fn last() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// Writes `text` to `path` (a `/proc/self` file).
fn write_proc(path: &std::ffi::CStr, text: &[u8]) -> std::io::Result<()> {
    // SAFETY: open, write and close on a NUL-terminated path and a live buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(last());
        }
        let n = libc::write(fd, text.as_ptr().cast(), text.len());
        libc::close(fd);
        if n < 0 {
            return Err(last());
        }
    }
    Ok(())
}

impl Plan {
    /// Whether the process gets a devpts instance of its own on `/dev/pts` (so every pty
    /// it can reach there is its own).
    pub fn own_ptys(&self) -> bool {
        self.steps.iter().any(|s| matches!(s, Step::Devpts))
    }

    /// Carries the plan out in the child, between fork and exec: no allocation, only
    /// system calls on the prepared strings.
    pub fn enter(&self) -> std::io::Result<()> {
        let null = std::ptr::null::<libc::c_char>();
        // SAFETY: every pointer is a NUL-terminated string this plan owns, or null where
        // the call allows it.
        unsafe {
            match &self.uid_map {
                None => {
                    if libc::unshare(libc::CLONE_NEWNS) != 0 {
                        return Err(last());
                    }
                }
                Some((uid_map, gid_map)) => {
                    if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) != 0 {
                        return Err(last());
                    }
                    write_proc(c"/proc/self/setgroups", b"deny")?;
                    write_proc(c"/proc/self/uid_map", uid_map.as_bytes())?;
                    write_proc(c"/proc/self/gid_map", gid_map.as_bytes())?;
                }
            }
            // Nothing done here may reach the lead's mounts.
            if libc::mount(
                null,
                c"/".as_ptr(),
                null,
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
            {
                return Err(last());
            }
            // Every source is taken while the real /tmp is still in view (a mount of
            // the old namespace cannot be bound into this one: it is cloned here).
            for (source, slot) in self.sources.iter().zip(&self.slots) {
                let fd = libc::syscall(
                    libc::SYS_open_tree,
                    libc::AT_FDCWD,
                    source.as_ptr(),
                    OPEN_TREE_CLONE
                        | libc::O_CLOEXEC as libc::c_uint
                        | libc::AT_RECURSIVE as libc::c_uint,
                );
                if fd < 0 {
                    return Err(last());
                }
                slot.store(fd as i32, Ordering::Relaxed);
            }
            for step in &self.steps {
                match step {
                    Step::ReadOnlyRoot => {
                        let attr = MountAttr {
                            attr_set: MOUNT_ATTR_RDONLY,
                            attr_clr: 0,
                            propagation: 0,
                            userns_fd: 0,
                        };
                        if libc::syscall(
                            libc::SYS_mount_setattr,
                            libc::AT_FDCWD,
                            c"/".as_ptr(),
                            libc::AT_RECURSIVE as libc::c_uint,
                            &attr as *const MountAttr,
                            std::mem::size_of::<MountAttr>(),
                        ) != 0
                        {
                            return Err(last());
                        }
                    }
                    Step::Mkdir(path) => {
                        libc::mkdir(path.as_ptr(), 0o700);
                    }
                    Step::Touch(path) => {
                        let fd = libc::open(
                            path.as_ptr(),
                            libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
                            0o600,
                        );
                        if fd >= 0 {
                            libc::close(fd);
                        }
                    }
                    Step::Bind { slot, target } => {
                        let fd = self.slots[*slot].load(Ordering::Relaxed);
                        if libc::syscall(
                            libc::SYS_move_mount,
                            fd,
                            c"".as_ptr(),
                            libc::AT_FDCWD,
                            target.as_ptr(),
                            MOVE_MOUNT_F_EMPTY_PATH,
                        ) != 0
                        {
                            return Err(last());
                        }
                        libc::close(fd);
                    }
                    Step::ReadOnly(target, kept) => {
                        if libc::mount(
                            null,
                            target.as_ptr(),
                            null,
                            libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | kept,
                            std::ptr::null(),
                        ) != 0
                        {
                            return Err(last());
                        }
                    }
                    Step::Devpts => {
                        if libc::mount(
                            c"devpts".as_ptr(),
                            PTS.as_ptr(),
                            c"devpts".as_ptr(),
                            libc::MS_NOSUID | libc::MS_NOEXEC,
                            c"newinstance,ptmxmode=0666,mode=0620".as_ptr().cast(),
                        ) != 0
                        {
                            return Err(last());
                        }
                    }
                    Step::Hide(target, options) => {
                        if libc::mount(
                            c"tmpfs".as_ptr(),
                            target.as_ptr(),
                            c"tmpfs".as_ptr(),
                            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                            options.as_ptr().cast(),
                        ) != 0
                        {
                            return Err(last());
                        }
                    }
                }
            }
            // The working folder std entered lies beneath the mounts made since.
            if let Some(cwd) = &self.cwd
                && libc::chdir(cwd.as_ptr()) != 0
            {
                return Err(last());
            }
        }
        Ok(())
    }
}

/// Whether this machine lets git-crew give a process a private `/tmp`: tried once on a
/// throwaway `sh -c :`, with the same calls a worker's start makes.
pub fn available() -> bool {
    use std::os::unix::process::CommandExt;
    // Any folder will do as the throwaway's /tmp: `/` needs no writable place.
    let Ok(plan) = plan(Path::new("/"), &Needs::default(), &[]) else {
        return false;
    };
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.args(["-c", ":"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: `enter` makes only system calls on prepared strings.
    unsafe {
        cmd.pre_exec(move || plan.enter());
    }
    cmd.status().is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_topmost_of_nested_paths_is_kept() {
        let kept = topmost(vec![
            "/tmp/a/b".into(),
            "/tmp/a".into(),
            "/tmp/ab".into(),
            "/tmp/a".into(),
        ]);
        assert_eq!(kept, [PathBuf::from("/tmp/a"), PathBuf::from("/tmp/ab")]);
    }
}
