//! The kernel write fence (Linux Landlock, through the `landlock` crate): a process tree
//! started under a [`Fence`] may write only the paths it lists. Reads, exec and the
//! network stay open. The fence goes up between fork and exec with `no_new_privs`, so
//! neither the process nor its children can lift it. What a run's fence holds is
//! `run::fence`'s business; this module only knows paths and the kernel.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};

use super::error::{Context, Result};
use landlock::{
    ABI, AccessFs, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    Scope,
};

/// The rights the fence handles: every write-side right up to Landlock ABI 5 (write,
/// truncate, make and remove files and folders, refer, device ioctls).
const HANDLED: ABI = ABI::V5;

/// Device nodes every process needs to write.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/pts",
    "/dev/shm",
];

/// The Landlock ABI of the running kernel, if it has Landlock enabled.
pub fn kernel_abi() -> Option<i32> {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) only
    // returns the ABI version (or an error); it touches no memory.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    (v > 0).then_some(v as i32)
}

/// The paths one fenced process tree may write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fence {
    pub dirs: Vec<PathBuf>,
    /// Folders of the repository a worker may write, but never make a FIFO, socket or
    /// device node in: git-crew and git read them, and a FIFO there would hang them.
    pub repo_dirs: Vec<PathBuf>,
    pub files: Vec<PathBuf>,
    /// Device nodes (and `/dev/pts`) it may write, but never send an ioctl: no `TIOCSTI`
    /// into another process's terminal.
    pub devices: Vec<PathBuf>,
    /// Variables every fenced process gets: where git writes new objects (the run's
    /// quarantine) and where it reads the repository's, and the worker's own home.
    pub env: Vec<(String, String)>,
    /// Variables no fenced process gets (those that point at the lead's services).
    pub unset: Vec<String>,
    /// The process's own temp folder, which it sees as `/tmp` in a private mount
    /// namespace (`sys::ns`); `None` keeps the machine's `/tmp`.
    pub private_tmp: Option<PathBuf>,
    /// Paths it reads or runs that must stay in view under a private `/tmp` (its cwd,
    /// `PATH` and program are added by [`Fence::apply_to`]).
    pub readable: Vec<PathBuf>,
    /// Folders covered by an empty tmpfs under a private `/tmp` (the lead's
    /// `$XDG_RUNTIME_DIR`).
    pub hide: Vec<PathBuf>,
    /// The repository's git dir, shown as a private view under a private `/tmp`
    /// (`sys::ns`): what the process writes there beyond its fence stays its own.
    pub git_view: Option<crate::sys::ns::GitView>,
}

impl Fence {
    /// A fence that lets a process write only the device nodes every process needs.
    pub fn with_devices() -> Fence {
        let mut fence = Fence::default();
        for dev in DEVICES {
            if *dev == "/dev/shm" {
                fence.add(Path::new(dev));
            } else if Path::new(dev).exists() {
                fence.devices.push(PathBuf::from(dev));
            }
        }
        fence
    }

