//! A private view of `/tmp` for a fenced process tree (a mount namespace, inside a user
//! namespace when git-crew is not root): the run's own temp folder is the process's
//! `/tmp` — or, when paths the process needs lie under the real `/tmp`, an empty `/tmp`
//! with just those bound back in (read-only unless its fence lets it write them) — and
//! `$XDG_RUNTIME_DIR` is covered by an empty tmpfs. Every other mount is read-only but
//! for the paths the process's fence lets it write, bound back writable: the kernel fence
//! governs writes, not a file's mode, owner or times, which a read-only mount keeps.
//! So no socket of the lead's that lives there (tmux, ssh-agent, X11, D-Bus) can be
//! reached by path. `/dev/pts` is a devpts instance of the process's own: the
//! pseudo-terminals it opens are there, none of the lead's is.
//!
//! Where the fence asks for it ([`GitView`]), the repository's git dir is a private,
//! copy-on-write view (overlayfs): what the process writes there that its fence does not
//! let it write for real (`refs/stash`, `packed-refs.lock`, a tag, the config) lands in a
//! tmpfs that goes away with it, and the new objects it writes into the repository's
//! store land in the run's quarantine. No variable points git at the quarantine, so a
//! nested repository (a submodule, a test's scratch repository) keeps its own objects.
//!
//! Everything is prepared here, in the parent; the child only makes system calls on
//! prepared strings between fork and exec.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

use super::error::{Context, Result};

/// What the child does, prepared.
pub struct Plan {
    /// The sources of the bind mounts: each is cloned (`open_tree`) in the child's new
    /// namespace before the real `/tmp` is covered, into its slot.
    sources: Vec<CString>,
    slots: Vec<AtomicI32>,
    late: Vec<AtomicI32>,
    steps: Vec<Step>,
    cwd: Option<CString>,
    uid_map: Option<(CString, CString)>,
    /// The git view's merged folder, opened (`O_PATH`) once every mount is made: the
    /// write fence's rule for it is added in the child ([`Plan::view_fd`]).
    view: Option<(CString, AtomicI32)>,
    /// The process's own `/dev/pts` and `/dev/ptmx`, opened (`O_PATH`) once its devpts
    /// instance is mounted: the write fence's rules for them are added in the child
    /// ([`Plan::pty_fds`]). Empty when it gets no instance.
    ptys: Vec<(CString, libc::c_int, AtomicI32)>,
}

/// A private view of a repository's git dir (see the module's notes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitView {
    /// The repository's common git dir.
    pub common: PathBuf,
    /// Where the objects written into the repository's store land (the run's
    /// quarantine), and overlayfs's work folder beside it (same filesystem, empty).
    pub objects_upper: PathBuf,
    pub objects_work: PathBuf,
    /// Where what git-lfs writes into the repository's LFS store (`<common>/lfs`, which
    /// must exist) lands (the run's LFS store), and overlayfs's work folder beside it.
    pub lfs_upper: PathBuf,
    pub lfs_work: PathBuf,
    /// An empty folder of the run's, under `common`, to mount the view's tmpfs on.
    pub scratch: PathBuf,
}

impl GitView {
    /// Whether overlayfs can be given these paths (its options cannot carry every byte).
    pub fn representable(&self) -> bool {
        [
            &self.common,
            &self.objects_upper,
            &self.objects_work,
            &self.lfs_upper,
            &self.lfs_work,
            &self.scratch,
        ]
        .iter()
        .all(|p| {
            let bytes = p.as_os_str().as_bytes();
            p.is_absolute()
                && !bytes
                    .iter()
                    .any(|b| matches!(b, b',' | b':' | b'\\' | b'\n'))
        })
    }
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
    /// Mounts an overlayfs of these options on the target.
    Overlay { target: CString, data: CString },
    /// Clones the mount at the path into late slot `slot` (taken after the mounts
    /// before it, unlike the sources, which are taken first).
    Take { slot: usize, path: CString },
    /// Attaches the clone in late slot `slot` on the target.
    BindLate { slot: usize, target: CString },
    /// Mounts a new devpts instance of the process's own on `/dev/pts`: the ptys it opens
    /// (through `/dev/ptmx`, which finds the instance at `pts` beside it) are its own,
    /// and no terminal of the lead's is there.
    Devpts,
}