    /// Adds a folder of the repository (see `repo_dirs`); a missing one is skipped.
    pub fn add_repo_dir(&mut self, path: &Path) {
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
            self.repo_dirs.push(path.to_path_buf());
        }
    }

    /// Adds a path that exists (as a folder or a file rule); a missing one is skipped.
    pub fn add(&mut self, path: &Path) {
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => self.dirs.push(path.to_path_buf()),
            Ok(_) => self.files.push(path.to_path_buf()),
            Err(_) => {}
        }
    }

    /// Gives every process of the fence the git config `key = value`, as `git -c` would
    /// (`GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_<n>`, `GIT_CONFIG_VALUE_<n>`): over every
    /// config file, the worktree's own included, and after the entries this process's own
    /// environment holds, which it keeps.
    pub fn git_config(&mut self, key: &str, value: &str) {
        let count = self
            .env
            .iter()
            .rev()
            .find(|(k, _)| k == "GIT_CONFIG_COUNT")
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var("GIT_CONFIG_COUNT").ok())
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        self.env.retain(|(k, _)| k != "GIT_CONFIG_COUNT");
        self.env
            .push((format!("GIT_CONFIG_KEY_{count}"), key.to_string()));
        self.env
            .push((format!("GIT_CONFIG_VALUE_{count}"), value.to_string()));
        self.env
            .push(("GIT_CONFIG_COUNT".into(), (count + 1).to_string()));
    }

    /// What a process started by `command` needs to see under a private `/tmp`.
    fn needs(&self, command: &Command) -> crate::sys::ns::Needs {
        let mut writable = self.dirs.clone();
        writable.extend(self.repo_dirs.iter().cloned());
        writable.extend(self.files.iter().cloned());
        let mut readable = self.readable.clone();
        let cwd = command.get_current_dir().map(Path::to_path_buf);
        readable.extend(cwd.clone());
        let path = command
            .get_envs()
            .find(|(k, _)| *k == "PATH")
            .and_then(|(_, v)| v.map(|v| v.to_os_string()))
            .or_else(|| std::env::var_os("PATH"));
        readable.extend(std::env::split_paths(&path.unwrap_or_default()));
        // The program's folder, not the file alone: a script runs its siblings.
        let program = Path::new(command.get_program());
        if program.is_absolute() {
            readable.extend(program.parent().map(Path::to_path_buf));
        }
        crate::sys::ns::Needs {
            writable,
            readable,
            cwd,
        }
    }

    /// Puts the fence up in `command`'s child between fork and exec. The ruleset is built
    /// here, in the parent; the child only restricts itself, and fails to start — never
    /// runs unfenced — when the kernel does not enforce it.
    pub fn apply_to(&self, command: &mut Command) -> Result<()> {
        let write = AccessFs::from_write(HANDLED);
        let file_rights = write & AccessFs::from_file(HANDLED);
        let mut ruleset = Ruleset::default()
            .handle_access(write)
            .context("cannot set up the write fence")?
            // Nor may a fenced process signal one outside the fence (the supervisor, the
            // lead's own processes) or connect to an abstract socket of one (X11, D-Bus),
            // where the kernel scopes them (ABI 6).
            .scope(Scope::Signal | Scope::AbstractUnixSocket)
            .context("cannot set up the write fence")?
            .create()
            .context("cannot create the write fence")?;
        for dir in &self.dirs {
            let fd = PathFd::new(dir).with_context(|| format!("cannot open {}", dir.display()))?;
            ruleset = ruleset
                .add_rule(PathBeneath::new(fd, write))
                .context("cannot add a rule to the write fence")?;
        }
        let special =
            AccessFs::MakeFifo | AccessFs::MakeSock | AccessFs::MakeChar | AccessFs::MakeBlock;
        for dir in &self.repo_dirs {
            let fd = PathFd::new(dir).with_context(|| format!("cannot open {}", dir.display()))?;
            ruleset = ruleset
                .add_rule(PathBeneath::new(fd, write & !special))
                .context("cannot add a rule to the write fence")?;
        }
        for file in &self.files {
            let fd =
                PathFd::new(file).with_context(|| format!("cannot open {}", file.display()))?;
            ruleset = ruleset
                .add_rule(PathBeneath::new(fd, file_rights))
                .context("cannot add a rule to the write fence")?;
        }
        for dev in &self.devices {
            let fd = PathFd::new(dev).with_context(|| format!("cannot open {}", dev.display()))?;
            let rights = if dev.is_dir() { write } else { file_rights };
            ruleset = ruleset
                .add_rule(PathBeneath::new(fd, rights & !AccessFs::IoctlDev))
                .context("cannot add a rule to the write fence")?;
        }
        for key in &self.unset {
            command.env_remove(key);
        }
        for (key, value) in &self.env {
            command.env(key, value);
        }
        let mut plan = None;
        if let Some(private) = &self.private_tmp {
            let made = Arc::new(crate::sys::ns::plan(
                private,
                &self.needs(command),
                &self.hide,
                self.git_view.as_ref(),
            )?);
            let entered = Arc::clone(&made);
            // SAFETY: `enter` makes only system calls on strings prepared here.
            unsafe {
                command.pre_exec(move || entered.enter());
            }
            plan = Some(made);
        }
        // The git view is the process's own: it may write all of it (what it writes
        // there stays in its view). Its rule can only be added once the view is mounted.
        let view_rights = write & !special;
        // So are the ptys of its own devpts instance (`sys::ns`): it may open them and
        // `/dev/ptmx` for writing and send them ioctls (`TIOCGPTN`, `TIOCSPTLCK`,
        // `TIOCSCTTY`, termios). The rules name the instance's inodes, which only the
        // child can open; the machine's instance (the lead's terminals, in no other place
        // beneath these rules) and `/dev/tty` keep taking no ioctl, so no `TIOCSTI`.
        let pty_rights = AccessFs::WriteFile | AccessFs::IoctlDev;
        let slot = Mutex::new(Some(ruleset));
        // SAFETY: the closure runs in the forked child before exec. It takes the ruleset
        // built above, adds the git view's and the ptys' rules on the descriptors `enter`
        // opened, and makes only system calls (landlock_add_rule, prctl,
        // landlock_restrict_self); it allocates nothing on the success path.
        unsafe {
            command.pre_exec(move || {
                let mut ruleset = slot
                    .lock()
                    .ok()
                    .and_then(|mut s| s.take())
                    .ok_or_else(|| std::io::Error::other("the write fence was already used"))?;
                if let Some(fd) = plan.as_ref().and_then(|p| p.view_fd()) {
                    ruleset = ruleset
                        .add_rule(PathBeneath::new(fd, view_rights))
                        .map_err(|_| std::io::Error::other("cannot fence the git view"))?;
                }
                for fd in plan.iter().flat_map(|p| p.pty_fds()) {
                    ruleset = ruleset
                        .add_rule(PathBeneath::new(fd, pty_rights))
                        .map_err(|_| std::io::Error::other("cannot fence the ptys"))?;
                }
                match ruleset.restrict_self() {
                    Ok(status) if status.ruleset != RulesetStatus::NotEnforced => Ok(()),
                    Ok(_) => Err(std::io::Error::other(
                        "the kernel does not enforce the write fence",
                    )),
                    Err(_) => Err(std::io::Error::other("cannot put up the write fence")),
                }
            });
        }
        Ok(())
    }
}