/// Where the process's own devpts instance is mounted, and the multiplexer that opens a
/// pty in it.
const PTS: &std::ffi::CStr = c"/dev/pts";
const PTMX: &std::ffi::CStr = c"/dev/ptmx";

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

fn cstr(path: &Path) -> Result<CString> {
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
/// empty tmpfs (the lead's `$XDG_RUNTIME_DIR`); `view`, the repository's git dir to show
/// as a private view.
pub fn plan(
    private: &Path,
    needs: &Needs,
    hide: &[PathBuf],
    view: Option<&GitView>,
) -> Result<Plan> {
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
    // The git view's overlays are made first, on the real folders, and cloned: the clones
    // stay writable when the tree is made read-only, and are attached again after the
    // paths the process reads are in place.
    let (mut steps, late_binds) = match view {
        Some(view) => view_steps(view)?,
        None => (Vec::new(), Vec::new()),
    };
    let late_count = late_binds.len();
    // The whole tree is read-only to the process but for what its fence lets it write:
    // the kernel fence governs what is written, not a file's mode, owner or times, which
    // a read-only mount refuses to change.
    steps.push(Step::ReadOnlyRoot);
    let own_ptys = Path::new(std::ffi::OsStr::from_bytes(PTS.to_bytes())).is_dir();
    if own_ptys {
        steps.push(Step::Devpts);
    }
    let private = std::fs::canonicalize(private).context("cannot find the run's temp folder")?;
    let mut bind = |steps: &mut Vec<Step>, from: &Path, to: &Path| -> Result<()> {
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
    let mount_point = |steps: &mut Vec<Step>, path: &Path| -> Result<()> {
        let mut at = tmp.clone();
        let rel = path
            .strip_prefix(&tmp)
            .context("a path bound back lies under /tmp")?;
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
    steps.extend(late_binds);
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
        late: (0..late_count).map(|_| AtomicI32::new(-1)).collect(),
        cwd: needs.cwd.as_deref().map(cstr).transpose()?,
        sources,
        steps,
        uid_map,
        view: view
            .map(|v| cstr(&v.common).map(|c| (c, AtomicI32::new(-1))))
            .transpose()?,
        ptys: if own_ptys {
            let mut ptys = vec![(
                PTS.to_owned(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
                AtomicI32::new(-1),
            )];
            if Path::new(std::ffi::OsStr::from_bytes(PTMX.to_bytes())).exists() {
                ptys.push((
                    PTMX.to_owned(),
                    libc::O_PATH | libc::O_CLOEXEC,
                    AtomicI32::new(-1),
                ));
            }
            ptys
        } else {
            Vec::new()
        },
    })
}

/// The steps of a git view made before the tree is made read-only (the objects overlay
/// on the real store, with the quarantine as its upper layer; the LFS overlay on the real
/// LFS store, with the run's LFS store as its upper layer; a tmpfs on the scratch
/// folder; the git dir's overlay, with the tmpfs as its upper layer; each cloned), and
/// those that attach the clones again afterwards.
fn view_steps(view: &GitView) -> Result<(Vec<Step>, Vec<Step>)> {
    if !view.representable() {
        crate::fault::bail!(
            super::error::Error,
            "the repository's path cannot be given to overlayfs"
        );
    }
    let objects = view.common.join("objects");
    let lfs = view.common.join("lfs");
    let upper = view.scratch.join("upper");
    let work = view.scratch.join("work");
    // `representable` leaves no separator overlayfs would split on.
    let data = |lower: &Path, upper: &Path, work: &Path| {
        let mut bytes = Vec::new();
        for (key, path) in [
            ("lowerdir=", lower),
            (",upperdir=", upper),
            (",workdir=", work),
        ] {
            bytes.extend_from_slice(key.as_bytes());
            bytes.extend_from_slice(path.as_os_str().as_bytes());
        }
        CString::new(bytes).context("a path holds a NUL byte")
    };
    let before = vec![
        Step::Overlay {
            target: cstr(&objects)?,
            data: data(&objects, &view.objects_upper, &view.objects_work)?,
        },
        Step::Take {
            slot: 0,
            path: cstr(&objects)?,
        },
        // git-lfs reads the repository's LFS objects and writes new ones (and its temp
        // files) into the run's LFS store, as git does the store's.
        Step::Overlay {
            target: cstr(&lfs)?,
            data: data(&lfs, &view.lfs_upper, &view.lfs_work)?,
        },
        Step::Take {
            slot: 2,
            path: cstr(&lfs)?,
        },
        Step::Hide(cstr(&view.scratch)?, c"size=256m,mode=700"),
        Step::Mkdir(cstr(&upper)?),
        Step::Mkdir(cstr(&work)?),
        // Its lower layer is the real git dir: the objects overlay, a mount, is not part
        // of it, and is attached on top again below.
        Step::Overlay {
            target: cstr(&view.common)?,
            data: data(&view.common, &upper, &work)?,
        },
        Step::Take {
            slot: 1,
            path: cstr(&view.common)?,
        },
    ];
    let after = vec![
        Step::BindLate {
            slot: 1,
            target: cstr(&view.common)?,
        },
        Step::BindLate {
            slot: 0,
            target: cstr(&objects)?,
        },
        Step::BindLate {
            slot: 2,
            target: cstr(&lfs)?,
        },
    ];
    Ok((before, after))
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

/// A detached clone of the mount at `path` (with the mounts beneath it when `recursive`),
/// as a file descriptor.
fn clone_tree(path: &std::ffi::CStr, recursive: bool) -> std::io::Result<i32> {
    let mut flags = OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint;
    if recursive {
        flags |= libc::AT_RECURSIVE as libc::c_uint;
    }
    // SAFETY: open_tree on a NUL-terminated path.
    let fd = unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, path.as_ptr(), flags) };
    if fd < 0 {
        return Err(last());
    }
    Ok(fd as i32)
}

/// Attaches the detached mount `fd` (from [`clone_tree`]) on `target`, and closes it.
fn attach(fd: i32, target: &std::ffi::CStr) -> std::io::Result<()> {
    // SAFETY: move_mount of a descriptor this process holds onto a NUL-terminated path.
    let moved = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            fd,
            c"".as_ptr(),
            libc::AT_FDCWD,
            target.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    if moved != 0 {
        return Err(last());
    }
    // SAFETY: the descriptor is ours and used no more.
    unsafe { libc::close(fd) };
    Ok(())
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
                slot.store(clone_tree(source, true)?, Ordering::Relaxed);
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
                        attach(self.slots[*slot].load(Ordering::Relaxed), target)?;
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
                    Step::Overlay { target, data } => {
                        if libc::mount(
                            c"overlay".as_ptr(),
                            target.as_ptr(),
                            c"overlay".as_ptr(),
                            libc::MS_NOSUID | libc::MS_NODEV,
                            data.as_ptr().cast(),
                        ) != 0
                        {
                            return Err(last());
                        }
                    }
                    Step::Take { slot, path } => {
                        self.late[*slot].store(clone_tree(path, false)?, Ordering::Relaxed);
                    }
                    Step::BindLate { slot, target } => {
                        attach(self.late[*slot].load(Ordering::Relaxed), target)?;
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
            if let Some((path, slot)) = &self.view {
                let fd = libc::open(
                    path.as_ptr(),
                    libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
                );
                if fd < 0 {
                    return Err(last());
                }
                slot.store(fd, Ordering::Relaxed);
            }
            for (path, flags, slot) in &self.ptys {
                let fd = libc::open(path.as_ptr(), *flags);
                if fd < 0 {
                    return Err(last());
                }
                slot.store(fd, Ordering::Relaxed);
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

    /// The process's own `/dev/pts` and `/dev/ptmx`, once [`Plan::enter`] mounted its
    /// devpts instance (in the child); none when it gets no instance.
    pub fn pty_fds(&self) -> impl Iterator<Item = std::os::fd::BorrowedFd<'_>> {
        self.ptys.iter().filter_map(|(_, _, slot)| {
            let fd = slot.load(Ordering::Relaxed);
            // SAFETY: the descriptor was opened by `enter` in this process and stays open
            // until exec (it is close-on-exec).
            (fd >= 0).then(|| unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) })
        })
    }

    /// The git view's merged folder, once [`Plan::enter`] made it (in the child).
    pub fn view_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        let fd = self.view.as_ref()?.1.load(Ordering::Relaxed);
        // SAFETY: the descriptor was opened by `enter` in this process and stays open
        // until exec (it is close-on-exec).
        (fd >= 0).then(|| unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) })
    }
}

/// Whether this machine lets git-crew give a process a private `/tmp`: tried once on a
/// throwaway `sh -c :`, with the same calls a worker's start makes.
pub fn available() -> bool {
    // Any folder will do as the throwaway's /tmp: `/` needs no writable place.
    probe(Path::new("/"), &Needs::default(), None)
}

/// Whether overlayfs serves a git view here: tried once per process, on a throwaway
/// `sh -c :` with a view of a scratch folder (the same calls a worker's start makes).
pub fn view_available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let root = std::env::temp_dir().join(format!("git-crew-view-probe-{}", std::process::id()));
        let view = GitView {
            common: root.join("git"),
            objects_upper: root.join("upper"),
            objects_work: root.join("work"),
            lfs_upper: root.join("lfs-upper"),
            lfs_work: root.join("lfs-work"),
            scratch: root.join("git").join("scratch"),
        };
        let private = root.join("tmp");
        let made = [
            &view.common.join("objects"),
            &view.common.join("lfs"),
            &view.objects_upper,
            &view.objects_work,
            &view.lfs_upper,
            &view.lfs_work,
            &view.scratch,
            &private,
        ]
        .iter()
        .all(|d| std::fs::create_dir_all(d).is_ok());
        // As a run's process would: the folder it reads kept in view (under /tmp, where
        // the probe's may lie, it is bound back), a temp folder of its own.
        let needs = Needs {
            readable: vec![root.clone()],
            ..Needs::default()
        };
        let works = made && probe(&private, &needs, Some(&view));
        // overlayfs leaves its work folder's own `work` with no permissions at all.
        let _ = std::fs::set_permissions(
            view.objects_work.join("work"),
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        );
        let _ = std::fs::remove_dir_all(&root);
        works
    })
}

/// Runs a throwaway `sh -c :` in a private namespace (with `view`).
fn probe(private: &Path, needs: &Needs, view: Option<&GitView>) -> bool {
    use std::os::unix::process::CommandExt;
    let Ok(plan) = plan(private, needs, &[], view) else {
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
    fn a_git_view_is_made_only_of_paths_overlayfs_can_be_given() {
        let view = |common: &str| GitView {
            common: common.into(),
            objects_upper: "/r/.git/crew/runs/1/objects".into(),
            objects_work: "/r/.git/crew/runs/1/objects.work".into(),
            lfs_upper: "/r/.git/crew/runs/1/lfs".into(),
            lfs_work: "/r/.git/crew/runs/1/lfs.work".into(),
            scratch: "/r/.git/crew/runs/1/gitview".into(),
        };
        assert!(view("/r/.git").representable());
        for bad in [
            "/r,upperdir=/x/.git",
            "/r:/x/.git",
            "relative/.git",
            "/r\\/.git",
        ] {
            assert!(!view(bad).representable(), "{bad}");
            assert!(view_steps(&view(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn this_machine_serves_a_git_view() {
        // The kernels git-crew is tested on have overlayfs in user namespaces (5.11+).
        assert!(available());
        assert!(view_available());
    }

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
